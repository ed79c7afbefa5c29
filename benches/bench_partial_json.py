"""Live display of a streaming tool argument: toolstitch.PartialJson vs jiter re-parsing.

A ~100 KB argument arrives in 5-byte fragments; the display reads the value every
50 fragments. toolstitch feeds each fragment once (linear in the input) and builds
the value on each read. The baselines re-parse the whole buffer with
``jiter.from_json(..., partial_mode="trailing-strings")``, as the official SDKs do:

- ``jiter @ reads``: re-parse only at those reads (the same 400 reads);
- ``jiter @ every fragment``: re-parse on every fragment, which is what the
  OpenAI SDK's stream helpers do for each ``arguments`` delta.

Two argument shapes: many small records (typical structured arguments), and one
large string (a file being written). Run from a release build:

    maturin develop --release && python benches/bench_partial_json.py

Prints the median of several runs and the ratios; never a pass/fail test.
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
from toolstitch import PartialJson

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


def main() -> None:
    print(f"python {sys.version.split()[0]}, jiter {version('jiter')}")
    bench("many small records", records_argument())
    bench("one large string", string_argument())


if __name__ == "__main__":
    main()
