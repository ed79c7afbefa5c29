"""Collect pydantic-ai's recorded streams (VCR cassettes) and the calls its tests assert.

Run against a local git copy of pydantic/pydantic-ai (no network; its code is parsed,
never run):

    python conformance/tools/mine_pydantic_ai.py GIT_DIR [--commit SHA]

A cassette ``tests/models/cassettes/test_X/test_name.yaml`` belongs to the test
function ``test_name`` of ``tests/models/test_X.py`` (``tests/cassettes/test_X/`` to
``tests/test_X.py``: the agent, durable-execution and tool-search tests). Each streamed
response body of the cassette becomes a case, its dialect told by its bytes; a
cassette's whole (non-streamed) responses are not cases (pydantic-ai keeps them as
parsed YAML, not as the bytes sent), and a call the test asserts of one of them is
left to it. The expected calls are the ``ToolCallPart``s (never the
``BuiltinToolCallPart``s: the provider ran those) that the test asserts inside
``ModelResponse(parts=[...])``, read with ``ast`` (literals only), and given to the
response whose body holds their ``tool_call_id``. A cassette is left out when a
part's id is not a literal found in exactly one body, when a body holds a call id
(``call_``, ``toolu_``, ``tooluse_``) that no asserted part names (or a Gemini
``functionCall`` where none is asserted), or when its
responses are not streams of a dialect the suite reads.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "cases" / "real" / "pydantic-ai"
LICENCE = "MIT"
COPYRIGHT = "Copyright (c) Pydantic Services Inc. 2024 to present"
MAX_BYTES = 60_000
# Cassette folder -> the folder of the test modules it belongs to.
TEST_DIRS = {"tests/models/cassettes/": "tests/models/", "tests/cassettes/": "tests/"}
CALL_ID = re.compile(r'"(?:id|toolUseId|call_id)"\s*:\s*"((?:call|toolu|tooluse)_[A-Za-z0-9_-]+)"')


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def _literal_part(part: ast.expr) -> dict[str, Any] | bool | None:
    """A ToolCallPart's literal fields; False when it is not a ToolCallPart; None if not literal."""
    if not (isinstance(part, ast.Call) and getattr(part.func, "id", None) == "ToolCallPart"):
        return False
    fields: dict[str, Any] = {}
    for arg in part.keywords:
        try:
            fields[str(arg.arg)] = ast.literal_eval(arg.value)
        except ValueError:
            return None
    return fields


def asserted_calls(func: ast.FunctionDef) -> list[dict[str, Any]] | None:
    """The finished ToolCallParts one test asserts, literal; None if any is not.

    A part is finished inside ``ModelResponse(parts=[...])``, and as the ``part`` of a
    ``PartEndEvent`` or a ``FunctionToolCallEvent`` (the call pydantic-ai runs); a
    ``PartStartEvent`` holds a part still streaming and is not an assertion of its
    call. One call asserted in several places must be asserted alike.
    """
    found: list[ast.expr] = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        kind = getattr(node.func, "id", None)
        if kind == "ModelResponse":
            for kw in node.keywords:
                if kw.arg == "parts" and isinstance(kw.value, ast.List):
                    found.extend(kw.value.elts)
        elif kind in ("PartEndEvent", "FunctionToolCallEvent"):
            found.extend(kw.value for kw in node.keywords if kw.arg == "part")
    calls: list[dict[str, Any]] = []
    for part in found:
        fields = _literal_part(part)
        if fields is False:
            continue
        if fields is None or fields is True:
            return None
        same = [c for c in calls if c.get("tool_call_id") == fields.get("tool_call_id")]
        if same and "tool_call_id" in fields:
            if any(
                _args(c) != _args(fields) or c.get("tool_name") != fields.get("tool_name")
                for c in same
            ):
                return None
            continue
        calls.append(fields)
    return calls


def _args(fields: dict[str, Any]) -> Any:
    raw = fields.get("args")
    if isinstance(raw, str) and raw:
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw or {}


def stream_dialect(body: Any, content_type: str) -> tuple[bytes, str | None] | None:
    """The body's bytes and the dialect its bytes show, when it is a stream; else None."""
    if not isinstance(body, (str, bytes)) or not body:
        return None
    data = body if isinstance(body, bytes) else body.encode()
    if "eventstream" in content_type:
        return data, "bedrock"
    if not ("event-stream" in content_type or data.lstrip().startswith((b"data:", b"event:"))):
        return None
    text = data.decode("utf-8", "replace").replace(" ", "")
    for marker, dialect in (
        ('"type":"response.', "openai-responses"),
        ('"type":"message_start"', "anthropic"),
        ("chat.completion.chunk", "openai-chat"),
        ('"candidates"', "gemini"),
        ('"type":"message-start"', "cohere"),
    ):
        if marker in text:
            return data, dialect
    return data, None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("gitdir")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()
    commit = git(args.gitdir, "rev-parse", args.commit).decode().strip()
    files = git(args.gitdir, "ls-tree", "-r", "--name-only", commit).decode().split("\n")
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    kept, dropped = 0, []
    trees: dict[str, dict[str, ast.FunctionDef]] = {}
    present = set(files)
    for path in sorted(files):
        prefix = next((d for d in TEST_DIRS if path.startswith(d)), None)
        rest = path[len(prefix) :].split("/") if prefix else []
        if prefix is None or len(rest) != 2 or not path.endswith(".yaml"):
            continue
        module, stem = rest[0], rest[1][: -len(".yaml")]
        test_path = f"{TEST_DIRS[prefix]}{module}.py"
        if test_path not in present:
            continue
        try:
            cassette = yaml.safe_load(git(args.gitdir, "show", f"{commit}:{path}"))
        except (yaml.YAMLError, subprocess.CalledProcessError):
            dropped.append((path, "unreadable cassette"))
            continue
        bodies: list[tuple[bytes, str | None] | None] = []
        others = []
        for interaction in (cassette or {}).get("interactions", []):
            response = interaction.get("response", {})
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            ctype = " ".join(headers.get("content-type") or [])
            body = response.get("body") or {}
            found = stream_dialect(body.get("string"), ctype)
            bodies.append(found)
            if found is None:
                others.append(json.dumps(body, default=str) + json.dumps(response, default=str))
        if all(b is None for b in bodies):
            continue  # no streamed response: nothing byte-exact to take
        if module not in trees:
            source = git(args.gitdir, "show", f"{commit}:{test_path}").decode()
            trees[module] = {
                n.name: n
                for n in ast.walk(ast.parse(source))
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        func = trees[module].get(stem.split("[")[0])
        if func is None:
            dropped.append((path, "no test function of that name"))
            continue
        body_source = ast.unparse(func)
        if "pytest.raises" in body_source or "cancel" in func.name:
            # The test asserts an exception or a stream it stopped itself: not its calls.
            dropped.append((path, "the test asserts an error or a cancelled stream"))
            continue
        calls = asserted_calls(func)  # type: ignore[arg-type]
        if calls is None:
            dropped.append((path, "a ToolCallPart that is not a literal"))
            continue
        if any(b is not None and b[1] is None for b in bodies):
            dropped.append((path, "a stream of no dialect the suite reads"))
            continue
        streams = [(n, b) for n, b in enumerate(bodies, start=1) if b is not None]
        texts = [b[0].decode("utf-8", "replace") for _, b in streams]
        per_body: list[list[dict[str, Any]]] = [[] for _ in texts]
        ok = True
        for c in calls:
            cid = c.get("tool_call_id")
            holders = [i for i, t in enumerate(texts) if isinstance(cid, str) and f'"{cid}"' in t]
            if not holders and isinstance(cid, str) and any(cid in o for o in others):
                continue  # a call of a whole response: not a case here
            if len(holders) != 1:
                ok = False
                break
            raw = c.get("args")
            arguments = json.loads(raw) if isinstance(raw, str) and raw else (raw or {})
            if not isinstance(arguments, dict):
                ok = False
                break
            per_body[holders[0]].append({"name": c["tool_name"], "id": cid, "arguments": arguments})
        if not ok:
            dropped.append((path, "a call id not found in exactly one response"))
            continue
        named = {c.get("tool_call_id") for c in calls}
        if any(set(CALL_ID.findall(t)) - named for t in texts) or any(
            '"functionCall"' in t and not expected
            for t, expected in zip(texts, per_body, strict=True)
        ):
            dropped.append((path, "a response holds a call the test does not assert"))
            continue
        for (n, (body, case_dialect)), expected in zip(streams, per_body, strict=True):
            if len(body) > MAX_BYTES:
                continue
            transport = "eventstream" if case_dialect == "bedrock" else "sse"
            text = body.decode("utf-8", "replace")
            # A response that ends in the provider's error event is one the test's
            # agent treats as failed: no call of it may run.
            failed = re.search(r'^event: error|^data: \{"error"', text, re.MULTILINE)
            expect: dict[str, Any] = (
                {"outcome": "refuse"} if failed else {"outcome": "calls", "calls": expected}
            )
            name = f"pydantic-ai.{module}.{stem}.{n}".replace("[", "-").replace("]", "")
            (OUT / f"{name}.{transport}").write_bytes(body)
            meta = {
                "id": f"real/{name}",
                "dialect": case_dialect,
                "category": "real",
                "transport": transport,
                "stream": f"{name}.{transport}",
                "source": {
                    "project": "pydantic/pydantic-ai",
                    "path": f"{path} (interaction {n})",
                    "commit": commit,
                    "licence": LICENCE,
                    "copyright": COPYRIGHT,
                    "oracle": f"{test_path}::{func.name}",
                },
                "expect": expect,
            }
            (OUT / f"{name}.case.json").write_text(json.dumps(meta, indent=1) + "\n")
            kept += 1
    print(f"kept {kept} responses, dropped {len(dropped)} cassettes", file=sys.stderr)
    for path, why in dropped:
        print(f"  dropped {path}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
