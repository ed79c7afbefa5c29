"""``toolstitch.watch``: a tee on the real ``openai`` and ``anthropic`` clients.

The clients talk to the real HTTP server of ``tests/http_server.py`` on 127.0.0.1,
which streams the recordings in pieces of 1 to 9 bytes. Each test runs the same calls
with and without the tee: what the SDK gives the application must be identical, and
what the tee reports must equal ``toolstitch.assemble`` of the same bytes.
"""

from __future__ import annotations

import gc
import json
import logging
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import anyio
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


def test_a_report_says_when_which_response_and_which_model(server: RecordingServer) -> None:
    """Start, first byte and end on one clock; the response's id and model as its body
    names them; the dialect it was read as."""
    reports: list[WatchedResponse] = []
    before = time.time()
    chat_chunks(watch(openai_client(server), reports.append))
    client = watch(anthropic_client(server), reports.append)
    with client.messages.stream(model="claude", max_tokens=100, messages=MESSAGES) as s:
        s.get_final_message()
    watch(openai_client(server, "/whole"), reports.append).chat.completions.create(
        model="gpt-4o", messages=MESSAGES
    )
    after = time.time()
    chat, claude, whole = reports
    assert (chat.provider, chat.response_id, chat.model) == (
        "openai-chat",
        "chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63",
        "gpt-4o-2024-08-06",
    )
    assert (claude.provider, claude.response_id, claude.model) == (
        "anthropic",
        "msg_019Q1hrJbZG26Fb9BQhrkHEr",
        "claude-sonnet-4-20250514",
    )
    assert (whole.provider, whole.response_id, whole.model) == (
        "openai-chat",
        "chatcmpl-1",
        "gpt-4o",
    )
    for report in reports:
        assert report.first_byte_at is not None
        assert before <= report.started_at <= report.first_byte_at <= report.ended_at <= after
        assert report.time_to_first_byte == report.first_byte_at - report.started_at
        assert report.duration == report.ended_at - report.started_at > 0


def test_twin_a_report_without_a_readable_body_names_no_response(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    with pytest.raises(openai.InternalServerError):
        watch(openai_client(server, "/status/500"), reports.append).chat.completions.create(
            model="gpt-4o", messages=MESSAGES, stream=True
        )
    report = only(reports)
    assert (report.provider, report.response_id, report.model) == (None, None, None)
    assert report.started_at <= report.ended_at


def test_a_sync_client_refuses_an_async_callback_when_watched(server: RecordingServer) -> None:
    async def on_response(report: WatchedResponse) -> None:
        pass

    class Tracer:
        async def __call__(self, report: WatchedResponse) -> None:
            pass

    for callback in (on_response, Tracer()):
        for client in (openai_client(server), anthropic_client(server), httpx2.Client()):
            with pytest.raises(
                TypeError,
                match=r"coroutine function, but the (OpenAI|Anthropic|Client) client is synchronous",
            ):
                watch(client, callback)
            # Refused before anything changed: the client is as it was.
            http: Any = getattr(client, "_client", client)
            assert not isinstance(http._transport, TeeTransport)
    with pytest.raises(TypeError, match=r"'test_a_sync_client_refuses.*on_response'"):
        watch(openai_client(server), on_response)
    with pytest.raises(TypeError, match="a TeeTransport is synchronous"):
        TeeTransport(httpx2.HTTPTransport(), on_response)


def test_twin_a_plain_callback_returning_an_awaitable_is_closed_and_said(
    server: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Not a coroutine function, so watch() cannot tell; the awaitable it returns on a
    sync client is closed unawaited (no "never awaited" warning) and logged."""
    ran: list[WatchedResponse] = []

    async def later(report: WatchedResponse) -> None:
        ran.append(report)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        with caplog.at_level(logging.ERROR, logger="toolstitch.watch"):
            with watch(openai_client(server), lambda r: later(r)) as client:
                chat_chunks(client)
            gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert ran == [] and "returned an awaitable where nothing can await it" in caplog.text


def test_a_sync_stream_dropped_unread_is_reported_cut(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []
    client = watch(openai_client(server), reports.append)
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert reports == []
    del stream
    gc.collect()
    report = only(reports)
    assert report.cut and not report.complete and report.messages == ()
    assert report.first_byte_at is None and report.status == 200
    # The same with the anthropic client.
    events = watch(anthropic_client(server), reports.append).messages.create(
        model="claude", max_tokens=9, messages=MESSAGES, stream=True
    )
    del events
    gc.collect()
    assert len(reports) == 2 and reports[1].cut and reports[1].messages == ()


def test_twin_a_stream_read_or_closed_then_dropped_is_reported_once(
    server: RecordingServer,
) -> None:
    reports: list[WatchedResponse] = []
    client = watch(openai_client(server), reports.append)
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    list(stream)
    closed = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    closed.close()
    del stream, closed
    gc.collect()
    read, cut = reports
    assert not read.cut and read.complete
    assert cut.cut and cut.messages == ()


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

    # Closed here, not when freed: a freed AsyncOpenAI closes itself on whatever loop
    # runs then (a later test's), where its connections do not belong.
    async with make() as plain_client, watch(make(), on_response) as teed:
        plain = await chunks(plain_client)
        assert await chunks(teed) == plain
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
    await client.close()
    whole, cut = reports
    assert list(whole.messages) == toolstitch.assemble(ANTHROPIC) and whole.complete
    assert cut.cut and not cut.complete


@pytest.mark.anyio
async def test_an_async_stream_dropped_unread_is_reported_cut(server: RecordingServer) -> None:
    reports: list[WatchedResponse] = []

    async def on_response(report: WatchedResponse) -> None:
        reports.append(report)

    client = watch(
        openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0, timeout=10),
        on_response,
    )
    stream = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    del stream
    gc.collect()  # freed while the loop runs: the callback is scheduled on it
    for _ in range(10):
        if reports:
            break
        await anyio.sleep(0)
    await client.close()
    report = only(reports)
    assert report.cut and report.messages == () and not report.complete
