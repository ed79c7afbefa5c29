"""LiteLLM: ``litellm.completion(stream=True)`` from a local server, then ``stream_chunk_builder``.

The OpenAI-compatible route (``openai/<model>`` with ``api_base``), as users point
LiteLLM at any compatible server, and the Anthropic route (``anthropic/<model>``); the
calls are those of the rebuilt response (LiteLLM's OpenAI form for both).
"""

from __future__ import annotations

import os

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "litellm"
DIALECTS = {"openai-chat", "anthropic"}
TRANSPORTS = {"sse", "jsonl"}

_server: StreamServer | None = None


def start() -> None:
    global _server
    # No download of the model price list at import time: the machine is offline.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    _server = StreamServer()


def stop() -> None:
    if _server is not None:
        _server.close()


def reassemble(case: Case) -> Outcome:
    import litellm

    assert _server is not None
    messages = [{"role": "user", "content": "hi"}]
    if case.dialect == "anthropic":
        _server.serve(as_sse(case, named=True))
        model, api_base = "anthropic/conformance", _server.url
    else:
        _server.serve(as_sse(case, done=True))
        model, api_base = "openai/conformance", _server.url + "/v1"
    chunks = list(
        litellm.completion(
            model=model,
            api_base=api_base,
            api_key="conformance",
            messages=messages,
            stream=True,
            max_retries=0,
        )
    )
    response = litellm.stream_chunk_builder(chunks, messages=messages)
    calls = []
    for choice in response.choices if response is not None else []:
        for tool_call in choice.message.tool_calls or []:
            calls.append(
                Call(
                    tool_call.function.name or "", tool_call.function.arguments or "", tool_call.id
                )
            )
    return Outcome(calls=calls)
