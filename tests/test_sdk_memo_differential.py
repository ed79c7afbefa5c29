"""SDK objects through the memo of decoded events against the bytes of their own
``model_dump_json()``: streams whose common events the memo serves (chat text and
fragments, Responses deltas, LiteLLM's typed fragments), with objects twisted at random
(extra fields, None set explicitly, values that are not JSON data, a subclass, a
subclass whose dump differs), give the messages, errors and notes the same stream's
bytes give. A subclass whose dump differs is compared with its own ``to_dict()``, which
is what it stands for."""

from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_decoded_memo import run
from toolstitch import Assembler

openai_models = pytest.importorskip("openai._models")
from openai.types.chat import ChatCompletionChunk  # noqa: E402
from openai.types.responses import ResponseStreamEvent  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
try:  # LiteLLM is in the test dependency group; its streams are left out without it.
    litellm_utils: Any = importlib.import_module("litellm.types.utils")
except ImportError:
    litellm_utils = None
SDKS = ["openai-chat", "openai-responses"] + (["litellm"] if litellm_utils else [])

Event = dict[str, Any]


class SubChunk(ChatCompletionChunk):
    """A user's subclass that changes nothing."""


class Renaming(ChatCompletionChunk):
    """A user's subclass whose dump differs from its fields."""

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        plain = super().model_dump(**kwargs)
        plain["model"] = "renamed"
        return plain


def chat_events(texts: list[str], pieces: list[str]) -> list[Event]:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: Event, finish: str | None = None) -> Event:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    opening = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": t}) for t in texts),
        chunk({"tool_calls": [opening]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
        chunk({}, "tool_calls"),
    ]


def responses_events(texts: list[str], pieces: list[str]) -> list[Event]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    return [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        *(
            {"type": "response.output_text.delta", "item_id": "m", "output_index": 0}
            | {"content_index": 0, "delta": t}
            for t in texts
        ),
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        *(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1"}
            | {"output_index": 1, "delta": p}
            for p in pieces
        ),
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]


def twist(o: Any, how: str, value: Any) -> Any:
    """`o` changed one way (in place, or a new object of another class)."""
    if how == "extra":
        o.__pydantic_extra__["x_extra"] = value
    elif how == "none":
        o.__dict__["service_tier"] = None
        o.__pydantic_fields_set__.add("service_tier")
    elif how == "nan":
        o.__pydantic_extra__["x_extra"] = float("nan")
    elif how in ("sub", "renaming") and isinstance(o, ChatCompletionChunk):
        cls = SubChunk if how == "sub" else Renaming
        return cls.model_construct(_fields_set=set(o.__pydantic_fields_set__), **o.__dict__)
    return o


def reference(o: Any) -> Any:
    """What the object stands for, as decoded JSON: its `model_dump_json()`, or its
    own `to_dict()` where its class dumps otherwise."""
    if isinstance(o, Renaming):
        return o.to_dict(mode="json")
    return json.loads(o.model_dump_json(by_alias=True, exclude_unset=True, warnings=False))


def outcome(dialect: str, items: list[Any], feed: Callable[[Assembler, Any], Any]) -> Any:
    """The messages, each item's error (exactly as raised), the messages' notes and
    problems, and how many events the memo served."""
    asm, errors = run(dialect, feed, items, lambda e: f"{type(e).__name__}: {e}")
    notes = [(m.notes, [p.message for p in m.problems]) for m in asm.messages()]
    return asm.messages(), errors, notes, asm._memo_served[1]


HOWS = ["plain", "plain", "plain", "extra", "none", "nan", "sub", "renaming"]
text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=4)
scalars = (
    st.none() | st.booleans() | st.integers(-3, 3) | text | st.lists(st.integers(), max_size=2)
)


@st.composite
def twisted_streams(draw: st.DrawFn) -> tuple[str, list[Any]]:
    sdk = draw(st.sampled_from(SDKS))
    texts = draw(st.lists(text, max_size=5))
    pieces = draw(st.lists(text, min_size=1, max_size=6))
    if sdk == "openai-responses":
        objects = [
            openai_models.construct_type(type_=ResponseStreamEvent, value=e)
            for e in responses_events(texts, pieces)
        ]
    elif sdk == "litellm":
        make = litellm_utils.ModelResponseStream
        objects = [make(**e) for e in chat_events(texts, pieces)]
    else:
        objects = [
            openai_models.construct_type(type_=ChatCompletionChunk, value=e)
            for e in chat_events(texts, pieces)
        ]
    objects = [twist(o, draw(st.sampled_from(HOWS)), draw(scalars)) for o in objects]
    return ("openai-chat" if sdk == "litellm" else sdk), objects


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(twisted_streams())
def test_objects_read_as_the_bytes_of_their_dump(stream: tuple[str, list[Any]]) -> None:
    dialect, objects = stream
    got = outcome(dialect, objects, lambda a, o: a.feed(o))
    frames = [b"data: " + json.dumps(reference(o)).encode() + b"\n\n" for o in objects]
    want = outcome(dialect, frames, lambda a, b: a.feed_bytes(b))
    assert got[:3] == want[:3]


def test_the_memo_serves_untwisted_streams_and_refuses_what_the_dump_refuses() -> None:
    objects = [
        openai_models.construct_type(type_=ChatCompletionChunk, value=e)
        for e in chat_events(["a", "b", "c"], ["{", '"x"', ": 1}"])
    ]
    assert outcome("openai-chat", objects, lambda a, o: a.feed(o))[3] == 4
    # An argument that is not JSON data: the dump writes null, which the chat dialect
    # refuses as arguments, here as from the bytes.
    objects[-2].choices[0].delta.tool_calls[0].function.arguments = math.inf
    got = outcome("openai-chat", objects, lambda a, o: a.feed(o))
    frames = [b"data: " + json.dumps(reference(o)).encode() + b"\n\n" for o in objects]
    want = outcome("openai-chat", frames, lambda a, b: a.feed_bytes(b))
    assert got[:3] == want[:3]
    assert got[3] == 3
