//! AWS Bedrock `InvokeModelWithResponseStream` (and `InvokeModel`'s bodies):
//! AWS event-stream frames named `chunk`, whose payload `{"bytes": "<base64>"}`
//! wraps one event of the model's own API. The first event tells the model
//! family, and every event of the stream then goes to that family's dialect,
//! whose state machine and protocol run unchanged: Anthropic Messages events
//! for Claude (the `anthropic` dialect, every quirk of it included), Converse-
//! shaped events for Amazon Nova (the `bedrock` dialect). Other families are an
//! error naming the family.
//!
//! A chunk's payload may come as the frame gives it (`{"bytes": …}`), as a log
//! writes boto3's event (`{"chunk": {"bytes": …}}`), or already decoded (the
//! model's event itself, as a body stands for it). The last event of a stream
//! carries `amazon-bedrock-invocationMetrics`, which is recorded in `usage`
//! under that name. Exception frames are provider errors (the framing side,
//! `providers/bytes.rs`).

mod base64;
mod guard;

use std::sync::LazyLock;

use memchr::memmem;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::body::Made;
use super::json::Str;
use super::outcome::TokenUsage;
use super::scan::{self, Scan, Seen};
use super::registry::{Adapter, BodySpec, Hints, Spec, ResponseFields};
use super::state::{Fail, Live, Stream, R};
use super::{anthropic, bedrock, DecodeKind, Dialect, Input, Tree};

/// The name of every frame of the stream (`:event-type`).
const CHUNK: &str = "chunk";
/// The member of the last event that holds Bedrock's own counts.
const METRICS: &str = "amazon-bedrock-invocationMetrics";

/// A frame's payload, or boto3's event as a log writes it.
#[derive(Debug, Default, PartialEq, Deserialize)]
struct Frame<'a> {
    #[serde(borrow, default)]
    bytes: Option<Str<'a>>,
    #[serde(borrow, default)]
    chunk: Option<Chunk<'a>>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    bytes: Str<'a>,
}

/// The fast path of a frame's payload: fills `f` (fresh) with exactly the
/// [`Frame`] the typed decode gives, or returns `None` for the general path.
/// It serves the payload every frame of a stream has, `{"bytes": "…"}` (with
/// Bedrock's padding `"p"` or any other member skipped, as the typed decode
/// skips them); boto3's `chunk` wrapping, a member twice, or anything [`Scan`]
/// does not certify is left to the general path.
fn scan_frame<'a>(text: &'a str, f: &mut Frame<'a>) -> Option<()> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "bytes" => {
            seen.once(0)?;
            f.bytes = p.opt_str()?;
            Some(())
        }
        "chunk" => seen.once(1).and_then(|()| p.null()?.then_some(())),
        _ => p.skip(),
    })?;
    p.end()
}

/// See [`scan::fast_path_agrees`].
#[cfg(test)]
pub(super) fn frame_agrees(text: &str) -> Result<bool, String> {
    scan::fast_path_agrees(scan_frame, text)
}

/// The searcher for [`METRICS`], built once (building one costs more than
/// searching a usual event).
static METRICS_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(METRICS));

/// The searcher for a `\u` escape, built once too.
static ESCAPE_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\\u"));

/// Bedrock's counts on the last event.
#[derive(Deserialize)]
struct Metrics {
    #[serde(rename = "amazon-bedrock-invocationMetrics", default)]
    metrics: Option<Value>,
}

/// The model family inside the stream, with the state of its dialect.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum Family {
    /// Anthropic Claude: Anthropic Messages events.
    Claude(anthropic::State),
    /// Amazon Nova: Converse-shaped events.
    Nova(bedrock::State),
}

impl Family {
    /// The dialect whose events the family streams.
    fn dialect(&self) -> Dialect {
        match self {
            Family::Claude(_) => Dialect::Anthropic,
            Family::Nova(_) => Dialect::Bedrock,
        }
    }

    /// The family of a first event, or the error that names the one it is.
    fn of(event: &Map<String, Value>) -> R<Family> {
        if event.get("type").is_some_and(Value::is_string) && cohere_v2(event).is_none() {
            return Ok(Family::Claude(Default::default()));
        }
        // Nova's events are wrapped in their name, beside which other
        // members may stand (Bedrock's counts, fields this version does not know).
        let hints = &Dialect::Bedrock.spec().hints;
        if event.keys().any(|k| hints.names(k)) || (hints.shape)(event) {
            return Ok(Family::Nova(Default::default()));
        }
        let family = unread_family(event).unwrap_or_else(|| {
            let keys: Vec<&str> = event.keys().map(String::as_str).take(8).collect();
            format!("an unknown model family (members: {})", keys.join(", "))
        });
        Err(Fail::Bad {
            kind: DecodeKind::BadValue,
            detail: format!(
                "the model event inside the chunk is of {family}: bedrock-invoke reads \
                 Anthropic Claude and Amazon Nova streams"
            ),
        })
    }
}

/// The family a model event is of, among those bedrock-invoke does not read,
/// by the member only that family's events have.
fn unread_family(event: &Map<String, Value>) -> Option<String> {
    if let Some(kind) = cohere_v2(event) {
        return Some(format!("Cohere Command (`type` {kind:?})"));
    }
    let has = |k: &str| event.contains_key(k);
    let family = if has("generation") {
        "Meta Llama (`generation`)"
    } else if has("outputs") {
        "Mistral (`outputs`)"
    } else if has("outputText") {
        "Amazon Titan Text (`outputText`)"
    } else if has("completion") {
        "Anthropic Claude Text Completions (`completion`)"
    } else if has("event_type") || has("is_finished") {
        "Cohere Command (`event_type`)"
    } else if has("choices") {
        "an OpenAI-style chat model (`choices`: AI21 Jamba, DeepSeek, gpt-oss)"
    } else {
        return None;
    };
    Some(family.to_owned())
}

/// The type of a Cohere v2 chat event (`message-start`, `content-delta`, …):
/// it names a `type` as Claude's events do, but one only Cohere sends.
fn cohere_v2(event: &Map<String, Value>) -> Option<&str> {
    let kind = event.get("type").and_then(Value::as_str)?;
    Dialect::Cohere.spec().hints.names(kind).then_some(kind)
}

/// The state of one stream: its family, once the first event told it.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State {
    family: Option<Family>,
}

/// Whether an event names its own `type` (Claude's do; Nova's never).
#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type", default)]
    kind: Option<serde::de::IgnoredAny>,
}

/// An event of one family in the stream of another.
fn other_family(event: &str, stream: &str) -> Fail {
    Fail::Bad {
        kind: DecodeKind::BadValue,
        detail: format!(
            "{event} event inside a chunk of a {stream} stream: one stream is one model's"
        ),
    }
}

/// Names a decode error as the wrapped event's.
fn inside(f: Fail) -> Fail {
    match f {
        Fail::Bad { kind, detail } => Fail::Bad {
            kind,
            detail: format!("the model event inside the chunk: {detail}"),
        },
        other => other,
    }
}

/// The model event a chunk's `bytes` holds, as text.
fn unwrap_bytes(b64: &str) -> R<String> {
    let raw = base64::decode(b64).map_err(|why| Fail::Bad {
        kind: DecodeKind::BadValue,
        detail: format!("field `bytes`: not base64: {why}"),
    })?;
    let text = String::from_utf8(raw).map_err(|e| Fail::Bad {
        kind: DecodeKind::MalformedJson,
        detail: format!("field `bytes`: the decoded bytes are not UTF-8: {e}"),
    })?;
    match text.trim_ascii_start().as_bytes().first() {
        Some(b'{') => Ok(text),
        first => {
            let kind = if first.is_none() {
                DecodeKind::MalformedJson
            } else {
                match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
                    Ok(_) => DecodeKind::NotAnObject,
                    Err(_) => DecodeKind::MalformedJson,
                }
            };
            Err(Fail::Bad {
                kind,
                detail: "field `bytes`: the decoded event is not a JSON object".to_owned(),
            })
        }
    }
}

/// Records Bedrock's counts when the event carries them (one substring
/// search for the usual event).
fn record_metrics(s: &mut Stream, inner: Input<'_>) {
    let text = match inner {
        Input::Text(t) => t.as_bytes(),
        Input::Json(b) => b,
        Input::Value(_) | Input::Tree(_) => &[][..],
    };
    let may_hold = match inner {
        Input::Value(v) => v.get(METRICS).is_some(),
        Input::Tree(t) => t.has(METRICS),
        // The key may be spelled with escapes (`amazon\u002dbedrock-…`): a
        // letter or `-` has no other escape than `\uXXXX`, so an event with
        // `\u` anywhere is parsed as well, and the parse reads the key decoded.
        Input::Text(_) | Input::Json(_) => {
            METRICS_FINDER.find(text).is_some() || ESCAPE_FINDER.find(text).is_some()
        }
    };
    if !may_hold {
        return;
    }
    if let Ok(Metrics {
        metrics: Some(metrics),
    }) = inner.parse()
    {
        let mut usage = Map::new();
        usage.insert(METRICS.to_owned(), metrics);
        s.merge_usage(usage);
    }
}

impl Adapter for State {
    fn feed(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        // The messages follow the protocol of the family's dialect, also when
        // this event fails before reaching it.
        if let Some(f) = &self.family {
            s.dialect = Some(f.dialect());
        }
        let mut frame = Frame::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => scan_frame(t, &mut frame).is_some(),
            _ => false,
        };
        if !fast {
            frame = input.parse()?;
        }
        let b64 = frame.bytes.or(frame.chunk.map(|c| c.bytes));
        let text = match b64 {
            Some(b64) => Some(unwrap_bytes(&b64)?),
            None if event_name == Some(CHUNK) => {
                return Err(Fail::Bad {
                    kind: DecodeKind::WrongType,
                    detail: "field `bytes`: missing from the chunk".to_owned(),
                })
            }
            None => None,
        };
        let (inner, name) = match &text {
            Some(t) => (Input::Text(t.as_str()), None),
            // An event already unwrapped keeps its own name.
            None => (input, event_name.filter(|n| *n != CHUNK)),
        };
        if self.family.is_none() {
            let first: Map<String, Value> = inner.parse().map_err(inside)?;
            self.family = Some(Family::of(&first)?);
        }
        let Some(family) = self.family.as_mut() else {
            return Ok(());
        };
        s.dialect = Some(family.dialect());
        match family {
            Family::Claude(st) => st.feed(s, name, inner, live),
            Family::Nova(st) => {
                // A Converse payload may be bare: an event of Claude's must not
                // pass for one.
                if inner.parse::<Typed>().is_ok_and(|t| t.kind.is_some()) {
                    return Err(other_family("a Claude (Anthropic Messages)", "Nova"));
                }
                st.feed(s, name, inner, live)
            }
        }
        .map_err(inside)?;
        // An event the family's dialect skipped may be another family's: a
        // stream is one model's, so that is refused by name, never skipped.
        if s.unknown.is_some() {
            let event: Map<String, Value> = inner.parse().unwrap_or_default();
            let stream = match family {
                Family::Claude(_) => "Claude",
                Family::Nova(_) => "Nova",
            };
            let hints = &Dialect::Bedrock.spec().hints;
            if matches!(family, Family::Claude(_)) && event.keys().any(|k| hints.names(k)) {
                return Err(other_family("a Nova (Converse)", stream));
            }
            if let Some(other) = unread_family(&event) {
                s.unknown = None;
                return Err(other_family(&format!("a {other}"), stream));
            }
        }
        record_metrics(s, inner);
        Ok(())
    }

    fn end_of_stream(&mut self, s: &mut Stream, live: &mut Live<'_>) -> R {
        match &mut self.family {
            Some(Family::Claude(st)) => st.end_of_stream(s, live),
            Some(Family::Nova(st)) => st.end_of_stream(s, live),
            None => Ok(()),
        }
    }

    fn rebuilt_inputs(&self) -> Vec<(i64, i64, String)> {
        match &self.family {
            Some(Family::Claude(st)) => st.rebuilt_inputs(),
            Some(Family::Nova(st)) => st.rebuilt_inputs(),
            None => Vec::new(),
        }
    }
}

/// Usage in either family's shape (the stream's messages use the family's
/// own mapping once it is known).
fn tokens(u: &Map<String, Value>) -> TokenUsage {
    let d = if u.contains_key("inputTokens") || u.contains_key("outputTokens") {
        Dialect::Bedrock
    } else {
        Dialect::Anthropic
    };
    (d.spec().tokens)(u)
}

/// The body of a family: InvokeModel answers with the model's own body.
fn body_of(obj: &Map<String, Value>) -> Option<Dialect> {
    [Dialect::Anthropic, Dialect::Bedrock]
        .into_iter()
        .find(|d| d.spec().body.as_ref().is_some_and(|b| (b.shape)(obj)))
}

fn body_tree(t: Tree<'_>) -> bool {
    [Dialect::Anthropic, Dialect::Bedrock]
        .into_iter()
        .any(|d| d.spec().body.as_ref().is_some_and(|b| (b.tree)(t)))
}

/// The events of a body, as its family's dialect makes them.
fn body_events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    let obj: Map<String, Value> = serde_json::from_slice(body).map_err(|e| Fail::Bad {
        kind: DecodeKind::MalformedJson,
        detail: e.to_string(),
    })?;
    match body_of(&obj).and_then(|d| d.spec().body.as_ref()) {
        Some(b) => (b.events)(body),
        None => Err(Fail::Bad {
            kind: DecodeKind::WrongType,
            detail: "not an InvokeModel body of Claude or Nova".to_owned(),
        }),
    }
}

/// The event names of the stream.
const EVENTS: [&str; 1] = [CHUNK];

pub(crate) const SPEC: Spec = Spec {
    name: "bedrock-invoke",
    untyped_event: CHUNK,
    hints: Hints {
        event_names: &[&EVENTS],
        event_prefix: None,
        exception_suffix: None,
        error_event: None,
        shape: |obj| {
            // `{"bytes": …}` (with Bedrock's `"p"` padding), or boto3's
            // `{"chunk": {"bytes": …}}`.
            let mut keys = obj.keys().filter(|k| k.as_str() != "p");
            let only = match (keys.next(), keys.next()) {
                (Some(k), None) => k.as_str(),
                _ => return false,
            };
            match only {
                "bytes" => obj.get("bytes").is_some_and(Value::is_string),
                CHUNK => obj
                    .get(CHUNK)
                    .and_then(|c| c.get("bytes"))
                    .is_some_and(Value::is_string),
                _ => false,
            }
        },
    },
    body: Some(BodySpec {
        label: "Bedrock InvokeModel",
        // Both families' bodies hold it (`"type": "message"`, `"output": {"message": …}`).
        marker: b"\"message\"",
        shape: |obj| body_of(obj).is_some(),
        tree: body_tree,
        events: body_events,
    }),
    tokens,
    // Claude's: the events inside run their family's protocol (Nova: bedrock's).
    protocol: anthropic::SPEC.protocol,
    state_formats: &[],
    client_items: &[],
    server_items: &[],
    response: ResponseFields {
        id: &["/id"],
        model: &["/model"],
    },
    guard: guard::GUARD,
};
