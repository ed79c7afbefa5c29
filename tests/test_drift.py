"""Issue 36: streams read as their providers mean them as the APIs drift (quirks Q56 to
Q58 and Q63 to Q65), each shape beside its twin, and the safety net that turns the next
drift loud: a finish that says "the client has calls to run" over a message without any
client call is not complete, in every dialect, bodies and streams, and the guard
blocks it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from toolstitch import AssembledMessage, Assembler, ToolResultBlock, ToolstitchError
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
    try:
        asm.close()
    except ToolstitchError as e:
        errors.append(e)
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
    out, blocked = guarded(body_of("anthropic", False), None)
    assert blocked is not None and blocked.cause == "incomplete"
    assert b"tool_use" not in out


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
    assert m.finish_reason == "" and m.finish == "tool-calls"
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


# ------------------------------ Q56: the Interactions API's other form

INTERACTIONS = Path(__file__).parent / "fixtures" / "real" / "vercel-ai"
INTERACTION_BODIES = Path(__file__).parent / "fixtures" / "gemini_interactions"
STREAMS = ["basic", "tool-call-step1", "tool-call-step2", "google-search"]


def step_events(name: str) -> list[dict[str, Any]]:
    text = (INTERACTIONS / f"google-interactions-{name}.chunks.txt").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def other_form(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same interaction in the API's other form, as its reference describes it:
    ``interaction.start`` / ``content.start`` (the block under ``content``, text as a
    ``text`` block) / ``content.delta`` / ``content.stop`` / ``interaction.complete``,
    a function call brought whole by one ``function_call`` delta."""
    out: list[dict[str, Any]] = []
    calls: dict[int, dict[str, Any]] = {}
    for e in events:
        kind = e["event_type"]
        if kind == "interaction.created":
            out.append(dict(e, event_type="interaction.start"))
        elif kind == "interaction.completed":
            out.append(dict(e, event_type="interaction.complete"))
        elif kind == "step.start":
            step = dict(e["step"])
            if step["type"] == "model_output":
                text = "".join(c.get("text", "") for c in step.get("content") or [])
                block: dict[str, Any] = {"type": "text", "text": text}
            elif step["type"] == "function_call":
                calls[e["index"]] = {"id": step.get("id"), "name": step.get("name"), "args": ""}
                block = {"type": "function_call"}
            else:
                block = step
            out.append({"event_type": "content.start", "index": e["index"], "content": block})
        elif kind == "step.delta":
            delta = e["delta"]
            call = calls.get(e["index"])
            if call is not None and delta.get("type") == "arguments_delta":
                call["args"] += delta["arguments"]
                continue
            out.append({"event_type": "content.delta", "index": e["index"], "delta": delta})
        elif kind == "step.stop":
            call = calls.pop(e["index"], None)
            if call is not None:
                whole = {
                    "type": "function_call",
                    "id": call["id"],
                    "name": call["name"],
                    "arguments": json.loads(call["args"] or "{}"),
                }
                out.append({"event_type": "content.delta", "index": e["index"], "delta": whole})
            out.append({"event_type": "content.stop", "index": e["index"]})
        else:
            out.append(e)
    return out


def seen(m: AssembledMessage) -> tuple[Any, ...]:
    return (
        m.complete,
        m.finish_reason,
        m.text,
        [(c.id, c.name, json.loads(c.input), c.server_side) for c in m.tool_uses],
        [type(b).__name__ for b in m.blocks],
        m.tokens,
    )


@pytest.mark.parametrize("name", STREAMS)
def test_q56_a_stream_of_the_other_form_reads_as_its_steps_form(name: str) -> None:
    steps = step_events(name)
    legacy = other_form(steps)
    assert {e["event_type"] for e in legacy}.isdisjoint({"step.start", "step.delta", "step.stop"})
    m, errors = read(sse(*steps), "auto")
    twin, twin_errors = read(sse(*legacy), "auto")
    assert errors == [] and twin_errors == []
    assert m.complete and seen(twin) == seen(m)
    assert twin.skipped == ()


def test_q56_a_call_whose_start_names_it_and_a_delta_that_restates_it() -> None:
    legacy = other_form(step_events("tool-call-step1"))
    for e in legacy:
        if e["event_type"] == "content.start" and e["content"]["type"] == "function_call":
            e["content"] = {"type": "function_call", "id": "61nzpsv4", "name": "getWeather"}
    m, errors = read(sse(*legacy), "gemini-interactions")
    assert errors == [] and m.complete
    assert [(c.id, c.name, c.input) for c in m.tool_uses] == [
        ("61nzpsv4", "getWeather", '{"location":"San Francisco"}')
    ]


def test_q56_twin_a_delta_naming_another_call_is_refused() -> None:
    legacy = other_form(step_events("tool-call-step1"))
    for e in legacy:
        if e["event_type"] == "content.start" and e["content"]["type"] == "function_call":
            e["content"] = {"type": "function_call", "id": "61nzpsv4", "name": "getWeather"}
        if e["event_type"] == "content.delta" and e["delta"].get("type") == "function_call":
            e["delta"]["name"] = "deleteEverything"
    m, errors = read(sse(*legacy), "gemini-interactions")
    assert len(errors) == 1 and "deleteEverything" in str(errors[0]) and not m.complete
    assert [c.name for c in m.tool_uses] == ["getWeather"]


def as_outputs(body: dict[str, Any]) -> dict[str, Any]:
    """A whole interaction in the other form: its blocks under ``outputs``."""
    outputs: list[Any] = []
    for step in body.pop("steps"):
        if step["type"] == "model_output":
            outputs += [c for c in step.get("content") or []]
        else:
            outputs.append(step)
    body["outputs"] = outputs
    return body


@pytest.mark.parametrize("name", STREAMS)
def test_q56_a_body_listing_outputs_reads_as_its_steps_form(name: str) -> None:
    raw = (INTERACTION_BODIES / f"{name}.json").read_bytes()
    other = json.dumps(as_outputs(json.loads(raw))).encode()
    assert b'"steps"' not in other
    m, errors = read(raw, "auto")
    twin, twin_errors = read(other, "auto")
    assert errors == [] and twin_errors == []
    assert m.complete and seen(twin) == seen(m)


def test_q56_twin_a_body_with_both_steps_and_outputs_is_refused() -> None:
    body = json.loads((INTERACTION_BODIES / "tool-call-step1.json").read_bytes())
    body["outputs"] = [{"type": "text", "text": "other"}]
    m, errors = read(json.dumps(body).encode(), "gemini-interactions")
    assert len(errors) == 1 and "both `steps` and `outputs`" in str(errors[0])
    assert not m.complete and not m.tool_uses


def test_q56_q65_calls_in_a_shape_not_read_are_never_a_finished_turn() -> None:
    """The issue's silent loss, one drift later: a block type this version does not
    read, under ``requires_action``, is loud in the body and in the stream."""
    body = json.loads((INTERACTION_BODIES / "tool-call-step1.json").read_bytes())
    body = as_outputs(body)
    for o in body["outputs"]:
        if o["type"] == "function_call":
            o["type"] = "client_function_call"
    m, errors = read(json.dumps(body).encode(), "gemini-interactions")
    assert errors == [] and not m.complete and not m.tool_uses
    assert problem_kinds(m) == ["missing-calls"] and "requires_action" in m.problems[0].message
    legacy = other_form(step_events("tool-call-step1"))
    for e in legacy:
        for part in ("content", "delta"):
            if isinstance(e.get(part), dict) and e[part].get("type") == "function_call":
                e[part]["type"] = "client_function_call"
    m, errors = read(sse(*legacy), "gemini-interactions")
    assert not m.complete and "missing-calls" in problem_kinds(m)


# ----------------------------------------- Q57: Gemini's integer enums


def gemini_chunk(finish: Any, parts: list[Any] | None = None) -> dict[str, Any]:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
    return {
        "candidates": [
            {
                "content": {"parts": parts if parts is not None else [call], "role": "model"},
                "finishReason": finish,
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7},
    }


@pytest.mark.parametrize(
    ("number", "name", "complete"),
    [
        (1, "STOP", True),
        (2, "MAX_TOKENS", False),
        (3, "SAFETY", False),
        (5, "OTHER", False),
        (10, "MALFORMED_FUNCTION_CALL", False),
        (12, "UNEXPECTED_TOOL_CALL", False),
    ],
)
def test_q57_integer_finish_reasons_read_by_the_apis_numbering(
    number: int, name: str, complete: bool
) -> None:
    m, errors = read(sse(gemini_chunk(number)), "gemini")
    twin, twin_errors = read(sse(gemini_chunk(name)), "gemini")
    assert errors == [] and twin_errors == []
    assert m.finish_reason == name and m.complete is complete
    assert seen(m) == seen(twin) and m.finish == twin.finish


@pytest.mark.parametrize("number", [0, 99, -1])
def test_q57_twin_an_integer_not_in_the_api_is_not_a_normal_end(number: int) -> None:
    m, errors = read(sse(gemini_chunk(number)), "gemini")
    assert errors == [] and not m.complete
    assert [c.name for c in m.tool_uses] == ["get_weather"]


@pytest.mark.parametrize("bad", [True, 1.5, {"v": 1}, [1]])
def test_q57_twin_a_finish_reason_of_another_type_is_a_named_error(bad: Any) -> None:
    m, errors = read(sse(gemini_chunk(bad)), "gemini")
    assert len(errors) == 1 and "finishReason" in str(errors[0])
    assert not m.complete


def test_q57_integer_block_reasons_and_code_outcomes() -> None:
    blocked = {"promptFeedback": {"blockReason": 1}}
    m, errors = read(sse(blocked), "gemini")
    twin, _ = read(sse({"promptFeedback": {"blockReason": "SAFETY"}}), "gemini")
    assert m.finish_reason == "SAFETY" == twin.finish_reason and not m.complete
    for outcome, named, is_error in ((1, "OUTCOME_OK", False), (2, "OUTCOME_FAILED", True)):
        parts = [
            {"executableCode": {"language": 1, "code": "print(1)"}},
            {"codeExecutionResult": {"outcome": outcome, "output": "1\n"}},
        ]
        by_number, errors = read(sse(gemini_chunk(1, parts)), "gemini")
        by_name, _ = read(
            sse(
                gemini_chunk(
                    "STOP",
                    [
                        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                        {"codeExecutionResult": {"outcome": named, "output": "1\n"}},
                    ],
                )
            ),
            "gemini",
        )
        assert errors == [] and by_number.complete
        results = [b for b in by_number.blocks if isinstance(b, ToolResultBlock)]
        twins = [b for b in by_name.blocks if isinstance(b, ToolResultBlock)]
        assert [(r.is_error, r.content) for r in results] == [(is_error, r.content) for r in twins]
        assert results[0].content != ()


# --------------------------------------------------------- the drift report


def renamed(events: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    return [dict(e, event_type=e["event_type"].replace(old, new)) for e in events]


def test_a_stream_of_mostly_unknown_events_says_the_api_changed() -> None:
    drifted = renamed(step_events("basic"), "step.", "part.")
    m, errors = read(sse(*drifted), "gemini-interactions")
    assert errors == [] and not m.complete
    drift = [p for p in m.problems if "API has likely changed" in p.message]
    assert len(drift) == 1 and drift[0].kind == "not-applied"
    assert "part.start" in drift[0].message and "part.delta" in drift[0].message
    # The same in Anthropic's dialect: a future block event name.
    start, *blocks, end_delta, stop = anthropic_events("end_turn", False)
    more = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}
    parts = [
        dict(e, type=e["type"].replace("content_block", "content_part"))
        for e in [*blocks[:2], more, more, blocks[2]]
    ]
    m, errors = read(sse(start, *parts, end_delta, stop, named=True), "anthropic")
    assert errors == [] and not m.complete and m.text == ""
    assert m.finish_reason == "end_turn"
    assert [p.kind for p in m.problems] == ["not-applied"]
    assert "5 of the stream's 8 events" in m.problems[0].message
    assert "content_part_delta" in m.problems[0].message


def test_drift_twin_a_few_unknown_events_are_skipped_and_the_message_complete() -> None:
    events = step_events("basic")
    extra = {"event_type": "interaction.heartbeat", "interaction_id": "x"}
    m, errors = read(sse(events[0], extra, *events[1:]), "gemini-interactions")
    assert errors == [] and m.complete, m.problems
    assert [s.event_type for s in m.skipped] == ["interaction.heartbeat"]


def test_q63_the_guard_passes_snowflakes_stream_and_blocks_its_cut_twin() -> None:
    data = snowflake('{"city": "Oslo"}')
    out, blocked = guarded(data)
    assert blocked is None and out == data
    cut = snowflake('{"city": "Oslo"}', done=False)
    out, blocked = guarded(cut)
    assert blocked is not None and blocked.cause == "incomplete"


@pytest.mark.parametrize("name", ["tool-call-step1", "google-search"])
def test_q56_the_other_form_cut_anywhere_gives_the_same_interaction(name: str) -> None:
    data = sse(*other_form(step_events(name)))
    whole, errors = read(data, "gemini-interactions")
    assert errors == [] and whole.complete
    for at in range(0, len(data), max(1, len(data) // 60)):
        asm = Assembler("gemini-interactions")
        asm.feed_bytes(data[:at])
        asm.feed_bytes(data[at:])
        asm.close()
        assert seen(asm.message()) == seen(whole), at


def test_q58_the_guard_passes_a_gateways_trailer_and_blocks_content_after_done() -> None:
    data = chat_stream("tool_calls", True) + sse({"choices": [], "cost": "0"})
    out, blocked = guarded(data)
    assert blocked is None and out == data
    bad = chat_stream("tool_calls", True) + sse(
        {"choices": [{"index": 0, "delta": {"content": "more"}, "finish_reason": None}]}
    )
    out, blocked = guarded(bad)
    assert blocked is not None and b"more" not in out
