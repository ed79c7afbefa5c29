"""The record the proxy writes for each response, and its one log line."""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage
from toolstitch.replay import _notes as _replay_notes
from toolstitch.replay import _record as _replay_record
from toolstitch.tools import Toolset

Record = dict[str, Any]


def new(method: str, path: str, started: float) -> Record:
    """A response's record before anything is known of it."""
    return {
        "time": started,
        "method": method,
        "path": path,
        "status": None,
        "model": None,
        "dialect": None,
        "streamed": None,
        "readable": False,
        "reason": None,
        "complete": False,
        "valid": None,
        # With --enforce: "passed", "blocked" or "unchecked" (see "unchecked").
        "enforced": None,
        "blocked": None,
        "blocked_cause": None,
        "blocked_call": None,
        "unchecked": None,
        "calls": [],
        "client_disconnected": False,
        "response_id": None,
        "response_model": None,
        "ttfb_ms": None,
        "duration_ms": None,
        "bytes": 0,
        "chunks": 0,
    }


def calls(
    path: str,
    messages: list[AssembledMessage],
    read_error: str | None,
    toolset: Toolset | None,
    passed: Collection[tuple[Any, ...]] = (),
) -> list[dict[str, Any]]:
    """The calls of a response as replay records (docs/replay.md), with ``valid`` and
    ``validation_error``; ``passed``: the calls (``call_key``) the guard's check already
    validated against ``toolset``, valid without a second validation."""
    out = []
    for message in messages:
        error = read_error or ("; ".join(message.problems) if message.problems else None)
        complete = message.complete and error is None
        for call in message.tool_uses:
            notes = _replay_notes(message, call)
            # A function call the check passed was read strictly as a JSON object: its
            # arguments are not parsed a second time for ``arguments_json``.
            checked = bool(passed) and call.kind == "function" and call_key(call) in passed
            record = _replay_record(
                path, message.choice, call, complete, message.finish, error, notes, checked
            )
            entry: dict[str, Any] = dict(record)
            entry["valid"], entry["validation_error"] = validity(toolset, call, complete, passed)
            out.append(entry)
    return out


def call_key(call: Any) -> tuple[Any, ...]:
    """What ``Toolset.validate`` reads of a call: the same key, the same verdict."""
    return (
        call.id,
        call.name,
        call.input,
        getattr(call, "kind", "function"),
        getattr(call, "server_side", False),
    )


def validity(
    toolset: Toolset | None, call: Any, complete: bool, passed: Collection[tuple[Any, ...]] = ()
) -> tuple[bool | None, str | None]:
    if call.server_side or toolset is None:
        return None, None
    if not complete:
        return False, "not validated: the response did not complete"
    if passed and call_key(call) in passed:
        return True, None
    try:
        toolset.validate(call)
    except ToolstitchError as e:
        return False, one_line(str(e))
    return True, None


def finish(record: Record, started: float) -> None:
    record["duration_ms"] = (time.time() - started) * 1000
    checked = [c["valid"] for c in record["calls"] if c["valid"] is not None]
    record["valid"] = all(checked) if checked else None


def log_line(record: Record) -> str:
    """One line per response: what it was and what the proxy did with it."""
    if record["enforced"] == "blocked":
        verdict = f"blocked ({record['blocked_cause']}: {record['blocked']})"
    elif record["enforced"] == "unchecked":
        verdict = f"unchecked ({record['unchecked']})"
    elif record["enforced"] == "passed":
        verdict = "passed"
    else:
        verdict = f"checked valid={record['valid']}"
    calls = sum(1 for c in record["calls"] if c["id"] is not None)
    disconnected = " client disconnected" if record["client_disconnected"] else ""
    return (
        f"{record['method']} {record['path']} {record['status']} model={record['model']} "
        f"calls={calls} {verdict}{disconnected}"
    )


def one_line(message: str) -> str:
    return " ".join(message.split())
