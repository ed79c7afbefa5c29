"""Side-by-side: one OpenAI chat stream, raw SSE bytes to finished tool calls.

The stream: ~68k tool-call fragments of 1-8 characters (4 parallel calls,
arguments with escapes and non-ASCII), one SSE event per fragment, fed in 64 KiB
network reads. Contenders, in one process:

- toolstitch ``Assembler.feed_bytes`` (framing, decoding and accumulation in
  Rust, GIL released), without and with live events;
- the best pure-Python pipeline: split lines, ``orjson.loads`` (``json.loads``
  if orjson is absent), a dict accumulator;
- toolstitch ``Assembler.feed`` on dicts already decoded by ``orjson``;
- the ``openai`` SDK's own ``ChatCompletionStreamState`` (on a 2,000-event
  prefix, it is that slow), when the SDK is installed.

Prints ns per fragment, SSE throughput and ratios. A benchmark, never a test:
run it from a release build (`make bench`).
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from toolstitch import Assembler

try:
    import orjson

    loads: Callable[[bytes], Any] = orjson.loads
    LOADS = "orjson.loads"
except ImportError:  # pragma: no cover - the bench extra installs orjson
    loads = json.loads
    LOADS = "json.loads"

N_FRAGMENTS = 68_000
REPEATS = 7
READ = 64 * 1024


def make_stream() -> tuple[bytes, dict[str, str]]:
    rng = random.Random(11)
    alphabet = 'abcdefgh ijk"\\:{},0123456789é日🦀'
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    events: list[bytes] = []
    args = {i: [] for i in range(4)}  # type: dict[int, list[str]]

    def event(delta: dict[str, Any], finish: str | None = None) -> None:
        chunk = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        events.append(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")

    for i in range(4):
        call = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": f"tool_{i}", "arguments": ""},
        }
        event({"role": "assistant", "tool_calls": [call]} if i == 0 else {"tool_calls": [call]})
    for n in range(N_FRAGMENTS):
        i = n % 4
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        args[i].append(piece)
        event({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    event({}, "tool_calls")
    events.append(b"data: [DONE]\n\n")
    expected = {f"call_{i}": "".join(p) for i, p in args.items()}
    return b"".join(events), expected


def reads(data: bytes) -> list[bytes]:
    return [data[i : i + READ] for i in range(0, len(data), READ)]


def toolstitch_bytes(chunks: list[bytes], live: bool) -> dict[str, str]:
    a = Assembler("openai-chat", live=live)
    for chunk in chunks:
        a.feed_bytes(chunk)
    a.close()
    return {b.id: b.input for b in a.message().tool_uses}


def pure_python(chunks: list[bytes]) -> dict[str, str]:
    """Split SSE lines, decode each event, accumulate by index in a dict."""
    calls: dict[int, list[Any]] = {}
    buf = b""
    for chunk in chunks:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            for choice in loads(line[6:])["choices"]:
                for tc in choice["delta"].get("tool_calls") or ():
                    entry = calls.get(tc["index"])
                    if entry is None:
                        entry = calls[tc["index"]] = ["", []]
                    if tc.get("id"):
                        entry[0] = tc["id"]
                    entry[1].append(tc["function"].get("arguments") or "")
    return {e[0]: "".join(e[1]) for e in calls.values()}


def toolstitch_dicts(events: list[Any]) -> dict[str, str]:
    a = Assembler("openai-chat", live=False)
    for event in events:
        a.feed(event)
    a.close()
    return {b.id: b.input for b in a.message().tool_uses}


def decoded_events(data: bytes) -> list[Any]:
    return [loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: {")]


def openai_sdk(events: list[Any]) -> int:
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for event in events:
        state.handle_chunk(ChatCompletionChunk.model_validate(event))
    return len(state.current_completion_snapshot.choices)


def median_seconds(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    data, expected = make_stream()
    chunks = reads(data)
    events = decoded_events(data)
    assert toolstitch_bytes(chunks, live=False) == expected
    assert toolstitch_bytes(chunks, live=True) == expected
    assert pure_python(chunks) == expected
    assert toolstitch_dicts(events) == expected

    base = median_seconds(lambda: pure_python(chunks))
    rows = [
        (f"pure Python: split lines, {LOADS}, dict", base),
        (
            "toolstitch feed_bytes (live=False)",
            median_seconds(lambda: toolstitch_bytes(chunks, False)),
        ),
        (
            "toolstitch feed_bytes (live events)",
            median_seconds(lambda: toolstitch_bytes(chunks, True)),
        ),
        (f"toolstitch feed, dicts from {LOADS}*", median_seconds(lambda: toolstitch_dicts(events))),
    ]
    try:
        prefix = events[:2000]
        sdk = median_seconds(lambda: openai_sdk(prefix), repeats=3) * len(events) / len(prefix)
        rows.append(("openai SDK ChatCompletionStreamState*", sdk))
    except ImportError:
        pass
    mb = len(data) / 1e6
    print(
        f"{N_FRAGMENTS:,} fragments, {mb:.1f} MB of SSE in {len(chunks)} reads, median of {REPEATS}"
    )
    print(f"{'pipeline':44} {'ns/fragment':>12} {'MB/s':>8} {'vs pure Python':>15}")
    for name, seconds in rows:
        ns = seconds / N_FRAGMENTS * 1e9
        print(f"{name:44} {ns:12.0f} {mb / seconds:8.0f} {base / seconds:14.2f}x")
    print("* decoding the SSE into dicts is not counted for these rows")


if __name__ == "__main__":
    main()
