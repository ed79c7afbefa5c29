"""Rendering the answered assistant turn and its tool results for each provider's next request.

OpenAI (chat and Responses) and Anthropic output is checked against the official
SDKs' own request types: a pydantic ``TypeAdapter`` over them, plus a strict walk
of the TypedDicts (the adapter validates iterables lazily and ignores unknown
keys, so on its own it would pass a misspelt block). Bedrock and Gemini are
checked by shape only: their SDKs (boto3, google-genai) are too heavy to install
for the tests.
"""

from __future__ import annotations

import collections.abc
import json
import types
import typing
from pathlib import Path
from typing import Any

import pydantic
import pytest
import typing_extensions as te
from hypothesis import given, settings
from hypothesis import strategies as st
from toolstitch import (
    Assembler,
    ImageBlock,
    Message,
    RefusalBlock,
    RenderError,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultError,
    ToolResultMessage,
    ToolUseBlock,
    render_assistant,
    render_results,
    render_turn,
)

# ------------------------------------------------------ strict SDK checking


def _unwrap(tp: Any) -> Any:
    while te.get_origin(tp) in (te.Required, te.NotRequired, te.Annotated, te.ReadOnly):
        tp = te.get_args(tp)[0]
    return tp


def conforms(tp: Any, value: Any) -> bool:
    """Whether ``value`` is exactly an instance of the TypedDict-based request type ``tp``:
    required keys present, no unknown keys, literals and unions respected, iterables checked."""
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return True
    origin = te.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(arm, value) for arm in te.get_args(tp))
    if origin in (typing.Literal, te.Literal):
        return value in te.get_args(tp)
    if tp is type(None):
        return value is None
    if te.is_typeddict(tp):
        if not isinstance(value, dict):
            return False
        hints = te.get_type_hints(tp, include_extras=True)
        if not tp.__required_keys__ <= value.keys() <= hints.keys():
            return False
        return all(conforms(hints[k], v) for k, v in value.items())
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence):
        (item,) = te.get_args(tp)
        return isinstance(value, list) and all(conforms(item, v) for v in value)
    if tp is str:
        return isinstance(value, str)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(tp, type):
        return isinstance(value, tp)
    raise AssertionError(f"unhandled type {tp!r}")


def check_sdk(tp: Any, items: list[dict[str, Any]]) -> None:
    adapter = pydantic.TypeAdapter(tp)
    for item in items:
        adapter.validate_python(item)
        assert conforms(tp, item), json.dumps(item, default=repr)[:500]


def openai_chat_type() -> Any:
    from openai.types.chat import ChatCompletionMessageParam

    return ChatCompletionMessageParam


def openai_responses_type() -> Any:
    from openai.types.responses import ResponseInputItemParam

    return ResponseInputItemParam


def anthropic_type() -> Any:
    from anthropic.types import MessageParam

    return MessageParam


def test_the_strict_checker_rejects_what_the_adapter_lets_through() -> None:
    bad = {"role": "user", "content": [{"type": "tool_resultx", "tool_use_id": "t"}]}
    pydantic.TypeAdapter(anthropic_type()).validate_python(bad)  # lazily passes
    assert not conforms(anthropic_type(), bad)
    extra = {"role": "tool", "tool_call_id": "c", "content": "x", "bogus": 1}
    assert not conforms(openai_chat_type(), extra)
    assert conforms(openai_chat_type(), {"role": "tool", "tool_call_id": "c", "content": "x"})


# ------------------------------------------------------------- a turn

GEMINI_STATE = json.dumps({"thoughtSignature": "sig-gem-1"})

TURN = Message(
    role="assistant",
    blocks=(
        ThinkingBlock(thinking="need weather", signature="sig-think", signature_format="anthropic"),
        TextBlock("Checking both cities."),
        ToolUseBlock(id="call_1", name="weather", input='{"city": "Paris",  "unit":"c"}'),
        ToolUseBlock(id="call_2", name="now", input=""),
    ),
)
RESULTS: list[ToolResultBlock | ToolResultMessage] = [
    ToolResultBlock(tool_use_id="call_2", content=(TextBlock("12:00"),)),
    ToolResultMessage(tool_use_id="call_1", blocks=(TextBlock('{"temp": 21}'),)),
]
FAILED = [
    ToolResultBlock(tool_use_id="call_1", content=(TextBlock("boom"),), is_error=True),
    ToolResultBlock(tool_use_id="call_2", content=(TextBlock("ok"),)),
]


@pytest.mark.parametrize(
    "provider", ["openai-chat", "openai-responses", "anthropic", "bedrock", "gemini"]
)
def test_every_provider_renders_a_whole_turn(provider: str) -> None:
    items = render_turn(provider, TURN, RESULTS)
    assert items == render_assistant(provider, TURN) + render_results(provider, RESULTS, calls=TURN)
    json.dumps(items)  # plain JSON values only


# ------------------------------------------------------------ openai-chat


def test_openai_chat_assistant_keeps_arguments_exactly_as_received() -> None:
    (message,) = render_assistant("openai-chat", TURN)
    assert message == {
        "role": "assistant",
        "content": "Checking both cities.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Paris",  "unit":"c"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
    }
    check_sdk(openai_chat_type(), [message])


def test_openai_chat_content_is_null_with_only_tool_calls() -> None:
    (message,) = render_assistant("openai-chat", [ToolUseBlock(id="c", name="f", input="{}")])
    assert message["content"] is None
    check_sdk(openai_chat_type(), [message])
    (plain,) = render_assistant("openai-chat", [TextBlock("hi")])
    assert plain == {"role": "assistant", "content": "hi"}
    (refused,) = render_assistant("openai-chat", [RefusalBlock("no")])
    assert refused == {"role": "assistant", "content": "", "refusal": "no"}
    check_sdk(openai_chat_type(), [plain, refused])


def test_openai_chat_results_are_tool_messages_in_call_order() -> None:
    items = render_results("openai-chat", RESULTS, calls=TURN)
    assert items == [
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
    ]
    check_sdk(openai_chat_type(), items)
    # Without calls=, results keep the order they were given.
    assert [m["tool_call_id"] for m in render_results("openai-chat", RESULTS)] == [
        "call_2",
        "call_1",
    ]


def test_openai_chat_cannot_carry_an_image_result() -> None:
    result = ToolResultBlock("c", (ImageBlock(media_type="image/png", data="AAAA"),))
    with pytest.raises(RenderError, match="ImageBlock"):
        render_results("openai-chat", [result])


# ------------------------------------------------------- openai-responses


def test_openai_responses_function_call_items() -> None:
    turn = [
        ThinkingBlock(
            thinking="plan",
            signature="enc",
            signature_format="openai-responses",
            provider_state='"rs_1"',
            provider_state_format="openai-responses",
        ),
        ThinkingBlock(thinking="no id: cannot go back"),
        TextBlock("Sure."),
        ToolUseBlock(
            id="call_1",
            name="weather",
            input='{"city":"Paris"}',
            provider_state=json.dumps({"id": "fc_1"}),
            provider_state_format="openai-responses",
        ),
        ToolUseBlock(id="call_2", name="now", input=""),
    ]
    items = render_assistant("openai-responses", turn)
    assert items == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "enc",
        },
        {"type": "message", "role": "assistant", "content": "Sure."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city":"Paris"}',
            "id": "fc_1",
        },
        {"type": "function_call", "call_id": "call_2", "name": "now", "arguments": "{}"},
    ]
    check_sdk(openai_responses_type(), items)


def test_openai_responses_item_id_as_a_json_string_state() -> None:
    block = ToolUseBlock(
        "c", "f", "{}", provider_state='"fc_9"', provider_state_format="openai-responses"
    )
    assert render_assistant("openai-responses", [block])[0]["id"] == "fc_9"
    other = ToolUseBlock("c", "f", "{}", provider_state='"x"', provider_state_format="gemini")
    assert "id" not in render_assistant("openai-responses", [other])[0]


def test_openai_responses_outputs() -> None:
    items = render_results("openai-responses", RESULTS, calls=TURN)
    assert items == [
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'},
        {"type": "function_call_output", "call_id": "call_2", "output": "12:00"},
    ]
    image = ToolResultBlock(
        "call_1", (TextBlock("chart:"), ImageBlock(media_type="image/png", data="iVBO"))
    )
    (rendered,) = render_results("openai-responses", [image])
    assert rendered["output"] == [
        {"type": "input_text", "text": "chart:"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBO"},
    ]
    check_sdk(openai_responses_type(), [*items, rendered])


# -------------------------------------------------------------- anthropic


def test_anthropic_assistant_blocks() -> None:
    (message,) = render_assistant("anthropic", TURN)
    assert message == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "need weather", "signature": "sig-think"},
            {"type": "text", "text": "Checking both cities."},
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "weather",
                "input": {"city": "Paris", "unit": "c"},
            },
            {"type": "tool_use", "id": "call_2", "name": "now", "input": {}},
        ],
    }
    assert list(message["content"][2]["input"]) == ["city", "unit"]
    check_sdk(anthropic_type(), [message])


def test_anthropic_redacted_thinking_and_unsigned_thinking() -> None:
    redacted = ThinkingBlock(provider_state='"opaque"', provider_state_format="anthropic-redacted")
    (message,) = render_assistant(
        "anthropic", [redacted, ThinkingBlock(thinking="unsigned"), TextBlock("")]
    )
    assert message["content"] == [{"type": "redacted_thinking", "data": "opaque"}]
    check_sdk(anthropic_type(), [message])


def test_anthropic_tool_results() -> None:
    results = [
        *FAILED,
        ToolResultBlock(
            "call_3", (TextBlock("see"), ImageBlock(media_type="image/png", data="iVBO"))
        ),
        ToolResultBlock("call_4", ()),
    ]
    (message,) = render_results("anthropic", results)
    assert message == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "boom", "is_error": True},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "ok", "is_error": False},
            {
                "type": "tool_result",
                "tool_use_id": "call_3",
                "content": [
                    {"type": "text", "text": "see"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                    },
                ],
                "is_error": False,
            },
            {"type": "tool_result", "tool_use_id": "call_4", "is_error": False},
        ],
    }
    check_sdk(anthropic_type(), [message])


@pytest.mark.parametrize(
    "text", ['{"a": 1', '{"a": "cut', "[1, 2]", '"just text"', '{"a": 1} {"b": 2}', '{"a":1,"a":2}']
)
def test_input_that_is_not_an_object_goes_back_wrapped(text: str) -> None:
    """Anthropic's documented form for invalid tool input (fine-grained tool streaming),
    and the same in the other dialects that take the input as an object; the dialects
    that take text take it as it came."""
    block = ToolUseBlock("c", "f", text)
    wrapped = {"INVALID_JSON": text}
    (anthropic_turn,) = render_assistant("anthropic", [block])
    assert anthropic_turn["content"][0]["input"] == wrapped
    check_sdk(anthropic_type(), [anthropic_turn])
    (bedrock_turn,) = render_assistant("bedrock", [block])
    assert bedrock_turn["content"][0]["toolUse"]["input"] == wrapped
    (gemini_turn,) = render_assistant("gemini", [block])
    assert gemini_turn["parts"][0]["functionCall"]["args"] == wrapped
    (chat_turn,) = render_assistant("openai-chat", [block])
    assert chat_turn["tool_calls"][0]["function"]["arguments"] == text
    assert render_assistant("openai-responses", [block])[0]["arguments"] == text


# ---------------------------------------------------------------- bedrock


def test_bedrock_shape() -> None:
    turn = [
        ThinkingBlock(thinking="hmm", signature="sig-b", signature_format="bedrock"),
        TextBlock("Checking."),
        ToolUseBlock(id="tooluse_1", name="weather", input='{"city": "Paris"}'),
        ToolUseBlock(id="tooluse_2", name="now", input=""),
    ]
    (assistant,) = render_assistant("bedrock", turn)
    assert assistant == {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig-b"}}},
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Paris"}}},
            {"toolUse": {"toolUseId": "tooluse_2", "name": "now", "input": {}}},
        ],
    }
    results = [
        ToolResultBlock("tooluse_1", (TextBlock("21C"),)),
        ToolResultBlock("tooluse_2", (TextBlock("down"),), is_error=True),
    ]
    (user,) = render_results("bedrock", results, calls=turn)
    assert user == {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "21C"}]}},
            {
                "toolResult": {
                    "toolUseId": "tooluse_2",
                    "content": [{"text": "down"}],
                    "status": "error",
                }
            },
        ],
    }


def test_bedrock_redacted_reasoning_goes_back_as_bytes() -> None:
    redacted = ThinkingBlock(provider_state='"AAEC"', provider_state_format="bedrock-redacted")
    (assistant,) = render_assistant("bedrock", [redacted, ThinkingBlock(thinking="unsigned")])
    assert assistant["content"] == [{"reasoningContent": {"redactedContent": b"\x00\x01\x02"}}]


def test_bedrock_image_results_carry_bytes() -> None:
    result = ToolResultBlock("t", (ImageBlock(media_type="image/jpeg", data="AAEC"),))
    (user,) = render_results("bedrock", [result])
    image = user["content"][0]["toolResult"]["content"][0]["image"]
    assert image == {"format": "jpeg", "source": {"bytes": b"\x00\x01\x02"}}
    with pytest.raises(RenderError, match="URL"):
        render_results("bedrock", [ToolResultBlock("t", (ImageBlock(url="https://x/y.png"),))])


# ----------------------------------------------------------------- gemini


def test_gemini_carries_thought_signatures_back() -> None:
    turn = [
        ThinkingBlock(thinking="plan", signature="sig-gem-0", signature_format="gemini"),
        TextBlock("Looking it up."),
        ThinkingBlock(signature="sig-on-text", signature_format="gemini"),
        ThinkingBlock(thinking="other provider", signature="x", signature_format="anthropic"),
        ToolUseBlock(
            id="g1",
            name="weather",
            input='{"location": "San Francisco"}',
            provider_state=GEMINI_STATE,
            provider_state_format="gemini",
        ),
        ToolUseBlock(
            id="g2",
            name="now",
            input="",
            provider_state='"sig-as-string"',
            provider_state_format="gemini",
        ),
        ToolUseBlock(id="g3", name="now", input="{}"),
    ]
    (content,) = render_assistant("gemini", turn)
    assert content == {
        "role": "model",
        "parts": [
            {"text": "plan", "thought": True, "thoughtSignature": "sig-gem-0"},
            {"text": "Looking it up."},
            {"text": "", "thoughtSignature": "sig-on-text"},
            {"text": "other provider", "thought": True},
            {
                "functionCall": {
                    "name": "weather",
                    "args": {"location": "San Francisco"},
                    "id": "g1",
                },
                "thoughtSignature": "sig-gem-1",
            },
            {
                "functionCall": {"name": "now", "args": {}, "id": "g2"},
                "thoughtSignature": "sig-as-string",
            },
            {"functionCall": {"name": "now", "args": {}, "id": "g3"}},
        ],
    }


def test_gemini_function_responses_name_their_function() -> None:
    (content,) = render_results("gemini", FAILED, calls=TURN)
    assert content == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "call_1",
                    "name": "weather",
                    "response": {"error": "boom"},
                }
            },
            {"functionResponse": {"id": "call_2", "name": "now", "response": {"output": "ok"}}},
        ],
    }
    with pytest.raises(RenderError, match="calls="):
        render_results("gemini", FAILED)


# ------------------------------------------------------------ correlation


def test_a_result_for_an_unknown_call_is_an_error() -> None:
    stray = [*RESULTS, ToolResultBlock("call_9", (TextBlock("?"),))]
    with pytest.raises(ToolResultError, match="call_9"):
        render_results("openai-chat", stray, calls=TURN)
    with pytest.raises(ToolResultError, match="call_9"):
        render_turn("anthropic", TURN, stray)


def test_two_results_for_one_call_is_an_error() -> None:
    with pytest.raises(ToolResultError, match="two results"):
        render_turn("openai-chat", TURN, [*RESULTS, RESULTS[0]])


def test_a_call_without_a_result_is_an_error() -> None:
    with pytest.raises(ToolResultError, match="call_1"):
        render_turn("anthropic", TURN, RESULTS[:1])


def test_calls_without_ids_cannot_be_answered() -> None:
    with pytest.raises(ToolResultError, match="no id"):
        render_turn("gemini", [ToolUseBlock(name="f", input="{}")], [])


def test_results_may_come_as_a_message_of_result_blocks() -> None:
    message = Message(role="user", blocks=tuple(FAILED))
    assert render_results("openai-chat", [message]) == render_results("openai-chat", FAILED)
    assert render_results("openai-chat", RESULTS[0]) == render_results("openai-chat", RESULTS[:1])


def test_unknown_provider_and_wrong_types() -> None:
    with pytest.raises(RenderError, match="unknown provider"):
        render_assistant("openai", TURN)
    with pytest.raises(RenderError, match="unknown provider"):
        render_results("mistral", RESULTS)  # a server, not a dialect: ids="mistral"
    with pytest.raises(TypeError):
        render_results("openai-chat", [TextBlock("x")])
    with pytest.raises(TypeError):
        render_assistant("openai-chat", 42)


def test_blocks_a_format_cannot_carry_are_render_errors() -> None:
    for provider in ("openai-chat", "openai-responses", "anthropic", "bedrock", "gemini"):
        with pytest.raises(RenderError, match=provider):
            render_assistant(provider, [ToolResultBlock("x")])


# ------------------------------------------------------------- properties

arguments = st.dictionaries(
    st.text(max_size=8),
    st.none() | st.booleans() | st.integers() | st.text() | st.lists(st.integers(), max_size=3),
    max_size=5,
)


@settings(max_examples=100, deadline=None)
@given(arguments, st.sampled_from([None, 2]))
def test_rendered_calls_match_the_input(args: dict[str, Any], indent: int | None) -> None:
    raw = json.dumps(args, indent=indent)
    block = ToolUseBlock(id="c", name="f", input=raw)
    assert (
        render_assistant("openai-chat", [block])[0]["tool_calls"][0]["function"]["arguments"] == raw
    )
    assert render_assistant("openai-responses", [block])[0]["arguments"] == raw
    rendered = render_assistant("anthropic", [block])[0]["content"][0]["input"]
    assert rendered == args and list(rendered) == list(args)
    assert render_assistant("bedrock", [block])[0]["content"][0]["toolUse"]["input"] == args
    assert render_assistant("gemini", [block])[0]["parts"][0]["functionCall"]["args"] == args


# ------------------------------------- every kind of call goes back (Q27, Q28)

VERCEL = Path(__file__).resolve().parent / "fixtures" / "real" / "vercel-ai"


def assembled(name: str) -> Any:
    import gzip

    raw = (VERCEL / name).read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    asm = Assembler("auto")
    for line in raw.decode().splitlines():
        if line.strip():
            asm.feed(line)
    asm.close()
    m = asm.message()
    assert m.complete, m.problems
    return m


def test_q27_anthropic_server_tools_and_their_results_render_back_as_they_came() -> None:
    for name in (
        "anthropic-web-search-tool.1.chunks.txt",
        "anthropic-mcp.1.chunks.txt",
        "anthropic-code-execution-20250825.1.chunks.txt.gz",
    ):
        m = assembled(name)
        out = render_turn("anthropic", m, [])  # the provider ran them: no client results
        assert len(out) == 2 and out[1] == {"role": "user", "content": []}
        content = out[0]["content"]
        uses = [c for c in content if c["type"] in ("server_tool_use", "mcp_tool_use")]
        results = [c for c in content if c["type"].endswith("_tool_result")]
        assert uses and len(results) == len(uses), name
        for use, call in zip(uses, [b for b in m.tool_uses if b.server_side], strict=True):
            assert use["id"] == call.id and use["input"] == json.loads(call.input)
        if "mcp" in name:
            # MCP blocks are in the SDK's beta request types.
            from anthropic.types.beta import BetaMessageParam

            assert uses[0]["server_name"] == "echo"
            check_sdk(BetaMessageParam, out[:1])
        else:
            check_sdk(anthropic_type(), out[:1])


def test_q27_responses_hosted_items_render_back_with_their_results() -> None:
    m = assembled("azure-image-generation-tool.1.chunks.txt")
    items = render_assistant("openai-responses", m)
    (image,) = [i for i in items if i["type"] == "image_generation_call"]
    assert image["id"].startswith("ig_") and image["result"].startswith("iVBOR")
    m = assembled("openai-file-search-tool.1.chunks.txt")
    items = render_assistant("openai-responses", m)
    (search,) = [i for i in items if i["type"] == "file_search_call"]
    assert search["queries"] and search["status"] == "completed"
    check_sdk(openai_responses_type(), [search, image])


def test_q28_custom_tool_calls_render_back_and_are_answered_in_kind() -> None:
    m = assembled("openai-custom-tool.1.chunks.txt")
    (call,) = m.tool_uses
    out = render_turn("openai-responses", m, [ToolResultBlock(call.id, (TextBlock("3 rows"),))])
    assert out == [
        {
            "type": "custom_tool_call",
            "call_id": "call_custom_sql_001",
            "name": "write_sql",
            "input": "SELECT * FROM users WHERE age > 25",
            "id": "ct_abc123def456",
        },
        {"type": "custom_tool_call_output", "call_id": "call_custom_sql_001", "output": "3 rows"},
    ]
    check_sdk(openai_responses_type(), out)
    chat = Assembler("openai-chat")
    chat.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "custom",
                                "custom": {"name": "sql", "input": "SELECT 1"},
                            }
                        ]
                    },
                }
            ]
        }
    )
    chat.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    cm = chat.message()
    assert cm.complete and cm.tool_uses[0].kind == "custom_tool_call"
    out = render_turn("openai-chat", cm, [ToolResultBlock("call_1", (TextBlock("1"),))])
    assert out[0]["tool_calls"] == [
        {"id": "call_1", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
    ]
    check_sdk(openai_chat_type(), out)


def test_q28_other_client_tools_render_back_as_their_items_and_outputs() -> None:
    asm = Assembler("openai-responses")
    item = {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "call_s",
        "status": "completed",
        "action": {"commands": ["ls"], "timeout_ms": None, "max_output_length": None},
    }
    for e in (
        {"type": "response.created", "response": {}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ):
        asm.feed(e)
    m = asm.message()
    out = render_turn("openai-responses", m, [ToolResultBlock("call_s", (TextBlock("a.txt"),))])
    assert out[0] == item
    assert out[1] == {"type": "shell_call_output", "call_id": "call_s", "output": "a.txt"}
    # Chat Completions has no form for it.
    with pytest.raises(RenderError):
        render_assistant("openai-chat", m)


def test_q27_gemini_code_execution_renders_back_as_parts() -> None:
    asm = Assembler("gemini")
    asm.feed(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"executableCode": {"language": "PYTHON", "code": "print(2)"}},
                            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
                            {"text": "2"},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    asm.close()
    (turn,) = render_assistant("gemini", asm.message())
    assert turn["parts"] == [
        {"executableCode": {"language": "PYTHON", "code": "print(2)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
        {"text": "2"},
    ]
    assert render_results("gemini", [], calls=asm.message()) == [{"role": "user", "parts": []}]
