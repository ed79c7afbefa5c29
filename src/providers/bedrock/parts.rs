//! The parts of a payload the fast path reads (`scan_payload`): a delta, a
//! block's start.

use super::{Delta, Start, ToolUseDelta, ToolUseStart};
use crate::providers::scan::{Scan, Seen};

/// A block's start: a tool call's (its id, name and type, each a string or
/// `null`, once); a tool result's, or anything else, is for the general path.
pub(super) fn scan_start<'a>(s: &mut Scan<'a>) -> Option<Start<'a>> {
    let mut start = Start {
        tool_use: None,
        tool_result: None,
    };
    let mut seen = Seen::default();
    s.object(|s, key| match key {
        "toolUse" => {
            seen.once(0)?;
            if s.null()? {
                return Some(());
            }
            let tool = start.tool_use.insert(ToolUseStart {
                tool_use_id: None,
                name: None,
                kind: None,
            });
            let mut inner = Seen::default();
            s.object(|s, key| {
                let (n, field) = match key {
                    "toolUseId" => (0, &mut tool.tool_use_id),
                    "name" => (1, &mut tool.name),
                    "type" => (2, &mut tool.kind),
                    _ => return s.skip(),
                };
                inner.once(n)?;
                *field = s.opt_str()?;
                Some(())
            })
        }
        "toolResult" => None,
        _ => s.skip(),
    })?;
    Some(start)
}

/// A delta: its text or its tool input (a string or `null`, once);
/// reasoning or a tool result is for the general path.
pub(super) fn scan_delta<'a>(s: &mut Scan<'a>, d: &mut Delta<'a>) -> Option<()> {
    let mut seen = Seen::default();
    s.object(|s, key| match key {
        "text" => {
            seen.once(0)?;
            d.text = s.hole()?;
            Some(())
        }
        "toolUse" => {
            seen.once(1)?;
            if s.null()? {
                return Some(());
            }
            let tool = d.tool_use.insert(ToolUseDelta { input: None });
            let mut inner = Seen::default();
            s.object(|s, key| match key {
                "input" => {
                    inner.once(0)?;
                    tool.input = s.hole()?;
                    Some(())
                }
                _ => s.skip(),
            })
        }
        "reasoningContent" | "toolResult" => None,
        _ => s.skip(),
    })
}
