//! The fast path of a Gemini chunk, read by the scanner of `providers/scan`
//! in one pass: the candidates with their parts (text, thoughts, signatures,
//! whole calls, code and its result), a call's `args` taken as its raw text
//! and written compactly as the typed decode writes it (`compact_raw`),
//! never through a tree.

use super::wire::{Candidate, Content, FunctionCall, Part, Response};
use crate::providers::json::CompactJson;
use crate::providers::scan::{Scan, Seen};

/// Fills `r` (fresh) with exactly the [`Response`] the typed decode gives, or
/// returns `None` for the general path: prompt feedback, an error, a
/// call's partial arguments, a finish reason that is not a string, anything
/// [`Scan`] does not certify.
pub(super) fn scan_chunk<'a>(text: &'a str, r: &mut Response<'a>) -> Option<()> {
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
    p.end()
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
            part.text = p.opt_str()?;
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
