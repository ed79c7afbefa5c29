"""openai-python: the real client against a local server, its stream helpers' state.

Chat Completions through ``client.chat.completions.stream()`` and
``get_final_completion()``; Responses through ``client.responses.stream()`` and
``get_final_response()``. The calls are those of the final object.
"""

from __future__ import annotations

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "openai-python"
DIALECTS = {"openai-chat", "openai-responses"}
TRANSPORTS = {"sse", "jsonl"}

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


def reassemble(case: Case) -> Outcome:
    assert _server is not None and _client is not None
    calls: list[Call] = []
    if case.dialect == "openai-chat":
        _server.serve(as_sse(case, done=True))
        with _client.chat.completions.stream(
            model="conformance", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        for choice in completion.choices:
            for tool_call in choice.message.tool_calls or []:
                function = getattr(tool_call, "function", None)
                if function is not None:
                    calls.append(Call(function.name, function.arguments or "", tool_call.id))
    else:
        _server.serve(as_sse(case))
        with _client.responses.stream(model="conformance", input="hi") as stream:
            for _ in stream:
                pass
            response = stream.get_final_response()
        for item in response.output:
            if item.type == "function_call":
                calls.append(Call(item.name, item.arguments, item.call_id))
            elif item.type == "custom_tool_call":
                calls.append(Call(item.name, item.input, item.call_id, freeform=True))
    return Outcome(calls=calls)
