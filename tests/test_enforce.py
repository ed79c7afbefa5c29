"""``toolstitch.enforce``: the guard on an SDK client's own transport, driven the way an
application drives it: the real ``openai`` and ``anthropic`` clients (sync and async)
against a real HTTP server on 127.0.0.1 that serves real recordings, and crafted
invalid calls. An invalid call never reaches the application as finished; valid
responses reach it exactly as they do unguarded."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
import toolstitch
from http_server import Recording, RecordingServer
from test_proxy import CHAT_TOOLS, WEATHER_TOOL
from test_watch import ANTHROPIC, COMPLETION, MESSAGES, OPENAI_CHAT
from toolstitch.transport import AsyncGuardTransport, GuardTransport

_FIRST = OPENAI_CHAT.index(b"\n\n") + 2
ROUTES = {
    "/v1/chat/completions": Recording(OPENAI_CHAT),
    "/whole/v1/chat/completions": Recording(COMPLETION, "application/json"),
    "/cut/v1/chat/completions": Recording(
        OPENAI_CHAT[: OPENAI_CHAT.index(b'"finish_reason":"tool_calls"') - 200]
    ),
    "/broken/v1/chat/completions": Recording(
        OPENAI_CHAT[:_FIRST] + b"data: {not json\n\n" + OPENAI_CHAT[_FIRST:]
    ),
    "/v1/messages": Recording(ANTHROPIC),
    "/v1/embeddings": Recording(
        b'{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],'
        b'"model":"e","usage":{"prompt_tokens":1,"total_tokens":1}}',
        "application/json",
    ),
}
COMPLETION_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def strict(tools: list[Any]) -> list[Any]:
    """The same tools, each requiring a property no recorded call sends."""
    out: list[Any] = json.loads(json.dumps(tools))
    for tool in out:
        holder = tool.get("function", tool)
        key = "input_schema" if "input_schema" in holder else "parameters"
        holder[key]["required"] = [*holder[key].get("required", []), "__never_sent__"]
    return out


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES) as s:
        yield s


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def oai(server: RecordingServer, prefix: str = "") -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{server.url}{prefix}/v1", api_key="k", max_retries=0, timeout=10
    )


def claude(server: RecordingServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0, timeout=10)


def finished_calls(client: openai.OpenAI, tools: list[Any], prefix: str = "") -> list[str]:
    """The names of the calls the SDK's stream helper reports finished."""
    done = []
    with client.chat.completions.stream(model="gpt-4o", messages=MESSAGES, tools=tools) as stream:
        for event in stream:
            if event.type == "tool_calls.function.arguments.done":
                done.append(event.name)
    return done


def chunks(client: openai.OpenAI, tools: list[Any]) -> list[dict[str, Any]]:
    stream = client.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, tools=tools, stream=True
    )
    return [chunk.model_dump() for chunk in stream]


# ------------------------------------------------------------ OpenAI, sync


def test_a_valid_stream_reaches_the_sdk_as_unguarded(server: RecordingServer) -> None:
    plain = chunks(oai(server), CHAT_TOOLS)
    guarded = chunks(toolstitch.enforce(oai(server)), CHAT_TOOLS)
    assert guarded == plain and len(plain) > 10
    client = toolstitch.enforce(oai(server))
    assert finished_calls(client, CHAT_TOOLS) == ["GetWeatherArgs", "get_stock_price"]


def test_an_invalid_call_never_reaches_the_sdk_as_finished(server: RecordingServer) -> None:
    client = toolstitch.enforce(oai(server))
    done: list[str] = []
    with (
        pytest.raises(openai.APIError, match="GetWeatherArgs"),
        client.chat.completions.stream(
            model="gpt-4o", messages=MESSAGES, tools=strict(CHAT_TOOLS)
        ) as stream,
    ):
        for event in stream:
            if event.type == "tool_calls.function.arguments.done":
                done.append(event.name)
    assert done == []


def test_an_invalid_second_call_lets_the_first_through(server: RecordingServer) -> None:
    client = toolstitch.enforce(oai(server))
    tools = [CHAT_TOOLS[0], strict(CHAT_TOOLS)[1]]
    done: list[str] = []
    with (
        pytest.raises(openai.APIError, match="get_stock_price"),
        client.chat.completions.stream(model="gpt-4o", messages=MESSAGES, tools=tools) as stream,
    ):
        for event in stream:
            if event.type == "tool_calls.function.arguments.done":
                done.append(event.name)
    assert done == ["GetWeatherArgs"]


def test_the_tools_given_to_enforce_are_the_check(server: RecordingServer) -> None:
    # The request declares the lenient tools; the application's own are stricter.
    client = toolstitch.enforce(oai(server), tools=strict(CHAT_TOOLS))
    with pytest.raises(openai.APIError, match="GetWeatherArgs"):
        finished_calls(client, CHAT_TOOLS)

    # A callable check: it raises to refuse.
    def no_stocks(call: toolstitch.ToolUseBlock) -> None:
        if call.name == "get_stock_price":
            raise ValueError("no trading today")

    client = toolstitch.enforce(oai(server), tools=no_stocks)
    with pytest.raises(openai.APIError, match="no trading today"):
        finished_calls(client, CHAT_TOOLS)


def test_given_tools_refuse_an_undeclared_call(server: RecordingServer) -> None:
    client = toolstitch.enforce(oai(server), tools=CHAT_TOOLS[:1])
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIError, match="get_stock_price"):
        for _ in stream:
            pass


def test_a_whole_invalid_response_is_an_error_response(server: RecordingServer) -> None:
    client = toolstitch.enforce(oai(server, "/whole"))
    with pytest.raises(openai.APIStatusError, match="get_weather") as raised:
        client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, tools=strict(COMPLETION_TOOLS)
        )
    assert not 200 <= raised.value.status_code < 300
    completion = client.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, tools=COMPLETION_TOOLS
    )
    assert (
        completion.model_dump()
        == oai(server, "/whole")
        .chat.completions.create(model="gpt-4o", messages=MESSAGES, tools=COMPLETION_TOOLS)
        .model_dump()
    )


@pytest.mark.parametrize("prefix", ["/cut", "/broken"])
def test_a_cut_or_unreadable_stream_ends_in_the_providers_error(
    server: RecordingServer, prefix: str
) -> None:
    client = toolstitch.enforce(oai(server, prefix))
    with pytest.raises(openai.APIError):
        finished_calls(client, CHAT_TOOLS)


def test_a_gzipped_stream_is_decoded_and_guarded(server: RecordingServer) -> None:
    client = toolstitch.enforce(oai(server, "/gzip"))
    assert chunks(client, CHAT_TOOLS) == chunks(oai(server), CHAT_TOOLS)
    with pytest.raises(openai.APIError, match="GetWeatherArgs"):
        finished_calls(client, strict(CHAT_TOOLS))


def test_twin_what_is_not_guarded_passes_untouched(server: RecordingServer) -> None:
    client = toolstitch.enforce(oai(server))
    # No tools declared and none given: the proxy's rule, unchecked.
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert len(list(stream)) > 10
    # A path that speaks no dialect, with given tools.
    client = toolstitch.enforce(oai(server), tools=strict(CHAT_TOOLS))
    assert client.embeddings.create(model="e", input="x").data[0].embedding == [0.5]
    # An error status reaches the SDK as before.
    with pytest.raises(openai.NotFoundError):
        toolstitch.enforce(oai(server, "/nowhere")).chat.completions.create(
            model="gpt-4o", messages=MESSAGES, tools=CHAT_TOOLS
        )


def test_tools_that_cannot_be_read_are_refused_at_once_or_refuse_every_call(
    server: RecordingServer,
) -> None:
    with pytest.raises(toolstitch.ToolstitchError):
        toolstitch.enforce(oai(server), tools=[{"type": "function", "function": 3}])
    client = toolstitch.enforce(oai(server))
    with pytest.raises(openai.APIError, match="cannot be read"):
        finished_calls(client, [{"type": "function", "function": {"name": 7}}])


def test_an_httpx_client_takes_the_transport_directly(server: RecordingServer) -> None:
    transport: Any = GuardTransport(httpx.HTTPTransport(), strict(CHAT_TOOLS))  # duck-typed
    request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", f"{server.url}/v1/chat/completions", json=request) as response,
    ):
        body = b"".join(response.iter_bytes())
    assert response.status_code == 200
    assert body.startswith(OPENAI_CHAT[:_FIRST]) and b'data: {"error":' in body
    assert b'"finish_reason":"tool_calls"' not in body
    lenient: Any = GuardTransport(httpx.HTTPTransport())
    with httpx.Client(transport=lenient) as client:
        whole = client.post(f"{server.url}/gzip/v1/chat/completions", json=request).content
    assert whole == OPENAI_CHAT and gzip.decompress(gzip.compress(whole)) == OPENAI_CHAT


# ------------------------------------------------------------ Anthropic


def test_anthropic_valid_passes_and_invalid_never_stops_its_block(server: RecordingServer) -> None:
    client = toolstitch.enforce(claude(server))
    with client.messages.stream(
        model="claude", max_tokens=100, messages=MESSAGES, tools=WEATHER_TOOL
    ) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    stopped = []
    with (
        pytest.raises(anthropic.APIError, match="get_weather"),
        client.messages.stream(
            model="claude", max_tokens=100, messages=MESSAGES, tools=strict(WEATHER_TOOL)
        ) as stream,
    ):
        for event in stream:
            if event.type == "content_block_stop":
                stopped.append(event.index)
    assert stopped == [0]  # the text block; never the tool_use block


# ------------------------------------------------------------ async


@pytest.mark.anyio
async def test_async_clients_are_guarded_too(server: RecordingServer) -> None:
    client = toolstitch.enforce(
        openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0, timeout=10)
    )
    assert isinstance(client._client._transport, AsyncGuardTransport)
    stream = await client.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
    )
    got = [chunk.model_dump() async for chunk in stream]
    assert got == chunks(oai(server), CHAT_TOOLS)
    done: list[str] = []
    with pytest.raises(openai.APIError, match="GetWeatherArgs"):
        async with client.chat.completions.stream(
            model="gpt-4o", messages=MESSAGES, tools=strict(CHAT_TOOLS)
        ) as events:
            async for event in events:
                if event.type == "tool_calls.function.arguments.done":
                    done.append(event.name)
    assert done == []
    whole = toolstitch.enforce(
        openai.AsyncOpenAI(
            base_url=f"{server.url}/whole/v1", api_key="k", max_retries=0, timeout=10
        )
    )
    with pytest.raises(openai.APIStatusError, match="get_weather"):
        await whole.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, tools=strict(COMPLETION_TOOLS)
        )
    aclaude = toolstitch.enforce(
        anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0, timeout=10)
    )
    with pytest.raises(anthropic.APIError, match="get_weather"):
        async with aclaude.messages.stream(
            model="claude", max_tokens=100, messages=MESSAGES, tools=strict(WEATHER_TOOL)
        ) as astream:
            await astream.get_final_message()
    for opened in (client, whole, aclaude):
        await opened.close()  # in this test's event loop, not a later one's


def test_enforce_refuses_what_is_not_an_http_client_or_a_limit(server: RecordingServer) -> None:
    with pytest.raises(TypeError, match=r"enforce\(\) takes .*httpx"):
        toolstitch.enforce(object())
    with pytest.raises(TypeError):
        toolstitch.enforce(oai(server), max_nonsense=3)
    client = toolstitch.enforce(oai(server), max_held_bytes=64)
    with pytest.raises(openai.APIError):
        finished_calls(client, CHAT_TOOLS)
