"""The fastest pure-Python pipeline ``benches/compare.py`` measures: its baseline loop
(split lines, decode each event, a dict accumulator by index) over
``msgspec.json.Decoder`` with typed ``Struct``s that declare only the fields the loop
reads; msgspec skips every other field without building it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

Calls = list[tuple[str, str, str]]


def sse_data(reads: Iterable[bytes]) -> Iterable[bytes]:
    """The ``data:`` payloads of an SSE body arriving in reads (the same split as the
    orjson baseline's)."""
    buf = b""
    for chunk in reads:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                yield line[6:]


# ------------------------------------------------------------------ OpenAI chat


class Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class ToolCall(msgspec.Struct):
    index: int
    id: str | None = None
    function: Function | None = None


class Delta(msgspec.Struct):
    tool_calls: list[ToolCall] | None = None


class Choice(msgspec.Struct):
    delta: Delta


class Chunk(msgspec.Struct):
    choices: list[Choice]


_chunk = msgspec.json.Decoder(Chunk).decode


def openai(reads: list[bytes]) -> Calls:
    calls: dict[int, list[Any]] = {}
    decode = _chunk
    for payload in sse_data(reads):
        for choice in decode(payload).choices:
            for tc in choice.delta.tool_calls or ():
                entry = calls.get(tc.index)
                if entry is None:
                    entry = calls[tc.index] = ["", "", []]
                if tc.id:
                    entry[0] = tc.id
                fn = tc.function
                if fn is not None:
                    if fn.name:
                        entry[1] = fn.name
                    entry[2].append(fn.arguments or "")
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]


# ------------------------------------------------------------------ Anthropic


class Block(msgspec.Struct):
    type: str = ""
    id: str = ""
    name: str = ""


class BlockDelta(msgspec.Struct):
    type: str = ""
    partial_json: str = ""


class Event(msgspec.Struct):
    """Every event type in one Struct: the fields the loop reads, optional."""

    type: str
    index: int = 0
    content_block: Block | None = None
    delta: BlockDelta | None = None


_event = msgspec.json.Decoder(Event).decode


def anthropic(reads: list[bytes]) -> Calls:
    calls: dict[int, list[Any]] = {}
    decode = _event
    for payload in sse_data(reads):
        event = decode(payload)
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            if delta is not None and delta.type == "input_json_delta":
                calls[event.index][2].append(delta.partial_json)
        elif kind == "content_block_start":
            block = event.content_block
            if block is not None and block.type == "tool_use":
                calls[event.index] = [block.id, block.name, []]
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]
