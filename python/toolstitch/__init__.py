"""toolstitch: reassemble the tool calls LLM providers stream in fragments.

The core (``ToolUses`` and its siblings) accumulates fragments by the provider's
index in Rust; blocks come out as immutable dataclasses; the wire codec writes
and reads them as exact JSON. Execute a tool call only after the stream is
complete and the call is validated.

``assemble(source)`` / ``await aassemble(source)`` give the finished messages of one
streamed response from any source (bytes, an iterable of chunks or events, an httpx
response, an openai or anthropic stream); ``iter_events`` / ``aiter_events`` give its
live events as they happen.

The package has two layers, and its modules import downward only (type-only imports
too):

- the typed surface over the core: ``_toolstitch`` (the Rust extension, typed by its
  stubs), ``blocks`` (content blocks and messages), ``calls`` (a validated call, a
  completed argument), ``errors`` (the exception hierarchy) and ``messages`` (what an
  ``Assembler`` takes and gives: dialect names, limits, live events, the assembled
  message); none of them imports an application;
- the applications built on it: ``streams`` (the ``Assembler`` and one call from any
  source), ``tools`` (``Toolset``), ``render`` (messages back to each provider's
  format), ``replay`` with ``_sources`` and ``_capture`` (recordings to call records),
  ``_events`` (a stream's events and what each did, for ``replay --events``), ``arrow``
  (replay as an Arrow kernel; Parquet),
  ``guard`` (the core's guard: a response's bytes released only once the calls they
  complete pass), ``otel``, ``watch``, ``transport`` (the guard on an SDK client's
  own transport: ``enforce``), ``proxy`` (a package: the checking gateway),
  ``cli`` and ``dask``.

``assemble`` (the old home of the message types and the ``Assembler``) re-exports
them from ``messages`` and ``streams``; this package re-exports every public name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The module the message types were first imported from stays loaded (and importable);
# from the import of toolstitch.streams on, the package's ``assemble`` is the function.
from toolstitch import assemble as _assemble_module
from toolstitch._toolstitch import (
    ArgumentTracker,
    ImageChunk,
    Images,
    LiveEvents,
    PartialJson,
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
    parse_partial,
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
from toolstitch.calls import ToolArgumentDone, ToolArgumentsReset, ValidatedCall
from toolstitch.errors import (
    BlockDecodeError,
    BlockEncodeError,
    BlockLimitError,
    CrcError,
    DialectMismatchError,
    FramingError,
    IncompleteMessageError,
    IndexRangeError,
    LimitError,
    ProtocolError,
    ProviderError,
    RenderError,
    SchemaFailure,
    StreamClosedError,
    StreamConsumedError,
    StreamDecodeError,
    ToolDefinitionError,
    ToolInputError,
    ToolResultError,
    ToolSchemaError,
    ToolstitchError,
    ToolValidationError,
    UnknownBlockTypeError,
    UnknownProviderError,
    UnknownToolError,
)
from toolstitch.messages import (
    ApprovalRequest,
    ApprovalResponse,
    AssembledMessage,
    AssemblerLimits,
    Finish,
    LiveEvent,
    MessageDone,
    Note,
    Problem,
    ProblemKind,
    Provider,
    RefusalDelta,
    SkippedEvent,
    TextDelta,
    ThinkingDelta,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    ToolInputDelta,
)
from toolstitch.streams import (
    Assembler,
    AsyncLiveStream,
    LiveStream,
    aassemble,
    aiter_events,
    assemble,
    iter_events,
)

if TYPE_CHECKING:
    from toolstitch.render import IdMap, IdRule, render_assistant, render_results, render_turn
    from toolstitch.replay import (
        RECORD_KEYS,
        CallRecord,
        replay_bytes,
        replay_path,
        replay_paths,
    )
    from toolstitch.tools import ToolDefinition, Toolset
    from toolstitch.transport import enforce

del _assemble_module

# The names of the applications that only some programs use (rendering, replay, tool
# sets) are imported on first use (PEP 562), so that ``import toolstitch`` loads the
# assembler alone: their modules and what they import (json, re, gzip, base64, ...)
# load when a name of theirs is first asked for.
_LAZY = {
    "IdMap": "toolstitch.render",
    "IdRule": "toolstitch.render",
    "render_assistant": "toolstitch.render",
    "render_results": "toolstitch.render",
    "render_turn": "toolstitch.render",
    "RECORD_KEYS": "toolstitch.replay",
    "CallRecord": "toolstitch.replay",
    "replay_bytes": "toolstitch.replay",
    "replay_path": "toolstitch.replay",
    "replay_paths": "toolstitch.replay",
    "ToolDefinition": "toolstitch.tools",
    "Toolset": "toolstitch.tools",
    "enforce": "toolstitch.transport",
}


if not TYPE_CHECKING:  # type checkers read the imports above

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'toolstitch' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "RECORD_KEYS",
    "ApprovalRequest",
    "ApprovalResponse",
    "ArgumentTracker",
    "AssembledMessage",
    "Assembler",
    "AssemblerLimits",
    "AsyncLiveStream",
    "AudioBlock",
    "Block",
    "BlockDecodeError",
    "BlockEncodeError",
    "BlockLimitError",
    "CallRecord",
    "CrcError",
    "DialectMismatchError",
    "DocumentBlock",
    "Finish",
    "FramingError",
    "IdMap",
    "IdRule",
    "ImageBlock",
    "ImageChunk",
    "Images",
    "IncompleteMessageError",
    "IndexRangeError",
    "LimitError",
    "LiveEvent",
    "LiveEvents",
    "LiveStream",
    "Message",
    "MessageDone",
    "Note",
    "PartialJson",
    "Problem",
    "ProblemKind",
    "ProtocolError",
    "Provider",
    "ProviderError",
    "Refusal",
    "RefusalBlock",
    "RefusalChunk",
    "RefusalDelta",
    "RenderError",
    "SchemaFailure",
    "SkippedEvent",
    "StreamClosedError",
    "StreamConsumedError",
    "StreamDecodeError",
    "Text",
    "TextBlock",
    "TextChunk",
    "TextDelta",
    "Thinking",
    "ThinkingBlock",
    "ThinkingChunk",
    "ThinkingDelta",
    "TokenUsage",
    "ToolArgumentDone",
    "ToolArgumentsReset",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolInputDelta",
    "ToolInputError",
    "ToolResultBlock",
    "ToolResultError",
    "ToolResultMessage",
    "ToolSchemaError",
    "ToolUseBlock",
    "ToolUseChunk",
    "ToolUses",
    "ToolValidationError",
    "Toolset",
    "ToolstitchError",
    "UnknownBlockTypeError",
    "UnknownProviderError",
    "UnknownToolError",
    "ValidatedCall",
    "__version__",
    "aassemble",
    "aiter_events",
    "assemble",
    "enforce",
    "iter_events",
    "marshal_block",
    "marshal_blocks",
    "marshal_message",
    "parse_partial",
    "render_assistant",
    "render_results",
    "render_turn",
    "replay_bytes",
    "replay_path",
    "replay_paths",
    "unmarshal_block",
    "unmarshal_blocks",
    "unmarshal_message",
]
