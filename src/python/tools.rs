//! The tool-loop boundary: partial JSON for live display, and the strict parse
//! and schema check that come before a tool is executed.
//!
//! Values cross into Python as plain `dict` / `list` / `str` / `int` / `float` /
//! `bool` / `None`, with object members in the order they arrived. A number is
//! an `int` when its text is integral (no fraction, no exponent; any size) and a
//! `float` otherwise.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

use super::errors::{error, error_instance, Kind};
use super::live::{to_py, LiveValue, Numbers};
use super::{Locked, Reentered};
use crate::partial::{self, PartialOptions, PartialValue};
use crate::validate::{self, CompiledSchema, InputError, SchemaFailure};

/// Inputs at least this long are parsed with the GIL released; shorter ones
/// (the usual streamed fragment) are not worth the hand-over.
const DETACH_AT: usize = 64 * 1024;

/// Runs `f` with the GIL released when `len` is large.
fn maybe_detach<T: Send>(py: Python<'_>, len: usize, f: impl FnOnce() -> T + Send) -> T {
    if len >= DETACH_AT {
        py.detach(f)
    } else {
        f()
    }
}

/// Runs `f` on the UTF-8 bytes of a `str` or bytes-like argument.
fn with_bytes<T>(data: &Bound<'_, PyAny>, what: &str, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    if let Ok(s) = data.cast::<PyString>() {
        // A str holding a lone surrogate has no UTF-8 form; its bytes with
        // `surrogatepass` are invalid UTF-8, which the parsers report with an offset.
        return match s.to_str() {
            Ok(text) => Ok(f(text.as_bytes())),
            Err(_) => {
                let encoded = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
                let bytes = encoded.cast::<PyBytes>()?;
                Ok(f(bytes.as_bytes()))
            }
        };
    }
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(b) = data.extract::<Vec<u8>>() {
        return Ok(f(&b));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be str or bytes, not {}",
        data.get_type().name()?
    )))
}

/// Why a Python value is not JSON.
enum NotJson {
    /// A value of a type JSON has no counterpart for (raised as `TypeError`).
    Type(String),
    /// A JSON-typed value that cannot be carried: nested deeper than the bound,
    /// a float that is NaN or infinite, a key that is not valid text.
    Value(String),
}

impl NotJson {
    fn message(&self) -> &str {
        match self {
            NotJson::Type(m) | NotJson::Value(m) => m,
        }
    }

    /// Raised as `TypeError`, or as a `kind` toolstitch error.
    fn into_py(self, py: Python<'_>, kind: Kind, prefix: &str) -> PyErr {
        match self {
            NotJson::Type(m) => PyTypeError::new_err(format!("{prefix}{m}")),
            NotJson::Value(m) => error(py, kind, format!("{prefix}{m}")),
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// Converts a Python value (a JSON Schema, tool arguments) to JSON. Containers
/// nested deeper than [`validate::MAX_DEPTH`] are refused before recursing
/// further. An int beyond 64 bits becomes the nearest float, as `serde_json`
/// reads such a literal (and as the schema check sees parsed input).
fn py_to_json(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, NotJson> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        if let Ok(n) = i.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = i.extract::<u64>() {
            return Ok(Value::from(n));
        }
        // int.__float__ rounds correctly and raises OverflowError past f64.
        let f = i
            .call_method0("__float__")
            .and_then(|f| f.extract::<f64>())
            .ok()
            .and_then(serde_json::Number::from_f64);
        return f.map(Value::Number).ok_or_else(|| {
            NotJson::Value(
                "an integer is too large to be a JSON number (beyond the float range)".to_owned(),
            )
        });
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let f = f.value();
        return serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| NotJson::Value(format!("{f} is not a JSON number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s
            .to_str()
            .map(|s| Value::String(s.to_owned()))
            .map_err(|_| {
                NotJson::Value("a string is not valid Unicode (a lone surrogate)".to_owned())
            });
    }
    let is_dict = obj.cast::<PyDict>().is_ok();
    if !is_dict && obj.cast::<PyList>().is_err() && obj.cast::<PyTuple>().is_err() {
        return Err(NotJson::Type(format!(
            "{} is not a JSON value (use dict, list, str, int, float, bool or None)",
            type_name(obj)
        )));
    }
    if depth >= validate::MAX_DEPTH {
        return Err(NotJson::Value(format!(
            "the value nests deeper than {} levels",
            validate::MAX_DEPTH
        )));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                NotJson::Type(format!("object keys must be str, not {}", type_name(&k)))
            })?;
            let key = key.to_str().map_err(|_| {
                NotJson::Value("an object key is not valid Unicode (a lone surrogate)".to_owned())
            })?;
            map.insert(key.to_owned(), py_to_json(&v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    let iter = obj.try_iter().map_err(|e| NotJson::Type(e.to_string()))?;
    let mut items = Vec::new();
    for item in iter {
        let item = item.map_err(|e| NotJson::Type(e.to_string()))?;
        items.push(py_to_json(&item, depth + 1)?);
    }
    Ok(Value::Array(items))
}

// ------------------------------------------------------------------- errors

fn partial_error(py: Python<'_>, e: &partial::Error) -> PyErr {
    match e {
        partial::Error::Limit { .. } => error(py, Kind::Limit, e.to_string()),
        partial::Error::Syntax { offset, .. } => {
            error_instance(py, Kind::ToolInput, (e.to_string(), *offset), None)
        }
    }
}

/// `"tool call 'id' (name): "`, or nothing when neither is known.
fn call_prefix(call_id: &str, tool_name: &str) -> String {
    match (call_id.is_empty(), tool_name.is_empty()) {
        (true, true) => String::new(),
        (true, false) => format!("tool call ({tool_name}): "),
        (false, true) => format!("tool call '{call_id}': "),
        (false, false) => format!("tool call '{call_id}' ({tool_name}): "),
    }
}

fn call_kwargs<'py>(py: Python<'py>, call_id: &str, tool_name: &str) -> Option<Bound<'py, PyDict>> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("call_id", call_id).ok()?;
    kwargs.set_item("tool_name", tool_name).ok()?;
    Some(kwargs)
}

fn input_error(py: Python<'_>, e: &InputError, call_id: &str, tool_name: &str) -> PyErr {
    let message = format!("{}{e}", call_prefix(call_id, tool_name));
    error_instance(
        py,
        Kind::ToolInput,
        (message, e.offset),
        call_kwargs(py, call_id, tool_name).as_ref(),
    )
}

fn schema_error(
    py: Python<'_>,
    failures: &[SchemaFailure],
    call_id: &str,
    tool_name: &str,
) -> PyErr {
    let listed: Vec<String> = failures
        .iter()
        .map(|f| {
            let at = if f.instance_path.is_empty() {
                "(root)"
            } else {
                &f.instance_path
            };
            format!("{at}: {}", f.message)
        })
        .collect();
    let message = format!(
        "{}arguments do not match the tool's schema ({} failure{}): {}",
        call_prefix(call_id, tool_name),
        failures.len(),
        if failures.len() == 1 { "" } else { "s" },
        listed.join("; ")
    );
    let pairs: Vec<(String, String)> = failures
        .iter()
        .map(|f| (f.instance_path.clone(), f.message.clone()))
        .collect();
    error_instance(
        py,
        Kind::ToolSchema,
        (message, pairs),
        call_kwargs(py, call_id, tool_name).as_ref(),
    )
}

// ---------------------------------------------------------------- strict parse

/// Parses a completed tool call's input strictly: empty input is `{}`;
/// duplicate keys, anything after the value and invalid UTF-8 are errors.
#[pyfunction]
#[pyo3(name = "_parse_strict")]
fn parse_strict<'py>(text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = text.py();
    let parsed = with_bytes(text, "input", |b| {
        maybe_detach(py, b.len(), || validate::parse_strict_ordered(b))
    })?;
    let value = parsed.map_err(|e| input_error(py, &e, "", ""))?;
    to_py(py, &value, Numbers::Strict)
}

// ------------------------------------------------------------ compiled schema

/// A JSON Schema compiled once, checked many times (safe to share between threads).
#[pyclass(module = "toolstitch", name = "_CompiledSchema", frozen)]
pub struct PyCompiledSchema {
    schema: CompiledSchema,
}

#[pymethods]
impl PyCompiledSchema {
    #[new]
    fn new(schema: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = schema.py();
        let value = py_to_json(schema, 0).map_err(|e| {
            error(
                py,
                Kind::ToolDefinition,
                format!("the schema is not JSON: {}", e.message()),
            )
        })?;
        let schema = CompiledSchema::compile(&value)
            .map_err(|e| error(py, Kind::ToolDefinition, e.to_string()))?;
        Ok(Self { schema })
    }

    /// The draft the schema was compiled for (`"2020-12"` unless `$schema` names another).
    #[getter]
    fn draft(&self) -> &'static str {
        self.schema.draft()
    }

    /// Checks an already-parsed Python value; raises `ToolSchemaError` listing every failure.
    #[pyo3(signature = (value, *, call_id="", tool_name=""))]
    fn validate(&self, value: &Bound<'_, PyAny>, call_id: &str, tool_name: &str) -> PyResult<()> {
        let py = value.py();
        let json = py_to_json(value, 0).map_err(|e| {
            e.into_py(
                py,
                Kind::ToolSchema,
                &format!(
                    "{}arguments cannot be checked: ",
                    call_prefix(call_id, tool_name)
                ),
            )
        })?;
        self.schema
            .validate(&json)
            .map_err(|f| schema_error(py, &f, call_id, tool_name))
    }

    /// Strictly parses a completed call's raw input, requires a JSON object
    /// and checks it: returns the arguments, or raises `ToolInputError` /
    /// `ToolSchemaError` naming the call.
    #[pyo3(signature = (input, *, call_id="", tool_name=""))]
    fn parse_and_validate<'py>(
        &self,
        input: &Bound<'py, PyAny>,
        call_id: &str,
        tool_name: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = input.py();
        let checked = with_bytes(input, "input", |b| {
            maybe_detach(py, b.len(), || self.check(b))
        })?;
        match checked {
            Ok(value) => to_py(py, &value, Numbers::Strict).map_err(|e| {
                // The only error is an integer beyond Python's int() bound (a
                // backstop: the strict parser refuses such numbers first).
                if e.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
                    let message = format!("{}{}", call_prefix(call_id, tool_name), e.value(py));
                    error_instance(
                        py,
                        Kind::ToolInput,
                        (message, 0usize),
                        call_kwargs(py, call_id, tool_name).as_ref(),
                    )
                } else {
                    e
                }
            }),
            Err(Rejected::Input(e)) => Err(input_error(py, &e, call_id, tool_name)),
            Err(Rejected::Schema(f)) => Err(schema_error(py, &f, call_id, tool_name)),
        }
    }

    /// `parse_and_validate` without the arguments: the same checks and errors,
    /// and no Python value built (the guard's check wants only the verdict).
    #[pyo3(signature = (input, *, call_id="", tool_name=""))]
    fn parse_and_check(
        &self,
        input: &Bound<'_, PyAny>,
        call_id: &str,
        tool_name: &str,
    ) -> PyResult<()> {
        let py = input.py();
        let checked = with_bytes(input, "input", |b| {
            maybe_detach(py, b.len(), || self.check_only(b))
        })?;
        match checked {
            Ok(()) => Ok(()),
            Err(Rejected::Input(e)) => Err(input_error(py, &e, call_id, tool_name)),
            Err(Rejected::Schema(f)) => Err(schema_error(py, &f, call_id, tool_name)),
        }
    }
}

/// Why a call's input was refused.
enum Rejected {
    Input(InputError),
    Schema(Vec<SchemaFailure>),
}

impl PyCompiledSchema {
    /// Strict parse, the arguments-are-an-object rule, then the schema.
    fn check(&self, input: &[u8]) -> Result<PartialValue, Rejected> {
        let value = parsed_object(input)?;
        self.schema
            .validate_exact(&value)
            .map_err(Rejected::Schema)?;
        Ok(value)
    }

    /// [`check`](Self::check) when the value is not wanted: the same verdicts
    /// and errors, the arguments read in place where they can be
    /// (`CompiledSchema::check_arguments`), else the strict parse moved into
    /// the value the validator reads.
    fn check_only(&self, input: &[u8]) -> Result<(), Rejected> {
        if let Some(verdict) = self.schema.check_arguments(input) {
            return verdict.map_err(Rejected::Schema);
        }
        let value = parsed_object(input)?;
        self.schema
            .validate_exact_owned(value)
            .map_err(Rejected::Schema)
    }
}

/// A call's input parsed strictly, which must be a JSON object.
fn parsed_object(input: &[u8]) -> Result<PartialValue, Rejected> {
    let value = validate::parse_strict_ordered(input).map_err(Rejected::Input)?;
    let kind = match &value {
        PartialValue::Object(_) => None,
        PartialValue::Array(_) => Some("an array"),
        PartialValue::String(_) => Some("a string"),
        PartialValue::Number(_) => Some("a number"),
        PartialValue::Bool(_) => Some("a boolean"),
        PartialValue::Null => Some("null"),
    };
    if let Some(kind) = kind {
        return Err(Rejected::Schema(vec![SchemaFailure {
            instance_path: String::new(),
            schema_path: String::new(),
            message: format!("tool arguments must be a JSON object, not {kind}"),
        }]));
    }
    Ok(value)
}

// ------------------------------------------------------------- regex grammar

/// A custom tool's regex grammar, compiled once; `matches(text)` checks a whole input.
#[pyclass(module = "toolstitch", name = "_RegexGrammar", frozen)]
pub struct PyRegexGrammar {
    grammar: crate::validate::RegexGrammar,
}

#[pymethods]
impl PyRegexGrammar {
    #[new]
    fn new(py: Python<'_>, pattern: &str) -> PyResult<Self> {
        crate::validate::RegexGrammar::compile(pattern)
            .map(|grammar| Self { grammar })
            .map_err(|e| error(py, Kind::ToolDefinition, e.to_string()))
    }

    /// True when the whole of `text` matches the grammar.
    fn matches(&self, py: Python<'_>, text: &str) -> bool {
        maybe_detach(py, text.len(), || self.grammar.matches(text))
    }
}

// ----------------------------------------------------------------- PartialJson

/// A parser and the converter of its value, read after every fragment.
struct Live {
    parser: partial::PartialJson,
    value: LiveValue,
}

// `help(PartialJson)` shows the default limits as numbers (see `text_signature`).
const _: () =
    assert!(partial::DEFAULT_MAX_DEPTH == 128 && partial::DEFAULT_MAX_BYTES == 67_108_864);

/// Best-effort values of incomplete JSON, for showing a tool call's arguments
/// while they stream; never for execution.
///
/// `feed(fragment)` takes the next piece (`str` or `bytes`, cut anywhere: inside
/// a string, an escape or a UTF-8 sequence); `value()` is the value so far
/// (`None` until something is showable). Each byte is handled once, so the total
/// work is linear in the input. An unfinished string shows its text so far
/// (`partial_strings=False` hides it until it closes); an unfinished number
/// shows its longest valid prefix, a keyword nothing until it is whole. Invalid
/// JSON raises `ToolInputError` (with its byte offset) and stays failed; deeper
/// nesting than `max_depth` or more than `max_bytes` raises `LimitError`.
#[pyclass(module = "toolstitch", frozen)]
pub struct PartialJson {
    inner: Locked<Live>,
}

#[pymethods]
impl PartialJson {
    #[new]
    #[pyo3(
        signature = (*, partial_strings=true, max_depth=partial::DEFAULT_MAX_DEPTH, max_bytes=partial::DEFAULT_MAX_BYTES),
        text_signature = "(*, partial_strings=True, max_depth=128, max_bytes=67108864)"
    )]
    fn new(partial_strings: bool, max_depth: usize, max_bytes: usize) -> Self {
        let opts = PartialOptions {
            partial_strings,
            max_depth,
            max_bytes,
        };
        Self {
            inner: Locked::new(Live {
                parser: partial::PartialJson::new(opts),
                value: LiveValue::default(),
            }),
        }
    }

    /// Feeds the next fragment (`str` or `bytes`, cut anywhere).
    fn feed(&self, fragment: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = fragment.py();
        let result = with_bytes(fragment, "fragment", |bytes| {
            if bytes.len() >= DETACH_AT {
                py.detach(|| Ok(self.inner.lock_detached()?.parser.feed(bytes)))
            } else {
                Ok::<_, Reentered>(self.inner.lock(py)?.parser.feed(bytes))
            }
        })??;
        result.map_err(|e| partial_error(py, &e))
    }

    /// The best-effort value so far, or `None` when nothing is showable yet.
    /// Finished subtrees are shared between reads; see `live`.
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut guard = self.inner.lock(py)?;
        let Live { parser, value } = &mut *guard;
        let shown = value.read(py, parser, Numbers::Display)?;
        Ok(shown.unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// True once a whole top-level value has arrived.
    #[getter]
    fn complete(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.inner.lock(py)?.parser.is_complete())
    }

    /// Whether an unfinished string is shown.
    #[getter]
    fn partial_strings(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.inner.lock(py)?.parser.options().partial_strings)
    }

    /// Bytes accepted so far.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.parser.bytes_fed())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let live = self.inner.lock(py)?;
        let p = &live.parser;
        Ok(format!(
            "PartialJson(bytes_fed={}, complete={}, partial_strings={})",
            p.bytes_fed(),
            if p.is_complete() { "True" } else { "False" },
            if p.options().partial_strings {
                "True"
            } else {
                "False"
            }
        ))
    }

    /// An independent copy: the parser's state, and none of the Python objects
    /// earlier reads returned.
    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        let parser = self.inner.lock(py)?.parser.clone();
        Ok(Self {
            inner: Locked::new(Live {
                parser,
                value: LiveValue::default(),
            }),
        })
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__(py)
    }
}

/// The best-effort value of incomplete JSON `text` (`str` or `bytes`), or `None`
/// when nothing is showable yet: a one-shot `PartialJson`. For display only.
#[pyfunction]
#[pyo3(signature = (text, *, partial_strings=true))]
fn parse_partial<'py>(
    text: &Bound<'py, PyAny>,
    partial_strings: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = text.py();
    let opts = PartialOptions {
        partial_strings,
        ..PartialOptions::default()
    };
    let parsed = with_bytes(text, "text", |bytes| {
        maybe_detach(py, bytes.len(), || partial::parse_partial(bytes, opts))
    })?;
    match parsed.map_err(|e| partial_error(py, &e))? {
        Some(v) => to_py(py, &v, Numbers::Display),
        None => Ok(py.None().into_bound(py)),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PartialJson>()?;
    m.add_class::<super::live::ArgumentTracker>()?;
    m.add_class::<PyCompiledSchema>()?;
    m.add_class::<PyRegexGrammar>()?;
    m.add_function(wrap_pyfunction!(parse_partial, m)?)?;
    m.add_function(wrap_pyfunction!(parse_strict, m)?)?;
    Ok(())
}
