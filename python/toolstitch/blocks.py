"""Immutable, provider-neutral content blocks and messages.

Every class is a frozen, slotted dataclass: hashable where its fields are,
comparable by value, and safe to share between threads. ``ToolUseBlock.input``
is the raw JSON text exactly as the provider streamed it (possibly partial or
empty); the core never parses it. Parse and validate it with
``toolstitch.Toolset`` before executing anything.

Constructors check their arguments: a ``str`` field takes only a ``str``, a
``bool`` field only a ``bool``, ``provider_state`` a ``str`` or ``None``, and a
sequence of blocks (``ToolResultBlock.content``, ``Message.blocks``,
``ToolResultMessage.blocks``) any iterable of blocks, kept as a tuple. Anything
else is a ``TypeError`` naming the field (and the position of a bad item).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "AudioBlock",
    "Block",
    "DocumentBlock",
    "ImageBlock",
    "Message",
    "RefusalBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolResultMessage",
    "ToolUseBlock",
]

# The check each field annotation gets: a condition that is true for a bad value
# (``v`` is the value), and what the field takes, for the message.
_CHECKS = {
    "str": ("not isinstance(v, str)", "a str"),
    "str | None": ("v is not None and not isinstance(v, str)", "a str or None"),
    "bool": ("v is not True and v is not False", "a bool"),
}
_BLOCKS_ANNOTATION = "tuple[Block, ...]"


class _Checked:
    """Gives each block dataclass a ``__post_init__`` that checks its field types.

    The checks are generated once per class from its annotations (straight-line
    ``isinstance`` tests: building blocks from Rust stays cheap), so a field added
    to a block is checked without more code; an annotation with no check here
    stops the import.
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        lines = ["def __post_init__(self):"]
        for name, annotation in inspect.get_annotations(cls).items():
            if annotation == _BLOCKS_ANNOTATION:
                lines += [
                    f"    v = self.{name}",
                    "    if type(v) is tuple:",
                    "        for i in v:",
                    "            if not isinstance(i, _BLOCK_CLASSES):",
                    f"                _blocks(self, {name!r}, v)",
                    "    else:",
                    f"        object.__setattr__(self, {name!r}, _blocks(self, {name!r}, v))",
                ]
            elif annotation in _CHECKS:
                bad, expected = _CHECKS[annotation]
                lines += [
                    f"    v = self.{name}",
                    f"    if {bad}:",
                    f"        _wrong(self, {name!r}, {expected!r}, v)",
                ]
            else:
                raise TypeError(f"{cls.__name__}.{name}: no argument check for {annotation!r}")
        namespace: dict[str, Any] = {}
        exec("\n".join([*lines, "    pass"]), globals(), namespace)
        cls.__post_init__ = namespace["__post_init__"]  # type: ignore[method-assign]

    def __post_init__(self) -> None:
        """Checks the field types (each class gets its own, generated from its fields)."""


def _wrong(block: object, name: str, expected: str, value: object) -> None:
    raise TypeError(f"{type(block).__name__}.{name} must be {expected}, not {type(value).__name__}")


def _blocks(owner: object, name: str, value: Any) -> tuple[Block, ...]:
    """``value`` as a tuple of blocks, or a ``TypeError`` saying which item is not one."""
    where = f"{type(owner).__name__}.{name}"
    if isinstance(value, (str, bytes, bytearray)):
        hint = ""
        if isinstance(value, str):
            shortcut = (
                ", or use ToolResultBlock.text(tool_use_id, text)"
                if isinstance(owner, ToolResultBlock)
                else ""
            )
            hint = f" (wrap text in a block: (TextBlock({value[:40]!r}),){shortcut})"
        raise TypeError(f"{where} must be a sequence of blocks, not {type(value).__name__}{hint}")
    if isinstance(value, _BLOCK_CLASSES):
        raise TypeError(
            f"{where} must be a sequence of blocks, not one {type(value).__name__} "
            f"(wrap it: ({type(value).__name__}(...),))"
        )
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(
            f"{where} must be a sequence of blocks, not {type(value).__name__}"
        ) from None
    for position, item in enumerate(items):
        if not isinstance(item, _BLOCK_CLASSES):
            raise TypeError(
                f"{where}[{position}] must be a block (TextBlock, ToolUseBlock, ...), "
                f"not {type(item).__name__}"
            )
    return items


@dataclass(frozen=True, slots=True)
class TextBlock(_Checked):
    """Assistant or user text."""

    text: str = ""


@dataclass(frozen=True, slots=True)
class RefusalBlock(_Checked):
    """A refusal the model sent instead of an answer."""

    text: str = ""


@dataclass(frozen=True, slots=True)
class ThinkingBlock(_Checked):
    """Reasoning text, with the provider's signature when it sends one.

    ``signature`` (with ``signature_format`` naming the provider it belongs to) and
    ``provider_state`` (raw JSON text, with ``provider_state_format``) must travel
    back to the provider unchanged; the renderers send them back.
    """

    thinking: str = ""
    signature: str = ""
    signature_format: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""


@dataclass(frozen=True, slots=True)
class ImageBlock(_Checked):
    """An image, by URL or as base64 data."""

    media_type: str = ""
    url: str = ""
    data: str = ""


@dataclass(frozen=True, slots=True)
class AudioBlock(_Checked):
    """Audio, by URL or as base64 data, with an optional transcript."""

    media_type: str = ""
    url: str = ""
    data: str = ""
    transcript: str = ""


@dataclass(frozen=True, slots=True)
class DocumentBlock(_Checked):
    """A document (PDF, plain text, ...), by URL or as data, with an optional title."""

    media_type: str = ""
    url: str = ""
    data: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class ToolUseBlock(_Checked):
    """One tool call: ``input`` is the raw JSON text as received, never parsed here.

    ``provider_state`` is raw JSON text the provider needs back with the call (a
    Gemini ``thoughtSignature``, a Responses item id), named by
    ``provider_state_format``. Validate ``input`` with ``Toolset.validate`` before
    running the call.

    ``kind`` is ``"function"`` for an ordinary JSON function call; otherwise it is the
    provider's own type of the call: ``"custom_tool_call"`` (a custom tool whose
    ``input`` is free-form text, not JSON), ``"computer_call"``, ``"shell_call"``,
    ``"local_shell_call"``, ``"apply_patch_call"`` (client tools that are not JSON
    functions: ``input`` is the item's own fields as a JSON object), or the type of
    a tool the provider ran itself (``"server_tool_use"``, ``"mcp_tool_use"``,
    ``"web_search_call"``, ``"executable_code"``, ...). ``server_side`` is true for
    those: the provider already ran them, and they are never for the client to run.
    ``"mcp_approval_request"`` (OpenAI Responses, Q60) is a request that the client
    approve a call the provider runs: ``server_side`` too, listed in
    ``AssembledMessage.approval_requests`` and answered by an ``ApprovalResponse``.
    """

    id: str = ""
    name: str = ""
    input: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""
    kind: str = "function"
    server_side: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultBlock(_Checked):
    """The result of the tool call ``tool_use_id``.

    ``content`` is a sequence of blocks (kept as a tuple), usually one
    ``TextBlock``. A plain string is refused with a ``TypeError`` rather than
    guessed at: use ``ToolResultBlock.text(call_id, "sunny")``, or
    ``ToolResultBlock.error(call_id, "city not found")`` for a failure the model
    should see (``is_error=True``).

    A result the client sends has an empty ``kind``. A message assembled from a stream
    also holds the results of tools the provider ran itself: their ``kind`` is the
    provider's type for them (``"web_search_tool_result"``, ``"mcp_tool_result"``,
    ``"code_execution_result"``, ``"image_generation_call"``, ...), ``content`` holds
    their text where they have some, and ``provider_state`` the provider's result as
    raw JSON, to be sent back unchanged.
    """

    tool_use_id: str = ""
    content: tuple[Block, ...] = ()
    is_error: bool = False
    kind: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""

    @classmethod
    def text(cls, tool_use_id: str, text: str, *, is_error: bool = False) -> ToolResultBlock:
        """A result whose content is one ``TextBlock(text)``."""
        return cls(tool_use_id, (TextBlock(text),), is_error)

    @classmethod
    def error(cls, tool_use_id: str, text: str) -> ToolResultBlock:
        """A failed result (``is_error=True``) whose content is one ``TextBlock(text)``."""
        return cls(tool_use_id, (TextBlock(text),), True)


Block: TypeAlias = (
    TextBlock
    | RefusalBlock
    | ThinkingBlock
    | ImageBlock
    | AudioBlock
    | DocumentBlock
    | ToolUseBlock
    | ToolResultBlock
)

_BLOCK_CLASSES = (
    TextBlock,
    ToolUseBlock,
    ThinkingBlock,
    RefusalBlock,
    ToolResultBlock,
    ImageBlock,
    AudioBlock,
    DocumentBlock,
)


@dataclass(frozen=True, slots=True)
class Message(_Checked):
    """A message: a role (``"user"``, ``"assistant"``, ``"system"``, ...) and its blocks
    (any sequence of blocks, kept as a tuple)."""

    role: str = ""
    blocks: tuple[Block, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class ToolResultMessage(_Checked):
    """The message answering one tool call, tied to it by ``tool_use_id``; ``blocks`` is
    any sequence of blocks, kept as a tuple."""

    tool_use_id: str = ""
    blocks: tuple[Block, ...] = field(default=())
    is_error: bool = False
