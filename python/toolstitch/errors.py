"""The exception hierarchy: every error toolstitch raises derives from ToolstitchError.

``ToolstitchError`` is a ``ValueError``, so code that already guards against bad
values catches it. Subclasses are named for what went wrong; messages say which
call, which byte and which limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from toolstitch.blocks import ToolResultBlock

if TYPE_CHECKING:
    from toolstitch.calls import ValidatedCall

__all__ = [
    "BlockDecodeError",
    "BlockEncodeError",
    "BlockLimitError",
    "CrcError",
    "DialectMismatchError",
    "FramingError",
    "IncompleteMessageError",
    "IndexRangeError",
    "LimitError",
    "ProtocolError",
    "ProviderError",
    "RenderError",
    "SchemaFailure",
    "StreamClosedError",
    "StreamConsumedError",
    "StreamDecodeError",
    "ToolDefinitionError",
    "ToolInputError",
    "ToolResultError",
    "ToolSchemaError",
    "ToolValidationError",
    "ToolstitchError",
    "UnknownBlockTypeError",
    "UnknownProviderError",
    "UnknownToolError",
]


class ToolstitchError(ValueError):
    """Base class of every toolstitch error; ``str(error)`` says what went wrong and where."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)


class LimitError(ToolstitchError):
    """A fragment would cross a configured limit; it was rejected and nothing before it was lost."""


class IndexRangeError(ToolstitchError):
    """An index outside the signed 64-bit range; nothing was changed."""


class BlockDecodeError(ToolstitchError):
    """Wire data that is not valid: malformed JSON, invalid UTF-8, a field of the wrong type."""


class BlockEncodeError(ToolstitchError):
    """A block that cannot be written: partial or invalid tool input or provider state."""


class BlockLimitError(ToolstitchError):
    """Wire data over a size, count or nesting bound; refused before parsing."""


class UnknownBlockTypeError(BlockDecodeError):
    """A block whose type tag is missing, empty or unknown."""


class ToolDefinitionError(ToolstitchError):
    """A tool definition that is not in any known form, or whose schema does not compile."""


class _CallError(ToolstitchError):
    """An error about one tool call: ``call_id`` and ``tool_name`` say which."""

    def __init__(self, message: str, *, call_id: str = "", tool_name: str = "") -> None:
        super().__init__(message)
        self.call_id = call_id
        self.tool_name = tool_name


class UnknownToolError(_CallError):
    """A call of a tool that the toolset does not declare; ``declared`` lists the names it does."""

    def __init__(
        self,
        message: str,
        *,
        call_id: str = "",
        tool_name: str = "",
        declared: Iterable[str] = (),
    ) -> None:
        super().__init__(message, call_id=call_id, tool_name=tool_name)
        self.declared = tuple(declared)


class ToolInputError(_CallError):
    """Tool input that is not one JSON value: ``offset`` is the byte (in UTF-8) where it fails."""

    def __init__(
        self, message: str, offset: int = 0, *, call_id: str = "", tool_name: str = ""
    ) -> None:
        super().__init__(message, call_id=call_id, tool_name=tool_name)
        self.offset = offset


class SchemaFailure(NamedTuple):
    """One failed JSON Schema check: ``path`` is a JSON Pointer into the arguments (``""`` is
    the whole value), ``message`` says what is wrong."""

    path: str
    message: str


class ToolSchemaError(_CallError):
    """Tool arguments that do not satisfy the tool's JSON Schema; ``failures`` lists every
    failing check as a ``SchemaFailure(path, message)``."""

    def __init__(
        self,
        message: str,
        failures: Iterable[tuple[str, str]] = (),
        *,
        call_id: str = "",
        tool_name: str = "",
    ) -> None:
        super().__init__(message, call_id=call_id, tool_name=tool_name)
        self.failures = [SchemaFailure(path, text) for path, text in failures]


class IncompleteMessageError(ToolstitchError):
    """A message whose stream did not complete normally: its calls must not be executed."""


class ToolValidationError(ToolstitchError):
    """One or more calls of a turn failed validation.

    ``errors`` holds one error per failing call (``UnknownToolError``,
    ``ToolInputError`` or ``ToolSchemaError``, each with ``call_id`` and
    ``tool_name``), in call order; ``calls`` holds the ``ValidatedCall`` of every
    call that passed. ``results()`` turns the failures into error results to send
    back to the model, so that it can correct its calls.
    """

    def __init__(
        self,
        message: str,
        errors: Iterable[ToolstitchError] = (),
        calls: Iterable[ValidatedCall] = (),
    ) -> None:
        super().__init__(message)
        self.errors = tuple(errors)
        self.calls = tuple(calls)

    def results(self) -> tuple[ToolResultBlock, ...]:
        """One ``ToolResultBlock(call_id, (TextBlock(message),), is_error=True)`` per failing
        call, in call order; the message is the error's own text (which call, which tool,
        and what is wrong: the undeclared name, the byte where the JSON breaks, each schema
        failure's path).

        A turn needs a result for every call: answer the calls in ``calls`` too (run them,
        or refuse them with ``ToolResultBlock.error``). A failing call without an id cannot
        be answered: ``ToolResultError``.
        """
        results = []
        for error in self.errors:
            call_id = getattr(error, "call_id", "")
            if not call_id:
                raise ToolResultError(
                    f"a failing call has no id, so no result can answer it: {error}"
                )
            results.append(ToolResultBlock.error(call_id, str(error)))
        return tuple(results)


class ToolResultError(ToolstitchError):
    """Results that do not answer the calls of the turn: a result for an unknown call id,
    two results for one call, or a call left without a result."""


class RenderError(ToolstitchError):
    """A block the provider's request format cannot carry, or an unknown provider name."""


# --- provider streams (the Assembler) ---


class UnknownProviderError(ToolstitchError):
    """A provider name the Assembler does not know; the message lists the valid ones."""


class StreamDecodeError(ToolstitchError):
    """An event that cannot be read: not JSON, not an object, a field of the wrong type, or
    (with ``provider="auto"``) a shape no dialect has. ``event_index`` is the event's 1-based
    ordinal in the stream (every event fed counts) and ``event_type`` its type when known."""

    def __init__(self, message: str, *, event_index: int = 0, event_type: str = "") -> None:
        super().__init__(message)
        self.event_index = event_index
        self.event_type = event_type


class ProtocolError(StreamDecodeError):
    """An event that breaks the dialect's protocol: content after the message ended or after
    ``[DONE]``, content for a block after its own stop, a block or message opened twice, two
    calls with one id, a text delta on a tool-use block (quirks Q24-Q26). The event was not
    applied, and every message of the stream now carries a problem, so ``validated()``
    refuses it. ``rule`` names the rule (``"after-end"``, ``"after-done"``, ``"after-stop"``,
    ``"opened-twice"``, ``"started-twice"``, ``"duplicate-id"``, ``"wrong-block"``,
    ``"ended-twice"``, ``"snapshot-differs"``, ``"replayed"``) and ``target`` the call or
    block concerned, when there is one."""

    def __init__(
        self,
        message: str,
        *,
        event_index: int = 0,
        event_type: str = "",
        rule: str = "",
        target: str = "",
    ) -> None:
        super().__init__(message, event_index=event_index, event_type=event_type)
        self.rule = rule
        self.target = target


class DialectMismatchError(StreamDecodeError):
    """An event of another dialect than the one the Assembler was made for (Anthropic events
    fed to ``Assembler("openai-chat")``, quirk Q32). ``expected`` is the dialect named and
    ``looks_like`` the one the event belongs to."""

    def __init__(
        self,
        message: str,
        *,
        event_index: int = 0,
        event_type: str = "",
        expected: str = "",
        looks_like: str = "",
    ) -> None:
        super().__init__(message, event_index=event_index, event_type=event_type)
        self.expected = expected
        self.looks_like = looks_like


class ProviderError(ToolstitchError):
    """The provider reported an error inside the stream (an ``error`` event, ``response.failed``,
    an ``{"error": ...}`` chunk, an AWS event-stream exception). ``error_type`` is the most
    specific name the provider gave it (a string ``code`` such as ``tool_use_failed`` before
    its ``type``), ``raw`` the provider's error object as JSON text (empty when it sent none:
    it may hold more, such as Groq's ``failed_generation``); no message of the stream is
    complete afterwards."""

    def __init__(
        self,
        message: str,
        *,
        event_index: int = 0,
        event_type: str = "",
        error_type: str = "",
        raw: str = "",
    ) -> None:
        super().__init__(message)
        self.event_index = event_index
        self.event_type = event_type
        self.error_type = error_type
        self.raw = raw


class FramingError(ToolstitchError):
    """Transport bytes that cannot be framed: invalid UTF-8, a stream cut inside an event or
    frame, an unknown transport, a malformed AWS event-stream frame. ``offset`` is the byte
    (counted from the first byte fed) the error names, when it names one."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class CrcError(FramingError):
    """An AWS event-stream frame whose prelude or message CRC32 does not match its bytes."""


class StreamClosedError(ToolstitchError):
    """An event or bytes fed after ``close()``; start a new Assembler for a new stream."""


class StreamConsumedError(ToolstitchError):
    """A response or SDK stream whose body was already read, in part or whole, before it was
    passed to ``assemble`` (or ``feed_all``, ``iter_events``): the events read before are gone,
    so assembling the rest could give a plausible but wrong message. Pass it before reading
    from it, or feed each event to an ``Assembler`` as you read it."""
