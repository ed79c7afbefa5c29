"""Differential tests against the official SDKs' own stream accumulators.

On hypothesis-generated well-formed streams, the calls toolstitch assembles equal what
``openai``'s ``ChatCompletionStreamState`` and ``anthropic``'s ``accumulate_event``
produce; SDK event objects fed directly give the same result as their dicts.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from anthropic.lib.streaming import _messages as anthropic_messages
from anthropic.types import RawMessageStreamEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.lib.streaming import chat as openai_streaming
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter
from toolstitch import Assembler

ANTHROPIC_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ strategies

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=12)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=8), json_value, max_size=4).map(
    lambda d: json.dumps(d, ensure_ascii=False)
)
names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into 1..n pieces at drawn positions."""
    points = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=6))))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def call_specs(draw: st.DrawFn, prefix: str) -> list[tuple[str, str, list[str]]]:
    n = draw(st.integers(0, 3))
    return [
        (f"{prefix}_{i}_{draw(st.integers(0, 999))}", draw(names), draw(split(draw(arguments))))
        for i in range(n)
    ]


# ------------------------------------------------------------------ OpenAI chat


def oa_chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }


@st.composite
def openai_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Well-formed Chat Completions chunks: 1-2 choices, calls opened in index order with
    id/type/name and ``arguments: ""`` on their first delta, fragments interleaved across
    calls and choices, text before the calls, a finish chunk and maybe a usage chunk."""
    n = draw(st.integers(1, 2))
    pending: list[list[dict[str, Any]]] = []
    for c in range(n):
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        for piece in draw(split(draw(st.text(max_size=20)))):
            if piece:
                deltas.append({"content": piece})
        per_call = []
        for i, (cid, name, pieces) in enumerate(draw(call_specs(f"call{c}"))):
            opener = {
                "index": i,
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            rest = [{"index": i, "function": {"arguments": p}} for p in pieces if p]
            per_call.append([opener, *rest])
        # Interleave the calls' fragments, keeping each call's order and the openers'.
        opened: list[dict[str, Any]] = []
        queues = [list(q) for q in per_call]
        while any(queues):
            ready = [
                q
                for k, q in enumerate(queues)
                if q and (k == 0 or len(queues[k - 1]) < len(per_call[k - 1]))
            ]
            q = draw(st.sampled_from(ready))
            opened.append(q.pop(0))
        deltas += [{"tool_calls": [tc]} for tc in opened]
        finish = "tool_calls" if per_call else draw(st.sampled_from(["stop", "length"]))
        pending.append([*({"delta": d} for d in deltas), {"delta": {}, "finish_reason": finish}])
    # Each choice's first chunk in choice order (the SDK needs choices to appear in order).
    chunks = [
        oa_chunk([{"index": c, "finish_reason": None, **q.pop(0)}]) for c, q in enumerate(pending)
    ]
    while any(pending):
        c = draw(st.sampled_from([k for k, q in enumerate(pending) if q]))
        item = pending[c].pop(0)
        chunks.append(oa_chunk([{"index": c, "finish_reason": None, **item}]))
    if draw(st.booleans()):
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        chunks.append(oa_chunk([], usage=usage))
    return chunks


def openai_reference(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    state = openai_streaming.ChatCompletionStreamState()
    for c in chunks:
        for _ in state.handle_chunk(ChatCompletionChunk.model_validate(c)):
            pass
    snapshot = state.current_completion_snapshot
    out = []
    for choice in sorted(snapshot.choices, key=lambda ch: ch.index):
        tool_calls = choice.message.tool_calls or []
        out.append(
            (
                choice.index,
                choice.message.content or "",
                choice.finish_reason,
                [(t.id, t.function.name, t.function.arguments) for t in tool_calls],
            )
        )
    return out


def toolstitch_view(asm: Assembler) -> list[tuple[Any, ...]]:
    return [
        (m.choice, m.text, m.finish_reason, [(b.id, b.name, b.input) for b in m.tool_uses])
        for m in asm.messages()
    ]


@SETTINGS
@given(openai_streams())
def test_openai_chat_equals_chat_completion_stream_state(chunks: list[dict[str, Any]]) -> None:
    asm = Assembler("openai-chat")
    for c in chunks:
        asm.feed(c)
    asm.close()
    assert toolstitch_view(asm) == openai_reference(chunks)
    for m in asm.messages():
        assert m.complete == (m.finish_reason in ("stop", "tool_calls"))


@SETTINGS
@given(openai_streams())
def test_openai_chat_bytes_and_auto_equal_the_sdk(chunks: list[dict[str, Any]]) -> None:
    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
    asm = Assembler()
    for i in range(0, len(data), 37):
        asm.feed_bytes(data[i : i + 37])
    asm.close()
    assert toolstitch_view(asm) == openai_reference(chunks)


@SETTINGS
@given(openai_streams())
def test_openai_sdk_objects_give_the_same_result_as_dicts(chunks: list[dict[str, Any]]) -> None:
    from_dicts, from_objects = Assembler(), Assembler()
    for c in chunks:
        live_dict = from_dicts.feed(c)
        live_obj = from_objects.feed(ChatCompletionChunk.model_validate(c))
        assert live_dict == live_obj
    assert from_dicts.close() == from_objects.close()
    assert from_dicts.messages() == from_objects.messages()


# ------------------------------------------------------------------ Anthropic


@st.composite
def anthropic_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Well-formed Messages events: text and tool_use blocks in sequence, tool input as
    ``input_json_delta`` fragments (often starting with ``""``), pings anywhere, then
    ``message_delta`` with the stop reason and ``message_stop``."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    calls = draw(call_specs("toolu"))
    texts = draw(st.lists(st.text(min_size=1, max_size=15), max_size=2))
    blocks: list[Any] = [("text", t) for t in texts] + [("tool", c) for c in calls]
    blocks = draw(st.permutations(blocks))
    for index, (kind, spec) in enumerate(blocks):
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in draw(split(spec)) if p]
        else:
            cid, name, pieces = spec
            start = {"type": "tool_use", "id": cid, "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        for d in deltas:
            if draw(st.booleans()) and draw(st.booleans()):
                events.append({"type": "ping"})
            events.append({"type": "content_block_delta", "index": index, "delta": d})
        events.append({"type": "content_block_stop", "index": index})
    stop = "tool_use" if calls else draw(st.sampled_from(["end_turn", "max_tokens"]))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 9},
        }
    )
    events.append({"type": "message_stop"})
    return events


def anthropic_reference(events: list[dict[str, Any]]) -> tuple[Any, ...]:
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for e in events:
        if e["type"] == "ping":
            continue
        snapshot = anthropic_messages.accumulate_event(
            event=ANTHROPIC_EVENT.validate_python(e),
            current_snapshot=snapshot,
            json_bufs=json_bufs,
        )
    assert snapshot is not None
    text = "".join(b.text for b in snapshot.content if b.type == "text")
    calls = [(b.id, b.name, b.input) for b in snapshot.content if b.type == "tool_use"]
    return text, snapshot.stop_reason, calls, snapshot.usage.output_tokens


def anthropic_view(asm: Assembler) -> tuple[Any, ...]:
    m = asm.message()
    calls = [(b.id, b.name, json.loads(b.input or "{}")) for b in m.tool_uses]
    assert m.usage is not None
    return m.text, m.finish_reason, calls, m.usage["output_tokens"]


@SETTINGS
@given(anthropic_streams())
def test_anthropic_equals_accumulate_event(events: list[dict[str, Any]]) -> None:
    asm = Assembler("anthropic")
    for e in events:
        asm.feed(e)
    asm.close()
    assert anthropic_view(asm) == anthropic_reference(events)
    assert asm.message().complete == (events[-2]["delta"]["stop_reason"] != "max_tokens")


@SETTINGS
@given(anthropic_streams(), st.integers(1, 50))
def test_anthropic_sse_bytes_equal_accumulate_event(events: list[dict[str, Any]], cut: int) -> None:
    data = "".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events
    ).encode()
    asm = Assembler()
    for i in range(0, len(data), cut):
        asm.feed_bytes(data[i : i + cut])
    asm.close()
    assert anthropic_view(asm) == anthropic_reference(events)


@SETTINGS
@given(anthropic_streams())
def test_anthropic_sdk_objects_give_the_same_result_as_dicts(events: list[dict[str, Any]]) -> None:
    from_dicts, from_objects = Assembler(), Assembler()
    for e in events:
        if e["type"] == "ping":
            continue
        assert from_dicts.feed(e) == from_objects.feed(ANTHROPIC_EVENT.validate_python(e))
    assert from_dicts.close() == from_objects.close()
    assert from_dicts.messages() == from_objects.messages()
