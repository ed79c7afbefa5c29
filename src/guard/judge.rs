//! Which calls a client may now act on, and whether they pass: the guard's
//! judgment of the live events since the last one ([`Guard::judge_now`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{one_line, shown, CallCheck, Cause, Guard, Step};
use crate::providers::{AssembledMessage, Assembler, LiveEvent, ProblemKind, ToolUse};

/// Calls and messages as the guard judges them.
#[derive(Debug, Default)]
pub(super) struct Judge {
    /// The calls of each message (internal keys), as they opened.
    pub(super) opened: BTreeMap<i64, BTreeSet<i64>>,
    /// Calls a client may take as complete, to check in their present form.
    pub(super) due: BTreeSet<(i64, i64)>,
    /// Each passed call as it was when it passed (id, name, input).
    pub(super) passed: HashMap<(i64, i64), (String, String, String)>,
    /// Messages that ended since the last judgment: (choice, complete, reason).
    pub(super) ended: Vec<(i64, bool, Option<String>)>,
    /// A passed call that changed since (the first one).
    pub(super) changed: Option<(i64, i64)>,
    /// Bytes of messages read to check calls.
    pub(super) spent: usize,
}

impl Guard {
    /// Judges the live events since the last judgment: every call they
    /// complete is checked, every message they end must be complete.
    pub(super) fn judge_now(
        &mut self,
        check: &mut dyn CallCheck,
        step: &mut Step,
    ) -> Result<(), ()> {
        if self.live.is_empty() && self.judge.due.is_empty() {
            return Ok(());
        }
        let own_stops = self
            .asm
            .core()
            .dialect()
            .is_some_and(|d| !d.spec().protocol.stop.is_empty());
        let judge = &mut self.judge;
        for ev in self.live.drain(..) {
            match ev {
                LiveEvent::ToolCallStarted { choice, index, .. } => {
                    let opened = judge.opened.entry(choice).or_default();
                    if !own_stops {
                        judge.due.extend(
                            opened
                                .iter()
                                .filter(|&&k| {
                                    k != index && !judge.passed.contains_key(&(choice, k))
                                })
                                .map(|&k| (choice, k)),
                        );
                    }
                    opened.insert(index);
                    if judge.passed.contains_key(&(choice, index)) {
                        judge.changed.get_or_insert((choice, index));
                    }
                }
                LiveEvent::ToolInputDelta { choice, index, .. } => {
                    if judge.passed.contains_key(&(choice, index)) {
                        judge.changed.get_or_insert((choice, index));
                    }
                }
                LiveEvent::ToolCallFinished { choice, index } => {
                    judge.opened.entry(choice).or_default().insert(index);
                    judge.due.insert((choice, index));
                }
                LiveEvent::MessageDone {
                    choice,
                    finish_reason,
                    complete,
                } => {
                    let opened = judge.opened.entry(choice).or_default();
                    judge.due.extend(
                        opened
                            .iter()
                            .filter(|&&k| !judge.passed.contains_key(&(choice, k)))
                            .map(|&k| (choice, k)),
                    );
                    judge.ended.push((choice, complete, finish_reason));
                }
                LiveEvent::TextDelta { .. }
                | LiveEvent::ThinkingDelta { .. }
                | LiveEvent::RefusalDelta { .. } => {}
            }
        }
        if let Some((choice, key)) = self.judge.changed.take() {
            // A client may have acted on the call as it was when it passed.
            let id = self
                .judge
                .passed
                .get(&(choice, key))
                .map(|(id, name, _)| (id.clone(), name.clone()))
                .unwrap_or_default();
            let reason = format!(
                "tool call {} ({}) changed after it was complete and checked (its input or \
                 name came again): which one a client acted on cannot be told",
                shown(&id.0),
                shown(&id.1)
            );
            self.block(Cause::Unreadable, reason, Some((choice, id.0, id.1)), step);
            return Err(());
        }
        if self.judge.due.is_empty() && self.judge.ended.is_empty() {
            return Ok(());
        }
        let due = std::mem::take(&mut self.judge.due);
        let ended = std::mem::take(&mut self.judge.ended);
        let mut messages: BTreeMap<i64, Option<AssembledMessage>> = BTreeMap::new();
        let budget = self.limits.max_check_bytes;
        for &(choice, key) in &due {
            let spent = &mut self.judge.spent;
            let message = messages
                .entry(choice)
                .or_insert_with(|| read_message(choice, self.asm.core(), spent));
            if self.judge.spent > budget {
                break;
            }
            let Some(call) = message
                .as_ref()
                .and_then(|m| m.tool_uses.iter().find(|t| t.index == key))
            else {
                continue;
            };
            if server_run(self.asm.core(), call) {
                continue;
            }
            let now = (
                call.block.id.clone(),
                call.block.name.clone(),
                call.block.input.clone(),
            );
            if self.judge.passed.get(&(choice, key)) == Some(&now) {
                continue;
            }
            if let Err(why) = check.check(call) {
                let reason = format!(
                    "tool call {} ({}) is not valid: {}",
                    shown(&call.block.id),
                    shown(&call.block.name),
                    one_line(&why)
                );
                let call = Some((choice, call.block.id.clone(), call.block.name.clone()));
                self.block(Cause::InvalidCall, reason, call, step);
                return Err(());
            }
            self.judge.passed.insert((choice, key), now);
        }
        for (choice, complete, reason) in ended.iter().cloned() {
            if complete || self.judge.spent > budget {
                continue;
            }
            let spent = &mut self.judge.spent;
            let message = messages
                .entry(choice)
                .or_insert_with(|| read_message(choice, self.asm.core(), spent));
            let asm = self.asm.core();
            let calls: Vec<String> = message
                .iter()
                .flat_map(|m| m.tool_uses.iter())
                .filter(|t| !server_run(asm, t))
                .map(|t| format!("{} ({})", shown(&t.block.id), shown(&t.block.name)))
                .collect();
            // A message without client calls is blocked only when it lost them
            // (Q65: its finish says the client has calls to run).
            let lost = message
                .iter()
                .flat_map(|m| m.problems.iter())
                .any(|p| p.kind == ProblemKind::MissingCalls);
            if calls.is_empty() && !lost {
                continue;
            }
            let how = match &reason {
                Some(r) => format!("ended with {r:?}"),
                None => "ended without a normal end".to_owned(),
            };
            if calls.is_empty() {
                let why = format!(
                    "choice {choice} {how}, which says the client has calls to run, and holds \
                     none: its calls were lost"
                );
                self.block(Cause::Incomplete, one_line(&why), None, step);
                return Err(());
            }
            let problems: Vec<&str> = message
                .iter()
                .flat_map(|m| m.problems.iter())
                .map(|p| p.message.as_str())
                .take(3)
                .collect();
            let mut why = format!(
                "choice {choice} {how}, so its tool calls may be cut short: {}",
                calls.join(", ")
            );
            if !problems.is_empty() {
                why.push_str(" (");
                why.push_str(&problems.join("; "));
                why.push(')');
            }
            self.block(Cause::Incomplete, one_line(&why), None, step);
            return Err(());
        }
        if self.judge.spent > budget {
            let why = format!(
                "checking the calls would read more than {budget} bytes of messages \
                 (max_check_bytes): too many calls in one stream"
            );
            self.block(Cause::Limit, why, None, step);
            return Err(());
        }
        Ok(())
    }
}

/// A call the guard leaves unchecked as the provider's own: only a
/// server-side call of one of the dialect's server item kinds, which its SDKs
/// also present as the provider's (not a kind its declaration's `client_run`
/// names: those the SDKs hand to the application as ordinary calls). A call
/// marked server-side by other means (xAI's `custom_tool_call` named like one
/// of its tools, Q47) reaches applications as a call and is checked.
fn server_run(asm: &Assembler, call: &ToolUse) -> bool {
    let kind = call.block.kind.as_str();
    call.server_side
        && asm.dialect().is_some_and(|d| {
            d.server_items().contains(&kind)
                && !d.spec().protocol.reading.client_run.contains(&kind)
        })
}

/// One message, read to check its calls; its size is added to `spent`.
fn read_message(choice: i64, asm: &Assembler, spent: &mut usize) -> Option<AssembledMessage> {
    let message = asm.message(choice);
    let size = message.as_ref().map_or(0, |m| {
        m.tool_uses
            .iter()
            .map(|t| t.block.input.len())
            .sum::<usize>()
            .saturating_add(m.text.len())
    });
    *spent = spent.saturating_add(size);
    message
}
