"""LlamaIndex: ``llama-index-llms-anthropic``'s ``Anthropic`` LLM against a local server.

``llm.stream_chat()`` read to its last response, or ``llm.chat()`` for a whole body;
the calls are ``llm.get_tool_calls_from_response(response,
error_on_no_tool_call=False)``, as LlamaIndex's function-calling guide uses it. Gated
by the ``stop_reason`` LlamaIndex passes on (``additional_kwargs`` of the streamed
response's message, ``raw`` of a whole one): ``tool_use``, ``end_turn`` or ``stop_sequence``.
LlamaIndex's OpenAI LLM (``llama-index-llms-openai``) requires ``openai<3`` and cannot
be installed beside the openai SDK measured here, so LlamaIndex reads Anthropic only.
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "llamaindex"
DIALECTS = {"anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}
FINISHED = {"tool_use", "end_turn", "stop_sequence"}

_server: StreamServer | None = None
_llm: Any = None


def start() -> None:
    global _server, _llm
    from llama_index.llms.anthropic import Anthropic

    _server = StreamServer()
    _llm = Anthropic(
        model="claude-sonnet-4-5", api_key="conformance", base_url=_server.url, max_retries=0
    )


def stop() -> None:
    if _server is not None:
        _server.close()


def reassemble(case: Case) -> Outcome:
    from llama_index.core.llms import ChatMessage

    assert _server is not None and _llm is not None
    messages = [ChatMessage(role="user", content="hi")]
    if case.transport == "json":
        _server.serve(case.data, "application/json")
        response = _llm.chat(messages)
        stop_reason = (response.raw or {}).get("stop_reason")
    else:
        _server.serve(as_sse(case, named=True))
        responses = list(_llm.stream_chat(messages))
        if not responses:
            return Outcome(refused="no response")
        response = responses[-1]
        stop_reason = response.message.additional_kwargs.get("stop_reason")
    if stop_reason not in FINISHED:
        return Outcome(refused=f"stop_reason {stop_reason!r}")
    calls = [
        Call(t.tool_name, json.dumps(t.tool_kwargs), t.tool_id or None)
        for t in _llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    ]
    return Outcome(calls=calls)
