"""The sibling accumulators: Text, Refusal, Thinking and Images."""

from __future__ import annotations

import copy
import pickle

import pytest
from toolstitch import (
    ImageBlock,
    ImageChunk,
    Images,
    LimitError,
    Refusal,
    RefusalBlock,
    RefusalChunk,
    Text,
    TextBlock,
    TextChunk,
    Thinking,
    ThinkingBlock,
    ThinkingChunk,
)


@pytest.mark.parametrize(
    ("acc", "chunk", "block"),
    [(Text, TextChunk, TextBlock), (Refusal, RefusalChunk, RefusalBlock)],
)
def test_single_block_accumulators_append(acc: type, chunk: type, block: type) -> None:
    a = acc()
    assert a.block() is None
    assert a.empty
    a.add(chunk("Hel"))
    a.add(chunk("lo, "))
    a.add_fragment("wörld 🌍")
    a.extend([chunk("!"), chunk("")])
    assert a.block() == block("Hello, wörld 🌍!")
    assert len(a) == 1


@pytest.mark.parametrize(
    ("acc", "chunk", "block"), [(Text, TextChunk, TextBlock), (Refusal, RefusalChunk, RefusalBlock)]
)
def test_an_add_of_empty_text_still_yields_a_block(acc: type, chunk: type, block: type) -> None:
    a = acc()
    a.add(chunk(""))
    assert not a.empty
    assert a.block() == block("")


@pytest.mark.parametrize(("acc", "chunk"), [(Text, TextChunk), (Refusal, RefusalChunk)])
def test_single_block_accumulators_refuse_wrong_types(acc: type, chunk: type) -> None:
    a = acc()
    with pytest.raises(TypeError):
        a.add(None)
    with pytest.raises(TypeError):
        a.add("text")
    with pytest.raises(TypeError):
        a.add(ThinkingChunk(0, "x"))
    assert a.block() is None


def test_text_and_refusal_chunks_are_not_interchangeable() -> None:
    with pytest.raises(TypeError):
        Text().add(RefusalChunk("no"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Refusal().add(TextChunk("no"))  # type: ignore[arg-type]


def test_text_limit_rejects_the_fragment_and_keeps_the_rest() -> None:
    t = Text(max_bytes=5)
    t.add_fragment("abc")
    with pytest.raises(LimitError, match="max_bytes"):
        t.add_fragment("def")
    t.add_fragment("de")
    assert t.block() == TextBlock("abcde")


@pytest.mark.parametrize(
    "clone", [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))]
)
def test_text_copies_are_independent(clone: object) -> None:
    t = Text(max_bytes=100)
    t.add_fragment("a")
    twin = clone(t)  # type: ignore[operator]
    twin.add_fragment("b")
    assert t.block() == TextBlock("a")
    assert twin.block() == TextBlock("ab")
    assert twin.max_bytes == 100
    empty = clone(Text())  # type: ignore[operator]
    assert empty.block() is None


def test_thinking_accumulates_by_index_in_ascending_order() -> None:
    th = Thinking()
    assert th.empty
    th.add(ThinkingChunk(1, thinking="second "))
    th.add(ThinkingChunk(-1, thinking="first"))
    th.add(ThinkingChunk(1, thinking="block"))
    assert [b.thinking for b in th.blocks()] == ["first", "second block"]
    assert len(th) == 2


def test_thinking_signature_last_non_empty_wins_with_its_format() -> None:
    th = Thinking()
    th.add(ThinkingChunk(0, thinking="t", signature="s1", signature_format="anthropic"))
    th.add(ThinkingChunk(0, signature="", signature_format="ignored"))
    assert th.blocks()[0].signature == "s1"
    assert th.blocks()[0].signature_format == "anthropic"
    th.add(ThinkingChunk(0, signature="s2", signature_format="bedrock"))
    assert th.blocks() == [ThinkingBlock("t", "s2", "bedrock")]


def test_thinking_provider_state_needs_both_parts() -> None:
    th = Thinking()
    th.add(ThinkingChunk(0, provider_state='"x"'))
    assert th.blocks()[0].provider_state is None
    th.add(ThinkingChunk(0, provider_state='"x"', provider_state_format="gemini"))
    th.add(ThinkingChunk(0, provider_state="", provider_state_format="nope"))
    block = th.blocks()[0]
    assert (block.provider_state, block.provider_state_format) == ('"x"', "gemini")


def test_thinking_limits_and_copies() -> None:
    th = Thinking(max_blocks=1, max_bytes=10)
    th.add(ThinkingChunk(0, thinking="12345"))
    with pytest.raises(LimitError, match="max_blocks"):
        th.add(ThinkingChunk(1, thinking="x"))
    with pytest.raises(LimitError, match="max_bytes"):
        th.add(ThinkingChunk(0, thinking="123456"))
    twin = pickle.loads(pickle.dumps(th))
    twin.add(ThinkingChunk(0, thinking="!"))
    assert th.blocks()[0].thinking == "12345"
    assert twin.blocks()[0].thinking == "12345!"
    assert copy.deepcopy(th).blocks() == th.blocks()
    with pytest.raises(TypeError):
        th.add(None)  # type: ignore[arg-type]


def test_images_url_replaces_and_clears_data_data_appends_and_clears_url() -> None:
    im = Images()
    im.add(ImageChunk(0, media_type="image/png", data="iVBO"))
    im.add(ImageChunk(0, data="Rw0K"))
    assert im.blocks() == [ImageBlock("image/png", "", "iVBORw0K")]
    im.add(ImageChunk(0, url="https://example.com/a.png"))
    assert im.blocks() == [ImageBlock("image/png", "https://example.com/a.png", "")]
    im.add(ImageChunk(0, media_type="image/jpeg", data="/9j/"))
    assert im.blocks() == [ImageBlock("image/jpeg", "", "/9j/")]
    im.add(ImageChunk(0, media_type=""))
    assert im.blocks()[0].media_type == "image/jpeg"


def test_images_by_index_limits_and_copies() -> None:
    im = Images(max_images=2, max_bytes=100)
    im.extend([ImageChunk(9, url="u9"), ImageChunk(-9, url="u-9")])
    assert [b.url for b in im.blocks()] == ["u-9", "u9"]
    with pytest.raises(LimitError, match="max_images"):
        im.add(ImageChunk(0, url="x"))
    twin = copy.copy(im)
    twin.add(ImageChunk(9, data="AA"))
    assert im.blocks()[1].url == "u9"
    assert pickle.loads(pickle.dumps(twin)).blocks() == twin.blocks()
    with pytest.raises(TypeError):
        im.add(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("index", [2**63, -(2**63) - 1])
def test_indexed_chunks_refuse_indexes_outside_i64(index: int) -> None:
    from toolstitch import IndexRangeError

    with pytest.raises(IndexRangeError):
        ThinkingChunk(index)
    with pytest.raises(IndexRangeError):
        ImageChunk(index)


def test_chunks_pickle_and_compare() -> None:
    for chunk in [
        TextChunk("a"),
        RefusalChunk("b"),
        ThinkingChunk(1, "t", "s", "f", '"p"', "g"),
        ImageChunk(2, "m", "u", "d"),
    ]:
        assert pickle.loads(pickle.dumps(chunk)) == chunk
        assert repr(chunk)
