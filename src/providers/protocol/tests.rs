use super::*;
use crate::providers::fail::Fail;
use crate::providers::phase::{End, MessagePhase};

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
