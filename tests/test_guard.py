"""``toolstitch.guard.Guard`` on every dialect and body kind, read as raw bytes: what it
releases is checked against an independent reading of those bytes (an ``Assembler`` fed
exactly the released bytes, never closed), so that no event that completes an invalid
call, and no end of a message, is ever among them; valid streams come out byte for byte
however they are cut."""

from __future__ import annotations

import gzip
import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from readers import REAL, cassette_bodies
from toolstitch import Assembler
from toolstitch.guard import Guard, dialect_for_path, error_response, provider_name
from toolstitch.messages import MessageDone, ToolCallFinished, ToolCallStarted
from toolstitch.streams import Provider
from toolstitch.tools import Toolset

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent / "python" / "toolstitch" / "samples"
FIXTURES = HERE / "fixtures"


@dataclass(frozen=True)
class Case:
    name: str
    dialect: Provider
    body: bytes
    transport: str | None


def _cases() -> list[Case]:
    chat_body = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
    ).encode()
    anthropic_body = json.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            ],
            "stop_reason": "tool_use",
        }
    ).encode()
    return [
        Case(
            "openai-chat sse",
            "openai-chat",
            (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes(),
            "sse",
        ),
        Case("openai-chat body", "openai-chat", chat_body, "json"),
        Case(
            "openai-responses sse",
            "openai-responses",
            cassette_bodies(SAMPLES / "openai-responses.vcr.yaml")[0],
            "sse",
        ),
        Case(
            "anthropic sse",
            "anthropic",
            (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes(),
            "sse",
        ),
        Case("anthropic body", "anthropic", anthropic_body, "json"),
        Case(
            "bedrock eventstream",
            "bedrock",
            cassette_bodies(SAMPLES / "bedrock.vcr.yaml")[0],
            "eventstream",
        ),
        Case("gemini json lines", "gemini", (SAMPLES / "gemini-vertex.jsonl").read_bytes(), None),
        Case("cohere json lines", "cohere", (SAMPLES / "cohere.jsonl").read_bytes(), None),
        Case(
            "ollama json lines",
            "ollama",
            (FIXTURES / "ollama" / "chat-stream-tool-calls.jsonl").read_bytes(),
            None,
        ),
        Case(
            "bedrock-invoke eventstream",
            "bedrock-invoke",
            (FIXTURES / "bedrock_invoke" / "claude-text-then-tool-use.eventstream").read_bytes(),
            "eventstream",
        ),
        Case(
            "gemini-interactions json lines",
            "gemini-interactions",
            (SAMPLES / "gemini-interactions.jsonl").read_bytes(),
            None,
        ),
    ]


CASES = _cases()


def _calls(case: Case) -> list[Any]:
    asm = Assembler(case.dialect)
    asm.feed_bytes(case.body)
    asm.close()
    (message,) = asm.messages()
    assert message.complete, case.name
    calls = [c for c in message.tool_uses if not c.server_side]
    assert calls, case.name
    return calls


def _tools(names: set[str], strict: str | None = None) -> dict[str, Any]:
    """Every name with an any-object schema; ``strict`` with one it cannot meet."""
    tools: dict[str, Any] = {n: {"type": "object"} for n in names}
    if strict is not None:
        tools[strict] = {"type": "object", "required": ["__never_sent__"]}
    return tools


def _run(case: Case, tools: Any, cuts: list[int] | None = None) -> tuple[bytes, Any, Guard]:
    guard = Guard(tools, transport=case.transport)
    out = b""
    blocked = None
    at = 0
    for cut in [*sorted(cuts or []), len(case.body)]:
        step = guard.feed(case.body[at:cut])
        at = max(at, cut)
        out += step.forward
        blocked = blocked or step.blocked
        if blocked:
            break
    if blocked is None:
        step = guard.finish()
        out += step.forward
        blocked = step.blocked
    return out, blocked, guard


def _delivered(case: Case, released: bytes) -> list[Any]:
    """The live events a client reading exactly ``released`` could act on."""
    asm = Assembler(case.dialect, live=True)
    return list(asm.feed_bytes(released)) if released else []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_valid_responses_pass_byte_identical(case: Case) -> None:
    names = {c.name for c in _calls(case)}
    rng = random.Random(case.name)
    for cuts in ([], [1], sorted(rng.sample(range(len(case.body)), min(20, len(case.body))))):
        out, blocked, guard = _run(case, _tools(names), cuts)
        assert blocked is None, blocked
        assert out == case.body
        assert guard.outcome == "passed" and guard.dialect == case.dialect


@pytest.mark.parametrize("how", ["schema", "undeclared"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_invalid_call_is_never_delivered(case: Case, how: str) -> None:
    calls = _calls(case)
    bad = calls[0]
    names = {c.name for c in calls}
    tools = _tools(names, strict=bad.name) if how == "schema" else _tools(names - {bad.name})
    out, blocked, guard = _run(case, tools, [3, 50, 51])
    assert blocked is not None and guard.outcome == "blocked"
    assert blocked.cause == "invalid-call" and blocked.tool_name == bad.name
    assert case.body.startswith(out) and len(out) < len(case.body)
    events = _delivered(case, out)
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    index = next(e.index for e in started if e.name == bad.name) if started else None
    assert not any(isinstance(e, MessageDone) for e in events)
    assert not any(isinstance(e, ToolCallFinished) and e.index == index for e in events)
    if case.dialect == "openai-chat":
        # No stop of its own: a later call's start is what SDK helpers take as the end.
        assert not any(e.index != index for e in started)
    # The tail is the provider's own error, and nothing after it.
    assert bad.name in blocked.reason
    assert blocked.tail


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_client_that_left_at_the_end_has_the_verdict_finish_gives(case: Case) -> None:
    """``client_left``: the verdict of a response the client read to its own end (the
    openai SDK closes on ``[DONE]``) before the body's end; ``"open"`` when part of it
    was still held back or a message had not ended."""
    tools = _tools({c.name for c in _calls(case)})
    guard = Guard(tools, transport=case.transport)
    out = guard.feed(case.body).forward
    ended = bool(guard.messages()) and all(m.complete for m in guard.messages())
    whole = out == case.body and guard.held == 0
    outcome = guard.client_left()
    assert outcome == ("passed" if ended and whole else "open")
    if outcome == "passed":
        assert guard.finish().forward == b"" and guard.outcome == "passed"
    # Its twin: gone halfway, no verdict.
    half = Guard(tools, transport=case.transport)
    half.feed(case.body[: len(case.body) // 2])
    assert half.client_left() == "open"


def test_client_left_passes_the_real_chat_stream_read_to_done() -> None:
    (case,) = [c for c in CASES if c.dialect == "openai-chat" and c.transport == "sse"][:1]
    guard = Guard(_tools({c.name for c in _calls(case)}), transport=case.transport)
    assert guard.feed(case.body).forward == case.body
    assert guard.client_left() == "passed"


def test_an_empty_name_is_refused() -> None:
    case = CASES[0]
    body = case.body.replace(b'"name":"GetWeatherArgs"', b'"name":""')
    out, blocked, _ = _run(Case("x", case.dialect, body, "sse"), _tools({"get_stock_price"}))
    assert blocked is not None and blocked.cause == "invalid-call"
    assert not any(isinstance(e, MessageDone) for e in _delivered(case, out))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_undecodable_event_before_the_calls_blocks_from_there(case: Case) -> None:
    names = {c.name for c in _calls(case)}
    if case.transport == "eventstream":
        # A frame whose CRC does not match.
        frame_len = int.from_bytes(case.body[:4], "big")
        broken = bytearray(case.body)
        broken[frame_len + 20] ^= 0xFF
        body = bytes(broken)
        at = frame_len
    else:
        sep = b"\n\n" if case.transport == "sse" else b"\n"
        at = case.body.index(sep) + len(sep) if sep in case.body else len(case.body)
        bad = b"data: {not json\n\n" if case.transport == "sse" else b"{not json\n"
        body = case.body[:at] + bad + case.body[at:]
    out, blocked, _ = _run(Case(case.name, case.dialect, body, case.transport), _tools(names))
    assert blocked is not None and blocked.cause in ("unreadable", "limit")
    assert len(out) <= at and case.body.startswith(out)


def _end_of_message(case: Case) -> int:
    """The length of the shortest prefix whose reading ends the message."""
    low, high = 0, len(case.body)
    while low < high:
        middle = (low + high) // 2
        if any(isinstance(e, MessageDone) for e in _delivered(case, case.body[:middle])):
            high = middle
        else:
            low = middle + 1
    return low


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_cut_response_never_ends_normally(case: Case) -> None:
    names = {c.name for c in _calls(case)}
    end = _end_of_message(case)
    # (A cut of only the last blank line or newline leaves a whole last event: the
    # stream then ends as the provider meant.)
    for cut in (end // 3, end // 2, end * 2 // 3, end - 30):
        out, blocked, _ = _run(
            Case(case.name, case.dialect, case.body[:cut], case.transport), _tools(names)
        )
        assert blocked is not None, cut
        assert blocked.cause in ("incomplete", "unreadable")
        assert not any(isinstance(e, MessageDone) for e in _delivered(case, out))


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_body_is_decoded_and_guarded(encoding: str) -> None:
    case = CASES[0]
    data = gzip.compress(case.body) if encoding == "gzip" else zlib.compress(case.body)
    names = {c.name for c in _calls(case)}
    guard = Guard(_tools(names), transport="sse", encoding=encoding)
    out = b"".join(guard.feed(data[i : i + 100]).forward for i in range(0, len(data), 100))
    out += guard.finish().forward
    assert out == case.body and guard.outcome == "passed"


def test_a_gzip_bomb_is_refused_and_nothing_goes_out() -> None:
    bomb = gzip.compress(b"data: " + b" " * (300 << 20))
    guard = Guard({"f": {"type": "object"}}, transport="sse", encoding="gzip")
    step = guard.feed(bomb)
    assert step.forward == b""
    assert step.blocked is not None and step.blocked.cause in ("encoding", "limit")
    assert guard.finish().forward == b""


def test_a_24_mib_event_is_refused_in_linear_work() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * (24 << 20)
    guard = Guard({"f": {"type": "object"}}, transport="sse")
    outs = [guard.feed(body[i : i + (1 << 20)]) for i in range(0, len(body), 1 << 20)]
    assert all(s.forward == b"" for s in outs)
    blocked = next(s.blocked for s in outs if s.blocked)
    assert blocked.cause == "limit"
    assert guard.held == 0


def test_unknown_codings_and_transports_fail_closed() -> None:
    with pytest.raises(ValueError):
        Guard({"f": {"type": "object"}}, encoding="br")
    guard = Guard({"f": {"type": "object"}})
    assert guard.feed(b"<html>busy</html>").forward == b""
    step = guard.finish()
    assert step.blocked is not None and step.blocked.cause == "unreadable"


def test_a_body_no_dialect_answers_in_is_released_unchecked() -> None:
    body = b'{"object":"list","data":[]}'
    guard = Guard({"f": {"type": "object"}}, transport="json")
    out = guard.feed(body).forward + guard.finish().forward
    assert out == body and guard.outcome == "unchecked"
    assert guard.unchecked_reason == "no dialect answers in the body"


def test_a_check_that_raises_anything_refuses_the_call() -> None:
    def check(call: Any) -> None:
        raise RuntimeError("boom")

    _, blocked, _ = _run(CASES[3], check)
    assert blocked is not None and "boom" in blocked.reason


def test_the_error_shapes_are_the_providers() -> None:
    status, headers, body = error_response("anthropic", "no")
    assert status == 502 and ("x-should-retry", "false") in headers
    assert json.loads(body) == {
        "type": "error",
        "error": {"type": "invalid_tool_call_error", "message": "no"},
    }
    status, headers, body = error_response("bedrock", "no")
    assert status == 424 and ("x-amzn-ErrorType", "ModelErrorException") in headers
    assert json.loads(error_response(None, "no")[2])["error"]["message"] == "no"
    assert dialect_for_path("/v1/chat/completions") == "openai-chat"
    assert dialect_for_path("/model/m/converse-stream") == "bedrock"
    assert dialect_for_path("/v1beta/models/g:streamGenerateContent?alt=sse") == "gemini"
    assert dialect_for_path("/v1/models") is None
    assert provider_name("openai-responses") == "openai"
    assert provider_name("bedrock-invoke") == "aws.bedrock"
    assert (
        provider_name("gemini", "/v1/projects/p/locations/us/publishers/google/models/m")
        == "gcp.vertex_ai"
    )


def test_a_toolset_is_taken_as_it_is() -> None:
    case = CASES[3]
    toolset = Toolset({"get_weather": {"type": "object", "required": ["location"]}})
    out, blocked, _ = _run(case, toolset)
    assert blocked is None and out == case.body


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(CASES[3].body)), max_size=15))
def test_what_goes_out_does_not_depend_on_how_reads_are_cut(cuts: list[int]) -> None:
    case = CASES[3]
    names = {c.name for c in _calls(case)}
    first, _, _ = _run(case, _tools(names, strict="get_weather"))
    again, blocked, _ = _run(case, _tools(names, strict="get_weather"), cuts)
    assert again == first and blocked is not None


def test_an_event_the_sdk_would_skip_blocks_as_ambiguous() -> None:
    # The anthropic SDK skips an event without an `event:` line: the guard would
    # have checked arguments the application never gets.
    case = CASES[3]
    assert case.dialect == "anthropic"
    needle = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1'
    at = case.body.index(needle)
    body = case.body[:at] + case.body[at + len(b"event: content_block_delta\n") :]
    out, blocked, guard = _run(Case("x", case.dialect, body, "sse"), _tools({"get_weather"}))
    assert blocked is not None and blocked.cause == "ambiguous", blocked
    assert guard.outcome == "blocked" and out == case.body[:at]
    # Renamed `ping`: the SDK skips it too; the guard refuses the event.
    renamed = case.body[:at] + b"event: ping" + case.body[at + len(b"event: content_block_delta") :]
    out, blocked, _ = _run(Case("x", case.dialect, renamed, "sse"), _tools({"get_weather"}))
    assert blocked is not None and blocked.cause == "unreadable" and out == case.body[:at]


def test_chat_name_fragments_block_as_ambiguous() -> None:
    def chunk(delta: object, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return (
            b"data: "
            + json.dumps({"object": "chat.completion.chunk", "choices": [choice]}).encode()
            + b"\n\n"
        )

    first = chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "delete_", "arguments": ""},
                }
            ]
        }
    )
    second = chunk({"tool_calls": [{"index": 0, "function": {"name": "file", "arguments": "{}"}}]})
    end = chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    # openai's helper concatenates: the application gets `delete_file`.
    out, blocked, _ = _run(Case("x", "openai-chat", first + second + end, "sse"), _tools({"file"}))
    assert blocked is not None and blocked.cause == "ambiguous" and out == first
    whole = chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "file", "arguments": "{}"},
                }
            ]
        }
    )
    out, blocked, _ = _run(Case("x", "openai-chat", whole + end, "sse"), _tools({"file"}))
    assert blocked is None and out == whole + end


def test_a_number_beyond_a_double_is_compared_exactly() -> None:
    def body(n: str) -> bytes:
        args = '{"n": ' + n + "}"
        call = {
            "index": 0,
            "id": "c1",
            "type": "function",
            "function": {"name": "f", "arguments": args},
        }
        chunks = [
            {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
        ]
        return (
            b"".join(
                b"data: "
                + json.dumps({"object": "chat.completion.chunk", "choices": [c]}).encode()
                + b"\n\n"
                for c in chunks
            )
            + b"data: [DONE]\n\n"
        )

    tools = {"f": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**64}}}}
    _, blocked, _ = _run(Case("x", "openai-chat", body("18446744073709551617"), "sse"), tools)
    assert blocked is not None and blocked.cause == "invalid-call" and "maximum" in blocked.reason
    ok = body("18446744073709551616")
    out, blocked, _ = _run(Case("x", "openai-chat", ok, "sse"), tools)
    assert blocked is None and out == ok
