"""The ASGI application: one ``_Exchange`` per request, plumbing around the core's guard."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx

from toolstitch._toolstitch import _RESPONSE_HEAD_BYTES
from toolstitch.guard import Blocked, _blocked

from .exchange import GUARD_LIMITS, Exchange, Headers, health, whole
from .records import Record
from .toolsets import ToolsetCache
from .writer import Writer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_log = logging.getLogger("toolstitch.proxy")

HEALTH_PATH = "/toolstitch/health"


class Proxy:
    """The ASGI application (see ``toolstitch.proxy``).

    ``upstream`` is the base URL requests go to (its path is prefixed to theirs);
    ``on_record`` gets each response's record; ``enforce`` guards every response whose
    request declared tools; ``check=False`` turns every check off (a plain pass-through
    on the same server and client, for comparison); ``tracer`` (an OpenTelemetry
    ``Tracer``) gets one span per response. ``upstream_timeout`` bounds each wait on
    the upstream (connecting, and each read of its response), in seconds; ``limits``
    (names in ``GUARD_LIMITS``) bound every guard and side copy.
    """

    def __init__(
        self,
        upstream: str,
        *,
        enforce: bool = False,
        on_record: Callable[[Record], None] | None = None,
        check: bool = True,
        tracer: Any = None,
        client: httpx.AsyncClient | None = None,
        upstream_timeout: float = 600.0,
        limits: dict[str, int] | None = None,
    ) -> None:
        url = httpx.URL(upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"the upstream must be an http:// or https:// URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.https = url.scheme == "https"
        self.enforce = enforce
        self.on_record = on_record
        self.check = check
        self.tracer = tracer
        self._client = client
        self.open_streams = 0
        self.draining = False
        self.upstream_timeout = upstream_timeout
        unknown = set(limits or {}) - GUARD_LIMITS
        if unknown:
            raise ValueError(f"unknown limits: {', '.join(sorted(unknown))}")
        self.limits = dict(limits or {})
        # The tool sets of the requests' declarations, each compiled once.
        self.toolsets = ToolsetCache()
        # Set when a drain's time is over: every open exchange then ends its response.
        self.cut: asyncio.Event | None = None
        self.drain_seconds: float | None = None
        # The records' and the log's writers, when they write off the event loop.
        self._writers: tuple[Writer, Writer] | None = None

    def begin_drain(self, seconds: float) -> None:
        """Stop: the health check says draining, and responses still open after
        ``seconds`` are ended (each exchange records why). Call on the event loop."""
        self.draining = True
        self.drain_seconds = seconds
        cut = self._cut_event()
        asyncio.get_running_loop().call_later(seconds, cut.set)

    def _cut_event(self) -> asyncio.Event:
        if self.cut is None:
            self.cut = asyncio.Event()
        return self.cut

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
            self._client = httpx.AsyncClient(
                # Small writes (an event, a request's body after its headers) go out at
                # once: no Nagle delay waiting for the peer's delayed ACK.
                transport=httpx.AsyncHTTPTransport(
                    limits=limits,
                    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                    # A connection that could not be made is tried once more: no byte
                    # of the request went out. Anything later is the client's to retry.
                    retries=1,
                    # An https:// upstream: httpx's trusted certificates (SSL_CERT_FILE,
                    # else SSL_CERT_DIR, else certifi's bundle). An http:// one is never
                    # reached over TLS: its client reads no certificate and trusts none.
                    verify=True if self.https else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT),
                ),
                timeout=httpx.Timeout(
                    self.upstream_timeout, connect=min(30.0, self.upstream_timeout)
                ),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            if scope.get("path") == HEALTH_PATH and scope.get("method") == "GET":
                await self._health(send)
                return
            self.open_streams += 1
            try:
                await _Exchange(self, scope, receive, send).run()
            finally:
                self.open_streams -= 1

    async def _health(self, send: Send) -> None:
        status, body = health(self.draining, self.open_streams, self.enforce)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(body)),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def write_off_loop(self) -> None:
        """From now on records and log lines are written on threads of their own (see
        ``writer``), each in order; ``close_writers`` lets them finish."""
        self._writers = (Writer("toolstitch-proxy-records"), Writer("toolstitch-proxy-log"))

    def close_writers(self, timeout: float) -> tuple[bool, bool]:
        """Lets the records and log lines still queued be written (up to ``timeout``
        seconds each): whether all records were, and whether all log lines were."""
        writers, self._writers = self._writers, None
        if writers is None:
            return True, True
        records, log = writers
        return records.close(timeout), log.close(timeout)

    def emit(self, record: Record, line: str) -> None:
        """Writes a response's record, then logs its line (each on its own thread once
        ``write_off_loop`` was called)."""
        if self._writers is None:
            self._write_record(record)
            _log.info("%s", line)
            return
        records, log = self._writers
        records.put(functools.partial(self._write_record, record))
        log.put(functools.partial(_log.info, "%s", line))

    def _write_record(self, record: Record) -> None:
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception:
                _log.exception("toolstitch proxy: writing a record failed")


class _Exchange(Exchange):
    """One request and its response, relayed in Python (ASGI and httpx)."""

    def __init__(self, proxy: Proxy, scope: Scope, receive: Receive, send: Send) -> None:
        super().__init__(
            proxy,
            scope.get("method", "GET"),
            scope.get("path", "/"),
            scope.get("raw_path"),
            scope.get("query_string", b""),
            scope.get("headers", []),
        )
        self.receive = receive
        self.send = send

    # ---------------------------------------------------------------- the flow

    async def run(self) -> None:
        body = await self._request_body()
        if body is None:
            return  # the client went away before its request was complete
        self.read_request(body)
        url, headers = self.upstream_request()
        client = self.proxy.client
        request = client.build_request(self.record["method"], url, headers=headers, content=body)
        self.timing.restart()
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as e:
            await self._unreachable(e)
            return
        try:
            await self._relay(response)
        finally:
            await response.aclose()
            self.finish()

    async def _request_body(self) -> bytes | None:
        chunks = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _relay(self, response: httpx.Response) -> None:
        status = response.status_code
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if self.guards(status, media):
            await self._guarded(response, status, media, encoding)
        else:
            await self._passed_through(response, status, media, encoding)

    # ------------------------------------------------------- the guarded path

    async def _guarded(
        self, response: httpx.Response, status: int, media: str, encoding: str
    ) -> None:
        """The body through the core's guard: what it releases goes out as it comes; a
        block ends the response in the provider's shape."""
        refused = self.new_guard(media, encoding)
        if refused is not None or self.guard is None:
            if refused is not None:
                await self._whole(*refused)
            return
        guard = self.guard
        headers = self.guarded_headers(response.headers.raw)

        send = self.send
        head = self.head

        async def forward(data: bytes, blocked: Any) -> bool:
            """Sends what the guard released, then ends a blocked response: ``False``
            when it did."""
            if data:
                if not self.response_started:
                    await self._start(status, headers)
                if len(head) < _RESPONSE_HEAD_BYTES:
                    self.keep_head(data)
                await send({"type": "http.response.body", "body": data, "more_body": True})
            ended = _blocked(blocked)
            if ended is None:
                return True
            await self._end_blocked(ended)
            return False

        async def end() -> None:
            if not await forward(*guard.finish()):
                return
            if not self.response_started:
                await self._start(status, headers)
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def relay() -> None:
            # The per-read path: one core call, one send; the counts are written once.
            feed = guard.feed
            mark = self.timing.chunk if self.span is not None else None
            size = reads = 0
            try:
                async for chunk in response.aiter_raw():
                    if mark is not None:
                        mark()
                    size += len(chunk)
                    reads += 1
                    data, blocked = feed(chunk)
                    if blocked is not None:
                        await forward(data, blocked)
                        return
                    if data:
                        if not self.response_started:
                            await self._start(status, headers)
                        if len(head) < _RESPONSE_HEAD_BYTES:
                            self.keep_head(data)
                        await send({"type": "http.response.body", "body": data, "more_body": True})
            finally:
                self.record["bytes"] += size
                self.record["chunks"] += reads
            await end()

        cut = await self._pump(relay)
        if cut and guard.outcome == "open":
            # The drain time is over: the stream ends as a cut one does (the provider's
            # error when it was not whole), never as a whole one.
            await end()
            self.record["reason"] = self.record["reason"] or self.cut_reason()
        failed = self.upstream_failed()
        if failed is not None:
            await self._whole(*failed)
            return
        self.guarded_verdict()

    async def _end_blocked(self, blocked: Blocked) -> None:
        self.blocked_record(blocked)
        if not self.response_started:
            await self._whole(*whole_blocked(blocked))
            return
        await self.send({"type": "http.response.body", "body": blocked.tail, "more_body": False})

    async def _whole(self, status: int, headers: Headers, body: bytes) -> None:
        await self._start(status, headers)
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    # --------------------------------------------------- the pass-through path

    async def _passed_through(
        self, response: httpx.Response, status: int, media: str, encoding: str
    ) -> None:
        """The body forwarded as it comes, byte for byte; a copy read on the side."""
        self.start_copy(status, media, encoding)
        await self._start(status, self.passed_headers(response.headers.raw))
        send = self.send
        copy = self.copy if self.asm is not None else None

        async def relay() -> None:
            # The per-read path: one send, and the side copy's core call.
            mark = self.timing.chunk if self.span is not None else None
            size = reads = 0
            try:
                async for chunk in response.aiter_raw():
                    if mark is not None:
                        mark()
                    size += len(chunk)
                    reads += 1
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    if copy is not None:
                        copy(chunk)
            finally:
                self.record["bytes"] += size
                self.record["chunks"] += reads
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        if await self._pump(relay):
            # Cut at the drain time: the response is left unfinished (the server drops
            # the connection), so that it cannot pass for a whole one.
            self.record["reason"] = self.record["reason"] or self.cut_reason()

    # ---------------------------------------------------------------- plumbing
    async def _pump(self, relay: Callable[[], Awaitable[None]]) -> bool:
        """Runs ``relay`` (the body's reads, each relayed as it comes) until it is done,
        the client disconnects (which cancels the read and so closes the upstream
        request) or the proxy's drain time is over (then it says ``True``: cut)."""
        disconnected = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await self.receive()
                if message["type"] == "http.disconnect":
                    disconnected.set()
                    return

        relaying = asyncio.ensure_future(relay())
        watching = asyncio.ensure_future(watch())
        cutting = asyncio.ensure_future(self.proxy._cut_event().wait())
        tasks = {relaying, watching, cutting}
        done: set[asyncio.Future[Any]] = set()
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if relaying not in done and watching in done:
                self.record["client_disconnected"] = True
        finally:
            for task in tasks:
                task.cancel()
                # Its outcome is read below; waiting for it must not raise it here.
                await asyncio.wait({task})
        cut = cutting in done and relaying not in done and watching not in done
        exception = None if relaying.cancelled() else relaying.exception()
        if isinstance(exception, httpx.HTTPError):
            # The upstream broke off: the client's response is left unfinished too (the
            # server drops the connection), so that it cannot pass for a whole one;
            # nothing the guard held goes out.
            self.read_error = f"the upstream response failed: {type(exception).__name__}"
        elif exception is not None:
            raise exception
        return cut

    async def _start(self, status: int, headers: Headers) -> None:
        self.record["ttfb_ms"] = (time.time() - self.started) * 1000
        self.response_started = True
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def _unreachable(self, error: httpx.HTTPError) -> None:
        answer = self.unreachable(type(error).__name__, _tls_failure(error))
        with contextlib.suppress(Exception):
            await self._whole(*answer)
        self.finish()


def _tls_failure(error: BaseException) -> str | None:
    """What a failed TLS handshake said, from the exceptions ``error`` was raised from
    (httpx wraps httpcore's, which wraps the ``ssl`` module's), or ``None``."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return getattr(seen, "verify_message", None) or seen.reason or str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def whole_blocked(blocked: Blocked) -> tuple[int, Headers, bytes]:
    """A blocked response that had sent nothing: the guard's whole error."""
    return whole(blocked.status, list(blocked.headers), blocked.body)
