"""The memo of decoded events: a dict or SDK object that is the last common event again
with another string is served without reading it into a tree, and anything else, however
close, takes the general path.

Every case feeds a stream whose common event the memo has learned, then one event that
differs from it in one place, and checks the memo's count of served events and that the
result (messages, errors) is exactly what the same events give as SSE bytes.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from toolstitch import Assembler
from toolstitch.errors import ToolstitchError

Event = dict[str, Any]


def chat(delta: Event, finish: str | None = None, **top: Any) -> Event:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **top,
    }


def fragment(arguments: Any, index: Any = 0) -> Event:
    return chat({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})


def typed(arguments: Any, kind: Any = "function") -> Event:
    """A fragment whose call names its type, as LiteLLM's chunks do."""
    return chat({"tool_calls": [{"index": 0, "function": {"arguments": arguments}, "type": kind}]})


CHAT_HEAD = [
    chat({"role": "assistant", "content": None}),
    chat(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    fragment('{"city"'),
    fragment(': "Par'),
]
CHAT_TAIL = [fragment('is"}'), chat({}, "tool_calls")]


def anthropic_delta(piece: Any, kind: str = "input_json_delta", index: Any = 1) -> Event:
    field = {"input_json_delta": "partial_json", "text_delta": "text"}.get(kind, "thinking")
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: piece}}


ANTHROPIC_HEAD = [
    {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    anthropic_delta("Let me look.", "text_delta", 0),
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
    },
    anthropic_delta('{"city"'),
    anthropic_delta(': "Par'),
]
ANTHROPIC_TAIL = [
    anthropic_delta('is"}'),
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    {"type": "message_stop"},
]


def cohere_delta(piece: Any, index: Any = 0) -> Event:
    return {
        "type": "tool-call-delta",
        "index": index,
        "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
    }


COHERE_HEAD = [
    {
        "id": "c-1",
        "type": "message-start",
        "delta": {"message": {"role": "assistant", "content": [], "tool_calls": []}},
    },
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will "}}},
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "look."}}},
    {
        "type": "tool-call-start",
        "index": 0,
        "delta": {
            "message": {
                "tool_calls": {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            }
        },
    },
    cohere_delta('{"city"'),
    cohere_delta(': "Par'),
]
COHERE_TAIL = [
    cohere_delta('is"}'),
    {"type": "tool-call-end", "index": 0},
    {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
]


def sse(dialect: str, event: Any) -> bytes:
    """The event as SSE bytes, with no `event:` name: the dicts are fed without one."""
    del dialect
    data = json.dumps(event, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return b"data: " + data + b"\n\n"


def unplaced(message: str) -> str:
    """A message as the tests compare it: JSON text's decode errors also say where in
    the text (line and column), which decoded data has not."""
    return re.sub(r" at line \d+ column \d+", "", message)


def described(e: ToolstitchError) -> str:
    return unplaced(f"{type(e).__name__}: {e}")


def summary(asm: Assembler) -> list[Any]:
    """The messages as the tests compare them (problems `unplaced`)."""
    return [
        (
            m.blocks,
            m.complete,
            m.finish_reason,
            m.notes,
            [unplaced(p.message) for p in m.problems],
        )
        for m in asm.messages()
    ]


def run(
    dialect: str,
    feed: Any,
    items: list[Any],
    describe: Callable[[ToolstitchError], str] = described,
) -> tuple[Assembler, list[str | None]]:
    """Each item fed in turn, each one's error (`describe`d) or None, and the closed
    assembler."""
    asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
    errors: list[str | None] = []
    for item in items:
        try:
            feed(asm, item)
            errors.append(None)
        except ToolstitchError as e:
            errors.append(describe(e))
    asm.close()
    return asm, errors


def as_bytes(dialect: str, events: list[Any]) -> tuple[Assembler, list[str | None]]:
    return run(dialect, lambda a, e: a.feed_bytes(sse(dialect, e)), events)


def served(
    dialect: str, odd: Any, stream: tuple[list[Any], list[Any]] | None = None
) -> tuple[int, int]:
    """How many events the memo served while reading `odd` after the head of the
    stream (`stream`'s head and tail, else the dialect's above), and checks the result
    of the whole stream against its bytes."""
    head, tail = stream or (
        (CHAT_HEAD, CHAT_TAIL) if dialect == "openai-chat" else (ANTHROPIC_HEAD, ANTHROPIC_TAIL)
    )
    asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
    for e in head:
        asm.feed(e)
    before = asm._memo_served[0]
    assert before >= 1, "the memo must have learned the head's common event"
    error = None
    try:
        asm.feed(odd)
    except ToolstitchError as err:
        error = described(err)
    after = asm._memo_served[0]
    for e in tail:
        with contextlib.suppress(ToolstitchError):
            asm.feed(e)
    asm.close()
    _, errors = as_bytes(dialect, [*head, odd])
    assert error == errors[-1]
    reference, _ = as_bytes(dialect, [*head, odd, *tail])
    assert summary(asm) == summary(reference)
    return before, after


def test_the_common_event_is_served_and_gives_the_bytes_result() -> None:
    for dialect, events in (
        ("openai-chat", [*CHAT_HEAD, *CHAT_TAIL]),
        ("anthropic", [*ANTHROPIC_HEAD, *ANTHROPIC_TAIL]),
        ("cohere", [*COHERE_HEAD, *COHERE_TAIL]),
    ):
        asm, errors = run(
            dialect, lambda a, e: a.feed(e), [json.loads(json.dumps(e)) for e in events]
        )
        ref, ref_errors = as_bytes(dialect, events)
        assert errors == ref_errors == [None] * len(events)
        assert summary(asm) == summary(ref)
        assert asm._memo_served[0] >= 2
        (call,) = asm.messages()[0].tool_uses
        assert call.input == '{"city": "Paris"}'


def test_an_equal_event_with_another_string_is_served() -> None:
    before, after = served("openai-chat", fragment('is", "unit"'))
    assert after == before + 1
    before, after = served("anthropic", anthropic_delta('is", "unit"'))
    assert after == before + 1
    # Fragments that say `"type": "function"` each time: served after the first.
    before, after = served("openai-chat", typed('is"}'), TYPED)
    assert before == 1 and after == 2


TYPED = ([*CHAT_HEAD[:2], typed('{"city"'), typed(': "Par')], CHAT_TAIL[1:])


@pytest.mark.parametrize("kind", ["custom", "tool", None, 1, ["function"]])
def test_a_fragment_of_another_type_takes_the_general_path(kind: Any) -> None:
    """Only `"type": "function"` is the typed common event: after its template, a
    fragment naming another type is not served, and a stream of such fragments
    learns nothing (their result is the general path's, an error where it is one)."""
    before, after = served("openai-chat", typed("x", kind), TYPED)
    assert after == before
    events = [*CHAT_HEAD[:2], *(typed(p, kind) for p in ['{"a"', ": 1", "}"])]
    asm, errors = run("openai-chat", lambda a, e: a.feed(e), events)
    ref, ref_errors = as_bytes("openai-chat", events)
    assert errors == ref_errors and summary(asm) == summary(ref)
    assert asm._memo_served[0] == (2 if kind is None else 0)


# Each case is the common event changed in one place: never served, and the result is
# the general path's (the bytes path's).
CHAT_NEIGHBOURS = {
    "another call": fragment("{}", index=1),
    "False for index 0": fragment("x", index=False),
    "0.0 for index 0": fragment("x", index=0.0),
    "a name as well": chat(
        {"tool_calls": [{"index": 0, "function": {"arguments": "x", "name": "other"}}]}
    ),
    "an id as well": chat(
        {"tool_calls": [{"index": 0, "id": "call_9", "function": {"arguments": "x"}}]}
    ),
    "a finish reason": {
        **fragment("x"),
        "choices": [{**fragment("x")["choices"][0], "finish_reason": "stop"}],
    },
    "arguments as an object (Q42)": fragment({"city": "Paris"}),
    "arguments as a number": fragment(7),
    "arguments as null": fragment(None),
    "an unknown member": {**fragment("x"), "x_extra": 1},
    "members in another order": dict(reversed(list(fragment("x").items()))),
    "usage as well": {**fragment("x"), "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
    "an error": {**fragment("x"), "error": {"message": "overloaded"}},
    "two calls": chat(
        {
            "tool_calls": [
                {"index": 0, "function": {"arguments": "x"}},
                {"index": 1, "function": {"arguments": "y"}},
            ]
        }
    ),
    "two choices": {**fragment("x"), "choices": fragment("x")["choices"] * 2},
    "another model": {**fragment("x"), "model": "gpt-4o-mini"},
    "a chunk named a body": {**fragment("x"), "object": "chat.completion"},
}


@pytest.mark.parametrize("name", CHAT_NEIGHBOURS)
def test_openai_chat_neighbours_take_the_general_path(name: str) -> None:
    before, after = served("openai-chat", CHAT_NEIGHBOURS[name])
    assert after == before


ANTHROPIC_NEIGHBOURS = {
    "another block": anthropic_delta("x", index=2),
    "True for index 1": anthropic_delta("x", index=True),
    "a text delta": anthropic_delta("x", "text_delta"),
    "a thinking delta": anthropic_delta("x", "thinking_delta"),
    "an unknown delta": {
        **anthropic_delta("x"),
        "delta": {"type": "future_delta", "partial_json": "x"},
    },
    "a number": anthropic_delta(1),
    "a list": anthropic_delta(["x"]),
    "an unknown member": {**anthropic_delta("x"), "usage": None},
    "another type": {**anthropic_delta("x"), "type": "content_block_stop"},
}


@pytest.mark.parametrize("name", ANTHROPIC_NEIGHBOURS)
def test_anthropic_neighbours_take_the_general_path(name: str) -> None:
    before, after = served("anthropic", ANTHROPIC_NEIGHBOURS[name])
    assert after == before


class Sub(str):
    pass


class SubDict(dict[str, Any]):
    pass


def test_subclasses_and_bad_strings_take_the_general_path() -> None:
    for odd in (fragment(Sub("x")), SubDict(fragment("x"))):
        asm = Assembler("openai-chat", live=False)
        for e in CHAT_HEAD:
            asm.feed(e)
        before = asm._memo_served[0]
        asm.feed(odd)
        assert asm._memo_served[0] == before
        asm.feed(CHAT_TAIL[-1])
        assert asm.messages()[0].tool_uses[0].input == '{"city": "Parx'
    # A lone surrogate is refused by the general path, with where it is.
    asm = Assembler("openai-chat", live=False)
    for e in CHAT_HEAD:
        asm.feed(e)
    before = asm._memo_served[0]
    with pytest.raises(ToolstitchError, match="surrogate"):
        asm.feed(fragment("\ud800"))
    assert asm._memo_served[0] == before
    asm.feed(CHAT_TAIL[0])
    asm.feed(CHAT_TAIL[1])
    message = asm.messages()[0]
    assert message.problems and not message.complete


def test_the_memo_keeps_every_check_of_the_stream() -> None:
    # An SSE event name that is not the template's.
    asm = Assembler("openai-chat", live=False)
    for e in CHAT_HEAD:
        asm.feed(e)
    before = asm._memo_served[0]
    with pytest.raises(ToolstitchError):
        asm.feed(fragment("x"), event_type="error")
    assert asm._memo_served[0] == before
    # After [DONE] and after close(), the common event is refused as any event.
    asm = Assembler("openai-chat", live=False)
    for e in CHAT_HEAD:
        asm.feed(e)
    asm.feed("[DONE]")
    with pytest.raises(ToolstitchError, match=r"\[DONE\]"):
        asm.feed(fragment("x"))
    asm = Assembler("openai-chat", live=False)
    for e in CHAT_HEAD:
        asm.feed(e)
    asm.close()
    with pytest.raises(ToolstitchError):
        asm.feed(fragment("x"))
    # A delta after the call's message finished is the protocol error it always was.
    asm = Assembler("anthropic", live=False)
    ref = Assembler("anthropic", live=False)
    events = [*ANTHROPIC_HEAD, {"type": "content_block_stop", "index": 1}, anthropic_delta("x")]
    outcomes = []
    feeds: list[tuple[Assembler, Any]] = [
        (asm, Assembler.feed),
        (ref, lambda a, e: a.feed_bytes(sse("anthropic", e))),
    ]
    for a, feed in feeds:
        try:
            for event in events:
                feed(a, event)
        except ToolstitchError as err:
            outcomes.append(described(err))
    assert len(outcomes) == 2 and outcomes[0] == outcomes[1]
    assert "delta" in outcomes[0]
    # The limits hold on the memo's path: the call's input bytes are counted.
    asm = Assembler("openai-chat", live=False, max_input_bytes=20)
    errors = []
    for event in [*CHAT_HEAD, fragment("0123456789")]:
        try:
            asm.feed(event)
        except ToolstitchError as err:
            errors.append(err)
    assert len(errors) == 1 and "max_input_bytes" in str(errors[0])
    assert asm._memo_served[0] == 2


def test_live_events_of_the_memo_are_the_general_paths() -> None:
    events = [*CHAT_HEAD, *CHAT_TAIL]
    a = Assembler("openai-chat", live=True)
    b = Assembler("openai-chat", live=True)
    got = [ev for e in events for ev in a.feed(e)]
    want = [ev for e in events for ev in b.feed_bytes(sse("openai-chat", e))]
    assert a._memo_served[0] >= 2
    assert got == want


# ------------------------------------------------------------------ SDK objects

openai_models = pytest.importorskip("openai._models")
anthropic_models = pytest.importorskip("anthropic._models")
from anthropic.types import RawMessageStreamEvent  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402


def chunk_object(event: Event) -> Any:
    return openai_models.construct_type(type_=ChatCompletionChunk, value=event)


def test_sdk_objects_are_served_and_give_the_bytes_result() -> None:
    for dialect, events, build in (
        ("openai-chat", [*CHAT_HEAD, *CHAT_TAIL], chunk_object),
        (
            "anthropic",
            [*ANTHROPIC_HEAD, *ANTHROPIC_TAIL],
            lambda e: anthropic_models.construct_type(type_=RawMessageStreamEvent, value=e),
        ),
    ):
        asm, errors = run(
            dialect, lambda a, o: a.feed(o), [build(json.loads(json.dumps(e))) for e in events]
        )
        ref, ref_errors = as_bytes(dialect, events)
        assert errors == ref_errors
        assert summary(asm) == summary(ref)
        assert asm._memo_served[1] >= 2, dialect


def sdk_served(odd: Any) -> tuple[int, int]:
    """How many events the memo served while reading the SDK object `odd` after the
    head of the stream, and checks the whole stream against the bytes of the same
    objects' `to_dict()`."""
    objects = [chunk_object(json.loads(json.dumps(e))) for e in CHAT_HEAD]
    asm = Assembler("openai-chat", live=False)
    for o in objects:
        asm.feed(o)
    before = asm._memo_served[1]
    assert before >= 1
    asm.feed(odd)
    after = asm._memo_served[1]
    asm.feed(chunk_object(CHAT_TAIL[-1]))
    asm.close()
    plain = [o.to_dict(mode="json") for o in [*objects, odd]]
    ref, errors = as_bytes("openai-chat", [*plain, CHAT_TAIL[-1]])
    assert errors == [None] * len(errors)
    assert summary(asm) == summary(ref)
    return before, after


def test_sdk_neighbours_take_the_general_path() -> None:
    # Another index, set by attribute after the object was built.
    moved = chunk_object(fragment("{}"))
    moved.choices[0].delta.tool_calls[0].index = 1
    before, after = sdk_served(moved)
    assert after == before
    # A field set explicitly (to_dict then writes it) and an extra field.
    named = chunk_object(fragment("x"))
    named.choices[0].delta.tool_calls[0].function.name = "other"
    before, after = sdk_served(named)
    assert after == before
    unset = chunk_object(fragment("x"))
    unset.choices[0].__pydantic_fields_set__.discard("finish_reason")
    before, after = sdk_served(unset)
    assert after == before
    extra = chunk_object({**fragment("x"), "x_extra": 1})
    assert extra.__pydantic_extra__
    before, after = sdk_served(extra)
    assert after == before

    # An object of a subclass of the template's class.
    class Chunk(ChatCompletionChunk):
        pass

    template = chunk_object(fragment("x"))
    sub = Chunk.model_construct(
        _fields_set=set(template.__pydantic_fields_set__), **template.__dict__
    )
    before, after = sdk_served(sub)
    assert after == before
    # The same event again is served, and its string is the new one.
    before, after = sdk_served(chunk_object(fragment("is")))
    assert after == before + 1


def test_sdk_fields_not_set_are_not_compared() -> None:
    # A field the API did not send is not in the dump, whatever its value: the
    # event is still the template's, and is served with the dump's result.
    quiet = chunk_object(fragment("y"))
    assert "service_tier" not in quiet.__pydantic_fields_set__
    quiet.__dict__["service_tier"] = "priority"
    assert "refusal" not in quiet.choices[0].delta.__pydantic_fields_set__
    quiet.choices[0].delta.__dict__["refusal"] = "no"
    before, after = sdk_served(quiet)
    assert after == before + 1
    # Once set, the same value is compared: another event, the general path.
    loud = chunk_object(fragment("y"))
    loud.service_tier = "priority"
    assert "service_tier" in loud.__pydantic_fields_set__
    before, after = sdk_served(loud)
    assert after == before


# ------------------------------------------------------------------ generated neighbours

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=5)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.sampled_from([0.0, 1.0, -0.0])
    | words
    | st.sampled_from(["", "function", "call_1", "get_weather", "stop", "tool_calls"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(words, inner, max_size=2),
    max_leaves=4,
)


def paths(v: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (the value itself included)."""
    out = [at]
    if isinstance(v, dict):
        for k, item in v.items():
            out += paths(item, (*at, k))
    elif isinstance(v, list):
        for i, item in enumerate(v):
            out += paths(item, (*at, i))
    return out


def mutate(draw: st.DrawFn, event: Any) -> Any:
    """`event` changed in one place: a value replaced, a member added or removed, or a
    container's members reordered."""
    event = json.loads(json.dumps(event))
    where = draw(st.sampled_from(paths(event)))
    if not where:
        return event
    parent = event
    for step in where[:-1]:
        parent = parent[step]
    last = where[-1]
    op = draw(st.sampled_from(["replace", "add", "remove", "reorder"]))
    if op == "replace":
        parent[last] = draw(values)
    elif op == "add" and isinstance(parent, dict):
        parent[draw(words)] = draw(values)
    elif op == "remove" and isinstance(parent, dict):
        del parent[last]
    elif op == "reorder" and isinstance(parent, dict):
        items = list(parent.items())
        parent.clear()
        parent.update(reversed(items))
    return event


@st.composite
def neighbourhoods(draw: st.DrawFn, dialect: str) -> list[Any]:
    makers: dict[str, tuple[Callable[..., Event], list[Any]]] = {
        "openai-chat": (fragment, CHAT_HEAD),
        "anthropic": (anthropic_delta, ANTHROPIC_HEAD),
        "cohere": (cohere_delta, COHERE_HEAD),
    }
    common, head = makers[dialect]
    odd = [
        mutate(draw, common(draw(words))) if draw(st.booleans()) else common(draw(words))
        for _ in range(draw(st.integers(1, 6)))
    ]
    return [*head, *odd]


def assert_dicts_as_bytes(dialect: str, events: list[Any]) -> None:
    dicts, dict_errors = run(dialect, lambda a, e: a.feed(e), events)
    ref, ref_errors = as_bytes(dialect, events)
    assert dict_errors == ref_errors
    assert summary(dicts) == summary(ref)
    assert dicts._memo_served[0] >= 1


MEMO_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@MEMO_SETTINGS
@given(neighbourhoods("openai-chat"))
def test_generated_openai_chat_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    assert_dicts_as_bytes("openai-chat", events)


@MEMO_SETTINGS
@given(neighbourhoods("anthropic"))
def test_generated_anthropic_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    assert_dicts_as_bytes("anthropic", events)


@MEMO_SETTINGS
@given(neighbourhoods("cohere"))
def test_generated_cohere_neighbours_read_as_their_bytes(events: list[Any]) -> None:
    assert_dicts_as_bytes("cohere", events)


def test_interleaved_calls_are_served_each_by_its_own_template() -> None:
    opening = [
        chat({"tool_calls": [{"index": i, "id": f"call_{i}", "function": {"name": "f"}}]})
        for i in range(3)
    ]
    pieces = [fragment(p, index=k % 3) for k, p in enumerate('{"a": 1}{"b": 22}{"c": 333}')]
    events = [*opening, *pieces, chat({}, "tool_calls")]
    asm, errors = run("openai-chat", lambda a, e: a.feed(e), events)
    ref, ref_errors = as_bytes("openai-chat", events)
    assert errors == ref_errors
    assert summary(asm) == summary(ref)
    # Each call's first fragment is learned, every later one is served.
    assert asm._memo_served[0] == len(pieces) - 3
    # More calls than templates are kept: still the bytes' result.
    many = [fragment("x", index=k % 9) for k in range(200)]
    asm, errors = run("openai-chat", lambda a, e: a.feed(e), many)
    ref, ref_errors = as_bytes("openai-chat", many)
    assert errors == ref_errors and summary(asm) == summary(ref)
