"""Responses streams read as their providers mean them (issue 36 items 5-9, issue 34
class 1): GitHub Copilot's rotated ids (Q59) and final snapshots checked against the
stream, through the Assembler, the guard and the real openai client. Each shape beside
its twin. The Rust side is tests/rust_responses_as_meant.rs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from http_server import Recording, RecordingServer
from toolstitch import (
    ApprovalResponse,
    Assembler,
    ProtocolError,
    RenderError,
    StreamDecodeError,
    ToolResultError,
    Toolset,
    ToolValidationError,
    render_results,
    render_turn,
    replay_bytes,
    replay_path,
)
from toolstitch.guard import Guard

REAL = Path(__file__).resolve().parent / "fixtures" / "real"


def sse(events: list[dict[str, Any]]) -> bytes:
    """Events as OpenAI sends them: numbered, each with its `event:` line."""
    out = b""
    for n, e in enumerate(events):
        e = {**e, "sequence_number": n}
        out += f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
    return out


def response(kind: str, rid: str, status: str, **extra: Any) -> dict[str, Any]:
    body = {"id": rid, "object": "response", "status": status, "model": "gpt-5", **extra}
    return {"type": kind, "response": body}


def fc(kind: str, item_id: str, call_id: str, name: str, args: str) -> dict[str, Any]:
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
    item |= {"arguments": args, "status": "completed" if kind.endswith("done") else "in_progress"}
    return {"type": kind, "output_index": 0, "item": item}


def delta(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "output_index": 0,
        "item_id": item_id,
        "delta": text,
    }


def done(item_id: str, args: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.done",
        "output_index": 0,
        "item_id": item_id,
        "arguments": args,
    }


# ------------------------------------------------------- Q59: rotated ids (Copilot)


def test_q59_the_copilot_recording_is_one_complete_response_with_a_note() -> None:
    asm = Assembler("auto")
    for line in (
        (REAL / "vercel-ai" / "github-copilot-id-rotation.1.chunks.txt").read_text().splitlines()
    ):
        asm.feed(line)
    asm.close()
    (m,) = asm.messages()
    assert m.complete, m.problems
    assert m.text.startswith("There are **3** letter") and m.text.endswith("**3, 8, and 9**.")
    assert [n.kind for n in m.notes] == ["response-id-rotated"]


ARGS = '{"city":"Paris"}'


def rotated() -> list[dict[str, Any]]:
    return [
        response("response.created", "r1", "in_progress"),
        response("response.in_progress", "r2", "in_progress"),
        fc("response.output_item.added", "i1", "call_1", "get_weather", ""),
        delta("i2", '{"city":'),
        delta("i3", '"Paris"}'),
        done("i4", ARGS),
        fc("response.output_item.done", "i5", "call_1", "get_weather", ARGS),
        response("response.completed", "r3", "completed"),
    ]


def test_q59_a_copilot_call_with_rotating_ids_validates() -> None:
    asm = Assembler("openai-responses")
    asm.feed_bytes(sse(rotated()))
    asm.close()
    (m,) = asm.messages()
    assert m.complete, m.problems
    (call,) = m.validated(Toolset({"get_weather": {"type": "object"}}))
    assert call.id == "call_1" and call.arguments == {"city": "Paris"}
    assert [n.kind for n in m.notes] == ["response-id-rotated", "item-id-rotated"]


def test_q59_twin_an_item_id_of_another_known_item_is_refused() -> None:
    events = rotated()
    second = fc("response.output_item.added", "fc_b", "call_2", "get_time", "")
    second["output_index"] = 1
    events.insert(3, second)
    events[4] = {**delta("fc_b", '{"city":'), "output_index": 0}  # fc_b's id at index 0
    asm = Assembler("openai-responses")
    with pytest.raises(StreamDecodeError, match="fc_b"):
        asm.feed_bytes(sse(events))
    asm.close()
    assert not asm.messages()[0].complete


def test_q59_twin_a_second_response_created_is_still_started_twice() -> None:
    asm = Assembler("openai-responses")
    with pytest.raises(ProtocolError, match=r"started twice|second response"):
        asm.feed_bytes(sse(rotated()) + sse([response("response.created", "other", "in_progress")]))
    asm.close()
    assert not asm.messages()[0].complete


# ------------------------------------------ issue 34 class 1: the final snapshot

GOOD = '{"path":"/tmp/x"}'
BAD = '{"path":"/etc/passwd"}'
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "read_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "pattern": "^/tmp/"}},
            "required": ["path"],
        },
    }
]


def snapshot_item(call_id: str, args: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": call_id,
        "name": "read_file",
        "arguments": args,
        "status": "completed",
    }


def with_snapshot(output: list[dict[str, Any]]) -> bytes:
    return sse(
        [
            response("response.created", "r1", "in_progress", output=[]),
            fc("response.output_item.added", "fc_1", "call_1", "read_file", ""),
            delta("fc_1", GOOD),
            done("fc_1", GOOD),
            fc("response.output_item.done", "fc_1", "call_1", "read_file", GOOD),
            response("response.completed", "r1", "completed", output=output),
        ]
    )


def guarded(body: bytes) -> tuple[bytes, Guard]:
    guard = Guard(TOOLS, transport="sse")
    step = guard.feed(body)
    out = step.forward
    blocked = step.blocked
    if blocked is None:
        step = guard.finish()
        out += step.forward
        blocked = step.blocked
    if blocked is not None:
        out += blocked.tail
    return out, guard


def final_calls(body: bytes) -> list[tuple[str, str]] | Exception:
    """What the openai SDK's `get_final_response()` holds, read from `body`."""
    with RecordingServer({"/v1/responses": Recording(body)}) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        try:
            with client.responses.stream(model="gpt-5", input="x", tools=TOOLS) as stream:
                for _ in stream:
                    pass
                final = stream.get_final_response()
        except Exception as e:  # the SDK raises APIError on response.failed
            return e
    return [(o.call_id, o.arguments) for o in final.output if o.type == "function_call"]


FORGED = {
    "other arguments": [snapshot_item("call_1", BAD)],
    "an extra call": [snapshot_item("call_1", GOOD), snapshot_item("call_2", BAD)],
}


@pytest.mark.parametrize("output", FORGED.values(), ids=FORGED.keys())
def test_a_snapshot_with_other_calls_is_blocked_before_the_sdk_builds_it(
    output: list[dict[str, Any]],
) -> None:
    body = with_snapshot(output)
    # Unguarded, the real SDK hands the application the snapshot's call.
    unguarded = final_calls(body)
    assert isinstance(unguarded, list) and any(args == BAD for _, args in unguarded)
    out, guard = guarded(body)
    assert guard.outcome == "blocked"
    assert b"/etc/passwd" not in out
    result = final_calls(out)
    assert isinstance(result, openai.APIError), result
    # The assembler says why.
    asm = Assembler("openai-responses")
    with pytest.raises(ProtocolError, match="snapshot"):
        asm.feed_bytes(body)
    asm.close()
    (m,) = asm.messages()
    assert not m.complete and any("snapshot" in p.message for p in m.problems)


def test_twin_the_same_snapshot_spelled_otherwise_passes_byte_identical() -> None:
    body = with_snapshot(
        [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            snapshot_item("call_1", ' { "path" : "/tmp/x" } '),
        ]
    )
    out, guard = guarded(body)
    assert guard.outcome == "passed" and out == body
    assert final_calls(out) == [("call_1", ' { "path" : "/tmp/x" } ')]


# ------------------------------------------ Q61: a replayed event told by its nonce


def chat_sse(nonces: list[str | None]) -> bytes:
    out = b""
    pieces = ["", '{"city":"Edin', '{"city":"Edin']
    for n, (piece, nonce) in enumerate(zip(pieces, nonces, strict=True)):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if n == 0:
            call |= {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
        chunk: dict[str, Any] = {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}],
        }
        if nonce is not None:
            chunk["obfuscation"] = nonce
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    end = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
    }
    return out + b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n"


def test_q61_a_chat_event_replayed_with_its_nonce_is_never_applied_twice() -> None:
    asm = Assembler("openai-chat")
    with pytest.raises(ProtocolError, match="nonce") as raised:
        asm.feed_bytes(chat_sse(["a1b2c3d4", "Xy7Qp2Lm", "Xy7Qp2Lm"]))
    assert raised.value.rule == "replayed"
    asm.close()
    (m,) = asm.messages()
    assert [c.input for c in m.tool_uses] == ['{"city":"Edin']
    assert not m.complete and any("nonce" in p.message for p in m.problems)


@pytest.mark.parametrize(
    "nonces",
    [
        [None, None, None],
        ["a1b2c3d4", "b2c3d4e5", "c3d4e5f6"],
        # Padding too short to tell a replay: a real recording repeats "x".
        ["a1b2c3d4", "x", "x"],
        ["a1b2c3d4", "Xy7Qp2L", "Xy7Qp2L"],
    ],
)
def test_q61_twin_identical_fragments_without_a_shared_nonce_are_two(
    nonces: list[str | None],
) -> None:
    asm = Assembler("openai-chat")
    asm.feed_bytes(chat_sse(nonces))
    asm.close()
    (m,) = asm.messages()
    assert m.complete, m.problems
    assert [c.input for c in m.tool_uses] == ['{"city":"Edin{"city":"Edin']


# ------------------------------------------------- Q60: MCP approval requests

CONFORMANCE = (
    Path(__file__).resolve().parent.parent / "conformance" / "cases" / "real" / "vercel-ai"
)


def approval_turn(n: int = 1) -> Any:
    name = f"vercel-ai.openai.responses.openai-mcp-tool-approval.{n}.stream.jsonl"
    asm = Assembler("auto")
    for line in (CONFORMANCE / name).read_text().splitlines():
        if line.strip():
            asm.feed(line)
    asm.close()
    (m,) = asm.messages()
    return m


def test_q60_an_approval_request_is_its_own_kind_never_a_client_call() -> None:
    m = approval_turn()
    assert m.complete, m.problems
    (request,) = m.approval_requests
    assert request.id.startswith("mcpr_") and request.name == "create_short_url"
    assert request.server_label == "zip1"
    assert json.loads(request.arguments)["url"] == "https://ai-sdk.dev/"
    # Nothing for the client to run or validate, and nothing invalid.
    assert m.validated(Toolset({})) == []
    assert all(b.server_side for b in m.tool_uses)


def test_q60_an_approval_is_answered_as_mcp_approval_response() -> None:
    m = approval_turn()
    (request,) = m.approval_requests
    turn = render_turn("openai-responses", m, [ApprovalResponse(request.id, True)])
    asked = [i for i in turn if i.get("type") == "mcp_approval_request"]
    assert [i["id"] for i in asked] == [request.id]
    assert turn[-1] == {
        "type": "mcp_approval_response",
        "approval_request_id": request.id,
        "approve": True,
    }
    denied = render_results(
        "openai-responses", [ApprovalResponse(request.id, False, "no")], calls=m
    )
    assert denied == [
        {
            "type": "mcp_approval_response",
            "approval_request_id": request.id,
            "approve": False,
            "reason": "no",
        }
    ]


def test_q60_twin_an_answer_to_no_request_or_in_another_format_is_refused() -> None:
    m = approval_turn()
    with pytest.raises(ToolResultError, match="mcpr_other"):
        render_results("openai-responses", [ApprovalResponse("mcpr_other", True)], calls=m)
    (request,) = m.approval_requests
    with pytest.raises(ToolResultError, match="two approval responses"):
        render_results(
            "openai-responses",
            [ApprovalResponse(request.id, True), ApprovalResponse(request.id, False)],
            calls=m,
        )
    with pytest.raises(RenderError, match="approval"):
        render_results("anthropic", [ApprovalResponse(request.id, True)])


def test_q60_twin_a_function_call_of_the_same_name_stays_a_client_call() -> None:
    asm = Assembler("openai-responses")
    asm.feed_bytes(sse([*rotated()[:1], *[e for e in rotated()[2:] if "item" in e], rotated()[-1]]))
    asm.close()
    (m,) = asm.messages()
    assert m.approval_requests == ()
    with pytest.raises(ToolValidationError):
        m.validated(Toolset({}))


def test_q60_the_guard_passes_an_approval_request_without_declared_function_tools() -> None:
    body = (
        CONFORMANCE / "vercel-ai.openai.responses.openai-mcp-tool-approval.1.stream.jsonl"
    ).read_bytes()
    mcp = [{"type": "mcp", "server_label": "zip1", "server_url": "https://zip1.io/mcp"}]
    guard = Guard(mcp, transport="json")
    out = guard.feed(body).forward
    step = guard.finish()
    assert step.blocked is None and guard.outcome == "passed"
    assert out + step.forward == body


# ------------------------------------- Q62: several responses in one capture

ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes().rstrip(
    b"\n"
) + b"\n\n"
AZURE = (REAL / "vercel-ai" / "azure-tool-call.1.chunks.txt").read_bytes().rstrip(b"\n") + b"\n"


def test_q62_an_anthropic_capture_of_two_messages_is_two_records(tmp_path: Path) -> None:
    capture = tmp_path / "two.sse"
    capture.write_bytes(ANTHROPIC + ANTHROPIC)
    for records in (replay_bytes(ANTHROPIC + ANTHROPIC, name="two.sse"), replay_path(capture)):
        streams = [r["stream"].rsplit("/", 1)[-1] for r in records]
        assert streams == ["two.sse#1", "two.sse#2"]
        assert all(r["complete"] and r["error"] is None for r in records)
        assert [r["arguments"] for r in records] == ['{"location": "Paris"}'] * 2


def test_q62_a_responses_capture_numbering_from_0_again_is_two_records() -> None:
    second = AZURE.replace(b'"resp_', b'"resp_second_')
    records = replay_bytes(AZURE + second, name="turns.jsonl")
    assert [r["stream"] for r in records] == ["turns.jsonl#1", "turns.jsonl#2"]
    assert all(r["complete"] and r["name"] == "weather" for r in records)


def test_q62_twin_one_assembler_still_reads_one_response() -> None:
    asm = Assembler("anthropic")
    with pytest.raises(ProtocolError):
        asm.feed_bytes(ANTHROPIC + ANTHROPIC)
    asm.close()
    assert not asm.messages()[0].complete  # Q24 as before


def test_q62_twin_content_after_the_end_is_no_new_response() -> None:
    late = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        b'"delta":{"type":"input_json_delta","partial_json":"x"}}\n\n'
    )
    (record,) = replay_bytes(ANTHROPIC + late, name="late.sse")
    assert record["stream"] == "late.sse" and not record["complete"] and record["error"]


def test_q62_twin_a_second_start_before_the_end_is_no_new_response() -> None:
    cut = ANTHROPIC.split(b"event: message_delta")[0]
    records = replay_bytes(cut + ANTHROPIC, name="restart.sse")
    assert {r["stream"] for r in records} == {"restart.sse"}
    assert not any(r["complete"] for r in records)


def test_q60_the_approval_kinds_are_the_cores() -> None:
    from toolstitch import _toolstitch, messages

    assert messages._APPROVAL_KINDS == _toolstitch.APPROVAL_KINDS
