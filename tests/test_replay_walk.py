"""Which files a replay reads: directories and globs in ``replay`` / ``replay_path`` as in
the command, captures told by their content, and nothing passed over silently; a walk
never opens (and so never blocks on) a named pipe.

The command runs as a subprocess (``python -m toolstitch``); a FIFO with no writer would
hang a run that opened it, so those runs have a timeout and must end well within it.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from toolstitch import replay_path
from toolstitch._sources import PassedOver, capture_content, expand
from toolstitch.replay import PassedOverWarning, Replayed, replay_paths

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
MISTRAL = (REAL / "mistral_chat-single-chunk-tool-call.jsonl").read_bytes()
CASSETTE = (REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml").read_bytes()
OPENAI_IDS = ["call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"]
ANTHROPIC_ID = "toolu_01NRLabsLyVHZPKxbKvkfSMn"


def run(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    env.update(NO_COLOR="1", COLUMNS="400")
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", *map(str, args)],
        input=b"",
        capture_output=True,
        env=env,
        timeout=timeout,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Captures named like captures, captures named otherwise (a gateway's
    ``*.body.gz``, a name without a suffix), and files that are no capture."""
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.sse").write_bytes(ANTHROPIC)
    (root / "sub" / "b.body.gz").write_bytes(gzip.compress(OPENAI_CHAT, mtime=0))
    (root / "sub" / "c.body").write_bytes(MISTRAL)
    (root / "sub" / "cassette.recording").write_bytes(CASSETTE)
    (root / "README.md").write_text("# what these captures are\n")
    (root / "sub" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (root / "notes.gz").write_bytes(gzip.compress(b"plain text, gzipped\n"))
    (root / ".hidden.sse").write_bytes(ANTHROPIC)
    (root / ".git").mkdir()
    (root / ".git" / "x.sse").write_bytes(ANTHROPIC)
    return root


def names(records: list[Any]) -> list[str]:
    return [Path(r["stream"].split("#")[0]).name for r in records]


def test_a_directory_replays_every_capture_told_by_its_content(corpus: Path) -> None:
    with pytest.warns(PassedOverWarning) as caught:
        records = replay_path(corpus)
    assert isinstance(records, Replayed)
    assert sorted(set(names(records))) == [
        "a.sse", "b.body.gz", "c.body", "cassette.recording",
    ]  # fmt: skip
    by_name = {n: [r["id"] for r in records if names([r]) == [n]] for n in names(records)}
    assert by_name["a.sse"] == [ANTHROPIC_ID]
    assert by_name["b.body.gz"] == OPENAI_IDS
    assert all(r["complete"] for r in records)
    skipped = dict(records.passed_over)
    assert sorted(Path(p).name for p in skipped) == [
        ".git", ".hidden.sse", "README.md", "image.png", "notes.gz",
    ]  # fmt: skip
    assert skipped[str(corpus / ".git")] == "a hidden directory, not walked"
    assert "its content is no capture" in skipped[str(corpus / "README.md")]
    assert "5 entries" in str(caught[0].message)
    # The records are a serial replay of the files, in sorted order of their paths.
    expected = [r for p in sorted(corpus.rglob("*")) for r in _named(p, records)]
    assert records == expected


def _named(path: Path, records: list[Any]) -> list[Any]:
    return [r for r in records if r["stream"].split("#")[0] == str(path)]


def test_replay_takes_several_paths_and_globs_like_the_command(corpus: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing passed over: no warning
        records = replay_paths([corpus / "a.sse", str(corpus / "sub" / "*.body*")])
    assert names(records) == ["a.sse", "b.body.gz", "b.body.gz", "c.body"]
    assert records.passed_over == ()
    # A glob that matches nothing, and a missing path, are error records.
    [missing] = replay_path(corpus / "nothing-*.sse")
    assert missing["error"] == "no file matches this pattern"
    # The command gives the same records for the same paths.
    done = run(corpus, "--jsonl")
    assert done.returncode == 0, done.stderr
    with pytest.warns(PassedOverWarning):
        assert [json.loads(line) for line in done.stdout.splitlines()] == replay_path(corpus)


def test_the_command_names_and_counts_what_it_passed_over(corpus: Path) -> None:
    done = run(corpus, "--jsonl")
    lines = done.stderr.splitlines()
    assert (
        f"toolstitch: {corpus / 'README.md'}: passed over: not named like a capture, and its content is no capture (it starts b'# what these cap')"
        in lines
    )
    assert f"toolstitch: {corpus / '.hidden.sse'}: passed over: a hidden file" in lines
    assert lines[-1] == "toolstitch: 5 entries passed over (not captures; see above)"
    table = run(corpus)
    assert "5 entries passed over (not captures; see above)" in table.stdout
    assert table.returncode == 0


def test_an_empty_directory_is_one_error_record(tmp_path: Path) -> None:
    [record] = replay_path(tmp_path)
    assert record["stream"] == str(tmp_path)
    assert record["error"] == "the directory holds no file"


def test_content_sniffing_reads_the_cores_transports_and_cassettes() -> None:
    assert capture_content(b'data: {"a": 1}\n\n') is None
    assert capture_content(b"  \n event: x\ndata: {}\n") is None
    assert capture_content(b'{"id": "chatcmpl"}') is None
    assert capture_content(b"[{") is None
    assert capture_content(CASSETTE[:4096]) is None
    assert capture_content(gzip.compress(gzip.compress(ANTHROPIC))) is None
    assert capture_content(b"") == "empty"
    assert capture_content(b"hello") == "its content is no capture (it starts b'hello')"
    assert capture_content(gzip.compress(b"<html>")) is not None
    assert capture_content(b"\x1f\x8bnot really gzip") is not None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("jobs", [None, "1", "2"])
def test_a_walk_never_opens_a_named_pipe(tmp_path: Path, jobs: str | None) -> None:
    """Issue 36, item 13: a FIFO named like a capture, with no writer, in a directory:
    reported and passed over, with or without --jobs; the run ends at once."""
    (tmp_path / "a.sse").write_bytes(ANTHROPIC)
    os.mkfifo(tmp_path / "pipe.sse")
    os.mkfifo(tmp_path / "pipe.body")
    args: list[str | Path] = [tmp_path, "--jsonl", *(["--jobs", jobs] if jobs else [])]
    done = run(*args, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [ANTHROPIC_ID]
    for pipe in ("pipe.body", "pipe.sse"):
        line = f"toolstitch: {tmp_path / pipe}: passed over: not a regular file (a named pipe)"
        assert line in done.stderr.splitlines()
    # A glob that matches the pipe passes it over too; in Python as well.
    done = run(tmp_path / "*.sse", "--jsonl", timeout=60)
    assert done.returncode == 0 and "a named pipe" in done.stderr
    with pytest.warns(PassedOverWarning):
        records = replay_path(tmp_path)
    assert [r["id"] for r in records] == [ANTHROPIC_ID]


def test_a_symbolic_link_to_a_directory_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.sse").write_bytes(ANTHROPIC)
    (tmp_path / "walk").mkdir()
    (tmp_path / "walk" / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    passed: list[PassedOver] = []
    assert expand([str(tmp_path / "walk")], passed) == []
    assert passed == [
        PassedOver(str(tmp_path / "walk" / "link"), "a symbolic link to a directory, not followed")
    ]


def test_urls_are_walked_under_the_same_rules(tmp_path: Path) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/walk-{os.getpid()}"
    fs.pipe(f"{root}/a.sse", ANTHROPIC)
    fs.pipe(f"{root}/b.body.gz", gzip.compress(OPENAI_CHAT))
    fs.pipe(f"{root}/README", b"not a capture")
    try:
        with pytest.warns(PassedOverWarning):
            records = replay_paths(f"memory://{root}")
        assert [r["id"] for r in records] == [ANTHROPIC_ID, *OPENAI_IDS]
        assert [Path(p).name for p, _ in records.passed_over] == ["README"]
    finally:
        fs.rm(root, recursive=True)


def test_the_bundled_samples_leave_nothing_passed_over() -> None:
    done = run("--jsonl")
    assert done.returncode == 0
    assert "passed over" not in done.stderr


def test_a_copy_of_the_samples_directory_reports_its_notices(tmp_path: Path) -> None:
    samples = Path(__file__).resolve().parent.parent / "python" / "toolstitch" / "samples"
    shutil.copytree(samples, tmp_path / "samples")
    with pytest.warns(PassedOverWarning):
        records = replay_paths(tmp_path / "samples")
    assert "PROVENANCE.md" in {Path(p).name for p, _ in records.passed_over}
    assert all(r["complete"] for r in records)
