"""The comparison benchmark: toolstitch against pure Python and the providers' SDKs.

Workloads: OpenAI chat streams and Anthropic event streams with 1, 4 and 16 calls per
response, 2 KB of JSON arguments per call (escapes, quotes and non-ASCII in them) cut
in fragments of 1-8 characters, one SSE event per fragment, about 200k fragments per
workload (many responses), each response fed in 64 KiB network reads. OpenAI streams
its parallel calls one after the other; Anthropic one content block after the other.

Contenders (each checked to rebuild exactly the same calls before it is timed):

- pure Python: split lines, ``orjson.loads``, a dict accumulator: the baseline (1x);
- the same loop over ``msgspec.json.Decoder`` with typed ``Struct``s that declare only
  the fields it reads: the fastest pure-Python pipeline;
- toolstitch ``Assembler.feed_bytes`` with ``live=False``, with ``live=True`` with
  every live event read (what an interface that renders as it goes pays), and with
  ``live="coalesced"`` with every event read (one delta per call per read);
- toolstitch ``feed`` on dicts and ``feed_many`` per read, the SSE split and decoded
  with ``orjson`` in Python (that cost is counted: every row starts from bytes);
- the ``openai`` SDK: its own path from SSE bytes to the final message (its
  ``SSEDecoder``, ``construct_type`` into ``ChatCompletionChunk``, and
  ``ChatCompletionStreamState``: what ``client.chat.completions.stream()`` runs per
  event), and ``ChatCompletionStreamState`` alone on chunk objects built beforehand;
- the ``anthropic`` SDK's ``accumulate_event`` on event objects built beforehand;
- ``langchain-core``: summing ``AIMessageChunk``s that carry ``tool_call_chunks``
  (built beforehand), its provider-neutral streaming path;
- the live display as the SDKs do it: the pure-Python pipeline plus ``jiter``'s partial
  mode re-parsing the call's whole input after every fragment (the full partial-JSON
  comparison is ``benches/bench_partial_json.py``).

A second table starts from decoded dicts (what a caller that already has them pays):
a hand-written Python loop that pulls the tool-call fragments out of each dict, against
``feed`` and ``feed_many``. The slow contenders are timed on a prefix of the
workload's responses (the table says how many fragments); the rate per fragment is
what is compared. Timing: the contenders alternate within each round, medians of
``--runs`` rounds (at least 5), one process. Peak memory: each contender runs once in
its own subprocess; the figure is the peak resident set during the run (VmHWM reset
through /proc/self/clear_refs just before it) minus the resident set just before, so
it counts Rust allocations as well as Python's.

A summary gives the ratios the targets are stated in: reading live events against
live off, ``feed_bytes`` against the msgspec pipeline, and ``feed_bytes`` per event
against the best method of ``benches/results/floor.json`` (``cargo bench --bench
floor``, which ``make bench`` does not run: regenerate it by hand when the floor's code
changes).

Scaling: cost per fragment from 10k to 1M fragments, peak memory against argument
bytes, and two threads with separate assemblers against one thread (``feed_bytes``
releases the GIL). Writes ``benches/results/compare.md`` and ``compare.png``.
``--floor benches/results/floor.json`` instead times ``feed_bytes`` alone against the
floor that ``cargo bench --bench floor`` measured (``benches/floor.rs``). A peer
that cannot be imported is skipped with a note. Run it from a release build:
``make bench``. It is a benchmark, never a test.

Every dialect on a corpus: ``--corpus NAME=DIR`` (repeatable; ``DIR`` written by
``benches/corpus.py write DIR [--plain]``) adds a section per corpus at the end of
``compare.md``. For each dialect/form group of the corpus (gzipped files left out,
grouped as ``bench_dialects.py`` and ``floor.rs`` group them): toolstitch through Python
(``Assembler(dialect, live=False)``, ``feed_bytes`` of 64 KiB reads cut beforehand,
``close()``, ``messages()``) and, on the OpenAI chat and Anthropic streams, the
pure-Python and msgspec pipelines above, each first checked to rebuild the calls of
the corpus manifest, file by file; interleaved rounds (every group and contender in
turn), medians of wall seconds, the load average at the start and the end. Beside them
the figures ``cargo bench --bench floor -- --corpus NAME=DIR`` wrote to ``floor.json``
(key ``corpus:NAME``): the Rust floor's MB/s, the Python time over the floor's and
over toolstitch's own in Rust (ratios across two processes, run back to back); when
``floor.json`` lacks the corpus, the section says so and leaves those columns out, and a
group whose files, bytes or events differ there gets none. ``--only-corpora`` runs only
these sections and rewrites them in the existing ``compare.md``, every other section
kept as it was.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import orjson
from toolstitch import Assembler, Provider, _toolstitch

RESULTS = Path(__file__).resolve().parent / "results"
READ = 64 * 1024
ARG_BYTES = 2048
TARGET_FRAGMENTS = 200_000
# Slow contenders are timed on responses holding about this many fragments.
SLOW_FRAGMENTS = 12_000
CALL_COUNTS = (1, 4, 16)
ALPHABET = 'abcdefgh ijk"\\:{},0123456789\n\té日🦀'

Calls = list[tuple[str, str, str]]
MSGSPEC_LABEL = "pure Python: split lines, msgspec typed Structs (only the fields read)"
PY_LABEL = "pure Python: split lines, orjson.loads, dict accumulator"


# ------------------------------------------------------------------ workloads


@dataclass
class Workload:
    key: str
    title: str
    dialect: Provider
    calls: int
    streams: list[bytes]
    expected: list[Calls]
    fragments_per_stream: list[int]
    reads: list[list[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reads = [
            [data[i : i + READ] for i in range(0, len(data), READ)] for data in self.streams
        ]

    @property
    def fragments(self) -> int:
        return sum(self.fragments_per_stream)

    @property
    def sse_bytes(self) -> int:
        return sum(len(s) for s in self.streams)

    def prefix(self, fragments: int) -> int:
        """How many responses hold at least ``fragments`` fragments (all, at most)."""
        total = 0
        for n, count in enumerate(self.fragments_per_stream, 1):
            total += count
            if total >= fragments:
                return n
        return len(self.streams)


def arguments(rng: random.Random, size: int) -> str:
    """A JSON object of about ``size`` bytes whose strings hold quotes, backslashes,
    control characters and non-ASCII text."""
    words: list[str] = []
    out = ""
    while len(out.encode()) < size:
        words.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 12))))
        out = json.dumps(
            {"query": " ".join(words), "limit": 10, "exact": False}, ensure_ascii=False
        )
    return out


def pieces(rng: random.Random, text: str) -> list[str]:
    out: list[str] = []
    at = 0
    while at < len(text):
        n = rng.randint(1, 8)
        out.append(text[at : at + n])
        at += n
    return out


def dumps(obj: object) -> bytes:
    return orjson.dumps(obj)


def openai_stream(rng: random.Random, response: int, calls: int) -> tuple[bytes, Calls, int]:
    head = {
        "id": f"chatcmpl-{response}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_0123456789",
    }
    out: list[bytes] = []
    expected: Calls = []
    fragments = 0

    def event(delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        out.append(b"data: " + dumps({**head, "choices": [choice]}) + b"\n\n")

    event({"role": "assistant", "content": None})
    for i in range(calls):
        call_id, name = f"call_{response}_{i}", f"tool_{i}"
        args = arguments(rng, ARG_BYTES)
        opening = {"index": i, "id": call_id, "type": "function"}
        event({"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]})
        for piece in pieces(rng, args):
            event({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            fragments += 1
        expected.append((call_id, name, args))
    event({}, "tool_calls")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out), expected, fragments


def anthropic_stream(rng: random.Random, response: int, calls: int) -> tuple[bytes, Calls, int]:
    out: list[bytes] = []
    expected: Calls = []
    fragments = 0

    def event(kind: str, body: dict[str, Any]) -> None:
        out.append(
            b"event: " + kind.encode() + b"\ndata: " + dumps({"type": kind, **body}) + b"\n\n"
        )

    message: dict[str, Any] = {
        "id": f"msg_{response}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 1},
    }
    event("message_start", {"message": message})
    for i in range(calls):
        call_id, name = f"toolu_{response}_{i}", f"tool_{i}"
        args = arguments(rng, ARG_BYTES)
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        event("content_block_start", {"index": i, "content_block": block})
        for piece in pieces(rng, args):
            delta = {"type": "input_json_delta", "partial_json": piece}
            event("content_block_delta", {"index": i, "delta": delta})
            fragments += 1
        event("content_block_stop", {"index": i})
        expected.append((call_id, name, args))
    stop = {"stop_reason": "tool_use", "stop_sequence": None}
    event("message_delta", {"delta": stop, "usage": {"output_tokens": 900}})
    event("message_stop", {})
    return b"".join(out), expected, fragments


def make_workload(dialect: Provider, calls: int, target: int | None = None) -> Workload:
    rng = random.Random(f"{dialect}-{calls}")
    make = openai_stream if dialect == "openai-chat" else anthropic_stream
    streams: list[bytes] = []
    expected: list[Calls] = []
    counts: list[int] = []
    while sum(counts) < (target or TARGET_FRAGMENTS):
        data, calls_of, n = make(rng, len(streams), calls)
        streams.append(data)
        expected.append(calls_of)
        counts.append(n)
    name = "OpenAI chat" if dialect == "openai-chat" else "Anthropic"
    title = f"{name}, {calls} call{'s' if calls > 1 else ''} per response"
    key = f"{'openai' if dialect == 'openai-chat' else 'anthropic'}-{calls}"
    return Workload(key, title, dialect, calls, streams, expected, counts)


def workload_by_key(key: str) -> Workload:
    name, calls = key.rsplit("-", 1)
    return make_workload("openai-chat" if name == "openai" else "anthropic", int(calls))


# ------------------------------------------------------------------ contenders


def sse_data(reads: Iterable[bytes]) -> Iterable[bytes]:
    """The ``data:`` payloads of an SSE body arriving in reads (pure Python)."""
    buf = b""
    for chunk in reads:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                yield line[6:]


def py_openai(reads: list[bytes]) -> Calls:
    """The baseline: split lines, orjson.loads, a dict accumulator by index."""
    calls: dict[int, list[Any]] = {}
    loads = orjson.loads
    for payload in sse_data(reads):
        for choice in loads(payload)["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                entry = calls.get(tc["index"])
                if entry is None:
                    entry = calls[tc["index"]] = ["", "", []]
                if tc.get("id"):
                    entry[0] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    entry[1] = fn["name"]
                entry[2].append(fn.get("arguments") or "")
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]


def py_anthropic(reads: list[bytes]) -> Calls:
    calls: dict[int, list[Any]] = {}
    loads = orjson.loads
    for payload in sse_data(reads):
        event = loads(payload)
        kind = event["type"]
        if kind == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "input_json_delta":
                calls[event["index"]][2].append(delta["partial_json"])
        elif kind == "content_block_start":
            block = event["content_block"]
            if block["type"] == "tool_use":
                calls[event["index"]] = [block["id"], block["name"], []]
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]


def result_of(asm: Assembler) -> Calls:
    return [(b.id, b.name, b.input) for b in asm.message().tool_uses]


def ts_bytes(
    dialect: Provider, live: bool | Literal["coalesced"]
) -> Callable[[list[bytes]], Calls]:
    def run(reads: list[bytes]) -> Calls:
        asm = Assembler(dialect, live=live)
        feed = asm.feed_bytes
        if live:
            for chunk in reads:
                for _ in feed(chunk):
                    pass
            for _ in asm.close():
                pass
        else:
            for chunk in reads:
                feed(chunk)
            asm.close()
        return result_of(asm)

    return run


def sse_events(reads: Iterable[bytes]) -> Iterable[tuple[str | None, bytes]]:
    """``(event name, data)`` of each SSE event (pure Python)."""
    buf = b""
    name: str | None = None
    for chunk in reads:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: ") and line != b"data: [DONE]":
                yield name, line[6:]
                name = None


def ts_dicts(dialect: Provider) -> Callable[[list[bytes]], Calls]:
    def run(reads: list[bytes]) -> Calls:
        asm = Assembler(dialect, live=False)
        feed = asm.feed
        loads = orjson.loads
        for payload in sse_data(reads):
            feed(loads(payload))
        asm.close()
        return result_of(asm)

    return run


def ts_many(dialect: Provider) -> Callable[[list[bytes]], Calls]:
    def run(reads: list[bytes]) -> Calls:
        asm = Assembler(dialect, live=False)
        loads = orjson.loads
        buf = b""
        for chunk in reads:
            buf += chunk
            *lines, buf = buf.split(b"\n")
            asm.feed_many(
                [
                    loads(line[6:])
                    for line in lines
                    if line.startswith(b"data: ") and line != b"data: [DONE]"
                ]
            )
        asm.close()
        return result_of(asm)

    return run


def jiter_live(reads: list[bytes]) -> Calls:
    """The baseline plus what the SDKs do for a live display: the call's whole input
    re-parsed in jiter's partial mode after every fragment."""
    import jiter

    calls: dict[int, list[Any]] = {}
    loads = orjson.loads
    for payload in sse_data(reads):
        for choice in loads(payload)["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                entry = calls.get(tc["index"])
                if entry is None:
                    entry = calls[tc["index"]] = ["", "", ""]
                if tc.get("id"):
                    entry[0] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    entry[1] = fn["name"]
                piece = fn.get("arguments") or ""
                if piece:
                    entry[2] += piece
                    jiter.from_json(entry[2].encode(), partial_mode="trailing-strings")
    return [(e[0], e[1], e[2]) for _, e in sorted(calls.items())]


# Contenders that need SDK objects get them built from the workload's events once,
# outside the timing ("prebuilt").


def openai_chunks(reads: list[bytes]) -> list[Any]:
    """The chunk objects the SDK builds while streaming (``construct_type``)."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    return [
        construct_type(type_=ChatCompletionChunk, value=orjson.loads(p)) for p in sse_data(reads)
    ]


def openai_state(chunks: list[Any]) -> Calls:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(chunk)
    message = state.get_final_completion().choices[0].message
    return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]


def openai_sse_to_final(reads: list[bytes]) -> Calls:
    """What ``client.chat.completions.stream()`` runs per event after the network: the
    SDK's SSE decoder, ``construct_type`` into ``ChatCompletionChunk``, the stream
    state (which also builds the events it yields)."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter(reads)):
        if sse.data.startswith("[DONE]"):
            break
        chunk = construct_type(type_=ChatCompletionChunk, value=sse.json())
        for _ in state.handle_chunk(chunk):
            pass
    message = state.get_final_completion().choices[0].message
    return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]


def anthropic_events(reads: list[bytes]) -> list[Any]:
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    return [
        construct_type(type_=RawMessageStreamEvent, value=orjson.loads(p)) for p in sse_data(reads)
    ]


def anthropic_accumulate(events: list[Any]) -> Calls:
    """The SDK's own accumulation (``MessageStream`` calls it per event); it re-parses
    each call's JSON so far with jiter after every delta."""
    import inspect

    from anthropic.lib.streaming._messages import accumulate_event

    accumulate: Any = accumulate_event
    # Newer SDKs keep each call's raw JSON in a dict the caller passes in; older ones
    # keep it on the block.
    bufs: dict[int, bytes] | None = (
        {} if "json_bufs" in inspect.signature(accumulate).parameters else None
    )
    extra = {} if bufs is None else {"json_bufs": bufs}
    snapshot: Any = None
    for event in events:
        snapshot = accumulate(event=event, current_snapshot=snapshot, **extra)
    out: Calls = []
    for n, block in enumerate(snapshot.content):
        raw: Any = bufs.get(n, b"") if bufs is not None else vars(block).get("__json_buf", "")
        out.append((block.id, block.name, raw.decode() if isinstance(raw, bytes) else raw))
    return out


def langchain_chunks(reads: list[bytes]) -> list[Any]:
    from langchain_core.messages import AIMessageChunk

    chunks: list[Any] = []
    for payload in sse_data(reads):
        for choice in orjson.loads(payload)["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                fn = tc.get("function") or {}
                chunks.append(
                    AIMessageChunk(
                        content="",
                        tool_call_chunks=[
                            {
                                "name": fn.get("name"),
                                "args": fn.get("arguments"),
                                "id": tc.get("id"),
                                "index": tc["index"],
                                "type": "tool_call_chunk",
                            }
                        ],
                    )
                )
    return chunks


def langchain_sum(chunks: list[Any]) -> Calls:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return [(c["id"], c["name"], c["args"]) for c in total.tool_call_chunks]


@dataclass
class Contender:
    key: str
    label: str
    run: Callable[[Any], Calls]
    # Builds the contender's input from a response's reads (outside the timing).
    prepare: Callable[[list[bytes]], Any] | None = None
    # Timed on a prefix of the workload holding about this many fragments.
    fragments: int | None = None
    note: str = ""


def contenders(dialect: Provider) -> tuple[list[Contender], list[str]]:
    """The contenders for a dialect, and notes on the peers that could not run."""
    out = [
        Contender(
            "python",
            PY_LABEL,
            py_openai if dialect == "openai-chat" else py_anthropic,
        ),
        Contender("bytes", "toolstitch feed_bytes (live=False)", ts_bytes(dialect, False)),
        Contender(
            "bytes-live",
            "toolstitch feed_bytes (live=True, every event read)",
            ts_bytes(dialect, True),
        ),
        Contender(
            "bytes-coalesced",
            'toolstitch feed_bytes (live="coalesced", every event read)',
            ts_bytes(dialect, "coalesced"),
        ),
        Contender("dicts", "toolstitch feed(dict), orjson.loads in Python", ts_dicts(dialect)),
        Contender(
            "many", "toolstitch feed_many(dicts) per read, orjson.loads in Python", ts_many(dialect)
        ),
    ]
    notes: list[str] = []

    def peer(module: str, contender: Contender) -> None:
        try:
            __import__(module)
        except ImportError as e:
            notes.append(f"{contender.label}: skipped, {module} cannot be imported ({e})")
            return
        out.append(contender)

    try:
        import msgspec_pipeline

        run = msgspec_pipeline.openai if dialect == "openai-chat" else msgspec_pipeline.anthropic
        out.insert(1, Contender("msgspec", MSGSPEC_LABEL, run))
    except ImportError as e:
        notes.append(f"{MSGSPEC_LABEL}: skipped, msgspec cannot be imported ({e})")

    if dialect == "openai-chat":
        peer(
            "openai",
            Contender(
                "openai-sse",
                "openai SDK: SSE bytes to final (SSEDecoder, construct_type, stream state)",
                openai_sse_to_final,
                fragments=SLOW_FRAGMENTS,
            ),
        )
        peer(
            "openai",
            Contender(
                "openai-state",
                "openai SDK: ChatCompletionStreamState on prebuilt chunk objects",
                openai_state,
                prepare=openai_chunks,
                fragments=SLOW_FRAGMENTS,
            ),
        )
        peer(
            "langchain_core",
            Contender(
                "langchain",
                "langchain-core: sum of prebuilt AIMessageChunks (tool_call_chunks)",
                langchain_sum,
                prepare=langchain_chunks,
                fragments=SLOW_FRAGMENTS // 4,
            ),
        )
        peer(
            "jiter",
            Contender(
                "jiter",
                "live display: pure Python + jiter partial re-parse per fragment",
                jiter_live,
                fragments=SLOW_FRAGMENTS,
            ),
        )
    else:
        peer(
            "anthropic",
            Contender(
                "anthropic",
                "anthropic SDK: accumulate_event on prebuilt event objects",
                anthropic_accumulate,
                prepare=anthropic_events,
                fragments=SLOW_FRAGMENTS,
            ),
        )
    return out, notes


# ------------------------------------------------------------------ measuring


@dataclass
class Row:
    label: str
    fragments: int
    sse_bytes: int
    seconds: float
    peak_mb: float | None = None
    note: str = ""

    @property
    def fragments_per_s(self) -> float:
        return self.fragments / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.sse_bytes / self.seconds / 1e6


def inputs_of(w: Workload, c: Contender) -> tuple[list[Any], int, int]:
    n = w.prefix(c.fragments) if c.fragments else len(w.streams)
    reads = w.reads[:n]
    prepared = [c.prepare(r) for r in reads] if c.prepare else reads
    return prepared, sum(w.fragments_per_stream[:n]), sum(len(s) for s in w.streams[:n])


def run_all(c: Contender, prepared: list[Any]) -> list[Calls]:
    return [c.run(p) for p in prepared]


def time_workload(w: Workload, cs: list[Contender], runs: int) -> list[Row]:
    inputs = {c.key: inputs_of(w, c) for c in cs}
    for c in cs:
        prepared, _, _ = inputs[c.key]
        got = run_all(c, prepared)
        if got != w.expected[: len(got)]:
            raise SystemExit(f"{c.label} rebuilt different calls on {w.title}")
    times: dict[str, list[float]] = {c.key: [] for c in cs}
    for _ in range(runs):
        for c in cs:
            prepared = inputs[c.key][0]
            gc.collect()
            t0 = time.perf_counter()
            run_all(c, prepared)
            times[c.key].append(time.perf_counter() - t0)
    rows = []
    for c in cs:
        _, fragments, sse = inputs[c.key]
        note = c.note
        if c.fragments and fragments < w.fragments:
            note = f"timed on {fragments:,} fragments"
        rows.append(Row(c.label, fragments, sse, statistics.median(times[c.key]), note=note))
    return rows


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_during(fn: Callable[[], object]) -> int:
    """Peak resident bytes above the resident set just before ``fn`` ran."""
    gc.collect()
    reset = reset_hwm()
    before = rss_now() if reset else hwm()
    fn()
    return max(0, hwm() - before)


def child_memory(key: str, contender: str) -> None:
    w = workload_by_key(key)
    cs, _ = contenders(w.dialect)
    (c,) = [c for c in cs if c.key == contender]
    prepared, _, _ = inputs_of(w, c)
    print(json.dumps({"peak": peak_during(lambda: run_all(c, prepared))}))


def memory_in_subprocess(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ------------------------------------------------------------------ decoded dicts


def python_dict_loop_openai(events: list[dict[str, Any]]) -> Calls:
    """What a user writes to pull tool-call fragments out of chunk dicts."""
    calls: dict[int, list[Any]] = {}
    for chunk in events:
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            for tc in delta.get("tool_calls") or ():
                entry = calls.get(tc["index"])
                if entry is None:
                    entry = calls[tc["index"]] = ["", "", []]
                if tc.get("id"):
                    entry[0] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    entry[1] = fn["name"]
                if fn.get("arguments"):
                    entry[2].append(fn["arguments"])
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]


def python_dict_loop_anthropic(events: list[dict[str, Any]]) -> Calls:
    calls: dict[int, list[Any]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "input_json_delta":
                calls[event["index"]][2].append(delta.get("partial_json") or "")
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                calls[event["index"]] = [block.get("id"), block.get("name"), []]
    return [(e[0], e[1], "".join(e[2])) for _, e in sorted(calls.items())]


Timed = dict[str, tuple[Callable[[list[Any]], Calls], list[list[Any]]]]


def interleaved(w: Workload, cs: Timed, runs: int) -> dict[str, list[float]]:
    """Seconds per round of each contender over its inputs (one list per response),
    the contenders taking turns within each round; each must first rebuild the calls
    the workload expects."""
    for name, (fn, inputs) in cs.items():
        if [fn(e) for e in inputs] != w.expected[: len(inputs)]:
            raise SystemExit(f"{name} rebuilt different calls on {w.title}")
    times: dict[str, list[float]] = {name: [] for name in cs}
    for _ in range(runs):
        for name, (fn, inputs) in cs.items():
            gc.collect()
            t0 = time.perf_counter()
            for response in inputs:
                fn(response)
            times[name].append(time.perf_counter() - t0)
    return times


def dict_rows(w: Workload, runs: int) -> list[Row]:
    events = [[orjson.loads(p) for p in sse_data(r)] for r in w.reads]
    loop = python_dict_loop_openai if w.dialect == "openai-chat" else python_dict_loop_anthropic

    def feed(evs: list[dict[str, Any]]) -> Calls:
        asm = Assembler(w.dialect, live=False)
        f = asm.feed
        for e in evs:
            f(e)
        asm.close()
        return result_of(asm)

    def dumped(objs: list[Any]) -> Calls:
        asm = Assembler(w.dialect, live=False)
        f = asm.feed
        for o in objs:
            f(o.model_dump())
        asm.close()
        return result_of(asm)

    def many(evs: list[dict[str, Any]]) -> Calls:
        asm = Assembler(w.dialect, live=False)
        asm.feed_many(evs)
        asm.close()
        return result_of(asm)

    def live(evs: list[dict[str, Any]]) -> Calls:
        asm = Assembler(w.dialect, live=True)
        for _e in asm.feed_many(evs):
            pass
        asm.close()
        return result_of(asm)

    cs: Timed = {
        "hand-written Python loop over the dicts": (loop, events),
        "toolstitch feed(dict)": (feed, events),
        "toolstitch feed_many(dicts), one call per response": (many, events),
        "toolstitch feed_many(dicts), live events read": (live, events),
    }
    # SDK objects (built beforehand, as the SDKs build them while streaming) go through
    # their to_dict(); timed on a prefix of the responses.
    n = w.prefix(SLOW_FRAGMENTS)
    notes = {
        "toolstitch feed(SDK object)": f"timed on {sum(w.fragments_per_stream[:n]):,} fragments"
    }
    try:
        objects = [
            (openai_chunks if w.dialect == "openai-chat" else anthropic_events)(r)
            for r in w.reads[:n]
        ]
        cs["toolstitch feed(SDK object)"] = (feed, objects)
    except ImportError as missing:
        notes["toolstitch feed(SDK object)"] = f"skipped: the SDK cannot be imported ({missing})"
    if "toolstitch feed(SDK object)" in cs:
        cs["toolstitch feed(obj.model_dump())"] = (dumped, objects)
        notes["toolstitch feed(obj.model_dump())"] = notes["toolstitch feed(SDK object)"]
    # The floor of any reader that checks the whole event: every value of every dict
    # (or model) read in Rust and nothing done (builds with the bench-baseline feature).
    baseline = vars(_toolstitch).get("_CallBaseline")
    floors: Timed = {}
    if baseline is not None:
        visit = baseline().visit
        expected = {id(evs): calls for evs, calls in zip(events, w.expected, strict=False)}

        def read_each(evs: list[Any]) -> Calls:
            for e in evs:
                visit(e)
            return expected.get(id(evs), [])

        floors["floor: every value of each dict read in Rust, nothing done"] = (read_each, events)
        if "toolstitch feed(SDK object)" in cs:
            expected.update(
                {id(evs): calls for evs, calls in zip(objects, w.expected, strict=False)}
            )
            label = "floor: every value of each SDK object read in Rust, nothing done"
            floors[label] = (read_each, objects)
            notes[label] = notes["toolstitch feed(SDK object)"]
    cs.update(floors)
    times = interleaved(w, cs, runs)
    rows = []
    for name, (_, inputs) in cs.items():
        k = len(inputs)
        frags = sum(w.fragments_per_stream[:k])
        sse = sum(len(x) for x in w.streams[:k])
        note = notes.get(name, "") if k < len(w.streams) else ""
        rows.append(Row(name, frags, sse, statistics.median(times[name]), note=note))
    return rows


# ------------------------------------------------------------------ scaling


def big_openai_stream(fragments: int, calls: int = 4, piece: tuple[int, int] = (1, 8)) -> bytes:
    """One response of ``fragments`` argument fragments over ``calls`` calls, built
    from a template (fast enough for millions of events)."""
    rng = random.Random(fragments)
    head = (
        b'data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1,'
        b'"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":'
    )
    tail = b'}}]},"logprobs":null,"finish_reason":null}]}\n\n'
    text = arguments(rng, 4096)
    out = [
        head + str(i).encode() + b',"id":"call_' + str(i).encode() + b'","type":"function",'
        b'"function":{"name":"tool","arguments":"{\\"blob\\":\\""' + tail
        for i in range(calls)
    ]
    per_call = fragments // calls
    lo, hi = piece
    for i in range(calls):
        prefix = head + str(i).encode() + b',"function":{"arguments":'
        at = 0
        for _ in range(per_call):
            n = rng.randint(lo, hi)
            if at + n > len(text):
                at = 0
            chunk = "".join(ch for ch in text[at : at + n] if ch not in '\\"\n\t')
            at += n
            out.append(prefix + dumps(chunk) + tail)
    for i in range(calls):
        out.append(head + str(i).encode() + b',"function":{"arguments":"\\"}"' + tail)
    out.append(
        b'data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1,'
        b'"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    )
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def feed_all(data: bytes) -> Assembler:
    asm = Assembler("openai-chat", live=False)
    for i in range(0, len(data), READ):
        asm.feed_bytes(data[i : i + READ])
    asm.close()
    return asm


def scaling_per_fragment(runs: int) -> list[tuple[int, float]]:
    out = []
    for n in (10_000, 100_000, 1_000_000):
        data = big_openai_stream(n)
        reps = max(1, 200_000 // n)
        times = []
        for _ in range(max(3, runs // 2 if n >= 1_000_000 else runs)):
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(reps):
                feed_all(data)
            times.append((time.perf_counter() - t0) / reps)
        out.append((n, statistics.median(times) / n * 1e9))
    return out


def child_scaling_memory(arg_mb: int) -> None:
    # Fragments of 64-256 characters: the question is argument bytes, not fragment count.
    fragments = arg_mb * 1024 * 1024 // 160
    calls = max(1, arg_mb // 4)
    data = big_openai_stream(fragments, calls=calls, piece=(64, 256))
    box: list[Assembler] = []
    fed = peak_during(lambda: box.append(feed_all(data)))
    inputs = [b.input for b in box[0].message().tool_uses]
    gc.collect()
    with_message = fed + peak_during(lambda: box[0].message())
    args = sum(len(i.encode()) for i in inputs)
    py = sum(sys.getsizeof(i) for i in inputs)
    print(json.dumps({"fed": fed, "message": with_message, "args": args, "py": py}))


def two_threads(w: Workload, runs: int) -> tuple[float, float]:
    """Seconds for feeding the workload twice in one thread, and once in each of two
    threads at the same time (separate assemblers)."""
    reads = w.reads

    def feed_workload() -> None:
        for r in reads:
            asm = Assembler(w.dialect, live=False)
            for chunk in r:
                asm.feed_bytes(chunk)
            asm.close()

    one, two = [], []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        feed_workload()
        feed_workload()
        one.append(time.perf_counter() - t0)
        threads = [threading.Thread(target=feed_workload) for _ in range(2)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        two.append(time.perf_counter() - t0)
    return statistics.median(one), statistics.median(two)


# ------------------------------------------------------------------ the floor


def floor_rows(path: Path, runs: int) -> None:
    """``feed_bytes`` (live off) on the 4-call workloads against the floor that
    ``cargo bench --bench floor`` wrote to ``path`` (the same workloads' shape):
    adds the Python row to ``path`` and to the ``floor.md`` next to it."""
    floor = json.loads(path.read_text())
    md_path = path.with_suffix(".md")
    marker = "## Through Python"
    md = md_path.read_text().split(marker)[0].rstrip("\n").split("\n")
    md += [
        "",
        marker,
        "",
        f"`Assembler.feed_bytes` (`live=False`) then `close()` and `message()`, on compare.py's "
        f"own 4-call workloads, medians of {runs} rounds (`benches/compare.py --floor`), load "
        f"average at start {os.getloadavg()[0]:.1f}.",
        "",
        "| workload | ns / event | MB/s of SSE | vs best floor | vs toolstitch in Rust |",
        "|---|---:|---:|---:|---:|",
    ]
    workloads: tuple[tuple[Provider, str], ...] = (
        ("openai-chat", "openai"),
        ("anthropic", "anthropic"),
    )
    for dialect, key in workloads:
        w = make_workload(dialect, 4)
        run = ts_bytes(w.dialect, live=False)
        if [run(r) for r in w.reads] != w.expected:
            raise SystemExit(f"feed_bytes rebuilt different calls on {w.title}")
        times = []
        for _ in range(runs):
            gc.collect()
            t0 = time.perf_counter()
            for r in w.reads:
                run(r)
            times.append(time.perf_counter() - t0)
        secs = statistics.median(times)
        events = sum(s.count(b"data: ") for s in w.streams)
        ns = secs / events * 1e9
        entry = floor[key]
        best = entry[entry["best_floor"]]["ns_per_event"]
        rust = entry["toolstitch"]["ns_per_event"]
        entry["python_feed_bytes"] = {
            "ns_per_event": ns,
            "mb_per_s": w.sse_bytes / 1e6 / secs,
            "vs_best_floor": ns / best,
            "vs_toolstitch_rust": ns / rust,
        }
        line = (
            f"| {w.title} | {ns:.0f} | {w.sse_bytes / 1e6 / secs:.0f} | {ns / best:.2f}x | "
            f"{ns / rust:.2f}x |"
        )
        print(line)
        md.append(line)
    path.write_text(json.dumps(floor, indent=2) + "\n")
    md_path.write_text("\n".join(md) + "\n")
    print(f"wrote {path} and {md_path}")


# ------------------------------------------------------------------ every dialect on a corpus

CORPUS_HEADING = "## Every dialect through Python, the {} corpus"
# Each timing of a group spans at least this long: a small group runs several passes.
MIN_TIMING = 0.05
TS_CORPUS_LABEL = "toolstitch feed_bytes (live=False), close(), messages()"


@dataclass
class CorpusGroup:
    """The files of one dialect and form of a corpus, gzipped ones left out, in memory and
    cut into 64 KiB reads, with the calls the manifest says each one holds."""

    dialect: Provider
    form: str
    paths: list[str]
    reads: list[list[bytes]]
    expected: list[Calls]
    events: int

    @property
    def key(self) -> str:
        return f"{self.dialect}/{self.form}"

    @property
    def nbytes(self) -> int:
        return sum(len(read) for reads in self.reads for read in reads)


def file_events(data: bytes, transport: str) -> int:
    """A file's events, counted as ``floor.rs`` counts them: the ``data:`` lines of SSE,
    JSON lines, AWS event-stream frames, one for a whole body."""
    if transport == "sse":
        return data.count(b"data: ")
    if transport == "jsonl":
        return data.count(b"\n")
    if transport == "eventstream":
        n = at = 0
        while at + 12 <= len(data):
            at += max(16, int.from_bytes(data[at : at + 4], "big"))
            n += 1
        return n
    return 1


def corpus_groups(directory: Path) -> list[CorpusGroup]:
    """``bench_dialects.group_bytes``'s groups of a corpus (``dialect/form``, gzipped files
    left out, 64 KiB reads), in ``floor.rs``'s order: the dialects of ``corpus.DIALECTS``,
    streams before bodies."""
    import corpus
    from bench_dialects import group_bytes, manifest

    files = [f for f in manifest(directory) if not f["gzip"]]
    groups: list[CorpusGroup] = []
    for key, streams in group_bytes(directory).items():
        of = [f for f in files if f"{f['dialect']}/{f['form']}" == key]
        if [len(b"".join(r)) for r in streams] != [f["bytes"] for f in of]:
            raise SystemExit(f"{directory}: the files of {key} are not the manifest's")
        dialect, form = key.split("/")
        groups.append(
            CorpusGroup(
                cast(Provider, dialect),
                form,
                [f["path"] for f in of],
                streams,
                [[(c[0], c[1], c[2]) for c in f["calls"]] for f in of],
                sum(
                    file_events(b"".join(r), f["transport"])
                    for f, r in zip(of, streams, strict=True)
                ),
            )
        )
    groups.sort(key=lambda g: (corpus.DIALECTS.index(g.dialect), g.form == "body"))
    return groups


def ts_messages(dialect: Provider) -> Callable[[list[bytes]], Calls]:
    """``Assembler(dialect, live=False)``, ``feed_bytes`` per read, ``close()``, then the
    calls of every message of ``messages()``."""

    def run(reads: list[bytes]) -> Calls:
        asm = Assembler(dialect, live=False)
        feed = asm.feed_bytes
        for chunk in reads:
            feed(chunk)
        asm.close()
        return [(t.id, t.name, t.input) for m in asm.messages() for t in m.tool_uses]

    return run


CorpusContenders = list[tuple[str, Callable[[list[bytes]], Calls]]]


def corpus_contenders(g: CorpusGroup, notes: list[str]) -> CorpusContenders:
    """toolstitch for every group; for the streams of OpenAI chat and Anthropic, the
    pure-Python pipelines of the workloads above too (the baseline, and msgspec's when it
    can be imported: a note in ``notes`` when it cannot)."""
    out: CorpusContenders = [(TS_CORPUS_LABEL, ts_messages(g.dialect))]
    if g.form != "stream" or g.dialect not in ("openai-chat", "anthropic"):
        return out
    chat = g.dialect == "openai-chat"
    out.append((PY_LABEL, py_openai if chat else py_anthropic))
    try:
        import msgspec_pipeline
    except ImportError as e:
        note = f"{MSGSPEC_LABEL}: skipped, msgspec cannot be imported ({e})"
        if note not in notes:
            notes.append(note)
        return out
    out.append((MSGSPEC_LABEL, msgspec_pipeline.openai if chat else msgspec_pipeline.anthropic))
    return out


def time_corpus(
    name: str, groups: list[CorpusGroup], runs: int, notes: list[str]
) -> dict[tuple[str, str], float]:
    """Seconds for one pass over a group's files, by ``(group key, contender label)``:
    medians of ``runs`` rounds in which every group and contender takes its turn. Each
    contender first rebuilds the manifest's calls, file by file; a pass shorter than
    ``MIN_TIMING`` is repeated within a timing (divided back)."""
    timed: list[tuple[CorpusGroup, str, Callable[[list[bytes]], Calls], int]] = []
    for g in groups:
        for label, fn in corpus_contenders(g, notes):
            for path, reads, want in zip(g.paths, g.reads, g.expected, strict=True):
                if fn(reads) != want:
                    raise SystemExit(f"{label} rebuilt different calls from {name}/{path}")
            t0 = time.perf_counter()
            for reads in g.reads:
                fn(reads)
            once = time.perf_counter() - t0
            timed.append((g, label, fn, max(1, math.ceil(MIN_TIMING / max(once, 1e-9)))))
    times: dict[tuple[str, str], list[float]] = {(g.key, lab): [] for g, lab, _, _ in timed}
    for _ in range(runs):
        for g, label, fn, passes in timed:
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(passes):
                for reads in g.reads:
                    fn(reads)
            times[(g.key, label)].append((time.perf_counter() - t0) / passes)
    return {k: statistics.median(v) for k, v in times.items()}


def floor_entry(floor_path: Path, name: str) -> tuple[dict[str, Any] | None, str]:
    """floor.json's section for the corpus, and a sentence on where it comes from (or why
    there is none)."""
    if not floor_path.exists():
        return None, (
            f"No floor: `{floor_path.name}` does not exist (`cargo bench --bench floor -- "
            f"--corpus {name}=DIR` writes it), so the floor columns are left out."
        )
    entry: dict[str, Any] | None = json.loads(floor_path.read_text()).get(f"corpus:{name}")
    if entry is None:
        return None, (
            f"No floor: `{floor_path.name}` has no `corpus:{name}` section (`cargo bench "
            f"--bench floor -- --corpus {name}=DIR` writes it), so the floor columns are "
            "left out."
        )
    return entry, (
        f"The floor columns come from `{floor_path.name}` (`cargo bench --bench floor -- "
        f"--corpus {name}=DIR`, key `corpus:{name}`, load average "
        f"{entry.get('load_average', '?')} when its section started): *floor MB/s* is the "
        "Rust floor's on the group's files, *vs floor* this Python time over the floor's, "
        "*vs toolstitch in Rust* this Python time over toolstitch's own in Rust "
        "(`BytesAssembler`, `feed_bytes` + `close`, no Python objects built). Both ratios "
        "are across two processes run back to back, not side by side in one: each carries "
        "the noise of both runs (wall seconds in both)."
    )


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def corpus_section(name: str, directory: Path, runs: int, floor_path: Path) -> list[str]:
    """The section of ``compare.md`` for one corpus: every dialect and form through
    Python, beside the Rust floor of ``floor_path`` for the same corpus and group."""
    from bench_dialects import load

    start = load()
    print(f"{name} corpus ({directory}): load average at start {start}", flush=True)
    groups = corpus_groups(directory)
    notes: list[str] = []
    secs = time_corpus(name, groups, runs, notes)
    end = load()
    print(f"{name} corpus: load average at end {end}", flush=True)
    entry, floor_note = floor_entry(floor_path, name)
    nfiles = sum(len(g.paths) for g in groups)
    lines = [
        CORPUS_HEADING.format(name),
        "",
        f"`{directory}` (`benches/corpus.py write`), {nfiles} files, gzipped ones left "
        "out, grouped by dialect and form as `floor.rs` groups them; every file in memory, "
        "cut into 64 KiB reads beforehand. Through Python: `Assembler(dialect, live=False)`, "
        "`feed_bytes` per read, `close()`, `messages()` and their calls read, a fresh "
        "assembler per file. Every contender first rebuilt the calls the manifest lists, "
        f"file by file. Medians of {runs} interleaved rounds (every group and contender in "
        f"turn within each round; a pass under {MIN_TIMING * 1000:.0f} ms is repeated "
        "within its timing), wall seconds, one process. Load average (1, 5, 15 minutes) "
        f"{start} at the start of the section, {end} at its end.",
        "",
        floor_note + " *vs OpenAI chat* is the time over OpenAI chat's in this run, same "
        "form (the same calls).",
        "",
    ]
    head = "| dialect | form | files | events | MB | toolstitch MB/s through Python | ns / event |"
    rule = "|---|---|---:|---:|---:|---:|---:|"
    if entry is not None:
        head += " floor MB/s | vs floor | vs toolstitch in Rust |"
        rule += "---:|---:|---:|"
    lines += [head + " vs OpenAI chat |", rule + "---:|"]
    other: list[str] = []
    pipelines: list[str] = []
    for g in groups:
        ts = secs[(g.key, TS_CORPUS_LABEL)]
        mb = g.nbytes / 1e6
        line = (
            f"| {g.dialect} | {g.form} | {len(g.paths)} | {g.events} | {mb:.1f} | "
            f"{mb / ts:.0f} | {ts / g.events * 1e9:.0f} |"
        )
        fl: float | None = None
        if entry is not None:
            rust = entry.get(g.key)
            same = rust is not None and (rust["files"], rust["bytes"], rust["events"]) == (
                len(g.paths),
                g.nbytes,
                g.events,
            )
            if rust is None:
                other.append(f"`{g.key}` is not in `{floor_path.name}`'s `corpus:{name}`")
            elif not same:
                other.append(
                    f"`{floor_path.name}`'s `{g.key}` was measured on other files "
                    f"({rust['files']} files, {rust['bytes']} bytes, {rust['events']} events; "
                    f"here {len(g.paths)}, {g.nbytes}, {g.events})"
                )
            if rust is not None and same:
                fl = float(rust["floor_seconds"])
                line += (
                    f" {mb / fl:.0f} | {ts / fl:.2f}x | "
                    f"{ts / float(rust['toolstitch_seconds']):.2f}x |"
                )
            else:
                line += " - | - | - |"
        chat = secs.get((f"openai-chat/{g.form}", TS_CORPUS_LABEL))
        lines.append(line + f" {fmt_ratio(None if chat is None else ts / chat)} |")
        for key, label in secs:
            if key != g.key or label == TS_CORPUS_LABEL:
                continue
            t = secs[(key, label)]
            pipelines.append(
                f"| {g.dialect} | {g.form} | {label} | {mb / t:.0f} | "
                f"{t / g.events * 1e9:.0f} | {t / ts:.2f}x |"
                + ("" if entry is None else f" {fmt_ratio(None if fl is None else t / fl)} |")
            )
    lines.append("")
    if other:
        lines += ["No floor figures (`-`) where " + "; ".join(other) + ".", ""]
    if pipelines:
        head = "| dialect | form | pipeline | MB/s | ns / event | toolstitch's speed against it |"
        rule = "|---|---|---|---:|---:|---:|"
        if entry is not None:
            head += " vs floor |"
            rule += "---:|"
        lines += [
            "The pure-Python pipelines of the workloads above on the same files, timed in "
            "the same rounds (each rebuilt the manifest's calls first); *toolstitch's speed "
            "against it* is the pipeline's time over toolstitch's on the group.",
            "",
            head,
            rule,
            *pipelines,
            "",
        ]
    if notes:
        lines += ["Skipped:", "", *[f"- {n}" for n in notes], ""]
    return lines


def splice_sections(path: Path, sections: dict[str, list[str]]) -> None:
    """Rewrites ``path`` with each section of ``sections`` (keyed by its heading) in place
    of the section of that heading (up to the next ``## `` heading), or appended at the
    end when it has none; every other section stays as it was."""
    lines = path.read_text().rstrip("\n").split("\n") if path.exists() else []
    if not lines:
        lines = ["# toolstitch comparison benchmark"]
    out: list[str] = []
    done: set[str] = set()
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if line in sections:
            out += sections[line]
            done.add(line)
            while at < len(lines) and not lines[at].startswith("## "):
                at += 1
        else:
            out.append(line)
    for heading, section in sections.items():
        if heading not in done:
            out += ["", *section] if out[-1] else section
    path.write_text("\n".join(out).rstrip("\n") + "\n")


# ------------------------------------------------------------------ summary

FLOOR = RESULTS / "floor.json"


def events_of(w: Workload) -> int:
    return sum(s.count(b"data: ") for s in w.streams)


def summary(by_key: dict[str, tuple[Workload, list[Row]]], floor_path: Path) -> list[str]:
    """What the targets are stated in: the cost of reading live events against live
    off, ``feed_bytes`` against the msgspec pipeline, and against the floor that
    ``cargo bench --bench floor`` wrote to ``floor_path`` (4-call workloads)."""

    def rate(rows: list[Row], label: str) -> float | None:
        found = [r for r in rows if r.label == label]
        return found[0].seconds / found[0].fragments if found else None

    floor: dict[str, Any] = {}
    if floor_path.exists():
        floor = json.loads(floor_path.read_text())
    lines = [
        "## Summary: live events, msgspec and the floor",
        "",
        "Ratios from the tables above: the cost of reading the live events (seconds per "
        "fragment against live off: lower is better), the speed of `feed_bytes` (live off) "
        "against the msgspec pipeline (higher is better). The floor column divides "
        "`feed_bytes` (live=False) per event by the best floor method of "
        f"`{floor_path.name}` (`cargo bench --bench floor`, Rust alone, a separate run"
        + (f" at load average {floor['load_average']}" if "load_average" in floor else "")
        + "); it exists for the 4-call workloads, whose shape the floor uses.",
        "",
        '| workload | live=True read / live off | live="coalesced" read / live off '
        "| feed_bytes speed vs msgspec pipeline | feed_bytes ns / event | vs best floor |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, (w, rows) in by_key.items():
        off = rate(rows, "toolstitch feed_bytes (live=False)")
        each = rate(rows, "toolstitch feed_bytes (live=True, every event read)")
        merged = rate(rows, 'toolstitch feed_bytes (live="coalesced", every event read)')
        ms = rate(rows, MSGSPEC_LABEL)
        if off is None:
            continue
        ns_event = off * w.fragments / events_of(w) * 1e9
        entry = floor.get(key.split("-")[0]) if w.calls == 4 else None
        vs_floor = "-"
        if entry:
            best = entry[entry["best_floor"]]["ns_per_event"]
            vs_floor = f"{ns_event / best:.2f}x ({entry['best_floor']}, {best:.0f} ns)"
        lines.append(f"| {w.title} | {each / off:.2f}x |" if each else f"| {w.title} | - |")
        lines[-1] += f" {merged / off:.2f}x |" if merged else " - |"
        lines[-1] += f" {ms / off:.2f}x |" if ms else " - |"
        lines[-1] += f" {ns_event:.0f} | {vs_floor} |"
    if not floor:
        lines += ["", f"No floor: {floor_path} is missing (`cargo bench --bench floor`)."]
    return [*lines, ""]


# ------------------------------------------------------------------ report


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def table(rows: list[Row], base: Row, memory: bool = True) -> list[str]:
    head = "| contender | fragments/s | MB/s of SSE | vs pure Python |"
    rule = "|---|---:|---:|---:|"
    if memory:
        head += " peak memory |"
        rule += "---:|"
    lines = [head + " note |", rule + "---|"]
    base_rate = base.fragments_per_s
    for r in rows:
        line = (
            f"| {r.label} | {fmt_rate(r.fragments_per_s)} | {r.mb_per_s:.1f} | "
            f"{r.fragments_per_s / base_rate:.2f}x |"
        )
        if memory:
            line += f" {r.peak_mb:.1f} MB |" if r.peak_mb is not None else " - |"
        lines.append(line + f" {r.note} |")
    return lines


def chart(results: dict[str, list[Row]], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"no chart: matplotlib cannot be imported ({e})"
    labels: list[str] = []
    for rows in results.values():
        for r in rows:
            if r.label not in labels:
                labels.append(r.label)
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(labels) * max(1, len(results) // 2) + 2))
    height = 0.8 / len(results)
    for n, (title, rows) in enumerate(results.items()):
        base = rows[0].fragments_per_s
        by_label = {r.label: r.fragments_per_s / base for r in rows}
        ys = [i + n * height for i, lab in enumerate(labels) if lab in by_label]
        xs = [by_label[lab] for lab in labels if lab in by_label]
        ax.barh(ys, xs, height=height, label=title)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(labels))])
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("speed vs the pure-Python pipeline (log scale; 1x = pure Python)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("toolstitch and its peers, fragments per second relative to pure Python")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"![compare]({path.name})"


def corpus_arg(text: str) -> tuple[str, Path]:
    name, sep, directory = text.partition("=")
    if not sep or not name or not (Path(directory) / ".manifest.json").exists():
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=DIR, DIR a corpus with its .manifest.json"
        )
    return name, Path(directory)


def main() -> None:
    global TARGET_FRAGMENTS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds (medians; at least 5)")
    parser.add_argument("--quick", action="store_true", help="4-call workloads only")
    parser.add_argument(
        "--fragments", type=int, default=TARGET_FRAGMENTS, help="fragments per workload"
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the subprocesses")
    parser.add_argument(
        "--memory", nargs=2, metavar=("WORKLOAD", "CONTENDER"), help=argparse.SUPPRESS
    )
    parser.add_argument("--memory-scaling", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--floor",
        type=Path,
        metavar="FILE",
        help="only time feed_bytes against the floor in FILE (benches/results/floor.json, "
        "from `cargo bench --bench floor`) and add the row to it and floor.md",
    )
    parser.add_argument(
        "--corpus",
        type=corpus_arg,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="add a section for the corpus in DIR (benches/corpus.py write DIR [--plain]): "
        "every dialect and form through Python beside floor.json's corpus:NAME (repeatable)",
    )
    parser.add_argument(
        "--only-corpora",
        action="store_true",
        help="only the --corpus sections: rewrite them in the existing compare.md, every "
        "other section kept",
    )
    ns = parser.parse_args()
    TARGET_FRAGMENTS = ns.fragments
    corpora: list[tuple[str, Path]] = ns.corpus
    if ns.only_corpora:
        if not corpora:
            parser.error("--only-corpora needs at least one --corpus NAME=DIR")
        sections = {
            CORPUS_HEADING.format(name): corpus_section(name, d, max(5, ns.runs), FLOOR)
            for name, d in corpora
        }
        for section in sections.values():
            print("\n".join(section))
        RESULTS.mkdir(exist_ok=True)
        splice_sections(RESULTS / "compare.md", sections)
        print(f"rewrote {len(sections)} section(s) of {RESULTS / 'compare.md'}")
        return
    if ns.memory:
        child_memory(*ns.memory)
        return
    if ns.memory_scaling:
        child_scaling_memory(ns.memory_scaling)
        return
    if ns.floor:
        floor_rows(ns.floor, max(5, ns.runs))
        return
    runs = max(5, ns.runs)
    counts = (4,) if ns.quick else CALL_COUNTS
    RESULTS.mkdir(exist_ok=True)
    md: list[str] = ["# toolstitch comparison benchmark", ""]
    md += [
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average at start {os.getloadavg()[0]:.1f}; medians of {runs} interleaved rounds; "
        "release build. Peak memory: each contender once in its own subprocess, peak resident "
        "set during the run minus the resident set before it (Rust and Python allocations "
        "alike). Produced by `benches/compare.py` (`make bench`).",
        "",
    ]
    results: dict[str, list[Row]] = {}
    by_key: dict[str, tuple[Workload, list[Row]]] = {}
    all_notes: list[str] = []
    for dialect in ("openai-chat", "anthropic"):
        for calls in counts:
            w = make_workload(dialect, calls)
            cs, notes = contenders(dialect)
            all_notes += [n for n in notes if n not in all_notes]
            print(
                f"{w.title}: {w.fragments:,} fragments, {w.sse_bytes / 1e6:.1f} MB of SSE, "
                f"{len(w.streams)} responses",
                flush=True,
            )
            rows = time_workload(w, cs, runs)
            if not ns.no_memory:
                for c, r in zip(cs, rows, strict=True):
                    peak = memory_in_subprocess(
                        ["--fragments", str(TARGET_FRAGMENTS), "--memory", w.key, c.key]
                    )["peak"]
                    r.peak_mb = peak / 1e6
            for line in table(rows, rows[0], memory=not ns.no_memory):
                print(line)
            results[w.title] = rows
            by_key[w.key] = (w, rows)
            md += [
                f"## {w.title}",
                "",
                f"{w.fragments:,} fragments in {len(w.streams)} "
                f"responses, {w.sse_bytes / 1e6:.1f} MB of SSE.",
                "",
            ]
            md += [*table(rows, rows[0], memory=not ns.no_memory), ""]
    if all_notes:
        md += ["Skipped peers:", ""] + [f"- {n}" for n in all_notes] + [""]
    lines = summary(by_key, FLOOR)
    print("\n".join(lines))
    md += lines

    md += [
        "## From decoded dicts",
        "",
        "The events decoded beforehand (not timed); the ratio is against a hand-written "
        "Python loop that pulls the tool-call fragments out of each dict.",
        "",
    ]
    dialects: tuple[Provider, ...] = ("openai-chat", "anthropic")
    for dialect in dialects:
        w = make_workload(dialect, 4)
        rows = dict_rows(w, runs)
        print(f"{w.title}, from decoded dicts")
        lines = table(rows, rows[0], memory=False)
        lines = [ln.replace("vs pure Python", "vs the Python loop") for ln in lines]
        for line in lines:
            print(line)
        md += [f"### {w.title}", "", *lines, ""]

    md += ["## Scaling", ""]
    per = scaling_per_fragment(runs)
    spread = max(ns_ for _, ns_ in per) / min(ns_ for _, ns_ in per)
    md += [
        "Cost per fragment of `feed_bytes` (live=False) on one response of 4 calls:",
        "",
        "| fragments | ns per fragment |",
        "|---:|---:|",
    ]
    md += [f"| {n:,} | {ns_:.0f} |" for n, ns_ in per]
    md += ["", f"Largest / smallest: {spread:.2f}x (target: flat within 1.5x).", ""]
    print("\n".join(md[-8:]))
    if not ns.no_memory:
        md += [
            "Peak memory against argument bytes (UTF-8), one response of argument "
            "fragments (64-256 characters) over calls of at most 4 MB; the SSE input "
            "itself is not counted. `feed_bytes` + `close()` first, then `message()`, "
            "which builds the Python strings of the inputs (four bytes per character "
            "once a string holds an emoji, as these do):",
            "",
            "| argument bytes | their Python str size | feed_bytes + close | then message() "
            "| 2 x arguments + 16 MB | feed within |",
            "|---:|---:|---:|---:|---:|---|",
        ]
        for mb in (4, 16, 48):
            got = memory_in_subprocess(["--memory-scaling", str(mb)])
            bound = 2 * got["args"] + 16 * 1024 * 1024
            md.append(
                f"| {got['args'] / 1e6:.1f} MB | {got['py'] / 1e6:.1f} MB | "
                f"{got['fed'] / 1e6:.1f} MB | {got['message'] / 1e6:.1f} MB | "
                f"{bound / 1e6:.1f} MB | {'yes' if got['fed'] <= bound else 'no'} |"
            )
        md.append("")
    w = make_workload("openai-chat", 4)
    one, two = two_threads(w, runs)
    md += [
        f"Two threads with separate assemblers on the bytes path (the 4-call OpenAI "
        f"workload each) against one thread doing both: {one:.3f} s vs {two:.3f} s, "
        f"{one / two:.2f}x (target: at least 1.6x on 2 cores; load average now "
        f"{os.getloadavg()[0]:.1f}).",
        "",
    ]
    print(md[-2])
    md.append(chart(results, RESULTS / "compare.png"))
    for name, d in corpora:
        section = corpus_section(name, d, runs, FLOOR)
        print("\n".join(section))
        md += ["", *section]
    (RESULTS / "compare.md").write_text("\n".join(md) + "\n")
    print(f"wrote {RESULTS / 'compare.md'}")


if __name__ == "__main__":
    main()
