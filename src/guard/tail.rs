//! How a blocked response ends: the dialect's declared error shape
//! (`providers/guarded.rs`), written for the body's transport.

use serde_json::Value;

use crate::framing::{EventStreamMessage, HeaderValue, Transport};
use crate::providers::guarded::{ErrorShape, FALLBACK};
use crate::providers::Dialect;

fn shape(dialect: Option<Dialect>) -> &'static ErrorShape {
    match dialect {
        Some(d) => d.error_shape(),
        None => &FALLBACK,
    }
}

/// What the end of a blocked stream depends on.
pub(crate) struct Ends {
    pub(crate) dialect: Option<Dialect>,
    pub(crate) transport: Option<Transport>,
    /// The body is a JSON array of events.
    pub(crate) array: bool,
    /// The last byte that went out and is not whitespace.
    pub(crate) last_released: Option<u8>,
}

impl Ends {
    /// The bytes that end the stream after what was released.
    pub(crate) fn tail(&self, message: &str) -> Vec<u8> {
        let shape = shape(self.dialect);
        let event = (shape.event)(message);
        match self.transport {
            Some(Transport::EventStream) => exception_frame(shape, message),
            Some(Transport::JsonLines) if self.array => {
                // The error is the array's next element, and the array closes.
                let mut out = match self.last_released {
                    None => b"[".to_vec(),
                    Some(b'[' | b',') => Vec::new(),
                    Some(_) => b",".to_vec(),
                };
                out.extend_from_slice(event.to_string().as_bytes());
                out.extend_from_slice(b"]\n");
                out
            }
            Some(Transport::JsonLines) => {
                let mut out = b"\n".to_vec();
                out.extend_from_slice(event.to_string().as_bytes());
                out.push(b'\n');
                out
            }
            Some(Transport::Sse) | None => sse_event(shape, &event),
        }
    }
}

fn sse_event(shape: &ErrorShape, event: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(name) = shape.sse_event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    // serde_json writes no raw newline: the event is one data line.
    out.extend_from_slice(event.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
    out
}

fn exception_frame(shape: &ErrorShape, message: &str) -> Vec<u8> {
    let text = |s: &str| HeaderValue::String(s.to_owned());
    let frame = EventStreamMessage {
        headers: vec![
            (":message-type".to_owned(), text("exception")),
            (
                ":exception-type".to_owned(),
                text(shape.exception.unwrap_or("modelStreamErrorException")),
            ),
            (":content-type".to_owned(), text("application/json")),
        ],
        payload: serde_json::json!({ "message": message })
            .to_string()
            .into_bytes(),
    };
    // A frame this small always encodes; should it not, the stream still ends.
    frame.encode().unwrap_or_default()
}

/// A whole error response in `dialect`'s shape: status, headers (content type
/// first), body. A block before any byte went out ends so, and so does the
/// proxy's answer when the upstream cannot be reached.
#[must_use]
pub fn error_response(
    dialect: Option<Dialect>,
    message: &str,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let shape = shape(dialect);
    let body = (shape.body)(message).to_string().into_bytes();
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(
        shape
            .headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    (shape.status, headers, body)
}
