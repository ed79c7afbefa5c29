"""What the block constructors' argument checks cost where blocks are made in bulk.

Blocks reach Python when Rust calls the block classes: ``Assembler.messages()``,
``ToolUses.blocks()``, ``unmarshal_blocks()``. Each constructor checks its field
types (``toolstitch.blocks``). This measures, side by side in one process:

- building the blocks of one typical message (text, 4 tool calls, thinking) with the
  real, checked classes and with unchecked twins (the same frozen, slotted
  dataclasses without the check);
- ``Assembler.messages()`` on the stream that produced them, and
  ``unmarshal_blocks()`` of 1,000 blocks, each of which builds its blocks with the
  checked classes.

The difference between the first two, per message, against the time of the
calls that make blocks, is what the checks add. Run from a release build:

    make release && .venv/bin/python benches/bench_blocks.py

Prints the best of 15 interleaved rounds and the ratios; never a pass/fail test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolstitch import (
    Assembler,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    marshal_blocks,
    unmarshal_blocks,
)


@dataclass(frozen=True, slots=True)
class PlainText:
    text: str = ""


@dataclass(frozen=True, slots=True)
class PlainThinking:
    thinking: str = ""
    signature: str = ""
    signature_format: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""


@dataclass(frozen=True, slots=True)
class PlainToolUse:
    id: str = ""
    name: str = ""
    input: str = ""
    provider_state: str | None = None
    provider_state_format: str = ""


def stream() -> list[dict[str, Any]]:
    """An Anthropic stream: thinking, text, then four tool calls."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Four cities."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "c2ln"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text"}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "Checking the weather."},
        },
        {"type": "content_block_stop", "index": 1},
    ]
    for i, city in enumerate(["Paris", "Oslo", "Lima", "Kyiv"], start=2):
        events += [
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": "weather"},
            },
            {
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps({"city": city})},
            },
            {"type": "content_block_stop", "index": i},
        ]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]
    return events


def per_call_ns(fn: Callable[[], object], inner: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(inner):
        fn()
    return (time.perf_counter_ns() - start) / inner


def interleaved(
    contenders: dict[str, tuple[Callable[[], object], int]], repeats: int = 15
) -> dict[str, float]:
    """Each contender's best time per call; the contenders take turns in every round,
    so that a busy machine slows them alike."""
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(repeats):
        for name, (fn, inner) in contenders.items():
            best[name] = min(best[name], per_call_ns(fn, inner))
    return best


def main() -> None:
    asm = Assembler("anthropic")
    for event in stream():
        asm.feed(event)
    asm.close()
    [message] = asm.messages()
    blocks = message.blocks
    assert len(blocks) == 6 and message.complete

    fields = [(type(b), tuple(getattr(b, f) for f in b.__slots__)) for b in blocks]
    plain = {TextBlock: PlainText, ThinkingBlock: PlainThinking, ToolUseBlock: PlainToolUse}

    def checked() -> None:
        for cls, args in fields:
            cls(*args)

    def unchecked() -> None:
        for cls, args in fields:
            plain[cls](*args)

    wire = marshal_blocks([b for b in blocks * 167][:1000])

    times = interleaved(
        {
            "6 blocks, checked classes": (checked, 5_000),
            "6 blocks, unchecked twins": (unchecked, 5_000),
            "Assembler.messages() (1 message, 6 blocks)": (asm.messages, 5_000),
            "unmarshal_blocks() of 1,000 blocks": (lambda: unmarshal_blocks(wire), 50),
        }
    )
    width = max(map(len, times))
    for name, ns in times.items():
        print(f"{name:<{width}}  {ns / 1000:9.2f} µs")
    checked_ns, unchecked_ns, messages_ns, unmarshal_ns = times.values()
    per_message = checked_ns - unchecked_ns
    per_block = per_message / len(blocks)
    print(
        f"\nchecked / unchecked construction: {checked_ns / unchecked_ns:.2f}x; the checks add "
        f"{per_block:.0f} ns per block, {per_message / 1000:.2f} µs per message "
        f"({per_message / messages_ns:.1%} of messages()) and {per_block * 1000 / 1000:.0f} µs "
        f"per 1,000 unmarshalled blocks ({per_block * 1000 / unmarshal_ns:.1%} of "
        f"unmarshal_blocks())"
    )


if __name__ == "__main__":
    main()
