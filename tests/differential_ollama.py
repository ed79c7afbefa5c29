"""The guard differential suite's Ollama cases (``/api/chat``, NDJSON), read by the real
``ollama`` client.

The ``ollama`` client sends only the JSON Schema keywords its ``Tool`` model knows
(``type``, ``properties`` with ``type``, ``description``, ``enum``, ``items``,
``required``): a ``pattern``, a ``maximum`` or ``additionalProperties`` is dropped from
the request before it leaves. The guard validates the tools the request declares, so
these cases declare what the client really sends: ``read_file``'s ``path`` one of two
files under ``/tmp/`` (an ``enum``), ``set_limit``'s ``n`` any integer.

The client reads every line with ``json.loads`` (duplicate members: the last wins; lone
surrogates, ``NaN`` and big integers read as they are) and an application takes the
``message.tool_calls`` of every chunk it yields, the ``done`` line's and any after it.
"""

from __future__ import annotations

import json
from typing import Any

from differential_cases import Case

OLLAMA_READ_FILE: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "enum": ["/tmp/notes.txt", "/tmp/a"]}},
    "required": ["path"],
}
OLLAMA_SET_LIMIT: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}
OLLAMA_SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": OLLAMA_READ_FILE,
    "set_limit": OLLAMA_SET_LIMIT,
}
OLLAMA_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": s}}
    for n, s in OLLAMA_SCHEMAS.items()
]
GOOD_ARGS = {"path": "/tmp/notes.txt"}
BAD_ARGS = {"path": "/etc/passwd"}


def call(name: str = "read_file", args: Any = None, **extra: Any) -> dict[str, Any]:
    return {"function": {**extra, "name": name, "arguments": GOOD_ARGS if args is None else args}}


def chunk(
    content: str = "", calls: list[dict[str, Any]] | None = None, *, done: bool = False
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls is not None:
        message["tool_calls"] = calls
    line: dict[str, Any] = {
        "model": "llama3.2",
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": done,
    }
    if done:
        line.update(done_reason="stop", total_duration=1, eval_count=3)
    return line


def ndjson(lines: list[dict[str, Any] | bytes], nl: bytes = b"\n") -> bytes:
    """Each line as ``json.dumps`` writes it, or as given (bytes)."""
    return b"".join(
        (line if isinstance(line, bytes) else json.dumps(line).encode()) + nl for line in lines
    )


def _with(line: dict[str, Any], placeholder: str, raw: str) -> bytes:
    """``line`` with the JSON string ``placeholder`` written as ``raw`` text."""
    text = json.dumps(line).encode()
    quoted = json.dumps(placeholder).encode()
    assert quoted in text, placeholder
    return text.replace(quoted, raw.encode())


def ollama_cases() -> list[Case]:
    cases: list[Case] = []

    def add(name: str, body: bytes, klass: str, expect: str | None = None) -> None:
        cases.append(
            Case(
                f"ollama-{name}",
                "ollama",
                body,
                klass,
                expect,
                tools=OLLAMA_TOOLS,
                schemas=OLLAMA_SCHEMAS,
            )
        )

    done = chunk(done=True)
    text = chunk("ok")
    add("valid", ndjson([text, chunk(calls=[call()]), done]), "baseline", "pass")
    add(
        "valid-two-lines",
        ndjson([chunk(calls=[call()]), chunk(calls=[call("set_limit", {"n": 4})]), done]),
        "baseline",
        "pass",
    )
    add(
        "valid-two-one-line",
        ndjson([chunk(calls=[call(), call("set_limit", {"n": 4})]), done]),
        "baseline",
        "pass",
    )
    add("valid-crlf", ndjson([text, chunk(calls=[call()]), done], nl=b"\r\n"), "CR/LF", "pass")
    add(
        "valid-indexed",
        ndjson([chunk(calls=[call(index=0), call("set_limit", {"n": 4}, index=1)]), done]),
        "baseline",
        "pass",
    )
    add(
        "valid-escaped-key",
        ndjson([_with(chunk(calls=[call(args={"KEY": "/tmp/a"})]), "KEY", '"pa\\u0074h"'), done]),
        "escaped keys",
        "pass",
    )
    add(
        "valid-big-integer",
        ndjson(
            [_with(chunk(calls=[call("set_limit", {"n": "N"})]), "N", "18446744073709551617"), done]
        ),
        "7",
        "pass",
    )
    add("undeclared", ndjson([chunk(calls=[call("delete_file")]), done]), "baseline")
    add("schema", ndjson([chunk(calls=[call(args=BAD_ARGS)]), done]), "baseline")
    add("call-on-done-line", ndjson([text, chunk(calls=[call(args=BAD_ARGS)], done=True)]), "4")
    add(
        "call-after-done",
        ndjson([chunk(calls=[call()]), done, chunk(calls=[call("delete_file")])]),
        "4",
    )
    add("unterminated", ndjson([text, chunk(calls=[call(args=BAD_ARGS)])]), "3")
    add("error-after-call", ndjson([chunk(calls=[call(args=BAD_ARGS)]), {"error": "boom"}]), "3")
    add(
        "dup-arg-keys",
        ndjson(
            [
                _with(
                    chunk(calls=[call(args="ARGS")]),
                    "ARGS",
                    '{"path": "/tmp/a", "path": "/etc/passwd"}',
                ),
                done,
            ]
        ),
        "dup keys",
    )
    add(
        "dup-name-keys",
        ndjson(
            [
                _with(
                    chunk(calls=[call(name="NAME")]), "NAME", '"read_file", "name": "delete_file"'
                ),
                done,
            ]
        ),
        "dup keys",
    )
    good = json.dumps([call()])
    bad = json.dumps([call("delete_file")])
    add(
        "dup-tool-calls-keys",
        ndjson(
            [
                _with(
                    {**chunk(), "message": "M"},
                    "M",
                    f'{{"role": "assistant", "content": "", "tool_calls": {good}, "tool_calls": {bad}}}',
                ),
                done,
            ]
        ),
        "dup keys",
    )
    add(
        "dup-message-keys",
        ndjson(
            [
                _with(
                    {**chunk(), "message": "M"},
                    "M",
                    f'{{"role": "assistant", "content": "", "tool_calls": {good}}}, "message": {{"role": "assistant", "content": "", "tool_calls": {bad}}}',
                ),
                done,
            ]
        ),
        "dup keys",
    )
    add(
        "escaped-dup-name",
        ndjson(
            [
                _with(
                    chunk(calls=[call(name="NAME")]),
                    "NAME",
                    '"read_file", "n\\u0061me": "delete_file"',
                ),
                done,
            ]
        ),
        "escaped keys",
    )
    add(
        "lone-surrogate-name",
        ndjson([_with(chunk(calls=[call(name="NAME")]), "NAME", '"read_file\\ud800"'), done]),
        "surrogates",
    )
    add(
        "nan-argument",
        ndjson([_with(chunk(calls=[call("set_limit", {"n": "N"})]), "N", "NaN"), done]),
        "NaN",
    )
    add(
        "string-arguments",
        ndjson([chunk(calls=[call(args=json.dumps(BAD_ARGS))]), done]),
        "7",
    )
    add("bom", b"\xef\xbb\xbf" + ndjson([chunk(calls=[call(args=BAD_ARGS)]), done]), "BOM")
    return cases


# Attack cases the client itself refuses (it reads no call from them, guard or none).
CLIENT_REFUSES = frozenset({"ollama-string-arguments", "ollama-bom"})
