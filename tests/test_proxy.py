"""``toolstitch proxy``, run as a user runs it: a subprocess listening on 127.0.0.1 (a free
port), in front of the real HTTP server of ``tests/http_server.py`` serving the
recordings, with the real ``openai``, ``anthropic`` and ``httpx`` clients pointed at it.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import http_server
import httpx
import openai
import pytest
from http_server import Recording, RecordingServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_otel import receiver  # noqa: F401 (a fixture)
from test_real_recordings import vcr_bodies
from test_watch import ANTHROPIC, COMPLETION, MESSAGES, OPENAI_CHAT
from toolstitch import Assembler
from toolstitch.errors import ProviderError

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
RESPONSES = vcr_bodies(REAL / "openai_responses-function-call.vcr.yaml")[0]
# vercel/ai's Interactions recording (one JSON event per line) as the SSE it came as.
INTERACTIONS = b"".join(
    b"data: " + line + b"\n\n"
    for line in (REAL / "vercel-ai" / "google-interactions-tool-call-step1.chunks.txt")
    .read_bytes()
    .splitlines()
    if line.strip()
)
# The chat recording with its first event's model left empty: the model is the second's.
LATE_MODEL = OPENAI_CHAT.replace(b'"model":"gpt-4o-2024-08-06"', b'"model":""', 1)
ROUTES = {
    "/v1/chat/completions": Recording(OPENAI_CHAT),
    "/late/v1/chat/completions": Recording(LATE_MODEL),
    "/whole/v1/chat/completions": Recording(COMPLETION, "application/json"),
    "/v1/messages": Recording(ANTHROPIC),
    "/text": Recording(b"just some text", "text/plain"),
    "/v1/responses": Recording(RESPONSES),
    "/v1beta/interactions": Recording(INTERACTIONS),
}

# The tools the recordings' calls were made for, in each provider's request form.
CHAT_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "GetWeatherArgs",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "country": {"type": "string"},
                    "units": {"type": "string", "enum": ["c", "f"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_stock_price",
            "parameters": {"type": "object", "properties": {"ticker": {"type": "string"}}},
        },
    },
]
# The same, with the weather tool's city an integer: the recorded call fails it.
STRICT_CHAT_TOOLS = json.loads(
    json.dumps(CHAT_TOOLS).replace('"city": {"type": "string"}', '"city": {"type": "integer"}')
)
WEATHER_TOOL: list[Any] = [
    {
        "name": "get_weather",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    }
]
SECRET = "sk-live-DO-NOT-LOG-4242"


@pytest.fixture(scope="module")
def upstream() -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES) as s:
        yield s


@dataclass
class Running:
    url: str
    records_path: Path
    process: subprocess.Popen[str]
    stderr: str = ""
    stdout: str = ""

    def records(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` records, waiting (at most 20 s) for them to be written."""
        deadline = time.monotonic() + 20
        while True:
            text = self.records_path.read_text() if self.records_path.exists() else ""
            # Only finished lines: the last one may still be being written.
            lines = text.split("\n")[:-1]
            if len(lines) >= count or time.monotonic() > deadline:
                return [json.loads(line) for line in lines]
            time.sleep(0.02)


# The relay ``proxy()`` runs: conftest.py runs every test that starts one on each relay.
RELAY = {"name": "python"}


@contextmanager
def proxy(
    upstream: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[Running]:
    records = tmp_path / f"records-{time.monotonic_ns()}.jsonl"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolstitch",
            "proxy",
            "--upstream",
            upstream,
            "--listen",
            "127.0.0.1:0",
            "--records",
            str(records),
            "--relay",
            RELAY["name"],
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    stdout, stderr = process.stdout, process.stderr
    assert stdout is not None and stderr is not None
    first = stderr.readline()
    # Both pipes are read while the proxy runs: a pipe left unread fills (64 KiB, a few
    # hundred log lines) and the proxy's next write to it blocks, and with it the
    # proxy's responses.
    out: list[str] = []
    err: list[str] = [first]
    readers = [
        threading.Thread(target=lambda: out.append(stdout.read()), daemon=True),
        threading.Thread(target=lambda: err.append(stderr.read()), daemon=True),
    ]
    for reader in readers:
        reader.start()
    assert "listening on http://127.0.0.1:" in first, first
    running = Running(first.split("listening on ")[1].split()[0], records, process)
    try:
        yield running
    finally:
        process.terminate()
        process.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=30)
        running.stdout = "".join(out)
        running.stderr = "".join(err)


def raw(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    """Status, raw (still encoded) body bytes and headers of one POST."""
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", url, json=body, headers=headers) as response,
    ):
        return response.status_code, b"".join(response.iter_raw()), response.headers


# ------------------------------------------------------------ pass-through


def test_streams_are_byte_identical_and_recorded(upstream: RecordingServer, tmp_path: Path) -> None:
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
    with proxy(upstream.url, tmp_path) as running:
        direct = raw(f"{upstream.url}/v1/chat/completions", request)
        through = raw(f"{running.url}/v1/chat/completions", request)
        assert through[:2] == direct[:2] == (200, OPENAI_CHAT)
        # Compressed bodies pass still compressed. The test server gzips each response
        # anew, with the time in its header (bytes 4-7): the rest must be identical.
        direct = raw(f"{upstream.url}/gzip/v1/chat/completions", request)
        through = raw(f"{running.url}/gzip/v1/chat/completions", request)
        assert through[2]["content-encoding"] == direct[2]["content-encoding"] == "gzip"
        assert through[1][:4] + through[1][8:] == direct[1][:4] + direct[1][8:]
        assert gzip.decompress(through[1]) == OPENAI_CHAT
        plain = openai.OpenAI(base_url=f"{upstream.url}/v1", api_key="k", max_retries=0)
        proxied = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        chunks = [
            [
                c.model_dump()
                for c in client.chat.completions.create(
                    model="gpt-4o", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
                )
            ]
            for client in (plain, proxied)
        ]
        assert chunks[0] == chunks[1]
        records = running.records(3)
    assert len(records) == 3
    for record in records:
        assert record["status"] == 200 and record["model"] == "gpt-4o"
        assert record["dialect"] == "openai-chat" and record["readable"] and record["complete"]
        assert record["valid"] is True and record["enforced"] is None
        assert [(c["id"], c["name"], c["valid"]) for c in record["calls"]] == [
            ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", True),
            ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", True),
        ]
        assert record["calls"][0]["arguments"] == (
            '{"city": "Edinburgh", "country": "GB", "units": "c"}'
        )
        assert record["bytes"] > 0 and record["duration_ms"] >= record["ttfb_ms"] >= 0


@pytest.mark.parametrize("mode", [(), ("--enforce",)], ids=["check", "enforce"])
def test_the_response_id_and_model_are_read_past_a_first_event_that_lacks_one(
    upstream: RecordingServer, tmp_path: Path, mode: tuple[str, ...]
) -> None:
    # The head the relay keeps for the record: its first event alone when that says
    # both (the recording), the bytes after it too when it does not (a later model).
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
    with proxy(upstream.url, tmp_path, *mode) as running:
        assert raw(f"{running.url}/v1/chat/completions", request)[1] == OPENAI_CHAT
        assert raw(f"{running.url}/late/v1/chat/completions", request)[1] == LATE_MODEL
        records = running.records(2)
    assert [(r["response_id"], r["response_model"]) for r in records] == 2 * [
        ("chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63", "gpt-4o-2024-08-06")
    ]


def test_invalid_calls_are_recorded_but_passed_without_enforce(
    upstream: RecordingServer, tmp_path: Path
) -> None:
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": STRICT_CHAT_TOOLS}
    with proxy(upstream.url, tmp_path) as running:
        assert raw(f"{running.url}/v1/chat/completions", request)[1] == OPENAI_CHAT
        (record,) = running.records(1)
    assert record["valid"] is False
    assert record["calls"][0]["valid"] is False
    assert '"Edinburgh" is not of type "integer"' in record["calls"][0]["validation_error"]
    assert record["calls"][1]["valid"] is True


def test_anthropic_and_whole_responses(upstream: RecordingServer, tmp_path: Path) -> None:
    with proxy(upstream.url, tmp_path) as running:
        finals = []
        for url in (upstream.url, running.url):
            client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
            with client.messages.stream(
                model="claude-x", max_tokens=9, messages=MESSAGES, tools=WEATHER_TOOL
            ) as stream:
                finals.append(stream.get_final_message().model_dump())
        assert finals[0] == finals[1]
        whole = [
            openai.OpenAI(base_url=f"{url}/whole/v1", api_key="k", max_retries=0)
            .chat.completions.create(model="gpt-4o", messages=MESSAGES)
            .model_dump()
            for url in (upstream.url, running.url)
        ]
        assert whole[0] == whole[1]
        messages_record, whole_record = running.records(2)
    assert messages_record["dialect"] == "anthropic" and messages_record["valid"] is True
    assert messages_record["model"] == "claude-x"
    assert messages_record["calls"][0]["id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert whole_record["streamed"] is False and whole_record["dialect"] == "openai-chat"
    # The request declared no tools: the call names an undeclared one.
    assert whole_record["valid"] is False
    assert "undeclared" in whole_record["calls"][0]["validation_error"]


def test_what_the_proxy_cannot_read_passes_through_untouched(
    upstream: RecordingServer, tmp_path: Path
) -> None:
    with proxy(upstream.url, tmp_path, "--enforce") as running:
        # Not JSON, not a provider's response, an error status, a 404: all unchanged.
        for path, body in (
            ("/text", "not json at all"),
            ("/status/500/v1/chat/completions", {"model": "m"}),
            ("/nothing-here", {"model": "m"}),
        ):
            with httpx.Client(timeout=30) as client:
                direct = client.post(f"{upstream.url}{path}", content=json.dumps(body))
                through = client.post(f"{running.url}{path}", content=json.dumps(body))
            assert (through.status_code, through.content) == (direct.status_code, direct.content)
        with pytest.raises(openai.InternalServerError):
            openai.OpenAI(
                base_url=f"{running.url}/status/500/v1", api_key="k", max_retries=0
            ).chat.completions.create(model="m", messages=MESSAGES, stream=True)
        records = running.records(4)
    reasons = [r["reason"] for r in records]
    assert reasons[0] == "not a provider's response (text/plain)"
    assert reasons[1] == reasons[3] == "the upstream answered HTTP 500; passed through"
    assert reasons[2] == "the upstream answered HTTP 404; passed through"
    assert not any(r["readable"] for r in records)


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with proxy(f"http://127.0.0.1:{port}", tmp_path) as running:
        with pytest.raises(openai.InternalServerError) as raised:
            openai.OpenAI(
                base_url=f"{running.url}/v1", api_key="k", max_retries=0
            ).chat.completions.create(model="m", messages=MESSAGES)
        assert raised.value.status_code == 502
        (record,) = running.records(1)
    assert record["status"] == 502 and "cannot be reached" in record["reason"]


# ------------------------------------------------------------ --enforce


def test_enforce_turns_an_invalid_call_into_the_sdks_exception(
    upstream: RecordingServer, tmp_path: Path
) -> None:
    with proxy(upstream.url, tmp_path, "--enforce") as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        seen = []
        with pytest.raises(openai.APIError) as raised:
            for chunk in client.chat.completions.create(
                model="gpt-4o", messages=MESSAGES, stream=True, tools=STRICT_CHAT_TOOLS
            ):
                seen.append(chunk)
        assert "call_JMW1whyEaYG438VE1OIflxA2 (GetWeatherArgs) is not valid" in str(raised.value)
        # Everything before the final event came through; no finish reason did.
        assert seen and all(c.choices[0].finish_reason is None for c in seen if c.choices)
        # A valid response comes through whole, byte for byte.
        request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
        assert raw(f"{running.url}/v1/chat/completions", request)[1] == OPENAI_CHAT
        # Anthropic: an undeclared tool.
        wrong_tool: list[Any] = [{**WEATHER_TOOL[0], "name": "get_time"}]
        claude = anthropic.Anthropic(base_url=running.url, api_key="k", max_retries=0)
        with (
            pytest.raises(anthropic.APIStatusError, match="toolu_01NRLabsLyVHZPKxbKvkfSMn"),
            claude.messages.stream(
                model="claude", max_tokens=9, messages=MESSAGES, tools=wrong_tool
            ) as stream,
        ):
            stream.get_final_message()
        # A whole response: a 502 the SDK does not retry (its call names a tool the
        # request did not declare).
        whole = openai.OpenAI(base_url=f"{running.url}/whole/v1", api_key="k", max_retries=2)
        with pytest.raises(openai.InternalServerError, match="call_1") as error:
            whole.chat.completions.create(model="gpt-4o", messages=MESSAGES, tools=CHAT_TOOLS)
        assert error.value.status_code == 502
        # A request that declared no tools is not guarded: passed untouched, and said so.
        untouched = whole.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        assert untouched.choices[0].message.tool_calls[0].id == "call_1"  # type: ignore[index]
        records = running.records(5)
    assert [r["enforced"] for r in records] == [
        "blocked",
        "passed",
        "blocked",
        "blocked",
        "unchecked",
    ]
    assert "GetWeatherArgs" in records[0]["blocked"]
    assert records[4]["unchecked"] == "the request declared no tools"
    # What the passed response says of itself, read from the head the guard released.
    assert (records[1]["response_id"], records[1]["response_model"]) == (
        "chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63",
        "gpt-4o-2024-08-06",
    )
    # max_retries=2, yet one request reached the proxy: x-should-retry: false held.
    assert len(records) == 5


def test_enforce_on_the_responses_api(upstream: RecordingServer, tmp_path: Path) -> None:
    def tool(name: str) -> list[Any]:
        schema = {"type": "object", "properties": {"country": {"type": "string"}}}
        return [{"type": "function", "name": name, "parameters": schema}]

    with proxy(upstream.url, tmp_path, "--enforce") as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        direct = openai.OpenAI(base_url=f"{upstream.url}/v1", api_key="k", max_retries=0)
        events = [
            [
                e.model_dump()
                for e in c.responses.create(
                    model="gpt-4o", input="capital?", stream=True, tools=tool("get_capital")
                )
            ]
            for c in (direct, client)
        ]
        assert events[0] == events[1] and events[0][-1]["type"] == "response.completed"
        with pytest.raises(openai.APIError, match="get_capital"):
            for _event in client.responses.create(
                model="gpt-4o",
                input="capital?",
                stream=True,
                tools=tool("get_population"),
            ):
                pass
        passed, blocked = running.records(2)
    assert passed["dialect"] == "openai-responses" and passed["enforced"] == "passed"
    assert (
        blocked["enforced"] == "blocked" and "undeclared tool 'get_capital'" in blocked["blocked"]
    )


def test_enforce_on_the_interactions_api(upstream: RecordingServer, tmp_path: Path) -> None:
    """The Gemini Interactions API: a valid call passes byte for byte; an invalid one
    ends the stream with the API's own error event, which a reader of the stream
    raises as the provider's error."""

    def request(location: str) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"location": {"type": location}}}
        tool = {"type": "function", "name": "getWeather", "parameters": schema}
        return {"model": "gemini-2.5-flash", "input": "weather?", "stream": True, "tools": [tool]}

    with proxy(upstream.url, tmp_path, "--enforce") as running:
        url = f"{running.url}/v1beta/interactions"
        status, body, _ = raw(url, request("string"))
        assert status == 200 and body == INTERACTIONS
        status, body, _ = raw(url, request("integer"))
        assert status == 200 and body != INTERACTIONS
        asm = Assembler("gemini-interactions")
        with pytest.raises(ProviderError, match="getWeather"):
            asm.feed_bytes(body)
        last = json.loads(body.rstrip().rsplit(b"data: ", 1)[1])
        assert last["event_type"] == "error" and last["error"]["status"] == "INVALID_TOOL_CALL"
        passed, blocked = running.records(2)
    assert passed["dialect"] == "gemini-interactions" and passed["enforced"] == "passed"
    assert blocked["enforced"] == "blocked" and "getWeather" in blocked["blocked"]


# ------------------------------------------------------------ disconnects and secrets


class _Slow(BaseHTTPRequestHandler):
    """An upstream that streams an SSE event every 20 ms for up to 10 s and notes when
    its client (the proxy) closes the connection."""

    protocol_version = "HTTP/1.1"
    closed = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        try:
            for _ in range(500):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            type(self).closed.set()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def test_a_client_that_disconnects_closes_the_upstream_request(tmp_path: Path) -> None:
    # The event is the class's: a run on the other relay may have set it already.
    _Slow.closed.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        upstream = f"http://127.0.0.1:{server.server_address[1]}"
        with proxy(upstream, tmp_path) as running:
            client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
            stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            for _, _chunk in zip(range(3), stream, strict=False):
                pass
            stream.close()
            assert _Slow.closed.wait(timeout=10), "the upstream request stayed open"
            (record,) = running.records(1)
    finally:
        server.shutdown()
        server.server_close()
    assert record["client_disconnected"] is True and record["complete"] is False


def test_a_log_longer_than_a_pipe_holds_never_stops_the_proxy(tmp_path: Path) -> None:
    """A log line per response outgrows a pipe (64 KiB) within a suite: ``proxy()``
    reads the proxy's output as it comes, or the proxy's next log line would block and
    the responses with it (a suite's last read once waited forever on it)."""
    path = "/v1/" + "x" * 2000
    with (
        RecordingServer({}) as upstream,
        proxy(upstream.url, tmp_path) as running,
        httpx.Client(timeout=30) as client,
    ):
        for _ in range(100):
            assert client.post(running.url + path, json={}).status_code == 404
    assert running.stderr.count(f"POST {path} 404") == 100


def test_keys_and_authorization_never_reach_a_record_or_a_log(
    upstream: RecordingServer, tmp_path: Path
) -> None:
    headers = {
        "Authorization": f"Bearer {SECRET}",
        "x-api-key": SECRET,
        "x-goog-api-key": SECRET,
        "api-key": SECRET,
    }
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True}
    with proxy(upstream.url, tmp_path) as running:
        raw(f"{running.url}/v1/chat/completions?key={SECRET}", request, headers)
        openai.OpenAI(
            base_url=f"{running.url}/v1", api_key=SECRET, max_retries=0
        ).chat.completions.create(model="gpt-4o", messages=MESSAGES)
        records = running.records(2)
    # The upstream did get them (the proxy forwards them)...
    assert any(r.path.endswith(f"key={SECRET}") for r in upstream.requests)
    # ...and neither the records nor anything the proxy printed has them.
    assert len(records) == 2 and records[0]["path"] == "/v1/chat/completions"
    written = running.records_path.read_text() + running.stderr + running.stdout
    assert SECRET not in written and "Bearer" not in written
    assert "POST /v1/chat/completions 200" in running.stderr


# ------------------------------------------------------------ spans and load


def test_spans_go_to_an_otlp_receiver(
    upstream: RecordingServer,
    tmp_path: Path,
    receiver: tuple[str, list[tuple[str, bytes]]],  # noqa: F811
) -> None:
    url, bodies = receiver
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
    with proxy(upstream.url, tmp_path, "--otel", env=env) as running:
        raw(f"{running.url}/v1/chat/completions", request)
        running.records(1)
    spans = []
    for path, body in bodies:
        assert path == "/v1/traces"
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        spans += [s for rs in export.resource_spans for ss in rs.scope_spans for s in ss.spans]
    (span,) = spans
    attributes = {a.key: a.value for a in span.attributes}
    assert span.name == "chat gpt-4o"
    assert attributes["gen_ai.request.model"].string_value == "gpt-4o"
    messages = json.loads(attributes["gen_ai.output.messages"].string_value)
    assert [p["name"] for p in messages[0]["parts"]] == ["GetWeatherArgs", "get_stock_price"]
    assert attributes["gen_ai.response.time_to_first_chunk"].double_value > 0


def test_fifty_concurrent_streams_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    streams = 50
    # The test server's listen backlog (5 by default) would refuse a burst of 50.
    monkeypatch.setattr(http_server._Server, "request_queue_size", 128)
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}

    async def one(client: httpx.AsyncClient, url: str) -> bytes:
        async with client.stream("POST", url, json=request) as response:
            return b"".join([chunk async for chunk in response.aiter_raw()])

    async def all_at_once(url: str) -> list[bytes]:
        limits = httpx.Limits(max_connections=streams)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            return await asyncio.gather(*(one(client, url) for _ in range(streams)))

    with (
        RecordingServer(ROUTES) as upstream,
        proxy(upstream.url, tmp_path, "--enforce") as running,
    ):
        bodies = asyncio.run(all_at_once(f"{running.url}/v1/chat/completions"))
        records = running.records(streams)
    assert bodies == [OPENAI_CHAT] * streams
    assert len(records) == streams
    assert all(r["complete"] and r["valid"] and r["enforced"] == "passed" for r in records)


def test_usage_errors_exit_with_status_2() -> None:
    for args, message in (
        (["--upstream", "ftp://example", "--listen", "127.0.0.1:0"], "http:// or https://"),
        (["--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1"], "HOST:PORT"),
        (["--listen", "127.0.0.1:0"], "--upstream"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "toolstitch", "proxy", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


class _BreaksOff(BaseHTTPRequestHandler):
    """An upstream that sends half of the chat stream and drops the connection."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        half = OPENAI_CHAT[: len(OPENAI_CHAT) // 2]
        self.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def test_an_upstream_that_breaks_off_is_not_passed_off_as_whole(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BreaksOff)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with proxy(f"http://127.0.0.1:{server.server_address[1]}", tmp_path) as running:
            request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True}
            with pytest.raises(httpx.RemoteProtocolError):
                raw(f"{running.url}/v1/chat/completions", request)
            (record,) = running.records(1)
    finally:
        server.shutdown()
        server.server_close()
    assert record["complete"] is False and record["bytes"] == len(OPENAI_CHAT) // 2
    assert record["reason"] == "the upstream response failed: RemoteProtocolError"
