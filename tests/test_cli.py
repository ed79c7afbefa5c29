"""``toolstitch replay``, run as a user runs it: a subprocess (``python -m toolstitch`` and
the installed console script), real files, real standard input, a real pseudo-terminal."""

from __future__ import annotations

import gzip
import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from toolstitch import RECORD_KEYS

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
ANTHROPIC = REAL / "anthropic_messages-text-then-tool-use.sse"
OPENAI_CHAT = REAL / "openai_chat-completions-parallel-two-tools.sse"
MISTRAL = REAL / "mistral_chat-single-chunk-tool-call.jsonl"
BEDROCK_CASSETTE = REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml"
RESPONSES_CASSETTE = REAL / "openai_responses-function-call.vcr.yaml"
CONSOLE_SCRIPT = Path(sys.executable).with_name("toolstitch")

ANTHROPIC_CALL = ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", '{"location": "Paris"}')
SAMPLE_IDS = [
    "toolu_01NRLabsLyVHZPKxbKvkfSMn",
    "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
    "weather_e8p4pn45zt0t",
    "cityAttractions_pyxssbwnq9fq",
    "61nzpsv4",
    "call_JMW1whyEaYG438VE1OIflxA2",
    "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    "call_kL0PCQV7M2WMoVX8V8OtYSAL",
]


def _env(columns: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    env["NO_COLOR"] = "1"
    if columns is not None:
        env["COLUMNS"] = columns
    return env


def run(
    *args: str | Path,
    stdin: bytes | None = None,
    script: bool = False,
    cwd: Path | None = None,
    columns: str | None = "400",
) -> subprocess.CompletedProcess[str]:
    """The command's status and output; tables are ``columns`` wide (wide enough by
    default that no cell is folded; ``None``: the width for a pipe)."""
    command = [str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "toolstitch"]
    done = subprocess.run(
        [*command, "replay", *map(str, args)],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=cwd,
        env=_env(columns),
        timeout=120,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def jsonl(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def calls(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["id"], r["name"], r["arguments"]) for r in records]


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout


# ------------------------------------------------------------------ no path: samples


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
def test_no_path_replays_the_bundled_samples_as_a_table(script: bool) -> None:
    if script:
        assert CONSOLE_SCRIPT.is_file(), "the console script is installed with the package"
    done = run(script=script, columns=None)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for header in ("stream", "choice", "id", "name", "arguments", "status"):
        assert header in done.stdout
    for call_id in SAMPLE_IDS:
        assert call_id in done.stdout
    for name in ("anthropic.sse", "bedrock.vcr.yaml#1", "cohere.jsonl", "gemini-interactions.jsonl", "gemini-vertex.jsonl",
                 "openai-chat.sse", "openai-responses.vcr.yaml#2"):  # fmt: skip
        assert name in done.stdout
    assert "9 streams, 12 calls; 9 streams complete" in done.stdout
    assert "error" not in done.stdout


def test_no_path_as_jsonl_gives_every_sample_record() -> None:
    done = run("--jsonl")
    assert done.returncode == 0
    records = jsonl(done.stdout)
    assert [r["id"] for r in records if r["id"] and not r["id"].startswith("call_0_")] == SAMPLE_IDS
    assert all(r["complete"] for r in records)


# ------------------------------------------------------------------ formats


def test_sse_jsonl_cassettes_and_event_stream(tmp_path: Path) -> None:
    document = yaml.safe_load(BEDROCK_CASSETTE.read_bytes())
    frames = tmp_path / "bedrock.eventstream"
    frames.write_bytes(document["interactions"][0]["response"]["body"]["string"])
    done = run("--jsonl", ANTHROPIC, MISTRAL, frames, BEDROCK_CASSETTE, RESPONSES_CASSETTE)
    assert done.returncode == 0, done.stderr
    records = jsonl(done.stdout)
    assert [(r["stream"], r["id"]) for r in records] == [
        (str(ANTHROPIC), "toolu_01NRLabsLyVHZPKxbKvkfSMn"),
        (str(MISTRAL), "gSIMJiOkT"),
        (str(frames), "tooluse_lAG_zP8QRHmSYOwZzzaCqA"),
        (f"{BEDROCK_CASSETTE}#1", "tooluse_lAG_zP8QRHmSYOwZzzaCqA"),
        (f"{BEDROCK_CASSETTE}#2", None),
        (f"{RESPONSES_CASSETTE}#1", "call_kL0PCQV7M2WMoVX8V8OtYSAL"),
        (f"{RESPONSES_CASSETTE}#2", None),
    ]
    assert all(list(r) == list(RECORD_KEYS) for r in records)
    assert all(r["complete"] and r["error"] is None for r in records)


def test_gzip_by_magic_bytes(tmp_path: Path) -> None:
    hidden = tmp_path / "capture.sse"  # gzip inside, nothing in the name says so
    hidden.write_bytes(gzip.compress(ANTHROPIC.read_bytes()))
    named = tmp_path / "cassette.vcr.yaml.gz"
    named.write_bytes(gzip.compress(BEDROCK_CASSETTE.read_bytes()))
    done = run("--jsonl", hidden, named)
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in jsonl(done.stdout)] == [
        ANTHROPIC_CALL[0], "tooluse_lAG_zP8QRHmSYOwZzzaCqA", None,
    ]  # fmt: skip


def test_directories_are_walked_recursively_for_captures(
    generated_recordings: tuple[Path, dict[str, list[tuple[str, str, str]]]],
    tmp_path: Path,
) -> None:
    shared, expected_there = generated_recordings
    # A copy: the recordings are shared by the session's tests, the extra files are not.
    root = tmp_path / "recordings"
    shutil.copytree(shared, root)
    expected = {str(root / Path(p).relative_to(shared)): c for p, c in expected_there.items()}
    (root / "b" / "notes.md").write_text("not a capture\n")
    (root / "b" / ".hidden.sse").write_text("not read either\n")
    done = run("--jsonl", root)
    assert done.returncode == 0, done.stderr
    records = jsonl(done.stdout)
    by_stream: dict[str, list[tuple[Any, ...]]] = {}
    for r in records:
        by_stream.setdefault(r["stream"], []).append((r["id"], r["name"], r["arguments"]))
    assert by_stream == {path: [tuple(c) for c in want] for path, want in expected.items()}
    assert list(by_stream) == sorted(by_stream)


def test_globs_pick_their_matches(
    generated_recordings: tuple[Path, dict[str, list[tuple[str, str, str]]]],
) -> None:
    root, expected = generated_recordings
    done = run("--jsonl", f"{root}/**/*.jsonl")
    assert done.returncode == 0, done.stderr
    streams = {r["stream"] for r in jsonl(done.stdout)}
    assert streams == {p for p in expected if p.endswith(".jsonl")}
    assert len(streams) == 10


def test_standard_input_plain_and_gzipped() -> None:
    done = run("--jsonl", "-", stdin=ANTHROPIC.read_bytes())
    assert done.returncode == 0, done.stderr
    [record] = jsonl(done.stdout)
    assert record["stream"] == "<stdin>"
    assert calls([record]) == [ANTHROPIC_CALL]
    done = run("--jsonl", "-", stdin=gzip.compress(BEDROCK_CASSETTE.read_bytes()))
    assert [r["stream"] for r in jsonl(done.stdout)] == ["<stdin>#1", "<stdin>#2"]


def test_provider_forces_a_dialect() -> None:
    done = run("--jsonl", "--provider", "anthropic", ANTHROPIC)
    assert done.returncode == 0
    assert calls(jsonl(done.stdout)) == [ANTHROPIC_CALL]
    done = run("--jsonl", "--provider", "openai-chat", ANTHROPIC)
    assert done.returncode == 1
    assert [(r["id"], r["complete"]) for r in jsonl(done.stdout)] == [(None, False)]


# ------------------------------------------------------------------ output forms


def test_json_is_one_array_of_the_jsonl_records() -> None:
    as_jsonl = jsonl(run("--jsonl", OPENAI_CHAT, ANTHROPIC).stdout)
    done = run("--json", OPENAI_CHAT, ANTHROPIC)
    assert done.returncode == 0
    assert json.loads(done.stdout) == as_jsonl
    assert len(as_jsonl) == 3
    empty = run("--json", "--provider", "anthropic", "-", stdin=b"")
    assert json.loads(empty.stdout)[0]["stream"] == "<stdin>"


def test_jsonl_and_json_are_exclusive() -> None:
    done = run("--jsonl", "--json", ANTHROPIC)
    assert done.returncode == 2
    assert "not allowed with" in done.stderr


def test_text_adds_text_and_reasoning() -> None:
    records = jsonl(run("--jsonl", "--text", ANTHROPIC).stdout)
    assert list(records[0]) == [*RECORD_KEYS, "text", "reasoning"]
    assert records[0]["text"] == "I'll check the current weather in Paris for you."
    done = run("--text", ANTHROPIC, REAL / "google_vertex-stream-function-call-args-4-calls.jsonl")
    assert done.returncode == 0
    assert "text and reasoning" in done.stdout
    assert "I'll check the current weather in Paris for you." in done.stdout
    assert "Processing User Requests" in done.stdout
    assert "text and reasoning" not in run(ANTHROPIC).stdout


def test_table_shows_calls_and_why_a_stream_is_not_complete(tmp_path: Path) -> None:
    cut = tmp_path / "cut.sse"
    data = ANTHROPIC.read_bytes()
    cut.write_bytes(data[: data.index(b"event: message_delta")])
    done = run(OPENAI_CHAT, cut)
    assert done.returncode == 1
    out = done.stdout
    assert "GetWeatherArgs" in out and "get_stock_price" in out and "get_weather" in out
    assert '{"ticker": "AAPL", "exchange": "NASDAQ"}' in out
    assert "complete" in out and "incomplete: no normal end" in out
    assert "2 streams, 3 calls; 1 stream complete" in out


# ------------------------------------------------------------------ --tools

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
            "additionalProperties": False,
        },
    },
}


def test_tools_pass(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([WEATHER]))
    done = run("--jsonl", "--tools", tools, ANTHROPIC)
    assert done.returncode == 0, done.stderr
    [record] = jsonl(done.stdout)
    assert (record["valid"], record["validation_error"]) == (True, None)
    as_yaml = tmp_path / "tools.yaml"
    as_yaml.write_text(yaml.safe_dump({"tools": [WEATHER]}))
    done = run("--tools", as_yaml, ANTHROPIC)
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout and "0 calls not valid" in done.stdout


def test_tools_report_each_failing_call(tmp_path: Path) -> None:
    strict = {"get_weather": {"type": "object", "properties": {"location": {"type": "integer"}}}}
    tools = tmp_path / "tools.yaml"
    tools.write_text(yaml.safe_dump(strict))
    done = run("--jsonl", "--tools", tools, ANTHROPIC, OPENAI_CHAT)
    assert done.returncode == 1
    records = jsonl(done.stdout)
    assert [r["valid"] for r in records] == [False, False, False]
    assert "/location" in records[0]["validation_error"]
    assert "undeclared tool 'GetWeatherArgs'" in records[1]["validation_error"]
    assert "undeclared tool 'get_stock_price'" in records[2]["validation_error"]
    table = run("--tools", tools, ANTHROPIC, OPENAI_CHAT)
    assert table.returncode == 1
    assert "3 calls not valid" in table.stdout
    assert_no_traceback(table)


def test_tools_file_errors_are_usage_errors(tmp_path: Path) -> None:
    missing = run("--tools", tmp_path / "nope.json", ANTHROPIC)
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('[{"type": "function"}]')
    done = run("--tools", bad, ANTHROPIC)
    assert done.returncode == 2 and "not a tool definition" in done.stderr
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("{ [")
    done = run("--tools", garbage, ANTHROPIC)
    assert done.returncode == 2 and "neither JSON" in done.stderr
    for d in (missing, done):
        assert_no_traceback(d)


# ------------------------------------------------------------------ failures, exit status


def test_exit_status_two_for_usage_errors() -> None:
    for args in (
        ("--provider", "nope", ANTHROPIC),
        ("--bogus",),
        ("--progress", "sometimes"),
        ("--out", "x.parquet", "--jsonl", ANTHROPIC),
        ("--events", "--jsonl", ANTHROPIC),
        ("--scheduler", "local:2", "-"),
        ("--scheduler", "local:zero", ANTHROPIC),
    ):
        done = run(*args)
        assert done.returncode == 2, args
        assert "usage:" in done.stderr, args
        assert done.stdout == ""
        assert_no_traceback(done)
    assert "expected one of" in run("--provider", "nope", ANTHROPIC).stderr


def test_unreadable_and_malformed_get_one_line_each_and_the_rest_is_processed(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(ANTHROPIC, corpus / "1-good.sse")
    (corpus / "2-unreadable.sse").symlink_to(tmp_path / "gone.sse")  # dangling
    (corpus / "3-malformed.jsonl").write_bytes(b"this is not a stream\n")
    shutil.copy(MISTRAL, corpus / "4-good.jsonl")
    missing = tmp_path / "missing.sse"
    done = run("--jsonl", corpus, missing)
    assert done.returncode == 1
    assert_no_traceback(done)
    lines = done.stderr.splitlines()
    assert lines == [
        f"toolstitch: {corpus}/2-unreadable.sse: cannot read: No such file or directory",
        f"toolstitch: {corpus}/3-malformed.jsonl: cannot tell the stream's transport: byte 0 "
        "is 0x74, which starts neither SSE (`data:`, `event:`, `id:`, `retry:`, `:`), JSON "
        "(`{`, `[`) nor an AWS event-stream prelude",
        f"toolstitch: {missing}: cannot read: No such file or directory",
    ]
    records = jsonl(done.stdout)
    assert [(Path(r["stream"]).name, r["id"], r["complete"]) for r in records] == [
        ("1-good.sse", ANTHROPIC_CALL[0], True),
        ("2-unreadable.sse", None, False),
        ("3-malformed.jsonl", None, False),
        ("4-good.jsonl", "gSIMJiOkT", True),
        ("missing.sse", None, False),
    ]


def test_a_stream_cut_inside_an_event_names_the_byte(tmp_path: Path) -> None:
    cut = tmp_path / "cut.sse"
    cut.write_bytes(OPENAI_CHAT.read_bytes()[:3000])
    done = run(cut, ANTHROPIC)
    assert done.returncode == 1
    assert_no_traceback(done)
    [line] = done.stderr.splitlines()
    assert line.startswith(f"toolstitch: {cut}: ") and "byte 2799" in line
    assert "error: the stream ended inside an SSE event" in done.stdout
    assert "get_weather" in done.stdout  # the good stream after it


def test_a_pattern_matching_nothing_is_reported() -> None:
    done = run("--jsonl", "/nonexistent-dir/*.sse", ANTHROPIC)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "toolstitch: /nonexistent-dir/*.sse: no file matches this pattern"
    ]
    assert [r["id"] for r in jsonl(done.stdout)] == [None, ANTHROPIC_CALL[0]]


def test_a_closed_pipe_ends_quietly(
    generated_recordings: tuple[Path, dict[str, list[tuple[str, str, str]]]],
) -> None:
    root, _ = generated_recordings
    command = [sys.executable, "-m", "toolstitch", "replay", "--jsonl", str(root)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        error = proc.stderr.read().decode()
        proc.wait(timeout=60)
    assert "Traceback" not in error


# ------------------------------------------------------------------ progress


def _run_with_terminal_stderr(args: list[str], stdin_after: float | None = None) -> tuple[int, str]:
    """Runs the command with standard error on a pseudo-terminal and returns the status
    and what the terminal showed. With ``stdin_after``, the command reads ``-`` last:
    its bytes are written that many seconds after the first record reached standard
    output, so the run takes at least that long whatever the machine's load."""
    controller, terminal = os.openpty()
    command = [sys.executable, "-m", "toolstitch", "replay", "--jsonl", *args]
    env = _env()
    env.pop("NO_COLOR")
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=terminal, env=env
    )
    os.close(terminal)

    def feed() -> None:
        assert proc.stdin is not None and proc.stdout is not None
        if stdin_after is not None:
            proc.stdout.readline()
            time.sleep(stdin_after)
            proc.stdin.write(ANTHROPIC.read_bytes())
        proc.stdin.close()
        proc.stdout.read()

    feeder = threading.Thread(target=feed)
    feeder.start()
    shown = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        shown += chunk
    feeder.join()
    os.close(controller)
    return proc.wait(timeout=60), shown.decode(errors="replace")


def test_progress_is_silent_when_stderr_is_not_a_terminal() -> None:
    data = ANTHROPIC.read_bytes()
    command = [sys.executable, "-m", "toolstitch", "replay", "--jsonl", "-"]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdin is not None
        proc.stdin.write(data[:100])
        proc.stdin.flush()
        time.sleep(1.5)  # longer than the delay before progress shows on a terminal
        out, err = proc.communicate(data[100:], timeout=60)
    assert proc.returncode == 0
    assert err == b""
    assert json.loads(out)["id"] == ANTHROPIC_CALL[0]


def test_progress_shows_on_a_terminal_once_work_takes_over_a_second() -> None:
    status, shown = _run_with_terminal_stderr([str(OPENAI_CHAT), "-"], stdin_after=1.5)
    assert status == 0
    assert "replaying" in shown and "streams/s" in shown and "MB/s" in shown


def test_progress_stays_away_from_quick_work_on_a_terminal() -> None:
    status, shown = _run_with_terminal_stderr([str(OPENAI_CHAT), str(ANTHROPIC)])
    assert status == 0
    assert shown == ""


def test_progress_always_shows_a_bar_when_the_total_is_known() -> None:
    status, shown = _run_with_terminal_stderr(["--progress", "always", str(OPENAI_CHAT)])
    assert status == 0
    assert "100%" in shown and "streams/s" in shown and "MB/s" in shown
    done = run("--progress", "always", ANTHROPIC)  # stderr a pipe: shown all the same
    assert "streams/s" in done.stderr
    assert run("--progress", "never", ANTHROPIC).stderr == ""


# ------------------------------------------------------------------ the quickstart


def test_the_quickstart_example_runs() -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "quickstart.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "call-1 weather" in done.stdout
