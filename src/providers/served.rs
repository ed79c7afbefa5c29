//! The events a dialect's memo (its fast path's template, `scan/memo.rs`)
//! takes, applied before the body check of [`Assembler::dispatch`], and the
//! outcome of an event the dialect read.

use super::registry::Offer;
use super::state::Fail;
use super::{detect, scan, Assembler, Dialect, Error, Input, LiveEvent};

#[cfg(test)]
thread_local! {
    /// Events the dialects' memos applied before the body check (the tests
    /// check they apply some).
    pub(crate) static SERVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Assembler {
    /// An event-stream frame's payload: [`Assembler::feed_text`] once it is
    /// checked as UTF-8, else [`Assembler::feed_json`]; a payload the
    /// dialect's memo takes is checked and applied at once (only its string
    /// is checked, `Memo::fill_bytes`), as `feed_text` would apply it.
    pub(crate) fn feed_payload(
        &mut self,
        event_name: Option<&str>,
        bytes: &[u8],
        mut live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), Error> {
        if self.dialect.is_some_and(Dialect::serves) {
            if let Some(fed) = self.served_payload(event_name, bytes, live.as_deref_mut()) {
                return fed;
            }
        }
        match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => self.feed_text(event_name, text, live),
            Err(_) => self.feed_json(event_name, bytes, live),
        }
    }

    /// [`Assembler::feed_payload`] by the memo: what `feed_text` does for
    /// an event [`Assembler::served`] applies (counted; no event of a closed
    /// or done stream, nor one over `max_event_bytes`, is tried); `None`,
    /// nothing changed but the ordinal `feed_text` sets again, otherwise.
    #[inline(never)]
    fn served_payload(
        &mut self,
        event_name: Option<&str>,
        bytes: &[u8],
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Option<Result<(), Error>> {
        let (Some(dialect), Some(state)) = (self.dialect, &mut self.state) else {
            return None;
        };
        let s = &mut self.stream;
        if s.is_closed() || s.done || bytes.len() > s.limits.max_event_bytes || !scan::enabled() {
            return None;
        }
        let ordinal = self.events + 1;
        s.ordinal = ordinal;
        let mut live = s.live(live);
        let offer = Offer {
            s,
            live: &mut live,
            dialect,
            event_name,
            text: bytes,
        };
        let r = state.feed_served_bytes(offer)?;
        self.events = ordinal;
        #[cfg(test)]
        SERVED.with(|n| n.set(n.get() + 1));
        // The bytes are UTF-8 (the memo checked them): the same event as text.
        let r = self.applied(r, dialect, event_name, Input::Json(bytes));
        if let Err(e) = &r {
            self.record(e);
        }
        Some(r)
    }

    /// The event applied by the dialect's memo (its fast path's template,
    /// `scan/memo.rs`), when the dialect is told, the stream not done and
    /// the memo takes the text; `None`, nothing changed, otherwise. What
    /// [`Assembler::dispatch`] does past the body check is done the same way:
    /// the body check itself finds nothing in such an event (the template's
    /// members with another string in its place, another nonce or number:
    /// no body shape reads those, and the direct readers certify no event
    /// with the template's members). A dialect may also apply here an event
    /// it reads whole and knows to be no body (`Adapter::feed_served`).
    #[inline(never)]
    pub(super) fn served(
        &mut self,
        dialect: Dialect,
        event_name: Option<&str>,
        text: &str,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Option<Result<(), Error>> {
        let Some(state) = &mut self.state else {
            return None;
        };
        if self.stream.done || !scan::enabled() {
            return None;
        }
        let mut live = self.stream.live(live);
        let offer = Offer {
            s: &mut self.stream,
            live: &mut live,
            dialect,
            event_name,
            text,
        };
        let r = state.feed_served(offer)?;
        #[cfg(test)]
        SERVED.with(|n| n.set(n.get() + 1));
        Some(self.applied(r, dialect, event_name, Input::Text(text)))
    }

    /// The outcome of an event the dialect read: its failure as the event's
    /// error, or the event skipped when the dialect did not know it. Inline
    /// in each caller (a call of its own cost every event of every dialect
    /// about 34 instructions).
    #[inline(always)]
    pub(super) fn applied(
        &mut self,
        r: Result<(), Fail>,
        dialect: Dialect,
        event_name: Option<&str>,
        input: Input<'_>,
    ) -> Result<(), Error> {
        if let Err(f) = r {
            if matches!(f, Fail::Provider { .. }) {
                self.stream.fail_all();
            }
            return Err(self.wrap(f, event_name, input));
        }
        if let Some(event_type) = self.stream.unknown.take() {
            // An error in another dialect's shape is an error, not an event to skip.
            if let Some(fail) = detect::error_in_any_shape(event_name, input) {
                self.stream.fail_all();
                return Err(self.wrap(fail, event_name, input));
            }
            // Q32: an event this dialect cannot read that another dialect reads.
            if let detect::Detected::Dialect(other) = detect::detect(event_name, input) {
                if other != dialect {
                    return Err(Error::WrongDialect {
                        event: self.event_ref(event_name, input),
                        expected: dialect,
                        looks_like: other,
                        auto: self.auto,
                    });
                }
            }
            // Q29: forward compatible: skipped and counted.
            self.stream.skip(&event_type);
        }
        Ok(())
    }
}
