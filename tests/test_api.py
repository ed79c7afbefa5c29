"""The public surface: every name in ``toolstitch.__all__`` has a real signature and says
what it does in ``help()``."""

from __future__ import annotations

import inspect
import pydoc
import sys
import types
import typing
from typing import Any

import pytest
import toolstitch

# Owned by the streams layer, whose signature is checked with it.
NOT_HERE = {"Assembler"}
# Type aliases: documented where they are defined, not callable.
ALIASES = {"Block", "Finish", "LiveEvent", "ProblemKind", "Provider"}
# Constants: documented where they are defined.
CONSTANTS = {"RECORD_KEYS"}


def _public() -> list[tuple[str, Any]]:
    return [
        (name, getattr(toolstitch, name))
        for name in toolstitch.__all__
        if name not in NOT_HERE | ALIASES | CONSTANTS and name != "__version__"
    ]


def _is_alias(value: object) -> bool:
    return isinstance(value, types.UnionType) or typing.get_origin(value) is not None


def test_every_public_name_is_a_class_a_function_or_a_listed_alias() -> None:
    for name in toolstitch.__all__:
        value = getattr(toolstitch, name)
        if name == "__version__":
            assert isinstance(value, str)
        elif name in ALIASES:
            assert _is_alias(value), name
        elif name in CONSTANTS:
            assert isinstance(value, tuple) and all(isinstance(v, str) for v in value), name
        else:
            assert inspect.isclass(value) or callable(value), name


@pytest.mark.parametrize(("name", "value"), _public(), ids=[n for n, _ in _public()])
def test_signature_is_real(name: str, value: Any) -> None:
    if name == "LiveEvents":
        # Returned by the Assembler, never built by the caller.
        with pytest.raises(TypeError):
            value()
        return
    if typing.is_typeddict(value):
        # A TypedDict (AssemblerLimits) documents keyword arguments; its keys are the API.
        assert value.__annotations__
        return
    signature = inspect.signature(value)
    for parameter in signature.parameters.values():
        assert parameter.default is not Ellipsis, f"{name}({parameter.name}=...)"
    # What help() shows has no "=..." default either.
    shown = pydoc.render_doc(value, renderer=pydoc.TextDoc())
    for text in (str(signature), shown):
        assert "=..." not in text and "=Ellipsis" not in text, text[:300]


@pytest.mark.parametrize(("name", "value"), _public(), ids=[n for n, _ in _public()])
def test_docstring_says_what_it_does(name: str, value: Any) -> None:
    doc = inspect.getdoc(value)
    assert doc, f"{name} has no docstring"
    first = doc.strip().splitlines()[0]
    assert len(first) > 15, f"{name}: {first!r}"
    # Inherited from object or a builtin base means nothing was written.
    for base in (object, ValueError, tuple):
        assert doc != inspect.getdoc(base), name
    # help() must not send the reader to files a wheel does not carry.
    for word in (".md", "docs/", "QUIRKS", "DESIGN"):
        assert word not in doc, f"{name} docstring mentions {word!r}"


@pytest.mark.parametrize(
    "cls",
    [
        toolstitch.ToolUses,
        toolstitch.Text,
        toolstitch.Refusal,
        toolstitch.Thinking,
        toolstitch.Images,
    ],
)
def test_shown_default_limits_are_the_real_ones(cls: Any) -> None:
    # The signatures spell the limits out as numbers; an accumulator built with no
    # arguments has exactly those limits (pickle carries them as constructor args).
    defaults = {p.name: p.default for p in inspect.signature(cls).parameters.values()}
    assert all(isinstance(v, int) for v in defaults.values()), defaults
    assert cls().__reduce__()[1] == tuple(defaults.values())


def test_shown_partial_json_limits_are_the_real_ones() -> None:
    defaults = inspect.signature(toolstitch.PartialJson).parameters
    depth = defaults["max_depth"].default
    toolstitch.PartialJson().feed("[" * depth)
    with pytest.raises(toolstitch.LimitError):
        toolstitch.PartialJson().feed("[" * (depth + 1))


def test_method_and_module_docstrings_point_at_nothing_outside_the_package() -> None:
    modules = [
        toolstitch,
        toolstitch.blocks,
        toolstitch.calls,
        toolstitch.errors,
        toolstitch.messages,
        toolstitch.render,
        toolstitch.tools,
    ]
    # `toolstitch.assemble` is the function; the module is still importable by name.
    modules += [
        sys.modules["toolstitch.assemble"],
        sys.modules["toolstitch.streams"],
        toolstitch._toolstitch,
    ]
    for module in modules:
        for text in _docstrings(module):
            for word in (".md", "docs/", "QUIRKS", "DESIGN"):
                assert word not in text, f"{module.__name__}: {word!r} in {text[:80]!r}"


def _docstrings(module: types.ModuleType) -> list[str]:
    found = [module.__doc__ or ""]
    for value in vars(module).values():
        if getattr(value, "__module__", None) not in (module.__name__, "toolstitch"):
            continue
        found.append(getattr(value, "__doc__", None) or "")
        if inspect.isclass(value):
            for member in vars(value).values():
                found.append(getattr(member, "__doc__", None) or "")
    return found


def test_names_stay_importable_from_their_old_modules() -> None:
    # `toolstitch.assemble` is the function; the module is loaded with the package.
    old = sys.modules["toolstitch.assemble"]
    for name in old.__all__:
        value = getattr(old, name)
        if not name.startswith("_"):
            assert getattr(toolstitch, name) is value, name
    assert old.Assembler is toolstitch.streams.Assembler
    assert old.Provider is toolstitch.streams.Provider is toolstitch.messages.Provider
    assert old._event_plain is toolstitch.messages._event_plain
    for name in ("ValidatedCall", "ToolArgumentDone", "ArgumentTracker"):
        assert getattr(toolstitch.tools, name) is getattr(toolstitch, name), name
    assert toolstitch.streams.AssemblerLimits is toolstitch.messages.AssemblerLimits
    assert toolstitch.errors.ToolValidationError is toolstitch.ToolValidationError
