"""``toolstitch proxy --enforce`` under load (issue 34): many concurrent long streams, slow
readers and a machine whose cores are busy, every body compared byte for byte. Bounded:
50 streams of 600 events (about 9 MB in all) on 127.0.0.1, a few seconds of CPU burners.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
from test_proxy import CHAT_TOOLS, proxy
from test_watch import MESSAGES

STREAMS = 50
EVENTS = 600


def long_stream(events: int = EVENTS) -> bytes:
    """A chat stream of ``events`` events: text deltas, one valid call, its finish."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": "chatcmpl-load",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    start = {
        "index": 0,
        "id": "call_load",
        "type": "function",
        "function": {"name": "GetWeatherArgs", "arguments": ""},
    }
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": f"word {i} "}) for i in range(events - 5)]
    out.append(chunk({"tool_calls": [start]}))
    for piece in ('{"city": ', '"Edinburgh"', "}"):
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls"))
    return b"".join(out) + b"data: [DONE]\n\n"


BODY = long_stream()


class _Streamer(BaseHTTPRequestHandler):
    """Sends ``BODY`` in chunks of 1 to 40 events, each written as it is cut."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = BODY.split(b"\n\n")[:-1]
        rng = random.Random(self.path)
        at = 0
        try:
            while at < len(events):
                step = rng.randint(1, 40)
                piece = b"".join(e + b"\n\n" for e in events[at : at + step])
                at += step
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@contextmanager
def streamer(backlog: int = 256) -> Iterator[str]:
    """The upstream; ``backlog`` is its listen queue (``http.server``'s default is 5: a
    burst past it finds connections reset before the server reads a byte)."""
    server_type = type("Server", (_Server,), {"request_queue_size": backlog})
    server = server_type(("127.0.0.1", 0), _Streamer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def busy_cores() -> Iterator[None]:
    """One CPU burner per core (each stops itself after 60 s at most)."""
    code = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


async def _read(client: httpx.AsyncClient, url: str, slow: float) -> bytes:
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
    async with client.stream("POST", url, json=request) as response:
        out = []
        async for piece in response.aiter_raw(chunk_size=512):
            out.append(piece)
            if slow:
                await asyncio.sleep(slow)
        return b"".join(out)


async def _all(url: str) -> list[bytes | BaseException]:
    limits = httpx.Limits(max_connections=STREAMS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        # A third of the readers take a pause after every read: their connections
        # fill, and the proxy's writes wait on them.
        tasks = [
            _read(client, f"{url}/s{i}/v1/chat/completions", 0.002 if i % 3 == 0 else 0.0)
            for i in range(STREAMS)
        ]
        return await asyncio.gather(*tasks, return_exceptions=True)


def test_many_long_streams_with_slow_readers_on_busy_cores_lose_nothing(
    tmp_path: Path,
) -> None:
    with (
        streamer() as upstream,
        proxy(upstream, tmp_path, "--enforce") as running,
        busy_cores(),
    ):
        bodies = asyncio.run(_all(running.url))
        records = running.records(STREAMS)
    wrong = [
        (i, b if isinstance(b, BaseException) else len(b))
        for i, b in enumerate(bodies)
        if b != BODY
    ]
    assert not wrong, f"{len(wrong)} of {STREAMS} bodies differ (index, error or length): {wrong}"
    assert len(records) == STREAMS
    assert all(r["enforced"] == "passed" and r["complete"] for r in records), [
        (r["path"], r["enforced"], r["blocked"], r["reason"]) for r in records
    ]


def test_an_upstream_that_resets_connections_under_a_burst_loses_nothing_an_sdk_reads(
    tmp_path: Path,
) -> None:
    """The issue's 148-byte bodies: an upstream with ``http.server``'s listen queue of 5,
    a burst of 50 on busy cores, and some connections reset before the upstream read a
    byte. Each such response is the provider's retryable server error (never the
    guard's invalid-call error, never a stream cut short), recorded as unchecked with
    why; the real ``openai`` client retries it and ends with every call."""
    error_prefix = b'{"error": {"message": "toolstitch proxy: the upstream cannot be reached: '
    with (
        streamer(backlog=5) as upstream,
        proxy(upstream, tmp_path, "--enforce") as running,
        busy_cores(),
    ):
        bodies = asyncio.run(_all(running.url))
        records = running.records(STREAMS)
        finals = asyncio.run(_sdk_calls(running.url))
    for body in bodies:
        assert body == BODY or (
            isinstance(body, bytes)
            and body.startswith(error_prefix)
            and json.loads(body)["error"]["type"] == "upstream_error"
        ), body
    for record in records:
        assert record["enforced"] == "passed" or (
            record["enforced"] == "unchecked"
            and record["status"] == 502
            and record["unchecked"].startswith("the upstream cannot be reached: ")
        ), record
    assert finals == [("GetWeatherArgs", '{"city": "Edinburgh"}')] * STREAMS


async def _sdk_calls(url: str) -> list[tuple[str, str]]:
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=5)

    async def one() -> tuple[str, str]:
        async with client.chat.completions.stream(
            model="gpt-4o", messages=MESSAGES, tools=CHAT_TOOLS
        ) as stream:
            final = await stream.get_final_completion()
        (call,) = final.choices[0].message.tool_calls or []
        assert call.type == "function"
        return call.function.name, call.function.arguments

    try:
        return list(await asyncio.gather(*(one() for _ in range(STREAMS))))
    finally:
        await client.close()
