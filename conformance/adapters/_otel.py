"""What the tracer adapters share: an in-memory exporter and a real openai client."""

from __future__ import annotations

from typing import Any

from suite import Case

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

    def attributes(self, case: Case) -> dict[str, Any]:
        """Stream the case through the instrumented client; the span's attributes."""
        self.exporter.clear()
        self.server.serve(as_sse(case, done=True))
        stream = self.client.chat.completions.create(
            model="conformance", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for _ in stream:
            pass
        spans = self.exporter.get_finished_spans()
        merged: dict[str, Any] = {}
        for span in spans:
            merged.update(span.attributes or {})
        return merged

    def close(self) -> None:
        self.server.close()
