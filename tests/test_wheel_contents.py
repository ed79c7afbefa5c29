"""The wheel-content rules of ``.ci/wheel_contents.py`` (what ``make dist``, ``make
dist-check`` and the release workflow check every wheel against), applied on every test
run to the package tree as a wheel would carry it: a new module, subpackage or file that
the release check would refuse fails here first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "wheel_contents", ROOT / ".ci" / "wheel_contents.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["wheel_contents"] = module
    spec.loader.exec_module(module)
    return module


wheel_contents = _load()
PACKAGE = ROOT / "python" / "toolstitch"


def tree() -> set[str]:
    """The package tree's files under the names a wheel gives them (the locally built
    extension and byte-code caches left out, the extension's wheel name put in)."""
    names = set()
    for path in PACKAGE.rglob("*"):
        name = f"toolstitch/{path.relative_to(PACKAGE).as_posix()}"
        built = wheel_contents.EXTENSION.fullmatch(name)
        if path.is_file() and "__pycache__" not in path.parts and not built:
            names.add(name)
    names.add("toolstitch/_toolstitch.abi3.so")
    names.add("toolstitch-0.1.0.dist-info/METADATA")
    return names


def test_the_package_tree_passes_the_release_check() -> None:
    assert wheel_contents.problems(tree()) == []


def test_subpackages_are_part_of_the_package() -> None:
    names = tree()
    assert "toolstitch/proxy/app.py" in names
    assert "toolstitch/proxy/app.py" in wheel_contents.wanted()
    assert wheel_contents.problems(names) == []


@pytest.mark.parametrize(
    "extension", ["toolstitch/_toolstitch.abi3.so", "toolstitch/_toolstitch.pyd"]
)
def test_every_platforms_extension_is_admitted(extension: str) -> None:
    names = {n for n in tree() if not wheel_contents.EXTENSION.fullmatch(n)} | {extension}
    assert wheel_contents.problems(names) == []


@pytest.mark.parametrize(
    "extra",
    [
        "tests/test_api.py",
        "toolstitch/proxy/notes.txt",
        "toolstitch/__pycache__/cli.cpython-311.pyc",
        "src/lib.rs",
        "toolstitch/_toolstitch.abi3.so.bak",
    ],
)
def test_twin_anything_else_is_refused(extra: str) -> None:
    assert wheel_contents.problems(tree() | {extra}) == [f"not part of the package: {extra}"]


def test_twin_a_missing_module_or_extension_is_named() -> None:
    names = tree() - {"toolstitch/proxy/app.py"}
    assert wheel_contents.problems(names) == ["missing from the wheel: toolstitch/proxy/app.py"]
    names = {n for n in tree() if not wheel_contents.EXTENSION.fullmatch(n)}
    assert wheel_contents.problems(names) == [
        "missing from the wheel: the compiled extension (_toolstitch.*.so or .pyd)"
    ]
