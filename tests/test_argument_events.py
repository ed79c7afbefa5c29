"""ArgumentTracker: a ToolArgumentDone when a top-level value of a call's arguments is
complete, on every recording in tests/fixtures.

Each recording is fed in pieces (raw bytes cut at random places, or its events one by
one), and every event the tracker reports is checked against the stream: its value
equals the strict parse of the call's final input at that key; when it fires, the
input received so far holds the whole value (a number's next byte included), and the
input received before that feed did not (so it fires as soon as it can, never
before); every key of every function call whose input is an object is reported,
once, in order.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_real_recordings import vcr_bodies
from toolstitch import (
    ArgumentTracker,
    Assembler,
    LiveEvent,
    ToolArgumentDone,
    ToolCallStarted,
    ToolInputDelta,
    ToolstitchError,
    ToolUseBlock,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "real"


def recordings() -> list[Any]:
    out = []
    for path in sorted(REAL.rglob("*")):
        if not path.is_file() or "licenses" in path.parts or path.suffix in (".md",):
            continue
        if path.name == "EXPECTED.json":
            continue
        if path.name.endswith(".vcr.yaml"):
            for n in range(len(vcr_bodies(path))):
                out.append(pytest.param(path, n, id=f"{path.name}#{n}"))
        else:
            out.append(pytest.param(path, None, id=path.name))
    return out


def feeds(path: Path, body: int | None, seed: int) -> tuple[Assembler, list[list[LiveEvent]]]:
    """The recording fed in pieces: the live events of each feed, in order."""
    asm = Assembler("auto")
    out: list[list[LiveEvent]] = []
    if body is not None:
        raw = vcr_bodies(path)[body]
    else:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
    if path.parent.name == "vercel-ai":  # one JSON event per line
        for line in raw.decode().splitlines():
            if line.strip():
                try:
                    out.append(list(asm.feed(line)))
                except ToolstitchError:
                    continue  # not applied (an event after the end): the stream goes on
    else:
        rng = random.Random(seed)
        at = 0
        while at < len(raw):
            size = rng.randint(1, 40)
            out.append(list(asm.feed_bytes(raw[at : at + size])))
            at += size
    out.append(list(asm.close()))
    return asm, out


def member_ends(text: str) -> dict[str, tuple[int, bool]]:
    """Each top-level key of the JSON object ``text``: where its value ends (the index
    after its last character) and whether it is a number (closed only by the next
    character)."""
    decoder = json.JSONDecoder()
    ends: dict[str, tuple[int, bool]] = {}
    at = text.index("{") + 1

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    at = skip(at)
    if text[at] == "}":
        return ends
    while True:
        key, at = decoder.raw_decode(text, skip(at))
        at = skip(at)
        assert text[at] == ":"
        start = skip(at + 1)
        value, at = decoder.raw_decode(text, start)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        ends[key] = (at, number)
        at = skip(at)
        if text[at] == "}":
            return ends
        assert text[at] == ","
        at += 1


def pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


@pytest.mark.parametrize(("path", "body"), recordings())
@pytest.mark.parametrize("seed", [0, 1])
def test_every_argument_is_reported_once_its_value_is_closed(
    path: Path, body: int | None, seed: int
) -> None:
    asm, per_feed = feeds(path, body, seed)
    tracker = ArgumentTracker()
    received: dict[tuple[int, int], str] = {}
    ids: dict[tuple[int, int], str] = {}
    reported: list[tuple[ToolArgumentDone, int, int]] = []  # event, text before, text after
    for events in per_feed:
        before = dict(received)
        for e in events:
            if isinstance(e, ToolCallStarted):
                ids[(e.choice, e.index)] = e.id
            elif isinstance(e, ToolInputDelta):
                key = (e.choice, e.index)
                received[key] = received.get(key, "") + e.fragment
        for done in tracker.update(events):
            key = (done.choice, done.index)
            reported.append((done, len(before.get(key, "")), len(received.get(key, ""))))

    finals: dict[str, ToolUseBlock] = {b.id: b for m in asm.messages() for b in m.tool_uses}
    checked = 0
    for key, call_id in ids.items():
        block = finals.get(call_id)
        mine = [(d, b, a) for d, b, a in reported if (d.choice, d.index) == key]
        try:
            arguments = json.loads(block.input) if block is not None else None
        except ValueError:
            arguments = None
        if block is None or not isinstance(arguments, dict):
            assert mine == []  # a custom tool's text, a call without input: nothing to say
            continue
        checked += len(mine)
        # The last report of each path holds the final value (a provider that replaces
        # a call's input, as a Responses item restated whole, gets them reported again).
        last = {d.path: d for d, _, _ in mine}
        assert list(last) == [pointer(k) for k in arguments], path
        assert tracker.final_paths()[key] == tuple(last)
        for name, value in arguments.items():
            done = last[pointer(name)]
            assert done.id == call_id
            assert done.value == value and type(done.value) is type(value)
        if received.get(key) != block.input:
            continue  # replaced: the fragments are not one text
        assert [d.path for d, _, _ in mine] == [pointer(k) for k in arguments]
        ends = member_ends(block.input)
        for done, had, has in mine:
            name = next(k for k in arguments if pointer(k) == done.path)
            end, number = ends[name]
            needed = end + 1 if number else end
            # Fired once the value's last byte (a number's next one) was in, and not in a
            # feed that already had it.
            assert has >= needed or (number and has == end == len(block.input))
            assert had < needed
    # Every report belongs to a call whose input is an object.
    assert checked == len(reported)


def test_events_given_as_objects_and_a_replaced_input() -> None:
    tracker = ArgumentTracker()
    events: list[Any] = [
        ToolCallStarted(0, 0, "call_1", "write_file"),
        ToolInputDelta(0, 0, '{"path": "src/main.rs", "te'),
    ]
    (done,) = tracker.update(events)
    assert done == ToolArgumentDone(0, 0, "call_1", "/path", "src/main.rs")
    assert tracker.update([ToolInputDelta(0, 0, 'xt": "fn main')]) == ()
    (text,) = tracker.update([ToolInputDelta(0, 0, '", "n": 1.5e2')])
    assert text.path == "/text" and text.value == "fn main"
    (number,) = tracker.update([ToolInputDelta(0, 0, "}")])  # a number ends at the next byte
    assert number == ToolArgumentDone(0, 0, "call_1", "/n", 150.0)
    assert tracker.final_paths() == {(0, 0): ("/path", "/text", "/n")}
    # The input sent again whole, different (the assembler does so when a provider
    # replaces it): every member is reported again, from the new text.
    again = tracker.update([ToolInputDelta(0, 0, '{"path": "b.rs", "a/b~": [1]}')])
    assert [(d.path, d.value) for d in again] == [("/path", "b.rs"), ("/a~1b~0", [1])]
    assert tracker.final_paths()[(0, 0)] == ("/path", "/a~1b~0")
    # Not an object: nothing to report.
    assert tracker.update([ToolCallStarted(0, 1, "c2", "f"), ToolInputDelta(0, 1, "[1, 2]")]) == ()
    assert "calls=2" in repr(tracker)


def test_an_assembler_without_a_tracker_does_no_argument_work() -> None:
    """The Assembler's own events are unchanged: the tracker is the only consumer."""
    asm = Assembler("anthropic")
    events = asm.feed_bytes((REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes())
    assert not any(isinstance(e, ToolArgumentDone) for e in events)
    assert {type(e).__name__ for e in events} <= {
        "TextDelta",
        "ToolCallStarted",
        "ToolInputDelta",
        "ToolCallFinished",
        "MessageDone",
    }
