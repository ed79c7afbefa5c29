"""Which files a replay reads: paths, directories and globs, local or behind a URL.

One set of rules for ``toolstitch replay`` and ``toolstitch.dask``, so a serial run and a
cluster run name the same streams the same way:

- an existing file is read whatever its name, and named as given;
- a directory is walked recursively; it gives the files ``is_stream_file`` accepts, in
  sorted order of their paths, each named ``<directory as given>/<relative path>``;
- anything else with ``*``, ``?`` or ``[`` is a glob (``**`` crosses directories); its
  matches are read in sorted order, directories among them walked;
- a URL (``scheme://...``, not ``file://``) is read through fsspec (S3 with s3fs, GCS
  with gcsfs, HTTP, ...), under the same rules, and named by its URL.

A path that matches nothing becomes a ``Source`` carrying an error instead of a size:
it is reported as one error record like any unreadable file, never raised.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from toolstitch.messages import Provider
from toolstitch.replay import (
    CallRecord,
    _checked,
    _failure_with_text,
    _replay_path,
    is_stream_file,
    replay_file,
)
from toolstitch.tools import Toolset

__all__ = ["Source", "expand", "is_url", "replay_source"]

_GLOB_MAGIC = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Source:
    """One file to replay: its name (the ``stream`` of its records), its size in bytes
    when known, and an error when it cannot be read at all."""

    name: str
    size: int | None = None
    error: str | None = None


def is_url(path: str) -> bool:
    """A ``scheme://`` path that is not plain ``file://``."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme.lower() not in ("file", "local")


def expand(paths: Iterable[str]) -> list[Source]:
    """Every file the paths name, in order (see the module docstring)."""
    sources: list[Source] = []
    for path in paths:
        if is_url(path):
            sources.extend(_expand_url(path))
        else:
            sources.extend(_expand_local(_strip_file_scheme(path)))
    return sources


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


# ------------------------------------------------------------------ local


def _strip_file_scheme(path: str) -> str:
    for prefix in ("file://", "local://"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _has_magic(path: str) -> bool:
    return any(c in _GLOB_MAGIC for c in path)


def _expand_local(path: str) -> Iterator[Source]:
    if os.path.isdir(path):
        yield from _walk_local(path)
    elif os.path.exists(path):
        yield Source(path, _size(path))
    elif _has_magic(path):
        matches = sorted(glob.glob(path, recursive=True))
        if not matches:
            yield Source(path, error="no file matches this pattern")
        for match in matches:
            if os.path.isdir(match):
                yield from _walk_local(match)
            else:
                yield Source(match, _size(match))
    else:
        yield Source(path, error="cannot read: No such file or directory")


def _walk_local(root: str) -> Iterator[Source]:
    failures: list[OSError] = []
    found: list[str] = []
    for directory, subdirectories, files in os.walk(root, onerror=failures.append):
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".")]
        found.extend(os.path.join(directory, f) for f in files if is_stream_file(f))
    for failure in failures:
        yield Source(str(failure.filename or root), error=f"cannot read: {failure.strerror}")
    for path in sorted(found):
        yield Source(path, _size(path))


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


def _expand_url(url: str) -> list[Source]:
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
            return [
                Source(named(p), _info_size(info))
                for p, info in sorted(found.items())
                if is_stream_file(p) and not _hidden_below(p, root)
            ]
        if fs.isfile(root):
            return [Source(url, _info_size(fs.info(root)))]
        if _has_magic(root):
            matches = fs.glob(root, detail=True)
            sources: list[Source] = []
            for p, info in sorted(matches.items()):
                if info.get("type") == "directory":
                    sources.extend(_expand_url(named(p)))
                else:
                    sources.append(Source(named(p), _info_size(info)))
            return sources or [Source(url, error="no file matches this pattern")]
    except OSError as e:
        return [Source(url, error=f"cannot read: {e}")]
    return [Source(url, error="cannot read: No such file or directory")]


def _hidden_below(path: str, root: str) -> bool:
    relative = path[len(root) :].strip("/")
    return any(part.startswith(".") for part in relative.split("/"))


def _info_size(info: Any) -> int | None:
    size = info.get("size") if isinstance(info, dict) else None
    return size if isinstance(size, int) else None
