"""What the tracer adapters share: an in-memory exporter and the real SDK clients."""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case

from adapters._server import StreamServer, as_sse


class Traced:
    def __init__(self) -> None:
        import openai
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.server = StreamServer()
        self.client = openai.OpenAI(
            base_url=self.server.url + "/v1", api_key="conformance", max_retries=0
        )
        self.anthropic: Any = None

    def anthropic_client(self) -> Any:
        if self.anthropic is None:
            import anthropic

            self.anthropic = anthropic.Anthropic(
                base_url=self.server.url, api_key="conformance", max_retries=0
            )
        return self.anthropic

    def attributes(self, case: Case) -> dict[str, Any]:
        """Stream the case through the instrumented client; the span's attributes."""
        self.exporter.clear()
        messages = [{"role": "user", "content": "hi"}]
        stream = case.transport != "json"
        if case.dialect == "anthropic":
            self.server.serve(*body(case, as_sse(case, named=True)))
            events = self.anthropic_client().messages.create(
                model="conformance", max_tokens=1024, messages=messages, stream=stream
            )
        else:
            self.server.serve(*body(case, as_sse(case, done=True)))
            events = self.client.chat.completions.create(
                model="conformance", messages=messages, stream=stream
            )
        if stream:
            for _ in events:
                pass
        spans = self.exporter.get_finished_spans()
        merged: dict[str, Any] = {}
        for span in spans:
            merged.update(span.attributes or {})
        return merged

    def close(self) -> None:
        self.server.close()


def body(case: Case, streamed: bytes) -> tuple[bytes, str]:
    """What the server answers: the stream, or a whole body as JSON."""
    if case.transport == "json":
        return case.data, "application/json"
    return streamed, "text/event-stream"


def genai_output_calls(attributes: dict[str, Any]) -> list[Call]:
    """The ``tool_call`` parts of ``gen_ai.output.messages`` (the GenAI convention's JSON)."""
    calls = []
    for message in json.loads(attributes.get("gen_ai.output.messages") or "[]"):
        for part in message.get("parts", []):
            if part.get("type") == "tool_call":
                arguments = part.get("arguments")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments) if arguments is not None else ""
                calls.append(Call(part.get("name") or "", arguments, part.get("id")))
    return calls
