"""openai-python: the real client against a local server, gated by its finish field.

Chat Completions through ``client.chat.completions.stream()`` and
``get_final_completion()``; Responses through ``client.responses.stream()`` and
``get_final_response()``; a whole body through ``create()``. The calls are those of
the final object, read the way the API reference tells users to: a choice's calls
run only when its ``finish_reason`` says the message ended (``tool_calls``, ``stop``
or the older ``function_call``; not ``length``, ``content_filter`` or none), and a
response's only when its ``status`` is ``completed``.
"""

from __future__ import annotations

from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "openai-python"
DIALECTS = {"openai-chat", "openai-responses"}
TRANSPORTS = {"sse", "jsonl", "json"}
# The finish reasons after which a choice's message is whole.
FINISHED = {"tool_calls", "stop", "function_call"}

_server: StreamServer | None = None
_client = None


def start() -> None:
    global _server, _client
    import openai

    _server = StreamServer()
    _client = openai.OpenAI(base_url=_server.url + "/v1", api_key="conformance", max_retries=0)


def stop() -> None:
    if _server is not None:
        _server.close()


def chat_calls(completion: Any) -> Outcome:
    calls: list[Call] = []
    refused = []
    for choice in completion.choices:
        if choice.finish_reason not in FINISHED:
            if choice.message.tool_calls:
                refused.append(f"choice {choice.index}: finish_reason {choice.finish_reason!r}")
            continue
        for tool_call in choice.message.tool_calls or []:
            function = getattr(tool_call, "function", None)
            if function is not None:
                calls.append(Call(function.name, function.arguments or "", tool_call.id))
            custom = getattr(tool_call, "custom", None)
            if custom is not None:
                calls.append(Call(custom.name, custom.input, tool_call.id, freeform=True))
    if not completion.choices or all(c.finish_reason not in FINISHED for c in completion.choices):
        reasons = [c.finish_reason for c in completion.choices]
        refused.append(f"finish_reason {reasons}")
    return Outcome(calls=calls, refused="; ".join(refused) or None)


def response_calls(response: Any) -> Outcome:
    if response.status != "completed":
        return Outcome(refused=f"status {response.status!r}")
    calls: list[Call] = []
    for item in response.output:
        if item.type == "function_call":
            calls.append(Call(item.name, item.arguments, item.call_id))
        elif item.type == "custom_tool_call":
            calls.append(Call(item.name, item.input, item.call_id, freeform=True))
    return Outcome(calls=calls)


def reassemble(case: Case) -> Outcome:
    assert _server is not None and _client is not None
    messages: Any = [{"role": "user", "content": "hi"}]
    if case.transport == "json":
        _server.serve(case.data, "application/json")
        if case.dialect == "openai-chat":
            return chat_calls(
                _client.chat.completions.create(model="conformance", messages=messages)
            )
        return response_calls(_client.responses.create(model="conformance", input="hi"))
    if case.dialect == "openai-chat":
        _server.serve(as_sse(case, done=True))
        with _client.chat.completions.stream(model="conformance", messages=messages) as stream:
            for _ in stream:
                pass
            return chat_calls(stream.get_final_completion())
    _server.serve(as_sse(case))
    with _client.responses.stream(model="conformance", input="hi") as stream:
        for _ in stream:
            pass
        return response_calls(stream.get_final_response())
