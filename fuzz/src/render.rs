//! Events as the transports carry them.

use _toolstitch::framing::{EventStreamMessage, HeaderValue};
use serde_json::Value;

/// The payload of one event.
#[derive(Debug, Clone)]
pub enum Body {
    /// A JSON value (serialised compactly, one line).
    Json(Value),
    /// Text as is (malformed JSON, `[DONE]`, anything).
    Raw(String),
}

/// One event: its transport-level name (SSE `event:`, Bedrock
/// `:event-type`) and payload.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: Option<String>,
    pub body: Body,
    /// An AWS event-stream exception frame (`:message-type: exception`).
    pub exception: bool,
}

impl Event {
    #[must_use]
    pub fn json(name: Option<&str>, value: Value) -> Self {
        Self {
            name: name.map(str::to_owned),
            body: Body::Json(value),
            exception: false,
        }
    }

    /// The payload's text.
    #[must_use]
    pub fn text(&self) -> String {
        match &self.body {
            Body::Json(v) => v.to_string(),
            Body::Raw(s) => s.clone(),
        }
    }

    /// The payload as the same event given as JSON text and as a value, for
    /// the `feed_json` / `feed_value` differential: raw text that is not JSON
    /// travels as a JSON string (`[DONE]` as itself).
    #[must_use]
    pub fn canonical(&self) -> (String, Value) {
        match &self.body {
            Body::Json(v) => (v.to_string(), v.clone()),
            Body::Raw(s) if s.trim() == "[DONE]" => ("[DONE]".to_owned(), Value::String(s.clone())),
            Body::Raw(s) => match serde_json::from_str::<Value>(s) {
                Ok(v) => (v.to_string(), v),
                Err(_) => {
                    let v = Value::String(s.clone());
                    (v.to_string(), v)
                }
            },
        }
    }
}

/// A name fit for an SSE `event:` line (no line breaks).
fn sse_name(name: &str) -> String {
    name.replace(['\r', '\n'], " ")
}

/// Server-sent events: `event:` when named, one `data:` line per line of the
/// payload, a blank line after each.
#[must_use]
pub fn sse(events: &[Event]) -> Vec<u8> {
    let mut out = String::new();
    for e in events {
        if let Some(n) = &e.name {
            out.push_str("event: ");
            out.push_str(&sse_name(n));
            out.push('\n');
        }
        let text = e.text();
        for line in text.split('\n') {
            out.push_str("data: ");
            out.push_str(line.trim_end_matches('\r'));
            out.push('\n');
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// JSON lines: one payload per line (names are not carried).
#[must_use]
pub fn jsonl(events: &[Event]) -> Vec<u8> {
    let mut out = String::new();
    for e in events {
        out.push_str(&e.text().replace(['\r', '\n'], " "));
        out.push('\n');
    }
    out.into_bytes()
}

/// AWS event-stream frames as Bedrock sends them.
#[must_use]
pub fn event_stream(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        let mut headers = Vec::new();
        let text = |s: &str| HeaderValue::String(s.chars().take(200).collect());
        if e.exception {
            let kind = e.name.as_deref().unwrap_or("internalServerException");
            headers.push((":exception-type".to_owned(), text(kind)));
            headers.push((":message-type".to_owned(), text("exception")));
        } else {
            if let Some(n) = &e.name {
                headers.push((":event-type".to_owned(), text(n)));
            }
            headers.push((":message-type".to_owned(), text("event")));
        }
        headers.push((":content-type".to_owned(), text("application/json")));
        let message = EventStreamMessage {
            headers,
            payload: e.text().into_bytes(),
        };
        if let Ok(bytes) = message.encode() {
            out.extend_from_slice(&bytes);
        }
    }
    out
}
