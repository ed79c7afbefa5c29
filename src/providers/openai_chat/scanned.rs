//! The `chat.completion` body read by the scanner of `providers/scan` in one
//! pass, into the very [`Body`] the typed decode of `direct.rs` gives: strings
//! borrowed when they have no escapes, escaped ones (a call's `arguments`)
//! decoded once, every member no one reads skipped without being decoded.
//!
//! It accepts a strict subset of what the typed decode accepts and gives up
//! (`None`: the typed decode reads the body) on anything else: besides what
//! the scanner itself refuses (see its module), a member of an unusual type
//! (an index that is not a plain integer or `null`, content as parts, a
//! legacy `function_call`, a call's arguments as an object, a custom tool's
//! call, a call's `extra_content`, calls that are not an array of objects),
//! a number a float may not hold in a member the typed decode reads as a
//! value, a member given twice.

use serde_json::Value;

use super::super::content::Content;
use super::{Body, Calls, Choice, Message, Object, Reason};
use crate::providers::body::{scanned_value as value, Obj};
use crate::providers::usage::certified_map;
use crate::providers::scan::{Scan, Seen};
use crate::providers::openai_chat::{scan_function, ToolCall};

/// The body, as [`Body`]'s typed decode gives it.
pub(super) fn body(text: &str) -> Option<Body<'_>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    let mut b = Body {
        id: None,
        created: None,
        model: None,
        system_fingerprint: None,
        usage: None,
        object: None,
        has_type: false,
        choices: None,
        usage_text: None,
    };
    p.object(|p, key| match key {
        "id" => seen.once(0).and_then(|()| value(p)),
        "created" => seen.once(1).and_then(|()| value(p)),
        "model" => seen.once(2).and_then(|()| value(p)),
        "system_fingerprint" => seen.once(3).and_then(|()| value(p)),
        "usage" => {
            seen.once(4)?;
            if p.null()? {
                return Some(());
            }
            b.usage_text = Some(certified_map(p)?);
            Some(())
        }
        "object" => {
            seen.once(5)?;
            match p.peek_token()? {
                b'"' => b.object = p.opt_str()?.map(|s| Object::of(&s)),
                b'n' => p.null()?.then_some(())?,
                // Not a string: all the shape asks of it.
                _ => {
                    value(p)?;
                    b.object = Some(Object::Other);
                }
            }
            Some(())
        }
        "type" => {
            seen.once(6)?;
            b.has_type = true;
            p.skip()
        }
        "choices" => {
            seen.once(7)?;
            if p.null()? {
                return Some(());
            }
            let list = b.choices.insert(Vec::new());
            p.array(|p| {
                let mut c = Choice {
                    index: None,
                    message: None,
                    finish_reason: None,
                    delta: false,
                };
                choice(p, &mut c)?;
                list.push(Obj(c));
                Some(())
            })
        }
        _ => p.skip(),
    })?;
    p.end()?;
    Some(b)
}

fn choice<'a>(p: &mut Scan<'a>, c: &mut Choice<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "index" => {
            seen.once(0)?;
            c.index = p.opt_index()?.map(|i| Value::from(i.0));
            Some(())
        }
        "message" => {
            seen.once(1)?;
            if p.null()? {
                return Some(());
            }
            let mut m = Message {
                role: None,
                reasoning_content: None,
                reasoning: None,
                content: None,
                refusal: None,
                tool_calls: None,
                function_call: None,
            };
            message(p, &mut m)?;
            c.message = Some(Obj(m));
            Some(())
        }
        "finish_reason" => {
            seen.once(2)?;
            c.finish_reason = p.opt_str()?.map(Reason::Text);
            Some(())
        }
        "delta" => {
            seen.once(3)?;
            c.delta = true;
            p.skip()
        }
        _ => p.skip(),
    })
}

fn message<'a>(p: &mut Scan<'a>, m: &mut Message<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "role" => return seen.once(0).and_then(|()| p.skip()),
            "reasoning_content" => (1, &mut m.reasoning_content),
            "reasoning" => (2, &mut m.reasoning),
            "refusal" => (3, &mut m.refusal),
            "content" => {
                seen.once(4)?;
                m.content = p.opt_str()?.map(Content::Text);
                return Some(());
            }
            "tool_calls" => {
                seen.once(5)?;
                if p.null()? {
                    return Some(());
                }
                let mut calls = Vec::new();
                p.array(|p| {
                    calls.push(call(p)?);
                    Some(())
                })?;
                m.tool_calls = Some(Calls(Some(calls)));
                return Some(());
            }
            "function_call" => {
                seen.once(6)?;
                return p.null()?.then_some(());
            }
            _ => return p.skip(),
        };
        seen.once(n)?;
        *field = p.opt_str()?;
        Some(())
    })
}

/// One call, as `Call` decodes it (an `index` of `null` given up on).
fn call<'a>(p: &mut Scan<'a>) -> Option<ToolCall<'a>> {
    let mut c = ToolCall::default();
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "index" => {
            seen.once(0)?;
            c.index = Some(p.opt_index()??);
            Some(())
        }
        "id" => {
            seen.once(1)?;
            c.id = p.opt_str()?;
            Some(())
        }
        "function" => {
            seen.once(2)?;
            scan_function(p, &mut c.function, Scan::opt_str)
        }
        "custom" => {
            seen.once(3)?;
            p.null()?.then_some(())
        }
        "type" => {
            seen.once(4)?;
            c.kind = p.opt_str()?;
            Some(())
        }
        "extra_content" => {
            seen.once(5)?;
            p.null()?.then_some(())
        }
        _ => p.skip(),
    })?;
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::super::{all_chunks as chunks, Body};

    /// The scanner reads usual bodies (escaped arguments, text in several
    /// scripts, usage) into the chunks the typed decode gives, and gives up
    /// on what it does not certify.
    #[test]
    fn scans_usual_bodies_as_the_typed_decode() {
        let usual = r#"{"id":"chatcmpl-4","object":"chat.completion","created":1764547200,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"Größe «Calle» 東京 ✅","tool_calls":[{"id":"call_0","type":"function","function":{"name":"update_record","arguments":"{\"table\":\"invoice\",\"note\":\"a\\nb \\u00e9 \\\"q\\\"\"}"}},{"id":"call_1","type":"function","function":{"name":"search","arguments":"{}"}}],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":812,"completion_tokens":97,"total_tokens":909},"system_fingerprint":"fp_1"}"#;
        let spaced = "{ \"object\" : \"chat.completion\" ,\n \"choices\" : [ { \"message\" : { \"content\" : \"hi\" } , \"finish_reason\" : \"stop\" } ] }";
        for text in [usual, spaced] {
            let scanned = super::body(text).map(chunks);
            let typed = serde_json::from_str::<Body<'_>>(text).ok().map(chunks);
            assert!(scanned.as_ref().is_some_and(Option::is_some), "{text}");
            assert_eq!(scanned, typed, "{text}");
        }
        for odd in [
            // A member twice, an escaped key, a number a float cannot hold,
            // arguments as an object, an index of `null`, content as parts.
            r#"{"object":"chat.completion","object":"chat.completion","choices":[]}"#,
            r#"{"obj\u0065ct":"chat.completion","choices":[]}"#,
            r#"{"object":"chat.completion","created":1e400,"choices":[]}"#,
            r#"{"choices":[{"message":{"tool_calls":[{"function":{"arguments":{"a":1}}}]}}]}"#,
            r#"{"choices":[{"message":{"tool_calls":[{"index":null}]}}]}"#,
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"}]}}]}"#,
        ] {
            assert!(super::body(odd).is_none(), "{odd}");
        }
    }
}
