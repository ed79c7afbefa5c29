"""Every way of feeding decoded events gives the same result: ``feed(dict)`` (read in
place, never written back as JSON text), ``feed(json text)``, ``feed(SDK object)`` and
``feed_many``, for every dialect, on the real recordings and on hand-made streams.
Also what a dict may hold (exactly what JSON can say) and the ``extend`` fast path."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from toolstitch import (
    AssembledMessage,
    Assembler,
    StreamClosedError,
    StreamDecodeError,
    ToolCallStarted,
    ToolInputDelta,
    ToolUses,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
VERCEL = REAL / "vercel-ai"
EXPECTED: dict[str, Any] = json.loads((VERCEL / "EXPECTED.json").read_text())


def recording_texts(name: str) -> list[str]:
    lines = [line for line in (VERCEL / name).read_text().splitlines() if line.strip()]
    # One recording holds two responses (a call, then the answer to its output): one
    # stream is its first response.
    starts = [i for i, line in enumerate(lines) if '"type":"response.created"' in line]
    return lines[: starts[1]] if len(starts) > 1 else lines


def sse_texts(path: Path) -> list[str]:
    return [
        line[6:]
        for line in path.read_text().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def jsonl_texts(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


# Recordings of every dialect (Bedrock's event-stream bodies are binary frames whose
# payloads need their event names: they are covered by the hand-made stream below).
RECORDINGS: dict[str, Callable[[], list[str]]] = {
    **{p.name: partial(recording_texts, p.name) for p in sorted(VERCEL.glob("*.chunks.txt"))},
    "openai_chat.sse": lambda: sse_texts(REAL / "openai_chat-completions-parallel-two-tools.sse"),
    "anthropic.sse": lambda: sse_texts(REAL / "anthropic_messages-text-then-tool-use.sse"),
    "vertex.jsonl": lambda: jsonl_texts(
        REAL / "google_vertex-stream-function-call-args-4-calls.jsonl"
    ),
    "mistral.jsonl": lambda: jsonl_texts(REAL / "mistral_chat-single-chunk-tool-call.jsonl"),
}


def assemble(feed: Callable[[Assembler], list[Any]]) -> tuple[list[AssembledMessage], list[Any]]:
    asm = Assembler()
    live = feed(asm)
    live += list(asm.close())
    return asm.messages(), live


def by_feed(events: list[Any]) -> Callable[[Assembler], list[Any]]:
    def run(asm: Assembler) -> list[Any]:
        out: list[Any] = []
        for e in events:
            out += list(asm.feed(e))
        return out

    return run


def by_feed_many(events: list[Any], batch: int) -> Callable[[Assembler], list[Any]]:
    def run(asm: Assembler) -> list[Any]:
        out: list[Any] = []
        for at in range(0, len(events), batch):
            out += list(asm.feed_many(events[at : at + batch]))
        return out

    return run


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_dict_text_bytes_and_feed_many_agree_on_every_recording(name: str) -> None:
    texts = RECORDINGS[name]()
    reference = assemble(by_feed(texts))
    if name in EXPECTED or not name.endswith(".chunks.txt"):
        assert reference[0][0].tool_uses, "these recordings have calls"
    dicts = [json.loads(t) for t in texts]
    assert assemble(by_feed(dicts)) == reference
    assert assemble(by_feed([t.encode() for t in texts])) == reference
    for batch in (1, 3, len(dicts)):
        assert assemble(by_feed_many(dicts, batch)) == reference
    assert assemble(by_feed_many(texts, 4)) == reference
    # A generator is read once, in order.
    gen_asm = Assembler()
    live = list(gen_asm.feed_many(d for d in dicts)) + list(gen_asm.close())
    assert (gen_asm.messages(), live) == reference


def test_named_events_through_feed_many() -> None:
    """Bedrock payloads carry no type of their own: the event name comes with them."""
    stream = [
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "b", "name": "f"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a":'}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "1}"}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "tool_use"}),
    ]
    one = Assembler("bedrock")
    for name, payload in stream:
        one.feed(payload, event_type=name)
    one.close()
    many = Assembler("bedrock")
    for name, payload in stream:
        many.feed_many([payload], event_type=name)
    many.close()
    text = Assembler("bedrock")
    for name, payload in stream:
        text.feed(json.dumps(payload), event_type=name)
    text.close()
    assert one.messages() == many.messages() == text.messages()
    (call,) = one.message().tool_uses
    assert (call.id, call.name, call.input) == ("b", "f", '{"a":1}')
    assert one.message().complete


# ------------------------------------------------------------------ SDK objects


# The objects are built the way the SDKs build them while streaming (construct_type,
# no validation); the SDKs never yield Anthropic's `ping`, so neither path sees it.


def openai_chunks(texts: list[str]) -> list[Any]:
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    return [construct_type(type_=ChatCompletionChunk, value=json.loads(t)) for t in texts]


def anthropic_events(texts: list[str]) -> list[Any]:
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    return [construct_type(type_=RawMessageStreamEvent, value=json.loads(t)) for t in texts]


def responses_events(texts: list[str]) -> list[Any]:
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    return [construct_type(type_=ResponseStreamEvent, value=json.loads(t)) for t in texts]


def without_pings(texts: list[str]) -> list[str]:
    return [t for t in texts if json.loads(t).get("type") != "ping"]


SDK_CASES: dict[str, tuple[Callable[[], list[str]], Callable[[list[str]], list[Any]]]] = {
    "openai chat (recorded)": (RECORDINGS["openai_chat.sse"], openai_chunks),
    "openai chat (groq)": (RECORDINGS["groq-tool-call.chunks.txt"], openai_chunks),
    "anthropic (recorded)": (RECORDINGS["anthropic.sse"], anthropic_events),
    "anthropic (tool without arguments)": (
        RECORDINGS["anthropic-tool-no-args.chunks.txt"],
        anthropic_events,
    ),
    "openai responses (azure)": (RECORDINGS["azure-tool-call.1.chunks.txt"], responses_events),
}


@pytest.mark.parametrize("case", sorted(SDK_CASES))
def test_sdk_objects_give_what_their_json_gives(case: str) -> None:
    texts_of, build = SDK_CASES[case]
    texts = without_pings(texts_of())
    objects = build(texts)
    assert all(not isinstance(o, dict) for o in objects)
    reference = assemble(by_feed(texts))
    assert assemble(by_feed(objects)) == reference
    assert assemble(by_feed_many(objects, 5)) == reference


# ------------------------------------------------------------------ what a dict may hold


def started() -> Assembler:
    asm = Assembler("openai-chat")
    asm.feed(
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}
                        ]
                    }
                }
            ]
        }
    )
    return asm


def args_chunk(value: Any) -> dict[str, Any]:
    return {
        "choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": value}}]}}]
    }


def assert_kept(asm: Assembler) -> None:
    (call,) = asm.message().tool_uses
    assert (call.id, call.name, call.input) == ("c", "f", "{")


@pytest.mark.parametrize(
    ("value", "what", "where"),
    [
        ({"a": {1, 2}}, "set", "choices[0].delta.tool_calls[0].function.arguments.a"),
        (float("nan"), "NaN", "choices[0].delta.tool_calls[0].function.arguments"),
        (float("inf"), "infinities", "function.arguments"),
        ({1: "x"}, "dict key of type int", "function.arguments"),
        (object(), "object", "function.arguments"),
        (b"bytes", "bytes", "function.arguments"),
        ("\ud800", "lone surrogate", ""),
    ],
)
def test_what_json_cannot_say_is_refused_with_its_path(value: Any, what: str, where: str) -> None:
    asm = started()
    with pytest.raises(StreamDecodeError, match="event #2") as info:
        asm.feed(args_chunk(value))
    assert what in str(info.value)
    assert where in str(info.value)
    assert info.value.event_index == 2
    assert_kept(asm)
    # Also in a field no adapter reads: the event is refused whole.
    with pytest.raises(StreamDecodeError):
        asm.feed({"choices": [], "extra": value})
    assert_kept(asm)


def test_nesting_is_bounded_and_cycles_are_refused() -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    asm = started()
    with pytest.raises(StreamDecodeError, match="nesting deeper than 128"):
        asm.feed({"choices": [], "extra": deep})
    cycle: dict[str, Any] = {"choices": []}
    cycle["self"] = cycle
    with pytest.raises(StreamDecodeError, match="nesting deeper"):
        asm.feed(cycle)
    assert_kept(asm)


def test_subclasses_tuples_and_big_ints_read_like_their_json() -> None:
    class Text(str):
        pass

    class Index(int):
        pass

    events: list[Any] = [
        OrderedDict(
            choices=(
                {
                    "index": Index(0),
                    "delta": {
                        "tool_calls": [
                            {
                                "index": Index(0),
                                "id": Text("c"),
                                "function": {"name": "f", "arguments": Text('{"n":')},
                            }
                        ]
                    },
                },
            ),
            created=2**70,
            ratio=0.5,
            ok=True,
        ),
        args_chunk("1}"),
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    from_dicts = Assembler("openai-chat")
    from_dicts.feed_many(events)
    from_dicts.close()
    from_text = Assembler("openai-chat")
    for e in events:
        from_text.feed(json.dumps(e))
    from_text.close()
    assert from_dicts.messages() == from_text.messages()
    (call,) = from_dicts.message().tool_uses
    assert (call.id, call.name, call.input) == ("c", "f", '{"n":1}')


def test_a_bool_is_not_an_index() -> None:
    for form in (lambda e: e, json.dumps):
        asm = Assembler("openai-chat")
        with pytest.raises(StreamDecodeError, match="index"):
            asm.feed(form({"choices": [{"delta": {"tool_calls": [{"index": True}]}}]}))


def test_gemini_args_keep_key_order_through_dicts_and_feed_many() -> None:
    args = {"z": 1, "a": {"y": [2, {"q": None}], "b": 'é\n"x"'}, "m": 1.5}
    event = {
        "candidates": [
            {
                "content": {"parts": [{"functionCall": {"name": "f", "args": args}}]},
                "finishReason": "STOP",
            }
        ]
    }
    want = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    for feed in ("feed", "feed_many"):
        asm = Assembler("gemini")
        if feed == "feed":
            asm.feed(event)
        else:
            asm.feed_many([event])
        asm.close()
        assert asm.message().tool_uses[0].input == want


# ------------------------------------------------------------------ feed_many


def test_feed_many_returns_the_live_events_of_the_batch() -> None:
    events = [
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}
                        ]
                    }
                }
            ]
        },
        args_chunk("}"),
    ]
    one = Assembler("openai-chat")
    each = [e for ev in events for e in one.feed(ev)]
    many = Assembler("openai-chat")
    batch = many.feed_many(events)
    assert list(batch) == each
    assert [type(e) for e in batch] == [ToolCallStarted, ToolInputDelta, ToolInputDelta]
    assert Assembler("openai-chat", live=False).feed_many(events) == ()
    assert Assembler("openai-chat").feed_many([]) == ()


def test_feed_many_applies_the_events_after_a_bad_one_and_raises_the_first_error() -> None:
    asm = Assembler("openai-chat")
    good = {
        "choices": [
            {
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}
                    ]
                }
            }
        ]
    }
    with pytest.raises(StreamDecodeError, match="event #2"):
        asm.feed_many([good, {"choices": [], "x": {1}}, args_chunk("}")])
    # Q30: the event after the bad one was applied; the message says one is missing.
    (call,) = asm.message().tool_uses
    assert call.input == "{}"
    assert any("event #2" in p for p in asm.message().problems)
    with pytest.raises(TypeError, match="feed"):
        asm.feed_many([None, args_chunk("x")])
    assert asm.message().tool_uses[0].input == "{}"


def test_feed_many_after_close_is_refused() -> None:
    asm = Assembler("openai-chat")
    asm.close()
    with pytest.raises(StreamClosedError):
        asm.feed_many([args_chunk("x")])
    asm.feed_many([])  # nothing to refuse


def test_feed_many_takes_any_iterable_and_refuses_a_non_iterable() -> None:
    def gen() -> Iterator[dict[str, Any]]:
        yield {"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}

    asm = Assembler("openai-chat")
    asm.feed_many(gen())
    asm.close()
    assert asm.message().text == "hi"
    with pytest.raises(TypeError):
        Assembler().feed_many(5)  # type: ignore[arg-type]


def test_a_generator_and_an_sdk_object_may_read_the_assembler_while_it_is_fed() -> None:
    """No lock is held while Python code runs (pulling the next item, to_dict()): the
    code may call back into the same assembler without a deadlock."""
    asm = Assembler("openai-chat")
    seen: list[int] = []

    def gen() -> Iterator[dict[str, Any]]:
        for piece in ("{", "}"):
            seen.append(len(asm.message().tool_uses))
            yield {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c",
                                    "function": {"name": "f", "arguments": piece},
                                }
                            ]
                        }
                    }
                ]
            }

    class Sdk:
        def to_dict(self, mode: str = "python") -> dict[str, Any]:
            seen.append(len(asm.message().tool_uses))
            return {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}

    asm.feed_many(gen())
    asm.feed(Sdk())
    asm.close()
    assert seen == [0, 1, 1]
    assert asm.message().complete and asm.message().tool_uses[0].input == "{}"


# ------------------------------------------------------------------ ToolUses.extend


def test_extend_fast_path_matches_add_fragment() -> None:
    frags = [
        (i % 3, f"id{i % 3}" if i < 3 else "", "n" if i < 3 else None, f"{i}é") for i in range(50)
    ]
    a, b, c = ToolUses(), ToolUses(), ToolUses()
    a.extend(frags)
    b.extend(tuple(frags))
    for f in frags:
        c.add_fragment(*f)
    assert a.blocks() == b.blocks() == c.blocks()


def test_extend_keeps_what_came_before_a_bad_item() -> None:
    t = ToolUses()
    with pytest.raises(TypeError, match="str or None"):
        t.extend([(0, "a", "f", "{"), (0, 5, "", ""), (0, "", "", "}")])  # type: ignore[list-item]
    assert [(b.id, b.input) for b in t.blocks()] == [("a", "{")]
    with pytest.raises(TypeError, match=r"\(index, id, name, input_json\), not 3"):
        t.extend([(1, "b", "g", ""), (1, "", "")])  # type: ignore[list-item]
    assert len(t) == 2


def test_extend_reads_an_index_with_python_code_without_deadlock() -> None:
    """An item whose index runs Python code (``__index__``) that uses the same
    accumulator: the lock must not be held while it runs."""
    t = ToolUses()

    class Sneaky:
        def __index__(self) -> int:
            t.add_fragment(7, "inner", "g", "")
            return 1

    t.extend([(0, "a", "f", "x"), (Sneaky(), "b", "h", "y"), (0, "", "", "z")])
    assert [(b.id, b.input) for b in t.blocks()] == [("a", "xz"), ("b", "y"), ("inner", "")]


def test_extend_refuses_a_lone_surrogate_and_a_huge_index() -> None:
    t = ToolUses()
    with pytest.raises(UnicodeEncodeError):
        t.extend([(0, "a", "f", "\ud800")])
    from toolstitch import IndexRangeError

    with pytest.raises(IndexRangeError):
        t.extend([(2**64, "a", "f", "")])
    assert t.empty
