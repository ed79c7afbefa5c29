//! The floor of the synthetic workloads (and the typed structs the dialects' floors
//! share): memchr framing, one typed parse per event, a `BTreeMap` by index.

use std::borrow::Cow;
use std::collections::BTreeMap;

use _toolstitch::providers::Dialect;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::workloads::Calls;
use super::READ;

/// One `data:` line's payload of each SSE line in reads of `READ` bytes; a line
/// cut by a read is carried over. `[DONE]` is skipped.
#[inline(always)]
pub(crate) fn frame(data: &[u8], mut on_data: impl FnMut(&[u8])) {
    let mut carry: Vec<u8> = Vec::new();
    let mut line_of = |line: &[u8]| {
        if let Some(payload) = line.strip_prefix(b"data: ") {
            if payload != b"[DONE]" {
                on_data(payload);
            }
        }
    };
    for read in data.chunks(READ) {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', read) {
            if carry.is_empty() {
                line_of(&read[start..nl]);
            } else {
                carry.extend_from_slice(&read[start..nl]);
                line_of(&carry);
                carry.clear();
            }
            start = nl + 1;
        }
        carry.extend_from_slice(&read[start..]);
    }
}

#[derive(Default, Debug, PartialEq)]
pub(crate) struct Call {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) args: String,
}

pub(crate) type Map = BTreeMap<u64, Call>;

#[derive(Deserialize)]
pub(crate) struct Chunk<'a> {
    #[serde(borrow)]
    pub(crate) choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct Choice<'a> {
    #[serde(borrow)]
    pub(crate) delta: Delta<'a>,
}

#[derive(Deserialize)]
pub(crate) struct Delta<'a> {
    #[serde(borrow, default)]
    pub(crate) tool_calls: Option<Vec<ToolCall<'a>>>,
}

#[derive(Deserialize)]
pub(crate) struct ToolCall<'a> {
    pub(crate) index: u64,
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) function: Option<Function<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct Function<'a> {
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct Event<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default)]
    pub(crate) index: Option<u64>,
    #[serde(borrow, default)]
    pub(crate) content_block: Option<Block<'a>>,
    #[serde(borrow, default)]
    pub(crate) delta: Option<EventDelta<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct Block<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct EventDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) partial_json: Option<Cow<'a, str>>,
}

pub(crate) fn apply_chunk(map: &mut Map, chunk: Chunk<'_>) {
    for choice in chunk.choices {
        for tc in choice.delta.tool_calls.into_iter().flatten() {
            let call = map.entry(tc.index).or_default();
            if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                call.id = id.into_owned();
            }
            if let Some(f) = tc.function {
                if let Some(name) = f.name.filter(|s| !s.is_empty()) {
                    call.name = name.into_owned();
                }
                if let Some(piece) = f.arguments {
                    call.args.push_str(&piece);
                }
            }
        }
    }
}

pub(crate) fn apply_event(map: &mut Map, event: Event<'_>) {
    match (&*event.kind, event.index) {
        ("content_block_delta", Some(i)) => {
            if let Some(d) = event.delta {
                if d.kind.as_deref() == Some("input_json_delta") {
                    if let (Some(call), Some(piece)) = (map.get_mut(&i), d.partial_json) {
                        call.args.push_str(&piece);
                    }
                }
            }
        }
        ("content_block_start", Some(i)) => {
            if let Some(b) = event.content_block.filter(|b| b.kind == "tool_use") {
                map.insert(
                    i,
                    Call {
                        id: b.id.unwrap_or_default().into_owned(),
                        name: b.name.unwrap_or_default().into_owned(),
                        args: String::new(),
                    },
                );
            }
        }
        _ => {}
    }
}

// The same OpenAI reassembly without the per-event `Vec`s of the derived structs:
// a visitor walks the chunk and applies each tool call to the map as it is read.

/// An object key, borrowed unless it holds escapes.
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

pub(crate) fn apply_tool_call(map: &mut Map, tc: ToolCall<'_>) {
    let call = map.entry(tc.index).or_default();
    if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
        call.id = id.into_owned();
    }
    if let Some(f) = tc.function {
        if let Some(name) = f.name.filter(|s| !s.is_empty()) {
            call.name = name.into_owned();
        }
        if let Some(piece) = f.arguments {
            call.args.push_str(&piece);
        }
    }
}

/// What a visitor does at one level of the chunk: which key it descends into.
#[derive(Clone, Copy)]
pub(crate) enum Level {
    Chunk,
    Choices,
    Choice,
    Delta,
    ToolCalls,
}

pub(crate) struct Walk<'m>(&'m mut Map, Level);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.1 {
            Level::Chunk | Level::Choice | Level::Delta => d.deserialize_map(self),
            Level::Choices => d.deserialize_seq(self),
            Level::ToolCalls => d.deserialize_option(self),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an OpenAI chat chunk")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        let (want, next) = match self.1 {
            Level::Chunk => ("choices", Level::Choices),
            Level::Choice => ("delta", Level::Delta),
            _ => ("tool_calls", Level::ToolCalls),
        };
        while let Some(key) = access.next_key::<Key<'de>>()? {
            if key.0 == want {
                access.next_value_seed(Walk(&mut *self.0, next))?;
            } else {
                access.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Level::Choices = self.1 {
            while seq
                .next_element_seed(Walk(&mut *self.0, Level::Choice))?
                .is_some()
            {}
        } else {
            while let Some(tc) = seq.next_element::<ToolCall<'de>>()? {
                apply_tool_call(self.0, tc);
            }
        }
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Parser {
    SerdeJson,
    SonicRs,
    SimdJson,
    SonicWalk,
}

/// The floor: memchr framing, one typed parse per event, a `BTreeMap` by index.
#[inline(never)]
pub(crate) fn floor(parser: Parser, dialect: Dialect, data: &[u8]) -> Map {
    let mut map = Map::new();
    let mut scratch: Vec<u8> = Vec::new();
    let mut buffers = simd_json::Buffers::default();
    let openai = dialect == Dialect::OpenAiChat;
    frame(data, |payload| match parser {
        Parser::SonicWalk if openai => {
            let mut de = sonic_rs::Deserializer::from_slice(payload);
            Walk(&mut map, Level::Chunk).deserialize(&mut de).unwrap();
            de.end().unwrap();
        }
        Parser::SonicWalk => apply_event(&mut map, sonic_rs::from_slice(payload).unwrap()),
        Parser::SerdeJson => {
            if openai {
                apply_chunk(&mut map, serde_json::from_slice(payload).unwrap());
            } else {
                apply_event(&mut map, serde_json::from_slice(payload).unwrap());
            }
        }
        Parser::SonicRs => {
            if openai {
                apply_chunk(&mut map, sonic_rs::from_slice(payload).unwrap());
            } else {
                apply_event(&mut map, sonic_rs::from_slice(payload).unwrap());
            }
        }
        Parser::SimdJson => {
            // simd-json unescapes in place: a mutable copy of the payload.
            scratch.clear();
            scratch.extend_from_slice(payload);
            if openai {
                let chunk =
                    simd_json::serde::from_slice_with_buffers(&mut scratch, &mut buffers).unwrap();
                apply_chunk(&mut map, chunk);
            } else {
                let event =
                    simd_json::serde::from_slice_with_buffers(&mut scratch, &mut buffers).unwrap();
                apply_event(&mut map, event);
            }
        }
    });
    map
}

pub(crate) fn calls_of_map(map: Map) -> Calls {
    map.into_values().map(|c| (c.id, c.name, c.args)).collect()
}
