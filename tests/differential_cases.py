"""The crafted responses of the guard's differential suite (tests/test_guard_differential.py).

Each case is one upstream response body in one dialect, built here from the events a
provider sends, then bent the way issue 34's classes bend them: readings that differ
(event names, SSE framing, name fragments, indexes, final snapshots, exemptions,
numbers, legacy ``functions``, interleaved blocks) and legitimate variations (key
order, whitespace, CR/LF, comments, multi-line ``data:``) that must never change a
result. Every case declares the same two tools, in its dialect's request form:

- ``read_file``: ``path`` a string under ``/tmp/``, nothing else;
- ``set_limit``: ``n`` an integer at most 2**64.

``expect="pass"`` marks a valid response (a legitimate variation): the guard must pass
it and each SDK must end with its calls. Every other case is an attack shape or a
doubtful one: whatever the guard does, no SDK may end with a call it did not validate.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from readers import REAL, cassette_bodies, eventstream_message

READ_FILE: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "pattern": "^/tmp/"}},
    "required": ["path"],
    "additionalProperties": False,
}
SET_LIMIT: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer", "maximum": 18446744073709551616}},
    "required": ["n"],
}
SCHEMAS: dict[str, dict[str, Any]] = {"read_file": READ_FILE, "set_limit": SET_LIMIT}

GOOD = '{"path": "/tmp/notes.txt"}'
BAD = '{"path": "/etc/passwd"}'


@dataclass(frozen=True)
class Case:
    """One crafted response."""

    name: str
    dialect: str  # chat, responses, anthropic, bedrock, gemini, ollama
    body: bytes
    klass: str  # the class number, or the variation it shows
    expect: str | None = None  # "pass": valid, must pass and reach the SDK whole
    # The request's tools in a form of their own (else the dialect's form of SCHEMAS).
    tools: Any = None
    # Extra request parameters (legacy ``functions``).
    request: dict[str, Any] = field(default_factory=dict)
    schemas: dict[str, dict[str, Any]] = field(default_factory=lambda: SCHEMAS)


def tools_for(dialect: str, schemas: dict[str, dict[str, Any]] = SCHEMAS) -> Any:
    """The declared tools in ``dialect``'s request form."""
    if dialect == "chat":
        return [
            {"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in schemas.items()
        ]
    if dialect == "responses":
        return [{"type": "function", "name": n, "parameters": s} for n, s in schemas.items()]
    if dialect == "anthropic":
        return [{"name": n, "input_schema": s} for n, s in schemas.items()]
    if dialect == "bedrock":
        return {
            "tools": [
                {"toolSpec": {"name": n, "inputSchema": {"json": s}}} for n, s in schemas.items()
            ]
        }
    if dialect == "gemini":
        return [
            {"name": n, "parameters_json_schema": s} for n, s in schemas.items()
        ]  # google-genai's FunctionDeclaration fields
    raise ValueError(dialect)


# ---------------------------------------------------------------- SSE bytes


def sse(
    events: Iterable[tuple[str | None, Any]],
    *,
    nl: str = "\n",
    space: str = " ",
    done: bool = False,
) -> bytes:
    """SSE bytes: each event an optional ``event:`` line and one ``data:`` line (a
    ``str`` payload is sent as is, anything else as compact JSON)."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        head = f"event:{space}{name}{nl}" if name else ""
        out.append(f"{head}data:{space}{text}{nl}{nl}")
    if done:
        out.append(f"data:{space}[DONE]{nl}{nl}")
    return "".join(out).encode()


# ---------------------------------------------------------------- OpenAI chat

Call = tuple[str, str, list[str]]  # id, name, argument fragments


def chunk(delta: dict[str, Any], finish: str | None = None, choice: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-d1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
    }


def chat_events(
    calls: list[Call],
    *,
    finish: str = "tool_calls",
    choice: int = 0,
    indexes: list[int] | None = None,
) -> list[dict[str, Any]]:
    """The chunks of one choice's calls: a start chunk per call, then its fragments."""
    out = [chunk({"role": "assistant", "content": None}, choice=choice)]
    for i, (call_id, name, fragments) in enumerate(calls):
        index = indexes[i] if indexes else i
        start = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(chunk({"tool_calls": [start]}, choice=choice))
        for piece in fragments:
            tc = {"index": index, "function": {"arguments": piece}}
            out.append(chunk({"tool_calls": [tc]}, choice=choice))
    out.append(chunk({}, finish, choice=choice))
    return out


def chat(calls: list[Call], **kw: Any) -> bytes:
    return sse(((None, e) for e in chat_events(calls)), done=True, **kw)


def split(args: str, parts: int = 3) -> list[str]:
    step = max(1, len(args) // parts)
    return [args[i : i + step] for i in range(0, len(args), step)]


def one(name: str = "read_file", args: str = GOOD, call_id: str = "call_1") -> list[Call]:
    return [(call_id, name, split(args))]


def _chat_cases() -> list[Case]:
    cases: list[Case] = []

    def add(name: str, body: bytes, klass: str, expect: str | None = None, **kw: Any) -> None:
        cases.append(Case(f"chat-{name}", "chat", body, klass, expect, **kw))

    two = [("call_1", "read_file", split(GOOD)), ("call_2", "set_limit", split('{"n": 5}'))]
    add("valid", chat(one()), "baseline", "pass")
    add("valid-two", chat(two), "baseline", "pass")
    add("undeclared", chat(one("delete_file")), "baseline")
    add("schema", chat(one(args=BAD)), "baseline")
    add("crlf", chat(one(), nl="\r\n"), "CR/LF", "pass")
    add("cr", chat(one(), nl="\r"), "CR/LF", "pass")
    add("no-space", chat(one(), space=""), "SSE fields", "pass")
    add("crlf-attack", chat(one(args=BAD), nl="\r\n"), "CR/LF")
    events = [sse([(None, e)]) for e in chat_events(one())]
    add(
        "comments",
        b": keep-alive\n\n".join(events) + b": bye\n\ndata: [DONE]\n\n",
        "comments",
        "pass",
    )
    # A JSON chunk over two data: lines (the spec joins them with a newline).
    multi = b"".join(
        b"data: " + json.dumps(e).replace(', "choices"', ',\ndata: "choices"').encode() + b"\n\n"
        for e in chat_events(one())
    )
    add("multiline-data", multi + b"data: [DONE]\n\n", "multi-line data", "pass")
    add("bom", b"\xef\xbb\xbf" + chat(one()), "BOM")
    # Key order and whitespace: the same chunks, keys reversed and spaced out.
    spaced = b"".join(
        b"data:   "
        + json.dumps(dict(reversed(list(e.items()))), indent=1).replace("\n", " ").encode()
        + b"\n\n"
        for e in chat_events(one())
    )
    add("key-order", spaced + b"data: [DONE]\n\n", "key order", "pass")
    # The openai helper takes a new index as the end of the call before it (its
    # arguments.done fires then): fragments sent after that are not in the call it
    # completed.
    add("interleaved", _interleaved_chat(), "interleaving")
    # Class 3: the last event unterminated; a BOM before an attack.
    unterminated = chat(one()).removesuffix(b"data: [DONE]\n\n")
    add("unterminated-finish", unterminated.removesuffix(b"\n\n"), "3")
    evs = chat_events(one(args=BAD))
    body = sse((None, e) for e in evs[:-1]) + b"data: " + json.dumps(evs[-1]).encode()
    add("unterminated-bad-finish", body, "3")
    # The bad call's last fragment in an unterminated event after a good finish.
    good = chat_events(one())
    tail = chunk({"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]})
    add("unterminated-after-finish", sse((None, e) for e in good) + sse([(None, tail)])[:-2], "3")
    add("bom-attack", b"\xef\xbb\xbf" + chat(one(args=BAD)), "3")
    add("double-bom", b"\xef\xbb\xbf\xef\xbb\xbf" + chat(one()), "3")
    # Class 4: names in pieces.
    for label, names in (
        ("name-fragments", ["delete_", "file"]),
        ("name-fragments-valid-join", ["read_", "file"]),
        ("name-repeated", ["read_file", "read_file"]),
        ("name-then-empty", ["read_file", ""]),
        ("name-suffix-attack", ["read_file", "_all"]),
    ):
        evs = chat_events([("call_1", names[0], split(GOOD))])
        extra = chunk({"tool_calls": [{"index": 0, "function": {"name": names[1]}}]})
        evs.insert(3, extra)
        add(label, sse(((None, e) for e in evs), done=True), "4")
    # Class 5: indexes an SDK reads as list positions.
    add("index-negative", _chat_indexes([0], [-1]), "5")
    add("index-negative-second", _chat_indexes([0, 1], [-1]), "5")
    add("index-sparse", chat(two).replace(b'"index":1,', b'"index":2,'), "5")
    add("index-from-one", _chat_with_indexes(one(), [1]), "5")
    add("index-huge", _chat_with_indexes(one(), [2**40]), "5")
    add(
        "index-string",
        chat(one()).replace(b'"tool_calls":[{"index":0', b'"tool_calls":[{"index":"0"'),
        "5",
    )
    add("index-missing", chat(one()).replace(b'{"index":0,', b"{"), "5")
    # Class 7: numbers.
    add("big-number", chat(one("set_limit", '{"n": 18446744073709551617}')), "7")
    add("big-number-ok", chat(one("set_limit", '{"n": 18446744073709551616}')), "7", "pass")
    add("float-exponent", chat(one("set_limit", '{"n": 1.8446744073709552e19}')), "7")
    add("nan", chat(one("set_limit", '{"n": NaN}')), "NaN")
    add("infinity", chat(one("set_limit", '{"n": Infinity}')), "NaN")
    add("negative-zero", chat(one("set_limit", '{"n": -0}')), "numbers", "pass")
    # Duplicate and escaped keys, surrogates.
    add("dup-arg-keys", chat(one(args='{"path": "/tmp/a", "path": "/etc/passwd"}')), "dup keys")
    add("escaped-arg-key", chat(one(args='{"p\\u0061th": "/etc/passwd"}')), "escaped keys")
    add("escaped-arg-key-ok", chat(one(args='{"p\\u0061th": "/tmp/a"}')), "escaped keys", "pass")
    dup_name = chat(one()).replace(
        b'"name":"read_file"', b'"name":"read_file","name":"delete_file"'
    )
    add("dup-name-key", dup_name, "dup keys")
    dup_name_rev = chat(one()).replace(
        b'"name":"read_file"', b'"name":"delete_file","name":"read_file"'
    )
    add("dup-name-key-rev", dup_name_rev, "dup keys")
    add(
        "escaped-name",
        chat(one()).replace(b'"name":"read_file"', b'"name":"read\\u005ffile"'),
        "escaped keys",
        "pass",
    )
    esc = chat(one()).replace(b'"arguments":"{\\"pa', b'"\\u0061rguments":"{\\"pa')
    add("escaped-arguments-key", esc, "escaped keys")
    add("lone-surrogate", chat(one(args='{"path": "/tmp/\\ud800"}')), "surrogates")
    add("pair-surrogate", chat(one(args='{"path": "/tmp/\\ud83d\\ude00"}')), "surrogates", "pass")
    add("raw-emoji", chat(one(args='{"path": "/tmp/\U0001f600"}')), "surrogates", "pass")
    add("trailing-garbage", chat(one(args=GOOD + "}")), "JSON")
    add("two-values", chat(one(args=GOOD + GOOD)), "JSON")
    add(
        "args-object",
        chat(one()).replace(b'"arguments":""', b'"arguments":{"path":"/etc/passwd"}'),
        "JSON",
    )
    # n > 1: a second choice with an invalid call.
    first = chat_events(one())
    second = chat_events(one(args=BAD, call_id="call_9"), choice=1)
    add("n2-second-bad", sse(((None, e) for e in first + second), done=True), "n > 1")
    mixed = _alternate(first, second)
    add("n2-interleaved-bad", sse(((None, e) for e in mixed), done=True), "n > 1")
    second = chat_events(one(args='{"path": "/tmp/b"}', call_id="call_9"), choice=1)
    mixed = _alternate(first, second)
    add("n2-valid", sse(((None, e) for e in mixed), done=True), "n > 1", "pass")
    # Event names: chat streams carry none; a name the SDK may dispatch on.
    add("event-chunk", sse((("chunk", e) for e in chat_events(one())), done=True), "event name")
    add("event-error", sse((("error", e) for e in chat_events(one())), done=True), "event name")
    add(
        "event-chunk-attack",
        sse((("chunk", e) for e in chat_events(one(args=BAD))), done=True),
        "event name",
    )
    # The finish before the last fragment; the call id changing mid-call.
    evs = chat_events(one(args=BAD))
    add(
        "finish-early",
        sse(((None, e) for e in [*evs[:3], evs[-1], *evs[3:-1]]), done=True),
        "order",
    )
    evs = chat_events(one())
    swap = chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_2", "function": {"name": "delete_file", "arguments": ""}}
            ]
        }
    )
    add("id-swap", sse(((None, e) for e in [*evs[:-1], swap, evs[-1]]), done=True), "order")
    add("stop-reason", sse((None, e) for e in chat_events(one(args=BAD), finish="stop")), "finish")
    add("no-done", sse((None, e) for e in chat_events(one())), "finish", "pass")
    add(
        "after-done",
        chat(one()) + sse((None, e) for e in chat_events(one("delete_file"))),
        "finish",
    )

    # Class 8: legacy functions.
    def legacy_events(args: str) -> list[dict[str, Any]]:
        return [
            chunk({"role": "assistant", "function_call": {"name": "read_file", "arguments": ""}}),
            *(chunk({"function_call": {"arguments": p}}) for p in split(args)),
            chunk({}, "function_call"),
        ]

    legacy = legacy_events(BAD)
    functions = [{"name": n, "parameters": s} for n, s in SCHEMAS.items()]
    add(
        "legacy-functions-bad",
        sse(((None, e) for e in legacy), done=True),
        "8",
        request={"functions": functions},
        tools=[],
    )
    good_legacy = sse(((None, e) for e in legacy_events(GOOD)), done=True)
    add(
        "legacy-functions-valid",
        good_legacy,
        "8",
        "pass",
        request={"functions": functions},
        tools=[],
    )
    undeclared = sse(((None, e) for e in legacy), done=True).replace(
        b'"read_file"', b'"delete_file"'
    )
    add(
        "legacy-functions-undeclared",
        undeclared,
        "8",
        request={"functions": functions, "function_call": "auto"},
        tools=[],
    )
    # The real recording and its tools.
    chat_real = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
    real_tools: dict[str, dict[str, Any]] = {
        "GetWeatherArgs": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "country": {"type": "string"},
                "units": {"type": "string"},
            },
            "required": ["city"],
        },
        "get_stock_price": {"type": "object", "properties": {"ticker": {"type": "string"}}},
    }
    cases.append(
        Case(
            "chat-real",
            "chat",
            chat_real,
            "recording",
            "pass",
            tools=tools_for("chat", real_tools),
            schemas=real_tools,
        )
    )
    strict = {
        "GetWeatherArgs": {**real_tools["GetWeatherArgs"], "required": ["zip"]},
        "get_stock_price": real_tools["get_stock_price"],
    }
    cases.append(
        Case(
            "chat-real-strict",
            "chat",
            chat_real,
            "recording",
            tools=tools_for("chat", strict),
            schemas=strict,
        )
    )
    return cases


def _alternate(a: list[Any], b: list[Any]) -> list[Any]:
    """``a`` and ``b`` taken in turn, every item of both."""
    out = []
    for pair in itertools.zip_longest(a, b):
        out += [x for x in pair if x is not None]
    return out


def _chat_indexes(indexes: list[int], extra: list[int]) -> bytes:
    calls = [(f"call_{i}", "read_file", split(GOOD)) for i in indexes]
    evs = chat_events(calls, indexes=indexes)
    for index in extra:
        evs.insert(-1, chunk({"tool_calls": [{"index": index, "function": {"arguments": "x"}}]}))
    return sse(((None, e) for e in evs), done=True)


def _chat_with_indexes(calls: list[Call], indexes: list[int]) -> bytes:
    return sse(((None, e) for e in chat_events(calls, indexes=indexes)), done=True)


def _interleaved_chat() -> bytes:
    a = split(GOOD)
    b = split('{"n": 7}')
    evs = [chunk({"role": "assistant", "content": None})]
    for index, (cid, name) in enumerate((("call_1", "read_file"), ("call_2", "set_limit"))):
        start = {
            "index": index,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        evs.append(chunk({"tool_calls": [start]}))
    for pa, pb in zip(a, b, strict=False):
        evs.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": pa}}]}))
        evs.append(chunk({"tool_calls": [{"index": 1, "function": {"arguments": pb}}]}))
    for rest, index in ((a[len(b) :], 0), (b[len(a) :], 1)):
        for p in rest:
            evs.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}))
    evs.append(chunk({}, "tool_calls"))
    return sse(((None, e) for e in evs), done=True)


# ---------------------------------------------------------------- Anthropic

Named = tuple[str | None, dict[str, Any]]


def anthropic_events(
    blocks: list[tuple[str, str, str, str]], stop: str = "tool_use"
) -> list[Named]:
    """``blocks``: (type, id, name, input) tool blocks after a text block."""
    message: dict[str, Any] = {
        "id": "msg_d1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    out: list[Named] = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]
    for i, (kind, block_id, name, args) in enumerate(blocks, start=1):
        block = {"type": kind, "id": block_id, "name": name, "input": {}}
        out.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": block},
            )
        )
        for piece in split(args):
            delta = {"type": "input_json_delta", "partial_json": piece}
            out.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
        out.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def tool(
    name: str = "read_file", args: str = GOOD, block_id: str = "toolu_1"
) -> tuple[str, str, str, str]:
    return ("tool_use", block_id, name, args)


def _anthropic_cases() -> list[Case]:
    cases: list[Case] = []

    def add(
        name: str, events: list[Named] | bytes, klass: str, expect: str | None = None, **kw: Any
    ) -> None:
        body = events if isinstance(events, bytes) else sse(events)
        cases.append(Case(f"anthropic-{name}", "anthropic", body, klass, expect, **kw))

    add("valid", anthropic_events([tool()]), "baseline", "pass")
    add(
        "valid-two",
        anthropic_events([tool(), tool("set_limit", '{"n": 3}', "toolu_2")]),
        "baseline",
        "pass",
    )
    add("undeclared", anthropic_events([tool("delete_file")]), "baseline")
    add("schema", anthropic_events([tool(args=BAD)]), "baseline")
    add("crlf", sse(anthropic_events([tool()]), nl="\r\n"), "CR/LF", "pass")
    add("cr", sse(anthropic_events([tool()]), nl="\r"), "CR/LF", "pass")
    add("no-space", sse(anthropic_events([tool()]), space=""), "SSE fields", "pass")
    add("bom", b"\xef\xbb\xbf" + sse(anthropic_events([tool()])), "BOM")
    with_pings = anthropic_events([tool()])
    for at in (5, 3, 1):
        with_pings.insert(at, ("ping", {"type": "ping"}))
    add("pings", with_pings, "comments", "pass")
    add(
        "comments",
        sse(anthropic_events([tool()])).replace(b"\n\nevent:", b"\n\n: hi\n\nevent:"),
        "comments",
        "pass",
    )

    # Class 2: the middle input_json_delta without its event line, or named ping.
    # Its pieces spell a path the SDK reads once the middle one is skipped.
    def spliced(middle_name: str | None, middle_type: str = "content_block_delta") -> list[Named]:
        evs = anthropic_events([tool(args='{"path": "/tmp/etc/passwd"}')])
        at = [
            i
            for i, (_, e) in enumerate(evs)
            if e.get("index") == 1 and e["type"] == "content_block_delta"
        ]
        parts = ['{"path": "/', "tmp/", 'etc/passwd"}']
        for i, piece in zip(at, parts, strict=False):
            evs[i][1]["delta"]["partial_json"] = piece
        evs[at[1]] = (middle_name, {**evs[at[1]][1], "type": middle_type})
        return [*evs[: at[0] + 1], evs[at[1]], evs[at[2]], *evs[at[2] + 1 :]]

    add("splice-no-event-line", spliced(None), "2")
    add("splice-event-ping", spliced("ping"), "2")
    add("splice-event-unknown", spliced("content_block_delta_v2"), "2")
    add("splice-type-ping", spliced("content_block_delta", "ping"), "2")
    add("splice-event-trailing-space", sse(spliced("content_block_delta ")), "2")
    # Event name / JSON type disagreement on the stop and the start.
    evs = anthropic_events([tool(args=BAD)])
    stop = max(i for i, (n, _) in enumerate(evs) if n == "content_block_stop")
    evs[stop] = ("message_stop", evs[stop][1])
    add("stop-named-message-stop", evs, "2")
    evs = anthropic_events([tool()])
    start = next(
        i for i, (n, e) in enumerate(evs) if n == "content_block_start" and e["index"] == 1
    )
    evs.insert(
        start + 1,
        (
            "ping",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "delete_file",
                    "input": {},
                },
            },
        ),
    )
    add("restart-named-ping", evs, "2")
    evs = anthropic_events([tool()])
    evs.insert(
        start + 1,
        (
            "content_block_start",
            {
                "type": "ping",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "delete_file",
                    "input": {},
                },
            },
        ),
    )
    add("restart-typed-ping", evs, "2")
    # Class 3.
    body = sse(anthropic_events([tool(args=BAD)]))
    add("unterminated-stop", body.removesuffix(b"\n\n"), "3")
    body = (
        sse(anthropic_events([tool()]))
        + sse(
            [
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": "x"},
                    },
                )
            ]
        )[:-2]
    )
    add("unterminated-extra", body, "3")
    add("bom-attack", b"\xef\xbb\xbf" + sse(anthropic_events([tool(args=BAD)])), "3")
    # Input given whole at the start (not streamed), or both.
    evs = anthropic_events([tool(args="")])
    start = next(
        i for i, (n, e) in enumerate(evs) if n == "content_block_start" and e["index"] == 1
    )
    evs[start][1]["content_block"]["input"] = {"path": "/etc/passwd"}
    add("input-in-start", evs, "start input")
    evs = anthropic_events([tool()])
    evs[start][1]["content_block"]["input"] = {"path": "/etc/passwd"}
    add("input-in-start-and-deltas", evs, "start input")
    # Class 6: server-run blocks the SDK hands over differently.
    add(
        "server-tool-named-client",
        anthropic_events([("server_tool_use", "srvtoolu_1", "read_file", BAD)]),
        "6",
    )
    add(
        "server-web-search",
        anthropic_events(
            [("server_tool_use", "srvtoolu_1", "web_search", '{"query": "x"}')], stop="end_turn"
        ),
        "6",
    )
    # Duplicate indexes, interleaving, missing stops.
    evs = anthropic_events([tool(), tool("delete_file", GOOD, "toolu_2")])
    for _, e in evs:
        if e.get("index") == 2:
            e["index"] = 1
    add("duplicate-index", evs, "index")
    evs = anthropic_events([tool(), tool("set_limit", '{"n": 3}', "toolu_2")])
    d1 = [x for x in evs if x[1].get("index") == 1 and x[0] == "content_block_delta"]
    d2 = [x for x in evs if x[1].get("index") == 2 and x[0] == "content_block_delta"]
    head = [
        x
        for x in evs
        if (
            x not in d1 + d2
            and x[1]["type"] not in ("content_block_stop", "message_delta", "message_stop")
        )
        or x[1].get("index") == 0
    ]
    starts = [x for x in evs if x[0] == "content_block_start" and x[1]["index"] > 0]
    head = [
        x
        for x in evs
        if x[1].get("index") in (None, 0) and x[0] not in ("message_delta", "message_stop")
    ]
    stops = [x for x in evs if x[0] == "content_block_stop" and x[1]["index"] > 0]
    interleaved = head + starts + [e for pair in zip(d1, d2, strict=False) for e in pair]
    interleaved += d1[len(d2) :] + d2[len(d1) :] + stops + evs[-2:]
    add("interleaved", interleaved, "interleaving", "pass")
    add(
        "negative-index",
        sse(anthropic_events([tool(args=BAD)])).replace(b'"index":1', b'"index":-1'),
        "index",
    )
    evs = anthropic_events([tool(args=BAD)])
    add(
        "no-block-stop",
        [x for x in evs if not (x[0] == "content_block_stop" and x[1]["index"] == 1)],
        "finish",
    )
    add("stop-end-turn", anthropic_events([tool(args=BAD)], stop="end_turn"), "finish")
    add(
        "dup-arg-keys",
        anthropic_events([tool(args='{"path": "/tmp/a", "path": "/etc/passwd"}')]),
        "dup keys",
    )
    add(
        "escaped-key",
        anthropic_events([tool(args='{"p\\u0061th": "/etc/passwd"}')]),
        "escaped keys",
    )
    add("lone-surrogate", anthropic_events([tool(args='{"path": "/tmp/\\udc00"}')]), "surrogates")
    add(
        "pair-surrogate",
        anthropic_events([tool(args='{"path": "/tmp/\\ud83d\\ude00"}')]),
        "surrogates",
        "pass",
    )
    add("big-number", anthropic_events([tool("set_limit", '{"n": 18446744073709551617}')]), "7")
    add("nan", anthropic_events([tool("set_limit", '{"n": NaN}')]), "NaN")
    add("truncated-input", anthropic_events([tool(args='{"path": "/tmp/a", "extra": "x')]), "JSON")
    dup_name = sse(anthropic_events([tool()])).replace(
        b'"name":"read_file"', b'"name":"read_file","name":"delete_file"'
    )
    add("dup-name-key", dup_name, "dup keys")
    add(
        "multiline-data",
        sse(anthropic_events([tool()])).replace(b',"index":', b',\ndata: "index":'),
        "multi-line data",
        "pass",
    )
    real = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
    weather = {
        "get_weather": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        }
    }
    cases.append(
        Case(
            "anthropic-real",
            "anthropic",
            real,
            "recording",
            "pass",
            tools=tools_for("anthropic", weather),
            schemas=weather,
        )
    )
    return cases


# ---------------------------------------------------------------- Responses


def responses_events(
    items: list[tuple[str, str, str]],
    *,
    completed_output: list[dict[str, Any]] | None = None,
    model: str = "gpt-4o",
) -> list[Named]:
    """``items``: (kind, name, arguments) calls; ``completed_output`` replaces the
    final snapshot's output."""
    base = {
        "id": "resp_d1",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    out: list[Named] = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": base})
    ]
    done_items = []
    for i, (kind, name, args) in enumerate(items):
        item_id = f"fc_{i}"
        field_name = "input" if kind == "custom_tool_call" else "arguments"
        item = {
            "type": kind,
            "id": item_id,
            "call_id": f"call_{i}",
            "name": name,
            field_name: "",
            "status": "in_progress",
        }
        out.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": i, "item": item},
            )
        )
        prefix = (
            "response.custom_tool_call_input"
            if kind == "custom_tool_call"
            else "response.function_call_arguments"
        )
        for piece in split(args):
            out.append(
                (
                    f"{prefix}.delta",
                    {
                        "type": f"{prefix}.delta",
                        "item_id": item_id,
                        "output_index": i,
                        "delta": piece,
                    },
                )
            )
        out.append(
            (
                f"{prefix}.done",
                {"type": f"{prefix}.done", "item_id": item_id, "output_index": i, field_name: args},
            )
        )
        done = {**item, field_name: args, "status": "completed"}
        done_items.append(done)
        out.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": i, "item": done},
            )
        )
    final = {
        **base,
        "status": "completed",
        "output": done_items if completed_output is None else completed_output,
    }
    out.append(("response.completed", {"type": "response.completed", "response": final}))
    for n, (_, e) in enumerate(out):
        e["sequence_number"] = n
    return out


def fn(name: str = "read_file", args: str = GOOD) -> tuple[str, str, str]:
    return ("function_call", name, args)


def _item(name: str, args: str, i: int = 0) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{i}",
        "call_id": f"call_{i}",
        "name": name,
        "arguments": args,
        "status": "completed",
    }


def _responses_cases() -> list[Case]:
    cases: list[Case] = []

    def add(
        name: str, events: list[Named] | bytes, klass: str, expect: str | None = None, **kw: Any
    ) -> None:
        body = events if isinstance(events, bytes) else sse(events)
        cases.append(Case(f"responses-{name}", "responses", body, klass, expect, **kw))

    add("valid", responses_events([fn()]), "baseline", "pass")
    add("valid-two", responses_events([fn(), fn("set_limit", '{"n": 1}')]), "baseline", "pass")
    add("undeclared", responses_events([fn("delete_file")]), "baseline")
    add("schema", responses_events([fn(args=BAD)]), "baseline")
    add("crlf", sse(responses_events([fn()]), nl="\r\n"), "CR/LF", "pass")
    add("no-event-lines", sse((None, e) for _, e in responses_events([fn()])), "event name", "pass")
    # Class 1: the final snapshot differs from the stream.
    add(
        "snapshot-different-call",
        responses_events([fn()], completed_output=[_item("read_file", BAD)]),
        "1",
    )
    add(
        "snapshot-different-name",
        responses_events([fn()], completed_output=[_item("delete_file", GOOD)]),
        "1",
    )
    add(
        "snapshot-extra-call",
        responses_events(
            [fn()], completed_output=[_item("read_file", GOOD), _item("delete_file", GOOD, 1)]
        ),
        "1",
    )
    add("snapshot-empty", responses_events([fn()], completed_output=[]), "1")
    same = dict(reversed(list(_item("read_file", GOOD).items())))  # key order only
    add("snapshot-same", responses_events([fn()], completed_output=[same]), "1", "pass")
    evs = responses_events([fn()])
    evs.insert(
        -1,
        (
            "response.something_new",
            {
                "type": "response.something_new",
                "item": _item("delete_file", GOOD, 1),
                "output_index": 1,
            },
        ),
    )
    add("unknown-event-with-item", evs, "1")
    # A snapshot the guard's reading cannot hold (a number no float holds beside the
    # items, a lone surrogate in a name) is refused, not skipped: the SDK reads it.
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "ok", "annotations": [], "n": "HUGE"}],
    }
    for suffix, output, expect in (
        ("huge-number-beside", [message, _item("read_file", GOOD)], "pass"),
        ("different-name-huge-number-beside", [message, _item("delete_file", GOOD)], None),
    ):
        body = sse(responses_events([fn()], completed_output=output))
        add(f"snapshot-{suffix}", body.replace(b'"HUGE"', b"1e400"), "1", expect)
    add(
        "snapshot-lone-surrogate-name",
        responses_events(
            [fn()],
            completed_output=[_item("read_file", GOOD), _item("delete_file\ud800", GOOD, 1)],
        ),
        "1",
    )
    evs = responses_events([fn()])
    evs.insert(
        -1,
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": _item("delete_file", GOOD, 1),
            },
        ),
    )
    add("done-without-added", evs, "1")
    evs = responses_events([fn()])
    for _, e in evs:
        if e["type"] == "response.output_item.done":
            e["item"]["arguments"] = BAD
    add("item-done-differs", evs, "1")
    evs = responses_events([fn()])
    for _, e in evs:
        if e["type"] == "response.function_call_arguments.done":
            e["arguments"] = BAD
    add("arguments-done-differs", evs, "1")
    evs = responses_events([fn()])
    evs[-1] = ("response.done", {**evs[-1][1], "type": "response.done"})
    add("response-done", evs, "1")
    evs = responses_events([fn()], completed_output=[_item("delete_file", GOOD)])
    evs[-1] = ("response.incomplete", {**evs[-1][1], "type": "response.incomplete"})
    add("snapshot-incomplete", evs, "1")
    # Event name / type disagreement.
    evs = responses_events([fn(args=BAD)])
    evs = [("response.in_progress" if n == "response.output_item.done" else n, e) for n, e in evs]
    add("done-named-otherwise", evs, "2")
    evs = responses_events([fn()])
    evs.insert(
        -1,
        (
            "response.output_text.delta",
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": _item("delete_file", GOOD, 1),
            },
        ),
    )
    add("item-typed-under-other-name", evs, "2")
    # Class 6: exemptions.
    add(
        "custom-web-search-grok",
        responses_events([("custom_tool_call", "web_search", "rm -rf /")], model="grok-4"),
        "6",
    )
    add("function-named-web-search", responses_events([fn("web_search", '{"q": 1}')]), "6")
    add(
        "custom-undeclared",
        responses_events([("custom_tool_call", "read_file", "/etc/passwd")]),
        "6",
    )
    # Indexes.
    evs = responses_events([fn(), fn("set_limit", '{"n": 1}')])
    for _, e in evs:
        if e.get("output_index") == 1:
            e["output_index"] = -1
    add("negative-output-index", evs, "5")
    add("big-number", responses_events([fn("set_limit", '{"n": 18446744073709551617}')]), "7")
    add(
        "dup-arg-keys",
        responses_events([fn(args='{"path": "/tmp/a", "path": "/etc/passwd"}')]),
        "dup keys",
    )
    add("unterminated-completed", sse(responses_events([fn(args=BAD)])).removesuffix(b"\n\n"), "3")
    add("bom", b"\xef\xbb\xbf" + sse(responses_events([fn()])), "BOM")
    real = cassette_bodies(REAL / "openai_responses-function-call.vcr.yaml")[0]
    capital = {"get_capital": {"type": "object", "properties": {"country": {"type": "string"}}}}
    cases.append(
        Case(
            "responses-real",
            "responses",
            real,
            "recording",
            "pass",
            tools=tools_for("responses", capital),
            schemas=capital,
        )
    )
    return cases


# ---------------------------------------------------------------- Bedrock ConverseStream


def frame(event: str | None, payload: dict[str, Any], message_type: str = "event") -> bytes:
    headers = {":message-type": message_type, ":content-type": "application/json"}
    if event is not None:
        headers = {":event-type": event, **headers}
    return eventstream_message(headers, json.dumps(payload, separators=(",", ":")).encode())


def converse_events(
    calls: list[tuple[str, str, str]],
    stop: str = "tool_use",
    interleave: bool = False,
    kind: str | None = None,
) -> list[tuple[str | None, dict[str, Any]]]:
    out: list[tuple[str | None, dict[str, Any]]] = [
        ("messageStart", {"role": "assistant", "p": "abc"})
    ]
    starts, deltas, stops = [], [], []
    for i, (use_id, name, args) in enumerate(calls):
        start: dict[str, Any] = {"toolUseId": use_id, "name": name}
        if kind is not None:
            start["type"] = kind
        starts.append(
            ("contentBlockStart", {"contentBlockIndex": i, "start": {"toolUse": start}, "p": "a"})
        )
        deltas.append(
            [
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": i, "delta": {"toolUse": {"input": p}}, "p": "a"},
                )
                for p in split(args)
            ]
        )
        stops.append(("contentBlockStop", {"contentBlockIndex": i, "p": "a"}))
    if interleave:
        out += starts
        merged: list[Any] = []
        for group in deltas:
            merged = _alternate(merged, group)
        out += merged
        out += stops
    else:
        for s, d, e in zip(starts, deltas, stops, strict=True):
            out += [s, *d, e]
    out.append(("messageStop", {"stopReason": stop, "p": "a"}))
    out.append(
        (
            "metadata",
            {
                "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
                "metrics": {"latencyMs": 5},
                "p": "a",
            },
        )
    )
    return out


def eventstream(events: Iterable[tuple[str | None, dict[str, Any]]]) -> bytes:
    return b"".join(frame(n, e) for n, e in events)


def use(
    name: str = "read_file", args: str = GOOD, use_id: str = "tooluse_1"
) -> tuple[str, str, str]:
    return (use_id, name, args)


def _bedrock_cases() -> list[Case]:
    cases: list[Case] = []

    def add(
        name: str,
        events: list[tuple[str | None, dict[str, Any]]] | bytes,
        klass: str,
        expect: str | None = None,
        **kw: Any,
    ) -> None:
        body = events if isinstance(events, bytes) else eventstream(events)
        cases.append(Case(f"bedrock-{name}", "bedrock", body, klass, expect, **kw))

    add("valid", converse_events([use()]), "baseline", "pass")
    add(
        "valid-two",
        converse_events([use(), use("set_limit", '{"n": 2}', "tooluse_2")]),
        "baseline",
        "pass",
    )
    add("undeclared", converse_events([use("delete_file")]), "baseline")
    add("schema", converse_events([use(args=BAD)]), "baseline")
    # Class 2: a frame without :event-type (botocore drops it) in the middle of a splice.
    evs = converse_events([use(args='{"path": "/tmp/etc/passwd"}')])
    deltas = [i for i, (n, _) in enumerate(evs) if n == "contentBlockDelta"]
    parts = ['{"path": "/', "tmp/", 'etc/passwd"}']
    evs = [e for i, e in enumerate(evs) if i not in deltas[3:]]
    for i, piece in zip(deltas[:3], parts, strict=True):
        evs[i][1]["delta"]["toolUse"]["input"] = piece
    missing = list(evs)
    missing[deltas[1]] = (None, missing[deltas[1]][1])
    add("splice-no-event-type", missing, "2")
    other = list(evs)
    other[deltas[1]] = ("unknownEvent", other[deltas[1]][1])
    add("splice-unknown-event-type", other, "2")
    wrong = list(evs)
    wrong[deltas[1]] = ("contentBlockStop", wrong[deltas[1]][1])
    add("splice-delta-named-stop", wrong, "2")
    evs2 = converse_events([use(args=BAD)])
    stop_at = next(i for i, (n, _) in enumerate(evs2) if n == "contentBlockStop")
    evs2[stop_at] = ("contentBlockDelta", evs2[stop_at][1])
    add("stop-named-delta", evs2, "2")
    # Class 9: interleaved blocks read with one current block (AWS's example).
    add(
        "interleaved",
        converse_events([use(), use("set_limit", '{"n": 2}', "tooluse_2")], interleave=True),
        "9",
    )
    add(
        "interleaved-same-tool",
        converse_events(
            [use(), use(args='{"path": "/tmp/b"}', use_id="tooluse_2")], interleave=True
        ),
        "9",
    )
    # Class 6: a toolUse typed as server-run.
    add("server-tool-use", converse_events([use(args=BAD)], kind="server_tool_use"), "6")
    add(
        "server-tool-undeclared", converse_events([use("delete_file")], kind="server_tool_use"), "6"
    )
    add("big-number", converse_events([use("set_limit", '{"n": 18446744073709551617}')]), "7")
    add(
        "dup-arg-keys",
        converse_events([use(args='{"path": "/tmp/a", "path": "/etc/passwd"}')]),
        "dup keys",
    )
    add("nan", converse_events([use("set_limit", '{"n": NaN}')]), "NaN")
    add("stop-end-turn", converse_events([use(args=BAD)], stop="end_turn"), "finish")
    evs = converse_events([use(args=BAD)])
    add(
        "negative-index",
        eventstream(evs).replace(b'"contentBlockIndex":0', b'"contentBlockIndex":-1'),
        "index",
    )
    body = eventstream(converse_events([use(args=BAD)]))
    add("truncated-frame", body[:-7], "3")
    # An exception frame in the middle.
    evs = converse_events([use(args=BAD)])
    exc = eventstream_message(
        {
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        b'{"message":"slow down"}',
    )
    body = eventstream(evs[:3]) + exc + eventstream(evs[3:])
    add("exception-frame", body, "exception")
    real = cassette_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")[0]
    temp = {"get_temperature": {"type": "object"}}
    cases.append(
        Case(
            "bedrock-real",
            "bedrock",
            real,
            "recording",
            "pass",
            tools=tools_for("bedrock", temp),
            schemas=temp,
        )
    )
    return cases


# ---------------------------------------------------------------- Gemini


def gemini_chunk(
    parts: list[dict[str, Any]], finish: str | None = None, candidate: int = 0
) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": candidate}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}


def fcall(name: str = "read_file", args: dict[str, Any] | str | None = None) -> dict[str, Any]:
    return {
        "functionCall": {"name": name, "args": {"path": "/tmp/notes.txt"} if args is None else args}
    }


def gemini(chunks: list[dict[str, Any]], nl: str = "\r\n") -> bytes:
    return sse(((None, c) for c in chunks), nl=nl)


def _gemini_cases() -> list[Case]:
    cases: list[Case] = []

    def add(name: str, body: bytes, klass: str, expect: str | None = None, **kw: Any) -> None:
        cases.append(Case(f"gemini-{name}", "gemini", body, klass, expect, **kw))

    text = gemini_chunk([{"text": "ok"}])
    add("valid", gemini([text, gemini_chunk([fcall()], "STOP")]), "baseline", "pass")
    add("valid-lf", gemini([text, gemini_chunk([fcall()], "STOP")], nl="\n"), "CR/LF", "pass")
    add(
        "valid-two",
        gemini([gemini_chunk([fcall(), fcall("set_limit", {"n": 4})], "STOP")]),
        "baseline",
        "pass",
    )
    add("undeclared", gemini([text, gemini_chunk([fcall("delete_file")], "STOP")]), "baseline")
    add(
        "schema",
        gemini([text, gemini_chunk([fcall(args={"path": "/etc/passwd"})], "STOP")]),
        "baseline",
    )
    add(
        "unterminated-call",
        gemini([text, gemini_chunk([fcall(args={"path": "/etc/passwd"})], "STOP")]).removesuffix(
            b"\r\n\r\n"
        ),
        "3",
    )
    add(
        "unterminated-extra",
        gemini([text, gemini_chunk([fcall()], "STOP")])
        + b'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete_file","args":{}}}]},"index":0}]}',
        "3",
    )
    add("comment", b": hi\r\n\r\n" + gemini([text, gemini_chunk([fcall()], "STOP")]), "comments")
    add(
        "no-space-attack",
        gemini([text, gemini_chunk([fcall(args={"path": "/etc/passwd"})], "STOP")]).replace(
            b"data: ", b"data:"
        ),
        "SSE fields",
    )
    add("bom", b"\xef\xbb\xbf" + gemini([text, gemini_chunk([fcall()], "STOP")]), "BOM")
    add(
        "big-number",
        gemini([gemini_chunk([fcall("set_limit", {"n": 18446744073709551617})], "STOP")]),
        "7",
    )
    add(
        "big-number-ok",
        gemini([gemini_chunk([fcall("set_limit", {"n": 18446744073709551616})], "STOP")]),
        "7",
        "pass",
    )
    dup = gemini([gemini_chunk([fcall()], "STOP")]).replace(
        b'"path":"/tmp/notes.txt"', b'"path":"/tmp/notes.txt","path":"/etc/passwd"'
    )
    add("dup-arg-keys", dup, "dup keys")
    dup = gemini([gemini_chunk([fcall()], "STOP")]).replace(
        b'"name":"read_file"', b'"name":"read_file","name":"delete_file"'
    )
    add("dup-name-key", dup, "dup keys")
    add(
        "nan",
        gemini([gemini_chunk([fcall("set_limit", {"n": 1})], "STOP")]).replace(
            b'"n":1', b'"n":NaN'
        ),
        "NaN",
    )
    two = {
        "candidates": [
            gemini_chunk([fcall()], "STOP")["candidates"][0],
            gemini_chunk([fcall(args={"path": "/etc/passwd"})], "STOP", 1)["candidates"][0],
        ]
    }
    add("two-candidates", gemini([two]), "n > 1")
    add(
        "multiline-data",
        gemini([gemini_chunk([fcall()], "STOP")]).replace(
            b',"modelVersion"', b',\r\ndata: "modelVersion"'
        ),
        "multi-line data",
        "pass",
    )
    add(
        "args-string",
        gemini([gemini_chunk([fcall(args='{"path": "/etc/passwd"}')], "STOP")]),
        "JSON",
    )
    add("no-finish", gemini([gemini_chunk([fcall(args={"path": "/etc/passwd"})])]), "finish")
    return cases


def all_cases() -> list[Case]:
    from differential_ollama import ollama_cases  # it builds on this module's Case

    cases = (
        _chat_cases()
        + _anthropic_cases()
        + _responses_cases()
        + _bedrock_cases()
        + _gemini_cases()
        + ollama_cases()
    )
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names repeat"
    return cases


CASES: list[Case] = all_cases()
READERS: dict[str, tuple[str, ...]] = {
    "chat": ("openai",),
    "responses": ("openai",),
    "anthropic": ("anthropic",),
    "bedrock": ("boto3-aws-example", "boto3-by-index"),
    "gemini": ("google-genai",),
    "ollama": ("ollama",),
}
Reader = Callable[..., Any]
