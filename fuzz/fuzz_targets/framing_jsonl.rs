//! The JSON lines decoder, and the auto-detecting decoder on JSON lines.
//!
//! Checks: whole, cut and byte-by-byte decoding agree (events and error);
//! errors are sticky; the auto decoder gives the same frames once it detects
//! JSON lines; on text of one JSON object per line within the limits the
//! lines are those of a plain model; invalid UTF-8 is an error.
#![no_main]

use _toolstitch::framing::{Error, Frame, FramingLimits, JsonLinesDecoder, Transport};
use libfuzzer_sys::fuzz_target;
use toolstitch_fuzz::{cuts, model, pipeline, Header};

fn decode(limits: FramingLimits, pieces: &[&[u8]]) -> (Vec<String>, Result<(), Error>) {
    let mut d = JsonLinesDecoder::new(limits);
    let mut out = Vec::new();
    for p in pieces {
        if let Err(e) = d.push(p, &mut out) {
            let mut more = Vec::new();
            assert_eq!(d.push(b"{}\n", &mut more), Err(e.clone()), "sticky");
            assert_eq!(d.finish(&mut more), Err(e.clone()), "sticky at finish");
            assert!(more.is_empty());
            return (out, Err(e));
        }
    }
    let r = d.finish(&mut out);
    (out, r)
}

/// Every line the model keeps is a JSON object with nothing around it.
fn one_object_per_line(text: &str) -> bool {
    model::jsonl(text).iter().all(|line| {
        line.trim() == line.as_str()
            && serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(line).is_ok()
    })
}

fuzz_target!(|data: &[u8]| {
    let (h, body) = Header::split(data);
    let limits = pipeline::limits(h.small_limits).1;
    let whole = decode(limits, &[body]);
    let pieces = cuts::pieces(body, h.cuts, h.seed);
    assert_eq!(decode(limits, &pieces), whole, "whole vs cut");
    if body.len() <= 1024 {
        assert_eq!(
            decode(limits, &cuts::bytewise(body)),
            whole,
            "whole vs bytewise"
        );
    }
    let lines: Vec<Frame> = whole.0.iter().cloned().map(Frame::Line).collect();
    let (_, frames, r) = pipeline::decode_frames(Some(Transport::JsonLines), limits, &pieces);
    assert_eq!(
        (&frames, &r),
        (&lines, &whole.1),
        "Decoder::with_transport differs"
    );
    let (transport, frames, r) = pipeline::decode_frames(None, limits, &pieces);
    if transport == Some(Transport::JsonLines) {
        assert_eq!(
            (frames, r),
            (lines, whole.1.clone()),
            "auto decoder differs"
        );
    }
    match std::str::from_utf8(body) {
        Err(_) => assert!(whole.1.is_err(), "invalid UTF-8 accepted"),
        // The decoder reads JSON values (a value may span lines, several may
        // share one, an array is read element by element), so the plain line
        // model holds for text that is one JSON object per line, as JSON lines
        // are written; anything else is checked by the agreements above.
        Ok(text) if !h.small_limits && one_object_per_line(text) => {
            assert_eq!(whole.1, Ok(()));
            assert_eq!(whole.0, model::jsonl(text), "lines differ from the model");
        }
        Ok(_) => {}
    }
});
