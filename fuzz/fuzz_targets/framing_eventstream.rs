//! The AWS event-stream decoder, and the auto-detecting decoder on it.
//!
//! Raw input: whole, cut and byte-by-byte decoding agree (messages and
//! error), errors are sticky, and the auto decoder agrees once it detects
//! event-stream. Structured input (messages built from the input): their
//! encoding decodes to themselves, cut anywhere, through both decoders; and
//! any single changed byte of the encoding is an error (every byte is under a
//! CRC), never a different message.
#![no_main]

use _toolstitch::framing::{
    Error, EventStreamDecoder, EventStreamMessage, Frame, FramingLimits, HeaderValue, Transport,
};
use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolstitch_fuzz::{cuts, pipeline, Header};

fn decode(limits: FramingLimits, pieces: &[&[u8]]) -> (Vec<EventStreamMessage>, Result<(), Error>) {
    let mut d = EventStreamDecoder::new(limits);
    let mut out = Vec::new();
    for p in pieces {
        if let Err(e) = d.push(p, &mut out) {
            let mut more = Vec::new();
            assert_eq!(d.push(&[0; 16], &mut more), Err(e.clone()), "sticky");
            assert_eq!(d.finish(&mut more), Err(e.clone()), "sticky at finish");
            assert!(more.is_empty());
            return (out, Err(e));
        }
    }
    let r = d.finish(&mut out);
    (out, r)
}

#[derive(Arbitrary, Debug)]
enum Value {
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    String(String),
    Timestamp(i64),
    Uuid([u8; 16]),
}

#[derive(Arbitrary, Debug)]
struct Message {
    headers: Vec<(String, Value)>,
    payload: Vec<u8>,
}

impl Message {
    fn build(self) -> EventStreamMessage {
        let headers = self
            .headers
            .into_iter()
            .map(|(n, v)| {
                let v = match v {
                    Value::Bool(b) => HeaderValue::Bool(b),
                    Value::Byte(b) => HeaderValue::Byte(b),
                    Value::Short(s) => HeaderValue::Short(s),
                    Value::Int(i) => HeaderValue::Int(i),
                    Value::Long(l) => HeaderValue::Long(l),
                    Value::Bytes(b) => HeaderValue::Bytes(b),
                    Value::String(s) => HeaderValue::String(s),
                    Value::Timestamp(t) => HeaderValue::Timestamp(t),
                    Value::Uuid(u) => HeaderValue::Uuid(u),
                };
                (n, v)
            })
            .collect();
        EventStreamMessage {
            headers,
            payload: self.payload,
        }
    }
}

fn check_agree(
    limits: FramingLimits,
    bytes: &[u8],
    h: &Header,
) -> (Vec<EventStreamMessage>, Result<(), Error>) {
    let whole = decode(limits, &[bytes]);
    let pieces = cuts::pieces(bytes, h.cuts, h.seed);
    assert_eq!(decode(limits, &pieces), whole, "whole vs cut");
    if bytes.len() <= 1024 {
        assert_eq!(
            decode(limits, &cuts::bytewise(bytes)),
            whole,
            "whole vs bytewise"
        );
    }
    let (transport, frames, r) = pipeline::decode_frames(None, limits, &pieces);
    if transport == Some(Transport::EventStream) {
        let messages: Vec<Frame> = whole.0.iter().cloned().map(Frame::EventStream).collect();
        assert_eq!(
            (frames, r),
            (messages, whole.1.clone()),
            "auto decoder differs"
        );
    }
    whole
}

fuzz_target!(|data: &[u8]| {
    let (h, body) = Header::split(data);
    let limits = pipeline::limits(h.small_limits).1;
    if !h.structured {
        let _ = check_agree(limits, body, &h);
        return;
    }
    let mut u = Unstructured::new(body);
    let Ok(list) = Vec::<Message>::arbitrary(&mut u) else {
        return;
    };
    let messages: Vec<EventStreamMessage> = list.into_iter().take(8).map(Message::build).collect();
    let mut bytes = Vec::new();
    for m in &messages {
        match m.encode() {
            Ok(b) => bytes.extend_from_slice(&b),
            Err(_) => return,
        }
    }
    let limits = FramingLimits::default();
    let (decoded, r) = check_agree(limits, &bytes, &h);
    assert_eq!(r, Ok(()), "an encoded stream must decode");
    assert_eq!(decoded, messages, "encode then decode changed the messages");
    let (transport, frames, r) = pipeline::decode_frames(None, limits, &[&bytes]);
    if !messages.is_empty() {
        assert_eq!(
            transport,
            Some(Transport::EventStream),
            "encoded frames not detected"
        );
        assert_eq!(r, Ok(()));
        assert_eq!(frames.len(), messages.len());
    }
    if !bytes.is_empty() {
        let at = usize::from(h.seed) % bytes.len();
        let mut broken = bytes.clone();
        broken[at] ^= h.cuts | 1;
        let (_, r) = decode(limits, &[&broken]);
        assert!(r.is_err(), "a changed byte at {at} went unnoticed");
    }
});
