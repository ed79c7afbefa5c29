"""anthropic-sdk-python: the real client against a local server, ``messages.stream()``.

``Anthropic`` for the Messages API; ``AnthropicBedrock`` (botocore signing, fake static
credentials) for Bedrock's InvokeModelWithResponseStream, whose AWS event-stream frames
the SDK decodes itself; a whole body through ``messages.create()``. The calls are the
``tool_use`` blocks of ``get_final_message()`` (the SDK parses their input itself);
server tools (``server_tool_use``) are not client calls. Gated as the tool-use guide
tells users: a message's calls run when its ``stop_reason`` says it ended
(``tool_use``, ``end_turn``, ``stop_sequence``), not on ``max_tokens``,
``pause_turn``, ``refusal`` or none.
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "anthropic-sdk-python"
DIALECTS = {"anthropic", "bedrock-invoke"}
TRANSPORTS = {"sse", "jsonl", "eventstream", "json"}
FINISHED = {"tool_use", "end_turn", "stop_sequence"}

_server: StreamServer | None = None
_client = None
_bedrock = None


def start() -> None:
    global _server, _client, _bedrock
    import anthropic

    _server = StreamServer()
    _client = anthropic.Anthropic(base_url=_server.url, api_key="conformance", max_retries=0)
    try:
        _bedrock = anthropic.AnthropicBedrock(
            aws_access_key="AKIDEXAMPLE",
            aws_secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            aws_region="us-east-1",
            base_url=_server.url,
            max_retries=0,
        )
    except ImportError:  # botocore absent: bedrock-invoke cases become errors
        _bedrock = None


def stop() -> None:
    if _server is not None:
        _server.close()


def reassemble(case: Case) -> Outcome:
    assert _server is not None and _client is not None
    client, model = _client, "conformance"
    if case.dialect == "bedrock-invoke":
        if case.transport != "eventstream":
            raise ValueError("AnthropicBedrock reads event-stream frames only")
        if _bedrock is None:
            raise RuntimeError("AnthropicBedrock needs botocore")
        _server.serve(case.data, "application/vnd.amazon.eventstream")
        client, model = _bedrock, "anthropic.claude-sonnet-4-20250514-v1:0"
    elif case.transport == "json":
        _server.serve(case.data, "application/json")
        message = client.messages.create(
            model=model, max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
        )
        return calls_of(message)
    else:
        _server.serve(as_sse(case, named=True))
    with client.messages.stream(
        model=model, max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        message = stream.get_final_message()
    return calls_of(message)


def calls_of(message: Any) -> Outcome:
    if message.stop_reason not in FINISHED:
        return Outcome(refused=f"stop_reason {message.stop_reason!r}")
    calls = [
        Call(block.name, json.dumps(block.input), block.id)
        for block in message.content
        if block.type == "tool_use"
    ]
    return Outcome(calls=calls)
