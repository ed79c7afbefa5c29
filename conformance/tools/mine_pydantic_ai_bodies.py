"""Collect pydantic-ai's recorded whole (non-streamed) responses that carry tool calls.

Run against a local git copy of pydantic/pydantic-ai (no network; its code is parsed,
never run):

    python conformance/tools/mine_pydantic_ai_bodies.py GIT_DIR [--commit SHA]

pydantic-ai's cassettes keep a JSON response as ``parsed_body`` (YAML), and its own
cassette loader, ``tests/json_body_serializer.py`` (``deserialize``), hands the client
under test ``json.dumps(parsed_body)``: those bytes are the case, made exactly as that
loader makes them, and they are the bytes the test's assertion is about. (They are
not the bytes the provider sent: pydantic-ai re-serialises the body, normalising
typographic quotes, when it records a cassette.)

Only cassettes with no streamed response are read here (``mine_pydantic_ai.py`` takes
those). The oracle is the ``ToolCallPart``s the cassette's test asserts inside
``ModelResponse(parts=[...])`` (``BuiltinToolCallPart``s are the provider's own and not
client calls), read with ``ast``: a part's name and arguments must be literals; its
``tool_call_id`` is compared when it is a literal (pydantic-ai mints ids where the
provider sends none, and its tests match those with ``IsStr()``). A plain reading of
each body's calls ties the asserted calls to the bodies: a cassette is kept only when
the asserted calls and the calls its bodies hold are the same, one to one (a test
that asserts fewer or other calls, or asserts one response twice over different
parameters, is left out), and every literal id is the one in the body. A body is a
case when it carries at least one call; its expected calls are those calls, with the
id where the provider sent one. A body the provider ended at its length limit expects
refuse (Q15, as in ``mine_vercel_ai.py``). A body holding a client item the suite
has no common form for (a shell, computer or client tool-search call, an MCP approval
request) is left out.

The cases are written under ``conformance/cases/real/pydantic-ai-bodies/``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "cases" / "real" / "pydantic-ai-bodies"
LICENCE = "MIT"
COPYRIGHT = "Copyright (c) Pydantic Services Inc. 2024 to present"
MAX_BYTES = 120_000
TEST_DIRS = {"tests/models/cassettes/": "tests/models/", "tests/cassettes/": "tests/"}
LENGTH_CUT = re.compile(
    r'"(?:finish_reason|finishReason|stop_reason|stopReason)"\s*:\s*"(?:length|max_tokens|MAX_TOKENS)"'
    r'|"status"\s*:\s*"incomplete"'
)
try:
    LOADER: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    LOADER = yaml.SafeLoader


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def _args(raw: Any) -> Any:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


def asserted_calls(func: ast.AST) -> list[dict[str, Any]] | None:
    """The ToolCallParts of the ``ModelResponse``s one test asserts; None if one is not literal.

    A response asserted twice in the same words (``all_messages()`` and
    ``new_messages()``) counts once.
    """
    seen: set[str] = set()
    calls: list[dict[str, Any]] = []
    for node in ast.walk(func):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ModelResponse"):
            continue
        text = ast.unparse(node)
        if text in seen:
            continue
        seen.add(text)
        for kw in node.keywords:
            if kw.arg != "parts" or not isinstance(kw.value, ast.List):
                continue
            for part in kw.value.elts:
                if not (
                    isinstance(part, ast.Call) and getattr(part.func, "id", None) == "ToolCallPart"
                ):
                    continue
                fields: dict[str, ast.expr] = dict(
                    zip(("tool_name", "args", "tool_call_id"), part.args, strict=False)
                )
                fields.update({str(k.arg): k.value for k in part.keywords})
                try:
                    name = ast.literal_eval(fields["tool_name"])
                    args = ast.literal_eval(fields["args"]) if "args" in fields else None
                except (KeyError, ValueError):
                    return None
                call: dict[str, Any] = {"name": name, "arguments": _args(args)}
                if "tool_call_id" in fields:
                    # IsStr(): an id pydantic-ai minted, or one the test does not pin.
                    with contextlib.suppress(ValueError):
                        call["id"] = ast.literal_eval(fields["tool_call_id"])
                calls.append(call)
    return calls


SERVER_BLOCKS = {"text", "thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use"}
SERVER_ITEMS = {
    "message",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_list_tools",
    "mcp_call",
}


def body_calls(body: Any) -> tuple[str, list[dict[str, Any]]] | None:
    """The body's dialect and the client calls a plain reading finds; None if unreadable."""
    if not isinstance(body, dict):
        return None
    calls: list[dict[str, Any]] = []
    if body.get("object") == "chat.completion" or "choices" in body:
        choices = body.get("choices") or []
        if len(choices) != 1:
            return None
        for tc in (choices[0].get("message") or {}).get("tool_calls") or []:
            fn = tc.get("function")
            if tc.get("type", "function") != "function" or not isinstance(fn, dict):
                return None
            calls.append({"id": tc.get("id"), "name": fn.get("name"), "raw": fn.get("arguments")})
        return "openai-chat", calls
    if body.get("object") == "response" and isinstance(body.get("output"), list):
        for item in body["output"]:
            kind = item.get("type")
            if kind == "function_call":
                calls.append(
                    _call(item.get("call_id"), item.get("name"), raw=item.get("arguments"))
                )
            elif kind not in SERVER_ITEMS:
                return None
        return "openai-responses", calls
    if body.get("type") == "message" and isinstance(body.get("content"), list):
        for block in body["content"]:
            kind = block.get("type", "")
            if kind == "tool_use":
                calls.append(_call(block.get("id"), block.get("name"), obj=block.get("input")))
            elif kind not in SERVER_BLOCKS and not kind.endswith("_tool_result"):
                return None
        return "anthropic", calls
    if isinstance(body.get("candidates"), list):
        if len(body["candidates"]) != 1:
            return None
        for part in (body["candidates"][0].get("content") or {}).get("parts") or []:
            fc = part.get("functionCall")
            if fc is not None:
                calls.append(_call(fc.get("id"), fc.get("name"), obj=fc.get("args", {})))
        return "gemini", calls
    output = body.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    if isinstance(message, dict) and "stopReason" in body:
        for block in message.get("content") or []:
            tu = block.get("toolUse")
            if tu is not None:
                calls.append(_call(tu.get("toolUseId"), tu.get("name"), obj=tu.get("input")))
        return "bedrock", calls
    if isinstance(body.get("message"), dict) and "finish_reason" in body:
        for tc in body["message"].get("tool_calls") or []:
            fn = tc.get("function") or {}
            calls.append({"id": tc.get("id"), "name": fn.get("name"), "raw": fn.get("arguments")})
        return "cohere", calls
    return None


def _call(call_id: Any, name: Any, **arguments: Any) -> dict[str, Any]:
    """A call as read off the wire: ``raw`` arguments text or an ``obj`` already parsed."""
    return {"id": call_id, "name": name, **arguments}


def _wire_arguments(call: dict[str, Any]) -> Any:
    return call["obj"] if "obj" in call else _args(call.get("raw"))


def _key(name: Any, arguments: Any) -> str:
    return json.dumps([name, arguments], sort_keys=True)


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
    present = set(files)
    trees: dict[str, dict[str, ast.AST]] = {}
    kept, dropped = 0, []
    written: set[bytes] = set()
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
            raw_cassette = git(args.gitdir, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:
            dropped.append((path, "absent from the copy (large file)"))
            continue
        if b"parsed_body" not in raw_cassette:
            continue
        try:
            cassette = yaml.load(raw_cassette, Loader=LOADER)
        except yaml.YAMLError:
            dropped.append((path, "unreadable cassette"))
            continue
        bodies: list[tuple[int, bytes, str, list[dict[str, Any]]]] = []
        streamed = unreadable = False
        for n, interaction in enumerate((cassette or {}).get("interactions", []), start=1):
            response = interaction.get("response", {})
            if "parsed_body" not in response:
                string = (response.get("body") or {}).get("string")
                if (
                    isinstance(string, (str, bytes))
                    and string
                    and (b"data:" in (string if isinstance(string, bytes) else string.encode()))
                ):
                    streamed = True
                continue
            read = body_calls(response["parsed_body"])
            if read is None:
                if json.dumps(response["parsed_body"]).count('"name"') and any(
                    k in json.dumps(response["parsed_body"])
                    for k in ("tool_calls", "tool_use", "functionCall", "toolUse", "function_call")
                ):
                    unreadable = True
                continue
            # Exactly the bytes pydantic-ai's cassette loader replays (deserialize()).
            data = json.dumps(response["parsed_body"]).encode()
            bodies.append((n, data, read[0], read[1]))
        if streamed or not any(b[3] for b in bodies):
            continue
        if unreadable:
            dropped.append((path, "a body with calls in a shape the suite has no reading of"))
            continue
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
        if "pytest.raises" in ast.unparse(func):
            dropped.append((path, "the test asserts an error"))
            continue
        calls = asserted_calls(func)
        if calls is None:
            dropped.append((path, "a ToolCallPart whose name or arguments are not literal"))
            continue
        wire = [c for b in bodies for c in b[3]]
        if any(not isinstance(_wire_arguments(c), dict) for c in wire) or any(
            not isinstance(c["arguments"], dict) for c in calls
        ):
            dropped.append((path, "arguments that are not a JSON object"))
            continue
        asserted = Counter(_key(c["name"], c["arguments"]) for c in calls)
        on_wire = Counter(_key(c["name"], _wire_arguments(c)) for c in wire)
        if asserted != on_wire:
            dropped.append((path, "the test's calls are not the bodies' calls"))
            continue
        wire_ids = {c.get("id") for c in wire}
        if any("id" in c and c["id"] not in wire_ids for c in calls):
            dropped.append((path, "an asserted id is in no body"))
            continue
        for n, data, dialect, found in bodies:
            if not found or len(data) > MAX_BYTES or data in written:
                continue  # (the same bytes recorded for another test are one case)
            written.add(data)
            expected = []
            for c in found:
                call: dict[str, Any] = {"name": c["name"]}
                if isinstance(c.get("id"), str) and c["id"]:
                    call["id"] = c["id"]
                call["arguments"] = _wire_arguments(c)
                expected.append(call)
            text = data.decode()
            expect: dict[str, Any] = (
                {"outcome": "refuse"}
                if LENGTH_CUT.search(text)
                else {"outcome": "calls", "calls": expected}
            )
            name = f"pydantic-ai.{module}.{stem}.{n}.body".replace("[", "-").replace("]", "")
            (OUT / f"{name}.json").write_bytes(data)
            meta = {
                "id": f"real/{name}",
                "dialect": dialect,
                "category": "real",
                "transport": "json",
                "stream": f"{name}.json",
                "source": {
                    "project": "pydantic/pydantic-ai",
                    "path": f"{path} (interaction {n}, json.dumps of parsed_body)",
                    "commit": commit,
                    "licence": LICENCE,
                    "copyright": COPYRIGHT,
                    "oracle": f"{test_path}::{func.name}",
                },
                "expect": expect,
            }
            (OUT / f"{name}.case.json").write_text(json.dumps(meta, indent=1) + "\n")
            kept += 1
    print(f"kept {kept} bodies, dropped {len(dropped)} cassettes", file=sys.stderr)
    for path, why in dropped:
        print(f"  dropped {path}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
