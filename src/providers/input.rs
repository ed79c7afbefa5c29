//! One decoded event as the adapters read it, and its typed decode.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::state::Fail;
use super::{DecodeKind, Tree};

/// One decoded event: JSON text, a value, or a tree borrowed from the caller's
/// own decoded data (the binding's Python dicts).
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    /// JSON text as bytes, not known to be UTF-8.
    Json(&'a [u8]),
    /// JSON text known to be UTF-8 (the framing checked it): decoded without a
    /// second check, and by the adapters' fast paths.
    Text(&'a str),
    Value(&'a Value),
    Tree(Tree<'a>),
}

impl<'a> Input<'a> {
    /// Decodes the event into a typed view borrowing from it.
    pub(crate) fn parse<T: Deserialize<'a>>(self) -> Result<T, Fail> {
        let r = match self {
            Input::Json(b) => serde_json::from_slice(b),
            Input::Text(t) => serde_json::from_str(t),
            Input::Value(v) => T::deserialize(v),
            Input::Tree(t) => T::deserialize(&mut t.deserializer()),
        };
        r.map_err(|e| self.diagnose::<T>(&e))
    }

    /// The cold path after a failed decode: which field was wrong, and how.
    fn diagnose<T: Deserialize<'a>>(self, first: &serde_json::Error) -> Fail {
        let tracked = match self {
            Input::Json(b) => {
                if let Err(e) = serde_json::from_slice::<IgnoredAny>(b) {
                    return Fail::Bad {
                        kind: DecodeKind::MalformedJson,
                        detail: e.to_string(),
                    };
                }
                serde_path_to_error::deserialize::<_, T>(&mut serde_json::Deserializer::from_slice(
                    b,
                ))
                .err()
            }
            Input::Text(t) => {
                if let Err(e) = serde_json::from_str::<IgnoredAny>(t) {
                    return Fail::Bad {
                        kind: DecodeKind::MalformedJson,
                        detail: e.to_string(),
                    };
                }
                serde_path_to_error::deserialize::<_, T>(&mut serde_json::Deserializer::from_str(t))
                    .err()
            }
            Input::Value(v) => serde_path_to_error::deserialize::<_, T>(v).err(),
            Input::Tree(t) => serde_path_to_error::deserialize::<_, T>(&mut t.deserializer()).err(),
        };
        let detail = match tracked {
            Some(e) if e.path().to_string() != "." => {
                format!("field `{}`: {}", e.path(), e.inner())
            }
            Some(e) => e.inner().to_string(),
            None => first.to_string(),
        };
        Fail::Bad {
            kind: DecodeKind::WrongType,
            detail,
        }
    }

    /// Decodes an event of a dialect whose events name their type. An event
    /// that does not decode is an error when its type is one in `handled`
    /// (or it names none); otherwise it is an event type this version does not
    /// read, whose fields may be anything (Q29): `Ok(Err(type))`.
    pub(crate) fn parse_typed<T: Deserialize<'a>>(
        self,
        event_name: Option<&str>,
        handled: &[&str],
    ) -> Result<Result<T, String>, Fail> {
        match self.parse() {
            Ok(ev) => Ok(Ok(ev)),
            Err(f) => match self.self_type().or_else(|| event_name.map(str::to_owned)) {
                Some(k) if !handled.contains(&k.as_str()) => Ok(Err(k)),
                _ => Err(f),
            },
        }
    }

    /// The event's own `type` (or `object`) string, for messages; cold path.
    pub(crate) fn self_type(self) -> Option<String> {
        #[derive(Deserialize)]
        struct Probe {
            #[serde(rename = "type")]
            kind: Option<Value>,
            object: Option<Value>,
        }
        let probe: Probe = match self {
            Input::Json(b) => serde_json::from_slice(b).ok()?,
            Input::Text(t) => serde_json::from_str(t).ok()?,
            Input::Value(v) => Probe::deserialize(v).ok()?,
            Input::Tree(t) => Probe::deserialize(&mut t.deserializer()).ok()?,
        };
        [probe.kind, probe.object]
            .into_iter()
            .flatten()
            .find_map(|v| v.as_str().map(str::to_owned))
    }
}
