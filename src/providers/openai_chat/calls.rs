//! How a chat chunk's tool-call fragments reach their calls: the routing of
//! Q1, Q2, Q20, and the narrow rules for compatible servers' shapes (Q36–Q43,
//! Q49), each leaving a note on the message.

use serde_json::{Map, Value};

use super::{ChatChoice, Content, Part, FORMAT};
use crate::accumulate::ThinkingFragment;
use crate::blocks::{Block, ToolResultBlock};
use crate::providers::json::{is_complete_json, is_json_prefix, starts_value, text, TextOrObject};
use crate::providers::state::{violation, Fail, Live, Opening, Src, Stream, TextKind, NS_TOOL, R};
use crate::providers::{DecodeKind, NoteKind, Rule};

/// The kind of a call the server ran and reported in `delta.executed_tools`
/// (Q50); its name is the entry's `type` (`search`, `python`, `visit`, …).
pub(crate) const EXECUTED: &str = "executed_tool";

/// What one tool-call fragment brings besides its index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece<'a> {
    pub(super) id: &'a str,
    pub(super) name: &'a str,
    pub(super) args: Args<'a>,
    /// Provider state and its format (Q37).
    pub(super) state: Option<(&'a str, &'a str)>,
}

/// A call's arguments as one fragment brought them: text, or a whole JSON
/// object (Q42).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Args<'a> {
    Text(&'a str),
    Object(&'a str),
}

impl<'a> Args<'a> {
    pub(super) fn of(field: Option<&'a TextOrObject<'_>>) -> Self {
        match field {
            Some(TextOrObject::Text(t)) => Args::Text(t),
            Some(TextOrObject::Object(json)) => Args::Object(json.as_ref()),
            None => Args::Text(""),
        }
    }

    pub(super) fn text(self) -> &'a str {
        match self {
            Args::Text(t) | Args::Object(t) => t,
        }
    }
}

/// Q39: a finish reason for a message that already ended with another one, in
/// a choice entry that carries nothing else (a proxy's second chunk): the
/// first reason stands, with a note. Content with it stays after-end (Q24).
pub(super) fn restated_finish(s: &mut Stream, c: i64, choice: &ChatChoice<'_>) -> bool {
    let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) else {
        return false;
    };
    let empty = choice.text.as_deref().is_none_or(str::is_empty)
        && choice.delta.as_ref().is_none_or(|d| {
            d.content
                .as_ref()
                .is_none_or(|c| matches!(c, Content::Text(t) if t.is_empty()))
                && text(&d.refusal).is_empty()
                && text(&d.reasoning_content).is_empty()
                && text(&d.reasoning).is_empty()
                && d.tool_calls
                    .as_ref()
                    .is_none_or(|t| t.iter().next().is_none())
                && d.function_call.is_none()
                && d.executed_tools.as_ref().is_none_or(Vec::is_empty)
        });
    let Some(first) = s
        .existing(c)
        .filter(|ch| ch.phase.ended())
        .and_then(|ch| ch.finish_reason.clone())
    else {
        return false;
    };
    if !empty || first == reason {
        return false;
    }
    s.note(
        c,
        NoteKind::LaterFinishReasonIgnored,
        None,
        format!(
            "finish_reason {:?} came after the message had ended with {first:?}, with nothing \
             else in its chunk; the first reason stands",
            reason
        ),
    );
    true
}

/// Q49: `content` as typed parts, read in order: `text` parts as text,
/// `thinking` parts' text as reasoning; a part of another type is skipped.
pub(super) fn content_parts(s: &mut Stream, c: i64, parts: &[Part<'_>], live: &mut Live<'_>) -> R {
    if s.existing(c)
        .is_some_and(|ch| !ch.notes.iter().any(|n| n.kind == NoteKind::ContentParts))
    {
        s.note(
            c,
            NoteKind::ContentParts,
            None,
            "delta.content came as an array of typed parts: text parts were read as text, \
             thinking parts as reasoning, in order"
                .to_owned(),
        );
    }
    for part in parts {
        match part.kind.as_deref() {
            Some("text") => s.text(c, TextKind::Text, None, text(&part.text), false, live)?,
            Some("thinking") => {
                for inner in part.thinking.iter().flatten() {
                    if inner.kind.as_deref() == Some("text") {
                        let frag = ThinkingFragment {
                            thinking: text(&inner.text),
                            ..ThinkingFragment::default()
                        };
                        s.thinking(c, None, frag, false, live)?;
                    } else {
                        s.skip(&format!("content part thinking.{}", text(&inner.kind)));
                    }
                }
            }
            other => s.skip(&format!("content part {}", other.unwrap_or("(untyped)"))),
        }
    }
    Ok(())
}

/// Routes one tool-call fragment to its call (Q1, Q2, Q20, Q38, Q43) and adds
/// it (Q36, Q41, Q42).
pub(crate) fn fragment(
    s: &mut Stream,
    c: i64,
    index: Option<i64>,
    piece: Piece<'_>,
    kind: Option<&str>,
    live: &mut Live<'_>,
) -> R {
    let Piece {
        id,
        name,
        args,
        state,
    } = piece;
    let ch = s.choice(c)?;
    let existing = match index {
        Some(i) => ch.by_provider_index.get(&i).copied(),
        // Q1: by id; a late id for the newest call that has none yet; else new.
        None if !id.is_empty() => ch.by_id.get(id).copied().or_else(|| {
            ch.latest
                .filter(|&k| ch.tools.get(k).is_some_and(|b| b.id.is_empty()))
        }),
        // Q1: continue the latest call.
        None => ch.latest,
    };
    if let Some(k) = existing.filter(|&k| ch.meta(k).is_some_and(|m| m.aliased)) {
        // Q43's twin: an index routed to a call must not name another one.
        let current = ch.tools.get(k);
        let other_id = !id.is_empty() && current.is_some_and(|b| !b.id.is_empty() && b.id != id);
        let other_name =
            !name.is_empty() && current.is_some_and(|b| !b.name.is_empty() && b.name != name);
        if other_id || other_name {
            return Err(Fail::Bad {
                kind: DecodeKind::BadValue,
                detail: format!(
                    "index {} had its argument fragments taken as {}'s and now names another \
                     call; whose fragments they were cannot be told",
                    index.unwrap_or_default(),
                    ch.call_label(c, k)
                ),
            });
        }
    }
    // Q38: the id a renamed call was sent with still names that call.
    let sent_id = |k: i64| -> Option<&str> { ch.meta(k).and_then(|m| m.sent_id.as_deref()) };
    let id = match existing {
        Some(k) if sent_id(k) == Some(id) => "",
        _ => id,
    };
    let target = existing.filter(|&k| {
        let current = ch.tools.get(k).map_or("", |b| b.id.as_str());
        // Q2: a different non-empty id at an occupied index is a new call.
        let new_id = !id.is_empty() && !current.is_empty() && current != id;
        !new_id && !ch.opens_new_value(k, id, name, args.text())
    });
    let target = match (target, index) {
        (None, Some(i)) if id.is_empty() && name.is_empty() => rerouted(s, c, i, args.text()),
        (t, _) => t,
    };
    match target {
        Some(k) => {
            let had_name = s
                .existing(c)
                .and_then(|ch| ch.tools.get(k))
                .is_some_and(|b| !b.name.is_empty());
            s.client_position(c, index, k, name, had_name);
            add(s, c, k, Piece { id, ..piece }, live)
        }
        None => {
            let renamed = if index.is_some() && !id.is_empty() {
                s.choice(c)?.by_id.get(id).copied()
            } else {
                None
            };
            if let Some(other) = renamed {
                // Q38's twin, seen at once: the same id, name and whole arguments
                // again is a repeated segment, refused as one id on two calls (Q25).
                let ch = s.choice(c)?;
                let repeat = ch.tools.get(other).is_some_and(|b| {
                    b.name == name && !args.text().is_empty() && b.input == args.text()
                });
                if repeat {
                    return Err(violation(
                        Rule::DuplicateId,
                        Some(format!("tool call {id}")),
                        format!(
                            "a new call repeats call {other} of choice {c}: the same id, name \
                             and arguments (a repeated segment, not a parallel call)"
                        ),
                    ));
                }
            }
            let minted;
            let opening_id = match renamed {
                Some(_) => {
                    minted = unique_id(s.choice(c)?, id);
                    minted.as_str()
                }
                None => id,
            };
            let opening = Opening {
                provider_index: index,
                id: opening_id,
                name,
                input: args.text(),
                kind,
                state,
                ..Opening::default()
            };
            let key = s.new_call(c, opening, live)?;
            s.client_position(c, index, key, name, false);
            if let Some(other) = renamed {
                let ch = s.choice(c)?;
                if let Some(m) = ch.meta_mut(key) {
                    m.sent_id = Some(id.to_owned());
                }
                // The provider never sent the renamed id: a call it sends later
                // with that id is a call of its own, not a duplicate.
                if ch.by_id.get(opening_id) == Some(&key) {
                    ch.by_id.remove(opening_id);
                }
                s.note(
                    c,
                    NoteKind::DuplicateIdRenamed,
                    Some(key),
                    format!(
                        "call {key} at index {} came with the id {id:?} of call {other}; it was \
                         given the id {opening_id:?}",
                        index.unwrap_or_default()
                    ),
                );
            }
            if let Args::Object(_) = args {
                note_object(s, c, key);
            }
            Ok(())
        }
    }
}

/// Q43: a fragment with neither id nor name at an index no call has, while
/// exactly one call of the choice is open, continues that call (a server that
/// sends a call's opener and its arguments at different indexes); the index
/// then names that call. With more than one open call it opens a call of its
/// own, which stays unnamed (Q7: not executable).
fn rerouted(s: &mut Stream, c: i64, index: i64, args: &str) -> Option<i64> {
    if args.is_empty() {
        return None;
    }
    let ch = s.existing(c)?;
    let only = {
        let mut open = ch
            .tools
            .iter()
            .map(|(k, _)| k)
            .filter(|&k| !ch.call_closed(k) && !ch.meta(k).is_some_and(|m| m.server_side));
        match (open.next(), open.next()) {
            (Some(only), None) => only,
            _ => return None,
        }
    };
    ch.by_provider_index.insert(index, only);
    if let Some(m) = ch.meta_mut(only) {
        m.aliased = true;
    }
    let label = ch.call_label(c, only);
    s.note(
        c,
        NoteKind::FragmentRerouted,
        Some(only),
        format!(
            "argument fragments at index {index}, which no call had, went to {label}, the only \
             open call"
        ),
    );
    Some(only)
}

/// A call id not yet used in the choice, derived from the `sent` one (Q38):
/// neither an id sent nor another call's renamed one. Messages check it again
/// against ids sent later (`message.rs`, `assigned_ids`).
fn unique_id(ch: &crate::providers::state::Choice, sent: &str) -> String {
    let ours: std::collections::BTreeSet<&str> = ch
        .tools
        .iter()
        .filter(|&(k, _)| ch.meta(k).is_some_and(|m| m.sent_id.is_some()))
        .map(|(_, b)| b.id.as_str())
        .collect();
    (2_u32..)
        .map(|n| format!("{sent}_{n}"))
        .find(|candidate| !ch.by_id.contains_key(candidate) && !ours.contains(candidate.as_str()))
        .unwrap_or_default()
}

/// Q42: the note on a call whose arguments came as a JSON object.
///
/// Clients do not read such arguments as this text: the openai Python
/// helper keeps the object (`accumulate_delta`, which also drops string
/// fragments sent after it), a client that joins fragments as strings reads
/// something else again, one that keeps strings finds none. So the stream is
/// one whose readings differ, and the guard blocks it (docs/guard.md).
fn note_object(s: &mut Stream, c: i64, key: i64) {
    s.diverge(|| {
        format!(
            "call {key} of choice {c} got its function.arguments as a JSON object, which \
             clients do not read as its text (the openai Python helper keeps the object, a \
             client that joins strings reads something else)"
        )
    });
    s.note(
        c,
        NoteKind::ArgumentsObject,
        Some(key),
        "function.arguments came as a JSON object, not a string; its compact JSON text was kept"
            .to_owned(),
    );
}

/// Adds a fragment to call `key`, after the rules for servers that resend a
/// call's whole arguments (Q36, Q41) or send them as an object (Q42).
fn add(s: &mut Stream, c: i64, key: i64, piece: Piece<'_>, live: &mut Live<'_>) -> R {
    let Piece {
        id,
        name,
        args,
        state,
    } = piece;
    // Only a fragment that begins a JSON value can restate the arguments (Q36,
    // Q41): the usual fragment goes straight to its call.
    if let Args::Text(piece) = args {
        if !starts_value(piece) {
            return s.add_to_call(c, key, id, name, piece, state, live);
        }
    }
    let ch = s.choice(c)?;
    let held = ch.tools.get(key).map_or("", |b| b.input.as_str());
    match args {
        // The same object again changes nothing.
        Args::Object(json) if held == json => Ok(()),
        Args::Object(_) if !held.is_empty() => Err(Fail::Bad {
            kind: DecodeKind::BadValue,
            detail: format!(
                "function.arguments came as an object for {}, which already has arguments; no \
                 server is known to send an object in pieces, so they are not merged",
                ch.call_label(c, key)
            ),
        }),
        Args::Object(json) => {
            s.add_to_call(c, key, id, name, json, state, live)?;
            note_object(s, c, key);
            Ok(())
        }
        Args::Text(piece) => match restatement(held, piece) {
            Some(kind) => {
                s.add_to_call(c, key, id, name, "", state, live)?;
                s.replace_input(c, key, piece, live)?;
                let message = match kind {
                    NoteKind::EmptyArgumentsReplaced => {
                        "the call held {} and then got its arguments as one complete object; \
                         the object replaced it"
                    }
                    _ => {
                        "the call's incomplete arguments were sent again whole, as one complete \
                         value that starts with them; the whole value replaced them"
                    }
                };
                s.note(c, kind, Some(key), message.to_owned());
                Ok(())
            }
            None => s.add_to_call(c, key, id, name, piece, state, live),
        },
    }
}

/// Whether `piece` restates a call's whole arguments rather than continuing
/// `held`: Q41 (`{}` held, then a complete object) or Q36 (an incomplete
/// prefix held, then one complete value that starts with it, and held +
/// piece is no JSON prefix at all). `{"a":` + `1}` is an append (Q10).
fn restatement(held: &str, piece: &str) -> Option<NoteKind> {
    if held.is_empty() || piece.is_empty() {
        return None;
    }
    let held_t = held.trim();
    if held_t == "{}" {
        let object = piece.trim_start().starts_with('{') && piece.trim() != "{}";
        return (object && is_complete_json(piece)).then_some(NoteKind::EmptyArgumentsReplaced);
    }
    if !piece.starts_with(held) || is_complete_json(held) || !is_complete_json(piece) {
        return None;
    }
    let mut joined = String::with_capacity(held.len() + piece.len());
    joined.push_str(held);
    joined.push_str(piece);
    (!is_json_prefix(&joined)).then_some(NoteKind::ArgumentsRestated)
}


/// Q50: the tools a Groq compound model ran, reported in
/// `delta.executed_tools[]`. An entry is keyed by its `index` (its own
/// numbering, apart from `tool_calls`' indexes); the first one for an index
/// opens a server-side call with a minted id, named by its `type`, its input the
/// `arguments` text; the entry that brings `output` ends the call and gives its
/// result (the entry's other fields, such as `search_results`, as the result's
/// provider state). An entry that changes the arguments, or an output after the
/// call's result, is refused. Such a call never becomes the latest call, so an
/// index-less client fragment never continues it (Q1).
pub(super) fn executed_tools(
    s: &mut Stream,
    c: i64,
    tools: &[Map<String, Value>],
    live: &mut Live<'_>,
) -> R {
    for (pos, tool) in tools.iter().enumerate() {
        let field = |k: &str| -> R<&str> {
            match tool.get(k) {
                None | Some(Value::Null) => Ok(""),
                Some(Value::String(t)) => Ok(t),
                Some(_) => Err(Fail::Bad {
                    kind: DecodeKind::WrongType,
                    detail: format!("field `executed_tools[{pos}].{k}` must be a string"),
                }),
            }
        };
        let Some(index) = tool.get("index").and_then(Value::as_i64) else {
            return Err(Fail::Bad {
                kind: DecodeKind::WrongType,
                detail: format!(
                    "field `executed_tools[{pos}].index` must be an integer: without it, which \
                     tool the entry reports cannot be told"
                ),
            });
        };
        let (name, args) = (field("type")?, field("arguments")?);
        let output = tool.get("output").filter(|o| !o.is_null());
        let src: Src = (NS_TOOL, index, 0);
        let key = match s.choice(c)?.call_at(src) {
            Some(k) => {
                let ch = s.choice(c)?;
                let held = ch.tools.get(k).map_or("", |b| b.input.as_str());
                if !args.is_empty() && args != held {
                    return Err(Fail::Bad {
                        kind: DecodeKind::BadValue,
                        detail: format!(
                            "executed_tools entry {index} came again with other arguments than \
                             {}'s; which ones the server ran cannot be told",
                            ch.call_label(c, k)
                        ),
                    });
                }
                if output.is_some() && ch.call_closed(k) {
                    return Err(violation(
                        Rule::AfterStop,
                        Some(ch.call_label(c, k)),
                        "a second output came for an executed tool that already had its result",
                    ));
                }
                s.add_to_call(c, k, "", name, "", None, live)?;
                k
            }
            None => {
                let latest = s.choice(c)?.latest;
                let opening = Opening {
                    src: Some(src),
                    name,
                    input: args,
                    kind: Some(EXECUTED),
                    server_side: true,
                    ..Opening::default()
                };
                let k = s.new_call(c, opening, live)?;
                s.choice(c)?.latest = latest;
                k
            }
        };
        let Some(output) = output else {
            continue;
        };
        s.item_done(c, key, live);
        let rest: Map<String, Value> = tool
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "index" | "type" | "arguments"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let content = match output {
            Value::String(t) => vec![Block::Text(t.clone())],
            other => vec![Block::Text(other.to_string())],
        };
        let block = ToolResultBlock {
            tool_use_id: s.call_id(c, key),
            content,
            is_error: false,
            kind: EXECUTED.to_owned(),
            provider_state: Some(Value::Object(rest).to_string()),
            provider_state_format: FORMAT.to_owned(),
        };
        s.tool_result(c, None, block)?;
    }
    Ok(())
}
