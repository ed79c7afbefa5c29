"""The framework recipes of docs/frameworks.md, with the real packages: pydantic-ai,
LangChain (``langchain-openai``, ``langchain-anthropic``) and the OpenAI Agents SDK, each
driven against a local provider on 127.0.0.1 (tests/agent_server.py) that serves a real
recording of the model calling tools, then the answer.

For each: observe (``toolstitch.watch`` on the client the framework is given: the
assembled calls of every response), enforce (``toolstitch.enforce``: a valid call runs,
an invalid one never reaches the framework as finished, so its tool never runs) and
assemble (the framework's own stream pieces, where it exposes any)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import agents
import httpx2
import openai
import pytest
import toolstitch
from agent_server import ANSWER, routes
from http_server import RecordingServer
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from toolstitch.watch import WatchedResponse, watch

KEY = SecretStr("k")
RECORDED = [
    ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
    ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
]


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    with RecordingServer(routes()) as s:
        yield s


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def async_openai(server: RecordingServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0, timeout=10)


def calls_of(reports: list[WatchedResponse]) -> list[list[tuple[str, Any]]]:
    """Per response, the assembled calls with their arguments parsed."""
    import json

    return [
        [(c.name, json.loads(c.input)) for m in r.messages for c in m.tool_uses] for r in reports
    ]


# ------------------------------------------------------------ pydantic-ai


def pydantic_agent(client: openai.AsyncOpenAI, ran: list[str], *, strict: bool) -> Agent[None, str]:
    agent = Agent(OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client)))

    @agent.tool_plain
    def GetWeatherArgs(city: str, country: str, units: str) -> str:
        ran.append(f"weather {city}")
        return "12 C"

    if strict:
        # No `exchange`: pydantic-ai declares additionalProperties false, which the
        # recorded call breaks.
        @agent.tool_plain
        def get_stock_price(ticker: str) -> str:
            ran.append(f"stock {ticker}")
            return "100"
    else:

        @agent.tool_plain(name="get_stock_price")
        def stock(ticker: str, exchange: str) -> str:
            ran.append(f"stock {ticker}")
            return "100"

    return agent


@pytest.mark.anyio
async def test_pydantic_ai_observe_enforce_and_assemble(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    ran: list[str] = []
    client = toolstitch.enforce(watch(async_openai(server), reports.append))
    agent = pydantic_agent(client, ran, strict=False)
    assert (await agent.run("weather?")).output == ANSWER
    async with agent.run_stream("weather?") as result:
        assert await result.get_output() == ANSWER
    assert sorted(ran) == ["stock AAPL", "stock AAPL", "weather Edinburgh", "weather Edinburgh"]
    # Observed and assembled: every response's calls, the answers without any.
    assert calls_of(reports) == [RECORDED, [], RECORDED, []]
    assert all(r.complete for r in reports)
    await client.close()  # in this test's event loop, not a later one's


@pytest.mark.anyio
async def test_pydantic_ai_an_invalid_call_never_runs(server: RecordingServer) -> None:
    ran: list[str] = []
    client = toolstitch.enforce(async_openai(server))
    agent = pydantic_agent(client, ran, strict=True)
    with pytest.raises(ModelAPIError, match="get_stock_price"):
        await agent.run("weather?")
    with pytest.raises(ModelAPIError, match="get_stock_price"):
        async with agent.run_stream("weather?") as result:
            await result.get_output()
    assert ran == []
    await client.close()


@pytest.mark.anyio
async def test_twin_pydantic_ai_unguarded_gets_the_same_call(server: RecordingServer) -> None:
    # Without enforce the same call reaches pydantic-ai as finished (its own validation
    # then answers the model with the failure): the guard, not the recording, stopped it above.
    ran: list[str] = []
    client = async_openai(server)
    agent = pydantic_agent(client, ran, strict=True)
    result = await agent.run("weather?")
    parts = [p for m in result.all_messages() for p in m.parts]
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    assert [(c.tool_name, c.args_as_dict()) for c in calls] == RECORDED
    assert ran == ["weather Edinburgh"]
    await client.close()


# ------------------------------------------------------------ LangChain


@tool
def GetWeatherArgs(city: str, country: str, units: str) -> str:
    """The weather in a city."""
    return "12 C"


@tool
def get_stock_price(ticker: str, exchange: str) -> str:
    """A stock's price."""
    return "100"


@tool("get_stock_price")
def strict_stock(ticker: int) -> str:
    """A stock's price (a numeric ticker: the recorded call's string breaks it)."""
    return "100"


@tool
def get_weather(location: str) -> str:
    """The weather somewhere."""
    return "12 C"


@tool("get_weather")
def strict_weather(location: str, unit: str) -> str:
    """The weather somewhere, in a unit (required: the recorded call has none)."""
    return "12 C"


def test_langchain_openai_observe_enforce(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    http = toolstitch.enforce(watch(httpx2.Client(), reports.append))
    llm = ChatOpenAI(
        model="gpt-4o", base_url=f"{server.url}/v1", api_key=KEY, max_retries=0, http_client=http
    )
    message = llm.bind_tools([GetWeatherArgs, get_stock_price]).invoke("weather?")
    assert [(c["name"], c["args"]) for c in message.tool_calls] == RECORDED
    streamed = list(llm.bind_tools([GetWeatherArgs, get_stock_price]).stream("weather?"))
    assert len(streamed) > 10
    assert calls_of(reports) == [RECORDED, RECORDED]
    with pytest.raises(openai.APIStatusError, match="get_stock_price"):
        llm.bind_tools([GetWeatherArgs, strict_stock]).invoke("weather?")
    with pytest.raises(openai.APIError, match="get_stock_price"):
        for _ in llm.bind_tools([GetWeatherArgs, strict_stock]).stream("weather?"):
            pass


def test_langchain_anthropic_observe_enforce(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    llm = ChatAnthropic(
        model_name="claude-sonnet-4-5",
        base_url=server.url,
        api_key=KEY,
        max_retries=0,
        timeout=10,
        stop=None,
    )
    toolstitch.enforce(watch(llm._client, reports.append))
    message = llm.bind_tools([get_weather]).invoke("weather?")
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("get_weather", {"location": "Paris"})
    ]
    assert calls_of(reports) == [[("get_weather", {"location": "Paris"})]]
    import anthropic

    with pytest.raises(anthropic.APIStatusError, match="get_weather"):
        llm.bind_tools([strict_weather]).invoke("weather?")
    with pytest.raises(anthropic.APIError, match="get_weather"):
        for _ in llm.bind_tools([strict_weather]).stream("weather?"):
            pass


def test_langchain_chunks_assemble_through_tool_uses(server: RecordingServer) -> None:
    llm = ChatOpenAI(model="gpt-4o", base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    calls = toolstitch.ToolUses()
    for chunk in llm.bind_tools([GetWeatherArgs, get_stock_price]).stream("weather?"):
        assert isinstance(chunk, AIMessageChunk)
        for c in chunk.tool_call_chunks:
            calls.add(
                toolstitch.ToolUseChunk(
                    index=c["index"] or 0, id=c["id"], name=c["name"], input_json=c["args"]
                )
            )
    import json

    assert [(b.name, json.loads(b.input)) for b in calls.blocks()] == RECORDED


def test_langchain_chunks_fed_to_an_assembler_say_what_to_do(server: RecordingServer) -> None:
    llm = ChatOpenAI(model="gpt-4o", base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    chunks = list(llm.bind_tools([GetWeatherArgs]).stream("weather?"))
    assert isinstance(chunks[1], AIMessageChunk)
    advice = r"LangChain AIMessageChunk is not a provider's event.*watch or enforce"
    with pytest.raises(toolstitch.StreamDecodeError, match=advice):
        toolstitch.Assembler().feed(chunks[1])
    with pytest.raises(toolstitch.StreamDecodeError, match=advice):
        toolstitch.assemble(chunks)
    with pytest.raises(toolstitch.StreamDecodeError, match=advice):
        toolstitch.Assembler().feed_many(chunks)


def test_twin_an_sdk_object_is_still_an_event(server: RecordingServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="gpt-4o", messages=[], stream=True)
    (message,) = toolstitch.assemble(list(stream))
    assert [c.name for c in message.tool_uses] == [name for name, _ in RECORDED]


# ------------------------------------------------------------ OpenAI Agents SDK


def agents_agent(client: openai.AsyncOpenAI, ran: list[str], *, strict: bool) -> agents.Agent[Any]:
    @agents.function_tool
    def GetWeatherArgs(city: str, country: str, units: str) -> str:
        """The weather in a city."""
        ran.append(f"weather {city}")
        return "12 C"

    @agents.function_tool(name_override="get_stock_price")
    def stock(ticker: str, exchange: str) -> str:
        """A stock's price."""
        ran.append(f"stock {ticker}")
        return "100"

    @agents.function_tool(name_override="get_stock_price")
    def strict_stock(ticker: str) -> str:
        """A stock's price (no exchange: the recorded call's breaks the schema)."""
        ran.append(f"stock {ticker}")
        return "100"

    return agents.Agent(
        name="assistant",
        instructions="Answer with the tools.",
        tools=[GetWeatherArgs, strict_stock if strict else stock],
        model=agents.OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client),
    )


@pytest.fixture(scope="module", autouse=True)
def _no_tracing_export() -> None:
    # The Agents SDK exports traces to OpenAI by default: never from the tests.
    agents.set_tracing_disabled(True)


@pytest.mark.anyio
async def test_openai_agents_observe_enforce_and_assemble(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    ran: list[str] = []
    client = toolstitch.enforce(watch(async_openai(server), reports.append))
    agent = agents_agent(client, ran, strict=False)
    assert (await agents.Runner.run(agent, "weather?")).final_output == ANSWER
    streamed = agents.Runner.run_streamed(agent, "weather?")
    async for _ in streamed.stream_events():
        pass
    assert streamed.final_output == ANSWER
    assert sorted(ran) == ["stock AAPL", "stock AAPL", "weather Edinburgh", "weather Edinburgh"]
    assert calls_of(reports) == [RECORDED, [], RECORDED, []]
    await client.close()  # in this test's event loop, not a later one's


@pytest.mark.anyio
async def test_openai_agents_an_invalid_call_never_runs(server: RecordingServer) -> None:
    ran: list[str] = []
    client = toolstitch.enforce(async_openai(server))
    agent = agents_agent(client, ran, strict=True)
    with pytest.raises(openai.APIStatusError, match="get_stock_price"):
        await agents.Runner.run(agent, "weather?")
    streamed = agents.Runner.run_streamed(agent, "weather?")
    with pytest.raises(openai.APIError, match="get_stock_price"):
        async for _ in streamed.stream_events():
            pass
    assert ran == []
    await client.close()
