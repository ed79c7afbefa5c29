"""Replay captured provider streams into plain call records.

``replay_bytes(data)`` and ``replay_path(path)`` read one captured response (or a VCR
cassette holding several; ``replay_path`` and ``replay_paths`` also a directory, a glob, or
several paths, under the rules of ``toolstitch replay``) and return one record per
tool call: a plain ``dict`` with
exactly the keys of ``RECORD_KEYS``, picklable, JSON-ready, the same on every machine.
A stream with no call, or one that could not be replayed, still gives one record (its
``id``, ``name``, ``kind`` and ``arguments`` are ``None``), so every stream shows up.
The schema and its stability promise are in ``docs/replay.md``.

The format is told from the content, never from the file name alone:

- gzip (by its magic bytes) is decompressed first, whatever the name;
- a VCR cassette (YAML whose first key is ``interactions`` or ``http_interactions``)
  gives one stream per interaction whose response body is streamed, or is a whole
  non-streamed response of a provider; reading one needs PyYAML (imported only then);
- anything else goes to the ``Assembler`` as raw bytes, which tells SSE, JSON lines,
  AWS event-stream and whole (pretty-printed) response bodies apart (and the provider,
  with ``provider="auto"``).

This module needs nothing beyond the core package (PyYAML only for cassettes).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import gzip
import io
import os
import stat
import typing
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any, NamedTuple, TypedDict, cast

from toolstitch import _toolstitch
from toolstitch._sources import (
    _CASSETTE,
    _GZIP_MAGIC,
    _MAX_GZIP_LAYERS,
    STREAM_SUFFIXES,
    Source,
    _open_url,
    expand,
    is_stream_file,
    is_url,
)
from toolstitch.blocks import ThinkingBlock, ToolUseBlock
from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage, Note, Provider
from toolstitch.streams import Assembler
from toolstitch.tools import Toolset

__all__ = [
    "RECORD_KEYS",
    "RECORD_SCHEMA",
    "STREAM_SUFFIXES",
    "TEXT_SCHEMA",
    "VALIDATION_SCHEMA",
    "CallRecord",
    "FieldType",
    "PassedOverWarning",
    "Replayed",
    "TextFields",
    "ValidationFields",
    "as_toolset",
    "check_record",
    "is_stream_file",
    "replay_bytes",
    "replay_file",
    "replay_path",
    "replay_paths",
    "replay_source",
]


class CallRecord(TypedDict):
    """One tool call of one replayed stream (or the one record of a stream without calls).

    ``text`` and ``reasoning`` (``str``), and ``valid`` (``bool | None``) and
    ``validation_error`` (``str | None``), follow only when asked for.
    """

    stream: str
    choice: int
    id: str | None
    name: str | None
    kind: str | None
    arguments: str | None
    complete: bool
    finish: str | None
    server_side: bool
    error: str | None
    notes: str | None
    arguments_json: bool | None


class TextFields(TypedDict):
    """What ``text=True`` adds to every record: its choice's text and reasoning."""

    text: str
    reasoning: str


class ValidationFields(TypedDict):
    """What a toolset adds to every record (see ``check_record``)."""

    valid: bool | None
    validation_error: str | None


RECORD_KEYS = tuple(CallRecord.__annotations__)
"""The keys of every record, in this order (``CallRecord``'s, the one definition)."""


class FieldType(NamedTuple):
    """A record field's type: ``str``, ``int`` or ``bool``, and whether it may be ``None``."""

    type: type
    nullable: bool


def _field_types(record: type) -> dict[str, FieldType]:
    out: dict[str, FieldType] = {}
    for name, hint in typing.get_type_hints(record).items():
        kinds = typing.get_args(hint) or (hint,)
        (base,) = [k for k in kinds if k is not type(None)]
        out[name] = FieldType(base, type(None) in kinds)
    return out


RECORD_SCHEMA: dict[str, FieldType] = _field_types(CallRecord)
"""Every record key and its type, in ``RECORD_KEYS`` order: read from ``CallRecord``,
the one definition (the Dask columns' dtypes come from it)."""

TEXT_SCHEMA: dict[str, FieldType] = _field_types(TextFields)
"""The keys and types ``text=True`` adds (``TextFields``)."""

VALIDATION_SCHEMA: dict[str, FieldType] = _field_types(ValidationFields)
"""The keys and types a toolset adds (``ValidationFields``)."""


# Bytes fed to the Assembler at a time: large enough that the per-call cost vanishes,
# small enough that a big stream never needs a second copy of itself in memory. It is
# also what a cassette is told by (its first key within the first ``_CHUNK`` bytes).
_CHUNK = 1 << 20
# A local file up to this size is read whole, in one request, and a gzip layer whose
# content is up to this size is inflated in one call: the per-file cost of a stream of
# buffered reads and of ``GzipFile`` is gone for the common capture, and memory stays
# bounded (a gzip bomb stops at this many bytes, then goes the streaming way). Larger
# files, and gzip that is not one member inflating within it, are streamed ``_CHUNK``
# bytes at a time.
_WHOLE = 8 << 20
# The bytes a cassette can start with (``_CASSETTE``'s first): anything else is told
# without the pattern (a stream starts ``data:``, ``event:``, ``{``, a frame's length).
_CASSETTE_STARTS = frozenset(bytes([b]) for b in b"\xef \t#\r\n-hi")
# Response content types of a streamed body (compared on the part before any ``;``).
_STREAMED_TYPES = frozenset(
    {
        "text/event-stream",
        "application/vnd.amazon.eventstream",
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/jsonlines",
        "application/stream+json",
    }
)


def replay_bytes(
    data: bytes | bytearray | memoryview,
    provider: Provider = "auto",
    *,
    name: str = "<bytes>",
    text: bool = False,
    tools: Any = None,
) -> list[CallRecord]:
    """The call records of one capture held in memory (see the module docstring).

    ``name`` is the ``stream`` of its records (a cassette's interactions are
    ``name#1``, ``name#2``, ...). ``provider`` is ``"auto"`` or a dialect name; an
    unknown one raises ``UnknownProviderError``.

    Two options add keys after the ten of ``RECORD_KEYS``: ``text=True`` adds ``text``
    and ``reasoning`` (the text and the reasoning of the record's choice); ``tools`` (a
    ``Toolset``, or definitions in any form ``Toolset`` reads) adds ``valid`` and
    ``validation_error`` (see ``check_record``).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"replay_bytes takes bytes, not {type(data).__name__}")
    _check_provider(provider)
    toolset = as_toolset(tools)
    return _checked(_replay_content(bytes(data), provider, name, text), toolset)


class PassedOverWarning(UserWarning):
    """A directory walk or a glob of ``replay_paths`` / ``replay_path`` passed over entries
    that are not captures (named in the message, and in ``Replayed.passed_over``)."""


class Replayed(list[CallRecord]):
    """The records of ``replay_paths`` / ``replay_path``: a list, and ``passed_over``, what a
    directory walk or a glob met and did not read, as ``(name, reason)`` pairs."""

    passed_over: tuple[tuple[str, str], ...] = ()


def replay_paths(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    provider: Provider = "auto",
    *,
    text: bool = False,
    tools: Any = None,
) -> Replayed:
    """The call records of every capture the paths name, in order: files (read
    whatever their names), directories (walked recursively; a file is a capture when
    it is named like one or its content is one), globs and fsspec URLs, under the
    rules of ``toolstitch replay``. Nothing is skipped silently: a
    path that matches nothing is an error record, and what a walk passes over (a file
    that is no capture, a named pipe, a hidden file) is listed in ``passed_over`` and
    said once in a ``PassedOverWarning``. ``provider``, ``text`` and ``tools`` as for
    ``replay_bytes``."""
    _check_provider(provider)
    toolset = as_toolset(tools)
    names = (
        [os.fspath(paths)]
        if isinstance(paths, (str, os.PathLike))
        else [os.fspath(p) for p in paths]
    )
    skipped: list[Any] = []
    out = Replayed()
    for source in expand(names, skipped):
        out.extend(replay_source(source, provider, text=text, tools=toolset))
    out.passed_over = tuple((p.name, p.reason) for p in skipped)
    if skipped:
        shown = "; ".join(f"{p.name}: {p.reason}" for p in skipped[:3])
        more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        warnings.warn(
            f"passed over {len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} "
            f"that {'is' if len(skipped) == 1 else 'are'} not captures: {shown}{more}",
            PassedOverWarning,
            stacklevel=2,
        )
    return out


def replay_path(
    path: str | os.PathLike[str],
    provider: Provider = "auto",
    *,
    text: bool = False,
    tools: Any = None,
) -> list[CallRecord]:
    """The call records of one capture file; ``stream`` is ``str(path)``.

    A directory or a glob is read as ``replay_paths`` reads it (every capture under it, in
    sorted order, and a ``Replayed`` list naming what was passed over). A file that
    cannot be opened or read gives one record whose ``error`` says why; only an
    unknown ``provider`` (or bad ``tools``) raises. ``text`` and ``tools`` as for
    ``replay_bytes``.
    """
    name = os.fspath(path)
    glob = not os.path.lexists(name) and any(c in name for c in "*?[")
    if glob or is_url(name) or os.path.isdir(name):
        return replay_paths(name, provider, text=text, tools=tools)
    return _replay_path(name, provider, text, tools, None)


def replay_source(
    source: Source, provider: Provider = "auto", *, text: bool = False, tools: Toolset | None = None
) -> list[CallRecord]:
    """The records of one source: its error record, or its replayed streams."""
    if source.error is not None:
        return _checked([_failure_with_text(source.name, source.error, text)], tools)
    if not is_url(source.name):
        return _replay_path(source.name, provider, text, tools, source.size)
    try:
        f = _open_url(source.name)
    except ImportError as e:
        return _checked([_failure_with_text(source.name, str(e), text)], tools)
    except OSError as e:
        return _checked([_failure_with_text(source.name, f"cannot read: {e}", text)], tools)
    with f:
        return replay_file(f, provider, name=source.name, text=text, tools=tools)


def _replay_path(
    name: str, provider: Provider, text: bool, tools: Any, size: int | None
) -> list[CallRecord]:
    """``replay_path``, told the file's size when it was listed (``None``: unknown)."""
    _check_provider(provider)  # an unknown provider is the caller's error
    toolset = as_toolset(tools)
    return _checked(_replay_named(name, provider, text, size), toolset)


def replay_file(
    fileobj: IO[bytes],
    provider: Provider = "auto",
    *,
    name: str,
    text: bool = False,
    tools: Any = None,
) -> list[CallRecord]:
    """The call records of a capture read from a binary file object (a local file, an
    ``fsspec`` file, standard input). Read errors become error records. ``text`` and
    ``tools`` as for ``replay_bytes``."""
    _check_provider(provider)
    toolset = as_toolset(tools)
    return _checked(_replay_fileobj(fileobj, provider, name, text), toolset)


# The providers an Assembler was built with once: checking a name again would build an
# assembler per file for nothing.
_KNOWN_PROVIDERS: set[str] = set()


def _check_provider(provider: Provider) -> None:
    """Raises ``UnknownProviderError`` for a provider no ``Assembler`` takes."""
    if isinstance(provider, str) and provider in _KNOWN_PROVIDERS:
        return
    Assembler(provider, live=False)
    if isinstance(provider, str):
        _KNOWN_PROVIDERS.add(provider)


def _replay_named(
    name: str, provider: Provider, text: bool, size: int | None = None
) -> list[CallRecord]:
    """The records of the local file ``name``: read whole when it holds at most
    ``_WHOLE`` bytes, else streamed (a big file, a fifo, a device). ``size`` is its
    size when it was listed, if known: the first read asks for one byte more (see
    ``_read_head``)."""
    try:
        fd = os.open(name, os.O_RDONLY)
    except OSError as e:
        return [_failure_with_text(name, _os_reason(e), text)]
    try:
        try:
            head, whole = _read_head(fd, size)
        except OSError as e:
            return [_failure_with_text(name, _os_reason(e), text)]
        if whole:
            return _replay_content(head, provider, name, text)
        # Streamed from where reading began: what was read, then the rest.
        rest = io.FileIO(fd, "r", closefd=False)
        with io.BufferedReader(_Prepended(head, rest)) as f:
            return _replay_fileobj(f, provider, name, text)
    finally:
        os.close(fd)


def _read_head(fd: int, size: int | None) -> tuple[bytes, bool]:
    """What an open file holds, read in one request, and ``True``, when it is a regular
    file of at most ``_WHOLE`` bytes; else what was read of it (maybe nothing) and
    ``False``.

    ``size`` is the file's size when it was listed (a directory walk asks every file's
    anyway); ``None`` asks the file here. The request is for one byte more than the
    size: getting fewer bytes than asked of a regular file is its end; getting all of
    them means it grew since, or is no regular file (a fifo or a device has no size),
    and the rest is streamed after what was read.
    """
    if size is None:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(info.st_mode):
            return b"", False
        size = info.st_size
    if size > _WHOLE:
        return b"", False
    data = os.read(fd, size + 1)
    if 0 < len(data) < size:
        # A short read (the file shrank, or a file system that reads in pieces): read
        # on to the end, never past the bound.
        parts = [data]
        got = len(data)
        while got <= size and (more := os.read(fd, size + 1 - got)):
            parts.append(more)
            got += len(more)
        data = b"".join(parts)
    return data, len(data) <= size


def _replay_fileobj(
    fileobj: IO[bytes], provider: Provider, name: str, text: bool
) -> list[CallRecord]:
    try:
        head, chunks = _decompressed(fileobj)
    except (OSError, EOFError, zlib.error) as e:
        return [_failure_with_text(name, _read_reason(e), text)]
    if _CASSETTE.match(head):
        try:
            document = head + b"".join(chunks)
        except (OSError, EOFError, zlib.error) as e:
            return [_failure_with_text(name, _read_reason(e), text)]
        return _replay_cassette(document, name, provider, text)
    return _replay_stream(_prepend(head, chunks), name, provider, text)


def _replay_content(data: bytes, provider: Provider, name: str, text: bool) -> list[CallRecord]:
    """The records of a capture held whole in memory: what ``_replay_fileobj`` gives
    for the same bytes, without a file object between (the same pieces fed, the same
    cassette test); gzip it cannot inflate in one call takes the streaming way."""
    content = _inflated(data) if data.startswith(_GZIP_MAGIC) else data
    if content is None:
        return _replay_fileobj(io.BytesIO(data), provider, name, text)
    if content[:1] in _CASSETTE_STARTS and _CASSETTE.match(content, 0, _CHUNK):
        return _replay_cassette(content, name, provider, text)
    if len(content) <= _CHUNK:
        return _replay_stream((content,) if content else (), name, provider, text)
    pieces = (content[at : at + _CHUNK] for at in range(0, len(content), _CHUNK))
    return _replay_stream(pieces, name, provider, text)


# ------------------------------------------------------------------ validation


def as_toolset(tools: Any) -> Toolset | None:
    """``tools`` as a ``Toolset``: ``None`` stays ``None``, a ``Toolset`` is kept, anything
    else is read by ``Toolset(tools)`` (``ToolDefinitionError`` when it cannot be)."""
    if tools is None or isinstance(tools, Toolset):
        return tools
    return Toolset(tools)


def check_record(record: Mapping[str, Any], toolset: Toolset) -> tuple[bool | None, str | None]:
    """``(valid, validation_error)`` for one record.

    ``valid`` is ``None`` when there is nothing for the client to check (a record
    without a call, or a call the provider ran itself), ``True`` when the call is safe to
    hand to its tool, and ``False`` otherwise, with the reason: the stream did not
    complete (its calls may be cut short and must not run), or the toolset refuses it
    (undeclared tool, a custom tool's input that does not match its grammar, input that
    is not one JSON value, arguments failing the schema; the message names every
    failing path).
    """
    if record["id"] is None or record["server_side"]:
        return None, None
    if not record["complete"]:
        return False, "not validated: the stream did not complete, so the call may be cut short"
    try:
        toolset.validate(
            ToolUseBlock(
                record["id"],
                record["name"] or "",
                record["arguments"] or "",
                kind=record["kind"] or "function",
            )
        )
    except ToolstitchError as e:
        return False, _one_line(str(e))
    return True, None


def _checked(records: list[CallRecord], toolset: Toolset | None) -> list[CallRecord]:
    if toolset is None:
        return records
    for record in records:
        valid, why = check_record(record, toolset)
        cast(dict[str, Any], record).update(ValidationFields(valid=valid, validation_error=why))
    return records


# ------------------------------------------------------------------ reading


def _decompressed(f: IO[bytes]) -> tuple[bytes, Iterator[bytes]]:
    """The first chunk of the (decompressed) content and an iterator over the rest."""
    source: IO[bytes] | gzip.GzipFile = f
    for _ in range(_MAX_GZIP_LAYERS + 1):
        head = source.read(_CHUNK)
        if not head.startswith(_GZIP_MAGIC):
            return head, _rest(source)
        source = gzip.GzipFile(fileobj=_Prepended(head, source), mode="rb")
    raise OSError(f"more than {_MAX_GZIP_LAYERS} layers of gzip; refusing to go deeper")


def _inflated(data: bytes) -> bytes | None:
    """``data`` with every gzip layer inflated, when each is one whole gzip member
    (nothing after it) whose content is at most ``_WHOLE`` bytes; else ``None``: a
    broken, cut, multi-member or padded layer, a bigger one, or too many layers are
    left to the streaming reader (``_decompressed``), which says what is wrong."""
    for _ in range(_MAX_GZIP_LAYERS):
        if not data.startswith(_GZIP_MAGIC):
            return data
        inflate = zlib.decompressobj(wbits=31)  # gzip's header and trailer, checked
        try:
            content = inflate.decompress(data, _WHOLE)
        except zlib.error:
            return None
        if not inflate.eof or inflate.unused_data:
            return None
        data = content
    return None if data.startswith(_GZIP_MAGIC) else data


def _rest(f: IO[bytes] | gzip.GzipFile) -> Iterator[bytes]:
    while chunk := f.read(_CHUNK):
        yield chunk


def _prepend(head: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if head:
        yield head
    yield from rest


class _Prepended(io.RawIOBase):
    """``head`` followed by the rest of ``f``: a readable file for ``GzipFile`` that
    needs no seeking, so standard input and pipes work."""

    def __init__(self, head: bytes, f: IO[bytes] | gzip.GzipFile) -> None:
        self._head = memoryview(head)
        self._f = f

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        target = memoryview(buffer).cast("B")
        if self._head.nbytes:
            n = min(self._head.nbytes, target.nbytes)
            target[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._f.read(target.nbytes)
        target[: len(data)] = data
        return len(data)


def _gunzip(data: bytes) -> bytes:
    """A cassette body decompressed when it is gzip (a recorded ``Content-Encoding``)."""
    for _ in range(_MAX_GZIP_LAYERS + 1):
        if not data.startswith(_GZIP_MAGIC):
            return data
        data = gzip.decompress(data)
    raise OSError(f"more than {_MAX_GZIP_LAYERS} layers of gzip; refusing to go deeper")


def _os_reason(e: OSError) -> str:
    return f"cannot read: {e.strerror or e}"


def _read_reason(e: BaseException) -> str:
    if isinstance(e, gzip.BadGzipFile) and str(e).startswith("Not a gzipped file"):
        # gzip is only ever opened on data that starts with its magic bytes: this is
        # what follows a whole member, which is neither another member nor padding.
        start = str(e)[len("Not a gzipped file") :].strip(" ()")
        return (
            "not valid gzip: the gzip data ends, and the bytes after it are neither "
            f"another gzip member nor zero padding (they start {start})"
        )
    if isinstance(e, (gzip.BadGzipFile, zlib.error)):
        return f"not valid gzip: {e}"
    if isinstance(e, EOFError):
        return f"gzip data cut short: {e}"
    if isinstance(e, OSError):
        return _os_reason(e)
    return f"cannot read: {e}"


# ------------------------------------------------------------------ assembling


def _replay_stream(
    chunks: Iterable[bytes], name: str, provider: Provider, text: bool
) -> list[CallRecord]:
    # The core's class itself, with the same defaults: ``Assembler`` passes every limit
    # by name, which costs a little in every file.
    asm = _toolstitch.Assembler(provider, live=False)
    asm._read_captures()  # a capture of N responses is N messages (Q62)
    error: str | None = None
    try:
        for chunk in chunks:
            asm.feed_bytes(chunk)
        asm.close()
    except ToolstitchError as e:
        error = _one_line(str(e))
    except (OSError, EOFError, zlib.error) as e:
        error = _read_reason(e)
    if error is not None and not asm.closed:
        # Finish what was assembled (open calls end, unnamed ones are reported); the
        # stream is already known to be broken, so a second error adds nothing.
        with contextlib.suppress(ToolstitchError):
            asm.close()
    responses = asm._responses()
    if len(responses) == 1:
        return _records(responses[0], name, error, text)
    # Each response judged alone, named `name#1`, `name#2`, ...; an error stopped the last.
    records: list[CallRecord] = []
    for n, messages in enumerate(responses, 1):
        last = n == len(responses)
        records += _records(messages, f"{name}#{n}", error if last else None, text)
    return records


def _records(
    messages: Iterable[AssembledMessage], name: str, error: str | None, text: bool
) -> list[CallRecord]:
    # Every record is built here, in place (what ``_record`` builds): this runs for
    # every call of every file, and a function call per record shows in a replay.
    records: list[CallRecord] = []
    for message in messages:
        why = error
        if why is None and message.problems:
            why = _one_line("; ".join(p.message for p in message.problems))
        complete = message.complete and why is None
        finish = message.finish
        choice = message.choice
        notes = message.notes
        extra: TextFields | None = _text_fields(message) if text else None
        calls = message.tool_uses
        if not calls:
            record: CallRecord = {
                "stream": name,
                "choice": choice,
                "id": None,
                "name": None,
                "kind": None,
                "arguments": None,
                "complete": complete,
                "finish": finish,
                "server_side": False,
                "error": why,
                "notes": _call_notes(notes, None) if notes else None,
                "arguments_json": None,
            }
            if extra is not None:
                cast(dict[str, Any], record).update(extra)
            records.append(record)
            continue
        for block in calls:
            record = {
                "stream": name,
                "choice": choice,
                "id": block.id,
                "name": block.name,
                "kind": block.kind,
                "arguments": block.input,
                "complete": complete,
                "finish": finish,
                "server_side": block.server_side,
                "error": why,
                "notes": _call_notes(notes, block.id) if notes else None,
                "arguments_json": _arguments_json(block.kind, block.input),
            }
            if extra is not None:
                cast(dict[str, Any], record).update(extra)
            records.append(record)
    return records


def _arguments_json(kind: str, arguments: str) -> bool | None:
    """Whether a function call's arguments are exactly one JSON value, read as the tool
    loop reads them (``Toolset``: strictly, empty as ``{}``); ``None`` for a call whose
    input is free text by design (a custom tool's, a shell command)."""
    if kind != "function":
        return None
    try:
        _toolstitch._parse_strict(arguments)
    except ToolstitchError:
        return False
    return True


def _notes(message: AssembledMessage, block: ToolUseBlock | None) -> str | None:
    """The notes of the message and of ``block``'s call, one line each joined by "; "."""
    return _call_notes(message.notes, block.id if block is not None else None)


def _call_notes(notes: Iterable[Note], call_id: str | None) -> str | None:
    """The notes of a message that are the message's or the call ``call_id``'s."""
    mine = [n for n in notes if n.call_id is None or n.call_id == call_id]
    return "; ".join(f"{n.kind}: {_one_line(n.message)}" for n in mine) or None


def _text_fields(message: AssembledMessage) -> TextFields:
    reasoning = "".join(b.thinking for b in message.blocks if isinstance(b, ThinkingBlock))
    return TextFields(text=message.text, reasoning=reasoning)


def _record(
    stream: str,
    choice: int,
    block: ToolUseBlock | None,
    complete: bool,
    finish: str | None,
    error: str | None,
    notes: str | None = None,
    json_known: bool = False,
) -> CallRecord:
    """One record: of a call, or (``block`` ``None``) of a stream without one;
    ``json_known``: its arguments were already read strictly as a JSON object."""
    return {
        "stream": stream,
        "choice": choice,
        "id": block.id if block else None,
        "name": block.name if block else None,
        "kind": block.kind if block else None,
        "arguments": block.input if block else None,
        "complete": complete,
        "finish": finish,
        "server_side": block.server_side if block else False,
        "error": error,
        "notes": notes,
        "arguments_json": (json_known or _arguments_json(block.kind, block.input))
        if block
        else None,
    }


def _failure(name: str, error: str) -> CallRecord:
    return _record(name, 0, None, False, None, error)


def _failure_with_text(name: str, error: str, text: bool) -> CallRecord:
    record = _failure(name, error)
    if text:
        cast(dict[str, Any], record).update(TextFields(text="", reasoning=""))
    return record


def _one_line(message: str) -> str:
    return " ".join(message.split())


# ------------------------------------------------------------------ cassettes


def _replay_cassette(
    document: bytes, name: str, provider: Provider, text: bool
) -> list[CallRecord]:
    try:
        import yaml
    except ImportError:
        return [
            _failure_with_text(
                name,
                "this is a VCR cassette, and reading one needs PyYAML: "
                "pip install 'toolstitch[cli]' (or PyYAML)",
                text,
            )
        ]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        cassette = yaml.load(document, Loader=loader)
    except yaml.YAMLError as e:
        return [_failure_with_text(name, f"not a readable VCR cassette: {_yaml_reason(e)}", text)]
    interactions = None
    if isinstance(cassette, Mapping):
        interactions = cassette.get("interactions", cassette.get("http_interactions"))
    if not isinstance(interactions, list):
        return [
            _failure_with_text(
                name, "not a VCR cassette: 'interactions' is missing or not a list", text
            )
        ]
    records: list[CallRecord] = []
    for number, interaction in enumerate(interactions, 1):
        stream = f"{name}#{number}"
        try:
            body = _streamed_body(interaction)
        except ValueError as e:
            records.append(_failure_with_text(stream, str(e), text))
            continue
        if body is None:
            continue
        try:
            body = _gunzip(body)
        except (OSError, EOFError, zlib.error) as e:
            records.append(_failure_with_text(stream, _read_reason(e), text))
            continue
        records.extend(_replay_stream([body], stream, provider, text))
    if not records:
        return [
            _failure_with_text(
                name,
                f"none of the cassette's {len(interactions)} interactions has a streamed "
                f"response body (SSE, AWS event-stream or JSON lines)",
                text,
            )
        ]
    return records


def _yaml_reason(e: Exception) -> str:
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return _one_line(f"{problem}{where}")


def _streamed_body(interaction: Any) -> bytes | None:
    """The response body of one interaction when it is a provider's response, else
    ``None``.

    That is a streaming content type, or no content type at all with a body (the
    Assembler then decides), or ``application/json`` holding a whole non-streamed
    response of a provider (a chat completion, a message, ...: one the Assembler
    recognises; other JSON answers of the API, such as a model list, are not
    responses and are passed over). Bodies are text, ``!!binary`` bytes, or Ruby VCR's
    ``base64_string``.
    """
    response = interaction.get("response") if isinstance(interaction, Mapping) else None
    if not isinstance(response, Mapping):
        raise ValueError("the interaction has no response")
    content_type = _header(response.get("headers"), "content-type")
    media = content_type.split(";")[0].strip().lower() if content_type is not None else None
    if media is not None and media not in _STREAMED_TYPES and media != "application/json":
        return None
    body = response.get("body")
    if isinstance(body, Mapping):
        if "string" in body:
            body = body["string"]
        elif "base64_string" in body:
            try:
                body = base64.b64decode(str(body["base64_string"]), validate=False)
            except (binascii.Error, ValueError) as e:
                raise ValueError(f"the response body is not valid base64: {e}") from None
        else:
            body = None
    if body is None or body == "" or body == b"":
        return None
    if isinstance(body, str):
        raw = body.encode("utf-8", "surrogatepass")
    elif isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
    else:
        raise ValueError(f"the response body is a {type(body).__name__}, not text or bytes")
    if media == "application/json" and not _is_response_body(raw):
        return None
    return raw


def _is_response_body(body: bytes) -> bool:
    """Whether a JSON body is a whole response of some provider (or its error): the
    Assembler under ``"auto"`` can tell its dialect."""
    try:
        data = _gunzip(body)
    except (OSError, EOFError, zlib.error):
        return True  # let the replay report it
    probe = Assembler("auto", live=False)
    with contextlib.suppress(ToolstitchError):
        probe.feed(data)
    return probe.dialect is not None


def _header(headers: Any, wanted: str) -> str | None:
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if str(key).lower() != wanted:
            continue
        if isinstance(value, list):
            value = value[0] if value else None
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        return None if value is None else str(value)
    return None
