//! Exact number checks where the schema validator would compare through
//! `f64`.
//!
//! The validator sees numbers as `serde_json` parses them: an integer beyond
//! 64 bits, or a decimal with more digits than a double holds, is rounded
//! (`18446744073709551617` reads as `18446744073709551616.0`), so
//! `"maximum": 18446744073709551616` would let it through. The input keeps
//! each number's text ([`PartialValue::Number`]); wherever a number's value is
//! not exactly what the validator sees (a *lossy* number), this pass checks
//! the keywords that reach it again, exactly, on decimal text: `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (draft-04's boolean forms
//! too), `multipleOf` and `type: integer`. A schema bound the schema holds
//! as a double is taken exactly when it has no fraction, else as the
//! shortest decimal that reads back as it (`0.1` is 0.1).
//!
//! It follows `properties`, `additionalProperties`, `items`, `prefixItems`,
//! `additionalItems`, `allOf` and local `$ref`s. A lossy number under any
//! other keyword that applies schemas or compares values (`anyOf`, `oneOf`,
//! `not`, `if`, `enum`, `const`, `patternProperties`, …) fails closed: the
//! call is refused as one that cannot be checked exactly.

use std::cmp::Ordering;

use num_bigint::BigUint;
use serde_json::{Map, Value};

use super::SchemaFailure;
use crate::partial::PartialValue;

/// Powers of ten beyond this are not computed: such a number fails closed.
const MAX_SCALE: u64 = 2_000;
/// `$ref`s followed in one chain.
const MAX_DEPTH: usize = 64;

/// A decimal `(-1)^neg × digits × 10^exp`, `digits` without trailing zeros
/// (zero is `0 × 10^0`, never negative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decimal {
    neg: bool,
    digits: BigUint,
    exp: i64,
}

impl Decimal {
    /// The value of a JSON number's text.
    pub(crate) fn parse(text: &str) -> Option<Decimal> {
        let (neg, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (rest.get(..at)?, rest.get(at + 1..)?),
            None => (rest, "0"),
        };
        let exponent: i64 = exponent
            .strip_prefix('+')
            .unwrap_or(exponent)
            .parse()
            .ok()?;
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let all: String = [int, frac].concat();
        let trimmed = all.trim_end_matches('0');
        let zeros = i64::try_from(all.len() - trimmed.len()).ok()?;
        let frac_len = i64::try_from(frac.len()).ok()?;
        let digits = if trimmed.is_empty() {
            BigUint::ZERO
        } else {
            BigUint::parse_bytes(trimmed.as_bytes(), 10)?
        };
        if digits == BigUint::ZERO {
            return Some(Decimal {
                neg: false,
                digits,
                exp: 0,
            });
        }
        Some(Decimal {
            neg,
            digits,
            exp: exponent.checked_sub(frac_len)?.checked_add(zeros)?,
        })
    }

    /// The value a `serde_json` number holds.
    pub(crate) fn of(n: &serde_json::Number) -> Option<Decimal> {
        if let Some(u) = n.as_u64() {
            return Decimal::parse(&u.to_string());
        }
        if let Some(i) = n.as_i64() {
            return Decimal::parse(&i.to_string());
        }
        // A double with no fraction is taken exactly (a bound written as an
        // integer, `18446744073709551616`, is that integer); another as the
        // shortest decimal that reads back as it (`0.1` is 0.1).
        n.as_f64().filter(|f| f.is_finite()).and_then(|f| {
            if f.fract() == 0.0 {
                Decimal::parse(&format!("{f:.0}"))
            } else {
                Decimal::parse(&format!("{f}"))
            }
        })
    }

    fn is_integer(&self) -> bool {
        self.exp >= 0
    }

    /// Both magnitudes scaled to one exponent, if that stays bounded.
    fn aligned(&self, other: &Decimal) -> Option<(BigUint, BigUint)> {
        let e = self.exp.min(other.exp);
        let up = |d: &Decimal| -> Option<BigUint> {
            let by = u64::try_from(d.exp.checked_sub(e)?).ok()?;
            if by > MAX_SCALE {
                return None;
            }
            let by = u32::try_from(by).ok()?;
            Some(&d.digits * BigUint::from(10u8).pow(by))
        };
        Some((up(self)?, up(other)?))
    }

    /// The exact order, if it can be computed within bounds.
    fn compare(&self, other: &Decimal) -> Option<Ordering> {
        match (self.neg, other.neg) {
            (false, true) => return Some(Ordering::Greater),
            (true, false) => return Some(Ordering::Less),
            _ => {}
        }
        let (a, b) = self.aligned(other)?;
        let magnitude = a.cmp(&b);
        Some(if self.neg {
            magnitude.reverse()
        } else {
            magnitude
        })
    }

    /// Whether `self / m` is an integer, if it can be computed within bounds.
    fn is_multiple_of(&self, m: &Decimal) -> Option<bool> {
        if m.digits == BigUint::ZERO {
            return None;
        }
        let (a, b) = self.aligned(m)?;
        Some((a % b) == BigUint::ZERO)
    }
}

/// Whether a number's text holds another value than `serde_json` reads.
fn lossy(text: &str) -> bool {
    // The usual case, without a parse: a plain number of at most 15 digits
    // is read exactly (a double's shortest form gives back 15 digits).
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.');
    if plain && text.bytes().filter(u8::is_ascii_digit).count() <= 15 {
        return false;
    }
    let exact = Decimal::parse(text);
    let read = text.parse::<serde_json::Number>().ok();
    match (exact, read.as_ref().and_then(Decimal::of)) {
        (Some(a), Some(b)) => a != b,
        _ => true,
    }
}

pub(super) fn has_lossy(value: &PartialValue) -> bool {
    match value {
        PartialValue::Number(t) => lossy(t),
        PartialValue::Array(items) => items.iter().any(has_lossy),
        PartialValue::Object(members) => members.iter().any(|(_, v)| has_lossy(v)),
        PartialValue::Null | PartialValue::Bool(_) | PartialValue::String(_) => false,
    }
}

/// Keywords that apply schemas, or compare values, in ways this pass does not
/// follow: a lossy number under them fails closed.
const UNFOLLOWED: [&str; 15] = [
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "enum",
    "const",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
];

/// Checks the numbers of `value` the validator cannot compare exactly.
///
/// # Errors
/// The first failure: a keyword the number fails, exactly, or one this pass
/// cannot check it under.
pub(crate) fn check(root: &Value, value: &PartialValue) -> Result<(), SchemaFailure> {
    if !has_lossy(value) {
        return Ok(());
    }
    Walk { root }.walk(root, value, "", "", 0)
}

struct Walk<'a> {
    root: &'a Value,
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn fail(at: &str, schema_at: &str, message: String) -> Result<(), SchemaFailure> {
    Err(SchemaFailure {
        instance_path: at.to_owned(),
        schema_path: schema_at.to_owned(),
        message,
    })
}

impl Walk<'_> {
    fn walk(
        &self,
        schema: &Value,
        value: &PartialValue,
        at: &str,
        schema_at: &str,
        depth: usize,
    ) -> Result<(), SchemaFailure> {
        let Value::Object(s) = schema else {
            return Ok(());
        };
        if !has_lossy(value) {
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return fail(
                at,
                schema_at,
                "schema references nest too deep to check a number exactly".to_owned(),
            );
        }
        for key in UNFOLLOWED.iter().chain(&["$recursiveRef"]) {
            if s.contains_key(*key) {
                return fail(
                    at,
                    &format!("{schema_at}/{key}"),
                    format!(
                        "a number beyond what a double holds exactly sits under `{key}`, which \
                         cannot be checked exactly"
                    ),
                );
            }
        }
        if let PartialValue::Number(text) = value {
            self.number(s, text, at, schema_at)?;
        }
        if let Some(Value::String(r)) = s.get("$ref") {
            let target = r.strip_prefix('#').and_then(|p| {
                if p.is_empty() {
                    Some(self.root)
                } else {
                    self.root.pointer(p)
                }
            });
            match target {
                Some(t) => self.walk(t, value, at, &format!("{schema_at}/$ref"), depth + 1)?,
                None => {
                    return fail(
                        at,
                        &format!("{schema_at}/$ref"),
                        format!("a number beyond what a double holds exactly sits under $ref {r:?}, which cannot be followed to check it exactly"),
                    )
                }
            }
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            for (i, sub) in all.iter().enumerate() {
                self.walk(sub, value, at, &format!("{schema_at}/allOf/{i}"), depth + 1)?;
            }
        }
        match value {
            PartialValue::Object(members) => self.members(s, members, at, schema_at, depth),
            PartialValue::Array(items) => self.items(s, items, at, schema_at, depth),
            _ => Ok(()),
        }
    }

    fn members(
        &self,
        s: &Map<String, Value>,
        members: &[(String, PartialValue)],
        at: &str,
        schema_at: &str,
        depth: usize,
    ) -> Result<(), SchemaFailure> {
        let props = s.get("properties").and_then(Value::as_object);
        for (k, v) in members {
            let here = format!("{at}/{}", escape(k));
            match props.and_then(|p| p.get(k)) {
                Some(sub) => self.walk(
                    sub,
                    v,
                    &here,
                    &format!("{schema_at}/properties/{}", escape(k)),
                    depth + 1,
                )?,
                None => {
                    if let Some(sub) = s.get("additionalProperties") {
                        self.walk(
                            sub,
                            v,
                            &here,
                            &format!("{schema_at}/additionalProperties"),
                            depth + 1,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    fn items(
        &self,
        s: &Map<String, Value>,
        items: &[PartialValue],
        at: &str,
        schema_at: &str,
        depth: usize,
    ) -> Result<(), SchemaFailure> {
        // 2020-12: `prefixItems` then `items`; before: `items` as an array
        // (a tuple) then `additionalItems`, or `items` for every element.
        let (tuple, tuple_at, rest, rest_at) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(t)), rest) => (Some(t), "prefixItems", rest, "items"),
            (_, Some(Value::Array(t))) => (
                Some(t),
                "items",
                s.get("additionalItems"),
                "additionalItems",
            ),
            (_, rest) => (None, "", rest, "items"),
        };
        for (i, v) in items.iter().enumerate() {
            let here = format!("{at}/{i}");
            match tuple.and_then(|t| t.get(i)) {
                Some(sub) => {
                    self.walk(
                        sub,
                        v,
                        &here,
                        &format!("{schema_at}/{tuple_at}/{i}"),
                        depth + 1,
                    )?;
                }
                None => {
                    if let Some(sub) = rest {
                        self.walk(sub, v, &here, &format!("{schema_at}/{rest_at}"), depth + 1)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The numeric keywords of `s`, exactly, for a number whose text is `text`.
    fn number(
        &self,
        s: &Map<String, Value>,
        text: &str,
        at: &str,
        schema_at: &str,
    ) -> Result<(), SchemaFailure> {
        if !lossy(text) {
            return Ok(());
        }
        let Some(n) = Decimal::parse(text) else {
            return fail(
                at,
                schema_at,
                format!("{text} is not a number that can be checked"),
            );
        };
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.contains(&"integer") && !types.contains(&"number") && !n.is_integer() {
            return fail(
                at,
                &format!("{schema_at}/type"),
                format!("{text} is not of type \"integer\" (compared exactly)"),
            );
        }
        let bound = |key: &str| -> Option<(Decimal, &serde_json::Number)> {
            let b = s.get(key).and_then(Value::as_number)?;
            Some((Decimal::of(b)?, b))
        };
        let draft4 = |key: &str| s.get(key) == Some(&Value::Bool(true));
        let checks: [(&str, Ordering, bool); 4] = [
            ("minimum", Ordering::Less, draft4("exclusiveMinimum")),
            ("maximum", Ordering::Greater, draft4("exclusiveMaximum")),
            ("exclusiveMinimum", Ordering::Less, true),
            ("exclusiveMaximum", Ordering::Greater, true),
        ];
        for (key, beyond, exclusive) in checks {
            let Some((b, shown)) = bound(key) else {
                continue;
            };
            let Some(order) = n.compare(&b) else {
                return fail(
                    at,
                    &format!("{schema_at}/{key}"),
                    format!("{text} cannot be compared with {shown} exactly within bounds"),
                );
            };
            if order == beyond || (exclusive && order == Ordering::Equal) {
                let how = match (beyond, exclusive) {
                    (Ordering::Less, false) => "less than the minimum of",
                    (Ordering::Less, true) => "not greater than the exclusive minimum of",
                    (_, false) => "greater than the maximum of",
                    (_, true) => "not less than the exclusive maximum of",
                };
                return fail(
                    at,
                    &format!("{schema_at}/{key}"),
                    format!("{text} is {how} {shown} (compared exactly)"),
                );
            }
        }
        if let Some((m, shown)) = bound("multipleOf") {
            match n.is_multiple_of(&m) {
                Some(true) => {}
                Some(false) => {
                    return fail(
                        at,
                        &format!("{schema_at}/multipleOf"),
                        format!("{text} is not a multiple of {shown} (compared exactly)"),
                    )
                }
                None => {
                    return fail(
                        at,
                        &format!("{schema_at}/multipleOf"),
                        format!("{text} cannot be divided by {shown} exactly within bounds"),
                    )
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partial::PartialJson;
    use serde_json::json;

    fn checked(schema: &Value, input: &str) -> Result<(), String> {
        let mut parser = PartialJson::new_strict(crate::validate::MAX_DEPTH);
        parser
            .feed(input.as_bytes())
            .and_then(|()| parser.finish())
            .map_err(|e| e.to_string())?;
        let value = parser.take_complete().ok_or("no value")?;
        check(schema, &value).map_err(|f| f.message)
    }

    #[test]
    fn decimals_compare_exactly() {
        let d = |t: &str| Decimal::parse(t).expect("number");
        assert_eq!(d("1.50"), d("15e-1"));
        assert_eq!(d("-0"), d("0.000"));
        assert_eq!(
            d("18446744073709551617").compare(&d("18446744073709551616")),
            Some(Ordering::Greater)
        );
        assert_eq!(d("-2").compare(&d("-10")), Some(Ordering::Greater));
        assert_eq!(d("0.3").is_multiple_of(&d("0.1")), Some(true));
        assert_eq!(d("9007199254740993").is_multiple_of(&d("2")), Some(false));
        assert!(!d("1e3").is_integer() || d("1e3") == d("1000"));
        assert!(d("1.0").is_integer() && !d("1.5").is_integer());
        assert!(lossy("18446744073709551617") && lossy("9007199254740993.5"));
        assert!(!lossy("0.1") && !lossy("18446744073709551615") && !lossy("1e2"));
        assert!(!lossy("0.123456789012345") && lossy("0.12345678901234567891"));
        assert!(!lossy("9007199254740993") && lossy("9007199254740993.0"));
    }

    #[test]
    fn a_number_beyond_64_bits_fails_its_maximum() {
        let schema = json!({"type": "object", "properties": {"n": {"maximum": 18_446_744_073_709_551_616.0_f64}}});
        let err = checked(&schema, r#"{"n": 18446744073709551617}"#).expect_err("over");
        assert!(err.contains("greater than the maximum"), "{err}");
        // The neighbours: the bound itself, and exactly representable values.
        assert_eq!(checked(&schema, r#"{"n": 18446744073709551616}"#), Ok(()));
        assert_eq!(checked(&schema, r#"{"n": 18446744073709551615}"#), Ok(()));
    }

    #[test]
    fn every_numeric_keyword_is_exact() {
        let big = "18446744073709551617";
        let bound = 18_446_744_073_709_551_616.0_f64;
        for (schema, input, ok) in [
            (json!({"exclusiveMaximum": bound}), big, false),
            (json!({"exclusiveMinimum": bound}), big, true),
            (json!({"minimum": bound}), big, true),
            (json!({"minimum": bound}), "-18446744073709551617", false),
            (
                json!({"maximum": bound, "exclusiveMaximum": true}),
                "18446744073709551616.0000000001",
                false,
            ),
            (json!({"multipleOf": 2}), big, false),
            (json!({"multipleOf": 2}), "18446744073709551618", true),
            (json!({"type": "integer"}), "9007199254740993.5", false),
            (json!({"type": "integer"}), "9007199254740993.0", true),
            (
                json!({"type": ["integer", "number"]}),
                "9007199254740993.5",
                true,
            ),
        ] {
            let wrapped = json!({"properties": {"n": schema}});
            let got = checked(&wrapped, &format!("{{\"n\": {input}}}"));
            assert_eq!(got.is_ok(), ok, "{schema} {input}: {got:?}");
        }
    }

    #[test]
    fn it_follows_refs_items_and_all_of_and_fails_closed_elsewhere() {
        let schema = json!({
            "$defs": {"small": {"maximum": 10}},
            "properties": {
                "list": {"items": {"$ref": "#/$defs/small"}},
                "both": {"allOf": [{"minimum": 0}, {"maximum": 10}]},
                "either": {"anyOf": [{"maximum": 10}, {"type": "string"}]},
            },
            "additionalProperties": {"maximum": 10},
        });
        assert!(checked(&schema, r#"{"list": [1, 18446744073709551617]}"#).is_err());
        assert!(checked(&schema, r#"{"both": 18446744073709551617}"#).is_err());
        assert!(checked(&schema, r#"{"other": 18446744073709551617}"#).is_err());
        let err = checked(&schema, r#"{"either": 18446744073709551617}"#).expect_err("closed");
        assert!(err.contains("anyOf"), "{err}");
        // Exactly representable numbers are the validator's alone.
        assert_eq!(checked(&schema, r#"{"either": 5, "list": [1, 2]}"#), Ok(()));
    }
}
