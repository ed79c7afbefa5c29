//! `auto`: the dialect from the first event that identifies itself.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::raw::object_for_shape;
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

/// An event the dialect skipped that is an error all the same, in another
/// dialect's shape (a llama-server Anthropic-format stream ending with
/// `event: error` and an OpenAI-shaped `{"error": {"code": 500, …}}`, or a
/// bare `{"code": 500, "message": …, "type": "server_error"}`): the provider
/// error it reports, never a skipped event. An error is told by its SSE name
/// `error`, an `error` object, or a `type` that ends in `error` beside a
/// `message`.
pub(crate) fn error_in_any_shape(event_name: Option<&str>, input: Input<'_>) -> Option<Fail> {
    let obj: Map<String, Value> = match input {
        Input::Value(Value::Object(m)) => m.clone(),
        Input::Value(_) => return None,
        Input::Tree(t) => match Value::deserialize(&mut t.deserializer()) {
            Ok(Value::Object(m)) => m,
            _ => return None,
        },
        Input::Json(b) => object_for_shape(b)?,
        Input::Text(t) => object_for_shape(t.as_bytes())?,
    };
    let nested = obj.get("error").filter(|e| e.is_object());
    let typed = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with("error"));
    match nested {
        Some(err) => Some(provider_error(err)),
        None if event_name == Some("error") => Some(provider_error(&Value::Object(obj))),
        None if typed && obj.contains_key("message") => Some(provider_error(&Value::Object(obj))),
        None => None,
    }
}
