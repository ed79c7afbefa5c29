"""Issue 36: streams read as their providers mean them as the APIs drift (quirks Q56 to
Q58 and Q63 to Q65), each shape beside its twin, and the safety net that turns the next
drift loud: a finish that says "the client has calls to run" over a message without any
client call is not complete, in every dialect, bodies and streams, and the guard
blocks it."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from toolstitch import AssembledMessage, Assembler, ToolstitchError
from toolstitch.guard import Guard

# ------------------------------------------------------------------ helpers


def sse(*events: Any, named: bool = False) -> bytes:
    """SSE bytes: each event a dict (named by its ``type`` when ``named``) or raw text."""
    out = []
    for e in events:
        if isinstance(e, str):
            out.append(f"data: {e}\n\n")
            continue
        name = f"event: {e['type']}\n" if named and "type" in e else ""
        out.append(f"{name}data: {json.dumps(e)}\n\n")
    return "".join(out).encode()


def lines(*events: Any) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in events).encode()


def read(data: bytes, provider: str) -> tuple[AssembledMessage, list[ToolstitchError]]:
    asm = Assembler(provider)  # type: ignore[arg-type]
    errors: list[ToolstitchError] = []
    try:
        asm.feed_bytes(data)
    except ToolstitchError as e:
        errors.append(e)
    asm.close()
    return asm.message(), errors


def fed(
    events: list[tuple[str | None, Any]], provider: str
) -> tuple[AssembledMessage, list[ToolstitchError]]:
    """Feeds ``(event_type, event)`` pairs as decoded events."""
    asm = Assembler(provider)  # type: ignore[arg-type]
    errors: list[ToolstitchError] = []
    for name, e in events:
        try:
            asm.feed(e, event_type=name)
        except ToolstitchError as err:
            errors.append(err)
    asm.close()
    return asm.message(), errors


def problem_kinds(m: AssembledMessage) -> list[str]:
    return [p.kind for p in m.problems]


def note_kinds(m: AssembledMessage) -> list[str]:
    return [n.kind for n in m.notes]


# ------------------------------------------------- streams of every dialect


def chat_stream(finish: str, with_call: bool) -> bytes:
    delta: dict[str, Any] = {"role": "assistant", "content": "Checking."}
    events: list[Any] = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}]
    if with_call:
        tc = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
        }
        events.append({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]})
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return sse(*events, "[DONE]")


def anthropic_events(stop: str, with_call: bool) -> list[dict[str, Any]]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    events: list[dict[str, Any]] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
    ]
    if with_call:
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        events += [
            {"type": "content_block_start", "index": 1, "content_block": block},
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city":"Oslo"}'},
            },
            {"type": "content_block_stop", "index": 1},
        ]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    return events


def anthropic_stream(stop: str, with_call: bool) -> bytes:
    return sse(*anthropic_events(stop, with_call), named=True)


def cohere_stream(finish: str, with_call: bool) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}},
    ]
    if with_call:
        tc = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        events += [
            {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": tc}}},
            {
                "type": "tool-call-delta",
                "index": 0,
                "delta": {
                    "message": {"tool_calls": {"function": {"arguments": '{"city":"Oslo"}'}}}
                },
            },
            {"type": "tool-call-end", "index": 0},
        ]
    events.append({"type": "message-end", "delta": {"finish_reason": finish}})
    return sse(*events, named=True)


def interactions_stream(status: str, with_call: bool) -> bytes:
    events: list[dict[str, Any]] = [
        {"event_type": "interaction.created", "interaction": {"id": "i1", "status": "in_progress"}},
    ]
    if with_call:
        step = {"type": "function_call", "id": "fc_1", "name": "get_weather", "arguments": {}}
        events += [
            {"event_type": "step.start", "index": 0, "step": step},
            {
                "event_type": "step.delta",
                "index": 0,
                "delta": {"type": "arguments_delta", "arguments": '{"city":"Oslo"}'},
            },
            {"event_type": "step.stop", "index": 0},
        ]
    events.append(
        {"event_type": "interaction.completed", "interaction": {"id": "i1", "status": status}}
    )
    return sse(*events)


def bedrock_events(stop: str, with_call: bool) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = [("messageStart", {"role": "assistant"})]
    if with_call:
        start = {"toolUse": {"toolUseId": "t1", "name": "get_weather"}}
        events += [
            ("contentBlockStart", {"contentBlockIndex": 0, "start": start}),
            (
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"city":"Oslo"}'}}},
            ),
            ("contentBlockStop", {"contentBlockIndex": 0}),
        ]
    events.append(("messageStop", {"stopReason": stop}))
    return events


def invoke_events(stop: str, with_call: bool) -> list[tuple[str | None, Any]]:
    """Anthropic events as Bedrock InvokeModel chunks (base64 of each event)."""
    return [
        ("chunk", {"bytes": base64.b64encode(json.dumps(e).encode()).decode()})
        for e in anthropic_events(stop, with_call)
    ]


CALLS_FINISH = [
    pytest.param(lambda w: read(chat_stream("tool_calls", w), "openai-chat"), id="openai-chat"),
    pytest.param(lambda w: read(anthropic_stream("tool_use", w), "anthropic"), id="anthropic"),
    pytest.param(lambda w: fed(bedrock_events("tool_use", w), "bedrock"), id="bedrock"),
    pytest.param(lambda w: fed(invoke_events("tool_use", w), "bedrock-invoke"), id="invoke"),
    pytest.param(lambda w: read(cohere_stream("TOOL_CALL", w), "cohere"), id="cohere"),
    pytest.param(
        lambda w: read(interactions_stream("requires_action", w), "gemini-interactions"),
        id="gemini-interactions",
    ),
]


@pytest.mark.parametrize("stream", CALLS_FINISH)
def test_q65_a_finish_for_calls_over_no_client_call_is_not_complete(stream: Any) -> None:
    m, errors = stream(False)
    assert errors == []
    assert not m.complete and not m.tool_uses
    assert problem_kinds(m) == ["missing-calls"]
    assert m.finish_reason is not None
    assert f'ended with "{m.finish_reason}"' in m.problems[0].message


@pytest.mark.parametrize("stream", CALLS_FINISH)
def test_q65_twin_the_same_finish_with_its_call_is_complete(stream: Any) -> None:
    m, errors = stream(True)
    assert errors == [] and m.complete, m.problems
    assert [(c.name, c.input) for c in m.tool_uses] == [("get_weather", '{"city":"Oslo"}')]


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(lambda: read(chat_stream("stop", False), "openai-chat"), id="openai-chat"),
        pytest.param(
            lambda: read(anthropic_stream("end_turn", False), "anthropic"), id="anthropic"
        ),
        pytest.param(lambda: fed(bedrock_events("end_turn", False), "bedrock"), id="bedrock"),
        pytest.param(lambda: read(cohere_stream("COMPLETE", False), "cohere"), id="cohere"),
        pytest.param(
            lambda: read(interactions_stream("completed", False), "gemini-interactions"),
            id="gemini-interactions",
        ),
        pytest.param(
            lambda: read(
                sse(
                    {
                        "candidates": [
                            {
                                "content": {"parts": [{"text": "Hi"}], "role": "model"},
                                "finishReason": "STOP",
                            }
                        ]
                    }
                ),
                "gemini",
            ),
            id="gemini",
        ),
        pytest.param(
            lambda: read(
                lines(
                    {"message": {"role": "assistant", "content": "Hi"}, "done": False},
                    {
                        "message": {"role": "assistant", "content": ""},
                        "done": True,
                        "done_reason": "stop",
                    },
                ),
                "ollama",
            ),
            id="ollama",
        ),
    ],
)
def test_q65_twin_a_text_end_without_calls_stays_complete(stream: Any) -> None:
    m, errors = stream()
    assert errors == [] and m.complete, m.problems
    assert not m.problems and not m.tool_uses


def body_of(provider: str, with_call: bool) -> bytes:
    call = {"city": "Oslo"}
    if provider == "openai-chat":
        message: dict[str, Any] = {"role": "assistant", "content": "Checking."}
        if with_call:
            message["tool_calls"] = [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps(call)},
                }
            ]
        body: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
    elif provider in ("anthropic", "bedrock-invoke"):
        content: list[Any] = [{"type": "text", "text": "Checking."}]
        if with_call:
            content.append(
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": call}
            )
        body = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": content,
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 5},
        }
    elif provider == "bedrock":
        parts: list[Any] = [{"text": "Checking."}]
        if with_call:
            parts.append({"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": call}})
        body = {
            "output": {"message": {"role": "assistant", "content": parts}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
        }
    elif provider == "cohere":
        msg: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]}
        if with_call:
            msg["tool_calls"] = [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps(call)},
                }
            ]
        body = {"id": "r1", "message": msg, "finish_reason": "TOOL_CALL"}
    else:
        steps: list[Any] = [{"type": "model_output", "content": [{"type": "text", "text": "Hi"}]}]
        if with_call:
            steps.append(
                {"type": "function_call", "id": "fc_1", "name": "get_weather", "arguments": call}
            )
        body = {"id": "i1", "object": "interaction", "status": "requires_action", "steps": steps}
    return json.dumps(body).encode()


BODIES = ["openai-chat", "anthropic", "bedrock-invoke", "bedrock", "cohere", "gemini-interactions"]


@pytest.mark.parametrize("provider", BODIES)
def test_q65_a_body_that_stops_for_calls_and_holds_none_is_not_complete(provider: str) -> None:
    m, errors = read(body_of(provider, False), provider)
    assert errors == []
    assert not m.complete and problem_kinds(m) == ["missing-calls"]
    twin, errors = read(body_of(provider, True), provider)
    assert errors == [] and twin.complete, twin.problems
    assert [c.name for c in twin.tool_uses] == ["get_weather"]


def guarded(body: bytes, transport: str | None = "sse") -> tuple[bytes, Any]:
    guard = Guard({"get_weather": {"type": "object"}}, transport=transport)
    step = guard.feed(body)
    out, blocked = step.forward, step.blocked
    if blocked is None:
        step = guard.finish()
        out += step.forward
        blocked = step.blocked
    return out, blocked


def test_q65_the_guard_blocks_a_finish_for_calls_without_calls() -> None:
    out, blocked = guarded(chat_stream("tool_calls", False))
    assert blocked is not None and blocked.cause == "incomplete"
    assert "tool_calls" in blocked.reason and "holds none" in blocked.reason
    assert b'"finish_reason": "tool_calls"' not in out
    body, blocked = guarded(body_of("anthropic", False), None)
    assert blocked is not None and blocked.cause == "incomplete"


def test_q65_twin_the_guard_passes_a_text_end_and_a_finish_with_its_call() -> None:
    for data in (chat_stream("stop", False), chat_stream("tool_calls", True)):
        out, blocked = guarded(data)
        assert blocked is None and out == data


# ------------------------------------------------ Q58: after [DONE]


def test_q58_a_content_free_chunk_after_done_is_a_note() -> None:
    data = chat_stream("tool_calls", True)
    for trailer in (
        {"choices": [], "cost": "0"},
        {"id": "x", "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
        {"choices": [], "metadata": {"gateway": "g"}},
    ):
        m, errors = read(data + sse(trailer), "openai-chat")
        assert errors == [] and m.complete, m.problems
        assert note_kinds(m) == ["after-done-ignored"]
        assert "[DONE]" in m.notes[0].message
        # Nothing of it was applied.
        assert m.usage is None or "completion_tokens" not in (m.usage or {})


@pytest.mark.parametrize(
    "trailer",
    [
        {"choices": [{"index": 0, "delta": {"content": "more"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "error": {"message": "boom"}},
    ],
)
def test_q58_twin_content_after_done_stays_q24s_error(trailer: dict[str, Any]) -> None:
    m, errors = read(chat_stream("tool_calls", True) + sse(trailer), "openai-chat")
    assert [e.rule for e in errors] == ["after-done"]  # type: ignore[attr-defined]
    assert not m.complete and "after-done-ignored" not in note_kinds(m)


# --------------------------------------------- Q63: Snowflake's "" throughout


def snowflake(args: str, done: bool = True) -> bytes:
    tc = {
        "index": 0,
        "id": "toolu_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    pieces = [args[: len(args) // 2], args[len(args) // 2 :]]
    events: list[Any] = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": "Let me"},
                    "finish_reason": "",
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": ""}]},
    ]
    for p in pieces:
        d = {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}
        events.append({"choices": [{"index": 0, "delta": d, "finish_reason": ""}]})
    events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}})
    if done:
        events.append("[DONE]")
    return sse(*events)


def test_q63_empty_finish_throughout_then_done_is_complete_with_a_note() -> None:
    m, errors = read(snowflake('{"city": "Oslo"}'), "openai-chat")
    assert errors == [] and m.complete, m.problems
    assert note_kinds(m) == ["empty-finish-ended"]
    assert m.finish_reason == ""
    assert [(c.name, c.input) for c in m.tool_uses] == [("get_weather", '{"city": "Oslo"}')]


def test_q63_twin_without_done_it_stays_incomplete() -> None:
    m, errors = read(snowflake('{"city": "Oslo"}', done=False), "openai-chat")
    assert errors == [] and not m.complete and note_kinds(m) == []


def test_q63_twin_an_incomplete_input_stays_incomplete() -> None:
    m, errors = read(snowflake('{"city": "Os'), "openai-chat")
    assert errors == [] and not m.complete and note_kinds(m) == []


def test_q63_twin_null_finish_reasons_then_done_stay_incomplete() -> None:
    data = snowflake('{"city": "Oslo"}').replace(b'"finish_reason": ""', b'"finish_reason": null')
    m, _ = read(data, "openai-chat")
    assert not m.complete and note_kinds(m) == []


def snowflake_body(args: str) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Let me",
                        "tool_calls": [
                            {
                                "id": "toolu_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": args},
                            }
                        ],
                    },
                    "finish_reason": "",
                }
            ],
        }
    ).encode()


def test_q63_a_whole_body_with_an_empty_finish_is_complete_with_a_note() -> None:
    m, errors = read(snowflake_body('{"city":"Oslo"}'), "openai-chat")
    assert errors == [] and m.complete, m.problems
    assert note_kinds(m) == ["empty-finish-ended"]
    twin, errors = read(snowflake_body('{"city":"Os'), "openai-chat")
    assert errors == [] and not twin.complete


# ------------------------------------------------ Q64: Ollama float counters


def test_q64_ollama_float_counters_are_read_as_integers() -> None:
    tc = {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    last = {
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 26.0,
        "eval_count": 56.0,
        "total_duration": 1.5e9,
    }
    first = {
        "model": "m",
        "message": {"role": "assistant", "content": "", "tool_calls": [tc]},
        "done": False,
    }
    m, errors = read(lines(first, last), "ollama")
    assert errors == [] and m.complete, m.problems
    assert m.tokens.input_tokens == 26 and m.tokens.output_tokens == 56
    as_ints = dict(last, prompt_eval_count=26, eval_count=56, total_duration=1500000000)
    twin, _ = read(lines(first, as_ints), "ollama")
    assert twin.usage == m.usage and twin.tokens == m.tokens


def test_q64_twin_a_count_with_a_fraction_is_a_named_error() -> None:
    last = {
        "message": {"role": "assistant", "content": "Hi"},
        "done": True,
        "done_reason": "stop",
        "eval_count": 56.5,
    }
    m, errors = read(lines(last), "ollama")
    assert len(errors) == 1 and "eval_count" in str(errors[0]) and "56.5" in str(errors[0])
    assert not m.complete


# ------------------------------- bedrock-invoke: the metrics key in any spelling


def test_invocation_metrics_are_found_whatever_escapes_spell_the_key() -> None:
    metrics = {"inputTokenCount": 3, "outputTokenCount": 5}
    plain = {"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics}
    text = json.dumps(plain)
    escaped = text.replace("amazon-bedrock", "amazon\\u002dbedrock").replace(
        "invocationMetrics", "\\u0069nvocationMetrics"
    )
    assert escaped != text and json.loads(escaped) == plain
    usages = []
    for stop in (text, escaped):
        events = invoke_events("end_turn", False)[:-1]
        events.append(("chunk", {"bytes": base64.b64encode(stop.encode()).decode()}))
        m, errors = fed(events, "bedrock-invoke")
        assert errors == [] and m.complete, m.problems
        usages.append(m.usage)
    assert usages[0] == usages[1]
    assert usages[0] is not None and usages[0]["amazon-bedrock-invocationMetrics"] == metrics
