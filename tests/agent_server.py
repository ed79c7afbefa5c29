"""A local provider for agent frameworks: a real recording for the turn that calls
tools, a short text answer for the turn that brings the tools' results back.

``serve()`` starts a ``RecordingServer`` (tests/http_server.py) on 127.0.0.1 with both
OpenAI chat (``/v1/chat/completions``) and Anthropic (``/v1/messages``) routes; a
request whose messages already carry a tool result gets the answer, any other the real
recording of the model calling tools. A request that does not ask to stream gets the
same turn as one JSON body (built from the recording's assembled message):

- OpenAI chat: ``openai_chat-completions-parallel-two-tools.sse`` (``GetWeatherArgs``
  with ``{"city": "Edinburgh", "country": "GB", "units": "c"}``, then
  ``get_stock_price``);
- Anthropic: ``anthropic_messages-text-then-tool-use.sse`` (text, then ``get_weather``
  with ``{"location": "Paris"}``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import toolstitch
from http_server import Recording, RecordingServer, Route

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
OPENAI_TOOL_TURN = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
ANTHROPIC_TOOL_TURN = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
ANSWER = "It is 12 degrees in Edinburgh."


def _sse(*events: Any, done: bool = False) -> bytes:
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-answer",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


OPENAI_ANSWER = _sse(
    _chunk({"role": "assistant", "content": ANSWER}, None), _chunk({}, "stop"), done=True
)


def _anthropic_event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


ANTHROPIC_ANSWER = b"".join(
    [
        _anthropic_event(
            "message_start",
            message={
                "id": "msg_answer",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        ),
        _anthropic_event(
            "content_block_start", index=0, content_block={"type": "text", "text": ""}
        ),
        _anthropic_event(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": ANSWER}
        ),
        _anthropic_event("content_block_stop", index=0),
        _anthropic_event(
            "message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None},
            usage={"output_tokens": 9},
        ),
        _anthropic_event("message_stop"),
    ]
)


def _has_tool_results(request: Any) -> bool:
    messages = request.get("messages", []) if isinstance(request, dict) else []
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            return True
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(part, dict) and part.get("type") == "tool_result" for part in content
        ):
            return True
    return False


def _streams(request: Any) -> bool:
    return isinstance(request, dict) and request.get("stream") is True


def _openai_json(sse: bytes) -> bytes:
    (message,) = toolstitch.assemble(sse)
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input}}
        for c in message.tool_uses
    ]
    text = "".join(b.text for b in message.blocks if isinstance(b, toolstitch.TextBlock))
    body = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text or None}
                | ({"tool_calls": calls} if calls else {}),
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return json.dumps(body).encode()


def _anthropic_json(sse: bytes) -> bytes:
    (message,) = toolstitch.assemble(sse)
    content: list[dict[str, Any]] = []
    for b in message.blocks:
        if isinstance(b, toolstitch.TextBlock):
            content.append({"type": "text", "text": b.text})
        elif isinstance(b, toolstitch.ToolUseBlock):
            content.append(
                {"type": "tool_use", "id": b.id, "name": b.name, "input": json.loads(b.input)}
            )
    calls = any(c["type"] == "tool_use" for c in content)
    body = {
        "id": "msg_whole",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return json.dumps(body).encode()


def _openai(request: Any) -> Recording:
    sse = OPENAI_ANSWER if _has_tool_results(request) else OPENAI_TOOL_TURN
    if _streams(request):
        return Recording(sse)
    return Recording(_openai_json(sse), "application/json")


def _anthropic(request: Any) -> Recording:
    sse = ANTHROPIC_ANSWER if _has_tool_results(request) else ANTHROPIC_TOOL_TURN
    if _streams(request):
        return Recording(sse)
    return Recording(_anthropic_json(sse), "application/json")


def routes() -> dict[str, Route]:
    """The routes: OpenAI chat and Anthropic, each a tool turn then the answer."""
    return {"/v1/chat/completions": _openai, "/v1/messages": _anthropic}


def serve() -> RecordingServer:
    """A started server (it stops with the process, or with ``__exit__``)."""
    return RecordingServer(routes()).__enter__()
