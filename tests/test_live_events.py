"""Live events: how they are built, and ``Assembler(live="coalesced")``.

The event objects are made without running their classes' generated ``__init__``
(``object.__new__`` and each slot set directly): they must be the very objects the
class would build, equal, hashed, pickled and copied alike.

``Assembler(live="coalesced")``: within each feed, every run of consecutive deltas of
one call (or of one choice's text, reasoning or refusal) is one delta holding their
concatenation; every other event, and the order of all of them, is what ``live=True``
gives.

Every recording in tests/fixtures/real is fed in the same pieces to a per-event and a
coalesced assembler: each feed's coalesced events equal the per-event ones merged by
the reference below, no two consecutive coalesced deltas could still be merged, and
the messages are the same.
"""

from __future__ import annotations

import copy
import gzip
import itertools
import pickle
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_argument_events import recordings
from test_real_recordings import vcr_bodies
from toolstitch import (
    ArgumentTracker,
    Assembler,
    LiveEvent,
    LiveEvents,
    MessageDone,
    RefusalDelta,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolInputDelta,
    ToolstitchError,
)

TEXT_DELTAS = (TextDelta, ThinkingDelta, RefusalDelta)


def mergeable(a: LiveEvent, b: LiveEvent) -> bool:
    if isinstance(a, ToolInputDelta) and isinstance(b, ToolInputDelta):
        # A delta that replaces the input is never joined to the ones before it.
        return (a.choice, a.index) == (b.choice, b.index) and not b.replaces
    return type(a) is type(b) and isinstance(a, TEXT_DELTAS) and a.choice == b.choice


def merged(events: Sequence[LiveEvent]) -> list[LiveEvent]:
    """The reference: runs of mergeable deltas joined, in Python."""
    out: list[LiveEvent] = []
    for e in events:
        last = out[-1] if out else None
        if last is not None and mergeable(last, e):
            if isinstance(last, ToolInputDelta) and isinstance(e, ToolInputDelta):
                joined = last.fragment + e.fragment
                out[-1] = ToolInputDelta(last.choice, last.index, joined, last.replaces)
            elif isinstance(last, TEXT_DELTAS) and isinstance(e, TEXT_DELTAS):
                out[-1] = type(last)(last.choice, last.text + e.text)
        else:
            out.append(e)
    return out


def raw_of(path: Path, body: int | None) -> bytes:
    if body is not None:
        return vcr_bodies(path)[body]
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def feed_both(
    path: Path, body: int | None, rng: random.Random, batch: int = 1
) -> tuple[Assembler, Assembler, list[tuple[list[LiveEvent], list[LiveEvent]]]]:
    """The recording fed to a per-event and a coalesced assembler in the same pieces:
    each feed's events, per-event and coalesced."""
    each, merging = Assembler("auto"), Assembler("auto", live="coalesced")
    out: list[tuple[list[LiveEvent], list[LiveEvent]]] = []

    def both(feed: Callable[[Assembler], Sequence[LiveEvent]]) -> None:
        got: list[list[LiveEvent]] = []
        for asm in (each, merging):
            try:
                got.append(list(feed(asm)))
            except ToolstitchError:
                got.append([])  # not applied (an event after the end): the stream goes on
        out.append((got[0], got[1]))

    raw = raw_of(path, body)
    if path.parent.name == "vercel-ai":  # one JSON event per line: fed in batches
        lines = [line for line in raw.decode().splitlines() if line.strip()]
        for at in range(0, len(lines), batch):
            group = lines[at : at + batch]
            both(lambda asm, group=group: asm.feed_many(group))  # type: ignore[misc]
    else:
        at = 0
        while at < len(raw):
            piece = raw[at : at + rng.randint(1, 400)]
            both(lambda asm, piece=piece: asm.feed_bytes(piece))  # type: ignore[misc]
            at += len(piece)
    both(lambda asm: asm.close())
    return each, merging, out


@pytest.mark.parametrize(("path", "body"), recordings())
@pytest.mark.parametrize("seed", [0, 1])
def test_every_feed_gives_the_per_event_deltas_merged(
    path: Path, body: int | None, seed: int
) -> None:
    each, merging, per_feed = feed_both(path, body, random.Random(seed), batch=1 + seed * 7)
    for per_event, coalesced in per_feed:
        assert coalesced == merged(per_event)
        assert not any(mergeable(a, b) for a, b in itertools.pairwise(coalesced))
    assert each.messages() == merging.messages()


def test_a_read_of_many_fragments_is_one_delta_per_call() -> None:
    head = b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,%s}]}}]}\n\n'
    opening = b'"id":"c%d","function":{"name":"f","arguments":""}'
    piece = b'"function":{"arguments":"%s"}'
    data = b"".join(
        [head % (0, opening % 0)]
        + [head % (0, piece % p) for p in (b'{\\"a', b'\\": ', b"1}")]
        + [head % (1, opening % 1)]
        + [head % (1, piece % p) for p in (b"[", b"2", b"]")]
    )
    asm = Assembler("openai-chat", live="coalesced")
    assert asm.live == "coalesced"
    events = asm.feed_bytes(data)
    assert isinstance(events, LiveEvents)
    assert list(events) == [
        ToolCallStarted(0, 0, "c0", "f"),
        ToolInputDelta(0, 0, '{"a": 1}'),
        ToolCallStarted(0, 1, "c1", "f"),
        ToolInputDelta(0, 1, "[2]"),
    ]
    # Per event, the same read is one delta per fragment.
    assert len(Assembler("openai-chat").feed_bytes(data)) == 8


def test_interleaved_calls_and_texts_merge_only_runs_of_one_stream() -> None:
    def tc(index: int, args: str) -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
        if args == "":
            call |= {"id": f"c{index}", "function": {"name": "f", "arguments": ""}}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    def text(choice: int, content: str) -> dict[str, Any]:
        return {"choices": [{"index": choice, "delta": {"content": content}}]}

    stream = [
        text(0, "He"),
        text(0, "llo"),
        text(1, "Bon"),
        text(0, "!"),
        tc(0, ""),
        tc(1, ""),
        tc(0, "{"),
        tc(0, "}"),
        tc(1, "["),
        tc(0, " "),
        tc(1, "]"),
        tc(1, " "),
    ]
    asm = Assembler("openai-chat", live="coalesced")
    assert list(asm.feed_many(stream)) == [
        TextDelta(0, "Hello"),
        TextDelta(1, "Bon"),
        TextDelta(0, "!"),
        ToolCallStarted(0, 0, "c0", "f"),
        ToolCallStarted(0, 1, "c1", "f"),
        ToolInputDelta(0, 0, "{}"),
        ToolInputDelta(0, 1, "["),
        ToolInputDelta(0, 0, " "),
        ToolInputDelta(0, 1, "] "),
    ]
    # One feed is one event: nothing to merge across feeds.
    one = Assembler("openai-chat", live="coalesced")
    assert [list(one.feed(e)) for e in stream[:2]] == [[TextDelta(0, "He")], [TextDelta(0, "llo")]]


def test_reasoning_and_refusal_runs_merge_and_other_events_stay() -> None:
    def delta(**d: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": d}]}

    stream = [
        delta(reasoning_content="thin"),
        delta(reasoning_content="king"),
        delta(refusal="no"),
        delta(refusal="pe"),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    events = Assembler("openai-chat", live="coalesced").feed_many(stream)
    assert list(events) == [
        ThinkingDelta(0, "thinking"),
        RefusalDelta(0, "nope"),
        MessageDone(0, "stop", True),
    ]
    assert merged(list(Assembler("openai-chat").feed_many(stream))) == list(events)


def test_the_mode_survives_pickle_and_copy_and_bad_modes_are_refused() -> None:
    asm = Assembler("anthropic", live="coalesced")
    asm.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        }
    )
    delta = {"type": "content_block_delta", "index": 0}
    piece = {"type": "input_json_delta", "partial_json": "{"}
    for other in (pickle.loads(pickle.dumps(asm)), copy.copy(asm)):
        assert other.live == "coalesced"
        batch = [delta | {"delta": piece}, delta | {"delta": piece | {"partial_json": "}"}}]
        assert list(other.feed_many(batch)) == [ToolInputDelta(0, 0, "{}")]
    assert Assembler("anthropic").live is True
    assert Assembler("anthropic", live=False).live is False
    assert pickle.loads(pickle.dumps(Assembler("anthropic", live=False))).live is False
    with pytest.raises(ValueError, match='live must be True, False or "coalesced"'):
        Assembler("anthropic", live="merged")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        Assembler("anthropic", live=1)  # type: ignore[arg-type]


def test_the_argument_tracker_reports_the_same_paths_from_coalesced_events() -> None:
    path = Path(__file__).resolve().parent / "fixtures" / "real"
    recording = path / "google_vertex-stream-function-call-args-4-calls.jsonl"
    if not recording.exists():  # pragma: no cover - the fixture is in the repository
        pytest.skip("recording missing")
    _, _, per_feed = feed_both(recording, None, random.Random(3))
    each, merging = ArgumentTracker(), ArgumentTracker()
    done_each = [d for per_event, _ in per_feed for d in each.update(per_event)]
    done_merged = [d for _, coalesced in per_feed for d in merging.update(coalesced)]
    assert done_each == done_merged
    assert each.final_paths() == merging.final_paths()


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.tuples(st.integers(0, 2), st.text(max_size=4), st.booleans()), max_size=30),
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=8),
)
def test_generated_streams_cut_anywhere(
    pieces: list[tuple[int, str, bool]], cuts: list[int]
) -> None:
    """Calls and text interleaved at random, fed in batches of random sizes."""
    stream: list[dict[str, Any]] = []
    opened: set[int] = set()
    for index, text, is_text in pieces:
        if is_text:
            stream.append({"choices": [{"index": 0, "delta": {"content": text}}]})
            continue
        call: dict[str, Any] = {"index": index, "function": {"arguments": text}}
        if index not in opened:
            opened.add(index)
            call |= {"id": f"c{index}", "function": {"name": "f", "arguments": text}}
        stream.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    stream.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    each, merging = Assembler("openai-chat"), Assembler("openai-chat", live="coalesced")
    at, n = 0, 0
    while at < len(stream):
        batch = stream[at : at + cuts[n % len(cuts)]]
        assert list(merging.feed_many(batch)) == merged(list(each.feed_many(batch)))
        at, n = at + len(batch), n + 1
    assert list(merging.close()) == merged(list(each.close()))
    assert merging.messages() == each.messages()
    # Whatever the cuts, the fragments of each call add up to its input.
    inputs = {(b.id, b.input) for b in each.message().tool_uses}
    assert inputs == {(b.id, b.input) for b in merging.message().tool_uses}
    assert all(isinstance(e, ToolCallFinished | MessageDone) for e in merging.close())


def test_event_objects_are_what_their_classes_build(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import toolstitch.messages as messages

    calls: list[str] = []
    for cls in (ToolCallStarted, ToolInputDelta, ToolCallFinished, MessageDone, TextDelta):
        init = cls.__init__

        def counted(self: Any, *args: Any, _init: Any = init, **kw: Any) -> None:
            calls.append(type(self).__name__)
            _init(self, *args, **kw)

        monkeypatch.setattr(cls, "__init__", counted)
    stream = [
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c0", "function": {"name": "f", "arguments": "{}"}}
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    got = list(Assembler("openai-chat").feed_many(stream))
    # Built without the Python __init__ (which the classes run when called).
    assert calls == []
    expected = [
        TextDelta(0, "Hi"),
        ToolCallStarted(0, 0, "c0", "f"),
        ToolInputDelta(0, 0, "{}"),
        ToolCallFinished(0, 0),
        MessageDone(0, "tool_calls", True),
    ]
    # Calling the classes does run it: the patch is in place.
    assert len(calls) == len(expected)
    assert got == expected
    for g, e in zip(got, expected, strict=True):
        assert type(g) is type(e) and hash(g) == hash(e) and repr(g) == repr(e)
        assert dataclasses.astuple(g) == dataclasses.astuple(e)
        assert pickle.loads(pickle.dumps(g)) == g and copy.deepcopy(g) == g
        with pytest.raises(dataclasses.FrozenInstanceError):
            g.choice = 1  # type: ignore[misc]
    delta = got[2]
    assert isinstance(delta, ToolInputDelta)
    assert dataclasses.replace(delta, fragment="[]") == ToolInputDelta(0, 0, "[]")
    assert isinstance(got[0], messages.TextDelta)
    match got[1]:
        case ToolCallStarted(choice=0, index=0, id=call_id, name="f"):
            assert call_id == "c0"
        case _:  # pragma: no cover - a failure
            pytest.fail(f"no match: {got[1]!r}")
