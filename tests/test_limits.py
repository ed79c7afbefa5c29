"""Nesting and size limits on every recursive path: hostile input gets a ToolstitchError
subclass (or a value), never a crash, a RecursionError or a bare ValueError."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolstitch import (
    Assembler,
    BlockEncodeError,
    BlockLimitError,
    LimitError,
    Message,
    PartialJson,
    RenderError,
    StreamDecodeError,
    TextBlock,
    ThinkingBlock,
    ToolDefinitionError,
    ToolInputError,
    ToolResultBlock,
    ToolResultMessage,
    ToolSchemaError,
    Toolset,
    ToolstitchError,
    ToolUseBlock,
    marshal_block,
    marshal_blocks,
    marshal_message,
    parse_partial,
    render_assistant,
    unmarshal_block,
    unmarshal_blocks,
    unmarshal_message,
)
from toolstitch._toolstitch import _CompiledSchema

HOSTILE_DEPTHS = [400, 10_000, 100_000]


def results(levels: int, leaf: Any = None) -> Any:
    """``levels`` ToolResultBlocks, each holding the next, around ``leaf``."""
    block = TextBlock("x") if leaf is None else leaf
    for _ in range(levels):
        block = ToolResultBlock("r", (block,))
    return block


def brackets(depth: int) -> str:
    return "[" * depth + "]" * depth


# ------------------------------------------------------------- the wire codec


def test_hostile_nesting_refuses_to_marshal_in_a_fresh_interpreter() -> None:
    # In a child process, so that a regression to a native stack overflow is a
    # failed test, not a dead test run.
    code = textwrap.dedent(
        """
        from toolstitch import (BlockLimitError, Message, TextBlock, ToolResultBlock,
                                marshal_block, marshal_blocks, marshal_message)
        for depth in (7_000, 10_000, 100_000):
            block = TextBlock("x")
            for _ in range(depth):
                block = ToolResultBlock("r", (block,))
            for call in (lambda: marshal_block(block), lambda: marshal_blocks([block]),
                         lambda: marshal_message(Message("user", (block,)))):
                try:
                    call()
                except BlockLimitError as e:
                    assert "deeper than 100" in str(e), e
                else:
                    raise SystemExit("marshalled")
        print("refused")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "refused"


@pytest.mark.parametrize("levels", range(44, 56))
def test_encoding_refuses_exactly_what_decoding_refuses(levels: int) -> None:
    block = results(levels)
    # The same document written by hand, to ask the decoder about it.
    text = (
        '{"type":"tool_result","tool_use_id":"r","content":[' * levels
        + '{"type":"text","text":"x"}'
        + '],"is_error":false}' * levels
    )
    try:
        decoded = unmarshal_block(text)
    except BlockLimitError:
        with pytest.raises(BlockLimitError, match="deeper than 100"):
            marshal_block(block)
    else:
        assert decoded == block
        assert marshal_block(block) == text
    # Whatever encodes also decodes, in a list and in messages.
    try:
        listed = marshal_blocks([block])
    except BlockLimitError:
        listed = ""
    if listed:
        assert unmarshal_blocks(listed) == [block]
    for message in (Message("user", (block,)), ToolResultMessage("r", (block,))):
        try:
            wire = marshal_message(message)
        except BlockLimitError:
            continue
        assert unmarshal_message(wire) == message


def test_the_nesting_bound_is_the_same_both_ways() -> None:
    assert unmarshal_block(marshal_block(results(49))) == results(49)
    with pytest.raises(BlockLimitError):
        marshal_block(results(50))
    # Tool input and provider state count at the depth they are written at.
    assert marshal_block(ToolUseBlock("c", "n", brackets(99)))
    with pytest.raises(BlockLimitError):
        marshal_block(ToolUseBlock("c", "n", brackets(100)))
    with pytest.raises(BlockLimitError):
        marshal_block(results(1, ToolUseBlock("c", "n", brackets(98))))
    with pytest.raises(BlockLimitError):
        marshal_block(ThinkingBlock("t", provider_state=brackets(100), provider_state_format="x"))


def test_nested_blocks_count_towards_the_block_limit_when_encoding() -> None:
    wide = ToolResultBlock("r", (TextBlock("x"),) * 10_000)
    with pytest.raises(BlockLimitError, match="10000"):
        marshal_block(wide)
    with pytest.raises(BlockLimitError):
        marshal_blocks([TextBlock("x"), ToolResultBlock("r", (TextBlock("x"),) * 9_999)])


json_texts = st.recursive(
    st.sampled_from(["1", '"s"', "null", "true", "[]", "{}"]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(inner, max_size=3).map(
            lambda xs: "{" + ",".join(f'"k{i}":{x}' for i, x in enumerate(xs)) + "}"
        ),
        inner.map(lambda x: "[" * 30 + x + "]" * 30),
    ),
    max_leaves=12,
)

leaf_blocks = st.one_of(
    st.builds(TextBlock, st.text(max_size=5)),
    st.builds(ToolUseBlock, st.just("c"), st.just("n"), json_texts.filter(lambda t: t != "null")),
    st.builds(
        ThinkingBlock,
        st.text(max_size=3),
        provider_state=st.one_of(st.none(), json_texts),
        provider_state_format=st.just("x"),
    ),
)


@st.composite
def block_trees(draw: st.DrawFn) -> Any:
    block = draw(
        st.recursive(
            leaf_blocks,
            lambda inner: st.builds(
                ToolResultBlock, st.just("r"), st.lists(inner, max_size=3).map(tuple)
            ),
            max_leaves=8,
        )
    )
    # Then a straight chain of results around it, often past the bound.
    return results(draw(st.integers(0, 60)), block)


@settings(max_examples=150, deadline=None)
@given(block_trees())
def test_random_block_trees_round_trip_or_are_refused_by_a_limit(block: Any) -> None:
    try:
        wire = marshal_block(block)
    except BlockLimitError as e:
        assert "deeper than 100" in str(e)
        return
    assert unmarshal_block(wire) == block
    assert json.loads(wire)  # what was written is JSON a stock parser takes


# ------------------------------------------------------------- huge integers


def digits(n: int) -> str:
    return "1" * n


def test_partial_display_of_an_integer_beyond_int_max_str_digits_is_its_text() -> None:
    assert sys.get_int_max_str_digits() == 4300
    huge = digits(4301)
    assert parse_partial(huge) == huge
    assert parse_partial("-" + huge) == "-" + huge
    assert parse_partial(f'{{"n": {huge}, "m": 1}}') == {"n": huge, "m": 1}
    p = PartialJson()
    p.feed("[" + huge)
    assert p.value() == [huge]
    p.feed(", 2")
    assert p.value() == [huge, 2]
    # At the bound itself it is still an int.
    assert parse_partial(digits(4300)) == int(digits(4300))


def test_integer_display_follows_the_interpreters_digit_bound() -> None:
    old = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)  # unlimited
        assert parse_partial(digits(5000)) == int(digits(5000))
        sys.set_int_max_str_digits(640)
        assert parse_partial(digits(641)) == digits(641)
    finally:
        sys.set_int_max_str_digits(old)


def test_partial_calls_show_a_huge_integer_as_its_text() -> None:
    asm = Assembler("openai-chat")
    asm.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c",
                                "function": {"name": "f", "arguments": '{"n": ' + digits(4301)},
                            }
                        ]
                    },
                }
            ]
        }
    )
    assert asm.partial_calls() == {(0, 0): {"n": digits(4301)}}


def test_strict_validation_of_a_huge_integer_is_a_tool_input_error_with_its_offset() -> None:
    toolset = Toolset({"f": {"type": "object"}})
    for text in [digits(4301), digits(400), "-" + digits(100_000)]:
        with pytest.raises(ToolInputError) as caught:
            toolset.validate(ToolUseBlock("c", "f", '{"n": ' + text + "}"))
        assert caught.value.offset == 6
        assert "out of range" in str(caught.value)
    # Within the float range, every digit is kept.
    big = digits(300)
    assert toolset.validate(ToolUseBlock("c", "f", f'{{"n": {big}}}')).arguments == {"n": int(big)}


# ------------------------------------------------------------- schemas


def deep_schema(levels: int, keyword: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        if keyword == "items":
            schema = {"type": "array", "items": schema}
        elif keyword == "anyOf":
            schema = {"anyOf": [schema, {"type": "null"}]}
        else:
            schema = {"type": "object", "properties": {"a": schema}}
    return schema


def forms(name: str, schema: Any) -> Iterator[Any]:
    yield {name: schema}
    yield [{"type": "function", "function": {"name": name, "parameters": schema}}]
    yield [{"type": "function", "name": name, "parameters": schema}]
    yield [{"name": name, "input_schema": schema}]
    yield [{"functionDeclarations": [{"name": name, "parameters": schema}]}]
    yield [{"name": name, "parametersJsonSchema": schema}]
    yield {"toolConfig": {"tools": [{"toolSpec": {"name": name, "inputSchema": {"json": schema}}}]}}


@pytest.mark.parametrize("levels", HOSTILE_DEPTHS)
@pytest.mark.parametrize("keyword", ["items", "properties", "anyOf"])
def test_a_hostile_schema_is_a_definition_error_naming_the_tool(levels: int, keyword: str) -> None:
    for tools in forms("deep_tool", deep_schema(levels, keyword)):
        with pytest.raises(ToolDefinitionError, match=r"'deep_tool'.*deeper than 128"):
            Toolset(tools)


def test_the_schema_depth_bound_is_128_containers() -> None:
    # {"type":"object","properties":{"a": ...}} wraps a chain of `items` schemas.
    def wrapped(levels: int) -> dict[str, Any]:
        return {"type": "object", "properties": {"a": deep_schema(levels, "items")}}

    # The outer object and its properties are two levels; each items schema one more.
    toolset = Toolset({"t": wrapped(125)})
    arguments = '{"a": ' + "[" * 125 + '"x"' + "]" * 125 + "}"
    assert toolset.validate(ToolUseBlock("c", "t", arguments)).name == "t"
    with pytest.raises(ToolSchemaError):
        toolset.validate(ToolUseBlock("c", "t", arguments.replace('"x"', "1")))
    for tools in forms("t", wrapped(126)):
        with pytest.raises(ToolDefinitionError, match="'t'"):
            Toolset(tools)


def test_a_schema_that_refers_to_itself_is_refused_not_followed() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    with pytest.raises(ToolDefinitionError, match="'loop'"):
        Toolset({"loop": schema})


def test_compiled_schema_refuses_values_it_cannot_read_with_toolstitch_errors() -> None:
    compiled = _CompiledSchema({"type": "array"})
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ToolSchemaError, match="deeper than 128"):
        compiled.validate(deep, tool_name="t")
    with pytest.raises(ToolSchemaError, match="not a JSON number"):
        compiled.validate([float("nan")])
    with pytest.raises(TypeError):
        compiled.validate([object()])
    # An int beyond 64 bits is checked as the float it parses to.
    compiled.validate([2**70])
    with pytest.raises(ToolDefinitionError, match="deeper than 128"):
        _CompiledSchema({"items": deep})
    with pytest.raises(ToolDefinitionError, match="too large"):
        _CompiledSchema({"maximum": 10**400})


# ------------------------------------------------------------- rendering


@pytest.mark.parametrize("depth", HOSTILE_DEPTHS)
def test_rendering_refuses_hostile_provider_state_and_input(depth: int) -> None:
    call = ToolUseBlock(
        "c", "f", "{}", provider_state=brackets(depth), provider_state_format="openai-responses"
    )
    with pytest.raises(RenderError, match="deeper than 100"):
        render_assistant("openai-responses", [call])
    thinking = ThinkingBlock(
        "t", "sig", "anthropic", provider_state=brackets(depth), provider_state_format="gemini"
    )
    with pytest.raises(RenderError, match="deeper than 100"):
        render_assistant("gemini", [thinking])
    # Input nested past the strict parser's bound is not parsed: it goes back as text,
    # wrapped the way every other input that is not a JSON object is.
    deep_input = ToolUseBlock("c", "f", '{"a": ' + brackets(depth) + "}")
    with pytest.raises(ToolInputError, match="deeper than 128"):
        Toolset({"f": {"type": "object"}}).validate(deep_input)
    for provider in ("anthropic", "bedrock", "gemini"):
        rendered = json.dumps(render_assistant(provider, [deep_input]))
        assert json.dumps({"INVALID_JSON": deep_input.input})[1:-1] in rendered


def test_rendering_keeps_provider_state_within_the_bound() -> None:
    state = '{"id": "fc_1", "x": ' + brackets(98) + "}"
    call = ToolUseBlock(
        "c", "f", "{}", provider_state=state, provider_state_format="openai-responses"
    )
    assert render_assistant("openai-responses", [call])[0]["id"] == "fc_1"


# ------------------------------------------------------------- streams


@pytest.mark.parametrize("depth", HOSTILE_DEPTHS)
def test_hostile_events_are_stream_decode_errors_or_skipped(depth: int) -> None:
    deep: Any = {}
    for _ in range(depth):
        deep = {"a": deep}
    asm = Assembler("openai-chat")
    if depth > 500:  # a dict nested deeper than JSON data may be
        with pytest.raises(StreamDecodeError, match="nesting deeper than 128 levels"):
            asm.feed({"choices": [{"index": 0, "delta": {"content": "x"}, "x": deep}]})
    # Read fields are parsed within serde_json's recursion bound ...
    for event in (
        '{"choices":[],"usage":{"a":' + brackets(depth) + "}}",
        '{"choices":[{"index":0,"delta":{"tool_calls":' + brackets(depth) + "}}]}",
    ):
        with pytest.raises(StreamDecodeError):
            asm.feed(event)
    # ... and unknown fields are skipped without recursing into them.
    asm.feed('{"choices":[{"index":0,"delta":{"content":"ok"}}],"y":' + brackets(depth) + "}")
    assert asm.message().text == "ok"


def test_usage_nested_as_deep_as_the_parser_allows_converts() -> None:
    asm = Assembler("openai-chat")
    nested: Any = 1
    for _ in range(120):
        nested = {"n": nested}
    asm.feed({"choices": [], "usage": {"prompt_tokens": 1, "deep": nested}})
    usage = asm.message().usage
    assert usage is not None and usage["prompt_tokens"] == 1


# ------------------------------------------------------------- partial JSON


@pytest.mark.parametrize("depth", HOSTILE_DEPTHS)
def test_hostile_partial_nesting_is_a_limit_error(depth: int) -> None:
    for text in (brackets(depth), '{"a":' * depth, "[" * depth):
        with pytest.raises(LimitError):
            parse_partial(text)
    p = PartialJson(max_depth=10**9)  # lowered to the hard ceiling, 1024
    with pytest.raises(LimitError, match="1024"):
        p.feed("[" * max(depth, 2000))
    # The value before the error is readable, 1024 levels deep.
    value = p.value()
    for _ in range(1023):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == []


def test_the_deepest_partial_value_converts_without_recursion() -> None:
    p = PartialJson(max_depth=1024)
    text = '{"a":' * 512 + "[" * 512 + "1" + "]" * 512 + "}" * 512
    for i in range(0, len(text), 97):
        p.feed(text[i : i + 97])
        p.value()
    assert p.complete
    # Deeper than json.loads can go: compare level by level.
    whole = PartialJson(max_depth=1024)
    whole.feed(text[:-1])
    for value in (p.value(), whole.value()):
        for _ in range(512):
            assert isinstance(value, dict) and list(value) == ["a"]
            value = value["a"]
        for _ in range(512):
            assert isinstance(value, list) and len(value) == 1
            value = value[0]
        assert value == 1


# ------------------------------------------------------------- properties


@st.composite
def nested_shapes(draw: st.DrawFn) -> str:
    """JSON text nested up to 300 levels by a random path of arrays and objects."""
    kinds = draw(st.lists(st.sampled_from("ao"), min_size=0, max_size=300))
    opening = "".join('{"k":' if k == "o" else "[" for k in kinds)
    closing = "".join("}" if k == "o" else "]" for k in reversed(kinds))
    leaf = draw(st.sampled_from(["1", '"s"', "null", digits(5000), "-" + digits(4400), "1e999"]))
    return opening + leaf + closing


@settings(max_examples=150, deadline=None)
@given(nested_shapes(), st.integers(1, 50))
def test_every_path_on_random_nesting_succeeds_or_raises_a_toolstitch_error(
    text: str, cut: int
) -> None:
    def attempt(call: Any) -> None:
        with contextlib.suppress(ToolstitchError):
            call()

    attempt(lambda: parse_partial(text))
    attempt(lambda: parse_partial(text[: len(text) * cut // 50]))
    p = PartialJson()
    attempt(lambda: p.feed(text[: len(text) // 2]))
    p.value()
    toolset = Toolset({"f": {"type": "object"}})
    attempt(lambda: toolset.validate(ToolUseBlock("c", "f", '{"a":' + text + "}")))
    attempt(lambda: marshal_block(ToolUseBlock("c", "f", text)))
    attempt(lambda: marshal_block(ThinkingBlock(provider_state=text, provider_state_format="x")))
    attempt(lambda: unmarshal_block('{"type":"tool_use","input":' + text + "}"))
    attempt(
        lambda: render_assistant(
            "openai-responses",
            [ToolUseBlock("c", "f", "{}", text, "openai-responses")],
        )
    )
    attempt(lambda: render_assistant("anthropic", [ToolUseBlock("c", "f", text)]))
    try:
        schema = json.loads(text)
    except (ValueError, RecursionError):
        return  # the stock parser itself cannot read it: nothing to declare
    attempt(lambda: Toolset({"f": {"type": "object", "properties": {"a": schema}}}))
    attempt(lambda: Toolset([{"name": "f", "parameters": {"type": "OBJECT", "items": schema}}]))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 300), st.sampled_from([ToolResultBlock, ToolResultMessage, Message]))
def test_random_result_nesting_marshals_or_raises_a_limit_error(
    levels: int, outer: type[Any]
) -> None:
    block = results(levels)
    try:
        if outer is ToolResultBlock:
            wire = marshal_block(block)
            assert unmarshal_block(wire) == block
        else:
            message = outer("user", (block,)) if outer is Message else outer("r", (block,))
            wire = marshal_message(message)
            assert unmarshal_message(wire) == message
    except (BlockLimitError, BlockEncodeError) as e:
        assert levels >= 48, (levels, e)
