"""SDK objects read in place: the ``openai`` and ``anthropic`` SDKs' pydantic models are
read field by field (no ``to_dict()``, no ``model_dump()``, no JSON), their classes
recognised once, and every feed gives what the object's ``to_dict(mode="json")``, its
``model_dump()`` and the bytes of the same stream give: unknown and extra fields, None
against missing, aliases (``from_``). Objects of any other class, and the neighbours the
reading is not sure of (a subclass that dumps otherwise, an extra field named like a
field, a value that is not JSON data), take the general path and its result or error."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolstitch import Assembler
from toolstitch.errors import ToolstitchError

openai_models = pytest.importorskip("openai._models")
anthropic_models = pytest.importorskip("anthropic._models")
from anthropic.types import RawMessageStreamEvent  # noqa: E402
from anthropic.types.beta import BetaRawMessageStreamEvent  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402
from openai.types.responses import ResponseStreamEvent  # noqa: E402
from test_feed_path_properties import (  # noqa: E402
    anthropic_streams,
    frame,
    openai_streams,
)

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

Event = dict[str, Any]
# What the general path runs in Python: these names are never called for an object
# read in place.
GENERAL = {"_event_plain", "to_dict", "model_dump", "to_json_dict"}


@contextmanager
def python_calls() -> Iterator[set[str]]:
    """The names of the Python functions called inside the block."""
    names: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            names.add(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        yield names
    finally:
        sys.setprofile(None)


def chat(value: Event) -> Any:
    return openai_models.construct_type(type_=ChatCompletionChunk, value=value)


def anthropic(value: Event) -> Any:
    return anthropic_models.construct_type(type_=RawMessageStreamEvent, value=value)


def beta(value: Event) -> Any:
    return anthropic_models.construct_type(type_=BetaRawMessageStreamEvent, value=value)


def responses(value: Event) -> Any:
    return openai_models.construct_type(type_=ResponseStreamEvent, value=value)


Outcome = tuple[list[Any], list[Any], list[str | None]]


def outcome(dialect: str, items: list[Any], feed: Callable[[Assembler, Any], Any]) -> Outcome:
    asm = Assembler(dialect, live=True)  # type: ignore[arg-type]
    live: list[Any] = []
    errors: list[str | None] = []
    for item in items:
        try:
            live.extend(feed(asm, item))
            errors.append(None)
        except ToolstitchError as e:
            errors.append(f"{type(e).__name__}: {e}")
    live.extend(asm.close())
    return asm.messages(), live, errors


def feed(asm: Assembler, item: Any) -> Any:
    return asm.feed(item)


def assert_paths_agree(dialect: str, objects: list[Any], *, in_place: bool = True) -> None:
    """feed(obj) == feed(obj.to_dict(mode="json")) == feed(its model_dump) == the
    bytes of the same stream; and the objects were (or were not) read in place."""
    dumps = [o.to_dict(mode="json") for o in objects]
    with python_calls() as called:
        got = outcome(dialect, objects, feed)
    assert (not (called & GENERAL)) == in_place, sorted(called & GENERAL)
    by_bytes = outcome(dialect, [frame(dialect, d) for d in dumps], lambda a, b: a.feed_bytes(b))
    assert got == outcome(dialect, dumps, feed)
    assert got == by_bytes
    assert got == outcome(dialect, [model_dump(o) for o in objects], feed)


def model_dump(o: Any) -> Any:
    """pydantic's own dump of the fields the API sent, under their wire names. (A bare
    ``model_dump()`` also writes every field the API did not send, as None: another
    document, in which a usage object, say, holds counters the stream never had.)"""
    return o.model_dump(mode="json", by_alias=True, exclude_unset=True)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(openai_streams())
def test_generated_openai_chat_chunks_read_in_place(events: list[Event]) -> None:
    assert_paths_agree("openai-chat", [chat(e) for e in events])


@SETTINGS
@given(anthropic_streams())
def test_generated_anthropic_events_read_in_place(events: list[Event]) -> None:
    assert_paths_agree("anthropic", [anthropic(e) for e in events])


@SETTINGS
@given(anthropic_streams())
def test_generated_anthropic_beta_events_read_in_place(events: list[Event]) -> None:
    assert_paths_agree("anthropic", [beta(e) for e in events])


def responses_stream(arguments: list[str], extra: Event) -> list[Event]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    events: list[Event] = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": "resp_1", "object": "response", "status": "in_progress"},
        },
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": {**item, "arguments": "", "status": "in_progress", **extra},
        },
    ]
    for n, piece in enumerate(arguments):
        events.append(
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 2 + n,
                "output_index": 0,
                "item_id": "fc_1",
                "delta": piece,
                **extra,
            }
        )
    whole = "".join(arguments)
    events += [
        {
            "type": "response.function_call_arguments.done",
            "sequence_number": 2 + len(arguments),
            "output_index": 0,
            "item_id": "fc_1",
            "arguments": whole,
        },
        {
            "type": "response.output_item.done",
            "sequence_number": 3 + len(arguments),
            "output_index": 0,
            "item": {**item, "arguments": whole, "status": "completed"},
        },
        {
            "type": "response.completed",
            "sequence_number": 4 + len(arguments),
            "response": {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "output": [{**item, "arguments": whole, "status": "completed"}],
                "usage": {"input_tokens": 3, "output_tokens": 5, "total_tokens": 8},
            },
        },
    ]
    return events


def responses_frame(event: Event) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


@SETTINGS
@given(
    st.lists(st.text(max_size=6), max_size=6),
    # An int past 64 bits goes the general path (its JSON text keeps it exact, Q42).
    st.dictionaries(
        st.sampled_from(["obfuscation", "x_new"]), st.none() | st.integers(-(2**63), 2**64 - 1)
    ),
)
def test_generated_responses_events_read_in_place(arguments: list[str], extra: Event) -> None:
    objects = [responses(e) for e in responses_stream(['{"a": "', *arguments, '"}'], extra)]
    dumps = [o.to_dict(mode="json") for o in objects]
    with python_calls() as called:
        got = outcome("openai-responses", objects, feed)
    assert not called & GENERAL
    assert got == outcome("openai-responses", dumps, feed)
    assert got == outcome("openai-responses", [model_dump(o) for o in objects], feed)
    by_bytes = outcome(
        "openai-responses", [responses_frame(d) for d in dumps], lambda a, b: a.feed_bytes(b)
    )
    assert got == by_bytes
    (call,) = got[0][0].tool_uses
    assert call.input == '{"a": "' + "".join(arguments) + '"}'


# ------------------------------------------------------------------ fields, one by one


def chat_stream(**more: Any) -> list[Event]:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", **more}
    return [
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"a"'},
                            }
                        ],
                    },
                }
            ],
        },
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                }
            ],
        },
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {
            **head,
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
        },
    ]


def test_extra_fields_none_and_missing_read_as_their_dump() -> None:
    stream = chat_stream(system_fingerprint=None, x_unknown={"k": [1, 2.5, None, "é"]})
    stream[1]["choices"][0]["logprobs"] = None
    stream[1]["choices"][0]["delta"]["tool_calls"][0]["x_more"] = "kept"
    objects = [chat(e) for e in stream]
    assert objects[0].__pydantic_extra__ == {"x_unknown": {"k": [1, 2.5, None, "é"]}}
    assert "logprobs" not in objects[0].choices[0].__pydantic_fields_set__
    assert_paths_agree("openai-chat", objects)
    (message,) = outcome("openai-chat", objects, feed)[0]
    assert [(c.id, c.name, c.input) for c in message.tool_uses] == [("call_1", "f", '{"a": 1}')]


def test_an_alias_is_read_under_its_wire_name() -> None:
    """Anthropic's fallback block names its field ``from_`` and sends ``from``."""
    info = {"model": "claude-opus-4-1"}
    events: list[Event] = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "x",
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "fallback",
                "from": info,
                "to": info,
                "trigger": {"type": "refusal"},
            },
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    objects = [beta(e) for e in events]
    block = objects[1].content_block
    assert type(block).__name__ == "BetaFallbackBlock"
    assert block.to_dict(mode="json")["from"] == info
    # construct_type keeps "from" in the field and, as no field is named so, among
    # the extra fields too: a key twice, which the reading leaves to the general path.
    if block.__pydantic_extra__:
        assert_paths_agree("anthropic", objects, in_place=False)
    else:
        assert_paths_agree("anthropic", objects)


# ------------------------------------------------------------------ the general path


class Redacting(ChatCompletionChunk):
    """A user's subclass whose dump differs from its fields."""

    def to_dict(self, **kwargs: Any) -> dict[str, object]:
        plain = super().to_dict(**kwargs)
        plain.pop("model", None)
        return plain


def test_a_subclass_that_dumps_otherwise_takes_the_general_path() -> None:
    objects = [Redacting.construct(**e) for e in chat_stream()]
    with python_calls() as called:
        got = outcome("openai-chat", objects, feed)
    assert "to_dict" in called
    assert got == outcome("openai-chat", [o.to_dict(mode="json") for o in objects], feed)


def test_a_value_that_is_not_json_data_gives_the_general_paths_result() -> None:
    stream = chat_stream()
    objects = [chat(e) for e in stream]
    objects[1].choices[0].delta.tool_calls[0].function.arguments = float("nan")
    with python_calls() as called:
        got = outcome("openai-chat", objects, feed)
    assert "to_dict" in called
    # The SDK's dump writes a NaN as null in JSON mode; the general path feeds that.
    assert got == outcome("openai-chat", [o.to_dict(mode="json") for o in objects], feed)


def test_an_extra_field_named_like_a_field_takes_the_general_path() -> None:
    objects = [chat(e) for e in chat_stream()]
    objects[0].__pydantic_extra__["model"] = "other"
    with python_calls() as called:
        got = outcome("openai-chat", objects[:1], feed)
    assert "to_dict" in called
    assert got == outcome("openai-chat", [objects[0].to_dict(mode="json")], feed)


def test_a_field_not_declared_in_the_dict_takes_the_general_path() -> None:
    objects = [chat(e) for e in chat_stream()]
    objects[0].__dict__["undeclared"] = 1
    with python_calls() as called:
        outcome("openai-chat", objects[:1], feed)
    assert "to_dict" in called


def test_other_pydantic_models_take_the_general_path() -> None:
    import pydantic

    class Chunk(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        choices: list[dict[str, Any]]

    stream = chat_stream()
    objects = [Chunk.model_validate(e) for e in stream]
    with python_calls() as called:
        got = outcome("openai-chat", objects, feed)
    assert "model_dump" in called
    assert got == outcome("openai-chat", stream, feed)


def test_a_dict_holding_an_sdk_object_is_still_refused() -> None:
    """Reading in place is for what feed was given as an object: a dict's values must
    be JSON data, as before."""
    asm = Assembler("openai-chat")
    event = chat_stream()[0]
    event["choices"] = [chat(chat_stream()[0]).choices[0]]
    with pytest.raises(ToolstitchError, match="not JSON data"):
        asm.feed(event)


def test_an_int_past_64_bits_takes_the_general_path_and_stays_exact() -> None:
    objects = [chat(e) for e in chat_stream(x_big=2**70)]
    with python_calls() as called:
        got = outcome("openai-chat", objects, feed)
    assert "to_dict" in called
    dumps = [o.to_dict(mode="json") for o in objects]
    assert got == outcome(
        "openai-chat", [frame("openai-chat", d) for d in dumps], Assembler.feed_bytes
    )


# ------------------------------------------------------------------ the memo of objects


def fragments(pieces: list[str], **more: Any) -> list[Any]:
    head, fragment = chat_stream(**more)[:2]
    events = [head]
    for piece in pieces:
        call = {"index": 0, "function": {"arguments": piece}}
        events.append({**fragment, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    return [chat(e) for e in events]


def test_the_memo_serves_chunks_with_extra_fields() -> None:
    """An extra field the chunks all carry (kept in ``__pydantic_extra__``) is compared
    with the template's like any value: equal, the fragment is served."""
    objects = fragments(['": ', "1", ", ", '"b": 2}'], x_unknown={"k": [1, "é"]})
    assert objects[1].__pydantic_extra__ == {"x_unknown": {"k": [1, "é"]}}
    asm = Assembler("openai-chat", live=False)
    for o in objects:
        asm.feed(o)
    assert asm._memo_served[1] >= 2
    assert_paths_agree("openai-chat", objects)


@pytest.mark.parametrize(
    "change",
    ["value", "nested", "added", "removed", "renamed", "set", "unset", "swapped", "order"],
)
def test_a_model_that_differs_from_the_template_reads_as_its_dump(change: str) -> None:
    objects = fragments(["a", "b", "c", "d"], x_unknown={"k": [1, "é"]})
    last = objects[-1]
    extra = last.__pydantic_extra__
    if change == "value":
        extra["x_unknown"] = {"k": [1, "e"]}
    elif change == "nested":
        # Gemini's compatible endpoint: the call's provider state (Q37).
        call = last.choices[0].delta.tool_calls[0]
        call.__pydantic_extra__["extra_content"] = {"google": {"thought_signature": "s"}}
    elif change == "added":
        extra["error"] = {"message": "overloaded", "type": "server_error"}
    elif change == "removed":
        extra.clear()
    elif change == "renamed":
        extra["error"] = extra.pop("x_unknown")
    elif change == "set":
        last.__pydantic_fields_set__.add("system_fingerprint")
    elif change == "unset":
        last.__pydantic_fields_set__.discard("model")
    elif change == "swapped":
        # As many fields set as the template's, one of them another.
        last.__pydantic_fields_set__.discard("model")
        last.__pydantic_fields_set__.add("system_fingerprint")
    else:
        last.__dict__["model"] = last.__dict__.pop("created")
    assert_paths_agree("openai-chat", objects)
    # Its dump is not the template's: the memo, which served the fragments before it,
    # does not serve it.
    asm = Assembler("openai-chat", live=False)
    for o in objects[:-1]:
        asm.feed(o)
    served = asm._memo_served[1]
    with contextlib.suppress(ToolstitchError):  # "added" and "renamed" carry an error
        asm.feed(last)
    assert served >= 2
    assert asm._memo_served[1] == served


def test_a_field_set_to_none_is_not_a_field_left_unset() -> None:
    """What ``feed(obj)`` equals is the object's ``to_dict(mode="json")``: the fields the
    API sent, not every field (``model_dump_json()``). The two differ in what a message
    keeps verbatim: a server tool's result block is its provider state as sent, so a
    ``page_age`` sent as null is there and one never sent is not. Which fields were set
    is read for that; reading only the values would give both objects one result."""
    found = {"type": "web_search_result", "url": "u", "title": "t", "encrypted_content": "e"}

    def stream(result: Event) -> list[Any]:
        block = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1"}
        start = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "x"}
        events: list[Event] = [
            {"type": "message_start", "message": start},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": block | {"content": [result]},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        return [anthropic(e) for e in events]

    unset, sent_null = stream(found), stream(found | {"page_age": None})
    result = sent_null[1].content_block.content[0]
    assert result.__dict__["page_age"] is None and "page_age" in result.__pydantic_fields_set__
    assert unset[1].content_block.content[0].__dict__["page_age"] is None
    assert_paths_agree("anthropic", unset)
    assert_paths_agree("anthropic", sent_null)
    states = [
        outcome("anthropic", s, feed)[0][0].blocks[0].provider_state for s in (unset, sent_null)
    ]
    assert '"page_age"' not in states[0]
    assert states[1] != states[0]
    assert states[1].replace('"page_age":null,', "") == states[0]
