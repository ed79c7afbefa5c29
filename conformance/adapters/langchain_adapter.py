"""LangChain through its real chat model classes: ``ChatOpenAI`` and ``ChatAnthropic``.

``langchain-openai``'s ``ChatOpenAI`` (Chat Completions, and the Responses API with
``use_responses_api=True``) and ``langchain-anthropic``'s ``ChatAnthropic`` against a
local server: ``.stream()`` with the chunks summed with ``+`` (as LangChain's
streaming guide does), ``.invoke()`` for a whole body. The calls are the message's
``tool_calls`` (never ``invalid_tool_calls``), gated by the provider's finish field
that LangChain passes on in ``response_metadata``: ``finish_reason`` (``tool_calls``,
``stop``, ``function_call``), ``status`` (``completed``) or ``stop_reason``
(``tool_use``, ``end_turn``, ``stop_sequence``).
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "langchain"
DIALECTS = {"openai-chat", "openai-responses", "anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}
FINISHED = {
    "finish_reason": {"tool_calls", "stop", "function_call"},
    "status": {"completed"},
    "stop_reason": {"tool_use", "end_turn", "stop_sequence"},
}

_server: StreamServer | None = None
_models: dict[str, Any] = {}


def start() -> None:
    global _server
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import ChatOpenAI

    _server = StreamServer()
    common: dict[str, Any] = {"api_key": "conformance", "max_retries": 0}
    _models["openai-chat"] = ChatOpenAI(
        model="gpt-4o", base_url=_server.url + "/v1", stream_usage=False, **common
    )
    _models["openai-responses"] = ChatOpenAI(
        model="gpt-4o", base_url=_server.url + "/v1", use_responses_api=True, **common
    )
    _models["anthropic"] = ChatAnthropic(
        model_name="claude-sonnet-4-5", base_url=_server.url, timeout=30, stop=None, **common
    )


def stop() -> None:
    if _server is not None:
        _server.close()


def reassemble(case: Case) -> Outcome:
    assert _server is not None
    model = _models[case.dialect]
    if case.transport == "json":
        _server.serve(case.data, "application/json")
        message = model.invoke("hi")
    else:
        chat = case.dialect == "openai-chat"
        _server.serve(as_sse(case, named=not chat, done=chat))
        message = None
        for chunk in model.stream("hi"):
            message = chunk if message is None else message + chunk
    if message is None:
        return Outcome(refused="no message")
    metadata = message.response_metadata or {}
    for field, done in FINISHED.items():
        if field in metadata:
            if metadata[field] not in done:
                return Outcome(refused=f"{field} {metadata[field]!r}")
            break
    else:
        return Outcome(refused="no finish field")
    calls = [Call(tc["name"], json.dumps(tc["args"]), tc.get("id")) for tc in message.tool_calls]
    return Outcome(calls=calls)
