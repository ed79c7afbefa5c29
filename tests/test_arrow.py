"""``toolstitch.arrow``: capture bytes (or paths) in an Arrow batch in, a table of call
records out, driven by the real pyarrow, DuckDB and Polars; and ``toolstitch replay
--out FILE.parquet``, which writes the same table without a cluster.

Every table is checked against ``replay_bytes`` / ``replay`` of the same captures, row for
row: the kernel every engine calls is the replay, with Arrow around it.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from toolstitch import RECORD_KEYS, UnknownProviderError, replay_bytes
from toolstitch.arrow import (
    ParquetWriter,
    records_schema,
    records_table,
    replay_batch,
    replay_batches,
)
from toolstitch.replay import RECORD_SCHEMA, replay_paths

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
CASSETTE = (REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml").read_bytes()
SAMPLES = Path(__file__).resolve().parent.parent / "python" / "toolstitch" / "samples"
CAPTURES = [
    ("anthropic.sse", ANTHROPIC),
    ("openai.sse.gz", gzip.compress(OPENAI_CHAT, mtime=0)),
    ("bedrock.vcr.yaml", CASSETTE),
    ("cut.sse", ANTHROPIC[:700]),
    ("garbage.jsonl", b"not a stream at all\n"),
]


def expected(text: bool = False, tools: Any = None) -> list[dict[str, Any]]:
    return [
        dict(r)
        for name, data in CAPTURES
        for r in replay_bytes(data, name=name, text=text, tools=tools)
    ]


def batch() -> pa.Table:
    return pa.table(
        {
            "name": pa.array([n for n, _ in CAPTURES], pa.string()),
            "body": pa.array([d for _, d in CAPTURES], pa.binary()),
        }
    )


def test_a_batch_of_capture_bytes_gives_the_records_of_replay_bytes() -> None:
    table = replay_batch(batch())
    assert table.schema == records_schema()
    assert table.schema.names == list(RECORD_KEYS)
    assert table.to_pylist() == expected()
    # Large binary, binary views and a RecordBatch read the same.
    for kind in (pa.large_binary(), pa.binary_view()):
        other = batch().set_column(1, "body", batch().column("body").cast(kind))
        assert replay_batch(other).to_pylist() == expected()
    assert replay_batch(batch().to_batches()[0]).to_pylist() == expected()


def test_the_schema_is_the_records_one_definition() -> None:
    schema = records_schema(text=True, tools=True)
    assert schema.names == [*RECORD_KEYS, "text", "reasoning", "valid", "validation_error"]
    for name, field in RECORD_SCHEMA.items():
        arrow = schema.field(name)
        assert arrow.nullable == field.nullable, name
        assert arrow.type == {str: pa.string(), int: pa.int64(), bool: pa.bool_()}[field.type]


def test_text_and_tools_add_their_columns() -> None:
    tools = {"get_weather": {"type": "object", "properties": {"location": {"type": "string"}}}}
    table = replay_batch(batch(), text=True, tools=tools)
    assert table.schema == records_schema(text=True, tools=True)
    assert table.to_pylist() == expected(text=True, tools=tools)
    assert table.column("valid").to_pylist().count(True) == 1  # the Anthropic call


def test_names_nulls_and_a_forced_provider() -> None:
    unnamed = pa.table({"capture": pa.array([ANTHROPIC, None], pa.binary())})
    rows = replay_batch(unnamed).to_pylist()
    assert [r["stream"] for r in rows] == ["row 0", "row 1"]
    assert rows[1]["error"] == "the capture is null" and rows[1]["complete"] is False
    forced = replay_batch(unnamed.slice(0, 1), "openai-chat").to_pylist()
    assert forced[0]["complete"] is False and forced[0]["error"] is not None
    with pytest.raises(UnknownProviderError):
        replay_batch(unnamed, "nope")  # type: ignore[arg-type]


def test_paths_in_a_string_column_are_read_like_replay(tmp_path: Path) -> None:
    for name, data in CAPTURES:
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / n) for n, _ in CAPTURES] + [str(SAMPLES / "*.sse")]
    table = replay_batch(pa.table({"path": paths}))
    want = [dict(r) for r in replay_paths(paths)]
    assert table.to_pylist() == want
    assert len(want) > len(CAPTURES)


def test_batches_that_do_not_say_where_the_captures_are_are_type_errors() -> None:
    with pytest.raises(TypeError, match="no binary column"):
        replay_batch(pa.table({"x": [1, 2]}))
    two = pa.table({"a": pa.array([b"x"]), "b": pa.array([b"y"])})
    with pytest.raises(TypeError, match="2 binary columns"):
        replay_batch(two)
    assert replay_batch(two, content="a").num_rows == 1
    with pytest.raises(TypeError, match="no column 'c'"):
        replay_batch(two, content="c")
    with pytest.raises(TypeError, match="not string"):
        replay_batch(two, path="a")
    with pytest.raises(TypeError, match="not list"):
        replay_batch([b"x"])


def test_spark_shaped_iterators_of_record_batches() -> None:
    """Spark's ``mapInArrow`` hands an iterator of record batches and takes one back."""
    pieces = batch().to_batches(max_chunksize=2)
    assert len(pieces) == 3
    out = list(replay_batches(iter(pieces)))
    assert all(isinstance(b, pa.RecordBatch) for b in out)
    assert pa.Table.from_batches(out, records_schema()).to_pylist() == expected()


def test_duckdb_hands_a_relation_and_queries_the_records(tmp_path: Path) -> None:
    """DuckDB: the captures stored in a table, handed over as a relation (the Arrow
    PyCapsule stream), the records queried back with SQL."""
    db = duckdb.connect()
    db.execute("create table captures (name varchar, body blob)")
    db.executemany("insert into captures values (?, ?)", CAPTURES)
    relation = db.sql("select name, body from captures order by rowid")
    calls = replay_batch(relation)
    assert calls.to_pylist() == expected()
    db.register("calls", calls)
    rows = db.sql(
        "select stream, count(id) as n, bool_and(complete) as ok "
        "from calls group by stream order by stream"
    ).fetchall()
    assert rows == [
        ("anthropic.sse", 1, True),
        ("bedrock.vcr.yaml#1", 1, True),
        ("bedrock.vcr.yaml#2", 0, True),
        ("cut.sse", 0, False),
        ("garbage.jsonl", 0, False),
        ("openai.sse.gz", 2, True),
    ]
    # Paths listed in DuckDB, read by the kernel, the calls queried back.
    listed = pa.table({"path": [str(p) for p in sorted(SAMPLES.glob("*.sse"))]})
    db.register("from_paths", replay_batch(db.sql("select path from listed")))
    got = db.sql("select name from from_paths where id is not null order by name").fetchall()
    want = sorted(
        str(r["name"]) for r in replay_paths(listed.column("path").to_pylist()) if r["id"]
    )
    assert [n for (n,) in got] == want and want


def test_polars_frames_pass_through_the_pycapsule_interface() -> None:
    frame = pl.DataFrame(
        {"name": [n for n, _ in CAPTURES], "body": [d for _, d in CAPTURES]},
        schema={"name": pl.String, "body": pl.Binary},
    )
    calls = pl.from_arrow(replay_batch(frame))
    assert isinstance(calls, pl.DataFrame)
    assert calls.to_dicts() == expected()
    assert calls.filter(pl.col("id").is_not_null()).height == 4


def test_parquet_writer_writes_the_records_in_row_groups(tmp_path: Path) -> None:
    out = tmp_path / "calls.parquet"
    with ParquetWriter(str(out), rows=2) as writer:
        for name, data in CAPTURES:
            writer.add(replay_bytes(data, name=name))
    parquet = pq.ParquetFile(out)
    assert parquet.metadata.num_row_groups > 1
    assert parquet.schema_arrow == records_schema()
    assert parquet.read().to_pylist() == expected()
    empty = tmp_path / "empty.parquet"
    ParquetWriter(str(empty)).close()
    assert pq.read_table(empty).schema == records_schema()
    assert records_table([]).num_rows == 0


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", *map(str, args)],
        input=b"",
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_replay_out_writes_parquet_without_a_cluster(tmp_path: Path, jobs: str) -> None:
    root = tmp_path / "captures"
    root.mkdir()
    for name, data in CAPTURES:
        (root / name).write_bytes(data)
    (root / "README.md").write_text("not a capture\n")
    out = tmp_path / "calls.parquet"
    done = cli(root, "--out", out, "--jobs", jobs, "--text")
    assert done.returncode == 1  # the cut and the garbage captures
    jsonl = cli(root, "--jsonl", "--text")
    want = [json.loads(line) for line in jsonl.stdout.splitlines()]
    table = pq.read_table(out)
    assert table.schema == records_schema(text=True)
    assert table.to_pylist() == want
    streams = len({r["stream"] for r in want})
    assert done.stdout == (
        f"wrote {len(want)} records of {streams} streams to {out}; "
        "1 entry passed over (not captures; see above)\n"
    )
    # The same error and passed-over lines as a printing run (whose summary line is
    # on standard error, where --out says it on standard output).
    summary = "toolstitch: 1 entry passed over (not captures; see above)\n"
    assert done.stderr + summary == jsonl.stderr
    # DuckDB reads the file as it is.
    count = duckdb.connect().execute(f"select count(*) from read_parquet('{out}')").fetchall()
    assert count == [(len(want),)]


def test_replay_out_needs_no_cluster_and_refuses_another_format(tmp_path: Path) -> None:
    out = tmp_path / "calls.parquet"
    done = cli(REAL / "anthropic_messages-text-then-tool-use.sse", "--out", out)
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).column("id").to_pylist() == ["toolu_01NRLabsLyVHZPKxbKvkfSMn"]
    refused = cli(REAL / "anthropic_messages-text-then-tool-use.sse", "--out", out, "--json")
    assert refused.returncode == 2 and "--out writes Parquet" in refused.stderr
