"""replay_bytes / replay_path: captures to plain call records (docs/replay.md).

Checked against the calls the real recordings' sources state (tests/fixtures/PROVENANCE.md)
and against generated recordings whose calls are known.
"""

from __future__ import annotations

import base64
import gzip
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from toolstitch import RECORD_KEYS, Toolset, UnknownProviderError, replay_bytes, replay_path
from toolstitch.replay import check_record, is_stream_file

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
SAMPLES = Path(__file__).resolve().parent.parent / "python" / "toolstitch" / "samples"

ANTHROPIC = REAL / "anthropic_messages-text-then-tool-use.sse"
OPENAI_CHAT = REAL / "openai_chat-completions-parallel-two-tools.sse"
BEDROCK_CASSETTE = REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml"
RESPONSES_CASSETTE = REAL / "openai_responses-function-call.vcr.yaml"
MISTRAL = REAL / "mistral_chat-single-chunk-tool-call.jsonl"


def calls(records: list[Any]) -> list[tuple[Any, ...]]:
    return [(r["stream"], r["id"], r["name"], r["arguments"], r["complete"]) for r in records]


def cassette_bodies(path: Path) -> list[bytes]:
    document = yaml.safe_load(path.read_bytes())
    bodies = []
    for interaction in document["interactions"]:
        body = interaction["response"]["body"]["string"]
        bodies.append(body if isinstance(body, bytes) else body.encode())
    return bodies


# ------------------------------------------------------------------ the schema


def test_every_record_has_exactly_the_documented_keys_in_order() -> None:
    records = replay_path(OPENAI_CHAT)
    assert [list(r) for r in records] == [list(RECORD_KEYS)] * 2
    assert RECORD_KEYS == (
        "stream", "choice", "id", "name", "kind", "arguments",
        "complete", "finish", "server_side", "error", "notes", "arguments_json",
    )  # fmt: skip


def test_records_are_plain_picklable_json_ready_dicts() -> None:
    records = replay_path(BEDROCK_CASSETTE)
    assert all(type(r) is dict for r in records)
    assert pickle.loads(pickle.dumps(records)) == records
    assert json.loads(json.dumps(records)) == records
    for r in records:
        assert isinstance(r["stream"], str) and isinstance(r["choice"], int)
        assert isinstance(r["complete"], bool) and isinstance(r["server_side"], bool)


def test_openai_chat_calls_as_the_source_states() -> None:
    records = replay_path(OPENAI_CHAT)
    assert calls(records) == [
        (str(OPENAI_CHAT), "call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs",
         '{"city": "Edinburgh", "country": "GB", "units": "c"}', True),
        (str(OPENAI_CHAT), "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price",
         '{"ticker": "AAPL", "exchange": "NASDAQ"}', True),
    ]  # fmt: skip
    assert all(r["kind"] == "function" and r["server_side"] is False for r in records)
    assert all(r["error"] is None and r["choice"] == 0 for r in records)


def test_replay_bytes_names_the_stream_and_matches_replay_path() -> None:
    data = ANTHROPIC.read_bytes()
    by_bytes = replay_bytes(data, name="mine")
    by_path = replay_path(ANTHROPIC)
    assert [r["stream"] for r in by_bytes] == ["mine"]
    assert [{**r, "stream": ""} for r in by_bytes] == [{**r, "stream": ""} for r in by_path]
    assert replay_bytes(bytearray(data))[0]["stream"] == "<bytes>"
    assert replay_bytes(memoryview(data))[0]["id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"


def test_replay_bytes_refuses_text() -> None:
    with pytest.raises(TypeError, match="bytes"):
        replay_bytes("data: {}")  # type: ignore[arg-type]


def test_an_unknown_provider_raises_and_a_forced_one_is_used() -> None:
    with pytest.raises(UnknownProviderError, match="nope"):
        replay_path(ANTHROPIC, "nope")  # type: ignore[arg-type]
    with pytest.raises(UnknownProviderError):
        replay_bytes(b"", "nope")  # type: ignore[arg-type]
    assert replay_path(ANTHROPIC, "anthropic")[0]["complete"] is True
    wrong = replay_path(ANTHROPIC, "openai-chat")
    assert [(r["id"], r["complete"]) for r in wrong] == [(None, False)]


# ------------------------------------------------------------------ formats


def test_jsonl_capture() -> None:
    [record] = replay_path(MISTRAL)
    assert (record["id"], record["name"], record["arguments"], record["complete"]) == (
        "gSIMJiOkT", "weather", '{"location": "San Francisco"}', True,
    )  # fmt: skip


def test_cassette_gives_one_stream_per_streamed_interaction() -> None:
    records = replay_path(BEDROCK_CASSETTE)
    assert calls(records) == [
        (f"{BEDROCK_CASSETTE}#1", "tooluse_lAG_zP8QRHmSYOwZzzaCqA", "get_temperature",
         '{"city":"Paris"}', True),
        (f"{BEDROCK_CASSETTE}#2", None, None, None, True),
    ]  # fmt: skip
    records = replay_path(RESPONSES_CASSETTE)
    assert calls(records) == [
        (f"{RESPONSES_CASSETTE}#1", "call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital",
         '{"country":"France"}', True),
        (f"{RESPONSES_CASSETTE}#2", None, None, None, True),
    ]  # fmt: skip


def test_event_stream_bytes_from_the_bedrock_cassette() -> None:
    body = cassette_bodies(BEDROCK_CASSETTE)[0]
    assert body[:4] != b"data"  # binary AWS event-stream frames
    [record] = replay_bytes(body, name="frames")
    assert (record["id"], record["arguments"], record["complete"]) == (
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA", '{"city":"Paris"}', True,
    )  # fmt: skip


def test_gzip_is_told_by_its_magic_bytes_at_any_depth(tmp_path: Path) -> None:
    data = ANTHROPIC.read_bytes()
    plain = replay_bytes(data, name="x")
    assert replay_bytes(gzip.compress(data), name="x") == plain
    assert replay_bytes(gzip.compress(gzip.compress(data)), name="x") == plain
    named_plainly = tmp_path / "stream.sse"  # no .gz in the name
    named_plainly.write_bytes(gzip.compress(data))
    assert calls(replay_path(named_plainly)) == [
        (str(named_plainly), "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather",
         '{"location": "Paris"}', True),
    ]  # fmt: skip
    cassette = gzip.compress(BEDROCK_CASSETTE.read_bytes())
    assert [r["id"] for r in replay_bytes(cassette)] == ["tooluse_lAG_zP8QRHmSYOwZzzaCqA", None]


def test_broken_gzip_is_an_error_record() -> None:
    cut = gzip.compress(ANTHROPIC.read_bytes())[:200]
    [record] = replay_bytes(cut, name="cut.gz")
    assert record["error"] is not None and "gzip data cut short" in record["error"]
    assert record["complete"] is False and record["id"] is None
    [record] = replay_bytes(b"\x1f\x8b" + b"x" * 40, name="bad.gz")
    assert record["error"] is not None and record["error"].startswith("not valid gzip")


def test_vcr_cassette_variants(tmp_path: Path) -> None:
    """A gzip Content-Encoding body, Ruby VCR's http_interactions and base64_string, a
    JSON answer that is no provider response (passed over), a whole non-streamed
    response (replayed), an interaction without content type (replayed)."""
    sse = ANTHROPIC.read_bytes()
    events = cassette_bodies(BEDROCK_CASSETTE)[0]
    cassette = {
        "http_interactions": [
            {"response": {"headers": {"Content-Type": ["application/json"]},
                          "body": {"encoding": "UTF-8", "string": '{"id": "auth"}'}}},
            {"response": {"headers": {"Content-Type": ["text/event-stream; charset=utf-8"],
                                      "Content-Encoding": ["gzip"]},
                          "body": {"string": gzip.compress(sse)}}},
            {"response": {"headers": {"Content-Type": "application/vnd.amazon.eventstream"},
                          "body": {"base64_string": base64.b64encode(events).decode()}}},
            {"response": {"body": {"string": sse.decode()}}},
            {"response": {"headers": {"Content-Type": ["application/json"]},
                          "body": {"string": json.dumps(COMPLETION, indent=2)}}},
        ]
    }  # fmt: skip
    document = b"---\n" + yaml.safe_dump(cassette).encode()
    records = replay_bytes(document, name="c")
    assert [(r["stream"], r["id"], r["complete"]) for r in records] == [
        ("c#2", "toolu_01NRLabsLyVHZPKxbKvkfSMn", True),
        ("c#3", "tooluse_lAG_zP8QRHmSYOwZzzaCqA", True),
        ("c#4", "toolu_01NRLabsLyVHZPKxbKvkfSMn", True),
        ("c#5", "call_w", True),
    ]


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_w",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}


def test_a_whole_non_streamed_response_replays_like_its_stream() -> None:
    (record,) = replay_bytes(json.dumps(COMPLETION, indent=2).encode(), name="body.json")
    assert (record["id"], record["name"], record["arguments"], record["finish"]) == (
        "call_w",
        "weather",
        '{"city":"Paris"}',
        "tool-calls",
    )
    assert record["complete"] and record["error"] is None


def test_cassettes_that_cannot_be_replayed_give_one_error_record() -> None:
    [record] = replay_bytes(b"interactions:\n- {response: {body: {string: ''}}}\n", name="c")
    assert (
        record["error"] is not None and "none of the cassette's 1 interactions" in record["error"]
    )
    [record] = replay_bytes(b"interactions: [\n", name="c")
    assert record["error"] is not None
    assert record["error"].startswith("not a readable VCR cassette") and "line 2" in record["error"]
    [record] = replay_bytes(b"interactions: 3\n", name="c")
    assert record["error"] is not None and "'interactions'" in record["error"]


def test_cassettes_need_pyyaml_and_say_which_extra() -> None:
    """Without PyYAML, a cassette is an error record naming the extra; other streams
    replay as before (the core needs no dependency)."""
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "from toolstitch import replay_path\n"
        f"print(replay_path({str(BEDROCK_CASSETTE)!r})[0]['error'])\n"
        f"print(replay_path({str(ANTHROPIC)!r})[0]['complete'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    error, complete = out.stdout.splitlines()
    assert "PyYAML" in error and "toolstitch[cli]" in error
    assert complete == "True"


def test_replay_imports_no_optional_dependency() -> None:
    code = (
        "import sys\n"
        "from toolstitch import replay_path\n"
        f"replay_path({str(ANTHROPIC)!r})\n"
        "print(sorted(m for m in ('rich', 'yaml', 'dask', 'pandas', 'fsspec') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ failures


def test_a_file_that_cannot_be_opened_is_one_error_record(tmp_path: Path) -> None:
    [record] = replay_path(tmp_path / "missing.sse")
    assert record == {
        "stream": str(tmp_path / "missing.sse"), "choice": 0, "id": None, "name": None,
        "kind": None, "arguments": None, "complete": False, "finish": None,
        "server_side": False, "error": "cannot read: No such file or directory",
        "notes": None, "arguments_json": None,
    }  # fmt: skip
    # A directory is walked: an empty one is one error record saying so.
    [record] = replay_path(tmp_path)
    assert record["error"] == "the directory holds no file"


def test_a_malformed_stream_is_one_error_record_with_the_byte() -> None:
    [record] = replay_bytes(b"hello\n", name="x")
    assert record["error"] is not None and "byte 0" in record["error"]
    assert record["complete"] is False and record["id"] is None


def test_a_cut_stream_keeps_its_calls_so_far_with_the_error() -> None:
    data = OPENAI_CHAT.read_bytes()[:3000]
    [record] = replay_bytes(data, name="cut")
    assert record["id"] == "call_JMW1whyEaYG438VE1OIflxA2"
    assert record["arguments"] == '{"city": "Edinburgh", "country": "'
    assert record["complete"] is False
    assert record["error"] is not None and "byte 2799" in record["error"]


def test_a_stream_cut_between_events_is_incomplete_without_error() -> None:
    data = ANTHROPIC.read_bytes()
    cut = data[: data.index(b"event: message_delta")]
    [record] = replay_bytes(cut, name="cut")
    assert record["id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert (record["complete"], record["error"]) == (False, None)


def test_an_empty_capture_is_one_incomplete_record() -> None:
    [record] = replay_bytes(b"", name="empty")
    assert (record["id"], record["complete"], record["error"]) == (None, False, None)


def test_server_side_calls_are_marked(real_fixtures: Path) -> None:
    records = replay_path(real_fixtures / "vercel-ai" / "anthropic-web-search-tool.1.chunks.txt")
    assert [(r["name"], r["server_side"]) for r in records] == [("web_search", True)]


def test_generated_recordings_replay_to_their_calls(
    generated_recordings: tuple[Path, dict[str, list[tuple[str, str, str]]]],
) -> None:
    _, expected = generated_recordings
    for path, want in expected.items():
        records = replay_path(path)
        assert [(r["id"], r["name"], r["arguments"]) for r in records] == want, path
        assert all(r["complete"] and r["error"] is None for r in records), path


# ------------------------------------------------------------------ options


def test_text_adds_text_and_reasoning_of_the_choice() -> None:
    [record] = replay_path(ANTHROPIC, text=True)
    assert list(record) == [*RECORD_KEYS, "text", "reasoning"]
    assert record["text"] == "I'll check the current weather in Paris for you."  # type: ignore[typeddict-item]
    assert record["reasoning"] == ""  # type: ignore[typeddict-item]
    gemini = replay_path(REAL / "google_vertex-stream-function-call-args-4-calls.jsonl", text=True)
    assert all("Processing User Requests" in r["reasoning"] for r in gemini)  # type: ignore[typeddict-item]
    [failed] = replay_bytes(b"nope", text=True)
    assert (failed["text"], failed["reasoning"]) == ("", "")  # type: ignore[typeddict-item]


WEATHER_TOOLS = [
    {
        "name": "get_weather",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
]


def test_tools_validate_every_call() -> None:
    [record] = replay_path(ANTHROPIC, tools=WEATHER_TOOLS)
    assert list(record)[-2:] == ["valid", "validation_error"]
    assert (record["valid"], record["validation_error"]) == (True, None)  # type: ignore[typeddict-item]
    strict = {"get_weather": {"type": "object", "properties": {"location": {"type": "integer"}}}}
    [record] = replay_path(ANTHROPIC, tools=Toolset(strict))
    assert record["valid"] is False  # type: ignore[typeddict-item]
    assert "/location" in record["validation_error"]  # type: ignore[typeddict-item]
    records = replay_path(OPENAI_CHAT, tools=WEATHER_TOOLS)
    assert [r["valid"] for r in records] == [False, False]  # type: ignore[typeddict-item]
    assert "undeclared tool 'GetWeatherArgs'" in records[0]["validation_error"]  # type: ignore[typeddict-item]


def test_check_record_refuses_incomplete_and_skips_server_side_and_empty() -> None:
    toolset = Toolset(WEATHER_TOOLS)
    [record] = replay_path(ANTHROPIC)
    assert check_record(record, toolset) == (True, None)
    valid, why = check_record({**record, "complete": False}, toolset)
    assert valid is False and why is not None and "did not complete" in why
    assert check_record({**record, "server_side": True}, toolset) == (None, None)
    assert check_record({**record, "id": None}, toolset) == (None, None)
    valid, why = check_record({**record, "kind": "custom_tool_call"}, toolset)
    assert valid is False and why is not None and "custom_tool_call" in why


def test_directory_walks_pick_captures_by_name() -> None:
    assert (
        is_stream_file("a/b.sse") and is_stream_file("x.JSONL.gz") and is_stream_file("c.vcr.yaml")
    )
    assert not is_stream_file("licenses/ai.LICENSE") and not is_stream_file("README.md")
    assert not is_stream_file(".hidden.sse") and not is_stream_file("x.gz")


def test_the_bundled_samples_cover_every_dialect_and_complete() -> None:
    files = sorted(p.name for p in SAMPLES.iterdir() if is_stream_file(p.name))
    assert len(files) == 7
    records = [r for f in files for r in replay_path(SAMPLES / f)]
    assert all(r["complete"] and r["error"] is None for r in records)
    for notice in ("ai", "anthropic-sdk-python", "openai-python", "pydantic-ai"):
        assert (SAMPLES / "licenses" / f"{notice}.LICENSE").is_file()
    # The bundled copies are byte-exact copies of the recordings the tests check.
    assert (SAMPLES / "openai-chat.sse").read_bytes() == OPENAI_CHAT.read_bytes()
    assert (SAMPLES / "bedrock.vcr.yaml").read_bytes() == BEDROCK_CASSETTE.read_bytes()
    interactions = REAL / "vercel-ai" / "google-interactions-tool-call-step1.chunks.txt"
    assert (SAMPLES / "gemini-interactions.jsonl").read_bytes() == interactions.read_bytes()


def test_records_carry_the_kind_server_side_and_normalised_finish_of_each_call() -> None:
    hosted = replay_path(REAL / "vercel-ai" / "anthropic-mcp.1.chunks.txt")
    assert [(r["kind"], r["server_side"], r["finish"], r["complete"]) for r in hosted] == [
        ("mcp_tool_use", True, "stop", True)
    ]
    (custom,) = replay_path(REAL / "vercel-ai" / "openai-custom-tool.1.chunks.txt")
    assert (custom["kind"], custom["server_side"], custom["finish"]) == (
        "custom_tool_call",
        False,
        "tool-calls",
    )
    assert custom["arguments"] == "SELECT * FROM users WHERE age > 25"
    # A custom tool's call validates as text against its grammar.
    tools = Toolset(
        [
            {
                "type": "custom",
                "name": "write_sql",
                "format": {"type": "grammar", "syntax": "regex", "definition": r"SELECT .+"},
            }
        ]
    )
    assert check_record(custom, tools) == (True, None)
