"""The guard: the tool-loop boundary on live traffic.

``Guard(tools)`` is fed a response's raw bytes as they arrive (SSE, JSON lines or a whole
JSON body, AWS event-stream; gzip and deflate too) and answers, per read, which bytes
may be forwarded now. Everything goes out event by event, except an event that
completes a call: it is held until every call it completes passes ``Toolset.validate``.
When a call fails, the response is blocked: nothing of that event or after it is ever
released, and :class:`Blocked` gives the end of the stream in the provider's own error
shape (``tail``) or, when nothing was released yet, a whole error response
(``status``, ``headers``, ``body``). Anything the guard cannot check blocks from that
point: it never forwards unchecked past it.

The work is done in the Rust core (``toolstitch._toolstitch._Guard``); which events
complete a call is derived from each dialect's protocol, and the error shapes are each
dialect's own declaration. See docs/integrations.md ("The guard").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from toolstitch._toolstitch import (
    _dialect_for_path,
    _error_response,
    _Guard,
    _provider_name,
)
from toolstitch.blocks import ToolUseBlock
from toolstitch.messages import AssembledMessage
from toolstitch.tools import Toolset

__all__ = [
    "Blocked",
    "Guard",
    "GuardStep",
    "dialect_for_path",
    "error_response",
    "provider_name",
    "transport_for",
]

Outcome = Literal["open", "passed", "blocked", "unchecked"]
Cause = Literal["invalid-call", "incomplete", "unreadable", "limit", "encoding", "ambiguous"]


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why a response was blocked, and how to end it.

    ``cause`` is ``"invalid-call"`` (a call failed the check: ``call_id`` and
    ``tool_name`` name it), ``"incomplete"`` (a message with calls ended without a
    normal end, or the stream was cut), ``"unreadable"``, ``"limit"``, ``"encoding"`` or
    ``"ambiguous"`` (clients may read the response otherwise than the guard: an SSE
    event without its name, a BOM, a call's name sent in pieces; see docs/guard.md).
    ``tail`` ends the stream after the bytes already forwarded; ``status``, ``headers``
    and ``body`` are a whole error response for when nothing was forwarded yet."""

    cause: Cause
    reason: str
    choice: int | None
    call_id: str | None
    tool_name: str | None
    tail: bytes
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class GuardStep:
    """What one read (or the end) gives: ``forward`` the bytes that may go out now; on
    the step that blocked, ``blocked`` (forward ``forward``, then end the stream)."""

    forward: bytes
    blocked: Blocked | None


def _blocked(raw: Any) -> Blocked | None:
    if raw is None:
        return None
    cause, reason, choice, call_id, tool_name, tail, status, headers, body = raw
    return Blocked(
        cause, reason, choice, call_id, tool_name, tail, status, tuple(map(tuple, headers)), body
    )


class Guard:
    """Guards one response (see the module docstring).

    ``tools`` is what the request declared, in any form ``Toolset`` reads (or a
    ``Toolset``), or a callable that takes a ``ToolUseBlock`` and raises to refuse it.
    ``provider`` is the dialect (``"auto"`` tells it from the first event);
    ``error_provider`` shapes the error when no dialect was read yet (the request's,
    from its path: ``dialect_for_path``). ``transport`` is ``"sse"``, ``"json"`` or
    ``"eventstream"`` when the response's content type names one (``transport_for``),
    else it is told from the first bytes; ``encoding`` is the response's
    ``Content-Encoding`` (``identity``, ``gzip``, ``deflate``): the guard forwards the
    body decoded. The limits are the ``Assembler``'s, plus ``max_held_bytes`` (bytes
    held back at once), ``max_decoded_bytes`` and ``max_ratio`` (a compressed body's
    bounds) and ``max_check_bytes`` (bytes of messages read to check calls, in all).
    Their defaults: ``max_calls`` 4096, ``max_input_bytes`` 8 MiB, ``max_total_bytes``
    64 MiB, ``max_event_bytes`` and ``max_line_bytes`` 16 MiB each, ``max_held_bytes``
    the sum of those two, ``max_decoded_bytes`` 256 MiB, ``max_ratio`` 200,
    ``max_check_bytes`` 256 MiB.
    """

    __slots__ = ("_check", "_core")

    def __init__(
        self,
        tools: Any,
        *,
        provider: str = "auto",
        error_provider: str | None = None,
        transport: str | None = None,
        encoding: str = "identity",
        **limits: int,
    ) -> None:
        check: Callable[[ToolUseBlock], object]
        if callable(tools) and not isinstance(tools, Toolset):
            check = tools
        else:
            toolset = tools if isinstance(tools, Toolset) else Toolset(tools)
            check = toolset.validate
        self._check = check
        self._core = _Guard(
            check,
            provider=provider,
            error_provider=error_provider,
            transport=transport,
            encoding=encoding,
            **limits,
        )

    def feed(self, data: bytes) -> GuardStep:
        """The next bytes of the body, as received."""
        forward, blocked = self._core.feed(data)
        return GuardStep(forward, _blocked(blocked))

    def finish(self) -> GuardStep:
        """The body ended: the rest is released, or the response blocked (a cut stream,
        a message that did not end normally)."""
        forward, blocked = self._core.finish()
        return GuardStep(forward, _blocked(blocked))

    def client_left(self) -> Outcome:
        """The client stopped reading before the body ended. A client may leave on
        reading the response's own end (the openai SDK closes its response on
        ``[DONE]``, before the upstream's connection ends): when every message had
        already ended normally and nothing is held back, the verdict is given now, as
        ``finish()`` gives it for a body ending there (nothing is left to forward).
        Otherwise, or for a compressed body, the outcome stays ``"open"``: the client
        left before the response's end."""
        outcome: Outcome = self._core.client_left()
        return outcome

    @property
    def outcome(self) -> Outcome:
        """``"open"``, ``"passed"``, ``"blocked"`` or ``"unchecked"`` (released whole
        without a check: see ``unchecked_reason``)."""
        outcome: Outcome = self._core.outcome
        return outcome

    @property
    def blocked(self) -> Blocked | None:
        return _blocked(self._core.blocked)

    @property
    def unchecked_reason(self) -> str | None:
        return self._core.unchecked_reason

    @property
    def dialect(self) -> str | None:
        return self._core.dialect

    @property
    def transport(self) -> str | None:
        return self._core.transport

    @property
    def released(self) -> int:
        """Bytes forwarded so far (decoded)."""
        return self._core.released

    @property
    def held(self) -> int:
        """Bytes held back now."""
        return self._core.held

    def messages(self) -> list[AssembledMessage]:
        """The messages assembled so far."""
        return self._core.messages()


def transport_for(content_type: str | None) -> str | None:
    """The transport a response's ``Content-Type`` names, if it names one."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "text/event-stream":
        return "sse"
    if media == "application/vnd.amazon.eventstream":
        return "eventstream"
    if media == "application/json" or media.endswith(("ndjson", "jsonl", "json-seq")):
        return "json"
    return None


def error_response(provider: str | None, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """A whole error response in ``provider``'s shape (OpenAI's when ``None``):
    ``(status, headers, body)``; the status is one the provider's SDK does not retry."""
    status, headers, body = _error_response(provider, message)
    return status, list(headers), body


def dialect_for_path(path: str) -> str | None:
    """The dialect a request path speaks, by the dialects' declarations
    (``/v1/chat/completions``: ``openai-chat``), or ``None``."""
    return _dialect_for_path(path)


def provider_name(dialect: str, path: str = "") -> str:
    """``gen_ai.provider.name`` for a dialect, in OpenTelemetry's convention; a Gemini
    request to Vertex AI (a path under ``/projects/…/locations/…``) is ``gcp.vertex_ai``."""
    name = _provider_name(dialect)
    if name == "gcp.gemini" and "/projects/" in path and "/locations/" in path:
        return "gcp.vertex_ai"
    return name
