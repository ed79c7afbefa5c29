//! The Anthropic `Message` body read by the scanner of `providers/scan` in
//! one pass, into the very parts the typed decode of `direct.rs` gives:
//! strings borrowed when they have no escapes, a call's input written
//! compactly as the typed decode writes it, members no one reads skipped.
//!
//! It accepts a strict subset of what the typed decode accepts and gives up
//! (`None`: the typed decode reads the body) on anything else: besides what
//! the scanner itself refuses (see its module), a member given twice, a
//! member of an unusual type, a block that is not an object, a number a
//! float may not hold outside strings, and every body the typed decode
//! leaves to the reference (a block of another kind, citations).


use super::{ContentBlock, Item, Parts};
use crate::providers::body::{scanned_map, scanned_value as value};
use crate::providers::json::Str;
use crate::providers::scan::{Scan, Seen};

/// `(type is "message", object is present)` and the parts of the body.
pub(super) fn body(text: &str) -> Option<((bool, bool), Option<Parts<'_>>)> {
    let mut p = Scan::new(text);
    // Every member once (the typed decode refuses any given twice).
    let mut keys: Vec<&str> = Vec::with_capacity(8);
    let (mut is_message, mut has_object) = (false, false);
    let mut parts = Parts {
        usage: None,
        stop_reason: None,
        items: Vec::new(),
    };
    p.object(|p, key| {
        if keys.contains(&key) {
            return None;
        }
        keys.push(key);
        match key {
            "content" => {
                if p.null()? {
                    return Some(());
                }
                p.array(|p| {
                    parts.items.push(block(p)?);
                    Some(())
                })
            }
            "stop_reason" => {
                parts.stop_reason = p.opt_str()?.map(|s| Str(s.0.into_owned().into()));
                Some(())
            }
            "usage" => {
                if p.null()? {
                    return Some(());
                }
                parts.usage = Some(scanned_map(p)?);
                Some(())
            }
            "type" => {
                if p.peek_token()? == b'"' {
                    is_message = p.string()?.0 == "message";
                    return Some(());
                }
                value(p)
            }
            "object" => {
                has_object = true;
                value(p)
            }
            _ => value(p),
        }
    })?;
    p.end()?;
    Some(((is_message, has_object), Some(parts)))
}

/// Absent, `null` or a string, told apart.
fn nullable<'a>(p: &mut Scan<'a>) -> Option<Option<Option<Str<'a>>>> {
    Some(Some(p.opt_str()?))
}

/// One block of the content.
fn block<'a>(p: &mut Scan<'a>) -> Option<Item<'a>> {
    let mut seen = Seen::default();
    let mut kind: Option<Str<'a>> = None;
    let (mut text, mut thinking) = (None, None);
    let mut head = ContentBlock::default();
    let mut input: Option<String> = None;
    p.object(|p, key| match key {
        "type" => {
            seen.once(0)?;
            kind = Some(p.string()?);
            Some(())
        }
        "text" => {
            seen.once(1)?;
            text = nullable(p)?;
            Some(())
        }
        "thinking" => {
            seen.once(2)?;
            thinking = nullable(p)?;
            Some(())
        }
        "signature" => {
            seen.once(3)?;
            head.signature = p.opt_str()?;
            Some(())
        }
        "citations" => {
            seen.once(4)?;
            if p.null()? {
                return Some(());
            }
            // Only an empty list (citations are left to the reference).
            let raw = p.raw()?;
            let inner = raw.strip_prefix('[')?.strip_suffix(']')?;
            inner.trim_matches([' ', '\t', '\n', '\r']).is_empty().then_some(())
        }
        "data" => {
            seen.once(5)?;
            head.data = p.opt_str()?;
            Some(())
        }
        "id" => {
            seen.once(6)?;
            head.id = p.opt_str()?;
            Some(())
        }
        "name" => {
            seen.once(7)?;
            head.name = p.opt_str()?;
            Some(())
        }
        "input" => {
            seen.once(8)?;
            if p.null()? {
                return Some(());
            }
            input = Some(p.compact_narrow()?);
            Some(())
        }
        "tool_use_id" => {
            seen.once(9)?;
            head.tool_use_id = p.opt_str()?;
            Some(())
        }
        "is_error" => {
            seen.once(10)?;
            head.is_error = p.opt_bool()?;
            Some(())
        }
        _ => value(p),
    })?;
    let kind = kind?;
    Some(match &*kind {
        "text" => Item::Text(text.unwrap_or_else(|| Some(Str::default()))),
        "thinking" => Item::Thinking(
            thinking.unwrap_or_else(|| Some(Str::default())),
            head.signature,
        ),
        "tool_use" => {
            head.kind = kind;
            head.text = text.flatten();
            head.thinking = thinking.flatten();
            Item::Tool(head, input.unwrap_or_default())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{all_events as events, parts, Body};

    /// The scanner reads usual bodies into the events the typed decode gives,
    /// and gives up on what it does not certify.
    #[test]
    fn scans_usual_bodies_as_the_typed_decode() {
        let usual = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"Plan \"it\".","signature":"EqQB"},{"type":"text","text":"Größe 東京 ✅\n"},{"type":"tool_use","id":"toolu_1","name":"update_record","input":{"table":"invoice","values":{"n":[9, 9.5,-39]},"note":"a\nb \u00e9"}},{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4}}"#;
        let typed = |t| serde_json::from_str::<Body<'_>>(t).ok().and_then(parts).and_then(events);
        let scanned = super::body(usual).and_then(|(shape, p)| {
            assert_eq!(shape, (true, false));
            p.and_then(events)
        });
        assert!(scanned.is_some());
        assert_eq!(scanned, typed(usual));
        for odd in [
            r#"{"type":"message","type":"message","content":[]}"#,
            r#"{"type":"message","content":[{"type":"text","text":"a","citations":[{"type":"char_location"}]}]}"#,
            r#"{"type":"message","content":[{"type":"tool_use","input":{"n":1e400}}]}"#,
            r#"{"type":"message","content":[{"type":"server_tool_use","input":{}}]}"#,
            r#"{"type":"message","content":[5]}"#,
        ] {
            assert!(super::body(odd).and_then(|(_, p)| p).is_none(), "{odd}");
        }
    }
}
