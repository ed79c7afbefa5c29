"""``toolstitch proxy``: a pass-through gateway that checks every call.

``Proxy(upstream)`` is an ASGI application (served by uvicorn; upstream requests go
through an ``httpx.AsyncClient``: ``pip install 'toolstitch[proxy]'``). It forwards every
request to ``upstream`` with its path, query, headers and body, and streams every
response back unchanged and unbuffered: the raw bytes as they arrive, gzip and all. On
the side, each response is reassembled (streamed or whole, any dialect the
``Assembler`` reads), every call is validated against the ``tools`` the request itself
declared (in any provider's form ``Toolset`` reads), and one record per response is
handed to ``on_record``: the calls as replay records (``docs/replay.md``) with
``valid`` and ``validation_error``, the request's model, the status and the timing.
Headers are never recorded, and the query string is left out of every record and log
line (Gemini sends its key there).

With ``enforce=True`` the proxy is a guard. SSE responses are forwarded event by event
(each event as soon as its last byte arrived), and the event that ends a choice (the
one that finishes it: ``finish_reason``, ``message_stop``, ``response.completed``) is
held until that choice's calls are checked; then it is forwarded, or the stream ends
with an error event in the provider's own shape, naming the failing call, which the
SDKs raise (``openai.APIError``, ``anthropic.APIStatusError``). A whole JSON response is
held until it is checked, then forwarded or replaced by a 502 error body in the
provider's shape with ``x-should-retry: false`` (so the SDKs do not retry). Requests
are sent upstream without ``Accept-Encoding`` in this mode, so that events can be told
apart. Other framings (AWS event-stream, JSON lines) are checked and recorded but not
held.

What the proxy cannot read (a request that is not JSON, a response no dialect
recognises, an unknown body type, an HTTP error status, tools it cannot read) passes
through untouched and is recorded with the ``reason``. An upstream that cannot be
reached is a 502 in the provider's error shape. A client that disconnects closes the
upstream request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import time
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx

from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage, MessageDone
from toolstitch.otel import StreamTiming
from toolstitch.otel import record as record_span
from toolstitch.replay import _notes as _replay_notes
from toolstitch.replay import _record as _replay_record
from toolstitch.streams import Assembler
from toolstitch.tools import Toolset

__all__ = ["Proxy", "Record"]

Record = dict[str, Any]
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
_SSE = "text/event-stream"
_READ_TYPES = (_SSE, "application/json", "application/vnd.amazon.eventstream", "ndjson", "jsonl")
# An SSE event ends at a blank line: \n\n, \r\n\r\n or \r\r (and mixtures).
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r|\n\r\n|\r\n\n")
_MODEL_IN_PATH = re.compile(r"/models?/([^/:?]+)")


class Proxy:
    """The ASGI application (see the module docstring).

    ``upstream`` is the base URL requests go to (its path is prefixed to theirs);
    ``on_record`` gets each response's record; ``check=False`` turns every check off
    (a plain pass-through on the same server and client, for comparison); ``tracer``
    (an OpenTelemetry tracer) gets one span per response, with ``toolstitch.otel.record``.
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
                ),
                timeout=httpx.Timeout(600.0, connect=30.0),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await _Exchange(self, scope, receive, send).run()

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


class _Blocked(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Exchange:
    """One request and its response."""

    def __init__(self, proxy: Proxy, scope: Scope, receive: Receive, send: Send) -> None:
        self.proxy = proxy
        self.scope = scope
        self.receive = receive
        self.send = send
        self.path = scope.get("path", "/")
        self.started = time.time()
        self.timing = StreamTiming()
        self.record: Record = {
            "time": self.started,
            "method": scope.get("method", "GET"),
            "path": self.path,
            "status": None,
            "model": None,
            "dialect": None,
            "streamed": None,
            "readable": False,
            "reason": None,
            "complete": False,
            "valid": None,
            "enforced": None,
            "blocked": None,
            "calls": [],
            "client_disconnected": False,
            "ttfb_ms": None,
            "duration_ms": None,
            "bytes": 0,
            "chunks": 0,
        }
        self.toolset: Toolset | None = None
        self.asm: Assembler | None = None
        self.decoder: Any = None
        self.read_error: str | None = None
        self.checked: set[int] = set()
        self.pending = b""
        self.hold_events = False
        self.response_started = False

    # ---------------------------------------------------------------- the flow

    async def run(self) -> None:
        body = await self._request_body()
        if body is None:
            return  # the client went away before its request was complete
        if self.proxy.check:
            self._read_request(body)
        headers = [
            (k, v)
            for k, v in self.scope.get("headers", [])
            if k.lower() not in _HOP
            and not (self.proxy.enforce and self.proxy.check and k.lower() == b"accept-encoding")
        ]
        if self.proxy.enforce and self.proxy.check:
            # Events are told apart in the body as sent: ask for it uncompressed.
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
            match = _MODEL_IN_PATH.search(self.path)
            model = match.group(1) if match else None
        self.record["model"] = model
        if not isinstance(request, dict):
            self.record["reason"] = "the request body is not a JSON object"
            return
        tools = request.get("tools")
        if tools is None and isinstance(request.get("toolConfig"), dict):
            tools = request["toolConfig"].get("tools")  # Bedrock
        try:
            self.toolset = Toolset(tools or [])
        except ToolstitchError as e:
            self.record["reason"] = f"the request's tools cannot be read: {_one_line(str(e))}"

    async def _relay(self, response: httpx.Response) -> None:
        status = response.status_code
        self.record["status"] = status
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        readable = self.proxy.check and self._readable(status, media, encoding)
        hold = readable and self.proxy.enforce
        headers = [
            (k, v)
            for k, v in response.headers.raw
            if k.lower() not in _HOP or (k.lower() == b"content-length" and not hold)
        ]
        self.record["streamed"] = media != "application/json"
        if readable:
            self.asm = Assembler("auto", live=hold)
            if encoding in ("gzip", "x-gzip"):
                self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
            elif encoding == "deflate":
                self.decoder = zlib.decompressobj()
        if hold and media == "application/json":
            await self._relay_whole(response, status, headers)
            return
        await self._start(status, headers)
        if hold and media == _SSE:
            self.hold_events = True
            await self._pump(response, self._forward_events)
        else:
            if hold:
                self.record["enforced"] = "not held: only SSE and JSON bodies are held"
            await self._pump(response, self._forward_raw)

    def _readable(self, status: int, media: str, encoding: str) -> bool:
        if status >= 400:
            self.record["reason"] = f"the upstream answered HTTP {status}; passed through"
        elif not any(kind in media for kind in _READ_TYPES):
            self.record["reason"] = f"not a provider's response ({media or 'no content type'})"
        elif encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            self.record["reason"] = f"the body is {encoding}-encoded, which is not read"
        else:
            return True
        return False

    async def _pump(
        self, response: httpx.Response, forward: Callable[[bytes], Awaitable[bool]]
    ) -> None:
        """Relays the body with ``forward`` until it ends, ``forward`` says stop, or the
        client disconnects (which cancels the read and so closes the upstream request)."""
        disconnected = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await self.receive()
                if message["type"] == "http.disconnect":
                    disconnected.set()
                    return

        async def relay() -> None:
            async for chunk in response.aiter_raw():
                self.timing.chunk()
                self.record["bytes"] += len(chunk)
                self.record["chunks"] += 1
                if not await forward(chunk):
                    return
            await self._end_of_body()

        relaying = asyncio.ensure_future(relay())
        watching = asyncio.ensure_future(watch())
        try:
            done, _ = await asyncio.wait({relaying, watching}, return_when=asyncio.FIRST_COMPLETED)
            if relaying not in done:
                self.record["client_disconnected"] = True
        finally:
            for task in (relaying, watching):
                task.cancel()
                # Its outcome is read below; waiting for it must not raise it here.
                await asyncio.wait({task})
        exception = None if relaying.cancelled() else relaying.exception()
        if isinstance(exception, httpx.HTTPError):
            # The upstream broke off: the client's response is left unfinished too (the
            # server drops the connection), so that it cannot pass for a whole one.
            self.read_error = f"the upstream response failed: {type(exception).__name__}"
        elif exception is not None:
            raise exception

    async def _forward_raw(self, chunk: bytes) -> bool:
        await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
        self._feed(chunk)
        return True

    async def _end_of_body(self) -> None:
        if self.hold_events:
            # The body ended: the last event may lack its blank line, and a choice the
            # provider never ended ends now (its calls are then refused as cut short).
            event, self.pending = self.pending, b""
            if not await self._forward_event(event, last=True):
                return
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    def _close(self) -> Any:
        if self.asm is None or self.asm.closed:
            return ()
        try:
            return self.asm.close()
        except ToolstitchError as e:
            self.read_error = self.read_error or _one_line(str(e))
            return ()

    # ---------------------------------------------------------------- enforcing

    async def _forward_events(self, chunk: bytes) -> bool:
        pending = self.pending + chunk
        at = 0
        for match in _EVENT_END.finditer(pending):
            event = pending[at : match.end()]
            at = match.end()
            if not await self._forward_event(event):
                return False
        self.pending = pending[at:]
        return True

    async def _forward_event(self, event: bytes, *, last: bool = False) -> bool:
        """Forwards one whole SSE event once the calls of every choice it ends are
        checked (``last``: the body ended after it, which ends every choice); else ends
        the stream with the provider's error event."""
        events = [*self._feed(event), *self._close()] if last else self._feed(event)
        try:
            self._check_done(events)
        except _Blocked as blocked:
            self._blocked(blocked)
            body = _error_event(self.asm, blocked.message)
            await self.send({"type": "http.response.body", "body": body, "more_body": False})
            return False
        if event:
            await self.send({"type": "http.response.body", "body": event, "more_body": True})
        return True

    def _blocked(self, blocked: _Blocked) -> None:
        self.record["enforced"] = "blocked"
        self.record["blocked"] = blocked.message

    async def _relay_whole(
        self, response: httpx.Response, status: int, headers: list[tuple[bytes, bytes]]
    ) -> None:
        body = b""
        async for chunk in response.aiter_raw():
            self.timing.chunk()
            body += chunk
            self.record["bytes"] += len(chunk)
            self.record["chunks"] += 1
        self._feed(body)
        if self.asm is not None and self.read_error is None:
            with contextlib.suppress(ToolstitchError):
                self.asm.close()
        try:
            self._check_done(
                [MessageDone(m.choice, m.finish_reason, m.complete) for m in self._messages()]
            )
        except _Blocked as blocked:
            self._blocked(blocked)
            error = _error_body(self.asm, blocked.message)
            await self._start(
                502,
                [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(error)).encode()),
                    (b"x-should-retry", b"false"),
                ],
            )
            await self.send({"type": "http.response.body", "body": error, "more_body": False})
            return
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        await self._start(status, headers)
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    def _check_done(self, events: Any) -> None:
        """Checks the calls of every choice that just ended; ``_Blocked`` names the first
        failing call."""
        if self.asm is None or self.toolset is None or self.read_error is not None:
            return
        for event in events:
            if not isinstance(event, MessageDone) or event.choice in self.checked:
                continue
            self.checked.add(event.choice)
            message = self.asm.message(event.choice)
            calls = [c for c in message.tool_uses if not c.server_side]
            if not calls:
                continue
            if not event.complete:
                raise _Blocked(
                    f"toolstitch proxy: choice {event.choice} ended with "
                    f"{event.finish_reason!r}, so its tool calls may be cut short: "
                    + ", ".join(f"{c.name} ({c.id})" for c in calls)
                )
            for call in calls:
                try:
                    self.toolset.validate(call)
                except ToolstitchError as e:
                    raise _Blocked(
                        f"toolstitch proxy: tool call {call.id} ({call.name}) is not valid: "
                        f"{_one_line(str(e))}"
                    ) from None
            self.record["enforced"] = "passed"

    # ---------------------------------------------------------------- the copy

    def _feed(self, data: bytes) -> Any:
        if self.asm is None or self.read_error is not None or not data:
            return ()
        try:
            if self.decoder is not None:
                data = self.decoder.decompress(data)
            return self.asm.feed_bytes(data)
        except zlib.error as e:
            self.read_error = f"the body is not valid compressed data: {e}"
        except ToolstitchError as e:
            self.read_error = _one_line(str(e))
        except Exception as e:  # never let the copy break the traffic it watches
            _log.exception("toolstitch proxy: reading %s failed", self.path)
            self.read_error = f"the proxy could not read the response: {type(e).__name__}"
        return ()

    def _messages(self) -> list[AssembledMessage]:
        if self.asm is None or self.asm.dialect is None:
            return []
        return self.asm.messages()

    async def _start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.record["ttfb_ms"] = (time.time() - self.started) * 1000
        self.response_started = True
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def _unreachable(self, error: httpx.HTTPError) -> None:
        reason = f"the upstream cannot be reached: {type(error).__name__}"
        body = json.dumps(
            {"error": {"message": f"toolstitch proxy: {reason}", "type": "upstream_unreachable"}}
        ).encode()
        self.record["status"] = 502
        self.record["reason"] = reason
        with contextlib.suppress(Exception):
            await self._start(
                502,
                [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
            )
            await self.send({"type": "http.response.body", "body": body, "more_body": False})
        self._finish()

    def _finish(self) -> None:
        record = self.record
        record["duration_ms"] = (time.time() - self.started) * 1000
        if self.asm is not None:
            if self.read_error is None and self.decoder is not None:
                with contextlib.suppress(ToolstitchError, zlib.error):
                    self.asm.feed_bytes(self.decoder.flush())
            if not self.asm.closed:
                with contextlib.suppress(ToolstitchError):
                    self.asm.close()
            record["dialect"] = self.asm.dialect
            messages = self._messages()
            if self.asm.dialect is None:
                record["reason"] = self.read_error or "no dialect recognised the response"
            else:
                record["readable"] = True
                record["reason"] = self.read_error
            record["calls"] = self._calls(messages)
            record["complete"] = (
                bool(messages)
                and self.read_error is None
                and all(m.complete and not m.problems for m in messages)
            )
            checked = [c["valid"] for c in record["calls"] if c["valid"] is not None]
            record["valid"] = all(checked) if checked else None
            if self.proxy.tracer is not None and messages:
                self._span(messages)
        self.proxy.emit(record)
        _log.info(
            "%s %s %s model=%s calls=%d valid=%s%s",
            record["method"],
            record["path"],
            record["status"],
            record["model"],
            sum(1 for c in record["calls"] if c["id"] is not None),
            record["valid"],
            " client disconnected" if record["client_disconnected"] else "",
        )

    def _calls(self, messages: list[AssembledMessage]) -> list[dict[str, Any]]:
        records = []
        why = self.read_error
        for message in messages:
            error = why or ("; ".join(message.problems) if message.problems else None)
            complete = message.complete and error is None
            for call in message.tool_uses:
                # The replay record of the call, built where replay builds them.
                notes = _replay_notes(message, call)
                record = _replay_record(
                    self.path, message.choice, call, complete, message.finish, error, notes
                )
                entry: dict[str, Any] = dict(record)
                entry["valid"], entry["validation_error"] = self._validity(call, complete)
                records.append(entry)
        return records

    def _validity(self, call: Any, complete: bool) -> tuple[bool | None, str | None]:
        if call.server_side or self.toolset is None:
            return None, None
        if not complete:
            return False, "not validated: the response did not complete"
        try:
            self.toolset.validate(call)
        except ToolstitchError as e:
            return False, _one_line(str(e))
        return True, None

    def _span(self, messages: list[AssembledMessage]) -> None:
        model = self.record["model"]
        with self.proxy.tracer.start_as_current_span(f"chat {model or ''}".strip()) as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            if model:
                span.set_attribute("gen_ai.request.model", model)
            if self.asm is not None and self.asm.dialect:
                span.set_attribute("gen_ai.provider.name", self.asm.dialect)
            span.set_attribute("http.response.status_code", self.record["status"] or 0)
            span.set_attribute("url.path", self.path)
            record_span(span, messages, timing=self.timing)


def _error_event(asm: Assembler | None, message: str) -> bytes:
    """An SSE error event the provider's SDK raises."""
    error = _error_data(asm, message)
    dialect = asm.dialect if asm is not None else None
    if dialect == "gemini-interactions":
        # The Interactions API's streamed error is an event of its own type.
        error = {"event_type": "error", **error}
    data = json.dumps(error).encode()
    if dialect == "anthropic":
        return b"event: error\ndata: " + data + b"\n\n"
    return b"data: " + data + b"\n\n"


def _error_body(asm: Assembler | None, message: str) -> bytes:
    """A whole error response in the provider's shape."""
    return json.dumps(_error_data(asm, message)).encode()


def _error_data(asm: Assembler | None, message: str) -> dict[str, Any]:
    dialect = asm.dialect if asm is not None else None
    if dialect == "anthropic":
        return {"type": "error", "error": {"type": "invalid_tool_call_error", "message": message}}
    if dialect in ("gemini", "gemini-interactions"):
        # Google's APIs share one error shape.
        return {"error": {"code": 502, "message": message, "status": "INVALID_TOOL_CALL"}}
    return {
        "error": {
            "message": message,
            "type": "invalid_tool_call",
            "code": "toolstitch_invalid_tool_call",
        }
    }


def _one_line(message: str) -> str:
    return " ".join(message.split())


# ------------------------------------------------------------------ the command


def serve(
    upstream: str,
    listen: str,
    *,
    enforce: bool,
    records: str,
    otel: bool,
    check: bool = True,
) -> int:
    """``toolstitch proxy``: serves ``Proxy(upstream)`` on ``listen`` (``host:port``; port
    0 picks a free one) until interrupted, writing records as JSON lines to ``records``
    (a path, or ``-`` for standard output). The address it listens on is said on
    standard error once it accepts connections."""
    import sys

    import uvicorn

    host, _, port_text = listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit():
        print(f"toolstitch proxy: --listen {listen}: give HOST:PORT", file=sys.stderr)
        return 2
    out = sys.stdout if records == "-" else open(records, "a", encoding="utf-8")  # noqa: SIM115

    def write(record: Record) -> None:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.flush()

    tracer = _tracer() if otel else None
    try:
        app = Proxy(upstream, enforce=enforce, on_record=write, check=check, tracer=tracer)
    except ValueError as e:
        print(f"toolstitch proxy: --upstream: {e}", file=sys.stderr)
        return 2
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, int(port_text)))
    except OSError as e:
        print(f"toolstitch proxy: cannot listen on {listen}: {e.strerror or e}", file=sys.stderr)
        return 2
    sock.listen(1024)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if family == socket.AF_INET6 else bound[0]
    logging.basicConfig(level=logging.INFO, format="toolstitch proxy: %(message)s")
    # httpx logs every request's full URL, query string (and so a key) included.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        http=nodelay_protocol(),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    print(
        f"toolstitch proxy: listening on http://{shown}:{bound[1]} for {upstream}"
        + (" (enforcing)" if enforce else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if tracer is not None:
            tracer.provider.shutdown()
        if out is not sys.stdout:
            out.close()
    return 0


def nodelay_protocol() -> type[Any]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with Nagle's algorithm
    off on every accepted connection. asyncio leaves it on for server sockets, and a
    stream forwarded in small writes then stalls for the client's delayed ACK (about
    40 ms on Linux) whenever a write waits behind an unacknowledged one."""
    base: type[Any]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class NoDelayProtocol(base):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)

    return NoDelayProtocol


class _Tracer:
    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("toolstitch.proxy")

    def start_as_current_span(self, name: str) -> Any:
        return self.tracer.start_as_current_span(name)


def _tracer() -> _Tracer:
    """A tracer exporting over OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT`` and the other
    standard variables configure it)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "toolstitch-proxy"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return _Tracer(provider)
