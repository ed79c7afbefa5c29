"""Arguments sent as JSON objects (Gemini, Ollama): cost per byte of escapes and
non-ASCII against ASCII of the same size.

Gemini and Ollama send each call whole, its arguments a JSON object, which toolstitch
keeps as compact text with every string written one way (Q42: numbers as sent, an
escape and the character it stands for give one text). The streams carry the calls of
the realistic corpus (``benches/corpus.py``: prose in several scripts, shell commands
with quotes, backslashes, tabs and newlines, files of code), in three spellings:

- ``plain``: the corpus's ASCII twin (every string ASCII letters and spaces of the same
  encoded size): nothing to unescape;
- ``raw UTF-8``: the realistic arguments with non-ASCII as UTF-8 and JSON's escapes
  for quotes, backslashes and control characters (what ``json.dumps(...,
  ensure_ascii=False)`` writes);
- ``\\u escapes``: the same arguments with every non-ASCII character as ``\\uXXXX``
  (what ``ensure_ascii=True`` writes, and servers that escape do).

``feed_bytes`` (64 KiB reads, ``live=False``) over each, interleaved rounds, medians;
the figure is the cost per byte over the plain twin's. Run from a release build:
``python benches/bench_escapes.py [--responses N] [--rounds N]``; written to
``results/escapes.md``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from toolstitch import Assembler

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "escapes.md"
READ = 64 * 1024


def _corpus() -> Any:
    spec = importlib.util.spec_from_file_location("corpus", HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus"] = module
    spec.loader.exec_module(module)
    return module


corpus = _corpus()


def streams(dialect: str, count: int, spelling: str) -> list[list[bytes]]:
    """The corpus's responses as ``dialect`` streams in one spelling, cut in reads."""
    shapes = json.loads(corpus.SHAPES.read_text())
    make = corpus.gemini_stream if dialect == "gemini" else corpus.ollama_stream
    ascii_only = spelling == "\\u escapes"
    dumps = corpus.dumps
    corpus.dumps = lambda v: json.dumps(v, ensure_ascii=ascii_only, separators=(",", ":"))
    try:
        cutter = corpus.Cutter(
            random.Random(2),
            corpus.Sizes(shapes["pooled"]["fragments"]),
            corpus.Sizes(shapes["pooled"]["texts"]),
        )
        out = []
        for n, r in enumerate(corpus.responses(count, 1, spelling == "plain")):
            data = make(r, cutter, n)
            out.append([data[i : i + READ] for i in range(0, len(data), READ)])
        return out
    finally:
        corpus.dumps = dumps


def feed_all(dialect: str, files: list[list[bytes]]) -> list[str]:
    inputs = []
    for reads in files:
        asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
        for r in reads:
            asm.feed_bytes(r)
        asm.close()
        inputs += [b.input for b in asm.message().tool_uses]
    return inputs


SPELLINGS = ("plain", "raw UTF-8", "\\u escapes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    lines = [
        "# Arguments as objects: escapes and non-ASCII against ASCII per byte",
        "",
        f"`python benches/bench_escapes.py --responses {args.responses} --rounds "
        f"{args.rounds}` (release build; interleaved rounds, medians; load average "
        f"{os.getloadavg()[0]:.1f} at the start). Per byte: the spelling's seconds per "
        "byte over the plain twin's.",
        "",
        "| dialect | spelling | MB | MB/s | per byte / plain |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for dialect in ("gemini", "ollama"):
        data = {s: streams(dialect, args.responses, s) for s in SPELLINGS}
        # Both realistic spellings are one text once compacted.
        assert feed_all(dialect, data["raw UTF-8"]) == feed_all(dialect, data["\\u escapes"])
        size = {s: sum(len(r) for f in d for r in f) for s, d in data.items()}
        times: dict[str, list[float]] = {s: [] for s in SPELLINGS}
        for _ in range(args.rounds):
            for s in SPELLINGS:
                gc.collect()
                t0 = time.perf_counter()
                feed_all(dialect, data[s])
                times[s].append(time.perf_counter() - t0)
        med = {s: statistics.median(t) for s, t in times.items()}
        plain = med["plain"] / size["plain"]
        for s in SPELLINGS:
            row = (
                f"| {dialect} | {s} | {size[s] / 1e6:.1f} | {size[s] / 1e6 / med[s]:.0f} "
                f"| {med[s] / size[s] / plain:.2f}x |"
            )
            lines.append(row)
            print(row, flush=True)
    lines += ["", f"Load average at the end: {os.getloadavg()[0]:.1f}."]
    if not args.no_write:
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
