"""``toolstitch proxy --enforce`` as a user runs it (a subprocess on 127.0.0.1 in front of a
real local HTTP server), read the way clients read it: the raw bytes each client receives,
and the real ``openai``, ``anthropic`` and ``boto3`` clients raising their own exceptions.
No event that completes an invalid call ever reaches a client; valid streams pass byte for
byte."""

from __future__ import annotations

import gzip
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anthropic
import boto3
import httpx
import openai
import pytest
from botocore.exceptions import EventStreamError  # type: ignore[import-untyped]
from http_server import Recording, RecordingServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from readers import REAL, cassette_bodies
from test_otel import receiver  # noqa: F401 (a fixture)
from test_proxy import CHAT_TOOLS, RESPONSES, WEATHER_TOOL, proxy, raw
from test_watch import ANTHROPIC, MESSAGES, OPENAI_CHAT

EVENTSTREAM = "application/vnd.amazon.eventstream"
CONVERSE = cassette_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")[0]
NOVA = "us.amazon.nova-pro-v1:0"

# An event no reader can decode, just after the first event.
_FIRST = OPENAI_CHAT.index(b"\n\n") + 2
BROKEN_CHAT = OPENAI_CHAT[:_FIRST] + b"data: {not json\n\n" + OPENAI_CHAT[_FIRST:]
# Cut inside the second call's arguments: no finish reason.
CUT_CHAT = OPENAI_CHAT[: OPENAI_CHAT.index(b'"finish_reason":"tool_calls"') - 200]
ROUTES = {
    "/v1/chat/completions": Recording(OPENAI_CHAT),
    "/broken/v1/chat/completions": Recording(BROKEN_CHAT),
    "/cut/v1/chat/completions": Recording(CUT_CHAT),
    "/v1/messages": Recording(ANTHROPIC),
    "/v1/responses": Recording(RESPONSES),
    f"/model/{NOVA.replace(':', '%3A')}/converse-stream": Recording(CONVERSE, EVENTSTREAM),
}
GET_CAPITAL: list[Any] = [
    {"type": "function", "name": "get_capital", "parameters": {"type": "object"}}
]
TEMPERATURE = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_temperature",
                "inputSchema": {
                    "json": {"type": "object", "properties": {"city": {"type": "integer"}}}
                },
            }
        }
    ]
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES) as s:
        yield s


@pytest.fixture(scope="module")
def enforcing(upstream: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with proxy(upstream.url, tmp_path_factory.mktemp("guard"), "--enforce") as running:
        yield running


def strict(tools: list[Any]) -> list[Any]:
    """The same tools, each requiring a property no recorded call sends."""
    out: list[Any] = json.loads(json.dumps(tools))
    for tool in out:
        holder = tool.get("function", tool)
        key = "input_schema" if "input_schema" in holder else "parameters"
        schema = holder[key]
        schema["required"] = [*schema.get("required", []), "__never_sent__"]
    return out


def chat(url: str, tools: list[Any]) -> tuple[int, bytes]:
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": tools}
    status, body, _ = raw(f"{url}/v1/chat/completions", request)
    return status, body


# ------------------------------------------------------------ OpenAI chat


@pytest.mark.parametrize("how", ["schema", "undeclared"])
def test_chat_an_invalid_first_call_never_reaches_the_client(enforcing: Any, how: str) -> None:
    tools = strict(CHAT_TOOLS) if how == "schema" else CHAT_TOOLS[1:]
    status, body = chat(enforcing.url, tools)
    assert status == 200
    # Every event before the chunk that opens the next call (what SDK helpers take as
    # the first call's end), the provider's error event, and nothing else.
    next_call = OPENAI_CHAT.index(b'"index":1,"id"')
    held = OPENAI_CHAT.rindex(b"\n\n", 0, next_call) + 2
    assert body.startswith(OPENAI_CHAT[:held])
    error = body[held:]
    assert error.startswith(b'data: {"error":') and error.endswith(b"\n\n")
    assert b'finish_reason":"tool_calls' not in body
    client = openai.OpenAI(base_url=f"{enforcing.url}/v1", api_key="k", max_retries=0)
    done = []
    with (
        pytest.raises(openai.APIError, match="GetWeatherArgs"),
        client.chat.completions.stream(model="gpt-4o", messages=MESSAGES, tools=tools) as stream,
    ):
        for event in stream:
            if event.type == "tool_calls.function.arguments.done":
                done.append(event.name)
    assert done == []


def test_chat_an_invalid_second_call_lets_the_first_through(enforcing: Any) -> None:
    tools = [CHAT_TOOLS[0], strict(CHAT_TOOLS)[1]]
    _, body = chat(enforcing.url, tools)
    assert b'"index":1,"id"' in body
    assert b'finish_reason":"tool_calls' not in body and b"get_stock_price" in body
    client = openai.OpenAI(base_url=f"{enforcing.url}/v1", api_key="k", max_retries=0)
    done = []
    with (
        pytest.raises(openai.APIError, match="get_stock_price"),
        client.chat.completions.stream(model="gpt-4o", messages=MESSAGES, tools=tools) as stream,
    ):
        for event in stream:
            if event.type == "tool_calls.function.arguments.done":
                done.append(event.name)
    assert done == ["GetWeatherArgs"]


def test_chat_an_undecodable_event_blocks_everything_after_it(enforcing: Any) -> None:
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
    _, body, _ = raw(f"{enforcing.url}/broken/v1/chat/completions", request)
    assert body.startswith(OPENAI_CHAT[:_FIRST])
    assert b"tool_calls" not in body[_FIRST:].split(b"\n\n", 1)[0] or b"error" in body[_FIRST:]
    assert b"GetWeatherArgs" not in body and body[_FIRST:].startswith(b'data: {"error":')


def test_chat_a_cut_stream_ends_with_the_providers_error(enforcing: Any) -> None:
    client = openai.OpenAI(base_url=f"{enforcing.url}/cut/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIError, match="cut short"):
        for _ in client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
        ):
            pass


def test_valid_streams_pass_byte_identical(enforcing: Any) -> None:
    assert chat(enforcing.url, CHAT_TOOLS) == (200, OPENAI_CHAT)
    request = {
        "model": "claude",
        "max_tokens": 9,
        "messages": MESSAGES,
        "stream": True,
        "tools": WEATHER_TOOL,
    }
    assert raw(f"{enforcing.url}/v1/messages", request)[1] == ANTHROPIC
    request = {"model": "gpt-4o", "input": "x", "stream": True, "tools": GET_CAPITAL}
    assert raw(f"{enforcing.url}/v1/responses", request)[1] == RESPONSES


# ------------------------------------------------------------ Anthropic, Responses, Bedrock


def test_anthropic_never_delivers_the_invalid_blocks_stop(enforcing: Any) -> None:
    tools = strict(WEATHER_TOOL)
    request = {
        "model": "claude",
        "max_tokens": 9,
        "messages": MESSAGES,
        "stream": True,
        "tools": tools,
    }
    _, body, _ = raw(f"{enforcing.url}/v1/messages", request)
    assert b'"content_block_stop","index":1' not in body and b"message_delta" not in body
    assert body.endswith(b"\n\n") and b"event: error\ndata: " in body
    client = anthropic.Anthropic(base_url=enforcing.url, api_key="k", max_retries=0)
    seen = []
    with (
        pytest.raises(anthropic.APIStatusError, match="toolu_01NRLabsLyVHZPKxbKvkfSMn"),
        client.messages.stream(
            model="claude", max_tokens=9, messages=MESSAGES, tools=tools
        ) as stream,
    ):
        for event in stream:
            seen.append(event.type)
    assert "input_json" in seen  # the call's input streamed live...
    assert seen.count("content_block_stop") == 1  # ...but only the text block stopped


def test_responses_never_delivers_the_invalid_items_done(enforcing: Any) -> None:
    tools = strict(GET_CAPITAL)
    request = {"model": "gpt-4o", "input": "x", "stream": True, "tools": tools}
    _, body, _ = raw(f"{enforcing.url}/v1/responses", request)
    assert b"function_call_arguments.done" not in body
    assert b"response.output_item.done" not in body.split(b"get_capital", 1)[1]
    assert b"event: response.failed\ndata: " in body
    client = openai.OpenAI(base_url=f"{enforcing.url}/v1", api_key="k", max_retries=0)
    seen = []
    with (
        pytest.raises(openai.APIError, match="get_capital"),
        client.responses.stream(model="gpt-4o", input="x", tools=tools) as stream,
    ):
        for event in stream:
            seen.append(event.type)
    assert "response.function_call_arguments.delta" in seen
    assert "response.function_call_arguments.done" not in seen


def bedrock(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    )


def test_bedrock_ends_with_an_exception_frame_boto3_raises(enforcing: Any) -> None:
    client = bedrock(enforcing.url)
    stream = client.converse_stream(modelId=NOVA, messages=[], toolConfig=TEMPERATURE)["stream"]
    seen: list[dict[str, Any]] = []
    with pytest.raises(EventStreamError, match="get_temperature"):
        for event in stream:
            seen.append(event)
    (start,) = [
        e["contentBlockStart"]
        for e in seen
        if "toolUse" in e.get("contentBlockStart", {}).get("start", {})
    ]
    index = start["contentBlockIndex"]
    # The call's input streamed live; its block never stopped, the message never ended.
    assert any(e.get("contentBlockDelta", {}).get("contentBlockIndex") == index for e in seen)
    assert not any(e.get("contentBlockStop", {}).get("contentBlockIndex") == index for e in seen)
    assert not any("messageStop" in e for e in seen)
    # Valid: the stream as recorded.
    valid = {
        "tools": [
            {"toolSpec": {"name": "get_temperature", "inputSchema": {"json": {"type": "object"}}}}
        ]
    }
    events = [
        e for e in client.converse_stream(modelId=NOVA, messages=[], toolConfig=valid)["stream"]
    ]
    assert any("messageStop" in e for e in events)


# ------------------------------------------------------------ hostile upstreams


class _Raw(BaseHTTPRequestHandler):
    """An upstream answering every POST with ``body`` (in large writes) and ``headers``."""

    protocol_version = "HTTP/1.1"
    body = b""
    headers_out: ClassVar[dict[str, str]] = {}
    status = 200

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.status)
        for k, v in self.headers_out.items():
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for at in range(0, len(self.body), 1 << 16):
                piece = self.body[at : at + (1 << 16)]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def raw_upstream(body: bytes, headers: dict[str, str], status: int = 200) -> Iterator[str]:
    handler = type("Raw", (_Raw,), {"body": body, "headers_out": headers, "status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_gzip_bomb_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    bomb = gzip.compress(b"data: " + b" " * (512 << 20), compresslevel=9)
    headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
    with raw_upstream(bomb, headers) as url, proxy(url, tmp_path, "--enforce") as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as raised:
            client.chat.completions.create(
                model="m", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
            )
        assert raised.value.status_code == 502
        (record,) = running.records(1)
    assert record["enforced"] == "blocked" and record["blocked_cause"] in ("encoding", "limit")


def test_a_gzipped_stream_sent_despite_identity_is_decoded_and_guarded(tmp_path: Path) -> None:
    headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
    with (
        raw_upstream(gzip.compress(OPENAI_CHAT), headers) as url,
        proxy(url, tmp_path, "--enforce") as running,
    ):
        status, body, response_headers = raw(
            f"{running.url}/v1/chat/completions",
            {"model": "m", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS},
        )
        assert (status, body) == (200, OPENAI_CHAT)
        assert "content-encoding" not in response_headers
        _, body, _ = raw(
            f"{running.url}/v1/chat/completions",
            {"model": "m", "messages": MESSAGES, "stream": True, "tools": strict(CHAT_TOOLS)},
        )
        assert b'finish_reason":"tool_calls' not in body and b'"error"' in body


def test_a_24_mib_event_is_refused_without_stalling(tmp_path: Path) -> None:
    big = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * (24 << 20) + b'"}}]}\n\n'
    with (
        raw_upstream(big, {"Content-Type": "text/event-stream"}) as url,
        proxy(url, tmp_path, "--enforce") as running,
    ):
        started = time.monotonic()
        status, body, _ = raw(
            f"{running.url}/v1/chat/completions",
            {"model": "m", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS},
        )
        elapsed = time.monotonic() - started
        (record,) = running.records(1)
    assert status == 502 and (b"max_line_bytes" in body or b"max_event_bytes" in body)
    assert record["blocked_cause"] == "limit"
    # Not a timing assertion: a bound far above the work (linear, seconds at most),
    # far below what a quadratic buffer takes.
    assert elapsed < 60


def test_an_upstream_error_status_passes_through(tmp_path: Path) -> None:
    error = json.dumps({"error": {"message": "overloaded", "type": "server_error"}}).encode()
    with (
        raw_upstream(error, {"Content-Type": "application/json"}, 500) as url,
        proxy(url, tmp_path, "--enforce") as running,
    ):
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="overloaded"):
            client.chat.completions.create(model="m", messages=MESSAGES, tools=CHAT_TOOLS)
        (record,) = running.records(1)
    assert (
        record["enforced"] == "unchecked"
        and record["unchecked"] == "the upstream answered HTTP 500"
    )


def test_an_unreachable_upstream_answers_in_the_requests_provider_shape(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with proxy(f"http://127.0.0.1:{port}", tmp_path, "--enforce") as running:
        client = anthropic.Anthropic(base_url=running.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as raised:
            client.messages.create(model="c", max_tokens=9, messages=MESSAGES)
        assert raised.value.status_code == 502
        assert raised.value.body["type"] == "error"  # type: ignore[index]
        assert "cannot be reached" in raised.value.body["error"]["message"]  # type: ignore[index]


# ------------------------------------------------------------ the operator's view


def test_the_log_says_what_was_done_and_the_health_endpoint_answers(
    upstream: RecordingServer, tmp_path: Path
) -> None:
    with proxy(upstream.url, tmp_path, "--enforce") as running:
        assert chat(running.url, CHAT_TOOLS)[0] == 200
        chat(running.url, strict(CHAT_TOOLS))
        raw(
            f"{running.url}/v1/chat/completions",
            {"model": "m", "messages": MESSAGES, "stream": True},
        )
        health = httpx.get(f"{running.url}/toolstitch/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        running.records(3)
    lines = [line for line in running.stderr.splitlines() if "POST /v1/chat/completions" in line]
    assert [line.split(" calls=")[1].split()[1] for line in lines] == [
        "passed",
        "blocked",
        "unchecked",
    ]
    assert "invalid-call" in lines[1] and "GetWeatherArgs" in lines[1]
    assert "the request declared no tools" in lines[2]


def _listen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolstitch", "proxy", "--upstream", "http://127.0.0.1:9", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_operator_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        cases = [
            (["--listen", "127.0.0.1:99999"], "--listen"),
            (["--listen", f"127.0.0.1:{port}"], "cannot listen"),
            (
                [
                    "--listen",
                    "127.0.0.1:0",
                    "--records",
                    str(tmp_path / "no" / "such" / "dir.jsonl"),
                ],
                "--records",
            ),
        ]
        for args, message in cases:
            done = _listen(*args)
            assert done.returncode == 2, (args, done.stderr)
            assert message in done.stderr and "Traceback" not in done.stderr
            assert len(done.stderr.strip().splitlines()) == 1


class _Slow(BaseHTTPRequestHandler):
    """An upstream that takes two seconds over a valid stream."""

    protocol_version = "HTTP/1.1"
    started = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = OPENAI_CHAT.split(b"\n\n")
        for i, event in enumerate(events):
            piece = event + b"\n\n" if i < len(events) - 1 else event
            if not piece:
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            type(self).started.set()
            time.sleep(2 / len(events))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def test_sigterm_drains_open_streams_then_exits(tmp_path: Path) -> None:
    # The event is the class's: a run on the other relay may have set it already.
    _Slow.started.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    got: list[bytes] = []
    try:
        with proxy(
            f"http://127.0.0.1:{server.server_address[1]}", tmp_path, "--enforce"
        ) as running:
            reader = threading.Thread(
                target=lambda: got.append(chat(running.url, CHAT_TOOLS)[1]), daemon=True
            )
            reader.start()
            assert _Slow.started.wait(10)
            running.process.send_signal(signal.SIGTERM)
            reader.join(30)
            assert running.process.wait(30) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert got == [OPENAI_CHAT]


# ------------------------------------------------------------ spans


def test_a_blocked_responses_span_continues_the_callers_trace_and_says_why(
    upstream: RecordingServer,
    tmp_path: Path,
    receiver: tuple[str, list[tuple[str, bytes]]],  # noqa: F811
) -> None:
    url, bodies = receiver
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = "00f067aa0ba902b7"
    headers = {"traceparent": f"00-{trace_id}-{parent}-01"}
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": strict(CHAT_TOOLS)}
    with proxy(upstream.url, tmp_path, "--otel", "--enforce", env=env) as running:
        raw(f"{running.url}/v1/chat/completions", request, headers)
        (record,) = running.records(1)
        deadline = time.monotonic() + 20
        while not bodies and time.monotonic() < deadline:
            time.sleep(0.05)
    spans = []
    for _, body in bodies:
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        spans += [s for rs in export.resource_spans for ss in rs.scope_spans for s in ss.spans]
    (span,) = spans
    attributes = {a.key: a.value for a in span.attributes}
    assert span.trace_id.hex() == trace_id and span.parent_span_id.hex() == parent
    assert attributes["gen_ai.provider.name"].string_value == "openai"
    assert attributes["gen_ai.response.id"].string_value == "chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63"
    assert attributes["gen_ai.response.model"].string_value == "gpt-4o-2024-08-06"
    assert attributes["error.type"].string_value == "invalid-call"
    assert attributes["toolstitch.guard.call.name"].string_value == "GetWeatherArgs"
    assert span.status.code == 2  # ERROR
    # Opened when the request arrived, closed when the response ended.
    duration_ms = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
    assert duration_ms >= record["duration_ms"] * 0.9
