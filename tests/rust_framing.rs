//! The framing layer on real recorded provider streams (`tests/fixtures/real`,
//! provenance in tests/fixtures/PROVENANCE.md): every way of cutting the bytes gives the same
//! events, and those events are the ones the recording holds.

use std::collections::BTreeMap;

mod support;
use support::{cassette_bodies, fixture, ragged};

use _toolstitch::framing::{
    detect, Decoder, EventStreamDecoder, EventStreamMessage, Frame, FramingLimits,
    JsonLinesDecoder, SseDecoder, SseEvent, Transport,
};
use serde_json::Value;

/// The ways every recording is fed: whole, one byte at a time, ragged.
fn cuttings(bytes: &[u8]) -> Vec<Vec<&[u8]>> {
    vec![
        vec![bytes],
        bytes.chunks(1).collect(),
        ragged(bytes, 17),
        bytes.chunks(4096).collect(),
    ]
}

fn sse_events(pieces: &[&[u8]]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    for piece in pieces {
        if let Err(e) = decoder.push(piece, &mut out) {
            panic!("push: {e}");
        }
    }
    if let Err(e) = decoder.finish(&mut out) {
        panic!("finish: {e}");
    }
    out
}

fn auto_frames(pieces: &[&[u8]]) -> Vec<Frame> {
    let mut decoder = Decoder::new(FramingLimits::default());
    let mut out = Vec::new();
    for piece in pieces {
        if let Err(e) = decoder.push(piece, &mut out) {
            panic!("push: {e}");
        }
    }
    if let Err(e) = decoder.finish(&mut out) {
        panic!("finish: {e}");
    }
    out
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn openai_chat_completions_parallel_two_tools() {
    let bytes = fixture("openai_chat-completions-parallel-two-tools.sse");
    assert_eq!(detect(&bytes), Some(Transport::Sse));
    let events = sse_events(&[&bytes]);
    for pieces in cuttings(&bytes) {
        assert_eq!(sse_events(&pieces), events);
    }
    assert_eq!(events.len(), 26);
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    assert!(events.iter().all(|e| e.event.is_none() && e.id.is_none()));

    // The bytes are exact: the arguments the chunks carry add up to the
    // recording's oracle (PROVENANCE.md, recording 1).
    let mut arguments: BTreeMap<i64, String> = BTreeMap::new();
    for event in events.iter().take(25) {
        let chunk = json(&event.data);
        let calls = chunk
            .pointer("/choices/0/delta/tool_calls")
            .and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_i64).unwrap_or(-1);
            let fragment = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or_default();
            arguments.entry(index).or_default().push_str(fragment);
        }
    }
    assert_eq!(
        arguments.get(&0).map(String::as_str),
        Some("{\"city\": \"Edinburgh\", \"country\": \"GB\", \"units\": \"c\"}")
    );
    assert_eq!(
        arguments.get(&1).map(String::as_str),
        Some("{\"ticker\": \"AAPL\", \"exchange\": \"NASDAQ\"}")
    );

    let frames = auto_frames(&ragged(&bytes, 17));
    assert_eq!(
        frames,
        events.into_iter().map(Frame::Sse).collect::<Vec<_>>()
    );
}

#[test]
fn anthropic_messages_text_then_tool_use() {
    let bytes = fixture("anthropic_messages-text-then-tool-use.sse");
    // The recording ends without a closing blank line: finish() keeps the
    // last event because its data is complete JSON.
    assert!(!bytes.ends_with(b"\n"));
    let events = sse_events(&[&bytes]);
    for pieces in cuttings(&bytes) {
        assert_eq!(sse_events(&pieces), events);
    }
    assert_eq!(events.len(), 15);
    for event in &events {
        let data = json(&event.data);
        assert_eq!(
            event.event.as_deref(),
            data.get("type").and_then(Value::as_str)
        );
    }
    let names: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    assert!(names.contains(&"ping"));

    let input: String = events
        .iter()
        .map(|e| json(&e.data))
        .filter(|d| d.pointer("/index").and_then(Value::as_i64) == Some(1))
        .filter_map(|d| {
            d.pointer("/delta/partial_json")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(input, "{\"location\": \"Paris\"}");

    // Cut short before its last event's end, the stream is truncated.
    let cut = bytes
        .get(..bytes.len().saturating_sub(3))
        .unwrap_or_default();
    let mut decoder = SseDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    assert_eq!(decoder.push(cut, &mut out), Ok(()));
    assert!(matches!(
        decoder.finish(&mut out),
        Err(_toolstitch::framing::Error::Truncated { .. })
    ));
    assert_eq!(out.len(), 14);

    let frames = auto_frames(&cuttings(&bytes).swap_remove(1));
    assert_eq!(
        frames,
        events.into_iter().map(Frame::Sse).collect::<Vec<_>>()
    );
}

fn event_stream_messages(pieces: &[&[u8]]) -> Vec<EventStreamMessage> {
    let mut decoder = EventStreamDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    for piece in pieces {
        if let Err(e) = decoder.push(piece, &mut out) {
            panic!("push: {e}");
        }
    }
    if let Err(e) = decoder.finish(&mut out) {
        panic!("finish: {e}");
    }
    out
}

#[test]
fn bedrock_converse_stream_nova_tool_use() {
    let yaml = String::from_utf8(fixture("bedrock_converse-stream-nova-tool-use.vcr.yaml"))
        .unwrap_or_default();
    let bodies = cassette_bodies(&yaml);
    assert_eq!(bodies.len(), 2);
    let mut tool_input = String::new();
    let mut tool_name = String::new();
    for body in &bodies {
        assert_eq!(detect(body), Some(Transport::EventStream));
        let messages = event_stream_messages(&[body]);
        for pieces in cuttings(body) {
            assert_eq!(event_stream_messages(&pieces), messages);
        }
        assert_eq!(
            auto_frames(&ragged(body, 17)),
            messages
                .iter()
                .cloned()
                .map(Frame::EventStream)
                .collect::<Vec<_>>()
        );

        let types: Vec<&str> = messages
            .iter()
            .filter_map(EventStreamMessage::event_type)
            .collect();
        assert_eq!(
            types.len(),
            messages.len(),
            "every frame has an :event-type"
        );
        assert_eq!(types.first(), Some(&"messageStart"));
        assert!(types.contains(&"contentBlockDelta"));
        // Q22: messageStop comes before metadata, which ends the stream.
        assert_eq!(
            types.get(types.len().saturating_sub(2)..),
            Some(["messageStop", "metadata"].as_slice())
        );
        for message in &messages {
            assert_eq!(message.message_type(), Some("event"));
            assert_eq!(message.content_type(), Some("application/json"));
            let payload = json(message.payload_str().unwrap_or_default());
            // Q22: every payload carries a random-length padding field.
            assert!(payload.get("p").is_some_and(Value::is_string), "{payload}");
            if let Some(name) = payload
                .pointer("/start/toolUse/name")
                .and_then(Value::as_str)
            {
                tool_name = name.to_owned();
            }
            if let Some(input) = payload
                .pointer("/delta/toolUse/input")
                .and_then(Value::as_str)
            {
                tool_input.push_str(input);
            }
        }
    }
    assert_eq!(tool_name, "get_temperature");
    assert_eq!(tool_input, "{\"city\":\"Paris\"}");

    // One flipped bit anywhere in a frame is caught by a CRC (or, in the
    // prelude's lengths, by a CRC before the length is trusted).
    let body = bodies.first().cloned().unwrap_or_default();
    for at in [0, 5, 9, 20, 100, body.len() - 1] {
        let mut damaged = body.clone();
        if let Some(b) = damaged.get_mut(at) {
            *b ^= 0x10;
        }
        let mut decoder = EventStreamDecoder::new(FramingLimits::default());
        let mut out = Vec::new();
        let result = decoder
            .push(&damaged, &mut out)
            .and_then(|()| decoder.finish(&mut out));
        assert!(
            matches!(result, Err(_toolstitch::framing::Error::Crc { .. })),
            "flip at {at}: {result:?}"
        );
    }
}

#[test]
fn json_lines_recordings() {
    for (name, count) in [
        ("google_vertex-stream-function-call-args-4-calls.jsonl", 15),
        ("mistral_chat-single-chunk-tool-call.jsonl", 2),
    ] {
        let bytes = fixture(name);
        assert_eq!(detect(&bytes), Some(Transport::JsonLines), "{name}");
        let mut lines = Vec::new();
        let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
        for piece in ragged(&bytes, 17) {
            assert_eq!(decoder.push(piece, &mut lines), Ok(()));
        }
        assert_eq!(decoder.finish(&mut lines), Ok(()));
        assert_eq!(lines.len(), count, "{name}");
        for line in &lines {
            assert!(json(line).is_object());
        }
        let frames = auto_frames(&bytes.chunks(1).collect::<Vec<_>>());
        assert_eq!(
            frames,
            lines.into_iter().map(Frame::Line).collect::<Vec<_>>()
        );
    }
}

/// The same recordings as one JSON array of events (Gemini's
/// `streamGenerateContent` without `alt=sse`), pretty-printed with CRLF line
/// ends, and as the documents run together with no separator: every cutting
/// gives back the recorded documents.
#[test]
fn json_array_and_concatenated_forms_of_the_recordings() {
    for name in [
        "google_vertex-stream-function-call-args-4-calls.jsonl",
        "mistral_chat-single-chunk-tool-call.jsonl",
    ] {
        let bytes = fixture(name);
        let docs: Vec<String> = String::from_utf8(bytes)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        let values: Vec<Value> = docs.iter().map(|d| json(d)).collect();
        let pretty_crlf = |v: &Value| {
            serde_json::to_string_pretty(v)
                .unwrap_or_default()
                .replace('\n', "\r\n")
        };
        let array = format!(
            "[{}]\r\n",
            values
                .iter()
                .map(pretty_crlf)
                .collect::<Vec<_>>()
                .join("\r\n,\r\n")
        );
        let run_together = docs.concat();
        for (form, text) in [("array", array), ("run together", run_together)] {
            for pieces in cuttings(text.as_bytes()) {
                let frames = auto_frames(&pieces);
                let got: Vec<Value> = frames
                    .iter()
                    .map(|f| match f {
                        Frame::Line(t) => json(t),
                        other => panic!("{name} {form}: not a JSON frame: {other:?}"),
                    })
                    .collect();
                assert_eq!(got, values, "{name} {form}");
            }
        }
    }
}
