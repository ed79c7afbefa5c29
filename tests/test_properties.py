"""Invariants, by hypothesis: fragmentation and interleaving never change the result;
wire round trips are exact."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from toolstitch import (
    ImageBlock,
    Message,
    RefusalBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    ToolUseChunk,
    ToolUses,
    marshal_block,
    marshal_blocks,
    marshal_message,
    unmarshal_block,
    unmarshal_blocks,
    unmarshal_message,
)

I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
raw_json = st.builds(
    lambda v, indent, ascii_: json.dumps(v, indent=indent, ensure_ascii=ascii_),
    json_values,
    st.sampled_from([None, 1, 2]),
    st.booleans(),
)


def cuts(text: str, points: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(p % (len(text) + 1) for p in points)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)] or [""]


@st.composite
def call_streams(
    draw: st.DrawFn,
) -> tuple[dict[int, tuple[str, str, str]], list[tuple[int, str, str, str]]]:
    """Calls by index, and one stream of fragments that delivers them interleaved."""
    indexes = draw(st.lists(I64, min_size=1, max_size=5, unique=True))
    calls: dict[int, tuple[str, str, str]] = {}
    per_index: list[list[tuple[int, str, str, str]]] = []
    for index in indexes:
        call_id = draw(st.text(min_size=1, max_size=12))
        name = draw(st.text(min_size=1, max_size=12))
        raw = draw(raw_json)
        pieces = cuts(raw, draw(st.lists(st.integers(0, 10_000), max_size=8)))
        frags = [(index, "", "", p) for p in pieces]
        # id and name ride on a random fragment each (late ids included)
        i = draw(st.integers(0, len(frags) - 1))
        j = draw(st.integers(0, len(frags) - 1))
        frags[i] = (index, call_id, frags[i][2], frags[i][3])
        frags[j] = (index, frags[j][1], name, frags[j][3])
        calls[index] = (call_id, name, raw)
        per_index.append(frags)
    stream: list[tuple[int, str, str, str]] = []
    while any(per_index):
        k = draw(st.integers(0, len(per_index) - 1))
        if per_index[k]:
            stream.append(per_index[k].pop(0))
    return calls, stream


@given(call_streams())
def test_any_fragmentation_and_interleaving_gives_the_same_blocks(
    case: tuple[dict[int, tuple[str, str, str]], list[tuple[int, str, str, str]]],
) -> None:
    calls, stream = case
    expected = [ToolUseBlock(i, n, raw) for _, (i, n, raw) in sorted(calls.items())]
    by_fragment = ToolUses()
    for index, call_id, name, piece in stream:
        by_fragment.add_fragment(index, call_id, name, piece)
    by_chunk = ToolUses()
    by_chunk.extend(ToolUseChunk(*f) for f in stream)
    assert by_fragment.blocks() == expected
    assert by_chunk.blocks() == expected


@given(
    raw_json,
    st.lists(st.integers(0, 10_000), max_size=20),
    st.lists(st.integers(0, 10_000), max_size=20),
)
def test_two_fragmentations_of_one_input_agree(raw: str, a: list[int], b: list[int]) -> None:
    first, second = ToolUses(), ToolUses()
    for piece in cuts(raw, a):
        first.add_fragment(0, input_json=piece)
    for piece in cuts(raw, b):
        second.add_fragment(0, input_json=piece)
    assert first.blocks() == second.blocks() == [ToolUseBlock(input=raw)]


text = st.text()
state = st.one_of(st.none(), raw_json)


@st.composite
def tool_use_blocks(draw: st.DrawFn) -> ToolUseBlock:
    s = draw(state)
    return ToolUseBlock(
        draw(text),
        draw(text),
        draw(st.one_of(st.just(""), raw_json.filter(lambda r: r != "null"))),
        s,
        draw(st.text(min_size=1)) if s else "",
    )


@st.composite
def thinking_blocks(draw: st.DrawFn) -> ThinkingBlock:
    s = draw(state)
    return ThinkingBlock(
        draw(text), draw(text), draw(text), s, draw(st.text(min_size=1)) if s else ""
    )


leaf_blocks = st.one_of(
    st.builds(TextBlock, text),
    st.builds(RefusalBlock, text),
    thinking_blocks(),
    st.builds(ImageBlock, text, text, text),
    tool_use_blocks(),
)
blocks = st.recursive(
    leaf_blocks,
    lambda inner: st.builds(
        ToolResultBlock, text, st.lists(inner, max_size=3).map(tuple), st.booleans()
    ),
    max_leaves=8,
)


@settings(max_examples=300)
@given(blocks)
def test_block_round_trip_is_exact(block: object) -> None:
    wire = marshal_block(block)  # type: ignore[arg-type]
    assert unmarshal_block(wire) == block
    assert marshal_block(unmarshal_block(wire)) == wire
    json.loads(wire)


@given(st.lists(blocks, max_size=5))
def test_block_list_round_trip_is_exact(items: list[object]) -> None:
    assert unmarshal_blocks(marshal_blocks(items)) == items  # type: ignore[arg-type]


@given(
    st.one_of(
        st.builds(Message, text, st.lists(blocks, max_size=4).map(tuple)),
        st.builds(ToolResultMessage, text, st.lists(blocks, max_size=4).map(tuple), st.booleans()),
    )
)
def test_message_round_trip_is_exact(message: object) -> None:
    assert unmarshal_message(marshal_message(message)) == message  # type: ignore[arg-type]
