"""The conformance suite (conformance/README.md) through toolstitch's own adapter.

Every case must pass except those listed, with their verdict and reason, in
conformance/README.md ("Cases toolstitch does not pass"); a listed case that starts
passing, or changes verdict, fails too, so the list stays true. The verdicts
themselves (altered, unchecked, a refusal told from ``calls: []``, the null row) are
checked here on built outcomes. No peer library is needed.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent / "conformance"
sys.path.insert(0, str(ROOT))
suite: Any = importlib.import_module("suite")
adapter: Any = importlib.import_module("adapters.toolstitch_adapter")
run: Any = importlib.import_module("run")

KNOWN_ROW = re.compile(r"^\| `([^`]+)` \| (altered|unchecked|missed|error) \| (.+) \|$")


def known_failures() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- known-failures:start -->")[1].split("<!-- known-failures:end -->")[0]
    known = {}
    for line in block.splitlines():
        match = KNOWN_ROW.match(line.strip())
        if match:
            known[match[1]] = match[2]
    return known


CASES = suite.load_cases()


@pytest.fixture(scope="module")
def verdicts() -> dict[str, str]:
    return {case.id: suite.verdict(case, run.outcome_of(adapter, case)) for case in CASES}


def test_every_case_passes_or_is_listed_with_its_verdict(verdicts: dict[str, str]) -> None:
    known = known_failures()
    unexpected = {cid: v for cid, v in verdicts.items() if v != "pass" and known.get(cid) != v}
    assert unexpected == {}, "not passing and not listed in conformance/README.md"


def test_no_listed_case_passes_now(verdicts: dict[str, str]) -> None:
    known = known_failures()
    assert set(known) <= set(verdicts), "a listed case no longer exists"
    now_passing = sorted(cid for cid in known if verdicts[cid] == "pass")
    assert now_passing == [], "passes now: remove it from conformance/README.md's list"


def test_the_floor_is_met() -> None:
    assert len(CASES) >= 700
    assert sum(1 for c in CASES if c.category == "real") >= 330
    assert sum(1 for c in CASES if c.category == "real" and c.expects == "calls") >= 150
    assert {c.dialect for c in CASES} == set(suite.DIALECTS)
    assert {c.category for c in CASES} == set(suite.CATEGORIES)
    rows = {(c.source["quirk"], c.source["shape"]) for c in CASES if c.category == "quirk"}
    for n in range(1, 52):
        assert (f"Q{n}", "quirk") in rows and (f"Q{n}", "twin") in rows, f"Q{n}"


def test_one_case_per_id_and_per_stream_file() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({c.path for c in CASES}) == len(CASES)
    streams = {p for p in suite.CASES.rglob("*.*") if p.is_file() and p.parent.name != "licenses"}
    metas = {p for p in streams if p.name.endswith(".case.json")}
    assert streams - metas == {c.path for c in CASES}, "a stream file no case names"
    for case in CASES:
        assert case.path.suffix == f".{case.transport}"
        assert case.path.name.startswith(case.id.split("/", 1)[1])


def test_every_real_case_names_its_source_and_licence() -> None:
    for case in CASES:
        if case.category == "real":
            source = case.source
            assert source["licence"] in ("MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause")
            assert source["project"] and source["path"] and source["commit"]
            assert source["copyright"] and source["oracle"]


def _changed(expect: dict[str, Any]) -> dict[str, Any]:
    if expect["outcome"] == "refuse":
        return {"outcome": "calls", "calls": [{"name": "weather", "arguments": {}}]}
    calls = [dict(c) for c in expect["calls"]]
    if not calls:
        return {"outcome": "calls", "calls": [{"name": "weather", "arguments": {}}]}
    first = calls[0]
    if "arguments" in first:
        first["arguments"] = {**first["arguments"], "changed": True}
    else:
        first["input_text"] = first["input_text"] + " changed"
    return {"outcome": "calls", "calls": calls}


@pytest.mark.parametrize(
    "case_id",
    [
        "real/openai-python.chat-parallel-two-tools",
        "real/anthropic-sdk-python.text-then-tool-use",
        "real/mirascope.test_call_with_tools.anthropic_claude_sonnet_4_0.stream.1",
        "real/mirascope.test_call_with_tools.google_gemini_2_5_flash.sync.1",
        "real/openai-python.completions.test_parse_multiple_pydantic_tools",
        "quirk/q2.quirk",
        "quirk/q28.quirk",
    ],
)
def test_a_changed_expectation_fails(verdicts: dict[str, str], case_id: str) -> None:
    case = next(c for c in CASES if c.id == case_id)
    assert verdicts[case_id] == "pass"
    changed = dataclasses.replace(case, expect=_changed(case.expect))
    assert suite.verdict(changed, run.outcome_of(adapter, changed)) != "pass"


def test_a_call_case_whose_stream_is_cut_does_not_pass(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "quirk/q2.quirk")
    cut = tmp_path / "cut.sse"
    cut.write_bytes(case.data[: len(case.data) // 2])
    shortened = dataclasses.replace(case, path=cut)
    assert suite.verdict(shortened, run.outcome_of(adapter, shortened)) in ("missed", "error")


# No refuse case toolstitch passes by saying nothing (conformance/README.md): the one
# that did, hostile/nul-bytes, is refused by the safety net (Q65) now.
SILENT_REFUSALS: set[str] = set()


def test_a_refuse_case_turned_into_no_call_does_not_pass() -> None:
    silent = set()
    for case in CASES:
        if not case.refuse:
            continue
        outcome = run.outcome_of(adapter, case)
        no_call = dataclasses.replace(case, expect={"outcome": "calls", "calls": []})
        if suite.verdict(no_call, outcome) == "pass":
            silent.add(case.id)
    assert silent == SILENT_REFUSALS


def test_toolstitch_runs_no_altered_call() -> None:
    known = known_failures()
    altered = sorted(cid for cid, v in known.items() if v == "altered")
    # The MCP approval requests, once altered, are approval requests now (Q60).
    assert altered == []


def _case(expect: dict[str, Any], truth: list[dict[str, Any]] | None = None) -> Any:
    return suite.Case(
        id="t",
        dialect="openai-chat",
        category="violation",
        transport="sse",
        path=Path("/nonexistent"),
        source={},
        expect=expect,
        truth=truth,
    )


W = {"name": "weather", "id": "call_a", "arguments": {"city": "Paris"}}
T = {"name": "time", "id": "call_b", "arguments": {"tz": "CET"}}


def _call(spec: dict[str, Any], arguments: str | None = None) -> Any:
    return suite.Call(spec["name"], arguments or json.dumps(spec["arguments"]), spec["id"])


def test_verdicts_tell_altered_from_unchecked() -> None:
    refuse = _case({"outcome": "refuse"}, truth=[W, T])
    verdict = suite.verdict
    assert verdict(refuse, suite.Outcome()) == "pass"
    assert verdict(refuse, suite.Outcome(error=ValueError("cut"))) == "pass"
    assert verdict(refuse, suite.Outcome(refused="finish_reason None")) == "pass"
    # The model's own calls out of a broken stream: unchecked.
    assert verdict(refuse, suite.Outcome(calls=[_call(W), _call(T)])) == "unchecked"
    # Arguments the model never sent, or a call run twice: altered.
    assert verdict(refuse, suite.Outcome(calls=[_call(W, '{"city": "Rome"}')])) == "altered"
    assert verdict(refuse, suite.Outcome(calls=[_call(W), _call(W)])) == "altered"
    # Text that cannot be executed runs nothing.
    assert verdict(refuse, suite.Outcome(calls=[_call(W, '{"city": ')])) == "pass"
    # Without a stated truth a refuse case holds no true call.
    assert verdict(_case({"outcome": "refuse"}), suite.Outcome(calls=[_call(W)])) == "altered"
    calls = _case({"outcome": "calls", "calls": [W]})
    assert verdict(calls, suite.Outcome(calls=[_call(W)])) == "pass"
    assert verdict(calls, suite.Outcome()) == "missed"
    assert verdict(calls, suite.Outcome(error=ValueError("x"))) == "error"
    assert verdict(calls, suite.Outcome(calls=[_call(W), _call(W)])) == "altered"
    assert verdict(calls, suite.Outcome(calls=[_call(T)])) == "altered"
    assert verdict(calls, suite.Outcome(skip=suite.Skip("no"))) == "skip"


def test_a_refusal_of_a_completed_message_is_an_error() -> None:
    no_call = _case({"outcome": "calls", "calls": []})
    assert suite.verdict(no_call, suite.Outcome()) == "pass"
    assert suite.verdict(no_call, suite.Outcome(refused="finish_reason None")) == "error"
    assert suite.verdict(no_call, suite.Outcome(calls=[_call(W, "{")])) == "error"
    # On a case that carries calls, the calls decide.
    calls = _case({"outcome": "calls", "calls": [W]})
    assert suite.verdict(calls, suite.Outcome(calls=[_call(W)], refused="choice 1")) == "pass"


def test_the_null_row_is_the_floor() -> None:
    null: Any = importlib.import_module("adapters.null_adapter")
    for case in CASES[::7]:
        expected = "missed" if case.expects == "calls" else "pass"
        assert suite.verdict(case, run.outcome_of(null, case)) == expected, case.id


def test_a_case_needing_a_convention_is_skipped_by_a_library_without_it() -> None:
    case = next(c for c in CASES if c.id == "quirk/q47.quirk")
    assert case.conventions == ("xai-server-tools",)
    null: Any = importlib.import_module("adapters.null_adapter")
    assert run.outcome_of(null, case).skip is not None
    assert run.outcome_of(adapter, case).skip is None
