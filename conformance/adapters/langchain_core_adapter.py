"""LangChain (langchain-core): streamed chunks summed as ``AIMessageChunk``s.

The real openai client streams Chat Completions from a local server; each chunk
of choice 0 becomes an ``AIMessageChunk`` with ``tool_call_chunks`` the way
langchain-openai builds them (name, arguments, id, index of each delta), and the
chunks are added with ``+``. The calls are the sum's ``tool_calls``.
"""

from __future__ import annotations

import json

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "langchain-core"
DIALECTS = {"openai-chat"}
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
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    assert _server is not None and _client is not None
    _server.serve(as_sse(case, done=True))
    total = AIMessageChunk(content="")
    for chunk in _client.chat.completions.create(
        model="conformance", messages=[{"role": "user", "content": "hi"}], stream=True
    ):
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            parts = [
                tool_call_chunk(
                    name=(tc.function.name if tc.function else None),
                    args=(tc.function.arguments if tc.function else None),
                    id=tc.id,
                    index=tc.index,
                )
                for tc in choice.delta.tool_calls or []
            ]
            content = choice.delta.content if isinstance(choice.delta.content, str) else ""
            total = total + AIMessageChunk(content=content or "", tool_call_chunks=parts)
    calls = [Call(tc["name"], json.dumps(tc["args"]), tc["id"]) for tc in total.tool_calls]
    return Outcome(calls=calls)
