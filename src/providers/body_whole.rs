//! A stream's first JSON line read as a whole body before the framing checks
//! that the line is one value (`framing::jsonl`, `whole_line`): a body is
//! all its stream, and its direct reader's scanner reads every byte of it
//! anyway, so the framing's own pass over the line is spared when the reader
//! certifies the line as one body.
//!
//! What is read here is read exactly as [`Assembler::feed_text`] reads the
//! line the framing would have handed on: the framing hands on that very text
//! whenever the line is one JSON object nested at most `MAX_JSON_DEPTH` deep,
//! which the scanner's certificate implies (it nests at most a few levels
//! more than `MAX_SKIP_DEPTH`, and the typed decodes, which skip members
//! unbounded, are not used here). Anything else is left, with nothing
//! changed, to the framing and the usual path.

use std::cell::Cell;

use super::{direct, may_be_body};
use crate::providers::{Assembler, Dialect, Error, Input, LiveEvent};

thread_local! {
    /// Set while a line offered whole is read: the direct readers read it
    /// with their scanner only.
    static OFFERED: Cell<bool> = const { Cell::new(false) };
}

#[cfg(test)]
thread_local! {
    static NO_OFFER: Cell<bool> = const { Cell::new(false) };
    /// Lines read whole here (the tests check they read some).
    pub(crate) static WHOLE_READS: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f` with `flag` set, and clears it after.
pub(super) fn while_set<T>(
    flag: &'static std::thread::LocalKey<Cell<bool>>,
    f: impl FnOnce() -> T,
) -> T {
    flag.with(|r| r.set(true));
    let out = f();
    flag.with(|r| r.set(false));
    out
}

/// Runs `f` with no line read whole here (the framing checks every line).
#[cfg(test)]
pub(crate) fn without_offer<T>(f: impl FnOnce() -> T) -> T {
    while_set(&NO_OFFER, f)
}

/// Whether a direct reader may read a body its scanner gave up on with its
/// typed decode (not for a line offered whole: see the module).
pub(crate) fn typed_decode() -> bool {
    !OFFERED.with(Cell::get)
}

/// Reads `text`, the first JSON line of the stream (one object after
/// trailing whitespace, checked as UTF-8, which the framing offers before it
/// checks that the line is one value), as [`Assembler::feed_text`] reads it
/// when the dialect's direct reader's scanner certifies it as a whole body;
/// `None`, with nothing changed, otherwise.
pub(crate) fn whole_first(
    asm: &mut Assembler,
    text: &str,
    mut live: Option<&mut Vec<LiveEvent>>,
) -> Option<Result<(), Error>> {
    #[cfg(test)]
    if NO_OFFER.with(Cell::get) {
        return None;
    }
    // What `feed_text` and `json_event` refuse or read otherwise.
    if asm.events != 0
        || asm.stream.is_closed()
        || text.len() > asm.stream.limits.max_event_bytes
        || !text.starts_with('{')
    {
        return None;
    }
    let input = Input::Text(text);
    // The body marker, as `body::intercept` looks for it (`auto` tries
    // every body it reads directly). Not for Cohere's: its scanner
    // certifies a body only with the marker (`"finish_reason"`) as one of
    // its keys, which the scanner reads only without escapes, so a body it
    // certifies holds the marker (and the search, from the start of a body
    // whose finish reason comes last, would cross all of it).
    if asm
        .dialect
        .is_some_and(|d| d != Dialect::Cohere && !may_be_body(d, input))
    {
        return None;
    }
    let ordinal = asm.stream.ordinal;
    asm.events += 1;
    asm.stream.ordinal = asm.events;
    // As `dispatch`: the dialect's memo first (which serves no first event:
    // it learns its template from the events before).
    let served = match asm.dialect {
        Some(d) if d.serves() => asm.served(d, None, text, live.as_deref_mut()),
        _ => None,
    };
    let fed = served.or_else(|| while_set(&OFFERED, || direct(asm, None, input, live)));
    match fed {
        Some(r) => {
            #[cfg(test)]
            WHOLE_READS.with(|n| n.set(n.get() + 1));
            if let Err(e) = &r {
                asm.record(e);
            }
            Some(r)
        }
        None => {
            asm.events -= 1;
            asm.stream.ordinal = ordinal;
            None
        }
    }
}
