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

/// Members whose contents (not only their kind) a body shape reads: an
/// object that has one is left to the whole decode.
const READ_INSIDE: [&str; 2] = ["choices", "output"];

/// `true` when the JSON text of an event is surely no dialect's whole body,
/// told from its top-level members only: each member's value stands in as
/// its kind (a string as it is, an object as `{}`, an array as `[]`, its
/// contents skipped, never built into a `Value` tree), and no body shape
/// matches the stand-in. Body shapes read the top-level members' kinds and
/// strings, and inside [`READ_INSIDE`] only (an object with one of those,
/// text that is not one object, anything unreadable: `false`, unsure).
pub(crate) fn surely_no_body(text: &[u8]) -> bool {
    match serde_json::from_slice::<Kind<true>>(text) {
        Ok(Kind(Value::Object(m))) => {
            !READ_INSIDE.iter().any(|k| m.contains_key(*k)) && body_shape(&m).is_none()
        }
        _ => false,
    }
}

/// A value as the body shapes see it: a string or scalar as it is; an object
/// at the top (`TOP`) with its members each a `Kind<false>`, below it empty,
/// as is an array (their contents checked as JSON and skipped).
struct Kind<const TOP: bool>(Value);

impl<'de, const TOP: bool> Deserialize<'de> for Kind<TOP> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess};
        struct V<const TOP: bool>;
        impl<'de, const TOP: bool> serde::de::Visitor<'de> for V<TOP> {
            type Value = Kind<TOP>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Kind<TOP>, E> {
                Ok(Kind(Value::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Kind<TOP>, E> {
                Ok(Kind(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Kind<TOP>, E> {
                Ok(Kind(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Kind<TOP>, E> {
                Ok(Kind(n.into()))
            }
            fn visit_str<E>(self, s: &str) -> Result<Kind<TOP>, E> {
                Ok(Kind(Value::String(s.to_owned())))
            }
            fn visit_unit<E>(self) -> Result<Kind<TOP>, E> {
                Ok(Kind(Value::Null))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind<TOP>, A::Error> {
                let mut m = Map::new();
                if TOP {
                    // The last of a repeated key wins, as in a decoded `Value`.
                    while let Some((k, Kind(v))) = map.next_entry::<String, Kind<false>>()? {
                        m.insert(k, v);
                    }
                } else {
                    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                }
                Ok(Kind(Value::Object(m)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind<TOP>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Kind(Value::Array(Vec::new())))
            }
        }
        d.deserialize_any(V::<TOP>)
    }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{body_shape, surely_no_body};
    use crate::providers::body_harness::{lit, members_with, obj};
    use crate::providers::raw::object_for_shape;

    /// What the whole decode says: no body shape matches the text's object.
    fn no_body(text: &str) -> bool {
        object_for_shape(text.as_bytes())
            .and_then(|m| body_shape(&m))
            .is_none()
    }

    #[test]
    fn the_usual_events_with_a_marker_are_told_and_bodies_are_not() {
        let events = [
            "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1}}}",
            "{\"interaction\":{\"id\":\"i\",\"status\":\"in_progress\",\"object\":\"interaction\"},\"event_type\":\"interaction.created\"}",
            "{\"interaction\":{\"status\":\"completed\",\"usage\":{\"total_tokens\":9}},\"event_type\":\"interaction.completed\"}",
        ];
        for text in events {
            assert!(surely_no_body(text.as_bytes()), "{text}");
            assert!(no_body(text), "{text}");
        }
        // Bodies, and the members whose contents a shape reads: never told.
        let unsure = [
            "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}",
            "{\"object\":\"interaction\",\"status\":\"completed\",\"outputs\":[]}",
            "{\"steps\":[],\"status\":\"completed\"}",
            "{\"message\":{},\"finish_reason\":\"COMPLETE\"}",
            "{\"choices\":[{\"delta\":{}}]}",
            "{\"output\":{}}",
            "{\"type\":\"message_start\",\"message\":{}",
            "[{\"type\":\"message_start\"}]",
            "{\"type\":\"message_start\",\"n\":1e400}",
        ];
        for text in unsure {
            assert!(!surely_no_body(text.as_bytes()), "{text}");
        }
    }

    /// The stand-in never tells as no body an object that a body shape
    /// matches, decoded whole.
    #[test]
    fn what_the_standin_tells_is_no_body() {
        let value = || {
            lit(&[
                "\"message\"",
                "\"message_start\"",
                "\"chat.completion\"",
                "\"chat.completion.chunk\"",
                "\"interaction\"",
                "\"response\"",
                "\"completed\"",
                "\"x\"",
                "{}",
                "{\"message\":{}}",
                "[]",
                "[{\"message\":{}}]",
                "[{\"delta\":{}}]",
                "[1]",
                "null",
                "true",
                "5",
                "-1.5",
                "1e400",
                "{\"a\":[[{}]]}",
            ])
        };
        let keys = [
            "type",
            "object",
            "message",
            "choices",
            "output",
            "steps",
            "outputs",
            "status",
            "event_type",
            "candidates",
            "usageMetadata",
            "promptFeedback",
            "finish_reason",
            "done",
            "interaction",
            "id",
        ];
        let members = members_with(keys.iter().map(|k| (*k, value())).collect(), |_| 0.3, true);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 3000,
            ..ProptestConfig::default()
        });
        let (told, bodies) = (std::cell::Cell::new(0_u32), std::cell::Cell::new(0_u32));
        let r = runner.run(&members, |ms| {
            let text = obj(ms);
            let surely = surely_no_body(text.as_bytes());
            if surely {
                prop_assert!(no_body(&text), "{}", text);
            }
            told.set(told.get() + u32::from(surely));
            bodies.set(bodies.get() + u32::from(!no_body(&text)));
            Ok(())
        });
        if let Err(e) = r {
            panic!("{e}");
        }
        // Both sides occur, so the check above checked something.
        let (told, bodies) = (told.get(), bodies.get());
        assert!(told > 100 && bodies > 100, "told {told}, bodies {bodies}");
    }
}
