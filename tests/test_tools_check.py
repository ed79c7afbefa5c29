"""Toolset.check: validate's verdict and errors, without the arguments built."""

from __future__ import annotations

import pytest
from test_tools import NO_ARGS, WEATHER, call
from toolstitch import Toolset, ToolstitchError


@pytest.fixture
def tools() -> Toolset:
    return Toolset({"weather": WEATHER, "now": NO_ARGS})


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("weather", '{"city": "Paris", "days": [1, 2], "unit": "c"}'),
        ("weather", '{"city": 1}'),
        ("weather", '{"city": "Paris", "days": [0], "extra": true}'),
        ("weather", '{"city": "Paris", "days": [18446744073709551617]}'),
        ("weather", '{"city": "Paris", "city": "Rome"}'),
        ("weather", '{"city": "Paris"} {"city": "Rome"}'),
        ("weather", "[1, 2]"),
        ("weather", ""),
        ("now", "{}"),
        ("now", '{"at": "noon"}'),
        ("undeclared", "{}"),
    ],
)
def test_check_gives_the_verdict_and_error_validate_gives(
    tools: Toolset, name: str, raw: str
) -> None:
    block = call(name, raw)
    try:
        tools.validate(block)
    except ToolstitchError as e:
        with pytest.raises(type(e)) as checked:
            tools.check(block)
        assert str(checked.value) == str(e)
        assert getattr(checked.value, "call_id", None) == getattr(e, "call_id", None) == "c1"
    else:
        tools.check(block)
