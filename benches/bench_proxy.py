"""``toolstitch proxy`` against a plain pass-through on the same streams.

Each proxy a ``toolstitch proxy`` subprocess on 127.0.0.1, on each relay (``--relay
python``: uvicorn and httpx; ``--relay rust``: the extension's relay on tokio and hyper):

- ``plain``: ``--no-check``, the same ASGI server, client and relay code with toolstitch
  left out (no reassembly, no validation, no record content): the baseline;
- ``checking``: the default, reassembling and validating every response and writing
  its record;
- ``enforcing``: ``--enforce``, which also forwards SSE event by event and holds each
  choice's final event until its calls are checked.

The upstream is a small ASGI app (uvicorn, in its own process) sending each SSE event of
a stream as its own chunk, as fast as it can: the recorded OpenAI chat stream (27
events, two calls) and a generated one of 600 events (text, then one call's arguments
in 1-8 byte fragments). The client (httpx, sequential requests) measures for each
request the time to the first body byte and the time from it to the end. Contenders
alternate request by request; the figures are medians, and the ratios are against
``plain`` measured in the same rounds.

Then a bounded load: ``--streams`` (200) concurrent requests of the long stream, every
body checked whole, ``--rounds`` rounds per proxy: the CPU each proxy process spends per
event, and each request's time to its last byte against the same burst sent straight to
the upstream (``direct``). Then the memory of open streams: a fresh proxy process each,
its RSS after a few requests and with 100, then 200 streams held open (the upstream
pauses after the first event; every held stream must come whole), and the slope.
``--load-only`` stops after the load, ``--memory-only`` measures the memory alone; both
measure the relays ``--relays`` names.

``--latency-only``: the latency a proxy adds while 200 streams are open through it. The
load comes from two processes of its own (paced streams: 120 events, one every 50 ms,
as a model sends them), so the load-generating client does not share the measuring
process; this process probes at a low rate, each probe a request of the recorded stream
straight to the upstream and then through the proxy, back to back, and the figures are
the medians of the pairs' differences (time to first byte, time to last byte).

Last, in this process, what a request's tool set costs: compiled from its declaration
(``Toolset``) against found in the proxy's cache (the same declaration again).

Run: ``.venv/bin/python benches/bench_proxy.py [--requests N] [--streams N] [--load-only]
[--latency-only] [--memory-only] [--relays python,rust]``
(never part of the tests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "fixtures" / "real" / "openai_chat-completions-parallel-two-tools.sse"


def generated_stream(events: int = 600) -> bytes:
    """An OpenAI chat stream: text deltas, then one call's arguments in small fragments."""
    rng = random.Random(7)
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": f"word{i} "}) for i in range(events // 3)]
    arguments = json.dumps({"items": [{"n": i, "text": 'é"x'} for i in range(60)]})
    fragments: list[str] = []
    at = 0
    while at < len(arguments) and len(fragments) < events - len(out) - 3:
        step = rng.randint(1, 8)
        fragments.append(arguments[at : at + step])
        at += step
    fragments[-1] += arguments[at:]
    call = {"index": 0, "id": "call_bench", "type": "function", "function": {"name": "store"}}
    out.append(chunk({"tool_calls": [{**call, "function": {"name": "store", "arguments": ""}}]}))
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    out.append(chunk({}, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def events(stream: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in stream.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]


STREAMS = {
    "recorded-27": events(RECORDED.read_bytes()),
    "generated-600": events(generated_stream()),
}
# The latency part's background load: a 120-event stream sent at a model's pace.
PACED = events(generated_stream(120))
PACE_SECONDS = 0.05
TOOLS = {
    "recorded-27": [
        {"type": "function", "function": {"name": "GetWeatherArgs", "parameters": {}}},
        {"type": "function", "function": {"name": "get_stock_price", "parameters": {}}},
    ],
    "generated-600": [
        {
            "type": "function",
            "function": {
                "name": "store",
                "parameters": {"type": "object", "properties": {"items": {"type": "array"}}},
            },
        }
    ],
}


async def upstream_app(scope: Any, receive: Any, send: Any) -> None:
    """Streams ``STREAMS[path]`` one event per chunk."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    name = scope["path"].rsplit("/", 1)[-1]
    hold = name == "held"
    paced = name == "paced"
    stream = PACED if paced else STREAMS["recorded-27" if hold else name]
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    for i, event in enumerate(stream):
        await send({"type": "http.response.body", "body": event, "more_body": True})
        if hold and i == 0:
            await asyncio.sleep(HOLD_SECONDS)
        elif paced:
            await asyncio.sleep(PACE_SECONDS)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


# How long the ``held`` stream pauses after its first event (the memory of open streams).
HOLD_SECONDS = 12.0


def serve_upstream() -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    from toolstitch.proxy import nodelay_protocol

    config = uvicorn.Config(
        upstream_app, http=nodelay_protocol(), log_level="warning", access_log=False
    )
    uvicorn.Server(config).run(sockets=[sock])


def start_proxy(upstream: str, *flags: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "toolstitch", "proxy", "--upstream", upstream),
            *("--listen", "127.0.0.1:0", "--records", os.devnull, *flags),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    # The rest (a log line per response) is read and dropped: a pipe left full would
    # stop the proxy mid-run.
    threading.Thread(target=process.stderr.read, daemon=True).start()
    return process, line.split("listening on ")[1].split()[0]


def one(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float, int]:
    started = time.perf_counter()
    with client.stream("POST", url, json=body) as response:
        chunks = response.iter_raw()
        first = next(chunks)
        ttfb = time.perf_counter() - started
        size = len(first) + sum(len(c) for c in chunks)
    return ttfb, time.perf_counter() - started - ttfb, size


async def burst(
    url: str, body: dict[str, Any], streams: int
) -> tuple[float, list[int], list[float]]:
    """``streams`` concurrent requests: the wall time, each body's size and each
    request's time to its last byte."""
    limits = httpx.Limits(max_connections=streams)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:

        async def one_async() -> tuple[int, float]:
            began = time.perf_counter()
            async with client.stream("POST", url, json=body) as response:
                size = sum([len(c) async for c in response.aiter_raw()])
            return size, time.perf_counter() - began

        started = time.perf_counter()
        done = await asyncio.gather(*(one_async() for _ in range(streams)))
        return time.perf_counter() - started, [d[0] for d in done], [d[1] for d in done]


def rss_kib(pid: int) -> int:
    """A process's resident memory (Linux ``/proc``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def held_open(url: str, pid: int, streams: int) -> tuple[int, list[str]]:
    """The proxy's RSS while ``streams`` responses are open (each past its first event),
    and what went wrong with any of them (each must come whole)."""
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS["recorded-27"]}
    expected = len(b"".join(STREAMS["recorded-27"]))
    opened = 0
    all_open = asyncio.Event()
    failures: list[str] = []
    limits = httpx.Limits(max_connections=streams)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:

        async def one_async() -> None:
            nonlocal opened
            try:
                async with client.stream("POST", url, json=body) as response:
                    chunks = response.aiter_raw()
                    size = len(await chunks.__anext__())
                    opened += 1
                    if opened == streams:
                        all_open.set()
                    size += sum([len(c) async for c in chunks])
                if size != expected:
                    failures.append(f"{size} of {expected} bytes")
            except httpx.HTTPError as e:
                failures.append(f"{type(e).__name__}: {e}")

        tasks = [asyncio.ensure_future(one_async()) for _ in range(streams)]
        try:
            await asyncio.wait_for(all_open.wait(), HOLD_SECONDS)
        except TimeoutError:
            raise SystemExit(f"{opened} of {streams} streams opened in {HOLD_SECONDS} s") from None
        rss = rss_kib(pid)
        await asyncio.gather(*tasks)
    return rss, failures


def memory(upstream: str, relays: list[str], counts: tuple[int, ...] = (100, 200)) -> None:
    """The memory of open streams: for each proxy, a fresh process warmed by a few
    sequential requests (RSS at 0 open), then ``counts`` streams held open in turn (the
    RSS while they are), and the slope. A fresh process each time: a heap that grew for
    an earlier round is not given back, so a warm process's RSS would hide the streams."""
    print(f"\nRSS with streams held open, load average {os.getloadavg()[0]:.1f}\n")
    print("| proxy | 0 open | " + " | ".join(f"{n} open" for n in counts) + " | per open stream |")
    print("|---|---|" + "---|" * (len(counts) + 1))
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS["recorded-27"]}
    for relay in relays:
        for who, flags in (
            ("plain", ["--no-check"]),
            ("checking", []),
            ("enforcing", ["--enforce"]),
        ):
            process, url = start_proxy(upstream, "--relay", relay, *flags)
            try:
                with httpx.Client(timeout=60) as client:
                    for _ in range(5):
                        one(client, f"{url}/v1/recorded-27", body)
                rss = [rss_kib(process.pid)]
                for n in counts:
                    held, failures = asyncio.run(held_open(f"{url}/v1/held", process.pid, n))
                    if failures:
                        raise SystemExit(
                            f"{relay} {who}: {len(failures)} held streams failed: "
                            f"{sorted(set(failures))}"
                        )
                    rss.append(held)
            finally:
                process.terminate()
                process.wait(timeout=30)
            slope = (rss[-1] - rss[0]) / counts[-1]
            cells = " | ".join(f"{r / 1024:.1f} MiB" for r in rss)
            print(f"| {relay} {who} | {cells} | {slope:.1f} KiB |", flush=True)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(contenders: dict[str, tuple[Any, str]], streams: int, rounds: int, upstream: str) -> None:
    """The bounded load: wall time, and the CPU time each proxy process spends per event
    (its own user and system time, read from ``/proc`` around each burst: what a fleet
    of proxies pays per event, and far less sensitive to other load than latency)."""
    name = "generated-600"
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS[name]}
    expected = len(b"".join(STREAMS[name]))
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    last: dict[str, list[float]] = {}
    for _ in range(rounds):
        for who, (process, url) in [("direct", (None, upstream)), *contenders.items()]:
            before = cpu_seconds(process.pid) if process is not None else 0.0
            try:
                elapsed, sizes, ttlb = asyncio.run(burst(f"{url}/v1/{name}", body, streams))
            except httpx.HTTPError as e:
                raise SystemExit(f"{who}: {type(e).__name__} during the load") from e
            spent = cpu_seconds(process.pid) - before if process is not None else 0.0
            assert sizes == [expected] * streams, (who, sizes)
            times.setdefault(who, []).append(elapsed)
            last.setdefault(who, []).append(statistics.median(ttlb))
            cpu.setdefault(who, []).append(spent / (streams * len(STREAMS[name])))
    print(
        f"\n{streams} concurrent streams of {name}, {rounds} rounds, load average "
        f"{os.getloadavg()[0]:.1f}\n"
    )
    # The ratios are against the Python relay's plain proxy, or (`--relays rust`) the
    # first plain one measured.
    plain = "python plain" if "python plain" in times else next(w for w in times if "plain" in w)
    print(
        f"| proxy | wall time (best) | events/s | vs {plain} "
        f"| proxy CPU per event (median) | vs {plain} | time to last byte (median) "
        "| added vs direct |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base = min(times[plain])
    base_cpu = statistics.median(cpu[plain])
    direct = statistics.median(last["direct"])
    for who, values in times.items():
        best = min(values)
        per_event = statistics.median(cpu[who])
        to_last = statistics.median(last[who])
        print(
            f"| {who} | {best * 1e3:.0f} ms | {streams * len(STREAMS[name]) / best:,.0f} | "
            f"{best / base:.2f}x | {per_event * 1e6:.2f} µs | {per_event / base_cpu:.2f}x | "
            f"{to_last * 1e3:.1f} ms | {(to_last - direct) * 1e6:+.0f} µs |"
        )


async def paced_load(url: str, streams: int, seconds: float) -> tuple[int, int]:
    """``streams`` concurrent paced streams through ``url`` for ``seconds`` (each
    request followed by the next; every body checked whole): how many completed, and
    how many requests failed before their response began (tried again: a keep-alive
    connection the server closed as it was reused)."""
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS["generated-600"]}
    expected = len(b"".join(PACED))
    deadline = time.monotonic() + seconds
    done = 0
    failed = 0
    limits = httpx.Limits(max_connections=streams)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def keep_one() -> None:
            nonlocal done, failed
            while time.monotonic() < deadline:
                try:
                    async with client.stream("POST", url, json=body) as response:
                        chunks = response.aiter_raw()
                        size = len(await chunks.__anext__())
                        size += sum([len(c) async for c in chunks])
                except (httpx.ReadError, httpx.RemoteProtocolError):
                    failed += 1
                    continue
                if size != expected:
                    raise SystemExit(f"a paced stream came back with {size} of {expected} bytes")
                done += 1

        await asyncio.gather(*(keep_one() for _ in range(streams)))
    return done, failed


def latency(
    contenders: dict[str, tuple[Any, str]],
    upstream: str,
    streams: int,
    processes: int = 2,
    samples: int = 80,
) -> None:
    """The latency a proxy adds with ``streams`` streams open through it: the load (paced
    streams, a model's pace) comes from ``processes`` processes of their own; this
    process, otherwise idle, probes at a low rate, each sample a request of the recorded
    stream straight to the upstream and then through the proxy, back to back. The
    figures: medians of the pairs' differences (time to first byte, to last byte)."""
    name = "recorded-27"
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS[name]}
    expected = len(b"".join(STREAMS[name]))
    print(
        f"\nAdded latency with {streams} paced streams open ({len(PACED)} events, one every "
        f"{PACE_SECONDS * 1e3:.0f} ms) from {processes} load processes; {samples} probes of "
        f"{name} per proxy\n"
    )
    print(
        "| proxy | load average | TTFB direct | TTFB proxied | added (median) "
        "| TTLB direct | TTLB proxied | added (median) | added p90 (TTLB) | streams done "
        "| failed before the response |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for who, (_, url) in contenders.items():
        loaders = [
            subprocess.Popen(
                [
                    *(sys.executable, __file__, "--load-client", f"{url}/v1/paced"),
                    *(str(streams // processes), str(LOAD_SECONDS)),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(processes)
        ]
        time.sleep(LOAD_RAMP_SECONDS)
        pairs: list[tuple[float, float, float, float]] = []
        with httpx.Client(timeout=60) as client:
            for _ in range(3):  # warm-up: connections open on both paths
                one(client, f"{upstream}/v1/{name}", body)
                one(client, f"{url}/v1/{name}", body)
            for _ in range(samples):
                d_first, d_rest, d_size = one(client, f"{upstream}/v1/{name}", body)
                p_first, p_rest, p_size = one(client, f"{url}/v1/{name}", body)
                assert d_size == p_size == expected, (who, d_size, p_size)
                pairs.append((d_first, d_first + d_rest, p_first, p_first + p_rest))
                time.sleep(0.05)
        busy = os.getloadavg()[0]
        done = failed = 0
        for loader in loaders:
            out, _ = loader.communicate(timeout=LOAD_SECONDS + 120)
            if loader.returncode != 0:
                raise SystemExit(f"{who}: a load process failed")
            done += int(out.split()[0])
            failed += int(out.split()[1])
        first_added = statistics.median(p[2] - p[0] for p in pairs)
        last_added = sorted(p[3] - p[1] for p in pairs)
        print(
            f"| {who} | {busy:.1f} | {statistics.median(p[0] for p in pairs) * 1e3:.2f} ms | "
            f"{statistics.median(p[2] for p in pairs) * 1e3:.2f} ms | "
            f"{first_added * 1e6:+.0f} µs | "
            f"{statistics.median(p[1] for p in pairs) * 1e3:.2f} ms | "
            f"{statistics.median(p[3] for p in pairs) * 1e3:.2f} ms | "
            f"{statistics.median(last_added) * 1e6:+.0f} µs | "
            f"{last_added[int(len(last_added) * 0.9)] * 1e6:+.0f} µs | {done} | {failed} |"
        )


# The latency part's load: how long each load process runs, and how long the probes
# wait for every stream to be open.
LOAD_SECONDS = 25.0
LOAD_RAMP_SECONDS = 4.0


def toolset_costs(repeat: int = 2000) -> None:
    """A request's tool set: compiled anew against the proxy's cache hit, per request."""
    import timeit

    from toolstitch.proxy.toolsets import ToolsetCache
    from toolstitch.tools import Toolset

    print("\n| declaration | compiled (Toolset) | cached (same declaration) | ratio |")
    print("|---|---|---|---|")
    for name, tools in TOOLS.items():
        cache = ToolsetCache()
        cache.get(tools)

        def compile_anew(tools: Any = tools) -> None:
            Toolset(tools)

        def look_up(tools: Any = tools, get: Any = cache.get) -> None:
            get(tools)

        compiled = min(timeit.repeat(compile_anew, number=repeat, repeat=5))
        cached = min(timeit.repeat(look_up, number=repeat, repeat=5))
        print(
            f"| {name} | {compiled / repeat * 1e6:.1f} µs | {cached / repeat * 1e6:.1f} µs | "
            f"{cached / compiled:.2f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=60, help="per contender and stream")
    parser.add_argument("--streams", type=int, default=200, help="concurrent streams (load)")
    parser.add_argument("--load-only", action="store_true", help="only the concurrent part")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the concurrent part")
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--toolsets-only", action="store_true", help="only the tool set costs")
    parser.add_argument("--latency-only", action="store_true", help="only the added latency")
    parser.add_argument("--memory-only", action="store_true", help="only the open streams' RSS")
    parser.add_argument(
        "--relays", default="python,rust", help="the relays measured, comma-separated"
    )
    parser.add_argument("--load-client", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream()
        return
    if args.load_client:
        url, streams, seconds = args.load_client
        print(*asyncio.run(paced_load(url, int(streams), float(seconds))))
        return
    if args.toolsets_only:
        toolset_costs()
        return
    upstream_process = subprocess.Popen(
        [sys.executable, __file__, "--serve-upstream"], stdout=subprocess.PIPE, text=True
    )
    assert upstream_process.stdout is not None
    upstream = f"http://127.0.0.1:{upstream_process.stdout.readline().strip()}"
    contenders = {
        f"{relay} {who}": start_proxy(upstream, "--relay", relay, *flags)
        for relay in args.relays.split(",")
        for who, flags in (
            ("plain", ["--no-check"]),
            ("checking", []),
            ("enforcing", ["--enforce"]),
        )
    }
    results: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    try:
        if args.latency_only:
            latency(
                {k: v for k, v in contenders.items() if "checking" not in k},
                upstream,
                args.streams,
            )
            return
        if args.memory_only:
            memory(upstream, args.relays.split(","))
            return
        load(contenders, args.streams, rounds=args.rounds, upstream=upstream)
        if args.load_only:
            return
        memory(upstream, args.relays.split(","))
        with httpx.Client(timeout=60) as client:
            for name in STREAMS:
                expected = b"".join(STREAMS[name])
                body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS[name]}
                for _, url in contenders.values():  # warm-up (connections, imports)
                    for _ in range(5):
                        one(client, f"{url}/v1/{name}", body)
                for _ in range(args.requests):
                    for who, (_, url) in contenders.items():
                        sample = one(client, f"{url}/v1/{name}", body)
                        assert sample[2] == len(expected), (who, name, sample[2])
                        results.setdefault((who, name), []).append(sample)
    finally:
        for process, _ in contenders.values():
            process.terminate()
            process.wait(timeout=30)
        upstream_process.terminate()
        upstream_process.wait(timeout=30)
    print(
        f"{args.requests} requests per contender and stream, medians, load average "
        f"{os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| stream | proxy | time to first byte | rest of the stream | per event "
        "| TTFB vs plain | per event vs plain |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, chunks in STREAMS.items():
        base_ttfb = statistics.median(s[0] for s in results[("python plain", name)])
        base_rest = statistics.median(s[1] for s in results[("python plain", name)])
        for who in contenders:
            samples = results[(who, name)]
            ttfb = statistics.median(s[0] for s in samples)
            rest = statistics.median(s[1] for s in samples)
            per_event = rest / (len(chunks) - 1)
            print(
                f"| {name} | {who} | {ttfb * 1e3:.2f} ms | {rest * 1e3:.2f} ms | "
                f"{per_event * 1e6:.0f} µs | {ttfb / base_ttfb:.2f}x | {rest / base_rest:.2f}x |"
            )
    toolset_costs()


if __name__ == "__main__":
    main()
