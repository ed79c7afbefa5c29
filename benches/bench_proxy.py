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
the upstream (``direct``). Then the memory of open streams: the proxy's RSS with 0, 100
and 200 streams held open (the upstream pauses after the first event), and the slope.

Last, in this process, what a request's tool set costs: compiled from its declaration
(``Toolset``) against found in the proxy's cache (the same declaration again).

Run: ``.venv/bin/python benches/bench_proxy.py [--requests N] [--streams N] [--load-only]``
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
    name = "recorded-27" if hold else name
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    for i, event in enumerate(STREAMS[name]):
        await send({"type": "http.response.body", "body": event, "more_body": True})
        if hold and i == 0:
            await asyncio.sleep(HOLD_SECONDS)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


# How long the ``held`` stream pauses after its first event (the memory of open streams).
HOLD_SECONDS = 6.0


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


async def held_open(url: str, pid: int, streams: int) -> int:
    """The proxy's RSS while ``streams`` responses are open (each past its first event)."""
    body = {"model": "m", "messages": [], "stream": True, "tools": TOOLS["recorded-27"]}
    if streams == 0:
        return rss_kib(pid)
    opened = 0
    all_open = asyncio.Event()
    limits = httpx.Limits(max_connections=streams)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:

        async def one_async() -> None:
            nonlocal opened
            async with client.stream("POST", url, json=body) as response:
                chunks = response.aiter_raw()
                await chunks.__anext__()
                opened += 1
                if opened == streams:
                    all_open.set()
                async for _ in chunks:
                    pass

        tasks = [asyncio.ensure_future(one_async()) for _ in range(streams)]
        await asyncio.wait_for(all_open.wait(), HOLD_SECONDS)
        rss = rss_kib(pid)
        await asyncio.gather(*tasks)
    return rss


def memory(contenders: dict[str, tuple[Any, str]], counts: tuple[int, ...] = (0, 100, 200)) -> None:
    """The memory of open streams: each proxy's RSS at each count, and the slope."""
    print(f"\nRSS with streams held open, load average {os.getloadavg()[0]:.1f}\n")
    print("| proxy | " + " | ".join(f"{n} open" for n in counts) + " | per open stream |")
    print("|---|" + "---|" * (len(counts) + 1))
    for who, (process, url) in contenders.items():
        # A first round warms the pools and allocators; the second is the one shown.
        for n in counts:
            asyncio.run(held_open(f"{url}/v1/held", process.pid, n))
        rss = [asyncio.run(held_open(f"{url}/v1/held", process.pid, n)) for n in counts]
        slope = (rss[-1] - rss[0]) / (counts[-1] - counts[0])
        cells = " | ".join(f"{r / 1024:.1f} MiB" for r in rss)
        print(f"| {who} | {cells} | {slope:.1f} KiB |")


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
    print(
        "| proxy | wall time (best) | events/s | vs python plain "
        "| proxy CPU per event (median) | vs python plain | time to last byte (median) "
        "| added vs direct |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base = min(times["python plain"])
    base_cpu = statistics.median(cpu["python plain"])
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
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream()
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
        for relay in ("python", "rust")
        for who, flags in (
            ("plain", ["--no-check"]),
            ("checking", []),
            ("enforcing", ["--enforce"]),
        )
    }
    results: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    try:
        load(contenders, args.streams, rounds=args.rounds, upstream=upstream)
        memory(contenders)
        if args.load_only:
            return
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
