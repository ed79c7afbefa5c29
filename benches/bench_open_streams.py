"""Many open streams: the cost per event with 1, 100 and 10,000 assemblers open at
once, and the memory one in-flight stream holds.

A gateway keeps one ``Assembler`` per response in flight and feeds each read as it
arrives, so the events of thousands of streams interleave. The workload is the
realistic corpus (``benches/corpus.py``) in OpenAI chat: ``--streams`` responses (a
pool of distinct responses used in turn), each cut into its SSE events, one
``feed_bytes`` call per event with ``live=False``. Every contender does the same work
(each stream created, fed every event, closed, its message read); only how many are
open at once differs:

- ``1 open``: one stream after another;
- ``100 open`` / ``10,000 open``: that many streams created, then fed round-robin one
  event at a time (event k of every open stream before event k+1), closed, and the
  next batch.

Interleaved rounds, medians, ns per event, each against ``1 open``.

Memory: 10,000 assemblers made, then fed their first event, then fed up to the first
event of their first tool call; after each step, the growth per stream of the
resident set (``/proc/self/statm``: Rust's and Python's allocations alike) and of
Python's own allocations (``tracemalloc``, the wrapper objects), with the garbage
collector run first.

``python benches/bench_open_streams.py [--streams 10000] [--rounds 5]`` writes
``results/open_streams.md``. Run it from a release build (``make release``).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from toolstitch import Assembler
from toolstitch.messages import Provider

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "open_streams.md"
DIALECT: Provider = "openai-chat"
POOL = 100


def _corpus() -> Any:
    spec = importlib.util.spec_from_file_location("corpus", HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus"] = module
    spec.loader.exec_module(module)
    return module


def pool(count: int) -> list[list[bytes]]:
    """``count`` distinct chat streams of the corpus, each as its SSE events."""
    import json

    corpus = _corpus()
    shapes = json.loads(corpus.SHAPES.read_text())
    cutter = corpus.Cutter(
        random.Random(2),
        corpus.Sizes(shapes["pooled"]["fragments"]),
        corpus.Sizes(shapes["pooled"]["texts"]),
    )
    out = []
    for n, response in enumerate(corpus.responses(count, 1, False)):
        data = corpus.openai_chat_stream(response, cutter, n)
        out.append([e + b"\n\n" for e in data.split(b"\n\n") if e.strip()])
    return out


def run(streams: list[list[bytes]], open_at_once: int) -> int:
    """Feeds every stream, ``open_at_once`` of them interleaved; the calls rebuilt."""
    calls = 0
    for start in range(0, len(streams), open_at_once):
        batch = streams[start : start + open_at_once]
        asms = [Assembler(DIALECT, live=False) for _ in batch]
        feeds = [a.feed_bytes for a in asms]
        longest = max(len(s) for s in batch)
        for k in range(longest):
            for f, s in zip(feeds, batch, strict=True):
                if k < len(s):
                    f(s[k])
        for a in asms:
            a.close()
            calls += len(a.message().tool_uses)
    return calls


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def first_call(events: list[bytes]) -> int:
    """The index of the event that starts the stream's first tool call."""
    for n, e in enumerate(events):
        if b'"tool_calls"' in e:
            return n
    return len(events) - 1


def memory(streams: list[list[bytes]]) -> list[tuple[str, float, float]]:
    """Growth per stream (resident set, Python's allocations) after each step."""
    n = len(streams)
    gc.collect()
    tracemalloc.start()
    base_rss, base_py = rss(), tracemalloc.get_traced_memory()[0]
    steps = []

    def note(name: str) -> None:
        gc.collect()
        steps.append(
            (
                name,
                (rss() - base_rss) / n,
                (tracemalloc.get_traced_memory()[0] - base_py) / n,
            )
        )

    asms = [Assembler(DIALECT, live=False) for _ in range(n)]
    note("made")
    for a, s in zip(asms, streams, strict=True):
        a.feed_bytes(s[0])
    note("first event fed")
    for a, s in zip(asms, streams, strict=True):
        for e in s[1 : first_call(s) + 1]:
            a.feed_bytes(e)
    note("first call started")
    tracemalloc.stop()
    del asms
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--memory-only", action="store_true")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    distinct = pool(POOL)
    streams = [distinct[i % POOL] for i in range(args.streams)]
    events = sum(len(s) for s in streams)
    # Memory first, in a fresh heap.
    steps = memory(streams)
    if args.memory_only:
        for name, r, p in steps:
            print(f"{name}: {r:,.0f} bytes/stream (Python {p:,.0f})")
        return
    sizes = [1, 100, args.streams]
    want = run(streams, 1)
    for size in sizes:
        if run(streams, size) != want:
            raise SystemExit(f"{size} open rebuilt other calls")
    times: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(args.rounds):
        for size in sizes:
            gc.collect()
            t0 = time.perf_counter()
            run(streams, size)
            times[size].append(time.perf_counter() - t0)
    ns = {size: statistics.median(ts) / events * 1e9 for size, ts in times.items()}
    lines = [
        "# Many open streams: cost per event and memory per in-flight stream",
        "",
        f"`python benches/bench_open_streams.py --streams {args.streams} --rounds "
        f"{args.rounds}` (release build; interleaved rounds, medians; load average "
        f"{load_start:.1f} at the start). {args.streams:,} OpenAI chat streams of the "
        f"realistic corpus ({POOL} distinct responses in turn), {events:,} events, one "
        "`feed_bytes` per SSE event, `live=False`; each stream created, fed, closed and "
        "its message read.",
        "",
        "| streams open at once | ns/event | against 1 open |",
        "| ---: | ---: | ---: |",
    ]
    for size in sizes:
        lines.append(f"| {size:,} | {ns[size]:,.0f} | {ns[size] / ns[1]:.2f}x |")
    lines += [
        "",
        f"Memory per stream, {args.streams:,} streams open (growth since before the first "
        "was made; the resident set holds Rust's allocations and Python's):",
        "",
        "| after | resident set, bytes/stream | of it Python (tracemalloc) |",
        "| --- | ---: | ---: |",
    ]
    for name, r, p in steps:
        lines.append(f"| {name} | {r:,.0f} | {p:,.0f} |")
    lines += ["", f"Load average at the end: {os.getloadavg()[0]:.1f}."]
    print("\n".join(lines))
    if not args.no_write:
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
