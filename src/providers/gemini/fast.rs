//! The fast path of a Gemini chunk, read by the scanner of `providers/scan`
//! in one pass: the candidates with their parts (text, thoughts, signatures,
//! whole calls, code and its result), a call's `args` taken as its raw text
//! and written compactly as the typed decode writes it (`compact_raw`),
//! never through a tree.

use super::wire::{Candidate, Content, FunctionCall, Part, Response};
use crate::providers::json::{CompactJson, Str};
use crate::providers::scan::{Facts, Memoized, Scan, Seen};

/// Fills `r` (fresh) with exactly the [`Response`] the typed decode gives, or
/// returns `None` for the general path: prompt feedback, an error, a
/// call's partial arguments, a finish reason that is not a string, anything
/// [`Scan`] does not certify.
pub(super) fn scan_chunk<'a>(text: &'a str, r: &mut Response<'a>) -> Option<Option<(usize, usize)>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "candidates" => {
            seen.once(0)?;
            if p.null()? {
                return Some(());
            }
            let list = r.candidates.insert(Vec::new());
            p.array(|p| {
                list.push(Candidate::default());
                scan_candidate(p, list.last_mut()?)
            })
        }
        // Usage (on every chunk of some streams): the object's own text
        // decoded as the typed decode decodes it there.
        "usageMetadata" => {
            seen.once(1)?;
            if p.null()? {
                return Some(());
            }
            let raw = p.raw()?;
            if !raw.starts_with('{') {
                return None;
            }
            r.usage_metadata = Some(serde_json::from_str(raw).ok()?);
            Some(())
        }
        "promptFeedback" | "error" => None,
        _ => p.skip(),
    })?;
    p.end()?;
    Some(p.the_hole())
}

/// The chunk a memo serves: one candidate (its index as sent) whose content
/// is one text part, nothing else read.
fn text_chunk<'a>(r: &mut Response<'a>, (_, index, _): Facts, piece: Str<'a>) {
    let part = Part {
        text: Some(piece),
        ..Part::default()
    };
    let content = Content {
        parts: Some(vec![part]),
    };
    r.candidates = Some(vec![Candidate {
        index,
        content: Some(content),
        finish_reason: None,
    }]);
}

impl<'a> Memoized<'a> for Response<'a> {
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>> {
        scan_chunk(text, self)
    }
    fn facts(&self) -> Option<Facts> {
        let [c] = self.candidates.as_deref()? else {
            return None;
        };
        let [part] = c.content.as_ref()?.parts.as_deref()? else {
            return None;
        };
        let facts = (0, c.index, None);
        let mut again = Response::default();
        text_chunk(&mut again, facts, part.text.clone()?);
        (again == *self).then_some(facts)
    }
    fn fill(&mut self, facts: Facts, piece: Str<'a>) {
        text_chunk(self, facts, piece);
    }
}

/// See [`crate::providers::scan::memo_parts`].
#[cfg(test)]
pub(crate) fn memo_parts(template: &str) -> Option<(String, String)> {
    crate::providers::scan::memo_parts::<Response<'_>>(template)
}

/// See [`crate::providers::scan::memo_agrees`].
#[cfg(test)]
pub(crate) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    crate::providers::scan::memo_agrees::<Response<'_>>(template, text)
}

fn scan_candidate<'a>(p: &mut Scan<'a>, c: &mut Candidate<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "index" => {
            seen.once(0)?;
            c.index = p.opt_index()?;
            Some(())
        }
        "content" => {
            seen.once(1)?;
            if p.null()? {
                return Some(());
            }
            scan_content(p, c.content.insert(Content::default()))
        }
        "finishReason" => {
            seen.once(2)?;
            c.finish_reason = p.opt_str()?.map(|s| s.0.into_owned());
            Some(())
        }
        _ => p.skip(),
    })
}

fn scan_content<'a>(p: &mut Scan<'a>, c: &mut Content<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "parts" => {
            seen.once(0)?;
            if p.null()? {
                return Some(());
            }
            let parts = c.parts.insert(Vec::new());
            p.array(|p| {
                parts.push(Part::default());
                scan_part(p, parts.last_mut()?)
            })
        }
        _ => p.skip(),
    })
}

/// A value kept whole as its compact text, or `null` (`None`).
fn opt_compact(p: &mut Scan<'_>) -> Option<Option<CompactJson>> {
    if p.null()? {
        return Some(None);
    }
    Some(Some(CompactJson(p.compact()?)))
}

fn scan_part<'a>(p: &mut Scan<'a>, part: &mut Part<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "text" => {
            seen.once(0)?;
            // The string a memo may vary.
            part.text = p.hole()?;
            Some(())
        }
        "thought" => {
            seen.once(1)?;
            part.thought = p.opt_bool()?;
            Some(())
        }
        "thoughtSignature" => {
            seen.once(2)?;
            part.thought_signature = p.opt_str()?;
            Some(())
        }
        "functionCall" => {
            seen.once(3)?;
            if p.null()? {
                return Some(());
            }
            scan_call(p, part.function_call.insert(FunctionCall::default()))
        }
        "executableCode" => {
            seen.once(4)?;
            part.executable_code = opt_compact(p)?;
            Some(())
        }
        "codeExecutionResult" => {
            seen.once(5)?;
            part.code_execution_result = opt_compact(p)?;
            Some(())
        }
        _ => p.skip(),
    })
}

fn scan_call<'a>(p: &mut Scan<'a>, f: &mut FunctionCall<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "id" => {
            seen.once(0)?;
            f.id = p.opt_str()?;
            Some(())
        }
        "name" => {
            seen.once(1)?;
            f.name = p.opt_str()?;
            Some(())
        }
        "args" => {
            seen.once(2)?;
            f.args = opt_compact(p)?;
            Some(())
        }
        "willContinue" => {
            seen.once(3)?;
            f.will_continue = p.opt_bool()?;
            Some(())
        }
        "partialArgs" => None,
        _ => p.skip(),
    })
}

/// See [`crate::providers::scan::fast_path_agrees`].
#[cfg(test)]
pub(crate) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    crate::providers::scan::fast_path_agrees(scan_chunk, text)
}
