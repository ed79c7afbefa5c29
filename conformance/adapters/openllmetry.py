"""OpenLLMetry (opentelemetry-instrumentation-openai / -anthropic): the calls its span records.

The real openai client streams Chat Completions (the anthropic client, Messages) from a
local server under the instrumentation; the calls are the ``tool_call`` parts of the span's
``gen_ai.output.messages`` (the GenAI convention's JSON), one message per choice.
"""

from __future__ import annotations

from typing import Any

from suite import Case, Outcome

from adapters._otel import Traced, genai_output_calls

NAME = "openllmetry"
KIND = "tracer"  # records calls in spans; runs none
DIALECTS = {"openai-chat", "anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}

_traced: Traced | None = None
_instrumentors: list[Any] = []


def start() -> None:
    global _traced
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    _traced = Traced()
    for instrumentor in (OpenAIInstrumentor(), AnthropicInstrumentor()):
        instrumentor.instrument(tracer_provider=_traced.provider)
        _instrumentors.append(instrumentor)


def stop() -> None:
    while _instrumentors:
        _instrumentors.pop().uninstrument()
    if _traced is not None:
        _traced.close()


def reassemble(case: Case) -> Outcome:
    assert _traced is not None
    return Outcome(calls=genai_output_calls(_traced.attributes(case)))
