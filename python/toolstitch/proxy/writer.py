"""Writes a served proxy's records and log lines on threads of their own.

On the Python relay the end of a response runs on the event loop: a write there that
blocks (a log on a pipe whose reader stopped, a records file on a stalled disk) would stop
every connection. Each sink gets one thread, so what it writes stays in order, and a
blocked log holds up neither a response nor the records (the Rust relay writes from
tokio's blocking pool, with the same effect)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

_log = logging.getLogger("toolstitch.proxy")


class Writer:
    """One sink's writes, in the order they were put, on a thread of its own."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, write: Callable[[], None]) -> None:
        """Queues ``write``; it runs after every write put before it."""
        self._queue.put(write)

    def _run(self) -> None:
        while (write := self._queue.get()) is not None:
            try:
                write()
            except Exception:
                _log.exception("toolstitch proxy: a write failed")

    def close(self, timeout: float) -> bool:
        """Lets what is queued be written, waiting up to ``timeout`` seconds: whether all
        of it was."""
        self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()
