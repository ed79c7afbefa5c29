//! `auto`: the dialect from the first event that identifies itself.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::object_for_shape;
use super::state::{provider_error, Fail};
use super::{Dialect, Input};

pub(crate) enum Detected {
    Dialect(Dialect),
    /// A generic `{"error": …}` before the dialect was known.
    ProviderError(Fail),
    Unknown,
}

/// The dialect an event name belongs to, when only one dialect uses it.
fn by_name(name: &str) -> Option<Dialect> {
    Dialect::ALL
        .into_iter()
        .find(|d| d.spec().hints.names(name))
}

/// The dialect of a whole, non-streamed response body (QUIRKS.md Q31), from
/// its top-level shape, as each dialect's body declares it. Streamed events
/// never match (they carry an event type, a chunk tag, or a delta).
pub(crate) fn body_shape(obj: &Map<String, Value>) -> Option<Dialect> {
    body_shape_for(None, obj)
}

/// [`body_shape`] when a dialect is named: its own body comes first (a
/// dialect whose bodies are another dialect's, as InvokeModel's are).
pub(crate) fn body_shape_for(named: Option<Dialect>, obj: &Map<String, Value>) -> Option<Dialect> {
    named
        .into_iter()
        .chain(Dialect::ALL)
        .find(|d| d.spec().body.as_ref().is_some_and(|b| (b.shape)(obj)))
}

pub(crate) fn detect(event_name: Option<&str>, input: Input<'_>) -> Detected {
    if let Some(d) = event_name.and_then(by_name) {
        return Detected::Dialect(d);
    }
    let owned;
    let obj: &Map<String, Value> = match input {
        Input::Value(Value::Object(m)) => m,
        Input::Value(_) => return Detected::Unknown,
        Input::Tree(t) => match Value::deserialize(&mut t.deserializer()) {
            Ok(Value::Object(m)) => {
                owned = m;
                &owned
            }
            _ => return Detected::Unknown,
        },
        Input::Json(b) => match object_for_shape(b) {
            Some(m) => {
                owned = m;
                &owned
            }
            None => return Detected::Unknown,
        },
        Input::Text(t) => match object_for_shape(t.as_bytes()) {
            Some(m) => {
                owned = m;
                &owned
            }
            None => return Detected::Unknown,
        },
    };
    if let Some(d) = body_shape(obj) {
        return Detected::Dialect(d);
    }
    if let Some(t) = obj.get("type").and_then(Value::as_str) {
        // An error event of a dialect whose errors name their type: told
        // apart by whether the error is nested.
        let nested = obj.get("error").is_some_and(Value::is_object);
        let by_error = Dialect::ALL
            .into_iter()
            .find(|d| d.spec().hints.error_event == Some((t, nested)));
        if let Some(d) = by_error.or_else(|| by_name(t)) {
            return Detected::Dialect(d);
        }
    }
    if let Some(d) = Dialect::ALL
        .into_iter()
        .find(|d| (d.spec().hints.shape)(obj))
    {
        return Detected::Dialect(d);
    }
    if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
        return Detected::ProviderError(provider_error(err));
    }
    Detected::Unknown
}
