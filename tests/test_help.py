"""Every ``--help`` of the command line points at documentation a wheel user has: no
repository path (``docs/...``, which the wheel does not ship), and every
``python -m pydoc NAME`` it names is a module that imports and has a docstring."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

COMMANDS = [[], ["replay"], ["proxy"]]


def help_text(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "toolstitch", *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "2000", "PATH": ""},
        check=True,
    )
    return " ".join(done.stdout.split())


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a) or "toolstitch")
def test_help_points_at_pages_a_wheel_user_has(args: list[str]) -> None:
    text = help_text(args)
    assert not re.search(r"\bdocs/|\.md\b|README", text), text
    for name in re.findall(r"python -m pydoc ([\w.]+)", text):
        module = importlib.import_module(name)
        assert (module.__doc__ or "").strip(), name


def test_the_top_level_help_names_the_api_reference() -> None:
    assert "python -m pydoc toolstitch" in help_text([])
