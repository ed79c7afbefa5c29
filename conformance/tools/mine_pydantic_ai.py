"""Collect pydantic-ai's recorded streams (VCR cassettes) and the calls its tests assert.

Run against a local git copy of pydantic/pydantic-ai (no network; its code is parsed,
never run):

    python conformance/tools/mine_pydantic_ai.py GIT_DIR [--commit SHA]

A cassette ``tests/models/cassettes/test_X/test_name.yaml`` belongs to the test
function ``test_name`` of ``tests/models/test_X.py``. Each streamed response body of
the cassette becomes a case. The expected calls are the ``ToolCallPart``s (never the
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
# Test module -> dialect of its streamed responses.
MODULES = {
    "test_anthropic": "anthropic",
    "test_bedrock": "bedrock",
    "test_google": "gemini",
    "test_openai": "openai-chat",
    "test_openai_responses": "openai-responses",
    "test_groq": "openai-chat",
    "test_mistral": "openai-chat",
    "test_cohere": "cohere",
    "test_deepseek": "openai-chat",
    "test_openrouter": "openai-chat",
}
CALL_ID = re.compile(r'"(?:id|toolUseId|call_id)"\s*:\s*"((?:call|toolu|tooluse)_[A-Za-z0-9_-]+)"')


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def asserted_calls(func: ast.FunctionDef) -> list[dict[str, Any]] | None:
    """Literal ToolCallParts inside ModelResponse(parts=[...]) of one test; None if any is not."""
    calls: list[dict[str, Any]] = []
    for node in ast.walk(func):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ModelResponse"):
            continue
        for kw in node.keywords:
            if kw.arg != "parts" or not isinstance(kw.value, ast.List):
                continue
            for part in kw.value.elts:
                if not (
                    isinstance(part, ast.Call) and getattr(part.func, "id", None) == "ToolCallPart"
                ):
                    continue
                fields: dict[str, Any] = {}
                for arg in part.keywords:
                    try:
                        fields[str(arg.arg)] = ast.literal_eval(arg.value)
                    except ValueError:
                        return None
                calls.append(fields)
    return calls


def dialect_body(dialect: str, body: Any, content_type: str) -> bytes | None:
    data = body if isinstance(body, bytes) else str(body).encode()
    if dialect == "bedrock":
        return data if "eventstream" in content_type else None
    if "event-stream" in content_type or data.lstrip().startswith((b"data:", b"event:")):
        return data
    return None


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
    for path in sorted(f for f in files if f.startswith("tests/models/cassettes/")):
        parts = path.split("/")
        module, stem = parts[3], parts[-1].rsplit(".yaml", 1)[0]
        if module not in MODULES or "stream" not in stem or not path.endswith(".yaml"):
            continue
        dialect = MODULES[module]
        if module not in trees:
            source = git(args.gitdir, "show", f"{commit}:tests/models/{module}.py").decode()
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
        try:
            cassette = yaml.safe_load(git(args.gitdir, "show", f"{commit}:{path}"))
        except (yaml.YAMLError, subprocess.CalledProcessError):
            dropped.append((path, "unreadable cassette"))
            continue
        bodies = []
        for interaction in cassette.get("interactions", []):
            response = interaction.get("response", {})
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            ctype = " ".join(headers.get("content-type") or [])
            body = (response.get("body") or {}).get("string", "")
            bodies.append(dialect_body(dialect, body, ctype))
        if not bodies or any(b is None for b in bodies):
            dropped.append((path, "not every response is a stream"))
            continue
        texts = [b.decode("utf-8", "replace") for b in bodies if b is not None]
        per_body: list[list[dict[str, Any]]] = [[] for _ in texts]
        ok = True
        for c in calls:
            cid = c.get("tool_call_id")
            holders = [i for i, t in enumerate(texts) if isinstance(cid, str) and f'"{cid}"' in t]
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
        for n, (body, expected) in enumerate(zip(bodies, per_body, strict=True), start=1):
            assert body is not None
            if len(body) > MAX_BYTES:
                continue
            transport = "eventstream" if dialect == "bedrock" else "sse"
            text = body.decode("utf-8", "replace")
            case_dialect = dialect
            if dialect == "openai-chat" and '"type":"response.' in text.replace(" ", ""):
                case_dialect = "openai-responses"
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
                    "oracle": f"tests/models/{module}.py::{func.name}",
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
