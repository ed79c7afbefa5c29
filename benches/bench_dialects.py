"""Every dialect at its floor, and replay on every core: the figures of issue 26.

Generates three corpora into a temporary directory (deleted afterwards unless
``--keep``):

- ``realistic``: ``benches/corpus.py``'s corpus (all nine dialects, real-shaped
  arguments, fragment sizes from the recordings; streams and whole bodies, every eighth
  file gzipped);
- ``plain``: its ASCII twin (``--plain``: the same calls with every string ASCII letters
  of the same encoded size);
- ``replay``: ``benches/bench_replay.py``'s own corpus (OpenAI chat and Anthropic SSE,
  Gemini JSON lines, Bedrock event-stream), the current one, with a manifest naming each
  file's dialect.

Then, each figure a ratio of contenders timed side by side in this process (interleaved
rounds, medians of CPU seconds, which waiting for a core on a shared machine does not
inflate; the load average printed beside each):

1. with ``--floor``: ``cargo bench --bench floor -- --corpus ...`` on the three corpora
   (the Rust floor of every dialect beside toolstitch's ``BytesAssembler``; writes
   ``results/floor.md`` and ``floor.json``);
2. ``feed_bytes`` (``live=False``) then ``close()`` through Python, per dialect and form
   (MB per CPU second; the ratios to the floor are the Rust ones of ``floor.md``);
3. escapes and non-ASCII: ``feed_bytes`` per byte on the realistic corpus against its
   plain twin, per dialect, interleaved;
4. ``toolstitch replay``'s own loop (``--jobs 1``: files read, gunzipped, records
   built) against bare ``feed_bytes`` + ``close`` over the same files held in memory
   (decompressed beforehand), interleaved;
5. ``toolstitch replay --jsonl --jobs 2`` against ``--jobs 1`` as subprocesses,
   interleaved: wall seconds and CPU seconds (the command and its workers).

Writes ``results/dialects.md`` and ``dialects.json``. Run from a release build
(``make release``; ``--floor`` also builds the Rust bench in release). A benchmark,
never a test.
"""

from __future__ import annotations

import argparse
import gc
import gzip
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
from bench_replay import make_corpus  # noqa: E402
from toolstitch import Assembler  # noqa: E402
from toolstitch._sources import expand  # noqa: E402
from toolstitch.cli import _replayed, _Work  # noqa: E402

RESULTS = HERE / "results"
READ = 64 * 1024


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


# ------------------------------------------------------------------ corpora


def replay_manifest(root: Path) -> None:
    """A manifest for bench_replay's corpus: each file's dialect from its name."""
    files = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name == ".manifest.json":
            continue
        name = path.name.split("-", 1)[1]
        dialect = name.rsplit(".", 1)[0]
        transport = {".sse": "sse", ".jsonl": "jsonl", ".bin": "eventstream"}[path.suffix]
        zipped = path.read_bytes()[:2] == b"\x1f\x8b"
        files.append(
            {
                "path": str(path.relative_to(root)),
                "dialect": dialect,
                "form": "stream",
                "transport": transport,
                "gzip": zipped,
                "bytes": path.stat().st_size,
            }
        )
    (root / ".manifest.json").write_text(json.dumps({"files": files}) + "\n")


def make_corpora(root: Path, responses: int, replay_mb: float) -> dict[str, Path]:
    dirs = {name: root / name for name in ("realistic", "plain", "replay")}
    corpus.write(dirs["realistic"], responses, seed=1, plain=False)
    corpus.write(dirs["plain"], responses, seed=1, plain=True)
    dirs["replay"].mkdir(parents=True)
    make_corpus(dirs["replay"], replay_mb)
    replay_manifest(dirs["replay"])
    return dirs


def manifest(directory: Path) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = json.loads((directory / ".manifest.json").read_text())["files"]
    return files


# ------------------------------------------------------------------ timing


def interleaved(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median CPU seconds of each contender (this process's, user and system), the
    contenders alternating within each round. CPU time rather than wall time: on a
    machine shared with other jobs, waiting for a core is not the contender's cost."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(rounds):
        for key, fn in contenders.items():
            gc.collect()
            t0 = time.process_time()
            fn()
            times[key].append(time.process_time() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def feed_all(dialect: str, streams: list[list[bytes]]) -> None:
    for reads in streams:
        asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
        for read in reads:
            asm.feed_bytes(read)
        asm.close()
        asm.messages()


def group_bytes(directory: Path) -> dict[str, list[list[bytes]]]:
    """The files of a corpus by ``dialect/form``, in memory and cut into 64 KiB reads
    beforehand (as a network hands them over), gzipped ones left out (as the floor
    leaves them out)."""
    groups: dict[str, list[list[bytes]]] = {}
    for f in manifest(directory):
        if not f["gzip"]:
            key = f"{f['dialect']}/{f['form']}"
            data = (directory / f["path"]).read_bytes()
            reads = [data[at : at + READ] for at in range(0, len(data), READ)]
            groups.setdefault(key, []).append(reads)
    return groups


def size(streams: list[list[bytes]]) -> int:
    return sum(len(read) for reads in streams for read in reads)


def python_vs_floor(dirs: dict[str, Path], rounds: int) -> dict[str, Any]:
    floor = json.loads((RESULTS / "floor.json").read_text())
    out: dict[str, Any] = {}
    for name in ("realistic", "replay"):
        entry = floor.get(f"corpus:{name}", {})
        rows: dict[str, Any] = {"load_average": load()}
        for key, streams in group_bytes(dirs[name]).items():
            dialect = key.split("/")[0]
            secs = interleaved(
                {"feed_bytes": lambda d=dialect, s=streams: feed_all(d, s)},  # type: ignore[misc]
                rounds,
            )
            t = secs["feed_bytes"]
            row: dict[str, Any] = {"seconds": t, "mb_per_s": size(streams) / 1e6 / t}
            if key in entry:
                row["vs_floor"] = t / entry[key]["floor_seconds"]
                row["vs_rust"] = t / entry[key]["toolstitch_seconds"]
            rows[key] = row
            print(f"python feed_bytes, {name}, {key}: {row}")
        out[name] = rows
    return out


def escapes(dirs: dict[str, Path], rounds: int) -> dict[str, Any]:
    real, plain = group_bytes(dirs["realistic"]), group_bytes(dirs["plain"])
    rows: dict[str, Any] = {"load_average": load()}
    for key in real:
        dialect = key.split("/")[0]
        r, p = real[key], plain[key]
        secs = interleaved(
            {
                "real": lambda d=dialect, r=r: feed_all(d, r),  # type: ignore[misc]
                "plain": lambda d=dialect, p=p: feed_all(d, p),  # type: ignore[misc]
            },
            rounds,
        )
        rb, pb = size(r), size(p)
        per_byte = (secs["real"] / rb) / (secs["plain"] / pb)
        rows[key] = {
            "real_mb_per_s": rb / 1e6 / secs["real"],
            "plain_mb_per_s": pb / 1e6 / secs["plain"],
            "per_byte_ratio": per_byte,
        }
        print(f"escapes, {key}: {rows[key]}")
    rows["load_average_end"] = load()
    return rows


def replay_vs_bare(directory: Path, rounds: int) -> dict[str, Any]:
    sources = expand([str(directory)])
    sources = [s for s in sources if not s.name.endswith(".manifest.json")]
    dialects = {str(directory / f["path"]): f["dialect"] for f in manifest(directory)}
    in_memory = []
    for s in sources:
        data = Path(s.name).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        in_memory.append((dialects[s.name], data))
    work = _Work("auto", False, None, None)

    def replay() -> None:
        for _ in _replayed(sources, work, 1):
            pass

    def bare() -> None:
        for _, data in in_memory:
            asm = Assembler("auto", live=False)
            for at in range(0, len(data), 1 << 20):
                asm.feed_bytes(data[at : at + (1 << 20)])
            asm.close()
            asm.messages()

    secs = interleaved({"replay": replay, "bare": bare}, rounds)
    nbytes = sum(len(d) for _, d in in_memory)
    row = {
        "files": len(sources),
        "decompressed_bytes": nbytes,
        "replay_seconds": secs["replay"],
        "bare_seconds": secs["bare"],
        "replay_vs_bare_throughput": secs["bare"] / secs["replay"],
        "load_average": load(),
    }
    print(f"replay vs bare: {row}")
    return row


def jobs(directory: Path, rounds: int) -> dict[str, Any]:
    def once(n: int) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "toolstitch", "replay", "--jsonl", "--jobs", str(n), directory],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu

    walls: dict[int, list[float]] = {1: [], 2: []}
    cpus: dict[int, list[float]] = {1: [], 2: []}
    loads = [load()]
    for _ in range(rounds):
        for n in (1, 2):
            wall, cpu = once(n)
            walls[n].append(wall)
            cpus[n].append(cpu)
        loads.append(load())
    mb = sum(f["bytes"] for f in manifest(directory)) / 1e6
    w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
    c1, c2 = statistics.median(cpus[1]), statistics.median(cpus[2])
    row = {
        "mb_on_disk": mb,
        "jobs1_wall": w1,
        "jobs2_wall": w2,
        "jobs1_cpu": c1,
        "jobs2_cpu": c2,
        "wall_ratio": w2 / w1,
        "cpu_per_mb_ratio": c2 / c1,
        "loads": loads,
        "cores": len(os.sched_getaffinity(0)),
    }
    print(f"--jobs 2 vs --jobs 1: {row}")
    return row


# ------------------------------------------------------------------ report


def write_report(results: dict[str, Any]) -> None:
    (RESULTS / "dialects.json").write_text(json.dumps(results, indent=1) + "\n")
    md = [
        "# Every dialect, and replay on every core",
        "",
        "Produced by `benches/bench_dialects.py` (release build), medians of interleaved "
        "rounds (3 to 5 per section); the corpora and the method are in the "
        "script's docstring and `benches/README.md`. Load average (1, 5, 15 minutes) beside "
        "each figure: the machine (2 cores) was shared with other jobs.",
        "",
    ]
    if "python" in results:
        md += [
            "## `feed_bytes` through Python, per dialect",
            "",
            "`Assembler(dialect, live=False)`, `feed_bytes` of 64 KiB reads cut beforehand, "
            "`close()`, `messages()`; gzipped files left out; MB per CPU second of this "
            "process. The floor's ratios are in `floor.md` (Rust, the same process, wall "
            "time) and in the README (instruction counts): a ratio of these CPU seconds to "
            "the floor's wall seconds, measured in another process on a loaded machine, "
            "would mean nothing, and is not given.",
            "",
        ]
        for name, rows in results["python"].items():
            md += [
                f"### {name} corpus (load {rows['load_average']})",
                "",
                "| dialect/form | MB per CPU second |",
                "|---|---:|",
            ]
            for key, row in rows.items():
                if key == "load_average":
                    continue
                md.append(f"| {key} | {row['mb_per_s']:.0f} |")
            md.append("")
    if "escapes" in results:
        rows = results["escapes"]
        md += [
            "## Escapes and non-ASCII against ASCII of the same size",
            "",
            "`feed_bytes` on the realistic corpus and on its plain twin (the same calls, "
            "every string ASCII letters of the same encoded size), interleaved; the ratio is "
            f"the cost per byte, realistic over plain. Load {rows['load_average']} at the "
            f"start, {rows['load_average_end']} at the end.",
            "",
            "| dialect/form | realistic MB/s | plain MB/s | per byte, realistic / plain |",
            "|---|---:|---:|---:|",
        ]
        for key, row in rows.items():
            if key.startswith("load_average"):
                continue
            md.append(
                f"| {key} | {row['real_mb_per_s']:.0f} | {row['plain_mb_per_s']:.0f} "
                f"| {row['per_byte_ratio']:.2f}x |"
            )
        md.append("")
    if "replay" in results:
        row = results["replay"]
        md += [
            "## `toolstitch replay`, one worker, against bare `feed_bytes`",
            "",
            f"The realistic corpus, all {row['files']} files "
            f"({row['decompressed_bytes'] / 1e6:.1f} MB decompressed): the command's own "
            "loop with `--jobs 1` (files read and gunzipped, the provider told, records "
            "built) against `Assembler('auto', live=False)` + `feed_bytes` in 1 MiB pieces + "
            "`close()` + `messages()` over the same files already in memory and decompressed. "
            f"Load {row['load_average']}.",
            "",
            "| replay s | bare s | replay throughput / bare |",
            "|---:|---:|---:|",
            f"| {row['replay_seconds']:.3f} | {row['bare_seconds']:.3f} | "
            f"{row['replay_vs_bare_throughput']:.2f}x |",
            "",
        ]
    if "jobs" in results:
        row = results["jobs"]
        md += [
            "## `--jobs 2` against `--jobs 1`",
            "",
            f"`python -m toolstitch replay --jsonl --jobs N` on the realistic corpus "
            f"({row['mb_on_disk']:.1f} MB on disk), output to /dev/null, as subprocesses "
            "alternating; wall seconds, and CPU seconds of the command with its workers "
            f"(`RUSAGE_CHILDREN`). {row['cores']} cores; load average before and after each "
            f"round: {' | '.join(row['loads'])}.",
            "",
            "| | wall s | CPU s |",
            "|---|---:|---:|",
            f"| --jobs 1 | {row['jobs1_wall']:.2f} | {row['jobs1_cpu']:.2f} |",
            f"| --jobs 2 | {row['jobs2_wall']:.2f} | {row['jobs2_cpu']:.2f} |",
            f"| ratio | {row['wall_ratio']:.2f}x | {row['cpu_per_mb_ratio']:.2f}x |",
            "",
        ]
    (RESULTS / "dialects.md").write_text("\n".join(md))
    print(f"wrote {RESULTS / 'dialects.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=300, help="per dialect (default 300)")
    parser.add_argument("--replay-mb", type=float, default=40.0, help="bench_replay's corpus")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--floor", action="store_true", help="run cargo bench --bench floor")
    parser.add_argument("--floor-rounds", type=int, default=7)
    parser.add_argument(
        "--only", default="python,escapes,replay,jobs", help="which Python parts to run"
    )
    parser.add_argument("--dir", help="write the corpora here instead of a temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the corpora afterwards")
    args = parser.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="toolstitch-dialects-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        if not (root / "realistic" / ".manifest.json").exists():
            dirs = make_corpora(root, args.responses, args.replay_mb)
        else:
            dirs = {name: root / name for name in ("realistic", "plain", "replay")}
        print(f"corpora in {root}; load average {load()}")
        if args.floor:
            command = ["cargo", "bench", "--quiet", "--bench", "floor", "--"]
            for name, d in dirs.items():
                command += ["--corpus", f"{name}={d}"]
            command.append(str(args.floor_rounds))
            subprocess.run(command, check=True, cwd=HERE.parent)
        parts = set(args.only.split(","))
        results: dict[str, Any] = {"rounds": args.rounds}
        previous = RESULTS / "dialects.json"
        if previous.exists():
            results.update(json.loads(previous.read_text()))
            results["rounds"] = args.rounds
        if "python" in parts:
            results["python"] = python_vs_floor(dirs, args.rounds)
        if "escapes" in parts:
            results["escapes"] = escapes(dirs, args.rounds)
        if "replay" in parts:
            results["replay"] = replay_vs_bare(dirs["realistic"], args.rounds)
        if "jobs" in parts:
            results["jobs"] = jobs(dirs["realistic"], args.rounds)
        write_report(results)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
