//! The phases of a message and of a block, each transition one `match` arm
//! (the diagrams are in `protocol/mod.rs`, which runs them). A leaf the stream's
//! state can hold without knowing the protocol machine.

use super::error::Rule;
use super::fail::{violation, Fail};

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
