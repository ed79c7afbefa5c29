"""``toolstitch proxy`` on the command line: serving, records, the operator's errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import re
import socket
import sys
from typing import IO, Any

from .app import Proxy
from .records import Record


def serve(
    upstream: str,
    listen: str,
    *,
    enforce: bool,
    records: str,
    otel: bool,
    check: bool = True,
    drain_seconds: float = 30.0,
    upstream_timeout: float = 600.0,
    limits: dict[str, int] | None = None,
    relay: str = "python",
) -> int:
    """``toolstitch proxy``: serves ``Proxy(upstream)`` on ``listen`` (``host:port``; port
    0 picks a free one) until interrupted, writing records as JSON lines to ``records``
    (a path, or ``-`` for standard output). The address it listens on is said on
    standard error once it accepts connections. SIGTERM (or Ctrl-C) stops accepting,
    lets open streams finish for up to ``drain_seconds``, then ends those still open
    (each recorded as cut, a guarded one ending in the provider's error) and exits.
    ``upstream_timeout`` bounds each wait on the upstream; ``limits`` bound each guard.
    ``relay`` is ``"python"`` (uvicorn and httpx) or ``"rust"`` (the extension's relay,
    ``toolstitch.proxy.relay``).

    An operator's mistake (a bad ``--listen``, a busy port, an unwritable ``--records``,
    a bad ``--upstream``) is one line on standard error and exit status 2."""
    import uvicorn

    def fail(message: str) -> int:
        print(f"toolstitch proxy: {message}", file=sys.stderr)
        return 2

    host, _, port_text = listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        return fail(f"--listen {listen}: give HOST:PORT (a port from 0 to 65535)")
    try:
        out: IO[str] = sys.stdout if records == "-" else open(records, "a", encoding="utf-8")  # noqa: SIM115
    except OSError as e:
        return fail(f"--records {records}: cannot be written: {e.strerror or e}")

    def write(record: Record) -> None:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.flush()

    provider, tracer = _tracer() if otel else (None, None)
    try:
        app = Proxy(
            upstream,
            enforce=enforce,
            on_record=write,
            check=check,
            tracer=tracer,
            upstream_timeout=upstream_timeout,
            limits=limits,
        )
    except ValueError as e:
        return fail(f"--upstream: {e}")
    if relay == "python" and app.https:
        # The trusted certificates are read now: one that cannot be is said at start,
        # as the Rust relay says it.
        try:
            app.client  # noqa: B018 (built for its certificates)
            _looked_up()
        except (OSError, ValueError) as e:
            return fail(f"--upstream {upstream}: no trusted certificate found in {_trust()} ({e})")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port_text)))
    except (OSError, OverflowError) as e:
        reason = getattr(e, "strerror", None) or e
        return fail(f"cannot listen on {listen}: {reason}")
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if family == socket.AF_INET6 else bound[0]
    logging.basicConfig(level=logging.INFO, format="toolstitch proxy: %(message)s")
    if relay == "rust":
        return _serve_rust(app, sock, listen, f"{shown}:{bound[1]}", drain_seconds, provider, out)
    sock.listen(1024)
    # httpx logs every request's full URL, query string (and so a key) included.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        http=nodelay_protocol(),
        log_level="warning",
        access_log=False,
        lifespan="on",
        # A backstop only: the app ends what is still open at the drain time itself.
        timeout_graceful_shutdown=math.ceil(drain_seconds) + 5,
    )
    server = _Server(config, app, drain_seconds)
    print(
        f"toolstitch proxy: listening on http://{shown}:{bound[1]} for {upstream}"
        + (" (enforcing)" if enforce else ""),
        file=sys.stderr,
        flush=True,
    )
    # A log or records file that blocks must not stop the event loop.
    app.write_off_loop()
    records_written = True
    try:
        server.run(sockets=[sock])
    finally:
        # What the served responses left queued is written before the file closes.
        records_written, log_written = app.close_writers(_WRITES_SECONDS)
        if provider is not None:
            provider.shutdown()
        # A records file still being written to stays open: its writer may yet finish.
        if out is not sys.stdout and records_written:
            out.close()
    if not records_written:
        # Records were lost: said on the exit status, and on standard error unless that
        # is the log that blocked.
        if log_written:
            _say_lost(
                f"records still queued {_WRITES_SECONDS:g} s after the server stopped were "
                "not written"
            )
        return 1
    return 0


def _say_lost(what: str) -> None:
    """Says on standard error that records were lost, if it takes the line at once: the
    log that blocked may be standard error itself, and the exit status says it anyway."""
    line = f"toolstitch proxy: {what}\n".encode()
    try:
        sys.stderr.flush()
        fd = sys.stderr.fileno()
        blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
        try:
            os.write(fd, line)
        finally:
            os.set_blocking(fd, blocking)
    except (OSError, ValueError):
        pass


# How long, once the server stopped, the records and log lines still queued may take to
# be written (each sink).
_WRITES_SECONDS = 5.0

# The names OpenSSL looks a trusted certificate up by in a directory (`c_rehash`,
# `openssl rehash`): the subject's hash, a dot, a number (`r` before it for a CRL).
_HASHED = re.compile(r"[0-9a-f]{8}\.r?[0-9]+")


def _looked_up() -> None:
    """Raise when httpx takes SSL_CERT_DIR and OpenSSL can find no certificate there.

    OpenSSL reads such a directory lazily, at the first handshake, and only the files
    named by their subject's hash: a directory that does not exist, or holds no such
    name, would fail every request but not the start. The Rust relay reads every
    certificate file of the directory at start (docs/integrations.md)."""
    if os.environ.get("SSL_CERT_FILE") or not os.environ.get("SSL_CERT_DIR"):
        return
    with os.scandir(os.environ["SSL_CERT_DIR"]) as entries:
        if not any(_HASHED.fullmatch(entry.name) for entry in entries):
            raise ValueError("no file named by a certificate's subject hash")


def _trust() -> str:
    """Where the trusted certificates of an https:// upstream come from (both relays
    look at SSL_CERT_FILE, then SSL_CERT_DIR; then httpx takes certifi's bundle, the
    Rust relay the platform's store)."""
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        if os.environ.get(name):
            return f"{name}={os.environ[name]}"
    return "certifi's bundle"


def _serve_rust(
    app: Proxy,
    sock: socket.socket,
    listen: str,
    shown: str,
    drain_seconds: float,
    provider: Any,
    out: IO[str],
) -> int:
    """Serves ``app`` on the Rust relay, on the address ``sock`` was bound to (the relay
    binds it anew once Python has checked it can be)."""
    from toolstitch._toolstitch import _Relay

    from .relay import hooks, run

    host, port = sock.getsockname()[:2]
    sock.close()
    request, health = hooks(app)
    try:
        relay = _Relay(
            host,
            port,
            request=request,
            health=health,
            upstream_timeout=app.upstream_timeout,
            https=app.https,
        )
    except ValueError as e:
        print(f"toolstitch proxy: --upstream {app.upstream}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"toolstitch proxy: cannot listen on {listen}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(
        f"toolstitch proxy: listening on http://{shown} for {app.upstream}"
        + (" (enforcing)" if app.enforce else ""),
        file=sys.stderr,
        flush=True,
    )
    unfinished = 0
    try:
        run(app, relay, drain_seconds)
    finally:
        # Responses whose end (the record, the span, the log line) had not finished when
        # the server stopped: their hooks may still be writing, so the file stays open.
        unfinished = relay.open
        if provider is not None:
            provider.shutdown()
        if out is not sys.stdout and not unfinished:
            out.close()
    if unfinished:
        _say_lost(
            f"{unfinished} responses' records and log lines were still being written when "
            "the server stopped"
        )
        return 1
    return 0


def _server_base() -> type[Any]:
    import uvicorn

    return uvicorn.Server


class _Server(_server_base()):  # type: ignore[misc]
    """uvicorn's server, telling the app it drains (its health check says so) when a
    signal asks it to stop."""

    def __init__(self, config: Any, app: Proxy, drain_seconds: float) -> None:
        super().__init__(config)
        self.app = app
        self.drain_seconds = drain_seconds

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.app.draining = True
        if self.app.drain_seconds is None:
            # Signal handlers run on the event loop's thread, between its callbacks.
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
                loop.call_soon_threadsafe(self.app.begin_drain, self.drain_seconds)
        super().handle_exit(sig, frame)
        # A stop asked for and drained is a clean exit (status 0): uvicorn would
        # raise the signal again once it has shut down.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()


def nodelay_protocol() -> type[Any]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with Nagle's algorithm
    off on every accepted connection. asyncio leaves it on for server sockets, and a
    stream forwarded in small writes then stalls for the client's delayed ACK (about
    40 ms on Linux) whenever a write waits behind an unacknowledged one."""
    base: type[Any]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class NoDelayProtocol(base):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)

    return NoDelayProtocol


def _tracer() -> tuple[Any, Any]:
    """A tracer provider exporting over OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT`` and the
    other standard variables configure it), and its tracer."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # The standard variables name the service when they do (OTEL_SERVICE_NAME, or
    # service.name in OTEL_RESOURCE_ATTRIBUTES): attributes given here would override them.
    named = os.environ.get("OTEL_SERVICE_NAME", "").strip() or any(
        pair.split("=", 1)[0].strip() == "service.name"
        for pair in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(",")
    )
    resource = Resource.create({} if named else {"service.name": "toolstitch-proxy"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider, provider.get_tracer("toolstitch.proxy")
