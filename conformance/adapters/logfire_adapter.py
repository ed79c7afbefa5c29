"""Logfire (``logfire.instrument_openai`` / ``instrument_anthropic``): the calls its spans record.

``logfire.configure(send_to_logfire=False)`` with an in-memory exporter; the real
openai client streams Chat Completions (the anthropic client, Messages) from a local
server under the instrumentation; the calls are the ``tool_call`` parts of the spans'
``gen_ai.output.messages`` (the GenAI convention's JSON).
"""

from __future__ import annotations

from suite import Case, Outcome

from adapters._otel import Traced, genai_output_calls

NAME = "logfire"
KIND = "tracer"  # records calls in spans; runs none
DIALECTS = {"openai-chat", "anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}

_traced: Traced | None = None


def start() -> None:
    global _traced
    import logfire
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    _traced = Traced()
    logfire.configure(
        send_to_logfire=False,
        console=False,
        additional_span_processors=[SimpleSpanProcessor(_traced.exporter)],
    )
    logfire.instrument_openai(_traced.client)
    logfire.instrument_anthropic(_traced.anthropic_client())


def stop() -> None:
    if _traced is not None:
        _traced.close()


def reassemble(case: Case) -> Outcome:
    assert _traced is not None
    return Outcome(calls=genai_output_calls(_traced.attributes(case)))
