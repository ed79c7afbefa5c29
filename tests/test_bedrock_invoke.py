"""The bedrock-invoke dialect: Bedrock ``InvokeModelWithResponseStream``, whose ``chunk``
frames wrap Claude's (Anthropic Messages) or Nova's (Converse-shaped) own events.

The recordings are in ``tests/fixtures/bedrock_invoke`` (written from two real
recordings; its README says how). The real ``anthropic`` SDK's ``AnthropicBedrock``
client (with botocore signing and fake static credentials) reads them from the local
server on 127.0.0.1 (``tests/http_server.py``); the same bytes are cut at every byte,
fed as decoded events and as boto3-style chunks, and broken in every way the dialect
must refuse."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import boto3
import pytest
import toolstitch
from http_server import Recording, RecordingServer
from readers import REAL, cassette_bodies, eventstream_message
from test_variations import (
    _ascii,
    _compact,
    _reversed_keys,
    _spaced,
    _with_pings,
    _with_unknown,
    summary,
)
from test_variations import assemble as assemble_variation
from toolstitch import (
    AssembledMessage,
    Assembler,
    FramingError,
    ProtocolError,
    ProviderError,
    RenderError,
    StreamConsumedError,
    StreamDecodeError,
    ToolResultBlock,
    Toolset,
)
from toolstitch.render import invoke_body, render_assistant, render_results, render_turn

HERE = Path(__file__).resolve().parent / "fixtures" / "bedrock_invoke"
CLAUDE = (HERE / "claude-text-then-tool-use.eventstream").read_bytes()
NOVA = (HERE / "nova-tool-use.eventstream").read_bytes()
CLAUDE_MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
NOVA_MODEL = "us.amazon.nova-micro-v1:0"
EVENTSTREAM = "application/vnd.amazon.eventstream"


def decoded(name: str) -> list[dict[str, Any]]:
    text = (HERE / name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def chunk_frame(payload: bytes) -> bytes:
    """One ``chunk`` frame whose payload is ``payload`` as it is."""
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return eventstream_message(headers, payload)


def chunk(event: dict[str, Any] | bytes) -> bytes:
    """One ``chunk`` frame wrapping ``event`` (or raw bytes) in base64."""
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return chunk_frame(json.dumps({"bytes": base64.b64encode(raw).decode(), "p": "ab"}).encode())


def frames(data: bytes) -> list[bytes]:
    """The frames of an event-stream body, each whole."""
    out = []
    while data:
        (total,) = struct.unpack(">I", data[:4])
        out.append(data[:total])
        data = data[total:]
    return out


def check_claude(m: AssembledMessage) -> None:
    assert m.complete, m.problems
    (call,) = m.tool_uses
    assert (call.id, call.name, call.input) == (
        "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "get_weather",
        '{"location": "Paris"}',
    )
    assert m.text == "I'll check the current weather in Paris for you."
    assert m.finish_reason == "tool_use" and m.finish == "tool-calls"
    assert m.tokens.input_tokens == 377 and m.tokens.output_tokens == 65
    assert m.usage is not None
    assert m.usage["amazon-bedrock-invocationMetrics"]["outputTokenCount"] == 65


def check_nova(m: AssembledMessage) -> None:
    assert m.complete, m.problems
    (call,) = m.tool_uses
    assert (call.id, call.name, call.input) == (
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        "get_temperature",
        '{"city":"Paris"}',
    )
    assert m.text.startswith("<thinking> To find the temperature")
    assert m.finish_reason == "tool_use"
    assert (m.tokens.input_tokens, m.tokens.output_tokens, m.tokens.total_tokens) == (471, 91, 562)
    assert m.usage is not None
    assert m.usage["amazon-bedrock-invocationMetrics"]["inputTokenCount"] == 471


RECORDINGS = [
    pytest.param(CLAUDE, check_claude, id="claude"),
    pytest.param(NOVA, check_nova, id="nova"),
]


def assembled(provider: str, *pieces: bytes) -> Assembler:
    asm = Assembler(provider)  # type: ignore[arg-type]
    for p in pieces:
        asm.feed_bytes(p)
    asm.close()
    return asm


# ------------------------------------------------------------------ real client


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    routes = {
        f"/model/{CLAUDE_MODEL}/invoke-with-response-stream": Recording(CLAUDE, EVENTSTREAM),
        f"/model/{CLAUDE_MODEL}/invoke": Recording(
            json.dumps(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude",
                    "content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}}
                    ],
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 3, "output_tokens": 4},
                }
            ).encode(),
            "application/json",
        ),
    }
    with RecordingServer(routes) as s:
        yield s


@pytest.fixture
def boto3_server() -> Iterator[RecordingServer]:
    # botocore sends the model id's ':' escaped.
    model = NOVA_MODEL.replace(":", "%3A")
    converse = cassette_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")[0]
    routes = {
        f"/model/{model}/invoke-with-response-stream": Recording(NOVA, EVENTSTREAM),
        f"/model/{model}/converse-stream": Recording(converse, EVENTSTREAM),
    }
    with RecordingServer(routes) as s:
        yield s


def boto3_client(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    )


def test_assemble_reads_a_boto3_event_stream_raw(boto3_server: RecordingServer) -> None:
    client = boto3_client(boto3_server.url)
    body = json.dumps({"schemaVersion": "messages-v1", "messages": []})
    response = client.invoke_model_with_response_stream(modelId=NOVA_MODEL, body=body)
    asm = Assembler()
    asm.feed_all(response["body"])
    assert asm.dialect == "bedrock-invoke"
    check_nova(asm.message())
    # ConverseStream's stream, the same way.
    stream = client.converse_stream(modelId=NOVA_MODEL, messages=[])["stream"]
    (m,) = toolstitch.assemble(stream)
    assert m.complete and m.tool_uses[0].input == '{"city":"Paris"}'
    # An EventStream already iterated has lost its first events.
    response = client.invoke_model_with_response_stream(modelId=NOVA_MODEL, body=body)
    first = next(iter(response["body"]))
    assert first == {"chunk": {"bytes": b'{"messageStart":{"role":"assistant"}}'}}
    with pytest.raises(StreamConsumedError):
        toolstitch.assemble(response["body"])


def test_boto3_events_fed_one_by_one(boto3_server: RecordingServer) -> None:
    """The events as boto3 yields them, `{"chunk": {"bytes": b"..."}}` with the payload
    decoded from its base64, fed one by one and as a batch, auto-detected too."""
    client = boto3_client(boto3_server.url)
    body = json.dumps({"schemaVersion": "messages-v1", "messages": []})
    for provider in ("bedrock-invoke", "auto"):
        response = client.invoke_model_with_response_stream(modelId=NOVA_MODEL, body=body)
        events = list(response["body"])
        assert all(isinstance(e["chunk"]["bytes"], bytes) for e in events if "chunk" in e)
        asm = Assembler(provider)
        for e in events:
            asm.feed(e)
        asm.close()
        assert asm.dialect == "bedrock-invoke"
        check_nova(asm.message())
        asm = Assembler(provider)
        asm.feed_many(events)
        asm.close()
        check_nova(asm.message())
    (m,) = toolstitch.assemble(events)
    check_nova(m)


@pytest.mark.parametrize(
    ("event", "match"),
    [
        # Only exactly boto3's shape is read as its wire form; bytes anywhere else are
        # not JSON data.
        pytest.param({"chunk": {"bytes": b"{}"}, "x": 1}, "type bytes", id="another-member"),
        pytest.param({"chunk": {"bytes": b"{}", "x": 1}}, "type bytes", id="another-key"),
        pytest.param({"chunk": {"bytes": bytearray(b"{}")}}, "bytearray", id="bytearray"),
        pytest.param({"other": {"bytes": b"{}"}}, "type bytes", id="another-name"),
        # The shape, with a payload that is not an event: the dialect's own errors.
        pytest.param({"chunk": {"bytes": b'{"type": '}}, "inside the chunk", id="not-json"),
        pytest.param({"chunk": {"bytes": b"\xff{}"}}, "not UTF-8", id="not-utf8"),
    ],
)
def test_bytes_outside_boto3s_shape_are_refused(event: dict[str, Any], match: str) -> None:
    asm = Assembler("bedrock-invoke")
    asm.feed_bytes(frames(CLAUDE)[0])
    with pytest.raises(StreamDecodeError, match=match):
        asm.feed(event)
    asm.close()
    assert not asm.message().complete


def bedrock_client(url: str) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE",
        aws_secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        aws_region="us-east-1",
        base_url=url,
    )


REQUEST: dict[str, Any] = {
    "model": CLAUDE_MODEL,
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
}


def test_assemble_reads_an_anthropic_bedrock_stream(server: RecordingServer) -> None:
    client = bedrock_client(server.url)
    (m,) = toolstitch.assemble(client.messages.create(**REQUEST, stream=True))
    check_claude(m)
    request = server.requests[-1]
    assert request.path == f"/model/{CLAUDE_MODEL}/invoke-with-response-stream"
    assert "anthropic_version" in request.json and "model" not in request.json
    # The SDK's helper stream, named dialect: the same message as the SDK's own.
    with client.messages.stream(**REQUEST) as stream:
        (m,) = toolstitch.assemble(stream, "bedrock-invoke")
    check_claude(m)
    with client.messages.stream(**REQUEST) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[1].input == json.loads(m.tool_uses[0].input)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_aassemble_reads_an_async_anthropic_bedrock_stream(server: RecordingServer) -> None:
    client = anthropic.AsyncAnthropicBedrock(
        aws_access_key="AKIDEXAMPLE",
        aws_secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        aws_region="us-east-1",
        base_url=server.url,
    )
    (m,) = await toolstitch.aassemble(await client.messages.create(**REQUEST, stream=True))
    check_claude(m)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_an_invoke_model_body_is_the_models_own(server: RecordingServer) -> None:
    client = bedrock_client(server.url)
    raw = client.messages.with_raw_response.create(**REQUEST)
    body = raw.http_response.content
    for provider in ("bedrock-invoke", "auto"):
        (m,) = toolstitch.assemble(body, provider)
        assert m.complete and m.tool_uses[0].input == '{"x":1}'
    nova = {
        "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
    }
    asm = Assembler("bedrock-invoke")
    asm.feed(nova)
    asm.close()
    assert asm.dialect == "bedrock-invoke"
    assert asm.message().complete and asm.message().tokens.total_tokens == 3


# ------------------------------------------------------------------ recordings


@pytest.mark.parametrize(("data", "check"), RECORDINGS)
def test_recordings_cut_at_every_byte(data: bytes, check: Any) -> None:
    for provider in ("bedrock-invoke", "auto"):
        asm = assembled(provider, data)
        assert asm.dialect == "bedrock-invoke"
        check(asm.message())
    for cut in range(len(data) + 1):
        check(assembled("auto", data[:cut], data[cut:]).message())
    check(assembled("bedrock-invoke", *(data[i : i + 1] for i in range(len(data)))).message())


@pytest.mark.parametrize(
    ("name", "check"),
    [("claude-text-then-tool-use.jsonl", check_claude), ("nova-tool-use.jsonl", check_nova)],
)
def test_decoded_events_and_boto3_chunks(name: str, check: Any) -> None:
    events = decoded(name)
    asm = Assembler("bedrock-invoke")
    asm.feed_many(events)
    asm.close()
    check(asm.message())
    # As a log of boto3's events writes them, the bytes in base64.
    wrapped = [
        {"chunk": {"bytes": base64.b64encode(json.dumps(e).encode()).decode()}} for e in events
    ]
    for provider in ("bedrock-invoke", "auto"):
        asm = Assembler(provider)
        for e in wrapped:
            asm.feed(e)
        asm.close()
        assert asm.dialect == "bedrock-invoke"
        check(asm.message())


# ------------------------------------------------------------------ fail closed


def test_truncated_and_duplicated_streams_are_not_complete() -> None:
    parts = frames(CLAUDE)
    asm = assembled("auto", b"".join(parts[:-1]))
    assert not asm.message().complete  # no message_stop
    with pytest.raises(FramingError, match="cut short"):
        assembled("auto", CLAUDE[:-3])
    doubled = b"".join(parts[:6] + parts[5:])  # a delta again after its block's stop
    asm = Assembler("bedrock-invoke")
    with pytest.raises(ProtocolError) as e:
        asm.feed_bytes(doubled)
    assert e.value.rule == "after-stop"
    asm.close()
    assert not asm.message().complete
    replayed = NOVA + frames(NOVA)[0]
    asm = Assembler("auto")
    with pytest.raises(ProtocolError):
        asm.feed_bytes(replayed)
    assert not asm.message().complete


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        pytest.param(b'{"bytes": "eyJ0e*"}', "not base64", id="not-base64"),
        pytest.param(b'{"bytes": "eyJ0e"}', "not base64", id="base64-length"),
        pytest.param(b'{"bytes": 7}', "field `bytes`", id="wrong-type"),
        pytest.param(b'{"p": "abc"}', "missing from the chunk", id="no-bytes"),
        pytest.param(b'{"bytes": ', "EOF", id="payload-not-json"),
    ],
)
def test_a_bad_chunk_payload_is_refused(payload: bytes, match: str) -> None:
    for before in (b"", frames(CLAUDE)[0]):
        asm = Assembler("bedrock-invoke")
        with pytest.raises(StreamDecodeError, match=match):
            asm.feed_bytes(before + chunk_frame(payload))
        asm.close()
        assert not asm.message().complete and asm.message().problems


@pytest.mark.parametrize(
    ("inner", "match"),
    [
        pytest.param(b'{"type": "message_start"', "inside the chunk", id="not-json"),
        pytest.param(b"[1, 2]", "not a JSON object", id="not-an-object"),
        pytest.param(b"\xff{}", "not UTF-8", id="not-utf8"),
        pytest.param(b"", "not a JSON object", id="empty"),
        pytest.param(
            json.dumps({"type": "content_block_delta", "index": 0, "delta": {"text": 5}}).encode(),
            "inside the chunk",
            id="wrong-type-inside",
        ),
    ],
)
def test_bytes_that_are_not_an_event_are_refused(inner: bytes, match: str) -> None:
    asm = Assembler("auto")
    asm.feed_bytes(frames(CLAUDE)[0])
    with pytest.raises(StreamDecodeError, match=match):
        asm.feed_bytes(chunk(inner))
    asm.close()
    assert not asm.message().complete


@pytest.mark.parametrize(
    ("event", "family"),
    [
        ({"generation": "Hi", "prompt_token_count": 3, "stop_reason": None}, "Meta Llama"),
        ({"outputs": [{"text": "Hi", "stop_reason": None}]}, "Mistral"),
        ({"outputText": "Hi", "index": 0}, "Amazon Titan"),
        ({"is_finished": False, "event_type": "text-generation", "text": "Hi"}, "Cohere"),
    ],
)
def test_another_model_family_is_named(event: dict[str, Any], family: str) -> None:
    asm = Assembler("auto")
    with pytest.raises(StreamDecodeError, match=family):
        asm.feed_bytes(chunk(event))
    asm.close()
    assert not asm.message().complete


def test_an_event_of_the_other_family_is_refused() -> None:
    claude, nova = decoded("claude-text-then-tool-use.jsonl"), decoded("nova-tool-use.jsonl")
    for first, other, family in ((claude[0], nova[1], "Nova"), (nova[0], claude[3], "Claude")):
        asm = Assembler("auto")
        asm.feed_bytes(chunk(first))
        with pytest.raises(StreamDecodeError, match=f"a {family} .* event inside a chunk"):
            asm.feed_bytes(chunk(other))
        asm.close()
        assert not asm.message().complete and asm.message().text == ""


def test_an_exception_frame_is_a_provider_error() -> None:
    headers = {
        ":message-type": "exception",
        ":exception-type": "modelStreamErrorException",
        ":content-type": "application/json",
    }
    exception = eventstream_message(headers, b'{"message": "The model stopped."}')
    for provider in ("bedrock-invoke", "auto"):
        asm = Assembler(provider)
        with pytest.raises(ProviderError) as e:
            asm.feed_bytes(b"".join(frames(CLAUDE)[:5]) + exception)
        assert e.value.error_type == "modelStreamErrorException"
        assert "The model stopped." in str(e.value)
        asm.close()
        assert not asm.message().complete


def test_a_chunk_in_the_anthropic_dialect_is_a_mismatch() -> None:
    asm = Assembler("anthropic")
    with pytest.raises(toolstitch.DialectMismatchError) as e:
        asm.feed_bytes(frames(CLAUDE)[0])
    assert e.value.looks_like == "bedrock-invoke"


def test_pickled_mid_stream_goes_on() -> None:
    import pickle

    parts = frames(NOVA)
    asm = Assembler("bedrock-invoke")
    asm.feed_bytes(b"".join(parts[:10]))
    copy = pickle.loads(pickle.dumps(asm))
    copy.feed_bytes(b"".join(parts[10:]))
    copy.close()
    check_nova(copy.message())
    assert zlib.crc32(NOVA)  # the recording is the one the checks describe


# ------------------------------------------------------------------ render and tools

CLAUDE_TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    }
]
NOVA_TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_temperature",
                "description": "The temperature in a city.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    }
                },
            }
        }
    ]
}


def test_claude_turn_renders_as_anthropic_messages_with_the_bedrock_version() -> None:
    m = assembled("auto", CLAUDE).message()
    (call,) = m.validated(Toolset(CLAUDE_TOOLS))
    assert call.arguments == {"location": "Paris"}
    result = ToolResultBlock(tool_use_id=call.id, content=(toolstitch.TextBlock("18°C"),))
    turn = render_turn("bedrock-invoke", m, [result], model=CLAUDE_MODEL)
    assert turn == render_turn("anthropic", m, [result])
    assert turn[0]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "name": "get_weather",
        "input": {"location": "Paris"},
    }
    body = invoke_body(CLAUDE_MODEL, turn, max_tokens=512, tools=CLAUDE_TOOLS)
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert body["messages"] == turn and body["max_tokens"] == 512
    json.dumps(body)


def test_nova_turn_renders_as_novas_messages() -> None:
    m = assembled("auto", NOVA).message()
    (call,) = m.validated(Toolset(NOVA_TOOL_CONFIG))
    assert call.arguments == {"city": "Paris"}
    png = b"\x89PNG\r\n\x1a\n"
    result = ToolResultBlock(
        tool_use_id=call.id,
        content=(
            toolstitch.TextBlock("30°C"),
            toolstitch.ImageBlock(media_type="image/png", data=base64.b64encode(png).decode()),
        ),
    )
    assistant = render_assistant("bedrock-invoke", m, model=NOVA_MODEL)
    assert assistant == render_assistant("bedrock", m)
    assert assistant[0]["content"][-1] == {
        "toolUse": {
            "toolUseId": "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
            "name": "get_temperature",
            "input": {"city": "Paris"},
        }
    }
    results = render_results("bedrock-invoke", [result], calls=m, model=NOVA_MODEL)
    content = results[0]["content"][0]["toolResult"]["content"]
    assert content[0] == {"text": "30°C"}
    # Nova's InvokeModel body is JSON: the image's bytes are base64 text.
    assert content[1]["image"]["source"]["bytes"] == base64.b64encode(png).decode()
    body = invoke_body(NOVA_MODEL, assistant + results, toolConfig=NOVA_TOOL_CONFIG)
    assert body["schemaVersion"] == "messages-v1"
    json.dumps(body)


def test_render_needs_a_claude_or_nova_model() -> None:
    m = assembled("auto", CLAUDE).message()
    for model in (None, "meta.llama3-70b-instruct-v1:0"):
        with pytest.raises(RenderError, match="model="):
            render_assistant("bedrock-invoke", m, model=model)
    with pytest.raises(RenderError, match="model="):
        invoke_body("mistral.mistral-large", [])


# ------------------------------------------------------------------ variations


def invoke_stream(
    events: list[Any],
    dump: Any = _compact,
    padding: str | None = "abc",
    outer: Any = json.dumps,
) -> bytes:
    """``chunk`` frames of ``events``, each written with ``dump``, their payloads with
    ``outer``."""
    out = []
    for i, e in enumerate(events):
        payload: dict[str, Any] = {"bytes": base64.b64encode(dump(e).encode()).decode()}
        if padding is not None:
            payload = {"p": padding * (i % 5), **payload}
        out.append(chunk_frame(outer(payload).encode()))
    return b"".join(out)


def invoke_variants(events: list[Any], claude: bool) -> Iterator[tuple[str, bytes]]:
    yield "key order", invoke_stream([_reversed_keys(e) for e in events])
    yield "unknown fields", invoke_stream([_with_unknown(e) for e in events])
    yield "whitespace", invoke_stream(events, _spaced)
    yield "ascii escapes", invoke_stream(events, _ascii)
    yield "no padding", invoke_stream(events, padding=None)
    yield "long padding", invoke_stream(events, padding="x" * 97)
    yield (
        "payload: unknown field",
        invoke_stream(events, outer=lambda p: _compact(_with_unknown(p))),
    )
    yield (
        "payload: key order and whitespace",
        invoke_stream(events, outer=lambda p: _spaced(_reversed_keys(p))),
    )
    if claude:
        pinged = [e for _, e in _with_pings([(None, e) for e in events])]
        yield "pings", invoke_stream(pinged)


VARIATIONS = [
    pytest.param(name, label, data, id=f"{name}:{label}")
    for name, claude in (("claude-text-then-tool-use", True), ("nova-tool-use", False))
    for label, data in invoke_variants(decoded(f"{name}.jsonl"), claude)
]


@pytest.mark.parametrize(("name", "label", "data"), VARIATIONS)
def test_a_legitimate_variation_gives_the_same_messages(name: str, label: str, data: bytes) -> None:
    raw = (HERE / f"{name}.eventstream").read_bytes()
    assert label and data != raw
    assert summary(assemble_variation(data)) == summary(assemble_variation(raw))
