"""Side-by-side: ToolUses against a minimal pure-Python dict accumulator.

~200k fragments of 4 interleaved calls (1-8 characters of arguments each, with
escapes and non-ASCII), the same list for every contender, in one process.
Prints medians and ratios; it is a benchmark, never a test. Run it from a
release build: `make bench`.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable

from toolstitch import ToolUseChunk, ToolUses

N_FRAGMENTS = 200_000
REPEATS = 7


def make_fragments() -> list[tuple[int, str, str, str]]:
    rng = random.Random(7)
    alphabet = 'abcdefgh ijk"\\:{},0123456789é日🦀'
    frags: list[tuple[int, str, str, str]] = []
    for i in range(N_FRAGMENTS):
        index = i % 4
        if i < 4:
            frags.append((index, f"call_{index}", f"tool_{index}", ""))
        else:
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
            frags.append((index, "", "", piece))
    return frags


class DictAccumulator:
    """The baseline: a minimal pure-Python accumulator, a list of pieces per index
    and "".join at the end, with the same per-fragment method as ToolUses."""

    def __init__(self) -> None:
        self.calls: dict[int, list[object]] = {}

    def add_fragment(self, index: int, call_id: str = "", name: str = "", piece: str = "") -> None:
        entry = self.calls.get(index)
        if entry is None:
            entry = self.calls[index] = ["", "", []]
        if call_id:
            entry[0] = call_id
        if name:
            entry[1] = name
        entry[2].append(piece)  # type: ignore[attr-defined]

    def blocks(self) -> list[tuple[str, str, str]]:
        return [(e[0], e[1], "".join(e[2])) for _, e in sorted(self.calls.items())]  # type: ignore[misc, arg-type]


def python_dict(frags: list[tuple[int, str, str, str]]) -> list[tuple[str, str, str]]:
    calls = DictAccumulator()
    add = calls.add_fragment
    for index, call_id, name, piece in frags:
        add(index, call_id, name, piece)
    return calls.blocks()


def python_inline(frags: list[tuple[int, str, str, str]]) -> list[tuple[str, str, str]]:
    """The same work with no method call per fragment: the floor for any
    per-fragment API called from a Python loop."""
    calls: dict[int, list[object]] = {}
    for index, call_id, name, piece in frags:
        entry = calls.get(index)
        if entry is None:
            entry = calls[index] = ["", "", []]
        if call_id:
            entry[0] = call_id
        if name:
            entry[1] = name
        entry[2].append(piece)  # type: ignore[attr-defined]
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]  # type: ignore[misc, arg-type]


def ts_add_fragment(frags: list[tuple[int, str, str, str]]) -> list[tuple[str, str, str]]:
    calls = ToolUses()
    add = calls.add_fragment
    for index, call_id, name, piece in frags:
        add(index, call_id, name, piece)
    return [(b.id, b.name, b.input) for b in calls.blocks()]


def ts_add(chunks: list[ToolUseChunk]) -> list[tuple[str, str, str]]:
    calls = ToolUses()
    add = calls.add
    for chunk in chunks:
        add(chunk)
    return [(b.id, b.name, b.input) for b in calls.blocks()]


def ts_extend(chunks: list[ToolUseChunk]) -> list[tuple[str, str, str]]:
    calls = ToolUses()
    calls.extend(chunks)
    return [(b.id, b.name, b.input) for b in calls.blocks()]


def ts_extend_tuples(frags: list[tuple[int, str, str, str]]) -> list[tuple[str, str, str]]:
    calls = ToolUses()
    calls.extend(frags)
    return [(b.id, b.name, b.input) for b in calls.blocks()]


def median_seconds(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    frags = make_fragments()
    chunks = [ToolUseChunk(*f) for f in frags]
    expected = python_dict(frags)
    assert ts_add_fragment(frags) == expected
    assert ts_add(chunks) == expected
    assert ts_extend(chunks) == expected
    assert ts_extend_tuples(frags) == expected

    assert python_inline(frags) == expected
    base = median_seconds(lambda: python_dict(frags))
    rows = [
        ("pure-Python dict accumulator", base),
        ("(same work inlined in the loop)", median_seconds(lambda: python_inline(frags))),
        ("ToolUses.add_fragment", median_seconds(lambda: ts_add_fragment(frags))),
        ("ToolUses.add (prebuilt chunks)", median_seconds(lambda: ts_add(chunks))),
        ("ToolUses.extend (prebuilt chunks)", median_seconds(lambda: ts_extend(chunks))),
        ("ToolUses.extend (fragment tuples)", median_seconds(lambda: ts_extend_tuples(frags))),
    ]
    print(f"{len(frags):,} fragments, median of {REPEATS}, Python {sys.version.split()[0]}")
    print(f"{'contender':36} {'ns/fragment':>12} {'speed-up':>9}")
    for name, seconds in rows:
        print(f"{name:36} {seconds / len(frags) * 1e9:12.1f} {base / seconds:8.2f}x")


if __name__ == "__main__":
    main()
