"""What a tool call becomes: ``ValidatedCall`` (it passed validation, from
``Toolset.validate`` / ``AssembledMessage.validated``), ``ToolArgumentDone`` (a
top-level value of its arguments completed while it streamed) and
``ToolArgumentsReset`` (its arguments were replaced), from ``ArgumentTracker.update``.

Plain frozen dataclasses that import nothing of the package, so that the errors, the
message types and the core's stubs can name them without importing ``toolstitch.tools``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ToolArgumentDone", "ToolArgumentsReset", "ValidatedCall"]


@dataclass(frozen=True, slots=True)
class ValidatedCall:
    """A call that passed validation: safe to hand to the tool.

    ``arguments`` is the strictly parsed input (a ``dict``, members in the order
    they arrived; ``{}`` for an empty input). ``kind`` is the call's kind
    (``"function"``, ``"custom_tool_call"``, ``"computer_call"``, ...). A custom
    tool's call carries its free-form input as ``text`` (checked against the tool's
    grammar) and ``{}`` as ``arguments``.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    kind: str = "function"
    text: str | None = None


@dataclass(frozen=True, slots=True)
class ToolArgumentDone:
    """A top-level value of a streaming call's arguments is complete (from
    ``ArgumentTracker.update``): the call (``choice``, ``index``, ``id``, as in
    ``ToolCallStarted``), the value's JSON Pointer ``path`` (``"/path"``) and the parsed
    ``value``, equal to the strict parse's at that key. For display, or to start work
    early; run the tool only on the validated call."""

    choice: int
    index: int
    id: str
    path: str
    value: Any


@dataclass(frozen=True, slots=True)
class ToolArgumentsReset:
    """The provider replaced a streaming call's whole input (from
    ``ArgumentTracker.update``): every ``ToolArgumentDone`` reported for this call
    (``choice``, ``index``, ``id``) before is void; the members of the new input are
    reported again as they complete. Drop what was shown or started for it."""

    choice: int
    index: int
    id: str
