"""OpenInference (openinference-instrumentation-openai / -anthropic): the calls its span records.

The real openai client streams Chat Completions (the anthropic client, Messages) from a
local server under the instrumentation; the calls are the span's flattened
``llm.output_messages.<m>.message.tool_calls.<n>.tool_call.*`` attributes.
"""

from __future__ import annotations

import re
from typing import Any

from suite import Call, Case, Outcome

from adapters._otel import Traced

NAME = "openinference"
KIND = "tracer"  # records calls in spans; runs none
DIALECTS = {"openai-chat", "anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}

_traced: Traced | None = None
_instrumentors: list[Any] = []
_KEY = re.compile(r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(.+)")


def start() -> None:
    global _traced
    from openinference.instrumentation.anthropic import AnthropicInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

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
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in _traced.attributes(case).items():
        match = _KEY.fullmatch(key)
        if match:
            found.setdefault((int(match[1]), int(match[2])), {})[match[3]] = value
    calls = [
        Call(f.get("function.name") or "", f.get("function.arguments") or "", f.get("id"))
        for _, f in sorted(found.items())
    ]
    return Outcome(calls=calls)
