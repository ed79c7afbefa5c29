//! The one protocol machine, and the declarations of each dialect's protocol
//! it runs (QUIRKS Q24–Q26).
//!
//! A message goes through these phases; every event that changes it is one
//! transition, and anything else is a `ProtocolError`:
//!
//! ```text
//!            start                end (reason)
//!   Idle ─────────────▶ Started ───────────────▶ Ended(Normal | Abnormal)
//!     │                                ▲
//!     └────────────── end ─────────────┘      (dialects without a start event)
//! ```
//!
//! A block (a text, thinking or refusal part, a tool call, a tool result) has
//! its own:
//!
//! ```text
//!              start                 stop (its own)
//!   Implicit ─────────▶ Open ──────────────────────▶ Stopped
//!      │ content          │ content, end of input ──▶ Finished ── own stop ─▶ Stopped
//!      └──────────────────┴── message end / stream end ─▶ Finished
//! ```
//!
//! `Implicit` is a call whose fragments came before its start event (kept, Q7):
//! its start may still come, once. `Finished` takes no more content but has
//! not seen its own stop: in a dialect whose blocks end with their own stop
//! event, a message that ends normally with such a block lost an event of the
//! stream, and is not complete.

use super::error::Rule;
use super::state::{violation, Fail, Src};

/// Where a message is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) enum MessagePhase {
    /// No start event yet (dialects without one stay here until they end).
    #[default]
    Idle,
    /// Its start event came.
    Started,
    /// It ended: normally (a normal reason, under the protocol) or not.
    Ended(End),
}

/// How a message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum End {
    /// With a normal reason (Q15).
    Normal,
    /// With no reason (Q26), a reason that is not normal, or by an event that is
    /// never a normal end whatever its reason says.
    Abnormal,
}

/// What happens to a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageEvent {
    /// Its explicit start event.
    Start,
    /// Its end; `normal` when the recorded reason is a normal one and the end
    /// event may be normal at all.
    End { normal: bool },
}

impl MessagePhase {
    /// The phase after `ev`, or the protocol error. A second end changes
    /// nothing (`Ok(None)`).
    pub(crate) fn on(self, ev: MessageEvent, choice: i64) -> Result<Option<MessagePhase>, Fail> {
        use MessageEvent as E;
        use MessagePhase as P;
        match (self, ev) {
            (P::Idle, E::Start) => Ok(Some(P::Started)),
            (P::Idle | P::Started, E::End { normal }) => Ok(Some(P::Ended(if normal {
                End::Normal
            } else {
                End::Abnormal
            }))),
            (P::Ended(_), E::End { .. }) => Ok(None),
            (P::Started | P::Ended(_), E::Start) => Err(violation(
                Rule::StartedTwice,
                Some(format!("choice {choice}")),
                "the message had started already",
            )),
        }
    }

    pub(crate) fn ended(self) -> bool {
        matches!(self, MessagePhase::Ended(_))
    }

    pub(crate) fn normal(self) -> bool {
        self == MessagePhase::Ended(End::Normal)
    }
}

/// Where a block is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) enum BlockPhase {
    /// Opened by content that came before its start event (a call, Q7).
    Implicit,
    /// Opened; content may come.
    #[default]
    Open,
    /// Takes no more content (its input is done, or the message or stream
    /// ended), without its own stop.
    Finished,
    /// Its own stop event came.
    Stopped,
}

/// What happens to a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockEvent {
    /// Its start event.
    Start,
    /// Content for it.
    Content,
    /// Its own stop event; a second one is a duplicated event (Q25).
    Stop,
    /// A restatement of its end (Responses `done` events): idempotent.
    Done,
    /// The end of its input, or of the message or stream: idempotent.
    Finish,
}

impl BlockPhase {
    /// The phase after `ev`, or the protocol error naming `at`.
    pub(crate) fn on(self, ev: BlockEvent, at: impl FnOnce() -> String) -> Result<Self, Fail> {
        use BlockEvent as E;
        use BlockPhase as P;
        match (self, ev) {
            (P::Implicit, E::Start) => Ok(P::Open),
            (P::Implicit | P::Open, E::Content) => Ok(self),
            (P::Implicit | P::Open, E::Stop) | (_, E::Done) => Ok(P::Stopped),
            (P::Implicit | P::Open | P::Finished, E::Finish) => Ok(P::Finished),
            (P::Stopped, E::Finish) => Ok(P::Stopped),
            (P::Open | P::Finished | P::Stopped, E::Start) => Err(violation(
                Rule::OpenedTwice,
                Some(at()),
                "a start event for a block that was already opened",
            )),
            (P::Finished | P::Stopped, E::Content) => Err(violation(
                Rule::AfterStop,
                Some(at()),
                "content arrived after the block stopped",
            )),
            (P::Finished | P::Stopped, E::Stop) => Err(violation(
                Rule::AfterStop,
                Some(at()),
                "the block had stopped already",
            )),
        }
    }

    /// True once nothing may change the block any more.
    pub(crate) fn closed(self) -> bool {
        matches!(self, BlockPhase::Finished | BlockPhase::Stopped)
    }
}

/// What may come after a message's end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AfterEnd {
    /// Events go on (usage-only chunks, restated reasons): only content for the
    /// ended message is refused.
    NoContent,
    /// Only these events (`*Suffix` matches a suffix).
    Only(&'static [&'static str]),
}

/// One dialect's protocol, as the machine runs it and the docs show it.
#[derive(Debug)]
pub(crate) struct Protocol {
    /// What a message is called in errors (`"the message"`, `"the response"`).
    pub(crate) subject: &'static str,
    /// The event that starts a message, if the dialect sends one.
    pub(crate) start: &'static [&'static str],
    /// Events that open a block.
    pub(crate) open: &'static [&'static str],
    /// Events that add to a block.
    pub(crate) add: &'static [&'static str],
    /// Events that stop a block.
    pub(crate) stop: &'static [&'static str],
    /// The positions (namespaces of [`Src`]) whose blocks end with their own
    /// stop: a message ending normally with one of them unstopped lost an event.
    pub(crate) stopped_positions: &'static [u8],
    /// The events that end a message, and whether they can end it normally.
    pub(crate) ends: &'static [(&'static str, Ends)],
    /// How the end is called in errors (`"message_stop"`).
    pub(crate) end_label: &'static str,
    /// What may follow the end.
    pub(crate) after_end: AfterEnd,
}

/// What an end event can mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    /// Normal when the recorded reason is.
    ByReason,
    /// Never normal.
    Abnormal,
    /// A provider error.
    Failed,
}

impl Protocol {
    /// Refuses an event after the message ended, unless the protocol allows it.
    pub(crate) fn after_end(&self, ended: bool, event: &str) -> Result<(), Fail> {
        let AfterEnd::Only(allowed) = self.after_end else {
            return Ok(());
        };
        if !ended || allowed.iter().any(|a| matches(a, event)) {
            return Ok(());
        }
        Err(violation(
            Rule::AfterEnd,
            Some(self.subject.to_owned()),
            format!("{event} arrived after {}", self.end_label),
        ))
    }

    /// True when blocks at this position end with their own stop.
    pub(crate) fn stops(&self, src: Src) -> bool {
        self.stopped_positions.contains(&src.0)
    }
}

fn matches(pattern: &str, event: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some(suffix) => event.ends_with(suffix),
        None => pattern == event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: Result<impl std::fmt::Debug, Fail>) -> Option<Rule> {
        match r {
            Err(Fail::Protocol { rule, .. }) => Some(rule),
            _ => None,
        }
    }

    #[test]
    fn a_message_starts_once_and_ends_once() {
        let p = MessagePhase::Idle;
        let started = p.on(MessageEvent::Start, 0).ok().flatten();
        assert_eq!(started, Some(MessagePhase::Started));
        assert_eq!(
            rule(MessagePhase::Started.on(MessageEvent::Start, 0)),
            Some(Rule::StartedTwice)
        );
        let ended = MessagePhase::Started.on(MessageEvent::End { normal: true }, 0);
        assert_eq!(ended.ok().flatten(), Some(MessagePhase::Ended(End::Normal)));
        let again = MessagePhase::Ended(End::Normal).on(MessageEvent::End { normal: false }, 0);
        assert_eq!(again.ok().flatten(), None);
        assert_eq!(
            rule(MessagePhase::Ended(End::Abnormal).on(MessageEvent::Start, 0)),
            Some(Rule::StartedTwice)
        );
        assert!(MessagePhase::Ended(End::Normal).normal());
        assert!(!MessagePhase::Ended(End::Abnormal).normal());
        assert!(!MessagePhase::Started.ended());
    }

    #[test]
    fn a_block_takes_content_until_it_stops() {
        let at = || "block 0".to_owned();
        let p = BlockPhase::Implicit;
        assert_eq!(
            p.on(BlockEvent::Content, at).ok(),
            Some(BlockPhase::Implicit)
        );
        assert_eq!(p.on(BlockEvent::Start, at).ok(), Some(BlockPhase::Open));
        let open = BlockPhase::Open;
        assert_eq!(
            rule(open.on(BlockEvent::Start, at)),
            Some(Rule::OpenedTwice)
        );
        assert_eq!(
            open.on(BlockEvent::Stop, at).ok(),
            Some(BlockPhase::Stopped)
        );
        assert_eq!(
            open.on(BlockEvent::Finish, at).ok(),
            Some(BlockPhase::Finished)
        );
        let stopped = BlockPhase::Stopped;
        assert_eq!(
            rule(stopped.on(BlockEvent::Stop, at)),
            Some(Rule::AfterStop)
        );
        assert_eq!(
            rule(stopped.on(BlockEvent::Content, at)),
            Some(Rule::AfterStop)
        );
        assert_eq!(
            stopped.on(BlockEvent::Done, at).ok(),
            Some(BlockPhase::Stopped)
        );
        assert_eq!(
            stopped.on(BlockEvent::Finish, at).ok(),
            Some(BlockPhase::Stopped)
        );
        let finished = BlockPhase::Finished;
        assert_eq!(
            finished.on(BlockEvent::Done, at).ok(),
            Some(BlockPhase::Stopped)
        );
        assert_eq!(
            rule(finished.on(BlockEvent::Content, at)),
            Some(Rule::AfterStop)
        );
        assert!(finished.closed() && stopped.closed() && !open.closed());
    }

    #[test]
    fn after_the_end_only_what_the_protocol_allows() {
        let p = Protocol {
            subject: "the message",
            start: &[],
            open: &[],
            add: &[],
            stop: &[],
            stopped_positions: &[],
            ends: &[],
            end_label: "the end",
            after_end: AfterEnd::Only(&["ping", "*Exception"]),
        };
        assert!(p.after_end(true, "ping").is_ok());
        assert!(p.after_end(true, "throttlingException").is_ok());
        assert!(p.after_end(false, "delta").is_ok());
        assert_eq!(rule(p.after_end(true, "delta")), Some(Rule::AfterEnd));
    }
}
