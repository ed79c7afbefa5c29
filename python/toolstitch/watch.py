"""A tee on an SDK client: the finished, checked messages of every response the
application's own code reads, with its code unchanged.

``watch(client, on_response)`` takes an ``openai`` or ``anthropic`` client (sync or
async; any client holding an ``httpx`` or ``httpx2`` client as ``_client``) or an
``httpx`` / ``httpx2`` client itself, and wraps its transport: every response body
passes through to the SDK exactly as it came, byte for byte and read for read, and a
copy of each read goes to an ``Assembler``. When the response ends, ``on_response``
gets a ``WatchedResponse``: the request's method and URL (no query string, no headers),
the status, the assembled messages (what ``toolstitch.assemble`` gives for the same
bytes), whether the body was cut, the dialect, the response's own id and the model that
answered (as the body names them), and when the request started, its first body byte
came and the report was made.

- A stream the application abandons half-way (``stream.close()``, a ``break``) or
  creates and drops unread (the response garbage-collected without being read or
  closed) is reported with ``cut=True`` and the messages so far, which are never
  ``complete``; a dropped one is reported when the garbage collector frees it.
- A callback that raises never reaches the application: the error is logged on the
  ``toolstitch.watch`` logger and the stream goes on. An async client may be given a
  coroutine function; it is awaited when the body ends (for ``cut`` responses, only
  when the application closes the response with ``await response.aclose()`` or the
  SDK's ``close()``, or when a dropped stream is freed while an event loop runs in that
  thread). A sync client given a coroutine function is refused by ``watch()`` with a
  ``TypeError``: nothing would ever await it. A plain function that returns an
  awaitable on a sync client has it closed, unawaited, with an error logged.
- Bodies the tee cannot read (a ``Content-Encoding`` other than gzip and deflate, bytes
  no dialect recognises) are still passed through unchanged; the report's ``error``
  says why its messages are missing.
- Only responses to ``POST`` requests with a body type a provider streams or answers in
  (SSE, JSON, JSON lines, AWS event-stream) are read; everything else passes untouched
  and unreported.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
import time
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from toolstitch._toolstitch import _RESPONSE_HEAD_BYTES, _response_facts
from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage, Provider
from toolstitch.streams import Assembler

__all__ = ["AsyncTeeTransport", "TeeTransport", "WatchedResponse", "watch"]

_log = logging.getLogger("toolstitch.watch")

_READ_TYPES = (
    "text/event-stream",
    "application/json",
    "application/vnd.amazon.eventstream",
    "ndjson",
    "jsonl",
    "jsonlines",
    "stream+json",
)

Callback = Callable[["WatchedResponse"], Awaitable[None] | None]
_C = TypeVar("_C")


@dataclass(frozen=True, slots=True)
class WatchedResponse:
    """One response the tee saw.

    ``url`` is the request's URL without its query string (which may carry a key);
    ``messages`` are the assembled messages, one per choice (none when the body could
    not be read at all); ``cut`` is true when the application stopped reading before
    the provider's end of the response, or dropped it unread (the SDKs close a response
    at its final event, without reading on to the end of the body: that is not cut);
    ``error`` says why the messages are missing or cannot be trusted (an unreadable
    body, an HTTP error status, a read that failed), else ``None``.

    ``provider`` is the dialect the body was read as (``Assembler.dialect``), ``None``
    when none answered. ``response_id`` and ``model`` are what the body says of itself
    (``chatcmpl-…``, ``resp_…``, ``msg_…``, Gemini's ``responseId`` and
    ``modelVersion``), exactly as sent, ``None`` where the dialect's body does not say
    (Bedrock's) or nothing was read. ``started_at`` (the request handed to the
    transport), ``first_byte_at`` (the first body byte read; ``None`` when none was) and
    ``ended_at`` (the report made) are ``time.time()`` seconds, measured on one
    monotonic clock so that their differences are exact.
    """

    method: str
    url: str
    status: int
    messages: tuple[AssembledMessage, ...]
    cut: bool
    error: str | None = None
    provider: str | None = None
    response_id: str | None = None
    model: str | None = None
    started_at: float = 0.0
    first_byte_at: float | None = None
    ended_at: float = 0.0

    @property
    def time_to_first_byte(self) -> float | None:
        """Seconds from the request to the first body byte, or ``None``."""
        return None if self.first_byte_at is None else self.first_byte_at - self.started_at

    @property
    def duration(self) -> float:
        """Seconds from the request to the report."""
        return self.ended_at - self.started_at

    @property
    def complete(self) -> bool:
        """Every message complete, the body read to its end, no error."""
        return (
            not self.cut
            and self.error is None
            and bool(self.messages)
            and all(m.complete for m in self.messages)
        )


def watch(client: _C, on_response: Callback, *, provider: Provider = "auto") -> _C:
    """Tees every response of ``client`` to ``on_response`` (see the module docstring);
    returns ``client`` itself, changed in place, so it may wrap a constructor call."""
    http = _http_client(client)
    if not callable(on_response):
        raise TypeError(f"on_response must be callable, not {type(on_response).__name__}")
    transports = [http._transport, *(getattr(http, "_mounts", None) or {}).values()]
    if any(t is not None and not _is_async(t) for t in transports):
        _refuse_coroutine(on_response, f"the {type(client).__name__} client")
    Assembler(provider, live=False)  # an unknown provider is the caller's error, now
    http._transport = _tee(http._transport, on_response, provider)
    mounts = getattr(http, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in list(mounts.items()):
            if transport is not None:
                mounts[pattern] = _tee(transport, on_response, provider)
    return client


def _http_client(client: object) -> Any:
    for candidate in (client, getattr(client, "_client", None)):
        if candidate is not None and hasattr(candidate, "_transport"):
            module = type(candidate).__module__.split(".")[0]
            bases = {c.__module__.split(".")[0] for c in type(candidate).__mro__}
            if {"httpx", "httpx2"} & ({module} | bases):
                return candidate
    raise TypeError(
        "watch() takes an openai or anthropic client, or an httpx / httpx2 client, not "
        f"{type(client).__name__}"
    )


def _is_async(transport: Any) -> bool:
    return hasattr(transport, "handle_async_request")


def _refuse_coroutine(on_response: Callback, client: str) -> None:
    """A sync client never awaits: a coroutine function given to it is refused now."""
    # An object whose class defines an async __call__ is one too.
    call = type(on_response).__call__
    if inspect.iscoroutinefunction(on_response) or inspect.iscoroutinefunction(call):
        name = getattr(on_response, "__qualname__", type(on_response).__name__)
        raise TypeError(
            f"on_response {name!r} is a coroutine function, but {client} is synchronous: "
            f"nothing would await it. Pass a plain function, or watch an async client"
        )


def _tee(transport: Any, on_response: Callback, provider: Provider) -> Any:
    if _is_async(transport):
        return AsyncTeeTransport(transport, on_response, provider=provider)
    return TeeTransport(transport, on_response, provider=provider)


# ------------------------------------------------------------------ the copy


class _Copy:
    """What the tee keeps of one response: its decoder, its Assembler, its report."""

    def __init__(
        self, request: Any, response: Any, provider: Provider, started: tuple[float, float]
    ) -> None:
        self.started_wall, self.started = started
        self.first_byte: float | None = None
        self.head = bytearray()
        self.method = str(request.method)
        url = request.url
        self.url = str(url.copy_with(query=None, fragment=None))
        self.status = int(response.status_code)
        self.asm = Assembler(provider, live=False)
        self.error: str | None = None
        self.done = False
        if self.status >= 400:
            self.error = f"the provider answered HTTP {self.status}"
        encoding = str(response.headers.get("content-encoding", "identity")).strip().lower()
        self.decoder: Any = None
        if encoding in ("gzip", "x-gzip"):
            self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self.decoder = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            self.error = f"the body is {encoding}-encoded, which the tee does not read"

    def feed(self, chunk: bytes) -> None:
        if chunk and self.first_byte is None:
            self.first_byte = time.monotonic()
        if self.error is not None or not chunk:
            return
        try:
            data = self.decoder.decompress(chunk) if self.decoder is not None else chunk
            if len(self.head) < _RESPONSE_HEAD_BYTES:
                self.head += data[: _RESPONSE_HEAD_BYTES - len(self.head)]
            self.asm.feed_bytes(data)
        except zlib.error as e:
            self.error = f"the body is not valid {type(self.decoder).__name__}: {e}"
        except ToolstitchError as e:
            self.error = " ".join(str(e).split())

    def report(self, *, cut: bool, error: str | None = None) -> WatchedResponse | None:
        """The report, once (``None`` when it was already made)."""
        if self.done:
            return None
        self.done = True
        if error is not None and self.error is None:
            self.error = error
        with contextlib.suppress(ToolstitchError):
            if self.decoder is not None and self.error is None and not cut:
                self.asm.feed_bytes(self.decoder.flush())
        with contextlib.suppress(ToolstitchError):
            self.asm.close()
        dialect = self.asm.dialect
        messages = tuple(self.asm.messages()) if dialect is not None else ()
        if cut and messages and all(m.finish is not None for m in messages):
            # The SDK stops at the provider's end ([DONE], message_stop) and closes the
            # response without reading on to the end of the body: nothing was cut.
            cut = False
        response_id, model = (
            _response_facts(dialect, bytes(self.head)) if dialect is not None else (None, None)
        )

        def wall(at: float) -> float:
            return self.started_wall + (at - self.started)

        return WatchedResponse(
            self.method,
            self.url,
            self.status,
            messages,
            cut,
            self.error,
            provider=dialect,
            response_id=response_id,
            model=model,
            started_at=self.started_wall,
            first_byte_at=None if self.first_byte is None else wall(self.first_byte),
            ended_at=wall(time.monotonic()),
        )


def _now() -> tuple[float, float]:
    """Wall-clock and monotonic seconds, read together."""
    return time.time(), time.monotonic()


def _read(request: Any, response: Any) -> bool:
    if str(request.method).upper() != "POST":
        return False
    media = str(response.headers.get("content-type", "")).split(";")[0].strip().lower()
    return any(kind in media for kind in _READ_TYPES)


_STREAM_CLASSES: dict[tuple[type[Any], str], type[Any]] = {}


def _stream_class(response: Any, tee: type[Any], base_name: str) -> type[Any]:
    """``tee`` made a subclass of the byte-stream class of the response's own library
    (``httpx`` or ``httpx2``), which its response checks the stream against."""
    key = (tee, type(response).__module__.split(".")[0])
    cls = _STREAM_CLASSES.get(key)
    if cls is None:
        base = getattr(importlib.import_module(key[1]), base_name)
        cls = _STREAM_CLASSES[key] = type(tee.__name__, (tee, base), {})
    return cls


def _deliver_sync(on_response: Callback, report: WatchedResponse | None) -> None:
    """Calls the callback where nothing can await: an awaitable it returns is closed
    unawaited, and said."""
    pending = _deliver(on_response, report)
    if pending is not None:
        _drop_awaitable(pending, report)


def _drop_awaitable(pending: Awaitable[None], report: WatchedResponse | None) -> None:
    close = getattr(pending, "close", None)
    if callable(close):
        close()
    _log.error(
        "toolstitch.watch: the on_response callback returned an awaitable where nothing "
        "can await it (a sync client, or a dropped stream freed outside an event loop); "
        "it was not run (for %s)",
        report.url if report else "",
    )


def _report_dropped(copy: _Copy, on_response: Callback, is_async: bool) -> None:
    """A stream freed unread and unclosed: reported cut (a weakref finalizer)."""
    report = copy.report(cut=True)
    if report is None:
        return
    pending = _deliver(on_response, report)
    if pending is None:
        return
    if is_async:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            loop.create_task(_await_logged(pending, report))
            return
    _drop_awaitable(pending, report)


async def _await_logged(pending: Awaitable[None], report: WatchedResponse) -> None:
    try:
        await pending
    except Exception:
        _log.exception("toolstitch.watch: the on_response callback raised (for %s)", report.url)


def _deliver(on_response: Callback, report: WatchedResponse | None) -> Awaitable[None] | None:
    """Calls the callback; whatever it raises is logged, never passed on."""
    if report is None:
        return None
    try:
        result = on_response(report)
    except Exception:
        _log.exception("toolstitch.watch: the on_response callback raised (for %s)", report.url)
        return None
    return result if inspect.isawaitable(result) else None


async def _adeliver(on_response: Callback, report: WatchedResponse | None) -> None:
    pending = _deliver(on_response, report)
    if pending is None:
        return
    try:
        await pending
    except Exception:
        _log.exception(
            "toolstitch.watch: the on_response callback raised (for %s)",
            report.url if report else "",
        )


# ------------------------------------------------------------------ sync


class _Tee:
    def __init__(
        self, transport: Any, on_response: Callback, *, provider: Provider = "auto"
    ) -> None:
        self.transport = transport
        self.on_response = on_response
        self.provider = provider


class TeeTransport(_Tee):
    """An ``httpx`` / ``httpx2`` transport that tees what ``transport`` returns (see the
    module docstring). ``watch()`` installs it; it may also be given to a client
    directly: ``httpx2.Client(transport=TeeTransport(httpx2.HTTPTransport(), f))``."""

    def __init__(
        self, transport: Any, on_response: Callback, *, provider: Provider = "auto"
    ) -> None:
        _refuse_coroutine(on_response, "a TeeTransport")
        super().__init__(transport, on_response, provider=provider)

    def handle_request(self, request: Any) -> Any:
        started = _now()
        response = self.transport.handle_request(request)
        if _read(request, response):
            copy = _Copy(request, response, self.provider, started)
            response.stream = _stream_class(response, _TeeStream, "SyncByteStream")(
                response.stream, copy, self.on_response
            )
        return response

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> TeeTransport:
        self.transport.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.transport.__exit__(*exc)


class _TeeStream:
    """The response's byte stream, unchanged, with a copy of each read to the tee."""

    def __init__(self, stream: Any, copy: _Copy, on_response: Callback) -> None:
        self.stream = stream
        self.copy = copy
        self.on_response = on_response
        # Dropped unread and unclosed: reported cut when freed (after a report, nothing).
        weakref.finalize(self, _report_dropped, copy, on_response, False)

    def __iter__(self) -> Iterator[bytes]:
        ended = False
        try:
            for chunk in self.stream:
                self.copy.feed(chunk)
                yield chunk
            ended = True
        except GeneratorExit:
            raise
        except BaseException as e:
            failed = self.copy.report(cut=True, error=f"the read failed: {e!r}")
            _deliver_sync(self.on_response, failed)
            raise
        finally:
            _deliver_sync(self.on_response, self.copy.report(cut=not ended))

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            _deliver_sync(self.on_response, self.copy.report(cut=True))


# ------------------------------------------------------------------ async


class AsyncTeeTransport(_Tee):
    """The async ``TeeTransport`` (``AsyncClient``s: ``openai.AsyncOpenAI``, ...)."""

    async def handle_async_request(self, request: Any) -> Any:
        started = _now()
        response = await self.transport.handle_async_request(request)
        if _read(request, response):
            copy = _Copy(request, response, self.provider, started)
            response.stream = _stream_class(response, _AsyncTeeStream, "AsyncByteStream")(
                response.stream, copy, self.on_response
            )
        return response

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __aenter__(self) -> AsyncTeeTransport:
        await self.transport.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.transport.__aexit__(*exc)


class _AsyncTeeStream:
    def __init__(self, stream: Any, copy: _Copy, on_response: Callback) -> None:
        self.stream = stream
        self.copy = copy
        self.on_response = on_response
        weakref.finalize(self, _report_dropped, copy, on_response, True)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:
            self.copy.feed(chunk)
            yield chunk
        await _adeliver(self.on_response, self.copy.report(cut=False))

    async def aclose(self) -> None:
        try:
            await self.stream.aclose()
        finally:
            await _adeliver(self.on_response, self.copy.report(cut=True))
