"""Cost per fragment and peak memory from 10k to 1M fragments, through ``feed_bytes``.

One OpenAI chat response (or Anthropic, ``--dialect anthropic``) whose one tool call
gets N argument fragments of 1-8 characters (escapes and non-ASCII among them), one
SSE event each, fed in 64 KiB reads with ``live=False``, then ``close()`` and
``message()``. Each size runs in a subprocess of its own, so that its peak resident
memory is its own: the figure is the peak while feeding and closing less the peak
before the first read (the message's Python strings are made after), against the
argument bytes the call holds at the end (the target: at most twice
those plus 16 MB). The SSE bytes are made in batches between the timed reads (only
``feed_bytes`` and ``close`` are timed), so the input is never held whole.

``python benches/bench_scaling.py [--dialect openai-chat|anthropic] [--sizes 10000,...]``
prints a table; it is a benchmark, never a test. Run it from a release build
(``make release``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator

from toolstitch import Assembler
from toolstitch.messages import Provider

READ = 64 * 1024
BATCH_EVENTS = 2_000
SIZES = (10_000, 100_000, 1_000_000)
ALPHABET = 'abcdefgh ijk:{},0123456789\\n\\t"é日🦀'


def pool(rng: random.Random) -> list[str]:
    """Argument pieces inside one JSON string: escaped quotes and backslashes kept whole."""
    tokens = ["a", "b", "c", " ", "é", "日", "🦀", "0", "1", "\\n", '\\"', "\\\\", "\\t", ":"]
    return ["".join(rng.choice(tokens) for _ in range(rng.randint(1, 8))) for _ in range(4096)]


def event(dialect: str, piece: str) -> bytes:
    if dialect == "anthropic":
        delta = {"type": "input_json_delta", "partial_json": piece}
        body = {"type": "content_block_delta", "index": 0, "delta": delta}
        return b"event: content_block_delta\ndata: " + compact(body) + b"\n\n"
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_0123456789",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]},
                "logprobs": None,
                "finish_reason": None,
            }
        ],
    }
    return b"data: " + compact(chunk) + b"\n\n"


def compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def opening(dialect: str) -> bytes:
    if dialect == "anthropic":
        start = {
            "type": "message_start",
            "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
        }
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}},
        }
        return (
            b"event: message_start\ndata: " + compact(start) + b"\n\n"
            b"event: content_block_start\ndata: " + compact(block) + b"\n\n"
        )
    function = {"name": "write", "arguments": ""}
    call = {"index": 0, "id": "call_1", "type": "function", "function": function}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    return b"data: " + compact(chunk) + b"\n\n"


def closing(dialect: str) -> bytes:
    if dialect == "anthropic":
        delta = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}
        return (
            b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
            b"event: message_delta\ndata: " + compact(delta) + b"\n\n"
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        )
    chunk = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    return b"data: " + compact(chunk) + b"\n\ndata: [DONE]\n\n"


def batches(dialect: str, fragments: int) -> Iterator[tuple[list[bytes], int]]:
    """The stream in batches of reads, with the argument bytes each batch brings."""
    rng = random.Random(fragments)
    pieces = pool(rng)
    events = [event(dialect, p) for p in pieces]
    sizes = [len(p.encode()) for p in pieces]
    head = '{"path": "a.txt", "content": "'
    yield [opening(dialect) + event(dialect, head)], len(head)
    left = fragments - 2
    while left > 0:
        n = min(left, BATCH_EVENTS)
        picks = [rng.randrange(len(events)) for _ in range(n)]
        data = b"".join(events[i] for i in picks)
        yield (
            [data[at : at + READ] for at in range(0, len(data), READ)],
            sum(sizes[i] for i in picks),
        )
        left -= n
    yield [event(dialect, '"}') + closing(dialect)], 2


def peak_rss() -> int:
    """Peak resident bytes of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def one(dialect: str, fragments: int) -> dict[str, float]:
    provider: Provider = "anthropic" if dialect == "anthropic" else "openai-chat"
    asm = Assembler(provider, live=False)
    feed = asm.feed_bytes
    before = peak_rss()
    seconds, argument_bytes = 0.0, 0
    for reads, added in batches(dialect, fragments):
        argument_bytes += added
        t0 = time.perf_counter()
        for read in reads:
            feed(read)
        seconds += time.perf_counter() - t0
    t0 = time.perf_counter()
    asm.close()
    seconds += time.perf_counter() - t0
    # While feeding and closing: the message's Python strings come after.
    growth = max(0, peak_rss() - before)
    message = asm.message()
    (call,) = message.tool_uses
    assert message.complete and len(call.input.encode()) == argument_bytes, "not rebuilt"
    json.loads(call.input)
    return {
        "fragments": fragments,
        "seconds": seconds,
        "argument_bytes": argument_bytes,
        "peak_rss_growth": growth,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialect", choices=["openai-chat", "anthropic"], default="openai-chat")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.dialect, args.one)))
        return
    print(f"{args.dialect}: feed_bytes (live=False), one call, N fragments of 1-8 characters")
    print(
        f"{'fragments':>10} {'ns/fragment':>12} {'fragments/s':>12} {'args MB':>8} "
        f"{'peak RSS growth MB':>19} {'bound MB':>9}"
    )
    first: float | None = None
    for n in (int(s) for s in args.sizes.split(",")):
        cmd = [sys.executable, __file__, "--dialect", args.dialect, "--one", str(n)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        per = r["seconds"] / n * 1e9
        first = first or per
        bound = 2 * r["argument_bytes"] + 16e6
        print(
            f"{n:>10} {per:>12.0f} {n / r['seconds']:>12,.0f} {r['argument_bytes'] / 1e6:>8.1f} "
            f"{r['peak_rss_growth'] / 1e6:>19.1f} {bound / 1e6:>9.1f}"
            f"  ({per / first:.2f}x the smallest size's cost per fragment"
            f"{', over the bound' if r['peak_rss_growth'] > bound else ''})"
        )


if __name__ == "__main__":
    main()
