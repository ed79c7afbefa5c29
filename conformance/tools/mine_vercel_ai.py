"""Collect vercel/ai's recorded provider streams and the calls vercel/ai's tests assert.

Run against a local git copy of vercel/ai (no network, nothing executed from it):

    python conformance/tools/mine_vercel_ai.py GIT_DIR [--commit SHA]

For each recording under ``packages/*/src/**/__fixtures__/`` (``*.chunks.txt``: one
streamed event per line; ``*.json``: a non-streamed body) it looks for the snapshots
vercel/ai's tests take of that recording (``__snapshots__/*.snap`` and inline
snapshots in ``*.test.ts``) and reads the ``tool-call`` parts they contain. A
snapshot belongs to a recording when the ids it names (response id, call ids,
signatures) occur in the recording's bytes; a recording is kept only when its
snapshots agree on the calls. Calls vercel/ai marks ``providerExecuted`` (the
provider ran them) are not expected client calls. An id is expected only when it
occurs in the recording (vercel/ai mints ids such as ``test-id`` for providers that
send none). Tests that turn a call into text (JSON response format) are not oracles
for the calls and are left out. A recording the provider ended at its length limit
(``finish_reason: "length"``, ``stop_reason: "max_tokens"``, ``MAX_TOKENS``, an
``incomplete`` response) expects refuse, by the suite's rule for a cut (Q15): the
snapshot shows that finish reason, and nothing of the message may run.

The cases are written under ``conformance/cases/real/vercel-ai/``; the recording is
copied byte for byte. toolstitch is not imported: the oracle is vercel/ai's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "cases" / "real" / "vercel-ai"
LICENCE = "Apache-2.0"
COPYRIGHT = "Copyright 2023 Vercel, Inc."
# Recordings larger than this are left out to keep the suite small.
MAX_BYTES = 120_000

# Package folder -> dialect of its chat/streaming fixtures (checked against content).
OPENAI_CHAT_PACKAGES = {
    "mistral",
    "groq",
    "deepseek",
    "alibaba",
    "moonshotai",
    "openai-compatible",
    "perplexity",
    "xai",
    "togetherai",
}


# The provider's own word that it stopped at the length limit (Q15).
LENGTH_CUT = re.compile(
    r'"(?:finish_reason|finishReason|stop_reason|stopReason)"\s*:\s*"(?:length|max_tokens|MAX_TOKENS)"'
    r'|"status"\s*:\s*"incomplete"'
)


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, *args], check=True, capture_output=True
    ).stdout


def first_event(data: bytes) -> dict[str, Any] | None:
    for line in data.splitlines():
        line = line.strip()
        if line:
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def dialect_of(path: str, data: bytes, streamed: bool) -> str | None:
    parts = path.split("/")
    package = parts[1]
    if "interactions" in parts:
        return "gemini-interactions"
    if streamed:
        event = first_event(data)
    else:
        try:
            event = json.loads(data)
        except ValueError:
            return None
    if not isinstance(event, dict):
        return None
    if package == "anthropic":
        return "anthropic"
    if package == "amazon-bedrock":
        return "bedrock"
    if package == "cohere":
        return "cohere"
    if package in ("google", "google-vertex"):
        return "gemini"
    text = data.decode("utf-8", "replace")
    if (
        '"type":"response.' in text
        or '"object":"response"' in text
        or (not streamed and event.get("object") == "response")
    ):
        return "openai-responses"
    if (
        "choices" in event
        and event.get("object") != "text_completion"
        and (package in OPENAI_CHAT_PACKAGES or package in ("openai", "azure"))
    ):
        return "openai-chat"
    return None


CLIENT_ITEMS = {
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    "computer_call",
}


def events_of(data: bytes, streamed: bool) -> list[Any]:
    if not streamed:
        try:
            return [json.loads(data)]
        except ValueError:
            return []
    out = []
    for line in data.splitlines():
        if line.strip():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out


def wire_client_calls(
    dialect: str, data: bytes, streamed: bool
) -> tuple[list[str], set[str]] | None:
    """How many client calls the bytes plainly carry, read with a grep-level reading.

    A cross-check of the snapshot's count (a snapshot of another test, or one that
    turned the call into text, disagrees); None where no such simple reading exists.
    """
    ids: dict[str, str] = {}
    kinds: set[str] = set()
    for ev in events_of(data, streamed):
        if not isinstance(ev, dict):
            continue
        if dialect == "anthropic":
            blocks = [ev.get("content_block")] if streamed else ev.get("content", [])
            for b in blocks or []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    ids[b.get("id", "")] = b.get("name", "")
        elif dialect == "openai-responses":
            items = [ev.get("item")] if streamed else ev.get("output", [])
            for it in items or []:
                if isinstance(it, dict) and it.get("type") in CLIENT_ITEMS:
                    ids[it.get("call_id") or it.get("id", "")] = it.get("name", "")
                    kinds.add(it["type"])
        elif dialect == "openai-chat":
            for ch in ev.get("choices") or []:
                part = ch.get("delta" if streamed else "message") or {}
                for tc in part.get("tool_calls") or []:
                    if tc.get("id"):
                        ids[tc["id"]] = ids.get(tc["id"]) or (tc.get("function") or {}).get(
                            "name", ""
                        )
        elif dialect == "bedrock":
            if streamed:
                start = (ev.get("contentBlockStart") or {}).get("start") or {}
                if "toolUse" in start:
                    ids[start["toolUse"].get("toolUseId", "")] = start["toolUse"].get("name", "")
            else:
                content = ((ev.get("output") or {}).get("message") or {}).get("content") or []
                for c in content:
                    if "toolUse" in c:
                        ids[c["toolUse"].get("toolUseId", "")] = c["toolUse"].get("name", "")
        elif dialect == "cohere":
            if streamed:
                if ev.get("type") == "tool-call-start":
                    tc = ((ev.get("delta") or {}).get("message") or {}).get("tool_calls") or {}
                    if isinstance(tc, dict):
                        ids[tc.get("id", "")] = (tc.get("function") or {}).get("name", "")
            else:
                for tc in (ev.get("message") or {}).get("tool_calls") or []:
                    ids[tc.get("id", "")] = (tc.get("function") or {}).get("name", "")
        else:
            return None
    return list(ids.values()), kinds


# --- snapshots -----------------------------------------------------------------

SNAP_HEAD = re.compile(r"^exports\[`(.*)`\] = `$")


def snap_blocks(text: str) -> list[tuple[str, str]]:
    blocks: list[tuple[str, str]] = []
    name, lines = None, []
    for line in text.split("\n"):
        head = SNAP_HEAD.match(line)
        if head:
            name, lines = head.group(1), []
            continue
        if name is not None and line == "`;":
            blocks.append((name, unescape_template("\n".join(lines))))
            name = None
            continue
        if name is not None:
            lines.append(line)
    return blocks


def unescape_template(text: str) -> str:
    return re.sub(r"\\([\\`$])", r"\1", text)


IT_RE = re.compile(r"""\bit(?:\.\w+)?\(\s*(['"`])(.*?)\1""")


def inline_blocks(text: str) -> list[tuple[str, str]]:
    blocks: list[tuple[str, str]] = []
    for match in re.finditer(r"toMatchInlineSnapshot\(\s*`", text):
        start = match.end()
        i = start
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == "`":
                break
            i += 1
        body = unescape_template(text[start:i])
        names = IT_RE.findall(text, 0, match.start())
        name = names[-1][1] if names else ""
        blocks.append((name, body))
    return blocks


KEY_LINE = re.compile(r'^(\s*)"(\w+)": (.*?),?$')


def parse_scalar(raw: str) -> Any:
    if raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    if raw in ("true", "false"):
        return raw == "true"
    if raw == "undefined":
        return None
    return raw


def objects_of_type(block: str, part_type: str) -> list[dict[str, Any]]:
    """The top-level keys of every object in ``block`` whose ``type`` is ``part_type``."""
    lines = block.split("\n")
    found: list[dict[str, Any]] = []
    for n, line in enumerate(lines):
        if line.strip() != f'"type": "{part_type}",':
            continue
        indent = len(line) - len(line.lstrip())
        obj: dict[str, Any] = {}
        for direction in (-1, 1):
            m = n + direction
            while 0 <= m < len(lines):
                other = lines[m]
                other_indent = len(other) - len(other.lstrip())
                if other.strip() and other_indent < indent:
                    break
                key = KEY_LINE.match(other)
                if key and len(key.group(1)) == indent:
                    obj[key.group(2)] = parse_scalar(key.group(3))
                m += direction
        found.append(obj)
    return found


EVIDENCE_KEYS = ("id", "toolCallId", "itemId", "signature", "thoughtSignature", "responseId")
EVIDENCE_RE = re.compile(r'"(' + "|".join(EVIDENCE_KEYS) + r')": "([^"\n]{8,})",')


def evidence(block: str) -> set[str]:
    return {m.group(2) for m in EVIDENCE_RE.finditer(block)}


def is_stream_block(block: str) -> bool:
    return any(
        f'"type": "{t}"' in block
        for t in ("stream-start", "tool-input-start", "text-delta", "response-metadata")
    )


TRANSFORMING_TEST = re.compile(r"json|response ?format|structured|object", re.IGNORECASE)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("gitdir")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()
    commit = git(args.gitdir, "rev-parse", args.commit).decode().strip()
    files = git(args.gitdir, "ls-tree", "-r", "--name-only", commit).decode().split("\n")
    fixtures = [
        f
        for f in files
        if "/__fixtures__/" in f
        and f.startswith("packages/")
        and (f.endswith(".chunks.txt") or f.endswith(".json"))
    ]
    snaps: dict[str, list[tuple[str, str, str]]] = {}
    for f in files:
        if not f.startswith("packages/"):
            continue
        package = f.split("/")[1]
        if f.endswith(".snap"):
            text = git(args.gitdir, "show", f"{commit}:{f}").decode("utf-8", "replace")
            snaps.setdefault(package, []).extend((f, n, b) for n, b in snap_blocks(text))
        elif f.endswith(".test.ts") and "/src/" in f:
            text = git(args.gitdir, "show", f"{commit}:{f}").decode("utf-8", "replace")
            if "toMatchInlineSnapshot" in text:
                snaps.setdefault(package, []).extend((f, n, b) for n, b in inline_blocks(text))

    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    kept, dropped = 0, []
    for path in sorted(fixtures):
        try:
            data = git(args.gitdir, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:
            dropped.append((path, "absent from the copy (large file)"))
            continue
        if "-json" in path.rsplit("/", 1)[1].split(".")[0]:
            # JSON response-format tests: vercel/ai turns the wire's call into text.
            dropped.append((path, "JSON response format"))
            continue
        if len(data) > MAX_BYTES or not data.strip():
            dropped.append((path, "too large or empty"))
            continue
        streamed = path.endswith(".chunks.txt")
        dialect = dialect_of(path, data, streamed)
        if dialect is None:
            dropped.append((path, "not a chat dialect"))
            continue
        text = data.decode("utf-8", "replace")
        package = path.split("/")[1]
        oracles = []
        for snap_path, name, block in snaps.get(package, []):
            if is_stream_block(block) != streamed:
                continue
            if '"type": "tool-call"' not in block and '"content"' not in block and not streamed:
                continue
            ev = evidence(block)
            hits = {e for e in ev if e in text}
            if not any(len(h) >= 10 for h in hits):
                continue
            oracles.append((snap_path, name, block, len(hits)))
        if not oracles:
            dropped.append((path, "no snapshot names its ids"))
            continue
        best = max(o[3] for o in oracles)
        oracles = [o for o in oracles if o[3] == best]
        usable = [o for o in oracles if not TRANSFORMING_TEST.search(o[1])]
        if not usable:
            dropped.append((path, "only snapshots that turn calls into text"))
            continue
        call_sets = []
        for _, _, block, _ in usable:
            calls = []
            for part in objects_of_type(block, "tool-call"):
                if part.get("providerExecuted") is True:
                    continue
                raw_input = part.get("input", "")
                try:
                    arguments = json.loads(raw_input) if raw_input else {}
                except ValueError:
                    arguments = None
                call: dict[str, Any] = {"name": part.get("toolName", "")}
                call_id = part.get("toolCallId", "")
                if call_id and f'"{call_id}"' in text:
                    call["id"] = call_id
                if isinstance(arguments, dict):
                    call["arguments"] = arguments
                else:
                    # vercel/ai gives a free-form (custom tool) input as a JSON string.
                    call["input_text"] = arguments if isinstance(arguments, str) else raw_input
                calls.append(call)
            finishes = objects_of_type(block, "finish") if streamed else []
            call_sets.append((json.dumps(calls, sort_keys=True), calls, finishes))
        if len({c[0] for c in call_sets}) != 1:
            dropped.append((path, "snapshots disagree"))
            continue
        calls = call_sets[0][1]
        on_wire = wire_client_calls(dialect, data, streamed)
        if on_wire is not None:
            names, kinds = on_wire
            if sorted(names) != sorted(c["name"] for c in calls):
                dropped.append(
                    (
                        path,
                        f"snapshot's calls {sorted(c['name'] for c in calls)}, "
                        f"the bytes' {sorted(names)}",
                    )
                )
                continue
            if kinds - {"function_call", "custom_tool_call"}:
                # vercel/ai renames these items and reshapes their fields: no common form.
                dropped.append((path, f"client items {sorted(kinds)} have no wire name"))
                continue
        snap_path, name = usable[0][0], usable[0][1]
        stem = path.rsplit("/", 1)[1]
        stem = stem[: -len(".chunks.txt")] if streamed else stem[: -len(".json")]
        sub = path.split("/src/", 1)[1].rsplit("__fixtures__/", 1)[0].strip("/")
        case_id = f"vercel-ai.{package}{'.' + sub.replace('/', '.') if sub else ''}.{stem}"
        case_id += ".stream" if streamed else ".body"
        ext = "jsonl" if streamed else "json"
        (OUT / f"{case_id}.{ext}").write_bytes(data)
        case = {
            "id": f"real/{case_id}",
            "dialect": dialect,
            "category": "real",
            "transport": ext,
            "stream": f"{case_id}.{ext}",
            "source": {
                "project": "vercel/ai",
                "path": path,
                "commit": commit,
                "licence": LICENCE,
                "copyright": COPYRIGHT,
                "oracle": f"{snap_path} :: {name}",
            },
            "expect": (
                {"outcome": "refuse"}
                if LENGTH_CUT.search(text)
                else {"outcome": "calls", "calls": calls}
            ),
        }
        (OUT / f"{case_id}.case.json").write_text(json.dumps(case, indent=1) + "\n")
        kept += 1
    print(f"kept {kept}, dropped {len(dropped)}", file=sys.stderr)
    for path, why in dropped:
        print(f"  dropped {path}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
