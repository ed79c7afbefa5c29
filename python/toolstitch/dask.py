"""Replay captured streams at scale on Dask: ``read_calls`` and ``write_parquet``.

``read_calls(paths)`` is a Dask DataFrame of the same records ``toolstitch.replay_path``
returns (one row per call, one row for a stream without calls or that failed), read
from local paths, directories, globs or any URL fsspec opens (``s3://`` with s3fs,
``gs://`` with gcsfs, ...). Files are grouped into partitions of about ``blocksize``
bytes by their sizes, not by their count, so a partition is the same amount of work
whether it holds one large capture or thousands of small ones; a file larger than
``blocksize`` is a partition by itself (a stream is never split). A file that cannot be
read or replayed is an error record: the job never fails for one bad file.

Columns have explicit dtypes (``COLUMNS``): strings are pandas' nullable
``string[pyarrow]``, ``choice`` is ``int64``, ``complete`` and ``server_side`` are
``bool``. Rows keep the order of a serial replay of the same paths. Needs
``pip install 'toolstitch[dask]'``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
from dask.utils import parse_bytes
from distributed import LocalCluster

from toolstitch._sources import PassedOver, Source, expand
from toolstitch.arrow import records_table
from toolstitch.messages import Provider
from toolstitch.replay import (
    RECORD_SCHEMA,
    TEXT_SCHEMA,
    VALIDATION_SCHEMA,
    CallRecord,
    FieldType,
    PassedOverWarning,
    as_toolset,
    replay_source,
)
from toolstitch.streams import Assembler
from toolstitch.tools import Toolset

__all__ = [
    "COLUMNS",
    "definitions_of",
    "local_cluster",
    "partition_sources",
    "read_calls",
    "to_parquet",
    "to_records",
    "write_parquet",
]

_STRING = pd.StringDtype("pyarrow")


def _dtype(field: FieldType) -> Any:
    """The pandas dtype of a record field (nullable where the field may be ``None``)."""
    if field.type is str:
        return _STRING
    if field.type is int:
        return "Int64" if field.nullable else "int64"
    return "boolean" if field.nullable else "bool"


COLUMNS: dict[str, Any] = {name: _dtype(f) for name, f in RECORD_SCHEMA.items()}
"""Every record column and its pandas dtype, in ``RECORD_KEYS`` order (from
``toolstitch.replay.RECORD_SCHEMA``, the records' one definition)."""

_TEXT_COLUMNS: dict[str, Any] = {name: _dtype(f) for name, f in TEXT_SCHEMA.items()}
_TOOLS_COLUMNS: dict[str, Any] = {name: _dtype(f) for name, f in VALIDATION_SCHEMA.items()}


def _arrow_type(dtype: Any) -> pa.DataType:
    if dtype is _STRING:
        return pa.string()
    return pa.int64() if dtype in ("int64", "Int64") else pa.bool_()


_ARROW_TYPES = {
    name: _arrow_type(dtype)
    for name, dtype in {**COLUMNS, **_TEXT_COLUMNS, **_TOOLS_COLUMNS}.items()
}


def _columns(text: bool, tools: bool) -> dict[str, Any]:
    columns = dict(COLUMNS)
    if text:
        columns.update(_TEXT_COLUMNS)
    if tools:
        columns.update(_TOOLS_COLUMNS)
    return columns


def _frame(records: list[CallRecord], columns: Mapping[str, Any]) -> pd.DataFrame:
    """The records as a frame of ``columns``: the Arrow table ``toolstitch.arrow``
    builds for every engine (``records_table``), converted to pandas."""
    table = records_table(
        records,
        text=any(name in columns for name in TEXT_SCHEMA),
        tools=any(name in columns for name in VALIDATION_SCHEMA),
    )
    frame: pd.DataFrame = table.to_pandas(types_mapper={pa.string(): _STRING}.get)
    typed: pd.DataFrame = frame.astype(dict(columns))
    return typed


def partition_sources(sources: Sequence[Source], blocksize: int) -> list[list[Source]]:
    """Consecutive groups of ``sources`` of about ``blocksize`` bytes each.

    A group is closed before the source that would take it over ``blocksize``, so a
    source larger than ``blocksize`` is a group by itself. Sources of unknown size, and
    the errors of paths that match nothing, count as empty.
    """
    if blocksize <= 0:
        raise ValueError(f"blocksize must be positive, not {blocksize}")
    groups: list[list[Source]] = []
    current: list[Source] = []
    filled = 0
    for source in sources:
        size = source.size or 0
        if current and filled + size > blocksize:
            groups.append(current)
            current, filled = [], 0
        current.append(source)
        filled += size
    if current:
        groups.append(current)
    return groups


def _replay_partition(
    sources: list[Source], provider: Provider, text: bool, tools: Any
) -> pd.DataFrame:
    toolset = as_toolset(tools)
    records: list[CallRecord] = []
    for source in sources:
        records.extend(replay_source(source, provider, text=text, tools=toolset))
    return _frame(records, _columns(text, toolset is not None))


def definitions_of(tools: Any) -> Any:
    """Tool definitions that travel to workers: a ``Toolset`` (whose compiled schemas
    stay in the process that built them) as its ``{name: json_schema}`` dict; anything
    else as it is; ``None`` stays ``None``."""
    if isinstance(tools, Toolset):
        return {name: tools.definition(name).schema for name in tools}
    return tools


def read_calls(
    paths: str | Iterable[str],
    provider: Provider = "auto",
    *,
    blocksize: int | str = "64MiB",
    text: bool = False,
    tools: Any = None,
    passed_over: list[PassedOver] | None = None,
) -> dd.DataFrame:
    """A Dask DataFrame of the call records of every capture the paths name.

    ``paths``: one or more local paths, directories (walked recursively for capture
    files), globs, or fsspec URLs, under the rules of ``toolstitch replay``. ``provider``
    as for ``replay_path`` (an unknown one raises ``UnknownProviderError`` here, not on
    a worker). ``blocksize``: bytes per partition, an int or a string like ``"64MiB"``.
    ``text=True`` adds ``text`` and ``reasoning`` columns; ``tools`` (definitions in any
    form ``Toolset`` reads, or a ``Toolset``) adds ``valid`` (nullable boolean) and
    ``validation_error``. What the listing passes over (files that are no capture, named
    pipes, hidden entries) is appended to ``passed_over`` when it is given, else said
    in one ``PassedOverWarning``.
    """
    names = [paths] if isinstance(paths, str) else list(paths)
    if not names:
        raise ValueError("read_calls needs at least one path")
    Assembler(provider, live=False)
    definitions = definitions_of(tools)
    toolset = as_toolset(definitions)  # bad definitions fail here, not on every worker
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else int(blocksize)
    skipped: list[PassedOver] = [] if passed_over is None else passed_over
    groups = partition_sources(expand(names, skipped), size)
    if skipped and passed_over is None:
        warnings.warn(
            f"passed over {len(skipped)} entries that are not captures: "
            + "; ".join(f"{p.name}: {p.reason}" for p in skipped[:3])
            + (f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""),
            PassedOverWarning,
            stacklevel=2,
        )
    meta = _frame([], _columns(text, toolset is not None))
    frame: dd.DataFrame = dd.from_map(
        _replay_partition,
        groups,
        args=(provider, text, definitions),
        meta=meta,
        label="toolstitch-replay",
        enforce_metadata=False,
    )
    return frame


def local_cluster(workers: int | None = None, **options: Any) -> LocalCluster:
    """A ``LocalCluster`` as ``toolstitch replay --scheduler local:N`` starts one:
    ``workers`` processes (default: one per core) of one thread each, since replay holds
    no Python lock while it parses, no dashboard, and the workers' statistical profiler
    off: it samples every task's stack for the dashboard alone, and cost a third of the
    workers' CPU on short replay tasks. ``options`` go to ``LocalCluster``."""
    settings: dict[str, Any] = {
        "n_workers": workers or os.cpu_count() or 1,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }
    settings.update(options)
    with dask.config.set({"distributed.worker.profile.enabled": False}):
        return LocalCluster(**settings)


def _arrow_schema(frame: dd.DataFrame) -> pa.Schema:
    return pa.schema([pa.field(str(name), _ARROW_TYPES[str(name)]) for name in frame.columns])


def to_parquet(frame: dd.DataFrame, out: str, **kwargs: Any) -> None:
    """Write a frame of ``read_calls`` as a Parquet dataset (a directory of part files,
    local or an fsspec URL) with its explicit Arrow schema. ``kwargs`` go to Dask's
    ``to_parquet``."""
    options: dict[str, Any] = {"write_index": False, "schema": _arrow_schema(frame)}
    options.update(kwargs)
    frame.to_parquet(out, **options)


def write_parquet(
    paths: str | Iterable[str],
    out: str,
    provider: Provider = "auto",
    *,
    blocksize: int | str = "64MiB",
    text: bool = False,
    tools: Any = None,
    **kwargs: Any,
) -> None:
    """``read_calls(paths, ...)`` written to the Parquet dataset ``out`` in one call, on
    the current Dask scheduler (a ``distributed.Client`` when one is active)."""
    frame = read_calls(paths, provider, blocksize=blocksize, text=text, tools=tools)
    to_parquet(frame, out, **kwargs)


def to_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a computed frame as records again: plain dicts, missing values as
    ``None``, in column order (what ``replay_path`` returns, for the columns present)."""
    columns = list(frame.columns)
    return [
        {name: _plain(value) for name, value in zip(columns, row, strict=True)}
        for row in frame.itertuples(index=False, name=None)
    ]


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value
