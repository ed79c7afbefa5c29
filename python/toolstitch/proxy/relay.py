"""``toolstitch proxy --relay rust``: the per-read path (the upstream's reads, the guard or
the side copy, the client's writes) runs in the extension's Rust relay (tokio and hyper,
without the GIL). Python keeps what runs once per request and response, through the
same ``Exchange`` as the Python relay: ``request`` reads the request, ``head`` picks the
response's path (the guard, or the side copy) and ``end`` is handed the facts of the
response and writes its record, span and log line (on a thread of the relay's blocking
pool, so that it never holds up the response's last bytes or another connection)."""

from __future__ import annotations

import signal
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from toolstitch.guard import _blocked

from .app import Proxy
from .exchange import Exchange, Headers, Whole, health

# The content codings the side copy decodes (in Rust, bounded per read).
_DECODED = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


def _header(headers: Headers, name: bytes) -> str | None:
    values = [v.decode("latin-1") for k, v in headers if k.lower() == name]
    return ", ".join(values) if values else None


class RustExchange(Exchange):
    """One request on the Rust relay: its hooks."""

    def respond(self, status: int, headers: Headers) -> tuple[str, Headers, Any, str | None, bool]:
        """The response's path: ``("guard", headers, guard, None, timed)``, ``("pass",
        headers, side copy or None, coding to decode, timed)`` or ``("whole", [],
        answer, None, timed)``; ``timed``: the reads' times are wanted (a span)."""
        media = (_header(headers, b"content-type") or "").split(";")[0].strip().lower()
        encoding = (_header(headers, b"content-encoding") or "identity").strip().lower()
        timed = self.span is not None
        if self.guards(status, media):
            refused = self.new_guard(media, encoding)
            if refused is not None:
                return "whole", [], refused, None, timed
            return "guard", self.guarded_headers(headers), self.guard, None, timed
        self.start_copy(status, media, encoding, decode=False)
        decode = _DECODED.get(encoding) if self.asm is not None else None
        return "pass", self.passed_headers(headers), self.asm, decode, timed

    def failed(self, why: str) -> Whole:
        """A guarded upstream failed before anything went out: the answer."""
        self.read_error = why
        answer = self.upstream_failed()
        assert answer is not None
        return answer

    def end(
        self,
        size: int,
        reads: int,
        started_ago: float | None,
        chunks: list[float] | None,
        read_error: str | None,
        copy_error: str | None,
        copy_failure: BaseException | None,
        client_disconnected: bool,
        cut: bool,
        head: bytes,
        failed_answered: bool,
    ) -> None:
        """The response is over: its facts, then the record, span and log line."""
        record = self.record
        record["bytes"] += size
        record["chunks"] += reads
        if started_ago is not None:
            # The response started going out ``started_ago`` seconds before now.
            record["ttfb_ms"] = (time.time() - started_ago - self.started) * 1000
            self.response_started = True
        if chunks is not None:
            self.timing.started = 0.0
            self.timing.chunks = chunks
        self.head = head
        if copy_error is not None:
            self.read_error = copy_error
        if copy_failure is not None:
            self.copy_failed(copy_failure)
        if read_error is not None:
            self.read_error = read_error
        if client_disconnected:
            record["client_disconnected"] = True
        if cut:
            record["reason"] = record["reason"] or self.cut_reason()
        if self.guard is not None:
            blocked = _blocked(self.guard.blocked)
            if blocked is not None:
                self.blocked_record(blocked)
            if not failed_answered:
                self.guarded_verdict()
        self.finish()


def hooks(proxy: Proxy) -> tuple[Callable[..., Any], Callable[[bool, int], tuple[int, bytes]]]:
    """The relay's request and health hooks for ``proxy``."""

    def request(
        method: str, raw_path: bytes, query: bytes, headers: Headers, body: bytes
    ) -> tuple[RustExchange, str, Headers]:
        path = urllib.parse.unquote(raw_path.decode("latin-1"))
        exchange = RustExchange(proxy, method, path, raw_path, query, headers)
        exchange.read_request(body)
        url, forwarded = exchange.upstream_request()
        exchange.timing.restart()
        return exchange, url, forwarded

    def health_check(draining: bool, open_streams: int) -> tuple[int, bytes]:
        return health(draining, open_streams, proxy.enforce)

    return request, health_check


def run(proxy: Proxy, relay: Any, drain_seconds: float) -> None:
    """Serves until SIGTERM or SIGINT, then drains (see ``command.serve``)."""

    def stop(signum: int, frame: Any) -> None:
        if not proxy.draining:
            proxy.draining = True
            proxy.drain_seconds = drain_seconds
            relay.drain(drain_seconds)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        relay.start()
        while not relay.wait(0.1):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
