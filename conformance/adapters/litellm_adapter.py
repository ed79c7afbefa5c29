"""LiteLLM: ``litellm.completion(stream=True)`` from a local server, then ``stream_chunk_builder``.

The OpenAI-compatible route (``openai/<model>`` with ``api_base``), as users point
LiteLLM at any compatible server, and the Anthropic route (``anthropic/<model>``); the
calls are those of the rebuilt response (LiteLLM's OpenAI form for both), or of
``litellm.completion()``'s answer to a whole body; gated by each choice's
``finish_reason`` as LiteLLM documents it (OpenAI's values: ``tool_calls``, ``stop``,
``function_call`` end a message; ``length``, ``content_filter`` and none do not).
"""

from __future__ import annotations

import os

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "litellm"
DIALECTS = {"openai-chat", "anthropic"}
TRANSPORTS = {"sse", "jsonl", "json"}
FINISHED = {"tool_calls", "stop", "function_call"}

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
    stream = case.transport != "json"
    if case.dialect == "anthropic":
        _server.serve(as_sse(case, named=True) if stream else case.data, content_type(stream))
        model, api_base = "anthropic/conformance", _server.url
    else:
        _server.serve(as_sse(case, done=True) if stream else case.data, content_type(stream))
        model, api_base = "openai/conformance", _server.url + "/v1"
    answer = litellm.completion(
        model=model,
        api_base=api_base,
        api_key="conformance",
        messages=messages,
        stream=stream,
        max_retries=0,
    )
    if stream:
        answer = litellm.stream_chunk_builder(list(answer), messages=messages)
    calls = []
    choices = list(answer.choices) if answer is not None else []
    finished = [c for c in choices if c.finish_reason in FINISHED]
    for choice in finished:
        for tool_call in choice.message.tool_calls or []:
            calls.append(
                Call(
                    tool_call.function.name or "", tool_call.function.arguments or "", tool_call.id
                )
            )
    refused = None if finished else f"finish_reason {[c.finish_reason for c in choices]}"
    return Outcome(calls=calls, refused=refused)


def content_type(stream: bool) -> str:
    return "text/event-stream" if stream else "application/json"
