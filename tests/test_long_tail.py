"""The long tail (quirks Q36 onward): OpenAI-compatible servers' shapes that a narrow
rule accepts, each leaving a ``Note`` on the message, and beside each the neighbouring
attack shape, still refused. The Rust side is tests/rust_long_tail.rs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml
from http_server import Recording, RecordingServer
from toolstitch import (
    AssembledMessage,
    Assembler,
    Note,
    Provider,
    TextBlock,
    ToolResultBlock,
    Toolset,
    ToolstitchError,
)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def call(index: int, args: Any, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    c: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        c["id"] = id
    return chunk({"tool_calls": [c]})


END = chunk({}, "tool_calls")
TOOLS = Toolset(
    {
        "f": {"type": "object"},
        "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
)


def run(
    *events: Any, as_text: bool = False, provider: Provider = "openai-chat"
) -> tuple[AssembledMessage, list[Exception]]:
    """Feeds each event (as a dict, or as SSE bytes named by its ``type`` when it has
    one), closes, returns choice 0 and the errors."""
    asm = Assembler(provider)
    errors: list[Exception] = []
    for e in events:
        try:
            if as_text:
                name = f"event: {e['type']}\n" if "type" in e else ""
                asm.feed_bytes(f"{name}data: {json.dumps(e)}\n\n".encode())
            else:
                asm.feed(e)
        except ToolstitchError as err:
            errors.append(err)
    asm.close()
    return asm.message(), errors


def kinds(m: AssembledMessage) -> list[str]:
    return [n.kind for n in m.notes]


@pytest.mark.parametrize("as_text", [False, True])
@pytest.mark.parametrize(
    ("held", "whole"),
    [
        (
            '{"date": "2025-03-26", "income_type": "支出"',
            '{"date": "2025-03-26", "income_type": "支出"}',
        ),
        ("{", '{"city": "Paris"}'),
    ],
)
def test_q36_whole_arguments_after_incomplete_deltas_give_the_object_once(
    held: str, whole: str, as_text: bool
) -> None:
    m, errors = run(call(0, held, "call_a", "get_weather"), call(0, whole), END, as_text=as_text)
    assert errors == []
    assert [t.input for t in m.tool_uses] == [whole]
    (note,) = m.notes
    assert note == Note("arguments-restated", 0, "call_a", 2, note.message)
    assert m.complete and m.problems == ()
    assert [c.arguments for c in m.validated(TOOLS)] == [json.loads(whole)]


def test_q36_twin_a_continuation_stays_an_append() -> None:
    m, _ = run(call(0, '{"a":', "call_a", "f"), call(0, "1}"), END)
    assert [t.input for t in m.tool_uses] == ['{"a":1}']
    assert m.notes == ()


def test_q41_empty_object_then_the_real_arguments_replace_it() -> None:
    m, errors = run(call(0, "{}", "call_a", "f"), call(0, '{"q": "x"}'), END)
    assert errors == []
    assert [t.input for t in m.tool_uses] == ['{"q": "x"}']
    assert kinds(m) == ["empty-arguments-replaced"]
    assert m.complete


def test_q41_twin_a_real_object_then_another_is_appended_and_never_valid() -> None:
    m, _ = run(call(0, '{"q": "a"}', "call_a", "f"), call(0, '{"q": "b"}'), END)
    assert [t.input for t in m.tool_uses] == ['{"q": "a"}{"q": "b"}']
    assert m.notes == ()
    with pytest.raises(ToolstitchError):
        m.validated(TOOLS)


@pytest.mark.parametrize("as_text", [False, True])
def test_q42_arguments_as_an_object_become_its_compact_text(as_text: bool) -> None:
    m, errors = run(call(0, {"z": 1, "a": [True, None]}, "call_a", "f"), END, as_text=as_text)
    assert errors == []
    assert [t.input for t in m.tool_uses] == ['{"z":1,"a":[true,null]}']
    assert kinds(m) == ["arguments-object"]
    assert m.validated(TOOLS)[0].arguments == {"z": 1, "a": [True, None]}


def test_q42_twin_a_second_object_for_one_call_is_refused() -> None:
    m, errors = run(call(0, {"a": 1}, "call_a", "f"), call(0, {"b": 2}), END)
    assert len(errors) == 1 and "already has arguments" in str(errors[0])
    assert not m.complete
    with pytest.raises(ToolstitchError):
        m.validated(TOOLS)


def test_q38_two_parallel_calls_with_one_id_are_both_kept() -> None:
    m, errors = run(
        call(0, '{"city": "Paris"}', "call_x", "get_weather"),
        call(1, '{"city": "Rome"}', "call_x", "get_weather"),
        END,
    )
    assert errors == []
    assert [t.id for t in m.tool_uses] == ["call_x", "call_x_2"]
    assert m.minted_ids == frozenset({"call_x_2"})
    assert kinds(m) == ["duplicate-id-renamed"]
    assert [c.arguments["city"] for c in m.validated(TOOLS)] == ["Paris", "Rome"]


def test_q38_twin_two_identical_calls_with_one_id_stay_a_problem() -> None:
    # Whole at once: refused at the feed as one id on two calls (Q25).
    m, errors = run(call(0, '{"a": 1}', "call_x", "f"), call(1, '{"a": 1}', "call_x", "f"), END)
    assert [getattr(e, "rule", None) for e in errors] == ["duplicate-id"]
    assert not m.complete
    # In pieces: the same call again is a problem of the message.
    m, errors = run(
        call(0, '{"a": 1}', "call_x", "f"),
        call(1, '{"a"', "call_x", "f"),
        call(1, ": 1}", "call_x"),
        END,
    )
    assert errors == []
    assert not m.complete
    assert any("the same call" in p for p in m.problems)
    with pytest.raises(ToolstitchError):
        m.validated(TOOLS)


def test_q39_a_later_different_finish_reason_alone_is_ignored() -> None:
    m, errors = run(call(0, "{}", "call_a", "f"), END, chunk({}, "stop"))
    assert errors == []
    assert m.finish_reason == "tool_calls" and m.finish == "tool-calls"
    assert kinds(m) == ["later-finish-reason-ignored"]
    assert m.complete


def test_q39_twin_content_after_the_end_is_still_refused() -> None:
    m, errors = run(call(0, "{}", "call_a", "f"), END, chunk({"content": "more"}, "stop"))
    assert len(errors) == 1
    assert not m.complete


def test_q43_arguments_at_another_index_go_to_the_one_open_call() -> None:
    m, errors = run(call(0, "", "call_a", "f"), call(1, '{"k": '), call(1, "2}"), END)
    assert errors == []
    assert [t.input for t in m.tool_uses] == ['{"k": 2}']
    assert kinds(m) == ["fragment-rerouted"]
    assert m.complete


def test_q43_twin_with_two_open_calls_nothing_is_rerouted() -> None:
    m, _ = run(call(0, "", "call_a", "f"), call(1, "", "call_b", "f"), call(2, '{"k": 2}'), END)
    assert len(m.tool_uses) == 3 and m.notes == ()
    assert not m.complete


def test_q45_two_entries_of_one_choice_in_one_chunk_apply_in_order() -> None:
    two = {
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": '{"a"'}}
                    ]
                },
            },
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
            },
        ],
    }
    m, errors = run(two, END)
    assert errors == []
    assert [t.input for t in m.tool_uses] == ['{"a": 1}']
    assert m.complete


@pytest.mark.parametrize("as_text", [False, True])
def test_q49_typed_content_parts_give_reasoning_and_text(as_text: bool) -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}]},
        {"type": "text", "text": "Hello"},
    ]
    m, errors = run(
        chunk({"content": parts}), chunk({"content": " world"}, "stop"), as_text=as_text
    )
    assert errors == []
    assert m.text == "Hello world"
    assert [type(b).__name__ for b in m.blocks] == ["ThinkingBlock", "TextBlock"]
    assert kinds(m) == ["content-parts"]
    assert m.complete


def test_q49_twin_content_of_another_type_is_still_refused() -> None:
    m, errors = run(chunk({"content": 5}), chunk({}, "stop"))
    assert len(errors) == 1
    assert not m.complete


def test_q51_a_legacy_completions_stream_is_read_not_dropped() -> None:
    asm = Assembler()
    for text, finish in [("Hello", None), (", world", "stop")]:
        asm.feed_bytes(
            b"data: "
            + json.dumps(
                {
                    "object": "text_completion",
                    "choices": [{"index": 0, "text": text, "finish_reason": finish}],
                }
            ).encode()
            + b"\n\n"
        )
    asm.close()
    m = asm.message()
    assert m.text == "Hello, world"
    assert m.complete and m.notes == ()


def test_q48_gemini_function_call_id_is_kept() -> None:
    asm = Assembler("gemini")
    asm.feed(
        {
            "candidates": [
                {
                    "index": 0,
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"id": "fc_7x", "name": "f", "args": {"a": 1}}},
                            {"functionCall": {"name": "g", "args": {}}},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    asm.close()
    m = asm.message()
    assert m.tool_uses[0].id == "fc_7x" and "fc_7x" not in m.minted_ids
    assert m.tool_uses[1].id in m.minted_ids
    assert m.complete


def test_notes_reach_the_replay_records() -> None:
    from toolstitch import replay_bytes

    sse = b"".join(
        b"data: " + json.dumps(e).encode() + b"\n\n"
        for e in (call(0, {"q": "x"}, "call_a", "f"), call(1, '{"k": 1}', "call_b", "f"), END)
    )
    first, second = replay_bytes(sse + b"data: [DONE]\n\n")
    assert first["notes"] is not None and first["notes"].startswith("arguments-object: ")
    assert second["notes"] is None
    assert first["complete"] and second["complete"]


def test_q40_several_json_values_in_one_input_are_named_and_never_executed() -> None:
    from toolstitch import ToolValidationError

    m, errors = run(
        call(0, '{"city": "Paris"}{"city": "Rome"}', "call_a", "get_weather"),
        call(1, '{"city": "Oslo"}', "call_b", "get_weather"),
        END,
    )
    assert errors == [] and m.complete
    with pytest.raises(ToolValidationError) as refused:
        m.validated(TOOLS)
    (failure,) = refused.value.errors
    assert "2 JSON values in one input" in str(failure)
    assert [c.id for c in refused.value.calls] == ["call_b"]


def test_q40_twin_one_value_with_trailing_text_is_an_ordinary_input_error() -> None:
    m, _ = run(call(0, '{"city": "Paris"} x', "call_a", "get_weather"), END)
    with pytest.raises(ToolstitchError) as refused:
        m.validated(TOOLS)
    assert "JSON values in one input" not in str(refused.value)


@pytest.mark.parametrize(("limit", "complete"), [(256, False), (257, True), (None, True)])
def test_q46_a_cut_at_the_output_limit_reported_as_a_normal_end(
    limit: int | None, complete: bool
) -> None:
    asm = Assembler("openai-chat", max_output_tokens=limit)
    for e in (
        call(0, '{"a": "abc"}', "call_a", "f"),
        END,
        {"object": "chat.completion.chunk", "choices": [], "usage": {"completion_tokens": 256}},
    ):
        asm.feed(e)
    asm.close()
    m = asm.message()
    assert m.complete is complete
    if not complete:
        (problem,) = m.problems
        assert problem.kind == "cut" and "max_output_tokens" in problem
        with pytest.raises(ToolstitchError):
            m.validated(TOOLS)


def test_q37_a_thought_signature_in_extra_content_is_kept_and_rendered_back() -> None:
    from toolstitch import render_turn

    signature = {"google": {"thought_signature": "c2lnbmF0dXJl"}}
    opener = call(0, "", "call_a", "get_weather")
    opener["choices"][0]["delta"]["tool_calls"][0]["extra_content"] = signature
    args = call(0, '{"city": "Paris"}')
    # Sometimes in a delta that carries nothing else.
    alone = chunk({"tool_calls": [{"index": 0, "extra_content": signature}]})
    for events in ([opener, args, END], [call(0, "", "call_a", "get_weather"), alone, args, END]):
        for as_text in (False, True):
            m, errors = run(*events, as_text=as_text)
            assert errors == [] and m.complete
            (block,) = m.tool_uses
            assert block.provider_state_format == "openai-chat"
            assert json.loads(block.provider_state or "") == signature
            rendered = render_turn("openai-chat", m, [ToolResultBlock.text("call_a", "22 C")])
            (assistant,) = [r for r in rendered if r.get("role") == "assistant"]
            assert assistant["tool_calls"][0]["extra_content"] == signature


def test_q37_twin_a_call_without_extra_content_renders_without_it() -> None:
    from toolstitch import render_turn

    m, _ = run(call(0, '{"city": "Paris"}', "call_a", "get_weather"), END)
    assert m.tool_uses[0].provider_state is None
    result = ToolResultBlock.text("call_a", "22 C")
    rendered = render_turn("openai-chat", m, [result])
    (assistant,) = [r for r in rendered if r.get("role") == "assistant"]
    assert "extra_content" not in assistant["tool_calls"][0]


LONG_TAIL = Path(__file__).resolve().parent / "fixtures" / "long_tail"
"""Recordings for these rows (provenance and licences in its README.md)."""


def groq_compound_stream() -> bytes:
    """The SSE body of pydantic-ai's Groq compound web-search cassette."""
    cassette = yaml.safe_load((LONG_TAIL / "groq_compound-web-search-stream.vcr.yaml").read_text())
    body: str = cassette["interactions"][0]["response"]["body"]["string"]
    return body.encode()


def check_groq_search(m: AssembledMessage) -> None:
    assert m.complete and m.problems == () and m.finish == "stop"
    (search,) = m.tool_uses
    assert search.server_side and search.kind == "executed_tool" and search.name == "search"
    assert search.id in m.minted_ids and search.id in m.server_side_ids
    assert json.loads(search.input) == {"query": "What is the weather in San Francisco today?"}
    (result,) = [b for b in m.blocks if isinstance(b, ToolResultBlock)]
    assert result.tool_use_id == search.id and result.kind == "executed_tool"
    (output,) = result.content
    assert isinstance(output, TextBlock) and "Weather in San Francisco" in output.text
    assert "search_results" in json.loads(result.provider_state or "{}")
    assert m.validated(TOOLS) == []  # nothing for the client to run


def test_q50_groq_executed_tools_are_server_side_calls_with_results() -> None:
    asm = Assembler("openai-chat")
    asm.feed_bytes(groq_compound_stream())
    asm.close()
    check_groq_search(asm.message())


def test_q50_groq_executed_tools_through_the_openai_client() -> None:
    routes = {"/v1/chat/completions": Recording(groq_compound_stream())}
    with RecordingServer(routes) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/v1", api_key="test", max_retries=0, timeout=10
        )
        with client:
            stream = client.chat.completions.create(
                model="compound-beta",
                messages=[{"role": "user", "content": "weather?"}],
                stream=True,
            )
            (m,) = Assembler("openai-chat").feed_all(stream)
    check_groq_search(m)


def test_q50_twin_an_executed_tool_with_other_arguments_is_refused() -> None:
    entry = {"index": 0, "type": "search", "arguments": '{"query": "A"}'}
    other = {**entry, "arguments": '{"query": "B"}'}
    m, errors = run(chunk({"executed_tools": [entry]}), chunk({"executed_tools": [other]}), END)
    assert len(errors) == 1 and "other arguments" in str(errors[0])
    assert not m.complete


PARIS = '{"city":"Paris"}'
FC = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather"}


def responses_events(*events: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses events, numbered, between ``response.created`` and ``response.completed``."""
    out: list[dict[str, Any]] = [{"type": "response.created"}]
    out += [{"type": kind, **fields} for kind, fields in events]
    out.append({"type": "response.completed", "response": {"status": "completed"}})
    return [{**e, "sequence_number": n} for n, e in enumerate(out)]


def added(args: str = "") -> tuple[str, dict[str, Any]]:
    return "response.output_item.added", {"output_index": 0, "item": {**FC, "arguments": args}}


def item_done() -> tuple[str, dict[str, Any]]:
    return "response.output_item.done", {"output_index": 0, "item": {**FC, "arguments": PARIS}}


def args_delta(delta: str) -> tuple[str, dict[str, Any]]:
    return "response.function_call_arguments.delta", {
        "output_index": 0,
        "item_id": "fc_1",
        "delta": delta,
    }


def args_done() -> tuple[str, dict[str, Any]]:
    return "response.function_call_arguments.done", {
        "output_index": 0,
        "item_id": "fc_1",
        "arguments": PARIS,
    }


def run_responses(
    events: list[dict[str, Any]], *, as_text: bool = False
) -> tuple[AssembledMessage, list[Exception]]:
    return run(*events, as_text=as_text, provider="openai-responses")


@pytest.mark.parametrize("as_text", [False, True])
def test_q44_arguments_done_before_the_item_and_stale_deltas_give_the_done_call(
    as_text: bool,
) -> None:
    events = responses_events(
        args_done(), added(), args_delta('{"city":'), args_delta('"Paris"}'), item_done()
    )
    m, errors = run_responses(events, as_text=as_text)
    assert errors == [] and m.complete and m.problems == ()
    (call,) = m.tool_uses
    assert (call.id, call.name, call.input) == ("call_1", "get_weather", PARIS)
    assert kinds(m) == ["arguments-done-early", "stale-delta-skipped"]
    assert all(n.call_id == "call_1" for n in m.notes)
    assert [v.arguments for v in m.validated(TOOLS)] == [{"city": "Paris"}]


def test_q44_twin_new_text_after_done_or_a_delta_after_the_item_is_refused() -> None:
    for late in ['{"city":"Rome"}', "}"]:
        events = responses_events(
            added(), args_delta(PARIS), args_done(), args_delta(late), item_done()
        )
        m, errors = run_responses(events)
        assert len(errors) == 1 and "done arguments do not have" in str(errors[0])
        assert not m.complete
        with pytest.raises(ToolstitchError):
            m.validated(TOOLS)
    # After output_item.done a delta is a delta after the block stopped (Q25).
    m, errors = run_responses(responses_events(args_done(), added(), item_done(), args_delta("{")))
    assert len(errors) == 1 and "after the call's block stopped" in str(errors[0])
    assert not m.complete


def xai_sse(model: str = "grok-4-fast-reasoning", rename: dict[str, str] | None = None) -> bytes:
    """vercel/ai's xAI x_search recording as the SSE stream xAI sends."""
    out = []
    for line in (LONG_TAIL / "xai-x-search-tool.chunks.txt").read_text().splitlines():
        e = json.loads(line)
        if isinstance(e.get("response"), dict):
            e["response"]["model"] = model
        items = [e.get("item"), *((e.get("response") or {}).get("output") or [])]
        for item in items:  # the stream's items and the final snapshot's agree
            if isinstance(item, dict) and (rename or {}).get(item.get("name", "")):
                item["name"] = (rename or {})[item["name"]]
        out.append(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n")
    return "".join(out).encode()


def xai_message(body: bytes) -> AssembledMessage:
    with RecordingServer({"/v1/responses": Recording(body)}) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        with client:
            stream = client.responses.create(model="grok-4", input="xAI media?", stream=True)
            (m,) = Assembler("openai-responses").feed_all(stream)
    return m


def test_q47_xai_server_tools_as_custom_tool_calls_are_never_client_calls() -> None:
    m = xai_message(xai_sse())
    assert m.complete and m.problems == ()
    custom = [t for t in m.tool_uses if t.kind == "custom_tool_call"]
    assert [t.name for t in custom] == ["x_keyword_search", "view_x_video"]
    assert all(t.server_side and t.id in m.server_side_ids for t in custom)
    assert kinds(m) == ["xai-server-tool", "xai-server-tool"]
    assert m.validated(Toolset({})) == []  # nothing for the client to run


def test_q47_twin_another_models_or_the_clients_own_custom_tools_stay_client_calls() -> None:
    m = xai_message(xai_sse(model="gpt-5"))
    assert sorted(t.name for t in m.tool_uses if not t.server_side) == [
        "view_x_video",
        "x_keyword_search",
    ]
    assert m.notes == ()
    m = xai_message(xai_sse(rename={"view_x_video": "my_grammar_tool"}))
    assert [t.name for t in m.tool_uses if not t.server_side] == ["my_grammar_tool"]


def test_q40_split_concatenated_gives_one_call_per_object() -> None:
    import toolstitch

    events = [
        call(0, '{"city": "Paris"}{"city": "Rome"}', "call_a", "get_weather"),
        call(1, '{"city": "Oslo"}', "call_b", "get_weather"),
        END,
    ]
    asm = Assembler("openai-chat", split_concatenated=True)
    for e in events:
        asm.feed(e)
    asm.close()
    (via_assemble,) = toolstitch.assemble(events, "openai-chat", split_concatenated=True)
    for m in (asm.message(), via_assemble):
        assert m.complete and m.problems == ()
        assert [(c.id, c.input) for c in m.tool_uses] == [
            ("call_a_1", '{"city": "Paris"}'),
            ("call_a_2", '{"city": "Rome"}'),
            ("call_b", '{"city": "Oslo"}'),
        ]
        assert m.minted_ids == {"call_a_1", "call_a_2"}
        assert kinds(m) == ["concatenated-split"] and m.notes[0].call_id == "call_a_1"
        assert [v.arguments["city"] for v in m.validated(TOOLS)] == ["Paris", "Rome", "Oslo"]


def test_q40_twin_split_leaves_a_non_object_piece_as_the_q40_problem() -> None:
    from toolstitch import ToolValidationError

    asm = Assembler("openai-chat", split_concatenated=True)
    for e in (call(0, '{"city": "Paris"}[1]', "call_a", "get_weather"), END):
        asm.feed(e)
    asm.close()
    m = asm.message()
    assert [c.id for c in m.tool_uses] == ["call_a"] and m.notes == ()
    with pytest.raises(ToolValidationError) as refused:
        m.validated(TOOLS)
    assert "2 JSON values in one input" in str(refused.value.errors[0])
