"""The memo of decoded events on the Responses API and on chat text: a delta that is
exactly the last one with another string (a Responses delta's type, item id and indexes,
nothing else; a chat chunk whose delta is `content` alone, or `reasoning_content` or
`reasoning` alone with a null `content`) is served, as dict and as SDK
object, and anything else, however close (a sequence number, a nonce, another item,
another type, a role beside the text), takes the general path with the result the bytes
give."""

from __future__ import annotations

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
    assert_dicts_as_bytes,
    chat,
    mutate,
    run,
    served,
    summary,
    words,
)

Event = dict[str, Any]
ITEM = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": "",
    "status": "in_progress",
}


def delta(piece: Any, kind: str = "response.function_call_arguments.delta", **more: Any) -> Event:
    return {"type": kind, "item_id": "fc_1", "output_index": 1, "delta": piece, **more}


HEAD = [
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
    {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
    },
    delta(
        "Let me ", "response.output_text.delta", content_index=0, item_id="msg_1", output_index=0
    ),
    delta("look.", "response.output_text.delta", content_index=0, item_id="msg_1", output_index=0),
    {"type": "response.output_item.added", "output_index": 1, "item": ITEM},
    delta('{"city"'),
    delta(': "Par'),
]
DONE = '{"city": "Paris"}'
TAIL = [
    delta('is"}'),
    {
        "type": "response.function_call_arguments.done",
        "item_id": "fc_1",
        "output_index": 1,
        "arguments": DONE,
    },
    {
        "type": "response.output_item.done",
        "output_index": 1,
        "item": {**ITEM, "arguments": DONE, "status": "completed"},
    },
    {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
]
STREAM = (HEAD, TAIL)


def test_the_common_delta_is_served_and_gives_the_bytes_result() -> None:
    events = [*HEAD, *TAIL]
    asm, errors = run("openai-responses", lambda a, e: a.feed(e), events)
    ref, ref_errors = as_bytes("openai-responses", events)
    assert errors == ref_errors == [None] * len(events)
    assert summary(asm) == summary(ref)
    # The second text delta and the second and third argument deltas.
    assert asm._memo_served[0] == 3
    (call,) = asm.messages()[0].tool_uses
    assert call.input == DONE
    before, after = served("openai-responses", delta('is", "unit"'), STREAM)
    assert after == before + 1


NEIGHBOURS = {
    "another item id": delta("x", item_id="fc_2"),
    "no item id": {k: v for k, v in delta("x").items() if k != "item_id"},
    "another output index": delta("x", output_index=2),
    "True for an index": delta("x", output_index=True),
    "a content index": delta("x", content_index=0),
    "a sequence number": delta("x", sequence_number=7),
    "a nonce": delta("x", obfuscation="abc"),
    "an unknown member": delta("x", x_extra=None),
    "a text delta": delta("x", "response.output_text.delta"),
    "a custom tool's input": delta("x", "response.custom_tool_call_input.delta"),
    "the arguments done": delta("x", "response.function_call_arguments.done"),
    "a number": delta(1),
    "null": delta(None),
    "an item as well": delta("x", item=None),
    "members in another order": dict(reversed(list(delta("x").items()))),
}


@pytest.mark.parametrize("name", NEIGHBOURS)
def test_responses_neighbours_take_the_general_path(name: str) -> None:
    before, after = served("openai-responses", NEIGHBOURS[name], STREAM)
    assert after == before


def test_an_event_name_not_the_templates_takes_the_general_path() -> None:
    asm = Assembler("openai-responses", live=False)
    for e in HEAD:
        asm.feed(e)
    before = asm._memo_served[0]
    asm.feed(delta("is"), event_type="response.function_call_arguments.delta")
    assert asm._memo_served[0] == before


@st.composite
def neighbourhoods(draw: st.DrawFn) -> list[Any]:
    odd = [
        mutate(draw, delta(draw(words))) if draw(st.booleans()) else delta(draw(words))
        for _ in range(draw(st.integers(1, 6)))
    ]
    return [*HEAD, *odd]


@MEMO_SETTINGS
@given(neighbourhoods())
def test_generated_responses_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    assert_dicts_as_bytes("openai-responses", events)


# ------------------------------------------------------------------ SDK objects

openai_models = pytest.importorskip("openai._models")
from openai.types.responses import ResponseStreamEvent  # noqa: E402
from toolstitch import Assembler  # noqa: E402


def event_object(event: Event) -> Any:
    return openai_models.construct_type(type_=ResponseStreamEvent, value=event)


def objects_served(odd: Any) -> tuple[int, int]:
    """How many SDK objects the memo served while reading `odd` after the head, and
    checks the whole stream against the bytes of the same objects' `to_dict()`."""
    objects = [event_object(json.loads(json.dumps(e))) for e in HEAD]
    asm = Assembler("openai-responses", live=False)
    for o in objects:
        asm.feed(o)
    before = asm._memo_served[1]
    asm.feed(odd)
    after = asm._memo_served[1]
    tail = [event_object(e) for e in TAIL[1:]]
    for o in tail:
        asm.feed(o)
    asm.close()
    plain = [o.to_dict(mode="json") for o in [*objects, odd, *tail]]
    ref, errors = as_bytes("openai-responses", plain)
    assert errors == [None] * len(errors)
    assert summary(asm) == summary(ref)
    return before, after


def test_sdk_deltas_are_served_and_their_neighbours_are_not() -> None:
    before, after = objects_served(event_object(delta('is"}')))
    assert before == 2 and after == before + 1
    # Numbered, as the API numbers its events: the general path (Q33 reads the number).
    numbered = event_object(delta('is"}', sequence_number=9))
    before, after = objects_served(numbered)
    assert after == before
    # The same event with a field set afterwards, and another item id.
    late = event_object(delta('is"}'))
    late.sequence_number = 9
    before, after = objects_served(late)
    assert after == before
    other = event_object(delta('is"}'))
    other.item_id = "fc_9"
    before, after = objects_served(other)
    assert after == before


# ------------------------------------------------------------------ chat text


def text(piece: Any, **more: Any) -> Event:
    return chat({"content": piece, **more})


TEXT = ([CHAT_HEAD[0], text("Let me "), text("look.")], CHAT_HEAD[1:] + CHAT_TAIL)
TEXT_NEIGHBOURS = {
    "a role as well": text("x", role="assistant"),
    "a refusal as well": text("x", refusal=None),
    "a call as well": text("x", tool_calls=[{"index": 0, "function": {"arguments": "{}"}}]),
    "another choice": {**text("x"), "choices": [{**text("x")["choices"][0], "index": 1}]},
    "a finish reason": chat({"content": "x"}, "stop"),
    "content parts": text([{"type": "text", "text": "x"}]),
    "content null": text(None),
    "a reasoning text": chat({"reasoning_content": "x"}),
}


def test_chat_text_is_served_and_gives_the_bytes_result() -> None:
    before, after = served("openai-chat", text(" Now."), TEXT)
    assert before == 1 and after == 2
    asm, _ = run("openai-chat", lambda a, e: a.feed(e), [*TEXT[0], *TEXT[1]])
    first = asm.messages()[0].blocks[0]
    assert getattr(first, "text", None) == "Let me look."


@pytest.mark.parametrize("name", TEXT_NEIGHBOURS)
def test_chat_text_neighbours_take_the_general_path(name: str) -> None:
    before, after = served("openai-chat", TEXT_NEIGHBOURS[name], TEXT)
    assert after == before


@st.composite
def text_neighbourhoods(draw: st.DrawFn) -> list[Any]:
    odd = [
        mutate(draw, text(draw(words))) if draw(st.booleans()) else text(draw(words))
        for _ in range(draw(st.integers(1, 6)))
    ]
    return [*TEXT[0], *odd]


@MEMO_SETTINGS
@given(text_neighbourhoods())
def test_generated_chat_text_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    assert_dicts_as_bytes("openai-chat", events)


# ------------------------------------------------------------------ chat reasoning


def reasoning(piece: Any, name: str = "reasoning_content", **more: Any) -> Event:
    # DeepSeek sends `"content": null` beside each piece of its reasoning.
    return chat({"content": None, name: piece, **more})


REASONING_NAMES = ["reasoning_content", "reasoning"]


def reasoning_stream(name: str) -> tuple[list[Any], list[Any]]:
    head = [CHAT_HEAD[0], reasoning("First, ", name), reasoning("the city.", name)]
    return head, [text("It is Paris."), *CHAT_HEAD[1:], *CHAT_TAIL]


def reasoning_neighbours(name: str) -> dict[str, Event]:
    other = "reasoning" if name == "reasoning_content" else "reasoning_content"
    return {
        "text as well": chat({"content": "x", name: "x"}),
        "the other name as well": reasoning("x", name, **{other: "x"}),
        "the other name alone": reasoning("x", other),
        "a refusal as well": reasoning("x", name, refusal="no"),
        "a call as well": reasoning(
            "x", name, tool_calls=[{"index": 0, "function": {"arguments": "{}"}}]
        ),
        "another choice": {
            **reasoning("x", name),
            "choices": [{**reasoning("x", name)["choices"][0], "index": 1}],
        },
        "a finish reason": chat({"content": None, name: "x"}, "stop"),
        "reasoning null": reasoning(None, name),
        "no content member": chat({name: "x"}),
    }


@pytest.mark.parametrize("name", REASONING_NAMES)
def test_chat_reasoning_is_served_and_gives_the_bytes_result(name: str) -> None:
    stream = reasoning_stream(name)
    before, after = served("openai-chat", reasoning(" Then", name), stream)
    assert before == 1 and after == 2
    asm, errors = run("openai-chat", lambda a, e: a.feed(e), [*stream[0], *stream[1]])
    assert errors == [None] * len(errors)
    thinking = asm.messages()[0].blocks[0]
    assert getattr(thinking, "thinking", None) == "First, the city."
    assert_dicts_as_bytes("openai-chat", [*stream[0], reasoning('caf\u00e9 "x"\n', name)])


@pytest.mark.parametrize("name", REASONING_NAMES)
@pytest.mark.parametrize("neighbour", list(reasoning_neighbours("reasoning")))
def test_chat_reasoning_neighbours_take_the_general_path(name: str, neighbour: str) -> None:
    before, after = served(
        "openai-chat", reasoning_neighbours(name)[neighbour], reasoning_stream(name)
    )
    assert after == before


@st.composite
def reasoning_neighbourhoods(draw: st.DrawFn) -> list[Any]:
    name = draw(st.sampled_from(REASONING_NAMES))
    odd = [
        mutate(draw, reasoning(draw(words), name))
        if draw(st.booleans())
        else reasoning(draw(words), name)
        for _ in range(draw(st.integers(1, 6)))
    ]
    return [*reasoning_stream(name)[0], *odd]


@MEMO_SETTINGS
@given(reasoning_neighbourhoods())
def test_generated_chat_reasoning_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    assert_dicts_as_bytes("openai-chat", events)
