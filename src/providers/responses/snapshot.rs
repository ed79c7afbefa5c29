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

/// A `response.output` or `item` carried by any event (cold path: ends and
/// events this dialect does not read).
#[derive(serde::Deserialize)]
pub(super) struct Carried {
    #[serde(default)]
    response: Option<CarriedResponse>,
    #[serde(default)]
    item: Option<Value>,
}

#[derive(serde::Deserialize)]
struct CarriedResponse {
    #[serde(default)]
    output: Option<Value>,
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
    pub(super) fn check_carried(&self, s: &mut Stream, kind: &str, input: Input<'_>) -> R {
        let Ok(carried) = input.parse::<Carried>() else {
            return Ok(());
        };
        if let Some(Value::Array(items)) = carried.response.and_then(|r| r.output) {
            for item in &items {
                self.check_item(s, kind, "its response.output", item)?;
            }
        }
        if let Some(item) = &carried.item {
            self.check_item(s, kind, "its item", item)?;
        }
        Ok(())
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
        let held = ch
            .tools
            .iter()
            .find(|(_, b)| !id.is_empty() && b.id == id)
            .map(|(_, b)| b);
        let differs = match held {
            None => Some("no call of that id in the stream".to_owned()),
            Some(b) => {
                let args_same = match call.args {
                    Some(Some(a)) => same_arguments(a, &b.input),
                    None => true,
                    Some(None) => false,
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
