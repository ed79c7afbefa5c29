"""The edges of issue 25 through the Python API: the opt-in split bounded by
``max_calls``, ids of our own making distinct, object arguments kept as sent, Responses
``item_id`` checked, and the last long-tail shapes (Q52 to Q54), each beside its twin. The
Rust side is tests/rust_edges.rs."""

from __future__ import annotations

import json
from typing import Any

import pytest

# OpenAI chat chunks built as the long-tail tests build them.
from test_long_tail import END, call, chunk
from toolstitch import (
    AssembledMessage,
    Assembler,
    ProtocolError,
    ProviderError,
    StreamDecodeError,
    Toolset,
    ToolstitchError,
)


def sse(*events: Any) -> bytes:
    out = []
    for e in events:
        text = e if isinstance(e, str) else json.dumps(e)
        out.append(f"data: {text}\n\n")
    return "".join(out).encode()


def run_bytes(
    data: bytes, provider: str = "openai-chat", **options: Any
) -> tuple[AssembledMessage, list[Exception]]:
    asm = Assembler(provider, **options)  # type: ignore[arg-type]
    errors: list[Exception] = []
    try:
        asm.feed_bytes(data)
    except ToolstitchError as err:
        errors.append(err)
    asm.close()
    return asm.message(), errors


def run(
    *events: Any, provider: str = "openai-chat", **options: Any
) -> tuple[AssembledMessage, list[Exception]]:
    asm = Assembler(provider, **options)  # type: ignore[arg-type]
    errors: list[Exception] = []
    for e in events:
        try:
            asm.feed(e)
        except ToolstitchError as err:
            errors.append(err)
    asm.close()
    return asm.message(), errors


def kinds(m: AssembledMessage) -> list[str]:
    return [n.kind for n in m.notes]


# ------------------------------------------------------------------- Q40's split


def test_q40_split_of_60_kb_of_empty_objects_is_bounded_by_max_calls() -> None:
    bomb = "{}" * 30_000
    m, errors = run(call(0, bomb, "call_a", "f"), END, split_concatenated=True)
    assert errors == []
    assert [c.input for c in m.tool_uses] == [bomb]
    assert not m.complete
    (problem,) = m.problems
    assert problem.kind == "not-applied" and "max_calls (4096)" in str(problem)


def test_q40_twin_a_split_within_max_calls_gives_each_object() -> None:
    m, errors = run(call(0, "{}" * 50, "call_a", "f"), END, split_concatenated=True, max_calls=50)
    assert errors == [] and m.complete
    assert [c.id for c in m.tool_uses][:2] == ["call_a_1", "call_a_2"]
    assert len(m.tool_uses) == 50 and kinds(m) == ["concatenated-split"]


# ------------------------------------------------------------ ids of our own making


def test_minted_ids_never_take_a_sent_id() -> None:
    m, errors = run(call(0, "{}", "call_0_1", "f"), call(1, "{}", None, "g"), END)
    assert errors == [] and m.complete
    assert [c.id for c in m.tool_uses] == ["call_0_1", "call_0_1_2"]
    assert m.minted_ids == {"call_0_1_2"}
    m, errors = run(call(0, "{}", None, "f"), call(1, "{}", "call_0_0", "g"), END)
    assert errors == [] and m.complete
    assert [c.id for c in m.tool_uses] == ["call_0_0_2", "call_0_0"]


def test_a_q38_rename_and_a_minted_id_never_meet() -> None:
    m, errors = run(
        call(0, '{"a":1}', "call_0", "f"),
        call(1, '{"a":2}', "call_0", "f"),
        call(2, "{}", None, "g"),
        END,
    )
    assert errors == [] and m.complete
    assert [c.id for c in m.tool_uses] == ["call_0", "call_0_2", "call_0_2_2"]


def test_twin_a_repeated_segment_with_one_id_is_still_refused() -> None:
    m, errors = run(call(0, '{"a":1}', "x", "f"), call(1, '{"a":1}', "x", "f"), END)
    assert errors and not m.complete


# -------------------------------------------------------- Q42: exact object arguments


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ('{"n": 123456789012345678901234567890}', '{"n":123456789012345678901234567890}'),
        ('{"x": 1e400}', '{"x":1e400}'),
        ('{"b": 1, "a": 2}', '{"b":1,"a":2}'),
    ],
)
def test_q42_object_arguments_keep_numbers_and_key_order_in_stream_and_body(
    sent: str, kept: str
) -> None:
    streamed = (
        '{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":'
        f'[{{"index":0,"id":"call_a","function":{{"name":"f","arguments":{sent}}}}}]}},'
        '"finish_reason":null}]}'
    )
    body = (
        '{"object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls",'
        '"message":{"role":"assistant","tool_calls":[{"id":"call_a","type":"function",'
        f'"function":{{"name":"f","arguments":{sent}}}}}]}}}}]}}'
    )
    for data in (sse(streamed, END), sse(body)):
        m, errors = run_bytes(data)
        assert errors == [] and m.complete, m.problems
        assert [c.input for c in m.tool_uses] == [kept]


def test_q42_twin_a_second_different_object_is_still_refused() -> None:
    m, errors = run(call(0, {"n": 1}, "call_a", "f"), call(0, {"n": 2}), END)
    assert len(errors) == 1 and isinstance(errors[0], StreamDecodeError)
    assert not m.complete


# ---------------------------------------------------------- Responses item_id


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def fc(kind: str, oi: int, item_id: str, call_id: str, name: str, args: str) -> dict[str, Any]:
    return ev(
        kind,
        output_index=oi,
        item={
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": name,
            "arguments": args,
        },
    )


def test_responses_an_early_done_for_another_item_is_refused_by_name() -> None:
    m, errors = run(
        ev("response.created", response={"id": "r1"}),
        ev(
            "response.function_call_arguments.done",
            output_index=0,
            item_id="fc_1",
            arguments='{"city":"Paris"}',
        ),
        fc("response.output_item.added", 0, "fc_2", "call_2", "get_time", ""),
        ev("response.completed", response={"status": "completed"}),
        provider="openai-responses",
    )
    assert any(
        isinstance(e, StreamDecodeError) and "fc_1" in str(e) and "fc_2" in str(e) for e in errors
    )
    assert not m.complete


def test_responses_twin_events_naming_their_own_item_are_read() -> None:
    m, errors = run(
        ev("response.created", response={"id": "r1"}),
        fc("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
        ev("response.function_call_arguments.delta", output_index=0, item_id="fc_1", delta="{}"),
        fc("response.output_item.done", 0, "fc_1", "call_1", "f", "{}"),
        ev("response.completed", response={"status": "completed"}),
        provider="openai-responses",
    )
    assert errors == [] and m.complete


# ------------------------------------------------------------------ Q52, Q53, Q54


def q52(function: dict[str, Any], custom: dict[str, Any], kind: str) -> dict[str, Any]:
    return chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_a", "type": kind, "function": function, "custom": custom}
            ]
        }
    )


def test_q52_an_empty_custom_beside_a_filled_function_is_the_function_call() -> None:
    empty = {"name": "", "input": ""}
    m, errors = run(
        q52({"name": "get_weather", "arguments": '{"city":"Paris"}'}, empty, "function"), END
    )
    assert errors == [] and m.complete
    (c,) = m.tool_uses
    assert (c.name, c.kind) == ("get_weather", "function")
    assert kinds(m) == ["empty-custom-ignored"]
    assert [v.arguments for v in m.validated(Toolset({"get_weather": {"type": "object"}}))] == [
        {"city": "Paris"}
    ]


def test_q52_twin_a_filled_custom_stays_custom_and_both_filled_is_refused() -> None:
    m, errors = run(
        q52({"name": "", "arguments": ""}, {"name": "run_sql", "input": "SELECT 1"}, "custom"), END
    )
    assert errors == [] and m.complete and m.tool_uses[0].kind == "custom_tool_call"
    m, errors = run(
        q52({"name": "f", "arguments": "{}"}, {"name": "run_sql", "input": "SELECT 1"}, "function"),
        END,
    )
    assert len(errors) == 1 and isinstance(errors[0], StreamDecodeError) and not m.complete


def cohere(name: str, args: str) -> list[dict[str, Any]]:
    return [
        {"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}},
        {
            "type": "tool-call-start",
            "index": 0,
            "delta": {
                "message": {
                    "tool_calls": {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                }
            },
        },
        {
            "type": "tool-call-delta",
            "index": 0,
            "delta": {"message": {"tool_calls": {"function": {"arguments": args}}}},
        },
        {"type": "tool-call-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ]


def test_q53_cohere_null_arguments_are_the_empty_object_judged_by_the_schema() -> None:
    m, errors = run(*cohere("get_time", "null"), provider="cohere")
    assert errors == [] and m.complete
    assert [c.input for c in m.tool_uses] == ["{}"] and kinds(m) == ["null-arguments-empty"]
    assert [v.arguments for v in m.validated(Toolset({"get_time": {"type": "object"}}))] == [{}]
    required = Toolset(
        {
            "get_time": {
                "type": "object",
                "properties": {"tz": {"type": "string"}},
                "required": ["tz"],
            }
        }
    )
    with pytest.raises(ToolstitchError):
        m.validated(required)


def test_q53_twin_null_stays_null_in_another_dialect() -> None:
    m, errors = run(call(0, "null", "call_a", "get_time"), END)
    assert errors == [] and [c.input for c in m.tool_uses] == ["null"] and m.notes == ()


def one_response(rid: str, call_id: str) -> list[dict[str, Any]]:
    events = [
        ev("response.created", response={"id": rid, "status": "in_progress"}),
        fc("response.output_item.added", 0, f"fc_{call_id}", call_id, "f", ""),
        fc("response.output_item.done", 0, f"fc_{call_id}", call_id, "f", "{}"),
        ev("response.completed", response={"id": rid, "status": "completed"}),
    ]
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def test_q54_a_second_response_in_one_capture_is_a_loud_problem() -> None:
    m, errors = run(
        *one_response("resp_1", "call_1"),
        *one_response("resp_2", "call_2"),
        provider="openai-responses",
    )
    assert any(isinstance(e, ProtocolError) and "resp_2" in str(e) for e in errors)
    assert not m.complete
    with pytest.raises(ToolstitchError):
        m.validated(Toolset({"f": {"type": "object"}}))


def test_q54_twin_the_same_response_resent_is_skipped_as_before() -> None:
    m, errors = run(
        *one_response("resp_1", "call_1"),
        *one_response("resp_1", "call_1"),
        provider="openai-responses",
    )
    assert errors == [] and m.complete and len(m.skipped) == 4


# ----------------------------------------------- errors in another dialect's shape


def test_an_openai_shaped_error_in_an_anthropic_stream_is_a_provider_error() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }
    data = (
        f"event: message_start\ndata: {json.dumps(start)}\n\n"
        'event: error\ndata: {"code":500,"message":"Failed to parse input","type":"server_error"}\n\n'
    ).encode()
    m, errors = run_bytes(data, "anthropic")
    assert len(errors) == 1 and isinstance(errors[0], ProviderError)
    assert "Failed to parse input" in str(errors[0])
    assert not m.complete and m.skipped == ()


def test_q5_an_empty_finish_reason_is_absent_and_a_real_one_ends() -> None:
    m, errors = run(
        chunk({"content": "hi"}, ""), chunk({"content": " there"}, ""), chunk({}, "stop")
    )
    assert errors == [] and m.complete and m.text == "hi there"
    m, errors = run(chunk({"content": "hi"}, "stop"), chunk({"content": " there"}))
    assert len(errors) == 1 and isinstance(errors[0], ProtocolError)


def test_q42_a_dict_event_with_an_int_past_64_bits_keeps_it_exact() -> None:
    """A Python int no 64-bit number holds (an Ollama call's object arguments, fed as a
    dict): read from the event's JSON text, so it comes out as sent, never as a float."""
    big = 123456789012345678901234567890
    line: dict[str, Any] = {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": {"n": big, "b": 1}}}],
        },
        "done": False,
    }
    end = {
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
    }
    asm = Assembler("ollama")
    asm.feed(line)
    asm.feed(end)
    asm.close()
    (call,) = asm.message().tool_uses
    assert call.input == '{"n":123456789012345678901234567890,"b":1}'
    assert asm.message().complete
    # Twin: a 64-bit int takes the usual path and is as exact.
    small = {
        **line,
        "message": {
            **line["message"],
            "tool_calls": [{"function": {"name": "f", "arguments": {"n": 2**63 - 1}}}],
        },
    }
    asm = Assembler("ollama")
    asm.feed(small)
    asm.feed(end)
    asm.close()
    assert asm.message().tool_uses[0].input == '{"n":9223372036854775807}'
