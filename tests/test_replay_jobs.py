"""``toolstitch replay --jobs N``: the files spread over worker processes give exactly
what the serial run gives (records in the same order, the same error lines, the same exit
status), run as a user runs it: a subprocess, real files, real standard input, and real
worker processes, found in /proc."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_recordings

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
ANTHROPIC = REAL / "anthropic_messages-text-then-tool-use.sse"
OPENAI_CHAT = REAL / "openai_chat-completions-parallel-two-tools.sse"
MISTRAL = REAL / "mistral_chat-single-chunk-tool-call.jsonl"
TOOLS = {
    "get_weather": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    }
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "400"
    return env


def _command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "toolstitch", "replay", *map(str, args)]


def run(*args: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        _command(*args), input=stdin, capture_output=True, env=_env(), timeout=300
    )


def assert_same_run(
    serial: subprocess.CompletedProcess[bytes], spread: subprocess.CompletedProcess[bytes]
) -> None:
    assert b"Traceback" not in serial.stderr + spread.stderr
    assert spread.stdout == serial.stdout
    assert spread.stderr == serial.stderr
    assert spread.returncode == serial.returncode


def _bad_corpus(root: Path) -> list[Path]:
    """A directory of 150 generated recordings (several tasks' worth, every fifth
    gzipped) with broken files among them, and paths naming it and more."""
    corpus = root / "corpus"
    write_recordings(corpus, 150, seed=7)
    shutil.copy(ANTHROPIC, corpus / "a" / "0003-real.sse")
    (corpus / "a" / "0005-unreadable.sse").symlink_to(root / "gone.sse")
    (corpus / "b" / "0010-malformed.jsonl").write_bytes(b"this is not a stream\n")
    (corpus / "b" / "0020-cut.sse").write_bytes(OPENAI_CHAT.read_bytes()[:3000])
    (corpus / "b" / "0030-bad.sse.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (corpus / "b" / "0040-truncated.sse.gz").write_bytes(
        gzip.compress(ANTHROPIC.read_bytes(), mtime=0)[:200]
    )
    (corpus / "b" / "0050-empty.sse").write_bytes(b"")
    return [corpus, root / "missing.sse", Path("/nonexistent-dir/*.sse"), MISTRAL]


# ------------------------------------------------------------------ same output


@pytest.mark.parametrize("form", ["--jsonl", "--json", "--text"])
def test_the_bundled_samples_give_the_same_bytes_on_two_workers(form: str) -> None:
    serial = run(form, "--jobs", "1")
    assert serial.returncode == 0 and serial.stdout
    assert_same_run(serial, run(form, "--jobs", "2"))


def test_a_corpus_with_bad_files_gives_the_same_records_errors_and_status(
    tmp_path: Path,
) -> None:
    paths = _bad_corpus(tmp_path)
    serial = run("--jsonl", "--jobs", "1", *paths)
    assert serial.returncode == 1
    records = [json.loads(line) for line in serial.stdout.splitlines()]
    assert len({r["stream"] for r in records}) == 150 + 7 + 3
    errors = serial.stderr.decode().splitlines()
    assert len(errors) == 7 and all(line.startswith("toolstitch: ") for line in errors)
    for jobs in ("2", "3"):
        assert_same_run(serial, run("--jsonl", "--jobs", jobs, *paths))
    # The table, built from the same records, is the same too.
    assert_same_run(run("--jobs", "1", *paths), run("--jobs", "2", *paths))


def test_tools_validate_the_same_on_workers(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    paths: list[Path] = [*_bad_corpus(tmp_path), ANTHROPIC]
    serial = run("--jsonl", "--tools", tools, "--jobs", "1", *paths)
    checked = [json.loads(line) for line in serial.stdout.splitlines()]
    assert {r["valid"] for r in checked} == {True, False, None}
    assert_same_run(serial, run("--jsonl", "--tools", tools, "--jobs", "2", *paths))


def test_standard_input_among_files_keeps_its_place(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_recordings(corpus, 100, seed=3)
    stdin = gzip.compress(ANTHROPIC.read_bytes(), mtime=0)
    paths: list[str | Path] = [corpus / "a", "-", corpus / "b"]
    serial = run("--jsonl", "--jobs", "1", *paths, stdin=stdin)
    streams = [json.loads(line)["stream"] for line in serial.stdout.splitlines()]
    assert "<stdin>" in streams[1:-1]
    assert_same_run(serial, run("--jsonl", "--jobs", "2", *paths, stdin=stdin))


def test_spawned_workers_give_the_same_run(tmp_path: Path) -> None:
    """Where workers cannot be forks (macOS, Windows, a caller with threads of its own)
    they are spawned: fresh interpreters, sent the sources once; the run is the same."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    paths = [str(p) for p in _bad_corpus(tmp_path)]
    code = (
        "import sys, toolstitch.cli as cli\n"
        "cli._forks = lambda: False\n"
        "raise SystemExit(cli.main(['replay', *sys.argv[1:]]))\n"
    )
    for args in (["--jsonl", "--tools", str(tools)], ["--json", "--text"]):
        spawned = subprocess.run(
            [sys.executable, "-c", code, *args, "--jobs", "2", *paths],
            capture_output=True,
            env=_env(),
            timeout=300,
        )
        assert_same_run(run(*args, "--jobs", "1", *paths), spawned)


# ------------------------------------------------------------------ real workers


def _workers(proc: subprocess.Popen[bytes], count: int) -> list[int]:
    """The process ids of the command's worker processes, once ``count`` of them run
    (the wait is bounded, and nothing is asserted about how long it took). On Linux a
    worker is a fork of the command: a child with the command's own command line."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        command = _cmdline(proc.pid)
        found = [pid for pid in _children(proc.pid) if command and _cmdline(pid) == command]
        if len(found) >= count:
            return found
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"the command did not start {count} worker processes")


def _children(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
            if int(stat.rpartition(")")[2].split()[1]) == parent:
                children.append(int(entry))
    return children


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _held_by_a_fifo(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A named pipe first (its reader waits until it is written) and files after it."""
    fifo = tmp_path / "first.sse"
    os.mkfifo(fifo)
    corpus = tmp_path / "corpus"
    write_recordings(corpus, 80, seed=5)
    return fifo, [fifo, corpus]


def _replay_held(
    tmp_path: Path, fifo: Path, paths: list[Path], *jobs: str
) -> tuple[list[int], bytes, bytes, int]:
    """Runs the command on ``paths`` (the fifo first), finds its workers while the fifo
    holds the run, then writes the fifo: (workers, output, errors, status)."""
    with subprocess.Popen(
        _command("--jsonl", *jobs, *paths),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    ) as proc:
        workers = _workers(proc, 2)
        with open(fifo, "wb") as writer:
            writer.write(ANTHROPIC.read_bytes())
        out, err = proc.communicate(timeout=300)
    return workers, out, err, proc.returncode


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc and fifos")
def test_the_files_are_replayed_by_worker_processes(tmp_path: Path) -> None:
    fifo, paths = _held_by_a_fifo(tmp_path)
    workers, out, err, status = _replay_held(tmp_path, fifo, paths, "--jobs", "2")
    assert len(workers) == 2
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["stream"] == str(fifo)
    assert records[0]["id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    copy = tmp_path / "first-copy.sse"
    copy.write_bytes(ANTHROPIC.read_bytes())
    serial = run("--jsonl", "--jobs", "1", copy, paths[1])
    assert out.replace(str(fifo).encode(), str(copy).encode()) == serial.stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc and fifos")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_by_default_a_large_corpus_goes_to_one_worker_per_core(tmp_path: Path) -> None:
    fifo, paths = _held_by_a_fifo(tmp_path)
    # Past the size under which the default stays in one process (cli._SPREAD_BYTES).
    big = tmp_path / "big"
    big.mkdir()
    body = OPENAI_CHAT.read_bytes()
    copies = 8_100_000 // len(body) + 1
    for i in range(copies):
        (big / f"{i:05d}.sse").write_bytes(body)
    workers, out, err, status = _replay_held(tmp_path, fifo, [*paths, big])
    assert len(workers) == min(len(os.sched_getaffinity(0)), 100)
    assert status == 0, err
    assert len(out.splitlines()) == len(
        run("--jsonl", "--jobs", "1", ANTHROPIC, *paths[1:], big).stdout.splitlines()
    )


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc and fifos")
def test_a_worker_killed_mid_run_is_one_line_and_status_one(tmp_path: Path) -> None:
    fifo, paths = _held_by_a_fifo(tmp_path)
    with subprocess.Popen(
        _command("--jsonl", "--jobs", "2", *paths),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    ) as proc:
        for worker in _workers(proc, 2):
            os.kill(worker, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1
    assert b"Traceback" not in err
    [line] = err.decode().splitlines()
    assert line.startswith(
        f"toolstitch: a worker process ended before it finished replaying {fifo}"
    )
    assert out == b""


# ------------------------------------------------------------------ usage


@pytest.mark.parametrize("value", ["0", "-1", "two", ""])
def test_a_bad_job_count_is_a_usage_error(value: str) -> None:
    done = run("--jobs", value, ANTHROPIC)
    assert done.returncode == 2
    assert b"--jobs" in done.stderr and b"Traceback" not in done.stderr


def test_jobs_and_a_cluster_are_exclusive() -> None:
    done = run("--jobs", "2", "--scheduler", "local:1", ANTHROPIC)
    assert done.returncode == 2
    assert b"--jobs or --scheduler" in done.stderr
