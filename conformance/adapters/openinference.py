"""OpenInference (openinference-instrumentation-openai): what its span records of the calls.

The real openai client streams Chat Completions from a local server under the
instrumentation; the calls are the span's flattened
``llm.output_messages.<m>.message.tool_calls.<n>.tool_call.*`` attributes.
"""

from __future__ import annotations

import re
from typing import Any

from suite import Call, Case, Outcome

from adapters._otel import Traced

NAME = "openinference"
DIALECTS = {"openai-chat"}
TRANSPORTS = {"sse", "jsonl"}

_traced: Traced | None = None
_instrumentor: Any = None
_KEY = re.compile(r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(.+)")


def start() -> None:
    global _traced, _instrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

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
