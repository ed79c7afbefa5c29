"""What an ``Assembler`` takes and gives: the dialect names, the limits, the live
events, and the finished ``AssembledMessage`` with its problems, notes and token counts.

These are the types the Rust core builds its results from; the module imports nothing
of the core, so the core's stubs, the ``Assembler`` and every application can name them.
``toolstitch.assemble`` (the old home of these names) re-exports them next to the
``Assembler``.

Each ``feed`` of an ``Assembler`` returns the live events it caused (``ToolCallStarted``,
``ToolInputDelta``, ``ToolCallFinished``, ``TextDelta``, ``ThinkingDelta``,
``RefusalDelta``, ``MessageDone``) for interfaces that render as the stream goes: a lazy
``LiveEvents`` sequence whose objects are built only when it is read (``()`` when
nothing changed), so callers that ignore it pay for no objects. A message is
``complete`` only after the provider's explicit end with a normal reason.

Execute a call only when its message is ``complete`` and the call validates:
``message.validated(toolset)`` does both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, TypedDict

from toolstitch.blocks import Block, Message, ToolUseBlock
from toolstitch.calls import ValidatedCall
from toolstitch.errors import IncompleteMessageError, StreamDecodeError

__all__ = [
    "ApprovalRequest",
    "ApprovalResponse",
    "AssembledMessage",
    "AssemblerLimits",
    "CallValidator",
    "Finish",
    "LiveEvent",
    "MessageDone",
    "Note",
    "Problem",
    "ProblemKind",
    "Provider",
    "RefusalDelta",
    "SkippedEvent",
    "TextDelta",
    "ThinkingDelta",
    "TokenUsage",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolInputDelta",
]


# ------------------------------------------------------------------ what an Assembler takes

Provider: TypeAlias = Literal[
    "auto",
    "openai-chat",
    "openai-responses",
    "anthropic",
    "bedrock",
    "gemini",
    "cohere",
    "ollama",
    "bedrock-invoke",
    "gemini-interactions",
]
"""The names ``Assembler`` takes: a wire dialect, or ``"auto"`` (decided from the first
event that identifies itself)."""


class AssemblerLimits(TypedDict, total=False):
    """The limit keywords of ``Assembler`` (and of ``assemble`` and friends, which pass
    them on). Going over one raises ``LimitError`` naming it. ``split_concatenated`` is
    passed on the same way: an option, not a limit (see ``Assembler``)."""

    max_calls: int
    max_input_bytes: int
    max_total_bytes: int
    max_event_bytes: int
    max_choices: int
    max_line_bytes: int
    max_output_tokens: int | None
    split_concatenated: bool


# ------------------------------------------------------------------ live events


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call opened. ``index`` is toolstitch's own key for the call within its choice
    (0, 1, 2, ... in the order calls opened), not the provider's index. ``id`` is minted
    (``call_<choice>_<index>``) when the provider sent none. Sent a second time, once,
    when a call opened without a name and the name came later (quirk Q7)."""

    choice: int
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolInputDelta:
    """Raw input text appended to a call (concatenate the fragments of one call to get
    its input so far; ``Assembler.partial_calls()`` gives the parsed best-effort value).

    With ``replaces``, ``fragment`` is the call's whole new input in place of every
    fragment before it: the provider restated the input with text that does not extend
    it (a Responses ``.done`` that disagrees with the deltas, Q10 and Q44; ``{}`` then
    the real object, Q41; a Gemini call rebuilt). Start the call's text over from it;
    never append it (``{"a":`` then ``{"b":1}`` would read as one value)."""

    choice: int
    index: int
    fragment: str
    replaces: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """The call's block ended; its input will not change any more."""

    choice: int
    index: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Assistant text appended to the message of ``choice``."""

    choice: int
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """Reasoning text appended to the message of ``choice``."""

    choice: int
    text: str


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """Refusal text appended to the message of ``choice``."""

    choice: int
    text: str


@dataclass(frozen=True, slots=True)
class MessageDone:
    """The message of ``choice`` ended: explicitly (a finish reason, ``message_stop``,
    ``response.completed``, ...) or at ``close()``. ``complete`` is final."""

    choice: int
    finish_reason: str | None
    complete: bool


LiveEvent: TypeAlias = (
    ToolCallStarted
    | ToolInputDelta
    | ToolCallFinished
    | TextDelta
    | ThinkingDelta
    | RefusalDelta
    | MessageDone
)
"""Any of the seven live event classes."""


# ------------------------------------------------------------------ the message


class CallValidator(Protocol):
    """What ``AssembledMessage.validated`` needs of its toolset: ``validate_all``
    (``toolstitch.Toolset`` is one)."""

    def validate_all(self, blocks: Iterable[Any], /) -> list[ValidatedCall]:
        """The validated calls among ``blocks``, or one ``ToolValidationError``."""
        ...


Finish: TypeAlias = Literal["stop", "tool-calls", "length", "content-filter", "error", "other"]
"""Why a message finished, the same words for every dialect (``AssembledMessage.finish``)."""


ProblemKind: TypeAlias = Literal[
    "unnamed",
    "provider",
    "protocol",
    "not-applied",
    "unreadable",
    "sequence",
    "cut",
    "missing-calls",
]
"""What kind of problem keeps a message from being complete (``Problem.kind``)."""


class Problem(str):
    """Why a message or one of its calls cannot be trusted. It is the problem's message
    (``str(problem)``, compared and joined as text), with its fields:

    - ``kind``: ``"protocol"`` (an event broke the dialect's protocol, or an event of
      it was lost), ``"not-applied"`` (an event that could not be applied),
      ``"provider"`` (the provider reported an error), ``"unreadable"`` (bytes that
      could not be framed), ``"sequence"`` (Responses sequence numbers missing or out of
      order), ``"unnamed"`` (a call that never got a name, Q7), ``"cut"`` (the reported
      output tokens reached ``max_output_tokens``, Q46), ``"missing-calls"`` (the
      message ended with a finish that says the client has calls to run, such as
      ``tool_calls``, and holds none, Q65);
    - ``choice``: the choice concerned, or ``None`` for the whole stream;
    - ``call``: the call's key (``ToolCallStarted.index``) when it is one call's;
    - ``call_id``: that call's id (minted when the provider sent none), or ``None``;
    - ``event``: the 1-based ordinal of the event concerned, when there is one;
    - ``message``: the text, the same as ``str(problem)``.
    """

    kind: ProblemKind
    choice: int | None
    call: int | None
    call_id: str | None
    event: int | None

    def __new__(
        cls,
        message: str,
        kind: ProblemKind = "not-applied",
        choice: int | None = None,
        call: int | None = None,
        call_id: str | None = None,
        event: int | None = None,
    ) -> Problem:
        self = super().__new__(cls, message)
        fields = {"kind": kind, "choice": choice, "call": call, "call_id": call_id}
        for name, value in {**fields, "event": event}.items():
            object.__setattr__(self, name, value)
        return self

    @property
    def message(self) -> str:
        return str.__str__(self)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Problem is immutable: cannot set {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Problem,
            (self.message, self.kind, self.choice, self.call, self.call_id, self.event),
        )

    def __repr__(self) -> str:
        return (
            f"Problem({self.message!r}, kind={self.kind!r}, choice={self.choice!r}, "
            f"call={self.call!r}, call_id={self.call_id!r}, event={self.event!r})"
        )


class SkippedEvent(NamedTuple):
    """An event skipped for forward compatibility (quirk Q29): of a type, or carrying an item,
    block, part or delta type, that this version does not read; or resent with a
    ``sequence_number`` already seen (Responses, quirk Q33). ``ordinal`` is the event's
    1-based position in the stream."""

    ordinal: int
    event_type: str


class Note(NamedTuple):
    """What a narrow rule interpreted in a message, and why: a provider's shape that is
    not the documented one but whose meaning is certain (quirks Q36 onward). A note is
    not a problem: the message stays ``complete`` and its calls executable.

    ``kind`` is one of ``"arguments-restated"`` (Q36), ``"empty-arguments-replaced"``
    (Q41), ``"arguments-object"`` (Q42), ``"later-finish-reason-ignored"`` (Q39),
    ``"duplicate-id-renamed"`` (Q38), ``"fragment-rerouted"`` (Q43),
    ``"content-parts"`` (Q49), ``"arguments-done-early"`` and ``"stale-delta-skipped"``
    (Q44), ``"xai-server-tool"`` (Q47), ``"concatenated-split"`` (Q40, with
    ``split_concatenated``), ``"empty-custom-ignored"`` (Q52),
    ``"null-arguments-empty"`` (Q53), ``"after-done-ignored"`` (Q58),
    ``"response-id-rotated"`` and ``"item-id-rotated"`` (Q59) and
    ``"empty-finish-ended"`` (Q63); ``call_id`` is the call concerned (``None`` for the
    message), ``event`` the 1-based ordinal of the event interpreted."""

    kind: str
    choice: int
    call_id: str | None
    event: int
    message: str


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts mapped from the dialect's own usage object; ``None`` where the provider
    did not say. ``cached_input_tokens`` are input tokens read from the provider's prompt
    cache; ``reasoning_tokens`` are output tokens spent on reasoning."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None


_APPROVAL_KINDS = ("mcp_approval_request",)
"""The core's ``APPROVAL_KINDS`` (this module imports nothing of the core; a test
checks the two agree)."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A provider's request that the client approve a call the provider runs itself
    (OpenAI Responses ``mcp_approval_request``, quirk Q60): never a call for the client
    to run or validate. ``id`` is the request's id (what an ``ApprovalResponse``
    answers), ``name`` the tool, ``arguments`` its raw JSON text as sent,
    ``server_label`` the MCP server. The turn's ``ToolUseBlock`` of this ``kind`` (with
    ``server_side`` true: the provider runs the call once approved) renders back as the
    item it came in."""

    id: str
    name: str
    arguments: str
    server_label: str
    kind: str = "mcp_approval_request"


@dataclass(frozen=True, slots=True)
class ApprovalResponse:
    """The client's answer to an ``ApprovalRequest``: pass it to ``render_results`` /
    ``render_turn`` with the results; OpenAI Responses takes it as an
    ``mcp_approval_response`` item. ``reason`` travels when given."""

    approval_request_id: str
    approve: bool
    reason: str | None = None


def incomplete_reason(finish: str | None, finish_reason: str | None) -> str:
    """Why a message with no problem is still not complete, from how it ended."""
    raw = f" (the provider said {finish_reason!r})" if finish_reason else ""
    if finish is None and finish_reason:
        return f"it ended with finish reason {finish_reason!r}, which is not a normal end"
    if finish is None:
        return (
            "the stream ended before the provider's final event: no finish reason came "
            "(cut short, or read before it finished)"
        )
    if finish == "length":
        return f"the provider stopped it at its output-token limit{raw}"
    if finish == "content-filter":
        return f"the provider's content filter stopped it{raw}"
    if finish == "error":
        return f"the provider ended it with an error{raw}"
    return f"it ended with finish {finish!r}{raw}, which is not a normal end"


@dataclass(frozen=True, slots=True)
class AssembledMessage:
    """One choice of a streamed response, as assembled so far.

    - ``blocks``: text, thinking, refusal and tool-use blocks in the order they first
      appeared in the stream;
    - ``tool_uses``: the calls, in ascending provider index (calls without one, or
      sharing one, in the order they opened); ``input`` is the raw JSON text exactly as
      streamed (a Gemini call's arguments object is re-serialised in arrival order);
    - ``text``: every text block concatenated;
    - ``finish_reason``: the provider's own value (``tool_calls``, ``end_turn``,
      ``STOP``, ``TOOL_CALL``, ``completed``, ...), or ``None``;
    - ``usage``: the provider's usage object(s), top-level keys merged in arrival
      order (the same dict on every choice), or ``None``;
    - ``complete``: true only when every event of the stream was applied once, in order,
      under the dialect's protocol, and the provider ended the message with a normal
      reason; a stream cut short, ended by ``length`` / ``max_tokens`` / a filter / an
      error, or with any ``problems``, never is;
    - ``problems``: why the message or its calls cannot be trusted: an event that broke
      the protocol or could not be applied (each also raised an error from the feed that
      received it), unreadable transport bytes, a gap in Responses sequence numbers, a
      call that never got a name (Q7);
    - ``minted_ids``: the ids toolstitch minted for calls the provider sent without one
      (Q8);
    - ``server_side_ids``: the ids of calls the provider ran itself (hosted tools: web
      search, code execution, MCP, ...), never for the client to execute;
    - ``skipped``: events skipped for forward compatibility (the first 10,000);
    - ``finish``: ``finish_reason`` in one vocabulary for every dialect (``"stop"``,
      ``"tool-calls"``, ``"length"``, ``"content-filter"``, ``"error"``, ``"other"``), or
      ``None`` before the end; a normal stop with client calls in the message is
      ``"tool-calls"``;
    - ``tokens``: the token counts of ``usage`` as a ``TokenUsage``;
    - ``notes``: what narrow rules interpreted (``Note``: a server's shape that is not
      the documented one but whose meaning is certain); never a problem;
    - ``dialect``: the dialect the message was assembled from (the one named, or the
      one ``auto`` detected), or ``None``; rendering into it keeps the calls' ids as
      the provider sent them (Q55).
    """

    choice: int
    blocks: tuple[Block, ...]
    tool_uses: tuple[ToolUseBlock, ...]
    text: str
    finish_reason: str | None
    usage: dict[str, Any] | None
    complete: bool
    problems: tuple[Problem, ...] = ()
    minted_ids: frozenset[str] = frozenset()
    server_side_ids: frozenset[str] = frozenset()
    skipped: tuple[SkippedEvent, ...] = ()
    finish: Finish | None = None
    tokens: TokenUsage = TokenUsage()
    notes: tuple[Note, ...] = ()
    dialect: str | None = None

    @property
    def approval_requests(self) -> tuple[ApprovalRequest, ...]:
        """The provider's requests for approval in this message (Q60), in call order:
        they are not calls for the client (``validated()`` skips them, as it skips the
        provider's own calls); answer each with an ``ApprovalResponse``."""
        import json  # only here: ``import toolstitch`` loads no JSON module

        out = []
        for b in self.tool_uses:
            if b.kind not in _APPROVAL_KINDS:
                continue
            fields = json.loads(b.input) if b.input else {}
            fields = fields if isinstance(fields, dict) else {}
            arguments = fields.get("arguments")
            label = fields.get("server_label")
            out.append(
                ApprovalRequest(
                    b.id,
                    b.name,
                    arguments if isinstance(arguments, str) else json.dumps(arguments),
                    label if isinstance(label, str) else "",
                    b.kind,
                )
            )
        return tuple(out)

    def to_message(self) -> Message:
        """The assistant turn as a ``Message("assistant", blocks)``."""
        return Message("assistant", self.blocks)

    def validated(self, toolset: CallValidator) -> list[ValidatedCall]:
        """Every client-side call of a complete message, strictly parsed and checked.

        Refuses a message that is not ``complete`` (or that has ``problems``) with
        ``IncompleteMessageError``: a cut stream's calls must not be executed. Then
        delegates to ``toolset.validate_all``, which raises one ``ToolValidationError``
        listing every failing call. Calls the provider runs itself
        (``server_side_ids``) are skipped.
        """
        if self.problems:
            why = "; ".join(p.message for p in self.problems)
            raise IncompleteMessageError(f"choice {self.choice} cannot be executed: {why}")
        if not self.complete:
            raise IncompleteMessageError(
                f"choice {self.choice} did not complete normally: "
                f"{incomplete_reason(self.finish, self.finish_reason)}; its tool calls "
                f"may be truncated and must not be executed"
            )
        calls = [b for b in self.tool_uses if not b.server_side]
        return toolset.validate_all(calls)


# ------------------------------------------ SDK events to plain data (called from Rust)


_JSON_TYPES = (dict, list, str, int, float, bool, type(None))


def _event_plain(event: object) -> Any:
    """A provider SDK object (or a mapping other than a dict) as a plain dict, which
    ``feed`` then reads in place; a list (a JSON array of events, or of a whole response's
    events) with its SDK objects turned into their dicts.

    ``to_dict()`` first (openai and anthropic: it omits unset fields and uses the API's
    field names), then pydantic's ``model_dump(mode="json", by_alias=True,
    exclude_unset=True)`` (google-genai: its aliases are the API's camelCase names,
    which its ``to_json_dict()`` does not use), then ``to_json_dict()``.
    """
    if isinstance(event, list):
        # Anything that is neither JSON data nor an SDK object is left for the core to refuse.
        return [
            e if isinstance(e, _JSON_TYPES) or not _is_sdk_object(e) else _event_plain(e)
            for e in event
        ]
    if isinstance(event, Mapping):
        return dict(event)
    if type(event).__module__.startswith("langchain"):
        raise StreamDecodeError(_framework_object(event))
    to_dict = getattr(event, "to_dict", None)
    if callable(to_dict):
        try:
            plain = to_dict(mode="json")
        except TypeError:
            plain = to_dict()
    else:
        dump = getattr(event, "model_dump", None)
        if callable(dump):
            try:
                plain = dump(mode="json", by_alias=True, exclude_unset=True)
            except TypeError:
                plain = dump()
        else:
            to_json_dict = getattr(event, "to_json_dict", None)
            if not callable(to_json_dict):
                raise TypeError(
                    "feed() takes one decoded event (or a whole non-streamed response): a "
                    "dict, a list of events, JSON text as str or bytes, or an object of a "
                    "provider's SDK (with to_dict(), model_dump() or to_json_dict()), not "
                    f"{type(event).__name__}"
                )
            plain = to_json_dict()
    return dict(plain) if isinstance(plain, Mapping) else plain


def _framework_object(event: object) -> str:
    """Why a LangChain object is not an event, and what to do instead."""
    return (
        f"a LangChain {type(event).__name__} is not a provider's event: LangChain has "
        "already parsed the provider's stream into its own messages, and toolstitch reads "
        "the provider's own events or bytes. To get toolstitch's messages (and checked "
        "calls) from a LangChain chat model, watch or enforce the SDK client under it: "
        "toolstitch.watch(llm.root_client, on_response) or "
        "ChatOpenAI(http_client=toolstitch.enforce(httpx2.Client())); to reassemble its "
        "tool_call_chunks yourself, feed them to toolstitch.ToolUses as "
        "ToolUseChunk(index=c['index'], id=c['id'], name=c['name'], input_json=c['args']). "
        "The recipes: python -m pydoc toolstitch.transport"
    )


def _is_sdk_object(obj: object) -> bool:
    return isinstance(obj, Mapping) or any(
        callable(getattr(obj, name, None)) for name in ("to_dict", "model_dump", "to_json_dict")
    )


# LiteLLM's responses (`ModelResponseBase`) override `model_dump` only to default
# `exclude_unset`; `to_dict()` passes it (and `exclude_none`) itself, so their dump is
# the base's. The override is recognised by its code, compiled here by the running
# interpreter: any other body, however small the change, is not this one.
_DEFAULTING_DUMP = """
class _Defaulting:
    def model_dump(self, **kwargs):
        if "exclude_unset" not in kwargs and "exclude_none" not in kwargs:
            kwargs["exclude_unset"] = True
        return super().model_dump(**kwargs)
"""


def _same_code(a: Any, b: Any) -> bool:
    """Whether two functions' code is the same but for the docstring."""

    def consts(c: Any, doc: object) -> tuple[object, ...]:
        return tuple(x for x in c.co_consts if x is not doc and x is not None)

    fa, fb = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if fa is None or fb is None:
        return False
    return (
        fa.co_code == fb.co_code
        and fa.co_names == fb.co_names
        and fa.co_varnames == fb.co_varnames
        and fa.co_freevars == fb.co_freevars
        and fa.co_argcount == fb.co_argcount
        and fa.co_kwonlyargcount == fb.co_kwonlyargcount
        # The low bits: how the code runs (the high ones are `__future__` imports).
        and fa.co_flags & 0xFFFF == fb.co_flags & 0xFFFF
        and consts(fa, a.__doc__) == consts(fb, b.__doc__)
    )


def _dumps_as_base(cls: type, base: type) -> bool:
    """Whether ``cls().to_dict()`` is what ``base.to_dict`` makes of the same object:
    ``cls`` keeps ``base``'s ``model_dump``, or its override is exactly LiteLLM's
    ``exclude_unset`` default above, defined on a class whose next ``model_dump`` (for
    ``cls``) is ``base``'s. Called once per class from Rust (``sdk.rs``)."""
    dump = getattr(cls, "model_dump", None)
    if dump is getattr(base, "model_dump", None):
        return True
    namespace: dict[str, Any] = {}
    exec(compile(_DEFAULTING_DUMP, "<toolstitch>", "exec", dont_inherit=True), namespace)
    if not _same_code(dump, namespace["_Defaulting"].model_dump):
        return False
    cells: tuple[Any, ...] = getattr(dump, "__closure__", None) or ()
    owner = cells[0].cell_contents if len(cells) == 1 else None
    if not (isinstance(owner, type) and owner in cls.__mro__):
        return False
    after = cls.__mro__[cls.__mro__.index(owner) + 1 :]
    below = _defined(after, "model_dump")
    return below is not None and below is _defined(base.__mro__, "model_dump")


def _defined(mro: tuple[type, ...], name: str) -> object:
    """The first definition of ``name`` along ``mro``."""
    return next((c.__dict__[name] for c in mro if name in c.__dict__), None)
