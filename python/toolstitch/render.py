"""Rendering the assistant turn and its tool results for the next request.

Each function returns a ``list`` of plain dicts to append to the conversation in
that provider's request format: ``messages`` (OpenAI chat, Anthropic, Bedrock
``converse``), ``input`` (OpenAI Responses) or ``contents`` (Gemini).

Providers: ``"openai-chat"``, ``"openai-responses"``, ``"anthropic"``,
``"bedrock"``, ``"gemini"``, ``"cohere"`` (v2), ``"ollama"``, and ``"bedrock-invoke"``
(InvokeModel: the model's own format, Claude's or Nova's, told by ``model=``; the
request body around the messages is ``invoke_body``). The turn may come from any of them:
call ids are mapped to what the target accepts (``ids=``: ``IdRule``, ``IdMap``,
``ID_RULES``; into the dialect they came from they go back as sent, Q55), and what
cannot travel is left out (``notes=`` says what).

- Tool calls go back exactly as received, valid or not: OpenAI's and Cohere's
  ``arguments`` is the raw input text (``"{}"`` when it is empty); Anthropic,
  Bedrock and Gemini take an object, so the input is parsed strictly with members
  kept in their order, and input that is not a JSON object goes back as
  ``{"INVALID_JSON": "<the text>"}`` (Anthropic's documented form).
- Provider state travels back: Anthropic thinking signatures, Bedrock reasoning
  signatures, Gemini ``thoughtSignature`` (a block's ``provider_state`` of format
  ``"gemini"``), the Responses ``function_call`` item ``id`` (format
  ``"openai-responses"``).
- Results are tied to their calls by ``tool_use_id``. ``render_results`` checks
  that tie when it is given the turn's ``calls=``; ``render_turn`` always does:
  a result for an unknown call, two results for one call, or a call left
  without a result is a ``ToolResultError``. Calls the provider ran itself
  (``server_side``) need no result from the client.
- Every kind of call goes back in the form it came, where the format has one:
  hosted tools and their results (Anthropic ``server_tool_use`` / ``mcp_tool_use``
  and ``*_tool_result`` blocks, Responses built-in items, Gemini
  ``executableCode`` / ``codeExecutionResult``, Bedrock server tools) from the
  provider state they were assembled with; custom tools (free-form input) as
  ``custom_tool_call`` items or ``custom`` tool calls; other Responses client
  tools (``computer_call``, ``shell_call``, ...) as their items, answered by
  their own ``*_output`` items. OpenAI chat has no form for hosted tools: they
  are left out of a chat turn.
- A provider's request for approval (Responses ``mcp_approval_request``, Q60) goes
  back as its item; the client's ``ApprovalResponse``, passed among the results,
  renders as an ``mcp_approval_response`` item after them. It needs no result, and
  other targets have no form for it (``RenderError``).
- Dropped on purpose: reasoning a provider cannot take back (any thinking in
  OpenAI chat; thinking without a signature of that provider's format) and empty
  text blocks. OpenAI chat and Gemini results take text only; a block a format
  cannot carry, or an unknown provider, is a ``RenderError``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, overload

from toolstitch._toolstitch import _WIRE_MAX_DEPTH, _json_depth, _parse_strict
from toolstitch.blocks import (
    AudioBlock,
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    RefusalBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
)
from toolstitch.errors import RenderError, ToolInputError, ToolResultError
from toolstitch.messages import ApprovalResponse

__all__ = [
    "ID_RULES",
    "INVALID_JSON",
    "PROVIDERS",
    "IdMap",
    "IdRule",
    "invoke_body",
    "render_assistant",
    "render_results",
    "render_turn",
]

PROVIDERS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "bedrock",
    "gemini",
    "cohere",
    "ollama",
    "bedrock-invoke",
    "gemini-interactions",
)

Item = dict[str, Any]

if TYPE_CHECKING:
    # The SDKs' own request types (TypedDicts), for type checkers only: rendered for
    # "openai-chat" or "anthropic", a turn is what the SDK's ``messages=`` parameter
    # takes, with no cast. Without the SDK installed they read as ``Any``.
    from anthropic.types import MessageParam as AnthropicMessage
    from openai.types.chat import ChatCompletionMessageParam as OpenAIChatMessage
Result = ToolResultBlock | ToolResultMessage


@overload
def render_assistant(
    provider: Literal["openai-chat"],
    message: Any,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[OpenAIChatMessage]: ...


@overload
def render_assistant(
    provider: Literal["anthropic"],
    message: Any,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[AnthropicMessage]: ...


@overload
def render_assistant(
    provider: str,
    message: Any,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[Item]: ...


def render_assistant(
    provider: str,
    message: Any,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[Any]:
    """The assistant turn being answered, in ``provider``'s request format.

    ``message`` is an ``AssembledMessage``, a ``Message``, or an iterable of blocks,
    from any dialect. Text, refusals, reasoning the provider can take back, and every
    tool call are rendered in stream order; a block the format cannot carry is a
    ``RenderError``. Call ids the target does not accept are mapped (``ids``: the
    target's own rule by default, a rule's name such as ``"mistral"``, an ``IdRule``,
    or an ``IdMap`` that also records the mapping); provider state the target cannot
    take is left out, with a line in ``notes`` when a list is given. ``model`` is the
    Bedrock model id for ``"bedrock-invoke"`` (which format the model takes).

    ``source`` is the dialect the turn came from (an ``AssembledMessage`` says it in
    its ``dialect``): rendered into that same dialect, ids go back exactly as sent
    unless ``ids`` names a rule (Q55). Two calls of the turn that a rule without an
    ``IdMap`` would give one id are a ``RenderError`` naming both.
    """
    _check(provider)
    source = _source(message, source)
    if provider == "bedrock-invoke":
        target = _invoke_target(model)
        of = target if source == "bedrock-invoke" else source
        turn = render_assistant(target, message, ids=ids, notes=notes, source=of)
        return _invoke_json(turn) if target == "bedrock" else turn
    rule, record = _id_policy(provider, ids, source)
    given = _blocks(message)
    if record is None:
        _distinct([(b.id, _map_id(b.id, rule, None)) for b in given if _is_call(b)], rule)
    blocks = _portable(provider, given, notes)
    blocks = [_with_mapped_ids(b, rule, record) for b in blocks]
    if provider == "openai-chat":
        return [_chat_assistant(blocks)]
    if provider == "openai-responses":
        return _responses_assistant(blocks)
    if provider == "anthropic":
        return [{"role": "assistant", "content": _anthropic_assistant(blocks)}]
    if provider == "bedrock":
        return [{"role": "assistant", "content": _bedrock_assistant(blocks)}]
    if provider == "cohere":
        return [_cohere_assistant(blocks)]
    if provider == "ollama":
        return [_ollama_assistant(blocks)]
    if provider == "gemini-interactions":
        return _interactions_steps(blocks)
    return [{"role": "model", "parts": _gemini_assistant(blocks)}]


@overload
def render_results(  # type: ignore[overload-overlap]
    provider: Literal["openai-chat"],
    results: Iterable[Any] | Result | Message,
    *,
    calls: Any = None,
    ids: IdMap | IdRule | str | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[OpenAIChatMessage]: ...


@overload
def render_results(  # type: ignore[overload-overlap]
    provider: Literal["anthropic"],
    results: Iterable[Any] | Result | Message,
    *,
    calls: Any = None,
    ids: IdMap | IdRule | str | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[AnthropicMessage]: ...


@overload
def render_results(
    provider: str,
    results: Iterable[Any] | Result | Message | ApprovalResponse,
    *,
    calls: Any = None,
    ids: IdMap | IdRule | str | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[Item]: ...


def render_results(
    provider: str,
    results: Iterable[Any] | Result | Message | ApprovalResponse,
    *,
    calls: Any = None,
    ids: IdMap | IdRule | str | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[Any]:
    """The tool results, in ``provider``'s request format.

    ``results`` holds ``ToolResultBlock``s and ``ToolResultMessage``s (a ``Message``
    of result blocks is unpacked), and ``ApprovalResponse``s answering the turn's
    ``approval_requests`` (``openai-responses`` only; with ``calls`` each must answer a
    request of the turn, once). With ``calls`` (the assistant turn being
    answered: a message or its blocks) each result must answer one of its calls,
    no call may get two results and every call must get one, else
    ``ToolResultError``; results are then rendered in call order. Gemini needs
    ``calls``: its ``functionResponse`` names the function, which a result does
    not carry. ``ids`` maps the call ids as ``render_assistant`` does (the same
    policy gives the same ids, so results keep answering their calls). ``model``: as
    for ``render_assistant``. ``source``: as for ``render_assistant``, read from
    ``calls`` when it is an ``AssembledMessage``; without ``calls`` or ``source`` the
    results cannot know where their ids came from, and the target's rule applies.
    """
    _check(provider)
    results, approvals = _approvals(results)
    if approvals:
        if provider != "openai-responses":
            raise RenderError(
                f"{provider} has no form for an approval response (approval request "
                f"{approvals[0].approval_request_id!r}): approvals are OpenAI Responses'"
            )
        rendered = render_results(
            provider, results, calls=calls, ids=ids, model=model, source=source
        )
        return rendered + _approval_items(approvals, calls)
    source = _source(calls, source)
    if provider == "bedrock-invoke":
        target = _invoke_target(model)
        of = target if source == "bedrock-invoke" else source
        results_ = render_results(target, results, calls=calls, ids=ids, source=of)
        return _invoke_json(results_) if target == "bedrock" else results_
    rule, record = _id_policy(provider, ids, source)
    answers = _results(results)
    names: dict[str, str] | None = None
    kinds: dict[str, str] = {}
    if record is None:
        answered = {r.tool_use_id for r in answers}
        if calls is not None:
            answered |= set(_tool_names(calls))
        _distinct([(i, _map_id(i, rule, None)) for i in sorted(answered)], rule)
    if calls is not None:
        names = _tool_names(calls)
        kinds = _tool_kinds(calls)
        answers = _correlate(answers, names)
        names = {_map_id(i, rule, record): n for i, n in names.items()}
        kinds = {_map_id(i, rule, record): k for i, k in kinds.items()}
    answers = [
        dataclasses.replace(r, tool_use_id=_map_id(r.tool_use_id, rule, record)) for r in answers
    ]
    if provider == "openai-chat":
        return [
            {"role": "tool", "tool_call_id": r.tool_use_id, "content": _chat_text(r)}
            for r in answers
        ]
    if provider == "openai-responses":
        return [_responses_result(r, kinds.get(r.tool_use_id, "function")) for r in answers]
    if provider == "anthropic":
        return [{"role": "user", "content": [_anthropic_result(r) for r in answers]}]
    if provider == "bedrock":
        return [{"role": "user", "content": [_bedrock_result(r) for r in answers]}]
    if provider == "cohere":
        return [_cohere_result(r) for r in answers]
    if provider == "ollama":
        return [_ollama_result(r, names) for r in answers]
    if provider == "gemini-interactions":
        content = [_interactions_result(r, names) for r in answers]
        return [{"type": "user_input", "content": content}] if content else []
    if names is None:
        raise RenderError(
            "gemini results need calls= (the assistant turn being answered): a "
            "functionResponse names its function, and a result only knows its call id"
        )
    return [{"role": "user", "parts": [_gemini_result(r, names) for r in answers]}]


@overload
def render_turn(
    provider: Literal["openai-chat"],
    message: Any,
    results: Iterable[Any] | Result | Message,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[OpenAIChatMessage]: ...


@overload
def render_turn(
    provider: Literal["anthropic"],
    message: Any,
    results: Iterable[Any] | Result | Message,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[AnthropicMessage]: ...


@overload
def render_turn(
    provider: str,
    message: Any,
    results: Iterable[Any] | Result | Message | ApprovalResponse,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[Item]: ...


def render_turn(
    provider: str,
    message: Any,
    results: Iterable[Any] | Result | Message | ApprovalResponse,
    *,
    ids: IdMap | IdRule | str | None = None,
    notes: list[str] | None = None,
    model: str | None = None,
    source: str | None = None,
) -> list[Any]:
    """The assistant turn followed by its results, correlation checked.

    The same as ``render_assistant(provider, message, ids=ids, notes=notes, model=model,
    source=source) + render_results(provider, results, calls=message, ids=ids,
    model=model, source=source)``: ready to extend the conversation with.
    """
    assistant = render_assistant(
        provider, message, ids=ids, notes=notes, model=model, source=source
    )
    return assistant + render_results(
        provider, results, calls=message, ids=ids, model=model, source=source
    )


# ------------------------------------------------------------- InvokeModel

_ANTHROPIC_VERSION = "bedrock-2023-05-31"
"""The ``anthropic_version`` Claude takes through InvokeModel."""


def _invoke_target(model: str | None) -> str:
    """The dialect whose request format a Bedrock model takes through InvokeModel,
    from its model id (``anthropic.claude-…``, ``us.amazon.nova-…``, an ARN)."""
    name = (model or "").lower()
    if "anthropic" in name or "claude" in name:
        return "anthropic"
    if "nova" in name:
        return "bedrock"
    raise RenderError(
        f"bedrock-invoke renders for Anthropic Claude and Amazon Nova models: give their "
        f"Bedrock model id as model= (got {model!r})"
    )


def _invoke_json(value: Any) -> Any:
    """Converse's items as Nova's InvokeModel body takes them: it is JSON, so the
    bytes of images and documents are base64 text."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _invoke_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_invoke_json(v) for v in value]
    return value


def invoke_body(model: str, messages: list[Item], **fields: Any) -> Item:
    """The InvokeModel request body of ``messages`` (rendered with ``"bedrock-invoke"``
    and the same ``model``): for Claude, Anthropic Messages with ``anthropic_version``
    ``"bedrock-2023-05-31"``; for Nova, its ``messages-v1`` schema. ``fields`` are the
    body's other members in the model's own names (``max_tokens``, ``system``,
    ``tools`` for Claude; ``system``, ``inferenceConfig``, ``toolConfig`` for Nova)."""
    if _invoke_target(model) == "anthropic":
        return {"anthropic_version": _ANTHROPIC_VERSION, **fields, "messages": messages}
    return {"schemaVersion": "messages-v1", **fields, "messages": messages}


# --------------------------------------------------------------------- ids


@dataclass(frozen=True)
class IdRule:
    """What a target accepts as a tool-call id: ``pattern`` (matched whole) and at most
    ``max_length`` characters (``None``: no bound). An id it refuses is replaced by
    ``prefix`` and ``length`` base-62 characters of the SHA-256 of the id: the same id
    gives the same replacement every time, in the call and in its result."""

    name: str
    pattern: str = r".+"
    max_length: int | None = None
    prefix: str = ""
    length: int = 24

    def accepts(self, call_id: str) -> bool:
        """Whether the target takes ``call_id`` as it is."""
        if self.max_length is not None and len(call_id) > self.max_length:
            return False
        return re.fullmatch(self.pattern, call_id, flags=re.ASCII) is not None

    def mint(self, call_id: str, attempt: int = 0) -> str:
        """The replacement of ``call_id`` (another one for each ``attempt``)."""
        import hashlib  # here: loading OpenSSL costs every process that imports toolstitch

        salt = f"{attempt}:" if attempt else ""
        digest = hashlib.sha256((salt + call_id).encode("utf-8", "surrogatepass")).digest()
        number = int.from_bytes(digest, "big")
        digits = []
        for _ in range(self.length):
            number, digit = divmod(number, 62)
            digits.append(_BASE62[digit])
        return self.prefix + "".join(digits)


_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

ID_RULES: dict[str, IdRule] = {
    # Any text up to 40 characters: longer ids are refused ("string too long. Expected a
    # string with maximum length 40").
    "openai-chat": IdRule("openai-chat", r".+", 40, "call_", 24),
    "openai-responses": IdRule("openai-responses", r".+", 64, "call_", 24),
    # The Messages API: tool_use.id must match ^[a-zA-Z0-9_-]+$.
    "anthropic": IdRule("anthropic", r"[A-Za-z0-9_-]+", None, "toolu_", 24),
    # Converse ToolUseBlock.toolUseId: [a-zA-Z0-9_-]+, 1 to 64 characters.
    "bedrock": IdRule("bedrock", r"[A-Za-z0-9_-]+", 64, "tooluse_", 22),
    # functionCall.id and the Cohere v2 tool call id: any string.
    "gemini": IdRule("gemini", r"(?s:.*)"),
    "cohere": IdRule("cohere", r"(?s:.*)"),
    # Ollama's native chat: calls are matched to results by order and tool name.
    "ollama": IdRule("ollama", r"(?s:.*)"),
    # The Interactions API's function_call.id / function_result.call_id: any string.
    "gemini-interactions": IdRule("gemini-interactions", r"(?s:.*)"),
    # Mistral (an openai-chat server): exactly 9 letters and digits.
    "mistral": IdRule("mistral", r"[A-Za-z0-9]{9}", 9, "", 9),
    # Ids sent exactly as they are, whatever the target.
    "as-is": IdRule("as-is", r"(?s:.*)"),
}
"""The id rules by name: each dialect's own (the default target rule) and
``"mistral"``, ``"as-is"``. docs/tool-loop.md gives the source of each."""


class IdMap:
    """The call ids of one conversation mapped to what a target accepts, and back.

    Pass the same ``IdMap`` as ``ids=`` to every render of the conversation: it applies
    ``rule`` (a name of ``ID_RULES``, an ``IdRule``, or ``None`` for each target's own
    rule), keeps each replacement it made, never gives two ids the same replacement,
    and answers ``original(mapped)`` for ids that come back (a result, a log line).
    """

    __slots__ = ("_back", "_forward", "rule")

    def __init__(self, rule: IdRule | str | None = None) -> None:
        self.rule = _rule(rule) if rule is not None else None
        self._forward: dict[tuple[str, str], str] = {}
        self._back: dict[str, str] = {}

    def map(self, call_id: str, rule: IdRule) -> str:
        """``call_id`` as ``rule`` takes it (itself when it already does)."""
        key = (rule.name, call_id)
        known = self._forward.get(key)
        if known is not None:
            return known
        mapped = call_id if not call_id or rule.accepts(call_id) else rule.mint(call_id)
        attempt = 0
        while self._back.get(mapped, call_id) != call_id:  # taken by another id
            attempt += 1
            mapped = rule.mint(call_id, attempt)
        self._forward[key] = mapped
        self._back[mapped] = call_id
        return mapped

    def original(self, mapped: str) -> str:
        """The id that ``mapped`` stands for (``KeyError`` when this map never made it)."""
        return self._back[mapped]

    def items(self) -> list[tuple[str, str]]:
        """Every (original, mapped) pair this map has made, in order."""
        return [(original, mapped) for (_, original), mapped in self._forward.items()]

    def __repr__(self) -> str:
        rule = self.rule.name if self.rule is not None else "per target"
        return f"IdMap({rule!r}, {len(self._forward)} ids)"


def _rule(rule: IdRule | str) -> IdRule:
    if isinstance(rule, IdRule):
        return rule
    found = ID_RULES.get(rule)
    if found is None:
        raise RenderError(
            f"unknown id rule {rule!r}: one of {', '.join(repr(n) for n in ID_RULES)}, or an IdRule"
        )
    return found


def _source(message: Any, source: str | None) -> str | None:
    """The dialect a turn came from: ``source``, else an ``AssembledMessage``'s own."""
    if source is not None:
        if source not in PROVIDERS:
            raise RenderError(
                f"unknown source dialect {source!r}: one of {', '.join(map(repr, PROVIDERS))}"
            )
        return source
    dialect = getattr(message, "dialect", None)
    return dialect if isinstance(dialect, str) else None


def _id_policy(
    provider: str, ids: IdMap | IdRule | str | None, source: str | None
) -> tuple[IdRule, IdMap | None]:
    # Q55: a server reads its own ids back (Kimi K2's `functions.get_weather:0`, vLLM's
    # 46-character ids); only a rule the caller names rewrites them in their own dialect.
    own = ID_RULES["as-is"] if source == provider else ID_RULES[provider]
    if isinstance(ids, IdMap):
        return (ids.rule or own), ids
    if ids is None:
        return own, None
    return _rule(ids), None


def _is_call(b: Any) -> TypeGuard[ToolUseBlock]:
    return isinstance(b, ToolUseBlock) and bool(b.id)


def _distinct(pairs: list[tuple[str, str]], rule: IdRule) -> None:
    """Refuses two ids that ``rule``, applied without a map, sends as one."""
    seen: dict[str, str] = {}
    for original, wire in pairs:
        other = seen.setdefault(wire, original)
        if other != original:
            raise RenderError(
                f"ids={rule.name!r} would send calls {other!r} and {original!r} with one id "
                f"{wire!r}: their results could not be told apart. Pass "
                f"ids=IdMap({rule.name!r}) (or one IdMap for the conversation), which "
                f"keeps every call's id distinct"
            )


def _map_id(call_id: str, rule: IdRule, record: IdMap | None) -> str:
    if record is not None:
        return record.map(call_id, rule)
    if not call_id or rule.accepts(call_id):
        return call_id
    return rule.mint(call_id)


def _with_mapped_ids(b: Block, rule: IdRule, record: IdMap | None) -> Block:
    if isinstance(b, ToolUseBlock) and b.id:
        mapped = _map_id(b.id, rule, record)
        return b if mapped == b.id else dataclasses.replace(b, id=mapped)
    if isinstance(b, ToolResultBlock) and b.tool_use_id:
        mapped = _map_id(b.tool_use_id, rule, record)
        return b if mapped == b.tool_use_id else dataclasses.replace(b, tool_use_id=mapped)
    return b


# ----------------------------------------------------- what can travel where

# The provider-state formats each target takes back (the formats the assembler gives
# blocks of that dialect). State of any other format comes from another dialect.
_TAKES: dict[str, frozenset[str]] = {
    "openai-chat": frozenset({"openai-chat"}),
    "openai-responses": frozenset({"openai-responses", "openai-responses-item"}),
    "anthropic": frozenset({"anthropic", "anthropic-redacted"}),
    "bedrock": frozenset({"bedrock", "bedrock-redacted"}),
    "gemini": frozenset({"gemini"}),
    "cohere": frozenset(),
    "ollama": frozenset(),
    "gemini-interactions": frozenset({"gemini-interactions"}),
}


def _portable(provider: str, blocks: list[Block], notes: list[str] | None) -> list[Block]:
    """``blocks`` without what cannot travel to ``provider``: a call the provider of
    another dialect ran itself and that call's result (the target cannot run them,
    and refuses their blocks). Provider state of another dialect on a block that does
    travel is ignored by the renderers; either way, ``notes`` says what was left out."""
    takes = _TAKES[provider]

    def note(text: str) -> None:
        if notes is not None:
            notes.append(text)

    foreign_calls: set[str] = set()
    out: list[Block] = []
    for b in blocks:
        fmt = getattr(b, "provider_state_format", "")
        foreign = bool(getattr(b, "provider_state", None)) and fmt not in takes
        if isinstance(b, ToolUseBlock) and b.kind == "executable_code" and provider != "gemini":
            fmt, foreign = "gemini", True  # Gemini's code execution carries no state
        if isinstance(b, ToolUseBlock) and b.server_side and foreign:
            foreign_calls.add(b.id)
            note(
                f"call {b.id!r} ({b.name}, {b.kind}) ran on the {fmt} provider's side: "
                f"left out, with its result ({provider} cannot take it)"
            )
            continue
        if isinstance(b, ToolResultBlock) and (b.tool_use_id in foreign_calls or foreign):
            if b.tool_use_id not in foreign_calls:
                note(f"the {fmt} result of hosted call {b.tool_use_id!r}: left out")
            continue
        if isinstance(b, ToolUseBlock) and b.server_side and provider in ("openai-chat", "cohere"):
            note(f"call {b.id!r} ({b.name}) ran on the provider's side: {provider} has no form")
        elif foreign:
            what = f"call {b.id!r}" if isinstance(b, ToolUseBlock) else type(b).__name__
            note(f"the provider state of {what} (format {fmt!r}) does not travel to {provider}")
        if isinstance(b, ThinkingBlock):
            _note_thinking(provider, b, note)
        out.append(b)
    return out


def _note_thinking(provider: str, b: ThinkingBlock, note: Any) -> None:
    own = {
        "anthropic": "anthropic",
        "bedrock": "bedrock",
        "gemini": "gemini",
        "gemini-interactions": "gemini-interactions",
    }.get(provider)
    signed = bool(b.signature)
    if provider == "openai-chat" and (b.thinking or signed):
        note("reasoning left out: openai-chat takes none back")
    elif provider == "openai-responses" and not _responses_item_id(_state(b, "openai-responses")):
        note("reasoning left out: the Responses API takes it back only with its item id")
    elif provider in ("anthropic", "bedrock"):
        redacted = _state(b, f"{provider}-redacted")
        if redacted is None and not (signed and b.signature_format in (own, "")):
            note(f"reasoning left out: {provider} takes back only thinking it signed")
    elif (
        provider in ("gemini", "gemini-interactions", "cohere")
        and signed
        and b.signature_format not in (own, "")
    ):
        note(
            f"the {b.signature_format} signature of a reasoning block does not travel to {provider}"
        )


# ----------------------------------------------------------------- inputs


def _check(provider: str) -> None:
    if provider not in PROVIDERS:
        raise RenderError(
            f"unknown provider {provider!r}: one of {', '.join(repr(p) for p in PROVIDERS)}"
        )


def _blocks(message: Any) -> list[Block]:
    blocks = getattr(message, "blocks", message)
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Iterable):
        raise TypeError(
            f"expected a message or an iterable of blocks, not {type(message).__name__}"
        )
    return list(blocks)


def _results(results: Iterable[Any] | Result | Message) -> list[Result]:
    out: list[Result] = []
    if isinstance(results, (ToolResultBlock, ToolResultMessage, Message)):
        results = [results]
    for r in results:
        if isinstance(r, (ToolResultBlock, ToolResultMessage)):
            out.append(r)
        elif isinstance(r, Message):
            out.extend(_results(r.blocks))
        else:
            raise TypeError(
                f"expected ToolResultBlock or ToolResultMessage, not {type(r).__name__}"
            )
    return out


def _approvals(
    results: Iterable[Any] | Result | Message | ApprovalResponse,
) -> tuple[list[Any], list[ApprovalResponse]]:
    """The results apart from the approval responses among them."""
    if isinstance(results, ApprovalResponse):
        return [], [results]
    if isinstance(results, (ToolResultBlock, ToolResultMessage, Message)):
        return [results], []
    items = list(results)
    approvals = [r for r in items if isinstance(r, ApprovalResponse)]
    return [r for r in items if not isinstance(r, ApprovalResponse)], approvals


def _approval_items(approvals: list[ApprovalResponse], calls: Any) -> list[Item]:
    """``mcp_approval_response`` items; with ``calls``, each answers one of its requests."""
    if calls is not None:
        requests = getattr(calls, "approval_requests", None)
        if requests is None:
            from toolstitch._toolstitch import APPROVAL_KINDS

            requests = [
                b
                for b in _blocks(calls)
                if isinstance(b, ToolUseBlock) and b.kind in APPROVAL_KINDS
            ]
        known = {r.id for r in requests}
        seen: set[str] = set()
        for a in approvals:
            if a.approval_request_id not in known:
                listed = ", ".join(repr(i) for i in sorted(known)) or "none"
                raise ToolResultError(
                    f"an approval response for {a.approval_request_id!r}, which is not an "
                    f"approval request of this turn (requests: {listed})"
                )
            if a.approval_request_id in seen:
                raise ToolResultError(
                    f"two approval responses for request {a.approval_request_id!r}"
                )
            seen.add(a.approval_request_id)
    out: list[Item] = []
    for a in approvals:
        item: Item = {
            "type": "mcp_approval_response",
            "approval_request_id": a.approval_request_id,
            "approve": a.approve,
        }
        if a.reason is not None:
            item["reason"] = a.reason
        out.append(item)
    return out


def _client_calls(calls: Any) -> list[Any]:
    """The calls of the turn being answered that the client runs (not server-side)."""
    tool_uses = getattr(calls, "tool_uses", None)
    blocks: list[Any] = list(tool_uses) if tool_uses is not None else _blocks(calls)
    return [
        b
        for b in blocks
        if (isinstance(b, ToolUseBlock) or (hasattr(b, "arguments") and hasattr(b, "id")))
        and not getattr(b, "server_side", False)
    ]


def _tool_names(calls: Any) -> dict[str, str]:
    """Call id -> tool name for the client calls of the turn being answered."""
    names: dict[str, str] = {}
    for b in _client_calls(calls):
        if not b.id:
            raise ToolResultError(
                f"the call of {b.name!r} has no id: results are tied to calls by id"
            )
        names[b.id] = b.name
    return names


def _tool_kinds(calls: Any) -> dict[str, str]:
    """Call id -> the call's kind (``"function"``, ``"custom_tool_call"``, ...)."""
    return {b.id: getattr(b, "kind", "function") for b in _client_calls(calls)}


def _correlate(results: list[Result], names: dict[str, str]) -> list[Result]:
    by_id: dict[str, Result] = {}
    for r in results:
        if r.tool_use_id not in names:
            known = ", ".join(repr(i) for i in names) or "none"
            raise ToolResultError(
                f"a result for call {r.tool_use_id!r}, which is not a call of this turn "
                f"(calls: {known})"
            )
        if r.tool_use_id in by_id:
            raise ToolResultError(f"two results for call {r.tool_use_id!r}")
        by_id[r.tool_use_id] = r
    missing = [i for i in names if i not in by_id]
    if missing:
        raise ToolResultError(
            f"no result for call{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(i) for i in missing)}: every call of the turn needs one "
            f"(send an error result, is_error=True, for a call you refuse to run)"
        )
    return [by_id[i] for i in names]


def _content(r: Result) -> tuple[Block, ...]:
    return r.content if isinstance(r, ToolResultBlock) else r.blocks


INVALID_JSON = "INVALID_JSON"
"""The key under which a call's input that is not a JSON object goes back to a dialect
that takes the input as an object (Anthropic, Bedrock, Gemini): ``{"INVALID_JSON":
"<the text>"}``, the form Anthropic documents for fine-grained tool streaming."""


def _arguments(b: ToolUseBlock) -> Any:
    """The call's input as the object a dialect takes: the strict parse, members in
    order (``{}`` when empty); input that is not one JSON object (cut, repaired by
    nobody, an array, nested past the bound) as ``{"INVALID_JSON": text}``, so that the
    call the model sent can always be answered."""
    try:
        value = _parse_strict(b.input)
    except ToolInputError:
        return {INVALID_JSON: b.input}
    return value if isinstance(value, dict) else {INVALID_JSON: b.input}


def _state(block: ToolUseBlock | ThinkingBlock | ToolResultBlock, form: str) -> Any:
    """The block's provider state when it is of format ``form``, parsed; else ``None``."""
    if not block.provider_state or block.provider_state_format != form:
        return None
    # Bounded before json.loads, whose recursion would otherwise fail deep inside it.
    if _json_depth(block.provider_state) > _WIRE_MAX_DEPTH:
        raise RenderError(
            f"the provider state of a {type(block).__name__} nests deeper than "
            f"{_WIRE_MAX_DEPTH} levels (the wire format's bound)"
        )
    try:
        return json.loads(block.provider_state)
    except ValueError:
        return block.provider_state


def _unsupported(provider: str, block: Any, where: str) -> RenderError:
    return RenderError(f"{provider} cannot carry a {type(block).__name__} in {where}")


def _text_of(r: Result, provider: str) -> str:
    parts: list[str] = []
    for b in _content(r):
        if not isinstance(b, TextBlock):
            raise _unsupported(provider, b, f"the result of call {r.tool_use_id!r}")
        parts.append(b.text)
    return "".join(parts)


def _data_url(b: ImageBlock | DocumentBlock | AudioBlock) -> str:
    return b.url or f"data:{b.media_type};base64,{b.data}"


# ------------------------------------------------------------ openai-chat


def _chat_assistant(blocks: list[Block]) -> Item:
    text: list[str] = []
    refusal: list[str] = []
    calls: list[Item] = []
    for b in blocks:
        if isinstance(b, TextBlock):
            text.append(b.text)
        elif isinstance(b, RefusalBlock):
            refusal.append(b.text)
        elif isinstance(b, ToolUseBlock) and b.server_side:
            continue  # Chat Completions has no form for a hosted tool's call
        elif isinstance(b, ToolUseBlock) and b.kind == "custom_tool_call":
            calls.append(
                {"id": b.id, "type": "custom", "custom": {"name": b.name, "input": b.input}}
            )
        elif isinstance(b, ToolUseBlock):
            if b.kind != "function":
                raise RenderError(
                    f"openai-chat cannot carry call {b.id!r} of kind {b.kind!r}: only function "
                    f"and custom tool calls"
                )
            call: Item = {
                "id": b.id,
                "type": "function",
                "function": {"name": b.name, "arguments": b.input or "{}"},
            }
            # Gemini's compatible endpoint needs its thought signature back (Q37).
            extra = _state(b, "openai-chat")
            if isinstance(extra, dict):
                call["extra_content"] = extra
            calls.append(call)
        elif isinstance(b, ToolResultBlock) and b.kind:
            continue  # the result of a hosted tool: no form in Chat Completions either
        elif not isinstance(b, ThinkingBlock):
            raise _unsupported("openai-chat", b, "an assistant message")
    joined = "".join(text)
    out: Item = {"role": "assistant", "content": joined if joined or not calls else None}
    if refusal:
        out["refusal"] = "".join(refusal)
    if calls:
        out["tool_calls"] = calls
    return out


def _chat_text(r: Result) -> str:
    return _text_of(r, "openai-chat")


# ------------------------------------------------------- openai-responses


def _responses_assistant(blocks: list[Block]) -> list[Item]:
    items: list[Item] = []
    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            if b.text:
                items.append({"type": "message", "role": "assistant", "content": b.text})
        elif isinstance(b, ThinkingBlock):
            reasoning = _responses_reasoning(b)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(b, ToolUseBlock):
            whole = _state(b, "openai-responses-item")
            if isinstance(whole, dict):
                # A built-in tool's item, or a client tool that is not a function:
                # back as it came (its result fields are merged in below).
                items.append(dict(whole))
                continue
            item: Item
            if b.kind == "custom_tool_call":
                item = {
                    "type": "custom_tool_call",
                    "call_id": b.id,
                    "name": b.name,
                    "input": b.input,
                }
            elif b.kind == "function":
                item = {
                    "type": "function_call",
                    "call_id": b.id,
                    "name": b.name,
                    "arguments": b.input or "{}",
                }
            else:
                raise RenderError(
                    f"openai-responses cannot render call {b.id!r} of kind {b.kind!r} "
                    f"without the item it came in (its provider state)"
                )
            item_id = _responses_item_id(_state(b, "openai-responses"))
            if item_id:
                item["id"] = item_id
            items.append(item)
        elif isinstance(b, ToolResultBlock) and b.provider_state_format == "openai-responses":
            fields = _state(b, "openai-responses")
            target = next(
                (i for i in reversed(items) if b.tool_use_id in (i.get("call_id"), i.get("id"))),
                None,
            )
            if target is None or not isinstance(fields, dict):
                raise RenderError(
                    f"the result of hosted call {b.tool_use_id!r} has no item before it"
                )
            target.update(fields)
        else:
            raise _unsupported("openai-responses", b, "the assistant turn")
    return items


_RESPONSES_OUTPUTS = {
    "function": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}


def _responses_result(r: Result, kind: str) -> Item:
    """The output item answering a call of ``kind`` (``function_call_output`` for a
    function call, ``custom_tool_call_output`` for a custom tool, ...)."""
    output_type = _RESPONSES_OUTPUTS.get(kind)
    if output_type is None:
        raise RenderError(
            f"openai-responses has no output item for a call of kind {kind!r} "
            f"(call {r.tool_use_id!r})"
        )
    if kind == "computer_call":
        images = [b for b in _content(r) if isinstance(b, ImageBlock)]
        if len(images) != 1:
            raise RenderError(
                f"the result of computer call {r.tool_use_id!r} must be one screenshot "
                f"(an ImageBlock)"
            )
        return {
            "type": output_type,
            "call_id": r.tool_use_id,
            "output": {"type": "computer_screenshot", "image_url": _data_url(images[0])},
        }
    return {"type": output_type, "call_id": r.tool_use_id, "output": _responses_output(r)}


def _responses_item_id(state: Any) -> str | None:
    if isinstance(state, str):
        return state
    if isinstance(state, dict):
        value = state.get("id", state.get("item_id"))
        return value if isinstance(value, str) else None
    return None


def _responses_reasoning(b: ThinkingBlock) -> Item | None:
    """A reasoning item, when the block carries the item's id (its provider state);
    else nothing: the Responses API cannot take reasoning back without it."""
    item_id = _responses_item_id(_state(b, "openai-responses"))
    if not item_id:
        return None
    item: Item = {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": b.thinking}] if b.thinking else [],
    }
    if b.signature and b.signature_format == "openai-responses":
        item["encrypted_content"] = b.signature
    return item


def _responses_output(r: Result) -> str | list[Item]:
    content = _content(r)
    if all(isinstance(b, TextBlock) for b in content):
        return "".join(b.text for b in content if isinstance(b, TextBlock))
    parts: list[Item] = []
    for b in content:
        if isinstance(b, TextBlock):
            parts.append({"type": "input_text", "text": b.text})
        elif isinstance(b, ImageBlock):
            parts.append({"type": "input_image", "image_url": _data_url(b)})
        elif isinstance(b, DocumentBlock):
            part: Item = {"type": "input_file"}
            if b.url:
                part["file_url"] = b.url
            else:
                part["file_data"] = _data_url(b)
            if b.title:
                part["filename"] = b.title
            parts.append(part)
        else:
            raise _unsupported("openai-responses", b, f"the result of call {r.tool_use_id!r}")
    return parts


# -------------------------------------------------------------- anthropic


def _anthropic_assistant(blocks: list[Block]) -> list[Item]:
    content: list[Item] = []
    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            if b.text:  # the API refuses empty text blocks
                content.append({"type": "text", "text": b.text})
        elif isinstance(b, ThinkingBlock):
            redacted = _state(b, "anthropic-redacted")
            if isinstance(redacted, str):
                content.append({"type": "redacted_thinking", "data": redacted})
            elif b.signature and b.signature_format in ("anthropic", ""):
                content.append(
                    {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
                )
        elif isinstance(b, ToolUseBlock):
            start = _state(b, "anthropic")
            if b.server_side and isinstance(start, dict):
                # A server tool's call, as its start block came (the MCP server name ...).
                content.append({**start, "id": b.id, "name": b.name, "input": _arguments(b)})
            elif b.server_side:
                content.append({"type": b.kind, "id": b.id, "name": b.name, "input": _arguments(b)})
            else:
                content.append(
                    {"type": "tool_use", "id": b.id, "name": b.name, "input": _arguments(b)}
                )
        elif isinstance(b, ToolResultBlock) and b.provider_state_format == "anthropic":
            raw = _state(b, "anthropic")
            if not isinstance(raw, dict):
                raise RenderError(f"the result of server call {b.tool_use_id!r} is not an object")
            content.append(raw)
        else:
            raise _unsupported("anthropic", b, "an assistant message")
    return content


def _anthropic_media(b: ImageBlock | DocumentBlock, kind: str) -> Item:
    if b.url:
        source: Item = {"type": "url", "url": b.url}
    elif kind == "document" and b.media_type == "text/plain":
        source = {"type": "text", "media_type": "text/plain", "data": b.data}
    else:
        source = {"type": "base64", "media_type": b.media_type, "data": b.data}
    out: Item = {"type": kind, "source": source}
    if isinstance(b, DocumentBlock) and b.title:
        out["title"] = b.title
    return out


def _anthropic_result(r: Result) -> Item:
    content: list[Item] = []
    for b in _content(r):
        if isinstance(b, TextBlock):
            if b.text:
                content.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            content.append(_anthropic_media(b, "image"))
        elif isinstance(b, DocumentBlock):
            content.append(_anthropic_media(b, "document"))
        else:
            raise _unsupported("anthropic", b, f"the result of call {r.tool_use_id!r}")
    out: Item = {"type": "tool_result", "tool_use_id": r.tool_use_id}
    if len(content) == 1 and content[0]["type"] == "text":
        out["content"] = content[0]["text"]
    elif content:
        out["content"] = content
    out["is_error"] = r.is_error
    return out


# ---------------------------------------------------------------- bedrock


def _bedrock_assistant(blocks: list[Block]) -> list[Item]:
    content: list[Item] = []
    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            if b.text:
                content.append({"text": b.text})
        elif isinstance(b, ThinkingBlock):
            redacted = _state(b, "bedrock-redacted")
            if isinstance(redacted, str):
                content.append({"reasoningContent": {"redactedContent": _bedrock_blob(redacted)}})
            elif b.signature and b.signature_format in ("bedrock", ""):
                content.append(
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": b.thinking, "signature": b.signature}
                        }
                    }
                )
        elif isinstance(b, ToolUseBlock):
            use: Item = {"toolUseId": b.id, "name": b.name, "input": _arguments(b)}
            if b.server_side:
                use["type"] = b.kind
            content.append({"toolUse": use})
        elif isinstance(b, ToolResultBlock) and b.provider_state_format == "bedrock":
            start = _state(b, "bedrock")
            result: Item = dict(start) if isinstance(start, dict) else {}
            result["toolUseId"] = b.tool_use_id
            result["content"] = [{"text": t.text} for t in b.content if isinstance(t, TextBlock)]
            content.append({"toolResult": result})
        else:
            raise _unsupported("bedrock", b, "an assistant message")
    return content


def _bedrock_blob(data: str) -> bytes:
    """A blob the stream carried as base64, as the bytes boto3 takes."""
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        return data.encode()


def _bedrock_format(media_type: str) -> str:
    subtype = media_type.partition("/")[2].lower()
    return {"jpg": "jpeg", "plain": "txt", "markdown": "md"}.get(subtype, subtype)


def _bedrock_bytes(b: ImageBlock | DocumentBlock, r: Result) -> bytes:
    if b.url or not b.data:
        raise RenderError(
            f"bedrock needs the bytes of a {type(b).__name__} (not a URL) in the result "
            f"of call {r.tool_use_id!r}"
        )
    try:
        return base64.b64decode(b.data, validate=True)
    except ValueError:
        raise RenderError(
            f"the {type(b).__name__} data in the result of call {r.tool_use_id!r} is not base64"
        ) from None


def _bedrock_result(r: Result) -> Item:
    content: list[Item] = []
    for b in _content(r):
        if isinstance(b, TextBlock):
            content.append({"text": b.text})
        elif isinstance(b, ImageBlock):
            image = {
                "format": _bedrock_format(b.media_type),
                "source": {"bytes": _bedrock_bytes(b, r)},
            }
            content.append({"image": image})
        elif isinstance(b, DocumentBlock):
            document = {
                "format": _bedrock_format(b.media_type),
                "name": b.title or "document",
                "source": {"bytes": _bedrock_bytes(b, r)},
            }
            content.append({"document": document})
        else:
            raise _unsupported("bedrock", b, f"the result of call {r.tool_use_id!r}")
    result: Item = {"toolUseId": r.tool_use_id, "content": content}
    if r.is_error:
        result["status"] = "error"
    return {"toolResult": result}


# ----------------------------------------------------------------- gemini


def _gemini_signature(part: Item, block: ToolUseBlock | ThinkingBlock) -> Item:
    state = _state(block, "gemini")
    if isinstance(state, dict):
        part.update(state)
    elif isinstance(state, str):
        part["thoughtSignature"] = state
    elif (
        isinstance(block, ThinkingBlock)
        and block.signature
        and block.signature_format in ("gemini", "")
    ):
        part["thoughtSignature"] = block.signature
    return part


def _gemini_assistant(blocks: list[Block]) -> list[Item]:
    parts: list[Item] = []
    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            if b.text:
                parts.append({"text": b.text})
        elif isinstance(b, ThinkingBlock):
            # A signature Gemini sent on a part with no thought text comes back the
            # way it came: an empty text part carrying it.
            part: Item = {"text": b.thinking, "thought": True} if b.thinking else {"text": ""}
            part = _gemini_signature(part, b)
            if b.thinking or "thoughtSignature" in part:
                parts.append(part)
        elif isinstance(b, ToolUseBlock) and b.kind == "executable_code":
            parts.append(_gemini_signature({"executableCode": _arguments(b)}, b))
        elif isinstance(b, ToolUseBlock):
            call: Item = {"name": b.name, "args": _arguments(b)}
            if b.id:
                call["id"] = b.id
            parts.append(_gemini_signature({"functionCall": call}, b))
        elif isinstance(b, ToolResultBlock) and b.provider_state_format == "gemini":
            parts.append({"codeExecutionResult": _state(b, "gemini")})
        else:
            raise _unsupported("gemini", b, "a model turn")
    return parts


def _gemini_result(r: Result, names: dict[str, str]) -> Item:
    text = _text_of(r, "gemini")
    response = {"error": text} if r.is_error else {"output": text}
    return {
        "functionResponse": {
            "id": r.tool_use_id,
            "name": names[r.tool_use_id],
            "response": response,
        }
    }


# ----------------------------------------------------------------- cohere


def _cohere_assistant(blocks: list[Block]) -> Item:
    """A Cohere v2 assistant message: ``content`` text parts, ``tool_plan`` (the
    reasoning that came before the calls, which the stream gives as unsigned thinking)
    and ``tool_calls`` with the raw input text as ``arguments``."""
    content: list[Item] = []
    plan: list[str] = []
    calls: list[Item] = []
    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            if b.text:
                content.append({"type": "text", "text": b.text})
        elif isinstance(b, ThinkingBlock):
            if b.thinking and (not b.signature or b.signature_format in ("cohere", "")):
                plan.append(b.thinking)
        elif isinstance(b, ToolUseBlock) and b.server_side:
            continue  # Cohere has no form for a call another provider ran itself
        elif isinstance(b, ToolUseBlock):
            calls.append(
                {
                    "id": b.id,
                    "type": "function",
                    "function": {"name": b.name, "arguments": b.input or "{}"},
                }
            )
        elif isinstance(b, ToolResultBlock) and b.kind:
            continue  # a hosted call's result: no form either
        else:
            raise _unsupported("cohere", b, "an assistant message")
    out: Item = {"role": "assistant"}
    if calls and plan:
        out["tool_plan"] = "".join(plan)
    if content:
        out["content"] = content
    if calls:
        out["tool_calls"] = calls
    return out


def _cohere_result(r: Result) -> Item:
    """A Cohere v2 tool message; Cohere has no error flag (the text says it)."""
    return {"role": "tool", "tool_call_id": r.tool_use_id, "content": _text_of(r, "cohere")}


# ----------------------------------------------------------------- ollama


def _ollama_assistant(blocks: list[Block]) -> Item:
    """An Ollama ``/api/chat`` assistant message: ``content``, ``thinking`` (unsigned
    reasoning), and ``tool_calls`` whose ``arguments`` is the object (input that is not
    one JSON object as ``{"INVALID_JSON": text}``)."""
    text: list[str] = []
    thinking: list[str] = []
    calls: list[Item] = []
    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            text.append(b.text)
        elif isinstance(b, ThinkingBlock):
            if b.thinking and not b.signature:
                thinking.append(b.thinking)
        elif isinstance(b, ToolUseBlock) and b.server_side:
            continue  # Ollama has no form for a call another provider ran itself
        elif isinstance(b, ToolUseBlock):
            calls.append({"function": {"name": b.name, "arguments": _arguments(b)}})
        elif isinstance(b, ToolResultBlock) and b.kind:
            continue  # a hosted call's result: no form either
        else:
            raise _unsupported("ollama", b, "an assistant message")
    out: Item = {"role": "assistant", "content": "".join(text)}
    if thinking:
        out["thinking"] = "".join(thinking)
    if calls:
        out["tool_calls"] = calls
    return out


def _ollama_result(r: Result, names: dict[str, str] | None) -> Item:
    """An Ollama tool message; ``tool_name`` when the calls are known (``calls=``)."""
    out: Item = {"role": "tool", "content": _text_of(r, "ollama")}
    if names is not None and r.tool_use_id in names:
        out["tool_name"] = names[r.tool_use_id]
    return out


# ---------------------------------------------------- gemini-interactions

# The built-in tools' call steps (the provider runs them) and their result steps.
_INTERACTIONS_SERVER_STEPS = frozenset(
    {
        "google_search_call",
        "code_execution_call",
        "url_context_call",
        "file_search_call",
        "google_maps_call",
        "mcp_server_tool_call",
    }
)


def _interactions_signed(step: Item, block: ToolUseBlock) -> Item:
    """The step with the call's own signature, when it carries one."""
    state = _state(block, "gemini-interactions")
    if isinstance(state, str) and state:
        step["signature"] = state
    return step


def _interactions_steps(blocks: list[Block]) -> list[Item]:
    """The model's turn as Interactions API steps, in stream order: ``thought`` (its
    signature and summary), ``model_output`` (consecutive text in one step),
    ``function_call`` (the arguments object, the call's signature), and the built-in
    tools' call and result steps as they came."""
    steps: list[Item] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            steps.append(
                {"type": "model_output", "content": [{"type": "text", "text": "".join(text)}]}
            )
            text.clear()

    for b in blocks:
        if isinstance(b, (TextBlock, RefusalBlock)):
            if b.text:
                text.append(b.text)
            continue
        flush()
        if isinstance(b, ThinkingBlock):
            thought: Item = {"type": "thought"}
            if b.signature and b.signature_format in ("gemini-interactions", ""):
                thought["signature"] = b.signature
            if b.thinking:
                thought["summary"] = [{"type": "text", "text": b.thinking}]
            if len(thought) > 1:
                steps.append(thought)
        elif isinstance(b, ToolUseBlock) and b.kind in _INTERACTIONS_SERVER_STEPS:
            step: Item = {"type": b.kind, "id": b.id, "arguments": _arguments(b)}
            if b.kind == "mcp_server_tool_call":
                step["name"] = b.name
            steps.append(_interactions_signed(step, b))
        elif isinstance(b, ToolUseBlock) and b.server_side:
            continue  # no step for a call another provider ran itself
        elif isinstance(b, ToolUseBlock) and b.kind == "function":
            call: Item = {"type": "function_call", "id": b.id, "name": b.name}
            call["arguments"] = _arguments(b)
            steps.append(_interactions_signed(call, b))
        elif isinstance(b, ToolResultBlock) and b.kind.endswith("_result"):
            result: Item = {"type": b.kind, "call_id": b.tool_use_id}
            result["result"] = _state(b, "gemini-interactions")
            if b.is_error:
                result["is_error"] = True
            steps.append(result)
        else:
            raise _unsupported("gemini-interactions", b, "a model turn")
    flush()
    return steps


def _interactions_result(r: Result, names: dict[str, str] | None) -> Item:
    """A ``function_result`` content block: its text as ``result`` (text and images as
    a list of content blocks), ``name`` when the calls are known (``calls=``)."""
    out: Item = {"type": "function_result", "call_id": r.tool_use_id}
    if names is not None and r.tool_use_id in names:
        out["name"] = names[r.tool_use_id]
    parts: list[Item] = []
    for b in _content(r):
        if isinstance(b, TextBlock):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            image: Item = {"type": "image"}
            if b.url:
                image["uri"] = b.url
            else:
                image["data"] = b.data
            if b.media_type:
                image["mime_type"] = b.media_type
            parts.append(image)
        else:
            raise _unsupported("gemini-interactions", b, f"the result of call {r.tool_use_id!r}")
    if all(p["type"] == "text" for p in parts):
        out["result"] = "".join(p["text"] for p in parts)
    else:
        out["result"] = parts
    if r.is_error:
        out["is_error"] = True
    return out
