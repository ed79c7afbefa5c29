"""Fail closed (quirks Q24-Q35, except Q31 in test_bodies.py): a message is ``complete``
only when every event was applied once, in order, under the dialect's protocol; content
that breaks the protocol is a ``ProtocolError`` from the feed that received it, is not
applied, and leaves a problem that ``validated()`` refuses; unknown things are skipped and
counted; every kind of tool call is kept."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import toolstitch as ts
from readers import REAL, json_lines, sse_events
from toolstitch import (
    Assembler,
    DialectMismatchError,
    IncompleteMessageError,
    LimitError,
    ProtocolError,
    ProviderError,
    SkippedEvent,
    StreamDecodeError,
    ToolCallFinished,
    ToolInputDelta,
    ToolResultBlock,
    ToolUseBlock,
)

VERCEL = REAL / "vercel-ai"
ANY = ts.Toolset({"f": {"type": "object"}, "get_weather": {"type": "object"}})


def sse(*events: tuple[str | None, dict[str, Any]]) -> bytes:
    """SSE bytes, each event with its `event:` line when named."""
    return sse_events(events)


def lines(path: Path) -> list[dict[str, Any]]:
    return json_lines(path)


def feed_all(asm: Assembler, events: list[dict[str, Any]]) -> list[Exception]:
    """Feeds every event, collecting the errors instead of stopping at the first."""
    errors: list[Exception] = []
    for e in events:
        try:
            asm.feed(e)
        except ts.ToolstitchError as err:
            errors.append(err)
    try:
        asm.close()
    except ts.ToolstitchError as err:
        errors.append(err)
    return errors


def chat(delta: dict[str, Any], finish: str | None = None, choice: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def call(
    index: int, id: str | None = None, name: str | None = None, args: str = ""
) -> dict[str, Any]:
    c: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id:
        c["id"] = id
    if name:
        c["function"]["name"] = name
    return chat({"tool_calls": [c]})


def anthropic_tool_stream(stop_reason: str | None = "tool_use") -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"p":'},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "1}"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    delta: dict[str, Any] = {"stop_reason": stop_reason} if stop_reason else {}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}})
    events.append({"type": "message_stop"})
    return events


def refused(m: ts.AssembledMessage) -> None:
    """The message is not complete and `validated()` refuses it."""
    assert not m.complete
    assert m.problems
    with pytest.raises(IncompleteMessageError):
        m.validated(ANY)


# ------------------------------------------------------------------ Q24


def test_q24_a_fragment_after_done_is_refused_and_not_applied() -> None:
    asm = Assembler("openai-chat")
    asm.feed(call(0, "c1", "f", "{}"))
    asm.feed(chat({}, "tool_calls"))
    asm.feed("[DONE]")
    with pytest.raises(ProtocolError) as err:
        asm.feed(call(0, args="X"))
    assert err.value.rule == "after-done"
    assert err.value.event_index == 4
    m = asm.message()
    assert m.tool_uses[0].input == "{}"
    refused(m)


def test_q24_a_fragment_after_the_finish_reason_is_refused() -> None:
    asm = Assembler("openai-chat")
    asm.feed(call(0, "c1", "f", "{}"))
    asm.feed(chat({}, "tool_calls"))
    with pytest.raises(ProtocolError, match="after the message ended") as err:
        asm.feed(call(0, args="X"))
    assert err.value.rule == "after-end"
    assert asm.message().tool_uses[0].input == "{}"
    refused(asm.message())


def test_q24_usage_only_chunks_pings_and_done_after_the_end_stay_legitimate() -> None:
    asm = Assembler("openai-chat")
    asm.feed(call(0, "c1", "f", "{}"))
    asm.feed(chat({}, "tool_calls"))
    asm.feed(chat({"content": ""}, "tool_calls"))  # the same end, restated, carries nothing
    asm.feed({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    asm.feed("[DONE]")
    asm.feed("[DONE]")
    asm.close()
    m = asm.message()
    assert m.complete and not m.problems
    assert m.tokens.input_tokens == 3
    assert [c.name for c in m.validated(ANY)] == ["f"]
    a = Assembler("anthropic")
    for e in anthropic_tool_stream():
        a.feed(e)
    a.feed({"type": "ping"})
    a.close()
    assert a.message().complete


def test_q24_a_new_tool_use_block_after_message_stop_is_refused() -> None:
    asm = Assembler("anthropic")
    for e in anthropic_tool_stream():
        asm.feed(e)
    start = {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_2", "name": "f", "input": {}},
    }
    with pytest.raises(ProtocolError, match="after message_stop"):
        asm.feed(start)
    m = asm.message()
    assert [b.id for b in m.tool_uses] == ["toolu_1"]
    refused(m)


def test_q24_frames_after_message_stop_are_refused_but_metadata_is_not() -> None:
    asm = Assembler("bedrock")
    asm.feed(
        {
            "contentBlockStart": {
                "contentBlockIndex": 0,
                "start": {"toolUse": {"toolUseId": "t1", "name": "f"}},
            }
        }
    )
    asm.feed({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}})
    asm.feed({"contentBlockStop": {"contentBlockIndex": 0}})
    asm.feed({"messageStop": {"stopReason": "tool_use"}})
    asm.feed({"metadata": {"usage": {"inputTokens": 4, "outputTokens": 2, "totalTokens": 6}}})
    assert asm.message().complete
    with pytest.raises(ProtocolError):
        asm.feed(
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "X"}}}}
        )
    m = asm.message()
    assert m.tool_uses[0].input == "{}"
    assert m.tokens.total_tokens == 6
    refused(m)


@pytest.mark.parametrize(
    "name, provider",
    [
        ("openai_chat-completions-parallel-two-tools.sse", "openai-chat"),
        ("anthropic_messages-text-then-tool-use.sse", "anthropic"),
        ("openai_chat-completions-parallel-two-tools.sse", "auto"),
        ("anthropic_messages-text-then-tool-use.sse", "auto"),
    ],
)
def test_q24_a_whole_recording_fed_twice_never_doubles_an_input(
    name: str, provider: ts.Provider
) -> None:
    once = Assembler(provider)
    data = (REAL / name).read_bytes()
    once.feed_bytes(data)
    once.close()
    expected = [b.input for b in once.message().tool_uses]
    asm = Assembler(provider)
    asm.feed_bytes(data + b"\n\n")
    with pytest.raises(ProtocolError):
        asm.feed_bytes(data)
    with contextlib.suppress(ProtocolError):  # a last event flushed at close is refused too
        asm.close()
    m = asm.message()
    assert [b.input for b in m.tool_uses] == expected
    refused(m)


def test_q24_a_responses_stream_fed_again_is_skipped_as_resent_by_sequence_number() -> None:
    events = lines(VERCEL / "azure-tool-call.1.chunks.txt")
    asm = Assembler("auto")
    assert not feed_all(asm, events + events)
    m = asm.message()
    assert [b.input for b in m.tool_uses] == ['{"location":"San Francisco"}']
    assert len(m.skipped) == len(events) and m.complete
    # Without sequence numbers the second response is a second start: refused.
    bare = [{k: v for k, v in e.items() if k != "sequence_number"} for e in events]
    asm = Assembler("auto")
    errors = feed_all(asm, bare + bare)
    assert errors and all(isinstance(e, ProtocolError) for e in errors)
    refused(asm.message())


@pytest.mark.parametrize(
    "name",
    [
        "cohere-tool-call.chunks.txt",
        "groq-tool-call.chunks.txt",
        "google-tool-call.chunks.txt",
        "anthropic-tool-no-args.chunks.txt",
    ],
)
def test_q24_every_dialect_refuses_its_own_stream_fed_again(name: str) -> None:
    events = lines(VERCEL / name)
    asm = Assembler("auto")
    assert not feed_all(asm, events[:])
    once = [b.input for b in asm.message().tool_uses]
    asm = Assembler("auto")
    errors = feed_all(asm, events + events)
    assert errors and all(isinstance(e, ProtocolError) for e in errors), errors
    m = asm.message()
    assert [b.input for b in m.tool_uses] == once
    refused(m)


# ------------------------------------------------------------------ Q25


def test_q25_a_delta_after_content_block_stop_is_refused_with_no_live_delta() -> None:
    asm = Assembler("anthropic")
    live: list[object] = []
    for e in anthropic_tool_stream()[:5]:
        live += asm.feed(e)
    with pytest.raises(ProtocolError, match="after") as err:
        asm.feed(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "X"},
            }
        )
    assert err.value.rule == "after-stop"
    assert "toolu_1" in err.value.target
    finished = [i for i, e in enumerate(live) if isinstance(e, ToolCallFinished)]
    deltas = [i for i, e in enumerate(live) if isinstance(e, ToolInputDelta)]
    assert finished and max(deltas) < finished[0]
    for e in anthropic_tool_stream()[5:]:
        asm.feed(e)
    m = asm.message()
    assert m.tool_uses[0].input == '{"p":1}'
    refused(m)


def test_q25_a_duplicated_content_block_start_is_no_phantom_call() -> None:
    events = anthropic_tool_stream()
    asm = Assembler("anthropic")
    errors = feed_all(asm, [*events[:3], events[1], *events[3:]])
    assert len(errors) == 1 and isinstance(errors[0], ProtocolError)
    assert errors[0].rule == "opened-twice"
    m = asm.message()
    assert [(b.id, b.input) for b in m.tool_uses] == [("toolu_1", '{"p":1}')]
    refused(m)


def test_q25_a_duplicated_bedrock_content_block_start_is_refused() -> None:
    start = {
        "contentBlockStart": {
            "contentBlockIndex": 0,
            "start": {"toolUse": {"toolUseId": "t1", "name": "f"}},
        }
    }
    asm = Assembler("bedrock")
    errors = feed_all(
        asm,
        [
            start,
            {
                "contentBlockDelta": {
                    "contentBlockIndex": 0,
                    "delta": {"toolUse": {"input": '{"a":1}'}},
                }
            },
            start,
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "tool_use"}},
        ],
    )
    assert [e.rule for e in errors if isinstance(e, ProtocolError)] == ["opened-twice"]
    m = asm.message()
    assert [(b.id, b.input) for b in m.tool_uses] == [("t1", '{"a":1}')]
    refused(m)


def test_q25_a_text_delta_on_a_tool_use_block_is_refused() -> None:
    events = anthropic_tool_stream()
    bad = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}
    asm = Assembler("anthropic")
    errors = feed_all(asm, [*events[:3], bad, *events[3:]])
    assert [e.rule for e in errors if isinstance(e, ProtocolError)] == ["wrong-block"]
    m = asm.message()
    assert m.text == "" and m.tool_uses[0].input == '{"p":1}'
    refused(m)


def test_q25_two_calls_with_one_id_are_refused() -> None:
    asm = Assembler("openai-chat")
    asm.feed(call(0, "same", "f", "{}"))
    with pytest.raises(ProtocolError) as err:
        asm.feed(call(1, "same", "f", "{}"))
    assert err.value.rule == "duplicate-id"
    asm.feed(chat({}, "tool_calls"))
    m = asm.message()
    assert len(m.tool_uses) == 1
    refused(m)


def test_q25_a_duplicated_responses_output_item_added_is_refused() -> None:
    added: dict[str, Any] = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": "",
        },
    }
    other = {**added, "item": {**added["item"], "call_id": "call_2", "name": "g"}}
    asm = Assembler("openai-responses")
    errors = feed_all(
        asm,
        [
            {"type": "response.created", "response": {}},
            added,
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"},
            other,
            {"type": "response.completed", "response": {"status": "completed"}},
        ],
    )
    assert [e.rule for e in errors if isinstance(e, ProtocolError)] == ["opened-twice"]
    m = asm.message()
    assert [(b.id, b.name, b.input) for b in m.tool_uses] == [("call_1", "f", "{}")]
    refused(m)


def test_q25_responses_done_restatements_after_the_stop_stay_legitimate() -> None:
    asm = Assembler("auto")
    assert not feed_all(asm, lines(VERCEL / "azure-tool-call.1.chunks.txt"))
    assert asm.message().complete


# ------------------------------------------------------------------ Q26


def test_q26_message_stop_with_no_stop_reason_is_not_complete() -> None:
    asm = Assembler("anthropic")
    assert not feed_all(asm, anthropic_tool_stream(stop_reason=None))
    m = asm.message()
    assert not m.complete and m.finish_reason is None
    assert m.finish == "other"
    with pytest.raises(IncompleteMessageError):
        m.validated(ANY)


def test_q26_cohere_message_end_without_a_finish_reason_is_not_complete() -> None:
    events = lines(VERCEL / "cohere-tool-call.chunks.txt")
    assert events[-1]["type"] == "message-end"
    del events[-1]["delta"]["finish_reason"]
    asm = Assembler("cohere")
    assert not feed_all(asm, events)
    m = asm.message()
    assert not m.complete
    with pytest.raises(IncompleteMessageError):
        m.validated(ts.Toolset({"weather": {}, "cityAttractions": {}}))


def test_q26_bedrock_message_stop_without_a_stop_reason_is_not_complete() -> None:
    asm = Assembler("bedrock")
    feed_all(asm, [{"messageStart": {"role": "assistant"}}, {"messageStop": {}}])
    assert not asm.message().complete


# ------------------------------------------------------------------ Q27


@pytest.mark.parametrize(
    "name, kind, result_kind",
    [
        ("anthropic-web-search-tool.1.chunks.txt", "server_tool_use", "web_search_tool_result"),
        ("anthropic-mcp.1.chunks.txt", "mcp_tool_use", "mcp_tool_result"),
        (
            "anthropic-code-execution-20250825.1.chunks.txt.gz",
            "server_tool_use",
            "bash_code_execution_tool_result",
        ),
        ("openai-file-search-tool.1.chunks.txt", "file_search_call", None),
        ("azure-web-search-preview-tool.1.chunks.txt", "web_search_call", None),
        (
            "azure-image-generation-tool.1.chunks.txt",
            "image_generation_call",
            "image_generation_call",
        ),
    ],
)
def test_q27_hosted_tools_are_kept_as_server_side_calls_with_their_results(
    name: str, kind: str, result_kind: str | None
) -> None:
    asm = Assembler("auto")
    assert not feed_all(asm, lines(VERCEL / name))
    m = asm.message()
    assert m.complete and not m.skipped
    hosted = [b for b in m.tool_uses if b.kind == kind]
    assert hosted and all(b.server_side for b in hosted)
    assert {b.id for b in hosted} <= m.server_side_ids
    assert all(b.input.startswith("{") for b in hosted)
    results = [b for b in m.blocks if isinstance(b, ToolResultBlock)]
    if result_kind:
        assert result_kind in {r.kind for r in results}
        assert {r.tool_use_id for r in results} <= {b.id for b in m.tool_uses}
        assert all(r.provider_state for r in results)
    # The provider ran them: nothing for the client to execute.
    assert m.validated(ts.Toolset({})) == []
    # Blocks stay in stream order: each result comes after its call.
    call_at = {b.id: i for i, b in enumerate(m.blocks) if isinstance(b, ToolUseBlock)}
    for i, b in enumerate(m.blocks):
        if isinstance(b, ToolResultBlock):
            assert call_at[b.tool_use_id] < i


def test_q27_mcp_result_text_is_kept_as_content() -> None:
    asm = Assembler("auto")
    feed_all(asm, lines(VERCEL / "anthropic-mcp.1.chunks.txt"))
    (result,) = [b for b in asm.message().blocks if isinstance(b, ToolResultBlock)]
    assert result.content == (ts.TextBlock("Tool echo: hello world"),)
    assert result.tool_use_id == "mcptoolu_017CuqaJcXe5ZHJjaz3KS1AT"


def test_q27_a_tool_search_call_with_object_arguments_is_no_decode_error() -> None:
    events = [
        {"type": "response.created", "sequence_number": 0, "response": {}},
        {
            "type": "response.output_item.done",
            "sequence_number": 1,
            "output_index": 0,
            "item": {
                "type": "tool_search_call",
                "id": "ts_1",
                "arguments": {"query": "weather"},
                "status": "completed",
            },
        },
        {"type": "response.completed", "sequence_number": 2, "response": {"status": "completed"}},
    ]
    asm = Assembler("openai-responses")
    assert not feed_all(asm, events)
    m = asm.message()
    (b,) = m.tool_uses
    assert (b.kind, b.server_side, b.id, b.name) == (
        "tool_search_call",
        True,
        "ts_1",
        "tool_search",
    )
    assert json.loads(b.input) == {"arguments": {"query": "weather"}}
    assert m.complete


def test_q27_bedrock_server_tool_use_is_never_handed_to_the_client() -> None:
    asm = Assembler("bedrock")
    errors = feed_all(
        asm,
        [
            {"messageStart": {"role": "assistant"}},
            {
                "contentBlockStart": {
                    "contentBlockIndex": 0,
                    "start": {
                        "toolUse": {
                            "toolUseId": "s1",
                            "name": "nova_code_interpreter",
                            "type": "server_tool_use",
                        }
                    },
                }
            },
            {
                "contentBlockDelta": {
                    "contentBlockIndex": 0,
                    "delta": {"toolUse": {"input": '{"code":"1+1"}'}},
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {
                "contentBlockStart": {
                    "contentBlockIndex": 1,
                    "start": {
                        "toolResult": {
                            "toolUseId": "s1",
                            "type": "nova_code_interpreter_result",
                            "status": "success",
                        }
                    },
                }
            },
            {
                "contentBlockDelta": {
                    "contentBlockIndex": 1,
                    "delta": {"toolResult": [{"text": "2"}]},
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 1}},
            {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"text": "It is 2."}}},
            {"contentBlockStop": {"contentBlockIndex": 2}},
            {"messageStop": {"stopReason": "end_turn"}},
        ],
    )
    assert not errors
    m = asm.message()
    assert m.complete and m.text == "It is 2."
    (call_,) = m.tool_uses
    assert call_.server_side and call_.kind == "server_tool_use" and m.server_side_ids == {"s1"}
    (result,) = [b for b in m.blocks if isinstance(b, ToolResultBlock)]
    assert (result.tool_use_id, result.content, result.kind) == (
        "s1",
        (ts.TextBlock("2"),),
        "nova_code_interpreter_result",
    )
    assert m.validated(ts.Toolset({})) == []


def test_q27_gemini_executable_code_and_its_result() -> None:
    chunk = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"executableCode": {"language": "PYTHON", "code": "print(1+1)"}},
                        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
                        {"text": "The answer is 2."},
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    }
    asm = Assembler("gemini")
    asm.feed(chunk)
    asm.close()
    m = asm.message()
    assert m.complete and m.finish == "stop"
    (code,) = m.tool_uses
    assert (code.kind, code.server_side, code.name) == ("executable_code", True, "code_execution")
    assert json.loads(code.input) == {"language": "PYTHON", "code": "print(1+1)"}
    (result,) = [b for b in m.blocks if isinstance(b, ToolResultBlock)]
    assert result.tool_use_id == code.id and result.content == (ts.TextBlock("2\n"),)
    assert not result.is_error


# ------------------------------------------------------------------ Q28


def test_q28_a_custom_tool_call_is_a_call_whose_input_is_text() -> None:
    asm = Assembler("auto")
    assert not feed_all(asm, lines(VERCEL / "openai-custom-tool.1.chunks.txt"))
    m = asm.message()
    assert m.complete and m.finish == "tool-calls"
    (b,) = m.tool_uses
    assert (b.id, b.name, b.kind, b.server_side) == (
        "call_custom_sql_001",
        "write_sql",
        "custom_tool_call",
        False,
    )
    assert b.input == "SELECT * FROM users WHERE age > 25"
    wire = ts.marshal_block(b)
    assert ts.unmarshal_block(wire) == b


def test_q28_a_shell_call_is_a_client_call_of_its_own_kind() -> None:
    events = lines(VERCEL / "openai-shell-tool.1.chunks.txt")
    # The recording holds two responses (the call, then the answer to its output).
    second = next(i for i, e in enumerate(events) if i and e["type"] == "response.created")
    asm = Assembler("auto")
    assert not feed_all(asm, events[:second])
    m = asm.message()
    (b,) = m.tool_uses
    assert (b.kind, b.server_side, b.id) == ("shell_call", False, "call_pbxjNs1tMJUahLZKAS9qLtvw")
    assert json.loads(b.input)["action"]["commands"] == ["ls -a ~/Desktop"]
    assert m.complete and m.finish == "tool-calls"
    # Fed as one stream, the second response is a second start: refused, never merged.
    asm = Assembler("auto")
    errors = feed_all(asm, events)
    assert errors and isinstance(errors[0], ProtocolError)
    refused(asm.message())


@pytest.mark.parametrize(
    "item",
    [
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "call_c",
            "action": {"type": "click", "x": 1, "y": 2},
            "pending_safety_checks": [],
        },
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "call_l",
            "action": {"type": "exec", "command": ["ls"]},
        },
        {
            "type": "apply_patch_call",
            "id": "ap_1",
            "call_id": "call_a",
            "operation": {"type": "update_file", "path": "a.py", "diff": "@@"},
        },
    ],
)
def test_q28_computer_local_shell_and_apply_patch_calls_are_kept(item: dict[str, Any]) -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {k: v for k, v in item.items() if k in ("type", "id", "call_id")},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    asm = Assembler("openai-responses")
    assert not feed_all(asm, events)
    m = asm.message()
    (b,) = m.tool_uses
    assert (b.kind, b.id, b.server_side) == (item["type"], item["call_id"], False)
    rest = {k: v for k, v in item.items() if k not in ("type", "id", "call_id", "status")}
    assert json.loads(b.input) == rest
    assert m.complete and m.finish == "tool-calls"


# ------------------------------------------------------------------ Q29


def test_q29_unknown_event_item_block_and_delta_types_are_skipped_and_counted() -> None:
    events = anthropic_tool_stream()
    future: list[dict[str, Any]] = [
        {"type": "message_thought", "x": 1},
        {
            "type": "content_block_start",
            "index": 7,
            "content_block": {"type": "hologram", "data": [1]},
        },
        {"type": "content_block_delta", "index": 7, "delta": {"type": "hologram_delta", "v": 2}},
        {"type": "content_block_stop", "index": 7},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_chrono_delta", "t": 1},
        },
    ]
    asm = Assembler("anthropic")
    assert not feed_all(asm, [*events[:3], *future, *events[3:]])
    m = asm.message()
    assert m.complete and m.tool_uses[0].input == '{"p":1}'
    assert [s.event_type for s in m.skipped] == [
        "message_thought",
        "content_block_start:hologram",
        "content_block_delta",
        "content_block_delta:input_chrono_delta",
    ]
    assert all(isinstance(s, SkippedEvent) and s.ordinal > 0 for s in m.skipped)
    assert m.skipped[0].ordinal == 4


def test_q29_responses_unknown_items_and_events_and_gemini_parts_are_skipped() -> None:
    asm = Assembler("openai-responses")
    assert not feed_all(
        asm,
        [
            {"type": "response.created", "response": {}},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "teleport_call", "id": "x"},
            },
            {"type": "response.teleport.started", "output_index": 0},
            {"type": "response.completed", "response": {"status": "completed"}},
        ],
    )
    m = asm.message()
    assert m.complete
    assert [s.event_type for s in m.skipped] == [
        "response.output_item.done:teleport_call",
        "response.teleport.started",
    ]
    g = Assembler("gemini")
    g.feed(
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"inlineData": {"mimeType": "image/png", "data": "AA"}},
                            {"text": "hi"},
                        ]
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    g.close()
    assert g.message().complete and g.message().text == "hi"
    assert [s.event_type for s in g.message().skipped] == ["part"]


# ------------------------------------------------------------------ Q30


def test_q30_a_decode_error_mid_read_loses_no_later_event() -> None:
    data = (
        sse((None, call(0, "c1", "f", '{"a":')))
        + b"data: {not json}\n\n"
        + sse((None, call(0, args="1}")), (None, chat({}, "tool_calls")))
    )
    asm = Assembler("openai-chat")
    with pytest.raises(StreamDecodeError) as err:
        asm.feed_bytes(data)
    assert err.value.event_index == 2
    asm.close()
    m = asm.message()
    # Everything after the bad event was applied ...
    assert m.tool_uses[0].input == '{"a":1}' and m.finish_reason == "tool_calls"
    # ... and the message says something is missing.
    refused(m)
    assert "event #2" in m.problems[0]


def test_q30_a_limit_error_mid_read_makes_the_call_not_executable() -> None:
    data = sse(
        (None, call(0, "c1", "f", '{"a":"' + "x" * 50)),
        (None, call(0, args='"}')),
        (None, chat({}, "tool_calls")),
    )
    asm = Assembler("openai-chat", max_input_bytes=40)
    with pytest.raises(LimitError):
        asm.feed_bytes(data)
    asm.close()
    m = asm.message()
    assert m.finish_reason == "tool_calls"  # the events after the bad one were applied
    refused(m)


def test_q30_a_rejected_first_fragment_never_validates_as_empty_object() -> None:
    asm = Assembler("openai-chat", max_input_bytes=4)
    asm.feed(call(0, "c1", "f", ""))
    with pytest.raises(LimitError):
        asm.feed(call(0, args='{"a": 123}'))
    asm.feed(chat({}, "tool_calls"))
    m = asm.message()
    assert m.tool_uses[0].input == ""
    refused(m)


def test_q30_a_framing_error_marks_the_rest_of_the_stream_unreadable() -> None:
    asm = Assembler("openai-chat")
    with pytest.raises(ts.FramingError):
        asm.feed_bytes(sse((None, call(0, "c1", "f", "{}"))) + b"data: \xff\xfe\n\n")
    with pytest.raises(ts.FramingError):
        asm.feed_bytes(sse((None, chat({}, "tool_calls"))))
    asm.close()
    m = asm.message()
    refused(m)
    assert len([p for p in m.problems if "framing" in p]) == 1


def test_q30_errors_after_close_leave_a_problem_too() -> None:
    asm = Assembler("openai-chat")
    asm.feed(call(0, "c1", "f", "{}"))
    asm.feed(chat({}, "tool_calls"))
    asm.close()
    assert asm.message().complete
    with pytest.raises(ts.StreamClosedError):
        asm.feed(call(0, args="X"))
    refused(asm.message())


# ------------------------------------------------------------------ Q32


def test_q32_anthropic_events_into_openai_chat_name_the_dialect() -> None:
    asm = Assembler("openai-chat")
    with pytest.raises(DialectMismatchError) as err:
        asm.feed(anthropic_tool_stream()[0])
    assert (err.value.expected, err.value.looks_like) == ("openai-chat", "anthropic")
    assert "looks like anthropic" in str(err.value)
    refused(asm.message())


@pytest.mark.parametrize(
    "provider, event, looks_like",
    [
        ("anthropic", {"type": "response.created", "response": {}}, "openai-responses"),
        ("openai-responses", {"type": "message_start", "message": {}}, "anthropic"),
        ("gemini", {"choices": [{"index": 0, "delta": {"content": "x"}}]}, "openai-chat"),
        (
            "cohere",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "anthropic",
        ),
        ("bedrock", {"candidates": [{"content": {"parts": [{"text": "x"}]}}]}, "gemini"),
    ],
)
def test_q32_every_dialect_names_the_one_a_foreign_event_looks_like(
    provider: ts.Provider, event: dict[str, Any], looks_like: str
) -> None:
    with pytest.raises(DialectMismatchError) as err:
        Assembler(provider).feed(event)
    assert err.value.looks_like == looks_like


# ------------------------------------------------------------------ Q33


def responses_text(seqs: list[int]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "sequence_number": 0, "response": {}}
    ]
    for n in seqs:
        events.append(
            {
                "type": "response.output_text.delta",
                "sequence_number": n,
                "output_index": 0,
                "content_index": 0,
                "delta": f"<{n}>",
            }
        )
    last = max(seqs, default=0) + 1
    events.append(
        {"type": "response.completed", "sequence_number": last, "response": {"status": "completed"}}
    )
    return events


def test_q33_resent_events_after_a_resume_are_skipped() -> None:
    asm = Assembler("openai-responses")
    events = responses_text([1, 2, 3])
    # A resumed stream (starting_after=1) resends 1 before going on.
    assert not feed_all(asm, [*events[:3], events[2], events[1], *events[3:]])
    m = asm.message()
    assert m.text == "<1><2><3>" and m.complete
    assert [s.event_type for s in m.skipped] == [
        "response.output_text.delta (resent, sequence_number 2)",
        "response.output_text.delta (resent, sequence_number 1)",
    ]


def test_q33_a_gap_or_a_reordering_is_a_problem() -> None:
    asm = Assembler("openai-responses")
    events = responses_text([1, 2, 3])
    assert not feed_all(asm, [events[0], events[1], events[3], events[2], events[4]])
    m = asm.message()
    assert m.text == "<1><3>"  # the late event is not joined out of order
    refused(m)
    assert any("jumped from 1 to 3" in p for p in m.problems)
    assert any("out of order" in p for p in m.problems)


# ------------------------------------------------------------------ Q34


def test_q34_data_before_event_in_one_sse_event() -> None:
    data = b"".join(
        f"data: {json.dumps(e)}\nevent: {e['type']}\n\n".encode() for e in responses_text([1])
    )
    asm = Assembler("auto")
    asm.feed_bytes(data)
    asm.close()
    assert asm.message().text == "<1>" and asm.message().complete


def test_q34_json_padded_before_the_closing_brace_and_crlf_line_ends() -> None:
    events = anthropic_tool_stream()
    data = b"".join(
        f"event: {e['type']}\r\ndata: {json.dumps(e)[:-1]}   }}\r\n\r\n".encode() for e in events
    )
    asm = Assembler("auto")
    asm.feed_bytes(data)
    asm.close()
    m = asm.message()
    assert m.complete and m.tool_uses[0].input == '{"p":1}'


def test_q34_groq_usage_sent_twice_is_not_double_counted() -> None:
    asm = Assembler("auto")
    feed_all(asm, lines(VERCEL / "groq-tool-call.chunks.txt"))
    m = asm.message()
    assert (m.tokens.input_tokens, m.tokens.output_tokens, m.tokens.total_tokens) == (210, 15, 225)
    only_groq = Assembler("openai-chat")
    only_groq.feed(call(0, "c", "f", "{}"))
    only_groq.feed(
        {
            **chat({}, "tool_calls"),
            "x_groq": {"usage": {"prompt_tokens": 7, "completion_tokens": 1}},
        }
    )
    assert only_groq.message().tokens.input_tokens == 7


def test_q34_arguments_only_in_done_events_and_cohere_object_tool_calls() -> None:
    asm = Assembler("auto")
    assert not feed_all(asm, lines(VERCEL / "lmstudio-tool-call.1.chunks.txt"))
    m = asm.message()
    assert m.complete and m.tool_uses[0].id == "call_2025306790300011"
    c = Assembler("auto")
    assert not feed_all(c, lines(VERCEL / "cohere-tool-call.chunks.txt"))
    assert [b.name for b in c.message().tool_uses] == ["weather", "cityAttractions"]


def test_q34_a_max_tokens_cut_inside_a_tool_input_keeps_the_call_exactly() -> None:
    events = anthropic_tool_stream(stop_reason="max_tokens")
    del events[3:5]  # the last input delta and the block's stop never came
    asm = Assembler("anthropic")
    assert not feed_all(asm, events)
    m = asm.message()
    assert m.tool_uses[0].input == '{"p":'
    assert not m.complete and m.finish == "length"
    with pytest.raises(IncompleteMessageError):
        m.validated(ANY)


# ------------------------------------------------------------------ Q35


def test_q35_groq_mid_stream_error_gives_the_most_specific_code() -> None:
    error = {
        "error": {
            "message": "Failed to call a function. Please adjust your prompt.",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": '<function=get_weather{"city": "Paris"}</function>',
        }
    }
    data = sse((None, call(0, "c1", "f", "{")), ("error", error))
    asm = Assembler("openai-chat")
    with pytest.raises(ProviderError) as err:
        asm.feed_bytes(data)
    assert err.value.error_type == "tool_use_failed"
    assert "Failed to call a function" in str(err.value)
    assert json.loads(err.value.raw)["failed_generation"].startswith("<function=")
    asm.close()
    assert asm.message().finish == "error"
    refused(asm.message())
    # The same error as a plain `{"error": ...}` chunk, and with a numeric code.
    asm = Assembler("openai-chat")
    with pytest.raises(ProviderError) as err:
        asm.feed({"error": {"message": "bad", "type": "BadRequestError", "code": 400}})
    assert err.value.error_type == "BadRequestError"


# ------------------------------------------------------------------ a lost stop


def responses_call_stream(*, item_done: bool) -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"p":1}',
        },
    ]
    if item_done:
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "arguments": '{"p":1}'},
            }
        )
    events.append({"type": "response.completed", "response": {"status": "completed"}})
    return events


@pytest.mark.parametrize("dialect", ["anthropic", "openai-responses"])
def test_a_call_whose_block_never_stopped_before_a_normal_end_is_not_complete(
    dialect: ts.Provider,
) -> None:
    if dialect == "anthropic":
        whole = anthropic_tool_stream()
        lost = [e for e in whole if e["type"] != "content_block_stop"]
    else:
        whole = responses_call_stream(item_done=True)
        lost = responses_call_stream(item_done=False)
    asm = Assembler(dialect)
    assert feed_all(asm, whole) == []
    assert asm.message().complete and not asm.message().problems
    asm = Assembler(dialect)
    assert feed_all(asm, lost) == []
    m = asm.message()
    (call,) = m.tool_uses
    assert call.input == '{"p":1}' and m.finish_reason in ("tool_use", "completed")
    refused(m)
    (problem,) = m.problems
    assert call.id in problem and "never received its own stop" in problem
    # The problem crosses with its fields: the call it names, where, and what.
    assert isinstance(problem, ts.Problem)
    assert (problem.kind, problem.choice, problem.call, problem.call_id) == (
        "protocol",
        0,
        0,
        call.id,
    )
    assert problem.event == len(lost) and str(problem) == problem.message
