//! The tool-loop boundary: partial JSON for live display, and the strict parse
//! and schema check that come before a tool is executed.
//!
//! Values cross into Python as plain `dict` / `list` / `str` / `int` / `float` /
//! `bool` / `None`, with object members in the order they arrived. A number is
//! an `int` when its text is integral (no fraction, no exponent; any size) and a
//! `float` otherwise.

use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

use super::errors::{error, error_instance, Kind};
use super::locked;
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

// ------------------------------------------------------------ values to Python

/// A JSON number's text as a Python `int` or `float`.
fn number_to_py<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let integral = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if integral {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(n.into_pyobject(py)?.into_any());
        }
        // Larger than 64 bits: Python's own int parser keeps every digit.
        return py.get_type::<PyInt>().call1((text,));
    }
    match text.parse::<f64>() {
        Ok(f) => Ok(PyFloat::new(py, f).into_any()),
        Err(_) => py.get_type::<PyFloat>().call1((text,)),
    }
}

pub(crate) fn partial_to_py<'py>(
    py: Python<'py>,
    value: &PartialValue,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        PartialValue::Null => py.None().into_bound(py),
        PartialValue::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        PartialValue::Number(text) => number_to_py(py, text)?,
        PartialValue::String(s) => PyString::new(py, s).into_any(),
        PartialValue::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(partial_to_py(py, item)?)?;
            }
            list.into_any()
        }
        PartialValue::Object(members) => {
            let dict = PyDict::new(py);
            for (key, item) in members {
                dict.set_item(key, partial_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Converts a Python value (a JSON Schema, tool arguments) to JSON.
fn py_to_json(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > validate::MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "value nested deeper than {} levels",
            validate::MAX_DEPTH
        )));
    }
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
        return Err(PyValueError::new_err(format!(
            "integer {i} does not fit in 64 bits"
        )));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let f = f.value();
        return serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("{f} is not a JSON number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!("object keys must be str, not {}", k.get_type()))
            })?;
            map.insert(key.to_str()?.to_owned(), py_to_json(&v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        let items = obj
            .try_iter()?
            .map(|item| py_to_json(&item?, depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "{} is not a JSON value (use dict, list, str, int, float, bool or None)",
        obj.get_type().name()?
    )))
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

/// The strict parse of a completed call's input, keeping members in arrival
/// order (`validate::parse_strict` gives the same verdicts, as a
/// `serde_json::Value` whose objects are sorted by key).
fn parse_strict_ordered(input: &[u8]) -> Result<PartialValue, InputError> {
    if input
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(PartialValue::Object(Vec::new()));
    }
    let mut parser = partial::PartialJson::new_strict(validate::MAX_DEPTH);
    parser.feed(input)?;
    parser.finish()?;
    parser.take_complete().ok_or_else(|| InputError {
        offset: input.len(),
        message: "no complete JSON value".to_owned(),
    })
}

/// Parses a completed tool call's input strictly: empty input is `{}`;
/// duplicate keys, anything after the value and invalid UTF-8 are errors.
#[pyfunction]
#[pyo3(name = "_parse_strict")]
fn parse_strict<'py>(text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = text.py();
    let parsed = with_bytes(text, "input", |b| {
        maybe_detach(py, b.len(), || parse_strict_ordered(b))
    })?;
    let value = parsed.map_err(|e| input_error(py, &e, "", ""))?;
    partial_to_py(py, &value)
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
        let value = py_to_json(schema, 0)
            .map_err(|e| error(py, Kind::ToolDefinition, format!("schema is not JSON: {e}")))?;
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
        let json = py_to_json(value, 0)?;
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
            Ok(value) => partial_to_py(py, &value),
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
        let value = parse_strict_ordered(input).map_err(Rejected::Input)?;
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
        self.schema
            .validate(&value.to_json())
            .map_err(Rejected::Schema)?;
        Ok(value)
    }
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
    inner: Mutex<partial::PartialJson>,
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
            inner: Mutex::new(partial::PartialJson::new(opts)),
        }
    }

    /// Feeds the next fragment (`str` or `bytes`, cut anywhere).
    fn feed(&self, fragment: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = fragment.py();
        let result = with_bytes(fragment, "fragment", |bytes| {
            maybe_detach(py, bytes.len(), || locked(&self.inner).feed(bytes))
        })?;
        result.map_err(|e| partial_error(py, &e))
    }

    /// The best-effort value so far, or `None` when nothing is showable yet.
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = locked(&self.inner).value();
        match value {
            Some(v) => partial_to_py(py, &v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// True once a whole top-level value has arrived.
    #[getter]
    fn complete(&self) -> bool {
        locked(&self.inner).is_complete()
    }

    /// Whether an unfinished string is shown.
    #[getter]
    fn partial_strings(&self) -> bool {
        locked(&self.inner).options().partial_strings
    }

    /// Bytes accepted so far.
    fn __len__(&self) -> usize {
        locked(&self.inner).bytes_fed()
    }

    fn __repr__(&self) -> String {
        let p = locked(&self.inner);
        format!(
            "PartialJson(bytes_fed={}, complete={}, partial_strings={})",
            p.bytes_fed(),
            if p.is_complete() { "True" } else { "False" },
            if p.options().partial_strings {
                "True"
            } else {
                "False"
            }
        )
    }

    fn __copy__(&self) -> Self {
        Self {
            inner: Mutex::new(locked(&self.inner).clone()),
        }
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        self.__copy__()
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
        Some(v) => partial_to_py(py, &v),
        None => Ok(py.None().into_bound(py)),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PartialJson>()?;
    m.add_class::<PyCompiledSchema>()?;
    m.add_class::<PyRegexGrammar>()?;
    m.add_function(wrap_pyfunction!(parse_partial, m)?)?;
    m.add_function(wrap_pyfunction!(parse_strict, m)?)?;
    Ok(())
}
