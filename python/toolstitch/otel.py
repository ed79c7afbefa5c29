"""OpenTelemetry GenAI output: assembled messages as the semantic conventions record them.

``output_messages(messages)`` is the value of ``gen_ai.output.messages`` as the
OpenTelemetry GenAI semantic conventions define it: one ``OutputMessage`` per choice,
``role`` ``"assistant"``, its ``parts`` in the order they appeared in the stream:

- ``{"type": "text", "content": ...}`` for text (a refusal is a text part with
  ``"refusal": true``);
- ``{"type": "reasoning", "content": ...}`` for reasoning;
- ``{"type": "tool_call", "id", "name", "arguments"}`` for a call the client runs:
  ``arguments`` is the parsed JSON value when the input is one strict JSON value (an
  empty input is ``{}``), else the raw text as received (a cut call, a custom tool's
  free-form input);
- ``{"type": "server_tool_call", "id", "name", "server_tool_call": {"type": kind,
  "arguments": ...}}`` for a call the provider ran itself, and
  ``{"type": "server_tool_call_response", "id", "server_tool_call_response": {"type":
  kind, ...}}`` for its result;
- ``blob`` and ``uri`` parts (modality ``image``, ``audio`` or ``document``) for media.

``finish_reason`` is in the convention's words: ``stop``, ``length``,
``content_filter``, ``tool_call``, ``error`` (a stream that ended without the
provider's end counts as ``error``); a reason the convention has no word for is the
provider's own value. A message that cannot be trusted says so: ``"complete": false``,
and its ``problems`` when it has some (both are extra keys, which the convention's
schema allows).

``record(span, messages)`` sets ``gen_ai.output.messages`` (as JSON text: span
attributes are flat), ``gen_ai.response.finish_reasons`` and the usage attributes on an
OpenTelemetry span; given a ``StreamTiming`` it adds ``gen_ai.response.time_to_first_chunk``
and, given a meter, records the histograms ``gen_ai.client.operation.time_to_first_chunk``
and ``gen_ai.client.operation.time_per_output_chunk``.

Only ``record`` needs OpenTelemetry (``pip install 'toolstitch[otel]'``); it is given the
span and meter objects and imports nothing itself.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol, TypeVar

from toolstitch._toolstitch import _parse_strict
from toolstitch.blocks import (
    AudioBlock,
    Block,
    DocumentBlock,
    ImageBlock,
    RefusalBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage

__all__ = [
    "FINISH_REASONS",
    "OUTPUT_MESSAGES",
    "SEMCONV_SOURCE",
    "StreamTiming",
    "finish_reason",
    "output_message",
    "output_messages",
    "record",
    "timed",
]

OUTPUT_MESSAGES = "gen_ai.output.messages"
"""The span attribute ``record`` writes the messages to."""

SEMCONV_SOURCE = (
    "OpenTelemetry GenAI semantic conventions (semantic-conventions-genai, "
    "model/gen-ai/gen-ai-output-messages.json, 2026 development line)"
)
"""Which version of the convention the output follows."""

FINISH_REASONS = {
    "stop": "stop",
    "tool-calls": "tool_call",
    "length": "length",
    "content-filter": "content_filter",
    "error": "error",
}
"""``AssembledMessage.finish`` in the convention's ``FinishReason`` words."""

_T = TypeVar("_T")


# ------------------------------------------------------------------ the messages


def output_messages(messages: Iterable[AssembledMessage]) -> list[dict[str, Any]]:
    """The value of ``gen_ai.output.messages`` for these messages (one per choice, in
    the order given). Plain JSON data: ``json.dumps`` it for a span attribute."""
    result = []
    for message in messages:
        if not isinstance(message, AssembledMessage):
            raise TypeError(
                f"output_messages takes AssembledMessage objects (from Assembler.messages() "
                f"or toolstitch.assemble), not {type(message).__name__}"
            )
        result.append(output_message(message))
    return result


def output_message(message: AssembledMessage) -> dict[str, Any]:
    """One ``OutputMessage`` of the convention (see the module docstring)."""
    out: dict[str, Any] = {
        "role": "assistant",
        "parts": [part for block in message.blocks for part in _parts(block)],
        "finish_reason": finish_reason(message),
    }
    if not message.complete or message.problems:
        out["complete"] = False
        if message.problems:
            out["problems"] = list(message.problems)
    return out


def finish_reason(message: AssembledMessage) -> str:
    """The message's finish reason in the convention's words: ``error`` when the stream
    ended without the provider's end, the provider's own value when the convention has
    no word for it."""
    if message.finish is None:
        return "error"
    mapped = FINISH_REASONS.get(message.finish)
    if mapped is not None:
        return mapped
    return message.finish_reason or message.finish


def _parts(block: Block) -> Iterator[dict[str, Any]]:
    if isinstance(block, TextBlock):
        yield {"type": "text", "content": block.text}
    elif isinstance(block, RefusalBlock):
        yield {"type": "text", "content": block.text, "refusal": True}
    elif isinstance(block, ThinkingBlock):
        if block.thinking:
            yield {"type": "reasoning", "content": block.thinking}
    elif isinstance(block, ToolUseBlock):
        arguments = _arguments(block)
        if block.server_side:
            yield {
                "type": "server_tool_call",
                "id": block.id,
                "name": block.name or block.kind,
                "server_tool_call": {"type": block.kind, "arguments": arguments},
            }
        else:
            part: dict[str, Any] = {
                "type": "tool_call",
                "id": block.id,
                "name": block.name,
                "arguments": arguments,
            }
            if block.kind != "function":
                part["kind"] = block.kind
            yield part
    elif isinstance(block, ToolResultBlock):
        response: dict[str, Any] = {"type": block.kind or "tool_result"}
        text = "".join(b.text for b in block.content if isinstance(b, TextBlock))
        if text:
            response["content"] = text
        if block.provider_state is not None:
            response["result"] = _json_or_text(block.provider_state)
        if block.is_error:
            response["is_error"] = True
        yield {
            "type": "server_tool_call_response",
            "id": block.tool_use_id,
            "server_tool_call_response": response,
        }
    elif isinstance(block, (ImageBlock, AudioBlock, DocumentBlock)):
        yield _media(block)


def _media(block: ImageBlock | AudioBlock | DocumentBlock) -> dict[str, Any]:
    modality = (
        "image"
        if isinstance(block, ImageBlock)
        else "audio"
        if isinstance(block, AudioBlock)
        else "document"
    )
    part: dict[str, Any]
    if block.data or not block.url:
        part = {"type": "blob", "modality": modality, "content": block.data}
    else:
        part = {"type": "uri", "modality": modality, "uri": block.url}
    part["mime_type"] = block.media_type or None
    if isinstance(block, AudioBlock) and block.transcript:
        part["transcript"] = block.transcript
    return part


def _arguments(block: ToolUseBlock) -> Any:
    """The call's input as one strict JSON value, else the text as received."""
    if block.kind == "custom_tool_call":
        return block.input
    if not block.input.strip():
        return {}
    return _json_or_text(block.input)


def _json_or_text(text: str) -> Any:
    try:
        return _parse_strict(text)
    except (ToolstitchError, ValueError, RecursionError):
        return text


# ------------------------------------------------------------------ timing


@dataclass(slots=True)
class StreamTiming:
    """When a streamed response's chunks arrived: created (or ``restart()``-ed) when the
    request is issued, ``chunk()`` as each chunk is received. Monotonic seconds."""

    started: float = field(default_factory=time.perf_counter)
    chunks: list[float] = field(default_factory=list)

    def restart(self) -> None:
        """The request is issued now; chunks seen before are forgotten."""
        self.started = time.perf_counter()
        self.chunks.clear()

    def chunk(self) -> None:
        """A chunk arrived now."""
        self.chunks.append(time.perf_counter())

    @property
    def time_to_first_chunk(self) -> float | None:
        """Seconds from the request to the first chunk, or ``None`` before it."""
        return self.chunks[0] - self.started if self.chunks else None

    @property
    def time_per_output_chunk(self) -> list[float]:
        """Seconds between each chunk after the first and the chunk before it."""
        return [b - a for a, b in zip(self.chunks, self.chunks[1:], strict=False)]


def timed(chunks: Iterable[_T], timing: StreamTiming) -> Iterator[_T]:
    """Yields ``chunks`` unchanged, marking each one's arrival in ``timing``."""
    for chunk in chunks:
        timing.chunk()
        yield chunk


# ------------------------------------------------------------------ spans


class _Span(Protocol):
    def set_attribute(self, key: str, value: Any) -> None: ...


class _Histogram(Protocol):
    def record(self, amount: float, attributes: Any = None) -> None: ...


class _Meter(Protocol):
    def create_histogram(self, name: str, unit: str = "", description: str = "") -> Any: ...


_USAGE = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cached_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
)
# Usage keys for tokens written to the prompt cache (Anthropic, Bedrock).
_CACHE_CREATION_KEYS = ("cache_creation_input_tokens", "cacheWriteInputTokens")


def record(
    span: _Span,
    messages: Iterable[AssembledMessage],
    *,
    timing: StreamTiming | None = None,
    meter: _Meter | None = None,
    attributes: dict[str, Any] | None = None,
) -> None:
    """Sets the output of one response on an OpenTelemetry span.

    - ``gen_ai.output.messages``: ``output_messages(messages)`` as JSON text;
    - ``gen_ai.response.finish_reasons``: one per choice, in the convention's words;
    - ``gen_ai.usage.input_tokens``, ``output_tokens``, ``cache_read.input_tokens``,
      ``cache_creation.input_tokens`` and ``reasoning.output_tokens``, each only where
      the provider gave it;
    - with ``timing``: ``gen_ai.response.time_to_first_chunk`` (seconds); with a
      ``meter`` too, one ``gen_ai.client.operation.time_to_first_chunk`` and one
      ``gen_ai.client.operation.time_per_output_chunk`` per chunk after the first
      (histograms in seconds, with ``attributes`` such as ``gen_ai.request.model``).
    """
    messages = list(messages)
    values = output_messages(messages)
    span.set_attribute(OUTPUT_MESSAGES, json.dumps(values, ensure_ascii=False))
    span.set_attribute("gen_ai.response.finish_reasons", [m["finish_reason"] for m in values])
    if messages:
        tokens = messages[0].tokens
        for name, attribute in _USAGE:
            value = getattr(tokens, name)
            if value is not None:
                span.set_attribute(attribute, value)
        usage = messages[0].usage or {}
        for key in _CACHE_CREATION_KEYS:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                span.set_attribute("gen_ai.usage.cache_creation.input_tokens", value)
                break
    if timing is None:
        return
    first = timing.time_to_first_chunk
    if first is not None:
        span.set_attribute("gen_ai.response.time_to_first_chunk", first)
    if meter is None:
        return
    if first is not None:
        meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk, from the request to the first "
            "chunk of the response stream.",
        ).record(first, attributes)
    per_chunk = meter.create_histogram(
        "gen_ai.client.operation.time_per_output_chunk",
        unit="s",
        description="Time per output chunk, for each chunk after the first, from the end "
        "of the previous chunk to the end of this one.",
    )
    for interval in timing.time_per_output_chunk:
        per_chunk.record(interval, attributes)


# ------------------------------------------------------------------ replay --format otel


def replay_sources(sources: Iterable[Any], provider: Any, out: IO[str]) -> int:
    """``toolstitch replay --format otel``: one JSON line per choice of every stream of the
    sources (``toolstitch._sources.Source``), each an ``OutputMessage`` with the
    ``stream`` and ``choice`` it came from (and ``error`` when the stream could not be
    read or replayed, also said on standard error). Returns the exit status: 0 when every
    choice completed, else 1."""
    status = 0
    for source in sources:
        for line in _lines(source, provider):
            if line.get("complete") is False:
                status = 1
            if line.get("error") is not None:
                print(f"toolstitch: {line['stream']}: {line['error']}", file=sys.stderr)
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
        out.flush()
    return status


def _lines(source: Any, provider: Any) -> Iterator[dict[str, Any]]:
    from toolstitch._capture import capture_streams

    name: str = "<stdin>" if source.name == "-" else source.name
    streams: Iterable[tuple[str, list[AssembledMessage], str | None]]
    if source.error is not None:
        streams = [(name, [], source.error)]
    else:
        try:
            data = _read(source.name)
        except (OSError, ImportError) as e:
            streams = [(name, [], f"cannot read: {getattr(e, 'strerror', None) or e}")]
        else:
            streams = capture_streams(name, [data], provider)
    for stream, messages, error in streams:
        if not messages:
            yield {
                "stream": stream,
                "choice": 0,
                "role": "assistant",
                "parts": [],
                "finish_reason": "error",
                "complete": False,
                "error": error,
            }
        for message in messages:
            line = {"stream": stream, "choice": message.choice, **output_message(message)}
            if error is not None:
                line["complete"] = False
                line["error"] = error
            yield line


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read() if sys.stdin is not None else b""
    from toolstitch._sources import is_url

    if is_url(name):
        import fsspec

        with fsspec.open(name, "rb") as f:
            return bytes(f.read())
    with open(name, "rb") as f:
        return f.read()
