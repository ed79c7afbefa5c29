"""A real HTTP server on 127.0.0.1 that answers every POST with the current case's stream.

The SDK adapters point their real clients at it, so each library reads the bytes
through its own HTTP and SSE code, as its users' applications do.
"""

from __future__ import annotations

import json
import threading
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
