#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/seeds/ from the recordings the tests
replay (tests/fixtures/real, provenance in tests/fixtures/PROVENANCE.md) and
from small hand-made streams.

Each assembler and framing seed is a 4-byte header (see
`toolstitch_fuzz::Header`: flags, cut count, cut seed) followed by the body.
Recordings are cut to at most MAX_BODY bytes at an event boundary, so that the
seeds fit the targets' -max_len. Run from anywhere: python3 fuzz/make_seeds.py
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import shutil
import struct
import zlib
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
REAL = FUZZ.parent / "tests" / "fixtures" / "real"
SEEDS = FUZZ / "seeds"
MAX_BODY = 2000

RAW = bytes([0x00, 0x05, 0x2A, 0x00])  # raw bytes, 5 cuts, seed 42
RAW_SMALL = bytes([0x02, 0x03, 0x07, 0x01])  # raw bytes, small limits
STRUCTURED = [bytes([0x01 | (t << 2), 0x04, 0x11, 0x00]) for t in range(4)]


def vcr_bodies(path: Path) -> list[bytes]:
    """Response bodies of a VCR cassette: `!!binary` base64 or `|+` literal text."""
    lines = path.read_text().splitlines()
    bodies: list[bytes] = []
    for i, line in enumerate(lines):
        m = re.fullmatch(r"(\s*)string: (!!binary \||\|\+)", line)
        if not m:
            continue
        indent = len(m.group(1)) + 2
        block: list[str] = []
        for follow in lines[i + 1 :]:
            if follow.strip() and len(follow) - len(follow.lstrip(" ")) < indent:
                break
            block.append(follow[indent:])
        if m.group(2) == "!!binary |":
            bodies.append(base64.b64decode("".join(block)))
        else:
            bodies.append(("\n".join(block) + "\n").encode())
    return bodies


def cut_text(data: bytes, sep: bytes) -> bytes:
    """At most MAX_BODY bytes, ending at a separator when cut."""
    if len(data) <= MAX_BODY:
        return data
    at = data.rfind(sep, 0, MAX_BODY)
    return data[: at + len(sep)] if at > 0 else data[:MAX_BODY]


def tail_text(data: bytes, sep: bytes) -> bytes | None:
    """The last at most MAX_BODY bytes, starting after a separator (the end of
    a long stream: its last calls and its finish), or None for a short one."""
    if len(data) <= MAX_BODY:
        return None
    at = data.find(sep, len(data) - MAX_BODY)
    return data[at + len(sep) :] if at >= 0 else None


def cut_frames(data: bytes) -> bytes:
    """Whole AWS event-stream frames, at most MAX_BODY bytes (at least one)."""
    out, at = b"", 0
    while at + 4 <= len(data):
        (total,) = struct.unpack(">I", data[at : at + 4])
        if out and len(out) + total > MAX_BODY:
            break
        out += data[at : at + total]
        at += total
    return out


def sse_of_lines(data: bytes) -> bytes:
    """JSON lines rewritten as SSE `data:` events."""
    return b"".join(b"data: " + ln + b"\n\n" for ln in data.splitlines() if ln.strip())


def frame(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    """One AWS event-stream frame with string headers."""
    hb = b"".join(
        bytes([len(n)]) + n.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode()
        for n, v in headers
    )
    total = 16 + len(hb) + len(payload)
    prelude = struct.pack(">II", total, len(hb))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + hb + payload
    return body + struct.pack(">I", zlib.crc32(body))


def recordings() -> dict[str, list[bytes]]:
    """Transport bytes of every recording, by the dialect that reads it."""
    out: dict[str, list[bytes]] = {d: [] for d in DIALECTS}
    out["openai_chat"].append(
        (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
    )
    out["openai_chat"].append((REAL / "mistral_chat-single-chunk-tool-call.jsonl").read_bytes())
    out["anthropic"].append((REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes())
    out["gemini"].append(
        (REAL / "google_vertex-stream-function-call-args-4-calls.jsonl").read_bytes()
    )
    out["bedrock"] += vcr_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")
    out["openai_responses"] += vcr_bodies(REAL / "openai_responses-function-call.vcr.yaml")
    out["ollama"].append((REAL.parent / "ollama" / "chat-stream-tool-calls.jsonl").read_bytes())
    for name in ("claude-text-then-tool-use", "nova-tool-use"):
        invoke = REAL.parent / "bedrock_invoke" / f"{name}.eventstream"
        out["bedrock_invoke"].append(invoke.read_bytes())
    by_prefix = {
        "anthropic": "anthropic",
        "azure": "openai_responses",
        "openai": "openai_responses",
        "lmstudio": "openai_responses",
        "cohere": "cohere",
        "google": "gemini",
        "groq": "openai_chat",
        "xai": "openai_chat",
        "mistral": "openai_chat",
    }
    for path in sorted((REAL / "vercel-ai").glob("*.chunks.txt*")):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if path.name.startswith("google-interactions-"):
            dialect = "gemini_interactions"
        else:
            dialect = by_prefix[path.name.split("-")[0]]
        out[dialect].append(data)
        out[dialect].append(sse_of_lines(data))
    return out


def hand_made() -> dict[str, list[bytes]]:
    """Small streams with the shapes the recordings lack."""

    def sse(*events: tuple[str | None, object]) -> bytes:
        text = ""
        for name, data in events:
            if name:
                text += f"event: {name}\n"
            text += "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
        return text.encode()

    chat = sse(
        (
            None,
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_a",
                                    "function": {"name": "f", "arguments": '{"a"'},
                                }
                            ]
                        },
                    }
                ]
            },
        ),
        (
            None,
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]},
                        "finish_reason": "tool_calls",
                    }
                ]
            },
        ),
        (None, {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}),
        (None, "[DONE]"),
    )
    anthropic = sse(
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"a":1}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    cohere = sse(
        ("message-start", {"type": "message-start"}),
        (
            "tool-call-start",
            {
                "type": "tool-call-start",
                "index": 0,
                "delta": {
                    "message": {
                        "tool_calls": {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": ""},
                        }
                    }
                },
            },
        ),
        (
            "tool-call-delta",
            {
                "type": "tool-call-delta",
                "index": 0,
                "delta": {"message": {"tool_calls": {"function": {"arguments": "{}"}}}},
            },
        ),
        ("tool-call-end", {"type": "tool-call-end", "index": 0}),
        ("message-end", {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}),
    )
    gemini = b"".join(
        json.dumps(x).encode() + b"\n"
        for x in [
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {"name": "f", "willContinue": True}}]}}
                ]
            },
            {
                "candidates": [
                    {
                        "content": {
                            "parts": [
                                {
                                    "functionCall": {
                                        "partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}],
                                        "willContinue": True,
                                    }
                                }
                            ]
                        }
                    }
                ]
            },
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {}}]}, "finishReason": "STOP"}
                ],
                "usageMetadata": {"totalTokenCount": 3},
            },
        ]
    )
    bedrock = b"".join(
        frame(
            [
                (":event-type", name),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            json.dumps(p).encode(),
        )
        for name, p in [
            ("messageStart", {"role": "assistant", "p": "ab"}),
            (
                "contentBlockStart",
                {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
            ),
            (
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a":1}'}}},
            ),
            ("contentBlockStop", {"contentBlockIndex": 0}),
            ("messageStop", {"stopReason": "tool_use"}),
            ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2}}),
        ]
    ) + frame(
        [(":exception-type", "throttlingException"), (":message-type", "exception")],
        b'{"message":"slow"}',
    )
    responses = sse(
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": {}}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": "",
                },
            },
        ),
        (
            "response.function_call_arguments.delta",
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 2,
                "output_index": 0,
                "item_id": "fc_1",
                "delta": "{}",
            },
        ),
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "sequence_number": 3,
                "output_index": 0,
                "item": {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": "{}",
                },
            },
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "sequence_number": 4,
                "response": {"status": "completed", "usage": {"input_tokens": 1}},
            },
        ),
    )
    return {
        "openai_chat": [chat],
        "anthropic": [anthropic],
        "cohere": [cohere],
        "gemini": [gemini],
        "bedrock": [bedrock],
        "openai_responses": [responses],
    }


DIALECTS = [
    "openai_chat",
    "openai_responses",
    "anthropic",
    "bedrock",
    "gemini",
    "cohere",
    "ollama",
    "bedrock_invoke",
    "gemini_interactions",
]

JSON_SEEDS = [
    b'{"city": "Paris", "days": [1, -2.5e3, 1e-7], "u": null, "t": true}',
    b'{"a":"\\ud83d\\ude00\\u00e9\\n"}',
    b'[[[[{"a":[{}]}]]]]',
    b'"s"',
    b"18446744073709551615",
    b'{"a":1,"a":2}',
    b'{"a":"\\ud83d"}',
    b"1e400",
    b'{"a": tru',
    b"  \n",
    b'{"location":"San Francisco","units":"c"}',
]

WIRE_SEEDS = [
    (0, b'{"type":"text","text":"hi"}'),
    (
        0,
        b'{"type":"tool_use","id":"call_1","name":"f","input":{"a":1},"provider_state":"sig","provider_state_format":"gemini"}',
    ),
    (0, b'{"Type":"ToolUse","ID":"c","Name":"n","Input":null,"Kind":"custom_tool_call"}'),
    (0, b'{"type":"thinking","thinking":"t","signature":"s","signature_format":"anthropic"}'),
    (
        1,
        b'[{"type":"image","media_type":"image/png","data":"AA=="},{"type":"document","url":"u","title":"t"},{"type":"audio","transcript":"x"}]',
    ),
    (1, b'[{"type":"tool_result","tool_use_id":"c","content":"done","is_error":true}]'),
    (2, b'{"role":"assistant","content":[{"type":"refusal","text":"no"}]}'),
    (
        2,
        b'{"role":"tool","tool_use_id":"c","content":[{"type":"text","text":"r"}],"is_error":false}',
    ),
    (
        2,
        b'{"role":"user","blocks":[{"type":"tool_result","tool_use_id":"s","kind":"web_search_tool_result","provider_state":{"x":[1]},"provider_state_format":"anthropic","content":[]}]}',
    ),
]

SCHEMA_SEEDS = [
    b'{"type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"],"additionalProperties":false}\xff{"city":"Paris"}',
    b'{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":{"type":"integer","maximum":3},"uniqueItems":true}\xff[1,2,2]',
    b'{"$defs":{"n":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/n"}]}},"$ref":"#/$defs/n"}\xffnull',
    b'{"type":"string","pattern":"^[a-z]+$","format":"email"}\xff"a@b.c"',
    b'{"oneOf":[{"const":1},{"enum":[1,2]}],"not":{"multipleOf":2}}\xff1',
    b'{"$ref":"https://example.com/s.json"}\xff{}',
]

REGEX_SEEDS = [
    rb"SELECT \* FROM \w+( WHERE .*)?" + b"\xff" + b"SELECT * FROM users",
    rb"a|b" + b"\xff" + b"ab",
    rb"[0-9]{1,3}(\.[0-9]{1,3}){3}" + b"\xff" + b"10.0.0.1",
    rb"(?i)hello\s+world" + b"\xff" + b"HELLO  world",
]


def write(target: str, items: list[bytes]) -> None:
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        name = hashlib.sha1(item).hexdigest()[:16]
        (folder / name).write_bytes(item)


def differential_seeds() -> list[bytes]:
    """guard_differential's seeds: the differential suite's crafted OpenAI chat and
    Anthropic responses (tests/differential_cases.py), byte 0 the dialect (0: chat,
    1: Anthropic), the rest the body as served."""
    import sys

    sys.path.insert(0, str(FUZZ.parent / "tests"))
    from differential_cases import CASES

    out = []
    for case in CASES:
        if case.dialect in ("chat", "anthropic"):
            data = bytes([0 if case.dialect == "chat" else 1]) + case.body
            if len(data) <= 4096:
                out.append(data)
    return out


# Seed folders written by hand, kept when the others are written anew.
KEPT = {"guard"}


def main() -> None:
    if SEEDS.exists():
        for folder in SEEDS.iterdir():
            if folder.name not in KEPT:
                shutil.rmtree(folder)
    streams = recordings()
    for dialect, items in hand_made().items():
        streams[dialect] += items
    all_streams: list[bytes] = []
    for dialect in DIALECTS:
        seeds: list[bytes] = []
        for data in streams[dialect]:
            bodies: list[bytes | None]
            if dialect in ("bedrock", "bedrock_invoke") and data[:1] == b"\x00":
                bodies = [cut_frames(data)]
            else:
                sep = b"\n\n" if data[:1] in (b"e", b"d", b":") else b"\n"
                bodies = [cut_text(data, sep), tail_text(data, sep)]
            for body in filter(None, bodies):
                seeds += [RAW + body, RAW_SMALL + body]
                all_streams.append(body)
        seeds += [h + bytes(range(i, i + 40)) for i, h in enumerate(STRUCTURED)]
        write(f"assembler_{dialect}", seeds)
    write(
        "assembler_auto",
        [RAW + s for s in all_streams]
        + [h + bytes([i]) + bytes(range(60)) for i, h in enumerate(STRUCTURED)],
    )
    sse_streams = [s for s in all_streams if s[:1] in (b"e", b"d", b":")]
    jsonl_streams = [s for s in all_streams if s[:1] in (b"{", b"[")]
    frames = [s for s in all_streams if s[:1] == b"\x00"]
    write(
        "framing_sse",
        [RAW + s for s in sse_streams]
        + [RAW_SMALL + s for s in sse_streams[:3]]
        + [
            RAW + b'\xef\xbb\xbfid: 1\r\nevent: e\rdata: a\r\n\r\n: c\ndata\ndata:\n\ndata: {"x":1}'
        ],
    )
    write(
        "framing_jsonl",
        [RAW + s for s in jsonl_streams] + [RAW + b'\xef\xbb\xbf{"a":1}\r\n \t\r\n[2]'],
    )
    write(
        "framing_eventstream", [RAW + s for s in frames] + [bytes([1, 3, 9, 0]) + bytes(range(80))]
    )
    write(
        "partial_vs_strict",
        [RAW + s for s in JSON_SEEDS]
        + [bytes([0x01, 0x07, 0x03, 0x00]) + s for s in JSON_SEEDS[:3]],
    )
    write(
        "wire_roundtrip",
        [bytes([0, f, 0, 0]) + s for f, s in WIRE_SEEDS] + [bytes([1, 0, 0, 0]) + bytes(range(64))],
    )
    write(
        "schema_compile",
        [RAW + s for s in SCHEMA_SEEDS] + [bytes([1, 0, 0, 0]) + s for s in REGEX_SEEDS],
    )
    write("guard_differential", differential_seeds())
    for target in sorted(p.name for p in SEEDS.iterdir()):
        files = list((SEEDS / target).iterdir())
        print(f"{target}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
