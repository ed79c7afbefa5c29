"""Collect openai-python's recorded Chat Completions responses and the calls its tests assert.

Run against a local git copy of openai/openai-python (no network; its code is parsed,
never run):

    python conformance/tools/mine_openai_python.py GIT_DIR [--commit SHA]

The tests of ``tests/lib/chat/test_completions.py`` and
``test_completions_streaming.py`` serve a recorded response to the real client:
``content_snapshot=snapshot('...')`` holds a whole body as a string literal, and
``snapshot(external("<hash>*.bin"))`` names a stream kept byte for byte in
``.inline-snapshot/external/``. The same test asserts what the client read, in a
printed snapshot of its ``ParsedFunctionToolCall``s (``arguments``, ``name``, ``id``;
the printer wraps long text at 120 columns, and the breaks are undone).
Those are the oracle. A plain reading of the body's calls must name the same calls,
one to one; a test whose snapshot names none, or other calls, is left out, as is a
recording already among this suite's cases (``tools/collect_local.py``).

The cases are written under ``conformance/cases/real/openai-python/``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bodies import LENGTH_CUT, _key, _wire_arguments, body_calls
from mine_mirascope import stream_calls

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "cases" / "real" / "openai-python"
LOCAL = HERE.parent / "cases" / "real" / "local"
LICENCE = "Apache-2.0"
COPYRIGHT = "Copyright 2026 OpenAI"
TESTS = ("tests/lib/chat/test_completions.py", "tests/lib/chat/test_completions_streaming.py")
EXTERNAL = ".inline-snapshot/external/"
TOOL_CALL = re.compile(
    r"ParsedFunctionToolCall\(\s*function=ParsedFunction\(\s*arguments='((?:[^'\\]|\\.)*)',\s*"
    r"name='([^']*)',.*?\),\s*id='([^']*)'",
    re.DOTALL,
)


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("gitdir")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()
    commit = git(args.gitdir, "rev-parse", args.commit).decode().strip()
    files = git(args.gitdir, "ls-tree", "-r", "--name-only", commit).decode().split("\n")
    externals = [f for f in files if f.startswith(EXTERNAL) and f.endswith(".bin")]
    local = {p.read_bytes() for p in LOCAL.glob("*") if not p.name.endswith(".case.json")}
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    kept, dropped = 0, []
    for test_path in TESTS:
        source = git(args.gitdir, "show", f"{commit}:{test_path}").decode()
        for func in ast.walk(ast.parse(source)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            text = ast.get_source_segment(source, func) or ""
            recorded: list[tuple[str, bytes]] = []
            for kw in (n for n in ast.walk(func) if isinstance(n, ast.keyword)):
                if kw.arg != "content_snapshot" or not isinstance(kw.value, ast.Call):
                    continue
                inner = kw.value.args[0] if kw.value.args else None
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    recorded.append((f"{test_path} (content_snapshot)", inner.value.encode()))
                elif isinstance(inner, ast.Call) and getattr(inner.func, "id", "") == "external":
                    prefix = ast.literal_eval(inner.args[0]).split("*")[0]
                    match = [f for f in externals if f[len(EXTERNAL) :].startswith(prefix)]
                    if len(match) == 1:
                        recorded.append(
                            (match[0], git(args.gitdir, "show", f"{commit}:{match[0]}"))
                        )
            if len(recorded) != 1:
                continue
            path, data = recorded[0]
            body = data.decode()
            if body.lstrip().startswith("data:"):
                read, transport = stream_calls(body), "sse"
            else:
                try:
                    read, transport = body_calls(json.loads(body)), "json"
                except ValueError:
                    read, transport = None, "json"
            if read is None or not read[1]:
                continue
            if data in local:
                dropped.append((f"{test_path}::{func.name}", "already a case (collect_local.py)"))
                continue
            asserted = {
                # The printed snapshot wraps long text at 120 columns: the breaks are not
                # the arguments' (a newline in them is printed escaped).
                (cid, name, arguments.replace("\n", "").replace("\\'", "'").replace("\\\\", "\\"))
                for arguments, name, cid in TOOL_CALL.findall(text)
            }
            try:
                claimed = Counter(_key(n, json.loads(a)) for _, n, a in asserted)
            except ValueError:
                dropped.append((f"{test_path}::{func.name}", "asserted arguments not JSON"))
                continue
            wire = read[1]
            if claimed != Counter(_key(c["name"], _wire_arguments(c)) for c in wire) or {
                a[0] for a in asserted
            } != {c.get("id") for c in wire}:
                dropped.append(
                    (f"{test_path}::{func.name}", "the snapshot's calls are not the body's")
                )
                continue
            expected = [
                {"name": c["name"], "id": c["id"], "arguments": _wire_arguments(c)} for c in wire
            ]
            expect: dict[str, Any] = (
                {"outcome": "refuse"}
                if LENGTH_CUT.search(body)
                else {"outcome": "calls", "calls": expected}
            )
            module = test_path.rsplit("/", 1)[1][len("test_") : -len(".py")]
            name = f"openai-python.{module}.{func.name}"
            (OUT / f"{name}.{transport}").write_bytes(data)
            meta = {
                "id": f"real/{name}",
                "dialect": read[0],
                "category": "real",
                "transport": transport,
                "stream": f"{name}.{transport}",
                "source": {
                    "project": "openai/openai-python",
                    "path": path,
                    "commit": commit,
                    "licence": LICENCE,
                    "copyright": COPYRIGHT,
                    "oracle": f"{test_path}::{func.name}",
                },
                "expect": expect,
            }
            (OUT / f"{name}.case.json").write_text(json.dumps(meta, indent=1) + "\n")
            kept += 1
    print(f"kept {kept}, dropped {len(dropped)}", file=sys.stderr)
    for where, why in dropped:
        print(f"  dropped {where}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
