"""The proxy's tool sets, compiled once per distinct declaration: a bounded cache in
which only the same declaration (the same value, key order included) shares an entry,
and through ``toolstitch proxy --enforce``, each request checked against its own tools
however requests alternate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_server import Recording, RecordingServer
from test_proxy import CHAT_TOOLS, proxy, raw
from test_watch import MESSAGES, OPENAI_CHAT
from toolstitch import ToolUseBlock
from toolstitch.errors import ToolDefinitionError, ToolstitchError
from toolstitch.proxy.toolsets import ToolsetCache


def tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties or {}}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


def parsed(text: str) -> Any:
    """A declaration as the proxy holds it: read from a request's JSON."""
    return json.loads(text)


def call(name: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(id="c1", name=name, input=json.dumps(arguments))


# ------------------------------------------------------------ the cache


def test_the_same_declaration_is_compiled_once() -> None:
    cache = ToolsetCache()
    text = json.dumps([tool("f", {"n": {"type": "integer"}})])
    first = cache.get(parsed(text))
    # Another request's body: a new object, the same value (spacing is not the value).
    again = cache.get(parsed(text.replace(", ", ",  ")))
    assert again is first
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    first.validate(call("f", {"n": 1}))
    with pytest.raises(ToolstitchError):
        first.validate(call("f", {"n": "1"}))


def test_a_declaration_one_byte_apart_is_its_own() -> None:
    cache = ToolsetCache()
    integer = cache.get(
        parsed(
            '[{"type":"function","function":{"name":"f","parameters":'
            '{"type":"object","properties":{"n":{"type":"integer"}}}}}]'
        )
    )
    # "integer" and "integeR" differ in one byte: the second does not compile.
    with pytest.raises(ToolDefinitionError):
        cache.get(
            parsed(
                '[{"type":"function","function":{"name":"f","parameters":'
                '{"type":"object","properties":{"n":{"type":"integeR"}}}}}]'
            )
        )
    other = cache.get(
        parsed(
            '[{"type":"function","function":{"name":"g","parameters":'
            '{"type":"object","properties":{"n":{"type":"integer"}}}}}]'
        )
    )
    assert other is not integer and other.names == ("g",)
    # 1 and 1.0 are different values: different entries.
    one = cache.get([tool("f", {"n": {"type": "number", "maximum": 1}})])
    one_point_zero = cache.get([tool("f", {"n": {"type": "number", "maximum": 1.0}})])
    assert one is not one_point_zero
    assert cache.hits == 0 and len(cache) == 4


def test_key_order_makes_another_declaration() -> None:
    cache = ToolsetCache()
    a = cache.get(parsed('[{"type":"function","function":{"name":"f","parameters":{}}}]'))
    b = cache.get(parsed('[{"function":{"name":"f","parameters":{}},"type":"function"}]'))
    assert a is not b and cache.hits == 0 and len(cache) == 2
    assert cache.get(parsed('[{"function":{"name":"f","parameters":{}},"type":"function"}]')) is b


def test_a_declaration_that_does_not_compile_is_never_kept() -> None:
    cache = ToolsetCache()
    broken = [tool("f"), tool("f")]  # a name declared twice
    for _ in range(2):
        with pytest.raises(ToolDefinitionError, match="declared twice"):
            cache.get(broken)
    assert len(cache) == 0 and cache.size == 0 and cache.hits == 0 and cache.misses == 2


def test_entries_are_bounded_least_recently_used_first_out() -> None:
    cache = ToolsetCache(max_entries=3)
    sets = {name: cache.get([tool(name)]) for name in "abc"}
    assert cache.get([tool("a")]) is sets["a"]  # a is now the most recent
    cache.get([tool("d")])  # b, the least recent, goes
    assert len(cache) == 3
    assert cache.get([tool("a")]) is sets["a"]
    assert cache.get([tool("c")]) is sets["c"]
    assert cache.get([tool("b")]) is not sets["b"]
    assert len(cache) == 3


def test_total_size_is_bounded() -> None:
    one = len(json.dumps([tool("t000")]))
    cache = ToolsetCache(max_entries=1000, max_bytes=one * 5)
    for i in range(50):
        cache.get([tool(f"t{i:03}")])
        assert cache.size <= one * 5 and len(cache) <= 5
    assert len(cache) == 5 and cache.size == one * 5


def test_a_declaration_over_the_entry_bound_is_compiled_but_not_kept() -> None:
    cache = ToolsetCache(max_entry_bytes=200)
    big = [tool("f", {f"p{i}": {"type": "string"} for i in range(20)})]
    first = cache.get(big)
    assert first.names == ("f",) and len(cache) == 0
    assert cache.get(big) is not first and cache.hits == 0


def test_hostile_declarations_do_not_grow_the_cache() -> None:
    cache = ToolsetCache(max_entries=64, max_bytes=1 << 16)
    for i in range(2000):
        cache.get([tool(f"f{i}", {"x": {"type": "string", "description": "x" * (i % 97)}})])
    assert len(cache) <= 64 and cache.size <= 1 << 16


def test_values_json_cannot_write_are_compiled_uncached() -> None:
    class Declared:
        """An SDK's object: ``Toolset`` reads its ``model_dump()``; JSON cannot write it."""

        def model_dump(self) -> dict[str, Any]:
            return tool("f")

    cache = ToolsetCache()
    first = cache.get([Declared()])
    assert first.names == ("f",) and len(cache) == 0
    assert cache.get([Declared()]) is not first and cache.misses == 0


# ------------------------------------------------------------ through the proxy

ROUTES = {"/v1/chat/completions": Recording(OPENAI_CHAT)}


@pytest.fixture(scope="module")
def upstream() -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES) as s:
        yield s


def test_alternating_declarations_are_each_checked_against_their_own(
    upstream: RecordingServer, tmp_path: Path
) -> None:
    text = json.dumps(CHAT_TOOLS)
    # One byte apart: the recorded first call has no "citz".
    missing = json.loads(text.replace('"required": ["city"]', '"required": ["citz"]'))
    assert missing != CHAT_TOOLS
    # The same tools, keys in another order: a declaration of its own, as valid.
    reordered = [{"function": t["function"], "type": t["type"]} for t in CHAT_TOOLS]
    with proxy(upstream.url, tmp_path, "--enforce") as running:
        for tools, passes in [
            (CHAT_TOOLS, True),
            (missing, False),
            (CHAT_TOOLS, True),
            (reordered, True),
            (missing, False),
            (CHAT_TOOLS[1:], False),  # GetWeatherArgs not declared
            (reordered, True),
        ]:
            request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": tools}
            status, body, _ = raw(f"{running.url}/v1/chat/completions", request)
            assert status == 200
            if passes:
                assert body == OPENAI_CHAT
            else:
                assert b'data: {"error":' in body and b"GetWeatherArgs" in body
                assert b'finish_reason":"tool_calls' not in body
        records = running.records(7)
    assert [r["enforced"] for r in records] == [
        "passed",
        "blocked",
        "passed",
        "passed",
        "blocked",
        "blocked",
        "passed",
    ]


# ------------------------------------------------------------ one validation per call


def test_the_record_takes_the_guards_verdict_for_the_calls_it_passed() -> None:
    # The guard's check sees each call as the record later reads it from the messages:
    # the same key, so the record does not validate a call the guard passed again.
    from toolstitch._toolstitch import _Guard
    from toolstitch.proxy import records

    toolset = ToolsetCache().get(CHAT_TOOLS)
    seen: list[tuple[Any, ...]] = []

    def check(block: Any) -> None:
        toolset.validate(block)
        seen.append(records.call_key(block))

    guard = _Guard(check, provider="openai-chat", transport="sse")
    guard.feed(OPENAI_CHAT)
    guard.finish()
    assert guard.outcome == "passed"
    messages = guard.messages()
    keys = [records.call_key(c) for m in messages for c in m.tool_uses]
    assert len(keys) == 2 and sorted(seen) == sorted(keys)
    calls = records.calls("/v1/chat/completions", messages, None, toolset, set(seen))
    assert [(c["valid"], c["validation_error"]) for c in calls] == [(True, None)] * 2
    # A call the check did not pass is validated: an undeclared name fails.
    narrow = ToolsetCache().get([CHAT_TOOLS[0]])
    calls = records.calls("/v1/chat/completions", messages, None, narrow, set(seen[:1]))
    verdicts = {c["name"]: c["valid"] for c in calls}
    assert sorted(verdicts.values()) == [False, True]


def test_the_record_parses_arguments_once_and_only_for_calls_the_check_passed() -> None:
    # ``arguments_json`` of a call the check passed is true without a second parse; a
    # call the check did not pass is read as before: arguments that are no JSON say so.
    from toolstitch import Assembler
    from toolstitch.proxy import records

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    def call(index: int, arguments: str) -> dict[str, Any]:
        function = {"name": "GetWeatherArgs", "arguments": arguments}
        return {"index": index, "id": f"call_{index}", "type": "function", "function": function}

    stream = (
        chunk({"role": "assistant", "tool_calls": [call(0, '{"city": "Paris"}')]})
        + chunk({"tool_calls": [call(1, "{not json")]})
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    asm = Assembler("openai-chat", live=False)
    asm.feed_bytes(stream)
    asm.close()
    messages = asm.messages()
    assert len(messages[0].tool_uses) == 2
    first = messages[0].tool_uses[0]
    toolset = ToolsetCache().get(CHAT_TOOLS)
    toolset.validate(first)
    for passed in (set(), {records.call_key(first)}):
        calls = records.calls("/v1/chat/completions", messages, None, toolset, passed)
        assert [(c["id"], c["arguments_json"], c["valid"]) for c in calls] == [
            ("call_0", True, True),
            ("call_1", False, False),
        ]
