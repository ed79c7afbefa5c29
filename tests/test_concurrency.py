"""Objects documented as safe to share between threads are, under any mix of calls.

Each class that holds a lock in the binding (and `Toolset`, documented as safe
to share) is run by `concurrency_worker.py` in a subprocess: every pair and
every triple of its public methods and properties, concurrently on one shared
object, each a bounded number of times, under a watchdog that needs no GIL.
A deadlock fails the test with every thread's stack instead of hanging the
suite. The lock rule these tests hold the binding to is written in
`src/python/mod.rs` (`Locked`) and in docs/providers.md.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("concurrency_worker.py")
CLASSES = [
    "Assembler",
    "ToolUses",
    "Text",
    "Refusal",
    "Thinking",
    "Images",
    "PartialJson",
    "Toolset",
    "ArgumentTracker",
]
# Enough rounds that the interleaving which deadlocked the assembler before the
# lock rule (a feed holding the lock without the GIL, a reader waiting for it
# with the GIL, partial_calls() holding it and needing the GIL) shows up in
# every run; about ten seconds for the assembler's 680 combinations.
ITERATIONS = 200
BACKSTOP = 600


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=BACKSTOP,
        cwd=WORKER.parent,
        check=False,
    )


@pytest.mark.parametrize("name", CLASSES)
def test_every_pair_and_triple_of_operations_runs_concurrently(name: str) -> None:
    done = _run(str(WORKER), name, str(ITERATIONS))
    lines = done.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    assert done.returncode == 0 and last.startswith(f"OK {name}"), (
        f"{last}\n(exit status {done.returncode})\n{done.stderr[-6000:]}"
    )


def test_the_worker_covers_every_public_name() -> None:
    # A class with a public name the table lacks fails the run (status 2).
    import concurrency_worker as worker

    for name in CLASSES:
        _, ops, cls = worker.CLASSES[name]
        worker.check_coverage(name, ops, cls)
    with pytest.raises(SystemExit) as stopped:
        worker.check_coverage("ToolUses", {"add": len}, worker.CLASSES["ToolUses"][2])
    assert stopped.value.code == 2


REENTRY = textwrap.dedent(
    """
    import faulthandler, gc
    faulthandler.dump_traceback_later(60, exit=True)
    from toolstitch import Assembler

    ARGS = "{" + ", ".join(f'"k{i}": {{"v": [{i}]}}' for i in range(300)) + ", "
    seen = []

    class Finalized:
        def __init__(self, asm):
            self.asm = asm
            self.cycle = self

        def __del__(self):
            try:
                self.asm.messages()
                seen.append("ran")
            except RuntimeError as e:
                seen.append(str(e))

    for threshold in range(2, 40):
        asm = Assembler("openai-chat")
        asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": ARGS}}]}}]})
        read = asm.partial_calls
        gc.collect()
        Finalized(asm)
        # The first read converts every member (hundreds of allocations): the
        # collection falls inside it.
        gc.set_threshold(threshold)
        values = read()
        gc.set_threshold(700)
        assert len(values[(0, 0)]) == 300
        assert asm.message().complete is False
    gc.collect()
    refused = [s for s in seen if s != "ran"]
    assert refused, f"no finalizer ran while the lock was held: {seen}"
    assert all("while another toolstitch call held its lock" in s for s in refused), refused
    print("OK", len(refused), "refused of", len(seen))
    """
)


def test_a_call_from_a_finalizer_run_under_the_lock_raises_instead_of_hanging() -> None:
    # partial_calls() builds Python values while it holds the lock; with a
    # collection on every allocation, the garbage collector runs a finalizer in
    # the middle of it, and the finalizer calls the same assembler. Waiting
    # there would wait for itself forever; the binding raises RuntimeError.
    done = _run("-c", REENTRY)
    assert done.returncode == 0 and done.stdout.startswith("OK"), (
        f"exit status {done.returncode}\n{done.stdout}\n{done.stderr[-6000:]}"
    )
