"""``toolstitch.watch``: a tee on the real ``openai`` and ``anthropic`` clients.

The clients talk to the real HTTP server of ``tests/http_server.py`` on 127.0.0.1,
which streams the recordings in pieces of 1 to 9 bytes. Each test runs the same calls
with and without the tee: what the SDK gives the application must be identical, and
what the tee reports must equal ``toolstitch.assemble`` of the same bytes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
import toolstitch
from http_server import Recording, RecordingServer
from toolstitch.watch import TeeTransport, WatchedResponse, watch

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
).encode()

ROUTES = {
    "/v1/chat/completions": Recording(OPENAI_CHAT),
    "/whole/v1/chat/completions": Recording(COMPLETION, "application/json"),
    "/v1/messages": Recording(ANTHROPIC),
}
MESSAGES: list[Any] = [{"role": "user", "content": "weather?"}]


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES) as s:
        yield s


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def openai_client(server: RecordingServer, prefix: str = "") -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{server.url}{prefix}/v1", api_key="sk-secret", max_retries=0, timeout=10
    )


def anthropic_client(server: RecordingServer, prefix: str = "") -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=f"{server.url}{prefix}", api_key="sk-ant-secret", max_retries=0, timeout=10
    )


def chat_chunks(client: openai.OpenAI) -> list[dict[str, Any]]:
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    return [chunk.model_dump() for chunk in stream]


def only(reports: list[WatchedResponse]) -> WatchedResponse:
    (report,) = reports
    return report


# ------------------------------------------------------------ sync


def test_openai_stream_is_identical_and_the_tee_gets_what_assemble_gives(
    server: RecordingServer,
) -> None:
    reports: list[WatchedResponse] = []
    plain = chat_chunks(openai_client(server))
    teed = chat_chunks(watch(openai_client(server), reports.append))
    assert teed == plain and len(plain) > 10
    report = only(reports)
    assert report.method == "POST" and report.status == 200
    assert report.url == f"{server.url}/v1/chat/completions"
    assert not report.cut and report.error is None and report.complete
    assert list(report.messages) == toolstitch.assemble(OPENAI_CHAT)
    assert [c.name for c in report.messages[0].tool_uses] == ["GetWeatherArgs", "get_stock_price"]


def test_a_whole_response_is_teed_too(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []

    def create(client: openai.OpenAI) -> dict[str, Any]:
        return client.chat.completions.create(model="gpt-4o", messages=MESSAGES).model_dump()

    plain = create(openai_client(server, "/whole"))
    assert create(watch(openai_client(server, "/whole"), reports.append)) == plain
    report = only(reports)
    assert list(report.messages) == toolstitch.assemble(COMPLETION)
    assert report.messages[0].tool_uses[0].input == '{"city":"Oslo"}' and report.complete


def test_anthropic_events_and_final_message_are_identical(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    plain_client, teed_client = (
        anthropic_client(server),
        watch(anthropic_client(server), reports.append),
    )

    def events(client: anthropic.Anthropic) -> list[dict[str, Any]]:
        stream = client.messages.create(
            model="claude", max_tokens=100, messages=MESSAGES, stream=True
        )
        return [event.model_dump() for event in stream]

    def final(client: anthropic.Anthropic) -> dict[str, Any]:
        with client.messages.stream(model="claude", max_tokens=100, messages=MESSAGES) as s:
            return s.get_final_message().model_dump()

    assert events(teed_client) == events(plain_client)
    assert final(teed_client) == final(plain_client)
    assert len(reports) == 2
    expected = toolstitch.assemble(ANTHROPIC)
    for report in reports:
        assert list(report.messages) == expected and report.complete


def test_an_abandoned_stream_is_reported_as_cut(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    client = watch(openai_client(server), reports.append)
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    iterator = iter(stream)
    next(iterator), next(iterator), next(iterator)
    stream.close()
    report = only(reports)
    assert report.cut and not report.complete
    (message,) = report.messages
    assert not message.complete


def test_a_callback_that_raises_never_breaks_the_stream(
    server: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(report: WatchedResponse) -> None:
        raise RuntimeError("callback bug")

    plain = chat_chunks(openai_client(server))
    with caplog.at_level(logging.ERROR, logger="toolstitch.watch"):
        assert chat_chunks(watch(openai_client(server), explode)) == plain
    assert "callback raised" in caplog.text and "callback bug" in caplog.text
    # The log names the URL, never the key.
    assert "sk-secret" not in caplog.text


def test_gzip_bodies_pass_through_encoded_and_are_read_decoded(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    plain = chat_chunks(openai_client(server, "/gzip"))
    assert chat_chunks(watch(openai_client(server, "/gzip"), reports.append)) == plain
    assert list(only(reports).messages) == toolstitch.assemble(OPENAI_CHAT)


def test_an_error_status_reaches_the_sdk_as_before_and_is_reported(
    server: RecordingServer,
) -> None:
    reports: list[WatchedResponse] = []
    for client in (
        openai_client(server, "/status/500"),
        watch(openai_client(server, "/status/500"), reports.append),
    ):
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    report = only(reports)
    assert report.status == 500 and report.error == "the provider answered HTTP 500"
    assert not report.complete


def test_a_transport_given_to_an_httpx2_client_tees_it(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    transport: Any = TeeTransport(httpx2.HTTPTransport(), reports.append)  # duck-typed
    with httpx2.Client(transport=transport) as http:
        body = http.post(f"{server.url}/v1/messages?key=secret", json={}).content
    assert body == ANTHROPIC
    report = only(reports)
    assert report.url == f"{server.url}/v1/messages"  # the query (a key, maybe) is dropped
    assert list(report.messages) == toolstitch.assemble(ANTHROPIC)


def test_watch_refuses_what_it_cannot_tee() -> None:
    with pytest.raises(TypeError, match="openai or anthropic client"):
        watch(object(), print)
    with pytest.raises(toolstitch.UnknownProviderError):
        watch(httpx2.Client(), print, provider="nope")  # type: ignore[arg-type]


# ------------------------------------------------------------ async


@pytest.mark.anyio
async def test_async_openai_with_an_async_callback(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []

    async def on_response(report: WatchedResponse) -> None:
        reports.append(report)

    async def chunks(client: openai.AsyncOpenAI) -> list[dict[str, Any]]:
        stream = await client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, stream=True
        )
        return [chunk.model_dump() async for chunk in stream]

    def make() -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=f"{server.url}/v1", api_key="sk-secret", max_retries=0, timeout=10
        )

    plain = await chunks(make())
    assert await chunks(watch(make(), on_response)) == plain
    report = only(reports)
    assert list(report.messages) == toolstitch.assemble(OPENAI_CHAT) and not report.cut


@pytest.mark.anyio
async def test_async_anthropic_abandoned_and_whole(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    client = watch(
        anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0, timeout=10),
        reports.append,
    )
    async with client.messages.stream(model="claude", max_tokens=9, messages=MESSAGES) as s:
        final = await s.get_final_message()
    assert final.content[1].type == "tool_use"
    stream = await client.messages.create(
        model="claude", max_tokens=9, messages=MESSAGES, stream=True
    )
    async for _event in stream:
        break
    await stream.close()
    whole, cut = reports
    assert list(whole.messages) == toolstitch.assemble(ANTHROPIC) and whole.complete
    assert cut.cut and not cut.complete
