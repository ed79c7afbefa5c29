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
recorded more than once). A body is a case when it carries at least one call. A body
holding a call of a shape the suite has no common form for is left out with its
cassette; a body the provider ended at its length limit expects refuse (Q15).

The TypeScript end-to-end tests (``typescript/tests/e2e/output/``) are read the same
way: a HAR recording per test, ``cassettes/<test>/<provider>/<slug of the test's
name>.har`` (each entry's ``response.content.text`` a body), and a vitest snapshot of
the conversation, ``__snapshots__/<test>.test.ts.snap``, whose ``tool_call`` parts
(``args``, ``id``, ``name``) are the oracle. Unlike the Python snapshots, these show
the call of Mirascope's output tool (``__mirascope_formatted_output_tool__``) as a
call, so those bodies are cases too.

The cases are written under ``conformance/cases/real/mirascope/``; toolstitch is not
imported: the oracle is Mirascope's.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from bodies import (
    LENGTH_CUT,
    LOADER,
    _args,
    _call,
    _key,
    _wire_arguments,
    body_calls,
)
from mine_vercel_ai import objects_of_type, snap_blocks

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


Body = tuple[int, bytes, str, str, list[dict[str, Any]]]


def read_body(n: int, data: bytes) -> Body | None:
    """A response as (interaction, bytes, dialect, transport, calls); None if unreadable."""
    text = data.decode("utf-8", "replace")
    if text.lstrip().startswith(("data:", "event:")):
        read, transport = stream_calls(text), "sse"
    else:
        try:
            read, transport = body_calls(json.loads(text)), "json"
        except ValueError:
            read, transport = None, "json"
    return None if read is None else (n, data, read[0], transport, read[1])


def tied(asserted: list[dict[str, Any]], bodies: list[Body]) -> list[Body] | str:
    """The bodies the asserted calls are of, or why they cannot be tied to them."""
    named = {c["id"] for c in asserted if c.get("id") not in (None, *MINTED_IDS)}
    if asserted and len(named) == len(asserted):
        # Every asserted call names its id: the snapshot is of the bodies that hold
        # them (a cassette may hold the same conversation recorded more than once).
        bodies = [b for b in bodies if {c.get("id") for c in b[4]} & named]
    wire = [c for b in bodies for c in b[4]]
    if any(not isinstance(_wire_arguments(c), dict) for c in wire) or any(
        not isinstance(c["arguments"], dict) for c in asserted
    ):
        return "arguments that are not a JSON object"
    if Counter(_key(c["name"], c["arguments"]) for c in asserted) != Counter(
        _key(c["name"], _wire_arguments(c)) for c in wire
    ):
        return "the snapshot's calls are not the bodies' calls"
    wire_ids = {c.get("id") for c in wire}
    if any(c.get("id") not in wire_ids | MINTED_IDS for c in asserted if "id" in c):
        return "an asserted id is in no body"
    return bodies


def chosen_bodies(
    path: str,
    asserted: list[dict[str, Any]],
    bodies: list[Body],
    unreadable: bool,
    dropped: list[tuple[str, str]],
) -> list[Body] | None:
    """The recording's bodies tied to its asserted calls; None when it carries no call,
    or (with the reason added to ``dropped``) when a body has no plain reading or the
    calls cannot be tied."""
    if not any(b[4] for b in bodies):
        return None
    if unreadable:
        dropped.append((path, "a response the suite has no plain reading of"))
        return None
    chosen = tied(asserted, bodies)
    if isinstance(chosen, str):
        dropped.append((path, chosen))
        return None
    return chosen


def write_case(name: str, body: Body, source: dict[str, str], written: set[bytes]) -> bool:
    """Write one body that carries calls as a case; False when it is none."""
    _, data, dialect, transport, found = body
    if not found or len(data) > MAX_BYTES or data in written:
        return False  # (the same bytes recorded for another test are one case)
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
    (OUT / f"{name}.{transport}").write_bytes(data)
    meta = {
        "id": f"real/{name}",
        "dialect": dialect,
        "category": "real",
        "transport": transport,
        "stream": f"{name}.{transport}",
        "source": {
            "project": "Mirascope/mirascope",
            "path": source["path"],
            "commit": source["commit"],
            "licence": LICENCE,
            "copyright": COPYRIGHT,
            "oracle": source["oracle"],
        },
        "expect": expect,
    }
    (OUT / f"{name}.case.json").write_text(json.dumps(meta, indent=1) + "\n")
    return True


def python_cases(
    gitdir: str, commit: str, files: list[str], written: set[bytes]
) -> tuple[int, list[tuple[str, str]]]:
    present = set(files)
    kept, dropped = 0, []
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
            trees[snap_path] = ast.parse(git(gitdir, "show", f"{commit}:{snap_path}").decode())
        asserted = snapshot_calls(trees[snap_path], f"{mode}_snapshot")
        if asserted is None:
            dropped.append((path, "no literal snapshot of this mode"))
            continue
        cassette = yaml.load(git(gitdir, "show", f"{commit}:{path}"), Loader=LOADER)
        bodies: list[Body] = []
        gunzipped: set[int] = set()
        unreadable = False
        for n, interaction in enumerate((cassette or {}).get("interactions", []), start=1):
            read_bytes = response_bytes(interaction.get("response") or {})
            if read_bytes is None:
                continue
            if read_bytes[1]:
                gunzipped.add(n)
            body = read_body(n, read_bytes[0])
            if body is None:
                unreadable = True
                continue
            bodies.append(body)
        chosen = chosen_bodies(path, asserted, bodies, unreadable, dropped)
        if chosen is None:
            continue
        for body in chosen:
            n = body[0]
            source = {
                "path": f"{path} (interaction {n}"
                + (", gzip content-encoding undone)" if n in gunzipped else ")"),
                "commit": commit,
                "oracle": f"{snap_path} :: {mode}_snapshot",
            }
            name = f"mirascope.{test.replace('/', '.')}.{model}.{mode}.{n}"
            kept += write_case(name, body, source, written)
    return kept, dropped


TS_ROOT = "typescript/tests/e2e/output/"
TS_PROVIDERS = {
    "anthropic": "anthropic",
    "google": "google",
    "openai:completions": "openai_completions",
}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def typescript_cases(
    gitdir: str, commit: str, files: list[str], written: set[bytes]
) -> tuple[int, list[tuple[str, str]]]:
    """The TypeScript end-to-end tests: HAR recordings, vitest snapshots of the conversation.

    ``__snapshots__/<test>.test.ts.snap`` holds ``<describe> > [<provider>] <name> 1``,
    whose ``"type": "tool_call"`` parts (``args``, ``id``, ``name``) are the oracle; the
    recording is ``cassettes/<test>/<provider>/<slug of name>.har``, each entry's
    ``response.content.text`` a body.
    """
    present = set(files)
    kept, dropped = 0, []
    for snap_path in sorted(f for f in files if f.startswith(TS_ROOT + "__snapshots__/")):
        test = snap_path.rsplit("/", 1)[1][: -len(".test.ts.snap")]
        text = git(gitdir, "show", f"{commit}:{snap_path}").decode()
        for title, block in snap_blocks(text):
            head = re.match(r"^.* > \[([^\]]+)\] (.*) 1$", title)
            if not head or head[1] not in TS_PROVIDERS:
                continue
            path = f"{TS_ROOT}cassettes/{test}/{TS_PROVIDERS[head[1]]}/{slug(head[2])}.har"
            if path not in present:
                continue
            asserted = []
            for part in objects_of_type(block, "tool_call"):
                try:
                    arguments = json.loads(part.get("args") or "{}")
                except ValueError:
                    arguments = None
                asserted.append(
                    {"name": part.get("name"), "id": part.get("id"), "arguments": arguments}
                )
            har = json.loads(git(gitdir, "show", f"{commit}:{path}"))
            bodies: list[Body] = []
            unreadable = False
            for n, entry in enumerate(har["log"]["entries"], start=1):
                content = entry["response"].get("content") or {}
                if content.get("encoding") or not content.get("text"):
                    unreadable = unreadable or bool(content.get("encoding"))
                    continue
                body = read_body(n, content["text"].encode())
                if body is None:
                    unreadable = True
                    continue
                bodies.append(body)
            chosen = chosen_bodies(path, asserted, bodies, unreadable, dropped)
            if chosen is None:
                continue
            for body in chosen:
                source = {
                    "path": f"{path} (entry {body[0]}, response.content.text)",
                    "commit": commit,
                    "oracle": f"{snap_path} :: {title}",
                }
                name = f"mirascope.ts.{test}.{TS_PROVIDERS[head[1]]}.{slug(head[2])}.{body[0]}"
                kept += write_case(name, body, source, written)
    return kept, dropped


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
    written: set[bytes] = set()
    kept, dropped = python_cases(args.gitdir, commit, files, written)
    more, also = typescript_cases(args.gitdir, commit, files, written)
    print(
        f"kept {kept + more} responses, dropped {len(dropped + also)} recordings", file=sys.stderr
    )
    for path, why in dropped + also:
        print(f"  dropped {path}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
