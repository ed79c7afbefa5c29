"""Live display of a streaming tool argument: toolstitch.PartialJson vs jiter re-parsing.

Part 1, reads now and then: a ~100 KB argument arrives in 5-byte fragments; the
display reads the value every 50 fragments. toolstitch feeds each fragment once
(linear in the input) and builds the value on each read. The baselines re-parse
the whole buffer with ``jiter.from_json(..., partial_mode="trailing-strings")``,
as the official SDKs do:

- ``jiter @ reads``: re-parse only at those reads (the same 400 reads);
- ``jiter @ every fragment``: re-parse on every fragment, which is what the
  OpenAI SDK's stream helpers do for each ``arguments`` delta.

Two argument shapes: many small records (typical structured arguments), and one
large string (a file being written).

Part 2, a read after every fragment (what a live display does): 100 KB and 300 KB
arguments of three shapes (an array of ints, many small records, one large
string) arrive in fragments of 1 to 8 bytes, and the value is read after each
one: ``PartialJson.feed`` + ``value()``, and ``Assembler.partial_calls()`` after
feeding each OpenAI chat delta, against ``jiter.from_json`` of the whole buffer
after each fragment. toolstitch reuses the Python objects of what is finished
between reads, so its cost follows the size of each change (plus a copy of the
containers still open), not the size of the whole value.

Part 3: the parser alone (no Python values), in MB/s, on each shape.

Run from a release build:

    make release && nice python benches/bench_partial_json.py

Prints the median (or best) of several runs and the ratios; never a pass/fail test.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import jiter
from toolstitch import Assembler, PartialJson

FRAGMENT = 5
READ_EVERY = 50
TARGET_BYTES = 100_000


def records_argument() -> bytes:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "délta", "naïve", "東京", "emoji 😀", "tab\tand\nnewline"]
    rows: list[dict[str, Any]] = []
    while len(json.dumps({"rows": rows})) < TARGET_BYTES:
        rows.append(
            {
                "id": len(rows),
                "name": " ".join(rng.choice(words) for _ in range(3)),
                "score": round(rng.uniform(-1000, 1000), 4),
                "active": rng.random() < 0.5,
                "tags": [rng.choice(words) for _ in range(rng.randint(0, 4))],
                "parent": None if rng.random() < 0.3 else rng.randint(0, 10_000),
            }
        )
    return json.dumps({"rows": rows}).encode()


def string_argument() -> bytes:
    rng = random.Random(11)
    lines: list[str] = []
    while sum(len(line) for line in lines) < TARGET_BYTES:
        indent = "    " * rng.randint(0, 3)
        lines.append(f'{indent}value_{len(lines)} = compute("x", {rng.randint(0, 999)})  # ok\n')
    return json.dumps({"path": "src/generated.py", "content": "".join(lines)}).encode()


def fragments(data: bytes) -> list[bytes]:
    return [data[i : i + FRAGMENT] for i in range(0, len(data), FRAGMENT)]


def run_toolstitch(parts: list[bytes]) -> Any:
    parser = PartialJson()
    for i, part in enumerate(parts, 1):
        parser.feed(part)
        if i % READ_EVERY == 0:
            parser.value()
    return parser.value()


def run_jiter_at_reads(parts: list[bytes]) -> Any:
    buf = bytearray()
    for i, part in enumerate(parts, 1):
        buf += part
        if i % READ_EVERY == 0:
            jiter.from_json(bytes(buf), partial_mode="trailing-strings")
    return jiter.from_json(bytes(buf), partial_mode="trailing-strings")


def run_jiter_every_fragment(parts: list[bytes]) -> Any:
    buf = bytearray()
    shown = None
    for part in parts:
        buf += part
        shown = jiter.from_json(bytes(buf), partial_mode="trailing-strings")
    return shown


def median_seconds(fn: Callable[[list[bytes]], Any], parts: list[bytes], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(parts)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(label: str, data: bytes) -> None:
    parts = fragments(data)
    expected = json.loads(data)
    assert run_toolstitch(parts) == expected
    assert run_jiter_at_reads(parts) == expected
    ours = median_seconds(run_toolstitch, parts, runs=15)
    at_reads = median_seconds(run_jiter_at_reads, parts, runs=15)
    every = median_seconds(run_jiter_every_fragment, parts, runs=3)
    reads = len(parts) // READ_EVERY
    print(
        f"\n{label}: {len(data):,} bytes, {len(parts):,} fragments of {FRAGMENT} B, {reads} reads"
    )
    print(f"  toolstitch PartialJson (feed all, value() at reads) {ours * 1e3:9.2f} ms")
    print(
        f"  jiter re-parse at each read                         {at_reads * 1e3:9.2f} ms"
        f"   ratio {at_reads / ours:6.1f}x"
    )
    print(
        f"  jiter re-parse on every fragment (SDK behaviour)    {every * 1e3:9.2f} ms"
        f"   ratio {every / ours:6.1f}x"
    )


# ------------------------------------------------- a read after every fragment


def ints_argument(size: int) -> bytes:
    rng = random.Random(3)
    values: list[int] = []
    length = len('{"values":[]}')
    while length < size:
        values.append(rng.randint(-100_000, 1_000_000))
        length += len(str(values[-1])) + 1
    return json.dumps({"values": values}, separators=(",", ":")).encode()


def sized_records(size: int) -> bytes:
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "délta", "naïve", "東京", "emoji 😀", "tab\tand\nnewline"]
    rows: list[dict[str, Any]] = []
    length = 12
    while length < size:
        row = {
            "id": len(rows),
            "name": " ".join(rng.choice(words) for _ in range(2)),
            "score": round(rng.uniform(-1000, 1000), 3),
            "ok": rng.random() < 0.5,
            "tags": [rng.choice(words) for _ in range(rng.randint(0, 3))],
        }
        rows.append(row)
        length += len(json.dumps(row)) + 2
    return json.dumps({"rows": rows}).encode()


def sized_string(size: int) -> bytes:
    rng = random.Random(13)
    lines: list[str] = []
    length = 0
    while length < size:
        indent = "    " * rng.randint(0, 3)
        lines.append(f'{indent}value_{len(lines)} = compute("x", {rng.randint(0, 999)})  # ok\n')
        length += len(lines[-1]) + 2
    return json.dumps({"path": "src/generated.py", "content": "".join(lines)}).encode()


def small_fragments(data: bytes) -> list[bytes]:
    """Fragments of 1 to 8 bytes (a fixed pseudo-random sequence), cut anywhere."""
    rng = random.Random(17)
    parts, at = [], 0
    while at < len(data):
        size = rng.randint(1, 8)
        parts.append(data[at : at + size])
        at += size
    return parts


def read_every_fragment_toolstitch(parts: list[bytes]) -> Any:
    parser = PartialJson()
    shown = None
    for part in parts:
        parser.feed(part)
        shown = parser.value()
    return shown


def read_every_fragment_jiter(parts: list[bytes]) -> Any:
    buf = bytearray()
    shown = None
    for part in parts:
        buf += part
        shown = jiter.from_json(bytes(buf), partial_mode="trailing-strings")
    return shown


def chat_deltas(parts: list[bytes]) -> list[dict[str, Any]]:
    """The fragments as OpenAI chat tool-call deltas (text: cuts moved to characters)."""
    text = b"".join(parts).decode()
    deltas: list[dict[str, Any]] = []
    head = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    deltas.append({"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
    at = 0
    for part in parts:
        piece = text[at : at + len(part)]
        if not piece:
            break
        at += len(piece)
        call = {"index": 0, "function": {"arguments": piece}}
        deltas.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    return deltas


def read_every_delta_partial_calls(events: list[Any]) -> Any:
    asm = Assembler("openai-chat", live=False)
    shown = None
    for event in events:
        asm.feed(event)
        shown = asm.partial_calls()
    return shown


def feed_only_partial_calls(events: list[Any]) -> Any:
    asm = Assembler("openai-chat", live=False)
    for event in events:
        asm.feed(event)
    return asm.partial_calls()


def best_seconds(fn: Callable[[Any], Any], arg: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return min(times)


def bench_every_fragment(label: str, data: bytes) -> None:
    parts = small_fragments(data)
    expected = json.loads(data)
    assert read_every_fragment_toolstitch(parts) == expected
    big = len(data) > 200_000
    ours = best_seconds(read_every_fragment_toolstitch, parts, runs=3 if big else 5)
    theirs = best_seconds(read_every_fragment_jiter, parts, runs=1 if big else 2)
    # partial_calls: the chat deltas as JSON text (what arrives on the wire), so that
    # feeding costs the same in both loops and the difference is the reads.
    events = [json.dumps(e) for e in chat_deltas(parts)]
    calls = best_seconds(read_every_delta_partial_calls, events, runs=3 if big else 5)
    feeding = best_seconds(feed_only_partial_calls, events, runs=3 if big else 5)
    reads = calls - feeding
    n = len(parts)
    print(f"\n{label}: {len(data):,} bytes, {n:,} fragments of 1-8 B, a read after each")
    rows = [
        ("toolstitch PartialJson feed + value()", ours, f"{theirs / ours:6.1f}x jiter"),
        ("toolstitch Assembler partial_calls()", reads, f"{theirs / reads:6.1f}x jiter"),
        ("jiter.from_json(whole buffer) each time", theirs, ""),
    ]
    for name, seconds, ratio in rows:
        print(f"  {name:<40} {seconds:8.3f} s {seconds / n * 1e6:8.2f} us/read  {ratio}")
    print(f"  (partial_calls: feeding the deltas alone took {feeding:.3f} s, not counted)")


def parse_speed(label: str, data: bytes) -> None:
    """MB/s of the parser alone: feed in 1-8 byte fragments, read once at the end."""
    parts = small_fragments(data)

    def feed_all(parts: list[bytes]) -> None:
        parser = PartialJson()
        for part in parts:
            parser.feed(part)

    def one_shot(data: bytes) -> None:
        PartialJson().feed(data)

    fragmented = best_seconds(feed_all, parts, runs=5)
    whole = best_seconds(one_shot, data, runs=20)
    mb = len(data) / 1e6
    per_feed = fragmented / len(parts) * 1e9
    print(
        f"  {label:<18} one feed {mb / whole:7.0f} MB/s   "
        f"1-8 B fragments {mb / fragmented:6.1f} MB/s ({per_feed:4.0f} ns/feed)"
    )


def main(parts: list[str]) -> None:
    """``parts``: which parts to run ("1", "2", "3"); all when empty."""
    print(f"python {sys.version.split()[0]}, jiter {version('jiter')}")
    if not parts or "1" in parts:
        print("\n== Part 1: a read every 50 fragments of 5 B ==")
        bench("many small records", records_argument())
        bench("one large string", string_argument())
    if not parts or "2" in parts:
        print("\n== Part 2: a read after every fragment ==")
        for size in (100_000, 300_000):
            bench_every_fragment(f"array of ints, {size // 1000} KB", ints_argument(size))
            bench_every_fragment(f"small records, {size // 1000} KB", sized_records(size))
            bench_every_fragment(f"one large string, {size // 1000} KB", sized_string(size))
    if not parts or "3" in parts:
        print("\n== Part 3: the parser alone (no Python values) ==")
        parse_speed("array of ints", ints_argument(1_000_000))
        parse_speed("small records", sized_records(1_000_000))
        parse_speed("one large string", sized_string(1_000_000))


if __name__ == "__main__":
    main(sys.argv[1:])
