//! The exact JSON wire codec for blocks and messages.
//!
//! One JSON object per block with a `"type"` tag and snake_case fields. A
//! `tool_use` is shaped like Anthropic's and embeds its input byte-for-byte as
//! received; empty input travels as `null`. Decoding accepts the Go field
//! spelling of the seeds' wire (keys match ignoring case and underscores) and
//! fails closed: size, count and depth bounds are checked before any parsing.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::blocks::{
    AnyMessage, AudioBlock, Block, DocumentBlock, ImageBlock, Message, ThinkingBlock,
    ToolResultBlock, ToolResultMessage, ToolUseBlock, CUSTOM, FUNCTION,
};

/// The largest block, in bytes, that is encoded or decoded.
pub const MAX_BLOCK_BYTES: usize = 8 * 1024 * 1024;
/// The largest list of blocks or message, in bytes, that is decoded.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;
/// The most blocks one document may hold, nested tool results included.
pub const MAX_BLOCKS: usize = 10_000;
/// The deepest JSON nesting a document may have (below serde_json's own bound).
pub const MAX_DEPTH: usize = 100;

/// What the codec refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Malformed JSON, invalid UTF-8, a non-object, a field of the wrong type.
    Decode { at: String, message: String },
    /// A block that cannot be written: partial or invalid input or provider state.
    Encode { at: String, message: String },
    /// A size, count or depth bound was crossed.
    Limit { at: String, message: String },
    /// A block whose `type` tag is missing, empty or unknown.
    UnknownType { at: String, message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (at, message) = match self {
            Error::Decode { at, message }
            | Error::Encode { at, message }
            | Error::Limit { at, message }
            | Error::UnknownType { at, message } => (at, message),
        };
        if at.is_empty() {
            f.write_str(message)
        } else {
            write!(f, "{at}: {message}")
        }
    }
}

impl std::error::Error for Error {}

fn decode_err(at: &str, message: impl Into<String>) -> Error {
    Error::Decode {
        at: at.to_owned(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------- encoding

fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(s.get(start..i).unwrap_or_default());
        if escape.is_empty() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push_str(escape);
        }
        start = i + c.len_utf8();
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}

fn push_field(out: &mut String, key: &str, value: &str) {
    out.push_str(",\"");
    out.push_str(key);
    out.push_str("\":");
    push_json_str(out, value);
}

fn push_optional(out: &mut String, key: &str, value: &str) {
    if !value.is_empty() {
        push_field(out, key, value);
    }
}

const JSON_WHITESPACE: &[char] = &[' ', '\t', '\n', '\r'];

fn too_deep(at: &str, what: &str) -> Error {
    Error::Limit {
        at: at.to_owned(),
        message: format!(
            "{what} would nest the document deeper than {MAX_DEPTH} JSON levels, \
             which decoding refuses; nothing was written"
        ),
    }
}

/// Checks that `raw` is one complete JSON value that, embedded at JSON level
/// `depth`, keeps the document within [`MAX_DEPTH`].
fn check_raw_json(raw: &str, depth: usize, at: &str, what: &str) -> Result<(), Error> {
    if depth.saturating_add(json_depth(raw.as_bytes())) > MAX_DEPTH {
        return Err(too_deep(at, what));
    }
    serde_json::from_str::<&RawValue>(raw).map(|_| ()).map_err(|e| Error::Encode {
        at: at.to_owned(),
        message: format!("{what} is not one complete JSON value ({e}); partial or invalid input is never written"),
    })
}

/// Writes `block`, whose object sits at JSON level `depth` of the document (1
/// for a lone block); `count` counts the blocks written. Depth and count are
/// checked before anything nested is written, so encoding refuses exactly what
/// decoding would refuse, and the recursion over nested tool results is bounded
/// by [`MAX_DEPTH`].
fn encode_block(
    out: &mut String,
    block: &Block,
    at: &str,
    depth: usize,
    count: &mut usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(too_deep(at, "the block"));
    }
    *count += 1;
    if *count > MAX_BLOCKS {
        return Err(Error::Limit {
            at: at.to_owned(),
            message: format!("more than {MAX_BLOCKS} blocks, which decoding refuses"),
        });
    }
    out.push_str("{\"type\":\"");
    out.push_str(block.type_tag());
    out.push('"');
    match block {
        Block::Text(text) | Block::Refusal(text) => push_field(out, "text", text),
        Block::Thinking(t) => {
            push_field(out, "thinking", &t.thinking);
            push_optional(out, "signature", &t.signature);
            push_optional(out, "signature_format", &t.signature_format);
            push_state(
                out,
                t.provider_state.as_deref(),
                &t.provider_state_format,
                depth,
                at,
            )?;
        }
        Block::Image(i) => {
            push_optional(out, "media_type", &i.media_type);
            push_optional(out, "url", &i.url);
            push_optional(out, "data", &i.data);
        }
        Block::Audio(a) => {
            push_optional(out, "media_type", &a.media_type);
            push_optional(out, "url", &a.url);
            push_optional(out, "data", &a.data);
            push_optional(out, "transcript", &a.transcript);
        }
        Block::Document(d) => {
            push_optional(out, "media_type", &d.media_type);
            push_optional(out, "url", &d.url);
            push_optional(out, "data", &d.data);
            push_optional(out, "title", &d.title);
        }
        Block::ToolUse(t) => {
            let at = if t.id.is_empty() {
                format!("{at} (tool call {:?})", t.name)
            } else {
                format!("{at} (tool call {:?})", t.id)
            };
            push_field(out, "id", &t.id);
            push_field(out, "name", &t.name);
            out.push_str(",\"input\":");
            if t.is_text_input() {
                // Free-form input (a custom tool) is text, carried as a JSON string.
                push_json_str(out, &t.input);
            } else if t.input.is_empty() {
                out.push_str("null");
            } else {
                check_raw_json(&t.input, depth, at.trim_start(), "its input")?;
                if t.input.trim_matches(JSON_WHITESPACE) == "null" {
                    return Err(Error::Encode {
                        at: at.trim_start().to_owned(),
                        message:
                            "its input is the JSON value null, which the wire cannot tell apart \
                                  from empty input; use empty input"
                                .to_owned(),
                    });
                }
                out.push_str(&t.input);
            }
            push_state(
                out,
                t.provider_state.as_deref(),
                &t.provider_state_format,
                depth,
                at.trim_start(),
            )?;
            if t.kind != FUNCTION {
                push_field(out, "kind", &t.kind);
            }
            if t.server_side {
                out.push_str(",\"server_side\":true");
            }
        }
        Block::ToolResult(r) => {
            push_field(out, "tool_use_id", &r.tool_use_id);
            push_optional(out, "kind", &r.kind);
            push_state(
                out,
                r.provider_state.as_deref(),
                &r.provider_state_format,
                depth,
                at.trim_start(),
            )?;
            if depth >= MAX_DEPTH {
                return Err(too_deep(at, "its content"));
            }
            out.push_str(",\"content\":[");
            for (i, inner) in r.content.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let here = format!("{at}.content[{i}]");
                encode_block(out, inner, &here, depth + 2, count)?;
            }
            out.push_str("],\"is_error\":");
            out.push_str(if r.is_error { "true" } else { "false" });
        }
    }
    out.push('}');
    Ok(())
}

fn push_state(
    out: &mut String,
    state: Option<&str>,
    format: &str,
    depth: usize,
    at: &str,
) -> Result<(), Error> {
    if let Some(state) = state {
        check_raw_json(state, depth, at, "its provider_state")?;
        out.push_str(",\"provider_state\":");
        out.push_str(state);
        push_field(out, "provider_state_format", format);
    } else {
        // A format without a state still travels, so that the round trip is exact.
        push_optional(out, "provider_state_format", format);
    }
    Ok(())
}

fn check_block_size(len: usize, at: &str) -> Result<(), Error> {
    if len > MAX_BLOCK_BYTES {
        return Err(Error::Limit {
            at: at.to_owned(),
            message: format!("the block is {len} bytes, over the limit of {MAX_BLOCK_BYTES}"),
        });
    }
    Ok(())
}

/// Encodes one block.
///
/// # Errors
/// [`Error::Encode`] for partial or invalid input or provider state,
/// [`Error::Limit`] for a block over [`MAX_BLOCK_BYTES`], holding more than
/// [`MAX_BLOCKS`] blocks, or nesting deeper than [`MAX_DEPTH`] JSON levels
/// (whatever decoding would refuse).
pub fn marshal_block(block: &Block) -> Result<String, Error> {
    let mut out = String::new();
    encode_block(&mut out, block, "block", 1, &mut 0)?;
    check_block_size(out.len(), "block")?;
    Ok(out)
}

/// Writes a JSON array of blocks whose array sits at JSON level `depth`.
fn encode_list(
    out: &mut String,
    blocks: &[Block],
    at: &str,
    depth: usize,
    count: &mut usize,
) -> Result<(), Error> {
    if blocks.len() > MAX_BLOCKS {
        return Err(Error::Limit {
            at: at.to_owned(),
            message: format!("{} blocks, over the limit of {MAX_BLOCKS}", blocks.len()),
        });
    }
    out.push('[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let start = out.len();
        let here = format!("{at}[{i}]");
        encode_block(out, block, &here, depth + 1, count)?;
        check_block_size(out.len() - start, &here)?;
    }
    out.push(']');
    Ok(())
}

/// Encodes a list of blocks as a JSON array.
///
/// # Errors
/// As [`marshal_block`], for any block, and [`Error::Limit`] past [`MAX_BLOCKS`]
/// or [`MAX_DOCUMENT_BYTES`].
pub fn marshal_blocks(blocks: &[Block]) -> Result<String, Error> {
    let mut out = String::new();
    encode_list(&mut out, blocks, "blocks", 1, &mut 0)?;
    check_document_size(out, "blocks")
}

/// The document, refused when it is larger than decoding accepts.
fn check_document_size(out: String, at: &str) -> Result<String, Error> {
    if out.len() > MAX_DOCUMENT_BYTES {
        return Err(Error::Limit {
            at: at.to_owned(),
            message: format!(
                "{} bytes, over the limit of {MAX_DOCUMENT_BYTES}",
                out.len()
            ),
        });
    }
    Ok(out)
}

/// Encodes a message: `{"role":…,"content":[…]}`, or for a tool result
/// `{"role":"tool","tool_use_id":…,"content":[…],"is_error":…}`.
///
/// # Errors
/// As [`marshal_blocks`], and [`Error::Encode`] for a [`Message`] whose role is
/// `tool` (it would be read back as a tool result).
pub fn marshal_message(message: &AnyMessage) -> Result<String, Error> {
    let mut out = String::from("{\"role\":");
    match message {
        AnyMessage::Message(m) if m.role == "tool" => {
            return Err(Error::Encode {
                at: "message".to_owned(),
                message: "a message with the role \"tool\" is read back as a tool result; \
                          send a ToolResultMessage instead"
                    .to_owned(),
            });
        }
        AnyMessage::Message(m) => {
            push_json_str(&mut out, &m.role);
            out.push_str(",\"content\":");
            encode_list(&mut out, &m.blocks, "message.content", 2, &mut 0)?;
        }
        AnyMessage::ToolResult(m) => {
            out.push_str("\"tool\"");
            push_field(&mut out, "tool_use_id", &m.tool_use_id);
            out.push_str(",\"content\":");
            encode_list(&mut out, &m.blocks, "message.content", 2, &mut 0)?;
            out.push_str(",\"is_error\":");
            out.push_str(if m.is_error { "true" } else { "false" });
        }
    }
    out.push('}');
    check_document_size(out, "message")
}

// ---------------------------------------------------------------- decoding

/// The deepest bracket nesting of a JSON text, strings skipped; linear, no allocation.
#[must_use]
pub fn json_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// An object's members in order, values left as raw JSON text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> de::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    members.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// A field key folded so that `tool_use_id`, `ToolUseID` and `toolUseId` agree.
fn fold_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

struct Fields<'a> {
    members: Vec<(String, &'a RawValue)>,
    at: String,
}

impl<'a> Fields<'a> {
    fn parse(raw: &'a str, at: &str) -> Result<Self, Error> {
        let Members(members) = serde_json::from_str::<Members<'a>>(raw)
            .map_err(|e| decode_err(at, format!("expected a JSON object: {e}")))?;
        let mut folded: Vec<(String, &'a RawValue)> = Vec::with_capacity(members.len());
        for (key, value) in members {
            let key = fold_key(&key);
            if folded.iter().any(|(k, _)| *k == key) {
                return Err(decode_err(at, format!("the field {key:?} appears twice")));
            }
            folded.push((key, value));
        }
        Ok(Self {
            members: folded,
            at: at.to_owned(),
        })
    }

    fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .filter(|v| v.get() != "null")
    }

    fn string(&self, key: &str) -> Result<String, Error> {
        match self.raw(key) {
            None => Ok(String::new()),
            Some(raw) => serde_json::from_str::<String>(raw.get()).map_err(|_| {
                decode_err(
                    &self.at,
                    format!(
                        "the field {key:?} must be a string, not {}",
                        raw.get().chars().take(40).collect::<String>()
                    ),
                )
            }),
        }
    }

    fn boolean(&self, key: &str) -> Result<bool, Error> {
        match self.raw(key) {
            None => Ok(false),
            Some(raw) => serde_json::from_str::<bool>(raw.get()).map_err(|_| {
                decode_err(&self.at, format!("the field {key:?} must be true or false"))
            }),
        }
    }

    /// The raw JSON text of a field, where JSON `null` counts as absent.
    fn raw_text(&self, key: &str) -> Option<String> {
        self.raw(key).map(|r| r.get().to_owned())
    }

    /// The raw JSON text of a field that is present, `null` included.
    fn raw_present(&self, key: &str) -> Option<String> {
        self.members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.get().to_owned())
    }
}

struct Decoder {
    blocks: usize,
}

impl Decoder {
    fn count(&mut self, at: &str) -> Result<(), Error> {
        self.blocks += 1;
        if self.blocks > MAX_BLOCKS {
            return Err(Error::Limit {
                at: at.to_owned(),
                message: format!("more than {MAX_BLOCKS} blocks"),
            });
        }
        Ok(())
    }

    fn block(&mut self, raw: &str, at: &str) -> Result<Block, Error> {
        check_block_size(raw.len(), at)?;
        self.count(at)?;
        let f = Fields::parse(raw, at)?;
        let tag = match f.raw("type") {
            None => {
                return Err(Error::UnknownType {
                    at: at.to_owned(),
                    message: "the block has no \"type\" tag".to_owned(),
                })
            }
            Some(raw) => {
                serde_json::from_str::<String>(raw.get()).map_err(|_| Error::UnknownType {
                    at: at.to_owned(),
                    message: "the block's \"type\" tag is not a string".to_owned(),
                })?
            }
        };
        Ok(match fold_key(&tag).as_str() {
            "text" => Block::Text(f.string("text")?),
            "refusal" => Block::Refusal(f.string("text")?),
            "thinking" => Block::Thinking(ThinkingBlock {
                thinking: f.string("thinking")?,
                signature: f.string("signature")?,
                signature_format: f.string("signatureformat")?,
                provider_state: f.raw_present("providerstate"),
                provider_state_format: f.string("providerstateformat")?,
            }),
            "image" => Block::Image(ImageBlock {
                media_type: f.string("mediatype")?,
                url: f.string("url")?,
                data: f.string("data")?,
            }),
            "audio" => Block::Audio(AudioBlock {
                media_type: f.string("mediatype")?,
                url: f.string("url")?,
                data: f.string("data")?,
                transcript: f.string("transcript")?,
            }),
            "document" => Block::Document(DocumentBlock {
                media_type: f.string("mediatype")?,
                url: f.string("url")?,
                data: f.string("data")?,
                title: f.string("title")?,
            }),
            "tooluse" => {
                let kind = f.string("kind")?;
                let kind = if kind.is_empty() {
                    FUNCTION.to_owned()
                } else {
                    kind
                };
                let input = if kind == CUSTOM {
                    f.string("input")?
                } else {
                    f.raw_text("input").unwrap_or_default()
                };
                Block::ToolUse(ToolUseBlock {
                    id: f.string("id")?,
                    name: f.string("name")?,
                    input,
                    provider_state: f.raw_present("providerstate"),
                    provider_state_format: f.string("providerstateformat")?,
                    kind,
                    server_side: f.boolean("serverside")?,
                })
            }
            "toolresult" => Block::ToolResult(ToolResultBlock {
                tool_use_id: f.string("tooluseid")?,
                content: self.content(&f, "content", at)?,
                is_error: f.boolean("iserror")?,
                kind: f.string("kind")?,
                provider_state: f.raw_present("providerstate"),
                provider_state_format: f.string("providerstateformat")?,
            }),
            "" => {
                return Err(Error::UnknownType {
                    at: at.to_owned(),
                    message: "the block's \"type\" tag is empty".to_owned(),
                })
            }
            _ => {
                return Err(Error::UnknownType {
                    at: at.to_owned(),
                    message: format!("unknown block type {tag:?}"),
                })
            }
        })
    }

    /// A content field: an array of blocks, or a plain string standing for one text block.
    fn content(&mut self, f: &Fields<'_>, key: &str, at: &str) -> Result<Vec<Block>, Error> {
        let Some(raw) = f.raw(key) else {
            return Ok(Vec::new());
        };
        if let Ok(text) = serde_json::from_str::<String>(raw.get()) {
            self.count(at)?;
            return Ok(vec![Block::Text(text)]);
        }
        self.list(raw.get(), &format!("{at}.{key}"))
    }

    fn list(&mut self, raw: &str, at: &str) -> Result<Vec<Block>, Error> {
        let items = serde_json::from_str::<Vec<&RawValue>>(raw)
            .map_err(|e| decode_err(at, format!("expected a JSON array of blocks: {e}")))?;
        if items.len() > MAX_BLOCKS {
            return Err(Error::Limit {
                at: at.to_owned(),
                message: format!("{} blocks, over the limit of {MAX_BLOCKS}", items.len()),
            });
        }
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| self.block(item.get(), &format!("{at}[{i}]")))
            .collect()
    }
}

/// Checks size, UTF-8 and depth before any parsing.
fn precheck<'a>(data: &'a [u8], max: usize, at: &str) -> Result<&'a str, Error> {
    if data.len() > max {
        return Err(Error::Limit {
            at: at.to_owned(),
            message: format!("{} bytes, over the limit of {max}", data.len()),
        });
    }
    let text = std::str::from_utf8(data)
        .map_err(|e| decode_err(at, format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    if json_depth(data) > MAX_DEPTH {
        return Err(Error::Limit {
            at: at.to_owned(),
            message: format!("JSON nests deeper than {MAX_DEPTH} levels"),
        });
    }
    Ok(text)
}

/// Decodes one block.
///
/// # Errors
/// [`Error::Limit`] over [`MAX_BLOCK_BYTES`] or [`MAX_DEPTH`]; [`Error::Decode`] for
/// malformed JSON, invalid UTF-8, a non-object or a field of the wrong type;
/// [`Error::UnknownType`] for a missing, empty or unknown tag.
pub fn unmarshal_block(data: &[u8]) -> Result<Block, Error> {
    let text = precheck(data, MAX_BLOCK_BYTES, "block")?;
    Decoder { blocks: 0 }.block(text, "block")
}

/// Decodes a JSON array of blocks.
///
/// # Errors
/// As [`unmarshal_block`] for each block; [`Error::Limit`] past [`MAX_BLOCKS`] or
/// [`MAX_DOCUMENT_BYTES`].
pub fn unmarshal_blocks(data: &[u8]) -> Result<Vec<Block>, Error> {
    let text = precheck(data, MAX_DOCUMENT_BYTES, "blocks")?;
    Decoder { blocks: 0 }.list(text, "blocks")
}

/// Decodes a message; one with a `tool_use_id` or the role `tool` is a tool result.
///
/// # Errors
/// As [`unmarshal_blocks`], and [`Error::Decode`] when the object is not a message.
pub fn unmarshal_message(data: &[u8]) -> Result<AnyMessage, Error> {
    let at = "message";
    let text = precheck(data, MAX_DOCUMENT_BYTES, at)?;
    let f = Fields::parse(text, at)?;
    let mut decoder = Decoder { blocks: 0 };
    let key = if f.raw("content").is_some() {
        "content"
    } else {
        "blocks"
    };
    let blocks = decoder.content(&f, key, at)?;
    let role = f.string("role")?;
    if f.raw("tooluseid").is_some() || role == "tool" {
        return Ok(AnyMessage::ToolResult(ToolResultMessage {
            tool_use_id: f.string("tooluseid")?,
            blocks,
            is_error: f.boolean("iserror")?,
        }));
    }
    Ok(AnyMessage::Message(Message { role, blocks }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(input: &str) -> Block {
        Block::ToolUse(ToolUseBlock {
            id: "call_1".into(),
            name: "weather".into(),
            input: input.into(),
            ..Default::default()
        })
    }

    #[test]
    fn tool_use_is_shaped_like_anthropic_with_verbatim_input() {
        let wire = marshal_block(&tool("{\"city\": \"Bo\\u0073ton\" }")).unwrap_or_default();
        assert_eq!(
            wire,
            "{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"weather\",\"input\":{\"city\": \"Bo\\u0073ton\" }}"
        );
        assert_eq!(
            unmarshal_block(wire.as_bytes()).ok(),
            Some(tool("{\"city\": \"Bo\\u0073ton\" }"))
        );
    }

    #[test]
    fn empty_input_is_null_and_back() {
        let wire = marshal_block(&tool("")).unwrap_or_default();
        assert!(wire.ends_with("\"input\":null}"));
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(tool("")));
    }

    #[test]
    fn partial_input_refuses_to_marshal_naming_the_call() {
        let err = marshal_block(&tool("{\"city\":")).err();
        assert!(
            matches!(&err, Some(Error::Encode { at, .. }) if at.contains("call_1")),
            "{err:?}"
        );
        assert!(matches!(
            marshal_block(&tool("{} x")),
            Err(Error::Encode { .. })
        ));
    }

    #[test]
    fn go_spelling_is_accepted() {
        let b = unmarshal_block(br#"{"Type":"tool_use","ID":"c","Name":"n","Input":{"a":1}}"#);
        assert_eq!(
            b.ok(),
            Some(Block::ToolUse(ToolUseBlock {
                id: "c".into(),
                name: "n".into(),
                input: "{\"a\":1}".into(),
                ..Default::default()
            }))
        );
        let b = unmarshal_block(br#"{"type":"image","MediaType":"image/png","Data":"AA"}"#);
        assert_eq!(
            b.ok(),
            Some(Block::Image(ImageBlock {
                media_type: "image/png".into(),
                data: "AA".into(),
                ..Default::default()
            }))
        );
    }

    #[test]
    fn fails_closed() {
        assert!(matches!(
            unmarshal_block(b"{}"),
            Err(Error::UnknownType { .. })
        ));
        assert!(matches!(
            unmarshal_block(br#"{"type":""}"#),
            Err(Error::UnknownType { .. })
        ));
        assert!(matches!(
            unmarshal_block(br#"{"type":"video"}"#),
            Err(Error::UnknownType { .. })
        ));
        assert!(matches!(unmarshal_block(b"[1]"), Err(Error::Decode { .. })));
        assert!(matches!(
            unmarshal_block(b"{\"type\":\"text\""),
            Err(Error::Decode { .. })
        ));
        assert!(matches!(
            unmarshal_block(b"{\"type\":\"text\",\"text\":\"\xff\"}"),
            Err(Error::Decode { .. })
        ));
        assert!(matches!(
            unmarshal_block(br#"{"type":"text","text":5}"#),
            Err(Error::Decode { .. })
        ));
        assert!(matches!(
            unmarshal_block(br#"{"type":"text","text":"a","Text":"b"}"#),
            Err(Error::Decode { .. })
        ));
        let deep = format!(
            "{{\"type\":\"tool_use\",\"input\":{}{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(
            unmarshal_block(deep.as_bytes()),
            Err(Error::Limit { .. })
        ));
        let big = format!(
            "{{\"type\":\"text\",\"text\":\"{}\"}}",
            "a".repeat(MAX_BLOCK_BYTES)
        );
        assert!(matches!(
            unmarshal_block(big.as_bytes()),
            Err(Error::Limit { .. })
        ));
        let many = format!(
            "[{}]",
            vec!["{\"type\":\"text\"}"; MAX_BLOCKS + 1].join(",")
        );
        assert!(matches!(
            unmarshal_blocks(many.as_bytes()),
            Err(Error::Limit { .. })
        ));
    }

    /// `levels` tool results, each holding the next; the innermost holds `leaf`.
    fn chain(levels: usize, leaf: Block) -> Block {
        let mut block = leaf;
        for _ in 0..levels {
            block = Block::ToolResult(ToolResultBlock {
                tool_use_id: "r".into(),
                content: vec![block],
                ..ToolResultBlock::default()
            });
        }
        block
    }

    /// Takes a chain apart one level at a time (the derived drop recurses).
    fn unchain(mut block: Block) {
        while let Block::ToolResult(mut r) = block {
            match r.content.pop() {
                Some(inner) => block = inner,
                None => break,
            }
        }
    }

    #[test]
    fn encoding_refuses_exactly_the_nesting_decoding_refuses() {
        for leaf in [
            Block::Text("x".into()),
            tool("[[1]]"),
            Block::ToolResult(ToolResultBlock::default()),
        ] {
            for levels in 40..60 {
                let block = chain(levels, leaf.clone());
                let encoded = marshal_block(&block);
                // What decoding says of the same document, written by hand.
                let text = format!(
                    "{}{}{}",
                    "{\"type\":\"tool_result\",\"tool_use_id\":\"r\",\"content\":[".repeat(levels),
                    marshal_block(&leaf).unwrap_or_default(),
                    "],\"is_error\":false}".repeat(levels)
                );
                let decoded = unmarshal_block(text.as_bytes());
                match (&encoded, &decoded) {
                    (Ok(wire), Ok(back)) => {
                        assert_eq!(wire, &text);
                        assert_eq!(back, &block);
                    }
                    (Err(Error::Limit { message, .. }), Err(Error::Limit { .. })) => {
                        assert!(message.contains("deeper than 100"), "{message}");
                    }
                    other => panic!("{levels} levels of {leaf:?}: {other:?}"),
                }
                for wrapped in [
                    marshal_blocks(std::slice::from_ref(&block))
                        .map(|w| unmarshal_blocks(w.as_bytes()).is_ok()),
                    marshal_message(&AnyMessage::Message(Message {
                        role: "user".into(),
                        blocks: vec![block.clone()],
                    }))
                    .map(|w| unmarshal_message(w.as_bytes()).is_ok()),
                ] {
                    assert!(
                        matches!(wrapped, Ok(true) | Err(Error::Limit { .. })),
                        "{wrapped:?}"
                    );
                }
            }
        }
        // The boundary itself: 49 results around a text block are 99 levels.
        assert!(marshal_block(&chain(49, Block::Text("x".into()))).is_ok());
        assert!(matches!(
            marshal_block(&chain(50, Block::Text("x".into()))),
            Err(Error::Limit { .. })
        ));
    }

    #[test]
    fn a_provider_state_format_without_a_state_round_trips() {
        for block in [
            Block::Thinking(ThinkingBlock {
                provider_state_format: "x".into(),
                ..Default::default()
            }),
            Block::ToolUse(ToolUseBlock {
                provider_state_format: "y".into(),
                ..Default::default()
            }),
        ] {
            let wire = marshal_block(&block).unwrap_or_default();
            assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(block));
        }
    }

    #[test]
    fn hostile_nesting_is_refused_without_recursing_into_it() {
        let block = chain(100_000, Block::Text("x".into()));
        let err = marshal_block(&block).err();
        assert!(
            matches!(&err, Some(Error::Limit { message, .. }) if message.contains("deeper than 100")),
            "{err:?}"
        );
        unchain(block);
    }

    #[test]
    fn tool_input_and_provider_state_count_towards_the_depth() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(marshal_block(&tool(&deep(99))).is_ok());
        assert!(matches!(
            marshal_block(&tool(&deep(100))),
            Err(Error::Limit { .. })
        ));
        let with_state = |n: usize| {
            Block::Thinking(ThinkingBlock {
                provider_state: Some(deep(n)),
                ..Default::default()
            })
        };
        assert!(marshal_block(&with_state(99)).is_ok());
        assert!(matches!(
            marshal_block(&with_state(100)),
            Err(Error::Limit { .. })
        ));
        // Inside a result, the same input is two levels deeper.
        let inner = chain(1, tool(&deep(98)));
        assert!(matches!(marshal_block(&inner), Err(Error::Limit { .. })));
        assert!(marshal_block(&chain(1, tool(&deep(97)))).is_ok());
    }

    #[test]
    fn encoding_counts_nested_blocks_as_decoding_does() {
        let many = Block::ToolResult(ToolResultBlock {
            tool_use_id: "r".into(),
            content: vec![Block::Text("x".into()); MAX_BLOCKS],
            ..ToolResultBlock::default()
        });
        let err = marshal_block(&many).err();
        assert!(
            matches!(&err, Some(Error::Limit { message, .. }) if message.contains("10000 blocks")),
            "{err:?}"
        );
        let fits = Block::ToolResult(ToolResultBlock {
            tool_use_id: "r".into(),
            content: vec![Block::Text("x".into()); MAX_BLOCKS - 1],
            ..ToolResultBlock::default()
        });
        let wire = marshal_block(&fits).unwrap_or_default();
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(fits));
    }

    #[test]
    fn every_call_kind_round_trips() {
        let custom = Block::ToolUse(ToolUseBlock {
            id: "c".into(),
            name: "sql".into(),
            input: "SELECT \"a\" FROM t -- not JSON {".into(),
            kind: CUSTOM.into(),
            ..ToolUseBlock::default()
        });
        let wire = marshal_block(&custom).unwrap_or_default();
        assert!(wire.contains("\"kind\":\"custom_tool_call\""), "{wire}");
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(custom));
        let hosted = Block::ToolUse(ToolUseBlock {
            id: "ws_1".into(),
            name: "web_search".into(),
            input: "{\"action\":{\"type\":\"search\"}}".into(),
            provider_state: Some("{\"id\":\"ws_1\"}".into()),
            provider_state_format: "openai-responses-item".into(),
            kind: "web_search_call".into(),
            server_side: true,
        });
        let wire = marshal_block(&hosted).unwrap_or_default();
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(hosted));
        let result = Block::ToolResult(ToolResultBlock {
            tool_use_id: "srv_1".into(),
            content: vec![Block::Text("hello".into())],
            is_error: false,
            kind: "mcp_tool_result".into(),
            provider_state: Some("{\"type\":\"mcp_tool_result\"}".into()),
            provider_state_format: "anthropic".into(),
        });
        let wire = marshal_block(&result).unwrap_or_default();
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(result));
        // A function call's wire carries no kind.
        assert!(!marshal_block(&tool("{}"))
            .unwrap_or_default()
            .contains("kind"));
    }

    #[test]
    fn nesting_the_decoder_refuses_is_not_encoded() {
        let nest = |levels: usize| {
            (0..levels).fold(Block::Text("x".into()), |inner, _| {
                Block::ToolResult(ToolResultBlock {
                    content: vec![inner],
                    ..ToolResultBlock::default()
                })
            })
        };
        // Each tool result is two levels: its object and its content list.
        let deep = nest(MAX_DEPTH / 2 + 1);
        assert!(matches!(marshal_block(&deep), Err(Error::Limit { .. })));
        assert!(matches!(
            marshal_blocks(std::slice::from_ref(&deep)),
            Err(Error::Limit { .. })
        ));
        let m = AnyMessage::Message(Message {
            role: "user".into(),
            blocks: vec![deep],
        });
        assert!(matches!(marshal_message(&m), Err(Error::Limit { .. })));
        let fits = nest(MAX_DEPTH / 2 - 1);
        let wire = marshal_block(&fits).unwrap_or_default();
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(fits));
    }

    #[test]
    fn a_plain_message_with_the_tool_role_is_refused() {
        let m = AnyMessage::Message(Message {
            role: "tool".into(),
            blocks: vec![Block::Text("r".into())],
        });
        assert!(matches!(
            marshal_message(&m),
            Err(Error::Encode { message, .. }) if message.contains("ToolResultMessage")
        ));
    }

    #[test]
    fn a_state_format_without_state_round_trips() {
        let blocks = [
            Block::ToolUse(ToolUseBlock {
                provider_state_format: "gemini".into(),
                ..ToolUseBlock::default()
            }),
            Block::Thinking(ThinkingBlock {
                provider_state_format: "anthropic-redacted".into(),
                ..ThinkingBlock::default()
            }),
            Block::ToolResult(ToolResultBlock {
                provider_state_format: "anthropic".into(),
                ..ToolResultBlock::default()
            }),
        ];
        for block in blocks {
            let wire = marshal_block(&block).unwrap_or_default();
            assert!(wire.contains("\"provider_state_format\""), "{wire}");
            assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(block));
        }
    }

    #[test]
    fn nested_tool_results_and_messages_round_trip() {
        let inner = Block::ToolResult(ToolResultBlock {
            tool_use_id: "a".into(),
            content: vec![Block::Text("x\n\u{1}é".into()), tool("[1,2]")],
            is_error: true,
            ..ToolResultBlock::default()
        });
        let outer = Block::ToolResult(ToolResultBlock {
            tool_use_id: "b".into(),
            content: vec![inner],
            is_error: false,
            ..ToolResultBlock::default()
        });
        let wire = marshal_block(&outer).unwrap_or_default();
        assert_eq!(unmarshal_block(wire.as_bytes()).ok(), Some(outer.clone()));
        for m in [
            AnyMessage::Message(Message {
                role: "assistant".into(),
                blocks: vec![outer.clone()],
            }),
            AnyMessage::ToolResult(ToolResultMessage {
                tool_use_id: "b".into(),
                blocks: vec![Block::Text("ok".into())],
                is_error: true,
            }),
        ] {
            let wire = marshal_message(&m).unwrap_or_default();
            assert_eq!(unmarshal_message(wire.as_bytes()).ok(), Some(m));
        }
    }
}
