"""One call from any stream: ``assemble`` / ``aassemble`` / ``iter_events`` /
``aiter_events`` and the ``Assembler``'s ``feed_all``, ``afeed_all`` and context manager.

The network tests use the real ``openai``, ``anthropic``, ``httpx`` and ``httpx2``
clients against a real HTTP server on 127.0.0.1 (``tests/http_server.py``) that streams
the recordings of ``tests/fixtures/real`` in chunks of 1 to 9 bytes. Nothing is mocked.
Whether the raw bytes were read (rather than SDK event objects) is checked with
``CountingAssembler``, a subclass that counts what reaches the Rust class: raw reads
through ``feed_bytes`` and decoded events through ``feed``.
"""

from __future__ import annotations

import inspect
import json
import pydoc
import typing
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import toolstitch
from http_server import Recording, RecordingServer
from openai.types.chat import ChatCompletionChunk
from test_real_recordings import (
    check_anthropic,
    check_bedrock,
    check_openai_chat,
    check_responses,
    check_vertex_four,
    vcr_bodies,
)
from toolstitch import (
    AssembledMessage,
    Assembler,
    FramingError,
    LiveEvent,
    ProviderError,
    StreamConsumedError,
    StreamDecodeError,
    ToolCallStarted,
    ToolInputDelta,
    ToolstitchError,
    UnknownProviderError,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "real"

OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
RESPONSES = vcr_bodies(REAL / "openai_responses-function-call.vcr.yaml")[0]
BEDROCK = vcr_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")[0]
# Gemini's streamGenerateContent with alt=sse: one JSON response per SSE event.
GEMINI_SSE = b"".join(
    b"data: " + line + b"\r\n\r\n"
    for line in (REAL / "google_vertex-stream-function-call-args-4-calls.jsonl")
    .read_bytes()
    .splitlines()
    if line.strip()
)

# The chat recording with the JSON of its third event broken.
_third = OPENAI_CHAT.index(
    b"data: {", OPENAI_CHAT.index(b"data: {", OPENAI_CHAT.index(b"data: {") + 1) + 1
)
BROKEN_CHAT = OPENAI_CHAT[:_third] + b"data: {oops" + OPENAI_CHAT[_third + len(b"data: {") :]
# The Anthropic recording cut inside the JSON of an event.
CUT_ANTHROPIC = ANTHROPIC[: ANTHROPIC.index(b'"partial_json"') + 5]
# The Anthropic recording with an in-stream error after its first text delta.
ERROR_ANTHROPIC = (
    ANTHROPIC[: ANTHROPIC.index(b"event: content_block_stop")]
    + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
)
OVERLOADED = json.dumps(
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
).encode()

CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = "/v1/messages"
BEDROCK_PATH = "/bedrock/model/amazon.nova-micro-v1:0/converse-stream"
GEMINI_PATH = "/gemini/v1beta/models/gemini-3-flash-preview:streamGenerateContent"

ROUTES = {
    CHAT_PATH: Recording(OPENAI_CHAT),
    "/v1/responses": Recording(RESPONSES),
    MESSAGES_PATH: Recording(ANTHROPIC),
    "/terminated/v1/messages": Recording(ANTHROPIC + b"\n\n"),
    BEDROCK_PATH: Recording(BEDROCK, "application/vnd.amazon.eventstream"),
    GEMINI_PATH: Recording(GEMINI_SSE),
    "/broken/v1/chat/completions": Recording(BROKEN_CHAT),
    "/cut/v1/messages": Recording(CUT_ANTHROPIC),
    "/error/v1/messages": Recording(ERROR_ANTHROPIC),
    "/overloaded": Recording(OVERLOADED, "application/json"),
    "/huge-error": Recording(b"<html>" + b"x" * 50_000, "text/html"),
}

# Each recording served over HTTP, and what it must assemble to (test_real_recordings).
CASES = [
    pytest.param(CHAT_PATH, check_openai_chat, id="openai-chat"),
    pytest.param("/v1/responses", check_responses, id="openai-responses"),
    pytest.param(MESSAGES_PATH, check_anthropic, id="anthropic"),
    pytest.param(BEDROCK_PATH, check_bedrock, id="bedrock"),
    pytest.param(GEMINI_PATH, check_vertex_four, id="gemini"),
]

CHAT_REQUEST: dict[str, Any] = {
    "model": "gpt-4o-2024-08-06",
    "messages": [{"role": "user", "content": "What's the weather in Edinburgh?"}],
    "stream": True,
}
MESSAGES_REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-20250514",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
}

# A stream of 7.7 KB sent in pieces of at most 9 bytes arrives over far more reads
# than this; a client that buffered the whole body would give one or two.
MANY_READS = 100


class CountingAssembler(Assembler):
    """Counts what reaches the Rust class: raw reads (``feed_bytes``) and decoded events
    (``feed``, which SDK event objects take)."""

    reads: int
    events: int

    def __init__(self, provider: toolstitch.Provider = "auto", **limits: Any) -> None:
        self.reads = 0
        self.events = 0

    def feed_bytes(self, data: bytes | bytearray | memoryview) -> Any:
        self.reads += 1
        return super().feed_bytes(data)

    def feed(self, event: object, *, event_type: str | None = None) -> Any:
        self.events += 1
        return super().feed(event, event_type=event_type)


def only(messages: list[AssembledMessage]) -> AssembledMessage:
    (message,) = messages
    return message


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES) as s:
        yield s


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def openai_client(server: RecordingServer, prefix: str = "", **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{server.url}{prefix}/v1", api_key="test", max_retries=0, timeout=10, **kwargs
    )


def anthropic_client(server: RecordingServer, prefix: str = "") -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=f"{server.url}{prefix}", api_key="test", max_retries=0, timeout=10
    )


def async_openai_client(
    server: RecordingServer, prefix: str = "", **kwargs: Any
) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{server.url}{prefix}/v1", api_key="test", max_retries=0, timeout=10, **kwargs
    )


def async_anthropic_client(server: RecordingServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=server.url, api_key="test", max_retries=0, timeout=10)


# ------------------------------------------------------------ the Assembler subclass


def test_assembler_is_a_subclass_of_the_rust_class_and_old_imports_still_work() -> None:
    from toolstitch import _toolstitch
    from toolstitch.assemble import Assembler as FromAssembleModule

    assert FromAssembleModule is Assembler is toolstitch.Assembler
    assert issubclass(Assembler, _toolstitch.Assembler) and Assembler is not _toolstitch.Assembler
    asm = Assembler("anthropic")
    assert isinstance(asm, _toolstitch.Assembler) and asm.dialect == "anthropic" and asm.live
    # The package's `assemble` is the function; the module keeps its classes.
    assert callable(toolstitch.assemble) and inspect.isfunction(toolstitch.assemble)


def test_signature_shows_the_real_defaults() -> None:
    from toolstitch import _toolstitch

    params = inspect.signature(Assembler).parameters
    assert params["provider"].default == "auto"
    assert params["live"].default is True and params["live"].kind is inspect.Parameter.KEYWORD_ONLY
    limits = {name: p.default for name, p in params.items() if name.startswith("max_")}
    # max_output_tokens is the request's own limit, not one of the stream's: no default.
    assert limits.pop("max_output_tokens") is None
    assert limits == _toolstitch._ASSEMBLER_DEFAULTS
    assert limits == {
        "max_calls": 4096,
        "max_input_bytes": 8 * 1024 * 1024,
        "max_total_bytes": 64 * 1024 * 1024,
        "max_event_bytes": 16 * 1024 * 1024,
        "max_choices": 128,
        "max_line_bytes": 16 * 1024 * 1024,
    }
    # split_concatenated is an option, not a limit (Q40's opt-in), passed on the same way.
    assert params["split_concatenated"].default is False
    assert set(toolstitch.AssemblerLimits.__annotations__) == {
        *limits,
        "max_output_tokens",
        "split_concatenated",
    }


def test_help_shows_the_signature_and_says_what_it_does() -> None:
    text = pydoc.render_doc(Assembler, renderer=pydoc.plaintext)  # type: ignore[attr-defined]
    header = text.splitlines()[3]
    assert header.strip(" |").startswith("Assembler(provider")
    assert "provider: 'Provider' = 'auto'" in header
    assert "live: \"bool | Literal['coalesced']\" = True" in header
    assert "max_calls: 'int' = 4096" in header and "max_line_bytes: 'int' = 16777216" in header
    assert "..." not in header
    doc = inspect.getdoc(Assembler) or ""
    assert "feed_all" in doc and "complete" in doc and "LimitError" in doc
    assert ".md" not in doc and "docs/" not in doc


def test_provider_literal_names_exactly_the_dialects_rust_accepts() -> None:
    names = set(typing.get_args(toolstitch.Provider))
    for name in names:
        Assembler(name)
    with pytest.raises(UnknownProviderError) as info:
        Assembler("openai")  # type: ignore[arg-type]
    listed = set(
        str(info.value).split(": expected one of ", 1)[1].replace(" or ", ", ").split(", ")
    )
    assert {n.strip('"') for n in listed} == names


def test_limit_keywords_reach_the_rust_class() -> None:
    with pytest.raises(toolstitch.LimitError, match="max_input_bytes"):
        toolstitch.assemble(OPENAI_CHAT, max_input_bytes=10)
    with pytest.raises(toolstitch.LimitError):
        Assembler(max_line_bytes=64).feed_all(OPENAI_CHAT)


def test_context_manager_closes_on_exit() -> None:
    with Assembler() as asm:
        asm.feed_bytes(OPENAI_CHAT)
        assert not asm.closed
    assert asm.closed
    check_openai_chat(asm.message())


def test_context_manager_raises_what_closing_finds_on_a_normal_exit() -> None:
    with pytest.raises(FramingError, match="cut short"), Assembler() as asm:
        asm.feed_bytes(CUT_ANTHROPIC)
    assert asm.closed


def test_context_manager_never_masks_the_exception_that_ended_the_block() -> None:
    class Boom(Exception):
        pass

    # Closing this assembler raises FramingError (the bytes end inside an event); the
    # exception that ended the block is still the one raised.
    with pytest.raises(Boom) as info, Assembler("anthropic") as asm:
        asm.feed_bytes(CUT_ANTHROPIC)
        raise Boom
    assert asm.closed
    assert not isinstance(info.value.__context__, ToolstitchError)
    assert not asm.message().complete


def test_feed_all_sends_bytes_to_feed_bytes_and_the_rest_to_feed() -> None:
    lines = [line[len("data: ") :] for line in OPENAI_CHAT.decode().split("\n\n") if line]
    lines = [line for line in lines if line != "[DONE]"]
    dicts = [json.loads(line) for line in lines]
    objects = [ChatCompletionChunk.model_validate(d) for d in dicts]
    chunks = [OPENAI_CHAT[i : i + 7] for i in range(0, len(OPENAI_CHAT), 7)]
    for source, reads, events in [
        (OPENAI_CHAT, 1, 0),
        (bytearray(OPENAI_CHAT), 1, 0),
        (memoryview(OPENAI_CHAT), 1, 0),
        (chunks, len(chunks), 0),
        (iter(chunks), len(chunks), 0),
        ([memoryview(c) for c in chunks], len(chunks), 0),
        (lines, 0, len(lines)),
        (dicts, 0, len(dicts)),
        (objects, 0, len(objects)),
        ((line.encode() + b"\n" for line in lines), len(lines), 0),
    ]:
        asm = CountingAssembler()
        check_openai_chat(only(asm.feed_all(source)))
        assert (asm.reads, asm.events) == (reads, events)
        assert asm.closed


@pytest.mark.anyio
async def test_afeed_all_takes_async_and_plain_iterables() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(ANTHROPIC), 5):
            yield ANTHROPIC[i : i + 5]

    async def events() -> AsyncIterator[str]:
        for block in ANTHROPIC.decode().split("\n\n"):
            data = [line for line in block.splitlines() if line.startswith("data: ")]
            if data:
                yield data[0][len("data: ") :]

    asm = CountingAssembler()
    check_anthropic(only(await asm.afeed_all(chunks())))
    assert asm.reads == -(-len(ANTHROPIC) // 5) and asm.events == 0 and asm.closed
    asm = CountingAssembler()
    check_anthropic(only(await asm.afeed_all(events())))
    assert asm.reads == 0 and asm.events > 5
    check_anthropic(only(await Assembler().afeed_all([ANTHROPIC[:100], ANTHROPIC[100:]])))
    check_anthropic(only(await toolstitch.aassemble(ANTHROPIC, "anthropic")))


def test_sources_that_are_not_streams_are_type_errors() -> None:
    with pytest.raises(TypeError, match="ambiguous"):
        toolstitch.assemble(OPENAI_CHAT.decode())
    with pytest.raises(TypeError, match="one event"):
        toolstitch.assemble({"choices": []})
    with pytest.raises(TypeError, match="not int"):
        toolstitch.assemble(42)
    with pytest.raises(TypeError, match="feed"):
        toolstitch.assemble([42])

    async def agen() -> AsyncIterator[bytes]:
        yield OPENAI_CHAT

    source = agen()
    with pytest.raises(TypeError, match="aassemble"):
        toolstitch.assemble(source)
    with pytest.raises(TypeError, match="aassemble"):
        toolstitch.iter_events(source)


def test_assemble_of_bytes_equals_feeding_by_hand() -> None:
    asm = Assembler()
    asm.feed_bytes(OPENAI_CHAT)
    asm.close()
    assert toolstitch.assemble(OPENAI_CHAT) == asm.messages()
    assert toolstitch.assemble(OPENAI_CHAT, "openai-chat") == asm.messages()


def test_a_malformed_stream_raises_the_named_error() -> None:
    with pytest.raises(StreamDecodeError, match="event #3"):
        toolstitch.assemble(BROKEN_CHAT)
    with pytest.raises(FramingError, match="cut short"):
        toolstitch.assemble(CUT_ANTHROPIC)
    with pytest.raises(ProviderError, match="Overloaded") as info:
        toolstitch.assemble([ERROR_ANTHROPIC])
    assert info.value.error_type == "overloaded_error"


# ------------------------------------------------------------ iter_events without HTTP


def rebuild(events: list[LiveEvent]) -> list[tuple[str, str]]:
    """(name, input) of each call, from the live events alone."""
    names: dict[tuple[int, int], str] = {}
    inputs: dict[tuple[int, int], str] = {}
    for e in events:
        if isinstance(e, ToolCallStarted):
            names[e.choice, e.index] = e.name
        elif isinstance(e, ToolInputDelta):
            inputs[e.choice, e.index] = inputs.get((e.choice, e.index), "") + e.fragment
    return [(names[k], inputs.get(k, "")) for k in sorted(names)]


def test_iter_events_yields_live_events_then_the_messages() -> None:
    chunks = [OPENAI_CHAT[i : i + 11] for i in range(0, len(OPENAI_CHAT), 11)]
    stream = toolstitch.iter_events(chunks)
    assert not stream.finished and stream.messages()[0].tool_uses == ()
    events = list(stream)
    assert stream.finished and stream.assembler.closed
    message = stream.message()
    check_openai_chat(message)
    assert stream.messages() == [message]
    assert rebuild(events) == [(b.name, b.input) for b in message.tool_uses]
    assert isinstance(events[-1], toolstitch.MessageDone) and events[-1].complete


def test_iter_events_partial_calls_while_rendering() -> None:
    chunks = [ANTHROPIC[i : i + 3] for i in range(0, len(ANTHROPIC), 3)]
    seen: list[Any] = []
    with toolstitch.iter_events(chunks, "anthropic") as stream:
        for event in stream:
            if isinstance(event, ToolInputDelta):
                seen.append(stream.assembler.partial_calls()[event.choice, event.index])
    assert seen[-1] == {"location": "Paris"}
    check_anthropic(stream.message())


def test_iter_events_error_is_raised_from_the_loop() -> None:
    events: list[LiveEvent] = []
    with pytest.raises(StreamDecodeError), toolstitch.iter_events([BROKEN_CHAT]) as stream:
        events.extend(stream)
    assert not stream.finished


# ------------------------------------------------------------ httpx and httpx2


@contextmanager
def post(
    server: RecordingServer, path: str, client: type[httpx.Client] = httpx.Client
) -> Iterator[httpx.Response]:
    """A streaming POST with a real client (``httpx`` unless told otherwise)."""
    with client(timeout=10) as c, c.stream("POST", server.url + path, json={}) as response:
        yield response


@asynccontextmanager
async def apost(
    server: RecordingServer, path: str, client: type[httpx.AsyncClient] = httpx.AsyncClient
) -> AsyncIterator[httpx.Response]:
    async with (
        client(timeout=10) as c,
        c.stream("POST", server.url + path, json={}) as response,
    ):
        yield response


@pytest.mark.parametrize(("path", "check"), CASES)
def test_httpx_response(server: RecordingServer, path: str, check: Any) -> None:
    with post(server, path) as response:
        asm = CountingAssembler()
        check(only(asm.feed_all(response)))
        assert response.is_closed
    assert asm.events == 0 and asm.reads > MANY_READS // 4
    with post(server, path) as response:
        check(only(toolstitch.assemble(response)))
        assert response.is_closed


def test_many_reads_of_a_few_bytes(server: RecordingServer) -> None:
    with post(server, CHAT_PATH) as response:
        asm = CountingAssembler()
        check_openai_chat(only(asm.feed_all(response)))
    assert asm.reads > MANY_READS


def test_httpx2_response(server: RecordingServer) -> None:
    with post(server, MESSAGES_PATH, httpx2.Client) as response:  # type: ignore[arg-type]
        assert isinstance(response, httpx2.Response)
        asm = CountingAssembler()
        check_anthropic(only(asm.feed_all(response)))
        assert response.is_closed
    assert asm.events == 0 and asm.reads > MANY_READS


def test_gzip_content_encoding_is_undone(server: RecordingServer) -> None:
    with post(server, "/gzip" + CHAT_PATH) as response:
        assert response.headers["content-encoding"] == "gzip"
        check_openai_chat(only(toolstitch.assemble(response)))
        assert response.is_closed


def test_a_response_already_read_into_memory_is_used(server: RecordingServer) -> None:
    with httpx.Client(timeout=10) as client:
        response = client.post(server.url + MESSAGES_PATH)  # not streamed: read whole
        assert response.is_stream_consumed
        check_anthropic(only(toolstitch.assemble(response)))


def test_a_response_already_streamed_is_refused(server: RecordingServer) -> None:
    with post(server, MESSAGES_PATH) as response:
        next(response.iter_bytes())
        with pytest.raises(StreamConsumedError, match="already read"):
            toolstitch.assemble(response)
        assert response.is_closed


@pytest.mark.parametrize(
    ("path", "error", "match"),
    [
        ("/broken/v1/chat/completions", StreamDecodeError, "event #3"),
        ("/cut/v1/messages", FramingError, "cut short"),
        ("/error/v1/messages", ProviderError, "Overloaded"),
        ("/status/529/overloaded", ProviderError, "HTTP 529.*overloaded_error"),
        ("/status/404/nothing-here", ProviderError, "HTTP 404.*no recording"),
    ],
)
def test_httpx_errors_are_named_and_the_response_is_closed(
    server: RecordingServer, path: str, error: type[Exception], match: str
) -> None:
    with post(server, path) as response:
        with pytest.raises(error, match=match):
            toolstitch.assemble(response)
        assert response.is_closed
    with post(server, path) as response:
        with pytest.raises(error, match=match), toolstitch.iter_events(response) as stream:
            for _ in stream:
                pass
        assert response.is_closed and not stream.finished


def test_http_status_error_reads_only_the_start_of_the_body(server: RecordingServer) -> None:
    with post(server, "/status/502/huge-error") as response:
        with pytest.raises(ProviderError, match="HTTP 502 Bad Gateway: <html>xxx") as info:
            toolstitch.assemble(response)
        assert response.is_closed
    assert len(str(info.value)) < 4200


@pytest.mark.anyio
async def test_async_http_status_error_reads_only_the_start_of_the_body(
    server: RecordingServer,
) -> None:
    async with apost(server, "/status/502/huge-error") as response:
        with pytest.raises(ProviderError, match="HTTP 502") as info:
            await toolstitch.aassemble(response)
        assert response.is_closed
    assert len(str(info.value)) < 4200


def test_http_status_error_carries_the_status(server: RecordingServer) -> None:
    with (
        post(server, "/status/529/overloaded") as response,
        pytest.raises(ProviderError) as info,
    ):
        toolstitch.assemble(response)
    assert info.value.error_type == "HTTP 529"


def test_iter_events_over_httpx(server: RecordingServer) -> None:
    with post(server, CHAT_PATH) as response:
        with toolstitch.iter_events(response) as stream:
            events = list(stream)
        assert response.is_closed and stream.finished
    check_openai_chat(stream.message())
    assert rebuild(events) == [(b.name, b.input) for b in stream.message().tool_uses]


def test_iter_events_stopped_early_closes_the_response(server: RecordingServer) -> None:
    with post(server, CHAT_PATH) as response:
        with toolstitch.iter_events(response) as stream:
            for event in stream:
                if isinstance(event, ToolCallStarted):
                    break
        assert response.is_closed
        assert not stream.finished
        assert not stream.message().complete
        stream.close()  # idempotent


def test_sync_and_async_responses_are_not_mixed(server: RecordingServer) -> None:
    with post(server, CHAT_PATH) as response:
        with pytest.raises(TypeError, match="block the event loop"):
            toolstitch.aiter_events(response)
        assert not response.is_stream_consumed


@pytest.mark.anyio
async def test_async_response_is_refused_by_the_sync_functions(server: RecordingServer) -> None:
    async with apost(server, CHAT_PATH) as response:
        with pytest.raises(TypeError, match="aassemble"):
            toolstitch.assemble(response)
        check_openai_chat(only(await toolstitch.aassemble(response)))


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "check"), CASES)
async def test_httpx_async_response(server: RecordingServer, path: str, check: Any) -> None:
    async with apost(server, path) as response:
        asm = CountingAssembler()
        check(only(await asm.afeed_all(response)))
        assert response.is_closed
    assert asm.events == 0 and asm.reads > MANY_READS // 4
    async with apost(server, path) as response:
        check(only(await toolstitch.aassemble(response)))
        assert response.is_closed


@pytest.mark.anyio
async def test_httpx2_async_response_with_gzip(server: RecordingServer) -> None:
    async with apost(server, "/gzip" + MESSAGES_PATH, httpx2.AsyncClient) as response:  # type: ignore[arg-type]
        assert isinstance(response, httpx2.Response)
        assert response.headers["content-encoding"] == "gzip"
        check_anthropic(only(await toolstitch.aassemble(response)))
        assert response.is_closed


@pytest.mark.anyio
async def test_aiter_events_over_httpx(server: RecordingServer) -> None:
    async with apost(server, MESSAGES_PATH) as response:
        async with toolstitch.aiter_events(response) as stream:
            events = [e async for e in stream]
        assert response.is_closed and stream.finished
    check_anthropic(stream.message())
    assert rebuild(events) == [(b.name, b.input) for b in stream.message().tool_uses]
    async with apost(server, MESSAGES_PATH) as response:
        async with toolstitch.aiter_events(response) as stream:
            async for event in stream:
                if isinstance(event, ToolCallStarted):
                    break
        assert response.is_closed and not stream.finished
        assert not stream.message().complete


@pytest.mark.anyio
async def test_async_errors_are_named_and_the_response_is_closed(server: RecordingServer) -> None:
    async with apost(server, "/cut/v1/messages") as response:
        with pytest.raises(FramingError, match="cut short"):
            await toolstitch.aassemble(response)
        assert response.is_closed
    async with apost(server, "/status/529/overloaded") as response:
        with pytest.raises(ProviderError, match="HTTP 529"):
            await toolstitch.aassemble(response)
        assert response.is_closed
    async with apost(server, "/error/v1/messages") as response:
        with pytest.raises(ProviderError, match="Overloaded"):
            async with toolstitch.aiter_events(response) as stream:
                async for _ in stream:
                    pass
        assert response.is_closed


# ------------------------------------------------------------ the openai SDK


def test_openai_stream_is_read_as_bytes(server: RecordingServer) -> None:
    with openai_client(server) as client:
        stream = client.chat.completions.create(**CHAT_REQUEST)
        # What the installed SDK hands out: an httpx2 response under its Stream.
        assert isinstance(stream, openai.Stream)
        assert isinstance(stream.response, httpx2.Response)
        asm = CountingAssembler()
        check_openai_chat(only(asm.feed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS
        assert stream.response.is_closed
        check_openai_chat(only(toolstitch.assemble(client.chat.completions.create(**CHAT_REQUEST))))
    assert server.requests[-1].json["stream"] is True


def test_openai_responses_stream(server: RecordingServer) -> None:
    with openai_client(server) as client:
        stream = client.responses.create(model="gpt-4o-2024-08-06", input="capital?", stream=True)
        asm = CountingAssembler()
        check_responses(only(asm.feed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS and stream.response.is_closed


def test_openai_with_streaming_response(server: RecordingServer) -> None:
    with (
        openai_client(server) as client,
        client.chat.completions.with_streaming_response.create(**CHAT_REQUEST) as raw,
    ):
        assert isinstance(raw.http_response, httpx2.Response)
        asm = CountingAssembler()
        check_openai_chat(only(asm.feed_all(raw)))
        assert asm.events == 0 and asm.reads > MANY_READS and raw.is_closed


def test_openai_with_raw_response(server: RecordingServer) -> None:
    with openai_client(server) as client:
        raw = client.chat.completions.with_raw_response.create(**CHAT_REQUEST)
        check_openai_chat(only(toolstitch.assemble(raw)))
        assert raw.http_response.is_closed


def test_openai_with_a_plain_httpx_client(server: RecordingServer) -> None:
    with httpx.Client(timeout=10) as http, openai_client(server, http_client=http) as client:
        stream = client.chat.completions.create(**CHAT_REQUEST)
        assert isinstance(stream.response, httpx.Response)
        asm = CountingAssembler()
        check_openai_chat(only(asm.feed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS and stream.response.is_closed


def test_openai_sdk_events_are_the_fallback(server: RecordingServer) -> None:
    with openai_client(server) as client:
        stream = client.chat.completions.create(**CHAT_REQUEST)
        asm = CountingAssembler()
        check_openai_chat(only(asm.feed_all(iter(stream))))  # the SDK's own event objects
        assert asm.reads == 0 and asm.events == OPENAI_CHAT.count(b"data: {")


def test_openai_helper_streams(server: RecordingServer) -> None:
    with openai_client(server) as client:
        # chat.completions.stream() yields derived events: refused, with the way out.
        with client.chat.completions.stream(
            model=CHAT_REQUEST["model"], messages=CHAT_REQUEST["messages"]
        ) as helper:
            with pytest.raises(TypeError, match=r"create\(\.\.\., stream=True\)"):
                toolstitch.assemble(helper)
            with pytest.raises(TypeError, match="derived events"):
                toolstitch.iter_events(helper, "openai-chat")
        # responses.stream() yields the wire events (with snapshots): fed as SDK objects.
        with client.responses.stream(model="gpt-4o-2024-08-06", input="capital?") as events:
            asm = CountingAssembler()
            check_responses(only(asm.feed_all(events)))
            assert asm.reads == 0 and asm.events > 10


@pytest.mark.anyio
async def test_openai_async_chat_helper_is_refused(server: RecordingServer) -> None:
    async with (
        async_openai_client(server) as client,
        client.chat.completions.stream(
            model=CHAT_REQUEST["model"], messages=CHAT_REQUEST["messages"]
        ) as helper,
    ):
        with pytest.raises(TypeError, match="derived events"):
            await toolstitch.aassemble(helper)


def test_openai_stream_already_iterated_is_refused(server: RecordingServer) -> None:
    with openai_client(server) as client:
        stream = client.chat.completions.create(**CHAT_REQUEST)
        next(stream)
        with pytest.raises(StreamConsumedError, match=r"Stream \(its httpx2 response\)"):
            toolstitch.assemble(stream)
        assert stream.response.is_closed


def test_openai_malformed_stream_closes_the_response(server: RecordingServer) -> None:
    with openai_client(server, "/broken") as client:
        stream = client.chat.completions.create(**CHAT_REQUEST)
        with pytest.raises(StreamDecodeError, match="event #3"):
            toolstitch.assemble(stream)
        assert stream.response.is_closed


def test_iter_events_over_an_openai_stream(server: RecordingServer) -> None:
    with openai_client(server) as client:
        stream = client.chat.completions.create(**CHAT_REQUEST)
        with toolstitch.iter_events(stream, "openai-chat") as live:
            events = list(live)
        assert stream.response.is_closed
    check_openai_chat(live.message())
    assert rebuild(events) == [(b.name, b.input) for b in live.message().tool_uses]


@pytest.mark.anyio
async def test_openai_async_stream_is_read_as_bytes(server: RecordingServer) -> None:
    async with async_openai_client(server) as client:
        stream = await client.chat.completions.create(**CHAT_REQUEST)
        assert isinstance(stream, openai.AsyncStream)
        assert isinstance(stream.response, httpx2.Response)
        asm = CountingAssembler()
        check_openai_chat(only(await asm.afeed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS and stream.response.is_closed
        stream = await client.responses.create(model="gpt-4o", input="capital?", stream=True)
        check_responses(only(await toolstitch.aassemble(stream)))
        assert stream.response.is_closed


@pytest.mark.anyio
async def test_openai_async_with_streaming_response(server: RecordingServer) -> None:
    async with (
        async_openai_client(server) as client,
        client.chat.completions.with_streaming_response.create(**CHAT_REQUEST) as raw,
    ):
        asm = CountingAssembler()
        check_openai_chat(only(await asm.afeed_all(raw)))
        assert asm.events == 0 and asm.reads > MANY_READS and raw.is_closed


@pytest.mark.anyio
async def test_openai_async_with_a_plain_httpx_client(server: RecordingServer) -> None:
    async with (
        httpx.AsyncClient(timeout=10) as http,
        async_openai_client(server, http_client=http) as client,
    ):
        stream = await client.chat.completions.create(**CHAT_REQUEST)
        assert isinstance(stream.response, httpx.Response)
        async with toolstitch.aiter_events(stream) as live:
            events = [e async for e in live]
        check_openai_chat(live.message())
        assert rebuild(events) == [(b.name, b.input) for b in live.message().tool_uses]
        assert stream.response.is_closed


@pytest.mark.anyio
async def test_openai_async_sdk_events_and_consumed_stream(server: RecordingServer) -> None:
    async with async_openai_client(server) as client:
        stream = await client.chat.completions.create(**CHAT_REQUEST)
        asm = CountingAssembler()
        check_openai_chat(only(await asm.afeed_all(stream.__aiter__())))
        assert asm.reads == 0 and asm.events == OPENAI_CHAT.count(b"data: {")
        stream = await client.chat.completions.create(**CHAT_REQUEST)
        await stream.__anext__()
        with pytest.raises(StreamConsumedError):
            await toolstitch.aassemble(stream)
        assert stream.response.is_closed


@pytest.mark.anyio
async def test_openai_async_malformed_stream_closes_the_response(server: RecordingServer) -> None:
    async with async_openai_client(server, "/broken") as client:
        stream = await client.chat.completions.create(**CHAT_REQUEST)
        with pytest.raises(StreamDecodeError):
            await toolstitch.aassemble(stream)
        assert stream.response.is_closed


# ------------------------------------------------------------ the anthropic SDK


def test_anthropic_stream_is_read_as_bytes(server: RecordingServer) -> None:
    with anthropic_client(server) as client:
        stream = client.messages.create(**MESSAGES_REQUEST, stream=True)
        assert isinstance(stream, anthropic.Stream)
        assert isinstance(stream.response, httpx2.Response)
        asm = CountingAssembler()
        check_anthropic(only(asm.feed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS and stream.response.is_closed


def test_anthropic_with_streaming_response(server: RecordingServer) -> None:
    with (
        anthropic_client(server) as client,
        client.messages.with_streaming_response.create(**MESSAGES_REQUEST, stream=True) as raw,
    ):
        asm = CountingAssembler()
        check_anthropic(only(asm.feed_all(raw)))
        assert asm.events == 0 and asm.reads > MANY_READS and raw.is_closed


def test_anthropic_message_stream_helper(server: RecordingServer) -> None:
    with anthropic_client(server) as client, client.messages.stream(**MESSAGES_REQUEST) as stream:
        asm = CountingAssembler()
        check_anthropic(only(asm.feed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS and stream.response.is_closed


def test_anthropic_sdk_events_are_the_fallback(server: RecordingServer) -> None:
    # The recording ends its last event (`message_stop`) without the blank line that
    # dispatches it. toolstitch's framing still takes it at the end of the bytes; the
    # SDK's decoder drops it, so assembled from the SDK's events the same stream never
    # ends: not complete (fail closed). With the blank line, both agree.
    with anthropic_client(server) as client:
        stream = client.messages.create(**MESSAGES_REQUEST, stream=True)
        asm = CountingAssembler()
        message = only(asm.feed_all(iter(stream)))
        assert asm.reads == 0 and message.finish_reason == "tool_use"
        assert not message.complete
        check_anthropic(
            only(toolstitch.assemble(client.messages.create(**MESSAGES_REQUEST, stream=True)))
        )
    with anthropic_client(server, "/terminated") as client:
        stream = client.messages.create(**MESSAGES_REQUEST, stream=True)
        asm = CountingAssembler()
        check_anthropic(only(asm.feed_all(iter(stream))))
        # The SDK drops `ping`; every other event arrives as an SDK object.
        assert asm.reads == 0
        assert asm.events == ANTHROPIC.count(b"data: {") - ANTHROPIC.count(b'"ping"')


def test_anthropic_errors(server: RecordingServer) -> None:
    with anthropic_client(server, "/error") as client:
        stream = client.messages.create(**MESSAGES_REQUEST, stream=True)
        with pytest.raises(ProviderError, match="Overloaded") as info:
            toolstitch.assemble(stream)
        assert info.value.error_type == "overloaded_error" and stream.response.is_closed
    with anthropic_client(server, "/cut") as client:
        stream = client.messages.create(**MESSAGES_REQUEST, stream=True)
        with pytest.raises(FramingError):
            toolstitch.assemble(stream, "anthropic")
        assert stream.response.is_closed
    with anthropic_client(server) as client:
        stream = client.messages.create(**MESSAGES_REQUEST, stream=True)
        next(stream)
        with pytest.raises(StreamConsumedError):
            toolstitch.assemble(stream)
        assert stream.response.is_closed


@pytest.mark.anyio
async def test_anthropic_async(server: RecordingServer) -> None:
    async with async_anthropic_client(server) as client:
        stream = await client.messages.create(**MESSAGES_REQUEST, stream=True)
        assert isinstance(stream, anthropic.AsyncStream)
        asm = CountingAssembler()
        check_anthropic(only(await asm.afeed_all(stream)))
        assert asm.events == 0 and asm.reads > MANY_READS and stream.response.is_closed

        async with client.messages.with_streaming_response.create(
            **MESSAGES_REQUEST, stream=True
        ) as raw:
            check_anthropic(only(await toolstitch.aassemble(raw)))
            assert raw.is_closed

        async with client.messages.stream(**MESSAGES_REQUEST) as helper:
            asm = CountingAssembler()
            check_anthropic(only(await asm.afeed_all(helper)))
            assert asm.events == 0 and asm.reads > MANY_READS and helper.response.is_closed

        stream = await client.messages.create(**MESSAGES_REQUEST, stream=True)
        async with toolstitch.aiter_events(stream) as live:
            events = [e async for e in live]
        check_anthropic(live.message())
        assert rebuild(events) == [(b.name, b.input) for b in live.message().tool_uses]
        assert stream.response.is_closed
