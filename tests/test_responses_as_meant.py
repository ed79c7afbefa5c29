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
from toolstitch import Assembler, ProtocolError, StreamDecodeError, Toolset
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
TOOLS = [
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
        asm.feed_bytes(chat_sse(["a1", "Xy", "Xy"]))
    assert raised.value.rule == "replayed"
    asm.close()
    (m,) = asm.messages()
    assert [c.input for c in m.tool_uses] == ['{"city":"Edin']
    assert not m.complete and any("nonce" in p.message for p in m.problems)


@pytest.mark.parametrize("nonces", [[None, None, None], ["a1", "b2", "c3"]])
def test_q61_twin_identical_fragments_without_a_shared_nonce_are_two(
    nonces: list[str | None],
) -> None:
    asm = Assembler("openai-chat")
    asm.feed_bytes(chat_sse(nonces))
    asm.close()
    (m,) = asm.messages()
    assert m.complete, m.problems
    assert [c.input for c in m.tool_uses] == ['{"city":"Edin{"city":"Edin']
