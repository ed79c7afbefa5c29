//! Gemini API and Vertex AI `GenerateContentResponse` chunks.
//!
//! A `functionCall` part is either a whole call (`name`, `args` object: the
//! object is re-serialised compactly, keys in arrival order), or (Vertex
//! `streamFunctionCallArguments`) a streamed call (Q21): `{name, willContinue:
//! true}`, then parts of `partialArgs[{jsonPath, stringValue | numberValue |
//! boolValue | nullValue}]`, rebuilt here into the arguments object (string
//! values of one path concatenate), closed by an empty `functionCall: {}`, by a
//! part without `willContinue`, by the candidate's `finishReason`, or by the end
//! of the stream. Gemini sends no call ids: they are minted (Q8). A
//! `thoughtSignature` is kept as the call's provider state (a JSON string,
//! format `"gemini"`).

mod fast;
mod guard;
mod wire;

#[cfg(test)]
pub(super) use fast::{fast_path_agrees, memo_agrees, memo_parts};

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use wire::*;

use serde_json::{Map, Value};

use super::error::{DecodeKind, Limit};
use super::json::{json_string, push_json_string, text, CompactJson};
use super::outcome::{count, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, Hints, Spec, ResponseFields};
use super::scan;
use super::state::{provider_error, Fail, Live, Opening, Stream, TextKind, R};
use super::Input;
use crate::accumulate::ThinkingFragment;
use crate::blocks::{Block, ToolResultBlock};

const FORMAT: &str = "gemini";
/// The kind of a code-execution part, which the provider runs itself.
const EXECUTABLE_CODE: &str = "executable_code";
/// Path segments in one `jsonPath`.
const MAX_PATH_DEPTH: usize = 64;
/// Elements an array index may skip ahead (filled with `null`).
const MAX_INDEX_GAP: usize = 1024;

// ---------------------------------------------------------------- argument tree

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Obj {
    entries: Vec<(String, Node)>,
    /// Built once the object is large, so lookups stay O(1) on hostile input.
    index: Option<HashMap<String, usize>>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum Node {
    Obj(Obj),
    Arr(Vec<Node>),
    Str(String),
    /// A number, `true`, `false` or `null`, as JSON text.
    Raw(String),
}

impl Obj {
    fn position(&mut self, key: &str) -> Option<usize> {
        if let Some(ix) = &self.index {
            return ix.get(key).copied();
        }
        let found = self.entries.iter().rposition(|(k, _)| k == key);
        if self.entries.len() > 16 {
            self.index = Some(
                self.entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect(),
            );
        }
        found
    }

    fn slot(&mut self, key: &str, nodes: &mut usize) -> Option<&mut Node> {
        let at = match self.position(key) {
            Some(i) => i,
            None => {
                self.entries
                    .push((key.to_owned(), Node::Raw("null".to_owned())));
                let i = self.entries.len() - 1;
                if let Some(ix) = &mut self.index {
                    ix.insert(key.to_owned(), i);
                }
                *nodes += 1;
                i
            }
        };
        self.entries.get_mut(at).map(|(_, node)| node)
    }
}

enum Seg<'p> {
    Key(Cow<'p, str>),
    Index(usize),
}

enum Leaf<'v> {
    Str(&'v str),
    Raw(String),
}

fn bad(detail: String) -> Fail {
    Fail::Bad {
        kind: DecodeKind::BadValue,
        detail,
    }
}

/// Parses `$.a.b[0]['c d']` into segments.
fn parse_path(path: &str) -> Result<Vec<Seg<'_>>, Fail> {
    let err = |why: &str| bad(format!("partialArgs jsonPath {path:?}: {why}"));
    let Some(mut rest) = path.strip_prefix('$') else {
        return Err(err("must start with `$`"));
    };
    let mut segs = Vec::new();
    while !rest.is_empty() {
        if segs.len() >= MAX_PATH_DEPTH {
            return Err(err("too deep"));
        }
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let (key, after) = r.split_at(end);
            if key.is_empty() {
                return Err(err("empty key"));
            }
            segs.push(Seg::Key(Cow::Borrowed(key)));
            rest = after;
        } else if let Some(r) = rest.strip_prefix('[') {
            if let Some(quote) = r.chars().next().filter(|c| *c == '\'' || *c == '"') {
                let mut key = String::new();
                let mut chars = r.char_indices().skip(1);
                let mut closed_at = None;
                while let Some((i, ch)) = chars.next() {
                    if ch == '\\' {
                        match chars.next() {
                            Some((_, esc)) => key.push(esc),
                            None => return Err(err("unfinished escape")),
                        }
                    } else if ch == quote {
                        closed_at = Some(i + ch.len_utf8());
                        break;
                    } else {
                        key.push(ch);
                    }
                }
                let Some(after) = closed_at
                    .and_then(|i| r.get(i..))
                    .and_then(|a| a.strip_prefix(']'))
                else {
                    return Err(err("unclosed quoted key"));
                };
                segs.push(Seg::Key(Cow::Owned(key)));
                rest = after;
            } else {
                let Some(end) = r.find(']') else {
                    return Err(err("unclosed `[`"));
                };
                let (digits, after) = r.split_at(end);
                let index = digits
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| err("array index is not a non-negative integer"))?;
                segs.push(Seg::Index(index));
                rest = after.get(1..).unwrap_or_default();
            }
        } else {
            return Err(err("expected `.` or `[`"));
        }
    }
    Ok(segs)
}

fn set(root: &mut Node, path: &[Seg<'_>], leaf: Leaf<'_>, nodes: &mut usize) -> Result<(), String> {
    let mut cur = root;
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !matches!(cur, Node::Obj(_)) {
                    *cur = Node::Obj(Obj::default());
                }
                cur = match cur {
                    Node::Obj(o) => match o.slot(k, nodes) {
                        Some(n) => n,
                        None => return Err("object key lookup failed".to_owned()),
                    },
                    other => other,
                };
            }
            Seg::Index(i) => {
                let len = match cur {
                    Node::Arr(a) => a.len(),
                    _ => 0,
                };
                if *i > len.saturating_add(MAX_INDEX_GAP) {
                    return Err(format!(
                        "array index {i} skips more than {MAX_INDEX_GAP} elements"
                    ));
                }
                if !matches!(cur, Node::Arr(_)) {
                    *cur = Node::Arr(Vec::new());
                }
                cur = match cur {
                    Node::Arr(a) => {
                        while a.len() <= *i {
                            a.push(Node::Raw("null".to_owned()));
                            *nodes += 1;
                        }
                        let last = a.len() - 1;
                        match a.get_mut((*i).min(last)) {
                            Some(n) => n,
                            None => return Err("array index out of range".to_owned()),
                        }
                    }
                    other => other,
                };
            }
        }
    }
    match (leaf, cur) {
        (Leaf::Str(s), Node::Str(existing)) => existing.push_str(s),
        (Leaf::Str(s), slot) => *slot = Node::Str(s.to_owned()),
        (Leaf::Raw(r), slot) => *slot = Node::Raw(r),
    }
    Ok(())
}

impl Node {
    fn write(&self, out: &mut String) {
        match self {
            Node::Obj(o) => {
                out.push('{');
                for (i, (k, v)) in o.entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_json_string(out, k);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
            Node::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Node::Str(s) => push_json_string(out, s),
            Node::Raw(r) => out.push_str(r),
        }
    }

    fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

// ---------------------------------------------------------------- adapter

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Open {
    key: i64,
    name: String,
    tree: Node,
    nodes: usize,
    bytes: usize,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State {
    /// The streamed call still open, per candidate.
    open: BTreeMap<i64, Open>,
    /// The last server-side code call per candidate, which its result answers.
    last_code: BTreeMap<i64, i64>,
}

impl State {
    pub(crate) fn apply_chunk(
        &mut self,
        s: &mut Stream,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let mut r = Response::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => scan::scan_text(&mut s.memo, t, &mut r),
            _ => false,
        };
        if !fast {
            r = input.parse()?;
        }
        if let Some(err) = r.error.filter(|e| !e.is_null()) {
            return Err(provider_error(&err));
        }
        if r.candidates.is_none() && r.usage_metadata.is_none() && r.prompt_feedback.is_none() {
            s.unknown("chunk");
            return Ok(());
        }
        let candidates = r.candidates.unwrap_or_default();
        let no_candidates = candidates.is_empty();
        for (pos, cand) in (0_i64..).zip(candidates) {
            let c = cand.index.map_or(pos, |i| i.0);
            s.choice(c)?;
            for part in cand.content.and_then(|ct| ct.parts).unwrap_or_default() {
                let signature = part
                    .thought_signature
                    .as_deref()
                    .filter(|sig| !sig.is_empty());
                if let Some(fc) = part.function_call {
                    self.function_call(s, c, fc, signature, live)?;
                    continue;
                }
                if let Some(CompactJson(code)) = part.executable_code {
                    self.close_open(s, c, live)?;
                    let sig = signature.map(json_string);
                    let opening = Opening {
                        name: "code_execution",
                        input: &code,
                        state: sig.as_deref().map(|st| (st, FORMAT)),
                        kind: Some(EXECUTABLE_CODE),
                        server_side: true,
                        ..Opening::default()
                    };
                    let key = s.new_call(c, opening, live)?;
                    s.finish_call(c, key, live);
                    self.last_code.insert(c, key);
                    continue;
                }
                if let Some(CompactJson(raw)) = part.code_execution_result {
                    let r: CodeResult = serde_json::from_str(&raw).unwrap_or(CodeResult {
                        outcome: None,
                        output: None,
                    });
                    let tool_use_id = self
                        .last_code
                        .get(&c)
                        .map(|&k| s.call_id(c, k))
                        .unwrap_or_default();
                    let result = ToolResultBlock {
                        tool_use_id,
                        content: r.output.map(Block::Text).into_iter().collect(),
                        is_error: r.outcome.as_deref().is_some_and(|o| o != "OUTCOME_OK"),
                        kind: "code_execution_result".to_owned(),
                        provider_state: Some(raw),
                        provider_state_format: FORMAT.to_owned(),
                    };
                    s.tool_result(c, None, result)?;
                    continue;
                }
                if part.text.is_none() && part.thought.is_none() && signature.is_none() {
                    // Q29: a part of a kind this version does not read (images, files, …).
                    s.skip("part");
                    continue;
                }
                let thought = part.thought == Some(true);
                if thought {
                    let frag = ThinkingFragment {
                        thinking: text(&part.text),
                        signature: signature.unwrap_or_default(),
                        signature_format: if signature.is_some() { FORMAT } else { "" },
                        ..ThinkingFragment::default()
                    };
                    s.thinking(c, None, frag, false, live)?;
                } else {
                    s.text(c, TextKind::Text, None, text(&part.text), false, live)?;
                    if let Some(sig) = signature {
                        // A signature on a non-thought part: kept on a thinking block
                        // (the last one when it is the last block) so it can be sent back.
                        let frag = ThinkingFragment {
                            signature: sig,
                            signature_format: FORMAT,
                            ..ThinkingFragment::default()
                        };
                        s.thinking(c, None, frag, true, live)?;
                    }
                }
            }
            if let Some(reason) = cand.finish_reason {
                self.close_open(s, c, live)?;
                s.set_finish_reason(c, &reason)?;
                s.end(c, live)?;
            }
        }
        if no_candidates {
            if let Some(reason) = r.prompt_feedback.and_then(|p| p.block_reason) {
                // A call still being streamed ends with the message, as at a finishReason.
                self.close_open(s, 0, live)?;
                s.set_finish_reason(0, &reason)?;
                s.end_abnormal(0, live)?;
            }
        }
        if let Some(u) = r.usage_metadata {
            s.merge_usage(u);
        }
        Ok(())
    }

    fn function_call(
        &mut self,
        s: &mut Stream,
        c: i64,
        fc: FunctionCall<'_>,
        signature: Option<&str>,
        live: &mut Live<'_>,
    ) -> R {
        let (id, name) = (text(&fc.id), text(&fc.name));
        let state = signature.map(json_string);
        let state = state.as_deref().map(|st| (st, FORMAT));
        let continues = fc.will_continue == Some(true);
        if fc.args.is_none()
            && fc.partial_args.is_none()
            && !continues
            && id.is_empty()
            && name.is_empty()
        {
            // `functionCall: {}` closes the streamed call (its signature, if any, first).
            if let (Some(open), Some(st)) = (self.open.get(&c), state) {
                s.add_to_call(c, open.key, "", "", "", Some(st), live)?;
            }
            return self.close_open(s, c, live);
        }
        if fc.args.is_none() && (fc.partial_args.is_some() || continues) {
            let same_call = self
                .open
                .get(&c)
                .is_some_and(|o| name.is_empty() || (fc.partial_args.is_some() && o.name == name));
            let key = if same_call {
                let key = self.open.get(&c).map_or(0, |o| o.key);
                if !id.is_empty() || state.is_some() {
                    s.add_to_call(c, key, id, name, "", state, live)?;
                }
                key
            } else {
                self.close_open(s, c, live)?;
                let opening = Opening {
                    id,
                    name,
                    state,
                    ..Opening::default()
                };
                let key = s.new_call(c, opening, live)?;
                self.open.insert(
                    c,
                    Open {
                        key,
                        name: name.to_owned(),
                        tree: Node::Obj(Obj::default()),
                        nodes: 1,
                        bytes: 2,
                    },
                );
                key
            };
            if let Some(open) = self.open.get_mut(&c) {
                if !name.is_empty() && open.name.is_empty() {
                    name.clone_into(&mut open.name);
                }
                for arg in fc.partial_args.unwrap_or_default() {
                    apply(open, &arg, &s.limits)?;
                }
            }
            debug_assert!(self.open.get(&c).is_none_or(|o| o.key == key));
            if !continues {
                self.close_open(s, c, live)?;
            }
            return Ok(());
        }
        // A whole call.
        self.close_open(s, c, live)?;
        let input = fc.args.map_or_else(|| "{}".to_owned(), |a| a.0);
        let opening = Opening {
            id,
            name,
            input: &input,
            state,
            ..Opening::default()
        };
        let key = s.new_call(c, opening, live)?;
        s.finish_call(c, key, live);
        Ok(())
    }

    /// Serialises the streamed call of candidate `c` into its input and finishes it.
    fn close_open(&mut self, s: &mut Stream, c: i64, live: &mut Live<'_>) -> R {
        let Some(open) = self.open.remove(&c) else {
            return Ok(());
        };
        let text = open.tree.to_json();
        if let Err(e) = s.replace_input(c, open.key, &text, live) {
            self.open.insert(c, open);
            return Err(e);
        }
        s.finish_call(c, open.key, live);
        Ok(())
    }

    /// End of stream (Q21): every call still open is rebuilt and closed.
    pub(crate) fn close_all(&mut self, s: &mut Stream, live: &mut Live<'_>) -> R {
        let open: Vec<i64> = self.open.keys().copied().collect();
        for c in open {
            self.close_open(s, c, live)?;
        }
        Ok(())
    }

    /// `(choice, key, arguments so far)` of every open streamed call.
    pub(crate) fn open_inputs(&self) -> Vec<(i64, i64, String)> {
        self.open
            .iter()
            .map(|(&c, o)| (c, o.key, o.tree.to_json()))
            .collect()
    }
}

fn apply(open: &mut Open, arg: &PartialArg<'_>, limits: &super::AssemblerLimits) -> R {
    let Some(path) = arg.json_path.as_deref() else {
        return Err(bad("partialArgs entry without a jsonPath".to_owned()));
    };
    let leaf = if let Some(sv) = &arg.string_value {
        Leaf::Str(sv)
    } else if let Some(n) = &arg.number_value {
        Leaf::Raw(n.0.clone())
    } else if let Some(b) = arg.bool_value {
        Leaf::Raw(if b { "true" } else { "false" }.to_owned())
    } else if arg.null_value {
        Leaf::Raw("null".to_owned())
    } else {
        return Ok(()); // a path with no value yet
    };
    let added = path.len().saturating_add(match &leaf {
        Leaf::Str(s) => s.len(),
        Leaf::Raw(r) => r.len(),
    });
    let bytes = open.bytes.saturating_add(added);
    if bytes > limits.max_input_bytes {
        return Err(Fail::Limit {
            limit: Limit::MaxInputBytes,
            max: limits.max_input_bytes,
            would_be: bytes,
            target: format!("tool call {} rebuilt from partialArgs", open.key),
        });
    }
    if open.nodes >= limits.max_arg_nodes {
        return Err(Fail::Limit {
            limit: Limit::MaxArgNodes,
            max: limits.max_arg_nodes,
            would_be: open.nodes.saturating_add(1),
            target: format!("tool call {} rebuilt from partialArgs", open.key),
        });
    }
    let segs = parse_path(path)?;
    set(&mut open.tree, &segs, leaf, &mut open.nodes)
        .map_err(|why| bad(format!("partialArgs jsonPath {path:?}: {why}")))?;
    open.bytes = bytes;
    Ok(())
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: count(u, &["promptTokenCount"]),
        output_tokens: count(u, &["candidatesTokenCount"]),
        total_tokens: count(u, &["totalTokenCount"]),
        reasoning_tokens: count(u, &["thoughtsTokenCount"]),
        cached_input_tokens: count(u, &["cachedContentTokenCount"]),
    }
}

impl Adapter for State {
    #[inline]
    fn feed(
        &mut self,
        s: &mut Stream,
        _name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        self.apply_chunk(s, input, live)
    }

    fn end_of_stream(&mut self, s: &mut Stream, live: &mut Live<'_>) -> R {
        self.close_all(s, live)
    }

    fn rebuilt_inputs(&self) -> Vec<(i64, i64, String)> {
        self.open_inputs()
    }
}

pub(crate) const SPEC: Spec = Spec {
    name: "gemini",
    untyped_event: "chunk",
    hints: Hints {
        event_names: &[],
        event_prefix: None,
        exception_suffix: None,
        error_event: None,
        shape: |obj| {
            obj.contains_key("candidates")
                || obj.contains_key("usageMetadata")
                || obj.contains_key("promptFeedback")
        },
    },
    // A whole response is one streamed chunk already.
    body: None,
    tokens,
    protocol: Protocol {
        subject: "the candidate",
        start: &[],
        open: &[],
        add: &["candidates[].content.parts"],
        stop: &[],
        stopped_positions: &[],
        ends: &[("candidates[].finishReason", Ends::ByReason)],
        end_label: "its finishReason",
        after_end: AfterEnd::NoContent,
        reading: Reading::AS_ASSEMBLED,
        // Gemini ends a turn of calls with `STOP`, like one of text: no finish
        // value says "the client has calls to run".
        calls_finish: &[],
    },
    state_formats: &[FORMAT],
    client_items: &[],
    server_items: &[EXECUTABLE_CODE],
    response: ResponseFields {
        id: &["/responseId"],
        model: &["/modelVersion"],
    },
    guard: guard::GUARD,
};
