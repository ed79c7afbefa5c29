"""A real HTTP/1.1 server on 127.0.0.1 that streams recorded provider responses.

Each response is sent with chunked transfer encoding in pieces of 1 to 9 bytes, one
chunk per piece, each written straight to the socket (unbuffered, Nagle off), so a
client really receives its body over many reads. The server runs in a daemon thread
and stops when its ``with`` block ends.

Paths pick a recording (``routes``); a prefix changes how it is sent:

- ``/gzip/<path>``: the body gzip-compressed, with ``Content-Encoding: gzip``;
- ``/status/<code>/<path>``: that HTTP status, with the recording as the body.

A route may be a function of the request's JSON body that returns the recording (an
agent loop's second request, carrying the tool results, gets the final answer).

Every request (method, path, JSON body) is kept in ``requests``. With ``tls`` (a server
``ssl.SSLContext``) it serves https: ``url`` then starts ``https://``.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import ssl
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Recording:
    """One response body and its content type."""

    body: bytes
    content_type: str = "text/event-stream"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    json: Any


Route = Recording | Callable[[Any], Recording]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    routes: dict[str, Route]
    requests: list[Request]
    lock: threading.Lock

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stops reading early (a test of an error path) closes the
        # connection under the writer, and a client that refuses the certificate ends
        # the handshake: expected, not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)


_STATUS = re.compile(r"/status/(\d{3})(/.*)")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests check what the clients got."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body_json = json.loads(raw) if raw else None
        with self.server.lock:
            self.server.requests.append(Request(self.command, self.path, body_json))
        path = self.path.split("?", 1)[0]
        compress = path.startswith("/gzip/")
        if compress:
            path = path.removeprefix("/gzip")
        status = 200
        m = _STATUS.fullmatch(path)
        if m:
            status, path = int(m.group(1)), m.group(2)
        route = self.server.routes.get(path)
        recording = route(body_json) if callable(route) else route
        if recording is None:
            status = 404
            recording = Recording(
                json.dumps({"error": {"message": f"no recording at {path}"}}).encode(),
                "application/json",
            )
        body = gzip.compress(recording.body) if compress else recording.body
        self.send_response(status)
        self.send_header("Content-Type", recording.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        if compress:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        # The same cuts for the same path, so a failure can be replayed.
        rng = random.Random(path)
        at = 0
        while at < len(body):
            piece = body[at : at + rng.randint(1, 9)]
            at += len(piece)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class RecordingServer:
    """``with RecordingServer(routes) as server:`` serves ``routes`` at ``server.url``."""

    def __init__(self, routes: Mapping[str, Route], tls: ssl.SSLContext | None = None) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._scheme = "http"
        if tls is not None:
            # The handshake runs on the request's own thread (its first read), so a
            # client that refuses the certificate never holds up the others.
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
            self._scheme = "https"
        self._server.routes = dict(routes)
        self._server.requests = []
        self._server.lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    @property
    def requests(self) -> list[Request]:
        with self._server.lock:
            return list(self._server.requests)

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
