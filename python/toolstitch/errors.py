"""The exception hierarchy: every error toolstitch raises derives from ToolstitchError.

``ToolstitchError`` is a ``ValueError``, so code that already guards against bad
values catches it. Subclasses are named for what went wrong; messages say which
call, which byte and which limit.
"""

from __future__ import annotations

__all__ = [
    "BlockDecodeError",
    "BlockEncodeError",
    "BlockLimitError",
    "IndexRangeError",
    "LimitError",
    "ToolstitchError",
    "UnknownBlockTypeError",
]


class ToolstitchError(ValueError):
    """Base class of every toolstitch error."""


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
