"""feed_bytes on streams as the API sends them (stamped) against the same streams without stamps.

The realistic corpus's responses (``bench_sdk_objects.Workload``), once with the stamps
the API adds by default (OpenAI's per-event ``obfuscation`` nonce; the Responses API's
``sequence_number`` on every event: ``bench_sdk_objects.stamp``) and once without, each
fed to ``Assembler(dialect, live=False).feed_bytes`` in 64 KiB reads and closed. Both are
first checked to rebuild the corpus's calls; then interleaved rounds in one process,
medians, ns per event and the stamped stream's time over the unstamped one's. Run it
from a release build (``make release``):
``python benches/bench_stamped_bytes.py [--responses N] [--rounds N] [--only DIALECT]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_sdk_objects import Workload, feed_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", action="append", help="a dialect to run (repeatable)")
    args = parser.parse_args()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    for dialect in args.only or ["openai-chat", "openai-responses"]:
        plain = Workload(dialect, args.responses)
        stamped = Workload(dialect, args.responses, stamped=True)
        run = feed_bytes(plain.dialect)
        for w in (plain, stamped):
            if [run(r) for r in w.reads] != w.expected:
                raise SystemExit(f"feed_bytes rebuilt different calls on {dialect}")
        times: dict[str, list[float]] = {"unstamped": [], "stamped": []}
        for _ in range(args.rounds):
            for name, w in (("unstamped", plain), ("stamped", stamped)):
                gc.collect()
                t0 = time.perf_counter()
                for r in w.reads:
                    run(r)
                times[name].append(time.perf_counter() - t0)
        ns = {name: statistics.median(ts) / plain.events * 1e9 for name, ts in times.items()}
        print(
            f"{dialect}: {plain.events:,} events; unstamped {ns['unstamped']:,.0f} ns/event, "
            f"stamped {ns['stamped']:,.0f} ns/event: {ns['stamped'] / ns['unstamped']:.2f}x"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
