//! The bedrock-invoke dialect: InvokeModelWithResponseStream `chunk` frames
//! wrapping Claude's and Nova's own events (recordings in
//! `tests/fixtures/bedrock_invoke/`), cut at every byte, InvokeModel bodies,
//! and what it refuses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;
use support::{assembler, base64_encode as b64};

use _toolstitch::framing::FramingLimits;
use _toolstitch::providers::{
    AssembledMessage, BytesAssembler, BytesError, DecodeKind, Dialect, Error, Rule,
};
use serde_json::{json, Value};

fn recording(name: &str) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/bedrock_invoke/"
    );
    std::fs::read(format!("{path}{name}")).unwrap()
}

fn bytes_assembler(d: Option<Dialect>) -> BytesAssembler {
    BytesAssembler::new(assembler(d), FramingLimits::default())
}

/// The message of `pieces` fed in order, then closed.
fn feed_pieces(d: Option<Dialect>, pieces: &[&[u8]]) -> (Option<Dialect>, AssembledMessage) {
    let mut a = bytes_assembler(d);
    for p in pieces {
        a.feed_bytes(p, None).unwrap();
    }
    a.close(None).unwrap();
    (a.core().dialect(), a.core().messages().remove(0))
}

/// One AWS event-stream frame with string headers.
fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (k, v) in headers {
        h.push(u8::try_from(k.len()).unwrap());
        h.extend_from_slice(k.as_bytes());
        h.push(7);
        h.extend_from_slice(&u16::try_from(v.len()).unwrap().to_be_bytes());
        h.extend_from_slice(v.as_bytes());
    }
    let total = u32::try_from(12 + h.len() + payload.len() + 4).unwrap();
    let mut out = total.to_be_bytes().to_vec();
    out.extend_from_slice(&u32::try_from(h.len()).unwrap().to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// A `chunk` frame whose `bytes` is `payload`'s base64.
fn chunk_of(payload: &[u8]) -> Vec<u8> {
    let body = json!({"bytes": b64(payload), "p": "abc"}).to_string();
    frame(
        &[
            (":event-type", "chunk"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        body.as_bytes(),
    )
}

fn chunk(event: &Value) -> Vec<u8> {
    chunk_of(event.to_string().as_bytes())
}

fn claude_events() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 10, "outputTokenCount": 9}}),
    ]
}

fn stream_of(events: &[Value]) -> Vec<u8> {
    events.iter().flat_map(chunk).collect()
}

/// Feeds whole bytes; the first error.
fn feed_all(d: Option<Dialect>, bytes: &[u8]) -> (BytesAssembler, Option<BytesError>) {
    let mut a = bytes_assembler(d);
    let fed = a.feed_bytes(bytes, None).err();
    let closed = a.close(None).err();
    (a, fed.or(closed))
}

fn decode_kind(e: Option<BytesError>) -> Option<DecodeKind> {
    match e {
        Some(BytesError::Core(Error::Decode { kind, .. })) => Some(kind),
        _ => None,
    }
}

fn check_claude(m: &AssembledMessage) {
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.tool_uses.len(), 1);
    let call = &m.tool_uses[0].block;
    assert_eq!(call.id, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.input, "{\"location\": \"Paris\"}");
    assert_eq!(m.text, "I'll check the current weather in Paris for you.");
    assert_eq!(m.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(m.tokens.input_tokens, Some(377));
    let usage = m.usage.as_ref().unwrap();
    assert_eq!(
        usage["amazon-bedrock-invocationMetrics"]["inputTokenCount"],
        json!(377)
    );
}

fn check_nova(m: &AssembledMessage) {
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.tool_uses.len(), 1);
    let call = &m.tool_uses[0].block;
    assert_eq!(call.id, "tooluse_lAG_zP8QRHmSYOwZzzaCqA");
    assert_eq!(call.name, "get_temperature");
    assert_eq!(call.input, "{\"city\":\"Paris\"}");
    assert!(m.text.starts_with("<thinking>"), "{}", m.text);
    assert_eq!(m.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(m.tokens.input_tokens, Some(471));
    assert_eq!(m.tokens.total_tokens, Some(562));
    let usage = m.usage.as_ref().unwrap();
    assert_eq!(
        usage["amazon-bedrock-invocationMetrics"]["outputTokenCount"],
        json!(91)
    );
}

#[test]
fn claude_and_nova_recordings_cut_at_every_byte() {
    for (name, check) in [
        (
            "claude-text-then-tool-use.eventstream",
            check_claude as fn(&AssembledMessage),
        ),
        ("nova-tool-use.eventstream", check_nova),
    ] {
        let bytes = recording(name);
        for d in [Some(Dialect::BedrockInvoke), None] {
            let (dialect, m) = feed_pieces(d, &[&bytes]);
            assert_eq!(dialect, Some(Dialect::BedrockInvoke), "{name}");
            check(&m);
            for cut in 0..=bytes.len() {
                let (head, tail) = bytes.split_at(cut);
                let (_, m) = feed_pieces(d, &[head, tail]);
                check(&m);
            }
            let ragged = support::ragged(&bytes, 13);
            check(&feed_pieces(d, &ragged).1);
        }
    }
}

#[test]
fn an_invoke_model_body_is_the_models_own() {
    let claude = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}], "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}});
    let nova = json!({"output": {"message": {"role": "assistant", "content": [{"text": "hi"}, {"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {"a": 1}}}]}}, "stopReason": "tool_use", "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}});
    for (body, id) in [(claude, "toolu_1"), (nova, "tooluse_1")] {
        let mut a = assembler(Some(Dialect::BedrockInvoke));
        a.feed_json(None, body.to_string().as_bytes(), None)
            .unwrap();
        a.close(None).unwrap();
        assert_eq!(a.dialect(), Some(Dialect::BedrockInvoke));
        let m = a.messages().remove(0);
        assert!(m.complete, "{:?}", m.problems);
        assert_eq!(m.tool_uses[0].block.id, id);
        assert_eq!(m.tool_uses[0].block.input, "{\"a\":1}");
        assert_eq!(m.tokens.output_tokens, Some(4));
    }
}

#[test]
fn decoded_events_and_boto3_chunks_are_read_too() {
    let events = claude_events();
    let mut a = assembler(Some(Dialect::BedrockInvoke));
    for (i, e) in events.iter().enumerate() {
        let fed = if i % 2 == 0 {
            e.clone()
        } else {
            json!({"chunk": {"bytes": b64(e.to_string().as_bytes())}})
        };
        a.feed_value(None, &fed, None).unwrap();
    }
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.tool_uses[0].block.input, "{\"city\": \"Paris\"}");
}

#[test]
fn a_stream_cut_short_or_doubled_is_not_complete() {
    let events = claude_events();
    // Truncated before message_stop.
    let (a, e) = feed_all(None, &stream_of(&events[..6]));
    assert!(e.is_none());
    assert!(!a.core().messages()[0].complete);
    // Cut inside a frame.
    let whole = stream_of(&events);
    let (a, e) = feed_all(None, &whole[..whole.len() - 5]);
    assert!(matches!(e, Some(BytesError::Framing(_))), "{e:?}");
    assert!(!a.core().messages()[0].complete);
    // A doubled delta after its block's stop, a replayed message_start.
    let mut doubled = events.clone();
    doubled.insert(5, events[3].clone());
    let (a, e) = feed_all(None, &stream_of(&doubled));
    assert!(
        matches!(
            e,
            Some(BytesError::Core(Error::Protocol {
                rule: Rule::AfterStop,
                ..
            }))
        ),
        "{e:?}"
    );
    assert!(!a.core().messages()[0].complete);
    let mut replayed = events.clone();
    replayed.insert(1, events[0].clone());
    let (_, e) = feed_all(None, &stream_of(&replayed));
    assert!(
        matches!(
            e,
            Some(BytesError::Core(Error::Protocol {
                rule: Rule::StartedTwice,
                ..
            }))
        ),
        "{e:?}"
    );
    // Nova: content after its messageStop.
    let nova = [
        json!({"messageStart": {"role": "assistant"}}),
        json!({"contentBlockDelta": {"delta": {"text": "hi"}, "contentBlockIndex": 0}}),
        json!({"contentBlockStop": {"contentBlockIndex": 0}}),
        json!({"messageStop": {"stopReason": "end_turn"}}),
        json!({"contentBlockDelta": {"delta": {"text": "more"}, "contentBlockIndex": 1}}),
    ];
    let (a, e) = feed_all(None, &stream_of(&nova));
    assert!(
        matches!(
            e,
            Some(BytesError::Core(Error::Protocol {
                rule: Rule::AfterEnd,
                ..
            }))
        ),
        "{e:?}"
    );
    let m = &a.core().messages()[0];
    assert_eq!(m.text, "hi");
    assert!(!m.complete);
}

#[test]
fn bytes_that_are_not_base64_json_or_an_object_are_refused() {
    let start = chunk(&claude_events()[0]);
    let bad_payloads: [(&[u8], DecodeKind); 4] = [
        (br#"{"bytes": "eyJ0e*XBlIjoi"}"#, DecodeKind::BadValue),
        (br#"{"bytes": 12}"#, DecodeKind::WrongType),
        (br#"{"p": "abc"}"#, DecodeKind::WrongType),
        (br#"{"bytes": "#, DecodeKind::MalformedJson),
    ];
    for (payload, kind) in bad_payloads {
        let f = frame(
            &[(":event-type", "chunk"), (":message-type", "event")],
            payload,
        );
        for stream in [f.clone(), [start.clone(), f].concat()] {
            let (a, e) = feed_all(Some(Dialect::BedrockInvoke), &stream);
            assert_eq!(
                decode_kind(e),
                Some(kind),
                "{}",
                String::from_utf8_lossy(payload)
            );
            assert!(!a.core().messages()[0].complete);
        }
    }
    let inner: [(&[u8], DecodeKind); 4] = [
        (b"{\"type\": \"message_start\"", DecodeKind::MalformedJson),
        (b"[1, 2]", DecodeKind::NotAnObject),
        (b"", DecodeKind::MalformedJson),
        (b"\xff\xfe{}", DecodeKind::MalformedJson),
    ];
    for (raw, kind) in inner {
        for stream in [chunk_of(raw), [start.clone(), chunk_of(raw)].concat()] {
            let (a, e) = feed_all(None, &stream);
            assert_eq!(
                decode_kind(e),
                Some(kind),
                "{}",
                String::from_utf8_lossy(raw)
            );
            assert!(!a.core().messages()[0].complete);
        }
    }
    // A field of the wrong type inside, named as the wrapped event's.
    let wrong = json!({"type": "content_block_delta", "index": "x", "delta": {"type": "text_delta", "text": 5}});
    let (_, e) = feed_all(None, &[start, chunk(&wrong)].concat());
    match e {
        Some(BytesError::Core(Error::Decode { detail, .. })) => {
            assert!(detail.contains("inside the chunk"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_model_families_are_named() {
    for (event, family) in [
        (
            json!({"generation": "Hi", "prompt_token_count": 3, "stop_reason": null}),
            "Meta Llama",
        ),
        (
            json!({"outputs": [{"text": "Hi", "stop_reason": null}]}),
            "Mistral",
        ),
        (json!({"outputText": "Hi", "index": 0}), "Titan"),
        (json!({"zzz": 1}), "zzz"),
    ] {
        let (a, e) = feed_all(None, &chunk(&event));
        match e {
            Some(BytesError::Core(Error::Decode { kind, detail, .. })) => {
                assert_eq!(kind, DecodeKind::BadValue);
                assert!(detail.contains(family), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!a.core().messages()[0].complete);
    }
}

#[test]
fn an_exception_frame_is_a_provider_error() {
    let events = claude_events();
    let exception = frame(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
            (":content-type", "application/json"),
        ],
        br#"{"message": "Too many requests, please wait before trying again."}"#,
    );
    for d in [Some(Dialect::BedrockInvoke), None] {
        let stream = [stream_of(&events[..4]), exception.clone()].concat();
        let (a, e) = feed_all(d, &stream);
        match e {
            Some(BytesError::Core(Error::Provider {
                error_type,
                message,
                ..
            })) => {
                assert_eq!(error_type, "throttlingException");
                assert!(message.starts_with("Too many requests"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let m = &a.core().messages()[0];
        assert!(!m.complete);
        assert_eq!(m.tool_uses[0].block.input, "{\"city\": \"Paris\"}");
    }
}

#[test]
fn a_chunk_in_another_named_dialect_is_a_mismatch() {
    let (_, e) = feed_all(Some(Dialect::Anthropic), &chunk(&claude_events()[0]));
    assert!(
        matches!(
            e,
            Some(BytesError::Core(Error::WrongDialect {
                expected: Dialect::Anthropic,
                looks_like: Dialect::BedrockInvoke,
                ..
            }))
        ),
        "{e:?}"
    );
}

#[test]
fn an_event_of_the_other_family_is_refused() {
    let claude = claude_events();
    let nova_delta =
        json!({"contentBlockDelta": {"delta": {"text": "hi"}, "contentBlockIndex": 0}});
    let nova_start = json!({"messageStart": {"role": "assistant"}});
    for (stream, family) in [
        ([chunk(&claude[0]), chunk(&nova_delta)].concat(), "Nova"),
        ([chunk(&nova_start), chunk(&claude[1])].concat(), "Claude"),
        ([chunk(&nova_start), chunk(&claude[2])].concat(), "Claude"),
    ] {
        let (a, e) = feed_all(None, &stream);
        match e {
            Some(BytesError::Core(Error::Decode { kind, detail, .. })) => {
                assert_eq!(kind, DecodeKind::BadValue);
                assert!(detail.contains(&format!("a {family} (")), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        let m = &a.core().messages()[0];
        assert!(!m.complete);
        assert_eq!(
            m.text, "",
            "nothing of the other family's event was applied"
        );
    }
}
