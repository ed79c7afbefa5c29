//! A call's arguments restated by a later event (`function_call_arguments.done`,
//! `output_item.done`, the snapshot of `response.completed`) read by
//! comparison instead of decoded: the scanners of the fast paths compare the
//! string with the input the call at that output index holds, as
//! `serde_json` writes it ([`Scan::string_is`]). A string found so is kept as
//! a [`Restated`] (which call, and its text), the member it stands for left
//! absent; anything else (another spelling, other arguments, no call there)
//! is read as before. A stream restates each call's arguments three times,
//! and they are the same in nearly every stream.

use super::C;
use crate::providers::json::Str;
use crate::providers::scan::Scan;
use crate::providers::state::{Choice, Fail, Live, Stream, NS_TOOL, R};
use crate::providers::DecodeKind;

/// A string found to be exactly the input of call `key` when it was read,
/// and its text (quotes included); `said`: found as the text of the call's
/// last restatement ([`Said`]) rather than by comparison with its input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Restated<'a> {
    pub(super) key: i64,
    text: &'a str,
    said: bool,
}

/// The text of a call's arguments as an event restated them (found to be
/// its input), kept to be compared byte for byte with the next restatement
/// (`output_item.done` and the snapshot repeat `.done`'s text): it stands
/// while the call holds the same input, that is the same length and
/// revision (its input only grows, or is replaced with a new revision).
#[derive(Debug, Clone, Default)]
pub(super) struct Said {
    key: i64,
    len: usize,
    revision: u64,
    text: String,
}

/// The calls of the stream's choice, as the scanners look them up, and the
/// texts last said of them.
#[derive(Clone, Copy)]
pub(super) struct Held<'s>(pub(super) Option<&'s Choice>, pub(super) &'s [Said]);

impl<'s> Held<'s> {
    /// The calls of the stream's response (none yet: `Held(None, &[])`).
    pub(super) fn of(s: &'s Stream, said: &'s [Said]) -> Self {
        Held(s.choices.get(&C).map(|ch| &**ch), said)
    }

    /// The call opened at output index `oi`, the input it holds and its
    /// revision.
    fn at(self, oi: i64) -> Option<(i64, &'s str, u64)> {
        let ch = self.0?;
        let key = ch.call_at((NS_TOOL, oi, 0))?;
        let revision = ch.meta(key)?.revision;
        Some((key, ch.tools.get(key)?.input.as_str(), revision))
    }

    /// The string here, when it is the input of the call at output index
    /// `oi` (if any): the very text said last of that call while it held
    /// that input, or that input as `serde_json` writes it; else nothing is
    /// taken.
    pub(super) fn read<'a>(self, p: &mut Scan<'a>, oi: Option<i64>) -> Option<Restated<'a>> {
        let (key, input, revision) = self.at(oi?)?;
        let last = self.1.iter().find(|s| s.key == key);
        if let Some(said) = last.filter(|s| s.len == input.len() && s.revision == revision) {
            if let Some(text) = p.string_as(&said.text) {
                return Some(Restated { key, text, said: true });
            }
        }
        let text = p.string_is(input)?;
        Some(Restated { key, text, said: false })
    }
}

/// Keeps the text of `found` (a restatement read by comparison with the
/// call's input, which `s` holds still) for the next restatement of that
/// call, in place of the one kept before.
pub(super) fn remember(said: &mut Vec<Said>, s: &Stream, found: Option<Restated<'_>>) {
    let Some(found) = found.filter(|f| !f.said) else {
        return;
    };
    let Some(ch) = s.choices.get(&C) else {
        return;
    };
    let (Some(meta), Some(call)) = (ch.meta(found.key), ch.tools.get(found.key)) else {
        return;
    };
    said.retain(|s| s.key != found.key);
    said.push(Said {
        key: found.key,
        len: call.input.len(),
        revision: meta.revision,
        text: found.text.to_owned(),
    });
}

impl<'a> Restated<'a> {
    /// The string decoded (for a call other than the one it was compared with).
    fn decoded(self) -> Option<Str<'a>> {
        Scan::new(self.text).string()
    }

    /// `replace_input` of call `key` with the string: for the call it was
    /// found equal to, checked as that would check it and nothing changed.
    pub(super) fn replace(self, s: &mut Stream, key: i64, live: &mut Live<'_>) -> R {
        if self.key == key {
            return s.restate_input(C, key);
        }
        let Some(Str(args)) = self.decoded() else {
            return Err(undecodable());
        };
        s.replace_input(C, key, &args, live)
    }

    /// Whether the string is the same arguments as `input`, the input of
    /// call `key` (the snapshot check's `same_arguments`).
    pub(super) fn same(self, key: i64, input: &str, same: fn(&str, &str) -> bool) -> bool {
        self.key == key || self.decoded().is_some_and(|Str(a): Str<'_>| same(&a, input))
    }
}

/// A string the scanner certified that does not decode (never: the scanner
/// takes only what decodes).
#[cold]
fn undecodable() -> Fail {
    Fail::Bad {
        kind: DecodeKind::BadValue,
        detail: "restated arguments that do not decode".to_owned(),
    }
}
