"""A tee on an SDK client: the finished, checked messages of every response the
application's own code reads, with its code unchanged.

``watch(client, on_response)`` takes an ``openai`` or ``anthropic`` client (sync or
async; any client holding an ``httpx`` or ``httpx2`` client as ``_client``) or an
``httpx`` / ``httpx2`` client itself, and wraps its transport: every response body
passes through to the SDK exactly as it came, byte for byte and read for read, and a
copy of each read goes to an ``Assembler``. When the response ends, ``on_response``
gets a ``WatchedResponse``: the request's method and URL (no query string, no headers),
the status, the assembled messages (what ``toolstitch.assemble`` gives for the same
bytes) and whether the body was cut.

- A stream the application abandons half-way (``stream.close()``, a ``break``, the
  response garbage-collected) is reported with ``cut=True`` and the messages so far,
  which are never ``complete``.
- A callback that raises never reaches the application: the error is logged on the
  ``toolstitch.watch`` logger and the stream goes on. An async client may be given a
  coroutine function; it is awaited when the body ends (for ``cut`` responses, only
  when the application closes the response with ``await response.aclose()`` or the
  SDK's ``close()``).
- Bodies the tee cannot read (a ``Content-Encoding`` other than gzip and deflate, bytes
  no dialect recognises) are still passed through unchanged; the report's ``error``
  says why its messages are missing.
- Only responses to ``POST`` requests with a body type a provider streams or answers in
  (SSE, JSON, JSON lines, AWS event-stream) are read; everything else passes untouched
  and unreported.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

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
    the provider's end of the response (the SDKs close a response at its final event,
    without reading on to the end of the body: that is not cut); ``error`` says why
    the messages are missing or cannot be trusted (an unreadable body, an HTTP error
    status, a read that failed), else ``None``.
    """

    method: str
    url: str
    status: int
    messages: tuple[AssembledMessage, ...]
    cut: bool
    error: str | None = None

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


def _tee(transport: Any, on_response: Callback, provider: Provider) -> Any:
    if hasattr(transport, "handle_async_request"):
        return AsyncTeeTransport(transport, on_response, provider=provider)
    return TeeTransport(transport, on_response, provider=provider)


# ------------------------------------------------------------------ the copy


class _Copy:
    """What the tee keeps of one response: its decoder, its Assembler, its report."""

    def __init__(self, request: Any, response: Any, provider: Provider) -> None:
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
        if self.error is not None or not chunk:
            return
        try:
            data = self.decoder.decompress(chunk) if self.decoder is not None else chunk
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
        messages = tuple(self.asm.messages()) if self.asm.dialect is not None else ()
        if cut and messages and all(m.finish is not None for m in messages):
            # The SDK stops at the provider's end ([DONE], message_stop) and closes the
            # response without reading on to the end of the body: nothing was cut.
            cut = False
        return WatchedResponse(self.method, self.url, self.status, messages, cut, self.error)


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

    def handle_request(self, request: Any) -> Any:
        response = self.transport.handle_request(request)
        if _read(request, response):
            response.stream = _stream_class(response, _TeeStream, "SyncByteStream")(
                response.stream, _Copy(request, response, self.provider), self.on_response
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
            _deliver(self.on_response, self.copy.report(cut=True, error=f"the read failed: {e!r}"))
            raise
        finally:
            _deliver(self.on_response, self.copy.report(cut=not ended))

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            _deliver(self.on_response, self.copy.report(cut=True))


# ------------------------------------------------------------------ async


class AsyncTeeTransport(_Tee):
    """The async ``TeeTransport`` (``AsyncClient``s: ``openai.AsyncOpenAI``, ...)."""

    async def handle_async_request(self, request: Any) -> Any:
        response = await self.transport.handle_async_request(request)
        if _read(request, response):
            response.stream = _stream_class(response, _AsyncTeeStream, "AsyncByteStream")(
                response.stream, _Copy(request, response, self.provider), self.on_response
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
