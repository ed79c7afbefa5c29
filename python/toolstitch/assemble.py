"""Provider streams into finished messages: the ``Assembler`` and what it returns.

``Assembler(provider)`` (implemented in Rust, re-exported here) takes one streamed
response of one provider, as decoded events (``feed``) or as raw transport bytes
(``feed_bytes``), and builds one ``AssembledMessage`` per choice. Each ``feed``
returns the live events it caused (``ToolCallStarted``, ``ToolInputDelta``,
``ToolCallFinished``, ``TextDelta``, ``ThinkingDelta``, ``RefusalDelta``,
``MessageDone``) for interfaces that render as the stream goes: a lazy
``LiveEvents`` sequence whose objects are built only when it is read (``()`` when
nothing changed), so callers that ignore it pay for no objects.

Dialects: ``"openai-chat"`` (Chat Completions and every compatible server),
``"openai-responses"``, ``"anthropic"``, ``"bedrock"`` (ConverseStream),
``"gemini"`` (Gemini API and Vertex), ``"cohere"`` (v2), ``"ollama"``,
``"bedrock-invoke"`` (InvokeModelWithResponseStream), ``"gemini-interactions"`` (the
Gemini Interactions API), or ``"auto"`` (decided from
the first event that identifies itself). Each survives the provider quirks the
project numbers Q1-Q35: missing, repeated, sparse or string indexes; ids sent
late, empty or never (minted ``call_<choice>_<n>``); names after the arguments;
resent arguments; several choices; split UTF-8 and escapes; and more. A message
is ``complete`` only after the provider's explicit end with a normal reason.

Execute a call only when its message is ``complete`` and the call validates:
``message.validated(toolset)`` does both.

This module is where these names were first imported from, and stays so: it defines
nothing, and re-exports the message types of ``toolstitch.messages`` with the
``Assembler`` of ``toolstitch.streams`` (the package itself re-exports all of them; its
``toolstitch.assemble`` is the one-call function).
"""

from __future__ import annotations

from toolstitch._toolstitch import LiveEvents
from toolstitch.messages import (
    AssembledMessage,
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
    _event_plain,
)
from toolstitch.streams import Assembler

__all__ = [
    "AssembledMessage",
    "Assembler",
    "Finish",
    "LiveEvent",
    "LiveEvents",
    "MessageDone",
    "Note",
    "Problem",
    "ProblemKind",
    "Provider",
    "RefusalDelta",
    "SkippedEvent",
    "TextDelta",
    "ThinkingDelta",
    "TokenUsage",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolInputDelta",
    "_event_plain",
]
