"""Run reassemblers over every case and write the verdicts.

    python conformance/run.py [--impl NAME ...] [--json FILE] [--results-md] [--chart PNG]
                              [--merge JSON ...] [-v]

``--json`` writes ``{"suite", "cases": [{"id", "dialect", "category", "source"}],
"results": {IMPL: {CASE_ID: VERDICT}}}``; ``--results-md`` regenerates
``conformance/RESULTS.md`` and ``--chart`` a PNG of the same table (matplotlib).
Every adapter named in ``adapters.ADAPTERS`` runs unless ``--impl`` picks some; one
whose library is not installed is reported and left out of the scoreboard.
``--merge`` adds the verdicts of adapters run in another environment (LlamaIndex's,
whose SDK pins cannot be installed beside the others) from that run's ``--json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
import warnings
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

import adapters
from suite import (
    CATEGORIES,
    EXPECTS,
    SUITE_VERSION,
    VERDICTS,
    Case,
    Outcome,
    Skip,
    load_cases,
    verdict,
)


def outcome_of(adapter: ModuleType, case: Case) -> Outcome:
    readable = getattr(adapter, "DIALECTS", None)
    if readable is not None and case.dialect not in readable:
        return Outcome(skip=Skip(f"{adapter.NAME} does not read {case.dialect}"))
    transports = getattr(adapter, "TRANSPORTS", None)
    if transports is not None and case.transport not in transports:
        return Outcome(skip=Skip(f"{adapter.NAME} does not read {case.transport}"))
    missing = set(case.conventions) - set(getattr(adapter, "CONVENTIONS", ()))
    if missing:
        return Outcome(skip=Skip(f"{adapter.NAME} does not follow {sorted(missing)}"))
    try:
        return adapter.reassemble(case)  # type: ignore[no-any-return]
    except Exception as exc:  # an exception is the verdict `error` (or a refusal)
        return Outcome(error=exc)


def run(names: list[str], cases: list[Case], verbose: bool = False) -> dict[str, dict[str, str]]:
    results: dict[str, dict[str, str]] = {}
    for name in names:
        try:
            adapter = adapters.load(name)
        except ImportError as exc:
            print(f"{name}: not installed ({exc}); left out", file=sys.stderr)
            continue
        start = getattr(adapter, "start", None)
        stop = getattr(adapter, "stop", None)
        if start is not None:
            try:
                start()
            except ImportError as exc:
                print(f"{name}: not installed ({exc}); left out", file=sys.stderr)
                continue
        try:
            verdicts = {}
            for case in cases:
                outcome = outcome_of(adapter, case)
                verdicts[case.id] = verdict(case, outcome)
                if verbose and verdicts[case.id] not in ("pass", "skip"):
                    detail = (
                        "".join(traceback.format_exception_only(outcome.error)).strip()
                        if outcome.error
                        else (outcome.calls, outcome.refused)
                    )
                    print(f"{name} {verdicts[case.id]} {case.id}: {detail}", file=sys.stderr)
        finally:
            if stop is not None:
                stop()
        results[name] = verdicts
        counts = {v: sum(1 for x in verdicts.values() if x == v) for v in VERDICTS}
        print(f"{name}: " + ", ".join(f"{v} {counts[v]}" for v in VERDICTS), file=sys.stderr)
    return results


def tally(results: dict[str, str], chosen: list[Case]) -> dict[str, int]:
    return {v: sum(1 for c in chosen if results.get(c.id) == v) for v in VERDICTS}


def kind(name: str) -> str:
    """``tracer`` (records calls in spans) or ``reassembler`` (hands calls on to run)."""
    try:
        return str(getattr(adapters.load(name), "KIND", "reassembler"))
    except ImportError:
        return "reassembler"


def table(results: dict[str, dict[str, str]], names: list[str], chosen: list[Case]) -> list[str]:
    lines = [
        "| " + " | ".join(["", *VERDICTS, "pass of those read"]) + " |",
        "|---|" + "---:|" * (len(VERDICTS) + 1),
    ]
    for name in names:
        t = tally(results[name], chosen)
        read = len(chosen) - t["skip"]
        share = f"{100 * t['pass'] / read:.1f}% of {read}" if read else "-"
        lines.append(f"| {name} | " + " | ".join(str(t[v]) for v in VERDICTS) + f" | {share} |")
    return lines


EXPECTS_TITLE = {
    "calls": "Cases that carry calls",
    "no-call": "Cases with no client call (`calls: []`)",
    "refuse": "Refuse cases",
}


def results_md(results: dict[str, dict[str, str]], cases: list[Case]) -> str:
    groups = {
        "reassembler": [n for n in results if kind(n) == "reassembler" or n == "null"],
        "tracer": [n for n in results if kind(n) == "tracer" or n == "null"],
    }
    by_expect = {e: [c for c in cases if c.expects == e] for e in EXPECTS}
    lines = [
        "# Conformance results",
        "",
        f"Suite {SUITE_VERSION}: {len(cases)} cases "
        f"({', '.join(f'{sum(1 for c in cases if c.category == k)} {k}' for k in CATEGORIES)}); "
        f"{len(by_expect['calls'])} carry calls "
        f"({sum(1 for c in by_expect['calls'] if c.category == 'real')} of them real), "
        f"{len(by_expect['no-call'])} hold no client call, "
        f"{len(by_expect['refuse'])} expect a refusal. "
        "Regenerated by `make conformance` (`run.py --results-md --chart "
        "conformance/results.png --json conformance/results.json`, LlamaIndex's verdicts "
        "merged from its own environment with `--merge`); verdicts as defined in "
        "[README.md](README.md#verdicts).",
        "",
        "How to read it: `altered` comes first, a call run that the model never sent (or "
        "with arguments it never sent); `unchecked` is the model's own call run out of a "
        "stream that broke protocol or was cut. The `null` row hands on nothing: it is the "
        "floor, and every other row is read against it (it passes every refuse case and "
        "every case with no client call). Each peer is gated by its own finish signal, as "
        "its documentation tells its users (README.md, the adapters' table). Tracers record "
        "calls and run none: they have tables of their own.",
        "",
        "![scoreboard](results.png)",
        "",
        "Every verdict of every case is in `results.json`; the cases toolstitch does not "
        "pass, and why, are listed in "
        "[README.md](README.md#cases-toolstitch-does-not-pass).",
        "",
        "Not scored: OpenLIT, which pins `openai<2` and would share a process with the "
        "SDKs measured here at their current versions (README.md, the adapters' table).",
    ]
    for group, title in (("reassembler", "Reassemblers"), ("tracer", "Tracers")):
        names = groups[group]
        if len(names) <= 1:
            continue
        lines += ["", f"## {title}"]
        for expects in EXPECTS:
            chosen = by_expect[expects]
            lines += ["", f"### {EXPECTS_TITLE[expects]} ({len(chosen)})", ""]
            lines += table(results, names, chosen)
            if expects == "calls":
                real = [c for c in chosen if c.category == "real"]
                lines += ["", f"Of them, the real recordings ({len(real)}):", ""]
                lines += table(results, names, real)
        lines += ["", f"### Per category, every case ({title.lower()})"]
        for category in CATEGORIES:
            chosen = [c for c in cases if c.category == category]
            lines += ["", f"#### {category} ({len(chosen)})", ""]
            lines += table(results, names, chosen)
    lines += ["", "## Per dialect: cases that carry calls (pass / read; altered)", ""]
    dialects = sorted({c.dialect for c in by_expect["calls"]})
    lines.append("| | " + " | ".join(dialects) + " |")
    lines.append("|---|" + "---|" * len(dialects))
    for name, verdicts in results.items():
        row = []
        for d in dialects:
            chosen = [
                c
                for c in by_expect["calls"]
                if c.dialect == d and verdicts.get(c.id) not in (None, "skip")
            ]
            passed = sum(1 for c in chosen if verdicts.get(c.id) == "pass")
            altered = sum(1 for c in chosen if verdicts.get(c.id) == "altered")
            row.append(f"{passed}/{len(chosen)}; {altered}" if chosen else "skip")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def chart(results: dict[str, dict[str, str]], cases: list[Case], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {
        "altered": "#922b21",
        "unchecked": "#e74c3c",
        "pass": "#27ae60",
        "missed": "#e67e22",
        "error": "#8e44ad",
        "skip": "#bdc3c7",
    }
    names = list(results)
    fig, axes = plt.subplots(
        1,
        len(EXPECTS),
        figsize=(3.6 * len(EXPECTS), 0.45 * len(names) + 1.8),
        sharey=True,
        layout="constrained",
    )
    for ax, expects in zip(axes, EXPECTS, strict=True):
        chosen = [c for c in cases if c.expects == expects]
        n = len(chosen) or 1
        left = [0.0] * len(names)
        for v in VERDICTS:
            widths = [100 * tally(results[name], chosen)[v] / n for name in names]
            ax.barh(names, widths, left=left, color=colours[v], label=v)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_title(f"{EXPECTS_TITLE[expects]} ({len(chosen)})".replace("`", ""), fontsize=9)
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of cases")
    axes[0].invert_yaxis()
    fig.legend(
        *axes[0].get_legend_handles_labels(),
        loc="outside lower center",
        ncol=len(VERDICTS),
        frameon=False,
    )
    fig.suptitle(f"Conformance suite {SUITE_VERSION}: verdicts per library")
    fig.savefig(out, dpi=110, bbox_inches="tight")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--impl", action="extend", nargs="+", choices=sorted(adapters.ADAPTERS), metavar="NAME"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--results-md", action="store_true")
    parser.add_argument("--chart", type=Path)
    parser.add_argument("--verbose", "-v", action="store_true")
    parser.add_argument(
        "--merge",
        type=Path,
        action="append",
        default=[],
        metavar="JSON",
        help="verdicts of adapters run in another environment (a --json of the same cases)",
    )
    args = parser.parse_args(argv)
    # The libraries' own warnings (pydantic serialisers, deprecations) are not verdicts.
    warnings.simplefilter("ignore")
    # OpenTelemetry logs each attribute its span limit drops (the 1,000-call case).
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    cases = load_cases()
    results = run(args.impl or list(adapters.ADAPTERS), cases, args.verbose)
    for other in args.merge:
        merged = json.loads(other.read_text())
        if merged["suite"] != SUITE_VERSION or {c["id"] for c in merged["cases"]} != {
            c.id for c in cases
        }:
            raise SystemExit(f"{other}: not a run of these cases")
        for name, verdicts in merged["results"].items():
            results.setdefault(name, verdicts)
    order = list(adapters.ADAPTERS)
    results = dict(sorted(results.items(), key=lambda item: order.index(item[0])))
    document = {
        "suite": SUITE_VERSION,
        "cases": [
            {
                "id": c.id,
                "dialect": c.dialect,
                "category": c.category,
                "expects": c.expects,
                "source": c.source_label,
            }
            for c in cases
        ],
        "results": results,
    }
    if args.json:
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    if args.results_md:
        (Path(__file__).resolve().parent / "RESULTS.md").write_text(results_md(results, cases))
    if args.chart:
        chart(results, cases, args.chart)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
