//! The events that carry the response (`response.created`, `.in_progress`,
//! `.queued`, `.completed`, `.incomplete`), read by the scanner of
//! `providers/scan` in one pass before the body check: the typed [`Event`]
//! the general path decodes, and for `response.completed` the calls of its
//! snapshot, which the general path reads in a pass of its own
//! (`check_carried`). The general path reads such an event four times: the
//! search for a body's shape (`surely_event`), the direct body reader's
//! refusal, the typed decode and the snapshot check; a completed response
//! restates every call's arguments, so that is most of what a stream costs
//! past its deltas.
//!
//! It reads a strict subset of what those passes accept, and gives up
//! (`None`: the general path reads the event, as before) on anything else:
//! besides what the scanner refuses (see its module), a member other than
//! `type`, `sequence_number` and `response` (an object), a member given
//! twice, another event type, a `response` whose `usage`, `incomplete_details`
//! or `error` is of an unusual kind (an error that is not `null`), an output
//! that is not an array of objects, an output item's member the check reads
//! that is neither a string nor `null`, or an item the check compares whole
//! (`kept_whole`). An event read so is surely no body: its members are those
//! of the stand-in `surely_event` makes, and no body shape takes it.

use std::borrow::Cow;
use std::cell::Cell;

use serde_json::{Map, Value};

use super::fast::restates_item;
use super::restated::{Held, Restated};
use super::snapshot::SnapshotCall;
use super::wire::{Event, Incomplete, Response};
use super::{State, CLIENT_ITEMS, CUSTOM};
use crate::providers::body::scanned_map;
use crate::providers::detect;
use crate::providers::registry::Offer;
use crate::providers::scan::{Scan, Seen};
use crate::providers::state::R;
use crate::providers::Input;

/// The event types read here: those whose arm of `apply_event` reads only
/// the event's `response` (a failed response's error is left to the general
/// path).
const CARRYING: [&str; 5] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
];

/// The event whose snapshot is checked.
const COMPLETED: &str = "response.completed";

/// A member of an output item the snapshot check reads: absent (`None`),
/// `null` (`Some(None)`), or a string.
type Member<'a> = Option<Option<Cow<'a, str>>>;

/// The members of an output item the snapshot check reads (`ItemFields`).
#[derive(Debug, Default, PartialEq)]
pub(super) struct CarriedItem<'a> {
    kind: Member<'a>,
    call_id: Member<'a>,
    id: Member<'a>,
    name: Member<'a>,
    arguments: Member<'a>,
    input: Member<'a>,
    /// The call's arguments (its input, for a custom call) when found to be
    /// the input of the call at the item's output index (then absent above).
    restated: Option<Restated<'a>>,
}

/// A member's string, `""` when absent or `null` (as the check reads it).
fn field<'x>(m: &'x Member<'_>) -> &'x str {
    m.as_ref().and_then(|v| v.as_deref()).unwrap_or_default()
}

impl CarriedItem<'_> {
    /// The item as the snapshot check reads it: a call (`function_call`,
    /// `custom_tool_call`), or `None` for an item it passes over.
    pub(super) fn call(&self) -> Option<SnapshotCall<'_>> {
        let item_type = field(&self.kind);
        let custom = item_type == CUSTOM;
        if !custom && item_type != "function_call" {
            return None;
        }
        let args = if custom { &self.input } else { &self.arguments };
        Some(SnapshotCall {
            item_type,
            call_id: field(&self.call_id),
            id: field(&self.id),
            name: field(&self.name),
            args: args.as_ref().map(|a| a.as_deref()),
            restated: self.restated,
        })
    }
}

/// A member the check reads: a string or `null`, at most once.
fn member<'a>(p: &mut Scan<'a>, seen: &mut Seen, n: u32, slot: &mut Member<'a>) -> Option<()> {
    seen.once(n)?;
    *slot = Some(p.opt_str()?.map(|s| s.0));
    Some(())
}

/// An output item at output index `oi`: an object, not one the check
/// compares whole.
fn item<'a>(p: &mut Scan<'a>, held: Held<'_>, oi: i64) -> Option<CarriedItem<'a>> {
    let mut it = CarriedItem::default();
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "type" => member(p, &mut seen, 0, &mut it.kind),
        "call_id" => member(p, &mut seen, 1, &mut it.call_id),
        "id" => member(p, &mut seen, 2, &mut it.id),
        "name" => member(p, &mut seen, 3, &mut it.name),
        "arguments" | "input" => {
            let arguments = key == "arguments";
            if restates_item(Some(field(&it.kind)), key) {
                if let Some(r) = held.read(p, Some(oi)) {
                    seen.once(if arguments { 4 } else { 5 })?;
                    it.restated = Some(r);
                    return Some(());
                }
            }
            if arguments {
                member(p, &mut seen, 4, &mut it.arguments)
            } else {
                member(p, &mut seen, 5, &mut it.input)
            }
        }
        _ => p.skip(),
    })?;
    let item_type = field(&it.kind);
    let whole = item_type != "function_call"
        && item_type != CUSTOM
        && (crate::blocks::APPROVAL_KINDS.contains(&item_type)
            || CLIENT_ITEMS.contains(&item_type));
    (!whole).then_some(it)
}

/// `incomplete_details`: `null`, or an object read as [`Incomplete`].
fn incomplete(p: &mut Scan<'_>) -> Option<Option<Incomplete>> {
    if p.null()? {
        return Some(None);
    }
    let mut reason = None;
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "reason" => {
            seen.once(0)?;
            reason = p.opt_str()?.map(|s| s.0.into_owned());
            Some(())
        }
        _ => p.skip(),
    })?;
    Some(Some(Incomplete { reason }))
}

/// The `response` of an event of type `kind`: an object, read as
/// [`Response`]; its output's items into `items` when `kind` is
/// [`COMPLETED`] (otherwise the output is skipped, as the typed decode
/// skips it).
fn response<'a>(
    p: &mut Scan<'a>,
    kind: &str,
    items: &mut Vec<CarriedItem<'a>>,
    held: Held<'_>,
) -> Option<Response> {
    let mut r = Response {
        id: None,
        status: None,
        model: None,
        usage: None,
        incomplete_details: None,
        error: None,
    };
    let owned = |p: &mut Scan<'_>| Some(p.opt_str()?.map(|s| s.0.into_owned()));
    let mut seen = Seen::default();
    p.object(|p, key| {
        match key {
            "id" => {
                seen.once(0)?;
                r.id = owned(p)?;
            }
            "status" => {
                seen.once(1)?;
                r.status = owned(p)?;
            }
            "model" => {
                seen.once(2)?;
                r.model = owned(p)?;
            }
            "usage" => {
                seen.once(3)?;
                if !p.null()? {
                    r.usage = Some(scanned_map(p)?);
                }
            }
            "incomplete_details" => {
                seen.once(4)?;
                r.incomplete_details = incomplete(p)?;
            }
            "error" => {
                seen.once(5)?;
                p.null()?.then_some(())?;
            }
            "output" if kind == COMPLETED => {
                seen.once(6)?;
                let mut oi = 0_i64;
                p.array(|p| {
                    items.push(item(p, held, oi)?);
                    oi = oi.saturating_add(1);
                    Some(())
                })?;
            }
            _ => p.skip()?,
        }
        Some(())
    })?;
    Some(r)
}

/// Reads `text` into `ev` (fresh) and the output items of a completed
/// response into `items`, when it is an event that carries the response and
/// this reads exactly as the general path does (see the module); `None`
/// otherwise (what was filled is then of no use).
pub(super) fn scan<'a>(
    text: &'a str,
    ev: &mut Event<'a>,
    items: &mut Vec<CarriedItem<'a>>,
    held: Held<'_>,
) -> Option<()> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    let mut seq_member = None;
    p.object(|p, key| match key {
        "type" => {
            seen.once(0)?;
            let kind = p.string()?;
            if !CARRYING.contains(&&*kind) {
                return None;
            }
            ev.kind = Some(kind);
            Some(())
        }
        "sequence_number" => {
            seen.once(1)?;
            ev.sequence_number = p.opt_u64()?;
            seq_member = Some(ev.sequence_number.map_or(Value::Null, Value::from));
            Some(())
        }
        // After the type (as the API writes it): which event it is tells
        // whether its output is read.
        "response" => {
            seen.once(2)?;
            let kind = ev.kind.as_deref()?;
            ev.response = Some(response(p, kind, items, held)?);
            Some(())
        }
        _ => None,
    })?;
    p.end()?;
    let kind = ev.kind.as_deref()?;
    ev.response.as_ref()?;
    no_body(kind, seq_member).then_some(())
}

thread_local! {
    /// The stand-ins [`no_body`] looked at already, a bit each (an event
    /// type of [`CARRYING`], without a sequence number or with `null`), and
    /// its answers.
    static NO_BODY: Cell<(u16, u16)> = const { Cell::new((0, 0)) };
}

/// What `surely_event` finds: no body shape takes the stand-in of the
/// event's members (its type, its sequence number's value as `seq` says,
/// its response as `{}`). The shapes are functions of the stand-in alone,
/// so a stand-in without a number is asked once a thread.
fn no_body(kind: &str, seq: Option<Value>) -> bool {
    let ask = |seq: Option<Value>| {
        let mut standin = Map::new();
        standin.insert("type".to_owned(), Value::String(kind.to_owned()));
        if let Some(n) = seq {
            standin.insert("sequence_number".to_owned(), n);
        }
        standin.insert("response".to_owned(), Value::Object(Map::new()));
        detect::body_shape_for(None, &standin).is_none()
    };
    let place = match seq {
        None => 0,
        Some(Value::Null) => 1,
        Some(n) => return ask(Some(n)),
    };
    let Some(at) = CARRYING.iter().position(|k| *k == kind) else {
        return ask(seq);
    };
    let bit = 1_u16 << (at * 2 + place);
    let (asked, answers) = NO_BODY.with(Cell::get);
    if asked & bit != 0 {
        return answers & bit != 0;
    }
    let answer = ask(seq);
    let answers = if answer { answers | bit } else { answers };
    NO_BODY.with(|c| c.set((asked | bit, answers)));
    answer
}

impl State {
    /// An event that carries the response, read in one pass before the body
    /// check (see the module) and applied as `apply` applies its typed decode,
    /// a completed response's calls checked as `check_carried` checks them;
    /// `None`, nothing changed, for any other event.
    #[inline(never)]
    pub(super) fn feed_carrying(&mut self, offer: Offer<'_, '_, str>) -> Option<R> {
        let (text, name) = (offer.text, offer.event_name);
        let mut ev = Event::default();
        let mut items = Vec::new();
        scan(text, &mut ev, &mut items, Held::of(offer.s, &self.said))?;
        let calls: Vec<SnapshotCall<'_>> = items.iter().filter_map(CarriedItem::call).collect();
        let completed = ev.kind.as_deref() == Some("response.completed");
        let snapshot = completed.then_some(calls.as_slice());
        let (s, live) = offer.ready();
        Some(self.apply_event(s, name, &mut ev, false, Input::Text(text), snapshot, live))
    }
}

/// [`scan`] against the general path's passes, for the tests that compare
/// them: `Ok(true)` when it reads `text` and gives the typed decode's event,
/// `surely_event` finds no body in it, and its items are those the snapshot
/// check reads (each member as its string, `null` or absent); `Ok(false)`
/// when it does not read `text`; `Err` otherwise.
#[cfg(test)]
pub(crate) fn agrees(text: &str) -> Result<bool, String> {
    /// The members of an item the check reads, as values (`null` kept).
    #[derive(serde::Deserialize)]
    struct RefItem {
        #[serde(rename = "type", default, deserialize_with = "some")]
        kind: Option<Value>,
        #[serde(default, deserialize_with = "some")]
        call_id: Option<Value>,
        #[serde(default, deserialize_with = "some")]
        id: Option<Value>,
        #[serde(default, deserialize_with = "some")]
        name: Option<Value>,
        #[serde(default, deserialize_with = "some")]
        arguments: Option<Value>,
        #[serde(default, deserialize_with = "some")]
        input: Option<Value>,
    }
    #[derive(serde::Deserialize)]
    struct RefResponse {
        #[serde(default)]
        output: Option<Vec<RefItem>>,
    }
    #[derive(serde::Deserialize)]
    struct RefEvent {
        response: RefResponse,
    }
    fn some<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        <Value as serde::Deserialize>::deserialize(d).map(Some)
    }
    let member = |v: &Option<Value>| -> Result<Member<'static>, String> {
        match v {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) => Ok(Some(Some(Cow::Owned(s.clone())))),
            Some(other) => Err(format!("read the member {other} as a string")),
        }
    };
    let Some((ev, items)) = scanned(text) else {
        return Ok(false);
    };
    let typed = serde_json::from_str::<Event<'_>>(text).map_err(|e| format!("typed: {e}"))?;
    if typed != ev {
        return Err(format!("scanned {ev:?}, typed {typed:?}"));
    }
    if !super::direct::surely_event(text.as_bytes()) {
        return Err("surely_event is unsure of it".to_owned());
    }
    let want = if ev.kind.as_deref() == Some(COMPLETED) {
        let refs = serde_json::from_str::<RefEvent>(text).map_err(|e| format!("items: {e}"))?;
        refs.response.output.unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut expected = Vec::new();
    for r in &want {
        expected.push(CarriedItem {
            kind: member(&r.kind)?,
            call_id: member(&r.call_id)?,
            id: member(&r.id)?,
            name: member(&r.name)?,
            arguments: member(&r.arguments)?,
            input: member(&r.input)?,
            restated: None,
        });
    }
    if expected != items {
        return Err(format!("items {items:?}, expected {expected:?}"));
    }
    Ok(true)
}

/// The event as [`scan`] reads it, or `None`: for the tests that compare it
/// with the typed decode.
#[cfg(test)]
pub(super) fn scanned(text: &str) -> Option<(Event<'_>, Vec<CarriedItem<'_>>)> {
    let mut ev = Event::default();
    let mut items = Vec::new();
    scan(text, &mut ev, &mut items, Held(None, &[]))?;
    Some((ev, items))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{no_body, CARRYING};
    use crate::providers::detect;

    /// The stand-ins looked up once a thread answer as asked each time: no
    /// body shape takes an event that carries the response.
    #[test]
    fn a_stand_in_looked_up_once_answers_as_asked() {
        for kind in CARRYING.iter().chain(&["response.other"]) {
            for seq in [None, Some(Value::Null), Some(Value::from(7))] {
                let mut standin = serde_json::Map::new();
                standin.insert("type".to_owned(), Value::String((*kind).to_owned()));
                if let Some(n) = seq.clone() {
                    standin.insert("sequence_number".to_owned(), n);
                }
                standin.insert("response".to_owned(), Value::Object(serde_json::Map::new()));
                let asked = detect::body_shape_for(None, &standin).is_none();
                assert!(asked, "{kind} {seq:?}");
                for _ in 0..2 {
                    assert_eq!(no_body(kind, seq.clone()), asked, "{kind} {seq:?}");
                }
            }
        }
    }
}
