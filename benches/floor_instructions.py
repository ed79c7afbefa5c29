"""Instructions counted by callgrind for each dialect, toolstitch beside its floor.

``python benches/floor_instructions.py --corpus realistic=DIR [--only DIALECT/FORM ...]
[--forms stream,body] [--keep OUTDIR] [--no-write]`` builds ``cargo bench --bench floor``
(release, as the wall-time figures), then for each group of the corpus (a dialect and a
form) and for toolstitch and the floor:

1. one pass over the group's files under ``valgrind --tool=callgrind
   --collect-atstart=no --toggle-collect=floor::count::measured_toolstitch`` (or
   ``measured_floor``): the entry function of the pass, ``#[inline(never)]``, whose name
   nothing inside it bears (``benches/floor/count.rs``), so the count is every
   instruction of the pass and nothing else;
2. the check: the whole program (nothing toggled, the corpus loading included) with one
   pass and with two; the difference is one pass, found without naming any function.
   The toggled count must be within 2 % of it, else the script fails: a count that is
   not the work (a wildcard pattern that also names a closure of the measured function
   toggles collection off inside it) is never written.

Instruction counts do not move with the machine's load. The section ``## Instructions
(callgrind), the NAME corpus`` of ``benches/results/floor.md`` is replaced (or added)
and ``floor.json`` gets the key ``instructions:NAME``. A benchmark tool, never a test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benches" / "results"
ENTRY = {"toolstitch": "floor::count::measured_toolstitch", "floor": "floor::count::measured_floor"}
TOLERANCE = 0.02


def bench_binary() -> Path:
    """Builds the floor bench (release) and returns its executable."""
    out = subprocess.run(
        ["cargo", "bench", "--bench", "floor", "--no-run", "--message-format=json"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "floor":
            exe = msg.get("executable")
            if exe:
                return Path(exe)
    raise SystemExit("cargo built no floor bench executable")


def callgrind(exe: Path, args: list[str], toggle: str | None, out: Path) -> int:
    """Instructions callgrind counted (its `totals:` line)."""
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if toggle:
        cmd += ["--collect-atstart=no", f"--toggle-collect={toggle}"]
    subprocess.run([*cmd, str(exe), *args], check=True, capture_output=True)
    text = out.read_text()
    m = re.search(r"^totals:\s+(\d+)", text, re.M) or re.search(r"^summary:\s+(\d+)", text, re.M)
    if not m:
        raise SystemExit(f"no totals in {out}")
    return int(m.group(1))


def count(exe: Path, where: Path, group: str, who: str, keep: Path) -> dict[str, int | float]:
    """One pass toggled, and the whole program with one pass and with two."""
    base = [
        "--bench",
        "--profile-corpus",
        str(where),
        group,
        "0",
        "floor" if who == "floor" else "toolstitch",
    ]
    stem = f"{group.replace('/', '-')}-{who}"
    toggled = callgrind(exe, [*base, "--passes", "1"], ENTRY[who], keep / f"{stem}.out")
    one = callgrind(exe, [*base, "--passes", "1"], None, keep / f"{stem}-all1.out")
    two = callgrind(exe, [*base, "--passes", "2"], None, keep / f"{stem}-all2.out")
    pass_ = two - one
    off = abs(toggled - pass_) / max(pass_, 1)
    if off > TOLERANCE:
        raise SystemExit(
            f"{group} {who}: the toggled count {toggled} is not one pass of the whole "
            f"program ({two} - {one} = {pass_}; {off:.1%} off)"
        )
    return {"instructions": toggled, "one_pass_more": pass_, "off": off}


def groups(where: Path, forms: list[str]) -> list[str]:
    """The corpus's groups (dialect/form), in the registry's order."""
    manifest = json.loads((where / ".manifest.json").read_text())
    present = {(f["dialect"], f["form"]) for f in manifest["files"] if not f["gzip"]}
    return [f"{d}/{form}" for d in corpus.DIALECTS for form in forms if (d, form) in present]


def replace_section(md: str, heading: str, body: list[str]) -> str:
    """`md` with the section under `heading` (up to the next `## `) replaced or added."""
    lines = md.rstrip("\n").split("\n")
    try:
        start = lines.index(heading)
    except ValueError:
        return "\n".join([*lines, "", heading, "", *body]) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join([*lines[:start], heading, "", *body, "", *lines[end:]]).rstrip("\n") + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="NAME=DIR")
    ap.add_argument("--only", nargs="*", default=[], help="groups, as DIALECT/FORM")
    ap.add_argument("--forms", default="stream", help="stream, body or stream,body")
    ap.add_argument("--keep", type=Path, help="keep callgrind's files in this folder")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    name, _, dir_ = a.corpus.partition("=")
    where = Path(dir_).resolve()
    exe = bench_binary()
    keep = a.keep or Path(tempfile.mkdtemp(prefix="floor-callgrind-"))
    keep.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, dict[str, int | float]]] = {}
    for group in a.only or groups(where, a.forms.split(",")):
        rows[group] = {who: count(exe, where, group, who, keep) for who in ("toolstitch", "floor")}
        ts, fl = rows[group]["toolstitch"], rows[group]["floor"]
        print(
            f"{group}: toolstitch {ts['instructions']:,} floor {fl['instructions']:,} "
            f"ratio {int(ts['instructions']) / int(fl['instructions']):.2f}x "
            f"(checks: {ts['off']:.2%}, {fl['off']:.2%} off one pass of the whole program)",
            flush=True,
        )
    if a.no_write:
        return
    command = (
        "python benches/floor_instructions.py --corpus "
        + f"{name}=DIR"
        + (" --only " + " ".join(a.only) if a.only else f" --forms {a.forms}")
    )
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        f"`{command}` ({when}; release build, load average {os.getloadavg()[0]:.2f}, which "
        "moves no count). Instructions of one pass over the group's files, counted by "
        "callgrind between the entry and the return of `floor::count::measured_toolstitch` "
        "or `measured_floor`; each count checked against the whole program's count with "
        f'one pass more (within {TOLERANCE:.0%}; "check" gives how far off).',
        "",
        "| dialect | form | toolstitch instructions | floor instructions | vs floor | check |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for group, r in rows.items():
        dialect, form = group.split("/")
        ours, floor = int(r["toolstitch"]["instructions"]), int(r["floor"]["instructions"])
        off = max(float(r["toolstitch"]["off"]), float(r["floor"]["off"]))
        body.append(
            f"| {dialect} | {form} | {ours:,} | {floor:,} | {ours / floor:.2f}x | {off:.2%} |"
        )
    md_path = RESULTS / "floor.md"
    md_path.write_text(
        replace_section(
            md_path.read_text(), f"## Instructions (callgrind), the {name} corpus", body
        )
    )
    js_path = RESULTS / "floor.json"
    js = json.loads(js_path.read_text())
    js[f"instructions:{name}"] = {"command": command, "date": when, "groups": rows}
    js_path.write_text(json.dumps(js, indent=2) + "\n")
    print(f"wrote {md_path} and {js_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
