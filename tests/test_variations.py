"""A legitimate variation of a recorded stream never changes what it assembles into.

Every recording in tests/fixtures is decoded into its events once, then written
out again with one variation at a time, each a form the transport or JSON
allows and real servers, proxies and SDKs produce:

- inside events: JSON key order reversed, insignificant whitespace, non-ASCII
  as ``\\uXXXX`` escapes, an unknown field added to every object (except the
  objects that are a call's own arguments, which have no unknown fields);
- between events: blank lines, keep-alive pings (Anthropic's ``ping`` event),
  a usage-only trailer repeated (OpenAI chat);
- SSE framing: comments, ``id:`` and ``retry:`` fields, CRLF and lone-CR line
  ends, a UTF-8 byte order mark, one event's data over several ``data:`` lines;
- transport: JSON lines written as SSE, SSE as JSON lines, and AWS
  event-stream frames re-encoded around the varied payloads.

The messages (text, reasoning, calls with their parsed arguments and provider
state, finish, usage, completeness, problems, skipped event types) must equal
those of the untouched recording fed as it was recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from readers import REAL as REAL_FIXTURES
from readers import cassette_bodies, eventstream_message
from toolstitch import AssembledMessage, Assembler, ToolstitchError

# One recorded body: its transport, and its events as (SSE event name or None, JSON).
Event = tuple[str | None, Any]


@dataclasses.dataclass(frozen=True)
class Body:
    name: str
    transport: str  # "sse", "jsonl" or "eventstream"
    raw: bytes
    events: list[Event]


def _sse_events(data: bytes) -> list[Event]:
    """The events of an SSE body (the recordings use plain `event:` / `data:` lines)."""
    events: list[Event] = []
    text = data.decode("utf-8").replace("\r\n", "\n")
    for block in re.split(r"\n\n+", text):
        name: str | None = None
        lines: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
        if not lines:
            continue
        payload = "\n".join(lines)
        events.append((name, payload if payload == "[DONE]" else json.loads(payload)))
    return events


def _jsonl_events(data: bytes) -> list[Event]:
    return [(None, json.loads(line)) for line in data.decode().splitlines() if line.strip()]


def _eventstream_events(data: bytes) -> list[Event]:
    events: list[Event] = []
    at = 0
    while at < len(data):
        total, headers_len = struct.unpack_from(">II", data, at)
        headers = data[at + 12 : at + 12 + headers_len]
        payload = data[at + 12 + headers_len : at + total - 4]
        fields: dict[str, str] = {}
        h = 0
        while h < len(headers):
            n = headers[h]
            key = headers[h + 1 : h + 1 + n].decode()
            h += 1 + n
            assert headers[h] == 7, "the recordings carry string headers only"
            (size,) = struct.unpack_from(">H", headers, h + 1)
            fields[key] = headers[h + 3 : h + 3 + size].decode()
            h += 3 + size
        assert fields.get(":message-type") == "event"
        events.append((fields[":event-type"], json.loads(payload)))
        at += total
    return events


def _bodies() -> Iterator[Body]:
    for path in sorted(REAL_FIXTURES.rglob("*")):
        if not path.is_file() or "licenses" in path.parts or path.suffix in {".md", ".json"}:
            continue
        name = str(path.relative_to(REAL_FIXTURES))
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if path.name.endswith(".vcr.yaml"):
            for i, body in enumerate(cassette_bodies(path), 1):
                if body[:4] == b"\x00\x00\x00" or body[:1] == b"\x00":
                    yield Body(f"{name}#{i}", "eventstream", body, _eventstream_events(body))
                else:
                    yield Body(f"{name}#{i}", "sse", body, _sse_events(body))
        elif path.suffix == ".sse":
            yield Body(name, "sse", data, _sse_events(data))
        else:
            yield Body(name, "jsonl", data, _jsonl_events(data))


BODIES = list(_bodies())

# ------------------------------------------------------------------ variations

UNKNOWN = "x_toolstitch_unknown"
# Objects under these keys are a call's own arguments (or its input): every
# member there is meaningful, so no unknown field is added inside them.
ARGUMENT_KEYS = {"args", "arguments", "input", "parameters"}


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


def _with_unknown(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: v if k in ARGUMENT_KEYS else _with_unknown(v) for k, v in value.items()}
        out[UNKNOWN] = {"note": "a field this version does not know", "n": [1, 2]}
        return out
    if isinstance(value, list):
        return [_with_unknown(v) for v in value]
    return value


Dump = Callable[[Any], str]


def _compact(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _spaced(v: Any) -> str:
    return (
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(" ,  ", " : "))
    )


def _ascii(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=True)


def _is_anthropic(body: Body) -> bool:
    return any(isinstance(e, dict) and e.get("type") == "message_start" for _, e in body.events)


def _with_pings(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    for event in events:
        out.append(event)
        out.append(("ping", {"type": "ping"}))
    return out


def _usage_trailer_twice(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    for name, e in events:
        out.append((name, e))
        if isinstance(e, dict) and e.get("usage") and e.get("choices") == []:
            out.append((name, e))
    return out


def _structural_comma(text: str) -> int | None:
    """The offset of the first comma of ``text`` outside a JSON string."""
    in_string = escaped = False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == ",":
            return i
    return None


@dataclasses.dataclass(frozen=True)
class Sse:
    """How events are written as SSE."""

    dump: Dump = _compact
    eol: str = "\n"
    bom: bool = False
    comments: bool = False
    fields: bool = False
    blank_lines: int = 1
    split_data: bool = False

    def write(self, events: list[Event]) -> bytes:
        out = ["\ufeff"] if self.bom else []
        nl = self.eol
        for i, (name, e) in enumerate(events):
            if self.comments:
                out.append(f": keep-alive {i}{nl}")
            if self.fields:
                out.append(f"id: {i}{nl}retry: 3000{nl}")
            if name is not None:
                out.append(f"event: {name}{nl}")
            text = self.dump(e)
            cut = _structural_comma(text) if self.split_data else None
            if cut is not None:
                out.append(f"data: {text[: cut + 1]}{nl}data: {text[cut + 1 :]}{nl}")
            else:
                out.append(f"data: {text}{nl}")
            if self.comments:
                out.append(f":{nl}")
            out.append(nl * self.blank_lines)
        return "".join(out).encode()


def _jsonl(
    events: list[Event], dump: Dump = _compact, eol: str = "\n", blank: bool = False
) -> bytes:
    lines = [dump(e) for _, e in events if e != "[DONE]"]
    sep = eol + eol if blank else eol
    return (sep.join(lines) + eol).encode()


def _eventstream(events: list[Event], dump: Dump = _compact) -> bytes:
    headers = {":content-type": "application/json", ":message-type": "event"}
    return b"".join(
        eventstream_message({":event-type": name or "", **headers}, dump(e).encode())
        for name, e in events
    )


def _payload_variants() -> dict[str, Callable[[list[Event]], list[Event]]]:
    return {
        "key order": lambda evs: [(n, _reversed_keys(e)) for n, e in evs],
        "unknown fields": lambda evs: [(n, _with_unknown(e)) for n, e in evs],
    }


DUMPS: dict[str, Dump] = {"whitespace": _spaced, "ascii escapes": _ascii}


def variants(body: Body) -> Iterator[tuple[str, bytes]]:
    """Every variation that applies to ``body``, as the bytes to feed."""
    events = body.events
    payloads = _payload_variants()
    if body.transport == "eventstream":
        for label, change in payloads.items():
            yield label, _eventstream(change(events))
        for label, dump in DUMPS.items():
            yield label, _eventstream(events, dump)
        return
    if body.transport == "jsonl":
        for label, change in payloads.items():
            yield label, _jsonl(change(events))
        for label, dump in DUMPS.items():
            yield label, _jsonl(events, dump)
        yield "CRLF", _jsonl(events, eol="\r\n")
        yield "blank lines", _jsonl(events, blank=True)
        yield "BOM", b"\xef\xbb\xbf" + _jsonl(events)
        yield "as SSE", Sse().write(events)
        yield "as SSE with comments and fields", Sse(comments=True, fields=True).write(events)
    else:
        for label, change in payloads.items():
            yield label, Sse().write(change(events))
        for label, dump in DUMPS.items():
            yield label, Sse(dump=dump).write(events)
        yield "comments", Sse(comments=True).write(events)
        yield "id and retry fields", Sse(fields=True).write(events)
        yield "CRLF", Sse(eol="\r\n").write(events)
        yield "lone CR", Sse(eol="\r").write(events)
        yield "BOM", Sse(bom=True).write(events)
        yield "blank lines", Sse(blank_lines=3).write(events)
        yield "data over several lines", Sse(split_data=True).write(events)
        if all(name is None for name, _ in events):
            yield "as JSON lines", _jsonl(events)
        every = Sse(_ascii, "\r\n", True, True, True, 2, True)
        yield "all at once", every.write([(n, _with_unknown(_reversed_keys(e))) for n, e in events])
    if _is_anthropic(body):
        yield "pings", Sse().write(_with_pings(events))
    trailer = _usage_trailer_twice(events)
    if trailer != events:
        yield "usage trailer twice", Sse().write(trailer)


# ------------------------------------------------------------------ comparison


def _norm(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "class": type(value).__name__,
            **{f.name: _norm(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if k != UNKNOWN}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, str) and value[:1] in "{[":
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return json.dumps(_norm(parsed), sort_keys=True)
    return value


def summary(messages: list[AssembledMessage]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        out.append(
            {
                "choice": m.choice,
                "blocks": _norm(m.blocks),
                "tool_uses": _norm(m.tool_uses),
                "text": m.text,
                "finish_reason": m.finish_reason,
                "finish": m.finish,
                "usage": _norm(m.usage),
                "tokens": _norm(m.tokens),
                "complete": m.complete,
                # Ordinals move when events are added (pings): compared without them.
                "problems": [re.sub(r"\d+", "N", p) for p in m.problems],
                "minted_ids": sorted(m.minted_ids),
                "server_side_ids": sorted(m.server_side_ids),
                "skipped": [s.event_type for s in m.skipped],
            }
        )
    return out


def assemble(data: bytes) -> list[AssembledMessage]:
    asm = Assembler(live=False)
    # Two reads cut in the middle, so that framing state crosses a read. An
    # error raised by a read (a recording of two responses breaks the protocol
    # at the second) is also a problem on the messages, which are compared.
    half = len(data) // 2
    for piece in (data[:half], data[half:]):
        with contextlib.suppress(ToolstitchError):
            asm.feed_bytes(piece)
    with contextlib.suppress(ToolstitchError):
        asm.close()
    return asm.messages()


CASES = [(body, label, data) for body in BODIES for label, data in variants(body)]


def test_every_recording_is_read_and_varied() -> None:
    names = {b.name.split("#")[0] for b in BODIES}
    files = [
        p
        for p in REAL_FIXTURES.rglob("*")
        if p.is_file() and "licenses" not in p.parts and p.suffix not in {".md", ".json"}
    ]
    assert len(names) == len(files) >= 20
    assert all(body.events for body in BODIES)
    labels = {label for _, label, _ in CASES}
    assert {"key order", "unknown fields", "comments", "lone CR", "BOM", "pings"} <= labels


@pytest.mark.parametrize(
    ("body", "label", "data"),
    CASES,
    ids=[f"{body.name}:{label}" for body, label, _ in CASES],
)
def test_a_legitimate_variation_gives_the_same_messages(
    body: Body, label: str, data: bytes
) -> None:
    expected = summary(assemble(body.raw))
    got = summary(assemble(data))
    assert got == expected
