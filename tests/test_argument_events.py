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
from hypothesis import given, settings
from hypothesis import strategies as st
from test_real_recordings import vcr_bodies
from toolstitch import (
    ArgumentTracker,
    Assembler,
    LiveEvent,
    ToolArgumentDone,
    ToolArgumentsReset,
    ToolCallStarted,
    ToolInputDelta,
    ToolstitchError,
    ToolUseBlock,
)
from toolstitch._toolstitch import _parse_strict

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
    replaced: set[tuple[int, int]] = set()
    ids: dict[tuple[int, int], str] = {}
    reported: list[tuple[ToolArgumentDone, int, int]] = []  # event, text before, text after
    for events in per_feed:
        before = dict(received)
        for e in events:
            if isinstance(e, ToolCallStarted):
                ids[(e.choice, e.index)] = e.id
            elif isinstance(e, ToolInputDelta):
                key = (e.choice, e.index)
                if e.replaces:
                    replaced.add(key)
                received[key] = ("" if e.replaces else received.get(key, "")) + e.fragment
        for done in tracker.update(events):
            key = (done.choice, done.index)
            if isinstance(done, ToolArgumentsReset):
                # What was reported before is void: only the new input's reports count.
                reported = [r for r in reported if (r[0].choice, r[0].index) != key]
                continue
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
        # Since the last reset, each path once, in order, with the final value.
        assert [d.path for d, _, _ in mine] == [pointer(k) for k in arguments], path
        assert tracker.final_paths()[key] == tuple(d.path for d, _, _ in mine)
        for (done, _, _), value in zip(mine, arguments.values(), strict=True):
            assert done.id == call_id
            assert done.value == value and type(done.value) is type(value)
        # The fragments, appended or replacing as each says, are the call's input.
        assert received.get(key) == block.input
        if key in replaced:
            continue  # the timing below is measured on one text

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
    assert text == ToolArgumentDone(0, 0, "call_1", "/text", "fn main")
    (number,) = tracker.update([ToolInputDelta(0, 0, "}")])  # a number ends at the next byte
    assert number == ToolArgumentDone(0, 0, "call_1", "/n", 150.0)
    assert tracker.final_paths() == {(0, 0): ("/path", "/text", "/n")}
    # The input replaced (the assembler says so when a provider restates it with text
    # that does not extend it): a reset, then every member again, from the new text.
    reset, *again = tracker.update(
        [ToolInputDelta(0, 0, '{"path": "b.rs", "a/b~": [1]}', replaces=True)]
    )
    assert reset == ToolArgumentsReset(0, 0, "call_1")
    assert again == [
        ToolArgumentDone(0, 0, "call_1", "/path", "b.rs"),
        ToolArgumentDone(0, 0, "call_1", "/a~1b~0", [1]),
    ]
    assert tracker.final_paths()[(0, 0)] == ("/path", "/a~1b~0")
    # Text that cannot continue the input, not marked as a replacement, is never taken
    # for one: the input is invalid from there, and nothing more is reported.
    assert tracker.update([ToolInputDelta(0, 0, '{"x": 1}')]) == ()
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


# ------------------------------------------- replacements (Q10/Q44, Q36, Q41)
#
# A provider that restates a call's input with text that does not extend it: the
# assembler marks that delta ``replaces``, the tracker resets the call, and
# ``live="coalesced"`` never joins it to the deltas before it.


def sse(*events: dict[str, Any]) -> bytes:
    out = b""
    for e in events:
        name = f"event: {e['type']}\n" if "type" in e else ""
        out += f"{name}data: {json.dumps(e)}\n\n".encode()
    return out


def responses_stream(deltas: list[str], done: str) -> bytes:
    """One Responses function call: its argument deltas, then a ``.done`` (and the
    item's ``done``) giving ``done`` as the whole arguments."""
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
    ]
    for d in deltas:
        events.append(
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "item_id": "fc_1",
                "delta": d,
            }
        )
    events += [
        {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "item_id": "fc_1",
            "arguments": done,
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": done},
        },
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
    for n, e in enumerate(events):
        e["sequence_number"] = n
    return sse(*events)


def chat_stream(pieces: list[str]) -> bytes:
    """One OpenAI chat call whose ``arguments`` come in ``pieces``, chunk by chunk."""
    chunks = []
    for n, piece in enumerate(pieces):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if n == 0:
            call.update(id="call_1", type="function")
            call["function"]["name"] = "f"
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return sse(*chunks) + b"data: [DONE]\n\n"


def track(
    provider: str, raw: bytes, cuts: list[int], live: bool | str
) -> tuple[Assembler, list[Any], list[ToolInputDelta]]:
    """``raw`` fed in the pieces ``cuts`` makes: the tracker's reports, and the deltas."""
    asm = Assembler(provider, live=live)  # type: ignore[arg-type]
    tracker = ArgumentTracker()
    reports: list[Any] = []
    deltas: list[ToolInputDelta] = []
    at = 0
    for cut in [*sorted(set(cuts)), len(raw)]:
        events = asm.feed_bytes(raw[at:cut])
        deltas += [e for e in events if isinstance(e, ToolInputDelta)]
        reports += tracker.update(events)
        at = cut
    events = asm.close()
    deltas += [e for e in events if isinstance(e, ToolInputDelta)]
    reports += tracker.update(events)
    return asm, reports, deltas


def since_reset(reports: list[Any]) -> list[tuple[str, Any]]:
    last = max((n for n, r in enumerate(reports) if isinstance(r, ToolArgumentsReset)), default=-1)
    return [(r.path, r.value) for r in reports[last + 1 :]]


def rebuilt(deltas: list[ToolInputDelta]) -> str:
    text = ""
    for d in deltas:
        text = d.fragment if d.replaces else text + d.fragment
    return text


def check_against_final(asm: Assembler, reports: list[Any], deltas: list[ToolInputDelta]) -> None:
    """The tracker's reports since its last reset are the strict parse of the final
    arguments, key by key, in order; earlier ones are only ever voided by a reset; the
    deltas, appended or replacing as each says, are the final input."""
    (block,) = asm.message().tool_uses
    assert rebuilt(deltas) == block.input
    try:
        final = _parse_strict(block.input)
    except ToolstitchError:
        return  # no final arguments: nothing to compare with
    if not isinstance(final, dict):
        assert since_reset(reports) == []
        return
    assert since_reset(reports) == [(pointer(k), v) for k, v in final.items()]
    for path, value in since_reset(reports):
        assert type(value) is type(final[path[1:].replace("~1", "/").replace("~0", "~")])


def test_a_done_that_parses_as_the_deltas_continuation_resets_the_call() -> None:
    """The issue's repro: deltas ``{"a":`` then a ``.done`` of ``{"b":1,"c":"x"}``. Joined
    they parse as ``{"a":{"b":1,"c":"x"}``: before, ``/a`` was reported with the whole
    object and ``/b``, ``/c`` never were."""
    raw = responses_stream(['{"a":'], '{"b":1,"c":"x"}')
    for live in (True, "coalesced"):
        asm, reports, deltas = track("openai-responses", raw, [], live)
        assert deltas == [
            ToolInputDelta(0, 0, '{"a":'),
            ToolInputDelta(0, 0, '{"b":1,"c":"x"}', replaces=True),
        ]
        assert reports == [
            ToolArgumentsReset(0, 0, "call_1"),
            ToolArgumentDone(0, 0, "call_1", "/b", 1),
            ToolArgumentDone(0, 0, "call_1", "/c", "x"),
        ]
        check_against_final(asm, reports, deltas)


def test_twin_a_done_that_extends_the_deltas_is_no_replacement() -> None:
    raw = responses_stream(['{"a":'], '{"a":1}')
    asm, reports, deltas = track("openai-responses", raw, [], "coalesced")
    assert deltas == [ToolInputDelta(0, 0, '{"a":1}')]  # one read: joined, no reset
    assert reports == [ToolArgumentDone(0, 0, "call_1", "/a", 1)]
    check_against_final(asm, reports, deltas)


def test_coalesced_never_joins_a_replacement_to_the_deltas_before_it() -> None:
    """Q41 in one read: ``{}`` then the real object. Coalesced, the replacement is its own
    event (joined, ``{}{"city":"Paris"}`` would be one broken text)."""
    raw = chat_stream(["{}", '{"city": "Paris"}'])
    asm, reports, deltas = track("openai-chat", raw, [], "coalesced")
    assert deltas == [
        ToolInputDelta(0, 0, "{}"),
        ToolInputDelta(0, 0, '{"city": "Paris"}', replaces=True),
    ]
    assert reports == [
        ToolArgumentsReset(0, 0, "call_1"),
        ToolArgumentDone(0, 0, "call_1", "/city", "Paris"),
    ]
    assert [n.kind for n in asm.message().notes] == ["empty-arguments-replaced"]
    check_against_final(asm, reports, deltas)


def test_coalesced_joins_the_deltas_after_a_replacement_to_it() -> None:
    """What follows a replacement in the same read extends it: one event, still
    replacing, whose text is the input from the replacement on."""
    raw = chat_stream(["{}", '{"q": "x"}', ', "r": 1}'])
    each = track("openai-chat", raw, [], True)
    asm, reports, deltas = track("openai-chat", raw, [], "coalesced")
    assert deltas == [
        ToolInputDelta(0, 0, "{}"),
        ToolInputDelta(0, 0, '{"q": "x"}, "r": 1}', replaces=True),
    ]
    assert rebuilt(deltas) == rebuilt(each[2]) == asm.message().tool_uses[0].input
    assert reports == each[1]  # the tracker tells the same, however the deltas came


def test_twin_q36_a_restatement_that_extends_the_input_is_joined() -> None:
    """Q36: ``{`` then the whole object starting with it: the assembler sends only what
    extends the input, so nothing replaces and coalesced joins it as before."""
    raw = chat_stream(["{", '{"city": "Paris"}'])
    asm, reports, deltas = track("openai-chat", raw, [], "coalesced")
    assert deltas == [ToolInputDelta(0, 0, '{"city": "Paris"}')]
    assert reports == [ToolArgumentDone(0, 0, "call_1", "/city", "Paris")]
    assert [n.kind for n in asm.message().notes] == ["arguments-restated"]
    check_against_final(asm, reports, deltas)


def test_twin_a_real_object_then_another_is_no_replacement() -> None:
    """Q41's twin: two real objects are appended (and never valid): no delta replaces,
    no reset, and nothing is reported past the first object."""
    raw = chat_stream(['{"q": "a"}', '{"q": "b"}'])
    for live in (True, "coalesced"):
        asm, reports, deltas = track("openai-chat", raw, [], live)
        assert not any(d.replaces for d in deltas)
        assert reports == [ToolArgumentDone(0, 0, "call_1", "/q", "a")]
        assert rebuilt(deltas) == asm.message().tool_uses[0].input == '{"q": "a"}{"q": "b"}'


_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
_json_value = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_arguments = st.dictionaries(st.text(max_size=5), _json_value, max_size=4)


@st.composite
def replaced_streams(draw: st.DrawFn) -> tuple[str, bytes]:
    """A call whose arguments end as ``final`` after one of the replacement rules: a
    Responses ``.done`` after deltas of other text (a cut prefix of another object, so
    that it often parses as the deltas' continuation), or of a prefix of ``final``
    (Q10/Q44); Q41's ``{}`` then the object; Q36's cut prefix then the whole object."""
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    final = json.dumps(draw(_arguments), separators=separators)
    rule = draw(st.sampled_from(["responses-other", "responses-prefix", "q41", "q36"]))
    if rule in ("responses-other", "responses-prefix"):
        source = final if rule == "responses-prefix" else json.dumps(draw(_arguments))
        held = source[: draw(st.integers(0, len(source)))]
        cuts = sorted(draw(st.lists(st.integers(0, len(held)), max_size=3)))
        deltas = [held[a:b] for a, b in zip([0, *cuts], [*cuts, len(held)], strict=True)]
        return "openai-responses", responses_stream([d for d in deltas if d], final)
    if rule == "q41":
        return "openai-chat", chat_stream(["{}", final])
    held = final[: draw(st.integers(1, max(1, len(final) - 1)))]
    return "openai-chat", chat_stream([held, final])


@settings(max_examples=300, deadline=None)
@given(
    stream=replaced_streams(),
    cuts=st.lists(st.integers(0, 4000), max_size=6),
    live=st.sampled_from([True, "coalesced"]),
)
def test_reports_equal_the_final_parse_under_every_replacement_rule(
    stream: tuple[str, bytes], cuts: list[int], live: bool | str
) -> None:
    provider, raw = stream
    asm, reports, deltas = track(provider, raw, [c % (len(raw) + 1) for c in cuts], live)
    check_against_final(asm, reports, deltas)
