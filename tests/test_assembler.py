"""The Python Assembler: every docs/quirks.md row (test_qN_...), live events, partial calls,
input coercion, errors and limits."""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Callable
from typing import Any, get_args

import pytest
import toolstitch as ts
from hypothesis import given, settings
from hypothesis import strategies as st
from readers import eventstream_frame, eventstream_message, sse_events
from toolstitch import (
    AssembledMessage,
    Assembler,
    CrcError,
    FramingError,
    IncompleteMessageError,
    LimitError,
    Message,
    MessageDone,
    Provider,
    ProviderError,
    RefusalDelta,
    StreamClosedError,
    StreamDecodeError,
    TextBlock,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolInputDelta,
    ToolstitchError,
    ToolUseBlock,
    ToolValidationError,
    UnknownProviderError,
)

# ---------------------------------------------------------------- helpers


def chunk(delta: dict[str, Any], finish: str | None = None, choice: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def calls(*tool_calls: dict[str, Any]) -> dict[str, Any]:
    return chunk({"tool_calls": list(tool_calls)})


def tc(
    index: Any = None, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    if fn:
        call["function"] = fn
    return call


END = chunk({}, "tool_calls")


def run(events: list[Any], provider: Provider = "openai-chat") -> Assembler:
    asm = Assembler(provider)
    for e in events:
        asm.feed(e)
    asm.close()
    return asm


def chat(events: list[Any]) -> AssembledMessage:
    return run(events).message()


def triples(m: AssembledMessage) -> list[tuple[str, str, str]]:
    return [(b.id, b.name, b.input) for b in m.tool_uses]


def sse(events: list[dict[str, Any]], named: bool = False) -> bytes:
    return sse_events((e["type"] if named else None, e) for e in events)


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream frame with string headers."""
    return eventstream_message(headers, payload)


def bedrock_event(name: str, payload: dict[str, Any]) -> bytes:
    return eventstream_frame(name, payload)


ANTHROPIC_TOOL: list[dict[str, Any]] = [
    {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "t", "name": "now", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": ""},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]

# ---------------------------------------------------------------- docs/quirks.md


def test_q1_index_missing_matches_by_id_or_continues_latest() -> None:
    m = chat(
        [
            calls(tc(id="a", name="f", args='{"x":')),
            calls(tc(args="1}")),
            calls(tc(id="b", name="g", args='{"y":')),
            calls(tc(id="a", args="")),
            calls(tc(args="2}")),
            END,
        ]
    )
    assert triples(m) == [("a", "f", '{"x":1}'), ("b", "g", '{"y":2}')]


def test_q2_parallel_calls_at_index_zero_with_distinct_ids() -> None:
    m = chat(
        [
            calls(tc(0, "a", "f", '{"x":1}')),
            calls(tc(0, "b", "g", '{"y"')),
            calls(tc(0, args=":2}")),
            END,
        ]
    )
    assert triples(m) == [("a", "f", '{"x":1}'), ("b", "g", '{"y":2}')]


def test_q3_sparse_negative_and_huge_indexes_in_ascending_order() -> None:
    m = chat(
        [
            calls(tc(7, "c7", "f", "{}")),
            calls(tc(-3, "cm3", "g", "{}")),
            calls(tc(2**63 - 1, "cmax", "h", "{}")),
            END,
        ]
    )
    assert [b.id for b in m.tool_uses] == ["cm3", "c7", "cmax"]
    assert [b.id for b in m.blocks if isinstance(b, ToolUseBlock)] == ["c7", "cm3", "cmax"]


def test_q4_id_name_type_repeated_on_every_chunk_set_once() -> None:
    frag = [{"index": 0, "id": "c1", "type": "function", "function": {"name": "lookup"}}]
    events = [dict(frag[0], function={"name": "lookup", "arguments": a}) for a in ['{"q"', ':"x"}']]
    m = chat([calls(e) for e in events] + [END])
    assert triples(m) == [("c1", "lookup", '{"q":"x"}')]


def test_q5_empty_string_id_name_type_mean_absent() -> None:
    m = chat(
        [
            calls(tc(0, "c1", "lookup", "")),
            calls({"index": 0, "id": "", "type": "", "function": {"name": "", "arguments": "{}"}}),
            END,
        ]
    )
    assert triples(m) == [("c1", "lookup", "{}")]


def test_q6_type_missing_null_or_late_is_never_required() -> None:
    m = chat(
        [
            calls(tc(0, "c", "f", "{")),
            calls({"index": 0, "type": None, "function": {"arguments": "}"}}),
            calls({"index": 0, "type": "function"}),
            END,
        ]
    )
    assert triples(m) == [("c", "f", "{}")]


def test_q7_name_after_arguments_unnamed_at_close_is_a_problem() -> None:
    asm = Assembler("openai-chat")
    live = list(asm.feed(calls(tc(0, "c0", args='{"a":'))))
    live += asm.feed(calls(tc(0, name="late", args="1}")))
    live += asm.feed(calls(tc(1, "c1", args="{}")))
    live += asm.feed(END)
    live += asm.close()
    m = asm.message()
    assert triples(m) == [("c0", "late", '{"a":1}'), ("c1", "", "{}")]
    assert len(m.problems) == 1 and "c1" in m.problems[0]
    started = [e.name for e in live if isinstance(e, ToolCallStarted) and e.index == 0]
    assert started == ["", "late"]
    with pytest.raises(IncompleteMessageError, match="c1"):
        m.validated(ts.Toolset({"late": {"type": "object"}}))


def test_q8_no_id_mints_a_stable_flagged_id() -> None:
    asm = run([calls(tc(0, name="f", args="{}")), calls(tc(1, name="g", args="{}")), END])
    m = asm.message()
    assert [b.id for b in m.tool_uses] == ["call_0_0", "call_0_1"]
    assert m.minted_ids == frozenset({"call_0_0", "call_0_1"})
    assert asm.message() == m


def _readme_id_claims() -> dict[str, str]:
    """The ids column of the guide's provider table (docs/guide.md), by dialect."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text()
    head = "| dialect | calls keyed by | ids |"
    table = readme[readme.index(head) :].split("\n\n")[0].splitlines()[2:]
    return {row.split("|")[1].strip(): row.split("|")[3].strip() for row in table}


def _gemini_call(call_id: str | None) -> AssembledMessage:
    call: dict[str, Any] = {"name": "f", "args": {"a": 1}}
    if call_id is not None:
        call["id"] = call_id
    chunk = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": call}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ]
    }
    asm = Assembler("gemini")
    asm.feed_bytes(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
    asm.close()
    return asm.message()


def test_q8_the_readme_says_what_gemini_ids_are() -> None:
    """Gemini's ``functionCall.id`` is optional and sent by some models and endpoints:
    it is read as sent, and minted only when absent. The README's table once said
    "always minted (none sent)"; this fails if its ids column says so again, or stops
    saying either half."""
    sent = _gemini_call("fc_7x")
    assert [b.id for b in sent.tool_uses] == ["fc_7x"] and sent.minted_ids == frozenset()
    absent = _gemini_call(None)
    assert [b.id for b in absent.tool_uses] == ["call_0_0"]
    assert absent.minted_ids == frozenset({"call_0_0"})
    claim = _readme_id_claims()["gemini"]
    assert "always" not in claim and "none sent" not in claim, claim
    assert "as sent" in claim and "minted" in claim, claim
    # No dialect read here ignores a sent id: no row may say none is sent.
    for dialect, cell in _readme_id_claims().items():
        assert "none sent" not in cell, (dialect, cell)


def test_q9_whole_call_in_one_chunk_with_the_finish_reason() -> None:
    event = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "content": None,
                    "tool_calls": [{"id": "m1", "function": {"name": "w", "arguments": "{}"}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    asm = Assembler()
    live = asm.feed(event)
    assert triples(asm.message()) == [("m1", "w", "{}")]
    assert asm.message().complete
    assert [type(e) for e in live] == [
        ToolCallStarted,
        ToolInputDelta,
        ToolCallFinished,
        MessageDone,
    ]


def test_q10_cumulative_resend_only_once_input_is_complete_json() -> None:
    m = chat(
        [
            calls(tc(0, "c", "f", '{"a":')),
            calls(tc(0, args="1}")),
            calls(tc(0, args='{"a":1}')),
            END,
        ]
    )
    assert triples(m) == [("c", "f", '{"a":1}')]
    m = chat([calls(tc(0, "c", "f", '{"a":')), calls(tc(0, args='{"a":1}}')), END])
    assert triples(m) == [("c", "f", '{"a":{"a":1}}')]


def test_q11_server_side_json_corruption_is_reported_not_repaired() -> None:
    bad = '{"a": 1,, "b": }'
    m = chat([calls(tc(0, "c", "f", bad)), END])
    assert m.tool_uses[0].input == bad
    with pytest.raises(ToolValidationError) as info:
        m.validated(ts.Toolset({"f": {"type": "object"}}))
    assert isinstance(info.value.errors[0], ts.ToolInputError)


def test_q12_utf8_and_escapes_split_across_reads_and_fragments() -> None:
    events = [
        calls(tc(0, "c", "f", '{"s":"\\u00')),
        calls(tc(0, args="e9 \\ud83d")),
        calls(tc(0, args='\\ude00 ü日本"}')),
        END,
    ]
    data = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events).encode()
    asm = Assembler()
    partials: list[Any] = []
    for i in range(len(data)):  # one byte at a time: every UTF-8 sequence is split
        asm.feed_bytes(data[i : i + 1])
        partials.extend(asm.partial_calls().values())
    asm.close()
    m = asm.message()
    assert json.loads(m.tool_uses[0].input) == {"s": "é 😀 ü日本"}
    shown = [p["s"] for p in partials if isinstance(p, dict) and "s" in p]
    assert "é " in shown and "é 😀 ü日本" not in shown[:1]
    assert all("\\" not in s and "\ufffd" not in s for s in shown)


def test_q13_no_argument_tool_empty_raw_input_validates_as_empty_object() -> None:
    m = run(ANTHROPIC_TOOL, "anthropic").message()
    assert triples(m) == [("t", "now", "")]
    (call,) = m.validated(ts.Toolset({"now": {"type": "object"}}))
    assert call.arguments == {}


def test_q14_tool_calls_ending_with_finish_reason_stop_are_emitted() -> None:
    m = chat([calls(tc(0, "c", "f", "{}")), chunk({}, "stop")])
    assert len(m.tool_uses) == 1 and m.finish_reason == "stop" and m.complete


@pytest.mark.parametrize(
    ("reason", "complete"),
    [(None, False), ("length", False), ("content_filter", False), ("tool_calls", True)],
)
def test_q15_complete_only_on_an_explicit_normal_end(reason: str | None, complete: bool) -> None:
    events = [calls(tc(0, "c", "f", '{"a":1}'))]
    if reason:
        events.append(chunk({}, reason))
    m = chat(events)
    assert m.complete is complete
    if not complete:
        with pytest.raises(IncompleteMessageError):
            m.validated(ts.Toolset({"f": {"type": "object"}}))


def test_q16_empty_choices_usage_only_and_filter_chunks_are_skipped() -> None:
    m = chat(
        [
            {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]},
            {"choices": [{"index": 0}]},
            chunk({"content": "ok"}, "stop"),
            {"choices": [], "usage": {"prompt_tokens": 5}},
        ]
    )
    assert m.blocks == (TextBlock("ok"),)
    assert m.usage == {"prompt_tokens": 5}


def test_q17_n_choices_are_kept_apart() -> None:
    asm = run(
        [
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [tc(0, "a0", "f", "{}")]}},
                    {"index": 1, "delta": {"content": "hello"}},
                ]
            },
            chunk({}, "tool_calls", 0),
            chunk({}, "stop", 1),
        ]
    )
    first, second = asm.messages()
    assert triples(first) == [("a0", "f", "{}")] and second.text == "hello"
    assert asm.message(1) == second
    with pytest.raises(KeyError):
        asm.message(5)


def test_q18_several_fragments_of_one_index_in_one_delta_fold_in_order() -> None:
    m = chat(
        [
            calls(
                tc(0, "c", "f", "{"), tc(0, args='"a":1'), tc(1, "d", "g", "{}"), tc(0, args="}")
            ),
            END,
        ]
    )
    assert triples(m) == [("c", "f", '{"a":1}'), ("d", "g", "{}")]


def test_q19_index_sent_as_a_string_is_normalised() -> None:
    m = chat([calls(tc("0", "c", "f", "{")), calls(tc(0, args="}")), END])
    assert triples(m) == [("c", "f", "{}")]


def test_q20_two_identical_calls_are_never_deduplicated() -> None:
    whole = calls(tc(name="ping", args='{"h":1}'))
    m = chat([whole, whole, END])
    assert triples(m) == [("call_0_0", "ping", '{"h":1}'), ("call_0_1", "ping", '{"h":1}')]


def test_q21_gemini_partial_args_rebuilt_and_open_call_closed_at_end() -> None:
    def part(p: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [p]}}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand]}

    def arg(path: str, value: str, more: bool) -> dict[str, Any]:
        pa = {"jsonPath": path, "stringValue": value, "willContinue": more}
        return part({"functionCall": {"partialArgs": [pa], "willContinue": True}})

    asm = Assembler("gemini")
    asm.feed(part({"functionCall": {"name": "plan", "willContinue": True}}))
    asm.feed(arg("$.title", "Hel", True))
    assert asm.partial_calls() == {(0, 0): {"title": "Hel"}}
    asm.feed(arg("$.title", "lo", False))
    asm.feed(part({"text": ""}, "STOP"))  # no closing functionCall:{}
    asm.close()
    m = asm.message()
    assert json.loads(m.tool_uses[0].input) == {"title": "Hello"}
    assert m.complete and asm.partial_calls() == {}


def test_q22_bedrock_padding_ignored_and_usage_after_stop_recorded() -> None:
    data = b"".join(
        [
            bedrock_event("messageStart", {"role": "assistant", "p": "abc"}),
            bedrock_event(
                "contentBlockStart",
                {
                    "contentBlockIndex": 1,
                    "start": {"toolUse": {"toolUseId": "tu", "name": "f"}},
                    "p": "abcdef",
                },
            ),
            bedrock_event(
                "contentBlockDelta",
                {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"x":1}'}}, "p": "a"},
            ),
            bedrock_event("contentBlockStop", {"contentBlockIndex": 1, "p": "ab"}),
            bedrock_event("messageStop", {"stopReason": "tool_use", "p": "abcdefgh"}),
            bedrock_event("metadata", {"usage": {"totalTokens": 15}, "p": "abcd"}),
        ]
    )
    asm = Assembler("bedrock")
    asm.feed_bytes(data)
    asm.close()
    m = asm.message()
    assert triples(m) == [("tu", "f", '{"x":1}')]
    assert m.complete and m.usage == {"totalTokens": 15}


def test_q23_responses_call_id_is_the_id_and_item_id_is_provider_state() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 3,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_A",
                "name": "f",
                "arguments": "",
            },
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"a"'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": ":1}"},
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_1",
            "arguments": '{"a":1}',
        },
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    asm = Assembler()
    for e in events:
        asm.feed(json.dumps(e), event_type=e["type"])
    asm.close()
    (call,) = asm.message().tool_uses
    assert (call.id, call.name, call.input) == ("call_A", "f", '{"a":1}')
    assert call.provider_state == '"fc_1"' and call.provider_state_format == "openai-responses"
    assert asm.dialect == "openai-responses" and asm.message().complete


# ---------------------------------------------------------------- the API


def test_unknown_provider_names_the_valid_ones() -> None:
    with pytest.raises(UnknownProviderError, match="openai-responses") as info:
        Assembler("openai")  # type: ignore[arg-type]
    assert isinstance(info.value, ToolstitchError)
    # The names it lists are exactly the ones the Provider type allows.
    listed = set(
        json.loads("[" + str(info.value).split(": expected one of ")[1].replace(" or ", ", ") + "]")
    )
    assert listed == set(get_args(Provider))


@pytest.mark.parametrize(
    "provider", ["openai-chat", "openai-responses", "anthropic", "bedrock", "gemini", "cohere"]
)
def test_every_dialect_name_is_accepted(provider: Provider) -> None:
    assert Assembler(provider).dialect == provider
    assert provider in get_args(Provider)


def test_auto_decides_from_the_first_event() -> None:
    asm = Assembler()
    assert asm.dialect is None
    asm.feed(chunk({"content": "hi"}))
    assert asm.dialect == "openai-chat"


def test_feed_accepts_dict_str_bytes_bytearray_memoryview_alike() -> None:
    events = [calls(tc(0, "c", "f", '{"é":')), calls(tc(0, args="1}")), END]
    forms: list[Callable[[Any], Any]] = [
        lambda e: e,
        json.dumps,
        lambda e: json.dumps(e).encode(),
        lambda e: bytearray(json.dumps(e, ensure_ascii=False).encode()),
        lambda e: memoryview(json.dumps(e).encode()),
    ]
    results = {triples(chat([form(e) for e in events]))[0] for form in forms}
    assert results == {("c", "f", '{"é":1}')}


def test_feed_rejects_other_types_with_type_error() -> None:
    asm = Assembler()
    for bad in (None, 5, {"x"}, object()):
        with pytest.raises(TypeError, match="feed"):
            asm.feed(bad)
    # A list is a JSON array of events (Q31): each element must be an event.
    with pytest.raises(StreamDecodeError, match="element 0"):
        asm.feed(["x"])
    with pytest.raises(TypeError, match="feed_bytes"):
        asm.feed_bytes("data: {}\n\n")  # type: ignore[arg-type]


def test_sdk_like_objects_use_to_dict_then_model_dump_then_to_json_dict() -> None:
    event = chunk({"content": "hi"}, "stop")

    class ToDict:
        def to_dict(self, mode: str = "python") -> dict[str, Any]:
            return event

    class Dump:
        def model_dump(self, **kwargs: Any) -> dict[str, Any]:
            assert kwargs == {"mode": "json", "by_alias": True, "exclude_unset": True}
            return event

    class JsonDict:
        def to_json_dict(self) -> dict[str, Any]:
            return event

    for obj in (ToDict(), Dump(), JsonDict()):
        assert chat([obj]).text == "hi"


def test_gemini_args_keep_key_order_through_dicts() -> None:
    args = {"z": 1, "a": {"y": 2, "b": 3}}
    event = {
        "candidates": [
            {
                "content": {"parts": [{"functionCall": {"name": "f", "args": args}}]},
                "finishReason": "STOP",
            }
        ]
    }
    m = run([event], "gemini").message()
    assert m.tool_uses[0].input == '{"z":1,"a":{"y":2,"b":3}}'


def test_live_events_of_every_kind() -> None:
    asm = Assembler("openai-chat")
    live = asm.feed(chunk({"content": "a", "reasoning_content": "t", "refusal": "no"}))
    kinds = {type(e) for e in live}
    assert {TextDelta, ThinkingDelta, RefusalDelta} <= kinds
    assert TextDelta(0, "a") in live


def test_feed_returns_empty_tuple_when_nothing_changed() -> None:
    asm = Assembler()
    assert asm.feed({"choices": []}) == ()
    assert asm.feed("[DONE]") == ()


def test_live_false_collects_nothing_and_assembles_the_same() -> None:
    events = [calls(tc(0, "c", "f", "{}")), END]
    quiet = Assembler(live=False)
    assert all(quiet.feed(e) == () for e in events)
    assert quiet.close() == ()
    assert quiet.message() == chat(events)
    assert quiet.live is False


def test_close_reports_message_done_and_finishes_open_calls() -> None:
    asm = Assembler()
    asm.feed(calls(tc(0, "c", "f", "{")))
    live = asm.close()
    assert ToolCallFinished(0, 0) in live
    assert MessageDone(0, None, False) in live
    assert asm.close() == ()  # twice does nothing
    assert asm.closed


def test_partial_calls_are_incremental_values_of_open_calls() -> None:
    asm = Assembler()
    asm.feed(calls(tc(0, "c", "f", '{"city": "Par')))
    assert asm.partial_calls() == {(0, 0): {"city": "Par"}}
    asm.feed(calls(tc(0, args='is", "n": [1, 2')))
    assert asm.partial_calls() == {(0, 0): {"city": "Paris", "n": [1, 2]}}
    asm.feed(calls(tc(1, "d", "g", "")))
    assert asm.partial_calls()[(0, 1)] is None
    asm.feed(END)
    assert asm.partial_calls() == {}


def test_partial_calls_follow_a_replaced_input() -> None:
    asm = Assembler("openai-responses")
    asm.feed(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "function_call", "id": "fc", "call_id": "c", "name": "f"},
        }
    )
    asm.feed({"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": '{"a'})
    assert asm.partial_calls() == {(0, 0): {}}
    asm.feed(
        {"type": "response.function_call_arguments.done", "item_id": "fc", "arguments": '{"b":2}'}
    )
    assert asm.message().tool_uses[0].input == '{"b":2}'


def test_to_message_and_validated() -> None:
    m = chat([chunk({"content": "x"}), calls(tc(0, "c", "f", '{"n":1}')), END])
    assert m.to_message() == Message("assistant", m.blocks)
    toolset = ts.Toolset({"f": {"type": "object", "properties": {"n": {"type": "integer"}}}})
    (call,) = m.validated(toolset)
    assert (call.id, call.name, call.arguments) == ("c", "f", {"n": 1})


def test_server_side_calls_are_flagged_and_not_validated() -> None:
    events = [
        {"type": "message_start", "message": {"usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ]
    m = run(events, "anthropic").message()
    assert m.server_side_ids == frozenset({"srv"})
    assert m.validated(ts.Toolset({"f": {"type": "object"}})) == []


def test_assembler_is_safe_to_share_between_threads() -> None:
    # Each thread feeds whole events, so the total text is exact whatever the order.
    events = [json.dumps(chunk({"content": "x"})) for _ in range(200)]
    asm = Assembler()
    threads = [threading.Thread(target=lambda: [asm.feed(e) for e in events]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert asm.message().text == "x" * 800


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=20), st.booleans())
def test_any_fragmentation_gives_the_same_result(sizes: list[int], named: bool) -> None:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hé"}},
        {"type": "content_block_stop", "index": 0},
        *ANTHROPIC_TOOL[1:],
    ]
    events[4] = dict(events[4], index=1)
    events[5] = {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"ü": "日本"}'},
    }
    events[6] = dict(events[6], index=1)
    data = sse(events, named)
    whole = Assembler()
    whole.feed_bytes(data)
    whole.close()
    cut = Assembler()
    at, i = 0, 0
    while at < len(data):
        cut.feed_bytes(data[at : at + sizes[i % len(sizes)]])
        at += sizes[i % len(sizes)]
        i += 1
    cut.close()
    assert cut.messages() == whole.messages()
    assert whole.message().tool_uses[0].input == '{"ü": "日本"}'


# ---------------------------------------------------------------- errors


def assert_kept(asm: Assembler) -> None:
    assert asm.message().text == "kept"


def started() -> Assembler:
    asm = Assembler()
    asm.feed(chunk({"content": "kept"}))
    return asm


def test_malformed_json_is_a_stream_decode_error_naming_the_event() -> None:
    asm = started()
    with pytest.raises(StreamDecodeError, match="event #2") as info:
        asm.feed('{"choices": [')
    assert info.value.event_index == 2
    assert_kept(asm)


def test_wrong_field_type_names_the_field() -> None:
    asm = started()
    with pytest.raises(StreamDecodeError, match="arguments"):
        asm.feed(calls({"index": 0, "id": "c", "function": {"name": "f", "arguments": 5}}))
    assert_kept(asm)


def test_not_an_object_and_unknown_shape_are_decode_errors() -> None:
    asm = started()
    with pytest.raises(StreamDecodeError, match="not a JSON object"):
        asm.feed("[1, 2]")
    with pytest.raises(StreamDecodeError, match="cannot tell the provider"):
        Assembler().feed({"hello": "world"})
    assert_kept(asm)


def test_unserialisable_dict_is_a_decode_error() -> None:
    asm = started()
    with pytest.raises(StreamDecodeError, match="event #2"):
        asm.feed({"choices": [{"delta": {"content": {1, 2}}}]})
    with pytest.raises(StreamDecodeError):
        asm.feed({"x": float("nan")})
    assert_kept(asm)


def test_provider_error_event_fails_the_message() -> None:
    asm = Assembler("anthropic")
    asm.feed(ANTHROPIC_TOOL[0])
    with pytest.raises(ProviderError, match="overloaded") as info:
        asm.feed({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert info.value.error_type == "overloaded_error"
    asm.close()
    assert not asm.message().complete


def test_garbage_bytes_are_a_framing_error_with_offset() -> None:
    with pytest.raises(FramingError, match="transport") as info:
        Assembler().feed_bytes(b"<html>oops</html>")
    assert info.value.offset == 0


def test_invalid_utf8_in_sse_is_a_framing_error_and_earlier_events_stay() -> None:
    asm = Assembler()
    good = sse([chunk({"content": "kept"})])
    with pytest.raises(FramingError, match="UTF-8") as info:
        asm.feed_bytes(good + b"data: {\xff}\n\n")
    assert info.value.offset == len(good) + 7
    assert_kept(asm)
    with pytest.raises(FramingError):  # poisoned: the same error again
        asm.feed_bytes(b"data: {}\n\n")


def test_truncated_event_stream_is_reported_at_close() -> None:
    asm = Assembler("bedrock")
    data = bedrock_event("messageStart", {"role": "assistant"})
    asm.feed_bytes(data[:-5])
    with pytest.raises(FramingError, match="cut short"):
        asm.close()
    assert asm.closed and not asm.message().complete


def test_bad_crc_is_a_crc_error() -> None:
    data = bytearray(bedrock_event("messageStart", {"role": "assistant"}))
    data[-1] ^= 0xFF
    with pytest.raises(CrcError, match="CRC32") as info:
        Assembler().feed_bytes(bytes(data))
    assert isinstance(info.value, FramingError) and info.value.offset == 0


def test_event_stream_exception_frame_is_a_provider_error() -> None:
    asm = Assembler()
    asm.feed_bytes(bedrock_event("messageStart", {"role": "assistant"}))
    exc = frame(
        {
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        b'{"message":"Too many requests"}',
    )
    with pytest.raises(ProviderError, match="Too many requests") as info:
        asm.feed_bytes(exc)
    assert info.value.error_type == "throttlingException"
    asm.close()
    assert not asm.message().complete


def test_event_stream_error_frame_is_a_provider_error() -> None:
    err = frame(
        {":error-code": "InternalFailure", ":error-message": "boom", ":message-type": "error"},
        b"",
    )
    with pytest.raises(ProviderError, match="boom") as info:
        Assembler("bedrock").feed_bytes(err)
    assert info.value.error_type == "InternalFailure"


def test_feed_after_close_is_stream_closed_error() -> None:
    asm = started()
    asm.close()
    feeds: list[Callable[[], Any]] = [lambda: asm.feed(chunk({})), lambda: asm.feed("[DONE]")]
    for feed in feeds:
        with pytest.raises(StreamClosedError):
            feed()
    with pytest.raises(StreamClosedError):
        asm.feed_bytes(b"data: {}\n\n")
    assert_kept(asm)


def test_done_marker_is_accepted_but_ends_nothing() -> None:
    asm = Assembler()
    asm.feed_bytes(sse([calls(tc(0, "c", "f", "{}"))]) + b"data: [DONE]\n\n")
    asm.close()
    assert not asm.message().complete


@pytest.mark.parametrize(
    ("kwargs", "events", "limit"),
    [
        (
            {"max_calls": 1},
            [calls(tc(0, "a", "f", "{}")), calls(tc(1, "b", "g", "{}"))],
            "max_calls",
        ),
        ({"max_input_bytes": 4}, [calls(tc(0, "a", "f", '{"long": 1}'))], "max_input_bytes"),
        ({"max_total_bytes": 8}, [chunk({"content": "x" * 9})], "max_total_bytes"),
        ({"max_event_bytes": 10}, [json.dumps(chunk({"content": "x"}))], "max_event_bytes"),
        (
            {"max_choices": 1},
            [chunk({"content": "x"}, choice=0), chunk({"content": "y"}, choice=1)],
            "max_choices",
        ),
    ],
)
def test_limits_raise_limit_error_and_keep_the_rest(
    kwargs: dict[str, Any], events: list[Any], limit: str
) -> None:
    asm = Assembler("openai-chat", **kwargs)
    with pytest.raises(LimitError, match=limit):
        for e in events:
            asm.feed(e)
    asm.messages()  # still readable


def test_line_limit_is_a_limit_error() -> None:
    asm = Assembler(max_line_bytes=16)
    with pytest.raises(LimitError, match="max_line_bytes"):
        asm.feed_bytes(b"data: " + b"x" * 64)


def test_event_stream_frame_helper_matches_the_format() -> None:
    data = bedrock_event("messageStart", {"role": "assistant"})
    assert struct.unpack(">I", data[:4])[0] == len(data)


def test_live_events_are_a_lazy_sequence_equal_to_their_tuple() -> None:
    from toolstitch import LiveEvents, ToolCallStarted, ToolInputDelta

    asm = Assembler("openai-chat")
    events = asm.feed(calls(tc(0, "c0", "f", '{"a":1}')))
    assert isinstance(events, LiveEvents)
    assert len(events) == 2 and events
    as_tuple = tuple(events)
    assert events == as_tuple  # type: ignore[comparison-overlap]
    assert events[0] == ToolCallStarted(0, 0, "c0", "f")
    assert events[-1] == ToolInputDelta(0, 0, '{"a":1}')
    assert events[:1] == as_tuple[:1]
    assert () + events == as_tuple  # noqa: RUF005
    assert events + [] == as_tuple  # noqa: RUF005
    assert list(events) == list(as_tuple)
    assert "ToolCallStarted" in repr(events)
    with pytest.raises(IndexError):
        events[2]
    assert asm.feed({"choices": []}) == ()


def test_a_call_is_one_object_in_blocks_and_tool_uses() -> None:
    """A large input is built once, not once per list that holds the call."""
    asm = run([calls(tc(0, "c0", "f", '{"a":"' + "x" * 1000 + '"}')), END])
    m = asm.message()
    (in_blocks,) = [b for b in m.blocks if isinstance(b, ToolUseBlock)]
    assert in_blocks is m.tool_uses[0]
