//! Provider adapters: one decoded event at a time (the JSON of one SSE `data:`
//! payload, one JSON line, or one AWS event-stream payload, with its SSE
//! `event:` name or `:event-type` when there is one) into per-choice
//! messages built on the seed accumulators.
//!
//! The adapters decide which call a fragment belongs to before the core sees
//! it: every call gets an internal key (0, 1, 2, … per choice, in the order the
//! calls open), so indexes that are missing, reused, sparse, negative or strings
//! (docs/quirks.md Q1–Q3, Q19, Q20) never reach the accumulator as such.
//!
//! Pure Rust: nothing here names pyo3.

mod body;
mod bytes;
// Used by the binding (and its tests) only.
#[cfg_attr(not(feature = "python"), allow(dead_code))]
mod common;
mod content;
mod detect;
mod error;
mod facts;
mod fail;
pub(crate) mod guarded;
mod input;
mod json;
mod live;
mod message;
mod outcome;
mod output;
mod phase;
mod protocol;
mod raw;
#[macro_use]
mod registry;
mod scan;
mod served;
mod state;
mod tree;
mod usage;

// The registry: one line per dialect, each a folder beside this file.
dialects! {
    /// OpenAI Chat Completions and every compatible server.
    OpenAiChat => openai_chat,
    /// OpenAI Responses.
    OpenAiResponses => responses,
    /// Anthropic Messages.
    Anthropic => anthropic,
    /// AWS Bedrock ConverseStream.
    Bedrock => bedrock,
    /// Gemini API and Vertex AI.
    Gemini => gemini,
    /// Cohere v2 chat.
    Cohere => cohere,
    /// Ollama's native chat API (`/api/chat`).
    Ollama => ollama,
    /// AWS Bedrock InvokeModelWithResponseStream: Claude's and Nova's own events in `chunk` frames.
    BedrockInvoke => bedrock_invoke,
    /// The Gemini Interactions API (`/v1beta/interactions`).
    GeminiInteractions => gemini_interactions,
}

use serde::de::IgnoredAny;
use serde_json::Value;
use std::borrow::Cow;

pub use bytes::{exception_frame, BytesAssembler, BytesError};
#[cfg(feature = "python")]
pub(crate) use common::{Common, Stamp};
pub use error::{DecodeKind, Error, EventRef, Limit, Rule};
pub use facts::{response_facts, ResponseFacts, HEAD_BYTES, HEAD_EVENTS};
pub(crate) use input::Input;
pub(crate) use live::LiveDetail;
pub use outcome::{Finish, TokenUsage};
pub use output::{
    AssembledMessage, LiveEvent, Note, NoteKind, Problem, ProblemKind, Skipped, ToolUse,
};
pub use registry::AUTO;
#[cfg(test)]
pub(crate) use served::SERVED;
pub use tree::{Cursor, Node, Tree, TreeBuilder, TreeError};

use state::{Fail, Live, Stream};

/// Bounds on one stream. Going over one is an [`Error::Limit`] naming it; the
/// offending fragment is rejected and everything before it stays readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AssemblerLimits {
    /// Tool calls in one message (choice).
    pub max_calls: usize,
    /// Bytes of one call's input.
    pub max_input_bytes: usize,
    /// Bytes of content (text, reasoning, ids, names, inputs) in the whole stream.
    pub max_total_bytes: usize,
    /// Bytes of one event's JSON.
    pub max_event_bytes: usize,
    /// Choices (n > 1) / candidates in one stream.
    pub max_choices: usize,
    /// Blocks (text, thinking, refusal, tool use) in one message.
    pub max_blocks: usize,
    /// Nodes of one call rebuilt from argument paths.
    pub max_arg_nodes: usize,
    /// The request's output-token limit, when the caller gives it: a message
    /// whose reported output tokens reach it was cut there, whatever its finish
    /// reason says (Q46), and is not complete.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// An option rather than a limit: a finished call whose input is two or
    /// more complete JSON objects one after another is given as one call per
    /// object, each with an id derived from the one sent (Q40's opt-in).
    #[serde(default)]
    pub split_concatenated: bool,
}

impl Default for AssemblerLimits {
    fn default() -> Self {
        Self {
            max_calls: crate::accumulate::DEFAULT_MAX_ENTRIES,
            max_input_bytes: crate::accumulate::DEFAULT_MAX_INPUT_BYTES,
            max_total_bytes: crate::accumulate::DEFAULT_MAX_TOTAL_BYTES,
            max_event_bytes: 16 * 1024 * 1024,
            max_choices: 128,
            max_blocks: 16 * 1024,
            max_arg_nodes: 100_000,
            max_output_tokens: None,
            split_concatenated: false,
        }
    }
}

/// Assembles one streamed response of one dialect (or `auto`). It serialises
/// with serde (the binding pickles it that way), so a stream can stop in one
/// process and go on in another.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Assembler {
    dialect: Option<Dialect>,
    /// Made as `auto`: the dialect was settled by the stream, not named.
    #[serde(default)]
    auto: bool,
    stream: Stream,
    /// The state of the dialect, once it is known.
    state: Option<DialectState>,
    events: u64,
}

impl Assembler {
    /// A fresh assembler. `dialect: None` is `auto`: decided from the first event
    /// that identifies itself.
    #[must_use]
    pub fn new(dialect: Option<Dialect>, limits: AssemblerLimits) -> Self {
        Self {
            dialect,
            auto: dialect.is_none(),
            stream: Stream::new(limits),
            state: dialect.map(DialectState::new),
            events: 0,
        }
    }

    /// Settles the dialect (`auto` decided it, or a body named it).
    fn decide(&mut self, d: Dialect) {
        if self.dialect != Some(d) || self.state.is_none() {
            self.dialect = Some(d);
            self.state = Some(DialectState::new(d));
        }
    }

    /// Anything the dialect still holds back goes into the stream (the end of
    /// the stream: `[DONE]` or `close()`).
    fn end_of_stream(&mut self, live: &mut Live<'_>) -> Result<(), Fail> {
        match &mut self.state {
            Some(st) => st.end_of_stream(&mut self.stream, live),
            None => Ok(()),
        }
    }

    /// The stream ended whole (`[DONE]`, or a whole body applied).
    pub(crate) fn ended_whole(&mut self, live: &mut Live<'_>) -> Result<(), Fail> {
        match &mut self.state {
            Some(st) => st.ended_whole(&mut self.stream, live),
            None => Ok(()),
        }
    }

    /// The dialect, once known.
    #[must_use]
    pub fn dialect(&self) -> Option<Dialect> {
        self.dialect
    }

    /// The limits in force.
    #[must_use]
    pub fn limits(&self) -> AssemblerLimits {
        self.stream.limits
    }

    /// The first place where the readings clients may take of the stream
    /// differ (an event its SDKs skip or dispatch otherwise, framing they read
    /// otherwise, a call they key or name otherwise): the assembler reads on
    /// by its own rules, and [`crate::guard`] blocks there. `None` while every
    /// reading agrees.
    #[must_use]
    pub fn divergence(&self) -> Option<&str> {
        self.stream.diverged.as_deref()
    }

    /// Records a divergence found outside the dialect (in the framing).
    pub(crate) fn diverge(&mut self, why: &str) {
        self.stream.diverge(|| why.to_owned());
    }

    /// The event just fed came without a transport name (see
    /// `Reading::named_events`).
    pub(crate) fn unnamed_event(&mut self) {
        self.stream.unnamed();
    }

    /// Events fed so far (skipped ones included).
    #[must_use]
    pub fn events_seen(&self) -> u64 {
        self.events
    }

    /// Whether [`close`](Self::close) was called: every later feed is refused
    /// (and leaves a problem on the messages).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.stream.is_closed()
    }

    /// Refuses whatever came after [`close`](Self::close) (raw bytes not yet
    /// framed, numbered as the next event), leaving a problem on the messages.
    pub fn refuse_after_close(&mut self) -> Error {
        let e = Error::Closed {
            event: EventRef {
                ordinal: self.events.saturating_add(1),
                event_type: String::new(),
            },
        };
        self.record(&e);
        e
    }

    /// Feeds one event as JSON text. Empty payloads are skipped; `[DONE]` ends
    /// the stream (any event after it is a protocol error, Q24).
    ///
    /// # Errors
    /// See [`Error`]. The event is not applied (or, when it had several parts,
    /// not past the part that failed), everything accumulated before stays
    /// readable, and every message of the stream carries a problem, so none is
    /// complete (Q30).
    pub fn feed_json(
        &mut self,
        event_name: Option<&str>,
        json: &[u8],
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        self.events += 1;
        self.stream.ordinal = self.events;
        let r = self.json_event(event_name, json, Input::Json(json), live);
        if let Err(e) = &r {
            self.record(e);
        }
        r
    }

    /// [`Assembler::feed_json`] for text already known to be UTF-8 (an SSE
    /// event's data, which the framing checked): it is not checked again, and
    /// the hot events of the busiest dialects take a fast path that decodes
    /// exactly what the general one does.
    ///
    /// # Errors
    /// See [`Assembler::feed_json`].
    pub fn feed_text(
        &mut self,
        event_name: Option<&str>,
        json: &str,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        self.events += 1;
        self.stream.ordinal = self.events;
        let r = self.json_event(event_name, json.as_bytes(), Input::Text(json), live);
        if let Err(e) = &r {
            self.record(e);
        }
        r
    }

    fn json_event(
        &mut self,
        event_name: Option<&str>,
        json: &[u8],
        input: Input<'_>,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        let trimmed = json.trim_ascii();
        if trimmed.is_empty() {
            return Ok(());
        }
        if self.stream.is_closed() {
            let e = Error::Closed {
                event: self.event_ref(event_name, input),
            };
            // Something the provider sent is not in the messages (Q30).
            self.record(&e);
            return Err(e);
        }
        if trimmed == b"[DONE]" {
            return self.done(event_name, input, live);
        }
        let max = self.stream.limits.max_event_bytes;
        if json.len() > max {
            return Err(Error::Limit {
                event: EventRef {
                    ordinal: self.events,
                    event_type: event_name.unwrap_or_default().to_owned(),
                },
                limit: Limit::MaxEventBytes,
                max,
                would_be: json.len(),
                target: "the event".to_owned(),
            });
        }
        if !matches!(trimmed.first(), Some(b'{' | b'[')) {
            let (kind, detail) = match serde_json::from_slice::<IgnoredAny>(json) {
                Ok(_) => (
                    DecodeKind::NotAnObject,
                    "an event must be a JSON object".to_owned(),
                ),
                Err(e) => (DecodeKind::MalformedJson, e.to_string()),
            };
            return Err(Error::Decode {
                event: self.event_ref(event_name, input),
                kind,
                detail,
            });
        }
        self.dispatch(event_name, input, live)
    }

    /// Feeds one event as a JSON value (an SDK object turned into a dict by the
    /// binding). The same typed path as [`Assembler::feed_json`]; argument objects
    /// keep the key order of the value's map.
    ///
    /// # Errors
    /// See [`Assembler::feed_json`].
    pub fn feed_value(
        &mut self,
        event_name: Option<&str>,
        value: &Value,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        self.events += 1;
        self.stream.ordinal = self.events;
        let r = self.value_event(event_name, value, live);
        if let Err(e) = &r {
            self.record(e);
        }
        r
    }

    fn value_event(
        &mut self,
        event_name: Option<&str>,
        value: &Value,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        let input = Input::Value(value);
        if self.stream.is_closed() {
            let e = Error::Closed {
                event: self.event_ref(event_name, input),
            };
            // Something the provider sent is not in the messages (Q30).
            self.record(&e);
            return Err(e);
        }
        if !value.is_object() && !value.is_array() {
            if value.as_str().is_some_and(|s| s.trim() == "[DONE]") {
                return self.done(event_name, input, live);
            }
            return Err(Error::Decode {
                event: self.event_ref(event_name, input),
                kind: DecodeKind::NotAnObject,
                detail: "an event must be a JSON object".to_owned(),
            });
        }
        self.dispatch(event_name, input, live)
    }

    /// Feeds one event as a [`Tree`] (a Python dict read by the binding without
    /// writing it as JSON text). The same typed path as [`Assembler::feed_json`];
    /// argument objects keep the tree's key order. `max_event_bytes` bounds JSON
    /// text only: a tree is already decoded, and its content is bounded by the
    /// content limits.
    ///
    /// # Errors
    /// See [`Assembler::feed_json`].
    pub fn feed_tree(
        &mut self,
        event_name: Option<&str>,
        tree: Tree<'_>,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        self.events += 1;
        self.stream.ordinal = self.events;
        let r = self.tree_event(event_name, tree, live);
        if let Err(e) = &r {
            self.record(e);
        }
        r
    }

    fn tree_event(
        &mut self,
        event_name: Option<&str>,
        tree: Tree<'_>,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        let input = Input::Tree(tree);
        if self.stream.is_closed() {
            let e = Error::Closed {
                event: self.event_ref(event_name, input),
            };
            // Something the provider sent is not in the messages (Q30).
            self.record(&e);
            return Err(e);
        }
        if !tree.is_object() {
            if tree.as_str().is_some_and(|s| s.trim() == "[DONE]") {
                return self.done(event_name, input, live);
            }
            if !tree.is_array() {
                return Err(Error::Decode {
                    event: self.event_ref(event_name, input),
                    kind: DecodeKind::NotAnObject,
                    detail: "an event must be a JSON object".to_owned(),
                });
            }
        }
        self.dispatch(event_name, input, live)
    }

    /// Leaves the problem an error means on every message of the stream.
    /// `[DONE]`: nothing may follow (Q24). A call still streamed by
    /// path (`auto` accepts `[DONE]` from any stream) is rebuilt now, as at any
    /// end of its stream, so that nothing changes after `[DONE]`, `close()`
    /// included; `[DONE]` holds even when that rebuild crosses a limit.
    fn done(
        &mut self,
        event_name: Option<&str>,
        input: Input<'_>,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        let mut live = self.stream.live(live);
        let r = self.end_of_stream(&mut live);
        let r = r.and_then(|()| self.ended_whole(&mut live));
        self.stream.done = true;
        r.map_err(|f| f.into_error(self.event_ref(event_name, input)))
    }

    fn record(&mut self, e: &Error) {
        let kind = match e {
            Error::Protocol { .. } => ProblemKind::Protocol,
            Error::Provider { .. } => ProblemKind::Provider,
            _ => ProblemKind::NotApplied,
        };
        self.stream.problem(kind, None, e.to_string());
    }

    /// Refuses an event the binding could not even read as JSON data (a dict
    /// holding a set, a NaN, ...): it counts as the next event, and leaves its
    /// problem like any other refused event.
    pub fn refuse(&mut self, event_name: Option<&str>, kind: DecodeKind, detail: String) -> Error {
        self.events += 1;
        self.stream.ordinal = self.events;
        let e = Error::Decode {
            event: EventRef {
                ordinal: self.events,
                event_type: event_name.unwrap_or_default().to_owned(),
            },
            kind,
            detail,
        };
        self.record(&e);
        e
    }

    /// Records an error raised outside the events (a feed after `close()`): the
    /// messages carry it as a problem.
    pub fn note_not_applied(&mut self, e: &Error) {
        self.record(e);
    }

    /// Records a provider error reported outside the events (an AWS event-stream
    /// exception frame in another dialect): no message can be complete.
    pub fn note_provider_error(&mut self, e: &Error) {
        self.stream.fail_all();
        self.record(e);
    }

    /// Records that the transport bytes after some point could not be read (a
    /// framing error): no message of the stream can be complete.
    pub fn note_unreadable(&mut self, why: &str) {
        self.stream.ordinal = 0;
        self.stream.problem(
            ProblemKind::Unreadable,
            None,
            format!("the stream could not be read past a framing error: {why}"),
        );
    }

    fn dispatch(
        &mut self,
        event_name: Option<&str>,
        input: Input<'_>,
        mut live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        // The dialect's memo first: an event it serves is its template with
        // another string (and other stamps), so neither a body nor an array,
        // and the body-marker search below is not made for it.
        if let (Input::Text(text), Some(dialect)) = (input, self.dialect) {
            if dialect.serves() {
                if let Some(fed) = self.served(dialect, event_name, text, live.as_deref_mut()) {
                    return fed;
                }
            }
        }
        // A whole response body, or a JSON array of events (Q31).
        if let Some(fed) = body::intercept(self, event_name, input, live.as_deref_mut()) {
            return fed;
        }
        let mut live = self.stream.live(live);
        if self.stream.done {
            // Q58: an event the dialect says carries nothing to apply is a note.
            if let Some(what) = self.state.as_ref().and_then(|st| st.content_free(input)) {
                let choices: Vec<i64> = self.stream.choices.keys().copied().collect();
                for c in choices {
                    self.stream
                        .note(c, NoteKind::AfterDoneIgnored, None, what.clone());
                }
                return Ok(());
            }
            return Err(Error::Protocol {
                event: self.event_ref(event_name, input),
                rule: Rule::AfterDone,
                target: None,
                detail: "the stream sent [DONE] already".to_owned(),
            });
        }
        let dialect = match self.dialect {
            Some(d) => d,
            None => match detect::detect(event_name, input) {
                detect::Detected::Dialect(d) => {
                    self.decide(d);
                    d
                }
                detect::Detected::ProviderError(fail) => {
                    self.stream.fail_all();
                    return Err(self.wrap(fail, event_name, input));
                }
                detect::Detected::Unknown => {
                    return Err(Error::UnknownShape {
                        event: self.event_ref(event_name, input),
                    })
                }
            },
        };
        let s = &mut self.stream;
        s.dialect = Some(dialect);
        s.unknown = None;
        let state = self.state.get_or_insert_with(|| DialectState::new(dialect));
        let r = state.feed(s, event_name, input, &mut live);
        self.applied(r, dialect, event_name, input)
    }

    fn event_ref(&self, event_name: Option<&str>, input: Input<'_>) -> EventRef {
        self.event_ref_with(event_name, || input.self_type())
    }

    /// The current event as messages name it: its SSE event name, else its
    /// own `type` (or `object`), else the dialect's name for untyped events.
    fn event_ref_with(
        &self,
        event_name: Option<&str>,
        self_type: impl FnOnce() -> Option<String>,
    ) -> EventRef {
        let event_type = match event_name {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => self_type().unwrap_or_else(|| {
                self.dialect
                    .map(|d| d.spec().untyped_event.to_owned())
                    .unwrap_or_default()
            }),
        };
        EventRef {
            ordinal: self.events,
            event_type,
        }
    }

    fn wrap(&self, f: Fail, event_name: Option<&str>, input: Input<'_>) -> Error {
        f.into_error(self.event_ref(event_name, input))
    }

    /// End of stream: closes every open call (Q21: a call still being
    /// streamed by path is rebuilt and closed), reports calls that never got a name
    /// (Q7), and decides completeness. Closing twice changes nothing.
    ///
    /// # Errors
    /// [`Error::Limit`] when rebuilding an open call crosses a limit.
    pub fn close(&mut self, live: Option<&mut Vec<LiveEvent>>) -> Result<(), Error> {
        let mut live = self.stream.live(live);
        if self.stream.is_closed() {
            return Ok(());
        }
        let r = self.end_of_stream(&mut live);
        let r = r.map_err(|f| {
            let event = EventRef {
                ordinal: self.events,
                event_type: "end of stream".to_owned(),
            };
            f.into_error(event)
        });
        if let Err(e) = &r {
            self.record(e);
        }
        self.stream.close(&mut live);
        r
    }

    /// One message per choice, in ascending choice index (an empty message for
    /// choice 0 before any content).
    #[must_use]
    pub fn messages(&self) -> Vec<AssembledMessage> {
        self.stream.messages()
    }

    /// The message of one choice, if that choice has appeared.
    #[must_use]
    pub fn message(&self, choice: i64) -> Option<AssembledMessage> {
        self.messages().into_iter().find(|m| m.choice == choice)
    }

    /// The raw input of every call not finished yet, as `(choice, index, input)`,
    /// for live rendering of partial JSON. A call streamed by JSON paths
    /// shows the object rebuilt so far.
    #[must_use]
    pub fn partial_inputs(&self) -> Vec<(i64, i64, String)> {
        self.partial_input_texts()
            .into_iter()
            .map(|(c, key, text, _)| (c, key, text.into_owned()))
            .collect()
    }

    /// [`partial_inputs`](Self::partial_inputs) borrowed where the input is kept
    /// as text, so that reading it after every fragment copies nothing, with the
    /// input's revision: while it stays the same the input only grows at its end
    /// (`None`: a text rebuilt for this read, a call streamed by path).
    #[must_use]
    pub fn partial_input_texts(&self) -> Vec<(i64, i64, Cow<'_, str>, Option<u64>)> {
        let mut out: Vec<(i64, i64, Cow<'_, str>, Option<u64>)> = self
            .stream
            .open_inputs()
            .into_iter()
            .map(|(c, key, text, revision)| (c, key, Cow::Borrowed(text), Some(revision)))
            .collect();
        let rebuilt = self
            .state
            .as_ref()
            .map(DialectState::rebuilt_inputs)
            .unwrap_or_default();
        for (c, key, text) in rebuilt {
            if let Some(slot) = out.iter_mut().find(|(oc, ok, _, _)| *oc == c && *ok == key) {
                slot.2 = Cow::Owned(text);
                slot.3 = None;
            }
        }
        out
    }
}

#[cfg(test)]
mod body_harness;
#[cfg(test)]
mod fast_tests;
#[cfg(test)]
mod tests;
