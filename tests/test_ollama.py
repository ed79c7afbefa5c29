"""Ollama's native chat API (``/api/chat``): JSON lines of partial responses, whole calls
with object arguments, ``done`` / ``done_reason``, ``prompt_eval_count`` / ``eval_count``.

The stream is read by the real ``ollama`` client from a real HTTP server on 127.0.0.1
(``tests/http_server.py``), and its bytes and its SDK objects are both assembled. The
recording is written in the documented shape (``tests/fixtures/ollama/README.md``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import ollama
import pytest
from http_server import Recording, RecordingServer
from toolstitch import (
    AssembledMessage,
    Assembler,
    ProtocolError,
    ProviderError,
    ToolResultBlock,
    Toolset,
    render_turn,
)

STREAM = (
    Path(__file__).parent / "fixtures" / "ollama" / "chat-stream-tool-calls.jsonl"
).read_bytes()
TOOLS = Toolset(
    [
        {
            "type": "function",
            "function": {
                "name": "get_current_weather",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "location": {"type": "string"},
                        "format": {"enum": ["celsius", "fahrenheit"]},
                    },
                    "required": ["location", "format"],
                },
            },
        }
    ]
)


def check(m: AssembledMessage, ids_sent: bool = True) -> None:
    assert [(t.name, t.input) for t in m.tool_uses] == [
        ("get_current_weather", '{"location":"Toronto","format":"celsius"}'),
        ("get_current_weather", '{"location":"Ottawa","format":"celsius"}'),
    ]
    assert m.tool_uses[0].id in m.minted_ids
    assert (m.tool_uses[1].id == "call_4k2m") is ids_sent
    assert type(m.blocks[0]).__name__ == "ThinkingBlock"
    assert m.finish_reason == "stop" and m.finish == "tool-calls"
    assert (m.tokens.input_tokens, m.tokens.output_tokens) == (219, 56)
    assert m.complete
    assert [c.arguments["location"] for c in m.validated(TOOLS)] == ["Toronto", "Ottawa"]


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    routes = {"/api/chat": Recording(STREAM, "application/x-ndjson")}
    with RecordingServer(routes) as s:
        yield s


@pytest.mark.parametrize("provider", ["ollama", "auto"])
def test_the_stream_assembles_from_bytes_cut_anywhere(provider: str) -> None:
    for size in (1, 7, 64, len(STREAM)):
        asm = Assembler(provider)  # type: ignore[arg-type]
        for at in range(0, len(STREAM), size):
            asm.feed_bytes(STREAM[at : at + size])
        asm.close()
        assert asm.dialect == "ollama"
        check(asm.message())


def test_the_real_client_streams_and_its_objects_assemble(server: RecordingServer) -> None:
    client = ollama.Client(host=server.url)
    parts = list(
        client.chat(
            model="qwen3",
            messages=[{"role": "user", "content": "Weather in Toronto and Ottawa?"}],
            tools=[_ollama_tool()],
            stream=True,
        )
    )
    # The client's own objects, fed one by one (its ToolCall model has no id field:
    # the id the server sent is not in them, and both calls get minted ids).
    asm = Assembler("ollama")
    for part in parts:
        asm.feed(part)
    asm.close()
    check(asm.message(), ids_sent=False)
    # The same bytes as the client read them keep it.
    whole = Assembler("ollama")
    whole.feed_bytes(STREAM)
    whole.close()
    check(whole.message())
    # The client's own reading agrees on the calls.
    sdk_calls = [c.function for p in parts for c in (p.message.tool_calls or [])]
    assert [(f.name, dict(f.arguments)) for f in sdk_calls] == [
        (t.name, json.loads(t.input)) for t in asm.message().tool_uses
    ]
    # What the client sent: the request the server kept.
    (request,) = server.requests[-1:]
    assert request.path == "/api/chat" and request.json["stream"] is True


def _ollama_tool() -> dict[str, object]:
    return {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "The weather",
            "parameters": TOOLS.definition("get_current_weather").schema,
        },
    }


def test_a_whole_response_is_read_as_its_last_line() -> None:
    body = {
        "model": "qwen3",
        "created_at": "2025-05-27T22:54:58Z",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "get_current_weather",
                        "arguments": {"location": "Toronto", "format": "celsius"},
                    }
                }
            ],
        },
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 20,
        "eval_count": 9,
    }
    asm = Assembler()
    asm.feed_bytes(json.dumps(body, indent=2).encode())
    asm.close()
    m = asm.message()
    assert asm.dialect == "ollama" and m.complete
    assert json.loads(m.tool_uses[0].input) == {"location": "Toronto", "format": "celsius"}


def test_fail_closed_cut_replayed_and_error_lines() -> None:
    lines = STREAM.splitlines(keepends=True)
    cut = Assembler("ollama")
    cut.feed_bytes(b"".join(lines[:3]))
    cut.close()
    assert not cut.message().complete
    replayed = Assembler("ollama")
    with pytest.raises(ProtocolError):
        replayed.feed_bytes(STREAM + lines[1])
    replayed.close()
    assert not replayed.message().complete
    failed = Assembler("ollama")
    with pytest.raises(ProviderError):
        failed.feed_bytes(b'{"error": "model \\"qwen3\\" not found"}\n')


def test_render_turn_in_ollama_form_reads_back() -> None:
    asm = Assembler("ollama")
    asm.feed_bytes(STREAM)
    asm.close()
    m = asm.message()
    results = [ToolResultBlock.text(t.id, f"{i} C") for i, t in enumerate(m.tool_uses)]
    assistant, *tool_messages = render_turn("ollama", m, results)
    assert assistant["role"] == "assistant" and "thinking" in assistant
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == [
        {"location": "Toronto", "format": "celsius"},
        {"location": "Ottawa", "format": "celsius"},
    ]
    assert tool_messages == [
        {"role": "tool", "content": "0 C", "tool_name": "get_current_weather"},
        {"role": "tool", "content": "1 C", "tool_name": "get_current_weather"},
    ]
    # The rendered turn, as the body of a response, gives the same calls back.
    back = Assembler("ollama")
    back.feed({"message": assistant, "done": True, "done_reason": "stop"})
    back.close()
    assert [(t.name, t.input) for t in back.message().tool_uses] == [
        (t.name, t.input) for t in m.tool_uses
    ]
    # A broken call still renders, as the object form of its text.
    broken = Assembler("ollama")
    broken.feed(
        {
            "message": {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": '{"a": '}}],
            },
            "done": True,
            "done_reason": "stop",
        }
    )
    broken.close()
    (assistant_broken, _) = render_turn(
        "ollama",
        broken.message(),
        [ToolResultBlock.error(broken.message().tool_uses[0].id, "bad JSON")],
    )
    assert assistant_broken["tool_calls"][0]["function"]["arguments"] == {"INVALID_JSON": '{"a": '}
