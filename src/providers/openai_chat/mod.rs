//! OpenAI Chat Completions chunks, and every server that speaks them (Azure,
//! Mistral, Groq, DeepSeek, xAI, Qwen, Ollama, vLLM, LM Studio, …).
//!
//! The hot path: one typed, borrowing decode per chunk (only the fields used),
//! then the call routing of Q1 / Q2 / Q20 before the accumulator sees a key.

mod body;
mod direct;
mod guard;
mod calls;
mod common_event;
mod content;
mod done;

use common_event::{fragment_chunk, stamped_common};
use content::{Content, Part};
use calls::{content_parts, executed_tools, fragment, restated_finish, Args, Piece, EXECUTED};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::Loose;
use super::json::{
    text, CompactJson, Few, Index, Str, TextOrObject,
};
use super::outcome::{count, first, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, BodySpec, Hints, Spec, ResponseFields};
use super::scan::{self, Facts, Scan, Seen};
use super::state::{
    provider_error, usage_map, Fail, Live, Stream, TextKind, R,
};
use super::{common, DecodeKind, Input, NoteKind};
use crate::accumulate::ThinkingFragment;
use crate::blocks::CUSTOM;

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Option<Few<ChatChoice<'a>>>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    /// Groq repeats usage here (Q34); read only when `usage` never comes.
    #[serde(default)]
    x_groq: Option<XGroq>,
    #[serde(default)]
    error: Option<Value>,
    /// OpenAI's per-event nonce (`stream_options.include_obfuscation`, on by
    /// default): a second event with the same one is a replay (Q61).
    /// Read loosely: a nonce that is not a string is no nonce (never a decode error).
    #[serde(borrow, default)]
    obfuscation: Option<Loose<'a>>,
    /// A body's usage as the text its scanner certified (`direct.rs`),
    /// merged as `usage` is (never read from an event).
    #[serde(skip)]
    usage_text: Option<&'a str>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct XGroq {
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct ChatChoice<'a> {
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Str<'a>>,
    /// A legacy `/v1/completions` chunk's text (`"object": "text_completion"`, Q51).
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Str<'a>>,
    /// DeepSeek, Qwen, vLLM, xAI.
    #[serde(borrow, default)]
    reasoning_content: Option<Str<'a>>,
    /// OpenRouter, Ollama, newer vLLM (only when `reasoning_content` is absent).
    #[serde(borrow, default)]
    reasoning: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Few<ToolCall<'a>>>,
    /// The legacy single-function delta.
    #[serde(borrow, default)]
    function_call: Option<Function<'a>>,
    /// Tools the server ran (Groq compound models, Q50): each a `type`, an
    /// `index`, `arguments` as JSON text and, once it ran, its `output`.
    #[serde(default)]
    executed_tools: Option<Vec<Map<String, Value>>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct ToolCall<'a> {
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
    /// A custom tool's call (Q28): free-form text `input`, not JSON arguments.
    #[serde(borrow, default)]
    custom: Option<Custom<'a>>,
    /// `function` or `custom`; only read when both members came (Q52).
    #[serde(borrow, default, rename = "type")]
    kind: Option<Str<'a>>,
    /// Gemini's compatible endpoint: `{"google": {"thought_signature": …}}`, which
    /// the next turn must send back (Q37); kept whole as the call's provider state.
    #[serde(default)]
    extra_content: Option<CompactJson>,
}

/// The provider-state format of a call's `extra_content` (Q37).
pub(crate) const FORMAT: &str = "openai-chat";

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Custom<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    input: Option<Str<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    /// A string in the documented shape; an object from MiniMax and others (Q42).
    #[serde(borrow, default)]
    arguments: Option<TextOrObject<'a>>,
}

/// The fast path of a chunk: fills `chunk` (fresh) with exactly the [`Chunk`]
/// the typed decode gives, or returns `None` for the general path (a chunk
/// with usage, an error, a legacy `function_call` or a custom tool call, an
/// index given as a string or a float, anything [`Scan`] does not certify).
/// It builds in place: the chunk is not moved on the way.
/// Gives the span of the chunk's one `function.arguments` string, if it has
/// exactly one (what a [`scan::Memo`] may vary).
fn scan_chunk<'a>(text: &'a str, chunk: &mut Chunk<'a>) -> Option<Option<(usize, usize)>> {
    scan_chunk_with(Scan::new(text), chunk)
}

/// [`scan_chunk`] with the scanner given (a buffer lent to it, [`Scan::lend`]).
#[inline(always)]
fn scan_chunk_with<'a>(
    mut p: Scan<'a>,
    chunk: &mut Chunk<'a>,
) -> Option<Option<(usize, usize)>> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "choices" => {
            seen.once(0)?;
            if !p.null()? {
                let choices = chunk.choices.insert(Few::default());
                p.array(|p| scan_choice(p, choices.slot()?))?;
            }
            Some(())
        }
        // Present as `null` is absent; anything else is for the general path.
        "usage" => seen.once(1).and_then(|()| p.null()?.then_some(())),
        "x_groq" => seen.once(2).and_then(|()| p.null()?.then_some(())),
        "error" => seen.once(3).and_then(|()| p.null()?.then_some(())),
        "obfuscation" => {
            seen.once(4)?;
            chunk.obfuscation = p.opt_str()?.map(|s| Loose::Str(s.0));
            Some(())
        }
        _ => p.skip(),
    })?;
    p.end()?;
    Some(p.the_hole())
}

/// See [`scan::memo_parts`].
#[cfg(test)]
pub(super) fn memo_parts(template: &str) -> Option<(String, String)> {
    scan::memo_parts::<Chunk<'_>>(template)
}

/// See [`scan::memo_agrees`]; the memo with a buffer lent must make the
/// same events ([`scan::memo_lent_agrees`]).
#[cfg(test)]
pub(super) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    let mut decoded = String::from("a string decoded before");
    scan::memo_lent_agrees::<Chunk<'_>>(template, text, &mut decoded)?;
    scan::memo_agrees::<Chunk<'_>>(template, text)
}


fn scan_choice<'a>(p: &mut Scan<'a>, choice: &mut ChatChoice<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "index" => {
            seen.once(0)?;
            choice.index = p.opt_index()?;
            Some(())
        }
        "delta" => {
            seen.once(1)?;
            if !p.null()? {
                scan_delta(p, choice.delta.insert(Delta::default()))?;
            }
            Some(())
        }
        "finish_reason" => {
            seen.once(2)?;
            choice.finish_reason = p.opt_str()?;
            Some(())
        }
        "text" => {
            seen.once(3)?;
            choice.text = p.opt_str()?;
            Some(())
        }
        _ => p.skip(),
    })
}

fn scan_delta<'a>(p: &mut Scan<'a>, delta: &mut Delta<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "content" => {
                // An array of parts is for the general path. The string is
                // the memo's hole: a chunk whose delta is one piece of text
                // is the common event as an argument fragment is.
                seen.once(0)?;
                delta.content = p.hole()?.map(Content::Text);
                return Some(());
            }
            "refusal" => (1, &mut delta.refusal),
            // Reasoning is the memo's hole too: a delta that is one piece
            // of it is the common event, as a piece of text is.
            "reasoning_content" => {
                seen.once(2)?;
                delta.reasoning_content = p.hole()?;
                return Some(());
            }
            "reasoning" => {
                seen.once(3)?;
                delta.reasoning = p.hole()?;
                return Some(());
            }
            "tool_calls" => {
                seen.once(4)?;
                if !p.null()? {
                    let calls = delta.tool_calls.insert(Few::default());
                    p.array(|p| scan_tool_call(p, calls.slot()?))?;
                }
                return Some(());
            }
            "function_call" => {
                seen.once(5)?;
                return p.null()?.then_some(());
            }
            // Tools the server ran (Q50) are for the general path.
            "executed_tools" => {
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

/// A call's `function` (`null`: none), as `Function` decodes it, its
/// `arguments` string read by `arguments`; arguments as an object, or
/// anything else the scanner refuses, are given up on (`None`).
fn scan_function<'a>(
    p: &mut Scan<'a>,
    function: &mut Option<Function<'a>>,
    arguments: fn(&mut Scan<'a>) -> Option<Option<Str<'a>>>,
) -> Option<()> {
    if p.null()? {
        return Some(());
    }
    let f = function.insert(Function::default());
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "name" => {
            seen.once(0)?;
            f.name = p.opt_str()?;
            Some(())
        }
        "arguments" => {
            seen.once(1)?;
            f.arguments = arguments(p)?.map(TextOrObject::Text);
            Some(())
        }
        _ => p.skip(),
    })
}

fn scan_tool_call<'a>(p: &mut Scan<'a>, call: &mut ToolCall<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "index" => {
            seen.once(0)?;
            call.index = p.opt_index()?;
            Some(())
        }
        "id" => {
            seen.once(1)?;
            call.id = p.opt_str()?;
            Some(())
        }
        "function" => {
            seen.once(2)?;
            // The arguments string left as the memo's hole.
            scan_function(p, &mut call.function, Scan::hole)
        }
        "custom" => {
            seen.once(3)?;
            p.null()?.then_some(())
        }
        "type" => {
            seen.once(5)?;
            call.kind = p.opt_str()?;
            Some(())
        }
        // Kept as provider state: for the general path.
        "extra_content" => {
            seen.once(4)?;
            p.null()?.then_some(())
        }
        _ => p.skip(),
    })
}

/// See [`scan::fast_path_agrees`]: the scanner alone, and with a buffer lent
/// (holding a string of an event before), must agree with the general decode
/// and with each other.
#[cfg(test)]
pub(super) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    let alone = scan::fast_path_agrees(scan_chunk, text)?;
    let mut decoded = String::from("a string decoded before");
    let lent = scan::fast_path_agrees(
        |text, chunk| {
            let mut p = Scan::new(text);
            p.lend(&mut decoded);
            scan_chunk_with(p, chunk)
        },
        text,
    )?;
    if alone == lent {
        Ok(alone)
    } else {
        Err(format!("the scanner took it: alone {alone}, with a buffer lent {lent}"))
    }
}


pub(crate) fn apply(
    s: &mut Stream,
    event_name: Option<&str>,
    input: Input<'_>,
    live: &mut Live<'_>,
) -> R {
    if event_name == Some("error") {
        // Q35: an SSE `error` event: its data is the error, or wraps it.
        let body: Value = input.parse()?;
        let err = body.get("error").filter(|e| e.is_object()).unwrap_or(&body);
        return Err(provider_error(err));
    }
    // A fragment with escapes is decoded into the thread's buffer: the
    // common event allocates nothing.
    scan::with_decoded(|decoded| {
        let mut chunk = Chunk::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => {
                scan::scan_text_in(&mut s.memo, t, &mut chunk, decoded)
            }
            _ => false,
        };
        if !fast {
            chunk = input.parse()?;
            common::note_named(s, input, &chunk, |c| {
                stamped_common(c).map(|(facts, piece, stamp)| (facts, None, piece, stamp))
            });
        }
        apply_chunk(s, event_name, chunk, live)
    })
}

/// Applies one decoded chunk (read in place: its choices and calls are not
/// moved out of it).
fn apply_chunk(s: &mut Stream, event_name: Option<&str>, chunk: Chunk<'_>, live: &mut Live<'_>) -> R {
    if let Some(Loose::Str(nonce)) = &chunk.obfuscation {
        if !nonce.is_empty() {
            s.fresh_nonce(nonce)?;
        }
    }
    if let Some(err) = chunk.error.filter(|e| !e.is_null()) {
        return Err(provider_error(&err));
    }
    if chunk.choices.is_none() && chunk.usage.is_none() {
        match chunk.x_groq.and_then(|x| x.usage) {
            Some(u) => {
                if s.usage.is_none() {
                    s.merge_usage(u);
                }
            }
            None => s.unknown(event_name.unwrap_or("chunk")),
        }
        return Ok(());
    }
    // Read in place: the choices and calls are not moved out of the chunk.
    for (pos, choice) in (0_i64..).zip(chunk.choices.iter().flat_map(Few::iter)) {
        let c = choice.index.map_or(pos, |i| i.0);
        if choice.index.is_some() {
            s.client_choice_position(c);
        }
        let ch = s.choice(c)?;
        ch.empty_finish = ch
            .empty_finish
            .after(choice.finish_reason.as_deref() == Some(""));
        if restated_finish(s, c, choice) {
            continue;
        }
        s.text(c, TextKind::Text, None, text(&choice.text), false, live)?;
        if let Some(delta) = &choice.delta {
            let reasoning = delta
                .reasoning_content
                .as_ref()
                .or(delta.reasoning.as_ref());
            if let Some(r) = reasoning {
                let frag = ThinkingFragment {
                    thinking: r,
                    ..ThinkingFragment::default()
                };
                s.thinking(c, None, frag, false, live)?;
            }
            match &delta.content {
                Some(Content::Parts(parts)) => content_parts(s, c, parts, live)?,
                Some(Content::Text(t)) => s.text(c, TextKind::Text, None, t, false, live)?,
                None => {}
            }
            s.text(
                c,
                TextKind::Refusal,
                None,
                text(&delta.refusal),
                false,
                live,
            )?;
            for call in delta.tool_calls.iter().flat_map(Few::iter) {
                let index = call.index.map(|i| i.0);
                let (name, args, kind, empty_custom) = function_or_custom(call, index)?;
                let state = call.extra_content.as_ref().map(|j| (j.0.as_str(), FORMAT));
                let piece = Piece {
                    id: text(&call.id),
                    name,
                    args,
                    state,
                };
                fragment(s, c, index, piece, kind, live)?;
                if empty_custom {
                    note_empty_custom(s, c, index);
                }
            }
            if let Some(f) = &delta.function_call {
                let piece = Piece {
                    id: "",
                    name: text(&f.name),
                    args: Args::of(f.arguments.as_ref()),
                    state: None,
                };
                fragment(s, c, None, piece, None, live)?;
            }
            if let Some(tools) = &delta.executed_tools {
                executed_tools(s, c, tools, live)?;
            }
        }
        // Q5: `""` is no reason (a server that fills every field), not the end.
        if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
            s.set_finish_reason(c, reason)?;
            s.end(c, live)?;
        }
    }
    match (chunk.usage, chunk.x_groq.and_then(|x| x.usage)) {
        (Some(usage), _) => s.merge_usage(usage),
        (None, Some(groq)) if s.usage.is_none() => s.merge_usage(groq),
        _ => {}
    }
    if let Some(text) = chunk.usage_text {
        s.merge_usage_text(text);
    }
    Ok(())
}

/// What a tool call is: its name, arguments, kind (`None`: a function), and
/// whether an empty `custom` beside a filled `function` was passed over (Q52:
/// a server that fills every field sends `"custom": {"name": "", "input": ""}`
/// with every function call; `""` is absent, Q5). A call with both members
/// filled, or `"type": "custom"` with only the function filled, is refused:
/// which of the two it is cannot be told.
fn function_or_custom<'c>(
    call: &'c ToolCall<'_>,
    index: Option<i64>,
) -> R<(&'c str, Args<'c>, Option<&'static str>, bool)> {
    let custom_of = |cu: &'c Custom<'_>| (text(&cu.name), Args::Text(text(&cu.input)), Some(CUSTOM));
    let function_of = |f: &'c Function<'_>| (text(&f.name), Args::of(f.arguments.as_ref()), None);
    let (f, cu) = match (&call.function, &call.custom) {
        (Some(f), Some(cu)) => (f, cu),
        (_, Some(cu)) => {
            let (n, a, k) = custom_of(cu);
            return Ok((n, a, k, false));
        }
        (Some(f), None) => {
            let (n, a, k) = function_of(f);
            return Ok((n, a, k, false));
        }
        (None, None) => return Ok(("", Args::Text(""), None, false)),
    };
    let (name, args, _) = function_of(f);
    let function_filled = !name.is_empty() || !args.text().is_empty();
    let custom_empty = text(&cu.name).is_empty() && text(&cu.input).is_empty();
    let typed_custom = call.kind.as_deref() == Some("custom");
    let refuse = |why: &str| Fail::Bad {
        kind: DecodeKind::BadValue,
        detail: format!(
            "the tool call at index {} {why}: whether it is a function or a custom tool's \
             call cannot be told",
            index.map_or_else(|| "(none)".to_owned(), |i| i.to_string())
        ),
    };
    match (custom_empty, function_filled) {
        (false, true) => Err(refuse("has both a filled `function` and a filled `custom`")),
        (true, true) if typed_custom => Err(refuse(
            "says `\"type\": \"custom\"` with an empty `custom` and a filled `function`",
        )),
        (true, _) if !typed_custom => Ok((name, args, None, function_filled)),
        _ => {
            let (n, a, k) = custom_of(cu);
            Ok((n, a, k, false))
        }
    }
}

/// Q52's note, once per call.
fn note_empty_custom(s: &mut Stream, c: i64, index: Option<i64>) {
    let Some(ch) = s.existing(c) else { return };
    let key = index.and_then(|i| ch.by_provider_index.get(&i).copied()).or(ch.latest);
    let noted = ch
        .notes
        .iter()
        .any(|n| n.kind == NoteKind::EmptyCustomIgnored && n.call == key);
    if !noted {
        s.note(
            c,
            NoteKind::EmptyCustomIgnored,
            key,
            "a function call came with an empty `custom` member beside its `function` \
             (every field filled): the empty custom was taken as absent"
                .to_owned(),
        );
    }
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: first(u, &[&["prompt_tokens"], &["input_tokens"]]),
        output_tokens: first(u, &[&["completion_tokens"], &["output_tokens"]]),
        total_tokens: count(u, &["total_tokens"]),
        reasoning_tokens: count(u, &["completion_tokens_details", "reasoning_tokens"]),
        cached_input_tokens: count(u, &["prompt_tokens_details", "cached_tokens"]),
    }
}

/// Chat Completions keeps no state of its own: everything is in the stream.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State;

impl Adapter for State {
    fn read_body(body: super::body::Body<'_, '_>) -> Option<Result<(), super::Error>> {
        direct::feed(body.asm, body.event_name, body.input, body.text, body.live)
    }

    #[inline]
    fn feed(
        &mut self,
        s: &mut Stream,
        name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        apply(s, name, input, live)
    }

    fn feed_common(
        &mut self,
        s: &mut Stream,
        name: Option<&str>,
        (facts, _): (Facts, Option<&str>),
        piece: &str,
        stamp: crate::providers::common::Stamp<'_>,
        live: &mut Live<'_>,
    ) -> Option<R> {
        if name == Some("error") {
            return None;
        }
        let mut chunk = Chunk::default();
        fragment_chunk(&mut chunk, facts, Str(piece.into()));
        chunk.obfuscation = stamp.nonce.map(|n| Loose::Str(n.into()));
        Some(apply_chunk(s, name, chunk, live))
    }

    /// Q63: see [`done::empty_finish_throughout`].
    fn ended_whole(&mut self, s: &mut Stream, live: &mut Live<'_>) -> R {
        done::empty_finish_throughout(s, live)
    }

    /// Q58: see [`done::content_free`].
    fn content_free(&self, input: Input<'_>) -> Option<String> {
        done::content_free(input)
    }
}

pub(crate) const SPEC: Spec = Spec {
    name: "openai-chat",
    untyped_event: "chunk",
    hints: Hints {
        event_names: &[],
        event_prefix: None,
        exception_suffix: None,
        error_event: None,
        shape: |obj| {
            obj.get("object").and_then(Value::as_str) == Some("chat.completion.chunk")
                || obj.contains_key("choices")
        },
    },
    body: Some(BodySpec {
        label: "chat.completion",
        marker: b"\"message\"",
        shape: |obj| {
            let text = |k: &str| obj.get(k).and_then(Value::as_str);
            let choices = || obj.get("choices").and_then(Value::as_array).into_iter().flatten();
            // Named a body, but a choice with a `delta` is a chunk's: read as
            // the chunk it is (JSON text without `"message"` is one already).
            if text("object") == Some("chat.completion") {
                return !choices().any(|c| c.get("delta").is_some());
            }
            if obj.contains_key("type") || text("object") == Some("chat.completion.chunk") {
                return false;
            }
            let whole = |c: &Value| {
                c.get("message").is_some_and(Value::is_object) && c.get("delta").is_none()
            };
            matches!(obj.get("choices"), Some(Value::Array(cs)) if !cs.is_empty() && cs.iter().all(whole))
        },
        tree: |t| match (t.str_member("object"), t.str_member("type")) {
            (Some("chat.completion"), _) => true,
            (None, None) => t.has("choices"),
            _ => false,
        },
        events: body::events,
    }),
    tokens,
    protocol: Protocol {
        subject: "the message",
        start: &[],
        open: &[],
        add: &["choices[].delta"],
        stop: &[],
        stopped_positions: &[],
        ends: &[("choices[].finish_reason", Ends::ByReason)],
        end_label: "its finish_reason",
        after_end: AfterEnd::NoContent,
        reading: Reading {
            calls_by_position: true,
            ..Reading::AS_ASSEMBLED
        },
        // `finish_reason: "tool_calls"` (and the legacy `"function_call"`).
        calls_finish: &["tool_calls", "function_call"],
    },
    state_formats: &[FORMAT],
    client_items: &[CUSTOM],
    server_items: &[EXECUTED],
    response: ResponseFields {
        id: &["/id"],
        model: &["/model"],
    },
    guard: guard::GUARD,
};
