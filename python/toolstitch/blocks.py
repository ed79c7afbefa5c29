"""Immutable, provider-neutral content blocks and messages.

Every class is a frozen, slotted dataclass: hashable where its fields are,
comparable by value, and safe to share between threads. ``ToolUseBlock.input``
is the raw JSON text exactly as the provider streamed it (possibly partial or
empty); the core never parses it. Parse and validate it with
``toolstitch.Toolset`` before executing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

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


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Assistant or user text."""

    text: str = ""


@dataclass(frozen=True, slots=True)
class RefusalBlock:
    """A refusal the model sent instead of an answer."""

    text: str = ""


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Reasoning text, with the provider's signature when it sends one.

    ``provider_state`` is raw JSON text that must travel back to the provider
    unchanged (with ``provider_state_format`` naming its kind).
    """

    thinking: str = ""
    signature: str = ""
    signature_format: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image, by URL or as base64 data."""

    media_type: str = ""
    url: str = ""
    data: str = ""


@dataclass(frozen=True, slots=True)
class AudioBlock:
    """Audio, by URL or as base64 data, with an optional transcript."""

    media_type: str = ""
    url: str = ""
    data: str = ""
    transcript: str = ""


@dataclass(frozen=True, slots=True)
class DocumentBlock:
    """A document (PDF, plain text, ...), by URL or as data, with an optional title."""

    media_type: str = ""
    url: str = ""
    data: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """One tool call: ``input`` is the raw JSON text as received, never parsed here.

    ``kind`` is ``"function"`` for an ordinary JSON function call; otherwise it is the
    provider's own type of the call: ``"custom_tool_call"`` (a custom tool whose
    ``input`` is free-form text, not JSON), ``"computer_call"``, ``"shell_call"``,
    ``"local_shell_call"``, ``"apply_patch_call"`` (client tools that are not JSON
    functions: ``input`` is the item's own fields as a JSON object), or the type of
    a tool the provider ran itself (``"server_tool_use"``, ``"mcp_tool_use"``,
    ``"web_search_call"``, ``"executable_code"``, ...). ``server_side`` is true for
    those: the provider already ran them, and they are never for the client to run.
    """

    id: str = ""
    name: str = ""
    input: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""
    kind: str = "function"
    server_side: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The result of the tool call ``tool_use_id``.

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

    def __post_init__(self) -> None:
        if not isinstance(self.content, tuple):
            object.__setattr__(self, "content", tuple(self.content))


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


@dataclass(frozen=True, slots=True)
class Message:
    """A message: a role (``"user"``, ``"assistant"``, ``"system"``, ...) and its blocks."""

    role: str = ""
    blocks: tuple[Block, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.blocks, tuple):
            object.__setattr__(self, "blocks", tuple(self.blocks))


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The message answering one tool call, tied to it by ``tool_use_id``."""

    tool_use_id: str = ""
    blocks: tuple[Block, ...] = field(default=())
    is_error: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.blocks, tuple):
            object.__setattr__(self, "blocks", tuple(self.blocks))
