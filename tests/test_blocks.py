"""The block dataclasses: frozen, slotted, comparable."""

from __future__ import annotations

import dataclasses

import pytest
from toolstitch import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    RefusalBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
)

ALL = [
    TextBlock("t"),
    RefusalBlock("r"),
    ThinkingBlock("th", "sig", "anthropic"),
    ImageBlock("image/png", "", "AAAA"),
    AudioBlock("audio/wav", "", "UklG", "hello"),
    DocumentBlock("application/pdf", "https://x/y.pdf", "", "Y"),
    ToolUseBlock("call_1", "weather", '{"city":"Paris"}'),
    ToolResultBlock("call_1", (TextBlock("sunny"),), False),
    Message("assistant", (TextBlock("hi"),)),
    ToolResultMessage("call_1", (TextBlock("sunny"),), True),
]


@pytest.mark.parametrize("value", ALL, ids=lambda v: type(v).__name__)
def test_blocks_are_frozen_slotted_and_comparable(value: object) -> None:
    assert dataclasses.is_dataclass(value)
    assert not hasattr(value, "__dict__")
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, "changed")
    assert value == dataclasses.replace(value)  # type: ignore[type-var]
    assert hash(value) == hash(dataclasses.replace(value))  # type: ignore[type-var]


def test_sequences_become_tuples() -> None:
    assert ToolResultBlock("x", [TextBlock("a")]).content == (TextBlock("a"),)  # type: ignore[arg-type]
    assert Message("user", [TextBlock("a")]).blocks == (TextBlock("a"),)  # type: ignore[arg-type]
    assert ToolResultMessage("x", [TextBlock("a")]).blocks == (TextBlock("a"),)  # type: ignore[arg-type]


def test_different_types_with_the_same_fields_are_not_equal() -> None:
    assert TextBlock("x") != RefusalBlock("x")  # type: ignore[comparison-overlap]


# ------------------------------------------------------------ argument checks

BLOCK_CLASSES = [
    TextBlock,
    RefusalBlock,
    ThinkingBlock,
    ImageBlock,
    AudioBlock,
    DocumentBlock,
    ToolUseBlock,
    ToolResultBlock,
    Message,
    ToolResultMessage,
]


def _fields_of(kind: str) -> list[tuple[type, str]]:
    return [
        (cls, f.name) for cls in BLOCK_CLASSES for f in dataclasses.fields(cls) if f.type == kind
    ]


@pytest.mark.parametrize(("cls", "name"), _fields_of("str"), ids=str)
@pytest.mark.parametrize("bad", [5, None, b"bytes", {"t": 1}, 1.5])
def test_str_fields_refuse_anything_else_naming_the_field(
    cls: type, name: str, bad: object
) -> None:
    with pytest.raises(
        TypeError, match=rf"^{cls.__name__}\.{name} must be a str, not {type(bad).__name__}$"
    ):
        cls(**{name: bad})


@pytest.mark.parametrize(("cls", "name"), _fields_of("str | None"), ids=str)
def test_provider_state_takes_str_or_none(cls: type, name: str) -> None:
    assert getattr(cls(**{name: None}), name) is None
    assert getattr(cls(**{name: "{}"}), name) == "{}"
    with pytest.raises(TypeError, match=rf"{cls.__name__}\.{name} must be a str or None, not dict"):
        cls(**{name: {}})


@pytest.mark.parametrize(("cls", "name"), _fields_of("bool"), ids=str)
@pytest.mark.parametrize("bad", [1, 0, "yes", None])
def test_bool_fields_refuse_anything_else(cls: type, name: str, bad: object) -> None:
    with pytest.raises(TypeError, match=rf"{cls.__name__}\.{name} must be a bool"):
        cls(**{name: bad})


def test_every_block_field_is_checked() -> None:
    # A field type without a check (a new annotation) would stop the import; this
    # makes sure no field slipped through as unchecked.
    for cls in BLOCK_CLASSES:
        for f in dataclasses.fields(cls):
            assert f.type in ("str", "str | None", "bool", "tuple[Block, ...]"), (cls, f.name)


def test_str_subclasses_are_accepted() -> None:
    class Name(str):
        pass

    assert ToolUseBlock(Name("call_1"), "weather").id == "call_1"


def test_tool_result_content_refuses_a_plain_string() -> None:
    with pytest.raises(
        TypeError, match=r"ToolResultBlock\.content must be a sequence of blocks, not str"
    ) as err:
        ToolResultBlock("call_1", "sunny")  # type: ignore[arg-type]
    assert "ToolResultBlock.text(" in str(err.value)
    with pytest.raises(
        TypeError, match=r"ToolResultMessage\.blocks must be a sequence of blocks, not str"
    ):
        ToolResultMessage("call_1", "sunny")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Message\.blocks must be a sequence of blocks, not bytes"):
        Message("user", b"hi")  # type: ignore[arg-type]


def test_one_block_instead_of_a_sequence_is_refused() -> None:
    with pytest.raises(TypeError, match=r"not one TextBlock \(wrap it"):
        ToolResultBlock("call_1", TextBlock("sunny"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Message\.blocks must be a sequence of blocks, not int"):
        Message("user", 3)  # type: ignore[arg-type]


def test_any_iterable_of_blocks_becomes_a_tuple() -> None:
    blocks = [TextBlock("a"), ToolUseBlock("c", "n", "{}")]
    assert ToolResultBlock("x", iter(blocks)).content == tuple(blocks)  # type: ignore[arg-type]
    assert Message("user", (b for b in blocks)).blocks == tuple(blocks)  # type: ignore[arg-type]
    inner = ToolResultBlock("inner", [TextBlock("x")])  # type: ignore[arg-type]
    nested = ToolResultBlock("outer", [inner])  # type: ignore[arg-type]
    assert nested.content == (ToolResultBlock("inner", (TextBlock("x"),)),)


@pytest.mark.parametrize("container", [list, tuple])
def test_a_non_block_item_is_refused_naming_its_position(container: type) -> None:
    items = container([TextBlock("a"), TextBlock("b"), "c"])
    with pytest.raises(
        TypeError, match=r"^ToolResultBlock\.content\[2\] must be a block .*not str$"
    ):
        ToolResultBlock("x", items)
    with pytest.raises(TypeError, match=r"^Message\.blocks\[0\] must be a block .*not dict$"):
        Message("user", container([{"type": "text", "text": "a"}]))
    with pytest.raises(
        TypeError, match=r"ToolResultMessage\.blocks\[1\] must be a block .*not Message"
    ):
        ToolResultMessage("x", container([TextBlock("a"), Message("user")]))


def test_text_and_error_shortcuts() -> None:
    assert ToolResultBlock.text("call_1", "sunny") == ToolResultBlock(
        "call_1", (TextBlock("sunny"),), False
    )
    assert ToolResultBlock.text("call_1", "no", is_error=True).is_error is True
    assert ToolResultBlock.error("call_1", "city not found") == ToolResultBlock(
        "call_1", (TextBlock("city not found"),), True
    )
    with pytest.raises(TypeError, match=r"TextBlock\.text must be a str"):
        ToolResultBlock.text("call_1", 21)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ToolResultBlock\.tool_use_id must be a str"):
        ToolResultBlock.error(None, "x")  # type: ignore[arg-type]


def test_checks_survive_replace_and_pickle() -> None:
    import pickle

    block = ToolResultBlock.text("call_1", "sunny")
    assert pickle.loads(pickle.dumps(block)) == block
    with pytest.raises(TypeError, match=r"ToolResultBlock\.is_error must be a bool"):
        dataclasses.replace(block, is_error="no")  # type: ignore[arg-type]
