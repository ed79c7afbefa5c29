"""The data-engine paths against the ones they stand beside, on the same files: ratios.

The corpus is the realistic one (``benches/corpus.py``: the same responses in the nine
dialects, every eighth gzipped), written to a temporary directory. Two comparisons, each
in interleaved rounds (median of ``--rounds``), the load average printed beside them:

- ``toolstitch replay DIR --out calls.parquet`` against ``toolstitch replay DIR --jsonl``
  (into /dev/null), both ``--jobs 1``, each a fresh process: wall seconds and the
  child's CPU seconds. The Parquet file is checked to hold the JSON lines' records.
- ``toolstitch.arrow.replay_batch`` on a table of the files' bytes (read beforehand:
  what an engine hands over), and on a table of their paths, against ``replay_path``
  on each file in a loop (the Python API's serial path, records as dicts), in this
  process: CPU seconds. The three give the same records.

A benchmark, never a test. Run it from a release build (``make release``); a debug
build's figures are labelled as such in the results (``--out``, default
``benches/results/data.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from toolstitch import replay_path
from toolstitch._sources import expand
from toolstitch.arrow import replay_batch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``toolstitch replay ARGS``."""
    cpu, wall = _children_cpu(), time.perf_counter()
    with open(os.devnull, "w") as sink:
        subprocess.run(
            [sys.executable, "-m", "toolstitch", "replay", *args],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    return time.perf_counter() - wall, _children_cpu() - cpu


def in_process(work: Callable[[], Any]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def build() -> str:
    """Whether the extension is a release build (the bench-baseline feature is only
    compiled into ``make release``)."""
    from toolstitch import _toolstitch

    return "release" if hasattr(_toolstitch, "_CallBaseline") else "debug"


def _row(label: str, median: dict[str, float], contender: str, baseline: str) -> str:
    a, b = median[contender], median[baseline]
    return f"| {label} | {a:.3f} s | {b:.3f} s | {a / b:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=150, help="per dialect (default 150)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(HERE / "results" / "data.md"))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="toolstitch-data-"))
    try:
        captures = root / "captures"
        corpus.write(captures, args.responses, seed=1, plain=False)
        (captures / ".manifest.json").unlink(missing_ok=True)
        paths = [s.name for s in expand([str(captures)])]
        nbytes = sum(os.path.getsize(p) for p in paths)
        parquet = root / "calls.parquet"

        # The two outputs hold the same records.
        done = subprocess.run(
            [sys.executable, "-m", "toolstitch", "replay", str(captures), "--jsonl", "--jobs", "1"],
            capture_output=True,
            check=False,
        )
        want = [json.loads(line) for line in done.stdout.splitlines()]
        command([str(captures), "--out", str(parquet), "--jobs", "1"])
        assert pq.read_table(parquet).to_pylist() == want, "Parquet and --jsonl differ"
        table_of_bytes = pa.table(
            {
                "stream": paths,
                "capture": pa.array([Path(p).read_bytes() for p in paths], pa.binary()),
            }
        )
        table_of_paths = pa.table({"path": paths})
        serial = [r for p in paths for r in replay_path(p)]
        assert replay_batch(table_of_bytes).to_pylist() == serial
        assert replay_batch(table_of_paths).to_pylist() == serial

        rounds: dict[str, list[float]] = {
            k: []
            for k in (
                "jsonl wall", "jsonl cpu", "parquet wall", "parquet cpu",
                "replay_path", "batch bytes", "batch paths",
            )
        }  # fmt: skip
        for _ in range(args.rounds):
            wall, cpu = command([str(captures), "--jsonl", "--jobs", "1"])
            rounds["jsonl wall"].append(wall)
            rounds["jsonl cpu"].append(cpu)
            wall, cpu = command([str(captures), "--out", str(parquet), "--jobs", "1"])
            rounds["parquet wall"].append(wall)
            rounds["parquet cpu"].append(cpu)
            rounds["replay_path"].append(in_process(lambda: [replay_path(p) for p in paths]))
            rounds["batch bytes"].append(in_process(lambda: replay_batch(table_of_bytes)))
            rounds["batch paths"].append(in_process(lambda: replay_batch(table_of_paths)))
        median = {k: statistics.median(v) for k, v in rounds.items()}
        load = os.getloadavg()
        lines = [
            "# Data engines: Parquet and the Arrow batch beside the paths they stand with",
            "",
            f"`python benches/bench_data.py --responses {args.responses} --rounds {args.rounds}`, "
            f"**{build()} build**, {len(paths):,} captures ({nbytes / 1e6:,.1f} MB on disk, "
            f"{len(want):,} records), the realistic corpus (`benches/corpus.py`); medians of "
            f"interleaved rounds; load average at the end {load[0]:.2f} / {load[1]:.2f} / "
            f"{load[2]:.2f} on {os.cpu_count()} cores.",
            "",
            "| comparison | contender | baseline | ratio (contender / baseline) |",
            "|---|---|---|---|",
            _row(
                "`replay DIR --out calls.parquet` vs `--jsonl`, wall",
                median,
                "parquet wall",
                "jsonl wall",
            ),
            _row("same, CPU of the command", median, "parquet cpu", "jsonl cpu"),
            _row(
                "`arrow.replay_batch` (bytes column) vs `replay_path` per file, CPU",
                median,
                "batch bytes",
                "replay_path",
            ),
            _row(
                "`arrow.replay_batch` (path column) vs `replay_path` per file, CPU",
                median,
                "batch paths",
                "replay_path",
            ),
            "",
            "Both commands run `--jobs 1` in a fresh process (start-up included), output to",
            "/dev/null or the Parquet file; the Parquet file holds exactly the `--jsonl`",
            "records (checked). The batch with a bytes column is handed the files' contents",
            "read beforehand (what Spark, Ray, Polars or DuckDB hand over), so it does no file",
            "reading; with a path column it reads the files as `replay_path` does. Its output",
            "is an Arrow table; `replay_path`'s is a list of dicts.",
        ]
        Path(args.out).write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
