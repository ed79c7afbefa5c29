//! Ollama's native chat API (`POST /api/chat`): JSON lines, each a partial
//! response `{"model", "created_at", "message": {"role", "content",
//! "thinking", "tool_calls"}, "done": false}`, the last one `"done": true` with
//! `done_reason` and the counts (`prompt_eval_count`, `eval_count`, durations).
//! A non-streamed response is that last line with the whole message.
//!
//! Each `tool_calls` entry is a whole call: its `arguments` is a JSON object
//! (kept as compact JSON text, keys in the order sent), never a fragment.

mod fast;
mod guard;

#[cfg(test)]
pub(super) use fast::{fast_path_agrees, memo_agrees, memo_parts};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{text, Index, Str, TextOrObject};
use super::outcome::{count, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, Hints, Spec, ResponseFields};
use super::scan;
use super::state::{provider_error, Live, Opening, Stream, TextKind, R};
use super::Input;
use crate::accumulate::ThinkingFragment;

/// One message per stream: choice 0.
const C: i64 = 0;

/// The counts of the last line, kept as the stream's usage.
const COUNTS: [&str; 6] = [
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
];

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    message: Option<Msg<'a>>,
    #[serde(default)]
    done: Option<bool>,
    #[serde(borrow, default)]
    done_reason: Option<Str<'a>>,
    /// `{"error": "…"}`: a failure reported in the stream.
    #[serde(borrow, default)]
    error: Option<Str<'a>>,
    #[serde(default)]
    prompt_eval_count: Option<Count>,
    #[serde(default)]
    eval_count: Option<Count>,
    #[serde(default)]
    total_duration: Option<Count>,
    #[serde(default)]
    load_duration: Option<Count>,
    #[serde(default)]
    prompt_eval_duration: Option<Count>,
    #[serde(default)]
    eval_duration: Option<Count>,
}

/// A counter of the last line: an integer, also when a server spells it as a
/// float with no fraction (`56.0`, Q64). Any other number is refused, naming it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = serde_json::Number::deserialize(d)?;
        let whole = n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
                .map(|f| {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let n = f as u64;
                    n
                })
        });
        whole.map(Count).ok_or_else(|| {
            serde::de::Error::custom(format!("a count that is not a whole number: {n}"))
        })
    }
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Msg<'a> {
    #[serde(borrow, default)]
    content: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Call<'a>>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Call<'a> {
    /// Sent by newer servers; minted otherwise (Q8).
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Function<'a> {
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<TextOrObject<'a>>,
}

const PROTOCOL: Protocol = Protocol {
    subject: "the response",
    start: &[],
    open: &[],
    add: &["message"],
    stop: &[],
    stopped_positions: &[],
    ends: &[("done", Ends::ByReason)],
    end_label: "its done line",
    after_end: AfterEnd::NoContent,
    reading: Reading::AS_ASSEMBLED,
    // Ollama ends a turn of calls with `done_reason: "stop"`, like one of text.
    calls_finish: &[],
};

/// The lines keep no state of their own: every call comes whole.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State;

fn apply(s: &mut Stream, input: Input<'_>, live: &mut Live<'_>) -> R {
    let mut line = Line::default();
    let fast = match input {
        Input::Text(t) if scan::enabled() => scan::scan_text(&mut s.memo, t, &mut line),
        _ => false,
    };
    if !fast {
        line = input.parse()?;
    }
    if let Some(message) = &line.error {
        return Err(provider_error(
            &serde_json::json!({ "message": &**message }),
        ));
    }
    s.choice(C)?;
    if let Some(m) = &line.message {
        if let Some(t) = &m.thinking {
            let frag = ThinkingFragment {
                thinking: t,
                ..ThinkingFragment::default()
            };
            s.thinking(C, None, frag, false, live)?;
        }
        s.text(C, TextKind::Text, None, text(&m.content), false, live)?;
        for call in m.tool_calls.iter().flatten() {
            let f = call.function.as_ref();
            let args = match f.and_then(|f| f.arguments.as_ref()) {
                Some(TextOrObject::Object(json)) => json.as_ref(),
                Some(TextOrObject::Text(t)) => t,
                None => "",
            };
            // Without an index (older servers), calls are in arrival order.
            let arrived = i64::try_from(s.choice(C)?.calls.len()).unwrap_or(i64::MAX);
            let opening = Opening {
                provider_index: Some(f.and_then(|f| f.index).map_or(arrived, |i| i.0)),
                id: text(&call.id),
                name: f.map_or("", |f| text(&f.name)),
                input: args,
                ..Opening::default()
            };
            // Each call comes whole: its input is done as it opens (which the
            // guard and the live events see as the call's end).
            let key = s.new_call(C, opening, live)?;
            s.finish_call(C, key, live);
        }
    }
    if line.done == Some(true) {
        if let Some(reason) = &line.done_reason {
            s.set_finish_reason(C, reason)?;
        }
        let counts = [
            line.prompt_eval_count,
            line.eval_count,
            line.total_duration,
            line.load_duration,
            line.prompt_eval_duration,
            line.eval_duration,
        ]
        .map(|c| c.map(|Count(n)| n));
        let usage: Map<String, Value> = COUNTS
            .iter()
            .zip(counts)
            .filter_map(|(k, v)| v.map(|v| ((*k).to_owned(), Value::from(v))))
            .collect();
        if !usage.is_empty() {
            s.merge_usage(usage);
        }
        // Without its done_reason the message ended, but not normally (Q26).
        s.end(C, live)?;
    }
    Ok(())
}

impl Adapter for State {
    #[inline]
    fn feed(
        &mut self,
        s: &mut Stream,
        _name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        apply(s, input, live)
    }
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: count(u, &["prompt_eval_count"]),
        output_tokens: count(u, &["eval_count"]),
        total_tokens: None,
        reasoning_tokens: None,
        cached_input_tokens: None,
    }
}

pub(crate) const SPEC: Spec = Spec {
    name: "ollama",
    untyped_event: "line",
    hints: Hints {
        event_names: &[],
        event_prefix: None,
        exception_suffix: None,
        error_event: None,
        shape: |obj| {
            obj.get("done").is_some_and(Value::is_boolean)
                && (obj.get("message").is_some_and(Value::is_object)
                    || obj.contains_key("created_at"))
        },
    },
    // A whole response is its last line: read as one.
    body: None,
    tokens,
    protocol: PROTOCOL,
    state_formats: &[],
    client_items: &[],
    server_items: &[],
    response: ResponseFields {
        id: &[],
        model: &["/model"],
    },
    guard: guard::GUARD,
};
