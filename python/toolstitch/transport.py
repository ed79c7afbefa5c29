"""The guard in process: ``enforce(client)`` puts the core's ``Guard`` on an SDK
client's own ``httpx`` / ``httpx2`` transport, with ``toolstitch proxy --enforce``'s
semantics and no second process.

``enforce(client, tools=None)`` takes an ``openai`` or ``anthropic`` client (sync or
async), any client holding an ``httpx`` or ``httpx2`` client as ``_client`` (the
frameworks built on those SDKs hand theirs over), or an ``httpx`` / ``httpx2`` client
itself, and wraps its transport in a ``GuardTransport`` (``AsyncGuardTransport`` for an
async one). It returns the client, changed in place.

Which responses are guarded, and against what:

- a ``POST`` whose JSON body declares tools (``tools``, or Bedrock's
  ``toolConfig.tools``): its calls are checked against ``tools`` when given (anything
  ``Toolset`` reads, a ``Toolset``, or a callable that takes a ``ToolUseBlock`` and
  raises to refuse it), else against the tools the request declared. Tools that cannot
  be read refuse every call;
- with ``tools`` given, also a ``POST`` to a path that speaks a dialect
  (``/v1/chat/completions``, ``/v1/messages``, ...: ``guard.dialect_for_path``) that
  declared none, so that an undeclared call is refused too;
- every other request, and every response that is not a success (2xx), passes untouched.

A guarded response's body is released event by event as the ``Guard`` allows: an event
that completes a call is held until every call it completes passes the check. When a
call fails, or the body cannot be read, is cut, or breaks a limit, nothing of that
event or after it reaches the SDK: before anything was released the SDK gets a whole
error response in the provider's shape (a status it does not retry: ``openai`` and
``anthropic`` raise ``APIStatusError``), after that the stream ends with the provider's
error event (they raise ``APIError`` while iterating). So an invalid call never reaches
the application as finished. The body reaches the SDK decoded (``Content-Encoding``
and ``Content-Length`` are dropped from the headers). A read that fails upstream raises
the transport's own error and nothing held is released.

See docs/frameworks.md for the recipes (pydantic-ai, LangChain, the OpenAI Agents SDK).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from toolstitch.errors import ToolstitchError
from toolstitch.guard import Guard, GuardStep, dialect_for_path, error_response
from toolstitch.guard import transport_for as _transport_for
from toolstitch.tools import Toolset
from toolstitch.watch import _http_client, _is_async, _stream_class

__all__ = ["AsyncGuardTransport", "GuardTransport", "enforce"]

_C = TypeVar("_C")
Check = Callable[[Any], object]


def enforce(client: _C, tools: Any = None, **limits: int) -> _C:
    """Guards every tool-calling response of ``client`` (see the module docstring);
    returns ``client`` itself, changed in place, so it may wrap a constructor call.
    ``limits`` are the ``Guard``'s (``max_held_bytes``, the ``Assembler``'s, ...)."""
    try:
        http = _http_client(client)
    except TypeError:
        raise TypeError(
            "enforce() takes an openai or anthropic client, or an httpx / httpx2 client, "
            f"not {type(client).__name__}"
        ) from None
    _checker(tools)  # tools that cannot be read are the caller's error, now
    http._transport = _wrap(http._transport, tools, limits)
    mounts = getattr(http, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in list(mounts.items()):
            if transport is not None:
                mounts[pattern] = _wrap(transport, tools, limits)
    return client


def _wrap(transport: Any, tools: Any, limits: dict[str, int]) -> Any:
    # Enforcing again replaces the guard (a client shared by several models is not
    # guarded twice over).
    if isinstance(transport, (GuardTransport, AsyncGuardTransport)):
        transport = transport.transport
    if _is_async(transport):
        return AsyncGuardTransport(transport, tools, **limits)
    return GuardTransport(transport, tools, **limits)


def _checker(tools: Any) -> Check | None:
    if tools is None:
        return None
    if callable(tools) and not isinstance(tools, Toolset):
        return tools  # type: ignore[no-any-return]
    toolset = tools if isinstance(tools, Toolset) else Toolset(tools)
    return toolset.validate


def _no_check(_call: Any) -> None:
    return None


def _refuse_every_call(why: str) -> Check:
    def check(_call: Any) -> None:
        raise ToolstitchError(f"the request's tools cannot be read ({why}): no call can be checked")

    return check


def _declared_tools(body: bytes) -> Any:
    """The tools a request's JSON body declares, or ``None``."""
    try:
        request = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(request, dict):
        return None
    tools = request.get("tools")
    if tools is None and isinstance(request.get("toolConfig"), dict):
        tools = request["toolConfig"].get("tools")  # Bedrock
    return tools or None


class _Plan:
    """The check one request's response gets, or ``None`` (not guarded)."""

    @staticmethod
    def check(request: Any, body: bytes, given: Check | None) -> Check | None:
        if str(request.method).upper() != "POST":
            return None
        declared = _declared_tools(body)
        if given is not None:
            if declared is not None or dialect_for_path(request.url.path) is not None:
                return given
            return None
        if declared is None:
            return None
        try:
            return Toolset(declared).validate
        except ToolstitchError as e:
            return _refuse_every_call(" ".join(str(e).split()))


def _new_guard(request: Any, response: Any, check: Check, limits: dict[str, int]) -> Guard:
    media = str(response.headers.get("content-type", "")).split(";")[0].strip().lower()
    encoding = str(response.headers.get("content-encoding", "identity")).strip().lower()
    options: dict[str, Any] = {
        "error_provider": dialect_for_path(request.url.path),
        "transport": _transport_for(media),
        "encoding": encoding or "identity",
        **limits,
    }
    return Guard(check, **options)


def _error(request: Any, response: Any, status: int, headers: Any, body: bytes) -> Any:
    """A whole error response of the response's own library, in place of ``response``."""
    return type(response)(status, headers=list(headers), content=body, request=request)


def _encoding_error(request: Any, response: Any) -> Any:
    encoding = str(response.headers.get("content-encoding", "")).strip().lower()
    message = f"the body is {encoding}-encoded, which the guard cannot decode"
    return _error(request, response, *error_response(dialect_for_path(request.url.path), message))


def _released(response: Any, stream: Any) -> Any:
    """``response`` with its body now ``stream`` (decoded, its length the guard's)."""
    for name in ("content-length", "content-encoding"):
        if name in response.headers:
            del response.headers[name]
    response.stream = stream
    return response


# ------------------------------------------------------------------ sync


class GuardTransport:
    """An ``httpx`` / ``httpx2`` transport that guards what ``transport`` returns (see
    the module docstring). ``enforce()`` installs it; it may also be given to a client
    directly: ``httpx.Client(transport=GuardTransport(httpx.HTTPTransport(), tools))``."""

    def __init__(self, transport: Any, tools: Any = None, **limits: int) -> None:
        self.transport = transport
        self._given = _checker(tools)
        options: dict[str, Any] = dict(limits)
        Guard(_no_check, **options)  # a limit it does not know is refused now
        self._limits = limits

    def handle_request(self, request: Any) -> Any:
        check = _Plan.check(request, request.read(), self._given)
        response = self.transport.handle_request(request)
        if check is None or not 200 <= int(response.status_code) < 300:
            return response
        try:
            guard = _new_guard(request, response, check, self._limits)
        except ValueError:
            response.close()
            return _encoding_error(request, response)
        chunks = iter(response.stream)
        first = GuardStep(b"", None)
        ended = False
        try:
            while not first.forward and first.blocked is None and not ended:
                chunk = next(chunks, None)
                if chunk is None:
                    first, ended = guard.finish(), True
                else:
                    first = guard.feed(chunk)
        except BaseException:
            response.close()
            raise
        if first.blocked is not None and not first.forward:
            response.close()
            b = first.blocked
            return _error(request, response, b.status, b.headers, b.body)
        body = _GuardedStream(response, chunks, guard, first, ended)
        return _released(response, _stream_class(response, _Body, "SyncByteStream")(body))

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> GuardTransport:
        self.transport.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.transport.__exit__(*exc)


class _GuardedStream:
    """The rest of a guarded body: what the guard releases, then the end (or the
    provider's error event)."""

    def __init__(
        self, response: Any, chunks: Iterator[bytes], guard: Guard, first: GuardStep, ended: bool
    ) -> None:
        self.upstream = response.stream
        self.chunks = chunks
        self.guard = guard
        self.first = first
        self.ended = ended

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from _emit(self.first)
            if self.first.blocked is not None or self.ended:
                return
            for chunk in self.chunks:
                step = self.guard.feed(chunk)
                yield from _emit(step)
                if step.blocked is not None:
                    return
            yield from _emit(self.guard.finish())
        finally:
            self.upstream.close()

    def close(self) -> None:
        self.upstream.close()


def _emit(step: GuardStep) -> Iterator[bytes]:
    if step.forward:
        yield step.forward
    if step.blocked is not None and step.blocked.tail:
        yield step.blocked.tail


class _Body:
    """The byte stream the SDK reads (made a subclass of its library's stream class)."""

    def __init__(self, body: _GuardedStream) -> None:
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        self.body.close()


# ------------------------------------------------------------------ async


class AsyncGuardTransport:
    """The async ``GuardTransport`` (``AsyncClient``s: ``openai.AsyncOpenAI``, ...)."""

    def __init__(self, transport: Any, tools: Any = None, **limits: int) -> None:
        self.transport = transport
        self._given = _checker(tools)
        options: dict[str, Any] = dict(limits)
        Guard(_no_check, **options)  # a limit it does not know is refused now
        self._limits = limits

    async def handle_async_request(self, request: Any) -> Any:
        check = _Plan.check(request, await request.aread(), self._given)
        response = await self.transport.handle_async_request(request)
        if check is None or not 200 <= int(response.status_code) < 300:
            return response
        try:
            guard = _new_guard(request, response, check, self._limits)
        except ValueError:
            await response.aclose()
            return _encoding_error(request, response)
        chunks = response.stream.__aiter__()
        first = GuardStep(b"", None)
        ended = False
        try:
            while not first.forward and first.blocked is None and not ended:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    first, ended = guard.finish(), True
                else:
                    first = guard.feed(chunk)
        except BaseException:
            await response.aclose()
            raise
        if first.blocked is not None and not first.forward:
            await response.aclose()
            b = first.blocked
            return _error(request, response, b.status, b.headers, b.body)
        body = _AsyncGuardedStream(response, chunks, guard, first, ended)
        return _released(response, _stream_class(response, _AsyncBody, "AsyncByteStream")(body))

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __aenter__(self) -> AsyncGuardTransport:
        await self.transport.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.transport.__aexit__(*exc)


class _AsyncGuardedStream:
    def __init__(
        self,
        response: Any,
        chunks: AsyncIterator[bytes],
        guard: Guard,
        first: GuardStep,
        ended: bool,
    ) -> None:
        self.upstream = response.stream
        self.chunks = chunks
        self.guard = guard
        self.first = first
        self.ended = ended

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            for data in _emit(self.first):
                yield data
            if self.first.blocked is not None or self.ended:
                return
            async for chunk in self.chunks:
                step = self.guard.feed(chunk)
                for data in _emit(step):
                    yield data
                if step.blocked is not None:
                    return
            for data in _emit(self.guard.finish()):
                yield data
        finally:
            await self.upstream.aclose()

    async def aclose(self) -> None:
        await self.upstream.aclose()


class _AsyncBody:
    def __init__(self, body: _AsyncGuardedStream) -> None:
        self.body = body

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.body.__aiter__()

    async def aclose(self) -> None:
        await self.body.aclose()
