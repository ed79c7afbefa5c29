"""The ASGI application: one ``_Exchange`` per request, plumbing around the core's guard."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import time
import urllib.parse
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx

from toolstitch._toolstitch import _RESPONSE_HEAD_BYTES, _Guard, _response_facts
from toolstitch.errors import ToolstitchError
from toolstitch.guard import Blocked, _blocked, dialect_for_path, error_response, transport_for
from toolstitch.messages import AssembledMessage
from toolstitch.otel import StreamTiming
from toolstitch.streams import Assembler
from toolstitch.tools import Toolset

from . import records
from .records import Record, one_line
from .spans import ResponseSpan
from .toolsets import ToolsetCache, declared_tools, refuse_every_call
from .upstream import upstream_error

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_log = logging.getLogger("toolstitch.proxy")

# Never forwarded (RFC 9110 7.6.1), and never sent twice: the server and the client set
# them for their own connection.
_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
_READ_TYPES = ("text/event-stream", "application/json", "application/vnd.amazon.eventstream")
# Gemini names the model before a method (`/models/gemini-2.5-flash:streamGenerateContent`);
# Bedrock's model id is a whole path segment, `:` included (`us.amazon.nova-pro-v1:0`),
# percent-encoded in the raw path (an ARN's `/` too).
_GEMINI_MODEL = re.compile(r"/models/([^/:?]+)")
_BEDROCK_MODEL = re.compile(r"/model/([^/?]+)/")
HEALTH_PATH = "/toolstitch/health"
# The dialects a client reads by the path it asked on (a chat client reads chat chunks,
# whatever the body's first bytes look like): the guard reads them that way too. A
# Bedrock InvokeModel body is the model's own dialect, so it is told from the body.
_READ_AS_PATH = frozenset(
    {
        "openai-chat",
        "openai-responses",
        "anthropic",
        "bedrock",
        "gemini",
        "gemini-interactions",
        "cohere",
        "ollama",
    }
)
# The limits ``--limit`` may set: the guard's; those the side copy's Assembler takes too.
GUARD_LIMITS = frozenset(
    {
        "max_calls",
        "max_input_bytes",
        "max_total_bytes",
        "max_event_bytes",
        "max_line_bytes",
        "max_held_bytes",
        "max_decoded_bytes",
        "max_ratio",
        "max_check_bytes",
    }
)
_ASSEMBLER_LIMITS = frozenset(
    {"max_calls", "max_input_bytes", "max_total_bytes", "max_event_bytes", "max_line_bytes"}
)


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
        status = 503 if self.draining else 200
        body = json.dumps(
            {
                "status": "draining" if self.draining else "ok",
                "open": self.open_streams,
                "enforce": self.enforce,
            }
        ).encode()
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

    def emit(self, record: Record) -> None:
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception:
                _log.exception("toolstitch proxy: writing a record failed")


class _Exchange:
    """One request and its response."""

    def __init__(self, proxy: Proxy, scope: Scope, receive: Receive, send: Send) -> None:
        self.proxy = proxy
        self.scope = scope
        self.receive = receive
        self.send = send
        self.path = scope.get("path", "/")
        self.path_dialect = dialect_for_path(self.path)
        self.started = time.time()
        self.timing = StreamTiming()
        self.record = records.new(scope.get("method", "GET"), self.path, self.started)
        self.span = (
            ResponseSpan(proxy.tracer, scope.get("headers", []), self.path)
            if proxy.tracer is not None
            else None
        )
        self.toolset: Toolset | None = None
        # The check the guard runs: the toolset's, or one that refuses every call.
        self.checker: Any = None
        self.guard: _Guard | None = None
        self.asm: Assembler | None = None
        self.decoder: Any = None
        self.read_error: str | None = None
        self.response_started = False
        self.head = bytearray()

    # ---------------------------------------------------------------- the flow

    async def run(self) -> None:
        body = await self._request_body()
        if body is None:
            return  # the client went away before its request was complete
        if self.proxy.check:
            self._read_request(body)
        guarding = self.proxy.enforce and self.proxy.check
        headers = [
            (k, v)
            for k, v in self.scope.get("headers", [])
            if k.lower() not in _HOP and not (guarding and k.lower() == b"accept-encoding")
        ]
        if guarding:
            # Events are told apart in the body as sent: ask for it uncompressed (a
            # body compressed all the same is decoded by the guard, within bounds).
            headers.append((b"accept-encoding", b"identity"))
        query = self.scope.get("query_string", b"")
        raw_path = self.scope.get("raw_path") or self.path.encode()
        url = self.proxy.upstream + raw_path.decode("latin-1")
        if query:
            url += "?" + query.decode("latin-1")
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
            self._finish()

    async def _request_body(self) -> bytes | None:
        chunks = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _read_request(self, body: bytes) -> None:
        try:
            request = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            request = None
        model = request.get("model") if isinstance(request, dict) else None
        if not isinstance(model, str):
            model = self._model_in_path()
        self.record["model"] = model
        if not isinstance(request, dict):
            self.record["reason"] = "the request body is not a JSON object"
            return
        tools = declared_tools(request)
        try:
            # A request without tools still gets its calls recorded (as undeclared);
            # only one that declared tools is guarded.
            self.toolset = self.proxy.toolsets.get(tools or [])
            if tools:
                self.checker = self.toolset.validate
        except ToolstitchError as e:
            why = one_line(str(e))
            self.record["reason"] = f"the request's tools cannot be read: {why}"
            self.checker = refuse_every_call(why)

    def _model_in_path(self) -> str | None:
        raw = self.scope.get("raw_path") or self.path.encode()
        bedrock = _BEDROCK_MODEL.search(raw.decode("latin-1"))
        if bedrock:
            return urllib.parse.unquote(bedrock.group(1))
        gemini = _GEMINI_MODEL.search(self.path)
        return gemini.group(1) if gemini else None

    async def _relay(self, response: httpx.Response) -> None:
        status = response.status_code
        self.record["status"] = status
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        self.record["streamed"] = media != "application/json"
        if self.proxy.enforce and self.proxy.check:
            if self.checker is None:
                self.record["enforced"] = "unchecked"
                self.record["unchecked"] = "the request declared no tools"
            elif not 200 <= status < 300:
                self.record["enforced"] = "unchecked"
                self.record["unchecked"] = f"the upstream answered HTTP {status}"
            else:
                await self._guarded(response, status, media, encoding)
                return
        await self._passed_through(response, status, media, encoding)

    # ------------------------------------------------------- the guarded path

    async def _guarded(
        self, response: httpx.Response, status: int, media: str, encoding: str
    ) -> None:
        """The body through the core's guard: what it releases goes out as it comes; a
        block ends the response in the provider's shape."""
        self.record["readable"] = True
        try:
            guard = _Guard(
                self.checker,
                provider=self.path_dialect if self.path_dialect in _READ_AS_PATH else "auto",
                error_provider=self.path_dialect,
                transport=transport_for(media),
                encoding=encoding,
                **self.proxy.limits,
            )
        except ValueError:
            message = f"the body is {encoding}-encoded, which the guard cannot decode"
            self.guard = None
            self._record_block("encoding", message, None)
            await self._whole_error(*error_response(self.path_dialect, message))
            return
        self.guard = guard
        # The body goes out decoded, and its length is the guard's to tell.
        dropped = (b"content-length", b"content-encoding")
        headers = [
            (k, v)
            for k, v in response.headers.raw
            if k.lower() not in _HOP and k.lower() not in dropped
        ]

        send = self.send
        head = self.head

        async def forward(data: bytes, blocked: Any) -> bool:
            """Sends what the guard released, then ends a blocked response: ``False``
            when it did."""
            if data:
                if not self.response_started:
                    await self._start(status, headers)
                if len(head) < _RESPONSE_HEAD_BYTES:
                    self._keep_head(data)
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
                            self._keep_head(data)
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
            self.record["reason"] = self.record["reason"] or self._cut_reason()
        if self.read_error is not None and not self.response_started:
            # The upstream failed before anything went out: the client gets the
            # provider's error for an upstream failure, not a server error of the
            # proxy's own.
            self._record_block("unreadable", self.read_error, None)
            status_, headers_, body = upstream_error(
                guard.dialect or self.path_dialect, f"toolstitch proxy: {self.read_error}"
            )
            await self._whole_error(status_, headers_, body)
            return
        outcome = guard.outcome
        if outcome in ("passed", "unchecked", "blocked"):
            self.record["enforced"] = outcome
        if outcome == "unchecked":
            self.record["unchecked"] = guard.unchecked_reason
        if outcome == "open":
            # The response ended before the guard's verdict: what went out was checked
            # as it went, the rest never left.
            if self.read_error is not None:
                why = self.read_error
            elif self.record["client_disconnected"]:
                why = "the client disconnected before the response ended"
            else:
                why = self._cut_reason()
            self._record_block("incomplete", why, None)

    async def _end_blocked(self, blocked: Blocked) -> None:
        call = (
            {"id": blocked.call_id, "name": blocked.tool_name}
            if blocked.call_id is not None or blocked.tool_name is not None
            else None
        )
        self._record_block(blocked.cause, blocked.reason, call)
        if not self.response_started:
            await self._whole_error(blocked.status, list(blocked.headers), blocked.body)
            return
        await self.send({"type": "http.response.body", "body": blocked.tail, "more_body": False})

    def _record_block(self, cause: str, reason: str, call: dict[str, Any] | None) -> None:
        self.record["enforced"] = "blocked"
        self.record["blocked"] = reason
        self.record["blocked_cause"] = cause
        self.record["blocked_call"] = call

    async def _whole_error(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        raw.append((b"content-length", b"%d" % len(body)))
        await self._start(status, raw)
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    # --------------------------------------------------- the pass-through path

    async def _passed_through(
        self, response: httpx.Response, status: int, media: str, encoding: str
    ) -> None:
        """The body forwarded as it comes, byte for byte; a copy read on the side."""
        readable = self.proxy.check and self._readable(status, media, encoding)
        headers = [
            (k, v)
            for k, v in response.headers.raw
            if k.lower() not in _HOP or k.lower() == b"content-length"
        ]
        if readable:
            limits: dict[str, Any] = {
                k: v for k, v in self.proxy.limits.items() if k in _ASSEMBLER_LIMITS
            }
            self.asm = Assembler("auto", live=False, **limits)
            if encoding in ("gzip", "x-gzip"):
                self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
            elif encoding == "deflate":
                self.decoder = zlib.decompressobj()
        await self._start(status, headers)
        send = self.send
        copy = self._copy if self.asm is not None else None

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
            self.record["reason"] = self.record["reason"] or self._cut_reason()

    def _readable(self, status: int, media: str, encoding: str) -> bool:
        if status >= 400:
            self.record["reason"] = f"the upstream answered HTTP {status}; passed through"
        elif not any(kind in media for kind in _READ_TYPES) and not media.endswith(
            ("ndjson", "jsonl")
        ):
            self.record["reason"] = f"not a provider's response ({media or 'no content type'})"
        elif encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            self.record["reason"] = f"the body is {encoding}-encoded, which is not read"
        else:
            return True
        return False

    def _copy(self, data: bytes) -> None:
        """The side copy of a pass-through body (never changes what is forwarded)."""
        if self.asm is None or self.read_error is not None or not data:
            return
        try:
            if self.decoder is not None:
                # Bounded per read: a compressed body can never be decoded whole at once.
                data = self.decoder.decompress(data, 1 << 24)
                if self.decoder.unconsumed_tail:
                    self.read_error = "the compressed body expands past 16 MiB per read"
                    return
            if len(self.head) < _RESPONSE_HEAD_BYTES:
                self._keep_head(data)
            self.asm.feed_bytes(data)
        except zlib.error as e:
            self.read_error = f"the body is not valid compressed data: {e}"
        except ToolstitchError as e:
            self.read_error = one_line(str(e))
        except Exception as e:  # never let the copy break the traffic it watches
            _log.exception("toolstitch proxy: reading %s failed", self.path)
            self.read_error = f"the proxy could not read the response: {type(e).__name__}"

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

    def _cut_reason(self) -> str:
        return (
            f"the proxy stopped before the response ended (drain time of "
            f"{self.proxy.drain_seconds or 0:g} s over)"
        )

    def _keep_head(self, data: bytes) -> None:
        """The body's first bytes (decoded), where each dialect declares its response's
        id and model to be (read once, at the end)."""
        room = _RESPONSE_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]

    async def _start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.record["ttfb_ms"] = (time.time() - self.started) * 1000
        self.response_started = True
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def _unreachable(self, error: httpx.HTTPError) -> None:
        reason = f"the upstream cannot be reached: {type(error).__name__}"
        self.record["status"] = 502
        self.record["reason"] = reason
        if self.proxy.enforce and self.proxy.check:
            # No response to guard: said, not left for a "checked" verdict.
            self.record["enforced"] = "unchecked"
            self.record["unchecked"] = reason
        status, headers, body = upstream_error(self.path_dialect, f"toolstitch proxy: {reason}")
        with contextlib.suppress(Exception):
            await self._whole_error(status, headers, body)
        self._finish()

    def _messages(self) -> list[AssembledMessage]:
        if self.guard is not None:
            return self.guard.messages() if self.guard.dialect is not None else []
        if self.asm is None or self.asm.dialect is None:
            return []
        return self.asm.messages()

    def _finish(self) -> None:
        record = self.record
        if self.asm is not None:
            if self.read_error is None and self.decoder is not None:
                with contextlib.suppress(ToolstitchError, zlib.error):
                    self.asm.feed_bytes(self.decoder.flush())
            if not self.asm.closed:
                with contextlib.suppress(ToolstitchError):
                    self.asm.close()
        dialect = None
        if self.guard is not None:
            dialect = self.guard.dialect
        elif self.asm is not None:
            dialect = self.asm.dialect
        messages = self._messages()
        if dialect is not None and self.head:
            record["response_id"], record["response_model"] = _response_facts(
                dialect, bytes(self.head)
            )
        if self.guard is not None or self.asm is not None:
            record["dialect"] = dialect
            if dialect is None:
                record["reason"] = (
                    record["reason"] or self.read_error or "no dialect recognised the response"
                )
            else:
                record["readable"] = True
                record["reason"] = record["reason"] or self.read_error
            record["calls"] = records.calls(self.path, messages, self.read_error, self.toolset)
            record["complete"] = (
                bool(messages)
                and self.read_error is None
                and record["enforced"] != "blocked"
                and all(m.complete and not m.problems for m in messages)
            )
        records.finish(record, self.started)
        if self.span is not None:
            try:
                self.span.end(record, messages, self.timing, self.path_dialect)
            except Exception:
                _log.exception("toolstitch proxy: ending a span failed")
        self.proxy.emit(record)
        _log.info("%s", records.log_line(record))
