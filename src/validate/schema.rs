//! JSON Schema validation of tool arguments, compiled once per schema.

use std::fmt;

use jsonschema::{Draft, Retrieve, Uri};
use serde_json::Value;

use super::sorted::{Sorted, SortedNode};
use crate::partial::PartialValue;

/// Longest failure message kept; the rest is cut (messages quote the
/// offending instance, which may be the whole input).
const MAX_MESSAGE_CHARS: usize = 300;

/// A tool's JSON Schema, compiled once and reused for every call.
///
/// The draft is picked by `$schema` (draft-04, -06, -07, 2019-09, 2020-12);
/// without one it is 2020-12. `format` is asserted where the draft's default
/// is to assert it (drafts 4 to 7) and only an annotation in 2019-09 and
/// 2020-12, as the specifications say.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    validator: jsonschema::Validator,
    draft: Draft,
    /// The schema as given, for the exact number checks (`exact.rs`).
    schema: std::sync::Arc<Value>,
    /// The same schema compiled for arguments read in place (`sorted.rs`), on
    /// the first check that wants it (`None`: it did not compile, and the
    /// check takes the strict parse).
    in_place: std::sync::Arc<std::sync::OnceLock<Option<jsonschema::Validator<Sorted>>>>,
}

/// A schema that cannot be compiled: invalid for its draft, an unknown
/// `$schema`, or a `$ref` that is not inside the schema itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaCompileError {
    /// What was wrong, for a human.
    pub message: String,
}

impl fmt::Display for SchemaCompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid JSON Schema: {}", self.message)
    }
}

impl std::error::Error for SchemaCompileError {}

/// One way a value fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFailure {
    /// JSON pointer to the failing part of the value (`""` for the root,
    /// `/city`, `/days/2`).
    pub instance_path: String,
    /// JSON pointer to the schema keyword that failed (`/properties/city/type`).
    pub schema_path: String,
    /// What was wrong, for a human.
    pub message: String,
}

impl fmt::Display for SchemaFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.instance_path.is_empty() {
            "(root)"
        } else {
            &self.instance_path
        };
        write!(f, "{at}: {} (schema {})", self.message, self.schema_path)
    }
}

/// Refuses every external resource: a schema is checked offline, as given.
struct RefuseExternal;

impl Retrieve for RefuseExternal {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "refusing to fetch {uri}: toolstitch never resolves references over the \
             network or from files; put the referenced schema under $defs and use a \
             local \"$ref\": \"#/$defs/…\""
        )
        .into())
    }
}

fn draft_name(draft: Draft) -> &'static str {
    match draft {
        Draft::Draft4 => "draft-04",
        Draft::Draft6 => "draft-06",
        Draft::Draft7 => "draft-07",
        Draft::Draft201909 => "2019-09",
        Draft::Draft202012 => "2020-12",
        _ => "unknown",
    }
}

fn clip(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push('…');
    }
    message
}

impl CompiledSchema {
    /// Compiles `schema` (an object or a boolean).
    ///
    /// # Errors
    ///
    /// [`SchemaCompileError`] when the schema is invalid for its draft, names
    /// a `$schema` that is not a known draft, or refers (`$ref`) to anything
    /// outside itself; nothing is ever fetched.
    pub fn compile(schema: &Value) -> Result<Self, SchemaCompileError> {
        let draft = Draft::Draft202012.detect(schema);
        if draft_name(draft) == "unknown" {
            let named = schema.get("$schema").map(ToString::to_string);
            return Err(SchemaCompileError {
                message: format!(
                    "unsupported $schema {}: known drafts are draft-04, draft-06, draft-07, \
                     2019-09 and 2020-12 (json-schema.org meta-schema URIs)",
                    named.unwrap_or_default()
                ),
            });
        }
        let validator = jsonschema::options()
            .with_retriever(RefuseExternal)
            .build(schema)
            .map_err(|e| SchemaCompileError {
                message: clip(e.to_string()),
            })?;
        Ok(Self {
            validator,
            draft,
            schema: std::sync::Arc::new(schema.clone()),
            in_place: std::sync::Arc::default(),
        })
    }

    /// The draft in force: `draft-04`, `draft-06`, `draft-07`, `2019-09` or
    /// `2020-12`.
    #[must_use]
    pub fn draft(&self) -> &'static str {
        draft_name(self.draft)
    }

    /// Whether `value` satisfies the schema (stops at the first failure).
    #[must_use]
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Checks a parsed input that keeps each number's text: the schema, then
    /// exactly where the validator would compare a number through `f64`
    /// (an integer beyond 64 bits, a decimal a double does not hold: see
    /// `exact.rs`).
    ///
    /// # Errors
    ///
    /// Every failure of the schema, or else the first exact one.
    pub fn validate_exact(&self, value: &PartialValue) -> Result<(), Vec<SchemaFailure>> {
        self.validate(&value.to_json())?;
        super::exact::check(&self.schema, value).map_err(|f| vec![f])
    }

    /// [`validate_exact`](Self::validate_exact) for a value no longer needed:
    /// unless a number in it needs the exact pass, it is moved into the one the
    /// validator reads (its strings and keys are not copied).
    ///
    /// # Errors
    ///
    /// As [`validate_exact`](Self::validate_exact).
    pub fn validate_exact_owned(&self, value: PartialValue) -> Result<(), Vec<SchemaFailure>> {
        if super::exact::has_lossy(&value) {
            return self.validate_exact(&value);
        }
        self.validate(&value.into_json())
    }

    /// The check of a call's arguments (`input`, as received) without the
    /// strict parse, when it can be done so: `serde_json` parses the input
    /// once into what the validator reads in place (`sorted.rs`). `None` when
    /// the input is not one the strict parse takes as it is, or is not an
    /// object, or has a number with an exponent or more than 15 digits: then
    /// the strict parse ([`super::parse_strict_ordered`]) and
    /// [`validate_exact_owned`](Self::validate_exact_owned) give the verdict and
    /// name the error. Otherwise their verdict: the same failures in the same
    /// order.
    #[must_use]
    pub fn check_arguments(&self, input: &[u8]) -> Option<Result<(), Vec<SchemaFailure>>> {
        let args = super::sorted::parse(input)?;
        let in_place = self.in_place()?;
        Some(failures(in_place.iter_errors(SortedNode::Value(&args))))
    }

    /// The validator of arguments read in place, compiled on first use.
    fn in_place(&self) -> Option<&jsonschema::Validator<Sorted>> {
        self.in_place
            .get_or_init(|| {
                jsonschema::options_for::<Sorted>()
                    .with_retriever(RefuseExternal)
                    .build(&self.schema)
                    .ok()
            })
            .as_ref()
    }

    /// Checks `value` against the schema.
    ///
    /// # Errors
    ///
    /// Every failure, each with its instance and schema paths.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<SchemaFailure>> {
        failures(self.validator.iter_errors(value))
    }
}

/// The failures of one validation, in the validator's order.
fn failures(errors: jsonschema::ErrorIterator<'_>) -> Result<(), Vec<SchemaFailure>> {
    let failures: Vec<SchemaFailure> = errors
        .map(|e| SchemaFailure {
            instance_path: e.instance_path().as_str().to_owned(),
            schema_path: e.schema_path().as_str().to_owned(),
            message: clip(e.to_string()),
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn failures(schema: &Value, value: &Value) -> Result<Vec<SchemaFailure>, SchemaCompileError> {
        Ok(CompiledSchema::compile(schema)?
            .validate(value)
            .err()
            .unwrap_or_default())
    }

    fn paths(failures: &[SchemaFailure]) -> Vec<&str> {
        let mut paths: Vec<&str> = failures.iter().map(|f| f.instance_path.as_str()).collect();
        paths.sort_unstable();
        paths
    }

    fn weather() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                "unit": {"enum": ["c", "f"]}
            },
            "required": ["city", "unit"],
            "additionalProperties": false
        })
    }

    #[test]
    fn valid_value_passes() -> TestResult {
        let schema = CompiledSchema::compile(&weather())?;
        let value = json!({"city": "Paris", "days": [1, 2], "unit": "c"});
        assert_eq!(schema.validate(&value), Ok(()));
        assert!(schema.is_valid(&value));
        assert_eq!(schema.draft(), "2020-12");
        Ok(())
    }

    #[test]
    fn all_failures_are_returned_with_their_paths() -> TestResult {
        let value = json!({"city": 7, "days": [1, 0, "x"], "extra": true});
        let found = failures(&weather(), &value)?;
        assert_eq!(
            paths(&found),
            vec!["", "", "/city", "/days/1", "/days/2"],
            "{found:#?}"
        );
        let city = found.iter().find(|f| f.instance_path == "/city");
        assert_eq!(
            city.map(|f| f.schema_path.as_str()),
            Some("/properties/city/type")
        );
        let messages: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        assert!(messages.iter().any(|m| m.contains("unit")), "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("extra")), "{messages:?}");
        let shown = found.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert!(shown.iter().any(|s| s.starts_with("(root): ")), "{shown:?}");
        Ok(())
    }

    #[test]
    fn compiled_once_reused_many_times() -> TestResult {
        let schema = CompiledSchema::compile(&weather())?;
        for i in 0..100 {
            let ok = json!({"city": format!("c{i}"), "unit": "f"});
            assert!(schema.validate(&ok).is_ok());
            assert!(schema.validate(&json!({"unit": "k"})).is_err());
        }
        Ok(())
    }

    #[test]
    fn draft_07_tuple_items_versus_2020_12_prefix_items() -> TestResult {
        // draft-07: `items` as an array is the tuple form; `prefixItems` is
        // an unknown keyword and ignored.
        let d7 = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array",
            "items": [{"type": "string"}, {"type": "integer"}],
            "additionalItems": false
        }))?;
        assert_eq!(d7.draft(), "draft-07");
        assert!(d7.is_valid(&json!(["a", 1])));
        let found = d7.validate(&json!([1, "a", 3])).err().unwrap_or_default();
        assert_eq!(paths(&found), vec!["", "/0", "/1"], "{found:#?}");

        let d7_prefix = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "prefixItems": [{"type": "string"}]
        }))?;
        assert!(d7_prefix.is_valid(&json!([1])));

        // 2020-12: `prefixItems` is the tuple form, `items` the rest.
        let d2020 = CompiledSchema::compile(&json!({
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "items": false
        }))?;
        assert!(d2020.is_valid(&json!(["a", 1])));
        let found = d2020
            .validate(&json!([1, "a", 3]))
            .err()
            .unwrap_or_default();
        assert_eq!(paths(&found), vec!["/0", "/1", "/2"], "{found:#?}");

        // ...and the array form of `items` is not a valid 2020-12 schema.
        let err = CompiledSchema::compile(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "items": [{"type": "string"}]
        }))
        .err();
        assert!(err.is_some());
        Ok(())
    }

    #[test]
    fn definitions_and_defs_resolve_in_their_drafts() -> TestResult {
        let d7 = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"pos": {"type": "integer", "minimum": 0}},
            "properties": {"n": {"$ref": "#/definitions/pos"}}
        }))?;
        assert!(d7.is_valid(&json!({"n": 3})));
        let found = failures(
            &json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": {"pos": {"type": "integer", "minimum": 0}},
                "properties": {"n": {"$ref": "#/definitions/pos"}}
            }),
            &json!({"n": -1}),
        )?;
        assert_eq!(paths(&found), vec!["/n"]);

        let d2020 = CompiledSchema::compile(&json!({
            "$defs": {"pos": {"type": "integer", "minimum": 0}},
            "properties": {"n": {"$ref": "#/$defs/pos"}, "m": {"$ref": "#/$defs/pos"}}
        }))?;
        let found = d2020
            .validate(&json!({"n": -1, "m": "x"}))
            .err()
            .unwrap_or_default();
        assert_eq!(paths(&found), vec!["/m", "/n"]);
        Ok(())
    }

    #[test]
    fn dependencies_versus_dependent_required() -> TestResult {
        let value = json!({"card": "1234"});
        let d7 = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "dependencies": {"card": ["billing"]}
        }))?;
        assert!(!d7.is_valid(&value));
        let d2020 = CompiledSchema::compile(&json!({"dependentRequired": {"card": ["billing"]}}))?;
        assert!(!d2020.is_valid(&value));
        // draft-07 does not know the newer keyword. (2020-12 still honours
        // `dependencies`, as its meta-schema keeps it for compatibility.)
        let d7_new = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "dependentRequired": {"card": ["billing"]}
        }))?;
        assert!(d7_new.is_valid(&value));
        Ok(())
    }

    #[test]
    fn remote_ref_is_refused_without_fetching() {
        for schema in [
            json!({"$ref": "https://example.com/schemas/city.json"}),
            json!({"properties": {"a": {"$ref": "http://example.com/a.json#/x"}}}),
            json!({"$id": "https://example.com/root.json", "$ref": "other.json"}),
            json!({"$ref": "file:///etc/passwd"}),
        ] {
            let err = CompiledSchema::compile(&schema).err();
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(message.contains("refusing to fetch"), "{schema}: {message}");
        }
    }

    #[test]
    fn unknown_meta_schema_is_refused() {
        let err = CompiledSchema::compile(&json!({"$schema": "https://example.com/my-meta"})).err();
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("unsupported $schema"), "{message}");
    }

    #[test]
    fn invalid_schema_is_a_compile_error() {
        assert!(CompiledSchema::compile(&json!({"type": "strin"})).is_err());
        assert!(CompiledSchema::compile(&json!({"minimum": "3"})).is_err());
        assert!(CompiledSchema::compile(&json!(42)).is_err());
    }

    #[test]
    fn boolean_and_empty_schemas() -> TestResult {
        assert!(CompiledSchema::compile(&json!(true))?.is_valid(&json!({"x": 1})));
        assert!(!CompiledSchema::compile(&json!(false))?.is_valid(&json!({})));
        assert!(CompiledSchema::compile(&json!({}))?.is_valid(&json!([1])));
        Ok(())
    }

    #[test]
    fn long_messages_are_clipped() -> TestResult {
        let big = json!({"blob": "x".repeat(10_000)});
        let found = failures(&json!({"type": "array"}), &big)?;
        assert_eq!(found.len(), 1);
        assert!(found
            .iter()
            .all(|f| f.message.chars().count() <= MAX_MESSAGE_CHARS + 1));
        Ok(())
    }

    #[test]
    fn numbers_beyond_a_double_are_compared_exactly() -> TestResult {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 18_446_744_073_709_551_616.0_f64}}
        }))?;
        let parse = |text: &str| {
            let mut p = crate::partial::PartialJson::new_strict(crate::validate::MAX_DEPTH);
            p.feed(text.as_bytes()).and_then(|()| p.finish()).ok();
            p.take_complete().unwrap_or(PartialValue::Null)
        };
        let over = parse(r#"{"n": 18446744073709551617}"#);
        // Through f64 the validator sees the bound itself.
        assert!(schema.validate(&over.to_json()).is_ok());
        let failures = schema.validate_exact(&over).err().unwrap_or_default();
        assert_eq!(paths(&failures), ["/n"]);
        assert!(failures[0].message.contains("maximum"), "{failures:?}");
        assert!(schema
            .validate_exact(&parse(r#"{"n": 18446744073709551616}"#))
            .is_ok());
        // The owned form takes the exact pass too, and moves the rest.
        let failures = schema.validate_exact_owned(over).err().unwrap_or_default();
        assert_eq!(paths(&failures), ["/n"]);
        Ok(())
    }

    #[test]
    fn the_owned_check_gives_the_same_verdicts() -> TestResult {
        let schema = CompiledSchema::compile(&weather())?;
        for text in [
            r#"{"city": "Paris", "unit": "c", "days": [1, 2]}"#,
            r#"{"city": "Paris", "unit": "k", "days": [0, 2.5], "x": null}"#,
            r#"{"unit": "f", "city": ["not", "a", "string"]}"#,
            r#"{"city": "é\"x", "unit": "c", "days": [12345678901234567890]}"#,
        ] {
            let mut p = crate::partial::PartialJson::new_strict(crate::validate::MAX_DEPTH);
            p.feed(text.as_bytes())?;
            p.finish()?;
            let value = p.take_complete().ok_or("no value")?;
            assert_eq!(value.clone().into_json(), value.to_json(), "{text}");
            let borrowed = schema.validate_exact(&value).err().unwrap_or_default();
            let owned = schema.validate_exact_owned(value).err().unwrap_or_default();
            assert_eq!(paths(&owned), paths(&borrowed), "{text}");
        }
        Ok(())
    }

    #[test]
    fn compiled_schema_is_send_and_sync() {
        fn check<T: Send + Sync + Clone>() {}
        check::<CompiledSchema>();
    }
}
