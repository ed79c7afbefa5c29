"""Side-by-side: what the Python subclass ``toolstitch.Assembler`` costs over the Rust
class it extends (``toolstitch._toolstitch.Assembler``).

The subclass adds methods (context manager, ``feed_all``, ``afeed_all``) and a Python
``__new__`` with the real defaults in its signature; ``feed_bytes`` and the other
methods are the Rust ones, found through one more class in the lookup. Contenders, in
one process, alternating rounds:

- ``feed_bytes`` once per SSE event (20,000 small events of one tool call, each its own
  call: the worst case for per-call overhead), on each class;
- constructing an assembler, on each class;
- ``toolstitch.assemble(data)`` against constructing, feeding and closing by hand.

Prints the best of 11 alternating rounds, in ns per call, and the difference. A
benchmark, never a test: run it from a release build (`make bench`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import toolstitch
from toolstitch import _toolstitch

N_EVENTS = 20_000
ROUNDS = 11


def make_events() -> list[bytes]:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o"}

    def event(delta: dict[str, object], finish: str | None = None) -> bytes:
        chunk = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    call = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "f"}}
    events = [event({"role": "assistant", "tool_calls": [call]})]
    events += [
        event({"tool_calls": [{"index": 0, "function": {"arguments": "ab"}}]})
        for _ in range(N_EVENTS)
    ]
    events.append(event({}, "tool_calls"))
    return events


def per_event(cls: type[_toolstitch.Assembler], events: list[bytes]) -> float:
    asm = cls("openai-chat", live=False)
    feed_bytes = asm.feed_bytes
    start = time.perf_counter_ns()
    for e in events:
        feed_bytes(e)
    elapsed = time.perf_counter_ns() - start
    asm.close()
    assert len(asm.message().tool_uses[0].input) == 2 * N_EVENTS
    return elapsed / len(events)


def empty_calls(cls: type[_toolstitch.Assembler], n: int = 200_000) -> float:
    """``feed_bytes(b"")``: the call and nothing else (no bytes to decode)."""
    asm = cls("openai-chat", live=False)
    feed_bytes = asm.feed_bytes
    empty = b""
    start = time.perf_counter_ns()
    for _ in range(n):
        feed_bytes(empty)
    return (time.perf_counter_ns() - start) / n


def per_event_unbound(cls: type[_toolstitch.Assembler], events: list[bytes]) -> float:
    """``asm.feed_bytes(e)`` looked up on every call, as most code writes it."""
    asm = cls("openai-chat", live=False)
    start = time.perf_counter_ns()
    for e in events:
        asm.feed_bytes(e)
    elapsed = time.perf_counter_ns() - start
    asm.close()
    return elapsed / len(events)


def construct(cls: type[_toolstitch.Assembler], n: int = 20_000) -> float:
    start = time.perf_counter_ns()
    for _ in range(n):
        cls("openai-chat")
    return (time.perf_counter_ns() - start) / n


def by_hand(data: bytes) -> float:
    start = time.perf_counter_ns()
    asm = _toolstitch.Assembler(live=False)
    asm.feed_bytes(data)
    asm.close()
    asm.messages()
    return float(time.perf_counter_ns() - start)


def with_assemble(data: bytes) -> float:
    start = time.perf_counter_ns()
    toolstitch.assemble(data)
    return float(time.perf_counter_ns() - start)


def main() -> None:
    events = make_events()
    data = b"".join(events[:200])
    rust, sub = _toolstitch.Assembler, toolstitch.Assembler
    rows: list[tuple[str, Callable[[], float], Callable[[], float], str]] = [
        (
            'feed_bytes(b""), the call alone',
            lambda: empty_calls(rust),
            lambda: empty_calls(sub),
            "ns/call",
        ),
        (
            "feed_bytes, bound method, per event",
            lambda: per_event(rust, events),
            lambda: per_event(sub, events),
            "ns/call",
        ),
        (
            "asm.feed_bytes(e), looked up per call",
            lambda: per_event_unbound(rust, events),
            lambda: per_event_unbound(sub, events),
            "ns/call",
        ),
        ("constructing an assembler", lambda: construct(rust), lambda: construct(sub), "ns"),
        (
            "assemble(200-event stream) vs by hand",
            lambda: by_hand(data),
            lambda: with_assemble(data),
            "ns",
        ),
    ]
    for f in (r for _, a, b, _ in rows for r in (a, b)):  # warm up
        f()
    print(f"{'':40} {'Rust class':>12} {'subclass':>12} {'difference':>12}")
    for name, a, b, unit in rows:
        samples_a: list[float] = []
        samples_b: list[float] = []
        for _ in range(ROUNDS):  # alternate, so drift hits both alike
            samples_a.append(a())
            samples_b.append(b())
        # The best round: the cost itself, with the least of the machine's noise.
        ma, mb = min(samples_a), min(samples_b)
        print(f"{name:40} {ma:>12,.0f} {mb:>12,.0f} {mb - ma:>+12,.0f} {unit}")


if __name__ == "__main__":
    main()
