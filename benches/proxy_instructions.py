"""The proxy's own instructions per event: ``toolstitch proxy --relay rust`` plain
(``--no-check``) against ``--enforce``, counted by callgrind, so the figure does not move
with the machine's load.

Each contender is a ``toolstitch proxy`` process run under ``valgrind --tool=callgrind``
with instrumentation off until its start-up and a few warm-up requests are over; then
the counts are zeroed, ``--requests`` requests of ``bench_proxy.py``'s generated 600-event
stream (every body checked whole) are sent ``--streams`` at a time by this process, and
the counts are dumped. The upstream is ``bench_proxy.py``'s, in its own process, not
counted. Callgrind runs the proxy's threads one at a time; its counts are user-space
instructions of every thread of the proxy (tokio's workers, the blocking pool's end
hooks, the Python interpreter), the kernel's work not included.

Prints instructions per event for each contender and the ratio to plain, and keeps each
dump (``--out``, default a temporary directory) for ``callgrind_annotate``: the profile
of what enforcing adds. With ``--profile N``, the N functions whose exclusive
instructions per event grew most from plain to enforcing.

The extension should be a release build with its symbols (for the profile):
``cargo build --release --lib --features python,relay`` and
``target/release/lib_toolstitch.so`` copied over ``python/toolstitch/_toolstitch.abi3.so``
(``make release`` strips them; the counts are the same).

Run: ``.venv/bin/python benches/proxy_instructions.py [--requests 40] [--streams 4]
[--contenders plain,enforcing] [--profile 30] [--out DIR]`` (never part of the tests).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import STREAMS, TOOLS, burst

NAME = "generated-600"
FLAGS = {"plain": ["--no-check"], "checking": [], "enforcing": ["--enforce"]}


def start(upstream: str, who: str, out: Path) -> tuple[subprocess.Popen[str], str, Path]:
    """The proxy under callgrind, instrumentation off: its process, URL and dump path."""
    dump = out / f"callgrind.{who}"
    process = subprocess.Popen(
        [
            *("valgrind", "--tool=callgrind", "--instr-atstart=no"),
            f"--callgrind-out-file={dump}",
            f"--log-file={out / f'valgrind.{who}.log'}",
            *(sys.executable, "-m", "toolstitch", "proxy", "--relay", "rust"),
            *("--upstream", upstream, "--listen", "127.0.0.1:0", "--records", os.devnull),
            *FLAGS[who],
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    if "listening on " not in line:
        raise SystemExit(f"{who}: the proxy did not start: {line!r}")
    # The log lines that follow are read and dropped (a full pipe would stop the proxy).
    threading.Thread(target=process.stderr.read, daemon=True).start()
    return process, line.split("listening on ")[1].split()[0], dump


def control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def load(url: str, requests: int, streams: int) -> None:
    """``requests`` requests, ``streams`` at a time, every body checked whole."""
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS[NAME]}
    expected = len(b"".join(STREAMS[NAME]))
    sent = 0
    while sent < requests:
        n = min(streams, requests - sent)
        _, sizes, _ = asyncio.run(burst(f"{url}/v1/{NAME}", body, n))
        if sizes != [expected] * n:
            raise SystemExit(f"a body came back incomplete: {sizes}")
        sent += n


def totals(dump: Path) -> int:
    """The dump's total instructions (its ``summary:`` or ``totals:`` line)."""
    for line in dump.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {dump}")


def exclusive(dump: Path) -> dict[str, int]:
    """Exclusive instructions per function (``callgrind_annotate``'s flat profile)."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(dump)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    out: dict[str, int] = collections.defaultdict(int)
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S.*)$", line)
        if m and ":" in m.group(2):
            out[m.group(2).strip()] += int(m.group(1).replace(",", ""))
    return out


def measure(upstream: str, who: str, args: argparse.Namespace, out: Path) -> Path:
    process, url, dump = start(upstream, who, out)
    try:
        load(url, args.warmup, args.streams)
        control(process.pid, "--instr=on")
        control(process.pid, "--zero")
        load(url, args.requests, args.streams)
        control(process.pid, "--dump")
    finally:
        process.terminate()
        process.wait(timeout=120)
    # The dump asked for (the one written at exit, without a number, is what came after).
    return dump.with_name(f"{dump.name}.1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=40, help="counted requests")
    parser.add_argument("--streams", type=int, default=4, help="concurrent requests")
    parser.add_argument("--warmup", type=int, default=8, help="requests before counting")
    parser.add_argument("--contenders", default="plain,enforcing")
    parser.add_argument("--profile", type=int, default=0, help="functions shown")
    parser.add_argument("--out", type=Path, default=None, help="where the dumps are kept")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed")
    out = args.out or Path(tempfile.mkdtemp(prefix="proxy-instructions-"))
    out.mkdir(parents=True, exist_ok=True)
    upstream_process = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "bench_proxy.py"), "--serve-upstream"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert upstream_process.stdout is not None
    upstream = f"http://127.0.0.1:{upstream_process.stdout.readline().strip()}"
    events = args.requests * len(STREAMS[NAME])
    counts: dict[str, int] = {}
    dumps: dict[str, Path] = {}
    try:
        for who in args.contenders.split(","):
            began = time.monotonic()
            dumps[who] = measure(upstream, who, args, out)
            counts[who] = totals(dumps[who])
            print(f"{who}: {counts[who]:,} instructions ({time.monotonic() - began:.0f} s)")
    finally:
        upstream_process.terminate()
        upstream_process.wait(timeout=30)
    base = counts.get("plain") or next(iter(counts.values()))
    print(
        f"\n{args.requests} requests of {NAME} ({len(STREAMS[NAME])} events), "
        f"{args.streams} at a time; dumps in {out}\n"
    )
    print("| proxy | instructions per event | vs plain | per response |")
    print("|---|---|---|---|")
    for who, n in counts.items():
        print(f"| rust {who} | {n / events:,.0f} | {n / base:.3f}x | {n / args.requests:,.0f} |")
    if args.profile and "plain" in dumps and "enforcing" in dumps:
        plain, enforcing = exclusive(dumps["plain"]), exclusive(dumps["enforcing"])
        added = {f: enforcing.get(f, 0) - plain.get(f, 0) for f in set(plain) | set(enforcing)}
        total = (counts["enforcing"] - counts["plain"]) / events
        print(f"\nWhat enforcing adds: {total:,.0f} instructions per event; by function\n")
        print("| function | plain | enforcing | added per event |")
        print("|---|---|---|---|")
        for f in sorted(added, key=lambda f: -added[f])[: args.profile]:
            print(
                f"| `{f[:110]}` | {plain.get(f, 0) / events:,.1f} | "
                f"{enforcing.get(f, 0) / events:,.1f} | {added[f] / events:+,.1f} |"
            )


if __name__ == "__main__":
    main()
