"""``toolstitch replay --events``: each event's number, byte offset, dialect, type and what
it did, checked against what a replay of the same bytes records (problems, skipped events
and notes carry the same event numbers); and the hints that say the true thing.

The command runs as a subprocess (``python -m toolstitch``), on real recordings and on
streams built from them with one event changed.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from toolstitch import Assembler, IncompleteMessageError, Toolset, replay_bytes, replay_path
from toolstitch import _toolstitch as core
from toolstitch._events import event_lines

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
LONG_TAIL = Path(__file__).resolve().parent / "fixtures" / "long_tail"
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
LIMITS = core._ASSEMBLER_DEFAULTS


def run(*args: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    env.update(NO_COLOR="1", COLUMNS="400")
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", *map(str, args)],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def frames(data: bytes) -> list[tuple[int, str | None, str]]:
    found, _, error = core._frames(
        data, max_event_bytes=LIMITS["max_event_bytes"], max_line_bytes=LIMITS["max_line_bytes"]
    )
    assert error is None
    return found


def rows(lines: list[str]) -> list[list[str]]:
    """The event rows of ``event_lines``: number, offset, dialect, type, what it did."""
    return [
        re.split(r"\s{2,}", line.strip(), maxsplit=4)
        for line in lines[2:]
        if re.match(r"\s+\d+\s", line)
    ]


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(REAL.iterdir()) if p.is_file() and not p.name.endswith(".yaml")]
    + sorted((REAL / "vercel-ai").glob("*.chunks.txt"))[:20],
    ids=lambda p: p.name,
)
def test_every_frame_starts_at_its_offset(path: Path) -> None:
    """Each frame's offset is where its event starts in the bytes: an SSE field line, a
    JSON value; and there are as many frames as the core numbered events."""
    data = path.read_bytes()
    found = frames(data)
    asm = Assembler("auto", live=False)
    asm.feed_bytes(data)
    asm.close()
    assert found
    offsets = [offset for offset, _, _ in found]
    assert offsets == sorted(set(offsets))
    transport = core._transport_of(data)
    for offset, name, text in found:
        rest = data[offset:]
        if transport == "sse":
            assert re.match(rb"(event|data|id|retry)\s*:", rest), rest[:40]
            if name is not None:
                assert rest.startswith(b"event:") or name.encode() in rest[:200]
        else:
            assert rest.lstrip()[:1] in (b"{", b"["), rest[:40]
        assert text.strip() == "[DONE]" or text.strip()[:1] in ("{", "[", "")
    numbered = [p.event for m in asm.messages() for p in m.problems if p.event]
    numbered += [s.ordinal for m in asm.messages() for s in m.skipped]
    assert all(n <= len(found) for n in numbered)


def test_the_events_of_a_real_stream_are_listed_with_their_offsets() -> None:
    done = run("--events", REAL / "anthropic_messages-text-then-tool-use.sse")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(": anthropic dialect over sse, 15 events; complete")
    table = rows(lines)
    assert [r[0] for r in table] == [str(n) for n in range(1, 16)]
    assert table[0][1:4] == ["0", "anthropic", "message_start"]
    assert all(r[4] == "applied" for r in table)
    assert [int(r[1]) for r in table] == [o for o, _, _ in frames(ANTHROPIC)]
    assert "  choice 0: complete, 1 call, finish 'tool-calls'" in lines


def test_skipped_and_refused_events_say_why_with_the_replays_numbers(tmp_path: Path) -> None:
    # An event type this version does not read (skipped, Q29), then content after
    # [DONE] (refused, Q24).
    unknown = b'event: message_future\ndata: {"type": "message_future"}\n\n'
    at = ANTHROPIC.index(b"event: content_block_start")
    stream = ANTHROPIC[:at] + unknown + ANTHROPIC[at:]
    path = tmp_path / "skipped.sse"
    path.write_bytes(stream)
    done = run("--events", path)
    table = rows(done.stdout.splitlines())
    assert table[1][3] == "message_future"
    assert table[1][4] == "skipped: 'message_future' is a type or part this version does not read"
    assert int(table[1][1]) == at
    assert done.returncode == 0  # a skipped event leaves the message complete

    late = b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"late"}}]}\n\n'
    cut = tmp_path / "after-done.sse"
    cut.write_bytes(OPENAI_CHAT + late)
    done = run("--events", cut)
    assert done.returncode == 1
    table = rows(done.stdout.splitlines())
    [record, *_] = replay_path(cut)
    assert record["error"] is not None
    assert table[-1][0] == str(len(frames(OPENAI_CHAT)) + 1)
    assert table[-1][1] == str(len(OPENAI_CHAT))
    assert table[-1][4].startswith("refused: ")
    assert table[-1][4][len("refused: ") :] in record["error"]
    assert table[-2][3] == "[DONE]" and table[-2][4] == "applied"


def test_notes_are_listed_under_the_event_they_interpret() -> None:
    path = LONG_TAIL / "xai-x-search-tool.chunks.txt"
    data = path.read_bytes()
    lines, complete = event_lines(data, "auto", path.name)
    assert complete
    asm = Assembler("auto", live=False)
    asm.feed_bytes(data)
    asm.close()
    notes = [n for m in asm.messages() for n in m.notes]
    assert notes
    for note in notes:
        row = next(i for i, line in enumerate(lines) if re.match(rf"\s+{note.event}\s", line))
        follows = lines[row + 1 : row + 1 + len(notes)]
        assert any(f"note {note.kind}: " in line for line in follows)


def test_events_reads_gzip_cassettes_and_standard_input(tmp_path: Path) -> None:
    path = tmp_path / "capture.body.gz"
    path.write_bytes(gzip.compress(ANTHROPIC))
    plain = run("--events", REAL / "anthropic_messages-text-then-tool-use.sse").stdout
    zipped = run("--events", path).stdout
    assert zipped.split("\n", 1)[1] == plain.split("\n", 1)[1]
    cassette = run("--events", REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")
    assert "vcr.yaml#1: bedrock dialect over eventstream, 26 events; complete" in cassette.stdout
    stdin = run("--events", "-", stdin=OPENAI_CHAT)
    assert stdin.stdout.startswith("<stdin>: openai-chat dialect over sse, 26 events; complete")


def test_a_framing_error_and_a_cut_stream_say_so(tmp_path: Path) -> None:
    path = tmp_path / "cut.sse"
    path.write_bytes(OPENAI_CHAT[:900] + b"\xff\xfe\n\n")
    done = run("--events", path)
    assert done.returncode == 1
    assert "  framing stopped: " in done.stdout
    cut = tmp_path / "between.sse"
    cut.write_bytes(OPENAI_CHAT[: len(OPENAI_CHAT) // 2].rsplit(b"\n\n", 1)[0] + b"\n\n")
    done = run("--events", cut)
    assert "not complete: the stream ended before the provider's final event" in done.stdout


# ------------------------------------------------------------------ the hints


def test_gzip_with_trailing_bytes_says_what_is_wrong() -> None:
    [record] = replay_bytes(gzip.compress(ANTHROPIC) + b"<html>")
    assert record["error"] == (
        "not valid gzip: the gzip data ends, and the bytes after it are neither another "
        "gzip member nor zero padding (they start b'<h')"
    )
    # Another member, and zero padding, are gzip as it is meant (twins).
    assert replay_bytes(gzip.compress(ANTHROPIC[:500]) + gzip.compress(ANTHROPIC[500:]))[0][
        "complete"
    ]
    assert replay_bytes(gzip.compress(ANTHROPIC) + bytes(8))[0]["complete"]
    with pytest.raises(zlib.error):
        zlib.decompress(b"not gzip")


def test_an_incomplete_message_without_problems_says_why() -> None:
    cut = OPENAI_CHAT[: len(OPENAI_CHAT) // 2].rsplit(b"\n\n", 1)[0] + b"\n\n"
    asm = Assembler("auto", live=False)
    asm.feed_bytes(cut)
    asm.close()
    message = asm.message()
    assert not message.complete and message.problems == ()
    tools = Toolset({"get_weather": {"type": "object"}})
    with pytest.raises(IncompleteMessageError) as raised:
        message.validated(tools)
    assert "the stream ended before the provider's final event" in str(raised.value)
    with pytest.raises(IncompleteMessageError) as raised:
        tools.validate_message(message)
    assert "the stream ended before the provider's final event" in str(raised.value)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [('{"city": "Paris"}', True), ("", True), ('{"city": "Par', False), ("{} {}", False)],
)
def test_arguments_that_are_not_json_are_marked_without_tools(
    tmp_path: Path, arguments: str, expected: bool
) -> None:
    """A function call whose arguments are not one JSON value (as the tool loop reads
    them: strictly, empty as ``{}``) is marked by ``arguments_json`` and the status,
    with or without ``--tools``; the exit status is 1."""
    import json

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        body = {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": arguments},
    }
    stream = (
        chunk({"role": "assistant", "tool_calls": [call]})
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    [record] = replay_bytes(stream)
    assert record["complete"] is True
    assert record["arguments_json"] is expected
    path = tmp_path / "call.sse"
    path.write_bytes(stream)
    done = run(path)
    assert done.returncode == (0 if expected else 1)
    assert ("the arguments are not one JSON value" in done.stdout) is not expected
    assert ("1 call whose arguments are not JSON" in done.stdout) is not expected
    # A custom tool's free text is not meant to be JSON: nothing to mark.
    custom = replay_path(REAL / "anthropic_messages-text-then-tool-use.sse")
    assert custom[0]["arguments_json"] is True
