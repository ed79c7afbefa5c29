"""What the proxy decides once per request and once per response, whichever relay moves
the bytes: the request read (model, declared tools), the upstream request, the path a
response takes (guarded or passed through), the side copy, and the record, span and log
line at the end. ``app._Exchange`` (the Python relay) and ``relay`` (the Rust one) both
build on ``Exchange``."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
import urllib.parse
import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from toolstitch._toolstitch import _RESPONSE_HEAD_BYTES, _Guard, _response_facts
from toolstitch.errors import ToolstitchError
from toolstitch.guard import Blocked, _blocked, dialect_for_path, error_response, transport_for
from toolstitch.messages import AssembledMessage
from toolstitch.otel import StreamTiming
from toolstitch.streams import Assembler
from toolstitch.tools import Toolset

from . import records
from .records import one_line
from .spans import ResponseSpan
from .toolsets import declared_tools, refuse_every_call
from .upstream import upstream_error

if TYPE_CHECKING:
    from .app import Proxy

_log = logging.getLogger("toolstitch.proxy")

Headers = list[tuple[bytes, bytes]]
# A whole response: status, headers (with content-length) and body.
Whole = tuple[int, Headers, bytes]

# Never forwarded (RFC 9110 7.6.1), and never sent twice: the server and the client set
# them for their own connection.
HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
_READ_TYPES = ("text/event-stream", "application/json", "application/vnd.amazon.eventstream")
# Gemini names the model before a method (`/models/gemini-2.5-flash:streamGenerateContent`);
# Bedrock's model id is a whole path segment, `:` included (`us.amazon.nova-pro-v1:0`),
# percent-encoded in the raw path (an ARN's `/` too).
_GEMINI_MODEL = re.compile(r"/models/([^/:?]+)")
_BEDROCK_MODEL = re.compile(r"/model/([^/?]+)/")
# The dialects a client reads by the path it asked on (a chat client reads chat chunks,
# whatever the body's first bytes look like): the guard reads them that way too. A
# Bedrock InvokeModel body is the model's own dialect, so it is told from the body.
_READ_AS_PATH = frozenset(
    {
        "openai-chat",
        "openai-responses",
        "anthropic",
        "bedrock",
        "gemini",
        "gemini-interactions",
        "cohere",
        "ollama",
    }
)
# The limits ``--limit`` may set: the guard's; those the side copy's Assembler takes too.
GUARD_LIMITS = frozenset(
    {
        "max_calls",
        "max_input_bytes",
        "max_total_bytes",
        "max_event_bytes",
        "max_line_bytes",
        "max_held_bytes",
        "max_decoded_bytes",
        "max_ratio",
        "max_check_bytes",
    }
)
_ASSEMBLER_LIMITS = frozenset(
    {"max_calls", "max_input_bytes", "max_total_bytes", "max_event_bytes", "max_line_bytes"}
)


def health(draining: bool, open_streams: int, enforce: bool) -> tuple[int, bytes]:
    """The health check's status and JSON body."""
    body = json.dumps(
        {"status": "draining" if draining else "ok", "open": open_streams, "enforce": enforce}
    ).encode()
    return (503 if draining else 200), body


def whole(status: int, headers: Iterable[tuple[str, str]], body: bytes) -> Whole:
    """A whole response as it goes out: the headers encoded, its length said."""
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    raw.append((b"content-length", b"%d" % len(body)))
    return status, raw, body


class Exchange:
    """One request and its response: everything but moving the bytes."""

    def __init__(
        self,
        proxy: Proxy,
        method: str,
        path: str,
        raw_path: bytes | None,
        query: bytes,
        headers: Headers,
    ) -> None:
        self.proxy = proxy
        self.path = path
        self.raw_path = raw_path or path.encode()
        self.query = query
        self.request_headers = headers
        self.path_dialect = dialect_for_path(self.path)
        self.started = time.time()
        self.timing = StreamTiming()
        self.record = records.new(method, self.path, self.started)
        self.span = (
            ResponseSpan(proxy.tracer, headers, self.path, self.started)
            if proxy.tracer is not None
            else None
        )
        self.toolset: Toolset | None = None
        # The check the guard runs: the toolset's, or one that refuses every call.
        self.checker: Any = None
        # The calls the guard's check passed, as it saw them (``records.call_key``): the
        # record does not validate them a second time.
        self.passed: set[tuple[Any, ...]] = set()
        self.guard: _Guard | None = None
        self.asm: Assembler | None = None
        self.decoder: Any = None
        self.read_error: str | None = None
        self.response_started = False
        # The body's first bytes: grown in place by the Python relay, handed over whole
        # (not copied) by the Rust one.
        self.head: bytearray | bytes = bytearray()

    @property
    def guarding(self) -> bool:
        return self.proxy.enforce and self.proxy.check

    # ---------------------------------------------------------- the request

    def read_request(self, body: bytes) -> None:
        """The request's model and declared tools (the check its calls must pass)."""
        if not self.proxy.check:
            return
        try:
            request = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            request = None
        model = request.get("model") if isinstance(request, dict) else None
        if not isinstance(model, str):
            model = self._model_in_path()
        self.record["model"] = model
        if not isinstance(request, dict):
            self.record["reason"] = "the request body is not a JSON object"
            return
        tools = declared_tools(request)
        try:
            # A request without tools still gets its calls recorded (as undeclared);
            # only one that declared tools is guarded.
            self.toolset = self.proxy.toolsets.get(tools or [])
            if tools:
                self.checker = self.check_call
        except ToolstitchError as e:
            why = one_line(str(e))
            self.record["reason"] = f"the request's tools cannot be read: {why}"
            self.checker = refuse_every_call(why)

    def check_call(self, block: Any) -> None:
        """The guard's check: the toolset's (the verdict only: the arguments are not
        built as Python values); a call that passes is noted as it was."""
        assert self.toolset is not None
        self.toolset.check(block)
        self.passed.add(records.call_key(block))

    def _model_in_path(self) -> str | None:
        bedrock = _BEDROCK_MODEL.search(self.raw_path.decode("latin-1"))
        if bedrock:
            return urllib.parse.unquote(bedrock.group(1))
        gemini = _GEMINI_MODEL.search(self.path)
        return gemini.group(1) if gemini else None

    def upstream_request(self) -> tuple[str, Headers]:
        """The upstream URL and the headers forwarded to it."""
        guarding = self.guarding
        headers = [
            (k, v)
            for k, v in self.request_headers
            if k.lower() not in HOP and not (guarding and k.lower() == b"accept-encoding")
        ]
        if guarding:
            # Events are told apart in the body as sent: ask for it uncompressed (a
            # body compressed all the same is decoded by the guard, within bounds).
            headers.append((b"accept-encoding", b"identity"))
        url = self.proxy.upstream + self.raw_path.decode("latin-1")
        if self.query:
            url += "?" + self.query.decode("latin-1")
        return url, headers

    def unreachable(self, error: str, tls: str | None = None) -> Whole:
        """The upstream could not be reached (``error`` names why): the answer. ``tls``:
        what a failed TLS handshake said (a certificate not trusted, a name it is not
        valid for), logged for the operator; the client's answer does not carry it."""
        reason = f"the upstream cannot be reached: {error}"
        if tls is not None:
            _log.warning(
                "the TLS handshake with %s failed: %s",
                self.proxy.upstream,
                one_line(tls),
            )
        self.record["status"] = 502
        self.record["reason"] = reason
        if self.guarding:
            # No response to guard: said, not left for a "checked" verdict.
            self.record["enforced"] = "unchecked"
            self.record["unchecked"] = reason
        return whole(*upstream_error(self.path_dialect, f"toolstitch proxy: {reason}"))

    # --------------------------------------------------------- the response

    def guards(self, status: int, media: str) -> bool:
        """Whether the response goes through the guard (else it is passed through)."""
        self.record["status"] = status
        self.record["streamed"] = media != "application/json"
        if not self.guarding:
            return False
        if self.checker is None:
            self.record["enforced"] = "unchecked"
            self.record["unchecked"] = "the request declared no tools"
        elif not 200 <= status < 300:
            self.record["enforced"] = "unchecked"
            self.record["unchecked"] = f"the upstream answered HTTP {status}"
        else:
            return True
        return False

    def new_guard(self, media: str, encoding: str) -> Whole | None:
        """The response's guard; or, for a body it cannot decode, the whole error."""
        self.record["readable"] = True
        try:
            self.guard = _Guard(
                self.checker,
                provider=self.path_dialect if self.path_dialect in _READ_AS_PATH else "auto",
                error_provider=self.path_dialect,
                transport=transport_for(media),
                encoding=encoding,
                **self.proxy.limits,
            )
        except ValueError:
            message = f"the body is {encoding}-encoded, which the guard cannot decode"
            self.guard = None
            self.record_block("encoding", message, None)
            return whole(*error_response(self.path_dialect, message))
        return None

    @staticmethod
    def guarded_headers(headers: Headers) -> Headers:
        # The body goes out decoded, and its length is the guard's to tell.
        dropped = (b"content-length", b"content-encoding")
        return [(k, v) for k, v in headers if k.lower() not in HOP and k.lower() not in dropped]

    @staticmethod
    def passed_headers(headers: Headers) -> Headers:
        return [
            (k, v) for k, v in headers if k.lower() not in HOP or k.lower() == b"content-length"
        ]

    def blocked_record(self, blocked: Blocked) -> None:
        call = (
            {"id": blocked.call_id, "name": blocked.tool_name}
            if blocked.call_id is not None or blocked.tool_name is not None
            else None
        )
        self.record_block(blocked.cause, blocked.reason, call)

    def record_block(self, cause: str, reason: str, call: dict[str, Any] | None) -> None:
        self.record["enforced"] = "blocked"
        self.record["blocked"] = reason
        self.record["blocked_cause"] = cause
        self.record["blocked_call"] = call

    def upstream_failed(self) -> Whole | None:
        """A guarded upstream that failed before anything went out: the client gets the
        provider's error for an upstream failure, not a server error of the proxy's."""
        if self.read_error is None or self.response_started:
            return None
        self.record_block("unreadable", self.read_error, None)
        dialect = self.guard.dialect if self.guard is not None else None
        return whole(
            *upstream_error(dialect or self.path_dialect, f"toolstitch proxy: {self.read_error}")
        )

    def guarded_verdict(self) -> None:
        """The guard's verdict in the record, once the body's reads are over."""
        if self.guard is None:
            return
        outcome = self.guard.outcome
        if outcome == "open" and self.read_error is None and self.record["client_disconnected"]:
            # A client may leave on reading the response's own end (the openai SDK
            # closes on ``[DONE]``) before the upstream's end reaches the proxy: the
            # verdict of what it read, when that was whole with nothing held back.
            outcome = self.guard.client_left()
            blocked = _blocked(self.guard.blocked)
            if blocked is not None:
                self.blocked_record(blocked)
        if outcome in ("passed", "unchecked", "blocked"):
            self.record["enforced"] = outcome
        if outcome == "unchecked":
            self.record["unchecked"] = self.guard.unchecked_reason
        if outcome == "open":
            # The response ended before the guard's verdict: what went out was checked
            # as it went, the rest never left.
            if self.read_error is not None:
                why = self.read_error
            elif self.record["client_disconnected"]:
                why = "the client disconnected before the response ended"
            else:
                why = self.cut_reason()
            self.record_block("incomplete", why, None)

    def start_copy(self, status: int, media: str, encoding: str, decode: bool = True) -> bool:
        """The side copy of a pass-through body, when it is readable (``decode``: with
        a decoder for its content coding here)."""
        if not (self.proxy.check and self._readable(status, media, encoding)):
            return False
        limits: dict[str, Any] = {
            k: v for k, v in self.proxy.limits.items() if k in _ASSEMBLER_LIMITS
        }
        self.asm = Assembler("auto", live=False, **limits)
        if not decode:
            return True
        if encoding in ("gzip", "x-gzip"):
            self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self.decoder = zlib.decompressobj()
        return True

    def _readable(self, status: int, media: str, encoding: str) -> bool:
        if status >= 400:
            self.record["reason"] = f"the upstream answered HTTP {status}; passed through"
        elif not any(kind in media for kind in _READ_TYPES) and not media.endswith(
            ("ndjson", "jsonl")
        ):
            self.record["reason"] = f"not a provider's response ({media or 'no content type'})"
        elif encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            self.record["reason"] = f"the body is {encoding}-encoded, which is not read"
        else:
            return True
        return False

    def copy(self, data: bytes) -> None:
        """The side copy of a pass-through body (never changes what is forwarded)."""
        if self.asm is None or self.read_error is not None or not data:
            return
        try:
            if self.decoder is not None:
                # Bounded per read: a compressed body can never be decoded whole at once.
                data = self.decoder.decompress(data, 1 << 24)
                if self.decoder.unconsumed_tail:
                    self.read_error = "the compressed body expands past 16 MiB per read"
                    return
            if len(self.head) < _RESPONSE_HEAD_BYTES:
                self.keep_head(data)
            self.asm.feed_bytes(data)
        except zlib.error as e:
            self.read_error = f"the body is not valid compressed data: {e}"
        except Exception as e:
            self.copy_failed(e)

    def copy_failed(self, error: BaseException) -> None:
        """The side copy's reading failed: said in the record, never to the traffic."""
        if isinstance(error, ToolstitchError):
            self.read_error = one_line(str(error))
        else:
            _log.error("toolstitch proxy: reading %s failed", self.path, exc_info=error)
            self.read_error = f"the proxy could not read the response: {type(error).__name__}"

    def cut_reason(self) -> str:
        return (
            f"the proxy stopped before the response ended (drain time of "
            f"{self.proxy.drain_seconds or 0:g} s over)"
        )

    def keep_head(self, data: bytes) -> None:
        """The body's first bytes (decoded), where each dialect declares its response's
        id and model to be (read once, at the end)."""
        room = _RESPONSE_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]

    # -------------------------------------------------------------- the end

    def _messages(self) -> list[AssembledMessage]:
        if self.guard is not None:
            return self.guard.messages() if self.guard.dialect is not None else []
        if self.asm is None or self.asm.dialect is None:
            return []
        return self.asm.messages()

    def finish(self) -> None:
        """The record, span and log line of the response."""
        record = self.record
        if self.asm is not None:
            if self.read_error is None and self.decoder is not None:
                with contextlib.suppress(ToolstitchError, zlib.error):
                    self.asm.feed_bytes(self.decoder.flush())
            if not self.asm.closed:
                with contextlib.suppress(ToolstitchError):
                    self.asm.close()
        dialect = None
        if self.guard is not None:
            dialect = self.guard.dialect
        elif self.asm is not None:
            dialect = self.asm.dialect
        messages = self._messages()
        if dialect is not None and self.head:
            record["response_id"], record["response_model"] = _response_facts(
                dialect, bytes(self.head)
            )
        if self.guard is not None or self.asm is not None:
            record["dialect"] = dialect
            if dialect is None:
                record["reason"] = (
                    record["reason"] or self.read_error or "no dialect recognised the response"
                )
            else:
                record["readable"] = True
                record["reason"] = record["reason"] or self.read_error
            record["calls"] = records.calls(
                self.path, messages, self.read_error, self.toolset, self.passed
            )
            record["complete"] = (
                bool(messages)
                and self.read_error is None
                and record["enforced"] != "blocked"
                and all(m.complete and not m.problems for m in messages)
            )
        records.finish(record, self.started)
        if self.span is not None:
            try:
                self.span.end(record, messages, self.timing, self.path_dialect)
            except Exception:
                _log.exception("toolstitch proxy: ending a span failed")
        self.proxy.emit(record, records.log_line(record))
