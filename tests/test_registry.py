"""The registry of dialects is defined once, in Rust (``src/providers/registry.rs``),
and exported by the binding: every Python constant that names a dialect, a
provider-state format, an item kind or a depth bound is checked against it here."""

from __future__ import annotations

import ast
import os
import pickle
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import toolstitch
from toolstitch import _toolstitch as core
from toolstitch import render, tools
from toolstitch.assemble import ProblemKind
from toolstitch.streams import Provider

PACKAGE = Path(toolstitch.__file__).resolve().parent


def string_literals(module: str) -> set[str]:
    """Every string constant in a module's source."""
    tree = ast.parse((PACKAGE / module).read_text())
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_the_registry_lists_every_dialect_once() -> None:
    assert core.DIALECTS == (
        "openai-chat",
        "openai-responses",
        "anthropic",
        "bedrock",
        "gemini",
        "cohere",
        "ollama",
        "bedrock-invoke",
        "gemini-interactions",
    )
    assert core.AUTO == "auto"
    for table in (core.STATE_FORMATS, core.CLIENT_ITEMS, core.SERVER_ITEMS):
        assert tuple(table) == core.DIALECTS
    formats = [f for fs in core.STATE_FORMATS.values() for f in fs]
    assert len(formats) == len(set(formats))
    assert "openai-responses-item" in core.STATE_FORMATS["openai-responses"]
    assert "anthropic-redacted" in core.STATE_FORMATS["anthropic"]
    assert "custom_tool_call" in core.CLIENT_ITEMS["openai-responses"]
    assert "web_search_call" in core.SERVER_ITEMS["openai-responses"]
    for d in core.DIALECTS:
        toolstitch.Assembler(d)  # every registered name is accepted


def test_the_provider_literal_is_the_registry() -> None:
    assert typing.get_args(Provider) == (core.AUTO, *core.DIALECTS)


def test_render_names_only_registered_dialects_and_formats() -> None:
    assert set(render.PROVIDERS) <= set(core.DIALECTS)
    formats = {f for fs in core.STATE_FORMATS.values() for f in fs}
    literals = string_literals("render.py")
    # Every provider-state format render.py reads back is one the core writes.
    families = {d.split("-")[0] for d in core.DIALECTS}
    read_back = {
        s
        for s in literals
        if re.fullmatch(r"[a-z]+(?:-[a-z]+)*", s) and s.split("-")[0] in families
    }
    assert read_back <= formats | set(core.DIALECTS), read_back - formats
    assert {"openai-responses-item", "anthropic-redacted", "bedrock-redacted"} <= read_back
    # The Responses client kinds render.py answers are the registry's.
    kinds = set(render._RESPONSES_OUTPUTS) - {"function"}
    assert kinds <= set(core.CLIENT_ITEMS["openai-responses"])


def test_tools_bounds_and_kinds_are_the_registrys() -> None:
    assert core.DEPTH_BOUNDS["schema"] == tools._MAX_SCHEMA_DEPTH
    # Read from the binding, never retyped: no number is assigned to it in tools.py.
    tree = ast.parse((PACKAGE / "tools.py").read_text())
    (bound,) = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_MAX_SCHEMA_DEPTH" for t in node.targets)
    ]
    assert not any(
        isinstance(n, ast.Constant) and isinstance(n.value, int) for n in ast.walk(bound)
    )
    assert core.DEPTH_BOUNDS["wire"] == core._WIRE_MAX_DEPTH  # what render.py reads
    client = {k for ks in core.CLIENT_ITEMS.values() for k in ks}
    literals = string_literals("tools.py")
    assert {"custom_tool_call", "computer_call", "shell_call"} <= literals & client
    assert set(core.DEPTH_BOUNDS) == {"json", "event", "schema", "partial", "wire"}


def test_the_cli_help_lists_the_registry() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "400"},
    ).stdout
    flat = " ".join(out.split())
    assert ", ".join(core.DIALECTS) in flat
    assert f"default: {core.AUTO}" in flat


def test_problem_kinds_are_the_registrys_and_problems_keep_their_fields() -> None:
    assert typing.get_args(ProblemKind) == core.PROBLEM_KINDS
    asm = toolstitch.Assembler("openai-chat")
    asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c"}]}}]})
    asm.close()
    (problem,) = asm.message().problems
    assert (problem.kind, problem.choice, problem.call, problem.call_id) == (
        "unnamed",
        0,
        0,
        "c",
    )
    assert problem.event is None and "never received a name" in problem
    copy = pickle.loads(pickle.dumps(problem))
    assert copy == problem and repr(copy) == repr(problem)
    with pytest.raises(AttributeError):
        problem.kind = "protocol"
