//! A stream's usage: the map its events merged, or (a whole body's, read by
//! its scanner) the JSON text of the body's usage object, certified by the
//! scanner to read as the very map the scanner's `scanned_map` gives
//! ([`certified_map`])
//! and read into it only when the map is asked for (the messages, the
//! state's serialised form, another usage merged into it). A body's usage is
//! then copied once as text instead of being built key by key, and dropped
//! as one string when no one asked.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::scan::Scan;

/// A stream's usage.
#[derive(Clone)]
pub(crate) enum Usage {
    Map(Map<String, Value>),
    /// A JSON object's text [`certified_map`] certified.
    Text(Box<str>),
}

/// The map of a usage text [`certified_map`] certified: what `serde_json`
/// reads of it, which is what the scanner's `scanned_map` reads of it.
///
/// `serde_json` reads every text the certificate passes (strings, `u64`s,
/// booleans, `null` and such objects, checked by the scanner); the property
/// test `certifies_what_scanned_map_reads` holds the two readings together,
/// and debug builds (every test) stop here should they ever part. A release
/// build cannot panic, and gives the empty map.
pub(crate) fn read(text: &str) -> Map<String, Value> {
    let map = serde_json::from_str(text);
    debug_assert!(
        map.is_ok(),
        "a certified usage text serde_json refuses: {text}"
    );
    map.unwrap_or_default()
}

impl Usage {
    /// The usage as its map.
    pub(crate) fn map(&self) -> Cow<'_, Map<String, Value>> {
        match self {
            Usage::Map(m) => Cow::Borrowed(m),
            Usage::Text(t) => Cow::Owned(read(t)),
        }
    }

    /// Merges `more` into the usage: its top-level keys override.
    fn extend(&mut self, more: Map<String, Value>) {
        let mut map = match std::mem::replace(self, Usage::Map(Map::new())) {
            Usage::Map(m) => m,
            Usage::Text(t) => read(&t),
        };
        map.extend(more);
        *self = Usage::Map(map);
    }
}

impl fmt::Debug for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.map().fmt(f)
    }
}

impl Serialize for Usage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::deserialize(d).map(Usage::Map)
    }
}

impl Usage {
    /// Merges a usage object into `usage`: its top-level keys override
    /// earlier ones.
    pub(crate) fn merge(usage: &mut Option<Usage>, more: Map<String, Value>) {
        match usage {
            Some(u) => u.extend(more),
            None => *usage = Some(Usage::Map(more)),
        }
    }

    /// [`Usage::merge`] of a usage object's text that [`certified_map`]
    /// certified: kept as text while it is the only one.
    pub(crate) fn merge_text(usage: &mut Option<Usage>, text: &str) {
        match usage {
            Some(u) => u.extend(read(text)),
            None => *usage = Some(Usage::Text(text.into())),
        }
    }
}

/// How deep [`certified_map`] reads objects in objects (as `scanned_map`).
const MAP_DEPTH: usize = 4;

/// The text of the small JSON object at the scanner (a body's `usage`),
/// when the scanner's `scanned_map` would read it: it holds only strings, non-negative
/// integers that a `u64` holds, booleans, `null` and such objects, at most
/// as deep; `None` (the reader gives up, as on `scanned_map`'s `None`) on
/// anything else. Nothing is built: the object is read again, into its map,
/// only when asked.
pub(crate) fn certified_map<'a>(p: &mut Scan<'a>) -> Option<&'a str> {
    p.raw_read(|p| checked_at(p, 0))
}

/// [`certified_map`]'s check of one object, `scanned_map`'s cases each.
fn checked_at(p: &mut Scan<'_>, depth: usize) -> Option<()> {
    if depth >= MAP_DEPTH || p.peek_token()? != b'{' {
        return None;
    }
    p.object(|p, _| {
        match p.peek_token()? {
            b'"' => {
                p.opt_str()??;
            }
            b'n' => p.null()?.then_some(())?,
            b't' | b'f' => {
                p.opt_bool()??;
            }
            b'{' => checked_at(p, depth + 1)?,
            b'0'..=b'9' => {
                p.opt_u64()??;
            }
            _ => return None,
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::body::scanned_map;
    use proptest::prelude::*;

    /// A small object (keys, strings, numbers, nesting), as JSON text.
    fn object() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            "(0|[1-9][0-9]{0,21})",
            "-?[0-9]{1,3}(\\.[0-9]{1,2})?([eE][0-9])?",
            "[a-z \"\\\\é🦀\n]{0,6}".prop_map(|s| Value::from(s).to_string()),
            Just(r#""\ud800""#.to_owned()),
            Just("[1]".to_owned()),
        ];
        leaf.prop_recursive(5, 24, 4, |inner| {
            proptest::collection::vec(("[a-c]{1,2}", inner), 0..4).prop_map(|members| {
                let inner: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("{}:{v}", Value::from(k)))
                    .collect();
                format!("{{ {} }}", inner.join(","))
            })
        })
    }

    proptest! {
        /// The text is certified exactly when `scanned_map` reads the
        /// object, the text is the object's, and reads as the same map.
        #[test]
        fn certifies_what_scanned_map_reads(text in object(), after in "(,1|)") {
            let whole = format!("{text}{after}");
            let scanned = scanned_map(&mut Scan::new(&whole));
            let mut p = Scan::new(&whole);
            let certified = certified_map(&mut p);
            prop_assert_eq!(certified.is_some(), scanned.is_some(), "{}", whole);
            if let (Some(t), Some(m)) = (certified, scanned) {
                prop_assert_eq!(t, text.as_str());
                prop_assert_eq!(read(t), m);
            }
        }
    }

    /// A usage kept as text shows, serialises and merges as its map.
    #[test]
    fn text_usage_is_its_map() {
        let text = r#"{"a":1,"b":{"c":"d"}}"#;
        let map: Map<String, Value> = serde_json::from_str(text).unwrap_or_default();
        let mut kept = None;
        Usage::merge_text(&mut kept, text);
        let mut built = None;
        Usage::merge(&mut built, map);
        assert!(matches!(kept, Some(Usage::Text(_))));
        assert_eq!(format!("{kept:?}"), format!("{built:?}"));
        assert_eq!(
            serde_json::to_string(&kept).ok(),
            serde_json::to_string(&built).ok()
        );
        let more: Map<String, Value> = serde_json::from_str(r#"{"a":2}"#).unwrap_or_default();
        Usage::merge(&mut kept, more.clone());
        Usage::merge(&mut built, more);
        let map = |u: &Option<Usage>| u.as_ref().map(|u| u.map().into_owned());
        assert_eq!(map(&kept), map(&built));
        Usage::merge_text(&mut kept, r#"{"e":true}"#);
        Usage::merge_text(&mut built, r#"{"e":true}"#);
        assert_eq!(map(&kept), map(&built));
    }
}
