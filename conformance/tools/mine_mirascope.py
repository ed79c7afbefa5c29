"""Collect Mirascope's recorded provider responses and the calls its snapshots assert.

Run against a local git copy of Mirascope/mirascope (no network; its code is parsed,
never run):

    python conformance/tools/mine_mirascope.py GIT_DIR [--commit SHA]

Mirascope's end-to-end tests (``python/tests/e2e/output/``) record each provider
conversation as a VCR cassette, ``cassettes/<test>/<model>/<mode>.yaml`` (``mode``:
sync, async, stream, async_stream), and assert the whole conversation the library
read from it in an inline snapshot, ``snapshots/<test>/<model>_snapshots.py``
(``<mode>_snapshot``). Each response body of a cassette is a candidate case: a stream
as the cassette holds it (the ``string`` VCR replays), a whole body as the client
reads it (gzip content-encoding undone). The oracle is the ``ToolCall(id=...,
name=..., args=...)`` values of the snapshot, read with ``ast`` (literals only). A
plain reading of each body's calls ties them to the bodies: a cassette is kept only
when the snapshot's calls and the calls its bodies hold are the same, one to one, by
name and parsed arguments, and every id the snapshot names is the body's (Mirascope
names Gemini's id-less calls ``google_unknown_tool_id``: such an id is not
expected). Where every asserted call names its provider id, the bodies that hold
those ids are the ones the snapshot is of (a cassette may hold one conversation
recorded more than once). A body is a case when it carries at least one call. A body holding a call
of a shape the suite has no common form for is left out with its cassette; a body the
provider ended at its length limit expects refuse (Q15).

The cases are written under ``conformance/cases/real/mirascope/``; toolstitch is not
imported: the oracle is Mirascope's.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from mine_pydantic_ai_bodies import (
    LENGTH_CUT,
    LOADER,
    _args,
    _call,
    _key,
    _wire_arguments,
    body_calls,
)

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "cases" / "real" / "mirascope"
LICENCE = "MIT"
COPYRIGHT = "Copyright (c) 2026 Mirascope, Inc."
MAX_BYTES = 120_000
ROOT = "python/tests/e2e/output/"
MINTED_IDS = {"google_unknown_tool_id"}


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def sse_events(text: str) -> list[Any] | None:
    events = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            continue
        try:
            events.append(json.loads(payload))
        except ValueError:
            return None
    return events


def stream_calls(text: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The stream's dialect and the client calls a plain reading finds; None if unreadable."""
    events = sse_events(text)
    if not events or not all(isinstance(e, dict) for e in events):
        return None
    first = events[0]
    if first.get("object") == "chat.completion.chunk":
        by_index: dict[int, dict[str, Any]] = {}
        for ev in events:
            for choice in ev.get("choices") or []:
                if choice.get("index", 0) != 0:
                    return None
                for tc in (choice.get("delta") or {}).get("tool_calls") or []:
                    call = by_index.setdefault(tc.get("index", 0), {"raw": ""})
                    if tc.get("id"):
                        call["id"] = tc["id"]
                    fn = tc.get("function") or {}
                    if fn.get("name"):
                        call["name"] = fn["name"]
                    call["raw"] += fn.get("arguments") or ""
        return "openai-chat", [by_index[k] for k in sorted(by_index)]
    if first.get("type") == "message_start":
        blocks: dict[int, dict[str, Any]] = {}
        for ev in events:
            if ev.get("type") == "content_block_start":
                block = ev.get("content_block") or {}
                kind = block.get("type", "")
                if kind == "tool_use":
                    blocks[ev["index"]] = _call(block.get("id"), block.get("name"), raw="")
                elif kind not in ("text", "thinking", "redacted_thinking"):
                    return None
            elif ev.get("type") == "content_block_delta":
                delta = ev.get("delta") or {}
                if delta.get("type") == "input_json_delta" and ev.get("index") in blocks:
                    blocks[ev["index"]]["raw"] += delta.get("partial_json", "")
        return "anthropic", [blocks[k] for k in sorted(blocks)]
    if str(first.get("type", "")).startswith("response."):
        calls = []
        for ev in events:
            if ev.get("type") != "response.output_item.done":
                continue
            item = ev.get("item") or {}
            if item.get("type") == "function_call":
                calls.append(
                    _call(item.get("call_id"), item.get("name"), raw=item.get("arguments"))
                )
            elif item.get("type") not in ("message", "reasoning"):
                return None
        return "openai-responses", calls
    if "candidates" in first:
        calls = []
        for ev in events:
            for cand in ev.get("candidates") or []:
                for part in (cand.get("content") or {}).get("parts") or []:
                    fc = part.get("functionCall")
                    if fc is not None:
                        calls.append(_call(fc.get("id"), fc.get("name"), obj=fc.get("args", {})))
        return "gemini", calls
    return None


def snapshot_calls(tree: ast.Module, variable: str) -> list[dict[str, Any]] | None:
    """The ToolCalls the snapshot ``variable`` asserts; None if absent or not literal."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and getattr(node.targets[0], "id", None) == variable
        ):
            break
    else:
        return None
    calls = []
    for sub in ast.walk(node.value):
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "ToolCall":
            fields = {str(k.arg): k.value for k in sub.keywords}
            try:
                call = {
                    "name": ast.literal_eval(fields["name"]),
                    "arguments": _args(ast.literal_eval(fields["args"])),
                }
                if "id" in fields:
                    call["id"] = ast.literal_eval(fields["id"])
            except (KeyError, ValueError):
                return None
            calls.append(call)
    return calls


def response_bytes(response: dict[str, Any]) -> tuple[bytes, bool] | None:
    """The body as the client reads it, and whether a gzip content-encoding was undone."""
    raw = (response.get("body") or {}).get("string")
    if isinstance(raw, str):
        return raw.encode(), False
    if isinstance(raw, bytes):
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        if "gzip" in " ".join(headers.get("content-encoding") or []) or raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw), True
        return raw, False
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("gitdir")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()
    commit = git(args.gitdir, "rev-parse", args.commit).decode().strip()
    files = git(args.gitdir, "ls-tree", "-r", "--name-only", commit).decode().split("\n")
    present = set(files)
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    kept, dropped = 0, []
    written: set[bytes] = set()
    trees: dict[str, ast.Module] = {}
    for path in sorted(files):
        if not (path.startswith(ROOT + "cassettes/") and path.endswith(".yaml")):
            continue
        parts = path[len(ROOT + "cassettes/") :].split("/")
        test, model, mode = "/".join(parts[:-2]), parts[-2], parts[-1][: -len(".yaml")]
        snap_path = f"{ROOT}snapshots/{test}/{model}_snapshots.py"
        if snap_path not in present:
            continue
        if snap_path not in trees:
            trees[snap_path] = ast.parse(git(args.gitdir, "show", f"{commit}:{snap_path}").decode())
        asserted = snapshot_calls(trees[snap_path], f"{mode}_snapshot")
        if asserted is None:
            dropped.append((path, "no literal snapshot of this mode"))
            continue
        cassette = yaml.load(git(args.gitdir, "show", f"{commit}:{path}"), Loader=LOADER)
        bodies: list[tuple[int, bytes, str, str, list[dict[str, Any]]]] = []
        gunzipped: set[int] = set()
        unreadable = False
        for n, interaction in enumerate((cassette or {}).get("interactions", []), start=1):
            read_bytes = response_bytes(interaction.get("response") or {})
            if read_bytes is None:
                continue
            data = read_bytes[0]
            if read_bytes[1]:
                gunzipped.add(n)
            text = data.decode("utf-8", "replace")
            if text.lstrip().startswith(("data:", "event:")):
                read, transport = stream_calls(text), "sse"
            else:
                try:
                    read, transport = body_calls(json.loads(text)), "json"
                except ValueError:
                    read, transport = None, "json"
            if read is None:
                unreadable = True
                continue
            bodies.append((n, data, read[0], transport, read[1]))
        if not any(b[4] for b in bodies):
            continue
        if unreadable:
            dropped.append((path, "a response the suite has no plain reading of"))
            continue
        named = {c["id"] for c in asserted if c.get("id") not in (None, *MINTED_IDS)}
        if asserted and len(named) == len(asserted):
            # Every asserted call names its id: the snapshot is of the bodies that hold
            # them (a cassette may hold the same conversation recorded more than once).
            bodies = [b for b in bodies if {c.get("id") for c in b[4]} & named]
        wire = [c for b in bodies for c in b[4]]
        if any(not isinstance(_wire_arguments(c), dict) for c in wire) or any(
            not isinstance(c["arguments"], dict) for c in asserted
        ):
            dropped.append((path, "arguments that are not a JSON object"))
            continue
        if Counter(_key(c["name"], c["arguments"]) for c in asserted) != Counter(
            _key(c["name"], _wire_arguments(c)) for c in wire
        ):
            dropped.append((path, "the snapshot's calls are not the bodies' calls"))
            continue
        wire_ids = {c.get("id") for c in wire}
        if any(c.get("id") not in wire_ids | MINTED_IDS for c in asserted if "id" in c):
            dropped.append((path, "an asserted id is in no body"))
            continue
        for n, data, dialect, transport, found in bodies:
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
            text = data.decode("utf-8", "replace")
            expect: dict[str, Any] = (
                {"outcome": "refuse"}
                if LENGTH_CUT.search(text)
                else {"outcome": "calls", "calls": expected}
            )
            name = f"mirascope.{test.replace('/', '.')}.{model}.{mode}.{n}"
            (OUT / f"{name}.{transport}").write_bytes(data)
            meta = {
                "id": f"real/{name}",
                "dialect": dialect,
                "category": "real",
                "transport": transport,
                "stream": f"{name}.{transport}",
                "source": {
                    "project": "Mirascope/mirascope",
                    "path": f"{path} (interaction {n}"
                    + (", gzip content-encoding undone)" if n in gunzipped else ")"),
                    "commit": commit,
                    "licence": LICENCE,
                    "copyright": COPYRIGHT,
                    "oracle": f"{snap_path} :: {mode}_snapshot",
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
