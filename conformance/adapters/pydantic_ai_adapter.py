"""pydantic-ai: its model classes' own stream handling, against a local server.

``OpenAIChatModel``, ``OpenAIResponsesModel``, ``AnthropicModel``, ``GoogleModel``
(Gemini), ``CohereModel`` (v2) and ``BedrockConverseModel`` (AWS event-stream frames
through boto3, fake credentials) are each given their provider's real client pointed
at 127.0.0.1. A stream goes through ``pydantic_ai.direct.model_request_stream_sync``
(every event read, then the stream's ``response``), a whole body through
``model_request_sync``. The calls are the response's ``ToolCallPart``s (never
``BuiltinToolCallPart``s: the provider ran those; the arguments as the part holds
them), gated by ``ModelResponse.state`` as pydantic-ai documents it: only a
``complete`` response is acted on (``incomplete``, ``suspended`` and ``interrupted``
are not). ``GroqModel`` is not run: Groq's streams are OpenAI chat streams, read
here by ``OpenAIChatModel``.
"""

from __future__ import annotations

from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_eventstream, as_sse

NAME = "pydantic-ai"
DIALECTS = {"openai-chat", "openai-responses", "anthropic", "gemini", "bedrock", "cohere"}
TRANSPORTS = {"sse", "jsonl", "json", "eventstream"}

_server: StreamServer | None = None
_models: dict[str, Any] = {}


def start() -> None:
    global _server
    import boto3
    from anthropic import AsyncAnthropic
    from cohere import AsyncClientV2
    from openai import AsyncOpenAI
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.models.cohere import CohereModel
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.bedrock import BedrockProvider
    from pydantic_ai.providers.cohere import CohereProvider
    from pydantic_ai.providers.google import GoogleProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    _server = StreamServer()
    url = _server.url
    openai_provider = OpenAIProvider(
        openai_client=AsyncOpenAI(base_url=url + "/v1", api_key="conformance", max_retries=0)
    )
    _models["openai-chat"] = OpenAIChatModel("gpt-4o", provider=openai_provider)
    _models["openai-responses"] = OpenAIResponsesModel("gpt-4o", provider=openai_provider)
    _models["anthropic"] = AnthropicModel(
        "claude-sonnet-4-5",
        provider=AnthropicProvider(
            anthropic_client=AsyncAnthropic(base_url=url, api_key="conformance", max_retries=0)
        ),
    )
    _models["cohere"] = CohereModel(
        "command-a-03-2025",
        provider=CohereProvider(
            cohere_client=AsyncClientV2(api_key="conformance", base_url=url),
        ),
    )
    _models["gemini"] = GoogleModel(
        "gemini-2.5-flash", provider=GoogleProvider(api_key="conformance", base_url=url)
    )
    bedrock = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    )
    _models["bedrock"] = BedrockConverseModel(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        provider=BedrockProvider(bedrock_client=bedrock),
    )


def stop() -> None:
    if _server is not None:
        _server.close()


def served(case: Case) -> tuple[bytes, str]:
    if case.transport == "json":
        return case.data, "application/json"
    if case.dialect == "bedrock":
        return as_eventstream(case), "application/vnd.amazon.eventstream"

    named = case.dialect in ("anthropic", "openai-responses")
    return as_sse(case, named=named, done=case.dialect == "openai-chat"), "text/event-stream"


def reassemble(case: Case) -> Outcome:
    from pydantic_ai import ModelRequest
    from pydantic_ai.direct import model_request_stream_sync, model_request_sync
    from pydantic_ai.messages import ToolCallPart

    assert _server is not None
    model = _models[case.dialect]
    _server.serve(*served(case))
    messages = [ModelRequest.user_text_prompt("hi")]
    if case.transport == "json":
        # max_tokens as the other adapters send it: with its default (the model's
        # whole output limit) the Anthropic model asks for a stream instead.
        response = model_request_sync(model, messages, model_settings={"max_tokens": 1024})
    else:
        with model_request_stream_sync(model, messages) as stream:
            for _ in stream:
                pass
            response = stream.response
    if response.state != "complete":
        return Outcome(
            refused=f"state {response.state!r}, finish_reason {response.finish_reason!r}"
        )
    # The arguments as the part holds them: pydantic-ai validates them against the
    # tool's schema before it runs a tool, so text that is not JSON never runs.
    calls = [
        Call(part.tool_name, part.args if part.args is not None else "{}", part.tool_call_id)
        for part in response.parts
        if type(part) is ToolCallPart
    ]
    return Outcome(calls=calls)
