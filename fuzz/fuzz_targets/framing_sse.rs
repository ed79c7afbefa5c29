//! The SSE decoder, and the auto-detecting decoder on SSE.
//!
//! Checks: the bytes whole, cut where the input says and byte by byte give
//! the same events and the same error; errors are sticky; the auto decoder
//! gives the same frames once it detects SSE; on valid UTF-8 within the
//! limits the events are those of a plain WHATWG model; invalid UTF-8 is an
//! error; the events written back as SSE decode to themselves.
#![no_main]

use _toolstitch::framing::{Error, Frame, FramingLimits, SseDecoder, SseEvent, Transport};
use libfuzzer_sys::fuzz_target;
use toolstitch_fuzz::{cuts, model, pipeline, Header};

fn decode(limits: FramingLimits, pieces: &[&[u8]]) -> (Vec<SseEvent>, Result<(), Error>) {
    let mut d = SseDecoder::new(limits);
    let mut out = Vec::new();
    for p in pieces {
        if let Err(e) = d.push(p, &mut out) {
            let mut more = Vec::new();
            assert_eq!(d.push(b"data: x\n\n", &mut more), Err(e.clone()), "sticky");
            assert_eq!(d.finish(&mut more), Err(e.clone()), "sticky at finish");
            assert!(more.is_empty());
            return (out, Err(e));
        }
    }
    let r = d.finish(&mut out);
    if r.is_ok() {
        // Fresh after finish: the same stream decodes the same way again.
        let mut again = Vec::new();
        let r2 = pieces.iter().try_for_each(|p| d.push(p, &mut again));
        let r2 = r2.and_then(|()| d.finish(&mut again));
        assert_eq!((&again, &r2), (&out, &r), "decoder not fresh after finish");
    }
    (out, r)
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
    let (transport, frames, r) = pipeline::decode_frames(None, limits, &pieces);
    if transport == Some(Transport::Sse) {
        let events: Vec<Frame> = whole.0.iter().cloned().map(Frame::Sse).collect();
        assert_eq!(
            (frames, r),
            (events, whole.1.clone()),
            "auto decoder differs"
        );
    }
    match std::str::from_utf8(body) {
        Err(_) => assert!(whole.1.is_err(), "invalid UTF-8 accepted"),
        Ok(text) if !h.small_limits => {
            let (events, clean) = model::sse(text);
            assert_eq!(whole.0, events, "events differ from the model");
            assert_eq!(
                whole.1.is_ok(),
                clean,
                "end differs from the model: {:?}",
                whole.1
            );
        }
        Ok(_) => {}
    }
    if whole.1.is_ok() {
        let text = model::sse_text(&whole.0);
        let back = decode(FramingLimits::default(), &[text.as_bytes()]);
        assert_eq!(
            back,
            (whole.0.clone(), Ok(())),
            "events written back differ"
        );
    }
});
