"""LlamaIndex: its ``OpenAI`` and ``Anthropic`` LLMs against a local server.

``llama-index-llms-openai``'s ``OpenAI`` (Chat Completions) and
``llama-index-llms-anthropic``'s ``Anthropic``: ``llm.stream_chat()`` read to its last
response, or ``llm.chat()`` for a whole body; the calls are
``llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)``, as
LlamaIndex's function-calling guide uses it. Gated by the provider's finish field that
LlamaIndex passes on: ``finish_reason`` of the raw chunks or completion (``tool_calls``,
``stop``, ``function_call``), ``stop_reason`` in the streamed message's
``additional_kwargs`` or the raw message (``tool_use``, ``end_turn``,
``stop_sequence``).

LlamaIndex's releases need ``openai<3`` and ``anthropic<1`` (its Anthropic LLM builds
``MessageParam(...)``, a type anthropic 1 and later cannot instantiate), so this
adapter runs in an environment of its own, the dependency group
``conformance-llamaindex`` (README.md).
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "llamaindex"
DIALECTS = {"openai-chat", "anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}
FINISHED = {"tool_calls", "stop", "function_call", "tool_use", "end_turn", "stop_sequence"}

_server: StreamServer | None = None
_llms: dict[str, Any] = {}


def start() -> None:
    global _server
    from llama_index.llms.anthropic import Anthropic
    from llama_index.llms.openai import OpenAI

    _server = StreamServer()
    _llms["anthropic"] = Anthropic(
        model="claude-sonnet-4-5", api_key="conformance", base_url=_server.url, max_retries=0
    )
    _llms["openai-chat"] = OpenAI(
        model="gpt-4o", api_key="conformance", api_base=_server.url + "/v1", max_retries=0
    )


def stop() -> None:
    if _server is not None:
        _server.close()


def _finish(response: Any) -> Any:
    """The finish field LlamaIndex passes on with one response, or None."""
    stop_reason = response.message.additional_kwargs.get("stop_reason")
    if stop_reason is not None:
        return stop_reason
    raw = response.raw
    if isinstance(raw, dict):
        return raw.get("stop_reason")
    for choice in getattr(raw, "choices", None) or []:
        if choice.finish_reason is not None:
            return choice.finish_reason
    return getattr(raw, "stop_reason", None)


def reassemble(case: Case) -> Outcome:
    from llama_index.core.llms import ChatMessage

    assert _server is not None
    llm = _llms[case.dialect]
    messages = [ChatMessage(role="user", content="hi")]
    if case.transport == "json":
        _server.serve(case.data, "application/json")
        response = llm.chat(messages)
        finish = _finish(response)
    else:
        chat = case.dialect == "openai-chat"
        _server.serve(as_sse(case, named=not chat, done=chat))
        responses = list(llm.stream_chat(messages))
        if not responses:
            return Outcome(refused="no response")
        response = responses[-1]
        finishes = [f for f in map(_finish, responses) if f is not None]
        finish = finishes[-1] if finishes else None
    if finish not in FINISHED:
        return Outcome(refused=f"finish {finish!r}")
    calls = [
        Call(t.tool_name, json.dumps(t.tool_kwargs), t.tool_id or None)
        for t in llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    ]
    return Outcome(calls=calls)
