"""A real HTTP server on 127.0.0.1 that answers every POST with the current case's stream.

The SDK adapters point their real clients at it, so each library reads the bytes
through its own HTTP and SSE code, as its users' applications do.
"""

from __future__ import annotations

import json
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from suite import Case


def as_sse(case: Case, *, named: bool = False, done: bool = False) -> bytes:
    """The case's bytes as a server streams them (README.md, "Transports").

    A JSON-lines recording (one event per line, the SSE ``data:`` prefix stripped, as
    vercel/ai keeps its fixtures) is sent the way its source's own test sends it:
    each line as one ``data:`` event, with ``event: <type>`` first for dialects whose
    clients dispatch on the event name (Anthropic).
    """
    if case.transport == "sse":
        return case.data
    out = []
    for line in case.data.splitlines():
        if not line.strip():
            continue
        head = b""
        if named:
            try:
                kind = json.loads(line).get("type")
            except (ValueError, AttributeError):
                kind = None
            if isinstance(kind, str):
                head = b"event: " + kind.encode() + b"\n"
        out.append(head + b"data: " + line + b"\n\n")
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def as_eventstream(case: Case) -> bytes:
    """A Bedrock ConverseStream recording kept as JSON lines, in AWS event-stream frames.

    vercel/ai keeps each event as one line ``{"<eventType>": {...}}``; Bedrock sends
    it as one frame whose ``:event-type`` header is the key and whose payload is the
    value (the frames' CRCs computed as the transport's spec says).
    """
    if case.transport == "eventstream":
        return case.data
    out = b""
    for line in case.data.splitlines():
        if not line.strip():
            continue
        ((kind, value),) = json.loads(line).items()
        out += _frame(kind, json.dumps(value, separators=(",", ":")).encode())
    return out


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v


def _frame(event_type: str, payload: bytes) -> bytes:
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    prelude = struct.pack(">II", 12 + len(headers) + len(payload) + 4, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


class StreamServer:
    def __init__(self) -> None:
        self.body = b""
        self.content_type = "text/event-stream"
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                body = owner.body
                self.send_response(200)
                self.send_header("content-type", owner.content_type)
                self.send_header("content-length", str(len(body)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def serve(self, body: bytes, content_type: str = "text/event-stream") -> None:
        self.body, self.content_type = body, content_type

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
