"""Replay as an Arrow kernel: capture bytes (or paths) in, a table of call records out.

``replay_batch(batch)`` takes a batch with one capture per row, in any form Arrow
reads: a ``pyarrow.RecordBatch`` or ``Table``, or any object that exports the Arrow
PyCapsule interface (``__arrow_c_stream__`` / ``__arrow_c_array__``: a Polars or pandas
DataFrame, a DuckDB relation, a nanoarrow array, ...). It returns a ``pyarrow.Table``
with the columns of the ``--jsonl`` records (``records_schema``), one row per record,
rows in the order of the captures. That is the shape Spark's ``mapInArrow``, Ray Data's
``map_batches(batch_format="pyarrow")``, Polars and DuckDB hand to a function and take
back; ``replay_batches`` is the same over an iterator of batches (Spark's form), and
``toolstitch.dask`` and ``toolstitch replay --out FILE.parquet`` build their tables
with the same ``records_table``.

Which column holds what (``content`` / ``path`` name them explicitly):

- the capture: the one binary column (``binary``, ``large_binary``, ``binary_view``),
  its bytes replayed as ``replay_bytes`` does (gzip, cassettes, every transport);
  a null is one error record;
- or, when there is no binary column, a string column ``path``: each row's file is
  read as ``replay_paths`` reads it (directories and globs expand to their files);
- the name of each capture (the records' ``stream``): a string column ``stream``,
  else ``name``, else the path, else ``row N`` (N the row's position in the batch).

Needs ``pip install 'toolstitch[arrow]'`` (pyarrow).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from toolstitch.messages import Provider
from toolstitch.replay import (
    RECORD_SCHEMA,
    TEXT_SCHEMA,
    VALIDATION_SCHEMA,
    CallRecord,
    FieldType,
    _check_provider,
    _checked,
    _failure_with_text,
    as_toolset,
    replay_bytes,
    replay_paths,
)

__all__ = [
    "ParquetWriter",
    "jsonl_table",
    "records_schema",
    "records_table",
    "replay_batch",
    "replay_batches",
]


def _arrow_type(field: FieldType) -> pa.DataType:
    if field.type is str:
        return pa.string()
    return pa.int64() if field.type is int else pa.bool_()


def records_schema(*, text: bool = False, tools: bool = False) -> pa.Schema:
    """The Arrow schema of the records: ``RECORD_KEYS`` in order (``string``, ``int64``,
    ``bool``; nullable where the record's field may be ``None``), then ``text`` and
    ``reasoning`` with ``text``, then ``valid`` and ``validation_error`` with ``tools``.
    Derived from ``toolstitch.replay.RECORD_SCHEMA``, the records' one definition."""
    fields = dict(RECORD_SCHEMA)
    if text:
        fields.update(TEXT_SCHEMA)
    if tools:
        fields.update(VALIDATION_SCHEMA)
    return pa.schema([pa.field(name, _arrow_type(f), f.nullable) for name, f in fields.items()])


def records_table(
    records: Sequence[CallRecord], *, text: bool = False, tools: bool = False
) -> pa.Table:
    """``records`` as a table of ``records_schema(text=..., tools=...)`` (a column the
    records lack is all null; a key the schema lacks is an error)."""
    lines = "".join([json.dumps(record, ensure_ascii=False) + "\n" for record in records])
    return jsonl_table(lines.encode(), text=text, tools=tools)


def jsonl_table(data: bytes, *, text: bool = False, tools: bool = False) -> pa.Table:
    """The records written as JSON lines (what ``--jsonl`` prints) as a table of
    ``records_schema``: read by Arrow's JSON reader against the schema, so a table is
    exactly the records as ``--jsonl`` gives them. (Building it column by column with
    ``pyarrow.array`` would import pandas, half a second of every run.)"""
    schema = records_schema(text=text, tools=tools)
    if not data:
        return schema.empty_table()
    table = pa_json.read_json(
        io.BytesIO(data),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=max(len(data), 1 << 20)),
        parse_options=pa_json.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="error"
        ),
    )
    return table.cast(schema)


def replay_batch(
    batch: Any,
    provider: Provider = "auto",
    *,
    content: str | None = None,
    path: str | None = None,
    text: bool = False,
    tools: Any = None,
) -> pa.Table:
    """The records of every capture in ``batch`` as one table (see the module
    docstring). ``content`` / ``path`` name the column to read; ``provider``,
    ``text`` and ``tools`` as for ``replay_bytes``. A batch with no binary column and
    no ``path`` column, or a named column that is missing or of another type, is a
    ``TypeError``; an unknown provider an ``UnknownProviderError``."""
    _check_provider(provider)
    toolset = as_toolset(tools)
    table = _as_table(batch)
    records: list[CallRecord] = []
    names = _names(table)
    captures = _capture_column(table, content, path)
    for row, value in enumerate(captures.values):
        name = (names[row] if names is not None else None) or f"row {row}"
        if value is None:
            why = f"the {'capture' if captures.kind == 'content' else 'path'} is null"
            records.extend(_checked([_failure_with_text(name, why, text)], toolset))
        elif captures.kind == "content":
            records.extend(replay_bytes(value, provider, name=name, text=text, tools=toolset))
        else:
            records.extend(replay_paths(value, provider, text=text, tools=toolset))
    return records_table(records, text=text, tools=toolset is not None)


def replay_batches(
    batches: Iterable[Any],
    provider: Provider = "auto",
    *,
    content: str | None = None,
    path: str | None = None,
    text: bool = False,
    tools: Any = None,
) -> Iterator[pa.RecordBatch]:
    """``replay_batch`` of each batch, as record batches (what Spark's ``mapInArrow``
    passes and takes: ``df.mapInArrow(replay_batches, records_schema())``)."""
    toolset = as_toolset(tools)
    for batch in batches:
        table = replay_batch(batch, provider, content=content, path=path, text=text, tools=toolset)
        yield from table.to_batches()


class ParquetWriter:
    """Records appended as they come, written to one Parquet file of
    ``records_schema`` in row groups of about ``rows`` records (what
    ``toolstitch replay --out FILE.parquet`` writes). ``close()`` (or ``with``)
    finishes the file; a file with no record still has the schema."""

    def __init__(
        self, where: str, *, text: bool = False, tools: bool = False, rows: int = 65536
    ) -> None:
        self.text = text
        self.tools = tools
        self.rows = rows
        self.pending: list[bytes] = []
        self.count = 0  # records pending
        self.written = 0
        self._writer = pq.ParquetWriter(where, records_schema(text=text, tools=tools))

    def add(self, records: Iterable[CallRecord]) -> None:
        """Appends records."""
        lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records]
        self.add_jsonl("".join(lines), len(lines))

    def add_jsonl(self, text: str, count: int) -> None:
        """Appends ``count`` records written as JSON lines (``--jsonl``'s text)."""
        self.pending.append(text.encode())
        self.count += count
        if self.count >= self.rows:
            self._flush()

    def _flush(self) -> None:
        if self.count:
            data = b"".join(self.pending)
            self._writer.write_table(jsonl_table(data, text=self.text, tools=self.tools))
            self.written += self.count
            self.pending, self.count = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()

    def __enter__(self) -> ParquetWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------ reading a batch


class _Captures:
    def __init__(self, kind: str, values: list[Any]) -> None:
        self.kind = kind
        self.values = values


def _as_table(batch: Any) -> pa.Table:
    if isinstance(batch, pa.Table):
        return batch
    if isinstance(batch, pa.RecordBatch):
        return pa.Table.from_batches([batch])
    if hasattr(batch, "__arrow_c_stream__") or hasattr(batch, "__arrow_c_array__"):
        return pa.table(batch)
    raise TypeError(
        f"replay_batch takes an Arrow batch (a pyarrow RecordBatch or Table, or an object "
        f"with __arrow_c_stream__ / __arrow_c_array__), not {type(batch).__name__}"
    )


def _is_binary(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or getattr(pa.types, "is_binary_view", lambda _: False)(t)
        or pa.types.is_fixed_size_binary(t)
    )


def _is_string(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or getattr(pa.types, "is_string_view", lambda _: False)(t)
    )


def _capture_column(table: pa.Table, content: str | None, path: str | None) -> _Captures:
    if content is not None and path is not None:
        raise TypeError("replay_batch reads content or paths: name one column, not both")
    if content is not None:
        column = _column(table, content, _is_binary, "binary")
        return _Captures("content", column.to_pylist())
    if path is not None:
        column = _column(table, path, _is_string, "string")
        return _Captures("path", column.to_pylist())
    binary = [f.name for f in table.schema if _is_binary(f.type)]
    if len(binary) == 1:
        return _Captures("content", table.column(binary[0]).to_pylist())
    if len(binary) > 1:
        raise TypeError(
            f"the batch has {len(binary)} binary columns ({', '.join(binary)}): "
            "say which holds the captures with content="
        )
    if "path" in table.schema.names and _is_string(table.schema.field("path").type):
        return _Captures("path", table.column("path").to_pylist())
    raise TypeError(
        "the batch has no binary column of capture bytes and no string column 'path' "
        f"(its columns: {', '.join(f'{f.name}: {f.type}' for f in table.schema) or 'none'})"
    )


def _column(table: pa.Table, name: str, kind: Any, wanted: str) -> Any:
    if name not in table.schema.names:
        raise TypeError(f"the batch has no column {name!r} (its columns: {table.schema.names})")
    field = table.schema.field(name)
    if not kind(field.type):
        raise TypeError(f"column {name!r} is {field.type}, not {wanted}")
    return table.column(name)


def _names(table: pa.Table) -> list[str | None] | None:
    for candidate in ("stream", "name", "path"):
        if candidate in table.schema.names and _is_string(table.schema.field(candidate).type):
            values: list[str | None] = table.column(candidate).to_pylist()
            return values
    return None
