"""One OpenTelemetry span per response (``--otel``): opened when the request arrives,
in the trace of its incoming W3C ``traceparent``, and closed when the response ends.

The span follows the GenAI convention: ``gen_ai.operation.name``, ``gen_ai.provider.name``
(the dialect's own declaration: ``openai``, ``anthropic``, ``aws.bedrock``,
``gcp.gemini`` or ``gcp.vertex_ai``, ``cohere``, ``ollama``), ``gen_ai.request.model``,
``gen_ai.response.model`` and ``gen_ai.response.id`` (as the first event says them), the
output messages, usage and time to first chunk (``toolstitch.otel.record``). A blocked
response's span has status ERROR, ``error.type`` the guard's cause, and
``toolstitch.guard.*`` attributes naming the call and why.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from toolstitch.guard import provider_name
from toolstitch.messages import AssembledMessage
from toolstitch.otel import StreamTiming
from toolstitch.otel import record as record_output

from .records import Record


class ResponseSpan:
    """The span of one response."""

    def __init__(
        self,
        tracer: Any,
        headers: Iterable[tuple[bytes, bytes]],
        path: str,
        started: float | None = None,
    ) -> None:
        """``started`` (seconds since the epoch) is when the request came in: the span
        starts then, as the response's record does, not when the span is made."""
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind

        carrier = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
        self.span = tracer.start_span(
            "chat",
            context=extract(carrier),
            kind=SpanKind.CLIENT,
            start_time=time.time_ns() if started is None else int(started * 1e9),
        )
        self.path = path

    def end(
        self,
        record: Record,
        messages: list[AssembledMessage],
        timing: StreamTiming,
        path_dialect: str | None,
    ) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.span
        model = record["model"]
        if model:
            span.update_name(f"chat {model}")
            span.set_attribute("gen_ai.request.model", model)
        span.set_attribute("gen_ai.operation.name", "chat")
        dialect = record["dialect"] or path_dialect
        if dialect:
            span.set_attribute("gen_ai.provider.name", provider_name(dialect, self.path))
        for key, attribute in (
            ("response_model", "gen_ai.response.model"),
            ("response_id", "gen_ai.response.id"),
        ):
            if record[key]:
                span.set_attribute(attribute, record[key])
        span.set_attribute("http.response.status_code", record["status"] or 0)
        span.set_attribute("url.path", self.path)
        if record["enforced"]:
            span.set_attribute("toolstitch.guard.outcome", record["enforced"])
        if messages:
            record_output(span, messages, timing=timing)
        if record["enforced"] == "blocked":
            span.set_attribute("error.type", record["blocked_cause"] or "blocked")
            span.set_attribute("toolstitch.guard.reason", record["blocked"] or "")
            call = record["blocked_call"]
            if call:
                span.set_attribute("toolstitch.guard.call.id", call["id"] or "")
                span.set_attribute("toolstitch.guard.call.name", call["name"] or "")
            span.set_status(Status(StatusCode.ERROR, record["blocked"]))
        elif (record["status"] or 0) >= 500 or record["status"] is None:
            span.set_attribute("error.type", str(record["status"] or "unreachable"))
            span.set_status(Status(StatusCode.ERROR, record["reason"]))
        span.end(end_time=time.time_ns())
