//! Where live events go, and how much of them is made.
//!
//! The live events of the Python `Live` readers carry every text and input
//! fragment as owned strings. The guard decides on where calls start, change
//! and end and where messages end, never on what the text or the input says
//! (it reads the calls whole from the messages when it checks them): its
//! assembler makes live events in the [`LiveDetail::Structural`] detail, where
//! text, thinking and refusal deltas are not made at all and a call's events
//! carry no string (an empty `String` is no allocation).

use super::{Assembler, LiveEvent};

/// How much the live events of an assembler carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum LiveDetail {
    /// Every event, with its strings.
    #[default]
    Full,
    /// Only the events a call's or a message's course shows in
    /// (`ToolCallStarted`, `ToolInputDelta`, `ToolCallFinished`,
    /// `MessageDone`), without the call's id, name or input fragment.
    Structural,
}

/// Where live events go; `None` costs one branch per would-be event.
pub(crate) struct Live<'a> {
    sink: Option<&'a mut Vec<LiveEvent>>,
    detail: LiveDetail,
}

impl<'a> Live<'a> {
    #[inline]
    pub(crate) fn new(sink: Option<&'a mut Vec<LiveEvent>>, detail: LiveDetail) -> Self {
        Self { sink, detail }
    }

    /// No sink: nothing is made.
    #[cfg(test)]
    pub(crate) fn off() -> Self {
        Self::new(None, LiveDetail::Full)
    }

    fn full(&self) -> bool {
        self.detail == LiveDetail::Full
    }

    /// An event made in every detail (a call finished, a message done).
    #[inline]
    pub(crate) fn emit(&mut self, make: impl FnOnce() -> LiveEvent) {
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.push(make());
        }
    }

    /// A text, thinking or refusal delta: not made in the structural detail.
    #[inline]
    pub(crate) fn content(&mut self, make: impl FnOnce() -> LiveEvent) {
        if self.full() {
            self.emit(make);
        }
    }

    /// A call's id for [`Live::started`], made by `make` only when an event
    /// that carries it is collected (a sink, the full detail); else empty.
    #[inline]
    pub(crate) fn id(&self, make: impl FnOnce() -> String) -> String {
        if self.sink.is_some() && self.full() {
            make()
        } else {
            String::new()
        }
    }

    /// A call opened (or named late, Q7): in the structural detail without
    /// its id and name (`id` from [`Live::id`]).
    #[inline]
    pub(crate) fn started(&mut self, choice: i64, index: i64, id: String, name: &str) {
        let full = self.full();
        self.emit(|| LiveEvent::ToolCallStarted {
            choice,
            index,
            id: if full { id } else { String::new() },
            name: if full { name.to_owned() } else { String::new() },
        });
    }

    /// Input appended to a call, or its whole new input (`replaces`): in the
    /// structural detail without the fragment.
    #[inline]
    pub(crate) fn input(&mut self, choice: i64, index: i64, fragment: &str, replaces: bool) {
        let full = self.full();
        self.emit(|| LiveEvent::ToolInputDelta {
            choice,
            index,
            fragment: if full {
                fragment.to_owned()
            } else {
                String::new()
            },
            replaces,
        });
    }
}

impl Assembler {
    /// Sets how much the live events this assembler makes carry (the guard's
    /// is [`LiveDetail::Structural`]).
    pub(crate) fn set_live_detail(&mut self, detail: LiveDetail) {
        self.stream.live_detail = detail;
    }
}
