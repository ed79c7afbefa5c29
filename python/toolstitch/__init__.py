"""toolstitch: reassemble the tool calls LLM providers stream in fragments.

The core (``ToolUses`` and its siblings) accumulates fragments by the provider's
index in Rust; blocks come out as immutable dataclasses; the wire codec writes
and reads them as exact JSON. Execute a tool call only after the stream is
complete and the call is validated.
"""

from __future__ import annotations

from toolstitch._toolstitch import (
    ImageChunk,
    Images,
    Refusal,
    RefusalChunk,
    Text,
    TextChunk,
    Thinking,
    ThinkingChunk,
    ToolUseChunk,
    ToolUses,
    __version__,
    marshal_block,
    marshal_blocks,
    marshal_message,
    unmarshal_block,
    unmarshal_blocks,
    unmarshal_message,
)
from toolstitch.blocks import (
    AudioBlock,
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    RefusalBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
)
from toolstitch.errors import (
    BlockDecodeError,
    BlockEncodeError,
    BlockLimitError,
    IndexRangeError,
    LimitError,
    ToolstitchError,
    UnknownBlockTypeError,
)

__all__ = [
    "AudioBlock",
    "Block",
    "BlockDecodeError",
    "BlockEncodeError",
    "BlockLimitError",
    "DocumentBlock",
    "ImageBlock",
    "ImageChunk",
    "Images",
    "IndexRangeError",
    "LimitError",
    "Message",
    "Refusal",
    "RefusalBlock",
    "RefusalChunk",
    "Text",
    "TextBlock",
    "TextChunk",
    "Thinking",
    "ThinkingBlock",
    "ThinkingChunk",
    "ToolResultBlock",
    "ToolResultMessage",
    "ToolUseBlock",
    "ToolUseChunk",
    "ToolUses",
    "ToolstitchError",
    "UnknownBlockTypeError",
    "__version__",
    "marshal_block",
    "marshal_blocks",
    "marshal_message",
    "unmarshal_block",
    "unmarshal_blocks",
    "unmarshal_message",
]
