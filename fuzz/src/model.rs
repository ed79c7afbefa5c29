//! Plain reference models of the line transports, written from their
//! specifications (WHATWG `EventSource` parsing; newline-delimited JSON) with
//! the decoder's documented additions, for valid UTF-8 input within the
//! limits. The decoders must agree with them event for event.

use _toolstitch::framing::SseEvent;
use serde::de::IgnoredAny;

/// Lines of `text` split at CRLF, LF or a lone CR; the last item is the
/// unterminated rest (possibly empty).
fn sse_lines(text: &str) -> (Vec<&str>, &str) {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['\r', '\n']) {
        lines.push(&rest[..at]);
        let after = &rest[at..];
        rest = after.strip_prefix("\r\n").unwrap_or_else(|| &after[1..]);
    }
    (lines, rest)
}

#[derive(Default)]
struct Builder {
    data: String,
    has_data: bool,
    event: String,
    id: String,
    started: bool,
}

impl Builder {
    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.started = true;
            }
            "event" => {
                self.event = value.to_owned();
                self.started = true;
            }
            "id" if !value.contains('\0') => self.id = value.to_owned(),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        self.started = false;
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event: Some(event).filter(|e| !e.is_empty()),
            data: std::mem::take(&mut self.data),
            id: Some(self.id.clone()).filter(|i| !i.is_empty()),
        });
    }
}

/// The events of a whole SSE stream, and whether it ends cleanly.
#[must_use]
pub fn sse(text: &str) -> (Vec<SseEvent>, bool) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (lines, rest) = sse_lines(text);
    let mut b = Builder::default();
    let mut out = Vec::new();
    for line in lines {
        b.line(line, &mut out);
    }
    if !rest.is_empty() {
        let field = rest.split(':').next().unwrap_or_default();
        if !matches!(field, "" | "data" | "event" | "id" | "retry") {
            return (out, false);
        }
        b.line(rest, &mut out);
    }
    if !b.started {
        return (out, true);
    }
    let complete =
        b.has_data && (b.data == "[DONE]" || serde_json::from_str::<IgnoredAny>(&b.data).is_ok());
    if complete {
        b.dispatch(&mut out);
    }
    (out, complete)
}

/// The documents of a whole JSON lines stream.
#[must_use]
pub fn jsonl(text: &str) -> Vec<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.chars().all(|c| matches!(c, ' ' | '\t' | '\r')))
        .map(str::to_owned)
        .collect()
}

/// SSE text that decodes to `events` (ids written whenever they change).
#[must_use]
pub fn sse_text(events: &[SseEvent]) -> String {
    let mut out = String::new();
    let mut id: Option<&str> = None;
    for e in events {
        if e.id.as_deref() != id {
            out.push_str("id: ");
            out.push_str(e.id.as_deref().unwrap_or_default());
            out.push('\n');
            id = e.id.as_deref();
        }
        if let Some(name) = &e.event {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        for line in e.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}
