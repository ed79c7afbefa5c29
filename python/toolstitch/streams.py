"""One call from any stream: ``assemble``, ``aassemble``, ``iter_events``, ``aiter_events``
and the ``Assembler`` class they use.

A *source* is one streamed response in any of the forms Python code holds it:

- the raw bytes of the whole body (``bytes``, ``bytearray``, ``memoryview``);
- an iterable (for the ``a`` functions also an async iterable) whose items are either
  transport bytes cut anywhere (bytes-like items go to ``Assembler.feed_bytes``) or
  decoded events: dicts, JSON text, or objects of a provider's SDK (anything else goes
  to ``Assembler.feed``);
- an HTTP response of ``httpx`` or of ``httpx2`` (the client the ``openai`` and
  ``anthropic`` SDKs are built on): its body is read with ``iter_bytes()`` /
  ``aiter_bytes()``, so a ``Content-Encoding`` (gzip, ...) is undone first;
- an ``openai`` or ``anthropic`` SDK stream (``create(..., stream=True)``, the
  anthropic ``messages.stream()`` helper) or raw response
  (``with_streaming_response`` / ``with_raw_response``): toolstitch reads the bytes of
  the HTTP response underneath, never the SDK's own event objects.

How each is read, and what is closed, is in the docstring of ``assemble``.
"""

from __future__ import annotations

import inspect
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import aclosing, suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast

from toolstitch import _toolstitch
from toolstitch.errors import ProviderError, StreamConsumedError
from toolstitch.messages import AssemblerLimits, Provider

if TYPE_CHECKING:
    from typing_extensions import Self, Unpack

    from toolstitch._toolstitch import LiveEvents
    from toolstitch.messages import AssembledMessage, LiveEvent

__all__ = [
    "Assembler",
    "AssemblerLimits",
    "AsyncLiveStream",
    "LiveStream",
    "Provider",
    "aassemble",
    "aiter_events",
    "assemble",
    "iter_events",
]

_DEFAULTS: dict[str, int] = _toolstitch._ASSEMBLER_DEFAULTS
_BYTES = (bytes, bytearray, memoryview)


class Assembler(_toolstitch.Assembler):
    """Assembles one streamed response of one provider into one ``AssembledMessage``
    per choice: text, reasoning, refusals and tool calls, the provider's finish reason
    and usage, and whether the stream really completed.

    ``provider`` is ``"openai-chat"`` (Chat Completions and every compatible server),
    ``"openai-responses"``, ``"anthropic"``, ``"bedrock"`` (ConverseStream),
    ``"gemini"`` (Gemini API and Vertex), ``"cohere"`` (v2), ``"ollama"`` (Ollama's
    native ``/api/chat``), ``"bedrock-invoke"`` (InvokeModelWithResponseStream: Claude's
    or Nova's events in ``chunk`` frames), ``"gemini-interactions"`` (the Gemini
    Interactions API), or ``"auto"``: decided
    from the first event that identifies itself. ``live=False`` makes every feed
    return ``()`` without collecting live events; ``live="coalesced"`` merges, within
    each feed, every run of consecutive deltas of one call (or of one choice's text,
    reasoning or refusal) into one delta: the cheap form for a display. The ``max_*``
    limits bound calls per message, bytes of one call's input, bytes of the whole
    stream's content, bytes of one event, choices per stream and bytes of one SSE or
    JSON line; going over one raises ``LimitError`` naming it, and what came before
    stays readable.
    ``max_output_tokens`` is the request's own output-token limit, when the caller
    knows it: a message whose reported output tokens reach it was cut there, and is not
    complete whatever its finish reason says (a problem of kind ``"cut"``; some servers
    report such a cut as ``finish_reason: "tool_calls"``).
    ``split_concatenated=True`` gives a finished call whose input is two or more
    complete JSON objects one after another (``{"q":"A"}{"q":"B"}``, sent by some
    Gemini-compatible endpoints) as one call per object, with ids derived from the one
    sent (``<id>_1``, ``<id>_2``, listed in ``minted_ids``) and a note of kind
    ``"concatenated-split"``; without it such a call is kept whole and never validates.

    Feed it decoded events (``feed``: a dict, JSON text, or a provider SDK object) or
    raw transport bytes cut anywhere (``feed_bytes``: SSE, JSON lines or AWS
    event-stream, framed and decoded in Rust without the GIL), then ``close()`` and
    read ``messages()`` / ``message(choice)``. Each feed returns the live events it
    caused (``ToolCallStarted``, ``ToolInputDelta``, ``ToolCallFinished``,
    ``TextDelta``, ``ThinkingDelta``, ``RefusalDelta``, ``MessageDone``), built only
    when read.

    ``feed_all(source)`` / ``await afeed_all(source)`` feed a whole source (bytes, an
    iterable of chunks or events, an httpx response, an openai or anthropic stream),
    close, and return ``messages()``. As a context manager it closes on exit; on an
    exit by exception it closes too but the original exception is the one raised.

    Execute a call only when its message is ``complete`` and the call validates:
    ``message.validated(toolset)`` does both.
    """

    __slots__ = ()

    def __new__(
        cls,
        provider: Provider = "auto",
        *,
        live: bool | Literal["coalesced"] = True,
        max_calls: int = _DEFAULTS["max_calls"],
        max_input_bytes: int = _DEFAULTS["max_input_bytes"],
        max_total_bytes: int = _DEFAULTS["max_total_bytes"],
        max_event_bytes: int = _DEFAULTS["max_event_bytes"],
        max_choices: int = _DEFAULTS["max_choices"],
        max_line_bytes: int = _DEFAULTS["max_line_bytes"],
        max_output_tokens: int | None = None,
        split_concatenated: bool = False,
    ) -> Self:
        """A new assembler for one stream (the arguments are described on the class)."""
        return super().__new__(
            cls,
            provider,
            live=live,
            max_calls=max_calls,
            max_input_bytes=max_input_bytes,
            max_total_bytes=max_total_bytes,
            max_event_bytes=max_event_bytes,
            max_choices=max_choices,
            max_line_bytes=max_line_bytes,
            max_output_tokens=max_output_tokens,
            split_concatenated=split_concatenated,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # The exception that ended the block is the one the caller needs: an error
        # from closing a stream already broken would only hide it.
        _Closing(self.close).__exit__(exc_type, exc, tb)

    def feed_all(self, source: object) -> list[AssembledMessage]:
        """Feeds a whole source, closes, and returns ``messages()``.

        ``source`` is anything ``toolstitch.assemble`` takes: bytes, an iterable whose
        bytes-like items go to ``feed_bytes`` and other items to ``feed``, an httpx /
        httpx2 response, or an openai / anthropic stream or raw response (read as the
        bytes underneath, then closed, also when an error is raised). An async source
        needs ``afeed_all``.
        """
        opened = _open(source, asynchronous=False)
        with _Closing(opened.close):
            # Sync opening never gives an async iterable.
            _feed_each(self, cast("Iterable[object]", opened.items))
            self.close()
        return self.messages()

    async def afeed_all(self, source: object) -> list[AssembledMessage]:
        """``feed_all`` for async sources: an async iterable, an ``httpx.AsyncClient``
        (or ``httpx2``) response, an ``openai`` / ``anthropic`` ``AsyncStream`` or async
        raw response. Plain data (bytes, a list, a sync iterator) is taken too; a sync
        HTTP response or SDK stream is refused, since reading it would block the event
        loop (use ``feed_all``)."""
        opened = _open(source, asynchronous=True)
        async with _AsyncClosing(opened.close):
            items = opened.items
            if isinstance(items, AsyncIterable):
                async for item in items:
                    if isinstance(item, _BYTES):
                        self.feed_bytes(item)
                    else:
                        self.feed(item)
            else:
                _feed_each(self, items)
            self.close()
        return self.messages()


def _feed_each(asm: _toolstitch.Assembler, items: Iterable[object]) -> None:
    feed_bytes, feed = asm.feed_bytes, asm.feed
    for item in items:
        if isinstance(item, _BYTES):
            feed_bytes(item)
        else:
            feed(item)


def _feed_one(asm: _toolstitch.Assembler, item: object) -> LiveEvents | tuple[()]:
    if isinstance(item, _BYTES):
        return asm.feed_bytes(item)
    return asm.feed(item)


# ------------------------------------------------------------ opening a source


class _Opened:
    """What to read from a source, and what to close when done (``None``: nothing;
    its result may be awaitable)."""

    __slots__ = ("close", "items")

    def __init__(
        self,
        items: Iterable[object] | AsyncIterable[object],
        close: Callable[[], object] | None,
    ) -> None:
        self.items = items
        self.close = close


def _is_http_response(obj: object) -> bool:
    """An ``httpx`` or ``httpx2`` response (or anything shaped like one)."""
    return (
        hasattr(obj, "is_stream_consumed")
        and hasattr(obj, "is_closed")
        and hasattr(obj, "status_code")
        and (hasattr(obj, "iter_bytes") or hasattr(obj, "aiter_bytes"))
    )


def _http_response(source: object) -> Any:
    """The HTTP response that carries ``source``'s bytes: the source itself, an SDK raw
    response's ``http_response``, or an SDK stream's ``response``; ``None`` if none."""
    if _is_http_response(source):
        return source
    for attribute in ("http_response", "response"):
        candidate = getattr(source, attribute, None)
        if candidate is not None and _is_http_response(candidate):
            return candidate
    return None


def _body_cached(response: Any) -> bool:
    """Whether the response's whole body was read into memory (``read()``)."""
    try:
        response.content  # noqa: B018 (raises when the body was not read)
    except Exception:
        return False
    return True


def _reads(response: Any) -> tuple[bool, bool]:
    """Whether the response can be read (sync, async), from its byte stream's kind."""
    stream = getattr(response, "stream", None)
    if stream is None:
        return hasattr(response, "iter_bytes"), hasattr(response, "aiter_bytes")
    return hasattr(stream, "__iter__"), hasattr(stream, "__aiter__")


def _closer(source: object, response: Any, asynchronous: bool) -> Callable[[], object]:
    """Closes what ``source`` holds open: the SDK object's own ``close`` (it closes its
    response and anything the SDK tracks), else the response's."""
    for owner in (source, response):
        aclose: object = getattr(owner, "aclose", None)
        if asynchronous and callable(aclose):
            return aclose
        close: object = getattr(owner, "close", None)
        if callable(close) and (asynchronous or not inspect.iscoroutinefunction(close)):
            return close
    raise TypeError(f"cannot close {type(source).__name__}: it has no close()")


def _describe(source: object, response: Any) -> str:
    kind = type(source).__name__
    if source is response:
        return f"this {kind}"
    return f"this {kind} (its {type(response).__module__.split('.')[0]} response)"


def _open(source: object, *, asynchronous: bool) -> _Opened:
    """Decides how ``source`` is read (see ``assemble``). Type errors are raised here,
    before anything is read; I/O happens only when ``items`` is iterated."""
    if isinstance(source, _BYTES):
        return _Opened((source,), None)
    if isinstance(source, str):
        raise TypeError(
            "a str source is ambiguous: pass the whole stream as bytes (text.encode()), "
            "or an iterable of events (one JSON text per event)"
        )
    if isinstance(source, Mapping):
        raise TypeError("a dict is one event, not a stream: pass [event]")
    response = _http_response(source)
    if response is not None:
        return _open_response(source, response, asynchronous)
    cls = type(source)
    if hasattr(cls, "current_completion_snapshot") and hasattr(cls, "get_final_completion"):
        # openai's chat.completions.stream() helper: its response is private and it
        # yields derived events (`chunk`, `content.delta`, ...), not wire events, after
        # running the SDK's own accumulator on every chunk.
        raise TypeError(
            f"{cls.__name__} (openai's chat.completions.stream() helper) yields its own "
            "derived events, not the provider's: pass the stream of "
            "client.chat.completions.create(..., stream=True) instead"
        )
    raw = _botocore_raw(source)
    if raw is not None:
        return _Opened(raw.stream(), getattr(source, "close", None))
    if asynchronous and isinstance(source, AsyncIterable):
        return _Opened(source, None)
    if isinstance(source, Iterable):
        return _Opened(source, None)
    if isinstance(source, AsyncIterable):
        raise TypeError(
            f"{type(source).__name__} is an async iterable: use await aassemble(...), "
            "aiter_events(...) or Assembler.afeed_all(...)"
        )
    raise TypeError(
        "a source is bytes, an iterable of bytes chunks or events, an httpx response, or "
        f"an openai / anthropic stream or raw response, not {type(source).__name__}"
    )


def _botocore_raw(source: object) -> Any:
    """The raw response under a botocore ``EventStream`` (boto3's
    ``invoke_model_with_response_stream(...)["body"]``, ``converse_stream(...)["stream"]``),
    whose AWS event-stream bytes are read instead of botocore's parsed events; ``None``
    for any other source."""
    if type(source).__module__ != "botocore.eventstream":
        return None
    raw = getattr(source, "_raw_stream", None)
    events = getattr(source, "_event_generator", None)
    if raw is None or not hasattr(raw, "stream"):
        return None
    if events is not None and inspect.getgeneratorstate(events) != inspect.GEN_CREATED:
        raise StreamConsumedError(
            "the botocore EventStream was already iterated before it was passed here: the "
            "events read before are gone. Pass it before reading from it"
        )
    return raw


def _open_response(source: object, response: Any, asynchronous: bool) -> _Opened:
    sync_ok, async_ok = _reads(response)
    if asynchronous and not async_ok:
        raise TypeError(
            f"{_describe(source, response)} is read synchronously, which would block the "
            "event loop: use assemble(), iter_events() or Assembler.feed_all()"
        )
    if not asynchronous and not sync_ok:
        raise TypeError(
            f"{_describe(source, response)} is read asynchronously: use await "
            "aassemble(), aiter_events() or await Assembler.afeed_all()"
        )
    close = _closer(source, response, asynchronous)
    if asynchronous:
        return _Opened(_aread_body(source, response), close)
    return _Opened(_read_body(source, response), close)


def _check_unread(source: object, response: Any) -> None:
    if (response.is_stream_consumed or response.is_closed) and not _body_cached(response):
        what = "read" if response.is_stream_consumed else "closed"
        raise StreamConsumedError(
            f"the body of {_describe(source, response)} was already {what} before it was "
            "passed here (an SDK stream already iterated, a response already streamed): "
            "the events read before are gone, and assembling the rest could give a wrong "
            "message. Pass it before reading from it, or feed each event to an Assembler "
            "as you read it"
        )


# An error body is read only this far: enough for the provider's message.
_ERROR_BODY_BYTES = 4096


def _status_error(response: Any, head: bytes) -> ProviderError:
    status = int(response.status_code)
    text = head[:_ERROR_BODY_BYTES].decode("utf-8", "replace").strip()
    reason = getattr(response, "reason_phrase", "") or ""
    return ProviderError(
        f"the provider answered HTTP {status} {reason}".rstrip()
        + (f": {text}" if text else " with an empty body"),
        error_type=f"HTTP {status}",
    )


# The checks run when reading starts, inside the block that closes the source.


def _read_body(source: object, response: Any) -> Iterator[bytes]:
    _check_unread(source, response)
    if response.status_code >= 400:
        head = b""
        for chunk in response.iter_bytes():
            head += chunk
            if len(head) >= _ERROR_BODY_BYTES:
                break
        raise _status_error(response, head)
    yield from response.iter_bytes()


async def _aread_body(source: object, response: Any) -> AsyncIterator[bytes]:
    _check_unread(source, response)
    if response.status_code >= 400:
        head = b""
        async with aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                head += chunk
                if len(head) >= _ERROR_BODY_BYTES:
                    break
        raise _status_error(response, head)
    async for chunk in response.aiter_bytes():
        yield chunk


class _Closing:
    """Calls ``close`` on exit; an error from it never hides the one already raised."""

    __slots__ = ("_close",)

    def __init__(self, close: Callable[[], object] | None) -> None:
        self._close = close

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._close is None:
            return
        if exc_type is None:
            self._close()
        else:
            with suppress(Exception):
                self._close()


class _AsyncClosing:
    """``_Closing`` for a ``close`` that may return an awaitable."""

    __slots__ = ("_close",)

    def __init__(self, close: Callable[[], object] | None) -> None:
        self._close = close

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._close is None:
            return
        if exc_type is None:
            await _maybe_await(self._close())
        else:
            with suppress(Exception):
                await _maybe_await(self._close())


async def _maybe_await(result: object) -> None:
    if inspect.isawaitable(result):
        await result


# ------------------------------------------------------------ one call


def assemble(
    source: object, provider: Provider = "auto", **limits: Unpack[AssemblerLimits]
) -> list[AssembledMessage]:
    """The finished messages of one streamed response, one ``AssembledMessage`` per
    choice, from any source in one call. ``provider`` and the limits are those of
    ``Assembler``; live events are not collected (``iter_events`` gives them).

    How each source is read:

    - ``bytes`` / ``bytearray`` / ``memoryview``: the whole body, fed as transport bytes;
    - an ``httpx.Response`` or ``httpx2.Response`` of a streaming request: its body via
      ``iter_bytes()``, which undoes ``Content-Encoding`` (``iter_raw()`` would not); a
      status of 400 or more raises ``ProviderError`` carrying the start of the body;
    - an ``openai`` / ``anthropic`` ``Stream`` (``create(..., stream=True)``) or
      anthropic ``MessageStream`` (``messages.stream()``): the bytes of its ``response``,
      so the SDK never builds an event object; a raw response (``with_streaming_response``,
      ``with_raw_response``): the bytes of its ``http_response``. That is the openai SDK's
      default ``httpx2`` client, and ``httpx`` when one was passed as ``http_client``;
    - a botocore ``EventStream`` (boto3's ``invoke_model_with_response_stream(...)["body"]``,
      ``converse_stream(...)["stream"]``): the AWS event-stream bytes of its raw response,
      before botocore parses them (one already iterated raises ``StreamConsumedError``);
    - any other iterable: each bytes-like item goes to ``feed_bytes`` (transport bytes cut
      anywhere), anything else to ``feed`` (a dict, the JSON text of one event, an SDK
      event object). This is the fallback for SDK objects whose bytes are not reachable:
      ``iter(stream)``, a generator of SDK events, openai's ``responses.stream()`` helper
      are fed event by event. openai's ``chat.completions.stream()`` helper is a
      ``TypeError``: it yields derived events, not the provider's.

    A response or SDK object is closed when reading ends, also when an error is raised.
    One whose body was already read, in part or whole (an SDK stream already iterated),
    raises ``StreamConsumedError``: the events read before are gone, and assembling the
    rest could give a plausible but wrong message. A bare ``str`` or ``dict`` is a
    ``TypeError`` (pass bytes, or a list of events); so is an async source (use
    ``aassemble``). A malformed stream raises the named ``ToolstitchError`` of the
    ``Assembler`` (``StreamDecodeError``, ``FramingError``, ``ProviderError``, ...).
    """
    return Assembler(provider, live=False, **limits).feed_all(source)


async def aassemble(
    source: object, provider: Provider = "auto", **limits: Unpack[AssemblerLimits]
) -> list[AssembledMessage]:
    """``assemble`` for async sources: an async iterable of chunks or events, an
    ``httpx.AsyncClient`` / ``httpx2.AsyncClient`` response (read with
    ``aiter_bytes()``), an ``openai`` / ``anthropic`` ``AsyncStream``, async
    ``MessageStream`` or async raw response (the bytes underneath; closed when done).
    Plain data (bytes, a list, a sync iterator of chunks or events) is taken too; a sync
    HTTP response or SDK stream is a ``TypeError``, since reading it would block the
    event loop."""
    return await Assembler(provider, live=False, **limits).afeed_all(source)


# ------------------------------------------------------------ live events


class _Messages:
    """What the sync and async live streams share: the assembler and its messages."""

    __slots__ = ("_assembler", "_finished")

    def __init__(self, assembler: Assembler) -> None:
        self._assembler = assembler
        self._finished = False

    @property
    def assembler(self) -> Assembler:
        """The ``Assembler`` being fed (``partial_calls()`` for display)."""
        return self._assembler

    @property
    def finished(self) -> bool:
        """Whether the iteration ran to its end (source read, assembler closed)."""
        return self._finished

    def messages(self) -> list[AssembledMessage]:
        """One ``AssembledMessage`` per choice: final once the iteration ended."""
        return self._assembler.messages()

    def message(self, choice: int = 0) -> AssembledMessage:
        """The ``AssembledMessage`` of one choice (``KeyError`` for one never seen)."""
        return self._assembler.message(choice)


class LiveStream(_Messages):
    """The live events of one source as they happen: iterate it for ``ToolCallStarted``,
    ``ToolInputDelta``, ..., ``MessageDone``; once the iteration has ended (the source
    read to its end and the assembler closed), ``messages()`` / ``message(choice)`` are
    the finished messages. Made by ``iter_events``.

    ``assembler`` is the ``Assembler`` being fed (``assembler.partial_calls()`` gives the
    best-effort value of each open call, for display). ``messages()`` before the end are
    the messages so far, never ``complete`` unless the provider already ended them.
    ``finished`` tells whether the iteration ran to its end.

    The response or SDK stream read is closed at the end of the iteration, on an error,
    when ``close()`` is called, or on leaving ``with iter_events(...) as events:``
    (which is how to stop early and still release the connection). One pass only.
    """

    __slots__ = ("_close", "_events", "_items")

    def __init__(self, assembler: Assembler, source: object) -> None:
        opened = _open(source, asynchronous=False)
        super().__init__(assembler)
        # Sync opening never gives an async iterable.
        self._items = cast("Iterable[object]", opened.items)
        self._close = opened.close
        self._events = self._run()

    def _run(self) -> Generator[LiveEvent, None, None]:
        asm = self._assembler
        with _Closing(self._release):
            for item in self._items:
                events = _feed_one(asm, item)
                if events:
                    yield from events
            yield from asm.close()
            self._finished = True

    def _release(self) -> None:
        close, self._close = self._close, None
        if close is not None:
            close()

    def __iter__(self) -> Iterator[LiveEvent]:
        return self._events

    def __next__(self) -> LiveEvent:
        return next(self._events)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _Closing(self.close).__exit__(exc_type, exc, tb)

    def close(self) -> None:
        """Stops reading and closes the response or SDK stream (idempotent). The
        assembler is left as it is: messages the provider had not ended stay
        incomplete."""
        self._events.close()
        self._release()


class AsyncLiveStream(_Messages):
    """``LiveStream`` for async sources (``async for``, ``async with``, ``await
    aclose()``). Made by ``aiter_events``."""

    __slots__ = ("_close", "_events", "_items")

    def __init__(self, assembler: Assembler, source: object) -> None:
        opened = _open(source, asynchronous=True)
        super().__init__(assembler)
        self._items = opened.items
        self._close = opened.close
        self._events = self._run()

    async def _run(self) -> AsyncGenerator[LiveEvent, None]:
        asm = self._assembler
        async with _AsyncClosing(self._release):
            items = self._items
            if isinstance(items, AsyncIterable):
                async for item in items:
                    events = _feed_one(asm, item)
                    for event in events:
                        yield event
            else:
                for item in items:
                    for event in _feed_one(asm, item):
                        yield event
            for event in asm.close():
                yield event
            self._finished = True

    async def _release(self) -> None:
        close, self._close = self._close, None
        if close is not None:
            await _maybe_await(close())

    def __aiter__(self) -> AsyncIterator[LiveEvent]:
        return self._events

    async def __anext__(self) -> LiveEvent:
        return await self._events.__anext__()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self.aclose()
        else:
            with suppress(Exception):
                await self.aclose()

    async def aclose(self) -> None:
        """Stops reading and closes the response or SDK stream (idempotent)."""
        await self._events.aclose()
        await self._release()


def iter_events(
    source: object, provider: Provider = "auto", **limits: Unpack[AssemblerLimits]
) -> LiveStream:
    """The live events of ``source`` as they happen, for interfaces that render while
    the stream goes; the finished messages from ``messages()`` once the loop ended::

        with toolstitch.iter_events(response) as events:
            for event in events:
                render(event)
        messages = events.messages()

    Sources, reading and closing are those of ``assemble``."""
    return LiveStream(Assembler(provider, live=True, **limits), source)


def aiter_events(
    source: object, provider: Provider = "auto", **limits: Unpack[AssemblerLimits]
) -> AsyncLiveStream:
    """``iter_events`` for async sources (those of ``aassemble``)::

    async with toolstitch.aiter_events(response) as events:
        async for event in events:
            render(event)
    messages = events.messages()
    """
    return AsyncLiveStream(Assembler(provider, live=True, **limits), source)
