"""OpenLLMetry (opentelemetry-instrumentation-openai / -anthropic): the calls its span records.

The real openai client streams Chat Completions (the anthropic client, Messages) from a
local server under the instrumentation; the calls are the ``tool_call`` parts of the span's
``gen_ai.output.messages`` (the GenAI convention's JSON), one message per choice.
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._otel import Traced

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
    attributes = _traced.attributes(case)
    calls = []
    for message in json.loads(attributes.get("gen_ai.output.messages") or "[]"):
        for part in message.get("parts", []):
            if part.get("type") == "tool_call":
                arguments = part.get("arguments")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments) if arguments is not None else ""
                calls.append(Call(part.get("name") or "", arguments, part.get("id")))
    return Outcome(calls=calls)
