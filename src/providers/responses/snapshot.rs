//! The final snapshot of a response (issue 34, class 1): `response.completed`
//! restates every output item, and the openai SDK's `get_final_response()` is
//! built from that snapshot alone. A snapshot holding a client call the stream
//! did not assemble (another call, an extra one, other arguments or another
//! name) would have a client run a call nobody checked: it is refused
//! (`snapshot-differs`). The same calls restated (key order and whitespace in
//! the arguments aside) are fine. A snapshot that lists fewer calls than the
//! stream is no new call for anyone: real recordings do that (pydantic-ai's,
//! Azure's encrypted reasoning), and it is read as before.
//!
//! Events this dialect does not read are checked the same way when they carry
//! a `response.output` or an `item` that is a client call: a reader that does
//! read them must find only the calls the stream assembled.

#![allow(clippy::wildcard_imports)]

use super::*;

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::restated::Restated;

/// A `response.output` or `item` carried by any event (cold path: ends and
/// events this dialect does not read).
#[derive(serde::Deserialize)]
pub(super) struct Carried {
    #[serde(default)]
    response: Option<ObjectOr<CarriedResponse>>,
    #[serde(default)]
    item: Option<Value>,
}

#[derive(serde::Deserialize)]
struct CarriedResponse {
    #[serde(default)]
    output: Option<Value>,
}

/// [`Carried`] with its item and output as they are in the text.
#[derive(serde::Deserialize)]
struct CarriedText<'a> {
    #[serde(borrow, default)]
    response: Option<ObjectOr<CarriedResponseText<'a>>>,
    #[serde(borrow, default)]
    item: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct CarriedResponseText<'a> {
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
}

/// The members of an item the check reads, each as its last occurrence
/// says: absent (`None`), a string, or any other value (`Some(None)`).
#[derive(Default)]
struct ItemFields<'a> {
    kind: Option<Option<Cow<'a, str>>>,
    call_id: Option<Option<Cow<'a, str>>>,
    id: Option<Option<Cow<'a, str>>>,
    name: Option<Option<Cow<'a, str>>>,
    arguments: Option<Option<Cow<'a, str>>>,
    input: Option<Option<Cow<'a, str>>>,
}

/// The members of the object `map` an [`ItemFields`] keeps.
fn read_fields<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<ItemFields<'de>, A::Error> {
    let mut item = ItemFields::default();
    while let Some(key) = map.next_key::<Cow<'de, str>>()? {
        let slot = match &*key {
            "type" => &mut item.kind,
            "call_id" => &mut item.call_id,
            "id" => &mut item.id,
            "name" => &mut item.name,
            "arguments" => &mut item.arguments,
            "input" => &mut item.input,
            _ => {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
        };
        *slot = Some(map.next_value::<StrOrOther<'de>>()?.0);
    }
    Ok(item)
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for ItemFields<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ItemFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ItemFields<'de>, A::Error> {
                read_fields(map)
            }
        }
        d.deserialize_map(V)
    }
}

/// [`CarriedText`] with its items read in the same pass: the same members
/// (so the same text is refused), each item as [`ItemFields`].
#[derive(serde::Deserialize)]
struct CarriedItems<'a> {
    #[serde(borrow, default)]
    response: Option<ObjectOr<CarriedResponseItems<'a>>>,
    #[serde(borrow, default)]
    item: Option<AnyItem<'a>>,
}

#[derive(serde::Deserialize)]
struct CarriedResponseItems<'a> {
    #[serde(borrow, default)]
    output: Option<Output<'a>>,
}

/// Any JSON value: an array's elements as [`AnyItem`]s, `None` for any
/// other value (an output that is no array holds no items).
struct Output<'a>(Option<Vec<AnyItem<'a>>>);

/// Any JSON value: an object's [`ItemFields`], `None` for any other value
/// (which is no item).
struct AnyItem<'a>(Option<ItemFields<'a>>);

/// The visitor of [`Output`] (`ARRAY`) and of [`AnyItem`]: whatever it is
/// not looking for is passed over.
struct Either<const ARRAY: bool>;

impl<'de, const ARRAY: bool> serde::de::Visitor<'de> for Either<ARRAY> {
    type Value = (Option<Vec<AnyItem<'de>>>, Option<ItemFields<'de>>);
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok((None, None))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        if !ARRAY {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok((None, None));
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<AnyItem<'de>>()? {
            items.push(item);
        }
        Ok((Some(items), None))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if ARRAY {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            return Ok((None, None));
        }
        Ok((None, Some(read_fields(map)?)))
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Output<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Output(d.deserialize_any(Either::<true>)?.0))
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for AnyItem<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(AnyItem(d.deserialize_any(Either::<false>)?.1))
    }
}

/// Any JSON value: an object read as `T`, `None` for any other value (in
/// which no reader finds an item).
struct ObjectOr<T>(Option<T>);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for ObjectOr<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = ObjectOr<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(|t| ObjectOr(Some(t)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(ObjectOr(None))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ObjectOr(None))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ObjectOr(None))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ObjectOr(None))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ObjectOr(None))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(ObjectOr(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(ObjectOr(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Any JSON value: a string, or `None` for any other.
struct StrOrOther<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for StrOrOther<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = StrOrOther<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrOther(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrOther(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(StrOrOther(None))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(StrOrOther(None))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(StrOrOther(None))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(StrOrOther(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(StrOrOther(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(StrOrOther(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(StrOrOther(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A member of an [`ItemFields`] as the check reads it: its string, `""`
/// when absent or not a string.
fn field<'x>(f: &'x Option<Option<Cow<'_, str>>>) -> &'x str {
    f.as_ref().and_then(|v| v.as_deref()).unwrap_or_default()
}

/// Whether the check compares `item` as a whole value: a client tool that
/// is not a JSON function (Q28), or an approval request (Q60).
fn kept_whole(item: &ItemFields<'_>) -> bool {
    let item_type = field(&item.kind);
    item_type != "function_call"
        && item_type != CUSTOM
        && (crate::blocks::APPROVAL_KINDS.contains(&item_type) || CLIENT_ITEMS.contains(&item_type))
}

/// Two argument texts say the same when they are equal, or both are JSON
/// values that are equal (key order and whitespace aside).
fn same_arguments(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

impl State {
    /// Checks the calls an event carries (its `response.output`, its `item`)
    /// against the calls assembled so far. `kind` names the event.
    ///
    /// The items are read in one pass, each member the check reads as its
    /// last occurrence says (as a value's does), a value only for an item
    /// kept whole. What that pass cannot read (a member's string no `str`
    /// holds, such as a lone surrogate; a number no float holds where a
    /// value is read; a `response` or `item` member given twice) is refused:
    /// another reader (Python's `json` reads lone surrogates and takes the
    /// last of two members) could find a call in it that nobody checked.
    pub(super) fn check_carried(&self, s: &mut Stream, kind: &str, input: Input<'_>) -> R {
        let carried = match input.parse::<CarriedItems<'_>>() {
            Ok(carried) => carried,
            Err(fail) => return Err(unreadable_value(kind, fail)),
        };
        let output = carried.response.and_then(|r| r.0).and_then(|r| r.output).and_then(|o| o.0);
        let items = output.iter().flatten().chain(&carried.item);
        if items.clone().any(|i| i.0.as_ref().is_some_and(kept_whole)) {
            return match input {
                Input::Text(text) => self.check_carried_raw(s, kind, text.as_bytes()),
                Input::Json(bytes) => self.check_carried_raw(s, kind, bytes),
                Input::Value(_) | Input::Tree(_) => self.check_carried_values(s, kind, input),
            };
        }
        for AnyItem(item) in output.iter().flatten() {
            if let Some(item) = item {
                self.check_fields(s, kind, "its response.output", item, None)?;
            }
        }
        if let Some(AnyItem(Some(item))) = &carried.item {
            self.check_fields(s, kind, "its item", item, None)?;
        }
        Ok(())
    }

    /// [`Self::check_carried`] on decoded values (the caller's own), for the
    /// items kept whole, which are compared as values.
    fn check_carried_values(&self, s: &mut Stream, kind: &str, input: Input<'_>) -> R {
        let carried = input.parse::<Carried>().map_err(|fail| unreadable_value(kind, fail))?;
        if let Some(Value::Array(items)) = carried.response.and_then(|r| r.0).and_then(|r| r.output) {
            for item in &items {
                self.check_item(s, kind, "its response.output", item)?;
            }
        }
        if let Some(item) = &carried.item {
            self.check_item(s, kind, "its item", item)?;
        }
        Ok(())
    }

    /// [`Self::check_carried`] on JSON text with each item's text kept, for
    /// the items kept whole (the one pass read it already, so it reads).
    fn check_carried_raw(&self, s: &mut Stream, kind: &str, text: &[u8]) -> R {
        let carried = serde_json::from_slice::<CarriedText<'_>>(text).map_err(|e| unreadable_text(kind, &e))?;
        let output = carried.response.and_then(|r| r.0).and_then(|r| r.output);
        if let Some(items) = output.and_then(|o| serde_json::from_str::<Vec<&RawValue>>(o.get()).ok()) {
            for item in items {
                self.check_raw(s, kind, "its response.output", item)?;
            }
        }
        if let Some(item) = carried.item {
            self.check_raw(s, kind, "its item", item)?;
        }
        Ok(())
    }

    fn check_raw(&self, s: &mut Stream, kind: &str, place: &str, raw: &RawValue) -> R {
        if !raw.get().starts_with('{') {
            return Ok(());
        }
        let item = serde_json::from_str::<ItemFields<'_>>(raw.get()).map_err(|e| unreadable_text(kind, &e))?;
        self.check_fields(s, kind, place, &item, Some(raw))
    }

    /// An item read as [`ItemFields`]: a call checked as such, an item kept
    /// whole as its value (from `raw`, its text, which the caller gives for
    /// every item [`kept_whole`] says is one).
    fn check_fields(&self, s: &mut Stream, kind: &str, place: &str, item: &ItemFields<'_>, raw: Option<&RawValue>) -> R {
        let item_type = field(&item.kind);
        let function = item_type == "function_call";
        let custom = item_type == CUSTOM;
        if function || custom {
            let args = if custom { &item.input } else { &item.arguments };
            let call = SnapshotCall {
                item_type,
                call_id: field(&item.call_id),
                id: field(&item.id),
                name: field(&item.name),
                args: args.as_ref().map(|a| a.as_deref()),
                restated: None,
            };
            return self.check_call(s, kind, place, &call);
        }
        if !kept_whole(item) {
            return Ok(());
        }
        let Some(raw) = raw else {
            return Ok(());
        };
        let value = serde_json::from_str::<Value>(raw.get()).map_err(|e| unreadable_text(kind, &e))?;
        self.check_item(s, kind, place, &value)
    }

    /// Checks the calls of a `response.completed` whose output was decoded
    /// typed already (a whole body read directly): as [`Self::check_carried`]
    /// checks them in its `response.output`.
    pub(super) fn check_calls(&self, s: &mut Stream, kind: &str, calls: &[SnapshotCall<'_>]) -> R {
        for call in calls {
            self.check_call(s, kind, "its response.output", call)?;
        }
        Ok(())
    }

    fn check_item(&self, s: &mut Stream, kind: &str, place: &str, item: &Value) -> R {
        let Some(item) = item.as_object() else {
            return Ok(());
        };
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
        let item_type = field("type");
        let function = item_type == "function_call";
        let custom = item_type == CUSTOM;
        if function || custom {
            let args = match item.get(if custom { "input" } else { "arguments" }) {
                None => None,
                Some(Value::String(a)) => Some(Some(a.as_str())),
                Some(_) => Some(None),
            };
            let call = SnapshotCall {
                item_type,
                call_id: field("call_id"),
                id: field("id"),
                name: field("name"),
                args,
                restated: None,
            };
            return self.check_call(s, kind, place, &call);
        }
        let approval = crate::blocks::APPROVAL_KINDS.contains(&item_type);
        if !approval && !CLIENT_ITEMS.contains(&item_type) {
            return Ok(());
        }
        let id = [field("call_id"), field("id")]
            .into_iter()
            .find(|i| !i.is_empty())
            .unwrap_or_default();
        let ch = s.choice(C)?;
        let held = ch
            .tools
            .iter()
            .find(|(_, b)| !id.is_empty() && b.id == id)
            .map(|(_, b)| b);
        let differs = match held {
            None => Some("no call of that id in the stream".to_owned()),
            Some(b) => {
                // Kept whole (Q28): the input is the item's own fields.
                let fields: Map<String, Value> = item
                    .iter()
                    .filter(|(k, _)| !BOOKKEEPING.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let held: Option<Value> = serde_json::from_str(&b.input).ok();
                (held.as_ref() != Some(&Value::Object(fields)))
                    .then(|| "other fields than the stream's".to_owned())
            }
        };
        snapshot_differs(kind, place, item_type, id, differs)
    }

    /// A `function_call` or `custom_tool_call` item of a snapshot against the
    /// call of its id the stream assembled.
    fn check_call(&self, s: &mut Stream, kind: &str, place: &str, call: &SnapshotCall<'_>) -> R {
        let id = [call.call_id, call.id]
            .into_iter()
            .find(|i| !i.is_empty())
            .unwrap_or_default();
        let ch = s.choice(C)?;
        let held = ch.tools.iter().find(|(_, b)| !id.is_empty() && b.id == id);
        let differs = match held {
            None => Some("no call of that id in the stream".to_owned()),
            Some((key, b)) => {
                let args_same = match (call.restated, call.args) {
                    (Some(found), _) => found.same(key, &b.input, same_arguments),
                    (None, Some(Some(a))) => same_arguments(a, &b.input),
                    (None, None) => true,
                    (None, Some(None)) => false,
                };
                if call.name != b.name {
                    Some(format!("the name {:?}, not {:?}", call.name, b.name))
                } else if !args_same {
                    Some("other arguments than the stream's".to_owned())
                } else {
                    None
                }
            }
        };
        snapshot_differs(kind, place, call.item_type, id, differs)
    }
}

/// A `function_call` or `custom_tool_call` item of a snapshot, as the check
/// reads it: each string member as a string (`""` when absent or not a
/// string), and its arguments (its `input` for a custom call): absent
/// (`None`), a string, or anything else (`Some(None)`).
pub(super) struct SnapshotCall<'x> {
    pub(super) item_type: &'x str,
    pub(super) call_id: &'x str,
    pub(super) id: &'x str,
    pub(super) name: &'x str,
    pub(super) args: Option<Option<&'x str>>,
    /// The arguments when a scanner found them to be a call's input (then
    /// `args` is absent).
    pub(super) restated: Option<Restated<'x>>,
}

/// A snapshot the check cannot read: refused, as one that differs.
fn unreadable(kind: &str, why: &str) -> Fail {
    violation(
        Rule::SnapshotDiffers,
        None,
        format!(
            "{kind} carries a snapshot (its response.output or item) the check cannot read \
             ({why}): another reader could find in it a call the stream did not deliver"
        ),
    )
}

fn unreadable_text(kind: &str, e: &serde_json::Error) -> Fail {
    unreadable(kind, &e.to_string())
}

/// What a failed decode says, for [`unreadable`].
fn unreadable_value(kind: &str, fail: Fail) -> Fail {
    match fail {
        Fail::Bad { detail, .. } | Fail::Protocol { detail, .. } => unreadable(kind, &detail),
        other => other,
    }
}

fn snapshot_differs(kind: &str, place: &str, item_type: &str, id: &str, differs: Option<String>) -> R {
    let Some(differs) = differs else {
        return Ok(());
    };
    Err(violation(
        Rule::SnapshotDiffers,
        Some(format!("tool call {id:?}")),
        format!(
            "{kind} holds in {place} a {item_type} item {id:?} with {differs}: a client \
             reading that snapshot would run a call the stream did not deliver"
        ),
    ))
}
