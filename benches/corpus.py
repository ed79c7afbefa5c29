"""A corpus of provider responses shaped like real traffic, generated deterministically.

Every dialect toolstitch reads (the nine of ``toolstitch.DIALECTS``), each as streams
in its own transport (SSE, JSON lines, AWS event-stream) and as whole (non-streamed)
response bodies where the dialect has one; a few calls per response, with some assistant
text before them; arguments like real calls (source code with quotes, backslashes and
newlines, file paths, shell commands with escapes, prose in several scripts, numbers and
nested lists); every eighth file gzipped. Fragment and text-delta sizes are drawn from
the distributions measured on the real recordings of ``tests/fixtures/``
(``python benches/corpus.py measure`` writes them to ``benches/results/shapes.json`` and
``shapes.md``; generation reads that file, so a corpus depends only on it and the seed).

``python benches/corpus.py write DIR [--responses 300] [--seed 1] [--plain]`` writes
the same responses (the same calls and text, cut the same way) in every dialect under
``DIR`` (``DIR/<dialect>/NNNNN-<form>.<ext>[.gz]``) and ``DIR/.manifest.json`` (hidden, so
a replay of ``DIR`` passes it over): for each file its dialect, form (``stream`` or
``body``), transport, whether it is gzipped, and the calls it holds (id, name,
arguments), which every reader must rebuild exactly.
``--plain`` writes the same corpus with every string of the arguments replaced by ASCII
letters and spaces of the same encoded size (no escape, no non-ASCII): the twin for the
per-byte cost of escapes. The corpus is generated at bench time into a temporary
directory; it is never committed. A benchmark tool, never a test.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import gzip
import json
import random
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHAPES = HERE / "results" / "shapes.json"

Call = tuple[str, str, str]  # id, name, arguments (the raw JSON text)
DIALECTS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "bedrock",
    "gemini",
    "cohere",
    "ollama",
    "bedrock-invoke",
    "gemini-interactions",
)
GZIP_EVERY = 8


# ------------------------------------------------------------------ measuring the fixtures


def measure() -> dict[str, Any]:
    """Fragment sizes (characters per argument delta), text-delta sizes, calls per
    response and argument sizes of every real recording under ``tests/fixtures/``, by
    dialect, read through toolstitch's live events."""
    sys.path.insert(0, str(ROOT / "tests"))
    from readers import cassette_bodies
    from toolstitch import Assembler, TextDelta, ThinkingDelta, ToolInputDelta, ToolstitchError

    fixtures = ROOT / "tests" / "fixtures"
    by_dialect: dict[str, dict[str, list[int]]] = {}
    recordings: list[str] = []
    for path in sorted(fixtures.rglob("*")):
        if not path.is_file() or "licenses" in path.parts or "otel" in path.parts:
            continue
        if path.suffix not in (".sse", ".jsonl", ".yaml", ".txt", ".gz", ".eventstream", ".json"):
            continue
        if path.name == "EXPECTED.json":
            continue
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        bodies = cassette_bodies(path) if path.suffix == ".yaml" else [raw]
        for body in bodies:
            asm = Assembler("auto", live=True)
            fragments: dict[int, list[int]] = {}
            texts: list[int] = []
            try:
                for event in asm.feed_bytes(body):
                    if isinstance(event, ToolInputDelta):
                        fragments.setdefault(event.index, []).append(len(event.fragment))
                    elif isinstance(event, (TextDelta, ThinkingDelta)):
                        texts.append(len(event.text))
                asm.close()
            except ToolstitchError:
                continue
            dialect = asm.dialect or "?"
            stats = by_dialect.setdefault(
                dialect,
                {"fragments": [], "whole_calls": [], "texts": [], "calls": [], "arguments": []},
            )
            recordings.append(str(path.relative_to(ROOT)))
            for sizes in fragments.values():
                # A call sent in one delta is a whole call, not a fragment size.
                stats["fragments" if len(sizes) > 1 else "whole_calls"].extend(sizes)
                stats["arguments"].append(sum(sizes))
            stats["texts"].extend(texts)
            stats["calls"].append(len(fragments))
    pooled = {
        key: sorted(v for s in by_dialect.values() for v in s[key])
        for key in ("fragments", "texts", "calls", "arguments")
    }
    return {"recordings": sorted(set(recordings)), "by_dialect": by_dialect, "pooled": pooled}


def _quantiles(values: list[int]) -> str:
    if not values:
        return "-"
    v = sorted(values)

    def q(p: float) -> int:
        return v[min(len(v) - 1, int(p * len(v)))]

    return (
        f"{len(v)}: min {v[0]}, p25 {q(0.25)}, median {q(0.5)}, p75 {q(0.75)}, "
        f"p90 {q(0.9)}, max {v[-1]}"
    )


def write_shapes(shapes: dict[str, Any]) -> None:
    SHAPES.write_text(json.dumps(shapes, indent=1, sort_keys=True) + "\n")
    lines = [
        "# Shapes of the real recordings",
        "",
        "Measured by `python benches/corpus.py measure` on every recording under",
        "`tests/fixtures/` that toolstitch reads completely (each read through its live",
        "events: an argument fragment is one `ToolInputDelta`, a text delta one `TextDelta`",
        "or `ThinkingDelta`; sizes in characters). A call whose arguments came in one delta",
        "counts as a whole call, not a fragment. `benches/corpus.py` draws its fragment",
        "and text-delta sizes from the pooled distributions (`shapes.json`).",
        "",
        "| dialect | fragment sizes | text-delta sizes | calls per response | argument sizes |",
        "|---|---|---|---|---|",
    ]
    for dialect, stats in sorted(shapes["by_dialect"].items()):
        lines.append(
            f"| {dialect} | {_quantiles(stats['fragments'])} | {_quantiles(stats['texts'])} "
            f"| {_quantiles(stats['calls'])} | {_quantiles(stats['arguments'])} |"
        )
    pooled = shapes["pooled"]
    lines.append(
        f"| **pooled** | {_quantiles(pooled['fragments'])} | {_quantiles(pooled['texts'])} "
        f"| {_quantiles(pooled['calls'])} | {_quantiles(pooled['arguments'])} |"
    )
    lines += [
        "",
        "The recordings' arguments are short (a few hundred characters at most): the",
        "argument sizes of the corpus are therefore chosen, not measured (see",
        "`benches/README.md`); what is taken from the recordings is how they are cut.",
        "",
        "Recordings read:",
        "",
        *[f"- `{r}`" for r in shapes["recordings"]],
        "",
    ]
    SHAPES.with_suffix(".md").write_text("\n".join(lines))


# ------------------------------------------------------------------ argument text

PROSE = [
    "The deployment failed because the health check timed out after 30 seconds.",
    "Résumé du ticket : l'utilisateur ne peut plus se connecter depuis la mise à jour.",
    "Bitte prüfe, ob die Größe der Datei über 5 MB liegt, bevor du sie hochlädst.",
    "東京の天気は明日晴れの予報です。気温は最高２５度、最低１６度になる見込みです。",
    "Пользователь сообщил, что отчёт за март содержит неверные суммы.",
    "El cliente pidió cambiar la dirección de envío a «Calle Mayor 12, Madrid».",
    "Summarise the thread — three people agreed, one asked for a follow-up ✅.",
    "서울 지점의 재고가 부족합니다. 다음 주 화요일까지 보충해 주세요.",
    'She said "ship it" but the tests on Windows (C:\\build\\out) still fail.',
    "Wait 2\u20133 minutes, then retry with exponential back-off (max 5 attempts) 🚀.",
]
CODE = [
    'def parse(line: str) -> dict[str, str]:\n    key, _, value = line.partition("=")\n'
    "    return {key.strip(): value.strip().strip('\"')}\n",
    'PATTERN = re.compile(r"^(\\d{4})-(\\d{2})-(\\d{2})T[^\\s]+$")\n',
    'for path in sorted(Path("src").rglob("*.py")):\n'
    '    print(f"{path}:\\t{len(path.read_text())}")\n',
    'const msg = `Hello, ${user.name}! You have ${count} new "alerts".`;\n',
    'if (!fs.existsSync("C:\\\\Users\\\\dev\\\\app.json")) {\n'
    '  throw new Error("missing config");\n}\n',
    "    # TODO: handle the empty case\n    if not items:\n        return []\n",
    "SELECT name, \"order\" FROM users WHERE email LIKE '%@example.com' AND age > 21;\n",
    "fn main() {\n    let v: Vec<&str> = \"a,b,c\".split(',').collect();\n"
    '    println!("{v:?}");\n}\n',
    '<div class="card" data-id="42">Price: 12,50 €</div>\n',
    'echo "done" >> /var/log/app.log && printf \'%s\\n\' "$HOME"\n',
]
PATHS = [
    "src/toolstitch/cli.py",
    "docs/guide/getting-started.md",
    "C:\\Users\\dev\\project\\main.rs",
    "/var/lib/app/data/2026-12-01/export.csv",
    "tests/fixtures/real/überblick.json",
    "web/components/Button.tsx",
]
WORDS = [
    *("alpha", "beta", "gamma", "delta", "report", "invoice"),
    *("user", "order", "item", "status", "retry", "cache"),
]


def _prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        s = rng.choice(PROSE)
        out.append(s)
        n += len(s) + 1
    return " ".join(out)


def _code(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        s = rng.choice(CODE)
        out.append(s)
        n += len(s)
    return "".join(out)


def _value(rng: random.Random) -> Any:
    kind = rng.random()
    if kind < 0.3:
        return rng.randint(-1000, 10**6)
    if kind < 0.5:
        return round(rng.uniform(-1000, 1000), rng.randint(1, 6))
    if kind < 0.6:
        return rng.random() < 0.5
    if kind < 0.8:
        return rng.choice(WORDS)
    return [rng.randint(0, 99) for _ in range(rng.randint(1, 6))]


def arguments(rng: random.Random) -> tuple[str, Any]:
    """A tool's name and its arguments (a JSON object): small structured calls most of
    the time, prose now and then, a file written in one call sometimes."""
    kind = rng.random()
    if kind < 0.35:
        args: dict[str, Any] = {
            "id": rng.randint(1, 10**7),
            "query": _prose(rng, rng.randint(20, 120)),
            "limit": rng.randint(1, 50),
            "filters": {rng.choice(WORDS): _value(rng) for _ in range(rng.randint(0, 4))},
        }
        return "search", args
    if kind < 0.55:
        return "run_shell", {
            "command": _code(rng, rng.randint(40, 300)).strip(),
            "cwd": rng.choice(PATHS),
            "timeout": rng.randint(1, 600),
        }
    if kind < 0.75:
        return "update_record", {
            "table": rng.choice(WORDS),
            "id": rng.randint(1, 10**9),
            "values": {f"{w}_{i}": _value(rng) for i, w in enumerate(rng.sample(WORDS, 6))},
            "note": _prose(rng, rng.randint(10, 200)),
        }
    if kind < 0.92:
        return "send_message", {
            "to": f"{rng.choice(WORDS)}@example.com",
            "subject": _prose(rng, rng.randint(10, 60)),
            "body": _prose(rng, rng.randint(200, 2000)),
        }
    return "write_file", {
        "path": rng.choice(PATHS),
        "content": _code(rng, rng.randint(1000, 12000)),
    }


def _plain(value: Any, rng: random.Random) -> Any:
    """``value`` with every string replaced by ASCII letters and spaces of the same
    encoded size (its JSON escapes and UTF-8 bytes counted)."""
    if isinstance(value, str):
        size = len(json.dumps(value, ensure_ascii=False).encode()) - 2
        return "".join(rng.choice("abcdefghij klmnop qrstuvwxyz") for _ in range(size))
    if isinstance(value, dict):
        return {k: _plain(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, rng) for v in value]
    return value


# ------------------------------------------------------------------ cutting


class Sizes:
    """Draws from an empirical distribution (the measured sizes, with replacement)."""

    def __init__(self, values: list[int]) -> None:
        self.values = sorted(max(1, v) for v in values) or [1]

    def draw(self, rng: random.Random) -> int:
        return self.values[bisect.bisect_left(self.values, 0) + rng.randrange(len(self.values))]


def cut(text: str, sizes: Sizes, rng: random.Random) -> list[str]:
    pieces, at = [], 0
    while at < len(text):
        n = sizes.draw(rng)
        pieces.append(text[at : at + n])
        at += n
    return pieces or [""]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ------------------------------------------------------------------ transports


def sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        if name is not None:
            out.append(f"event: {name}\n")
        out.append(f"data: {data if isinstance(data, str) else dumps(data)}\n\n")
    return "".join(out).encode()


def jsonl(events: list[Any]) -> bytes:
    return "".join(dumps(e) + "\n" for e in events).encode()


def eventstream(event_type: str, payload: bytes) -> bytes:
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


# ------------------------------------------------------------------ dialects

Response = tuple[list[Call], list[str]]  # the calls, and the text before them, in deltas


class Cutter:
    def __init__(self, rng: random.Random, fragments: Sizes, texts: Sizes) -> None:
        self.rng = rng
        self.fragments = fragments
        self.texts = texts

    def args(self, text: str) -> list[str]:
        return cut(text, self.fragments, self.rng)


def openai_chat_stream(r: Response, c: Cutter, n: int) -> bytes:
    calls, text = r
    head = (
        f'{{"id":"chatcmpl-{n}","object":"chat.completion.chunk","created":1764547200,'
        '"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_b3f1157249","choices":'
    )

    def chunk(delta: Any, finish: str | None = None) -> tuple[str | None, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return None, head + dumps([choice]) + "}"

    events = [chunk({"role": "assistant", "content": None, "refusal": None})]
    events += [chunk({"content": t}) for t in text]
    for i, (call_id, name, args) in enumerate(calls):
        opened = {"index": i, "id": call_id, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**opened, "function": {"name": name, "arguments": ""}}]})
        )
        for piece in c.args(args):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 812, "completion_tokens": 97, "total_tokens": 909}
    events.append((None, head + '[],"usage":' + dumps(usage) + "}"))
    events.append((None, "[DONE]"))
    return sse(events)


def openai_chat_body(r: Response, n: int) -> bytes:
    calls, text = r
    message = {
        "role": "assistant",
        "content": "".join(text) or None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": args}}
            for i, name, args in calls
        ],
    }
    body = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1764547200,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 812, "completion_tokens": 97, "total_tokens": 909},
    }
    return (dumps(body) + "\n").encode()


def responses_stream(r: Response, c: Cutter, n: int) -> bytes:
    calls, text = r
    resp = {"id": f"resp_{n}", "object": "response", "status": "in_progress", "output": []}
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": resp})
    ]
    out = 0
    if text:
        msg_id = f"msg_{n}"
        item = {
            "type": "message",
            "id": msg_id,
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            )
        )
        part = {"type": "output_text", "annotations": [], "text": ""}
        events.append(
            (
                "response.content_part.added",
                {
                    "type": "response.content_part.added",
                    "item_id": msg_id,
                    "output_index": 0,
                    "content_index": 0,
                    "part": part,
                },
            )
        )
        for t in text:
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": msg_id,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": t,
                    },
                )
            )
        whole = "".join(text)
        events.append(
            (
                "response.output_text.done",
                {
                    "type": "response.output_text.done",
                    "item_id": msg_id,
                    "output_index": 0,
                    "content_index": 0,
                    "text": whole,
                },
            )
        )
        done_part = {**part, "text": whole}
        events.append(
            (
                "response.content_part.done",
                {
                    "type": "response.content_part.done",
                    "item_id": msg_id,
                    "output_index": 0,
                    "content_index": 0,
                    "part": done_part,
                },
            )
        )
        done_item = {**item, "status": "completed", "content": [done_part]}
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": done_item},
            )
        )
        out = 1
    items = []
    for k, (call_id, name, args) in enumerate(calls):
        o = out + k
        fc_id = f"fc_{n}_{k}"
        item = {
            "type": "function_call",
            "id": fc_id,
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": o, "item": item},
            )
        )
        for piece in c.args(args):
            events.append(
                (
                    "response.function_call_arguments.delta",
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": fc_id,
                        "output_index": o,
                        "delta": piece,
                    },
                )
            )
        events.append(
            (
                "response.function_call_arguments.done",
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": fc_id,
                    "output_index": o,
                    "arguments": args,
                },
            )
        )
        done = {**item, "arguments": args, "status": "completed"}
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": o, "item": done},
            )
        )
        items.append(done)
    final = {
        **resp,
        "status": "completed",
        "output": items,
        "usage": {"input_tokens": 812, "output_tokens": 97, "total_tokens": 909},
    }
    events.append(("response.completed", {"type": "response.completed", "response": final}))
    return sse(events)


def responses_body(r: Response, n: int) -> bytes:
    calls, text = r
    output: list[Any] = []
    if text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": "".join(text)}],
            }
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_{n}_{k}",
            "call_id": i,
            "name": name,
            "arguments": args,
            "status": "completed",
        }
        for k, (i, name, args) in enumerate(calls)
    ]
    body = {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1764547200,
        "status": "completed",
        "model": "gpt-4.1",
        "output": output,
        "usage": {"input_tokens": 812, "output_tokens": 97, "total_tokens": 909},
    }
    return (dumps(body) + "\n").encode()


def anthropic_events(r: Response, c: Cutter, n: int) -> list[tuple[str, Any]]:
    calls, text = r
    message: dict[str, Any] = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 812, "output_tokens": 1},
    }
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    block = 0
    if text:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for t in text:
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": t},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        block = 1
    for k, (call_id, name, args) in enumerate(calls):
        i = block + k
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for piece in c.args(args):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 97},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_stream(r: Response, c: Cutter, n: int) -> bytes:
    return sse([(name, e) for name, e in anthropic_events(r, c, n)])


def anthropic_body(r: Response, n: int) -> bytes:
    calls, text = r
    content: list[Any] = [{"type": "text", "text": "".join(text)}] if text else []
    content += [
        {"type": "tool_use", "id": i, "name": name, "input": json.loads(args)}
        for i, name, args in calls
    ]
    body = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 812, "output_tokens": 97},
    }
    return (dumps(body) + "\n").encode()


def bedrock_stream(r: Response, c: Cutter, n: int) -> bytes:
    calls, text = r
    frames = [eventstream("messageStart", b'{"p":"abcdefgh","role":"assistant"}')]
    block = 0
    if text:
        for t in text:
            frames.append(
                eventstream(
                    "contentBlockDelta",
                    dumps({"contentBlockIndex": 0, "delta": {"text": t}, "p": "abcd"}).encode(),
                )
            )
        frames.append(eventstream("contentBlockStop", b'{"contentBlockIndex":0,"p":"abc"}'))
        block = 1
    for k, (call_id, name, args) in enumerate(calls):
        i = block + k
        start = {
            "contentBlockIndex": i,
            "p": "abcdefghijk",
            "start": {"toolUse": {"name": name, "toolUseId": call_id}},
        }
        frames.append(eventstream("contentBlockStart", dumps(start).encode()))
        for piece in c.args(args):
            delta = {"contentBlockIndex": i, "delta": {"toolUse": {"input": piece}}, "p": "abcdef"}
            frames.append(eventstream("contentBlockDelta", dumps(delta).encode()))
        frames.append(
            eventstream("contentBlockStop", dumps({"contentBlockIndex": i, "p": "ab"}).encode())
        )
    frames.append(eventstream("messageStop", b'{"p":"abcdefghijklm","stopReason":"tool_use"}'))
    metadata = {
        "metrics": {"latencyMs": 1873},
        "p": "abcde",
        "usage": {"inputTokens": 812, "outputTokens": 97, "totalTokens": 909},
    }
    frames.append(eventstream("metadata", dumps(metadata).encode()))
    return b"".join(frames)


def bedrock_body(r: Response, n: int) -> bytes:
    calls, text = r
    content: list[Any] = [{"text": "".join(text)}] if text else []
    content += [
        {"toolUse": {"toolUseId": i, "name": name, "input": json.loads(args)}}
        for i, name, args in calls
    ]
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 812, "outputTokens": 97, "totalTokens": 909},
        "metrics": {"latencyMs": 1873},
    }
    return (dumps(body) + "\n").encode()


def bedrock_invoke_stream(r: Response, c: Cutter, n: int) -> bytes:
    frames = []
    events = anthropic_events(r, c, n)
    for k, (_, event) in enumerate(events):
        if k == len(events) - 1:
            event = {
                **event,
                "amazon-bedrock-invocationMetrics": {
                    "inputTokenCount": 812,
                    "outputTokenCount": 97,
                    "invocationLatency": 1873,
                    "firstByteLatency": 412,
                },
            }
        raw = dumps(event).encode()
        payload = {
            "bytes": base64.b64encode(raw).decode(),
            "p": "abcdefghijklmnopqrstuvwxyz"[: k % 26 + 1],
        }
        frames.append(eventstream("chunk", dumps(payload).encode()))
    return b"".join(frames)


def gemini_stream(r: Response, c: Cutter, n: int) -> bytes:
    """Gemini sends each call whole (its arguments an object) as SSE (``alt=sse``)."""
    calls, text = r
    meta = {"modelVersion": "gemini-2.5-flash", "responseId": f"resp-{n}"}
    events: list[tuple[str | None, Any]] = []
    for t in text:
        events.append(
            (
                None,
                {
                    "candidates": [
                        {"content": {"parts": [{"text": t}], "role": "model"}, "index": 0}
                    ],
                    **meta,
                },
            )
        )
    for _, name, args in calls:
        part = {"functionCall": {"name": name, "args": json.loads(args)}}
        events.append(
            (
                None,
                {
                    "candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}],
                    **meta,
                },
            )
        )
    usage = {"promptTokenCount": 812, "candidatesTokenCount": 97, "totalTokenCount": 909}
    events.append(
        (
            None,
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": ""}], "role": "model"},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": usage,
                **meta,
            },
        )
    )
    return sse(events)


def gemini_body(r: Response, n: int) -> bytes:
    calls, text = r
    parts: list[Any] = [{"text": "".join(text)}] if text else []
    parts += [{"functionCall": {"name": name, "args": json.loads(args)}} for _, name, args in calls]
    body = {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 812,
            "candidatesTokenCount": 97,
            "totalTokenCount": 909,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": f"resp-{n}",
    }
    return (dumps(body) + "\n").encode()


def cohere_stream(r: Response, c: Cutter, n: int) -> bytes:
    calls, text = r
    events: list[tuple[str | None, Any]] = [
        (
            "message-start",
            {
                "id": f"c-{n}",
                "type": "message-start",
                "delta": {
                    "message": {
                        "role": "assistant",
                        "content": [],
                        "tool_plan": "",
                        "tool_calls": [],
                        "citations": [],
                    }
                },
            },
        )
    ]
    for t in text:
        events.append(
            ("tool-plan-delta", {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": t}}})
        )
    for i, (call_id, name, args) in enumerate(calls):
        start = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(
            (
                "tool-call-start",
                {
                    "type": "tool-call-start",
                    "index": i,
                    "delta": {"message": {"tool_calls": start}},
                },
            )
        )
        for piece in c.args(args):
            events.append(
                (
                    "tool-call-delta",
                    {
                        "type": "tool-call-delta",
                        "index": i,
                        "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                    },
                )
            )
        events.append(("tool-call-end", {"type": "tool-call-end", "index": i}))
    usage = {
        "billed_units": {"input_tokens": 812, "output_tokens": 97},
        "tokens": {"input_tokens": 812, "output_tokens": 97},
    }
    events.append(
        (
            "message-end",
            {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": usage}},
        )
    )
    return sse(events)


def cohere_body(r: Response, n: int) -> bytes:
    calls, text = r
    message: dict[str, Any] = {"role": "assistant"}
    if text:
        message["tool_plan"] = "".join(text)
    message["tool_calls"] = [
        {"id": i, "type": "function", "function": {"name": name, "arguments": args}}
        for i, name, args in calls
    ]
    body = {
        "id": f"c-{n}",
        "message": message,
        "finish_reason": "TOOL_CALL",
        "usage": {"billed_units": {"input_tokens": 812, "output_tokens": 97}},
    }
    return (dumps(body) + "\n").encode()


def ollama_stream(r: Response, c: Cutter, n: int) -> bytes:
    calls, text = r
    events: list[Any] = []
    stamp = "2026-12-01T10:00:00.000000Z"
    for t in text:
        events.append(
            {
                "model": "qwen3",
                "created_at": stamp,
                "message": {"role": "assistant", "content": t},
                "done": False,
            }
        )
    for _, name, args in calls:
        call = {"function": {"name": name, "arguments": json.loads(args)}}
        events.append(
            {
                "model": "qwen3",
                "created_at": stamp,
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                "done": False,
            }
        )
    events.append(
        {
            "model": "qwen3",
            "created_at": stamp,
            "message": {"role": "assistant", "content": ""},
            "done_reason": "stop",
            "done": True,
            "total_duration": 2287493958,
            "eval_count": 97,
        }
    )
    return jsonl(events)


def interactions_stream(r: Response, c: Cutter, n: int) -> bytes:
    calls, text = r
    iid = f"v1_interaction_{n}"
    events: list[Any] = [
        {
            "interaction": {
                "id": iid,
                "status": "in_progress",
                "object": "interaction",
                "model": "gemini-2.5-flash",
            },
            "event_type": "interaction.created",
        }
    ]
    step = 0
    if text:
        events.append({"index": 0, "step": {"type": "model_output"}, "event_type": "step.start"})
        for t in text:
            events.append(
                {"index": 0, "delta": {"text": t, "type": "text"}, "event_type": "step.delta"}
            )
        events.append({"index": 0, "event_type": "step.stop"})
        step = 1
    for k, (call_id, name, args) in enumerate(calls):
        i = step + k
        events.append(
            {
                "index": i,
                "step": {
                    "id": call_id,
                    "signature": "",
                    "type": "function_call",
                    "name": name,
                    "arguments": {},
                },
                "event_type": "step.start",
            }
        )
        for piece in c.args(args):
            events.append(
                {
                    "index": i,
                    "delta": {"arguments": piece, "type": "arguments_delta"},
                    "event_type": "step.delta",
                }
            )
        events.append({"index": i, "event_type": "step.stop"})
    events.append(
        {
            "interaction": {
                "id": iid,
                "status": "requires_action",
                "usage": {"total_tokens": 909},
                "object": "interaction",
                "model": "gemini-2.5-flash",
            },
            "event_type": "interaction.completed",
        }
    )
    return jsonl(events)


Stream = Callable[[Response, Cutter, int], bytes]
Body = Callable[[Response, int], bytes]
FORMS: dict[str, tuple[str, Stream, Body | None]] = {
    "openai-chat": ("sse", openai_chat_stream, openai_chat_body),
    "openai-responses": ("sse", responses_stream, responses_body),
    "anthropic": ("sse", anthropic_stream, anthropic_body),
    "bedrock": ("eventstream", bedrock_stream, bedrock_body),
    "gemini": ("sse", gemini_stream, gemini_body),
    "cohere": ("sse", cohere_stream, cohere_body),
    "ollama": ("jsonl", ollama_stream, None),
    "bedrock-invoke": ("eventstream", bedrock_invoke_stream, None),
    "gemini-interactions": ("jsonl", interactions_stream, None),
}
SUFFIX = {"sse": ".sse", "jsonl": ".jsonl", "eventstream": ".eventstream", "body": ".json"}
# Dialects whose calls arrive whole, as JSON objects: their arguments are the object's
# text as sent (compact, in the stream's own key order).
WHOLE = frozenset({"gemini", "ollama"})


# ------------------------------------------------------------------ the corpus


def _calls(rng: random.Random, n: int, plain: bool) -> list[Call]:
    calls = []
    for k in range(rng.choice([1, 1, 2, 2, 3, 4])):
        name, args = arguments(rng)
        if plain:
            args = _plain(args, random.Random(rng.random()))
        calls.append((f"call_{n:05d}_{k}_{rng.getrandbits(40):010x}", name, dumps(args)))
    return calls


def responses(count: int, seed: int, plain: bool) -> list[Response]:
    """The responses every dialect carries: the same calls and text in each."""
    rng = random.Random(seed)
    out: list[Response] = []
    shapes = json.loads(SHAPES.read_text())
    texts = Sizes(shapes["pooled"]["texts"])
    for n in range(count):
        calls = _calls(rng, n, plain)
        chars = rng.choice([0, 0, 40, 120, 400])
        prose = _prose(rng, chars)[:chars] if chars else ""
        if plain and prose:
            prose = _plain(prose, rng)
        out.append((calls, cut(prose, texts, rng) if prose else []))
    return out


def write(directory: Path, count: int, seed: int, plain: bool) -> dict[str, Any]:
    """``count`` responses in every dialect (the same calls, cut the same way)."""
    shapes = json.loads(SHAPES.read_text())
    fragments = Sizes(shapes["pooled"]["fragments"])
    texts = Sizes(shapes["pooled"]["texts"])
    shared = responses(count, seed, plain)
    files: list[dict[str, Any]] = []
    for dialect in DIALECTS:
        cutter = Cutter(random.Random(seed + 1), fragments, texts)
        transport, stream, body = FORMS[dialect]
        sub = directory / dialect
        sub.mkdir(parents=True, exist_ok=True)
        for n, (calls, text) in enumerate(shared):
            if dialect in WHOLE:
                # The provider sends no ids: toolstitch mints call_<choice>_<n>.
                calls = [(f"call_0_{k}", name, args) for k, (_, name, args) in enumerate(calls)]
            # Every response is a stream in every dialect (so that the streams of two
            # dialects carry the same calls); one in five is also a whole body in the
            # dialects that have one.
            forms = [("stream", stream((calls, text), cutter, n))]
            if body is not None and n % 5 == 4:
                forms.append(("body", body((calls, text), n)))
            for form, data in forms:
                kind = "body" if form == "body" else transport
                zipped = n % GZIP_EVERY == GZIP_EVERY - 1
                name = f"{n:05d}-{form}{SUFFIX[kind]}"
                raw = len(data)
                if zipped:
                    data = gzip.compress(data, compresslevel=6, mtime=0)
                    name += ".gz"
                (sub / name).write_bytes(data)
                files.append(
                    {
                        "path": f"{dialect}/{name}",
                        "dialect": dialect,
                        "form": form,
                        "transport": kind,
                        "gzip": zipped,
                        "bytes": len(data),
                        "raw_bytes": raw,
                        "calls": [list(c) for c in calls],
                    }
                )
    manifest = {"seed": seed, "plain": plain, "responses": count, "files": files}
    (directory / ".manifest.json").write_text(json.dumps(manifest, ensure_ascii=False) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("measure", help="measure tests/fixtures and write benches/results/shapes.*")
    w = commands.add_parser("write", help="write a corpus")
    w.add_argument("directory", type=Path)
    w.add_argument("--responses", type=int, default=300, help="responses per dialect (default 300)")
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--plain", action="store_true", help="ASCII arguments of the same sizes")
    args = parser.parse_args()
    if args.command == "measure":
        write_shapes(measure())
        print(f"wrote {SHAPES} and {SHAPES.with_suffix('.md')}")
        return
    manifest = write(args.directory, args.responses, args.seed, args.plain)
    total = sum(f["bytes"] for f in manifest["files"])
    print(f"{len(manifest['files'])} files, {total / 1e6:.1f} MB in {args.directory}")


if __name__ == "__main__":
    main()
