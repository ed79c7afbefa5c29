"""The conformance suite's cases and verdicts, shared by the runner and the tests.

A case is two files in ``cases/<category>/``: the stream's exact bytes
(``<name>.<transport>``) and ``<name>.case.json`` describing it (README.md,
"The case format"). A verdict compares what a reassembler hands its application
with the case's expectation; the five verdicts are defined in README.md and
implemented once, in ``verdict`` below.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUITE_VERSION = "1.0.0"
ROOT = Path(__file__).resolve().parent
CASES = ROOT / "cases"
CATEGORIES = ("real", "quirk", "violation", "hostile")
TRANSPORTS = ("sse", "jsonl", "eventstream", "json")
DIALECTS = (
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
VERDICTS = ("wrong", "pass", "missed", "error", "skip")


@dataclass(frozen=True)
class Case:
    id: str
    dialect: str
    category: str
    transport: str
    path: Path
    source: dict[str, Any]
    expect: dict[str, Any]
    request: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    @property
    def refuse(self) -> bool:
        return bool(self.expect["outcome"] == "refuse")

    @property
    def source_label(self) -> str:
        if "project" in self.source:
            return f"{self.source['project']}:{self.source['path']}"
        return str(self.source.get("quirk") or self.source.get("rule") or "generated")


@dataclass(frozen=True)
class Call:
    """One call as a reassembler hands it to its application.

    ``arguments`` is the call's input as text: JSON for a function call, free-form
    text for a custom tool (``freeform=True``).
    """

    name: str
    arguments: str
    id: str | None = None
    freeform: bool = False


@dataclass
class Skip:
    """The reassembler cannot read this dialect or transport."""

    reason: str = ""


@dataclass
class Outcome:
    calls: list[Call] = field(default_factory=list)
    error: BaseException | None = None
    skip: Skip | None = None


def load_case(meta_path: Path) -> Case:
    meta = json.loads(meta_path.read_text())
    return Case(
        id=meta["id"],
        dialect=meta["dialect"],
        category=meta["category"],
        transport=meta["transport"],
        path=meta_path.parent / meta["stream"],
        source=meta["source"],
        expect=meta["expect"],
        request=meta.get("request", {}),
    )


def load_cases(root: Path = CASES) -> list[Case]:
    return sorted((load_case(p) for p in root.rglob("*.case.json")), key=lambda c: c.id)


def iter_case_files(root: Path = CASES) -> Iterator[Path]:
    yield from sorted(root.rglob("*.case.json"))


def arguments_object(call: Call) -> dict[str, Any] | None:
    """The call's arguments when they parse as one JSON object, else None.

    A library that hands on an already-decoded object (not text) is taken at its word.
    """
    if isinstance(call.arguments, dict):
        return call.arguments
    if not isinstance(call.arguments, (str, bytes)):
        return None
    try:
        value = json.loads(call.arguments)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def executable(call: Call) -> bool:
    """Could an application run this call: a name, and arguments it can read."""
    if not call.name:
        return False
    if call.freeform:
        return True
    return arguments_object(call) is not None


def matches(call: Call, expected: dict[str, Any]) -> bool:
    if call.name != expected["name"]:
        return False
    if "id" in expected and call.id != expected["id"]:
        return False
    if "input_text" in expected:
        return call.freeform and call.arguments == expected["input_text"]
    if call.freeform:
        return False
    return arguments_object(call) == expected["arguments"]


def verdict(case: Case, outcome: Outcome) -> str:
    if outcome.skip is not None:
        return "skip"
    if outcome.error is not None:
        return "pass" if case.refuse else "error"
    runnable = [c for c in outcome.calls if executable(c)]
    if case.refuse:
        return "wrong" if runnable else "pass"
    remaining = list(case.expect["calls"])
    wrong = False
    for call in runnable:
        for n, expected in enumerate(remaining):
            if matches(call, expected):
                del remaining[n]
                break
        else:
            wrong = True
    if wrong:
        return "wrong"
    return "missed" if remaining else "pass"
