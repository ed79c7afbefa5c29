"""The memo of decoded events on streams as they come from the API: OpenAI adds a nonce
(`obfuscation`) to every chat chunk and Responses event, and the Responses API numbers its
events (`sequence_number`). No two such events are the same, yet the common event is still
served, as dict and as SDK object, with its own nonce and number, which the core checks as
the general path does: a nonce seen before is a replayed event (Q61), a number seen before
is a resend skipped, a number out of order is refused (Q33). Whatever is served reads as
the same events' bytes; any other shape of stamp takes the general path."""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_decoded_memo import (
    CHAT_HEAD,
    CHAT_TAIL,
    MEMO_SETTINGS,
    as_bytes,
    fragment,
    mutate,
    run,
    summary,
    words,
)
from test_decoded_memo_deltas import HEAD, TAIL, delta
from toolstitch import Assembler
from toolstitch.errors import ToolstitchError

Event = dict[str, Any]


def chat_stream(events: list[Event]) -> list[Event]:
    """The chunks as the API sends them: each with a nonce of its own."""
    return [{**e, "obfuscation": f"nonce{n:05d}Q"} for n, e in zip(itertools.count(1), events)]


def responses_stream(events: list[Event]) -> list[Event]:
    """The events as the API sends them: numbered, each with a nonce of its own."""
    return [
        {"type": e["type"], "sequence_number": n, **e, "obfuscation": f"nonce{n:05d}Q"}
        for n, e in enumerate(events)
    ]


ARGUMENTS = '{"city": "Paris", "unit": "celsius", "days": 3}'
PIECES = [ARGUMENTS[i : i + 6] for i in range(0, len(ARGUMENTS), 6)]
CHAT = chat_stream([*CHAT_HEAD[:2], *[fragment(p) for p in PIECES], CHAT_TAIL[-1]])
_RESPONSES: list[Any] = [
    *HEAD[:5],
    *[delta(p) for p in PIECES],
    {**TAIL[1], "arguments": ARGUMENTS},
    {**TAIL[2], "item": {**TAIL[2]["item"], "arguments": ARGUMENTS}},
    TAIL[3],
]
RESPONSES = responses_stream(_RESPONSES)


def read_as_bytes(dialect: str, events: list[Any], slot: int) -> Assembler:
    """Feeds `events` (as dicts, or as the SDK objects made of them) and the same events
    as bytes; both read alike, errors included. The assembler of the objects."""
    feed = (lambda a, e: a.feed(e)) if slot == 0 else (lambda a, e: a.feed(sdk_object(dialect, e)))
    asm, errors = run(dialect, feed, events)
    ref, ref_errors = as_bytes(dialect, events)
    assert errors == ref_errors
    assert summary(asm) == summary(ref)
    return asm


def sdk_object(dialect: str, event: Event) -> Any:
    models = pytest.importorskip("openai._models")
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    kind = ChatCompletionChunk if dialect == "openai-chat" else ResponseStreamEvent
    return models.construct_type(type_=kind, value=json.loads(json.dumps(event)))


CASES = {"openai-chat": CHAT, "openai-responses": RESPONSES}


@pytest.mark.parametrize("slot", [0, 1], ids=["dicts", "sdk-objects"])
@pytest.mark.parametrize("dialect", CASES)
def test_stamped_common_events_are_served_and_read_as_their_bytes(dialect: str, slot: int) -> None:
    asm = read_as_bytes(dialect, CASES[dialect], slot)
    (call,) = asm.messages()[0].tool_uses
    assert call.input == ARGUMENTS
    assert asm.messages()[0].complete
    # Every fragment but the first is served (and Responses' second text delta).
    assert asm._memo_served[slot] >= len(PIECES) - 1


def test_served_fragments_carry_their_stamps_into_the_replay_checks() -> None:
    """The common event sent again with its stamps is a replay, served or not: on chat
    its nonce tells it (refused); on Responses its number does first (a resend,
    skipped), and its nonce where the events are not numbered."""
    unnumbered = [{k: v for k, v in e.items() if k != "sequence_number"} for e in RESPONSES]
    for dialect, stream in [*CASES.items(), ("openai-responses", unnumbered)]:
        replayed = [*stream[:8], stream[7], *stream[8:]]
        for slot in (0, 1):
            read_as_bytes(dialect, replayed, slot)
        asm, errors = run(dialect, lambda a, e: a.feed(e), replayed)
        assert asm._memo_served[0] >= 2
        if stream is RESPONSES:
            assert errors == [None] * len(replayed)
            assert asm.messages()[0].tool_uses[0].input == ARGUMENTS
        else:
            assert errors[8] is not None and "nonce" in errors[8], errors


def test_served_numbers_are_checked_as_the_general_path_checks_them() -> None:
    """A resent number is skipped, a number that jumps is noted, one that goes back
    refused: as the bytes of the same events, with the common event served."""
    numbered = RESPONSES
    resent = [*numbered[:9], {**numbered[8], "obfuscation": "another1nonce"}, *numbered[9:]]
    later = [{**e, "sequence_number": e["sequence_number"] + 5} for e in numbered[9:]]
    jumped = [*numbered[:9], *later]
    back = [*numbered[:9], {**numbered[9], "sequence_number": 3}, *numbered[10:]]
    for events in (resent, jumped, back):
        for slot in (0, 1):
            read_as_bytes("openai-responses", events, slot)
    asm, _ = run("openai-responses", lambda a, e: a.feed(e), resent)
    assert asm._memo_served[0] >= 7


STAMP_NEIGHBOURS: dict[str, tuple[str, Event]] = {
    "a nonce that is a number": ("openai-chat", {"obfuscation": 12345678}),
    "a nonce that is null": ("openai-chat", {"obfuscation": None}),
    "no nonce": ("openai-chat", {"obfuscation": ...}),
    "a nonce with a lone surrogate": ("openai-chat", {"obfuscation": "nonce\ud800nonce"}),
    "a number that is a float": ("openai-responses", {"sequence_number": 9.0}),
    "a number that is true": ("openai-responses", {"sequence_number": True}),
    "a negative number": ("openai-responses", {"sequence_number": -1}),
    "a number past 64 bits": ("openai-responses", {"sequence_number": 2**64}),
    "a number as text": ("openai-responses", {"sequence_number": "9"}),
    "no number": ("openai-responses", {"sequence_number": ...}),
    "a number nested": ("openai-responses", {"x": {"sequence_number": 9}}),
}


@pytest.mark.parametrize("name", STAMP_NEIGHBOURS)
def test_other_stamps_take_the_general_path(name: str) -> None:
    dialect, change = STAMP_NEIGHBOURS[name]
    stream = CASES[dialect]
    odd = {k: v for k, v in {**stream[8], **change}.items() if v is not ...}
    asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
    for e in stream[:8]:
        asm.feed(e)
    before = asm._memo_served[0]
    assert before >= 1
    # Whether it is refused, the comparison with the bytes below says.
    with contextlib.suppress(ToolstitchError):
        asm.feed(odd)
    assert asm._memo_served[0] == before
    if "surrogate" not in name:
        read_as_bytes(dialect, [*stream[:8], odd, *stream[9:]], 0)


@st.composite
def stamped_neighbourhoods(draw: st.DrawFn, dialect: str) -> list[Any]:
    stream = CASES[dialect]
    fragments = stream[2:-1] if dialect == "openai-chat" else stream[5:-3]
    odd = [
        mutate(draw, e) if draw(st.booleans()) else {**e, "obfuscation": draw(words)}
        for e in draw(st.lists(st.sampled_from(fragments), min_size=1, max_size=6))
    ]
    return [*stream[:8], *odd]


@MEMO_SETTINGS
@given(stamped_neighbourhoods("openai-chat"))
def test_generated_stamped_chat_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    read_as_bytes("openai-chat", events, 0)


@MEMO_SETTINGS
@given(stamped_neighbourhoods("openai-responses"))
def test_generated_stamped_responses_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    read_as_bytes("openai-responses", events, 0)
