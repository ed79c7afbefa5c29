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

SUITE_VERSION = "2.0.0"
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
# The two kinds of wrong come first: each is a call run that should not have been.
VERDICTS = ("altered", "unchecked", "pass", "missed", "error", "skip")
WRONG = ("altered", "unchecked")
# How a case's expectation reads: at least one call, a stream with no client call, refuse.
EXPECTS = ("calls", "no-call", "refuse")


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
    truth: list[dict[str, Any]] | None = None
    conventions: tuple[str, ...] = ()

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    @property
    def refuse(self) -> bool:
        return bool(self.expect["outcome"] == "refuse")

    @property
    def expects(self) -> str:
        """``calls``, ``no-call`` (``calls: []``) or ``refuse``."""
        if self.refuse:
            return "refuse"
        return "calls" if self.expect["calls"] else "no-call"

    @property
    def true_calls(self) -> list[dict[str, Any]]:
        """The calls the model sent: those an untampered stream of this case holds.

        ``truth`` when the case states it (a cut or tampered stream names its base's
        calls); else the expected calls (none for a refuse case).
        """
        if self.truth is not None:
            return self.truth
        return [] if self.refuse else list(self.expect["calls"])

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
    """What the library told its application.

    ``refused``: the library's own signal that the message is not to be acted on,
    read the way its documentation tells users to (toolstitch's ``complete`` and
    ``problems``; a peer's finish field: ``finish_reason``, ``status``,
    ``stop_reason``), with the reason. A refusal is as loud as an exception: on a
    case that expects ``calls: []`` it is ``error``; on a case that expects calls, the
    calls decide (a refused second choice does not undo the first's calls).
    """

    calls: list[Call] = field(default_factory=list)
    error: BaseException | None = None
    skip: Skip | None = None
    refused: str | None = None


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
        truth=meta.get("truth"),
        conventions=tuple(meta.get("conventions", ())),
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


def _unmatched(calls: list[Call], expected: list[dict[str, Any]]) -> tuple[list[Call], list[Any]]:
    """Match calls against expected calls one to one: (calls left over, expected left over)."""
    remaining = list(expected)
    extra = []
    for call in calls:
        for n, want in enumerate(remaining):
            if matches(call, want):
                del remaining[n]
                break
        else:
            extra.append(call)
    return extra, remaining


def verdict(case: Case, outcome: Outcome) -> str:
    """The case's verdict (README.md, "Verdicts")."""
    if outcome.skip is not None:
        return "skip"
    runnable = [c for c in outcome.calls if executable(c)]
    expected = [] if case.refuse else list(case.expect["calls"])
    extra, remaining = _unmatched(runnable, expected)
    if extra:
        # A call run that should not have been: the model's own call (out of a stream
        # that broke protocol or was cut), or one no untampered stream holds.
        matched = list(expected)
        for want in remaining:
            matched.remove(want)
        truth = list(case.true_calls)
        for want in matched:
            if want in truth:
                truth.remove(want)
        beyond, _ = _unmatched(extra, truth)
        return "altered" if beyond else "unchecked"
    if case.refuse:
        return "pass"
    if outcome.error is not None:
        return "error"
    if not expected and (outcome.refused is not None or outcome.calls):
        # A refusal of a message the model completed with no client call, or a call
        # handed on that cannot run: told apart from a refuse case (README.md,
        # "Verdicts").
        return "error"
    return "missed" if remaining else "pass"
