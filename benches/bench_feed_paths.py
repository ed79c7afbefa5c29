"""feed(dict), feed_many and feed(SDK object) against their baselines, in one process.

The workloads of ``benches/compare.py`` (OpenAI chat and Anthropic, 4 calls per
response, 1-8 character fragments): the chunks decoded with orjson, and the SDK objects
the ``openai`` / ``anthropic`` packages build while streaming (``construct_type``).
Each round times every contender once, in turn (interleaved, so that a slower moment of
a shared machine hits all of them); the table gives medians and the ratios that matter:

- ``feed(dict)`` and ``feed_many`` against the hand-written Python loop over the dicts;
- ``feed(SDK object)`` against ``feed(obj.model_dump())`` and ``feed(obj.to_dict())``.

Run on a release build: ``python benches/bench_feed_paths.py [--rounds N] [--quick]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from toolstitch import Assembler


def _compare() -> Any:
    """benches/compare.py, whose workloads, loops and SDK builders this reuses."""
    spec = importlib.util.spec_from_file_location("compare", Path(__file__).with_name("compare.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compare"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


compare = _compare()
Calls = list[tuple[str, str, str]]
Workload = Any

Run = Callable[[list[Any]], Calls]


def feed_each(w: Workload, prepare: Callable[[Any], Any] | None = None) -> Run:
    def run(events: list[Any]) -> Calls:
        asm = Assembler(w.dialect, live=False)
        f = asm.feed
        if prepare is None:
            for e in events:
                f(e)
        else:
            for e in events:
                f(prepare(e))
        asm.close()
        calls: Calls = compare.result_of(asm)
        return calls

    return run


def feed_many(w: Workload) -> Run:
    def run(events: list[Any]) -> Calls:
        asm = Assembler(w.dialect, live=False)
        asm.feed_many(events)
        asm.close()
        calls: Calls = compare.result_of(asm)
        return calls

    return run


def contenders(w: Workload) -> dict[str, tuple[Run, list[list[Any]]]]:
    dicts = [[orjson.loads(p) for p in compare.sse_data(r)] for r in w.reads]
    build = compare.openai_chunks if w.dialect == "openai-chat" else compare.anthropic_events
    objects = [build(r) for r in w.reads]
    chat = w.dialect == "openai-chat"
    loop = compare.python_dict_loop_openai if chat else compare.python_dict_loop_anthropic
    return {
        "loop": (loop, dicts),
        "feed(dict)": (feed_each(w), dicts),
        "feed_many(dicts)": (feed_many(w), dicts),
        "feed(SDK object)": (feed_each(w), objects),
        "feed_many(SDK objects)": (feed_many(w), objects),
        "feed(obj.model_dump())": (feed_each(w, lambda o: o.model_dump()), objects),
        "feed(obj.to_dict())": (feed_each(w, lambda o: o.to_dict()), objects),
    }


RATIOS = [
    ("feed(dict)", "loop"),
    ("feed_many(dicts)", "loop"),
    ("feed(SDK object)", "feed(obj.model_dump())"),
    ("feed(SDK object)", "feed(obj.to_dict())"),
    ("feed_many(SDK objects)", "feed(obj.model_dump())"),
]


def measure(w: Workload, rounds: int) -> None:
    cs = contenders(w)
    times: dict[str, list[float]] = compare.interleaved(w, cs, rounds)
    events = sum(len(r) for r in cs["loop"][1])
    print(f"\n{w.title}: {len(w.streams)} responses, {events:,} events, {rounds} rounds")
    for name, ts in times.items():
        print(f"  {name:<26} {statistics.median(ts) / events * 1e9:8.0f} ns/event")
    for fast, base in RATIOS:
        ratio = statistics.median(times[base]) / statistics.median(times[fast])
        print(f"  {fast} vs {base}: {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer fragments and rounds")
    args = parser.parse_args()
    target = 20_000 if args.quick else 100_000
    rounds = 3 if args.quick else args.rounds
    for dialect in ("openai-chat", "anthropic"):
        measure(compare.make_workload(dialect, 4, target), rounds)


if __name__ == "__main__":
    main()
