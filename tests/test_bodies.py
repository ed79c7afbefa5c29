"""QUIRKS.md Q31: a whole, non-streamed response fed as a stream (the caller forgot
``stream=True``; gateways log both kinds) is assembled into the message its streamed
form gives, in every dialect.

The responses come from a local HTTP server through the real ``openai`` and
``anthropic`` clients (and ``urllib`` for the dialects whose SDK is not installed): the
server plays a real recording when the client streams, and the same response whole
when it does not. Each body also goes through ``feed`` as a dict and through
``feed_bytes`` pretty-printed and cut at random places.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readers import REAL, json_lines, sse_events
from toolstitch import (
    AssembledMessage,
    Assembler,
    DialectMismatchError,
    FramingError,
    LimitError,
    Provider,
    ToolResultBlock,
    ToolUseBlock,
)

# ------------------------------------------------------------------ a local server

Reply = tuple[str, bytes]
Route = Callable[[dict[str, Any]], Reply]


class Server:
    """A local HTTP server: each path answers with what its route makes of the request."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        routes = self.routes

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                self._answer(request)

            def do_GET(self) -> None:
                self._answer({})

            def _answer(self, request: dict[str, Any]) -> None:
                route = routes.get(self.path.split("?")[0])
                if route is None:
                    self.send_error(404)
                    return
                content_type, body = route(request)
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url + path) as response:
            body: bytes = response.read()
            return body

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def streamed_or_whole(stream: bytes, whole: Callable[[], bytes]) -> Route:
    """The recording when the client streams, the whole response when it does not."""

    def route(request: dict[str, Any]) -> Reply:
        if request.get("stream"):
            return "text/event-stream", stream
        return "application/json", whole()

    return route


# ------------------------------------------------------------------ helpers


def fed(provider: Provider, *events: object) -> AssembledMessage:
    asm = Assembler(provider)
    for event in events:
        asm.feed(event)
    asm.close()
    return asm.message()


def fed_bytes(provider: Provider, data: bytes, cuts: list[int]) -> AssembledMessage:
    asm = Assembler(provider)
    at = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        asm.feed_bytes(data[at:cut])
        at = max(at, cut)
    asm.close()
    return asm.message()


def lines(path: Path) -> list[dict[str, Any]]:
    return json_lines(path)


def sse_of(events: list[dict[str, Any]], *, named: bool = False, crlf: bool = False) -> bytes:
    return sse_events(((e["type"] if named else None, e) for e in events), crlf=crlf)


def canonical(m: AssembledMessage) -> AssembledMessage:
    """Call inputs and provider state as canonical JSON: a body holds an input as an
    object (compact when re-written), a stream as the model spelled it; provider state
    (raw JSON sent back as it came) is rebuilt from a body, its members in another
    order."""

    def json_canon(text: str | None) -> str | None:
        return json.dumps(json.loads(text), sort_keys=True) if text else text

    def canon(b: Any) -> Any:
        if isinstance(b, ToolUseBlock):
            return dataclasses.replace(
                b, input=json_canon(b.input) or "", provider_state=json_canon(b.provider_state)
            )
        if isinstance(b, ToolResultBlock):
            return dataclasses.replace(b, provider_state=json_canon(b.provider_state))
        return b

    blocks = tuple(canon(b) for b in m.blocks)
    return dataclasses.replace(m, blocks=blocks, tool_uses=tuple(canon(b) for b in m.tool_uses))


PRETTY_CUTS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def check_bytes_forms(provider: Provider, body: object, expected: AssembledMessage) -> None:
    """The body through ``feed_bytes``: compact, pretty-printed LF and CRLF, cut at
    random places; named and ``auto``."""
    forms = [
        json.dumps(body).encode(),
        json.dumps(body, indent=2).encode(),
        json.dumps(body, indent=4).replace("\n", "\r\n").encode(),
    ]

    @given(st.sampled_from(forms), st.lists(st.integers(min_value=0), max_size=12))
    @PRETTY_CUTS
    def check(data: bytes, cuts: list[int]) -> None:
        for p in (provider, "auto"):
            assert canonical(fed_bytes(p, data, cuts)) == canonical(expected)

    check()
    for data in forms:
        one_byte = Assembler(provider)
        for i in range(len(data)):
            one_byte.feed_bytes(data[i : i + 1])
        one_byte.close()
        assert canonical(one_byte.message()) == canonical(expected)


# ------------------------------------------------------------------ OpenAI chat


def test_q31_openai_chat_completion(server: Server) -> None:
    recording = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
    client = openai.OpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0)
    # The SDK accumulates the stream into the chat.completion a plain call returns.
    final: dict[str, Any] = {}
    server.routes["/v1/chat/completions"] = streamed_or_whole(
        recording, lambda: json.dumps(final).encode()
    )
    with client.chat.completions.stream(
        model="gpt-4o", messages=[{"role": "user", "content": "weather?"}]
    ) as stream:
        final.update(stream.get_final_completion().to_dict())
    assert final["object"] == "chat.completion"

    streamed = Assembler("openai-chat")
    streamed.feed_bytes(recording)
    streamed.close()
    expected = streamed.message()
    assert [b.name for b in expected.tool_uses] == ["GetWeatherArgs", "get_stock_price"]

    # The forgotten stream=True: the SDK object and its dict, named and auto.
    completion = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "weather?"}]
    )
    for provider in ("openai-chat", "auto"):
        assert fed(provider, completion) == expected
        assert fed(provider, completion.to_dict()) == expected
        assert fed(provider, completion.to_json()) == expected
    assert expected.complete and expected.usage and expected.usage["total_tokens"] == 209
    check_bytes_forms("openai-chat", final, expected)


def test_q31_openai_chat_completion_choices_and_legacy_call() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi there.", "refusal": None},
                "finish_reason": "stop",
            },
            {
                "index": 1,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "lookup", "arguments": '{"q": "x"}'},
                },
                "finish_reason": "function_call",
            },
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
    }
    asm = Assembler("auto")
    asm.feed(body)
    asm.close()
    first, second = asm.messages()
    assert first.text == "Hi there." and first.complete
    assert second.tool_uses[0].name == "lookup" and second.tool_uses[0].input == '{"q": "x"}'
    assert second.complete and asm.dialect == "openai-chat"


# ------------------------------------------------------------------ Anthropic


def test_q31_anthropic_message(server: Server) -> None:
    recording = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
    client = anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0)
    final: dict[str, Any] = {}
    server.routes["/v1/messages"] = streamed_or_whole(recording, lambda: json.dumps(final).encode())
    with client.messages.stream(
        model="claude-sonnet-4-20250514",
        max_tokens=1024,
        messages=[{"role": "user", "content": "weather?"}],
    ) as stream:
        final.update(stream.get_final_message().to_dict())
    assert final["type"] == "message"

    streamed = Assembler("anthropic")
    streamed.feed_bytes(recording)
    streamed.close()
    expected = streamed.message()

    message = client.messages.create(
        model="claude-sonnet-4-20250514",
        max_tokens=1024,
        messages=[{"role": "user", "content": "weather?"}],
    )
    for provider in ("anthropic", "auto"):
        got = fed(provider, message)
        assert canonical(got) == canonical(expected)
        assert got.tool_uses[0].input == '{"location":"Paris"}'
        assert got.text == "I'll check the current weather in Paris for you."
        assert got.complete and got.finish_reason == "tool_use"
        assert got.usage == {**final["usage"]}
    check_bytes_forms("anthropic", final, expected)


def test_q31_anthropic_server_tools_from_a_gzipped_recording() -> None:
    """Code execution run by Anthropic: every block of the message, results included,
    gives what the stream gives."""
    events = [
        json.loads(line)
        for line in gzip.decompress(
            (REAL / "vercel-ai/anthropic-code-execution-20250825.1.chunks.txt.gz").read_bytes()
        )
        .decode()
        .splitlines()
        if line.strip()
    ]
    expected = fed("anthropic", *events)
    body: dict[str, Any] = {}
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for e in events:
        if e["type"] == "message_start":
            body = dict(e["message"])
        elif e["type"] == "content_block_start":
            blocks.append(dict(e["content_block"]))
        elif e["type"] == "content_block_delta":
            d, block = e["delta"], blocks[e["index"]]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                partial[e["index"]] = partial.get(e["index"], "") + d["partial_json"]
        elif e["type"] == "content_block_stop" and partial.get(e["index"]):
            blocks[e["index"]]["input"] = json.loads(partial.pop(e["index"]))
        elif e["type"] == "message_delta":
            body["stop_reason"] = e["delta"]["stop_reason"]
            body["usage"] = {**body["usage"], **e["usage"]}
    body["content"] = blocks
    assert sum(b["type"] == "server_tool_use" for b in blocks) >= 1
    got = fed("auto", body)
    assert canonical(got) == canonical(expected)
    assert got.server_side_ids and got.server_side_ids == expected.server_side_ids


# ------------------------------------------------------------------ OpenAI Responses


def test_q31_openai_responses(server: Server) -> None:
    events = lines(REAL / "vercel-ai/azure-tool-call.1.chunks.txt")
    whole = next(e["response"] for e in events if e["type"] == "response.completed")
    server.routes["/v1/responses"] = streamed_or_whole(
        sse_of(events, named=True), lambda: json.dumps(whole).encode()
    )
    client = openai.OpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0)

    streamed = Assembler("openai-responses")
    sdk_events = list(client.responses.create(model="gpt-4.1", input="weather?", stream=True))
    for event in sdk_events:
        streamed.feed(event)
    streamed.close()
    expected = streamed.message()
    assert expected.tool_uses and expected.complete
    # A list of SDK events is a JSON array of them.
    assert fed("auto", sdk_events) == expected

    response = client.responses.create(model="gpt-4.1", input="weather?")
    assert response.object == "response"
    for provider in ("openai-responses", "auto"):
        assert fed(provider, response) == expected
    check_bytes_forms("openai-responses", whole, expected)


def test_q31_openai_responses_incomplete() -> None:
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Par',
                "status": "incomplete",
            }
        ],
    }
    m = fed("auto", body)
    assert m.finish_reason == "max_output_tokens" and not m.complete
    assert m.tool_uses[0].input == '{"city": "Par'


# ------------------------------------------------------------------ Gemini


def test_q31_gemini_json_array_equals_its_sse_form(server: Server) -> None:
    """streamGenerateContent without alt=sse: one JSON array, pretty-printed, CRLF."""
    chunks = lines(REAL / "google_vertex-stream-function-call-args-4-calls.jsonl")
    array = (
        ("[" + ",\r\n".join(json.dumps(c, indent=2) for c in chunks) + "]")
        .replace("\n", "\r\n")
        .replace("\r\r\n", "\r\n")
    )
    server.routes["/v1/models/gemini:streamGenerateContent"] = lambda _: (
        "application/json",
        array.encode(),
    )
    expected = fed_bytes("gemini", sse_of(chunks, crlf=True), [])
    assert len(expected.tool_uses) == 4
    body = server.get("/v1/models/gemini:streamGenerateContent")
    assert body.startswith(b"[{\r\n")

    @given(st.lists(st.integers(min_value=0), max_size=16))
    @PRETTY_CUTS
    def check(cuts: list[int]) -> None:
        for provider in ("gemini", "auto"):
            assert fed_bytes(provider, body, cuts) == expected

    check()
    # The array decoded by the caller, fed as one list; and each element alone.
    assert fed("auto", json.loads(body)) == expected
    assert fed("gemini", *json.loads(body)) == expected


def test_q31_gemini_generate_content_response() -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Calling it."},
                        {
                            "functionCall": {
                                "name": "get_weather",
                                "args": {"zone": "CET", "city": "Paris"},
                            }
                        },
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }
    expected = fed("gemini", body)
    assert expected.tool_uses[0].input == '{"zone":"CET","city":"Paris"}' and expected.complete
    check_bytes_forms("gemini", body, expected)


# ------------------------------------------------------------------ Bedrock

BEDROCK_BODY: dict[str, Any] = {
    "ResponseMetadata": {"RequestId": "5c6f", "HTTPStatusCode": 200},
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Paris, then.", "signature": "ErcB"}
                    }
                },
                {"text": "Let me check."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                        "name": "get_temperature",
                        "input": {"city": "Paris", "unit": "C"},
                    }
                },
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 471, "outputTokens": 91, "totalTokens": 562},
    "metrics": {"latencyMs": 422},
}

BEDROCK_STREAM: list[dict[str, Any]] = [
    {"messageStart": {"role": "assistant"}},
    {
        "contentBlockDelta": {
            "contentBlockIndex": 0,
            "delta": {"reasoningContent": {"text": "Paris, "}},
        }
    },
    {
        "contentBlockDelta": {
            "contentBlockIndex": 0,
            "delta": {"reasoningContent": {"text": "then."}},
        }
    },
    {
        "contentBlockDelta": {
            "contentBlockIndex": 0,
            "delta": {"reasoningContent": {"signature": "ErcB"}},
        }
    },
    {"contentBlockStop": {"contentBlockIndex": 0}},
    {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "Let me check."}}},
    {"contentBlockStop": {"contentBlockIndex": 1}},
    {
        "contentBlockStart": {
            "contentBlockIndex": 2,
            "start": {
                "toolUse": {
                    "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                    "name": "get_temperature",
                }
            },
        }
    },
    {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"city":'}}}},
    {
        "contentBlockDelta": {
            "contentBlockIndex": 2,
            "delta": {"toolUse": {"input": '"Paris","unit":"C"}'}},
        }
    },
    {"contentBlockStop": {"contentBlockIndex": 2}},
    {"messageStop": {"stopReason": "tool_use"}},
    {
        "metadata": {
            "usage": {"inputTokens": 471, "outputTokens": 91, "totalTokens": 562},
            "metrics": {"latencyMs": 422},
        }
    },
]


def test_q31_bedrock_converse(server: Server) -> None:
    server.routes["/model/nova/converse"] = lambda _: (
        "application/json",
        json.dumps(BEDROCK_BODY).encode(),
    )
    expected = fed("bedrock", *BEDROCK_STREAM)
    body = json.loads(server.get("/model/nova/converse"))
    for provider in ("bedrock", "auto"):
        got = fed(provider, body)
        assert got == expected
    assert expected.tool_uses[0].input == '{"city":"Paris","unit":"C"}' and expected.complete
    check_bytes_forms("bedrock", body, expected)


# ------------------------------------------------------------------ Cohere


def test_q31_cohere_chat_response(server: Server) -> None:
    events = lines(REAL / "vercel-ai/cohere-tool-call.chunks.txt")
    expected = fed("cohere", *events)
    calls: dict[int, dict[str, Any]] = {}
    plan = ""
    body: dict[str, Any] = {}
    for e in events:
        message = e.get("delta", {}).get("message", {})
        if e["type"] == "message-start":
            body["id"] = e["id"]
        elif e["type"] == "tool-plan-delta":
            plan += message["tool_plan"]
        elif e["type"] == "tool-call-start":
            calls[e["index"]] = json.loads(json.dumps(message["tool_calls"]))
        elif e["type"] == "tool-call-delta":
            calls[e["index"]]["function"]["arguments"] += message["tool_calls"]["function"][
                "arguments"
            ]
        elif e["type"] == "message-end":
            body["finish_reason"] = e["delta"]["finish_reason"]
            body["usage"] = e["delta"]["usage"]
    body["message"] = {"role": "assistant", "tool_plan": plan, "tool_calls": list(calls.values())}
    server.routes["/v2/chat"] = lambda _: ("application/json", json.dumps(body).encode())
    fetched = json.loads(server.get("/v2/chat"))
    for provider in ("cohere", "auto"):
        assert fed(provider, fetched) == expected
    assert len(expected.tool_uses) == 2 and expected.complete
    check_bytes_forms("cohere", fetched, expected)


# ------------------------------------------------------------------ errors


def test_q31_a_body_not_applied_whole_is_an_error() -> None:
    body = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        },
                        {
                            "id": "b",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    asm = Assembler("auto", max_calls=1)
    with pytest.raises(LimitError, match=r"event #1 \(chat\.completion body, at its"):
        asm.feed(body)
    asm.close()
    assert not asm.message().complete

    # A body of another dialect than the one named.
    with pytest.raises(DialectMismatchError, match="looks like anthropic") as mismatch:
        Assembler("openai-chat").feed(
            {"type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn"}
        )
    assert mismatch.value.looks_like == "anthropic"
    # Garbage after a body in the bytes (the line is decided at its end).
    asm = Assembler("auto")
    asm.feed_bytes(b'{"candidates":[]}<html>')
    with pytest.raises(FramingError, match="byte 17"):
        asm.close()
