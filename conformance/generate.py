"""Write the generated cases: every quirk row with its twin, protocol violations, hostile inputs.

    python conformance/generate.py

Deterministic (no clock, no randomness): the same files every run, committed under
``cases/quirk``, ``cases/violation`` and ``cases/hostile``. toolstitch is never
imported. Each expectation is the behaviour the quirk table (docs/quirks.md)
promises for that row, or, for violations, the rule stated beside each builder: a
stream cut before its dialect's end signal, doubled, reordered or tampered so that a
call could change must not yield an executable call ("refuse").
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
REAL = CASES / "real"

Event = dict[str, Any]


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- transports -------------------------------------------------------------------


def sse(events: list[Event], *, named: bool = False, done: bool = False) -> bytes:
    out = []
    for e in events:
        head = f"event: {e.get('type')}\n" if named else ""
        out.append(f"{head}data: {dumps(e)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def jsonl(events: list[Event]) -> bytes:
    return "".join(dumps(e) + "\n" for e in events).encode()


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v


def frame(event_type: str, payload: bytes) -> bytes:
    """One AWS event-stream message (prelude, CRCs) as Bedrock sends it."""
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def eventstream(events: list[Event]) -> bytes:
    """ConverseStream: each event's single key is its frame's event type."""
    out = b""
    for e in events:
        ((kind, value),) = e.items()
        out += frame(kind, dumps(value).encode())
    return out


def invoke_stream(events: list[Event]) -> bytes:
    """InvokeModelWithResponseStream: the model's events base64 in ``chunk`` frames."""
    return b"".join(
        frame("chunk", dumps({"bytes": base64.b64encode(dumps(e).encode()).decode()}).encode())
        for e in events
    )


# --- dialect builders ------------------------------------------------------------


def oa(delta: Event | None = None, finish: str | None = None, choice: int = 0, **top: Any) -> Event:
    chunk: Event = {
        "id": "chatcmpl-conf",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "conformance",
        "choices": [{"index": choice, "delta": delta or {}, "finish_reason": finish}],
    }
    chunk.update(top)
    return chunk


def tc(
    index: Any = 0,
    id: str | None = None,
    name: str | None = None,
    args: Any = None,
    type_: Any = "function",
    **extra: Any,
) -> Event:
    call: Event = {}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
    if type_ is not None and (id is not None or name is not None):
        call["type"] = type_
    function: Event = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    call["function"] = function
    call.update(extra)
    return call


def calls_delta(*calls: Event) -> Event:
    return {"tool_calls": list(calls)}


def opening() -> Event:
    return oa({"role": "assistant", "content": None})


def ant_message(
    blocks: list[tuple[str, Event, list[Event]]],
    stop: str | None = "tool_use",
    stop_event: bool = True,
) -> list[Event]:
    """Anthropic Messages events: ``blocks`` are (type, start fields, deltas)."""
    events: list[Event] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_conf",
                "type": "message",
                "role": "assistant",
                "model": "claude",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    ]
    for i, (kind, fields, deltas) in enumerate(blocks):
        block = {"type": kind, **fields}
        if kind in ("tool_use", "server_tool_use"):
            block.setdefault("input", {})
        if kind == "text":
            block.setdefault("text", "")
        events.append({"type": "content_block_start", "index": i, "content_block": block})
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    delta: Event = {"stop_reason": stop, "stop_sequence": None} if stop else {"stop_sequence": None}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 20}})
    if stop_event:
        events.append({"type": "message_stop"})
    return events


def ant_tool(id: str, name: str, *fragments: str) -> tuple[str, Event, list[Event]]:
    return (
        "tool_use",
        {"id": id, "name": name},
        [{"type": "input_json_delta", "partial_json": f} for f in fragments],
    )


def ant_text(text: str) -> tuple[str, Event, list[Event]]:
    return ("text", {}, [{"type": "text_delta", "text": text}])


def resp_stream(
    items: list[Event], *, status: str = "completed", model: str = "gpt-4o"
) -> list[Event]:
    """Responses events for function_call / custom_tool_call items, numbered."""
    events: list[Event] = [
        {
            "type": "response.created",
            "response": {
                "id": "resp_conf",
                "object": "response",
                "status": "in_progress",
                "model": model,
                "output": [],
            },
        }
    ]
    output = []
    for n, item in enumerate(items):
        kind = item["type"]
        field = "arguments" if kind == "function_call" else "input"
        delta_type = (
            "response.function_call_arguments"
            if kind == "function_call"
            else "response.custom_tool_call_input"
        )
        added = {**item, field: "", "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": n, "item": added})
        text = item[field]
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            events.append(
                {
                    "type": f"{delta_type}.delta",
                    "item_id": item["id"],
                    "output_index": n,
                    "delta": piece,
                }
            )
        events.append(
            {"type": f"{delta_type}.done", "item_id": item["id"], "output_index": n, field: text}
        )
        done = {**item, "status": "completed"}
        events.append({"type": "response.output_item.done", "output_index": n, "item": done})
        output.append(done)
    if status:
        events.append(
            {
                "type": f"response.{status}",
                "response": {
                    "id": "resp_conf",
                    "object": "response",
                    "status": status,
                    "model": model,
                    "output": output,
                    "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
                },
            }
        )
    for seq, e in enumerate(events):
        e["sequence_number"] = seq
    return events


def fc(call_id: str, name: str, arguments: str, item: str = "fc_conf") -> Event:
    return {
        "type": "function_call",
        "id": item,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def bedrock_events(
    tools: list[tuple[str, str, list[str]]], stop: str = "tool_use", pad: bool = False
) -> list[Event]:
    def p(v: Event) -> Event:
        return {**v, "p": "abcdefghijklmnop"} if pad else v

    events: list[Event] = [{"messageStart": p({"role": "assistant"})}]
    for i, (id_, name, fragments) in enumerate(tools):
        events.append(
            {
                "contentBlockStart": p(
                    {"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": id_, "name": name}}}
                )
            }
        )
        events += [
            {"contentBlockDelta": p({"contentBlockIndex": i, "delta": {"toolUse": {"input": f}}})}
            for f in fragments
        ]
        events.append({"contentBlockStop": p({"contentBlockIndex": i})})
    events.append({"messageStop": p({"stopReason": stop})})
    events.append(
        {
            "metadata": p(
                {
                    "usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12},
                    "metrics": {"latencyMs": 1},
                }
            )
        }
    )
    return events


def gem(parts: list[Event], finish: str | None = "STOP") -> Event:
    candidate: Event = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}


def cohere_events(
    calls: list[tuple[str, str, list[str]]], finish: str | None = "TOOL_CALL", end: bool = True
) -> list[Event]:
    events: list[Event] = [
        {
            "type": "message-start",
            "id": "conf",
            "delta": {
                "message": {
                    "role": "assistant",
                    "content": [],
                    "tool_plan": "",
                    "tool_calls": [],
                    "citations": [],
                }
            },
        }
    ]
    for i, (id_, name, fragments) in enumerate(calls):
        events.append(
            {
                "type": "tool-call-start",
                "index": i,
                "delta": {
                    "message": {
                        "tool_calls": {
                            "id": id_,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    }
                },
            }
        )
        events += [
            {
                "type": "tool-call-delta",
                "index": i,
                "delta": {"message": {"tool_calls": {"function": {"arguments": f}}}},
            }
            for f in fragments
        ]
        events.append({"type": "tool-call-end", "index": i})
    if end:
        delta: Event = {"usage": {"tokens": {"input_tokens": 5, "output_tokens": 7}}}
        if finish:
            delta["finish_reason"] = finish
        events.append({"type": "message-end", "delta": delta})
    return events


def ollama_events(calls: list[Event], done_reason: str | None = "stop") -> list[Event]:
    events: list[Event] = [
        {
            "model": "qwen3",
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", "tool_calls": [c]},
            "done": False,
        }
        for c in calls
    ]
    if done_reason is not None:
        events.append(
            {
                "model": "qwen3",
                "created_at": "2025-01-01T00:00:01Z",
                "message": {"role": "assistant", "content": ""},
                "done_reason": done_reason,
                "done": True,
                "eval_count": 7,
            }
        )
    return events


def expect_calls(*calls: Event) -> Event:
    return {"outcome": "calls", "calls": list(calls)}


REFUSE: Event = {"outcome": "refuse"}


def call(name: str, arguments: Any, id: str | None = None) -> Event:
    out: Event = {"name": name}
    if id is not None:
        out["id"] = id
    if isinstance(arguments, str):
        out["input_text"] = arguments
    else:
        out["arguments"] = arguments
    return out


# --- writing ---------------------------------------------------------------------

WRITTEN: list[str] = []


def case(
    category: str,
    name: str,
    dialect: str,
    transport: str,
    data: bytes,
    expect: Event,
    source: Event,
    request: Event | None = None,
    truth: list[Event] | None = None,
    conventions: list[str] | None = None,
) -> None:
    folder = CASES / category
    folder.mkdir(parents=True, exist_ok=True)
    stream = f"{name}.{transport}"
    (folder / stream).write_bytes(data)
    meta: Event = {
        "id": f"{category}/{name}",
        "dialect": dialect,
        "category": category,
        "transport": transport,
        "stream": stream,
        "source": source,
        "expect": expect,
    }
    if request:
        meta["request"] = request
    if conventions:
        # A provider's own convention that the wire shape does not tell (README.md,
        # "The cases"): only a library that follows it is judged.
        meta["conventions"] = conventions
    if truth is not None and truth != expect.get("calls"):
        # The calls the model sent (README.md, "Verdicts"): running one of them out of
        # this stream is `unchecked`, any other call `altered`.
        meta["truth"] = truth
    (folder / f"{name}.case.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    WRITTEN.append(meta["id"])


def quirk(
    row: str,
    shape: str,
    what: str,
    dialect: str,
    transport: str,
    data: bytes,
    expect: Event,
    request: Event | None = None,
    conventions: list[str] | None = None,
) -> None:
    name = f"{row.lower()}.{shape}"
    # A twin is its row's quirk stream tampered with or cut: the model's true calls
    # are the quirk's.
    if shape == "quirk":
        QUIRK_CALLS[row] = list(expect.get("calls", []))
    truth = QUIRK_CALLS[row] if shape == "twin" else None
    case(
        "quirk",
        name,
        dialect,
        transport,
        data,
        expect,
        {"quirk": row, "shape": shape, "what": what},
        request,
        truth,
        conventions,
    )


QUIRK_CALLS: dict[str, list[Event]] = {}


def chat(events: list[Event], done: bool = True) -> bytes:
    return sse(events, done=done)


def cut_last(events: list[Event]) -> list[Event]:
    """The stream without its finish chunk: the generic twin of an accepted shape."""
    return [e for e in events if not any(c.get("finish_reason") for c in e.get("choices", []))]


TWIN_CUT = "twin: the same stream cut before its finish reason (Q15): nothing may run"
W = {"city": "Paris"}
WS = '{"city": "Paris"}'


def quirk_rows() -> None:
    Q = quirk
    # Q1 index missing
    s = [
        opening(),
        oa(calls_delta(tc(None, "call_q1", "weather", ""))),
        oa(calls_delta(tc(None, args='{"city": '))),
        oa(calls_delta(tc(None, args='"Paris"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q1",
        "quirk",
        "tool-call deltas without index",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q1")),
    )
    Q("Q1", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q2 parallel calls at index 0 with distinct ids
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_a", "weather", WS))),
        oa(calls_delta(tc(0, "call_b", "time", '{"tz": "CET"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q2",
        "quirk",
        "two calls at index 0, distinct ids",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_a"), call("time", {"tz": "CET"}, "call_b")),
    )
    Q(
        "Q2",
        "twin",
        "twin: the second call arrives after the finish reason (Q24)",
        "openai-chat",
        "sse",
        chat([s[0], s[1], s[3], s[2]]),
        REFUSE,
    )
    # Q3 sparse / negative index
    s = [
        opening(),
        oa(calls_delta(tc(-7, "call_n", "weather", WS))),
        oa(calls_delta(tc(1000000, "call_h", "time", '{"tz": "CET"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q3",
        "quirk",
        "indexes -7 and 1000000",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_n"), call("time", {"tz": "CET"}, "call_h")),
    )
    Q("Q3", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q4 id / name / type repeated on every chunk
    s = (
        [opening()]
        + [oa(calls_delta(tc(0, "call_q4", "weather", f))) for f in ('{"city"', ': "Pa', 'ris"}')]
        + [oa(finish="tool_calls")]
    )
    Q(
        "Q4",
        "quirk",
        "id, name and type on every chunk",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q4")),
    )
    Q("Q4", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q5 empty-string id / name / type on continuations
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q5", "weather", ""))),
        oa(calls_delta(tc(0, "", "", '{"city": "Paris"}', type_=""))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q5",
        "quirk",
        "empty id, name and type on a continuation",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q5")),
    )
    Q("Q5", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q6 type missing
    s = [
        opening(),
        oa(
            calls_delta(
                {"index": 0, "id": "call_q6", "function": {"name": "weather", "arguments": WS}}
            )
        ),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q6",
        "quirk",
        "no type on the call",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q6")),
    )
    Q("Q6", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q7 name after some arguments
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q7", None, '{"city": '))),
        oa(calls_delta(tc(0, None, "weather", '"Paris"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q7",
        "quirk",
        "the name arrives after some arguments",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q7")),
    )
    s2 = [opening(), oa(calls_delta(tc(0, "call_q7", None, WS))), oa(finish="tool_calls")]
    Q(
        "Q7",
        "twin",
        "twin: the name never arrives: an unnamed call never runs",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q8 no id at all
    s = [opening(), oa(calls_delta(tc(0, None, "weather", WS))), oa(finish="tool_calls")]
    Q(
        "Q8",
        "quirk",
        "a call without id",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W)),
    )
    Q("Q8", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q9 whole call in one chunk with the finish reason
    s = [
        oa(
            {"role": "assistant", "tool_calls": [tc(None, "call_q9", "weather", WS)]},
            finish="tool_calls",
        )
    ]
    Q(
        "Q9",
        "quirk",
        "the whole call and the finish in one chunk",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q9")),
    )
    s2 = [
        oa(
            {"role": "assistant", "tool_calls": [tc(None, "call_q9", "weather", WS)]},
            finish="length",
        )
    ]
    Q(
        "Q9",
        "twin",
        "twin: the same chunk ended by length (Q15)",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q10 cumulative resend
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q10", "weather", WS))),
        oa(calls_delta(tc(0, None, None, WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q10",
        "quirk",
        "the complete arguments resent",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q10")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_q10", "f", '{"a":'))),
        oa(calls_delta(tc(0, None, None, '{"a":1}}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q10",
        "twin",
        "twin: an incomplete input continued by text that looks like a resend",
        "openai-chat",
        "sse",
        chat(s2),
        expect_calls(call("f", {"a": {"a": 1}}, "call_q10")),
    )
    # Q11 server-side JSON corruption
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q11", "weather", '{"city": "Paris",,}'))),
        oa(finish="tool_calls"),
    ]
    Q("Q11", "quirk", "corrupt JSON arguments", "openai-chat", "sse", chat(s), REFUSE)
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_q11", "weather", '{"city": "Paris"}}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q11",
        "twin",
        "twin: a valid object followed by a stray brace",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q12 escape split across fragments
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q12", "say", '{"s": "\\ud83d'))),
        oa(calls_delta(tc(0, args='\\ude00 caf\u00e9"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q12",
        "quirk",
        "a surrogate pair escape and UTF-8 split across fragments",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("say", {"s": "\U0001f600 caf\u00e9"}, "call_q12")),
    )
    Q(
        "Q12",
        "twin",
        TWIN_CUT + " (inside the escape)",
        "openai-chat",
        "sse",
        chat(s[:2], done=False),
        REFUSE,
    )
    # Q13 no-argument tool
    s = ant_message([ant_tool("toolu_q13", "now")])
    Q(
        "Q13",
        "quirk",
        "a tool_use block with no input deltas",
        "anthropic",
        "sse",
        sse(s, named=True),
        expect_calls(call("now", {}, "toolu_q13")),
    )
    Q(
        "Q13",
        "twin",
        "twin: the same stream without message_stop",
        "anthropic",
        "sse",
        sse(s[:-1], named=True),
        REFUSE,
    )
    # Q14 tool calls with finish_reason stop
    s = [opening(), oa(calls_delta(tc(0, "call_q14", "weather", WS))), oa(finish="stop")]
    Q(
        "Q14",
        "quirk",
        "tool calls ended by finish_reason stop",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q14")),
    )
    Q(
        "Q14",
        "twin",
        "twin: ended by content_filter",
        "openai-chat",
        "sse",
        chat([*s[:2], oa(finish="content_filter")]),
        REFUSE,
    )
    # Q15 truncated stream whose JSON parses
    s = [opening(), oa(calls_delta(tc(0, "call_q15", "weather", WS))), oa(finish="length")]
    Q(
        "Q15",
        "quirk",
        "complete-looking arguments, finish_reason length",
        "openai-chat",
        "sse",
        chat(s),
        REFUSE,
    )
    s2 = ant_message([ant_tool("toolu_q15", "weather", '{"city": "Paris"}')], stop="max_tokens")
    Q(
        "Q15",
        "twin",
        "the same in Anthropic: stop_reason max_tokens",
        "anthropic",
        "sse",
        sse(s2, named=True),
        REFUSE,
    )
    # Q16 empty choices, usage-only chunks
    usage_only = {
        "id": "chatcmpl-conf",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "conformance",
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    s = [
        {
            "id": "chatcmpl-conf",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "conformance",
            "choices": [],
            "prompt_filter_results": [],
        },
        opening(),
        oa(calls_delta(tc(0, "call_q16", "weather", WS))),
        oa(finish="tool_calls"),
        usage_only,
    ]
    Q(
        "Q16",
        "quirk",
        "empty choices before, usage-only chunk after",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q16")),
    )
    s2 = [
        *s[:3],
        {"error": {"message": "upstream failed", "type": "server_error", "code": "internal"}},
    ]
    Q(
        "Q16",
        "twin",
        "twin: an error chunk where the finish should be (Q35)",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q17 n > 1 choices
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_c0", "weather", WS)), choice=0),
        oa(calls_delta(tc(0, "call_c1", "weather", '{"city": "Rome"}')), choice=1),
        oa(finish="tool_calls", choice=0),
        oa(finish="tool_calls", choice=1),
    ]
    Q(
        "Q17",
        "quirk",
        "two choices, one call each",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_c0"), call("weather", {"city": "Rome"}, "call_c1")),
    )
    Q(
        "Q17",
        "twin",
        "twin: choice 1 never finishes: only choice 0's call may run",
        "openai-chat",
        "sse",
        chat(s[:4], done=False),
        expect_calls(call("weather", W, "call_c0")),
    )
    # Q18 several fragments of one index inside one delta
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q18", "weather", '{"city": '), tc(0, None, None, '"Paris"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q18",
        "quirk",
        "two fragments of index 0 in one delta",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q18")),
    )
    Q("Q18", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q19 index as a string
    s = [
        opening(),
        oa(calls_delta(tc("0", "call_q19", "weather", '{"city": '))),
        oa(calls_delta(tc("0", None, None, '"Paris"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q19",
        "quirk",
        'index "0"',
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q19")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc("zero", "call_q19", "weather", WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q19",
        "twin",
        'twin: index "zero" names no index: refused loudly',
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q20 two identical calls
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_x", "weather", WS))),
        oa(calls_delta(tc(1, "call_y", "weather", WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q20",
        "quirk",
        "two identical calls with distinct ids",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_x"), call("weather", W, "call_y")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(None, None, "weather", WS))),
        oa(calls_delta(tc(None, None, "weather", WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q20",
        "twin",
        "identical calls with neither id nor index: still two",
        "openai-chat",
        "sse",
        chat(s2),
        expect_calls(call("weather", W), call("weather", W)),
    )
    # Q21 Gemini partialArgs
    s = [
        gem([{"functionCall": {"name": "weather", "willContinue": True}}], None),
        gem(
            [
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.city", "stringValue": "Par", "willContinue": True}
                        ],
                        "willContinue": True,
                    }
                }
            ],
            None,
        ),
        gem(
            [
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.city", "stringValue": "is"}],
                        "willContinue": True,
                    }
                }
            ],
            None,
        ),
        gem([{"functionCall": {}}], None),
        gem([{"text": ""}], "STOP"),
    ]
    Q(
        "Q21",
        "quirk",
        "arguments streamed by JSON path, closed by an empty functionCall",
        "gemini",
        "jsonl",
        jsonl(s),
        expect_calls(call("weather", W)),
    )
    Q("Q21", "twin", "twin: cut before finishReason", "gemini", "jsonl", jsonl(s[:3]), REFUSE)
    # Q22 Bedrock padding, messageStop before metadata
    s = bedrock_events([("tooluse_q22", "weather", ['{"city":', ' "Paris"}'])], pad=True)
    Q(
        "Q22",
        "quirk",
        'every payload padded with "p"; metadata after messageStop',
        "bedrock",
        "eventstream",
        eventstream(s),
        expect_calls(call("weather", W, "tooluse_q22")),
    )
    s2 = [
        *s[:-1],
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "x"}}}},
        s[-1],
    ]
    Q(
        "Q22",
        "twin",
        "twin: a delta after messageStop (Q24)",
        "bedrock",
        "eventstream",
        eventstream(s2),
        REFUSE,
    )
    # Q23 Responses call_id apart from the item id
    s = resp_stream([fc("call_q23", "weather", WS, item="fc_item_q23")])
    Q(
        "Q23",
        "quirk",
        "item_id / output_index keyed deltas, call_id the call's id",
        "openai-responses",
        "sse",
        sse(s, named=True),
        expect_calls(call("weather", W, "call_q23")),
    )
    s2 = [
        *s[:-1],
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_item_q23",
            "output_index": 0,
            "delta": " ",
            "sequence_number": len(s) - 1,
        },
    ]
    s2.append({**s[-1], "sequence_number": len(s)})
    Q(
        "Q23",
        "twin",
        "twin: an argument delta after output_item.done (Q25)",
        "openai-responses",
        "sse",
        sse(s2, named=True),
        REFUSE,
    )


def quirk_rows_2() -> None:
    Q = quirk
    base = [opening(), oa(calls_delta(tc(0, "call_1", "weather", WS))), oa(finish="tool_calls")]
    # Q24 content after the end
    Q(
        "Q24",
        "quirk",
        "a tool-call delta after the finish reason",
        "openai-chat",
        "sse",
        chat([*base, oa(calls_delta(tc(0, args=" ")))]),
        REFUSE,
    )
    Q(
        "Q24",
        "twin",
        "the whole stream replayed after [DONE]",
        "openai-chat",
        "sse",
        chat(base) + chat(base),
        REFUSE,
    )
    usage = {
        "id": "chatcmpl-conf",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "conformance",
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    Q(
        "Q24",
        "legit",
        "a usage-only chunk after the finish reason is not content",
        "openai-chat",
        "sse",
        chat([*base, usage]),
        expect_calls(call("weather", W, "call_1")),
    )
    # Q25 block after its stop, block opened twice
    a = ant_message([ant_tool("toolu_1", "weather", '{"city": ', '"Paris"}')])
    Q(
        "Q25",
        "quirk",
        "an input delta after content_block_stop",
        "anthropic",
        "sse",
        sse(
            [
                *a[:5],
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": " "},
                },
                *a[5:],
            ],
            named=True,
        ),
        REFUSE,
    )
    Q(
        "Q25",
        "twin",
        "a second content_block_start for an open index",
        "anthropic",
        "sse",
        sse([*a[:2], a[1], *a[2:]], named=True),
        REFUSE,
    )
    Q(
        "Q25",
        "legit",
        "the same stream as sent",
        "anthropic",
        "sse",
        sse(a, named=True),
        expect_calls(call("weather", W, "toolu_1")),
    )
    # Q26 end without a stop reason
    Q(
        "Q26",
        "quirk",
        "message_stop with no stop_reason ever sent",
        "anthropic",
        "sse",
        sse(ant_message([ant_tool("toolu_1", "weather", WS)], stop=None), named=True),
        REFUSE,
    )
    c = cohere_events([("weather_1", "weather", [WS])], finish=None)
    Q(
        "Q26",
        "twin",
        "Cohere message-end without finish_reason",
        "cohere",
        "jsonl",
        jsonl(c),
        REFUSE,
    )
    # Q27 server-side tools
    srv = (
        "server_tool_use",
        {"id": "srvtoolu_1", "name": "web_search"},
        [{"type": "input_json_delta", "partial_json": '{"query": "weather Paris"}'}],
    )
    result = ("web_search_tool_result", {"tool_use_id": "srvtoolu_1", "content": []}, [])
    Q(
        "Q27",
        "quirk",
        "Anthropic server_tool_use and its result: run by the provider",
        "anthropic",
        "sse",
        sse(ant_message([srv, result, ant_text("Sunny.")], stop="end_turn"), named=True),
        expect_calls(),
    )
    Q(
        "Q27",
        "twin",
        "a client tool_use beside a server tool: only the client call runs",
        "anthropic",
        "sse",
        sse(ant_message([srv, result, ant_tool("toolu_2", "weather", WS)]), named=True),
        expect_calls(call("weather", W, "toolu_2")),
    )
    # Q28 custom tool call
    custom = {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_q28",
        "name": "write_sql",
        "input": "SELECT 1",
    }
    r = resp_stream([custom])
    Q(
        "Q28",
        "quirk",
        "a custom_tool_call with free-form input",
        "openai-responses",
        "sse",
        sse(r, named=True),
        expect_calls(call("write_sql", "SELECT 1", "call_q28")),
    )
    Q(
        "Q28",
        "twin",
        "twin: cut before response.completed",
        "openai-responses",
        "sse",
        sse(r[:-1], named=True),
        REFUSE,
    )
    # Q29 unknown event / delta types
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_1", "weather", WS))),
        {"object": "chat.completion.telemetry", "id": "t", "data": {"x": 1}},
        oa(finish="tool_calls", future_field={"nested": [1, 2]}),
    ]
    Q(
        "Q29",
        "quirk",
        "an unknown chunk and an unknown field",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_1")),
    )
    a2 = ant_message([ant_tool("toolu_1", "weather", WS)])
    a2.insert(2, {"type": "future_event", "payload": {"a": 1}})
    Q(
        "Q29",
        "twin",
        "an unknown Anthropic event type",
        "anthropic",
        "sse",
        sse(a2, named=True),
        expect_calls(call("weather", W, "toolu_1")),
    )
    # Q30 a decode error in the middle of a read
    good = chat(base)
    broken = good.replace(b'data: {"id":"chatcmpl-conf"', b'data: {"id":chatcmpl-conf"', 1)
    Q("Q30", "quirk", "one undecodable event before the call", "openai-chat", "sse", broken, REFUSE)
    Q(
        "Q30",
        "twin",
        "an SSE comment line is not an event: legitimate",
        "openai-chat",
        "sse",
        b": keep-alive\n\n" + good.replace(b"\n\n", b"\n\n: ping\n\n", 1),
        expect_calls(call("weather", W, "call_1")),
    )
    # Q31 non-streamed body
    body = {
        "id": "chatcmpl-conf",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_q31",
                            "type": "function",
                            "function": {"name": "weather", "arguments": WS},
                        }
                    ],
                },
            }
        ],
    }
    Q(
        "Q31",
        "quirk",
        "a chat.completion body fed as a stream",
        "openai-chat",
        "json",
        json.dumps(body, indent=2).encode(),
        expect_calls(call("weather", W, "call_q31")),
    )
    body["choices"][0]["finish_reason"] = "length"
    Q(
        "Q31",
        "twin",
        "the same body ended by length",
        "openai-chat",
        "json",
        json.dumps(body, indent=2).encode(),
        REFUSE,
    )
    # Q32 another dialect
    Q(
        "Q32",
        "quirk",
        "Anthropic events read as openai-chat",
        "openai-chat",
        "sse",
        sse(a, named=True),
        REFUSE,
    )
    Q("Q32", "twin", "OpenAI chat chunks read as anthropic", "anthropic", "sse", chat(base), REFUSE)
    # Q33 Responses resent / reordered
    r = resp_stream([fc("call_q33", "weather", WS)])
    Q(
        "Q33",
        "quirk",
        "events resent after a resume (same sequence_number)",
        "openai-responses",
        "sse",
        sse(r[:4] + r[2:], named=True),
        expect_calls(call("weather", W, "call_q33")),
    )
    Q(
        "Q33",
        "twin",
        "two argument deltas swapped (a reordering)",
        "openai-responses",
        "sse",
        sse([*r[:2], r[3], r[2], *r[4:]], named=True),
        REFUSE,
    )
    # Q34 framing oddities
    Q(
        "Q34",
        "quirk",
        "CRLF line ends",
        "openai-chat",
        "sse",
        good.replace(b"\n", b"\r\n"),
        expect_calls(call("weather", W, "call_1")),
    )
    cut = ant_message([ant_tool("toolu_1", "weather", '{"city": "Par')], stop="max_tokens")
    cut = [e for e in cut if e["type"] != "content_block_stop"]
    Q(
        "Q34",
        "twin",
        "a max_tokens cut inside a tool input, no content_block_stop",
        "anthropic",
        "sse",
        sse(cut, named=True),
        REFUSE,
    )
    Q(
        "Q34",
        "data-first",
        "data: before event: in one SSE event",
        "anthropic",
        "sse",
        "".join(f"data: {dumps(e)}\nevent: {e['type']}\n\n" for e in a).encode(),
        expect_calls(call("weather", W, "toolu_1")),
    )
    # Q35 error after 200
    err = {
        "error": {
            "message": "Failed to call a function",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": WS,
        }
    }
    Q(
        "Q35",
        "quirk",
        "an error chunk mid-stream",
        "openai-chat",
        "sse",
        chat([*base[:2], err]),
        REFUSE,
    )
    Q(
        "Q35",
        "twin",
        "Anthropic event: error mid-stream",
        "anthropic",
        "sse",
        sse(
            [
                *a[:4],
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ],
            named=True,
        ),
        REFUSE,
    )


def quirk_rows_3() -> None:
    Q = quirk
    # Q36 incomplete deltas then the whole arguments
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q36", "weather", "{"))),
        oa(calls_delta(tc(0, args=WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q36",
        "quirk",
        "'{' then the whole object",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q36")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_q36", "weather", '{"city": "Lon'))),
        oa(calls_delta(tc(0, args=WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q36",
        "twin",
        "twin: the whole object does not start with the held input",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q37 thought signature in extra_content
    sig = {"google": {"thought_signature": "c2lnbmF0dXJl"}}
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q37", "weather", WS, extra_content=sig))),
        oa(calls_delta({"index": 0, "extra_content": sig})),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q37",
        "quirk",
        "extra_content.google.thought_signature, once alone in a delta",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q37")),
    )
    Q("Q37", "twin", TWIN_CUT, "openai-chat", "sse", chat(cut_last(s), done=False), REFUSE)
    # Q38 two indexes sharing one id
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_dup", "weather", WS))),
        oa(calls_delta(tc(1, "call_dup", "weather", '{"city": "Rome"}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q38",
        "quirk",
        "indexes 0 and 1 with one id",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_dup"), call("weather", {"city": "Rome"})),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_dup", "weather", WS))),
        oa(calls_delta(tc(1, "call_dup", "weather", WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q38",
        "twin",
        "identical name and input under one id: a doubled call",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q39 a second finish reason
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q39", "weather", WS))),
        oa(finish="tool_calls"),
        oa(finish="stop"),
    ]
    Q(
        "Q39",
        "quirk",
        "finish tool_calls, then a chunk with finish stop and nothing else",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q39")),
    )
    Q(
        "Q39",
        "twin",
        "finish tool_calls, then a chunk with a tool-call delta",
        "openai-chat",
        "sse",
        chat([*s[:3], oa(calls_delta(tc(0, args="}")), finish="stop")]),
        REFUSE,
    )
    # Q40 several JSON values in one input
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q40", "search", '{"query":"A"}{"query":"B"}'))),
        oa(finish="tool_calls"),
    ]
    Q("Q40", "quirk", "two objects in one call's input", "openai-chat", "sse", chat(s), REFUSE)
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_q40", "search", '{"query":"A"}{"query":"B"}'))),
        oa(calls_delta(tc(1, "call_ok", "weather", WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q40",
        "twin",
        "beside a concatenated call, a sound call still runs",
        "openai-chat",
        "sse",
        chat(s2),
        expect_calls(call("weather", W, "call_ok")),
    )
    # Q41 "{}" then the real arguments
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q41", "weather", "{}"))),
        oa(calls_delta(tc(0, args=WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q41",
        "quirk",
        "'{}' then the real arguments at the same index",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q41")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_q41", "weather", '{"a": 1}'))),
        oa(calls_delta(tc(0, args='{"b": 2}'))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q41",
        "twin",
        "a real object then another: not a placeholder",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q42 arguments as an object
    s = [opening(), oa(calls_delta(tc(0, "call_q42", "weather", W))), oa(finish="tool_calls")]
    Q(
        "Q42",
        "quirk",
        "function.arguments as a JSON object",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q42")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_q42", "weather", W))),
        oa(calls_delta(tc(0, args={"city": "Rome"}))),
        oa(finish="tool_calls"),
    ]
    Q("Q42", "twin", "a second object for the same call", "openai-chat", "sse", chat(s2), REFUSE)
    # Q43 opener at one index, fragments at another
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q43", "weather", ""))),
        oa(calls_delta(tc(1, None, None, WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q43",
        "quirk",
        "opener at index 0, arguments at index 1 without id or name",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q43")),
    )
    s2 = [
        opening(),
        oa(calls_delta(tc(0, "call_a", "weather", ""))),
        oa(calls_delta(tc(1, "call_b", "time", ""))),
        oa(calls_delta(tc(2, None, None, WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q43",
        "twin",
        "two open calls and orphan arguments: whose?",
        "openai-chat",
        "sse",
        chat(s2),
        REFUSE,
    )
    # Q44 arguments.done before output_item.added
    r = resp_stream([fc("call_q44", "weather", WS, item="fc_q44")])
    done = next(e for e in r if e["type"] == "response.function_call_arguments.done")
    reordered = [r[0], done] + [
        e for e in r[1:] if e is not done and not e["type"].endswith("arguments.delta")
    ]
    for seq, e in enumerate(reordered):
        e = dict(e)
        reordered[seq] = {**e, "sequence_number": seq}
    Q(
        "Q44",
        "quirk",
        "function_call_arguments.done before output_item.added, no deltas",
        "openai-responses",
        "sse",
        sse(reordered, named=True),
        expect_calls(call("weather", W, "call_q44")),
    )
    idx = next(i for i, e in enumerate(r) if e["type"] == "response.output_item.done")
    late = [
        *r[: idx + 1],
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_q44",
            "output_index": 0,
            "delta": "}",
        },
        *r[idx + 1 :],
    ]
    for seq, e in enumerate(late):
        late[seq] = {**e, "sequence_number": seq}
    Q(
        "Q44",
        "twin",
        "a delta after output_item.done (Q25)",
        "openai-responses",
        "sse",
        sse(late, named=True),
        REFUSE,
    )
    # Q45 two choices entries of one index in one chunk
    chunk = oa(calls_delta(tc(0, "call_q45", "weather", '{"city": ')))
    chunk["choices"].append(
        {"index": 0, "delta": calls_delta(tc(0, args='"Paris"}')), "finish_reason": None}
    )
    s = [opening(), chunk, oa(finish="tool_calls")]
    Q(
        "Q45",
        "quirk",
        "one chunk, two entries for choice 0",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q45")),
    )
    Q("Q45", "twin", TWIN_CUT, "openai-chat", "sse", chat(s[:2], done=False), REFUSE)
    # Q46 a cut reported as a normal end. Only the request's limit tells it, and the
    # stream does not show it: judged by its bytes, the stream ends normally with
    # whole arguments, so the call is expected (toolstitch's option is tested in its
    # own tests, tests/test_quirks.py).
    s = [
        opening(),
        oa(calls_delta(tc(0, "call_q46", "weather", '{"city": "Paris"}'))),
        oa(
            finish="tool_calls",
            usage={"prompt_tokens": 5, "completion_tokens": 64, "total_tokens": 69},
        ),
    ]
    Q(
        "Q46",
        "quirk",
        "finish tool_calls with 64 output tokens and whole arguments: by its bytes a "
        "normal end (the request's limit is not in the stream)",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q46")),
    )
    s2 = [
        *s[:2],
        oa(
            finish="tool_calls",
            usage={"prompt_tokens": 5, "completion_tokens": 12, "total_tokens": 17},
        ),
    ]
    Q(
        "Q46",
        "twin",
        TWIN_CUT,
        "openai-chat",
        "sse",
        chat(cut_last(s2), done=False),
        REFUSE,
    )
    # Q47 xAI server tools as custom_tool_call
    x = {
        "type": "custom_tool_call",
        "id": "ctc_x",
        "call_id": "xs_1",
        "name": "x_keyword_search",
        "input": '{"query":"weather"}',
    }
    Q(
        "Q47",
        "quirk",
        "xAI's x_keyword_search sent as a custom_tool_call",
        "openai-responses",
        "sse",
        sse(resp_stream([x], model="grok-4-fast-reasoning"), named=True),
        expect_calls(),
        conventions=["xai-server-tools"],
    )
    y = {**x, "name": "write_sql", "call_id": "call_q47", "input": "SELECT 1"}
    Q(
        "Q47",
        "twin",
        "a client custom tool from the same model stays a client call",
        "openai-responses",
        "sse",
        sse(resp_stream([y], model="grok-4-fast-reasoning"), named=True),
        expect_calls(call("write_sql", "SELECT 1", "call_q47")),
    )
    # Q48 Gemini functionCall.id
    s = [gem([{"functionCall": {"id": "fc_q48", "name": "weather", "args": W}}])]
    Q(
        "Q48",
        "quirk",
        "functionCall with an id",
        "gemini",
        "jsonl",
        jsonl(s),
        expect_calls(call("weather", W, "fc_q48")),
    )
    Q(
        "Q48",
        "twin",
        "twin: no finishReason (cut)",
        "gemini",
        "jsonl",
        jsonl([gem([{"functionCall": {"id": "fc_q48", "name": "weather", "args": W}}], None)]),
        REFUSE,
    )
    # Q49 content as typed chunks
    s = [
        oa(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "Let me check."}]}
                ],
            }
        ),
        oa({"content": [{"type": "text", "text": "Checking."}]}),
        oa(calls_delta(tc(0, "call_q49", "weather", WS))),
        oa(finish="tool_calls"),
    ]
    Q(
        "Q49",
        "quirk",
        "delta.content as typed chunks (thinking, text)",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(call("weather", W, "call_q49")),
    )
    Q("Q49", "twin", TWIN_CUT, "openai-chat", "sse", chat(s[:3], done=False), REFUSE)
    # Q50 executed_tools
    ex = {"index": 0, "type": "search", "arguments": '{"query": "weather"}', "output": "Sunny"}
    s = [opening(), oa({"executed_tools": [ex]}), oa({"content": "Sunny."}), oa(finish="stop")]
    Q(
        "Q50",
        "quirk",
        "delta.executed_tools: run by the server",
        "openai-chat",
        "sse",
        chat(s),
        expect_calls(),
    )
    s2 = [*s[:3], oa(calls_delta(tc(0, "call_q50", "weather", WS))), oa(finish="tool_calls")]
    Q(
        "Q50",
        "twin",
        "a client call after a server-run tool runs",
        "openai-chat",
        "sse",
        chat(s2),
        expect_calls(call("weather", W, "call_q50")),
    )
    # Q51 legacy completions stream
    t = [
        {
            "id": "cmpl-1",
            "object": "text_completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "text": '{"name": "weather"}', "finish_reason": None}],
        },
        {
            "id": "cmpl-1",
            "object": "text_completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "text": "", "finish_reason": "stop"}],
        },
    ]
    Q(
        "Q51",
        "quirk",
        "a /v1/completions stream: text (even text that looks like a call), no call",
        "openai-chat",
        "sse",
        chat(t),
        expect_calls(),
    )
    Q(
        "Q51",
        "twin",
        "the chat stream beside it still reads",
        "openai-chat",
        "sse",
        chat([opening(), oa(calls_delta(tc(0, "call_1", "weather", WS))), oa(finish="tool_calls")]),
        expect_calls(call("weather", W, "call_1")),
    )


# --- protocol violations ----------------------------------------------------------


def split_events(data: bytes, transport: str) -> list[bytes]:
    if transport == "sse":
        sep = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
        parts = [p + sep for p in data.split(sep) if p.strip()]
        return parts
    if transport == "jsonl":
        return [line + b"\n" for line in data.split(b"\n") if line.strip()]
    if transport == "eventstream":
        out, at = [], 0
        while at + 4 <= len(data):
            (total,) = struct.unpack(">I", data[at : at + 4])
            out.append(data[at : at + total])
            at += total
        return out
    raise ValueError(transport)


def event_json(piece: bytes, transport: str) -> Any:
    if transport == "eventstream":
        (hlen,) = struct.unpack(">I", piece[4:8])
        payload = json.loads(piece[12 + hlen : -4])
        if "bytes" in payload:
            return json.loads(base64.b64decode(payload["bytes"]))
        return payload
    text = piece.decode()
    if transport == "sse":
        datas = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
        if not datas or datas[0] == "[DONE]":
            return None
        return json.loads("\n".join(datas))
    return json.loads(text)


def is_end(dialect: str, ev: Any) -> bool:
    """The event that makes a stream of this dialect complete (docs/providers.md)."""
    if not isinstance(ev, dict):
        return False
    if dialect == "openai-chat":
        return any(c.get("finish_reason") in ("stop", "tool_calls") for c in ev.get("choices", []))
    if dialect in ("anthropic", "bedrock-invoke"):
        return ev.get("type") == "message_stop"
    if dialect == "openai-responses":
        return ev.get("type") == "response.completed"
    if dialect == "bedrock":
        return "stopReason" in ev
    if dialect == "gemini":
        return any(c.get("finishReason") == "STOP" for c in ev.get("candidates", []))
    if dialect == "cohere":
        return ev.get("type") == "message-end"
    if dialect == "ollama":
        return ev.get("done") is True
    if dialect == "gemini-interactions":
        return ev.get("event_type") == "interaction.completed" or (
            ev.get("event_type") == "interaction.status_update"
            and ev.get("status") in ("completed", "requires_action")
        )
    return False


def fragment(ev: Any) -> str | None:
    """The argument text an event appends, when it appends one."""
    if not isinstance(ev, dict):
        return None
    delta = ev.get("delta")
    if isinstance(delta, dict):
        for key in ("partial_json", "arguments"):
            if isinstance(delta.get(key), str):
                return str(delta[key])
        tool = delta.get("toolUse")
        if isinstance(tool, dict) and isinstance(tool.get("input"), str):
            return str(tool["input"])
        message = delta.get("message")
        if isinstance(message, dict) and isinstance(message.get("tool_calls"), dict):
            return str(message["tool_calls"].get("function", {}).get("arguments", "")) or None
    if isinstance(delta, str) and str(ev.get("type", "")).endswith("arguments.delta"):
        return delta
    for choice in ev.get("choices", []) or []:
        for call in (choice.get("delta") or {}).get("tool_calls") or []:
            if isinstance(call.get("function", {}).get("arguments"), str) and not call.get("id"):
                return str(call["function"]["arguments"])
    return None


def whole_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def is_argument_delta(dialect: str, ev: Any) -> bool:
    return bool(fragment(ev))


def _unused(dialect: str, ev: Any) -> bool:
    text = dumps(ev)
    return any(
        k in text
        for k in (
            '"partial_json"',
            '"function_call_arguments.delta"',
            '"arguments_delta"',
            '"tool-call-delta"',
            '"toolUse":{"input"',
        )
    ) or (
        dialect == "openai-chat"
        and '"arguments":"' in text
        and '"id"'
        not in dumps([c.get("delta", {}).get("tool_calls") for c in ev.get("choices", [])])
    )


BASES = [
    # (name, dialect, transport, file under cases/real): one recording per dialect
    ("openai-chat", "openai-chat", "sse", "local/openai-python.chat-parallel-two-tools.sse"),
    ("anthropic", "anthropic", "sse", "local/anthropic-sdk-python.text-then-tool-use.sse"),
    (
        "openai-responses",
        "openai-responses",
        "sse",
        "local/pydantic-ai.openai-responses-stream.1.sse",
    ),
    (
        "bedrock",
        "bedrock",
        "eventstream",
        "local/pydantic-ai.bedrock-converse-stream.1.eventstream",
    ),
    (
        "gemini",
        "gemini",
        "jsonl",
        "vercel-ai/vercel-ai.google.google-stream-tool-call-arguments.stream.jsonl",
    ),
    ("cohere", "cohere", "jsonl", "vercel-ai/vercel-ai.cohere.cohere-tool-call.stream.jsonl"),
    (
        "gemini-interactions",
        "gemini-interactions",
        "jsonl",
        "local/vercel-ai.google.interactions.tool-call-step1.stream.jsonl",
    ),
]


def base_expect(file: str) -> Event:
    path = REAL / file
    meta = json.loads(path.with_name(path.name.rsplit(".", 1)[0] + ".case.json").read_text())
    return dict(meta["expect"])


def generated_bases() -> list[tuple[str, str, str, bytes, Event, str]]:
    """Bases written here for the dialects without a usable recording."""
    oll = ollama_events(
        [
            {"function": {"name": "weather", "arguments": W}},
            {
                "id": "call_o2",
                "function": {"index": 1, "name": "weather", "arguments": {"city": "Rome"}},
            },
        ]
    )
    inv = [
        e
        for e in ant_message(
            [ant_text("Checking."), ant_tool("toolu_inv", "weather", '{"city": ', '"Paris"}')]
        )
    ]
    inv[-1] = {
        **inv[-1],
        "amazon-bedrock-invocationMetrics": {
            "inputTokenCount": 10,
            "outputTokenCount": 20,
            "invocationLatency": 1,
            "firstByteLatency": 1,
        },
    }
    return [
        (
            "ollama",
            "ollama",
            "jsonl",
            jsonl(oll),
            expect_calls(call("weather", W), call("weather", {"city": "Rome"}, "call_o2")),
            "written here in the documented /api/chat shape",
        ),
        (
            "bedrock-invoke",
            "bedrock-invoke",
            "eventstream",
            invoke_stream(inv),
            expect_calls(call("weather", W, "toolu_inv")),
            "written here: Anthropic events in InvokeModelWithResponseStream chunk frames",
        ),
    ]


# A Responses call's arguments are sent whole in their `done` event and in the
# finished item (Q10: the `done` text replaces the deltas); this base stream has no
# `sequence_number`, so only that can decide, and it decides the call.
RESPONSES_DONE = (
    "; the `done` event and the finished item carry the whole arguments, which "
    "decide the call (Q10); the stream has no `sequence_number` to tell a reordering"
)


def violations() -> None:
    bases: list[tuple[str, str, str, bytes, Event, str]] = []
    for name, dialect, transport, file in BASES:
        bases.append(
            (
                name,
                dialect,
                transport,
                (REAL / file).read_bytes(),
                base_expect(file),
                f"cases/real/{file}",
            )
        )
    bases += generated_bases()
    for name, dialect, transport, data, expect, origin in bases:
        events = split_events(data, transport)
        decoded = [event_json(e, transport) for e in events]
        end = next((i for i, ev in enumerate(decoded) if is_end(dialect, ev)), None)
        assert end is not None, name
        src = {"rule": "", "base": origin}
        base_calls = list(expect["calls"])
        # Every cut at an event boundary: before the end signal nothing may run; at or
        # after it the stream is whole as far as the dialect can tell.
        for k in range(1, len(events)):
            rule = "cut at an event boundary"
            exp = REFUSE if k <= end else expect
            case(
                "violation",
                f"{name}.cut-after-{k:03d}",
                dialect,
                transport,
                b"".join(events[:k]),
                exp,
                {
                    **src,
                    "rule": f"{rule}, after event {k} of "
                    f"{len(events)} (end signal: event {end + 1})",
                },
                truth=base_calls,
            )
        # Cuts inside an event (half its bytes), before the end signal.
        for k in range(0, end + 1, max(1, (end + 1) // 6)):
            half = events[k][: max(1, len(events[k]) // 2)]
            case(
                "violation",
                f"{name}.cut-inside-{k + 1:03d}",
                dialect,
                transport,
                b"".join(events[:k]) + half,
                REFUSE,
                {**src, "rule": f"cut inside event {k + 1}"},
                truth=base_calls,
            )
        # The whole stream twice (a replay): content after the end (Q24).
        case(
            "violation",
            f"{name}.replayed",
            dialect,
            transport,
            data + data,
            REFUSE,
            {**src, "rule": "the whole stream sent twice"},
            truth=base_calls,
        )
        # Content after the end: the first argument delta again after the end signal.
        deltas = [i for i, ev in enumerate(decoded) if is_argument_delta(dialect, ev)]
        if deltas:
            after = [*events[: end + 1], events[deltas[0]], *events[end + 1 :]]
            case(
                "violation",
                f"{name}.delta-after-end",
                dialect,
                transport,
                b"".join(after),
                REFUSE,
                {**src, "rule": "an argument delta repeated after the end signal"},
                truth=base_calls,
            )
            # One argument delta doubled in place: the arguments change.
            k = deltas[-1]
            doubled = [*events[: k + 1], events[k], *events[k + 1 :]]
            exp = expect if dialect == "openai-responses" else REFUSE
            rule = "an argument delta doubled in place"
            if dialect == "openai-responses":
                rule += RESPONSES_DONE
            elif whole_json(fragment(decoded[k]) or ""):
                exp = expect
                rule += (
                    "; the fragment is the whole arguments, so the copy is an equal "
                    "resend and is dropped (Q10)"
                )
            case(
                "violation",
                f"{name}.delta-doubled",
                dialect,
                transport,
                b"".join(doubled),
                exp,
                {**src, "rule": rule},
                truth=base_calls,
            )
            pairs = [
                (x, y)
                for x, y in itertools.pairwise(deltas)
                if fragment(decoded[x]) != fragment(decoded[y])
            ]
            if pairs:
                a, b = pairs[0]
                swapped = list(events)
                swapped[a], swapped[b] = swapped[b], swapped[a]
                case(
                    "violation",
                    f"{name}.deltas-swapped",
                    dialect,
                    transport,
                    b"".join(swapped),
                    expect if dialect == "openai-responses" else REFUSE,
                    {
                        **src,
                        "rule": "the first two argument deltas swapped"
                        + (RESPONSES_DONE if dialect == "openai-responses" else ""),
                    },
                    truth=base_calls,
                )
            # A block never stopped: the stop event of the block carrying the last delta.
            stops = [
                i
                for i, ev in enumerate(decoded)
                if i > k
                and isinstance(ev, dict)
                and (
                    ev.get("type")
                    in ("content_block_stop", "response.output_item.done", "tool-call-end")
                    or "contentBlockStop" in ev
                    or ev.get("event_type") == "step.stop"
                    or ("contentBlockIndex" in ev and "delta" not in ev and "start" not in ev)
                )
            ]
            if stops:
                s = stops[0]
                case(
                    "violation",
                    f"{name}.block-never-stopped",
                    dialect,
                    transport,
                    b"".join(events[:s] + events[s + 1 :]),
                    expect if dialect == "openai-responses" else REFUSE,
                    {
                        **src,
                        "rule": "the stop of the block carrying the arguments removed"
                        + (
                            "; `response.completed` carries the finished item with its "
                            "arguments, so the call is determined"
                            if dialect == "openai-responses"
                            else ""
                        ),
                    },
                    truth=base_calls,
                )
        # The end signal doubled.
        doubled_end = [*events[: end + 1], events[end], *events[end + 1 :]]
        carries = dumps(decoded[end])
        if dialect in ("openai-chat", "gemini", "ollama") and not re.search(
            r'"tool_calls":\[|"functionCall":\{|"(text|content)":"[^"]', carries
        ):
            exp, rule = (
                expect,
                (
                    "the end chunk sent twice; it carries a finish reason and no "
                    "content, so the repeat changes nothing (as Q39)"
                ),
            )
        else:
            exp, rule = REFUSE, "the end signal sent twice (content after the end)"
        case(
            "violation",
            f"{name}.end-doubled",
            dialect,
            transport,
            b"".join(doubled_end),
            exp,
            {**src, "rule": rule},
            truth=base_calls,
        )


# --- hostile inputs ---------------------------------------------------------------


def hostile() -> None:
    def H(name: str, what: str, dialect: str, transport: str, data: bytes, exp: Event) -> None:
        case("hostile", name, dialect, transport, data, exp, {"rule": what})

    def one(index: Any, args: Any = WS, name: str = "weather", id: str = "call_h") -> bytes:
        return chat(
            [opening(), oa(calls_delta(tc(index, id, name, args))), oa(finish="tool_calls")]
        )

    H(
        "index-max-i64",
        "index 2**63-1: an opaque key",
        "openai-chat",
        "sse",
        one(2**63 - 1),
        expect_calls(call("weather", W, "call_h")),
    )
    H(
        "index-min-i64",
        "index -2**63: an opaque key",
        "openai-chat",
        "sse",
        one(-(2**63)),
        expect_calls(call("weather", W, "call_h")),
    )
    H(
        "index-over-i64",
        "index 2**64: a valid JSON integer, and an index is only a key (Q3)",
        "openai-chat",
        "sse",
        one(2**64),
        expect_calls(call("weather", W, "call_h")),
    )
    H("index-float", "index 0.5: no index, refused loudly", "openai-chat", "sse", one(0.5), REFUSE)
    H("index-object", "index {}: refused loudly", "openai-chat", "sse", one({}), REFUSE)
    H(
        "anthropic-index-huge",
        "content block index 2**62",
        "anthropic",
        "sse",
        sse(
            [
                {**e, "index": 2**62} if "index" in e else e
                for e in ant_message([ant_tool("toolu_h", "weather", WS)])
            ],
            named=True,
        ),
        expect_calls(call("weather", W, "toolu_h")),
    )
    H(
        "name-empty",
        "a call whose name is empty never runs",
        "openai-chat",
        "sse",
        one(0, name=""),
        REFUSE,
    )
    H(
        "id-unicode",
        "an id of control and non-ASCII characters, kept as sent",
        "openai-chat",
        "sse",
        one(0, id="call_\u00e9\u4e2d\u0007"),
        expect_calls(call("weather", W, "call_\u00e9\u4e2d\u0007")),
    )
    deep = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    H(
        "arguments-nested-100000",
        "arguments nested 100,000 deep: no sane tool takes them",
        "openai-chat",
        "sse",
        one(0, deep),
        REFUSE,
    )
    nested = '{"a":' + "[" * 40 + "1" + "]" * 40 + "}"
    H(
        "arguments-nested-40",
        "arguments nested 40 deep: ordinary JSON",
        "openai-chat",
        "sse",
        one(0, nested),
        expect_calls(call("weather", json.loads(nested), "call_h")),
    )
    envelope = oa(calls_delta(tc(0, "call_h", "weather", WS)))
    text = dumps(envelope)[:-1] + ',"x":' + "[" * 50_000 + "]" * 50_000 + "}"
    H(
        "envelope-nested-50000",
        "an unknown field nested 50,000 deep in the event carrying the "
        "call: unknown fields never change the result, and the work stays bounded",
        "openai-chat",
        "sse",
        (
            f"data: {dumps(opening())}\n\ndata: {text}\n\n"
            f"data: {dumps(oa(finish='tool_calls'))}\n\n"
        ).encode(),
        expect_calls(call("weather", W, "call_h")),
    )
    big = {"text": "x" * 60_000}
    H(
        "arguments-60k",
        "a 60 kB argument in 200 fragments",
        "openai-chat",
        "sse",
        chat(
            [opening(), oa(calls_delta(tc(0, "call_h", "write", "")))]
            + [
                oa(calls_delta(tc(0, args=dumps(big)[i : i + 301])))
                for i in range(0, len(dumps(big)), 301)
            ]
            + [oa(finish="tool_calls")]
        ),
        expect_calls(call("write", big, "call_h")),
    )
    many = [{"function": {"name": f"f{i}", "arguments": {"i": i}}} for i in range(1000)]
    H(
        "calls-1000",
        "1,000 calls in one message",
        "ollama",
        "jsonl",
        jsonl(
            [
                {
                    "model": "m",
                    "message": {"role": "assistant", "content": "", "tool_calls": many},
                    "done": False,
                },
                {
                    "model": "m",
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                },
            ]
        ),
        expect_calls(*[call(f"f{i}", {"i": i}) for i in range(1000)]),
    )
    over = [{"function": {"name": "f", "arguments": {}}} for _ in range(5000)]
    H(
        "calls-5000",
        "5,000 calls in one message: valid, and no provider rule bounds it; a "
        "reassembler's own bound that refuses it loudly is counted as error, never pass",
        "ollama",
        "jsonl",
        jsonl(
            [
                {
                    "model": "m",
                    "message": {"role": "assistant", "content": "", "tool_calls": over},
                    "done": False,
                },
                {
                    "model": "m",
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                },
            ]
        ),
        expect_calls(*[call("f", {}) for _ in range(5000)]),
    )
    H(
        "crc-flipped",
        "one bit of an event-stream payload flipped: the CRC no longer matches",
        "bedrock",
        "eventstream",
        (lambda d: d[:60] + bytes([d[60] ^ 1]) + d[61:])(
            eventstream(bedrock_events([("tooluse_h", "weather", ['{"city": "Paris"}'])]))
        ),
        REFUSE,
    )
    H(
        "frame-length-huge",
        "an event-stream prelude announcing 4 GB",
        "bedrock",
        "eventstream",
        b"\xff\xff\xff\xf0" + b"\x00" * 12,
        REFUSE,
    )
    H(
        "not-utf8",
        "invalid UTF-8 inside the arguments",
        "openai-chat",
        "sse",
        one(0).replace(b"Paris", b"Par\xffis"),
        REFUSE,
    )
    H(
        "nul-bytes",
        "NUL bytes between events",
        "openai-chat",
        "sse",
        one(0).replace(b"\n\n", b"\n\n\x00\x00", 1),
        REFUSE,
    )
    H(
        "sse-line-no-data",
        "40,000 empty SSE events around the call",
        "openai-chat",
        "sse",
        b"\n\n" * 20_000 + one(0) + b"\n\n" * 20_000,
        expect_calls(call("weather", W, "call_h")),
    )


def main() -> int:
    for category in ("quirk", "violation", "hostile"):
        folder = CASES / category
        if folder.exists():
            for old in folder.iterdir():
                old.unlink()
    quirk_rows()
    quirk_rows_2()
    quirk_rows_3()
    violations()
    hostile()
    print(f"{len(WRITTEN)} cases written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
