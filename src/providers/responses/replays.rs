//! Events that come again: a resent or reordered `sequence_number` (Q33),
//! and argument deltas after a call's `function_call_arguments.done` that
//! replay its done text (Q44).

#![allow(clippy::wildcard_imports)]

use super::*;

/// At most this many missing sequence numbers are remembered.
const MAX_MISSING: u64 = 4096;

impl State {
    /// Q44: `true` when an argument delta for output item `oi`, after that
    /// call's `function_call_arguments.done` and before its item's end, only
    /// replays the done text: every such delta, joined in arrival order, must
    /// spell the done text from its start. It is skipped, with a note (once per
    /// call). Any other delta there is refused: new text after the done one.
    pub(super) fn stale_delta(&mut self, s: &mut Stream, oi: Option<i64>, key: i64, delta: &str) -> R<bool> {
        let oi = oi.unwrap_or(-1);
        let Some(&at) = self.args_done.get(&oi) else {
            return Ok(false);
        };
        if delta.is_empty() {
            return Ok(true);
        }
        let ch = s.choice(C)?;
        let done = ch.tools.get(key).map_or("", |b| b.input.as_str());
        let replays = done.get(at..).is_some_and(|rest| rest.starts_with(delta));
        if !replays {
            return Err(violation(
                Rule::AfterStop,
                Some(ch.call_label(C, key)),
                "an argument delta after function_call_arguments.done brings text the done \
                 arguments do not have at that place (new text after the call's end)",
            ));
        }
        let noted = ch
            .notes
            .iter()
            .any(|n| n.kind == NoteKind::StaleDeltaSkipped && n.call == Some(key));
        self.args_done.insert(oi, at.saturating_add(delta.len()));
        if !noted {
            s.note(
                C,
                NoteKind::StaleDeltaSkipped,
                Some(key),
                "argument deltas came after function_call_arguments.done that only replay the \
                 done text from its start, in order: they were skipped"
                    .to_owned(),
            );
        }
        Ok(true)
    }

    /// Q33: `true` when the event is to be applied; a resent one is
    /// skipped, a gap or a late arrival leaves a problem.
    pub(super) fn in_sequence(&mut self, s: &mut Stream, kind: &str, n: u64) -> bool {
        match self.last_seq {
            Some(last) if n <= last => {
                if self.missing.remove(&n) {
                    s.problem(
                        ProblemKind::Sequence,
                        Some(C),
                        format!(
                            "the event with sequence_number {n} arrived after {last}: out of \
                             order, so it was not applied"
                        ),
                    );
                } else {
                    s.skip(&format!("{kind} (resent, sequence_number {n})"));
                }
                false
            }
            Some(last) if n > last.saturating_add(1) => {
                s.problem(
                    ProblemKind::Sequence,
                    Some(C),
                    format!(
                        "sequence_number jumped from {last} to {n}: {} events are missing",
                        n - last - 1
                    ),
                );
                let first = last.saturating_add(1).max(n.saturating_sub(MAX_MISSING));
                self.missing.extend(first..n);
                self.last_seq = Some(n);
                true
            }
            _ => {
                self.last_seq = Some(n);
                true
            }
        }
    }
}
