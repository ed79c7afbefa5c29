"""Which files a replay reads: paths, directories and globs, local or behind a URL.

One set of rules for ``toolstitch replay`` and ``toolstitch.dask``, so a serial run and a
cluster run name the same streams the same way:

- an existing file is read whatever its name (a named pipe too: it was named), and named
  as given;
- a directory is walked recursively, in sorted order of the paths, each file named
  ``<directory as given>/<relative path>``. A regular file is a capture when it is named
  like one (``is_stream_file``) or, whatever its name, when its first bytes are one
  (``capture_content``: gzip is inflated first; then SSE, JSON, AWS event-stream as the
  core tells them, or a VCR cassette);
- anything else with ``*``, ``?`` or ``[`` is a glob (``**`` crosses directories); its
  matches are read in sorted order, directories among them walked, files among them
  read when they are regular files;
- a URL (``scheme://...``, not ``file://``) is read through fsspec (S3 with s3fs, GCS
  with gcsfs, HTTP, ...), under the same rules, and named by its URL.

Nothing a walk or a glob meets is dropped silently: what is not read (a hidden file or
directory, a file whose name and content are not a capture's, a named pipe, socket or
device, which a read could block on, a symbolic link to a directory, which is not
followed) is a ``PassedOver`` with the reason, which ``expand`` hands to its caller to
count and report. A path that matches nothing becomes a ``Source`` carrying an error
instead of a size: it is reported as one error record like any unreadable file, never
raised.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from toolstitch import _toolstitch

__all__ = [
    "STREAM_SUFFIXES",
    "PassedOver",
    "Source",
    "capture_content",
    "expand",
    "is_stream_file",
    "is_url",
]

STREAM_SUFFIXES = frozenset(
    {".sse", ".jsonl", ".ndjson", ".json", ".txt", ".yaml", ".yml", ".bin", ".eventstream"}
)
"""The names a directory walk picks up (each also with ``.gz`` after it). A file named
on its own is read whatever its name."""

_GZIP_MAGIC = b"\x1f\x8b"
# gzip inside gzip is legitimate (a compressed capture, compressed again by a store);
# deeper nesting is refused rather than followed without end.
_MAX_GZIP_LAYERS = 3
# A cassette is YAML whose first key names its interactions (VCR.py writes
# ``interactions:``, Ruby's VCR ``http_interactions:``), after any comments, blank
# lines and a ``---`` document start.
_CASSETTE = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:[ \t]*(?:#[^\n]*)?\r?\n|---[ \t]*\r?\n)*(?:http_)?interactions:"
)


def is_stream_file(name: str) -> bool:
    """Whether a directory walk replays the file ``name``: not hidden, and named like a
    capture (``STREAM_SUFFIXES``, optionally followed by ``.gz``)."""
    base = os.path.basename(name).lower()
    if not base or base.startswith("."):
        return False
    if base.endswith(".gz"):
        base = base[:-3]
    return os.path.splitext(base)[1] in STREAM_SUFFIXES


_GLOB_MAGIC = frozenset("*?[")
# How much of a file not named like a capture is read to tell whether it is one: its
# transport (or a cassette's first key) shows within the first bytes.
_SNIFF_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Source:
    """One file to replay: its name (the ``stream`` of its records), its size in bytes
    when known, and an error when it cannot be read at all."""

    name: str
    size: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PassedOver:
    """An entry a directory walk or a glob met and did not read: its name and why."""

    name: str
    reason: str


def is_url(path: str) -> bool:
    """A ``scheme://`` path that is not plain ``file://``."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme.lower() not in ("file", "local")


def expand(paths: Iterable[str], passed_over: list[PassedOver] | None = None) -> list[Source]:
    """Every file the paths name, in order (see the module docstring). What a walk or a
    glob passes over is appended to ``passed_over`` (when given), in the same order."""
    sources: list[Source] = []
    skipped: list[PassedOver] = [] if passed_over is None else passed_over
    for path in paths:
        if is_url(path):
            sources.extend(_expand_url(path, skipped))
        else:
            sources.extend(_expand_local(_strip_file_scheme(path), skipped))
    return sources


def capture_content(head: bytes) -> str | None:
    """``None`` when ``head`` (the first bytes of a file, ``_SNIFF_BYTES`` of them) starts
    like a capture; else why not. gzip is inflated first (up to three layers); then a VCR
    cassette's first key, or a transport the core's framing tells (SSE, JSON, AWS
    event-stream) is a capture."""
    for _ in range(_MAX_GZIP_LAYERS + 1):
        if not head.startswith(_GZIP_MAGIC):
            break
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, _SNIFF_BYTES)
        except zlib.error as e:
            return f"gzip whose content cannot be read ({e})"
    else:
        return f"more than {_MAX_GZIP_LAYERS} layers of gzip"
    if not head:
        return "empty"
    if _CASSETTE.match(head):
        return None
    transport = _toolstitch._transport_of(head)
    # The core takes a plausible prelude for an AWS event-stream frame (a stream is
    # read on and its CRC then checked); a file is one only when the prelude's CRC holds.
    if transport == "eventstream" and not _prelude_crc_holds(head):
        transport = None
    if transport is not None:
        return None
    return f"its content is no capture (it starts {head[:16]!r})"


def _prelude_crc_holds(head: bytes) -> bool:
    """Whether the first 12 bytes are an AWS event-stream prelude: two lengths and the
    CRC-32 of those 8 bytes."""
    return len(head) >= 12 and zlib.crc32(head[:8]) == int.from_bytes(head[8:12], "big")


# ------------------------------------------------------------------ local


def _strip_file_scheme(path: str) -> str:
    for prefix in ("file://", "local://"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _has_magic(path: str) -> bool:
    return any(c in _GLOB_MAGIC for c in path)


def _expand_local(path: str, passed_over: list[PassedOver]) -> Iterator[Source]:
    if os.path.isdir(path):
        yield from _walk_local(path, passed_over)
    elif os.path.exists(path):
        yield Source(path, _size(path))
    elif _has_magic(path):
        matches = sorted(glob.glob(path, recursive=True))
        if not matches:
            yield Source(path, error="no file matches this pattern")
        for match in matches:
            if os.path.isdir(match):
                yield from _walk_local(match, passed_over)
            else:
                yield from _listed(match, passed_over, named=True)
    else:
        yield Source(path, error="cannot read: No such file or directory")


def _walk_local(root: str, passed_over: list[PassedOver]) -> Iterator[Source]:
    failures: list[OSError] = []
    found: list[tuple[str, bool]] = []  # (path, whether it is a directory passed over)
    for directory, subdirectories, files in os.walk(root, onerror=failures.append):
        walked: list[str] = []
        for d in subdirectories:
            if d.startswith(".") or os.path.islink(os.path.join(directory, d)):
                found.append((os.path.join(directory, d), True))
            else:
                walked.append(d)
        subdirectories[:] = walked
        found.extend((os.path.join(directory, f), False) for f in files)
    for failure in failures:
        yield Source(str(failure.filename or root), error=f"cannot read: {failure.strerror}")
    if not found and not failures:
        yield Source(root, error="the directory holds no file")
    for path, is_directory in sorted(found):
        if not is_directory:
            if os.path.basename(path).startswith("."):
                passed_over.append(PassedOver(path, "a hidden file"))
            else:
                yield from _listed(path, passed_over, named=is_stream_file(path))
        elif os.path.basename(path).startswith("."):
            passed_over.append(PassedOver(path, "a hidden directory, not walked"))
        else:
            passed_over.append(PassedOver(path, "a symbolic link to a directory, not followed"))


def _listed(path: str, passed_over: list[PassedOver], *, named: bool) -> Iterator[Source]:
    """The file ``path`` a walk or a glob found, when it is to be read: a regular file
    named like a capture (``named``) or whose first bytes are one. Anything else is
    passed over with the reason, never opened when it is not a regular file (opening a
    named pipe waits for a writer)."""
    try:
        info = os.stat(path)
    except OSError as e:
        yield Source(path, error=f"cannot read: {e.strerror or e}")
        return
    if not stat.S_ISREG(info.st_mode):
        passed_over.append(PassedOver(path, f"not a regular file ({_file_kind(info.st_mode)})"))
        return
    if named:
        yield Source(path, info.st_size)
        return
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError as e:
        yield Source(path, error=f"cannot read: {e.strerror or e}")
        return
    why = capture_content(head)
    if why is None:
        yield Source(path, info.st_size)
    else:
        passed_over.append(PassedOver(path, f"not named like a capture, and {why}"))


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


# ------------------------------------------------------------------ fsspec


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            "reading URLs needs fsspec (and the filesystem's own package, such as s3fs): "
            "pip install 'toolstitch[dask]'"
        ) from None
    return fsspec


def _open_url(url: str) -> IO[bytes]:
    f: IO[bytes] = _fsspec().open(url, "rb").open()
    return f


def _expand_url(url: str, passed_over: list[PassedOver]) -> list[Source]:
    try:
        fs, root = _fsspec().core.url_to_fs(url)
    except ImportError as e:
        return [Source(url, error=str(e))]
    except (OSError, ValueError) as e:
        return [Source(url, error=f"cannot read: {e}")]

    def named(path: str) -> str:
        return str(fs.unstrip_protocol(path))

    try:
        if fs.isdir(root):
            found = fs.find(root, detail=True)
            sources: list[Source] = []
            for p, info in sorted(found.items()):
                if _hidden_below(p, root):
                    passed_over.append(PassedOver(named(p), "hidden (under a name with a dot)"))
                elif is_stream_file(p):
                    sources.append(Source(named(p), _info_size(info)))
                else:
                    why = _remote_content(fs, p)
                    if why is None:
                        sources.append(Source(named(p), _info_size(info)))
                    else:
                        passed_over.append(
                            PassedOver(named(p), f"not named like a capture, and {why}")
                        )
            return sources
        if fs.isfile(root):
            return [Source(url, _info_size(fs.info(root)))]
        if _has_magic(root):
            matches = fs.glob(root, detail=True)
            sources = []
            for p, info in sorted(matches.items()):
                if info.get("type") == "directory":
                    sources.extend(_expand_url(named(p), passed_over))
                else:
                    sources.append(Source(named(p), _info_size(info)))
            return sources or [Source(url, error="no file matches this pattern")]
    except OSError as e:
        return [Source(url, error=f"cannot read: {e}")]
    return [Source(url, error="cannot read: No such file or directory")]


def _remote_content(fs: Any, path: str) -> str | None:
    """``capture_content`` of the first bytes of a file behind a URL."""
    try:
        with fs.open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError as e:
        return f"cannot be read ({e})"
    return capture_content(bytes(head))


def _hidden_below(path: str, root: str) -> bool:
    relative = path[len(root) :].strip("/")
    return any(part.startswith(".") for part in relative.split("/"))


def _info_size(info: Any) -> int | None:
    size = info.get("size") if isinstance(info, dict) else None
    return size if isinstance(size, int) else None
