"""Side-by-side: ToolUses against a minimal pure-Python dict accumulator and
against the floor of any Python-to-Rust call.

~200k fragments of 4 interleaved calls (1-8 characters of arguments each, with
escapes and non-ASCII), the same list for every contender, in one process; the
contenders alternate within each of the rounds, so a busy machine slows them
alike. Prints medians and ratios; it is a benchmark, never a test. Run it from a
release build: `make bench` (which builds the `bench-baseline` feature: a
do-nothing pyclass whose method takes `add_fragment`'s four arguments, the
floor any per-fragment call can reach).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from toolstitch import ToolUseChunk, ToolUses, _toolstitch

N_FRAGMENTS = 200_000
REPEATS = 15
# Present only in builds with the `bench-baseline` feature (not in the .pyi stubs).
BASELINE: Any = vars(_toolstitch).get("_CallBaseline")


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


def baseline_calls(frags: list[tuple[int, str, str, str]], method: str) -> None:
    """The same loop as ``ts_add_fragment`` calling a do-nothing Rust method."""
    noop = getattr(BASELINE(), method)
    for index, call_id, name, piece in frags:
        noop(index, call_id, name, piece)


def rounds(contenders: dict[str, Callable[[], object]]) -> dict[str, list[float]]:
    """Seconds of each contender in each round; every round runs each contender once."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(REPEATS):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def round_ratios(times: dict[str, list[float]], name: str, floor: str) -> list[float]:
    """``name`` over ``floor`` in each round: the two ran back to back, so a busy
    machine slows both alike; the median of these is the figure the goal is stated
    in, the spread says how reliable it is."""
    return sorted(a / b for a, b in zip(times[name], times[floor], strict=True))


def main() -> None:
    frags = make_fragments()
    chunks = [ToolUseChunk(*f) for f in frags]
    expected = python_dict(frags)
    assert ts_add_fragment(frags) == expected
    assert ts_add(chunks) == expected
    assert ts_extend(chunks) == expected
    assert ts_extend_tuples(frags) == expected
    assert python_inline(frags) == expected

    base_name = "pure-Python dict accumulator"
    contenders: dict[str, Callable[[], object]] = {
        base_name: lambda: python_dict(frags),
        "(same work inlined in the loop)": lambda: python_inline(frags),
        "ToolUses.add_fragment": lambda: ts_add_fragment(frags),
        "ToolUses.add (prebuilt chunks)": lambda: ts_add(chunks),
        "ToolUses.extend (prebuilt chunks)": lambda: ts_extend(chunks),
        "ToolUses.extend (fragment tuples)": lambda: ts_extend_tuples(frags),
    }
    has_baseline = BASELINE is not None
    if has_baseline:
        contenders["do-nothing call, 4 arguments"] = lambda: baseline_calls(frags, "noop4")
        contenders["do-nothing call, 4 converted"] = lambda: baseline_calls(
            frags, "noop4_converted"
        )
    times = rounds(contenders)
    result = {name: statistics.median(t) for name, t in times.items()}
    base = result[base_name]
    print(f"{len(frags):,} fragments, median of {REPEATS}, Python {sys.version.split()[0]}")
    print(f"{'contender':36} {'ns/fragment':>12} {'speed-up':>9}")
    for name, seconds in result.items():
        print(f"{name:36} {seconds / len(frags) * 1e9:12.1f} {base / seconds:8.2f}x")
    if has_baseline:
        bare = round_ratios(times, "ToolUses.add_fragment", "do-nothing call, 4 arguments")
        converted = round_ratios(times, "ToolUses.add_fragment", "do-nothing call, 4 converted")
        print(
            f"add_fragment loop / do-nothing call loop, per round: median "
            f"{statistics.median(bare):.2f}x, {bare[0]:.2f}-{bare[-1]:.2f}x over {REPEATS} "
            f"rounds (goal: at most 2x); / the call with the same conversions: median "
            f"{statistics.median(converted):.2f}x"
        )
    else:
        print("no do-nothing baseline in this build: build with `make release` to add it")
    print(
        "extend(fragment tuples) vs the pure-Python dict accumulator: "
        f"{base / result['ToolUses.extend (fragment tuples)']:.2f}x"
    )


if __name__ == "__main__":
    main()
