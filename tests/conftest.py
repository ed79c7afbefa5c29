from __future__ import annotations

import gzip
import inspect
import json
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from readers import REAL, eventstream_frame, sse_events

ROOT = Path(__file__).resolve().parent.parent
REAL_FIXTURES = REAL


# ------------------------------------------------------ both relays
#
# Every test that starts ``toolstitch proxy`` as a subprocess (test_proxy.proxy) runs on
# each relay, Python's and Rust's; the in-process ASGI tests run the Python relay.

_RELAYS = ("python", "rust")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not metafunc.module.__name__.startswith("test_proxy"):
        return
    try:
        source = inspect.getsource(metafunc.function)
    except (OSError, TypeError):
        return
    if "proxy(" in source:
        metafunc.fixturenames.append("relay")
        metafunc.parametrize("relay", _RELAYS)


@pytest.fixture(autouse=True)
def _proxy_relay(request: pytest.FixtureRequest) -> Iterator[None]:
    """Points ``test_proxy.proxy`` at the test's relay (see ``pytest_generate_tests``)."""
    callspec = getattr(request.node, "callspec", None)
    name = callspec.params.get("relay") if callspec is not None else None
    if name is None:
        yield
        return
    import test_proxy

    test_proxy.RELAY["name"] = name
    try:
        yield
    finally:
        test_proxy.RELAY["name"] = "python"


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    """The real recorded provider streams (tests/fixtures/real, provenance in tests/fixtures/PROVENANCE.md)."""
    if not REAL_FIXTURES.is_dir():
        pytest.fail(f"the real recordings are missing: expected {REAL_FIXTURES}")
    return REAL_FIXTURES


# ------------------------------------------------------ generated recordings
#
# Synthetic captures in four dialects and three transports, for the replay tests: each
# file's calls are known (``expected_calls``), so a replay can be checked against them.


def _sse(events: Sequence[tuple[str | None, dict[str, Any]]]) -> bytes:
    return sse_events(events, ensure_ascii=False)


def _pieces(text: str, rng: random.Random) -> list[str]:
    pieces, at = [], 0
    while at < len(text):
        size = rng.randint(1, 9)
        pieces.append(text[at : at + size])
        at += size
    return pieces


def _openai_chat(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    head = {"id": "chatcmpl-gen", "object": "chat.completion.chunk", "model": "gpt-4o"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        return None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": None})]
    for i, (call_id, name, arguments) in enumerate(calls):
        opened = {"index": i, "id": call_id, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**opened, "function": {"name": name, "arguments": ""}}]})
        )
        for piece in _pieces(arguments, rng):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, "tool_calls"))
    return _sse(events) + b"data: [DONE]\n\n"


def _anthropic(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    message: dict[str, Any] = {
        "id": "msg_gen",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude",
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    for i, (call_id, name, arguments) in enumerate(calls):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": block},
            )
        )
        for piece in _pieces(arguments, rng):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def _gemini(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    lines = []
    for _call_id, name, arguments in calls:
        part = {"functionCall": {"name": name, "args": json.loads(arguments)}}
        lines.append({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]})
    lines.append(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": ""}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ]
        }
    )
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _bedrock(calls: list[tuple[str, str, str]], rng: random.Random) -> bytes:
    frames = [eventstream_frame("messageStart", {"role": "assistant"})]
    for i, (call_id, name, arguments) in enumerate(calls):
        start = {"start": {"toolUse": {"toolUseId": call_id, "name": name}}, "contentBlockIndex": i}
        frames.append(eventstream_frame("contentBlockStart", start))
        for piece in _pieces(arguments, rng):
            delta = {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": i}
            frames.append(eventstream_frame("contentBlockDelta", delta))
        frames.append(eventstream_frame("contentBlockStop", {"contentBlockIndex": i}))
    frames.append(eventstream_frame("messageStop", {"stopReason": "tool_use"}))
    frames.append(
        eventstream_frame(
            "metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}
        )
    )
    return b"".join(frames)


_DIALECTS: list[tuple[str, str, Callable[[list[tuple[str, str, str]], random.Random], bytes]]] = [
    ("openai-chat", ".sse", _openai_chat),
    ("anthropic", ".sse", _anthropic),
    ("gemini", ".jsonl", _gemini),
    ("bedrock", ".bin", _bedrock),
]


def make_recording(number: int, seed: int = 0) -> tuple[str, bytes, list[tuple[str, str, str]]]:
    """Recording ``number``: (file name, bytes, its calls as (id, name, arguments)).
    Gemini sends no ids, so toolstitch mints ``call_0_<n>`` for them."""
    rng = random.Random(seed * 100_003 + number)
    dialect, suffix, build = _DIALECTS[number % len(_DIALECTS)]
    calls = []
    for i in range(rng.randint(1, 3)):
        arguments = json.dumps(
            {
                "city": rng.choice(["Paris", "Zürich", "東京", 'New "York"']),
                "n": rng.randint(0, 99),
                "i": i,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        call_id = f"call_0_{i}" if dialect == "gemini" else f"{dialect}-{number}-{i}"
        calls.append((call_id, rng.choice(["get_weather", "lookup"]), arguments))
    return f"{number:04d}-{dialect}{suffix}", build(calls, rng), calls


def write_recordings(
    directory: Path, count: int, seed: int = 0
) -> dict[str, list[tuple[str, str, str]]]:
    """``count`` recordings under ``directory`` (every fifth gzipped, named without
    ``.gz``: the content tells), spread over two subdirectories; returns their calls by
    path."""
    expected: dict[str, list[tuple[str, str, str]]] = {}
    for number in range(count):
        name, data, calls = make_recording(number, seed)
        sub = directory / ("a" if number % 2 else "b")
        sub.mkdir(parents=True, exist_ok=True)
        if number % 5 == 4:
            data = gzip.compress(data, mtime=0)
        path = sub / name
        path.write_bytes(data)
        expected[str(path)] = calls
    return expected


@pytest.fixture(scope="session")
def generated_recordings(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, list[tuple[str, str, str]]]]:
    """A directory of 40 generated recordings and the calls of each file."""
    root = tmp_path_factory.mktemp("generated")
    return root, write_recordings(root, 40)
