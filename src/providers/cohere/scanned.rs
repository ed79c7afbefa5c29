//! The Cohere v2 chat response body read by the scanner of `providers/scan`
//! in one pass, into the very parts the typed decode of `direct.rs` gives:
//! strings borrowed when they have no escapes, escaped ones (a call's
//! `arguments`) decoded once, members no one reads skipped (and their numbers
//! checked on the way, instead of a second pass over the whole body).
//!
//! It accepts a strict subset of what the typed decode accepts and gives up
//! (`None`: the typed decode reads the body) on anything else: besides what
//! the scanner itself refuses (see its module), a member given twice, a
//! member of an unusual type, a part or call that is not an object, a number
//! a float may not hold outside strings, a body of another shape.

use super::{FunctionIn, Part, Parts, Text};
use crate::providers::body::scanned_value as value;
use crate::providers::json::Str;
use crate::providers::scan::{Scan, Seen};
use crate::providers::usage::certified_map;

/// Absent, `null` or a string, told apart.
fn nullable<'a>(p: &mut Scan<'a>) -> Option<Option<Option<Str<'a>>>> {
    Some(Some(p.opt_str()?))
}

/// The parts of a body of the Cohere shape.
pub(super) fn body(text: &str) -> Option<Parts<'_>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    let mut parts = Parts {
        finish_reason: None,
        usage: None,
        usage_text: None,
        tool_plan: None,
        content: Vec::new(),
        citations: 0,
        calls: Vec::new(),
    };
    let mut has_message = false;
    p.object(|p, key| match key {
        "id" => seen.once(0).and_then(|()| value(p)),
        "finish_reason" => {
            seen.once(1)?;
            parts.finish_reason = Some(match p.opt_str()? {
                Some(s) => Text::Str(s),
                None => Text::Null,
            });
            Some(())
        }
        "message" => {
            seen.once(2)?;
            has_message = true;
            message(p, &mut parts)
        }
        "usage" => {
            seen.once(3)?;
            if p.null()? {
                return Some(());
            }
            parts.usage_text = Some(certified_map(p)?);
            Some(())
        }
        // A `type`, or an `object` that is a string: another shape.
        "type" => None,
        "object" => {
            seen.once(4)?;
            if p.peek_token()? == b'"' {
                return None;
            }
            value(p)
        }
        _ => value(p),
    })?;
    p.end()?;
    (has_message && parts.finish_reason.is_some()).then_some(parts)
}

fn message<'a>(p: &mut Scan<'a>, parts: &mut Parts<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "role" => seen.once(0).and_then(|()| value(p)),
        "content" => {
            seen.once(1)?;
            if p.null()? {
                return Some(());
            }
            p.array(|p| {
                parts.content.push(part(p)?);
                Some(())
            })
        }
        "tool_plan" => {
            seen.once(2)?;
            parts.tool_plan = p.opt_str()?.map(Text::Str);
            Some(())
        }
        "tool_calls" => {
            seen.once(3)?;
            if p.null()? {
                return Some(());
            }
            p.array(|p| {
                parts.calls.push(call(p)?);
                Some(())
            })
        }
        "citations" => {
            seen.once(4)?;
            if p.null()? {
                return Some(());
            }
            p.array(|p| {
                parts.citations += 1;
                value(p)
            })
        }
        _ => value(p),
    })
}

fn part<'a>(p: &mut Scan<'a>) -> Option<Part<'a>> {
    let mut seen = Seen::default();
    let mut part = Part {
        kind: None,
        text: None,
        thinking: None,
    };
    p.object(|p, key| match key {
        "type" => {
            seen.once(0)?;
            part.kind = p.opt_str()?;
            Some(())
        }
        "text" => {
            seen.once(1)?;
            part.text = nullable(p)?;
            Some(())
        }
        "thinking" => {
            seen.once(2)?;
            part.thinking = nullable(p)?;
            Some(())
        }
        _ => value(p),
    })?;
    Some(part)
}

fn call<'a>(p: &mut Scan<'a>) -> Option<(Option<Str<'a>>, FunctionIn<'a>)> {
    let mut seen = Seen::default();
    let mut id = None;
    let mut function = FunctionIn {
        name: None,
        arguments: None,
    };
    p.object(|p, key| match key {
        "id" => {
            seen.once(0)?;
            id = p.opt_str()?;
            Some(())
        }
        "function" => {
            seen.once(1)?;
            if p.null()? {
                return Some(());
            }
            let mut seen_f = Seen::default();
            p.object(|p, key| match key {
                "name" => {
                    seen_f.once(0)?;
                    function.name = p.opt_str()?;
                    Some(())
                }
                "arguments" => {
                    seen_f.once(1)?;
                    function.arguments = nullable(p)?;
                    Some(())
                }
                _ => value(p),
            })
        }
        _ => value(p),
    })?;
    Some((id, function))
}

#[cfg(test)]
mod tests {
    use super::super::{all_events as events, parts, Body};

    /// The scanner reads usual bodies into the events the typed decode gives,
    /// and gives up on what it does not certify.
    #[test]
    fn scans_usual_bodies_as_the_typed_decode() {
        let usual = r#"{"id":"c","finish_reason":"TOOL_CALL","message":{"role":"assistant","tool_plan":"p","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"Größe 東京 ✅\n"}],"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\":\"x\\ny\",\"n\":[1,2.5]}"}},{"id":"u","type":"function","function":{"name":"g","arguments":null}}],"citations":[{"start":0,"end":2}]},"usage":{"tokens":{"output_tokens":1}}}"#;
        let typed = |t| serde_json::from_str::<Body<'_>>(t).ok().and_then(parts).and_then(events);
        let scanned = super::body(usual).and_then(events);
        assert!(scanned.is_some());
        assert_eq!(scanned, typed(usual));
        for odd in [
            r#"{"finish_reason":"COMPLETE","finish_reason":"COMPLETE","message":{}}"#,
            r#"{"finish_reason":"COMPLETE","message":{},"usage":{"n":1e400}}"#,
            r#"{"finish_reason":"COMPLETE","message":{"citations":[{"start":1E3}]}}"#,
            r#"{"finish_reason":"COMPLETE","message":null}"#,
            r#"{"finish_reason":"COMPLETE","message":{},"type":"x"}"#,
            r#"{"message":{}}"#,
        ] {
            assert!(super::body(odd).is_none(), "{odd}");
        }
    }
}
