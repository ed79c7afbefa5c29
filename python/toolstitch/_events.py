"""``toolstitch replay --events``: every event of a stream, and what the Assembler did with it.

For each stream (a file, each interaction of a cassette, standard input), one line per
event: its number (the 1-based ordinal the core gives it, the one problems, notes and
skipped events name), the offset of its first byte in the (decompressed) stream, the
dialect, its type, and what it did: ``applied``, ``skipped`` (a type this version does
not read: forward compatibility, quirk Q29) or ``refused`` with the problem it left, and
the notes a narrow rule left on it. Then each choice's outcome and the problems tied to
no event (a call that never got a name, a stream cut short).

The events are framed by the core (``_toolstitch._frames``, the framing a replay uses)
and assembled by the same ``Assembler`` a replay uses, in one piece; the two are joined
by the event's number, so what is shown is what a replay did.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import IO, Any

from toolstitch import _toolstitch
from toolstitch._sources import _CASSETTE, _GZIP_MAGIC, _MAX_GZIP_LAYERS, PassedOver, expand
from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage, Provider
from toolstitch.replay import (
    _gunzip,
    _read_reason,
    _streamed_body,
    _yaml_reason,
)

__all__ = ["event_lines", "print_events"]

# A stream is read whole for --events: at most what an Assembler takes by default.
_MAX_BYTES: int = _toolstitch._ASSEMBLER_DEFAULTS["max_total_bytes"]


def print_events(paths: Sequence[str], provider: Provider, out: IO[str], err: IO[str]) -> int:
    """Prints the events of every stream the paths name; returns the exit status (0
    when every stream completed, 1 otherwise)."""
    status = 0
    for name, data, error in _streams(paths, err):
        if error is not None:
            print(f"toolstitch: {name}: {error}", file=err)
            print(f"{name}: {error}", file=out)
            status = 1
            continue
        lines, complete = event_lines(data, provider, name)
        for line in lines:
            print(line, file=out)
        print(file=out)
        if not complete:
            status = 1
    return status


def event_lines(data: bytes, provider: Provider, name: str) -> tuple[list[str], bool]:
    """The lines ``--events`` prints for one stream, and whether it completed."""
    limits = _toolstitch._ASSEMBLER_DEFAULTS
    frames, transport, framing_error = _toolstitch._frames(
        data,
        max_event_bytes=limits["max_event_bytes"],
        max_line_bytes=limits["max_line_bytes"],
    )
    asm = _toolstitch.Assembler(provider, live=False)
    with contextlib.suppress(ToolstitchError):
        asm.feed_bytes(data)
    with contextlib.suppress(ToolstitchError):
        asm.close()
    messages = asm.messages()
    dialect = asm.dialect or "?"
    refused: dict[int, list[str]] = {}
    unplaced: list[str] = []
    skipped: dict[int, str] = {}
    notes: dict[int, list[str]] = {}
    for message in messages:
        for problem in message.problems:
            where = refused.setdefault(problem.event, []) if problem.event else unplaced
            if problem.message not in where:
                where.append(problem.message)
        for event in message.skipped:
            skipped[event.ordinal] = event.event_type
        for note in message.notes:
            said = f"note {note.kind}: {note.message}"
            if said not in notes.setdefault(note.event, []):
                notes[note.event].append(said)
    complete = bool(messages) and all(m.complete and not m.problems for m in messages)
    head = (
        f"{name}: {dialect} dialect over {transport or 'no known transport'}, "
        f"{len(frames)} event{'s' * (len(frames) != 1)}; "
        f"{'complete' if complete else 'not complete'}"
    )
    lines = [head, f"{'event':>7}  {'offset':>8}  {'dialect':<20}  {'type':<32}  what it did"]
    for number, (offset, event_name, text) in enumerate(frames, 1):
        if number in refused:
            did = "refused: " + "; ".join(_one_line(p) for p in refused[number])
        elif number in skipped:
            did = f"skipped: {skipped[number]!r} is a type or part this version does not read"
        else:
            did = "applied"
        kind = _event_type(event_name, text)
        lines.append(f"{number:>7}  {offset:>8}  {dialect:<20}  {kind:<32}  {did}")
        lines.extend(f"{'':>7}  {'':>8}  {'':<20}  {'':<32}  {n}" for n in notes.get(number, ()))
    # Problems numbered past the frames (an event after close, say) are still said.
    for number in sorted(n for n in refused if n > len(frames)):
        unplaced.extend(f"event {number}: {p}" for p in refused[number])
    if framing_error is not None:
        lines.append(f"  framing stopped: {_one_line(framing_error)}")
    for message in messages:
        lines.append(f"  choice {message.choice}: {_outcome(message)}")
    lines.extend(f"  problem: {_one_line(p)}" for p in unplaced)
    return lines, complete


def _outcome(message: AssembledMessage) -> str:
    calls = len(message.tool_uses)
    said = f"{calls} call{'s' * (calls != 1)}, finish {message.finish!r}"
    if message.complete and not message.problems:
        return f"complete, {said}"
    if message.problems:
        return f"not complete ({len(message.problems)} problem(s)), {said}"
    if message.finish is None:
        return f"not complete: the stream ended before the provider's final event, {said}"
    return f"not complete: the message ended with {message.finish!r}, {said}"


def _event_type(event_name: str | None, text: str) -> str:
    """An event's type as shown: its SSE / event-stream name, else the JSON's own."""
    if event_name:
        return _cut(event_name)
    stripped = text.strip()
    if stripped == "[DONE]":
        return "[DONE]"
    if not stripped:
        return "(empty)"
    try:
        value = json.loads(stripped)
    except ValueError:
        return "(not JSON)"
    if isinstance(value, dict):
        for key in ("type", "event", "object", "event_type"):
            if isinstance(value.get(key), str):
                return _cut(value[key])
        return _cut("{" + ", ".join(list(value)[:3]) + "}")
    return f"({type(value).__name__})"


def _cut(text: str, limit: int = 32) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ reading


def _streams(paths: Sequence[str], err: IO[str]) -> Iterator[tuple[str, bytes, str | None]]:
    """Every stream the paths name: its name, its bytes, or why it cannot be read."""
    for path in paths:
        if path == "-":
            stdin = sys.stdin.buffer if sys.stdin is not None else io.BytesIO()
            yield from _capture("<stdin>", stdin)
            continue
        passed_over: list[PassedOver] = []
        sources = expand([path], passed_over)
        for skipped in passed_over:
            print(f"toolstitch: {skipped.name}: passed over: {skipped.reason}", file=err)
        for source in sources:
            if source.error is not None:
                yield source.name, b"", source.error
                continue
            if "://" in source.name:
                from toolstitch._sources import _open_url

                try:
                    f = _open_url(source.name)
                except (ImportError, OSError) as e:
                    yield source.name, b"", f"cannot read: {e}"
                    continue
                with f:
                    yield from _capture(source.name, f)
                continue
            try:
                f = open(source.name, "rb")  # noqa: SIM115 (closed below)
            except OSError as e:
                yield source.name, b"", f"cannot read: {e.strerror or e}"
                continue
            with f:
                yield from _capture(source.name, f)


def _capture(name: str, f: IO[bytes]) -> Iterator[tuple[str, bytes, str | None]]:
    """The streams of one capture file: gzip inflated, a cassette's interactions."""
    try:
        data = _bounded(f)
        for _ in range(_MAX_GZIP_LAYERS + 1):
            if not data.startswith(_GZIP_MAGIC):
                break
            data = _bounded(gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb"))
        else:
            raise OSError(f"more than {_MAX_GZIP_LAYERS} layers of gzip; refusing to go deeper")
    except (OSError, EOFError, zlib.error) as e:
        yield name, b"", _read_reason(e)
        return
    if not _CASSETTE.match(data):
        yield name, data, None
        return
    yield from _cassette(name, data)


def _bounded(f: IO[bytes] | gzip.GzipFile) -> bytes:
    data = f.read(_MAX_BYTES + 1)
    if len(data) > _MAX_BYTES:
        raise OSError(f"more than {_MAX_BYTES} bytes: --events reads a stream whole, up to that")
    return data


def _cassette(name: str, document: bytes) -> Iterator[tuple[str, bytes, str | None]]:
    try:
        import yaml
    except ImportError:
        yield name, b"", "this is a VCR cassette, and reading one needs PyYAML"
        return
    try:
        cassette: Any = yaml.load(document, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        yield name, b"", f"not a readable VCR cassette: {_yaml_reason(e)}"
        return
    interactions = None
    if isinstance(cassette, dict):
        interactions = cassette.get("interactions", cassette.get("http_interactions"))
    if not isinstance(interactions, list):
        yield name, b"", "not a VCR cassette: 'interactions' is missing or not a list"
        return
    for number, interaction in enumerate(interactions, 1):
        stream = f"{name}#{number}"
        try:
            body = _streamed_body(interaction)
            if body is not None:
                yield stream, _gunzip(body), None
        except (ValueError, OSError, EOFError, zlib.error) as e:
            yield stream, b"", str(e)
