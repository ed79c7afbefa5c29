//! The Bedrock `Converse` body read by the scanner of `providers/scan` in one
//! pass, into the very [`Body`] the typed decode of `direct.rs` gives: strings
//! borrowed when they have no escapes, a tool's input written compactly as
//! the typed decode writes it (no value tree of it, no compaction pass over
//! text kept aside), members no one reads skipped with their numbers checked.
//!
//! It accepts a strict subset of what the typed decode accepts and gives up
//! (`None`: the typed decode reads the body) on anything else: besides what
//! the scanner itself refuses (see its module), a member given twice, a
//! member of an unusual type, a block or a part that is not an object, a
//! number a float may not hold outside a tool's input, and a body with a
//! `type` or an `object` member (not the body's shape).

use super::{Block, Body, Given, Message, Output, ReasoningIn, ReasoningText, ToolUseIn};
use crate::providers::body::{scanned_map, scanned_value as value, Obj};
use crate::providers::scan::{Scan, Seen};

/// Absent or `null` (`None`), or an object read by `read`.
fn object<'a, T>(
    p: &mut Scan<'a>,
    read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
) -> Option<Option<T>> {
    if p.null()? {
        return Some(None);
    }
    if p.peek_token()? != b'{' {
        return None;
    }
    read(p).map(Some)
}

/// A member the typed decode reads as a value and keeps as present only:
/// `null` is absent.
fn given(p: &mut Scan<'_>) -> Option<Option<Given>> {
    if p.null()? {
        return Some(None);
    }
    value(p).map(|()| Some(Given))
}

/// The members of a body that the typed decode reads.
pub(super) fn body(text: &str) -> Option<Body<'_>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    let mut b = Body::default();
    p.object(|p, key| {
        match key {
            "output" => {
                seen.once(0)?;
                b.output = object(p, output)?.map(Obj);
            }
            "stopReason" => {
                seen.once(1)?;
                b.stop_reason = p.opt_str()?;
            }
            "additionalModelResponseFields" => {
                seen.once(2)?;
                b.additional_model_response_fields = given(p)?;
            }
            "usage" => {
                seen.once(3)?;
                if !p.null()? {
                    b.usage = Some(scanned_map(p)?);
                }
            }
            "metrics" => {
                seen.once(4)?;
                b.metrics = given(p)?;
            }
            "trace" => {
                seen.once(5)?;
                b.trace = given(p)?;
            }
            "performanceConfig" => {
                seen.once(6)?;
                b.performance_config = given(p)?;
            }
            // Not the body's shape, or rare: left to the typed decode.
            "type" | "object" => return None,
            _ => value(p)?,
        }
        Some(())
    })?;
    p.end()?;
    Some(b)
}

fn output<'a>(p: &mut Scan<'a>) -> Option<Output<'a>> {
    let mut out = Output { message: None };
    p.object(|p, key| {
        match key {
            "message" => {
                if out.message.is_some() {
                    return None;
                }
                out.message = Some(object(p, message)?.map(Obj));
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(out)
}

fn message<'a>(p: &mut Scan<'a>) -> Option<Message<'a>> {
    let mut seen = Seen::default();
    let mut m = Message {
        role: None,
        content: None,
    };
    p.object(|p, key| {
        match key {
            "role" => {
                seen.once(0)?;
                m.role = p.opt_str()?;
            }
            "content" => {
                seen.once(1)?;
                if !p.null()? {
                    let mut blocks = Vec::new();
                    p.array(|p| {
                        if p.peek_token()? != b'{' {
                            return None;
                        }
                        blocks.push(Obj(block(p)?));
                        Some(())
                    })?;
                    m.content = Some(blocks);
                }
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(m)
}

fn block<'a>(p: &mut Scan<'a>) -> Option<Block<'a>> {
    let mut seen = Seen::default();
    let mut b = Block {
        text: None,
        tool_use: None,
        reasoning_content: None,
        citations_content: None,
    };
    p.object(|p, key| {
        match key {
            "text" => {
                seen.once(0)?;
                b.text = p.opt_str()?;
            }
            "toolUse" => {
                seen.once(1)?;
                b.tool_use = object(p, tool_use)?;
            }
            "reasoningContent" => {
                seen.once(2)?;
                b.reasoning_content = object(p, reasoning)?.map(Obj);
            }
            "citationsContent" => {
                seen.once(3)?;
                if !p.null()? {
                    value(p)?;
                    b.citations_content = Some(serde::de::IgnoredAny);
                }
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(b)
}

/// A `toolUse`: its input written compactly in the pass (a number in it is
/// kept as its text, as the typed decode keeps it), its other members values.
fn tool_use<'a>(p: &mut Scan<'a>) -> Option<ToolUseIn<'a>> {
    let mut seen = Seen::default();
    let mut t = ToolUseIn::default();
    p.object(|p, key| {
        match key {
            "input" => {
                seen.once(0)?;
                if !p.null()? {
                    t.input = Some(p.compact()?);
                }
            }
            "toolUseId" => {
                seen.once(1)?;
                t.tool_use_id = p.opt_str()?;
            }
            "name" => {
                seen.once(2)?;
                t.name = p.opt_str()?;
            }
            "type" => {
                seen.once(3)?;
                t.kind = p.opt_str()?;
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(t)
}

fn reasoning<'a>(p: &mut Scan<'a>) -> Option<ReasoningIn<'a>> {
    let mut seen = Seen::default();
    let mut r = ReasoningIn {
        reasoning_text: None,
        redacted_content: None,
    };
    p.object(|p, key| {
        match key {
            "reasoningText" => {
                seen.once(0)?;
                r.reasoning_text = object(p, reasoning_text)?.map(Obj);
            }
            "redactedContent" => {
                seen.once(1)?;
                if !p.null()? {
                    value(p)?;
                    r.redacted_content = Some(serde::de::IgnoredAny);
                }
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(r)
}

fn reasoning_text<'a>(p: &mut Scan<'a>) -> Option<ReasoningText<'a>> {
    let mut seen = Seen::default();
    let mut t = ReasoningText {
        text: None,
        signature: None,
    };
    p.object(|p, key| {
        match key {
            "text" => {
                seen.once(0)?;
                t.text = p.opt_str()?;
            }
            "signature" => {
                seen.once(1)?;
                t.signature = p.opt_str()?;
            }
            _ => value(p)?,
        }
        Some(())
    })?;
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::super::{events, Body};

    /// The events of a body, as the typed decode or the scanner read it.
    fn read(body: Option<Body<'_>>) -> Option<String> {
        Some(format!("{:?}", events(body?)?))
    }

    /// The scanner reads usual bodies into the events the typed decode gives,
    /// and gives up on what it does not certify.
    #[test]
    fn scans_usual_bodies_as_the_typed_decode() {
        let usual = r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Plan \"it\".","signature":"EqQB"}}},{"text":"Größe 東京 ✅\n"},{"toolUse":{"toolUseId":"t1","name":"update_record","input":{"table":"invoice", "values":{"n":[9, 9.5,-39,1e400]},"note":"a\nb \u00e9"},"extra":[1]}},{"toolUse":{"toolUseId":"t2","name":"now","input":{}}},{"toolUse":{"toolUseId":"t3","name":"raw","input":"text"}}]}},"stopReason":"tool_use","usage":{"inputTokens":3,"outputTokens":4},"metrics":{"latencyMs":410},"trace":null,"additionalModelResponseFields":{"k":[]}}"#;
        let typed = |t| read(serde_json::from_str::<Body<'_>>(t).ok());
        let scanned = read(super::body(usual));
        assert!(scanned.is_some());
        assert_eq!(scanned, typed(usual));
        for odd in [
            r#"{"output":{"message":null},"stopReason":"end_turn","stopReason":"end_turn"}"#,
            r#"{"output":{"message":null},"metrics":{"n":1e400}}"#,
            r#"{"output":{"message":null},"usage":[1]}"#,
            r#"{"output":{"message":{"content":[{"toolUse":{"toolUseId":"t","extra":2e5}}]}}}"#,
            r#"{"output":{"message":{"content":[{"toolUse":{"toolUseId":5}}]}}}"#,
            r#"{"output":{"message":{"content":[{"toolUse":{"input":{},"input":{}}}]}}}"#,
            r#"{"output":{"message":{"content":[["text"]]}}}"#,
            r#"{"output":{"message":{"content":[{"text":"a","text":"b"}]}}}"#,
            r#"{"output":{"message":null,"message":null}}"#,
            r#"{"output":{"message":null},"type":"message"}"#,
            r#"{"output":{"message":null},"object":5}"#,
            r#"{"output":{"message":null}} x"#,
        ] {
            assert!(super::body(odd).is_none(), "{odd}");
        }
    }
}
