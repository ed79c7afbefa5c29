"""toolstitch.dask and ``toolstitch replay --scheduler`` on a real LocalCluster.

One cluster for the module (two worker processes, small memory). Every result is
checked against a serial replay of the same paths, row for row.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster
from toolstitch import RECORD_KEYS, UnknownProviderError
from toolstitch import dask as toolstitch_dask
from toolstitch._sources import Source, expand
from toolstitch.replay import replay_source

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
SAMPLES = Path(__file__).resolve().parent.parent / "python" / "toolstitch" / "samples"
ANTHROPIC = REAL / "anthropic_messages-text-then-tool-use.sse"


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="512MiB",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory,
    generated_recordings: tuple[Path, dict[str, list[tuple[str, str, str]]]],
) -> Path:
    """The bundled samples, the generated recordings and two bad files, in one tree."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(SAMPLES, root / "samples")
    shutil.copytree(generated_recordings[0], root / "generated")
    (root / "bad").mkdir()
    (root / "bad" / "garbage.jsonl").write_bytes(b"not a stream at all\n")
    (root / "bad" / "cut.sse").write_bytes(ANTHROPIC.read_bytes()[:700])
    return root


def serial(paths: list[str], **options: Any) -> list[dict[str, Any]]:
    from toolstitch.replay import as_toolset

    tools = as_toolset(options.pop("tools", None))
    return [dict(r) for s in expand(paths) for r in replay_source(s, **options, tools=tools)]


def test_read_calls_equals_a_serial_replay_row_for_row(client: Client, corpus: Path) -> None:
    frame = toolstitch_dask.read_calls([str(corpus)], blocksize="16KiB")
    assert frame.npartitions > 2
    got = toolstitch_dask.to_records(frame.compute())
    want = serial([str(corpus)])
    assert len(want) > 60
    assert got == want
    bad = {r["stream"]: r for r in got if r["error"] is not None}
    assert sorted(Path(s).name for s in bad) == ["cut.sse", "garbage.jsonl"]
    assert all(r["complete"] for r in got if "/bad/" not in r["stream"])


def test_explicit_dtypes_match_what_partitions_compute(client: Client, corpus: Path) -> None:
    frame = toolstitch_dask.read_calls(str(corpus / "samples"), blocksize=1 << 20)
    assert list(frame.columns) == list(RECORD_KEYS)
    assert dict(frame.dtypes) == toolstitch_dask.COLUMNS
    computed = frame.compute()
    assert dict(computed.dtypes) == toolstitch_dask.COLUMNS
    assert computed["id"].isna().sum() == 2  # the two cassette answers without calls


def test_the_columns_come_from_the_records_one_schema() -> None:
    """Names and types are written once, in ``toolstitch.replay`` (``CallRecord`` and the
    fields ``text=`` and a toolset add); dask.py derives its dtypes and names none."""
    from toolstitch import dask as module
    from toolstitch import replay

    assert tuple(replay.RECORD_SCHEMA) == RECORD_KEYS
    expected = {
        "stream": "string",
        "choice": "int64",
        "complete": "bool",
        "server_side": "bool",
        "arguments_json": "boolean",
    }
    for name, dtype in toolstitch_dask.COLUMNS.items():
        assert str(dtype) == expected.get(name, "string"), name
    every = {**replay.RECORD_SCHEMA, **replay.TEXT_SCHEMA, **replay.VALIDATION_SCHEMA}
    assert replay.VALIDATION_SCHEMA["valid"] == replay.FieldType(bool, True)
    assert str(toolstitch_dask._columns(True, True)["valid"]) == "boolean"
    tree = ast.parse(Path(module.__file__ or "").read_text())
    literals = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    assert not (literals & set(every)), "a record key is written again in dask.py"


def test_partitions_hold_about_blocksize_bytes_and_big_files_alone(
    client: Client, tmp_path: Path
) -> None:
    sizes = [3000, 3000, 3000, 9000, 2000, 2000]
    paths = []
    body = ANTHROPIC.read_bytes()
    for i, size in enumerate(sizes):
        path = tmp_path / f"{i}.sse"
        path.write_bytes(body + b": " + b"x" * (size - len(body) - 3) + b"\n")
        assert path.stat().st_size == size
        paths.append(str(path))
    groups = toolstitch_dask.partition_sources(expand(paths), 7000)
    assert [[Path(s.name).name for s in g] for g in groups] == [
        ["0.sse", "1.sse"],
        ["2.sse"],
        ["3.sse"],  # larger than a partition: one by itself
        ["4.sse", "5.sse"],
    ]
    frame = toolstitch_dask.read_calls(paths, blocksize=7000)
    assert frame.npartitions == 4
    third = frame.get_partition(2).compute()
    assert [Path(s).name for s in third["stream"]] == ["3.sse"]
    with pytest.raises(ValueError, match="positive"):
        toolstitch_dask.partition_sources([Source("x", 1)], 0)


def test_text_and_tools_columns(client: Client, corpus: Path) -> None:
    tools = {"get_weather": {"type": "object", "required": ["location"]}}
    paths = [str(corpus / "samples")]
    frame = toolstitch_dask.read_calls(paths, text=True, tools=tools)
    assert list(frame.columns) == [*RECORD_KEYS, "text", "reasoning", "valid", "validation_error"]
    got = toolstitch_dask.to_records(frame.compute())
    assert got == serial(paths, text=True, tools=tools)
    assert [r["valid"] for r in got if r["name"] == "get_weather"] == [True]


def test_write_parquet_in_one_call(client: Client, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "calls.parquet"
    toolstitch_dask.write_parquet([str(corpus)], str(out), blocksize="32KiB")
    table = pq.read_table(out)
    assert table.schema.names == list(RECORD_KEYS)
    assert str(table.schema.field("choice").type) == "int64"
    assert str(table.schema.field("complete").type) == "bool"
    assert str(table.schema.field("arguments").type) == "string"
    rows = toolstitch_dask.to_records(pd.read_parquet(out))
    assert rows == serial([str(corpus)])


def test_a_missing_path_is_an_error_record_not_a_failed_job(client: Client, tmp_path: Path) -> None:
    paths = [str(tmp_path / "missing.sse"), str(ANTHROPIC), str(tmp_path / "*.nothing")]
    got = toolstitch_dask.to_records(toolstitch_dask.read_calls(paths).compute())
    assert [(r["id"], r["error"]) for r in got] == [
        (None, "cannot read: No such file or directory"),
        ("toolu_01NRLabsLyVHZPKxbKvkfSMn", None),
        (None, "no file matches this pattern"),
    ]


def test_bad_arguments_fail_before_anything_runs(client: Client) -> None:
    with pytest.raises(UnknownProviderError):
        toolstitch_dask.read_calls([str(ANTHROPIC)], "nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one path"):
        toolstitch_dask.read_calls([])


def test_urls_go_through_fsspec(tmp_path: Path) -> None:
    """A ``memory://`` filesystem (real fsspec, this process only): expansion of a
    directory and a glob, sizes, reading, names that keep the URL."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/replay-test/a/one.sse", ANTHROPIC.read_bytes())
    fs.pipe("/replay-test/a/notes.md", b"not a capture")
    fs.pipe(
        "/replay-test/b/two.jsonl",
        (REAL / "mistral_chat-single-chunk-tool-call.jsonl").read_bytes(),
    )
    # Files found under a directory or by a glob are named as fsspec writes their URLs
    # (its memory filesystem roots paths at "/"); a file named on its own keeps its name.
    one, two = "memory:///replay-test/a/one.sse", "memory:///replay-test/b/two.jsonl"
    sources = expand(["memory://replay-test"])
    assert [(s.name, s.size) for s in sources] == [(one, ANTHROPIC.stat().st_size), (two, 635)]
    assert [s.name for s in expand(["memory://replay-test/*/*.jsonl"])] == [two]
    assert [s.name for s in expand(["memory://replay-test/b/two.jsonl"])] == [
        "memory://replay-test/b/two.jsonl"
    ]
    records = [r for s in sources for r in replay_source(s)]
    assert [(r["stream"], r["id"], r["complete"]) for r in records] == [
        (one, "toolu_01NRLabsLyVHZPKxbKvkfSMn", True),
        (two, "gSIMJiOkT", True),
    ]
    [missing] = expand(["memory://replay-test/nothing.sse"])
    assert missing.error == "cannot read: No such file or directory"


# ------------------------------------------------------------------ the command line


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_cli_on_a_scheduler_address_writes_parquet(
    client: Client, corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "calls.parquet"
    address = str(client.scheduler.address)  # type: ignore[union-attr]
    done = cli("--scheduler", address, "--out", str(out), "--blocksize", "16KiB", str(corpus))
    assert done.returncode == 1  # the two bad files
    assert "Traceback" not in done.stderr
    passed_over = [line for line in done.stderr.splitlines() if ": passed over: " in line]
    # The samples' licence notices and provenance, the generated corpus's hidden files:
    # named, counted, not replayed.
    assert sum(f"{corpus}/samples/" in line for line in passed_over) == 5
    others = [
        line
        for line in passed_over
        if f"{corpus}/samples/" not in line and not line.endswith(": passed over: a hidden file")
    ]
    assert others == []
    count = len(passed_over)
    assert f"; {count} entries passed over (not captures; see above)" in done.stdout
    lines = sorted(line for line in done.stderr.splitlines() if line not in passed_over)
    assert len(lines) == 2
    assert lines[0].startswith(f"toolstitch: {corpus}/bad/cut.sse: ")
    assert lines[1].startswith(f"toolstitch: {corpus}/bad/garbage.jsonl: cannot tell")
    want = serial([str(corpus)])
    assert f"wrote {len(want)} records of" in done.stdout
    assert toolstitch_dask.to_records(pd.read_parquet(out)) == want


def test_cli_on_a_scheduler_prints_what_a_serial_replay_gives(client: Client, corpus: Path) -> None:
    address = str(client.scheduler.address)  # type: ignore[union-attr]
    paths = [str(corpus / "samples"), str(corpus / "generated")]
    done = cli("--scheduler", address, "--jsonl", *paths)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == serial(paths)


def test_cli_starts_a_local_cluster(corpus: Path) -> None:
    done = cli("--scheduler", "local:1", str(corpus / "samples"))
    assert done.returncode == 0, done.stderr
    assert "9 streams, 12 calls; 9 streams complete" in done.stdout


def test_cli_says_so_when_the_scheduler_cannot_be_reached() -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"] = "1s"
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", "--scheduler", "tcp://127.0.0.1:9"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "toolstitch: cannot reach the Dask scheduler at tcp://127.0.0.1:9: "
    )
    assert len(done.stderr.splitlines()) == 1
