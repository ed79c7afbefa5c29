//! The wire codec.
//!
//! Raw input (decoded as a block, a list of blocks or a message, as the
//! header says): whatever decodes must encode, and decode again to the same
//! value. Structured input (blocks built from the input): whatever encodes
//! must decode, to a value that encodes to the same text.
#![no_main]

use _toolstitch::blocks::{
    AnyMessage, AudioBlock, Block, DocumentBlock, ImageBlock, Message, ThinkingBlock,
    ToolResultBlock, ToolResultMessage, ToolUseBlock,
};
use _toolstitch::wire::{
    marshal_block, marshal_blocks, marshal_message, unmarshal_block, unmarshal_blocks,
    unmarshal_message,
};
use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolstitch_fuzz::Header;

const JSON: &[&str] = &[
    "{}",
    "{\"a\":1}",
    "[1, 2]",
    "\"s\"",
    "null",
    "1",
    "{",
    "",
    " {\"a\" : [true]} ",
    "{\"a\":1}{}",
];
const KINDS: &[&str] = &[
    "function",
    "custom_tool_call",
    "",
    "web_search_call",
    "server_tool_use",
];
const TEXT: &[&str] = &["", "a", "é\"\\\n\u{1}", "call_1"];

#[derive(Arbitrary, Debug, Clone)]
enum S {
    Pool(u8),
    Own(String),
}

impl S {
    fn of(&self, pool: &[&str]) -> String {
        match self {
            S::Pool(i) => pool[usize::from(*i) % pool.len()].to_owned(),
            S::Own(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum B {
    Text(S),
    Refusal(S),
    Thinking {
        thinking: S,
        signature: S,
        format: S,
        state: Option<S>,
        state_format: S,
    },
    Image(S, S, S),
    Audio(S, S, S, S),
    Document(S, S, S, S),
    ToolUse {
        id: S,
        name: S,
        input: S,
        state: Option<S>,
        state_format: S,
        kind: S,
        server_side: bool,
    },
    ToolResult {
        id: S,
        content: Vec<B>,
        is_error: bool,
        kind: S,
        state: Option<S>,
        state_format: S,
    },
}

impl B {
    fn build(&self) -> Block {
        match self {
            B::Text(s) => Block::Text(s.of(TEXT)),
            B::Refusal(s) => Block::Refusal(s.of(TEXT)),
            B::Thinking {
                thinking,
                signature,
                format,
                state,
                state_format,
            } => Block::Thinking(ThinkingBlock {
                thinking: thinking.of(TEXT),
                signature: signature.of(TEXT),
                signature_format: format.of(TEXT),
                provider_state: state.as_ref().map(|s| s.of(JSON)),
                provider_state_format: state_format.of(TEXT),
            }),
            B::Image(a, b, c) => Block::Image(ImageBlock {
                media_type: a.of(TEXT),
                url: b.of(TEXT),
                data: c.of(TEXT),
            }),
            B::Audio(a, b, c, d) => Block::Audio(AudioBlock {
                media_type: a.of(TEXT),
                url: b.of(TEXT),
                data: c.of(TEXT),
                transcript: d.of(TEXT),
            }),
            B::Document(a, b, c, d) => Block::Document(DocumentBlock {
                media_type: a.of(TEXT),
                url: b.of(TEXT),
                data: c.of(TEXT),
                title: d.of(TEXT),
            }),
            B::ToolUse {
                id,
                name,
                input,
                state,
                state_format,
                kind,
                server_side,
            } => Block::ToolUse(ToolUseBlock {
                id: id.of(TEXT),
                name: name.of(TEXT),
                input: input.of(JSON),
                provider_state: state.as_ref().map(|s| s.of(JSON)),
                provider_state_format: state_format.of(TEXT),
                kind: kind.of(KINDS),
                server_side: *server_side,
            }),
            B::ToolResult {
                id,
                content,
                is_error,
                kind,
                state,
                state_format,
            } => Block::ToolResult(ToolResultBlock {
                tool_use_id: id.of(TEXT),
                content: content.iter().map(B::build).collect(),
                is_error: *is_error,
                kind: kind.of(KINDS),
                provider_state: state.as_ref().map(|s| s.of(JSON)),
                provider_state_format: state_format.of(TEXT),
            }),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Doc {
    Block(B),
    Blocks(Vec<B>),
    Message {
        role: S,
        blocks: Vec<B>,
    },
    ToolResult {
        id: S,
        blocks: Vec<B>,
        is_error: bool,
    },
}

fn raw(form: u8, body: &[u8]) {
    match form % 3 {
        0 => {
            if let Ok(b) = unmarshal_block(body) {
                let text = marshal_block(&b)
                    .unwrap_or_else(|e| panic!("decoded {b:?} but cannot encode it: {e}"));
                assert_eq!(
                    unmarshal_block(text.as_bytes()),
                    Ok(b),
                    "block changed through {text}"
                );
            }
        }
        1 => {
            if let Ok(b) = unmarshal_blocks(body) {
                let text = marshal_blocks(&b)
                    .unwrap_or_else(|e| panic!("decoded {b:?} but cannot encode it: {e}"));
                assert_eq!(
                    unmarshal_blocks(text.as_bytes()),
                    Ok(b),
                    "blocks changed through {text}"
                );
            }
        }
        _ => {
            if let Ok(m) = unmarshal_message(body) {
                let text = marshal_message(&m)
                    .unwrap_or_else(|e| panic!("decoded {m:?} but cannot encode it: {e}"));
                assert_eq!(
                    unmarshal_message(text.as_bytes()),
                    Ok(m),
                    "message changed through {text}"
                );
            }
        }
    }
}

const WS: &[char] = &[' ', '\t', '\n', '\r'];

/// What a block becomes through the wire: raw JSON (input, provider state)
/// loses the whitespace around it, and an empty kind is a function call.
fn normal(b: &Block) -> Block {
    let state = |s: &Option<String>| s.as_ref().map(|s| s.trim_matches(WS).to_owned());
    match b {
        Block::Thinking(t) => Block::Thinking(ThinkingBlock {
            provider_state: state(&t.provider_state),
            ..t.clone()
        }),
        Block::ToolUse(t) => {
            let kind = if t.kind.is_empty() {
                "function".to_owned()
            } else {
                t.kind.clone()
            };
            let input = if kind == "custom_tool_call" {
                t.input.clone()
            } else {
                t.input.trim_matches(WS).to_owned()
            };
            Block::ToolUse(ToolUseBlock {
                input,
                kind,
                provider_state: state(&t.provider_state),
                ..t.clone()
            })
        }
        Block::ToolResult(r) => Block::ToolResult(ToolResultBlock {
            content: r.content.iter().map(normal).collect(),
            provider_state: state(&r.provider_state),
            ..r.clone()
        }),
        other => other.clone(),
    }
}

fn normal_message(m: &AnyMessage) -> AnyMessage {
    match m {
        AnyMessage::Message(m) => AnyMessage::Message(Message {
            role: m.role.clone(),
            blocks: m.blocks.iter().map(normal).collect(),
        }),
        AnyMessage::ToolResult(m) => AnyMessage::ToolResult(ToolResultMessage {
            blocks: m.blocks.iter().map(normal).collect(),
            ..m.clone()
        }),
    }
}

fuzz_target!(|data: &[u8]| {
    let (h, body) = Header::split(data);
    if !h.structured {
        raw(h.cuts, body);
        return;
    }
    let Ok(doc) = Doc::arbitrary(&mut Unstructured::new(body)) else {
        return;
    };
    match doc {
        Doc::Block(b) => {
            let b = b.build();
            if let Ok(text) = marshal_block(&b) {
                let back = unmarshal_block(text.as_bytes())
                    .unwrap_or_else(|e| panic!("{text} does not decode: {e}"));
                assert_eq!(back, normal(&b), "{b:?} -> {text}");
            }
        }
        Doc::Blocks(list) => {
            let list: Vec<Block> = list.iter().map(B::build).collect();
            if let Ok(text) = marshal_blocks(&list) {
                let back = unmarshal_blocks(text.as_bytes())
                    .unwrap_or_else(|e| panic!("{text} does not decode: {e}"));
                assert_eq!(
                    back,
                    list.iter().map(normal).collect::<Vec<_>>(),
                    "{list:?} -> {text}"
                );
            }
        }
        Doc::Message { role, blocks } => {
            let m = AnyMessage::Message(Message {
                role: role.of(&["user", "assistant", "tool", ""]),
                blocks: blocks.iter().map(B::build).collect(),
            });
            if let Ok(text) = marshal_message(&m) {
                let back = unmarshal_message(text.as_bytes())
                    .unwrap_or_else(|e| panic!("{text} does not decode: {e}"));
                assert_eq!(back, normal_message(&m), "{m:?} -> {text}");
            }
        }
        Doc::ToolResult {
            id,
            blocks,
            is_error,
        } => {
            let m = AnyMessage::ToolResult(ToolResultMessage {
                tool_use_id: id.of(TEXT),
                blocks: blocks.iter().map(B::build).collect(),
                is_error,
            });
            if let Ok(text) = marshal_message(&m) {
                let back = unmarshal_message(text.as_bytes())
                    .unwrap_or_else(|e| panic!("{text} does not decode: {e}"));
                assert_eq!(back, normal_message(&m), "{m:?} -> {text}");
            }
        }
    }
});
