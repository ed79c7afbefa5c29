"""The tool loop end to end, in every dialect: a stream with a broken call is assembled
from a local HTTP server through the real clients (``openai``, ``anthropic``, ``httpx``),
``validated()`` refuses the broken call, ``ToolValidationError.results()`` answers it,
``render_turn`` renders the turn, and the next request is sent through the same client.
What the server received is then read back the way the project reads a provider's
whole response (the rendered assistant turn as a non-streamed body): the calls come
back with the ids and names they were sent with, the broken one in its dialect's form
for invalid input.

Then every pair of dialects: a multi-call turn assembled from one dialect rendered into
another, each id checked against the target's documented rule (written out here, not
taken from the renderer), results answering their calls, and the ids mapped back.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from http_server import Recording, RecordingServer
from readers import eventstream_frame
from test_render import anthropic_type, check_sdk, openai_chat_type, openai_responses_type
from toolstitch import (
    AssembledMessage,
    Assembler,
    IdMap,
    ImageBlock,
    RenderError,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    Toolset,
    ToolUseBlock,
    ToolValidationError,
    assemble,
    render_assistant,
    render_results,
    render_turn,
)
from toolstitch.render import ID_RULES, IdRule

DIALECTS = ["openai-chat", "openai-responses", "anthropic", "bedrock", "gemini", "cohere"]

TOOLS = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "write_file": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"],
    },
}

Call = tuple[str, str, str]  # id, name, raw arguments

# ------------------------------------------------------------ streams per dialect


def _pieces(text: str, rng: random.Random) -> list[str]:
    out, at = [], 0
    while at < len(text):
        n = rng.randint(1, 7)
        out.append(text[at : at + n])
        at += n
    return out


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def chat_stream(calls: list[Call], rng: random.Random) -> Recording:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "created": 1}

    def chunk(
        delta: dict[str, Any], finish: str | None = None
    ) -> tuple[str | None, dict[str, Any]]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return None, {**head, "choices": [choice]}

    events = [chunk({"role": "assistant", "content": "Let me see."})]
    for i, (call_id, name, arguments) in enumerate(calls):
        opened = {"index": i, "id": call_id, "type": "function"}
        events.append(chunk({"tool_calls": [{**opened, "function": {"name": name}}]}))
        for piece in _pieces(arguments, rng):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, "tool_calls"))
    return Recording(_sse(events) + b"data: [DONE]\n\n")


def responses_stream(calls: list[Call], rng: random.Random) -> Recording:
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": response})
    ]
    items = []
    for i, (call_id, name, arguments) in enumerate(calls):
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": call_id, "name": name}
        added = {**item, "arguments": "", "status": "in_progress"}
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": i, "item": added},
            )
        )
        for piece in _pieces(arguments, rng):
            delta = {"output_index": i, "item_id": f"fc_{i}", "delta": piece}
            events.append(
                (
                    "response.function_call_arguments.delta",
                    {"type": "response.function_call_arguments.delta", **delta},
                )
            )
        done = {**item, "arguments": arguments, "status": "completed"}
        items.append(done)
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": i, "item": done},
            )
        )
    final = {**response, "status": "completed", "output": items}
    events.append(("response.completed", {"type": "response.completed", "response": final}))
    return Recording(_sse(events))


def anthropic_stream(calls: list[Call], rng: random.Random) -> Recording:
    message: dict[str, Any] = {
        "id": "msg_1",
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
        start = {"type": "content_block_start", "index": i, "content_block": block}
        events.append(("content_block_start", start))
        for piece in _pieces(arguments, rng):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}
    events.append(("message_delta", stop))
    events.append(("message_stop", {"type": "message_stop"}))
    return Recording(_sse(events))


def bedrock_stream(calls: list[Call], rng: random.Random) -> Recording:
    frames = [eventstream_frame("messageStart", {"role": "assistant"})]
    for i, (call_id, name, arguments) in enumerate(calls):
        start = {"start": {"toolUse": {"toolUseId": call_id, "name": name}}, "contentBlockIndex": i}
        frames.append(eventstream_frame("contentBlockStart", start))
        for piece in _pieces(arguments, rng):
            delta = {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": i}
            frames.append(eventstream_frame("contentBlockDelta", delta))
        frames.append(eventstream_frame("contentBlockStop", {"contentBlockIndex": i}))
    frames.append(eventstream_frame("messageStop", {"stopReason": "tool_use"}))
    usage = {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}
    frames.append(eventstream_frame("metadata", usage))
    return Recording(b"".join(frames), "application/vnd.amazon.eventstream")


def gemini_stream(calls: list[Call], rng: random.Random) -> Recording:
    """Gemini sends each call whole, its arguments an object (and, on Vertex, no id)."""
    events: list[tuple[str | None, dict[str, Any]]] = []
    for _call_id, name, arguments in calls:
        part = {"functionCall": {"name": name, "args": json.loads(arguments)}}
        content = {"role": "model", "parts": [part]}
        events.append((None, {"candidates": [{"content": content, "index": 0}]}))
    end = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}
    events.append((None, {"candidates": [{**end, "index": 0}]}))
    return Recording(_sse(events))


def cohere_stream(calls: list[Call], rng: random.Random) -> Recording:
    start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}
    events: list[tuple[str | None, dict[str, Any]]] = [
        (None, {"id": "c-1", "type": "message-start", "delta": {"message": start}}),
        (
            None,
            {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will look."}}},
        ),
    ]
    for i, (call_id, name, arguments) in enumerate(calls):
        opened = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(
            (
                None,
                {
                    "type": "tool-call-start",
                    "index": i,
                    "delta": {"message": {"tool_calls": opened}},
                },
            )
        )
        for piece in _pieces(arguments, rng):
            delta = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
            events.append((None, {"type": "tool-call-delta", "index": i, "delta": delta}))
        events.append((None, {"type": "tool-call-end", "index": i}))
    end = {"finish_reason": "TOOL_CALL", "usage": {"tokens": {"input_tokens": 1}}}
    events.append((None, {"type": "message-end", "delta": end}))
    return Recording(_sse(events))


STREAMS: dict[str, Callable[[list[Call], random.Random], Recording]] = {
    "openai-chat": chat_stream,
    "openai-responses": responses_stream,
    "anthropic": anthropic_stream,
    "bedrock": bedrock_stream,
    "gemini": gemini_stream,
    "cohere": cohere_stream,
}

# Each dialect's calls, with ids as its servers mint them: a vLLM id (46 characters,
# over OpenAI's 40), Responses call ids, Anthropic and Bedrock ids, none from Gemini
# (toolstitch mints call_0_<n>), Cohere's name-based ids. The second call is broken:
# cut JSON where the dialect streams text, a schema failure where it streams objects.
GOOD = '{"city": "Paris", "days": 2}'
CUT = '{"path": "src/main.rs", "text": "fn main() {'
BAD_SCHEMA = '{"city": 7, "days": 0}'

CALLS: dict[str, list[Call]] = {
    "openai-chat": [
        ("chatcmpl-tool-0f6c3b1e9a2d4c5f8e7a6b5c4d3e2f10", "get_weather", GOOD),
        ("chatcmpl-tool-1a2b3c4d5e6f708192a3b4c5d6e7f809", "write_file", CUT),
    ],
    "openai-responses": [
        ("call_rW2xJ8kQ1", "get_weather", GOOD),
        ("call_pL0vN5zT7", "write_file", CUT),
    ],
    "anthropic": [
        ("toolu_01A09q90qw90lq917835lq9", "get_weather", GOOD),
        ("toolu_01B7YyBqU4zR3kXwXg8w2nVb", "write_file", CUT),
    ],
    "bedrock": [
        ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_weather", GOOD),
        ("tooluse_8sR2k1PqT9mXb3nL5vWc0A", "write_file", CUT),
    ],
    "gemini": [("", "get_weather", GOOD), ("", "get_weather", BAD_SCHEMA)],
    "cohere": [
        ("get_weather_e8p4pn45zt0t", "get_weather", GOOD),
        ("write_file_pyxssbwnq9fq", "write_file", CUT),
    ],
}

# The ids each target accepts, as documented (docs/tool-loop.md gives the sources).
TARGET_IDS = {
    "openai-chat": re.compile(r".{1,40}", re.S),
    "openai-responses": re.compile(r".{1,64}", re.S),
    "anthropic": re.compile(r"[A-Za-z0-9_-]+"),
    "bedrock": re.compile(r"[A-Za-z0-9_-]{1,64}"),
    "gemini": re.compile(r".+", re.S),
    "cohere": re.compile(r".+", re.S),
    "mistral": re.compile(r"[A-Za-z0-9]{9}"),
}

# ------------------------------------------------------------ the server and clients

PATHS = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "bedrock": "/model/m/converse-stream",
    "gemini": "/v1beta/models/m:streamGenerateContent",
    "cohere": "/v2/chat",
}


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    routes = {PATHS[d]: STREAMS[d](CALLS[d], random.Random(i)) for i, d in enumerate(DIALECTS)}
    with RecordingServer(routes) as s:
        yield s


def stream_from(server: RecordingServer, dialect: str, request: dict[str, Any]) -> Any:
    """Sends ``request`` the way a user of ``dialect`` would, and returns the stream."""
    if dialect == "openai-chat":
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        return client.chat.completions.create(model="m", stream=True, **request)
    if dialect == "openai-responses":
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        return client.responses.create(model="m", stream=True, **request)
    if dialect == "anthropic":
        claude = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        return claude.messages.create(model="m", max_tokens=64, stream=True, **request)
    url = server.url + PATHS[dialect] + ("?alt=sse" if dialect == "gemini" else "")
    return httpx.Client(timeout=10).send(
        httpx.Request("POST", url, json=_jsonable(request)), stream=True
    )


def _jsonable(value: Any) -> Any:
    """boto3 sends Bedrock blobs as bytes; over plain HTTP they go as base64 text."""
    return json.loads(json.dumps(value, default=lambda b: b.decode("latin-1")))


def conversation(dialect: str, history: list[Any]) -> dict[str, Any]:
    if dialect == "openai-responses":
        return {"input": history}
    if dialect == "gemini":
        return {"contents": history}
    return {"messages": history}


def first_turn(dialect: str) -> list[Any]:
    if dialect == "gemini":
        return [{"role": "user", "parts": [{"text": "Weather in Paris? Then write main.rs."}]}]
    if dialect == "bedrock":
        return [{"role": "user", "content": [{"text": "Weather in Paris? Then write main.rs."}]}]
    return [{"role": "user", "content": "Weather in Paris? Then write main.rs."}]


# --------------------------------------------------- rendered turns read back


def as_body(dialect: str, assistant: list[dict[str, Any]]) -> dict[str, Any]:
    """The rendered assistant turn as the whole (non-streamed) response of its dialect."""
    if dialect == "openai-chat":
        (message,) = assistant
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        return {"id": "x", "object": "chat.completion", "choices": [choice]}
    if dialect == "openai-responses":
        output = []
        for item in assistant:
            if item["type"] == "message":
                text = {"type": "output_text", "text": item["content"], "annotations": []}
                item = {**item, "id": "msg_x", "status": "completed", "content": [text]}
            output.append({**item, "status": "completed"})
        return {"id": "r", "object": "response", "status": "completed", "output": output}
    (message,) = assistant
    if dialect == "anthropic":
        return {
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": message["content"],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    if dialect == "bedrock":
        return {"output": {"message": message}, "stopReason": "tool_use"}
    if dialect == "gemini":
        return {"candidates": [{"content": message, "finishReason": "STOP", "index": 0}]}
    # A turn without calls ends COMPLETE: TOOL_CALL over no call is a lost call (Q65).
    finish = "TOOL_CALL" if message.get("tool_calls") else "COMPLETE"
    return {"id": "c", "finish_reason": finish, "message": message}


def read_back(dialect: str, assistant: list[dict[str, Any]]) -> AssembledMessage:
    asm = Assembler(dialect)  # type: ignore[arg-type]
    asm.feed(json.dumps(_jsonable(as_body(dialect, assistant))))
    asm.close()
    message = asm.message()
    assert message.complete, message.problems
    return message


def sent_back(dialect: str, raw: str) -> str:
    """A call's input as the dialect carries it back: text as it came, or (where the
    input is an object) the object, with ``{"INVALID_JSON": text}`` for what is not one."""
    if dialect in ("openai-chat", "openai-responses", "cohere"):
        return raw
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        value = {"INVALID_JSON": raw}
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def check_types(dialect: str, items: list[dict[str, Any]]) -> None:
    if dialect == "openai-chat":
        check_sdk(openai_chat_type(), items)
    elif dialect == "openai-responses":
        check_sdk(openai_responses_type(), items)
    elif dialect == "anthropic":
        check_sdk(anthropic_type(), items)


# -------------------------------------------------------------------- the loop


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_loop_answers_a_broken_call(server: RecordingServer, dialect: str) -> None:
    toolset = Toolset(TOOLS)
    history = first_turn(dialect)
    (message,) = assemble(stream_from(server, dialect, conversation(dialect, history)))
    assert message.complete and len(message.tool_uses) == 2
    good, broken = message.tool_uses
    assert broken.input == CALLS[dialect][1][2] or dialect == "gemini"

    with pytest.raises(ToolValidationError) as caught:
        message.validated(toolset)
    err = caught.value
    assert [c.id for c in err.calls] == [good.id]
    results = [ToolResultBlock.text(good.id, "sunny, 21 C"), *err.results()]
    (answer,) = err.results()
    text = text_of(answer)
    assert answer.is_error and broken.id in text
    if dialect == "gemini":  # what the schema expected where the arguments fail
        assert '/city: 7 is not of type "string" (expected: {"type":"string"})' in text
        assert '(expected: {"type":"integer","minimum":1})' in text
    else:  # the byte where the JSON breaks, and what to send instead
        assert f"at byte {len(CUT)}" in text and '"required":["path","text"]' in text

    ids = IdMap()  # ids the dialect refuses (vLLM's, 46 characters, in openai-chat) mapped
    rendered = render_turn(dialect, message, results, ids=ids)
    check_types(dialect, rendered)
    history += rendered
    next_stream = stream_from(server, dialect, conversation(dialect, history))
    assemble(next_stream)  # the server answers the follow-up request too
    request = server.requests[-1].json
    assert request[{"openai-responses": "input", "gemini": "contents"}.get(dialect, "messages")][
        1:
    ] == _jsonable(rendered)

    # The assistant turn as sent, read back as that dialect's response.
    n = 1 if dialect != "openai-responses" else len(rendered) - 2
    again = read_back(dialect, rendered[:n])
    assert [(ids.original(c.id), c.name) for c in again.tool_uses] == [
        (good.id, good.name),
        (broken.id, broken.name),
    ]
    assert [c.input for c in again.tool_uses] == [
        sent_back(dialect, good.input),
        sent_back(dialect, broken.input),
    ]
    # The results answer the calls, the error one marked where the dialect can say so.
    answered = json.dumps(_jsonable(rendered[n:]))
    assert all(c.id in answered for c in again.tool_uses)
    assert json.dumps(text)[1:-1][:200] in answered


def text_of(result: ToolResultBlock) -> str:
    (block,) = result.content
    assert isinstance(block, TextBlock)
    return block.text


# ---------------------------------------------------------------------- Cohere


def test_cohere_turn_in_the_v2_request_form() -> None:
    asm = Assembler("cohere")
    for line in cohere_stream(CALLS["cohere"], random.Random(3)).body.decode().split("\n\n"):
        if line.startswith("data: "):
            asm.feed(line.removeprefix("data: "))
    asm.close()
    message = asm.message()
    results = [
        ToolResultBlock.text(CALLS["cohere"][0][0], "sunny"),
        ToolResultBlock.error(CALLS["cohere"][1][0], "cut input"),
    ]
    assistant, *tool = render_turn("cohere", message, results)
    assert assistant == {
        "role": "assistant",
        "tool_plan": "I will look.",
        "tool_calls": [
            {
                "id": "get_weather_e8p4pn45zt0t",
                "type": "function",
                "function": {"name": "get_weather", "arguments": GOOD},
            },
            {
                "id": "write_file_pyxssbwnq9fq",
                "type": "function",
                "function": {"name": "write_file", "arguments": CUT},
            },
        ],
    }
    assert tool == [
        {"role": "tool", "tool_call_id": "get_weather_e8p4pn45zt0t", "content": "sunny"},
        {"role": "tool", "tool_call_id": "write_file_pyxssbwnq9fq", "content": "cut input"},
    ]
    # Round trip: the turn read back as a Cohere chat response is the same message.
    again = read_back("cohere", [assistant])
    assert again.blocks == message.blocks
    # Text goes as content parts; a text-only turn has no tool plan.
    (plain,) = render_assistant("cohere", [ThinkingBlock("hmm"), TextBlock("Hello.")])
    assert plain == {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]}
    assert read_back("cohere", [plain]).blocks == (TextBlock("Hello."),)
    with pytest.raises(RenderError, match="cohere"):
        render_results("cohere", [ToolResultBlock("c", (ImageBlock(media_type="image/png"),))])


# ------------------------------------------------------------- every pair


def source_message(dialect: str) -> AssembledMessage:
    calls = [(i, n, GOOD if n == "get_weather" else CUT) for i, n, _ in CALLS[dialect]]
    if dialect == "gemini":
        calls = [("", "get_weather", GOOD), ("", "write_file", '{"path": "a"}')]
    calls.append((calls[0][0] and calls[0][0][:-3] + "zzz", "get_weather", '{"city": "Oslo"}'))
    recording = STREAMS[dialect](calls, random.Random(7))
    asm = Assembler(dialect)  # type: ignore[arg-type]
    asm.feed_bytes(recording.body)
    asm.close()
    message = asm.message()
    assert message.complete and len(message.tool_uses) == 3, message.problems
    return message


@pytest.mark.parametrize("target", [*DIALECTS, "mistral"])
@pytest.mark.parametrize("source", DIALECTS)
def test_every_pair_renders_with_ids_the_target_accepts(source: str, target: str) -> None:
    message = source_message(source)
    calls = message.tool_uses
    results = [ToolResultBlock.text(c.id, f"result {n}") for n, c in enumerate(calls)]
    results.reverse()  # answered out of order: rendered in call order
    dialect = "openai-chat" if target == "mistral" else target
    ids = IdMap(target) if target == "mistral" else IdMap()
    notes: list[str] = []
    rendered = render_turn(dialect, message, results, ids=ids, notes=notes)
    check_types(dialect, rendered)
    json.dumps(_jsonable(rendered))
    n = (
        len(rendered) - len(calls)
        if dialect in ("openai-chat", "openai-responses", "cohere")
        else 1
    )
    if dialect == "openai-responses":
        n = len(rendered) - len(calls)
    again = read_back(dialect, rendered[:n])
    mapped = [c.id for c in again.tool_uses]
    assert len(set(mapped)) == len(calls)
    if source == target:
        # Q55: into the dialect they came from, ids go back exactly as sent (vLLM's
        # 46-character ids included), unless the caller names a rule.
        assert mapped == [c.id for c in calls]
    for original, new in zip(calls, mapped, strict=True):
        assert source == target or TARGET_IDS[target].fullmatch(new), (target, new)
        assert ids.original(new) == original.id
        if TARGET_IDS[target].fullmatch(original.id):
            assert new == original.id  # an id the target takes is left alone
    assert [c.name for c in again.tool_uses] == [c.name for c in calls]
    assert [c.input for c in again.tool_uses] == [sent_back(dialect, c.input) for c in calls]
    # Each result answers its call under the same mapped id, in call order.
    assert answered_ids(dialect, rendered[n:]) == mapped
    # Without an IdMap the mapping is the same: results rendered apart still match.
    policy = target if target == "mistral" else None
    apart = render_results(dialect, results, calls=message, ids=policy)
    assert answered_ids(dialect, apart) == mapped


def answered_ids(dialect: str, items: list[dict[str, Any]]) -> list[str]:
    if dialect in ("openai-chat", "cohere"):
        return [m["tool_call_id"] for m in items]
    if dialect == "openai-responses":
        return [i["call_id"] for i in items]
    (message,) = items
    if dialect == "anthropic":
        return [b["tool_use_id"] for b in message["content"]]
    if dialect == "bedrock":
        return [b["toolResult"]["toolUseId"] for b in message["content"]]
    return [p["functionResponse"]["id"] for p in message["parts"]]


def test_ids_are_mapped_deterministically_and_never_collide() -> None:
    rule = ID_RULES["mistral"]
    long_id = "chatcmpl-tool-0f6c3b1e9a2d4c5f8e7a6b5c4d3e2f10"
    assert rule.mint(long_id) == rule.mint(long_id) and len(rule.mint(long_id)) == 9
    assert rule.accepts("a1B2c3D4e") and not rule.accepts("call_0_1")
    # A rule whose replacements are one character long: the map keeps them apart.
    tiny = IdRule("tiny", r"[0-9]", 1, "", 1)
    ids = IdMap(tiny)
    made = [ids.map(f"call_{i}", tiny) for i in range(20)]
    assert len(set(made)) == 20
    assert [ids.original(m) for m in made] == [f"call_{i}" for i in range(20)]
    assert ids.map("call_3", tiny) == made[3]
    assert ids.items()[3] == ("call_3", made[3])
    with pytest.raises(RenderError, match="unknown id rule"):
        render_assistant("openai-chat", [ToolUseBlock("c", "f", "{}")], ids="nope")
    # "as-is" sends every id as it came.
    (kept,) = render_assistant("anthropic", [ToolUseBlock("a.b", "f", "{}")], ids="as-is")
    assert kept["content"][0]["id"] == "a.b"


# ------------------------------------------------ ids in their own dialect (Q55)


def sse_of(events: list[dict[str, Any]], named: bool) -> bytes:
    out = b""
    for e in events:
        head = f"event: {e['type']}\n" if named else ""
        out += f"{head}data: {json.dumps(e)}\n\n".encode()
    return out


def chat_turn(call_id: str) -> AssembledMessage:
    """An OpenAI chat stream (vLLM's shape) with one call of id ``call_id``."""
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": GOOD},
    }
    chunks = [
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [c]}
        for c in (
            {"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}},
            {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
        )
    ]
    asm = Assembler("auto")
    asm.feed_bytes(sse_of(chunks, named=False) + b"data: [DONE]\n\n")
    asm.close()
    return asm.message()


def anthropic_turn(call_id: str) -> AssembledMessage:
    """An Anthropic Messages stream (Moonshot's Kimi K2 endpoint's shape) with one call."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": call_id,
                "name": "get_weather",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": GOOD},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    asm = Assembler("auto")
    asm.feed_bytes(sse_of(events, named=True))
    asm.close()
    return asm.message()


KIMI = "functions.get_weather:0"
VLLM = "chatcmpl-tool-0f6c3b1e9a2d4c5f8e7a6b5c4d3e2f10"  # 46 characters
JOINED = "call_abc|fc_def"


@pytest.mark.parametrize(
    ("turn", "dialect", "call_id"),
    [
        (chat_turn, "openai-chat", VLLM),
        (chat_turn, "openai-chat", KIMI),
        (anthropic_turn, "anthropic", KIMI),
        (anthropic_turn, "anthropic", JOINED),
    ],
)
def test_q55_ids_go_back_as_sent_into_the_dialect_they_came_from(
    turn: Callable[[str], AssembledMessage], dialect: str, call_id: str
) -> None:
    message = turn(call_id)
    assert message.complete and message.dialect == dialect
    results = [ToolResultBlock.text(call_id, "sunny")]
    rendered = render_turn(dialect, message, results)
    assert read_back(dialect, rendered[:1]).tool_uses[0].id == call_id
    assert answered_ids(dialect, rendered[1:]) == [call_id]
    # The same through one IdMap for the conversation, and with the source named.
    ids = IdMap()
    assert answered_ids(dialect, render_turn(dialect, message, results, ids=ids)[1:]) == [call_id]
    plain = list(message.blocks)  # blocks alone say nothing of where they came from
    apart = render_results(dialect, results, calls=plain, source=dialect)
    assert answered_ids(dialect, apart) == [call_id]


@pytest.mark.parametrize(
    ("turn", "dialect", "call_id", "target"),
    [
        (anthropic_turn, "anthropic", VLLM, "openai-chat"),  # another target: its rule
        (chat_turn, "openai-chat", KIMI, "anthropic"),
        (anthropic_turn, "anthropic", JOINED, "bedrock"),
    ],
)
def test_q55_twin_an_id_rule_applies_when_the_target_differs_or_is_asked_for(
    turn: Callable[[str], AssembledMessage], dialect: str, call_id: str, target: str
) -> None:
    message = turn(call_id)
    results = [ToolResultBlock.text(call_id, "sunny")]
    rendered = render_turn(target, message, results)
    (sent,) = [c.id for c in read_back(target, rendered[:1]).tool_uses]
    assert sent == ID_RULES[target].mint(call_id) and TARGET_IDS[target].fullmatch(sent)
    assert answered_ids(target, rendered[1:]) == [sent]
    # A rule asked for by name applies in their own dialect too.
    asked = render_turn(dialect, message, results, ids=target)
    assert [c.id for c in read_back(dialect, asked[:1]).tool_uses] == [sent]
    assert answered_ids(dialect, asked[1:]) == [sent]
    # Without calls= or source=, results cannot tell where their ids came from: the
    # dialect's own rule applies.
    rule = ID_RULES[dialect]
    alone = call_id if rule.accepts(call_id) else rule.mint(call_id)
    assert answered_ids(dialect, render_results(dialect, results)) == [alone]


def test_a_stateless_rule_never_sends_two_calls_with_one_id() -> None:
    """``ids="mistral"`` without a map: an id that is already the replacement another
    call's id gets (a model can send any id) would merge the two calls on the wire."""
    minted = ID_RULES["mistral"].mint("call_0_0")
    turn = [
        ToolUseBlock("call_0_0", "get_weather", GOOD),
        ToolUseBlock(minted, "get_weather", GOOD),
    ]
    results = [ToolResultBlock.text(c.id, "sunny") for c in turn]
    with pytest.raises(RenderError, match=rf"'call_0_0' and '{minted}' with one id '{minted}'"):
        render_assistant("openai-chat", turn, ids="mistral")
    with pytest.raises(RenderError, match="IdMap"):
        render_results("openai-chat", results, ids="mistral")
    with pytest.raises(RenderError, match="call_0_0"):
        render_turn("openai-chat", turn, results, ids="mistral")
    # A rule with one-character replacements: any two calls may meet.
    tiny = IdRule("tiny", r"[0-9]", 1, "", 1)
    many = [ToolUseBlock(f"call_{i}", "f", "{}") for i in range(20)]
    with pytest.raises(RenderError, match="tiny"):
        render_assistant("openai-chat", many, ids=tiny)


def test_twin_an_id_map_keeps_the_same_calls_apart_and_distinct_ids_pass() -> None:
    minted = ID_RULES["mistral"].mint("call_0_0")
    turn = [
        ToolUseBlock("call_0_0", "get_weather", GOOD),
        ToolUseBlock(minted, "get_weather", GOOD),
    ]
    results = [ToolResultBlock.text(c.id, f"r{n}") for n, c in enumerate(turn)]
    ids = IdMap("mistral")
    assistant, *answers = render_turn("openai-chat", turn, results, ids=ids)
    sent = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(sent)) == 2 and all(ID_RULES["mistral"].accepts(i) for i in sent)
    assert [a["tool_call_id"] for a in answers] == sent
    assert [ids.original(i) for i in sent] == ["call_0_0", minted]
    # Ids that do not meet pass without a map, results rendered apart matching.
    plain = [ToolUseBlock("call_0_0", "f", "{}"), ToolUseBlock("call_0_1", "f", "{}")]
    (chat,) = render_assistant("openai-chat", plain, ids="mistral")
    apart = render_results("openai-chat", [ToolResultBlock.text("call_0_1", "x")], ids="mistral")
    assert apart[0]["tool_call_id"] == chat["tool_calls"][1]["id"] != chat["tool_calls"][0]["id"]
    with pytest.raises(RenderError, match="unknown source dialect 'vllm'"):
        render_assistant("openai-chat", plain, source="vllm")


def test_state_that_cannot_travel_is_left_out_with_a_note() -> None:
    signed = ThinkingBlock("plan", signature="sig", signature_format="anthropic")
    gemini_call = ToolUseBlock(
        "g1",
        "get_weather",
        GOOD,
        provider_state='"sig-gem"',
        provider_state_format="gemini",
    )
    hosted = ToolUseBlock(
        "srvtoolu_1",
        "web_search",
        '{"query": "x"}',
        provider_state=json.dumps({"type": "server_tool_use", "id": "srvtoolu_1"}),
        provider_state_format="anthropic",
        kind="server_tool_use",
        server_side=True,
    )
    hosted_result = ToolResultBlock(
        "srvtoolu_1",
        (TextBlock("found"),),
        provider_state=json.dumps({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1"}),
        provider_state_format="anthropic",
        kind="web_search_tool_result",
    )
    turn = [signed, TextBlock("ok"), hosted, hosted_result, gemini_call]
    notes: list[str] = []
    (bedrock,) = render_assistant("bedrock", turn, notes=notes)
    assert bedrock["content"] == [
        {"text": "ok"},
        {"toolUse": {"toolUseId": "g1", "name": "get_weather", "input": json.loads(GOOD)}},
    ]
    assert any("srvtoolu_1" in n and "left out" in n for n in notes)
    assert any("'g1'" in n and "'gemini'" in n for n in notes)
    assert any("reasoning left out" in n for n in notes)
    # Gemini's code execution (a call it ran, and its result) stays in Gemini.
    code = ToolUseBlock(
        "call_0_0",
        "code_execution",
        '{"code": "print(2)"}',
        kind="executable_code",
        server_side=True,
    )
    result = ToolResultBlock(
        "call_0_0",
        (TextBlock("2"),),
        kind="code_execution_result",
        provider_state='{"outcome": "OUTCOME_OK", "output": "2"}',
        provider_state_format="gemini",
    )
    code_notes: list[str] = []
    for target in ("anthropic", "bedrock", "openai-responses", "cohere", "openai-chat"):
        rendered = render_assistant(target, [code, result, TextBlock("2")], notes=code_notes)
        assert "call_0_0" not in json.dumps(_jsonable(rendered)), target
    assert sum("call_0_0" in n for n in code_notes) == 5
    (gemini_turn,) = render_assistant("gemini", [code, result])
    assert [list(p) for p in gemini_turn["parts"]] == [["executableCode"], ["codeExecutionResult"]]
    # The same turn renders back into its own dialect whole, with nothing to note.
    own: list[str] = []
    (anthropic_turn,) = render_assistant("anthropic", turn[:4], notes=own)
    assert [b["type"] for b in anthropic_turn["content"]] == [
        "thinking",
        "text",
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert own == []
