"""anthropic-sdk-python: the real client against a local server, ``messages.stream()``.

``Anthropic`` for the Messages API; ``AnthropicBedrock`` (botocore signing, fake static
credentials) for Bedrock's InvokeModelWithResponseStream, whose AWS event-stream frames
the SDK decodes itself. The calls are the ``tool_use`` blocks of
``get_final_message()`` (the SDK parses their input itself); server tools
(``server_tool_use``) are not client calls.
"""

from __future__ import annotations

import json

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "anthropic-sdk-python"
DIALECTS = {"anthropic", "bedrock-invoke"}
TRANSPORTS = {"sse", "jsonl", "eventstream"}

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
    else:
        _server.serve(as_sse(case, named=True))
    with client.messages.stream(
        model=model, max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
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
