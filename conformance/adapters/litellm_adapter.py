"""LiteLLM: ``litellm.completion(stream=True)`` from a local server, then ``stream_chunk_builder``.

The OpenAI-compatible route (``openai/<model>`` with ``api_base``), as users point
LiteLLM at any compatible server; the calls are those of the rebuilt response.
"""

from __future__ import annotations

import os

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "litellm"
DIALECTS = {"openai-chat"}
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
    _server.serve(as_sse(case, done=True))
    messages = [{"role": "user", "content": "hi"}]
    chunks = list(
        litellm.completion(
            model="openai/conformance",
            api_base=_server.url + "/v1",
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
