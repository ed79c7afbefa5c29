//! The fast path of an Ollama line, read by the scanner of `providers/scan`
//! in one pass: every member the typed decode reads, a call's `arguments`
//! object taken as its raw text and written compactly as the typed decode
//! writes it (`compact_raw`), never through a tree. A line of text or
//! thinking alone is the memo's template (`scan::Memo`): the next such line
//! (the same model, timestamp and members) is its one string to scan.

use super::{Call, Count, Function, Line, Msg};
use crate::providers::json::{Str, TextOrObject};
use crate::providers::scan::{Facts, Memoized, Scan, Seen};

/// Fills `line` (fresh) with exactly the [`Line`] the typed decode gives, or
/// returns `None` for the general path: anything [`Scan`] does not certify, a
/// count that is not a plain integer, an index in a string, arguments that
/// are neither a string nor an object. Gives the span of the line's text or
/// thinking, when it has one of them only.
pub(super) fn scan_line<'a>(text: &'a str, line: &mut Line<'a>) -> Option<Option<(usize, usize)>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, count) = match key {
            "message" => {
                seen.once(0)?;
                if !p.null()? {
                    scan_message(p, line.message.insert(Msg::default()))?;
                }
                return Some(());
            }
            "done" => {
                seen.once(1)?;
                line.done = p.opt_bool()?;
                return Some(());
            }
            "done_reason" => {
                seen.once(2)?;
                line.done_reason = p.opt_str()?;
                return Some(());
            }
            "error" => {
                seen.once(3)?;
                line.error = p.opt_str()?;
                return Some(());
            }
            "prompt_eval_count" => (4, &mut line.prompt_eval_count),
            "eval_count" => (5, &mut line.eval_count),
            "total_duration" => (6, &mut line.total_duration),
            "load_duration" => (7, &mut line.load_duration),
            "prompt_eval_duration" => (8, &mut line.prompt_eval_duration),
            "eval_duration" => (9, &mut line.eval_duration),
            _ => return p.skip(),
        };
        seen.once(n)?;
        *count = p.opt_u64()?.map(Count);
        Some(())
    })?;
    p.end()?;
    Some(p.the_hole())
}

fn scan_message<'a>(p: &mut Scan<'a>, m: &mut Msg<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "content" => {
            seen.once(0)?;
            m.content = p.hole()?;
            Some(())
        }
        "thinking" => {
            seen.once(1)?;
            m.thinking = p.hole()?;
            Some(())
        }
        "tool_calls" => {
            seen.once(2)?;
            if p.null()? {
                return Some(());
            }
            let calls = m.tool_calls.insert(Vec::new());
            p.array(|p| {
                calls.push(Call::default());
                scan_call(p, calls.last_mut()?)
            })
        }
        _ => p.skip(),
    })
}

fn scan_call<'a>(p: &mut Scan<'a>, call: &mut Call<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "id" => {
            seen.once(0)?;
            call.id = p.opt_str()?;
            Some(())
        }
        "function" => {
            seen.once(1)?;
            if p.null()? {
                return Some(());
            }
            scan_function(p, call.function.insert(Function::default()))
        }
        _ => p.skip(),
    })
}

fn scan_function<'a>(p: &mut Scan<'a>, f: &mut Function<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "index" => {
            seen.once(0)?;
            f.index = p.opt_index()?;
            Some(())
        }
        "name" => {
            seen.once(1)?;
            f.name = p.opt_str()?;
            Some(())
        }
        "arguments" => {
            seen.once(2)?;
            f.arguments = if p.null()? {
                None
            } else {
                Some(text_or_object(p)?)
            };
            Some(())
        }
        _ => p.skip(),
    })
}

/// A string, or an object kept as its compact text (what [`TextOrObject`]
/// decodes; borrowed when the object is written so already); anything else
/// gives up.
pub(crate) fn text_or_object<'a>(p: &mut Scan<'a>) -> Option<TextOrObject<'a>> {
    match p.peek_token()? {
        b'{' => p.compact_text().map(TextOrObject::Object),
        b'"' => p.string().map(TextOrObject::Text),
        _ => None,
    }
}

/// The line a memo serves: text (tag 0) or thinking (tag 1) alone, `done`
/// absent (`facts.1` is `None`) or `false` (it is `Some`), nothing else read.
fn text_line<'a>(line: &mut Line<'a>, (tag, done, _): Facts, piece: Str<'a>) {
    let m = line.message.insert(Msg::default());
    if tag == 0 {
        m.content = Some(piece);
    } else {
        m.thinking = Some(piece);
    }
    line.done = done.map(|_| false);
}

impl<'a> Memoized<'a> for Line<'a> {
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>> {
        scan_line(text, self)
    }
    fn facts(&self) -> Option<Facts> {
        let m = self.message.as_ref()?;
        let (tag, piece) = match (&m.content, &m.thinking) {
            (Some(t), None) => (0, t),
            (None, Some(t)) => (1, t),
            _ => return None,
        };
        let done = match self.done {
            None => None,
            Some(false) => Some(crate::providers::json::Index(0)),
            Some(true) => return None,
        };
        let facts = (tag, done, None);
        let mut again = Line::default();
        text_line(&mut again, facts, piece.clone());
        (again == *self).then_some(facts)
    }
    fn fill(&mut self, facts: Facts, piece: Str<'a>) {
        text_line(self, facts, piece);
    }
}

/// See [`crate::providers::scan::fast_path_agrees`].
#[cfg(test)]
pub(crate) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    crate::providers::scan::fast_path_agrees(scan_line, text)
}

/// See [`crate::providers::scan::memo_parts`].
#[cfg(test)]
pub(crate) fn memo_parts(template: &str) -> Option<(String, String)> {
    crate::providers::scan::memo_parts::<Line<'_>>(template)
}

/// See [`crate::providers::scan::memo_agrees`].
#[cfg(test)]
pub(crate) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    crate::providers::scan::memo_agrees::<Line<'_>>(template, text)
}
