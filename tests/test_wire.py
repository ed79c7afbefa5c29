"""The JSON wire codec: exact round trips, and fail-closed decoding."""

from __future__ import annotations

import dataclasses
import json
from typing import TypeVar

import pytest
from toolstitch import (
    AudioBlock,
    BlockDecodeError,
    BlockEncodeError,
    BlockLimitError,
    DocumentBlock,
    ImageBlock,
    Message,
    RefusalBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolstitchError,
    ToolUseBlock,
    UnknownBlockTypeError,
    marshal_block,
    marshal_blocks,
    marshal_message,
    unmarshal_block,
    unmarshal_blocks,
    unmarshal_message,
)

MIB = 1024 * 1024
T = TypeVar("T")


def test_tool_use_is_shaped_like_anthropic() -> None:
    wire = marshal_block(ToolUseBlock("call_42", "weather", '{"city":"Boston"}'))
    assert wire == '{"type":"tool_use","id":"call_42","name":"weather","input":{"city":"Boston"}}'
    assert json.loads(wire) == {
        "type": "tool_use",
        "id": "call_42",
        "name": "weather",
        "input": {"city": "Boston"},
    }


@pytest.mark.parametrize(
    "raw",
    [
        '{"city": "Bo\\u0073ton",   "n": 1.50e+1}',
        '{\n  "a": [1, 2 ,3],\n  "b": "é🦀\\n"\n}',
        "[]",
        '"just a string"',
        "12.000",
        '{"a":{"a":{"a":null}}}',
    ],
)
def test_input_is_embedded_verbatim_not_reformatted(raw: str) -> None:
    wire = marshal_block(ToolUseBlock("c", "n", raw))
    assert f'"input":{raw}' in wire
    assert unmarshal_block(wire) == ToolUseBlock("c", "n", raw)


def test_empty_input_marshals_as_null_and_back() -> None:
    wire = marshal_block(ToolUseBlock("c", "n", ""))
    assert json.loads(wire)["input"] is None
    assert unmarshal_block(wire) == ToolUseBlock("c", "n", "")
    assert unmarshal_block('{"type":"tool_use","id":"c","name":"n"}') == ToolUseBlock("c", "n", "")


@pytest.mark.parametrize("raw", ['{"city":', '{"a":1', '{"a":1}}', "{} {}", "nul", "{'a':1}", "\\"])
def test_partial_or_invalid_input_refuses_to_marshal_naming_the_call(raw: str) -> None:
    with pytest.raises(BlockEncodeError, match="call_9"):
        marshal_block(ToolUseBlock("call_9", "weather", raw))
    with pytest.raises(BlockEncodeError):
        marshal_blocks([TextBlock("ok"), ToolUseBlock("call_9", "weather", raw)])


def test_invalid_provider_state_refuses_to_marshal() -> None:
    with pytest.raises(BlockEncodeError, match="provider_state"):
        marshal_block(ToolUseBlock("c", "n", "{}", "not json", "gemini"))


def test_every_block_type_round_trips_exactly() -> None:
    blocks = [
        TextBlock('hello\n"world"\t\x01 é 🦀'),
        RefusalBlock("no"),
        ThinkingBlock("hmm", "sig==", "anthropic", '{"thoughtSignature":"abc"}', "gemini"),
        ThinkingBlock(""),
        ImageBlock("image/png", "", "iVBORw0KGgo="),
        ImageBlock("", "https://example.com/cat.png", ""),
        AudioBlock("audio/wav", "", "UklGR", "hi"),
        DocumentBlock("application/pdf", "", "JVBER", "Report"),
        ToolUseBlock("call_1", "f", '{"x":[1,2]}', '"sig"', "gemini"),
        ToolUseBlock(),
        ToolResultBlock("call_1", (TextBlock("ok"), ImageBlock("image/png", "", "AA")), True),
        ToolResultBlock("call_2"),
    ]
    for block in blocks:
        assert unmarshal_block(marshal_block(block)) == block  # type: ignore[arg-type]
        assert unmarshal_block(marshal_block(block).encode()) == block
    assert unmarshal_blocks(marshal_blocks(blocks)) == blocks  # type: ignore[arg-type]
    assert marshal_blocks([]) == "[]"
    assert unmarshal_blocks("[]") == []


def test_nested_tool_results_round_trip() -> None:
    inner = ToolResultBlock("a", (ToolUseBlock("b", "n", "{}"), TextBlock("x")), True)
    outer = ToolResultBlock("c", (inner, ToolResultBlock("d", (inner,))), False)
    assert unmarshal_block(marshal_block(outer)) == outer


def test_messages_round_trip() -> None:
    m = Message(
        "assistant",
        (TextBlock("Let me check."), ToolUseBlock("call_1", "weather", '{"city":"Paris"}')),
    )
    wire = marshal_message(m)
    assert json.loads(wire)["role"] == "assistant"
    assert unmarshal_message(wire) == m
    r = ToolResultMessage("call_1", (TextBlock("18C"),), False)
    wire = marshal_message(r)
    assert json.loads(wire) == {
        "role": "tool",
        "tool_use_id": "call_1",
        "content": [{"type": "text", "text": "18C"}],
        "is_error": False,
    }
    assert unmarshal_message(wire) == r
    with pytest.raises(TypeError):
        marshal_message(TextBlock("x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        marshal_block(m)  # type: ignore[arg-type]


def test_go_field_spelling_is_accepted_on_decode() -> None:
    go = '{"Type":"tool_use","ID":"call_1","Name":"weather","Input":{"city":"Boston"}}'
    assert unmarshal_block(go) == ToolUseBlock("call_1", "weather", '{"city":"Boston"}')
    assert unmarshal_block('{"type":"image","MediaType":"image/png","URL":"u"}') == ImageBlock(
        "image/png", "u", ""
    )
    assert unmarshal_block('{"type":"text","Text":"hi"}') == TextBlock("hi")
    go_result = '{"type":"tool_result","ToolUseID":"call_1","Content":[{"Type":"text","Text":"ok"}],"IsError":true}'
    assert unmarshal_block(go_result) == ToolResultBlock("call_1", (TextBlock("ok"),), True)
    assert unmarshal_message('{"Role":"user","Blocks":[{"Type":"text","Text":"q"}]}') == Message(
        "user", (TextBlock("q"),)
    )


def test_tool_result_string_content_is_one_text_block() -> None:
    assert unmarshal_block(
        '{"type":"tool_result","tool_use_id":"x","content":"done"}'
    ) == ToolResultBlock("x", (TextBlock("done"),))


@pytest.mark.parametrize(
    "data",
    ["{}", '{"type":""}', '{"type":"video"}', '{"type":null}', '{"text":"no tag"}', '{"type":5}'],
)
def test_unknown_or_missing_tags_fail_closed(data: str) -> None:
    with pytest.raises(UnknownBlockTypeError):
        unmarshal_block(data)


def test_unknown_tag_inside_a_list_names_its_place() -> None:
    with pytest.raises(UnknownBlockTypeError, match=r"blocks\[1\]"):
        unmarshal_blocks('[{"type":"text"},{"type":"hologram"}]')


@pytest.mark.parametrize(
    "data",
    [
        "",
        "{",
        '{"type":"text",}',
        "[1,2]",
        '"text"',
        "null",
        '{"type":"text","text":5}',
        '{"type":"tool_use","id":["x"]}',
        '{"type":"tool_result","is_error":"yes"}',
        '{"type":"tool_result","content":{"type":"text"}}',
        '{"type":"text","text":"a","TEXT":"b"}',
        '{"type":"text"} trailing',
    ],
)
def test_malformed_json_and_wrong_types_fail_closed(data: str) -> None:
    with pytest.raises(BlockDecodeError):
        unmarshal_block(data)


def test_invalid_utf8_fails_closed_with_its_offset() -> None:
    with pytest.raises(BlockDecodeError, match="UTF-8 at byte 23"):
        unmarshal_block(b'{"type":"text","text":"\xff"}')
    with pytest.raises(BlockDecodeError):
        unmarshal_blocks(b'[{"type":"text","text":"\xc3"}]')


def test_non_list_for_blocks_fails_closed() -> None:
    with pytest.raises(BlockDecodeError):
        unmarshal_blocks('{"type":"text"}')
    with pytest.raises(TypeError):
        unmarshal_block(5)  # type: ignore[arg-type]


def test_an_8_mib_block_fails_closed_before_parsing() -> None:
    big = '{"type":"text","text":"' + "a" * (8 * MIB) + '"}'
    with pytest.raises(BlockLimitError, match="over the limit"):
        unmarshal_block(big)
    # Over the limit before parsing: even malformed data gets the limit error.
    with pytest.raises(BlockLimitError):
        unmarshal_block("{" * (8 * MIB + 1))
    with pytest.raises(BlockLimitError):
        marshal_block(TextBlock("a" * (8 * MIB)))
    just_under = TextBlock("a" * (8 * MIB - 64))
    assert unmarshal_block(marshal_block(just_under)) == just_under


def test_10001_blocks_fail_closed() -> None:
    many = "[" + ",".join(['{"type":"text","text":"x"}'] * 10_001) + "]"
    with pytest.raises(BlockLimitError, match="10000"):
        unmarshal_blocks(many)
    with pytest.raises(BlockLimitError):
        marshal_blocks([TextBlock("x")] * 10_001)
    ok = "[" + ",".join(['{"type":"text","text":"x"}'] * 10_000) + "]"
    assert len(unmarshal_blocks(ok)) == 10_000


def test_nested_results_count_toward_the_block_limit() -> None:
    inner = ",".join(['{"type":"text"}'] * 6000)
    data = f'[{{"type":"tool_result","content":[{inner}]}},{{"type":"tool_result","content":[{inner}]}}]'
    with pytest.raises(BlockLimitError):
        unmarshal_blocks(data)


@pytest.mark.parametrize("depth", [200, 100_000])
def test_absurd_nesting_fails_closed(depth: int) -> None:
    deep_input = '{"type":"tool_use","input":' + "[" * depth + "]" * depth + "}"
    with pytest.raises(BlockLimitError, match="deeper"):
        unmarshal_block(deep_input)
    nested = '{"type":"tool_result","content":[' * depth + "]}" * depth
    with pytest.raises(BlockLimitError):
        unmarshal_block(nested)
    with pytest.raises(BlockLimitError):
        marshal_block(ToolUseBlock("c", "n", "[" * depth + "]" * depth))


def test_every_codec_error_is_a_toolstitch_value_error() -> None:
    for cls in (BlockDecodeError, BlockEncodeError, BlockLimitError, UnknownBlockTypeError):
        assert issubclass(cls, ToolstitchError)
        assert issubclass(cls, ValueError)


def _forced(cls: type[T], **fields: object) -> T:
    """A block whose fields skipped the constructor's checks (as ``object.__setattr__``
    allows): the codec must still refuse wrong types on its own."""
    block = cls.__new__(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        object.__setattr__(block, f.name, fields.get(f.name, f.default))
    return block


def test_wrong_field_types_in_a_block_refuse_to_marshal() -> None:
    with pytest.raises(BlockEncodeError, match="text"):
        marshal_block(_forced(TextBlock, text=5))
    with pytest.raises(BlockEncodeError, match="is_error"):
        marshal_block(_forced(ToolResultBlock, tool_use_id="x", content=(), is_error="yes"))
    with pytest.raises(TypeError):
        marshal_block(None)  # type: ignore[arg-type]


def test_input_null_is_refused_since_the_wire_could_not_tell_it_from_empty() -> None:
    with pytest.raises(BlockEncodeError, match="null"):
        marshal_block(ToolUseBlock("c", "n", " null "))


def test_whitespace_around_the_input_value_is_not_part_of_it() -> None:
    wire = marshal_block(ToolUseBlock("c", "n", '\n {"a": 1} \n'))
    assert unmarshal_block(wire) == ToolUseBlock("c", "n", '{"a": 1}')


def test_provider_state_null_text_round_trips() -> None:
    block = ThinkingBlock("t", provider_state="null", provider_state_format="x")
    assert unmarshal_block(marshal_block(block)) == block
