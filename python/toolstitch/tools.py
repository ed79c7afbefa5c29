"""The tool-loop boundary: validate a call before executing it.

``Toolset`` takes the tool definitions you already send to the provider (OpenAI
chat, OpenAI Responses, Anthropic, Gemini, Bedrock, the Gemini Interactions API (whose
function tools have the Responses form), or a plain ``{name: json_schema}`` dict),
compiles each schema once, and checks calls strictly:

- the tool name must be declared (``UnknownToolError``);
- the raw input must be exactly one JSON value (``ToolInputError`` with the byte
  offset): duplicate keys, anything after the value, invalid UTF-8 and lone
  surrogate escapes are errors, never repaired; empty input of a completed call
  means ``{}``;
- the arguments must be a JSON object satisfying the tool's JSON Schema
  (``ToolSchemaError`` listing every failing path).

Tools that are not JSON functions are read too (quirk Q28): a custom tool (free-form
text input, OpenAI chat and Responses ``"type": "custom"``) validates its call's
text against its grammar (``regex`` with the Rust ``regex`` crate, whose syntax it
is; ``lark`` with the ``lark`` package, the ``grammar`` extra; ``text`` accepts any
text); the Responses client tools that are not functions (``computer_use_preview``,
``shell``, ``local_shell``, ``apply_patch``, ``mcp`` approvals) are matched by the
kind of call; tools the provider runs itself (web search, file search, code
execution, ...) are accepted in the list and never validated: their calls are
``server_side``.

Parsing and checking run in Rust (the ``jsonschema`` crate, drafts 4 to 2020-12,
2020-12 when ``$schema`` is absent); this module only recognises definitions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolstitch._toolstitch import (
    DEPTH_BOUNDS,
    ArgumentTracker,
    _CompiledSchema,
    _parse_strict,
    _RegexGrammar,
)
from toolstitch.blocks import ToolUseBlock
from toolstitch.calls import ToolArgumentDone, ToolArgumentsReset, ValidatedCall
from toolstitch.errors import (
    IncompleteMessageError,
    ToolDefinitionError,
    ToolInputError,
    ToolSchemaError,
    ToolstitchError,
    ToolValidationError,
    UnknownToolError,
)

__all__ = [
    "ArgumentTracker",
    "ToolArgumentDone",
    "ToolArgumentsReset",
    "ToolDefinition",
    "Toolset",
    "ValidatedCall",
]

# The schema of a tool declared without parameters: any object.
_NO_PARAMETERS: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One declared tool as the toolset understood it: its JSON Schema (Gemini's
    OpenAPI subset already normalised) and the form it was given in (``"openai-chat"``,
    ``"openai-responses"``, ``"anthropic"``, ``"gemini"``, ``"bedrock"`` or ``"schema"``).

    ``kind`` is the kind of call the tool answers: ``"function"`` (a JSON Schema),
    ``"custom_tool_call"`` (free-form text; ``grammar`` is ``(syntax, definition)``
    with syntax ``"text"``, ``"regex"`` or ``"lark"``), a Responses client tool's
    call kind (``"computer_call"``, ``"shell_call"``, ``"local_shell_call"``,
    ``"apply_patch_call"``, ``"mcp_approval_request"``), or ``"hosted"`` for a tool
    the provider runs itself (never validated here)."""

    name: str
    schema: Any
    form: str
    kind: str = "function"
    grammar: tuple[str, str] | None = None


class Toolset:
    """The tools a model may call, each schema compiled once.

    ``tools`` is a list of definitions in any provider's form (forms may be mixed),
    a Gemini tool (``{"functionDeclarations": [...]}``), a Bedrock ``toolConfig``
    (with or without the ``toolConfig`` key), a single definition, or a plain
    ``{name: json_schema}`` dict. Objects of the providers' SDKs are accepted
    through their ``model_dump()`` / ``to_dict()``. A definition in no known form,
    a duplicate name, or a schema that does not compile is a ``ToolDefinitionError``.
    A toolset is immutable and safe to share between threads.
    """

    __slots__ = ("_definitions", "_grammars", "_schemas")

    def __init__(self, tools: Any) -> None:
        definitions: dict[str, ToolDefinition] = {}
        schemas: dict[str, _CompiledSchema] = {}
        grammars: dict[str, _Grammar] = {}
        for definition in _definitions(tools):
            if definition.name in definitions:
                raise ToolDefinitionError(f"tool {definition.name!r} is declared twice")
            try:
                if definition.kind == "custom_tool_call":
                    grammars[definition.name] = _grammar(definition)
                elif definition.kind != "hosted":
                    schemas[definition.name] = _CompiledSchema(definition.schema)
            except ToolDefinitionError as e:
                raise ToolDefinitionError(f"tool {definition.name!r}: {e}") from None
            definitions[definition.name] = definition
        self._definitions = definitions
        self._schemas = schemas
        self._grammars = grammars

    @property
    def names(self) -> tuple[str, ...]:
        """The declared tool names, in declaration order."""
        return tuple(self._definitions)

    def definition(self, name: str) -> ToolDefinition:
        """The definition of tool ``name`` (``KeyError`` when it is not declared)."""
        return self._definitions[name]

    def __contains__(self, name: object) -> bool:
        return name in self._definitions

    def __len__(self) -> int:
        return len(self._definitions)

    def __iter__(self) -> Iterator[str]:
        return iter(self._definitions)

    def __repr__(self) -> str:
        return f"Toolset({list(self._definitions)!r})"

    def validate(self, block: ToolUseBlock) -> ValidatedCall:
        """Validate one completed call: the name first, then the input, then the schema.

        Raises ``UnknownToolError``, ``ToolInputError`` or ``ToolSchemaError``; each
        names the call (``call_id``, ``tool_name`` attributes). ``block`` is a
        ``ToolUseBlock`` or any object with ``id``, ``name`` and ``input``.
        """
        validated = self._validate(block, build=True)
        assert validated is not None
        return validated

    def check(self, block: ToolUseBlock) -> None:
        """``validate`` for a caller that wants only the verdict: the same checks and
        the same errors, without building the call's arguments as Python values."""
        self._validate(block, build=False)

    def _validate(self, block: ToolUseBlock, *, build: bool) -> ValidatedCall | None:
        call_id, name, raw = _call_parts(block)
        kind = getattr(block, "kind", "function")
        who = f"tool call {call_id!r}" if call_id else "a tool call"
        if getattr(block, "server_side", False):
            raise UnknownToolError(
                f"{who} ({name!r}, {kind}) was run by the provider itself: it is not for "
                f"the client to execute",
                call_id=call_id,
                tool_name=name,
                declared=self._definitions,
            )
        if kind not in ("function", "custom_tool_call"):
            return self._validate_builtin(block, call_id, name, raw, kind)
        definition = self._definitions.get(name)
        if definition is None or definition.kind not in ("function", kind):
            declared = ", ".join(repr(n) for n in self._definitions) or "none"
            what = (
                f"the undeclared tool {name!r} (declared: {declared})"
                if definition is None
                else f"the tool {name!r}, which is declared as a {definition.kind} tool"
            )
            raise UnknownToolError(
                f"{who} ({kind}) names {what}",
                call_id=call_id,
                tool_name=name,
                declared=self._definitions,
            )
        if kind == "custom_tool_call" or definition.kind == "custom_tool_call":
            if kind != definition.kind:
                raise UnknownToolError(
                    f"{who} is a {kind} call of {name!r}, a {definition.kind} tool",
                    call_id=call_id,
                    tool_name=name,
                    declared=self._definitions,
                )
            text = raw.decode("utf-8", "strict") if isinstance(raw, bytes) else raw
            self._grammars[name].check(text, call_id=call_id, tool_name=name)
            return ValidatedCall(call_id, name, {}, kind, text)
        schema = self._schemas[name]
        try:
            if not build:
                schema.parse_and_check(raw, call_id=call_id, tool_name=name)
                return None
            arguments = schema.parse_and_validate(raw, call_id=call_id, tool_name=name)
        except ToolSchemaError as e:
            raise _explained_schema_error(e, definition.schema, call_id, name) from None
        except ToolInputError as e:
            raise _explained_input_error(e, definition.schema, call_id, name) from None
        return ValidatedCall(call_id, name, arguments)

    def _validate_builtin(
        self, block: Any, call_id: str, name: str, raw: str | bytes, kind: str
    ) -> ValidatedCall:
        """A Responses client tool that is not a function: declared by its type."""
        declared = [d for d in self._definitions.values() if d.kind == kind]
        arguments = _parse_strict(raw)
        if kind == "mcp_approval_request":
            label = arguments.get("server_label") if isinstance(arguments, dict) else None
            declared = [d for d in declared if d.name == label]
        if not declared:
            raise UnknownToolError(
                f"tool call {call_id!r} is a {kind} ({name!r}), and no tool of that type is "
                f"declared",
                call_id=call_id,
                tool_name=name,
                declared=self._definitions,
            )
        if not isinstance(arguments, dict):
            raise ToolSchemaError(
                f"tool call {call_id!r} ({kind}): its input must be a JSON object",
                [("", "the input must be a JSON object")],
                call_id=call_id,
                tool_name=name,
            )
        return ValidatedCall(call_id, name, arguments, kind)

    def validate_all(self, blocks: Iterable[Any]) -> list[ValidatedCall]:
        """Validate every call of a turn; ``ToolUseBlock``s among other blocks are picked out.

        Returns the validated calls in order, or raises one ``ToolValidationError``
        whose ``errors`` lists every failing call (not just the first).
        """
        calls: list[ValidatedCall] = []
        errors: list[ToolstitchError] = []
        for block in blocks:
            if not isinstance(block, ToolUseBlock):
                continue
            if getattr(block, "server_side", False):
                continue  # the provider ran it: nothing to execute
            try:
                calls.append(self.validate(block))
            except (UnknownToolError, ToolInputError, ToolSchemaError) as e:
                errors.append(e)
        if errors:
            count = len(errors)
            lines = "\n".join(f"  - {e}" for e in errors)
            plural = "call fails" if count == 1 else "calls fail"
            raise ToolValidationError(f"{count} tool {plural} validation:\n{lines}", errors, calls)
        return calls

    def validate_message(self, message: Any) -> list[ValidatedCall]:
        """Validate every call of an assembled message (what
        ``AssembledMessage.validated(toolset)`` does).

        A message whose ``complete`` is not true is refused with
        ``IncompleteMessageError``: a cut stream's calls must not be executed.
        Calls are taken from ``message.tool_uses`` when it has them, else from
        ``message.blocks``.
        """
        complete = getattr(message, "complete", None)
        if complete is None:
            raise TypeError(
                f"validate_message takes an assembled message with a 'complete' flag, "
                f"not {type(message).__name__}; use validate_all(blocks) for blocks "
                f"you know to be complete"
            )
        if complete is not True:
            from toolstitch.messages import incomplete_reason

            problems = getattr(message, "problems", ())
            why = (
                "; ".join(str(p) for p in problems)
                if problems
                else incomplete_reason(
                    getattr(message, "finish", None), getattr(message, "finish_reason", None)
                )
            )
            raise IncompleteMessageError(
                f"the message did not complete normally: {why}; its tool calls may be "
                f"truncated and must not be executed"
            )
        blocks: Iterable[Any] | None = getattr(message, "tool_uses", None)
        if blocks is None:
            blocks = getattr(message, "blocks", ())
        return self.validate_all(blocks)


def _call_parts(block: Any) -> tuple[str, str, str | bytes]:
    try:
        call_id, name, raw = block.id, block.name, block.input
    except AttributeError:
        raise TypeError(
            f"expected a ToolUseBlock (id, name, input), not {type(block).__name__}"
        ) from None
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise TypeError("a tool call's id and name must be str")
    if not isinstance(raw, (str, bytes)):
        raise TypeError(f"a tool call's input must be str, not {type(raw).__name__}")
    return call_id, name, raw


# ------------------------------------------------------------ what to tell the model
#
# A failing call's error is what ``ToolValidationError.results()`` sends back to the
# model, so it says what the schema expected where the arguments fail, in bounded size:
# at most ``_MAX_LISTED`` failures, each message and each expected schema clipped.

_MAX_LISTED = 16
_MESSAGE_CHARS = 300
_EXPECTED_CHARS = 300
_SCHEMA_CHARS = 1000
_PATH_CHARS = 200
# Keywords that only describe (dropped from what the model is shown).
_ANNOTATIONS = frozenset(
    {"title", "description", "examples", "example", "$comment", "default", "deprecated"}
)


def _clip(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` characters: the start says where, the end
    what was expected (``"<a long value>" is not of type "integer"``)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head) :]}"


def _who(call_id: str, name: str) -> str:
    if call_id and name:
        return f"tool call {call_id!r} ({name}): "
    if call_id:
        return f"tool call {call_id!r}: "
    return f"tool call ({name}): " if name else ""


def _stripped(schema: Any, depth: int = 0) -> Any:
    """``schema`` without its annotation keywords, at any depth (a schema is at most
    ``_MAX_SCHEMA_DEPTH`` levels deep, so the recursion is bounded)."""
    if depth > _MAX_SCHEMA_DEPTH:
        return "…"
    if isinstance(schema, Mapping):
        return {
            k: (v if k in ("enum", "const", "required") else _stripped(v, depth + 1))
            for k, v in schema.items()
            if k not in _ANNOTATIONS
        }
    if isinstance(schema, list):
        return [_stripped(v, depth + 1) for v in schema]
    return schema


def _compact(schema: Any, limit: int) -> str:
    try:
        text = json.dumps(_stripped(schema), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(schema)
    return _clip(text, limit)


def _pointer_tokens(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _resolve(root: Any, schema: Any) -> Any:
    """Follows a local ``$ref`` (``#/$defs/...``) a bounded number of times."""
    for _ in range(32):
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = root
        for token in _pointer_tokens(ref[1:]):
            if isinstance(target, Mapping) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                return schema
        schema = target
    return schema


def _subschema(root: Any, path: str) -> Any:
    """The part of tool schema ``root`` that applies at JSON Pointer ``path`` of the
    arguments, or ``None`` when it cannot be told without the value (``anyOf``, ...)."""
    schema = _resolve(root, root)
    for token in _pointer_tokens(path):
        if not isinstance(schema, Mapping):
            return None
        properties = schema.get("properties")
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        nxt: Any = None
        if isinstance(properties, Mapping) and token in properties:
            nxt = properties[token]
        elif isinstance(schema.get("patternProperties"), Mapping):
            for pattern, sub in schema["patternProperties"].items():
                try:
                    if re.search(pattern, token):
                        nxt = sub
                        break
                except re.error:
                    continue
        if nxt is None and token.isdigit() and (items is not None or prefix is not None):
            index = int(token)
            if isinstance(prefix, list) and index < len(prefix):
                nxt = prefix[index]
            elif isinstance(items, list):  # drafts 4 to 7: a tuple of schemas
                nxt = items[index] if index < len(items) else schema.get("additionalItems")
            else:
                nxt = items
        if nxt is None and isinstance(schema.get("additionalProperties"), (Mapping, bool)):
            nxt = schema["additionalProperties"]
        if nxt is None:
            return None
        schema = _resolve(root, nxt)
    return schema


def _explained_schema_error(
    error: ToolSchemaError, schema: Any, call_id: str, name: str
) -> ToolSchemaError:
    """``error`` with a bounded message that says, at each failing path, what the schema
    expected there (the failures themselves are kept whole in ``failures``)."""
    failures = error.failures
    lines = []
    for failure in failures[:_MAX_LISTED]:
        at = _clip(failure.path, _PATH_CHARS) if failure.path else "(root)"
        line = f"{at}: {_clip(failure.message, _MESSAGE_CHARS)}"
        expected = _subschema(schema, failure.path)
        if expected is not None:
            line += f" (expected: {_compact(expected, _EXPECTED_CHARS)})"
        lines.append(line)
    if len(failures) > _MAX_LISTED:
        lines.append(f"and {len(failures) - _MAX_LISTED} more")
    count = len(failures)
    message = (
        f"{_who(call_id, name)}arguments do not match the tool's schema ({count} "
        f"failure{'' if count == 1 else 's'}): {'; '.join(lines)}"
    )
    return ToolSchemaError(
        message,
        [(f.path, f.message) for f in failures],
        call_id=error.call_id,
        tool_name=error.tool_name,
    )


def _explained_input_error(
    error: ToolInputError, schema: Any, call_id: str, name: str
) -> ToolInputError:
    """``error`` with what the call should have sent: one JSON object for the tool's
    schema (shown clipped)."""
    message = (
        f"{_clip(str(error), _SCHEMA_CHARS)}; send the call again with arguments that are "
        f"one JSON object matching the tool's schema: {_compact(schema, _SCHEMA_CHARS)}"
    )
    return ToolInputError(
        message, error.offset, call_id=error.call_id or call_id, tool_name=error.tool_name or name
    )


# ------------------------------------------------------------- definitions


# The deepest nesting of containers a schema may have: the bound the Rust side puts on
# schemas and tool arguments alike (``validate::MAX_DEPTH``), read from the binding.
_MAX_SCHEMA_DEPTH = DEPTH_BOUNDS["schema"]

# How deep the envelope of a definition is read before its schema is reached: a
# Bedrock ``{"toolSpec": {"inputSchema": {"json": ...}}}`` or a Gemini tool's
# ``{"functionDeclarations": [{"parameters": ...}]}``. The schema itself is made
# plain, with its depth checked, once the tool's name is known.
_ENVELOPE_LEVELS = 4


def _dumped(obj: Any) -> Any:
    """An SDK object (pydantic, google-genai, ...) as the dict or list it dumps to;
    anything else as it is."""
    if isinstance(obj, (Mapping, list, tuple, str, bytes, int, float)) or obj is None:
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump(by_alias=True, exclude_none=True)
        except TypeError:
            return dump()
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return obj


class _TooDeep(Exception):
    """Raised inside ``_as_plain`` when the value nests deeper than allowed."""


def _as_plain(obj: Any, levels: int, *, refuse_deeper: bool = False) -> Any:
    """``obj`` with SDK objects turned into plain dicts and lists, ``levels`` levels of
    containers deep. Deeper values are left as they are, or, with ``refuse_deeper``,
    raise ``_TooDeep``. Iterative: hostile nesting (or a reference cycle) costs no
    native or Python stack."""
    root: list[Any] = [None]
    # (value, container to store it in, key or index, depth of the value)
    pending: list[tuple[Any, Any, Any, int]] = [(obj, root, 0, 0)]
    while pending:
        value, parent, key, depth = pending.pop()
        value = _dumped(value)
        if isinstance(value, (Mapping, list, tuple)):
            if depth >= levels:
                if refuse_deeper:
                    raise _TooDeep
                parent[key] = value
                continue
            if isinstance(value, Mapping):
                out: Any = dict.fromkeys(value)
                pending.extend((v, out, k, depth + 1) for k, v in value.items())
            else:
                out = [None] * len(value)
                pending.extend((v, out, i, depth + 1) for i, v in enumerate(value))
            parent[key] = out
        else:
            parent[key] = value
    return root[0]


def _plain_schema(name: str, schema: Any) -> Any:
    """Tool ``name``'s schema as plain data, refused when it nests deeper than the
    Rust side accepts."""
    try:
        return _as_plain(schema, _MAX_SCHEMA_DEPTH, refuse_deeper=True)
    except _TooDeep:
        raise ToolDefinitionError(
            f"tool {name!r}: the schema nests deeper than {_MAX_SCHEMA_DEPTH} levels"
        ) from None


def _definitions(tools: Any) -> Iterator[ToolDefinition]:
    tools = _as_plain(tools, _ENVELOPE_LEVELS)
    if isinstance(tools, Mapping):
        if isinstance(tools.get("toolConfig"), Mapping):
            yield from _definitions(tools["toolConfig"])
        elif isinstance(tools.get("tools"), (list, tuple)):
            yield from _definitions(tools["tools"])
        elif _form(tools) is not None:
            yield from _from_definition(tools)
        else:
            yield from _from_plain(tools)
    elif isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
        raise ToolDefinitionError(
            f"tools must be a list of tool definitions or a {{name: schema}} dict, "
            f"not {type(tools).__name__}"
        )
    else:
        for item in tools:
            yield from _from_definition(_as_plain(item, _ENVELOPE_LEVELS))


def _from_plain(tools: Mapping[Any, Any]) -> Iterator[ToolDefinition]:
    for name, schema in tools.items():
        if not isinstance(name, str) or not isinstance(schema, (Mapping, bool)):
            raise ToolDefinitionError(
                f"not a tool definition in any known form, nor a {{name: json_schema}} "
                f"dict: entry {name!r} maps to {type(schema).__name__} (keys seen: "
                f"{_keys(tools)})"
            )
        yield _definition(name, schema, "schema")


def _keys(d: Mapping[Any, Any]) -> str:
    return ", ".join(repr(k) for k in list(d)[:8]) or "none"


# Responses client tools that are not functions: declaration type -> (call kind, name).
_CLIENT_TOOL_TYPES = {
    "computer_use_preview": ("computer_call", "computer"),
    "computer_use": ("computer_call", "computer"),
    "computer": ("computer_call", "computer"),
    "local_shell": ("local_shell_call", "local_shell"),
    "shell": ("shell_call", "shell"),
    "apply_patch": ("apply_patch_call", "apply_patch"),
}

# Tools the provider runs itself, by declaration type (Responses), or by the stem of an
# Anthropic versioned type (``web_search_20250305``).
_HOSTED_TYPES = frozenset(
    {
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "tool_search",
        "programmatic_tool_calling",
        "web_fetch",
        "code_execution",
        # The Gemini Interactions API's built-in tools.
        "google_search",
        "url_context",
        "google_maps",
        "mcp_server",
    }
)
# Anthropic client tools defined by type (the client runs them; their calls are
# ordinary tool_use blocks with JSON input): ``bash_20250124``, ...
_ANTHROPIC_CLIENT_STEMS = frozenset({"bash", "text_editor", "computer", "memory"})


def _type_stem(kind: str) -> str:
    """``web_search_20250305`` -> ``web_search``."""
    head, _, tail = kind.rpartition("_")
    return head if head and tail.isdigit() else kind


def _form(d: Mapping[str, Any]) -> str | None:
    """The provider form of one definition, or ``None``."""
    kind = d.get("type")
    if kind == "custom" and "input_schema" not in d:  # Anthropic's own tools are "custom" too
        return "openai-chat-custom" if isinstance(d.get("custom"), Mapping) else "openai-custom"
    if isinstance(kind, str) and kind in _CLIENT_TOOL_TYPES:
        return "openai-client-tool"
    if kind == "mcp" and isinstance(d.get("server_label"), str):
        return "openai-mcp"
    if isinstance(kind, str) and _type_stem(kind) in _HOSTED_TYPES:
        return "hosted"
    if (
        isinstance(kind, str)
        and _type_stem(kind) in _ANTHROPIC_CLIENT_STEMS
        and isinstance(d.get("name"), str)
    ):
        return "anthropic-client-tool"
    if isinstance(d.get("toolSpec"), Mapping):
        return "bedrock"
    if set(d) == {"cachePoint"}:
        return "bedrock-cache-point"
    if isinstance(d.get("functionDeclarations", d.get("function_declarations")), (list, tuple)):
        return "gemini-tool"
    if d.get("type") == "function":
        if isinstance(d.get("function"), Mapping):
            return "openai-chat"
        if isinstance(d.get("name"), str):
            return "openai-responses"
        return None
    if not isinstance(d.get("name"), str):
        return None
    if "input_schema" in d:
        return "anthropic"
    if "type" not in d and set(d) <= _GEMINI_DECLARATION_KEYS:
        return "gemini"
    return None


_GEMINI_DECLARATION_KEYS = frozenset(
    {
        "name",
        "description",
        "parameters",
        "parametersJsonSchema",
        "parameters_json_schema",
        "response",
        "responseJsonSchema",
        "response_json_schema",
        "behavior",
        "strict",  # the legacy OpenAI ``functions`` entry has the same shape
    }
)


def _from_definition(d: Any) -> Iterator[ToolDefinition]:
    if not isinstance(d, Mapping):
        raise ToolDefinitionError(f"a tool definition must be a dict, not {type(d).__name__}")
    form = _form(d)
    if form == "openai-chat":
        function = d["function"]
        yield _definition(function.get("name"), function.get("parameters"), form)
    elif form == "openai-responses":
        yield _definition(d["name"], d.get("parameters"), form)
    elif form == "anthropic":
        yield _definition(d["name"], d["input_schema"], form)
    elif form == "bedrock":
        spec = d["toolSpec"]
        schema = spec.get("inputSchema")
        if isinstance(schema, Mapping) and "json" in schema:
            schema = schema["json"]
        if isinstance(schema, (str, bytes)):
            try:
                schema = _parse_strict(schema)
            except ToolInputError as e:
                raise ToolDefinitionError(f"Bedrock inputSchema.json: {e}") from None
        yield _definition(spec.get("name"), schema, form)
    elif form == "bedrock-cache-point":
        return
    elif form == "gemini-tool":
        declarations = d.get("functionDeclarations", d.get("function_declarations"))
        for declaration in declarations:
            if not isinstance(declaration, Mapping) or _form(declaration) != "gemini":
                raise ToolDefinitionError(
                    f"not a Gemini function declaration: {declaration!r:.200}"
                )
            yield _gemini(declaration)
    elif form == "gemini":
        yield _gemini(d)
    elif form in ("openai-custom", "openai-chat-custom"):
        spec = d["custom"] if form == "openai-chat-custom" else d
        yield _custom(spec, form)
    elif form == "openai-client-tool":
        kind, name = _CLIENT_TOOL_TYPES[d["type"]]
        yield ToolDefinition(name, _NO_PARAMETERS, form, kind)
    elif form == "openai-mcp":
        # The MCP server's calls run on the provider's side; approvals come to the client.
        yield ToolDefinition(d["server_label"], _NO_PARAMETERS, form, "mcp_approval_request")
    elif form == "hosted":
        yield ToolDefinition(str(d.get("name") or d["type"]), None, form, "hosted")
    elif form == "anthropic-client-tool":
        yield _definition(d["name"], d.get("input_schema"), form)
    else:
        declared_type = d.get("type")
        hint = (
            f" (a {declared_type!r} tool is the provider's own: declare its schema with "
            f"{{name: json_schema}} to validate its calls here)"
            if isinstance(declared_type, str) and declared_type not in ("function", "custom")
            else ""
        )
        raise ToolDefinitionError(
            f"not a tool definition in any known form (OpenAI chat or Responses, "
            f"Anthropic, Gemini, Bedrock): keys {_keys(d)}{hint}"
        )


def _custom(spec: Mapping[str, Any], form: str) -> ToolDefinition:
    """A custom tool: free-form text input, under a grammar when it declares one.

    Responses: ``format: {"type": "grammar", "syntax": ..., "definition": ...}``; OpenAI
    chat: ``format: {"type": "grammar", "grammar": {"syntax": ..., "definition": ...}}``;
    ``{"type": "text"}`` or no format: any text.
    """
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ToolDefinitionError(f"a custom tool definition has no name (got {name!r})")
    fmt = spec.get("format")
    if fmt is None or (isinstance(fmt, Mapping) and fmt.get("type") == "text"):
        return ToolDefinition(name, None, form, "custom_tool_call", ("text", ""))
    grammar = fmt.get("grammar", fmt) if isinstance(fmt, Mapping) else None
    if (
        not isinstance(fmt, Mapping)
        or fmt.get("type") != "grammar"
        or not isinstance(grammar, Mapping)
    ):
        raise ToolDefinitionError(f"custom tool {name!r}: unknown format {fmt!r:.200}")
    syntax, definition = grammar.get("syntax"), grammar.get("definition")
    if syntax not in ("regex", "lark") or not isinstance(definition, str):
        raise ToolDefinitionError(
            f"custom tool {name!r}: a grammar needs syntax 'regex' or 'lark' and a "
            f"definition string (got syntax {syntax!r})"
        )
    return ToolDefinition(name, None, form, "custom_tool_call", (syntax, definition))


class _Grammar:
    """Checks a custom tool's free-form input against its grammar."""

    __slots__ = ("_check", "_syntax")

    def __init__(self, syntax: str, check: Any) -> None:
        self._syntax = syntax
        self._check = check

    def check(self, text: str, *, call_id: str, tool_name: str) -> None:
        if self._check is None or self._check(text):
            return
        raise ToolSchemaError(
            f"tool call {call_id!r} ({tool_name}): its input does not match the tool's "
            f"{self._syntax} grammar",
            [("", f"the input does not match the {self._syntax} grammar")],
            call_id=call_id,
            tool_name=tool_name,
        )


def _grammar(definition: ToolDefinition) -> _Grammar:
    syntax, text = definition.grammar or ("text", "")
    if syntax == "text":
        return _Grammar(syntax, None)
    if syntax == "regex":
        return _Grammar(syntax, _RegexGrammar(text).matches)
    try:
        import lark  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ToolDefinitionError(
            "its lark grammar can only be checked with the 'lark' package: install "
            "toolstitch[grammar]"
        ) from None
    try:
        parser = lark.Lark(text, start="start", parser="earley")
    except lark.exceptions.LarkError as e:
        raise ToolDefinitionError(f"the lark grammar does not load: {e}") from None

    def matches(candidate: str) -> bool:
        try:
            parser.parse(candidate)
        except lark.exceptions.LarkError:
            return False
        return True

    return _Grammar(syntax, matches)


def _gemini(d: Mapping[str, Any]) -> ToolDefinition:
    json_schema = d.get("parametersJsonSchema", d.get("parameters_json_schema"))
    if json_schema is not None:
        return _definition(d["name"], json_schema, "gemini")
    parameters = d.get("parameters")
    if parameters is None:
        return _definition(d["name"], None, "gemini")
    name = d["name"]
    return _definition(name, _gemini_schema(_plain_schema(name, parameters)), "gemini")


def _definition(name: Any, schema: Any, form: str) -> ToolDefinition:
    if not isinstance(name, str) or not name:
        raise ToolDefinitionError(f"a {form} tool definition has no name (got {name!r})")
    if schema is None:
        schema = _NO_PARAMETERS
    schema = _plain_schema(name, schema)
    if not isinstance(schema, (Mapping, bool)):
        raise ToolDefinitionError(
            f"tool {name!r}: the schema must be a JSON Schema object, not {type(schema).__name__}"
        )
    return ToolDefinition(name, schema, form)


# ---------------------------------------------------------- Gemini schemas

# Gemini's Schema (an OpenAPI 3.0 subset) spelled by the Python SDK in snake_case.
_GEMINI_KEYS = {
    "any_of": "anyOf",
    "min_items": "minItems",
    "max_items": "maxItems",
    "min_length": "minLength",
    "max_length": "maxLength",
    "min_properties": "minProperties",
    "max_properties": "maxProperties",
    "property_ordering": "propertyOrdering",
    "additional_properties": "additionalProperties",
    "prefix_items": "prefixItems",
}
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_ONE = frozenset({"items", "not", "additionalProperties"})


def _gemini_schema(schema: Any) -> Any:
    """Gemini's OpenAPI-subset schema as JSON Schema.

    Type names are lowercased (``"OBJECT"`` -> ``"object"``; ``TYPE_UNSPECIFIED``
    dropped), ``nullable: true`` becomes a ``"null"`` alternative (and ``None`` is
    added to an ``enum``), the SDK's snake_case keywords become camelCase. Property
    names are never touched; unknown keywords (``format``, ``example``,
    ``propertyOrdering``) are kept and ignored by the validator.
    """
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for raw_key, value in schema.items():
        key = str(_GEMINI_KEYS.get(raw_key, raw_key))
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: _gemini_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, (list, tuple)):
            out[key] = [_gemini_schema(sub) for sub in value]
        elif key in _SCHEMA_ONE and isinstance(value, Mapping):
            out[key] = _gemini_schema(value)
        elif key == "type" and isinstance(value, str):
            if value.upper() != "TYPE_UNSPECIFIED":
                out[key] = value.lower()
        else:
            out[key] = value
    if out.pop("nullable", False) is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif isinstance(out.get("anyOf"), list):
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out
