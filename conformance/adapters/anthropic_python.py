"""anthropic-sdk-python: the real client against a local server, ``messages.stream()``.

The calls are the ``tool_use`` blocks of ``get_final_message()`` (the SDK parses
their input itself); server tools (``server_tool_use``) are not client calls.
"""

from __future__ import annotations

import json

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "anthropic-sdk-python"
DIALECTS = {"anthropic"}
TRANSPORTS = {"sse", "jsonl"}

_server: StreamServer | None = None
_client = None


def start() -> None:
    global _server, _client
    import anthropic

    _server = StreamServer()
    _client = anthropic.Anthropic(base_url=_server.url, api_key="conformance", max_retries=0)


def stop() -> None:
    if _server is not None:
        _server.close()


def reassemble(case: Case) -> Outcome:
    assert _server is not None and _client is not None
    _server.serve(as_sse(case, named=True))
    with _client.messages.stream(
        model="conformance", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        message = stream.get_final_message()
    calls = [
        Call(block.name, json.dumps(block.input), block.id)
        for block in message.content
        if block.type == "tool_use"
    ]
    return Outcome(calls=calls)
