"""Toolset: tool definitions in every provider's form, strict validation before execution."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolstitch import (
    Assembler,
    IncompleteMessageError,
    SchemaFailure,
    TextBlock,
    ToolDefinitionError,
    ToolInputError,
    ToolResultBlock,
    ToolResultError,
    ToolSchemaError,
    Toolset,
    ToolstitchError,
    ToolUseBlock,
    ToolValidationError,
    UnknownToolError,
    ValidatedCall,
    render_turn,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "real"

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "unit": {"enum": ["c", "f"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
NO_ARGS = {"type": "object", "properties": {}, "additionalProperties": False}


def call(name: str = "weather", input: str = '{"city": "Paris"}', id: str = "c1") -> ToolUseBlock:
    return ToolUseBlock(id=id, name=name, input=input)


@pytest.fixture
def tools() -> Toolset:
    return Toolset({"weather": WEATHER, "now": NO_ARGS})


# ------------------------------------------------------------ definitions

FORMS: dict[str, Any] = {
    "openai-chat": [
        {
            "type": "function",
            "function": {"name": "weather", "description": "d", "parameters": WEATHER},
        }
    ],
    "openai-responses": [
        {"type": "function", "name": "weather", "parameters": WEATHER, "strict": True}
    ],
    "anthropic": [{"name": "weather", "description": "d", "input_schema": WEATHER}],
    "anthropic-custom": [{"type": "custom", "name": "weather", "input_schema": WEATHER}],
    "gemini-tool": {"functionDeclarations": [{"name": "weather", "parametersJsonSchema": WEATHER}]},
    "gemini-tools-list": [
        {"function_declarations": [{"name": "weather", "parameters_json_schema": WEATHER}]}
    ],
    "gemini-bare": [{"name": "weather", "description": "d", "parametersJsonSchema": WEATHER}],
    "bedrock": [{"toolSpec": {"name": "weather", "inputSchema": {"json": WEATHER}}}],
    "bedrock-toolconfig": {
        "tools": [{"toolSpec": {"name": "weather", "inputSchema": {"json": WEATHER}}}],
        "toolChoice": {"auto": {}},
    },
    "bedrock-request": {
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": "weather", "inputSchema": {"json": json.dumps(WEATHER)}}},
                {"cachePoint": {"type": "default"}},
            ]
        }
    },
    "plain": {"weather": WEATHER},
    "single-definition": {
        "type": "function",
        "function": {"name": "weather", "parameters": WEATHER},
    },
}


@pytest.mark.parametrize("form", FORMS)
def test_every_definition_form_is_recognised(form: str) -> None:
    toolset = Toolset(FORMS[form])
    assert toolset.names == ("weather",)
    assert toolset.definition("weather").schema == WEATHER
    assert toolset.validate(call()) == ValidatedCall("c1", "weather", {"city": "Paris"})
    with pytest.raises(ToolSchemaError):
        toolset.validate(call(input='{"city": 1}'))


def test_forms_are_told_apart_and_reported() -> None:
    toolset = Toolset(
        [
            FORMS["openai-chat"][0],
            {"type": "function", "name": "b", "parameters": NO_ARGS},
            {"name": "c", "input_schema": NO_ARGS},
            {"functionDeclarations": [{"name": "d", "parameters": {"type": "OBJECT"}}]},
            {"toolSpec": {"name": "e", "inputSchema": {"json": NO_ARGS}}},
        ]
    )
    assert toolset.names == ("weather", "b", "c", "d", "e")
    forms = [toolset.definition(n).form for n in toolset.names]
    assert forms == ["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock"]
    assert "weather" in toolset
    assert "nope" not in toolset
    assert len(toolset) == 5
    assert list(toolset) == list(toolset.names)
    assert "weather" in repr(toolset)


def test_sdk_objects_are_accepted() -> None:
    from openai.types.responses import FunctionTool
    from openai.types.shared import FunctionDefinition

    responses_tool = FunctionTool(type="function", name="weather", parameters=WEATHER, strict=True)
    chat_function = FunctionDefinition(name="now", parameters=NO_ARGS)
    toolset = Toolset([responses_tool, {"type": "function", "function": chat_function}])
    assert toolset.names == ("weather", "now")


def test_gemini_openapi_schemas_are_normalised() -> None:
    declaration = {
        "name": "book",
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING", "description": "where"},
                "guests": {"type": "INTEGER", "format": "int32", "minimum": 1},
                "dates": {"type": "ARRAY", "items": {"type": "STRING"}, "min_items": 1},
                "note": {"type": "STRING", "nullable": True},
                "tier": {"type": "STRING", "enum": ["a", "b"], "nullable": True},
                "min_items": {"type": "BOOLEAN"},
                "either": {"any_of": [{"type": "NUMBER"}, {"type": "STRING"}]},
            },
            "required": ["city"],
            "property_ordering": ["city", "guests"],
        },
    }
    toolset = Toolset({"functionDeclarations": [declaration]})
    schema = toolset.definition("book").schema
    assert schema["type"] == "object"
    props = schema["properties"]
    assert props["dates"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert props["note"] == {"type": ["string", "null"]}
    assert props["tier"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["min_items"] == {"type": "boolean"}  # property names are never renamed
    assert props["either"] == {"anyOf": [{"type": "number"}, {"type": "string"}]}
    ok = '{"city": "Rome", "guests": 2, "dates": ["x"], "note": null, "tier": null, "either": 1}'
    assert toolset.validate(call("book", ok)).arguments["guests"] == 2
    with pytest.raises(ToolSchemaError) as err:
        toolset.validate(call("book", '{"city": "Rome", "guests": 0, "dates": [], "tier": "z"}'))
    assert sorted(f.path for f in err.value.failures) == ["/dates", "/guests", "/tier"]


def test_gemini_declaration_without_parameters_takes_no_arguments() -> None:
    toolset = Toolset({"functionDeclarations": [{"name": "ping", "description": "no args"}]})
    assert toolset.validate(call("ping", "")).arguments == {}


def test_openai_function_without_parameters() -> None:
    toolset = Toolset([{"type": "function", "function": {"name": "ping"}}])
    assert toolset.validate(call("ping", "{}")).arguments == {}


@pytest.mark.parametrize(
    ("tools", "match"),
    [
        ("weather", "not str"),
        (42, "not int"),
        ([{"type": "searchable_thing"}], "known form"),
        ([{"foo": "bar"}], "known form"),
        ([["weather"]], "must be a dict"),
        ({"weather": "not a schema"}, "known form"),
        ([{"type": "function", "function": {"parameters": WEATHER}}], "no name"),
        ([{"name": "", "input_schema": WEATHER}], "no name"),
        ({"functionDeclarations": [{"type": "x"}]}, "Gemini function declaration"),
        ([{"name": "x", "input_schema": "nope"}], "must be a JSON Schema object"),
    ],
)
def test_unrecognised_definitions_are_clear_errors(tools: Any, match: str) -> None:
    with pytest.raises(ToolDefinitionError, match=match):
        Toolset(tools)


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="declared twice"):
        Toolset([{"name": "a", "input_schema": NO_ARGS}, {"toolSpec": {"name": "a"}}])


@pytest.mark.parametrize(
    "schema",
    [
        {"type": 5},
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}},
        {"$schema": "https://example.com/my-draft", "type": "object"},
        {"minimum": float("nan")},
    ],
)
def test_schemas_that_do_not_compile_are_definition_errors(schema: Any) -> None:
    with pytest.raises(ToolDefinitionError, match="'x'"):
        Toolset({"x": schema})


def test_draft_07_schemas() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"a": {"type": "array", "items": [{"type": "string"}]}},
        "definitions": {"n": {"type": "integer"}},
        "additionalProperties": {"$ref": "#/definitions/n"},
    }
    toolset = Toolset({"x": schema})
    assert toolset.validate(call("x", '{"a": ["s", 1], "b": 2}')).arguments == {
        "a": ["s", 1],
        "b": 2,
    }
    with pytest.raises(ToolSchemaError) as err:
        toolset.validate(call("x", '{"a": [1], "b": "two"}'))
    assert sorted(f.path for f in err.value.failures) == ["/a/0", "/b"]


# -------------------------------------------------------------- validate


def test_valid_call_returns_the_arguments_in_arrival_order(tools: Toolset) -> None:
    result = tools.validate(call(input='{"unit": "c", "city": "Paris", "days": [1, 2]}'))
    assert result == ValidatedCall("c1", "weather", {"unit": "c", "city": "Paris", "days": [1, 2]})
    assert list(result.arguments) == ["unit", "city", "days"]
    with pytest.raises(AttributeError):
        result.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("empty", ["", " ", "\n\t "])
def test_q13_empty_input_of_a_completed_call_is_an_empty_object(tools: Toolset, empty: str) -> None:
    assert tools.validate(call("now", empty)).arguments == {}
    assert tools.validate(call("now", "{}")).arguments == {}


def test_q13_empty_input_still_meets_required(tools: Toolset) -> None:
    with pytest.raises(ToolSchemaError) as err:
        tools.validate(call("weather", ""))
    assert err.value.failures[0].path == ""
    assert "city" in err.value.failures[0].message


@pytest.mark.parametrize(
    ("raw", "offset"),
    [
        ('{"city": "Paris", "city": "Rome"}', 18),  # duplicate key, at the second key
        ('{"city": "Paris", "x": {"a": 1, "a": 2}}', 32),  # nested duplicate
        ('{"city": "Paris"}}', 17),  # Q11: vLLM/sglang trailing brace
        ('{"city": "Paris"}{"city": "Rome"}', 17),  # two objects concatenated
        ('{"city": "Paris"} garbage', 18),
        ('{"city": "Paris",}', 17),  # trailing comma
        ("{'city': 'Paris'}", 1),
        ('{"city": "Par', 13),  # truncated: the offset is the end
        ('{"city": "Paris"', 16),
        ('{"city": "\\ud800"}', 10),  # lone surrogate escape
        ('{"city": NaN}', 9),
        ('{"n": 1e400}', 6),
    ],
)
def test_q11_invalid_input_is_tool_input_error_with_offset(
    tools: Toolset, raw: str, offset: int
) -> None:
    with pytest.raises(ToolInputError) as err:
        tools.validate(call(input=raw))
    assert err.value.offset == offset, str(err.value)
    assert err.value.call_id == "c1"
    assert err.value.tool_name == "weather"
    assert "c1" in str(err.value) and "weather" in str(err.value)
    assert f"byte {offset}" in str(err.value)


def test_offsets_count_utf8_bytes(tools: Toolset) -> None:
    with pytest.raises(ToolInputError) as err:
        tools.validate(call(input='{"city": "Zürich"} x'))
    assert err.value.offset == len('{"city": "Zürich"} '.encode())


def test_invalid_utf8_in_bytes_input_is_an_error(tools: Toolset) -> None:
    # validate() takes any object with id, name and input; a ToolUseBlock's input is
    # always str, so raw bytes come in a plain namespace.
    block = SimpleNamespace(id="c1", name="weather", input=b'{"city": "Z\xffrich"}')
    with pytest.raises(ToolInputError) as err:
        tools.validate(block)  # type: ignore[arg-type]
    assert err.value.offset == 11


def test_lone_surrogate_in_a_str_is_an_error(tools: Toolset) -> None:
    with pytest.raises(ToolInputError):
        tools.validate(call(input='{"city": "\ud800"}'))


def test_arguments_must_be_an_object(tools: Toolset) -> None:
    for raw, kind in [
        ('["Paris"]', "array"),
        ('"Paris"', "string"),
        ("1", "number"),
        ("null", "null"),
    ]:
        with pytest.raises(ToolSchemaError, match=kind) as err:
            tools.validate(call("now", raw))
        assert err.value.failures == [SchemaFailure("", err.value.failures[0].message)]


def test_unknown_tool_names_it_and_the_declared_ones(tools: Toolset) -> None:
    with pytest.raises(UnknownToolError) as err:
        tools.validate(call("delete_everything", "{}", id="c9"))
    message = str(err.value)
    assert "delete_everything" in message and "'weather'" in message and "'now'" in message
    assert err.value.tool_name == "delete_everything"
    assert err.value.call_id == "c9"
    assert err.value.declared == ("weather", "now")


def test_unknown_tool_is_reported_before_bad_input(tools: Toolset) -> None:
    with pytest.raises(UnknownToolError):
        tools.validate(call("nope", "{{{"))


def test_schema_error_lists_every_failing_path(tools: Toolset) -> None:
    with pytest.raises(ToolSchemaError) as err:
        tools.validate(call(input='{"city": 7, "days": [1, 0, "x"], "unit": "k", "extra": 1}'))
    paths = sorted(f.path for f in err.value.failures)
    assert paths == ["", "/city", "/days/1", "/days/2", "/unit"]
    assert all(isinstance(f, SchemaFailure) for f in err.value.failures)
    message = str(err.value)
    assert "5 failures" in message and "/days/1" in message and "extra" in message
    assert err.value.call_id == "c1"
    assert err.value.tool_name == "weather"


def test_errors_are_toolstitch_errors_and_value_errors() -> None:
    for cls in (
        UnknownToolError,
        ToolInputError,
        ToolSchemaError,
        ToolValidationError,
        IncompleteMessageError,
        ToolDefinitionError,
    ):
        assert issubclass(cls, ToolstitchError)
        assert issubclass(cls, ValueError)


def test_validate_needs_a_tool_call(tools: Toolset) -> None:
    with pytest.raises(TypeError):
        tools.validate("not a block")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tools.validate(ToolUseBlock(id="c", name="weather", input=None))  # type: ignore[arg-type]


def test_big_and_precise_numbers_survive(tools: Toolset) -> None:
    toolset = Toolset({"n": {"type": "object"}})
    args = toolset.validate(
        call("n", '{"big": 18446744073709551615, "f": 0.1, "e": 1E2}')
    ).arguments
    assert args == {"big": 18446744073709551615, "f": 0.1, "e": 100.0}
    assert type(args["e"]) is float


# --------------------------------------------------------- validate_all


def test_validate_all_returns_every_call_in_order(tools: Toolset) -> None:
    blocks = [
        TextBlock("let me check"),
        call(id="a"),
        call("now", "", id="b"),
    ]
    assert tools.validate_all(blocks) == [
        ValidatedCall("a", "weather", {"city": "Paris"}),
        ValidatedCall("b", "now", {}),
    ]


def test_validate_all_reports_every_failing_call(tools: Toolset) -> None:
    blocks = [
        call(id="ok"),
        call("nope", "{}", id="u"),
        call(input='{"city": "a"} x', id="i"),
        call(input='{"city": 1}', id="s"),
    ]
    with pytest.raises(ToolValidationError) as err:
        tools.validate_all(blocks)
    kinds = [type(e) for e in err.value.errors]
    assert kinds == [UnknownToolError, ToolInputError, ToolSchemaError]
    assert [e.call_id for e in err.value.errors] == ["u", "i", "s"]  # type: ignore[attr-defined]
    assert "3 tool calls fail" in str(err.value)
    for call_id in ("'u'", "'i'", "'s'"):
        assert call_id in str(err.value)


def test_validation_error_results_answer_each_failing_call(tools: Toolset) -> None:
    blocks = [
        call(id="ok"),
        call("nope", "{}", id="u"),
        call(input='{"city": "a"} x', id="i"),
        call(input='{"city": 1}', id="s"),
    ]
    with pytest.raises(ToolValidationError) as err:
        tools.validate_all(blocks)
    assert err.value.calls == (ValidatedCall("ok", "weather", {"city": "Paris"}),)
    results = err.value.results()
    assert [r.tool_use_id for r in results] == ["u", "i", "s"]
    assert all(r.is_error for r in results)
    texts = [r.content[0].text for r in results]  # type: ignore[union-attr]
    assert texts == [str(e) for e in err.value.errors]
    assert "undeclared tool 'nope'" in texts[0]
    assert "at byte 14" in texts[1]
    assert "/city" in texts[2]
    # With a result for the call that passed, the turn renders for the next request.
    answered = [ToolResultBlock.text("ok", "sunny"), *results]
    rendered = render_turn("openai-chat", blocks, answered)
    assert [m["tool_call_id"] for m in rendered[1:]] == ["ok", "u", "i", "s"]
    assert rendered[2]["content"] == texts[0]


def test_schema_error_says_what_the_schema_expected_at_each_failing_path(tools: Toolset) -> None:
    with pytest.raises(ToolSchemaError) as err:
        tools.validate(call(input='{"city": 7, "days": [1, 0, "x"], "unit": "k", "extra": 1}'))
    message = str(err.value)
    assert '/city: 7 is not of type "string" (expected: {"type":"string"})' in message
    assert (
        '/days/1: 0 is less than the minimum of 1 (expected: {"type":"integer","minimum":1})'
        in (message)
    )
    assert '(expected: {"enum":["c","f"]})' in message
    # At the root, the whole schema (what additionalProperties: false allows).
    assert '"additionalProperties":false' in message


def test_expected_schemas_follow_refs_and_tuples_and_drop_annotations() -> None:
    schema = {
        "type": "object",
        "$defs": {"point": {"type": "array", "prefixItems": [{"type": "number"}]}},
        "properties": {
            "at": {"$ref": "#/$defs/point"},
            "tags": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "note": {"type": "string", "description": "free text " * 50, "maxLength": 3},
        },
    }
    toolset = Toolset({"f": schema})
    with pytest.raises(ToolSchemaError) as err:
        toolset.validate(call("f", '{"at": ["x"], "tags": {"a": 1}, "note": "long"}'))
    message = str(err.value)
    assert '/at/0: "x" is not of type "number" (expected: {"type":"number"})' in message
    assert '/tags/a: 1 is not of type "boolean" (expected: {"type":"boolean"})' in message
    assert '(expected: {"type":"string","maxLength":3})' in message
    assert "free text" not in message


def test_error_results_are_bounded_whatever_the_arguments() -> None:
    toolset = Toolset({"f": {"type": "object", "additionalProperties": {"type": "integer"}}})
    wide = json.dumps({f"k{i}": "x" * 10_000 for i in range(500)})
    with pytest.raises(ToolValidationError) as err:
        toolset.validate_all([call("f", wide, id="w")])
    (schema_error,) = err.value.errors
    assert isinstance(schema_error, ToolSchemaError) and len(schema_error.failures) == 500
    (result,) = err.value.results()
    text = text_of(result)
    assert len(text) < 16_000
    assert "500 failures" in text and "and 484 more" in text
    # The failure's own message is cut (the value it quotes is long): what was
    # expected still shows.
    assert '/k0: "xxx' in text and '(expected: {"type":"integer"})' in text
    huge = '{"k": "' + "y" * 1_000_000
    with pytest.raises(ToolValidationError) as err:
        toolset.validate_all([call("f", huge, id="h")])
    (result,) = err.value.results()
    text = text_of(result)
    assert len(text) < 4_000 and "at byte" in text


def text_of(result: ToolResultBlock) -> str:
    (block,) = result.content
    assert isinstance(block, TextBlock)
    return block.text


def test_an_input_error_says_what_the_call_should_have_sent(tools: Toolset) -> None:
    with pytest.raises(ToolInputError) as err:
        tools.validate(call(input='{"city": "Par'))
    message = str(err.value)
    assert err.value.offset == 13 and err.value.call_id == "c1"
    assert "at byte 13" in message
    assert 'one JSON object matching the tool\'s schema: {"type":"object","properties":' in message


def test_validation_error_results_refuse_a_call_without_id(tools: Toolset) -> None:
    with pytest.raises(ToolValidationError) as err:
        tools.validate_all([call("nope", "{}", id="")])
    with pytest.raises(ToolResultError, match="no id"):
        err.value.results()


# ------------------------------------------------------ validate_message


@dataclass
class FakeAssembled:
    blocks: tuple[Any, ...] = ()
    complete: bool = True
    finish_reason: str | None = "tool_calls"
    tool_uses: list[ToolUseBlock] = field(default_factory=list)


def test_validate_message_refuses_an_incomplete_message(tools: Toolset) -> None:
    message = FakeAssembled(
        blocks=(call(),), complete=False, finish_reason="length", tool_uses=[call()]
    )
    with pytest.raises(IncompleteMessageError, match="length"):
        tools.validate_message(message)


def test_validate_message_validates_every_call(tools: Toolset) -> None:
    message = FakeAssembled(blocks=(TextBlock("x"), call()), tool_uses=[call()])
    assert tools.validate_message(message) == [ValidatedCall("c1", "weather", {"city": "Paris"})]
    bad = FakeAssembled(tool_uses=[call(input="{"), call("x", "{}", id="c2")])
    with pytest.raises(ToolValidationError) as err:
        tools.validate_message(bad)
    assert len(err.value.errors) == 2


def test_validate_message_needs_an_assembled_message(tools: Toolset) -> None:
    with pytest.raises(TypeError, match="validate_all"):
        tools.validate_message([call()])


# ------------------------------------------------------------ properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6), st.booleans())
def test_strict_parse_agrees_with_json_loads(arguments: dict[str, Any], ascii: bool) -> None:
    raw = json.dumps(arguments, ensure_ascii=ascii)
    result = Toolset({"any": {"type": "object"}}).validate(call("any", raw))
    assert result.arguments == json.loads(raw)
    assert list(result.arguments) == list(arguments)


def test_a_toolset_is_shared_between_threads(tools: Toolset) -> None:
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(200):
                assert tools.validate(call(input=f'{{"city": "c{i}"}}')).arguments == {
                    "city": f"c{i}"
                }
                with pytest.raises(ToolSchemaError):
                    tools.validate(call(input='{"city": 1}'))
        except BaseException as e:  # pragma: no cover - reported below
            failures.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_large_inputs_are_parsed_without_the_gil_and_still_checked(tools: Toolset) -> None:
    big = "x" * 200_000
    assert tools.validate(call(input=json.dumps({"city": big}))).arguments == {"city": big}
    with pytest.raises(ToolInputError) as err:
        tools.validate(call(input=json.dumps({"city": big}) + "}"))
    assert err.value.offset == len(big) + 12
    with pytest.raises(ToolSchemaError):
        tools.validate(call(input=json.dumps({"city": 1, "pad": big})))


# ------------------------------------------------ tools that are not JSON functions (Q28)

SQL_REGEX = r"SELECT .+ FROM \w+( WHERE .+)?"


def custom_call(text: str, name: str = "write_sql", id: str = "call_1") -> ToolUseBlock:
    return ToolUseBlock(id, name, text, kind="custom_tool_call")


def test_q28_a_custom_tools_call_is_validated_as_text_against_its_regex_grammar() -> None:
    tools = Toolset(
        [
            {
                "type": "custom",
                "name": "write_sql",
                "description": "SQL",
                "format": {"type": "grammar", "syntax": "regex", "definition": SQL_REGEX},
            }
        ]
    )
    assert tools.definition("write_sql").kind == "custom_tool_call"
    call = tools.validate(custom_call("SELECT * FROM users WHERE age > 25"))
    assert (call.kind, call.text, call.arguments) == (
        "custom_tool_call",
        "SELECT * FROM users WHERE age > 25",
        {},
    )
    with pytest.raises(ToolSchemaError, match="regex grammar") as err:
        tools.validate(custom_call("DROP TABLE users"))
    assert err.value.call_id == "call_1"
    # A function call of a custom tool, or a custom call of a function, is refused.
    with pytest.raises(UnknownToolError):
        tools.validate(ToolUseBlock("c", "write_sql", '{"q": 1}'))
    with pytest.raises(UnknownToolError):
        Toolset({"write_sql": {"type": "object"}}).validate(custom_call("SELECT 1 FROM t"))


def test_q28_the_assembled_custom_tool_call_validates() -> None:
    asm = Assembler("auto")
    data = (REAL / "vercel-ai" / "openai-custom-tool.1.chunks.txt").read_bytes()
    asm.feed_bytes(data)
    asm.close()
    tools = Toolset(
        [
            {
                "type": "custom",
                "name": "write_sql",
                "format": {"type": "grammar", "syntax": "regex", "definition": SQL_REGEX},
            }
        ]
    )
    (call,) = asm.message().validated(tools)
    assert call.text == "SELECT * FROM users WHERE age > 25"


def test_q28_chat_custom_tools_text_format_and_lark_grammars() -> None:
    tools = Toolset(
        [
            {"type": "custom", "custom": {"name": "free", "format": {"type": "text"}}},
            {
                "type": "custom",
                "custom": {
                    "name": "math",
                    "format": {
                        "type": "grammar",
                        "grammar": {
                            "syntax": "lark",
                            "definition": 'start: NUMBER "+" NUMBER\n%import common.NUMBER\n',
                        },
                    },
                },
            },
        ]
    )
    assert tools.validate(custom_call("anything { at all", "free")).text == "anything { at all"
    assert tools.validate(custom_call("1+2", "math")).text == "1+2"
    with pytest.raises(ToolSchemaError, match="lark grammar"):
        tools.validate(custom_call("1+", "math"))
    with pytest.raises(ToolDefinitionError, match="regex grammar does not compile"):
        Toolset(
            [
                {
                    "type": "custom",
                    "name": "x",
                    "format": {"type": "grammar", "syntax": "regex", "definition": "("},
                }
            ]
        )


def test_q28_a_lark_grammar_without_the_lark_package_is_refused_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "lark", None)
    with pytest.raises(ToolDefinitionError, match=r"toolstitch\[grammar\]"):
        Toolset(
            [
                {
                    "type": "custom",
                    "name": "x",
                    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "a"'},
                }
            ]
        )


def test_q28_responses_client_tools_are_matched_by_kind() -> None:
    tools = Toolset([{"type": "shell"}, {"type": "computer_use_preview", "display_width": 1024}])
    shell = ToolUseBlock("call_s", "shell", '{"action": {"commands": ["ls"]}}', kind="shell_call")
    call = tools.validate(shell)
    assert (call.kind, call.arguments) == ("shell_call", {"action": {"commands": ["ls"]}})
    patch = ToolUseBlock("call_p", "apply_patch", '{"operation": {}}', kind="apply_patch_call")
    with pytest.raises(UnknownToolError, match="no tool of that type"):
        tools.validate(patch)


def test_q27_hosted_tools_are_accepted_and_their_calls_never_validated() -> None:
    tools = Toolset(
        [
            {"type": "web_search_preview"},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
            {"type": "bash_20250124", "name": "bash"},
            {"type": "function", "name": "f", "parameters": {"type": "object"}},
        ]
    )
    assert tools.definition("web_search").kind == "hosted"
    assert tools.definition("bash").kind == "function"
    assert tools.validate(ToolUseBlock("t", "bash", '{"command": "ls"}')).arguments == {
        "command": "ls"
    }
    hosted = ToolUseBlock(
        "s", "web_search", '{"query": "x"}', kind="server_tool_use", server_side=True
    )
    with pytest.raises(UnknownToolError, match="run by the provider"):
        tools.validate(hosted)
    assert tools.validate_all([hosted, ToolUseBlock("c", "f", "{}")]) == [
        ValidatedCall("c", "f", {})
    ]
