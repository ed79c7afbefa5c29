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
