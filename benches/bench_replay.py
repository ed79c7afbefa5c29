"""Replay a generated corpus serially and on a local Dask cluster; streams/s and MB/s.

The corpus: thousands of streamed responses in four dialects and three transports
(OpenAI chat and Anthropic SSE, Gemini JSON lines, Bedrock AWS event-stream), each
with one to four calls whose arguments arrive in fragments of 1-12 characters (the
shape of real tool-call streams), sizes spread from a few KB to a few hundred KB;
every tenth file gzipped. It is written to a temporary directory (deleted afterwards
unless ``--keep``).

Contenders, on the same files:

- serial: ``toolstitch replay``'s own loop in this process (one core);
- cluster: ``toolstitch.dask.read_calls(...).compute()`` on the local cluster
  ``toolstitch replay --scheduler local:N`` starts (``toolstitch.dask.local_cluster``:
  ``--workers`` processes of one thread each), partitions of ``--blocksize`` bytes; the
  cluster is started before the clock starts, the records come back to this process;
- cluster, Parquet: ``write_parquet`` of the same (records stay on the workers).

Best of ``--repeats``, in wall seconds and in CPU seconds (this process, plus every
worker process for the cluster runs: tasks, event loops and transfers). The CPU figures
say what the work costs whatever else the machine is doing; the wall figures are the
speed-up, and need an otherwise idle machine to mean anything (the load average is
printed). "less idle" is the CPU left once what the idle cluster spends in that much
wall time is taken off. The rows of every cluster run are checked against the serial
run's. A benchmark, never a test: run it from a release build (``make release``, or
``make bench``). ``--size-mb`` sets the corpus size (default 300 MB, a few minutes on
2 cores including generation).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import struct
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolstitch._sources import expand
from toolstitch.replay import replay_source

# ------------------------------------------------------------------ the corpus

ALPHABET = 'abcdefgh ijk"\\:{},0123456789é日🦀'


def _arguments(rng: random.Random, size: int) -> str:
    """JSON arguments of about ``size`` characters (escapes and non-ASCII included)."""
    text = "".join(rng.choice(ALPHABET) for _ in range(size))
    return json.dumps({"query": text, "n": rng.randint(0, 999)}, ensure_ascii=False)


def _pieces(text: str, rng: random.Random) -> list[str]:
    pieces, at = [], 0
    while at < len(text):
        step = rng.randint(1, 12)
        pieces.append(text[at : at + step])
        at += step
    return pieces


def _openai_chat(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    head = '{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-4o",'
    out = [f'data: {head}"choices":[{{"index":0,"delta":{{"role":"assistant"}}}}]}}\n\n']
    for i, (call_id, name, arguments) in enumerate(calls):
        opened = {"index": i, "id": call_id, "type": "function", "function": {"name": name}}
        delta = json.dumps({"tool_calls": [opened]})
        out.append(f'data: {head}"choices":[{{"index":0,"delta":{delta}}}]}}\n\n')
        for piece in _pieces(arguments, rng):
            fragment = json.dumps(piece, ensure_ascii=False)
            out.append(
                f'data: {head}"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{i},'
                f'"function":{{"arguments":{fragment}}}}}]}}}}]}}\n\n'
            )
    out.append(
        f'data: {head}"choices":[{{"index":0,"delta":{{}},"finish_reason":"tool_calls"}}]}}\n\n'
    )
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _anthropic(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    message = '{"id":"msg_b","type":"message","role":"assistant","content":[],"model":"claude"}'
    out = [f'event: message_start\ndata: {{"type":"message_start","message":{message}}}\n\n']
    for i, (call_id, name, arguments) in enumerate(calls):
        block = json.dumps({"type": "tool_use", "id": call_id, "name": name, "input": {}})
        out.append(
            f"event: content_block_start\ndata: "
            f'{{"type":"content_block_start","index":{i},"content_block":{block}}}\n\n'
        )
        for piece in _pieces(arguments, rng):
            fragment = json.dumps(piece, ensure_ascii=False)
            out.append(
                f"event: content_block_delta\ndata: "
                f'{{"type":"content_block_delta","index":{i},'
                f'"delta":{{"type":"input_json_delta","partial_json":{fragment}}}}}\n\n'
            )
        out.append(
            f'event: content_block_stop\ndata: {{"type":"content_block_stop","index":{i}}}\n\n'
        )
    out.append(
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},'
        '"usage":{"output_tokens":9}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    return "".join(out).encode()


def _gemini(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    """Gemini sends each call whole; long text parts stand for the fragments."""
    lines = []
    for _, name, arguments in calls:
        for piece in _pieces(arguments, rng)[:: max(1, len(arguments) // 400)]:
            text = {"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}}]}
            lines.append(json.dumps(text, ensure_ascii=False))
        call = {"functionCall": {"name": name, "args": json.loads(arguments)}}
        lines.append(json.dumps({"candidates": [{"content": {"role": "model", "parts": [call]}}]}))
    lines.append(
        '{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}]}'
    )
    return ("\n".join(lines) + "\n").encode()


def _frame(event_type: str, payload: bytes) -> bytes:
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        encoded = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07"
        headers += struct.pack(">H", len(encoded)) + encoded
    prelude = struct.pack(">II", 12 + len(headers) + len(payload) + 4, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _bedrock(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    frames = [_frame("messageStart", b'{"role":"assistant"}')]
    for i, (call_id, name, arguments) in enumerate(calls):
        start = {"start": {"toolUse": {"toolUseId": call_id, "name": name}}, "contentBlockIndex": i}
        frames.append(_frame("contentBlockStart", json.dumps(start).encode()))
        for piece in _pieces(arguments, rng):
            delta = {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": i}
            frames.append(
                _frame("contentBlockDelta", json.dumps(delta, ensure_ascii=False).encode())
            )
        frames.append(_frame("contentBlockStop", b'{"contentBlockIndex":%d}' % i))
    frames.append(_frame("messageStop", b'{"stopReason":"tool_use"}'))
    frames.append(
        _frame("metadata", b'{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}')
    )
    return b"".join(frames)


DIALECTS: list[tuple[str, Callable[[list[tuple[str, str, str]], random.Random], bytes]]] = [
    ("openai-chat.sse", _openai_chat),
    ("anthropic.sse", _anthropic),
    ("gemini.jsonl", _gemini),
    ("bedrock.bin", _bedrock),
]


def make_corpus(root: Path, size_mb: float, seed: int = 7) -> tuple[int, int]:
    """Files of streams under ``root`` until ``size_mb`` MB are written; returns
    (files, bytes). A stream's argument text is 300 to 30,000 characters per call."""
    rng = random.Random(seed)
    target = int(size_mb * 1e6)
    written = files = 0
    while written < target:
        name, build = DIALECTS[files % len(DIALECTS)]
        calls = [
            (f"call-{files}-{i}", f"tool_{i}", _arguments(rng, int(rng.paretovariate(1.2) * 300)))
            for i in range(rng.randint(1, 4))
        ]
        calls = [(i, n, a if len(a) < 60_000 else _arguments(rng, 30_000)) for i, n, a in calls]
        data = build(calls, rng)
        if files % 10 == 9:
            data = gzip.compress(data, compresslevel=1, mtime=0)
        directory = root / f"{files // 500:03d}"
        directory.mkdir(exist_ok=True)
        (directory / f"{files:06d}-{name}").write_bytes(data)
        written += len(data)
        files += 1
    return files, written


# ------------------------------------------------------------------ the contenders


def serial(paths: list[str]) -> tuple[float, float, list[dict[str, object]]]:
    """Wall seconds, CPU seconds of this process, and the records."""
    start, cpu = time.perf_counter(), time.process_time()
    records = [dict(r) for s in expand(paths) for r in replay_source(s)]
    return time.perf_counter() - start, time.process_time() - cpu, records


def _cpu_seconds() -> float:
    return time.process_time()


def cluster_cpu(client: Any) -> float:
    """CPU seconds used so far by the workers' processes (tasks, event loops, transfers)."""
    return float(sum(client.run(_cpu_seconds).values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=300.0, help="corpus size (default 300)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--blocksize", default="32MiB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", help="write the corpus here instead of a temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the corpus afterwards")
    args = parser.parse_args()

    from distributed import Client
    from toolstitch import dask as toolstitch_dask

    root = Path(args.dir or tempfile.mkdtemp(prefix="toolstitch-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        files, nbytes = make_corpus(root, args.size_mb)
        print(
            f"corpus: {files:,} files, {nbytes / 1e6:,.1f} MB on disk "
            f"(generated in {time.perf_counter() - start:.1f} s)"
        )
        paths = [str(root)]

        best_serial = serial_cpu = float("inf")
        reference: list[dict[str, object]] = []
        for _ in range(args.repeats):
            elapsed, cpu, reference = serial(paths)
            if elapsed < best_serial:
                best_serial, serial_cpu = elapsed, cpu
        streams = len({r["stream"] for r in reference})
        calls = sum(1 for r in reference if r["id"] is not None)
        assert all(r["complete"] for r in reference), "every generated stream completes"

        start = time.perf_counter()
        with (
            toolstitch_dask.local_cluster(args.workers) as cluster,
            Client(cluster) as client,
        ):
            started = time.perf_counter() - start
            # One untimed run: workers import toolstitch, pandas and pyarrow on first use.
            toolstitch_dask.read_calls(paths, blocksize=args.blocksize).compute()
            # What the idle cluster spends per second (heartbeats, event loops, the
            # scheduler thread in this process): it grows with wall time, not with work.
            workers_cpu, here_cpu = cluster_cpu(client), time.process_time()
            time.sleep(3.0)
            idle_rate = (cluster_cpu(client) - workers_cpu + time.process_time() - here_cpu) / 3.0
            best_cluster = best_parquet = cluster_cpu_s = parquet_cpu_s = float("inf")
            partitions = 0
            for _ in range(args.repeats):
                workers_cpu, here_cpu = cluster_cpu(client), time.process_time()
                start = time.perf_counter()
                frame = toolstitch_dask.read_calls(paths, blocksize=args.blocksize)
                computed = frame.compute()
                elapsed = time.perf_counter() - start
                cpu = cluster_cpu(client) - workers_cpu + time.process_time() - here_cpu
                if elapsed < best_cluster:
                    best_cluster, cluster_cpu_s = elapsed, cpu
                partitions = frame.npartitions
                assert toolstitch_dask.to_records(computed) == reference, "rows differ"
                out = root.with_name(root.name + "-calls.parquet")
                workers_cpu, here_cpu = cluster_cpu(client), time.process_time()
                start = time.perf_counter()
                toolstitch_dask.write_parquet(paths, str(out), blocksize=args.blocksize)
                elapsed = time.perf_counter() - start
                cpu = cluster_cpu(client) - workers_cpu + time.process_time() - here_cpu
                if elapsed < best_parquet:
                    best_parquet, parquet_cpu_s = elapsed, cpu
                shutil.rmtree(out, ignore_errors=True)
            client.close()

        print(f"{streams:,} streams, {calls:,} calls; best of {args.repeats}")
        print(
            f"local cluster: {args.workers} worker processes x 1 thread, started in {started:.1f} s"
        )
        print(f"idle cluster: {idle_rate:.3f} CPU seconds per second")
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"machine: {os.cpu_count()} cores, load average {load} at the end")
        header = f"{'':34} {'seconds':>8} {'streams/s':>10} {'MB/s':>7} {'vs serial':>9}"
        print(f"{header} {'CPU s':>7} {'MB/CPU s':>9} {'less idle':>10}")
        for label, seconds, cpu_seconds in (
            ("serial (one process)", best_serial, serial_cpu),
            (f"cluster, {partitions} partitions, compute()", best_cluster, cluster_cpu_s),
            ("cluster, write_parquet", best_parquet, parquet_cpu_s),
        ):
            idle = 0.0 if label.startswith("serial") else idle_rate * seconds
            print(
                f"{label:34} {seconds:8.2f} {streams / seconds:10,.0f} "
                f"{nbytes / 1e6 / seconds:7,.1f} {best_serial / seconds:8.2f}x "
                f"{cpu_seconds:7.2f} {nbytes / 1e6 / cpu_seconds:9,.1f} "
                f"{cpu_seconds - idle:10.2f}"
            )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
