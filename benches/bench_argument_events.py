"""The live path with and without ArgumentTracker.

An OpenAI chat stream of 8 calls, each with 40 top-level arguments (short strings,
numbers, small lists and one long string), its arguments in deltas of 1 to 12
characters, is fed event by event (``Assembler.feed`` of each chunk's JSON text) and
each feed's live events are read as a display would (iterated):

- ``live``: the Assembler alone;
- ``live + ArgumentTracker``: the same, each feed's events also given to
  ``ArgumentTracker.update`` (which reports the completed arguments).

The Assembler does no argument work unless a tracker is given its events, so the
first line is what anyone not using the tracker pays. Run from a release build:

    make release && nice python benches/bench_argument_events.py

Prints the best of several runs and the ratio; never a pass/fail test.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable

from toolstitch import ArgumentTracker, Assembler

CALLS = 8
KEYS = 40
RUNS = 7


def stream() -> list[str]:
    rng = random.Random(3)
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}

    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return json.dumps({**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": None})]
    for i in range(CALLS):
        arguments: dict[str, object] = {}
        for k in range(KEYS):
            kind = k % 4
            if kind == 0:
                arguments[f"name_{k}"] = f"value {rng.random():.6f}"
            elif kind == 1:
                arguments[f"count_{k}"] = rng.randint(0, 10**6)
            elif kind == 2:
                arguments[f"list_{k}"] = [rng.randint(0, 99) for _ in range(5)]
            else:
                arguments[f"text_{k}"] = "lorem ipsum " * 40
        text = json.dumps(arguments)
        start = {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": "f"}}
        events.append(chunk({"tool_calls": [start]}))
        at = 0
        while at < len(text):
            n = rng.randint(1, 12)
            piece = {"index": i, "function": {"arguments": text[at : at + n]}}
            events.append(chunk({"tool_calls": [piece]}))
            at += n
    events.append(chunk({}, "tool_calls"))
    return events


def live(events: list[str]) -> int:
    asm = Assembler("openai-chat")
    seen = 0
    for e in events:
        for _ in asm.feed(e):
            seen += 1
    return seen


def live_with_tracker(events: list[str]) -> int:
    asm = Assembler("openai-chat")
    tracker = ArgumentTracker()
    seen = 0
    for e in events:
        fed = asm.feed(e)
        for _ in fed:
            seen += 1
        seen += len(tracker.update(fed))
    return seen


def best(f: Callable[[list[str]], int], events: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        f(events)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    events = stream()
    size = sum(len(e) for e in events)
    print(f"{len(events)} events, {size / 1e6:.2f} MB, {CALLS} calls x {KEYS} arguments")
    base = best(live, events)
    tracked = best(live_with_tracker, events)
    print(f"live                      {base * 1e3:8.2f} ms")
    print(f"live + ArgumentTracker    {tracked * 1e3:8.2f} ms   x{tracked / base:.2f}")


if __name__ == "__main__":
    main()
