//! What an [`Assembler`](super::Assembler) gives: messages with their calls,
//! problems and skipped events, and the live events of what changed.

use serde_json::{Map, Value};

use super::{Finish, TokenUsage};
use crate::blocks::{Block, ToolUseBlock};

/// One tool call of an assembled message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    /// The call; its id is minted (`call_<choice>_<index>`) when the provider sent none (Q8).
    pub block: ToolUseBlock,
    /// The internal key of the call: 0, 1, 2, … in the order calls opened in this message.
    pub index: i64,
    /// The provider's own position of the call (`index`, content block index,
    /// `output_index`), when it sent one.
    pub provider_index: Option<i64>,
    /// True when the id was minted here (Q8), or derived from the sent one
    /// because another call of the message had it (Q38).
    pub id_minted: bool,
    /// The id the provider sent when it was another call's and this call got
    /// one derived from it (Q38).
    pub sent_id: Option<String>,
    /// True once the call's block ended (or the message or stream did).
    pub finished: bool,
    /// True for calls the provider runs itself (a dialect's server items, see
    /// [`Dialect::server_items`](super::Dialect::server_items)): not for the
    /// client to execute.
    pub server_side: bool,
}

/// What keeps a message from being complete, besides how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ProblemKind {
    /// The stream ended and the call never got a name (Q7).
    Unnamed,
    /// The provider reported an error in the stream.
    Provider,
    /// An event broke the dialect's protocol and was refused (Q24–Q26), or two
    /// calls ended up with one id.
    Protocol,
    /// An event could not be applied (unreadable, over a limit, after `close()`,
    /// of another dialect): something the provider sent is missing (Q30).
    NotApplied,
    /// The transport bytes could not be framed: nothing after that point could be read.
    Unreadable,
    /// Events missing or out of order by their sequence number (Q33).
    Sequence,
    /// The reported output tokens reached the caller's `max_output_tokens`: the
    /// message was cut at the limit, whatever its finish reason says (Q46).
    Cut,
    /// The message ended with a finish its dialect declares as "the client has
    /// calls to run" and holds no client call: calls were lost (Q65).
    MissingCalls,
}

impl ProblemKind {
    /// Every kind, in the order of [`ProblemKind::name`]'s table.
    pub const ALL: [ProblemKind; 8] = [
        ProblemKind::Unnamed,
        ProblemKind::Provider,
        ProblemKind::Protocol,
        ProblemKind::NotApplied,
        ProblemKind::Unreadable,
        ProblemKind::Sequence,
        ProblemKind::Cut,
        ProblemKind::MissingCalls,
    ];

    /// The kind as the Python API spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Unnamed => "unnamed",
            ProblemKind::Provider => "provider",
            ProblemKind::Protocol => "protocol",
            ProblemKind::NotApplied => "not-applied",
            ProblemKind::Unreadable => "unreadable",
            ProblemKind::Sequence => "sequence",
            ProblemKind::Cut => "cut",
            ProblemKind::MissingCalls => "missing-calls",
        }
    }
}

/// Something wrong with a message (or, with `choice: None`, with every message of
/// the stream). A message with any problem is never complete.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    pub kind: ProblemKind,
    /// The choice concerned; `None` for the whole stream.
    pub choice: Option<i64>,
    /// The call's internal key ([`ToolUse::index`]) when the problem is one call's.
    pub call: Option<i64>,
    /// The call's id (minted when the provider sent none), when it is one call's.
    pub id: String,
    /// The ordinal of the event concerned, when there is one.
    pub event: Option<u64>,
    pub message: String,
}

/// What a note says was interpreted: a provider's shape that a narrow rule
/// accepted (Q36 onward). A note is not a problem: the message stays complete
/// and its calls executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NoteKind {
    /// Incomplete argument deltas, then the whole arguments again: the whole
    /// value replaced the held prefix (Q36).
    ArgumentsRestated,
    /// `{}` held, then the real arguments as one complete object: they replaced it (Q41).
    EmptyArgumentsReplaced,
    /// `arguments` sent as a JSON object, not a string: its compact text was kept (Q42).
    ArgumentsObject,
    /// A second, different finish reason with nothing else after the first: the
    /// first stands (Q39).
    LaterFinishReasonIgnored,
    /// A parallel call arrived with the id of another call: it got a minted id (Q38).
    DuplicateIdRenamed,
    /// Argument fragments at an index with no call, while exactly one call was
    /// open: they were applied to it (Q43).
    FragmentRerouted,
    /// `content` sent as an array of typed parts (Mistral): read part by part (Q49).
    ContentParts,
    /// Responses `function_call_arguments.done` came before the call's
    /// `output_item.added`: the call is as the done text says (Q44).
    ArgumentsDoneEarly,
    /// Responses argument deltas after `function_call_arguments.done` that only
    /// replay the done text from its start, in order: skipped (Q44).
    StaleDeltaSkipped,
    /// A Responses `custom_tool_call` of an xAI model named after one of xAI's
    /// own tools (`x_keyword_search`, `view_x_video`, …): a server-side call (Q47).
    XaiServerTool,
    /// Several complete JSON objects under one call, split into one call per
    /// object (`split_concatenated`, Q40).
    ConcatenatedSplit,
    /// A chat function call with an empty `custom` member beside its filled
    /// `function` (a server that fills every field): the empty one is absent (Q52).
    EmptyCustomIgnored,
    /// Cohere's `arguments: "null"` for a call otherwise complete: read as `{}` (Q53).
    NullArgumentsEmpty,
    /// Responses events of one numbered stream naming new response ids (GitHub
    /// Copilot gives every event its own): one response, the first id kept (Q59).
    ResponseIdRotated,
    /// Responses events of one open item naming item ids never seen before
    /// (GitHub Copilot): the item correlated by its `output_index` (Q59).
    ItemIdRotated,
    /// A chunk after `[DONE]` that carries nothing to apply (no choices: a
    /// gateway's cost or usage trailer): not applied (Q58).
    AfterDoneIgnored,
    /// Snowflake Cortex's `finish_reason: ""` throughout a message ended by
    /// `[DONE]` (or a whole body) whose every call's input is complete JSON:
    /// read as a normal end (Q63).
    EmptyFinishEnded,
}

impl NoteKind {
    /// The note's name, as Python and the replay records show it.
    pub fn name(self) -> &'static str {
        match self {
            Self::ArgumentsRestated => "arguments-restated",
            Self::EmptyArgumentsReplaced => "empty-arguments-replaced",
            Self::ArgumentsObject => "arguments-object",
            Self::LaterFinishReasonIgnored => "later-finish-reason-ignored",
            Self::DuplicateIdRenamed => "duplicate-id-renamed",
            Self::FragmentRerouted => "fragment-rerouted",
            Self::ContentParts => "content-parts",
            Self::ArgumentsDoneEarly => "arguments-done-early",
            Self::StaleDeltaSkipped => "stale-delta-skipped",
            Self::XaiServerTool => "xai-server-tool",
            Self::ConcatenatedSplit => "concatenated-split",
            Self::EmptyCustomIgnored => "empty-custom-ignored",
            Self::NullArgumentsEmpty => "null-arguments-empty",
            Self::ResponseIdRotated => "response-id-rotated",
            Self::ItemIdRotated => "item-id-rotated",
            Self::AfterDoneIgnored => "after-done-ignored",
            Self::EmptyFinishEnded => "empty-finish-ended",
        }
    }
}

/// What was interpreted in a message, and why (see [`NoteKind`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Note {
    pub kind: NoteKind,
    pub choice: i64,
    /// The call's internal key ([`ToolUse::index`]) when the note is one call's.
    pub call: Option<i64>,
    /// The ordinal of the event interpreted.
    pub event: u64,
    pub message: String,
}

/// An event skipped for forward compatibility (Q29): of a type, or carrying an
/// item, block or delta type, that this version does not read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub ordinal: u64,
    pub event_type: String,
}

/// One message (one choice) as assembled so far.
#[derive(Debug, Clone, PartialEq)]
pub struct AssembledMessage {
    pub choice: i64,
    /// Text, thinking, refusal, tool-use and (server-side) tool-result blocks in
    /// the order they first appeared.
    pub blocks: Vec<Block>,
    /// The calls, in ascending provider index (Q3); calls without one, and
    /// calls sharing one (Q2), in the order they opened.
    pub tool_uses: Vec<ToolUse>,
    /// All text blocks concatenated.
    pub text: String,
    /// The provider's own finish / stop reason (`tool_calls`, `end_turn`,
    /// `STOP`, `TOOL_CALL`; `completed` / `incomplete`'s reason for Responses).
    pub finish_reason: Option<String>,
    /// `finish_reason` in one vocabulary for every dialect; `None` before the end.
    pub finish: Option<Finish>,
    /// The provider's usage object(s) for the stream, top-level keys merged in
    /// arrival order (the same object on every choice).
    pub usage: Option<Map<String, Value>>,
    /// The token counts of `usage`, mapped from the dialect's shape.
    pub tokens: TokenUsage,
    /// True only when every event was applied once, in order, under the
    /// dialect's protocol, and the message ended with a normal reason (Q15):
    /// never with a problem.
    pub complete: bool,
    /// What keeps the message from being complete or its calls from running.
    pub problems: Vec<Problem>,
    /// Events skipped for forward compatibility (the first 10,000).
    pub skipped: Vec<Skipped>,
    /// What narrow rules interpreted in this message (Q36 onward): never a problem.
    pub notes: Vec<Note>,
}

/// What changed, for interfaces that render as the stream goes. `index` is the
/// call's internal key ([`ToolUse::index`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveEvent {
    /// A call opened. Sent again, once, if the call opened without a name and
    /// the name came later (Q7). `id` is minted when the provider sent none yet.
    ToolCallStarted {
        choice: i64,
        index: i64,
        id: String,
        name: String,
    },
    /// Raw input text appended to a call; or, with `replaces`, the call's whole
    /// new input in place of everything sent before (a restatement that does not
    /// extend it: Q10's Responses `done`, Q36, Q41, a Gemini call rebuilt).
    ToolInputDelta {
        choice: i64,
        index: i64,
        fragment: String,
        replaces: bool,
    },
    /// The call's block ended.
    ToolCallFinished {
        choice: i64,
        index: i64,
    },
    TextDelta {
        choice: i64,
        text: String,
    },
    ThinkingDelta {
        choice: i64,
        text: String,
    },
    RefusalDelta {
        choice: i64,
        text: String,
    },
    /// The message ended (explicitly, or at `close()`).
    MessageDone {
        choice: i64,
        finish_reason: Option<String>,
        complete: bool,
    },
}
