"""OpenLLMetry (opentelemetry-instrumentation-openai): what its span records of the calls.

The real openai client streams Chat Completions from a local server under the
instrumentation; the calls are the ``tool_call`` parts of the span's
``gen_ai.output.messages`` (the GenAI convention's JSON), one message per choice.
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._otel import Traced

NAME = "openllmetry"
DIALECTS = {"openai-chat"}
TRANSPORTS = {"sse", "jsonl"}

_traced: Traced | None = None
_instrumentor: Any = None


def start() -> None:
    global _traced, _instrumentor
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    _traced = Traced()
    _instrumentor = OpenAIInstrumentor()
    _instrumentor.instrument(tracer_provider=_traced.provider)


def stop() -> None:
    if _instrumentor is not None:
        _instrumentor.uninstrument()
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
