"""Start-up: ``import toolstitch`` beyond the bare interpreter, beside the eager import
it replaced (the package plus rendering, replay and tool sets, what ``import
toolstitch`` loaded before they were lazy) and ``toolstitch.cli``.

Each command a fresh ``python -c`` subprocess, the contenders alternating round by
round; the figure is the wall time beyond ``python -c pass`` (minimum and median over
the rounds; the minimum is the least disturbed by a shared machine's load). Run from a
release build: ``python benches/bench_import.py [--rounds N]``; written to
``results/import.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "import.md"
COMMANDS = {
    "interpreter (`pass`)": "pass",
    "`import toolstitch`": "import toolstitch",
    "the eager import it replaced": (
        "import toolstitch, toolstitch.render, toolstitch.replay, toolstitch.tools"
    ),
    "`import toolstitch.cli`": "import toolstitch.cli",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for _ in range(args.rounds):
        for name, code in COMMANDS.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times[name].append((time.perf_counter() - t0) * 1e3)
    base = times.pop("interpreter (`pass`)")
    lines = [
        "# Start-up",
        "",
        f"`python benches/bench_import.py --rounds {args.rounds}` (release build; "
        f"alternating subprocesses; load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end). The interpreter alone: "
        f"{min(base):.1f} ms (min), {statistics.median(base):.1f} ms (median).",
        "",
        "| command | ms beyond the interpreter, min | median |",
        "| --- | ---: | ---: |",
    ]
    for name, ts in times.items():
        lines.append(
            f"| {name} | {min(ts) - min(base):.1f} | "
            f"{statistics.median(ts) - statistics.median(base):.1f} |"
        )
    print("\n".join(lines))
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
