//! The schema validator reading a strict parse in place.
//!
//! The validator (`jsonschema`) reads any representation that implements its
//! [`Json`] trait. [`Sorted`] is the strict parse itself ([`PartialValue`]),
//! its objects' members sorted by key in place: then it iterates each object in
//! the order of `serde_json`'s map (a `BTreeMap`, sorted by key) and finds a
//! member by binary search, so the validator takes the same steps, in the same
//! order, as over the `serde_json::Value` it would otherwise be copied into, and
//! reports the same failures in the same order, without that copy (a map node per
//! object, a parse of each number's text up front).
//!
//! Only a strict parse is read so: every number's text is one `serde_json`
//! parses (the strict parser refuses any other), and keys are unique.

use std::borrow::Cow;

use jsonschema::json::{cmp, Array, Json, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::Value;

use crate::partial::PartialValue;

/// The representation: a strict parse whose objects are sorted by key.
pub(super) struct Sorted;

/// One value of a sorted strict parse, or an object key the validator checks
/// as a string (`propertyNames`).
#[derive(Debug, Clone, Copy)]
pub(super) enum SortedNode<'a> {
    Value(&'a PartialValue),
    Name(&'a str),
}

/// An object's members, sorted by key.
#[derive(Debug, Clone, Copy)]
pub(super) struct SortedObject<'a>(&'a [(String, PartialValue)]);

/// An array's elements.
#[derive(Debug, Clone, Copy)]
pub(super) struct SortedArray<'a>(&'a [PartialValue]);

/// Sorts every object's members by key (`serde_json`'s map order), in place.
pub(super) fn sort_members(value: &mut PartialValue) {
    match value {
        PartialValue::Object(members) => {
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (_, v) in members {
                sort_members(v);
            }
        }
        PartialValue::Array(items) => items.iter_mut().for_each(sort_members),
        PartialValue::Null
        | PartialValue::Bool(_)
        | PartialValue::Number(_)
        | PartialValue::String(_) => {}
    }
}

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
            SortedNode::Value(PartialValue::Object(members)) => Some(SortedObject(members)),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<SortedArray<'a>> {
        match self {
            SortedNode::Value(PartialValue::Array(items)) => Some(SortedArray(items)),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self {
            SortedNode::Value(PartialValue::String(s)) => Some(Cow::Borrowed(s)),
            SortedNode::Name(s) => Some(Cow::Borrowed(s)),
            SortedNode::Value(_) => None,
        }
    }

    fn as_number(&self) -> Option<serde_json::Number> {
        match self {
            SortedNode::Value(PartialValue::Number(text)) => text.parse().ok(),
            _ => None,
        }
    }

    fn is_number(&self) -> bool {
        matches!(self, SortedNode::Value(PartialValue::Number(_)))
    }

    fn as_boolean(&self) -> Option<bool> {
        match self {
            SortedNode::Value(PartialValue::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, SortedNode::Value(PartialValue::Null))
    }

    fn json_type(&self) -> JsonType {
        match self {
            SortedNode::Value(PartialValue::Null) => JsonType::Null,
            SortedNode::Value(PartialValue::Bool(_)) => JsonType::Boolean,
            SortedNode::Value(PartialValue::Number(_)) => JsonType::Number,
            SortedNode::Value(PartialValue::String(_)) | SortedNode::Name(_) => JsonType::String,
            SortedNode::Value(PartialValue::Array(_)) => JsonType::Array,
            SortedNode::Value(PartialValue::Object(_)) => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        // Scalars without building a value (`enum` and `const` of strings are
        // common in tool schemas); containers as the default does.
        match (self, expected) {
            (SortedNode::Value(PartialValue::String(s)), _) => {
                expected.as_str() == Some(s.as_str())
            }
            (SortedNode::Name(s), _) => expected.as_str() == Some(*s),
            (SortedNode::Value(PartialValue::Number(text)), Value::Number(n)) => text
                .parse::<serde_json::Number>()
                .is_ok_and(|ours| cmp::equal_numbers(&ours, n)),
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
            SortedNode::Value(v) => {
                NodeIdentity::new(std::ptr::from_ref::<PartialValue>(v) as usize)
            }
            SortedNode::Name(s) => NodeIdentity::tagged(s.as_ptr() as usize, 1),
        })
    }
}

impl<'a> Object<'a, Sorted> for SortedObject<'a> {
    type Node = SortedNode<'a>;
    type MemberName = &'a str;
    type MembersIter = std::iter::Map<
        std::slice::Iter<'a, (String, PartialValue)>,
        fn(&'a (String, PartialValue)) -> (&'a str, SortedNode<'a>),
    >;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, key: &String) -> Option<SortedNode<'a>> {
        let at = self
            .0
            .binary_search_by(|(k, _)| k.as_str().cmp(key.as_str()))
            .ok()?;
        self.0.get(at).map(|(_, v)| SortedNode::Value(v))
    }

    fn members(&self) -> Self::MembersIter {
        self.0
            .iter()
            .map(|(k, v)| (k.as_str(), SortedNode::Value(v)))
    }
}

impl<'a> Array<'a, Sorted> for SortedArray<'a> {
    type Node = SortedNode<'a>;
    type ElementsIter =
        std::iter::Map<std::slice::Iter<'a, PartialValue>, fn(&'a PartialValue) -> SortedNode<'a>>;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn elements(&self) -> Self::ElementsIter {
        self.0.iter().map(SortedNode::Value)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::super::{parse_strict_ordered, CompiledSchema};

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

    proptest::proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The check in place gives the failures of the value copied into a
        /// `serde_json::Value` (and the exact pass): the same paths, the same
        /// messages, in the same order, for every generated input and schema.
        #[test]
        fn in_place_agrees_with_the_copy(text in value_text(), schema in schema(), wrap in 0_usize..3) {
            // Nesting at and past the limit, around a generated value.
            let depth = [0, 120, 130][wrap];
            let text = format!("{}{text}{}", "[".repeat(depth), "]".repeat(depth));
            let Ok(schema) = CompiledSchema::compile(&schema) else {
                return Ok(());
            };
            let Ok(value) = parse_strict_ordered(text.as_bytes()) else {
                return Ok(());
            };
            let copied = schema.validate_exact(&value);
            let in_place = schema.validate_exact_owned(value);
            prop_assert_eq!(in_place, copied);
        }
    }

    /// Every leaf schema against every scalar, alone, in an array, as a
    /// member, and each member name against it: the same failures.
    #[test]
    fn every_keyword_against_every_scalar() {
        let scalars = ["null", "true", "false"]
            .iter()
            .chain(&NUMBERS)
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
                        scalar.to_owned(),
                        format!("[{scalar}, {scalar}]"),
                        format!("{{\"zz\": {scalar}, \"a\": {scalar}, \"\": 1, \"é\": 2}}"),
                    ] {
                        let Ok(value) = parse_strict_ordered(text.as_bytes()) else {
                            continue;
                        };
                        let copied = compiled.validate_exact(&value);
                        assert_eq!(
                            compiled.validate_exact_owned(value),
                            copied,
                            "{schema} {text}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 4000, "{checked}");
    }

    #[test]
    fn members_are_read_in_key_order_whatever_their_arrival() {
        let schema = CompiledSchema::compile(&json!({
            "properties": {"b": {"type": "string"}, "a": {"type": "string"}},
            "additionalProperties": false,
            "propertyNames": {"maxLength": 1},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let value = parse_strict_ordered(br#"{"zz": 1, "b": 2, "yy": 3, "a": 4}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let copied = schema.validate_exact(&value);
        let failures = schema.validate_exact_owned(value).err().unwrap_or_default();
        assert_eq!(Err(failures.clone()), copied);
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
