"""What the Python tests share for reading and writing captures: the real recordings'
folder, JSON-lines files, VCR cassettes, SSE events and AWS event-stream frames. One
copy here; each test file imports what it needs."""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
"""The real recorded provider streams (provenance in tests/fixtures/PROVENANCE.md)."""


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The events of a JSON-lines recording (gzip-compressed when it ends in ``.gz``)."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def cassette_bodies(path: Path) -> list[bytes]:
    """The response bodies of a VCR cassette: ``!!binary`` base64 or ``|+`` literal text.

    A tiny reader for the two shapes these cassettes use, so PyYAML is not needed.
    """
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


def sse_events(
    events: Iterable[tuple[str | None, dict[str, Any]]],
    *,
    crlf: bool = False,
    ensure_ascii: bool = True,
) -> bytes:
    """SSE bytes: each event's ``data:`` line, after its ``event:`` line when named."""
    nl = "\r\n" if crlf else "\n"
    out = []
    for name, data in events:
        head = f"event: {name}{nl}" if name else ""
        out.append(f"{head}data: {json.dumps(data, ensure_ascii=ensure_ascii)}{nl}{nl}")
    return "".join(out).encode()


def eventstream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream frame with string headers: prelude, its CRC32, headers,
    payload, CRC32 of the whole."""
    encoded = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v.encode())) + v.encode()
        for k, v in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def eventstream_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event-stream frame of a JSON event (Bedrock's ``:event-type`` naming it)."""
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return eventstream_message(headers, json.dumps(payload).encode())
