//! Small JSON helpers shared by the adapters: lenient indexes (Q19), compact
//! re-serialisation that keeps key order, presence flags, and the cheap
//! completeness check behind Q10 / Q20.

pub(crate) use super::raw::{compact_raw, push_json_string};
use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// An index as providers send it: an integer, or (Q19) an integer in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Index(pub i64);

impl<'de> Deserialize<'de> for Index {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Index;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer index (or an integer in a string)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Index, E> {
                Ok(Index(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Index, E> {
                i64::try_from(v).map(Index).map_err(|_| {
                    E::custom(format_args!("index {v} is out of the signed 64-bit range"))
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Index, E> {
                // 3.0 is an integer written as a float by some gateways; 3.5 is not an index.
                #[allow(clippy::cast_possible_truncation, clippy::float_cmp)]
                let as_int = v as i64;
                #[allow(clippy::cast_precision_loss, clippy::float_cmp)]
                if v.is_finite() && (as_int as f64) == v && v.abs() < 9.0e15 {
                    Ok(Index(as_int))
                } else {
                    Err(E::invalid_type(de::Unexpected::Float(v), &self))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Index, E> {
                v.trim()
                    .parse::<i64>()
                    .map(Index)
                    .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string borrowed from the event when it has no escapes (no allocation on
/// the hot path), owned otherwise. Wrong types are errors naming the field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The elements of a JSON array, the first one held inline: the usual
/// one-element array of a streamed event (one choice, one tool call per chunk)
/// costs no allocation. Decodes as a `Vec<T>` does, errors included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Few<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Default for Few<T> {
    fn default() -> Self {
        Self {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<T> Few<T> {
    pub(crate) fn push(&mut self, item: T) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(item);
        } else {
            self.rest.push(item);
        }
    }
}

/// The elements of a list, in its order, with no copy (a whole body's calls
/// made into one delta).
impl<T> From<Vec<T>> for Few<T> {
    fn from(rest: Vec<T>) -> Self {
        Self { first: None, rest }
    }
}

impl<T> Few<T> {
    /// The elements, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.first.iter().chain(&self.rest)
    }
}

impl<T: Default> Few<T> {
    /// A new last element, default, to fill in place (always `Some`).
    pub(crate) fn slot(&mut self) -> Option<&mut T> {
        if self.first.is_none() && self.rest.is_empty() {
            return Some(self.first.insert(T::default()));
        }
        self.rest.push(T::default());
        self.rest.last_mut()
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::option::IntoIter<T>, std::vec::IntoIter<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Few<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Few<T>;
            // The words of serde's own `Vec` visitor: the same errors.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Few<T>, A::Error> {
                let mut out = Few::default();
                while let Some(item) = seq.next_element()? {
                    out.push(item);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// The text of an optional string field, `""` when absent or null.
pub(crate) fn text<'s>(s: &'s Option<Str<'_>>) -> &'s str {
    s.as_deref().unwrap_or_default()
}

/// Deserialises a field to `true` when it is present at all, even as `null`
/// (a `nullValue` flag). Use with `#[serde(default)]`.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// A field that is an object of `T` in the events we read, but an array (or
/// null) in others of the same dialect (a start event that sends
/// `content: []`): anything but an object is `None`.
#[derive(Debug, PartialEq)]
pub(crate) struct ObjectOnly<T>(pub Option<T>);

impl<T> Default for ObjectOnly<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = ObjectOnly<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object, an array or null")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|t| ObjectOnly(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ObjectOnly(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ObjectOnly(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ObjectOnly(None))
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
                d.deserialize_any(self)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Any JSON value re-serialised compactly, keeping the order its keys arrive in
/// (from text always; from a `serde_json::Value` as that map keeps them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CompactJson(pub String);

impl<'de> Deserialize<'de> for CompactJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CompactJson;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            // A tree: the value as it holds it.
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<CompactJson, D::Error> {
                let mut out = String::new();
                Writer { out: &mut out }.deserialize(d)?;
                Ok(CompactJson(out))
            }
            // `serde_json`: the raw text, so no number goes through a float (Q42).
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CompactJson, A::Error> {
                Ok(CompactJson(match raw_or_map(map)? {
                    Raw::Text(raw) => compact_raw(&raw),
                    Raw::Object(json) => json,
                }))
            }
        }
        d.deserialize_newtype_struct(RAW, V)
    }
}

/// A field that is a string in the documented shape and a JSON object in some
/// servers' (tool-call `arguments` as an object, Q42): the text, or the
/// object's compact JSON with its keys in arrival order. Anything else is an
/// error of the field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextOrObject<'a> {
    Text(Str<'a>),
    Object(Cow<'a, str>),
}

/// The name under which `serde_json` hands a value over as its raw text (the
/// mechanism of its `RawValue`); a deserializer that does not know it (a
/// [`Tree`](super::Tree), a `Value`) gives the value itself.
const RAW: &str = "$serde_json::private::RawValue";

/// A [`TextOrObject`] from a value's raw text: a string is decoded, an object
/// kept as its compact text (no number goes through a float, Q42).
fn text_or_object<'de, E: de::Error>(raw: Cow<'de, str>) -> Result<TextOrObject<'de>, E> {
    let t = raw.trim_start();
    if t.starts_with('{') {
        return Ok(TextOrObject::Object(Cow::Owned(compact_raw(t))));
    }
    if !t.starts_with('"') {
        // Named as a decoder that reads the value itself names it (a tree's, a `Value`'s).
        let value = serde_json::from_str::<serde_json::Value>(t);
        let what = match &value {
            Ok(serde_json::Value::Bool(b)) => de::Unexpected::Bool(*b),
            Ok(serde_json::Value::Array(_)) => de::Unexpected::Seq,
            Ok(serde_json::Value::Null) => de::Unexpected::Unit,
            Ok(serde_json::Value::Number(n)) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => de::Unexpected::Unsigned(u),
                (None, Some(i), _) => de::Unexpected::Signed(i),
                (None, None, Some(f)) => de::Unexpected::Float(f),
                _ => de::Unexpected::Other("a number"),
            },
            _ => de::Unexpected::Other("a number"),
        };
        return Err(E::invalid_type(what, &"a string or an object"));
    }
    let text = match raw {
        Cow::Borrowed(b) => serde_json::from_str::<Str<'de>>(b).map_err(E::custom)?,
        Cow::Owned(o) => Str(Cow::Owned(
            serde_json::from_str::<String>(&o).map_err(E::custom)?,
        )),
    };
    Ok(TextOrObject::Text(text))
}

/// What a map handed to a visitor of [`RAW`] is.
enum Raw<'de> {
    /// `serde_json` reading text: the value's raw text.
    Text(Cow<'de, str>),
    /// Any other deserializer: an object, written as it holds it.
    Object(String),
}

fn raw_or_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Raw<'de>, A::Error> {
    let Some(key) = map.next_key::<Str<'de>>()? else {
        return Ok(Raw::Object("{}".to_owned()));
    };
    if &*key == RAW {
        return Ok(Raw::Text(map.next_value::<Str<'de>>()?.0));
    }
    let mut out = String::from("{");
    push_json_string(&mut out, &key);
    out.push(':');
    map.next_value_seed(Writer { out: &mut out })?;
    while let Some(k) = map.next_key::<Str<'_>>()? {
        out.push(',');
        push_json_string(&mut out, &k);
        out.push(':');
        map.next_value_seed(Writer { out: &mut out })?;
    }
    out.push('}');
    Ok(Raw::Object(out))
}

impl<'de: 'a, 'a> Deserialize<'de> for TextOrObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextOrObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an object")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(TextOrObject::Text(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextOrObject::Text(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(TextOrObject::Text(Str(Cow::Owned(v))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                match raw_or_map(map)? {
                    Raw::Text(raw) => text_or_object(raw),
                    Raw::Object(json) => Ok(TextOrObject::Object(Cow::Owned(json))),
                }
            }
        }
        d.deserialize_newtype_struct(RAW, V)
    }
}

struct Writer<'o> {
    out: &'o mut String,
}

impl<'de> DeserializeSeed<'de> for Writer<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Writer<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.out.push_str(&v.to_string());
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.out.push_str(&v.to_string());
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        match serde_json::Number::from_f64(v) {
            Some(n) => self.out.push_str(&n.to_string()),
            None => self.out.push_str("null"),
        }
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        push_json_string(self.out, v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push('[');
        let mut first = true;
        loop {
            let len = self.out.len();
            if !first {
                self.out.push(',');
            }
            if seq.next_element_seed(Writer { out: self.out })?.is_none() {
                self.out.truncate(len);
                break;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.out.push('{');
        let mut first = true;
        loop {
            let len = self.out.len();
            if !first {
                self.out.push(',');
            }
            let Some(key) = map.next_key::<Cow<'de, str>>()? else {
                self.out.truncate(len);
                break;
            };
            push_json_string(self.out, &key);
            self.out.push(':');
            map.next_value_seed(Writer { out: self.out })?;
            first = false;
        }
        self.out.push('}');
        Ok(())
    }
}

/// A field that is a string in the events toolstitch reads, and may be any JSON
/// value in others it does not need (an item whose `arguments` is an object,
/// Q27, Q29): strings as text, anything else as its
/// compact JSON. `null` is `None` (use `Option<Loose>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Loose<'a> {
    Str(Cow<'a, str>),
    Json(String),
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Loose<'de>, E> {
                Ok(Loose::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Loose<'de>, E> {
                Ok(Loose::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Loose<'de>, E> {
                Ok(Loose::Str(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Loose<'de>, E> {
                Ok(Loose::Json(if v { "true" } else { "false" }.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Loose<'de>, E> {
                Ok(Loose::Json(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Loose<'de>, E> {
                Ok(Loose::Json(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Loose<'de>, E> {
                let mut out = String::new();
                Writer { out: &mut out }.visit_f64::<E>(v)?;
                Ok(Loose::Json(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Loose<'de>, E> {
                Ok(Loose::Json("null".to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Loose<'de>, A::Error> {
                let mut out = String::new();
                Writer { out: &mut out }.visit_seq(seq)?;
                Ok(Loose::Json(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Loose<'de>, A::Error> {
                let mut out = String::new();
                Writer { out: &mut out }.visit_map(map)?;
                Ok(Loose::Json(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON string literal for `s` (provider state that is a bare string).
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::new();
    push_json_string(&mut out, s);
    out
}

/// True when `text` is exactly one complete JSON value (whitespace around it
/// allowed). Cheap reject first: a complete object or array ends in `}` / `]`.
pub(crate) fn is_complete_json(text: &str) -> bool {
    match text.trim_end().as_bytes().last() {
        Some(b'}' | b']') => serde_json::from_str::<IgnoredAny>(text).is_ok(),
        _ => false,
    }
}

/// True when `text` is the start of some JSON value (or a whole one): nothing in
/// it is a syntax error yet.
pub(crate) fn is_json_prefix(text: &str) -> bool {
    let mut parser = crate::partial::PartialJson::new_strict(crate::validate::MAX_DEPTH);
    parser.feed(text.as_bytes()).is_ok()
}

/// True when `fragment` begins a new JSON object or array.
pub(crate) fn starts_value(fragment: &str) -> bool {
    matches!(fragment.trim_start().as_bytes().first(), Some(b'{' | b'['))
}

/// Deserialises an object into a usage map; `null` is `None`.
pub(crate) fn usage_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, D::Error> {
    Option::<serde_json::Map<String, serde_json::Value>>::deserialize(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_accepts_ints_and_integer_strings_only() {
        let ok = |s: &str| serde_json::from_str::<Index>(s).ok().map(|i| i.0);
        assert_eq!(ok("3"), Some(3));
        assert_eq!(ok("-7"), Some(-7));
        assert_eq!(ok("\"0\""), Some(0));
        assert_eq!(ok("\" 12 \""), Some(12));
        assert_eq!(ok("2.0"), Some(2));
        assert_eq!(ok("2.5"), None);
        assert_eq!(ok("\"x\""), None);
        assert_eq!(ok("18446744073709551615"), None);
        assert_eq!(ok("true"), None);
    }

    #[test]
    fn compact_json_keeps_order_and_escapes() {
        let c: CompactJson = serde_json::from_str(
            r#" { "z" : [1, 2.5, {"a":null}], "a\n": "q\"\u0001", "t": true, "e": [] } "#,
        )
        .unwrap_or_default();
        assert_eq!(
            c.0,
            r#"{"z":[1,2.5,{"a":null}],"a\n":"q\"\u0001","t":true,"e":[]}"#
        );
        let v: serde_json::Value = serde_json::from_str(r#"{"b":{},"a":-1}"#).unwrap_or_default();
        let c = CompactJson::deserialize(&v).unwrap_or_default();
        assert!(
            c.0 == r#"{"a":-1,"b":{}}"# || c.0 == r#"{"b":{},"a":-1}"#,
            "{}",
            c.0
        );
    }

    #[test]
    fn compact_raw_keeps_numbers_as_sent_and_writes_strings_one_way() {
        for (raw, compact) in [
            (
                r#" { "n" : 123456789012345678901234567890 , "x": [1e400, -0.0, 2.50E+3] } "#,
                r#"{"n":123456789012345678901234567890,"x":[1e400,-0.0,2.50E+3]}"#,
            ),
            // An escape and the character it stands for give one text.
            (
                r#"{"c":"Z\u00fcrich \/ \"q\" \\ \t"}"#,
                r#"{"c":"Zürich / \"q\" \\ \t"}"#,
            ),
            (r#"{"c":"Zürich"}"#, r#"{"c":"Zürich"}"#),
            (r#"["a b", "\\", "\"", {}]"#, r#"["a b","\\","\"",{}]"#),
        ] {
            assert_eq!(compact_raw(raw), compact, "{raw}");
        }
        let c: CompactJson = serde_json::from_str(r#"{"b": 1.0e400, "a": 1}"#).unwrap_or_default();
        assert_eq!(c.0, r#"{"b":1.0e400,"a":1}"#);
    }

    #[test]
    fn completeness_check() {
        assert!(is_complete_json("{\"a\":1}"));
        assert!(is_complete_json(" [1] \n"));
        assert!(!is_complete_json("{\"a\":"));
        assert!(!is_complete_json("{\"a\":1}}"));
        assert!(!is_complete_json("{\"a\":1}{\"a\":1}"));
        assert!(!is_complete_json(""));
        assert!(starts_value(" {\"x\""));
        assert!(!starts_value("\"x\""));
    }
}
