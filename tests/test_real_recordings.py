"""Every real recording in tests/fixtures/real reassembles to the calls its source states.

SSE and event-stream bodies go through ``feed_bytes`` cut at random places (1-byte
cuts included); JSON lines go through ``feed`` line by line and through ``feed_bytes``.
The expected calls are those stated in tests/fixtures/PROVENANCE.md and vercel-ai/EXPECTED.json.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from readers import REAL, cassette_bodies
from toolstitch import AssembledMessage, Assembler, Provider, ToolCallStarted, ToolInputDelta

# ------------------------------------------------------------------ helpers


def cuts(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    """``data`` in pieces of the given sizes, cycling through them."""
    at, i = 0, 0
    while at < len(data):
        size = sizes[i % len(sizes)]
        yield data[at : at + size]
        at += size
        i += 1


def assemble_bytes(data: bytes, sizes: list[int], provider: Provider = "auto") -> AssembledMessage:
    asm = Assembler(provider)
    for piece in cuts(data, sizes):
        asm.feed_bytes(piece)
    asm.close()
    return asm.message()


def assemble_lines(text: str, provider: Provider = "auto") -> AssembledMessage:
    asm = Assembler(provider)
    for line in text.splitlines():
        if line.strip():
            asm.feed(line)
    asm.close()
    return asm.message()


def seeded_sizes(seed: int, high: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(1, high) for _ in range(64)]


# Cut patterns every recording goes through: one byte at a time, small primes, and
# seeded random sizes.
PATTERNS = [[1], [2], [3], [7], [64], [4096]] + [seeded_sizes(s, 40) for s in range(12)]


def vcr_bodies(path: Path) -> list[bytes]:
    """The response bodies of a VCR cassette (``readers.cassette_bodies``)."""
    return cassette_bodies(path)


def check_call(block: Any, message: AssembledMessage, expected: dict[str, Any]) -> None:
    if expected["id"] is None:
        assert block.id in message.minted_ids
    else:
        assert block.id == expected["id"]
        assert block.id not in message.minted_ids
    assert block.name == expected["name"]
    assert json.loads(block.input or "{}") == expected["arguments"]
    if expected.get("arguments_raw") is not None:
        assert block.input == expected["arguments_raw"]


# ---------------------------------------------- PROVENANCE.md, recordings 1-6

OPENAI_CHAT = [
    {
        "id": "call_JMW1whyEaYG438VE1OIflxA2",
        "name": "GetWeatherArgs",
        "arguments": {"city": "Edinburgh", "country": "GB", "units": "c"},
        "arguments_raw": '{"city": "Edinburgh", "country": "GB", "units": "c"}',
    },
    {
        "id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
        "name": "get_stock_price",
        "arguments": {"ticker": "AAPL", "exchange": "NASDAQ"},
        "arguments_raw": '{"ticker": "AAPL", "exchange": "NASDAQ"}',
    },
]


def check_openai_chat(m: AssembledMessage) -> None:
    assert len(m.tool_uses) == 2
    for block, expected in zip(m.tool_uses, OPENAI_CHAT, strict=True):
        check_call(block, m, expected)
    assert m.finish_reason == "tool_calls"
    assert m.complete
    assert m.usage is not None and m.usage["total_tokens"] == 209


def check_anthropic(m: AssembledMessage) -> None:
    assert m.text == "I'll check the current weather in Paris for you."
    (call,) = m.tool_uses
    check_call(
        call,
        m,
        {
            "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "name": "get_weather",
            "arguments": {"location": "Paris"},
            "arguments_raw": '{"location": "Paris"}',
        },
    )
    assert type(m.blocks[0]).__name__ == "TextBlock"
    assert m.blocks[1] == call
    assert m.finish_reason == "tool_use"
    assert m.complete
    assert m.usage is not None
    assert (m.usage["input_tokens"], m.usage["output_tokens"]) == (377, 65)


def check_vertex_four(m: AssembledMessage) -> None:
    expected = [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ]
    assert [(b.name, json.loads(b.input)) for b in m.tool_uses] == expected
    assert {b.id for b in m.tool_uses} == m.minted_ids
    assert len(m.minted_ids) == 4
    signed = m.tool_uses[0]
    assert signed.provider_state is not None and signed.provider_state_format == "gemini"
    assert len(json.loads(signed.provider_state)) == 1060
    assert all(b.provider_state is None for b in m.tool_uses[1:])
    assert m.finish_reason == "STOP"
    assert m.complete


def check_mistral_single(m: AssembledMessage) -> None:
    (call,) = m.tool_uses
    check_call(
        call,
        m,
        {
            "id": "gSIMJiOkT",
            "name": "weather",
            "arguments": {"location": "San Francisco"},
            "arguments_raw": '{"location": "San Francisco"}',
        },
    )
    assert m.finish_reason == "tool_calls"
    assert m.complete
    assert m.usage is not None
    assert (m.usage["prompt_tokens"], m.usage["completion_tokens"]) == (124, 22)


def check_bedrock(m: AssembledMessage) -> None:
    (call,) = m.tool_uses
    check_call(
        call,
        m,
        {
            "id": "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
            "name": "get_temperature",
            "arguments": {"city": "Paris"},
            "arguments_raw": '{"city":"Paris"}',
        },
    )
    assert m.text.startswith("<thinking>")
    assert m.finish_reason == "tool_use"
    assert m.complete
    assert m.usage is not None and m.usage["totalTokens"] == 562  # after messageStop (Q22)


def check_responses(m: AssembledMessage) -> None:
    (call,) = m.tool_uses
    check_call(
        call,
        m,
        {
            "id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
            "name": "get_capital",
            "arguments": {"country": "France"},
            "arguments_raw": '{"country":"France"}',
        },
    )
    assert call.provider_state is not None
    assert "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2" in call.provider_state
    assert m.finish_reason == "completed"
    assert m.complete


@pytest.mark.parametrize("sizes", PATTERNS)
def test_openai_chat_sse_in_cuts(real_fixtures: Path, sizes: list[int]) -> None:
    data = (real_fixtures / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
    check_openai_chat(assemble_bytes(data, sizes))
    check_openai_chat(assemble_bytes(data, sizes, "openai-chat"))


@pytest.mark.parametrize("sizes", PATTERNS)
def test_anthropic_sse_in_cuts(real_fixtures: Path, sizes: list[int]) -> None:
    data = (real_fixtures / "anthropic_messages-text-then-tool-use.sse").read_bytes()
    check_anthropic(assemble_bytes(data, sizes))
    check_anthropic(assemble_bytes(data, sizes, "anthropic"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 97), min_size=1, max_size=30))
def test_sse_recordings_any_cuts(sizes: list[int]) -> None:
    check_openai_chat(
        assemble_bytes(
            (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes(), sizes
        )
    )
    check_anthropic(
        assemble_bytes((REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes(), sizes)
    )


def test_vertex_jsonl_line_by_line(real_fixtures: Path) -> None:
    text = (real_fixtures / "google_vertex-stream-function-call-args-4-calls.jsonl").read_text()
    check_vertex_four(assemble_lines(text))
    check_vertex_four(assemble_lines(text, "gemini"))


def test_mistral_jsonl_line_by_line(real_fixtures: Path) -> None:
    text = (real_fixtures / "mistral_chat-single-chunk-tool-call.jsonl").read_text()
    check_mistral_single(assemble_lines(text))


@pytest.mark.parametrize("sizes", PATTERNS)
def test_jsonl_recordings_as_bytes(real_fixtures: Path, sizes: list[int]) -> None:
    vertex = (real_fixtures / "google_vertex-stream-function-call-args-4-calls.jsonl").read_bytes()
    check_vertex_four(assemble_bytes(vertex, sizes))
    mistral = (real_fixtures / "mistral_chat-single-chunk-tool-call.jsonl").read_bytes()
    check_mistral_single(assemble_bytes(mistral, sizes))


def test_bedrock_cassette_has_two_event_stream_bodies(real_fixtures: Path) -> None:
    bodies = vcr_bodies(real_fixtures / "bedrock_converse-stream-nova-tool-use.vcr.yaml")
    assert len(bodies) == 2


@pytest.mark.parametrize("sizes", PATTERNS)
def test_bedrock_event_stream_in_cuts(real_fixtures: Path, sizes: list[int]) -> None:
    tool_turn, text_turn = vcr_bodies(
        real_fixtures / "bedrock_converse-stream-nova-tool-use.vcr.yaml"
    )
    check_bedrock(assemble_bytes(tool_turn, sizes))
    check_bedrock(assemble_bytes(tool_turn, sizes, "bedrock"))
    plain = assemble_bytes(text_turn, sizes)
    assert plain.tool_uses == () and plain.text and plain.complete


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 61), min_size=1, max_size=30))
def test_bedrock_any_cuts(sizes: list[int]) -> None:
    tool_turn, _ = vcr_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")
    check_bedrock(assemble_bytes(tool_turn, sizes))


@pytest.mark.parametrize("sizes", PATTERNS)
def test_responses_cassette_sse_in_cuts(real_fixtures: Path, sizes: list[int]) -> None:
    bodies = vcr_bodies(real_fixtures / "openai_responses-function-call.vcr.yaml")
    assert len(bodies) == 2
    check_responses(assemble_bytes(bodies[0], sizes))
    check_responses(assemble_bytes(bodies[0], sizes, "openai-responses"))
    answer = assemble_bytes(bodies[1], sizes)
    assert answer.tool_uses == () and "Paris" in answer.text and answer.complete


def test_live_events_of_a_recording_rebuild_the_calls(real_fixtures: Path) -> None:
    data = (real_fixtures / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
    asm = Assembler()
    events = [e for piece in cuts(data, [5]) for e in asm.feed_bytes(piece)]
    events += asm.close()
    names = {e.index: e.name for e in events if isinstance(e, ToolCallStarted)}
    inputs: dict[int, str] = {}
    for e in events:
        if isinstance(e, ToolInputDelta):
            inputs[e.index] = inputs.get(e.index, "") + e.fragment
    calls = asm.message().tool_uses
    assert [(names[i], inputs[i]) for i in sorted(names)] == [(b.name, b.input) for b in calls]


# ---------------------------------------------------------- vercel-ai/EXPECTED.json

EXPECTED: dict[str, Any] = json.loads((REAL / "vercel-ai" / "EXPECTED.json").read_text())


def check_expected(name: str, m: AssembledMessage) -> None:
    spec = EXPECTED[name]
    assert len(m.tool_uses) == len(spec["expected_tool_calls"])
    for block, expected in zip(m.tool_uses, spec["expected_tool_calls"], strict=True):
        check_call(block, m, expected)
        if "item_id" in expected:  # Q23: the item id travels as provider state
            assert block.provider_state is not None and expected["item_id"] in block.provider_state
    assert m.finish_reason == spec["finish_reason"].split()[0]
    assert m.complete
    assert m.problems == ()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vercel_recording_line_by_line(real_fixtures: Path, name: str) -> None:
    text = (real_fixtures / "vercel-ai" / name).read_text()
    check_expected(name, assemble_lines(text))


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("sizes", [[1], [13], seeded_sizes(7, 50)])
def test_vercel_recording_as_bytes(real_fixtures: Path, name: str, sizes: list[int]) -> None:
    data = (real_fixtures / "vercel-ai" / name).read_bytes()
    check_expected(name, assemble_bytes(data, sizes))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vercel_recording_as_dicts(real_fixtures: Path, name: str) -> None:
    asm = Assembler()
    for line in (real_fixtures / "vercel-ai" / name).read_text().splitlines():
        if line.strip():
            asm.feed(json.loads(line))
    asm.close()
    check_expected(name, asm.message())
