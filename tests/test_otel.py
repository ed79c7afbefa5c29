"""``toolstitch.otel``: GenAI output messages, spans and measures, ``replay --format otel``.

Everything is checked against the convention's output-messages JSON schema
(``tests/fixtures/otel``, see its README for the version) and recorded on real
OpenTelemetry SDK objects: the in-memory span exporter and metric reader, and the
OTLP/HTTP exporter posting protobuf to a receiver on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import toolstitch
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from toolstitch import AssembledMessage, Assembler
from toolstitch.otel import (
    OUTPUT_MESSAGES,
    StreamTiming,
    finish_reason,
    output_messages,
    record,
    timed,
)

HERE = Path(__file__).resolve().parent
REAL = HERE / "fixtures" / "real"
SCHEMA = json.loads((HERE / "fixtures" / "otel" / "gen-ai-output-messages.schema.json").read_text())
OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
WEB_SEARCH = (REAL / "vercel-ai" / "anthropic-web-search-tool.1.chunks.txt").read_bytes()

# The part definition each part type must satisfy (the generic part of the union would
# accept any object with a type).
PART_DEFS = {
    "text": "TextPart",
    "reasoning": "ReasoningPart",
    "tool_call": "ToolCallRequestPart",
    "tool_call_response": "ToolCallResponsePart",
    "server_tool_call": "ServerToolCallPart",
    "server_tool_call_response": "ServerToolCallResponsePart",
    "blob": "BlobPart",
    "file": "FilePart",
    "uri": "UriPart",
}


def check_schema(value: list[dict[str, Any]]) -> None:
    """``value`` validates as ``gen_ai.output.messages``, every part by its own type, and
    every finish reason is one of the convention's words."""
    jsonschema.Draft202012Validator(SCHEMA).validate(value)
    for message in value:
        assert message["finish_reason"] in SCHEMA["$defs"]["FinishReason"]["enum"]
        for part in message["parts"]:
            definition = {"$ref": f"#/$defs/{PART_DEFS[part['type']]}", "$defs": SCHEMA["$defs"]}
            jsonschema.Draft202012Validator(definition).validate(part)


def recordings() -> list[Path]:
    return sorted(
        p
        for p in [*REAL.iterdir(), *(REAL / "vercel-ai").iterdir()]
        if p.is_file() and not p.name.endswith((".yaml", ".json", ".md"))
    )


def assembled(data: bytes) -> list[AssembledMessage]:
    if data.startswith(b"\x1f\x8b"):
        data = gzip.decompress(data)
    asm = Assembler()
    try:
        asm.feed_bytes(data)
        asm.close()
    except toolstitch.ToolstitchError:
        with contextlib.suppress(toolstitch.ToolstitchError):
            asm.close()
    return asm.messages()


# ------------------------------------------------------------ output_messages


def test_the_schema_refuses_what_the_convention_refuses() -> None:
    # The vendored schema is not a stub that takes anything.
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert not validator.is_valid([{"parts": []}])  # no role
    assert not validator.is_valid([{"role": "assistant"}])  # no parts
    assert not validator.is_valid([{"role": "assistant", "parts": [{"content": "x"}]}])
    part = {"$ref": "#/$defs/ToolCallRequestPart", "$defs": SCHEMA["$defs"]}
    assert not jsonschema.Draft202012Validator(part).is_valid({"type": "tool_call", "id": "x"})


@pytest.mark.parametrize("path", recordings(), ids=lambda p: p.name)
def test_every_recording_validates_against_the_convention(path: Path) -> None:
    messages = assembled(path.read_bytes())
    value = output_messages(messages)
    check_schema(value)
    assert len(value) == len(messages)
    # Every call is there, in order, as a client or a server tool call.
    for message, out in zip(messages, value, strict=True):
        calls = [p for p in out["parts"] if p["type"] in ("tool_call", "server_tool_call")]
        assert [c["id"] for c in calls] == [b.id for b in message.tool_uses]


def test_parallel_openai_calls_are_two_parts_with_parsed_arguments() -> None:
    (value,) = output_messages(assembled(OPENAI_CHAT))
    assert value == {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "call_JMW1whyEaYG438VE1OIflxA2",
                "name": "GetWeatherArgs",
                "arguments": {"city": "Edinburgh", "country": "GB", "units": "c"},
            },
            {
                "type": "tool_call",
                "id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "name": "get_stock_price",
                "arguments": {"ticker": "AAPL", "exchange": "NASDAQ"},
            },
        ],
        "finish_reason": "tool_call",
    }


def test_anthropic_text_then_call_keep_their_order() -> None:
    (value,) = output_messages(assembled(ANTHROPIC))
    assert [p["type"] for p in value["parts"]] == ["text", "tool_call"]
    assert value["parts"][0]["content"] == "I'll check the current weather in Paris for you."
    assert value["parts"][1]["arguments"] == {"location": "Paris"}
    assert value["finish_reason"] == "tool_call" and "complete" not in value


def test_server_tools_are_server_tool_call_parts_with_their_results() -> None:
    (message,) = assembled(WEB_SEARCH)
    (value,) = output_messages([message])
    check_schema([value])
    server = [p for p in value["parts"] if p["type"] == "server_tool_call"]
    responses = [p for p in value["parts"] if p["type"] == "server_tool_call_response"]
    assert server and responses
    assert server[0]["name"] == "web_search"
    assert server[0]["server_tool_call"]["type"] == message.tool_uses[0].kind
    assert responses[0]["id"] == server[0]["id"]
    assert not [p for p in value["parts"] if p["type"] == "tool_call"]
    assert value["finish_reason"] == "stop"


def test_a_cut_stream_says_it_is_incomplete() -> None:
    cut = ANTHROPIC[: ANTHROPIC.index(b"\n", ANTHROPIC.index(b'"partial_json":"on')) + 1]
    (value,) = output_messages(assembled(cut))
    check_schema([value])
    assert value["complete"] is False and value["finish_reason"] == "error"
    (call,) = [p for p in value["parts"] if p["type"] == "tool_call"]
    # The cut input is not one JSON value: kept as the text received, never invented.
    assert isinstance(call["arguments"], str)


def test_length_and_filter_use_the_conventions_words() -> None:
    length = OPENAI_CHAT.replace(b'"finish_reason":"tool_calls"', b'"finish_reason":"length"')
    assert length != OPENAI_CHAT
    (value,) = output_messages(assembled(length))
    assert value["finish_reason"] == "length" and value["complete"] is False
    check_schema([value])
    filtered = OPENAI_CHAT.replace(
        b'"finish_reason":"tool_calls"', b'"finish_reason":"content_filter"'
    )
    (message,) = assembled(filtered)
    assert finish_reason(message) == "content_filter"


def test_output_messages_refuses_what_is_not_a_message() -> None:
    with pytest.raises(TypeError, match="AssembledMessage"):
        output_messages([{"role": "assistant"}])  # type: ignore[list-item]


# ------------------------------------------------------------ spans and measures


def tracer_and_exporter() -> tuple[Any, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def test_record_sets_messages_finish_reasons_and_usage_on_a_real_span() -> None:
    tracer, exporter = tracer_and_exporter()
    messages = assembled(ANTHROPIC)
    with tracer.start_as_current_span("chat claude") as span:
        record(span, messages)
    (finished,) = exporter.get_finished_spans()
    attributes = dict(finished.attributes or {})
    assert json.loads(str(attributes[OUTPUT_MESSAGES])) == output_messages(messages)
    assert tuple(attributes["gen_ai.response.finish_reasons"]) == ("tool_call",)  # type: ignore[arg-type]
    assert attributes["gen_ai.usage.input_tokens"] == 377
    assert attributes["gen_ai.usage.output_tokens"] == 65
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 0
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 0
    # The provider gave no reasoning count, so there is none; nor any timing.
    assert "gen_ai.usage.reasoning.output_tokens" not in attributes
    assert "gen_ai.response.time_to_first_chunk" not in attributes


def test_record_of_a_timed_stream_sets_the_streaming_measures() -> None:
    tracer, exporter = tracer_and_exporter()
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    pieces = [OPENAI_CHAT[i : i + 200] for i in range(0, len(OPENAI_CHAT), 200)]
    timing = StreamTiming()
    asm = Assembler("openai-chat")
    for piece in timed(pieces, timing):
        asm.feed_bytes(piece)
    asm.close()
    with tracer.start_as_current_span("chat gpt") as span:
        record(
            span,
            asm.messages(),
            timing=timing,
            meter=meter,
            attributes={"gen_ai.request.model": "gpt-4o"},
        )
    (finished,) = exporter.get_finished_spans()
    attributes = dict(finished.attributes or {})
    first = attributes["gen_ai.response.time_to_first_chunk"]
    assert isinstance(first, float) and first == timing.time_to_first_chunk and first >= 0
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 0
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        metric.name: metric.data.data_points[0]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }
    ttfc = points["gen_ai.client.operation.time_to_first_chunk"]
    per_chunk = points["gen_ai.client.operation.time_per_output_chunk"]
    assert ttfc.count == 1  # type: ignore[union-attr]
    assert per_chunk.count == len(pieces) - 1  # type: ignore[union-attr]
    assert dict(per_chunk.attributes or {}) == {"gen_ai.request.model": "gpt-4o"}
    assert per_chunk.sum == pytest.approx(sum(timing.time_per_output_chunk))  # type: ignore[union-attr]


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).bodies.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    handler: type[_Receiver] = type("Receiver", (_Receiver,), {"bodies": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.bodies
    finally:
        server.shutdown()
        server.server_close()


def test_spans_reach_an_otlp_http_receiver(receiver: tuple[str, list[tuple[str, bytes]]]) -> None:
    url, bodies = receiver
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    messages = assembled(OPENAI_CHAT)
    with provider.get_tracer("test").start_as_current_span("chat gpt") as span:
        record(span, messages)
    provider.shutdown()
    (path, body), *_ = bodies
    assert path == "/v1/traces"
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    (span_data,) = request.resource_spans[0].scope_spans[0].spans
    attributes = {a.key: a.value for a in span_data.attributes}
    assert json.loads(attributes[OUTPUT_MESSAGES].string_value) == output_messages(messages)
    assert attributes["gen_ai.usage.input_tokens"].int_value == 149
    assert [
        v.string_value for v in attributes["gen_ai.response.finish_reasons"].array_value.values
    ] == ["tool_call"]


# ------------------------------------------------------------ replay --format otel


def replay(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolstitch", "replay", "--format", "otel", *map(str, args)],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_replay_format_otel_prints_one_message_per_choice_with_its_stream() -> None:
    done = replay(
        REAL / "openai_chat-completions-parallel-two-tools.sse",
        REAL / "openai_responses-function-call.vcr.yaml",
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["stream"].rsplit("/", 1)[1], line["choice"]) for line in lines] == [
        ("openai_chat-completions-parallel-two-tools.sse", 0),
        ("openai_responses-function-call.vcr.yaml#1", 0),
        ("openai_responses-function-call.vcr.yaml#2", 0),
    ]
    check_schema(lines)
    assert {k: v for k, v in lines[0].items() if k not in ("stream", "choice")} == output_messages(
        assembled(OPENAI_CHAT)
    )[0]
    assert lines[2]["parts"][0]["type"] == "text" and lines[2]["finish_reason"] == "stop"


def test_replay_format_otel_of_a_cut_stream_on_stdin_fails_and_says_so() -> None:
    cut = ANTHROPIC[: ANTHROPIC.index(b'"partial_json"') + 40]
    done = replay("-", stdin=cut)
    assert done.returncode == 1
    (line,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert line["stream"] == "<stdin>" and line["complete"] is False
    check_schema([line])


def test_replay_format_otel_reports_an_unreadable_file() -> None:
    done = replay(HERE / "no-such-capture.sse")
    assert done.returncode == 1
    (line,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert line["complete"] is False and "no-such-capture" in done.stderr
    assert line["error"]


def test_replay_format_otel_refuses_tools_and_clusters(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"get_weather": {"type": "object"}}))
    for extra in (["--tools", str(tools)], ["--scheduler", "local:1"]):
        done = replay(REAL / "openai_chat-completions-parallel-two-tools.sse", *extra)
        assert done.returncode == 2 and "--format otel" in done.stderr, done.stderr
