"""``toolstitch proxy`` from the operator's side (issue 34): what the record and the log
line say after a hang, a disconnect or a drain that runs out; the flags for the upstream
timeout, the drain time and the guard's limits; the service name of spans; the model id
of a Bedrock path; an unreachable upstream's error; legacy ``functions`` requests; the
error shape of a response the request's dialect reads. All against a subprocess proxy
on 127.0.0.1 and real clients."""

from __future__ import annotations

import json
import os
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
from typing import Any

import anthropic
import httpx
import openai
import pytest
from botocore.exceptions import ClientError  # type: ignore[import-untyped]
from http_server import Recording, RecordingServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_otel import receiver  # noqa: F401 (a fixture)
from test_proxy import CHAT_TOOLS, proxy, raw
from test_proxy_guard import CONVERSE, EVENTSTREAM, NOVA, bedrock, raw_upstream, strict
from test_watch import MESSAGES, OPENAI_CHAT

EVENTS = OPENAI_CHAT.split(b"\n\n")


class _Trickle(BaseHTTPRequestHandler):
    """The chat recording, one event per ``pause`` seconds, then (``hang``) nothing
    more: the body is never ended; or (``linger``) the body's end sent that many
    seconds after its last event."""

    protocol_version = "HTTP/1.1"
    pause = 0.0
    hang = False
    linger = 0.0
    started = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i, event in enumerate(e for e in EVENTS if e):
                piece = event + b"\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                type(self).started.set()
                if self.hang and i == 2:
                    time.sleep(30)
                    return
                time.sleep(self.pause)
            time.sleep(self.linger)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def trickle(pause: float = 0.0, hang: bool = False, linger: float = 0.0) -> Iterator[str]:
    handler = type(
        "Trickle",
        (_Trickle,),
        {"pause": pause, "hang": hang, "linger": linger, "started": threading.Event()},
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def chat_request(tools: list[Any] = CHAT_TOOLS) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": tools}


# ------------------------------------------------------------ the record's verdict


def test_a_hung_upstream_is_recorded_as_blocked_after_the_upstream_timeout(
    tmp_path: Path,
) -> None:
    with (
        trickle(hang=True) as url,
        proxy(url, tmp_path, "--enforce", "--upstream-timeout", "1") as running,
    ):
        started = time.monotonic()
        with pytest.raises(httpx.RemoteProtocolError):
            raw(f"{running.url}/v1/chat/completions", chat_request())
        assert time.monotonic() - started < 20  # the flag, not the 600 s default
        (record,) = running.records(1)
    assert record["enforced"] == "blocked" and record["blocked_cause"] == "incomplete"
    assert record["blocked"] == "the upstream response failed: ReadTimeout"
    line = next(x for x in running.stderr.splitlines() if "POST /v1/chat/completions" in x)
    assert "blocked (incomplete: the upstream response failed: ReadTimeout)" in line
    assert "checked" not in line


def test_a_client_that_disconnects_under_enforce_is_recorded_as_such(tmp_path: Path) -> None:
    with trickle(pause=0.2) as url, proxy(url, tmp_path, "--enforce") as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
        )
        for _, _chunk in zip(range(2), stream, strict=False):
            pass
        stream.close()
        (record,) = running.records(1)
    assert record["client_disconnected"] is True and record["enforced"] == "blocked"
    assert record["blocked"] == "the client disconnected before the response ended"
    line = next(x for x in running.stderr.splitlines() if "POST /v1/chat/completions" in x)
    assert "blocked (incomplete: the client disconnected" in line and "checked" not in line


def test_a_client_that_leaves_on_done_before_the_upstream_ends_is_passed(
    tmp_path: Path,
) -> None:
    """The openai SDK closes its response on ``data: [DONE]``. When the upstream's own
    end comes later (here 3 s later), the client is gone before the proxy reads it: the
    record gives the verdict of the whole response the client read, not "the client
    disconnected before the response ended" (its twin, a client gone mid-stream, is
    ``test_a_client_that_disconnects_under_enforce_is_recorded_as_such``)."""
    with trickle(linger=3.0) as url, proxy(url, tmp_path, "--enforce") as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
        )
        chunks = list(stream)
        (record,) = running.records(1)
    assert sum(len(c.choices[0].delta.tool_calls or []) for c in chunks if c.choices) > 0
    assert record["client_disconnected"] is True
    assert record["enforced"] == "passed" and record["blocked"] is None
    line = next(x for x in running.stderr.splitlines() if "POST /v1/chat/completions" in x)
    assert "passed" in line and "client disconnected" in line


def test_twin_a_whole_response_under_enforce_is_still_passed(tmp_path: Path) -> None:
    with trickle() as url, proxy(url, tmp_path, "--enforce") as running:
        assert raw(f"{running.url}/v1/chat/completions", chat_request())[1] == OPENAI_CHAT
        (record,) = running.records(1)
    assert record["enforced"] == "passed" and record["blocked"] is None


@pytest.mark.parametrize("enforce", [True, False])
def test_a_stream_longer_than_the_drain_time_is_cut_said_and_recorded(
    tmp_path: Path, enforce: bool
) -> None:
    args = ["--drain-seconds", "1", *(["--enforce"] if enforce else [])]
    got: list[Any] = []
    with trickle(pause=0.5) as url, proxy(url, tmp_path, *args) as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)

        def read() -> None:
            try:
                for _chunk in client.chat.completions.create(
                    model="m", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
                ):
                    pass
                got.append("whole")
            except Exception as e:
                got.append(e)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(1.0)
        stopped = time.monotonic()
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(30) == 0
        assert time.monotonic() - stopped < 10
        reader.join(10)
        (record,) = running.records(1)
    (outcome,) = got
    assert outcome != "whole", "a cut stream passed for a whole one"
    assert "Traceback" not in running.stderr and "CancelledError" not in running.stderr
    assert "drain time of 1 s over" in record["reason"]
    if enforce:
        # The provider's own error ends it: the SDK raises it.
        assert isinstance(outcome, openai.APIError)
        # Blocked by the guard's end of a cut stream (its cause: what was cut).
        assert record["enforced"] == "blocked"
    else:
        assert record["complete"] is False


# ------------------------------------------------------------ flags


def test_limit_flags_bound_every_guard(tmp_path: Path) -> None:
    with trickle() as url, proxy(url, tmp_path, "--enforce", "--limit", "max_event_bytes=200") as p:
        status, body, _ = raw(f"{p.url}/v1/chat/completions", chat_request())
        (record,) = p.records(1)
    assert status == 502 and b"max_event_bytes" in body
    assert record["blocked_cause"] == "limit"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "max_everything=3"], "--limit max_everything=3"),
        (["--limit", "max_event_bytes=-1"], "positive whole number"),
        (["--upstream-timeout", "0"], "positive number of seconds"),
        (["--drain-seconds", "soon"], "not a number of seconds"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "proxy", "--upstream", "http://127.0.0.1:9", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "http://127.0.0.1:9", "--relay", "go"], "invalid choice: 'go'"),
    ],
)
def test_the_rust_relay_refuses_what_it_cannot_serve(args: list[str], message: str) -> None:
    """A relay the proxy does not have is the operator's error, never a silent fallback
    to the Python relay (an https:// upstream: tests/test_proxy_tls.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "proxy", "--listen", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stderr


def test_a_busy_port_is_one_line_on_the_rust_relay_too() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                *(sys.executable, "-m", "toolstitch", "proxy", "--relay", "rust"),
                *("--upstream", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{port}"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_help_says_what_enforce_holds() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "proxy", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = " ".join(done.stdout.split())
    assert "final event" not in text
    assert "hold each event that completes a call until the call is checked" in text
    for flag in ("--upstream-timeout", "--drain-seconds", "--limit"):
        assert flag in text


def test_otel_service_name_is_honoured(
    tmp_path: Path,
    receiver: tuple[str, list[tuple[str, bytes]]],  # noqa: F811
) -> None:
    url, bodies = receiver
    names = []
    for extra in ({"OTEL_SERVICE_NAME": "edge-gateway"}, {}):
        bodies.clear()
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_BSP_SCHEDULE_DELAY": "100", **extra}
        with trickle() as upstream, proxy(upstream, tmp_path, "--otel", env=env) as running:
            raw(f"{running.url}/v1/chat/completions", chat_request())
            running.records(1)
        export = ExportTraceServiceRequest()
        export.ParseFromString(bodies[0][1])
        attributes = {a.key: a.value for a in export.resource_spans[0].resource.attributes}
        names.append(attributes["service.name"].string_value)
    # Its own name only when the environment gives none.
    assert names == ["edge-gateway", "toolstitch-proxy"]


# ------------------------------------------------------------ what the record names


def test_a_bedrock_model_id_is_recorded_whole(tmp_path: Path) -> None:
    route = f"/model/{NOVA.replace(':', '%3A')}/converse-stream"
    with (
        RecordingServer({route: Recording(CONVERSE, EVENTSTREAM)}) as upstream,
        proxy(upstream.url, tmp_path) as running,
    ):
        events = list(bedrock(running.url).converse_stream(modelId=NOVA, messages=[])["stream"])
        (record,) = running.records(1)
    assert any("messageStop" in e for e in events)
    assert record["model"] == NOVA == "us.amazon.nova-pro-v1:0"


def test_twin_a_gemini_model_is_cut_at_its_method(tmp_path: Path) -> None:
    with trickle() as url, proxy(url, tmp_path) as running:
        httpx.post(
            f"{running.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            content=b"{}",
            timeout=30,
        )
        (record,) = running.records(1)
    assert record["model"] == "gemini-2.5-flash"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_an_unreachable_upstream_is_an_upstream_error_in_each_providers_shape(
    tmp_path: Path,
) -> None:
    with proxy(f"http://127.0.0.1:{_free_port()}", tmp_path, "--enforce") as running:
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as chat_error:
            client.chat.completions.create(model="m", messages=MESSAGES, tools=CHAT_TOOLS)
        claude = anthropic.Anthropic(base_url=running.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.InternalServerError) as claude_error:
            claude.messages.create(model="c", max_tokens=9, messages=MESSAGES)
        with pytest.raises(ClientError) as aws_error:
            bedrock(running.url).converse_stream(modelId=NOVA, messages=[])
    body: Any = chat_error.value.body
    assert chat_error.value.status_code == 502 and body["type"] == "upstream_error"
    assert "cannot be reached" in body["message"]
    assert claude_error.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert aws_error.value.response["Error"]["Code"] == "ServiceUnavailableException"
    for error in (chat_error.value, claude_error.value):
        assert "invalid_tool_call" not in json.dumps(error.body)


# ------------------------------------------------------------ what the guard reads


def _legacy(arguments: str, name: str = "read_file") -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    return (
        chunk({"role": "assistant", "function_call": {"name": name, "arguments": ""}})
        + chunk({"function_call": {"arguments": arguments}})
        + chunk({}, "function_call")
        + b"data: [DONE]\n\n"
    )


FUNCTIONS = [
    {
        "name": "read_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "pattern": "^/tmp/"}},
            "required": ["path"],
        },
    }
]


def test_legacy_functions_are_guarded_like_tools(tmp_path: Path) -> None:
    routes = {
        "/bad/v1/chat/completions": Recording(_legacy('{"path": "/etc/passwd"}')),
        "/good/v1/chat/completions": Recording(_legacy('{"path": "/tmp/a"}')),
    }
    with RecordingServer(routes) as upstream, proxy(upstream.url, tmp_path, "--enforce") as p:
        request = {"model": "m", "messages": MESSAGES, "stream": True, "functions": FUNCTIONS}
        assert raw(f"{p.url}/good/v1/chat/completions", request)[1] == _legacy('{"path": "/tmp/a"}')
        _, body, _ = raw(f"{p.url}/bad/v1/chat/completions", {**request, "function_call": "auto"})
        good, bad = p.records(2)
    assert good["enforced"] == "passed" and good["calls"][0]["name"] == "read_file"
    assert bad["enforced"] == "blocked" and "does not match" in bad["blocked"]
    assert b'"finish_reason": "function_call"' not in body and b'{"error":' in body


def test_twin_functions_that_cannot_be_read_refuse_every_call(tmp_path: Path) -> None:
    routes = {"/v1/chat/completions": Recording(_legacy('{"path": "/tmp/a"}'))}
    with RecordingServer(routes) as upstream, proxy(upstream.url, tmp_path, "--enforce") as p:
        request = {"model": "m", "messages": MESSAGES, "stream": True, "functions": "read_file"}
        _, body, _ = raw(f"{p.url}/v1/chat/completions", request)
        (record,) = p.records(1)
    assert record["enforced"] == "blocked" and "cannot be read" in record["blocked"]
    assert b'"finish_reason": "function_call"' not in body


def _named(event: str, body: bytes) -> bytes:
    return b"".join(
        b"event: " + event.encode() + b"\n" + e + b"\n\n" for e in body.split(b"\n\n") if e
    )


def test_a_chat_stream_with_event_names_is_read_and_refused_as_chat(tmp_path: Path) -> None:
    """A chat client reads chat chunks from a chat path: the guard reads the body as
    the request's dialect, and a refusal reaches the OpenAI client in OpenAI's shape
    (not as a Bedrock 424)."""
    body = _named("chunk", OPENAI_CHAT)
    with (
        raw_upstream(body, {"Content-Type": "text/event-stream"}) as url,
        proxy(url, tmp_path, "--enforce") as running,
    ):
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.APIError, match="GetWeatherArgs") as raised:
            for _chunk in client.chat.completions.create(
                model="m", messages=MESSAGES, stream=True, tools=strict(CHAT_TOOLS)
            ):
                pass
        (record,) = running.records(1)
    assert "ModelErrorException" not in str(raised.value)
    assert record["dialect"] == "openai-chat" and record["blocked_cause"] == "invalid-call"


_LONG_PATH = "/v1/" + "x" * 2000


@contextmanager
def _hundred_posts(records: Path, which: str) -> Iterator[list[Any]]:
    """A subprocess proxy on ``which`` relay writing its records to ``records``, sent 100
    requests with a long path (each answered 404 by an upstream that knows none) while it
    runs; then stopped. Yields a list that holds, once stopped, the process and the rest
    of its standard error."""
    command = [sys.executable, "-m", "toolstitch", "proxy", "--listen", "127.0.0.1:0"]
    command += ["--drain-seconds", "1", "--records", str(records), "--relay", which]
    ended: list[Any] = []
    with RecordingServer({}) as upstream:
        process = subprocess.Popen(
            [*command, "--upstream", upstream.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stderr is not None
            first = process.stderr.readline()
            url = first.split("listening on ")[1].split()[0]
            with httpx.Client(timeout=30) as client:
                for _ in range(100):
                    assert client.post(url + _LONG_PATH, json={}).status_code == 404
            yield ended
        finally:
            process.terminate()
            _, rest = process.communicate(timeout=60)
            ended.extend([process, rest])


@pytest.mark.parametrize("which", ["python", "rust"])
def test_a_log_nobody_reads_holds_up_no_response(tmp_path: Path, which: str) -> None:
    """The Rust relay runs the end hook (the record, the log line) off the runtime's
    workers, the Python relay writes records and log lines on threads of their own: with
    the log on a pipe nobody reads (full after some 30 of these lines, each line's write
    then blocking), every response still reaches its client and every record is written.
    (Run on the end hook's worker, two blocked lines stopped a 2-core machine's Rust
    relay; written on the event loop, the Python relay stopped at the first.)"""
    records = tmp_path / "records.jsonl"
    with _hundred_posts(records, which) as ended:
        deadline = time.monotonic() + 30
        while records.read_text().count("\n") < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert records.read_text().count("\n") == 100
    _, rest = ended
    assert rest.count(f"POST {_LONG_PATH} 404") == 100


@pytest.mark.parametrize("which", ["python", "rust"])
def test_records_a_relay_could_not_write_by_its_exit_make_it_fail(
    tmp_path: Path, which: str
) -> None:
    """Records go to a pipe whose reader stopped reading (full after some 30 of them):
    every response still reaches its client, and once stopped the proxy waits (the
    Python relay 5 seconds for its records' writer, the Rust relay the drain's backstop
    for the responses' end hooks), then exits with status 1 and says records were not
    written, never 0 as though every one had been."""
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    # Opened for reading first, so the proxy's open for writing does not wait; never read.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with _hundred_posts(fifo, which) as ended:
            pass
    finally:
        os.close(reader)
    process, rest = ended
    assert process.returncode == 1, rest
    said = {
        "python": "records still queued 5 s after the server stopped were not written",
        "rust": "responses' records and log lines were still being written when the server",
    }
    assert said[which] in rest
    assert "Traceback" not in rest and "Fatal Python error" not in rest
