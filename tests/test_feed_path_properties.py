"""Every way of feeding one stream gives one result, by hypothesis: generated OpenAI chat
and Anthropic streams fed as SSE bytes, as JSON text, as dicts (one by one and with
``feed_many``) and as the SDK objects the ``openai`` / ``anthropic`` packages build while
streaming (``construct_type``) give equal messages (problems and notes included), equal
live events and the same errors, event by event."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolstitch import Assembler
from toolstitch.errors import ToolstitchError

openai_models = pytest.importorskip("openai._models")
anthropic_models = pytest.importorskip("anthropic._models")
from anthropic.types import RawMessageStreamEvent  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402

# model_dump of an SDK object whose unread field holds a generated non-string warns.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

Event = dict[str, Any]
Outcome = tuple[list[Any], list[Any], list[str | None]]

words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | words
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=6,
)
# Fields no adapter reads, which every path must ignore alike.
extras = st.dictionaries(st.sampled_from(["x_extra", "service_tier", "obfuscation"]), json_values)


def pieces(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=4))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if a < b] or [""]


arguments = st.one_of(
    st.dictionaries(words, json_scalars, max_size=3).map(json.dumps),
    st.sampled_from(['{"a": 1', "[1, 2]", "", "{}"]),
)


@st.composite
def openai_streams(draw: st.DrawFn) -> list[Event]:
    head: Event = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": draw(st.sampled_from(["gpt-4o", "deepseek-chat"])),
        **draw(extras),
    }
    events: list[Event] = []

    def chunk(delta: Event, finish: str | None = None, **more: Any) -> None:
        choice: Event = {"index": 0, "delta": delta, "finish_reason": finish}
        if draw(st.booleans()):
            choice["logprobs"] = None
        events.append({**head, "choices": [choice], **more})

    chunk({"role": "assistant", "content": draw(st.none() | st.just(""))})
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["content", "reasoning_content", "refusal"]))
        for piece in pieces(draw, draw(words)):
            chunk({kind: piece})
    for index in range(draw(st.integers(0, 3))):
        opening: Event = {"index": index, "id": f"call_{index}", "type": "function"}
        function: Event = {"name": draw(st.sampled_from(["get_weather", "f"]))}
        if draw(st.booleans()):
            function["arguments"] = ""
        chunk({"tool_calls": [{**opening, "function": function}]})
        for piece in pieces(draw, draw(arguments)):
            call: Event = {"index": index, "function": {"arguments": piece}}
            if draw(st.booleans()):
                call["id"] = None
            chunk({"tool_calls": [call]})
    chunk({}, draw(st.sampled_from(["tool_calls", "stop", "length"])))
    if draw(st.booleans()):
        usage = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
        events.append({**head, "choices": [], "usage": usage})
    return events


@st.composite
def anthropic_streams(draw: st.DrawFn) -> list[Event]:
    message: Event = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 4, "output_tokens": 1},
        **draw(extras),
    }
    events: list[Event] = [{"type": "message_start", "message": message}]
    for index in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "tool_use", "thinking"]))
        if kind == "text":
            block: Event = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(draw, draw(words))]
        elif kind == "thinking":
            block = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                *({"type": "thinking_delta", "thinking": p} for p in pieces(draw, draw(words))),
                {"type": "signature_delta", "signature": "c2ln"},
            ]
        else:
            block = {"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(draw, draw(arguments))
            ]
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        for delta in deltas:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
            if draw(st.integers(0, 9)) == 0:
                events.append({"type": "ping"})
        if draw(st.integers(0, 4)) == 0:
            # An event type this version does not read: skipped, counted.
            events.append({"type": "future_event", "index": index, **draw(extras)})
        events.append({"type": "content_block_stop", "index": index})
    stop = draw(st.sampled_from(["end_turn", "tool_use", "max_tokens"]))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": draw(st.integers(0, 999))},
        }
    )
    if draw(st.booleans()):
        events.append({"type": "message_stop"})
    return events


def frame(dialect: str, event: Event) -> bytes:
    data = json.dumps(event).encode()
    if dialect == "anthropic":
        return b"event: " + str(event["type"]).encode() + b"\ndata: " + data + b"\n\n"
    return b"data: " + data + b"\n\n"


def sdk_object(dialect: str, event: Event) -> Any:
    if dialect == "anthropic":
        return anthropic_models.construct_type(type_=RawMessageStreamEvent, value=event)
    return openai_models.construct_type(type_=ChatCompletionChunk, value=event)


def outcome(dialect: str, feed: Callable[[Assembler, Any], Any], items: list[Any]) -> Outcome:
    """Messages, live events and the error (if any) of each feed."""
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


def all_paths(dialect: str, events: list[Event]) -> dict[str, Outcome]:
    texts = [json.dumps(e) for e in events]
    return {
        "bytes": outcome(dialect, Assembler.feed_bytes, [frame(dialect, e) for e in events]),
        "text": outcome(dialect, lambda a, t: a.feed(t), texts),
        "dict": outcome(dialect, lambda a, e: a.feed(e), [json.loads(t) for t in texts]),
        "dicts, feed_many": outcome(
            dialect, lambda a, e: a.feed_many([e]), [json.loads(t) for t in texts]
        ),
        "sdk object": outcome(
            dialect, lambda a, o: a.feed(o), [sdk_object(dialect, json.loads(t)) for t in texts]
        ),
        "sdk objects, feed_many": outcome(
            dialect,
            lambda a, o: a.feed_many([o]),
            [sdk_object(dialect, json.loads(t)) for t in texts],
        ),
    }


def assert_all_agree(dialect: str, events: list[Event]) -> None:
    results = all_paths(dialect, events)
    reference = results.pop("bytes")
    for path, got in results.items():
        assert got[2] == reference[2], f"{path}: errors differ"
        assert got[0] == reference[0], f"{path}: messages differ"
        assert got[1] == reference[1], f"{path}: live events differ"


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(openai_streams())
def test_openai_chat_paths_agree(events: list[Event]) -> None:
    assert_all_agree("openai-chat", events)


@SETTINGS
@given(anthropic_streams())
def test_anthropic_paths_agree(events: list[Event]) -> None:
    assert_all_agree("anthropic", events)


def test_a_dropped_field_would_be_seen() -> None:
    """The comparison is not vacuous: a stream that differs in one field read gives a
    different result on the same path."""
    events: list[Event] = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
    ]
    dropped = [dict(e) for e in events]
    dropped[2] = {**events[2], "delta": {"type": "text_delta"}}
    full = all_paths("anthropic", events)
    assert all_paths("anthropic", dropped)["dict"][0] != full["dict"][0]
    assert full["sdk object"][0] == full["bytes"][0]
    assert full["sdk object"][0][0].text == "hi"
