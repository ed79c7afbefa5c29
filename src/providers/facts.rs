//! What a response says of itself: its own id and the model that answered,
//! read from the head of its body with the dialect's declaration
//! ([`super::registry::ResponseFields`]), for a report or a span about the
//! response. Off the path that assembles: the head is framed and parsed once,
//! on its own, and the work is bounded by [`HEAD_BYTES`] and [`HEAD_EVENTS`].

use serde_json::Value;

use super::Dialect;
use crate::framing::{Decoder, Frame, FramingLimits};

/// The most bytes of a body's head that are read (a caller keeps no more).
pub const HEAD_BYTES: usize = 64 * 1024;

/// The most events of the head that are looked at.
pub const HEAD_EVENTS: usize = 64;

/// A response's id and model, when its head says them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseFacts {
    /// The response's own id (`chatcmpl-…`, `resp_…`, `msg_…`, Gemini's
    /// `responseId`), as sent.
    pub id: Option<String>,
    /// The model that answered, as the response names it (Gemini's
    /// `modelVersion`), as sent.
    pub model: Option<String>,
}

/// The id and model of a `dialect` response whose body starts with `head`
/// (decoded bytes; only the first [`HEAD_BYTES`] are read). A head cut inside
/// an event, bytes that do not frame, an event that is not JSON: what came
/// before is read, the rest says nothing. Never fails.
#[must_use]
pub fn response_facts(dialect: Dialect, head: &[u8]) -> ResponseFacts {
    let fields = &dialect.spec().response;
    let mut facts = ResponseFacts::default();
    if fields.id.is_empty() && fields.model.is_empty() {
        return facts;
    }
    let head = head.get(..HEAD_BYTES).unwrap_or(head);
    let mut frames = Vec::new();
    let mut decoder = Decoder::new(FramingLimits::default());
    // Frames decoded before an error are kept; a whole body ends at `finish`.
    if decoder.push(head, &mut frames).is_ok() {
        let _ = decoder.finish(&mut frames);
    }
    for frame in frames.iter().take(HEAD_EVENTS) {
        let text = match frame {
            Frame::Sse(event) => event.data.as_bytes(),
            Frame::Line(line) => line.as_bytes(),
            Frame::EventStream(message) => message.payload.as_slice(),
        };
        let Ok(event) = serde_json::from_slice::<Value>(text) else {
            continue;
        };
        let first = |pointers: &[&str]| {
            pointers.iter().find_map(|p| {
                event
                    .pointer(p)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
            })
        };
        if facts.id.is_none() {
            facts.id = first(fields.id);
        }
        if facts.model.is_none() {
            facts.model = first(fields.model);
        }
        if facts.id.is_some() && facts.model.is_some() {
            break;
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(dialect: Dialect, head: &str) -> (Option<String>, Option<String>) {
        let f = response_facts(dialect, head.as_bytes());
        (f.id, f.model)
    }

    fn some(id: &str, model: &str) -> (Option<String>, Option<String>) {
        (Some(id.to_owned()), Some(model.to_owned()))
    }

    #[test]
    fn each_dialect_names_its_response_where_it_declares() {
        let chat = "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-x\",\"choices\":[]}\n\n";
        assert_eq!(
            facts(Dialect::OpenAiChat, chat),
            some("chatcmpl-1", "gpt-x")
        );
        let responses = "event: response.created\ndata: {\"type\":\"response.created\",\
                         \"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5\"}}\n\n";
        assert_eq!(
            facts(Dialect::OpenAiResponses, responses),
            some("resp_1", "gpt-5")
        );
        let anthropic = "event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_start\n\
                         data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\
                         \"model\":\"claude-x\"}}\n\n";
        assert_eq!(
            facts(Dialect::Anthropic, anthropic),
            some("msg_1", "claude-x")
        );
        let gemini =
            "data: {\"candidates\":[],\"modelVersion\":\"gemini-3\",\"responseId\":\"r1\"}\r\n\r\n";
        assert_eq!(facts(Dialect::Gemini, gemini), some("r1", "gemini-3"));
        // A whole body, not a stream.
        let body =
            "{\"id\": \"msg_2\", \"type\": \"message\", \"model\": \"claude-y\", \"content\": []}";
        assert_eq!(facts(Dialect::Anthropic, body), some("msg_2", "claude-y"));
        // Ollama names no response; Bedrock's stream names neither.
        let ollama =
            "{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"}}\n";
        assert_eq!(
            facts(Dialect::Ollama, ollama),
            (None, Some("llama3".to_owned()))
        );
        assert_eq!(facts(Dialect::Bedrock, chat), (None, None));
    }

    #[test]
    fn twin_a_head_that_says_nothing_or_breaks_gives_nothing_and_never_fails() {
        // Another event's nested id (a call's) is not the response's.
        let anthropic = "data: {\"type\":\"content_block_start\",\"index\":0,\
                         \"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\"}}\n\n";
        assert_eq!(facts(Dialect::Anthropic, anthropic), (None, None));
        // Empty strings say nothing; a later event may say it.
        let chat =
            "data: {\"id\":\"\",\"model\":\"\"}\n\ndata: {\"id\":\"c2\",\"model\":\"m2\"}\n\n";
        assert_eq!(facts(Dialect::OpenAiChat, chat), some("c2", "m2"));
        // Cut inside the event, not JSON, not framed, not a string: nothing.
        for head in [
            "data: {\"id\":\"chatcm",
            "data: {not json\n\n",
            "\u{0}\u{1}",
            "data: {\"id\":7}\n\n",
        ] {
            assert_eq!(facts(Dialect::OpenAiChat, head), (None, None), "{head:?}");
        }
        // Past the head's bound nothing is read.
        let late = format!(
            "{}data: {{\"id\":\"late\"}}\n\n",
            ": pad\n".repeat(HEAD_BYTES / 6 + 1)
        );
        assert_eq!(facts(Dialect::OpenAiChat, &late), (None, None));
    }
}
