//! The Responses `response` body read by the scanner of `providers/scan` in
//! one pass, into the very [`Body`] the typed decode of `direct.rs` gives:
//! strings borrowed when they have no escapes, members no one reads skipped
//! (and their numbers checked on the way, instead of a second pass over the
//! whole body for [`plain`](super::plain)).
//!
//! It accepts a strict subset of what the typed decode accepts and gives up
//! (`None`: the typed decode reads the body) on anything else: besides what
//! the scanner itself refuses (see its module), a member given twice, a
//! member of an unusual type, an item or a part that is not an object, a
//! number a float may not hold outside strings, a `type` member (an event).

use serde::de::{DeserializeOwned, IgnoredAny};

use super::{Body, BodyItem, Part};
use crate::providers::body::{scanned_value as value, Obj};
use crate::providers::json::Str;
use crate::providers::scan::{Scan, Seen};
use crate::providers::usage::certified_map;

/// Absent, `null` or a string, told apart.
fn nullable<'a>(p: &mut Scan<'a>) -> Option<Option<Option<Str<'a>>>> {
    Some(Some(p.opt_str()?))
}

/// `null`, or an object decoded as the typed decode decodes it (its numbers
/// checked first).
fn small<T: DeserializeOwned>(p: &mut Scan<'_>) -> Option<Option<T>> {
    if p.null()? {
        return Some(None);
    }
    let raw = p.raw_narrow()?;
    if !raw.starts_with('{') {
        return None;
    }
    serde_json::from_str(raw).ok().map(Some)
}

/// Absent or `null` (`None`), or an array of objects each read by `read`.
fn objects<'a, T>(
    p: &mut Scan<'a>,
    mut read: impl FnMut(&mut Scan<'a>) -> Option<T>,
) -> Option<Option<Vec<Obj<T>>>> {
    if p.null()? {
        return Some(None);
    }
    let mut out = Vec::new();
    p.array(|p| {
        out.push(Obj(read(p)?));
        Some(())
    })?;
    Some(Some(out))
}

/// The members of a body that the typed decode reads.
pub(super) fn body(text: &str) -> Option<Body<'_>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    let mut b = Body::default();
    p.object(|p, key| match key {
        // A streamed event (its `type`): left to the typed decode, which
        // refuses it.
        "type" => None,
        "id" => {
            seen.once(0)?;
            b.id = p.opt_str()?;
            Some(())
        }
        "model" => {
            seen.once(1)?;
            b.model = p.opt_str()?;
            Some(())
        }
        "status" => {
            seen.once(2)?;
            b.status = p.opt_str()?;
            Some(())
        }
        "usage" => {
            seen.once(3)?;
            if !p.null()? {
                b.usage_text = Some(certified_map(p)?);
            }
            Some(())
        }
        "incomplete_details" => {
            seen.once(4)?;
            b.incomplete_details = small(p)?;
            Some(())
        }
        "output" => {
            seen.once(5)?;
            b.output = objects(p, item)?;
            Some(())
        }
        "object" => {
            seen.once(6)?;
            b.is_response = &*p.string()? == "response";
            Some(())
        }
        "error" => {
            seen.once(7)?;
            value(p)
        }
        _ => value(p),
    })?;
    p.end()?;
    Some(b)
}

fn item<'a>(p: &mut Scan<'a>) -> Option<BodyItem<'a>> {
    let mut seen = Seen::default();
    let mut it = BodyItem::default();
    p.object(|p, key| {
        match key {
            "type" => {
                seen.once(0)?;
                it.kind = p.opt_str()?;
            }
            "id" => {
                seen.once(1)?;
                it.id = p.opt_str()?;
            }
            "call_id" => {
                seen.once(2)?;
                it.call_id = p.opt_str()?;
            }
            "name" => {
                seen.once(3)?;
                it.name = p.opt_str()?;
            }
            "arguments" => {
                seen.once(4)?;
                it.arguments = nullable(p)?;
            }
            "input" => {
                seen.once(5)?;
                it.input = nullable(p)?;
            }
            "encrypted_content" => {
                seen.once(6)?;
                it.encrypted_content = p.opt_str()?;
            }
            "content" => {
                seen.once(7)?;
                it.content = objects(p, part)?;
            }
            "summary" => {
                seen.once(8)?;
                it.summary = objects(p, part)?;
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(it)
}

fn part<'a>(p: &mut Scan<'a>) -> Option<Part<'a>> {
    let mut seen = Seen::default();
    let mut part = Part {
        kind: None,
        text: None,
        refusal: None,
        annotations: None,
    };
    p.object(|p, key| {
        match key {
            "type" => {
                seen.once(0)?;
                part.kind = p.opt_str()?;
            }
            "text" => {
                seen.once(1)?;
                part.text = nullable(p)?;
            }
            "refusal" => {
                seen.once(2)?;
                part.refusal = nullable(p)?;
            }
            "annotations" => {
                seen.once(3)?;
                if !p.null()? {
                    // Counted only (a `Vec` of nothing holds no memory).
                    let mut each = Vec::new();
                    p.array(|p| {
                        each.push(IgnoredAny);
                        value(p)
                    })?;
                    part.annotations = Some(each);
                }
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(part)
}

#[cfg(test)]
mod tests {
    use super::super::{events, Body};

    /// The events of a body and its calls' ids, names and arguments, as the
    /// typed decode or the scanner read it.
    fn read(body: Option<Body<'_>>) -> Option<String> {
        let body = body?;
        let (evs, calls) = events(&body)?;
        let calls: Vec<_> = calls.iter().map(|c| (c.id, c.name, c.args)).collect();
        Some(format!("{} {evs:?} {calls:?}", body.is_response))
    }

    /// The scanner reads usual bodies into the events the typed decode gives,
    /// and gives up on what it does not certify.
    #[test]
    fn scans_usual_bodies_as_the_typed_decode() {
        let usual = r#"{"id":"r","object":"response","status":"incomplete","model":"m","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"Größe 東京 ✅\n","annotations":[{"type":"url_citation","start":1}]},{"type":"refusal","refusal":null}]},{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{\"a\":\"x\\ny\",\"n\":[1,2.5]}","status":"completed"},{"type":"custom_tool_call","id":"ct","call_id":"d","name":"g","input":"x"},{"type":"reasoning","id":"rs","encrypted_content":"e","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"t"}]}],"usage":{"input_tokens":1,"output_tokens_details":{"reasoning_tokens":2}},"error":null,"created_at":1764547200}"#;
        let typed = |t| read(serde_json::from_str::<Body<'_>>(t).ok());
        let scanned = read(super::body(usual));
        assert!(scanned.is_some());
        assert_eq!(scanned, typed(usual));
        for odd in [
            r#"{"object":"response","status":"completed","status":"completed"}"#,
            r#"{"object":"response","usage":{"n":1e400}}"#,
            r#"{"object":"response","created_at":1E3}"#,
            r#"{"object":"response","output":[{"type":"message","content":[{"annotations":[{"n":2e5}]}]}]}"#,
            r#"{"object":"response","output":[["function_call"]]}"#,
            r#"{"object":"response","output":[{"type":"function_call","arguments":{}}]}"#,
            r#"{"object":"response","incomplete_details":["x"]}"#,
            r#"{"object":null}"#,
            r#"{"object":"response","type":"x"}"#,
            r#"{"object":"response"} x"#,
        ] {
            assert!(super::body(odd).is_none(), "{odd}");
        }
    }
}
