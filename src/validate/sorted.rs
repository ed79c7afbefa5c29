//! The schema validator reading a call's arguments as parsed, without a copy.
//!
//! The validator (`jsonschema`) reads any representation that implements its
//! [`Json`] trait. [`Args`] is what `serde_json`'s parser gives of the input
//! and nothing more: strings and keys borrowed from the input where they have
//! no escape, numbers as `serde_json` reads them, a vector per container; each
//! object's members are then sorted by key in place, so the validator iterates
//! them in the order of `serde_json`'s map (a `BTreeMap`, sorted by key) and
//! finds one by binary search. It takes the same steps, in the same order, as
//! over the `serde_json::Value` the strict parse was copied into before, and
//! reports the same failures in the same order, with no strict parse into an
//! ordered value and no copy of it (a string per key, string and number, a map
//! node per object).
//!
//! Only an input the strict parse would take as it is comes this way
//! ([`parse`]): `serde_json` accepts what the strict parse accepts, and more
//! only for duplicate keys (`strict.rs`'s `agrees_with_serde_json`), which the
//! sort finds; and a number whose value the validator would read rounded
//! (`exact.rs`) can only be one with an exponent or more than 15 digits, which
//! [`plain_numbers`] sends back to the strict parse and its exact pass. Every
//! input refused here goes to the strict parse, which names the error.

use std::borrow::Cow;
use std::fmt;

use jsonschema::json::{cmp, Array, Json, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A call's arguments as `serde_json` parses them, strings borrowed where they
/// can be.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Args<'a> {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(Cow<'a, str>),
    Array(Vec<Args<'a>>),
    /// Members sorted by key once [`parse`] returns them.
    Object(Vec<(Cow<'a, str>, Args<'a>)>),
}

/// `input` as [`Args`] of an object with its members sorted by key, when the
/// strict parse would take it as it is and no number in it needs the exact
/// pass; `None` otherwise (anything refused, a duplicate key, a number with
/// an exponent or more than 15 digits, a value other than an object, empty
/// input).
pub(super) fn parse(input: &[u8]) -> Option<Args<'_>> {
    if !plain_numbers(input) {
        return None;
    }
    let mut args: Args<'_> = serde_json::from_slice(input).ok()?;
    if !matches!(args, Args::Object(_)) || !sort_members(&mut args) {
        return None;
    }
    Some(args)
}

/// Whether every number of a JSON text is plain (no exponent) and of at most
/// 15 digits: such a number is read exactly (`exact.rs`'s `lossy`). A digit,
/// `-` or `.` outside a string is part of a number in a valid JSON text; `e`,
/// `E` or `+` right after one is an exponent.
fn plain_numbers(input: &[u8]) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    // Digits of the number being read, if one is.
    let mut digits: Option<usize> = None;
    for &b in input {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'0'..=b'9' => {
                let n = digits.unwrap_or(0) + 1;
                if n > 15 {
                    return false;
                }
                digits = Some(n);
            }
            b'-' | b'.' => digits = Some(digits.unwrap_or(0)),
            b'e' | b'E' | b'+' if digits.is_some() => return false,
            b'"' => {
                in_string = true;
                digits = None;
            }
            _ => digits = None,
        }
    }
    true
}

/// Sorts every object's members by key (`serde_json`'s map order), in place;
/// false at a duplicate key.
fn sort_members(value: &mut Args<'_>) -> bool {
    match value {
        Args::Object(members) => {
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            members.windows(2).all(|w| match w {
                [a, b] => a.0 != b.0,
                _ => true,
            }) && members.iter_mut().all(|(_, v)| sort_members(v))
        }
        Args::Array(items) => items.iter_mut().all(sort_members),
        Args::Null | Args::Bool(_) | Args::Number(_) | Args::String(_) => true,
    }
}

impl Args<'_> {
    /// As `serde_json::Value` (objects are sorted, as its map is).
    fn to_json(&self) -> Value {
        match self {
            Args::Null => Value::Null,
            Args::Bool(b) => Value::Bool(*b),
            Args::Number(n) => Value::Number(n.clone()),
            Args::String(s) => Value::String(s.as_ref().to_owned()),
            Args::Array(items) => Value::Array(items.iter().map(Args::to_json).collect()),
            Args::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.as_ref().to_owned(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A string borrowed from the input when it has no escape.
struct Text<'a>(Cow<'a, str>);

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v)))
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct ArgsVisitor;

impl<'de> Visitor<'de> for ArgsVisitor {
    type Value = Args<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Args<'de>, E> {
        Ok(Args::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Args<'de>, E> {
        Ok(Args::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Args<'de>, E> {
        Ok(Args::Number(v.into()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Args<'de>, E> {
        Ok(Args::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Args<'de>, E> {
        serde_json::Number::from_f64(v)
            .map(Args::Number)
            .ok_or_else(|| E::custom("not a finite number"))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Args<'de>, E> {
        Ok(Args::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Args<'de>, E> {
        Ok(Args::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Args<'de>, E> {
        Ok(Args::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Args<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Args::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some((Text(key), value)) = map.next_entry::<Text<'de>, Args<'de>>()? {
            members.push((key, value));
        }
        Ok(Args::Object(members))
    }
}

impl<'de> Deserialize<'de> for Args<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgsVisitor)
    }
}

/// The representation: [`Args`] whose objects are sorted by key.
pub(super) struct Sorted;

/// One value of sorted [`Args`], or an object key the validator checks as a
/// string (`propertyNames`).
#[derive(Debug, Clone, Copy)]
pub(super) enum SortedNode<'a> {
    Value(&'a Args<'a>),
    Name(&'a str),
}

/// An object's members, sorted by key.
#[derive(Debug, Clone, Copy)]
pub(super) struct SortedObject<'a>(&'a [(Cow<'a, str>, Args<'a>)]);

/// An array's elements.
#[derive(Debug, Clone, Copy)]
pub(super) struct SortedArray<'a>(&'a [Args<'a>]);

impl Json for Sorted {
    type Node<'a> = SortedNode<'a>;
    type PreparedKey = String;
    type StringBuffer = ();

    // As `serde_json`'s map (a sorted map's lookup costs about as much as
    // one here): the validator picks the same strategy, a pass over the
    // members or lookups, for the same objects.
    const KEYS_PER_LOOKUP: usize = 2;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(SortedNode<'_>) -> T) -> T {
        f(SortedNode::Name(string))
    }
}

impl<'a> Node<'a, Sorted> for SortedNode<'a> {
    type Object = SortedObject<'a>;
    type Array = SortedArray<'a>;
    type Number = serde_json::Number;

    fn as_object(&self) -> Option<SortedObject<'a>> {
        match self {
            SortedNode::Value(Args::Object(members)) => Some(SortedObject(members)),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<SortedArray<'a>> {
        match self {
            SortedNode::Value(Args::Array(items)) => Some(SortedArray(items)),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self {
            SortedNode::Value(Args::String(s)) => Some(Cow::Borrowed(s)),
            SortedNode::Name(s) => Some(Cow::Borrowed(s)),
            SortedNode::Value(_) => None,
        }
    }

    fn as_number(&self) -> Option<serde_json::Number> {
        match self {
            SortedNode::Value(Args::Number(n)) => Some(n.clone()),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self {
            SortedNode::Value(Args::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, SortedNode::Value(Args::Null))
    }

    fn json_type(&self) -> JsonType {
        match self {
            SortedNode::Value(Args::Null) => JsonType::Null,
            SortedNode::Value(Args::Bool(_)) => JsonType::Boolean,
            SortedNode::Value(Args::Number(_)) => JsonType::Number,
            SortedNode::Value(Args::String(_)) | SortedNode::Name(_) => JsonType::String,
            SortedNode::Value(Args::Array(_)) => JsonType::Array,
            SortedNode::Value(Args::Object(_)) => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        // Scalars without building a value (`enum` and `const` of strings are
        // common in tool schemas); containers as the default does.
        match (self, expected) {
            (SortedNode::Value(Args::String(s)), _) => expected.as_str() == Some(s.as_ref()),
            (SortedNode::Name(s), _) => expected.as_str() == Some(*s),
            (SortedNode::Value(Args::Number(ours)), Value::Number(n)) => {
                cmp::equal_numbers(ours, n)
            }
            (SortedNode::Value(_), _) => cmp::equal(&self.to_value(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(match self {
            SortedNode::Value(v) => v.to_json(),
            SortedNode::Name(s) => Value::String((*s).to_owned()),
        })
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(match self {
            SortedNode::Value(v) => NodeIdentity::new(std::ptr::from_ref::<Args<'_>>(v) as usize),
            SortedNode::Name(s) => NodeIdentity::tagged(s.as_ptr() as usize, 1),
        })
    }
}

impl<'a> Object<'a, Sorted> for SortedObject<'a> {
    type Node = SortedNode<'a>;
    type MemberName = &'a str;
    type MembersIter = std::iter::Map<
        std::slice::Iter<'a, (Cow<'a, str>, Args<'a>)>,
        fn(&'a (Cow<'a, str>, Args<'a>)) -> (&'a str, SortedNode<'a>),
    >;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, key: &String) -> Option<SortedNode<'a>> {
        let at = self
            .0
            .binary_search_by(|(k, _)| k.as_ref().cmp(key.as_str()))
            .ok()?;
        self.0.get(at).map(|(_, v)| SortedNode::Value(v))
    }

    fn members(&self) -> Self::MembersIter {
        self.0
            .iter()
            .map(|(k, v)| (k.as_ref(), SortedNode::Value(v)))
    }
}

impl<'a> Array<'a, Sorted> for SortedArray<'a> {
    type Node = SortedNode<'a>;
    type ElementsIter =
        std::iter::Map<std::slice::Iter<'a, Args<'a>>, fn(&'a Args<'a>) -> SortedNode<'a>>;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn elements(&self) -> Self::ElementsIter {
        self.0.iter().map(SortedNode::Value)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use proptest::prelude::*;
    use proptest::test_runner::{TestCaseError, TestRunner};
    use serde_json::{json, Value};

    use super::super::{parse_strict_ordered, CompiledSchema};
    use crate::partial::PartialValue;

    /// Keys: the schemas' property names, others, ones that sort apart from
    /// their arrival (`~`, `/`, non-ASCII, escapes of the same text).
    const KEYS: [&str; 8] = ["a", "b", "n", "text", "é", "A~/", "\\u00e9", "zz"];

    /// Number texts: plain, `-0`, exponents, beyond 64 bits, beyond a double's
    /// digits, out of range (a parse error), and a decimal that is exact.
    const NUMBERS: [&str; 17] = [
        "0",
        "-0",
        "-0.0",
        "1",
        "1.0",
        "1e2",
        "-7",
        "2.5",
        "0.1",
        "12345",
        "18446744073709551615",
        "18446744073709551617",
        "9007199254740993",
        "-9223372036854775809",
        "9007199254740993.5",
        "1e400",
        "1E-400",
    ];

    /// Strings as written: escapes (a surrogate pair, a lone surrogate, a
    /// quote), non-ASCII, one that is a date.
    const STRINGS: [&str; 9] = [
        r#""""#,
        r#""x""#,
        r#""é\"x""#,
        r#""\ud83d\ude00""#,
        r#""\ud800""#,
        r#""\u0041BC""#,
        r#""2024-01-31""#,
        r#""y""#,
        r#""aaaaaaaaaaaa""#,
    ];

    /// A JSON text of arguments, keys in any order and sometimes twice.
    fn value_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            proptest::sample::select(&NUMBERS[..]).prop_map(str::to_owned),
            proptest::sample::select(&STRINGS[..]).prop_map(str::to_owned),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((proptest::sample::select(&KEYS[..]), inner), 0..6).prop_map(
                    |members| {
                        let members: Vec<String> = members
                            .iter()
                            .map(|(k, v)| format!("\"{k}\": {v}"))
                            .collect();
                        format!("{{{}}}", members.join(", "))
                    }
                ),
            ]
        })
    }

    /// Schemas of one keyword or a few (every type; `enum` and `const` of
    /// every kind, the validator comparing each through the node's equality).
    fn leaves() -> Vec<Value> {
        let types = [
            "null", "boolean", "integer", "number", "string", "array", "object",
        ];
        let mut leaves = vec![
            json!({}),
            json!(true),
            json!(false),
            json!({"type": ["integer", "string"]}),
            json!({"type": ["null", "object"]}),
            json!({"enum": ["", "x", "y", null, true, [1], {"a": 1}, {"a": [1.0]}]}),
            json!({"enum": [1, 2.5, 18_446_744_073_709_551_615_u64]}),
            json!({"enum": [0, "é\"x"]}),
            json!({"const": "é\"x"}),
            json!({"const": 0}),
            json!({"const": 1.0}),
            json!({"const": false}),
            json!({"const": [1, "x", ""]}),
            json!({"const": {"a": 0, "b": "y"}}),
            json!({"minimum": 0, "maximum": 18_446_744_073_709_551_616.0_f64}),
            json!({"exclusiveMinimum": -1, "exclusiveMaximum": 100}),
            json!({"maximum": 9_007_199_254_740_992_u64}),
            json!({"multipleOf": 0.5}),
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}),
            json!({"minLength": 1, "maxLength": 3}),
            json!({"pattern": "^[a-z]+$"}),
            json!({"format": "date"}),
            json!({"minItems": 1, "maxItems": 3, "uniqueItems": true}),
            json!({"minProperties": 1, "maxProperties": 3}),
            json!({"required": ["a", "n"]}),
            json!({"propertyNames": {"maxLength": 2}}),
            json!({"propertyNames": {"enum": ["a", "b", "n", "text", 1]}}),
            json!({"propertyNames": {"const": "a"}}),
            json!({"propertyNames": {"type": "string", "pattern": "^[a-z]"}}),
            json!({"dependentRequired": {"a": ["b"]}}),
            json!({"$ref": "#/$defs/small"}),
        ];
        leaves.extend(types.iter().map(|t| json!({ "type": t })));
        leaves
    }

    /// A schema over the same keys: most keywords, nested, a local `$ref`.
    fn schema() -> impl Strategy<Value = Value> {
        let leaf = proptest::sample::select(leaves());
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::btree_map(proptest::sample::select(&KEYS[..3]), inner.clone(), 1..3)
                    .prop_map(|p| json!({"type": "object", "properties": p})),
                (inner.clone(), any::<bool>()).prop_map(|(s, closed)| if closed {
                    json!({"properties": {"a": s, "text": {"type": "string"}}, "additionalProperties": false})
                } else {
                    json!({"properties": {"a": s}, "additionalProperties": {"type": "number"}})
                }),
                inner.clone().prop_map(|s| json!({"patternProperties": {"^[a-n]": s}})),
                inner.clone().prop_map(|s| json!({"items": s})),
                inner.clone().prop_map(|s| json!({"items": {"items": s}, "additionalProperties": s})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"prefixItems": [a, b], "items": false})),
                inner.clone().prop_map(|s| json!({"contains": s})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({ "anyOf": v })),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({ "oneOf": v })),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({ "allOf": v })),
                inner.clone().prop_map(|s| json!({ "not": s })),
                (inner.clone(), inner).prop_map(|(a, b)| json!({"if": {"required": ["a"]}, "then": a, "else": b})),
            ]
        })
        .prop_map(|mut s| {
            if let Value::Object(map) = &mut s {
                map.insert("$defs".to_owned(), json!({"small": {"maximum": 10}}));
            }
            s
        })
    }

    /// The check in place against the strict parse and the check of its
    /// copy, for one input: `Ok(true)` when the check in place decided (and
    /// agreed), `Ok(false)` when it left the input to the strict parse.
    fn agrees(schema: &CompiledSchema, text: &[u8]) -> Result<bool, String> {
        let Some(in_place) = schema.check_arguments(text) else {
            return Ok(false);
        };
        let shown = String::from_utf8_lossy(text);
        let value = parse_strict_ordered(text)
            .map_err(|e| format!("{shown}: taken in place, refused strictly: {e}"))?;
        if !matches!(value, PartialValue::Object(_)) {
            return Err(format!("{shown}: taken in place, not an object"));
        }
        let copied = schema.validate_exact(&value);
        if in_place != copied {
            return Err(format!("{shown}: {in_place:?} in place, {copied:?} copied"));
        }
        Ok(true)
    }

    /// Generated arguments (keys in any order and sometimes twice, every kind
    /// of number and escape, nesting around the limit, a byte changed now and
    /// then) against generated schemas: whatever the check in place decides,
    /// the strict parse takes the input and the check of its copy gives the
    /// same failures in the same order.
    #[test]
    fn in_place_agrees_with_the_strict_parse() {
        let mut runner = TestRunner::new(ProptestConfig::with_cases(4000));
        let decided = Cell::new(0_usize);
        let strategy = (
            value_text(),
            schema(),
            0_usize..4,
            any::<proptest::sample::Index>(),
            proptest::option::weighted(0.2, any::<u8>()),
        );
        let run = runner.run(&strategy, |(text, schema, wrap, at, byte)| {
            // Nesting below, at and past the limit, inside an object.
            let depth = [0, 120, 127, 130][wrap];
            let text = format!(
                "{{\"a\": {}{text}{}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let mut text = text.into_bytes();
            let i = at.index(text.len());
            if let (Some(byte), Some(b)) = (byte, text.get_mut(i)) {
                *b = byte;
            }
            let Ok(schema) = CompiledSchema::compile(&schema) else {
                return Ok(());
            };
            let ok = agrees(&schema, &text).map_err(TestCaseError::fail)?;
            decided.set(decided.get() + usize::from(ok));
            Ok(())
        });
        assert_eq!(run.map_err(|e| e.to_string()), Ok(()));
        // Most inputs are decided in place (the rest: a duplicate key, a
        // number with an exponent or 16 digits, a changed byte, too deep).
        assert!(decided.get() > 600, "{}", decided.get());
    }

    /// Every leaf schema against every scalar, in an array, as members, and
    /// each member name against it: decided in place, the same failures.
    #[test]
    fn every_keyword_against_every_scalar() {
        let scalars = [
            "null",
            "true",
            "false",
            "1.5",
            "-0",
            "0.1",
            "123456789012345",
        ]
        .iter()
        .chain(&STRINGS)
        .copied()
        .chain(["[1, \"x\", \"\"]", "{\"b\": \"y\", \"a\": 0}", "{\"a\": 0}"]);
        let mut checked = 0;
        for leaf in leaves() {
            let wrapped = [
                leaf.clone(),
                json!({"items": leaf}),
                json!({"additionalProperties": leaf}),
                json!({"propertyNames": leaf}),
                json!({"properties": {"a": leaf}, "$defs": {"small": {"maximum": 10}}}),
            ];
            for schema in wrapped {
                let Ok(compiled) = CompiledSchema::compile(&schema) else {
                    continue;
                };
                for scalar in scalars.clone() {
                    for text in [
                        format!("{{\"a\": {scalar}}}"),
                        format!("{{\"a\": [{scalar}, {scalar}]}}"),
                        format!("{{\"zz\": {scalar}, \"a\": {scalar}, \"\": 1, \"é\": 2}}"),
                    ] {
                        let lone = text.contains("\\ud800");
                        assert_eq!(agrees(&compiled, text.as_bytes()), Ok(!lone), "{schema}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 3000, "{checked}");
    }

    /// What goes to the strict parse: refused inputs, duplicate keys at any
    /// depth, numbers that may need the exact pass, anything but an object.
    #[test]
    fn what_the_check_in_place_leaves_to_the_strict_parse() {
        let schema = CompiledSchema::compile(&json!({})).unwrap_or_else(|e| panic!("{e}"));
        for text in [
            "",
            " ",
            "[]",
            "1",
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": [{"b": 1, "c": 2, "b": 3}]}"#,
            r#"{"é": 1, "\u00e9": 2}"#,
            r#"{"a": "\ud800"}"#,
            r#"{"a": 1e400}"#,
            r#"{"a": 1e2}"#,
            r#"{"a": 1E-2}"#,
            r#"{"a": 1234567890123456}"#,
            r#"{"a": 0.1234567890123456}"#,
            // Numbers after strings that end in escapes are still seen.
            r#"{"a": "\"", "n": 12345678901234567890}"#,
            r#"{"a": "x\\", "n": 1e2}"#,
            r#"{"a": "\\\"", "n": [1E2]}"#,
            r#"{"a": 1} x"#,
            r#"{"a": 01}"#,
        ] {
            assert_eq!(schema.check_arguments(text.as_bytes()), None, "{text}");
        }
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(130), "]".repeat(130));
        assert_eq!(schema.check_arguments(deep.as_bytes()), None);
        for text in [
            "{}",
            r#" {"a": [1, -2.5, 0.125, "e", "1e5 \"+\" E", true, false, null]} "#,
            r#"{"a": 123456789012345, "b": -0.12345678901234, "c": "12345678901234567890"}"#,
        ] {
            assert_eq!(
                schema.check_arguments(text.as_bytes()),
                Some(Ok(())),
                "{text}"
            );
        }
    }

    #[test]
    fn members_are_read_in_key_order_whatever_their_arrival() {
        let schema = CompiledSchema::compile(&json!({
            "properties": {"b": {"type": "string"}, "a": {"type": "string"}},
            "additionalProperties": false,
            "propertyNames": {"maxLength": 1},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let text = br#"{"zz": 1, "b": 2, "yy": 3, "a": 4}"#;
        assert_eq!(agrees(&schema, text), Ok(true));
        let failures = schema
            .check_arguments(text)
            .and_then(Result::err)
            .unwrap_or_default();
        let shown: Vec<String> = failures.iter().map(ToString::to_string).collect();
        assert_eq!(failures.len(), 5, "{shown:#?}");
        assert!(
            shown
                .iter()
                .any(|s| s.contains("'yy', 'zz' were unexpected")),
            "{shown:#?}"
        );
    }
}
