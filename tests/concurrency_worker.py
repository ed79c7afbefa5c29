"""Runs every pair and every triple of one class's public operations concurrently.

Started as a subprocess by ``tests/test_concurrency.py``:
``python concurrency_worker.py CLASS [ITERATIONS]``. Each combination gets one
shared object and one thread per operation, each calling its operation
ITERATIONS times. Before each combination the worker prints ``RUN <class>: <ops>``
and arms ``faulthandler``'s watchdog, a C thread that needs no GIL (a deadlock
that involves the GIL stops every Python thread, the main one included): a
combination still running after ``WATCHDOG`` seconds makes it print
``Timeout`` and every thread's stack to standard error and exit at once. Exit
status 0 and a last line ``OK <class>`` mean every combination finished.

Errors the library raises on purpose (a ``ToolstitchError`` for a stream fed
after ``close()``, a ``KeyError`` for a choice not seen yet) are part of the
run; any other exception is a failure (exit status 1).

The table ``OPERATIONS`` must name every public method and property of each
class: ``check_coverage`` fails the run when one is missing, so a method added
later is exercised here too.
"""

from __future__ import annotations

import contextlib
import copy
import faulthandler
import itertools
import json
import os
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Any

import toolstitch
from toolstitch import (
    ArgumentTracker,
    Assembler,
    ImageChunk,
    Images,
    PartialJson,
    Refusal,
    RefusalChunk,
    Text,
    TextChunk,
    Thinking,
    ThinkingChunk,
    ToolCallStarted,
    ToolInputDelta,
    ToolUseChunk,
    ToolUses,
)

WATCHDOG = 20.0

Op = Callable[[Any], object]


def _chunk(delta: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


OPEN = _chunk(
    {"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": ""}}]}
)
FRAGMENT = _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"k": "v'}}]})
FRAGMENT_TEXT = json.dumps(FRAGMENT)
FRAGMENT_SSE = f"data: {FRAGMENT_TEXT}\n\n".encode()
# Many events in one read: the lock is held with the GIL released for longer.
LARGE_SSE = FRAGMENT_SSE * 20


def _new_assembler() -> Assembler:
    asm = Assembler("openai-chat")
    asm.feed(OPEN)
    return asm


def _restore(asm: Assembler) -> None:
    asm.__setstate__(asm.__getstate__())


ASSEMBLER_OPS: dict[str, Op] = {
    "feed(dict)": lambda a: a.feed(FRAGMENT),
    "feed(str)": lambda a: a.feed(FRAGMENT_TEXT),
    "feed_many": lambda a: a.feed_many([FRAGMENT, FRAGMENT_TEXT]),
    "feed_all": lambda a: a.feed_all([FRAGMENT_SSE]),
    "feed_bytes": lambda a: a.feed_bytes(FRAGMENT_SSE),
    "feed_bytes(large)": lambda a: a.feed_bytes(LARGE_SSE),
    "close": lambda a: a.close(),
    "messages": lambda a: a.messages(),
    "message": lambda a: a.message(),
    "dialect": lambda a: a.dialect,
    "closed": lambda a: a.closed,
    "live": lambda a: a.live,
    "partial_calls": lambda a: a.partial_calls(),
    "pickle": lambda a: pickle.dumps(a),
    "setstate": _restore,
    "repr": repr,
}

TOOL_USES_OPS: dict[str, Op] = {
    "add": lambda t: t.add(ToolUseChunk(0, "call_a", "f", "x")),
    "add_fragment": lambda t: t.add_fragment(1, None, None, "y"),
    "extend": lambda t: t.extend([(2, None, None, "z"), ToolUseChunk(3, input_json="w")]),
    "blocks": lambda t: t.blocks(),
    "empty": lambda t: t.empty,
    "max_calls": lambda t: t.max_calls,
    "max_input_bytes": lambda t: t.max_input_bytes,
    "max_total_bytes": lambda t: t.max_total_bytes,
    "len": len,
    "copy": copy.copy,
    "pickle": lambda t: pickle.loads(pickle.dumps(t)),
    "repr": repr,
}


def _appender_ops(chunk: type) -> dict[str, Op]:
    return {
        "add": lambda a: a.add(chunk("x")),
        "add_fragment": lambda a: a.add_fragment("y"),
        "extend": lambda a: a.extend([chunk("z")]),
        "block": lambda a: a.block(),
        "empty": lambda a: a.empty,
        "max_bytes": lambda a: a.max_bytes,
        "len": len,
        "copy": copy.copy,
        "pickle": lambda a: pickle.loads(pickle.dumps(a)),
        "repr": repr,
    }


def _indexed_ops(chunk: Callable[[int], object]) -> dict[str, Op]:
    return {
        "add": lambda a: a.add(chunk(0)),
        "extend": lambda a: a.extend([chunk(1), chunk(2)]),
        "blocks": lambda a: a.blocks(),
        "empty": lambda a: a.empty,
        "len": len,
        "copy": copy.copy,
        "pickle": lambda a: pickle.loads(pickle.dumps(a)),
        "repr": repr,
    }


# Past the size at which PartialJson.feed releases the GIL (64 KiB).
LARGE = "x" * (80 * 1024)

PARTIAL_OPS: dict[str, Op] = {
    "feed": lambda p: p.feed('"ab'),
    "feed(large)": lambda p: p.feed(LARGE),
    "value": lambda p: p.value(),
    "complete": lambda p: p.complete,
    "partial_strings": lambda p: p.partial_strings,
    "len": len,
    "copy": copy.copy,
    "repr": repr,
}

# A call whose arguments close one member after another: every update reports.
TRACKED = (ToolCallStarted(0, 0, "call_a", "f"), ToolInputDelta(0, 0, '{"a": 1, '))
MEMBER = (ToolInputDelta(0, 0, '"b": [2], '),)


def _new_tracker() -> ArgumentTracker:
    tracker = ArgumentTracker()
    tracker.update(TRACKED)
    return tracker


def _live_update(tracker: ArgumentTracker) -> object:
    # The LiveEvents an Assembler returns take the tracker's fast path.
    asm = _new_assembler()
    return tracker.update(asm.feed(FRAGMENT))


TRACKER_OPS: dict[str, Op] = {
    "update": lambda t: t.update(MEMBER),
    "update(LiveEvents)": _live_update,
    "final_paths": lambda t: t.final_paths(),
    "repr": repr,
}

TOOLS = {"f": {"type": "object", "properties": {"k": {"type": "string"}}}}


def _toolset_message() -> Any:
    asm = Assembler("openai-chat")
    asm.feed(OPEN)
    asm.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"k": "v"}'}}]}))
    asm.feed({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    asm.close()
    return asm.message()


MESSAGE = _toolset_message()
CALL = MESSAGE.tool_uses[0]

TOOLSET_OPS: dict[str, Op] = {
    "names": lambda t: t.names,
    "definition": lambda t: t.definition("f"),
    "validate": lambda t: t.validate(CALL),
    "check": lambda t: t.check(CALL),
    "validate_all": lambda t: t.validate_all([CALL]),
    "validate_message": lambda t: t.validate_message(MESSAGE),
    "contains": lambda t: "f" in t,
    "len": len,
    "iter": list,
}

# class name -> (factory of the shared object, operations, the class whose public
# names the operations must cover)
CLASSES: dict[str, tuple[Callable[[], Any], dict[str, Op], type]] = {
    "Assembler": (_new_assembler, ASSEMBLER_OPS, Assembler),
    "ToolUses": (ToolUses, TOOL_USES_OPS, ToolUses),
    "Text": (Text, _appender_ops(TextChunk), Text),
    "Refusal": (Refusal, _appender_ops(RefusalChunk), Refusal),
    "Thinking": (Thinking, _indexed_ops(lambda i: ThinkingChunk(i, "t")), Thinking),
    "Images": (Images, _indexed_ops(lambda i: ImageChunk(i, data="aGk=")), Images),
    "PartialJson": (PartialJson, PARTIAL_OPS, PartialJson),
    "Toolset": (lambda: toolstitch.Toolset(TOOLS), TOOLSET_OPS, toolstitch.Toolset),
    "ArgumentTracker": (_new_tracker, TRACKER_OPS, ArgumentTracker),
}

# Public names that are no operation on a shared object (async: needs a loop).
NOT_OPERATIONS = {"afeed_all"}


def check_coverage(name: str, ops: dict[str, Op], cls: type) -> None:
    public = {n for n in dir(cls) if not n.startswith("_")} - NOT_OPERATIONS
    covered = {op.split("(")[0] for op in ops}
    missing = public - covered
    if missing:
        print(f"MISSING {name}: {sorted(missing)} have no operation", flush=True)
        sys.exit(2)


# Errors a stream raises on purpose while the operations race.
EXPECTED = (toolstitch.ToolstitchError, KeyError)


def run_combination(
    name: str, ops: list[tuple[str, Op]], factory: Callable[[], Any], n: int
) -> None:
    shared = factory()
    failures: list[BaseException] = []
    start = threading.Barrier(len(ops))

    def loop(op: Op) -> None:
        try:
            start.wait()
            for _ in range(n):
                with contextlib.suppress(*EXPECTED):
                    op(shared)
        except BaseException as e:
            failures.append(e)

    labels = " + ".join(label for label, _ in ops)
    print(f"RUN {name}: {labels}", flush=True)
    faulthandler.dump_traceback_later(WATCHDOG, exit=True)
    threads = [threading.Thread(target=loop, args=(op,), daemon=True) for _, op in ops]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    faulthandler.cancel_dump_traceback_later()
    if failures:
        print(f"FAILED {name}: {labels}: {failures[0]!r}", flush=True)
        os._exit(1)


def main() -> None:
    name = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    factory, table, cls = CLASSES[name]
    check_coverage(name, table, cls)
    # Switch threads as often as the interpreter allows, so that lock and GIL
    # hand-overs interleave in every order.
    sys.setswitchinterval(1e-6)
    ops = list(table.items())
    combos = 0
    for size in (2, 3):
        for combo in itertools.combinations(ops, size):
            run_combination(name, list(combo), factory, n)
            combos += 1
    print(f"OK {name}: {combos} combinations of {len(ops)} operations", flush=True)


if __name__ == "__main__":
    main()
