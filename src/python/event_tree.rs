//! Decoded events (Python dicts) read in place as a [`Tree`], never written
//! out as JSON text and parsed again.
//!
//! What a dict may hold is exactly what JSON can say: `dict` with `str` keys,
//! `list` / `tuple`, `str`, `int`, finite `float`, `bool` and `None` (their
//! subclasses too, read by their base type). Anything else, a non-`str` key,
//! NaN or an infinity, a lone surrogate, or nesting deeper than
//! [`MAX_DEPTH`] is refused with the path to the offending value. Nothing
//! here calls back into Python code, so the dict cannot change while it is read.

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use super::sdk::{self, Lookup};

use crate::providers::{Node, Tree, TreeBuilder};

/// Containers nested deeper than this are refused (serde_json's own limit for text).
pub(crate) const MAX_DEPTH: usize = 128;

/// One step of the path to a refused value.
enum Step {
    Key(String),
    Index(usize),
}

/// Why a Python value is not JSON data, and where.
pub(crate) struct NotJson {
    what: String,
    /// Innermost step first (pushed while unwinding).
    path: Vec<Step>,
    /// An int past the 64-bit range: JSON data, but not a tree's (whose numbers
    /// are 64-bit); its JSON text keeps it exact (Q42).
    pub(crate) big_int: bool,
    /// Reading SDK objects: an object this reading leaves to the general path
    /// (`sdk.rs`); with the class to look at first when it was not known.
    pub(crate) general: bool,
    pub(crate) learn: Option<Py<PyType>>,
}

impl NotJson {
    fn new(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            path: Vec::new(),
            big_int: false,
            general: false,
            learn: None,
        }
    }

    fn at(mut self, step: Step) -> Self {
        self.path.push(step);
        self
    }
}

impl fmt::Display for NotJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        if self.path.is_empty() {
            return Ok(());
        }
        f.write_str(" at ")?;
        for (n, step) in self.path.iter().rev().enumerate() {
            match step {
                Step::Key(k) if n == 0 => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// Reads `obj` into `b` (strings into `strs`, their positions in the tree).
pub(crate) fn build<'py>(
    obj: &Bound<'py, PyAny>,
    b: &mut TreeBuilder,
    strs: &mut Vec<Py<PyString>>,
) -> Result<(), NotJson> {
    walk(obj, b, strs, 0, false)
}

/// Reads `obj`, which may be or hold objects of the SDK classes `sdk.rs`
/// reads in place, into `b`. An error is [`NotJson::general`] (the event
/// takes the general path) unless it is about the event's plain data.
pub(crate) fn build_sdk<'py>(
    obj: &Bound<'py, PyAny>,
    b: &mut TreeBuilder,
    strs: &mut Vec<Py<PyString>>,
) -> Result<(), NotJson> {
    walk(obj, b, strs, 0, true)
}

fn walk<'py>(
    obj: &Bound<'py, PyAny>,
    b: &mut TreeBuilder,
    strs: &mut Vec<Py<PyString>>,
    depth: usize,
    models: bool,
) -> Result<(), NotJson> {
    // Type checks that cannot fail are used throughout: a failed `cast` builds
    // an error object, which would cost more than the whole node. The exact
    // types JSON decoders make come first (a pointer comparison each).
    if let Ok(s) = obj.cast_exact::<PyString>() {
        b.push(Node::Str(strs.len()));
        strs.push(s.clone().unbind());
        return Ok(());
    }
    if obj.is_exact_instance_of::<PyDict>() || obj.is_instance_of::<PyDict>() {
        return walk_dict(obj, b, strs, depth, models);
    }
    if obj.is_none() {
        b.push(Node::Null);
        return Ok(());
    }
    if obj.is_exact_instance_of::<PyInt>() {
        b.push(int_node(obj.cast::<PyInt>().map_err(|_| unreadable())?)?);
        return Ok(());
    }
    if obj.is_instance_of::<PyString>() {
        b.push(Node::Str(strs.len()));
        strs.push(
            obj.clone()
                .cast_into::<PyString>()
                .map_err(|_| unreadable())?
                .unbind(),
        );
        return Ok(());
    }
    if obj.is_instance_of::<PyInt>() {
        if obj.is_instance_of::<PyBool>() {
            let t = obj.cast::<PyBool>().map_err(|_| unreadable())?.is_true();
            b.push(Node::Bool(t));
        } else {
            b.push(int_node(obj.cast::<PyInt>().map_err(|_| unreadable())?)?);
        }
        return Ok(());
    }
    if obj.is_exact_instance_of::<PyList>() || obj.is_instance_of::<PyList>() {
        let l = obj.cast::<PyList>().map_err(|_| unreadable())?;
        if depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        b.open_array(l.len());
        for (n, item) in l.iter().enumerate() {
            walk(&item, b, strs, depth + 1, models).map_err(|e| e.at(Step::Index(n)))?;
        }
        return close(b);
    }
    if obj.is_instance_of::<PyFloat>() {
        let v = obj.cast::<PyFloat>().map_err(|_| unreadable())?.value();
        if !v.is_finite() {
            return Err(NotJson::new(format!("{v} (JSON has no NaN or infinities)")));
        }
        b.push(Node::F64(v));
        return Ok(());
    }
    if obj.is_instance_of::<PyTuple>() {
        let t = obj.cast::<PyTuple>().map_err(|_| unreadable())?;
        if depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        b.open_array(t.len());
        for (n, item) in t.iter().enumerate() {
            walk(&item, b, strs, depth + 1, models).map_err(|e| e.at(Step::Index(n)))?;
        }
        return close(b);
    }
    if models {
        return walk_model(obj, b, strs, depth);
    }
    Err(NotJson::new(format!(
        "a value of type {} (not JSON data)",
        type_name(obj)
    )))
}

/// The general path, for an object this reading is not sure of.
#[cold]
fn general() -> NotJson {
    let mut e = NotJson::new("an object read by the general path");
    e.general = true;
    e
}

/// An error inside an SDK object: the general path (with the class to learn, if any).
fn to_general(e: NotJson) -> NotJson {
    if e.general {
        e
    } else {
        general()
    }
}

/// An SDK object of a known class, as its `to_dict(mode="json")` (`sdk.rs`).
fn walk_model<'py>(
    obj: &Bound<'py, PyAny>,
    b: &mut TreeBuilder,
    strs: &mut Vec<Py<PyString>>,
    depth: usize,
) -> Result<(), NotJson> {
    let ty = obj.get_type();
    let recipe = match sdk::recipe(&ty) {
        Lookup::Read(r) => r,
        Lookup::General => return Err(general()),
        Lookup::Unknown => {
            let mut e = general();
            e.learn = Some(ty.unbind());
            return Err(e);
        }
    };
    if depth >= MAX_DEPTH {
        return Err(general());
    }
    let (dict, set, extra) = sdk::parts(obj).ok_or_else(general)?;
    // One pass over `__dict__`: the fields set, kept for the second.
    let mut fields = Vec::with_capacity(dict.len());
    for (n, (k, v)) in dict.iter().enumerate() {
        let k = k.cast_into_exact::<PyString>().map_err(|_| general())?;
        if !recipe.declares(n, &k) {
            return Err(general());
        }
        if set.contains(&k).map_err(|_| general())? {
            fields.push((k, v));
        }
    }
    let first = strs.len();
    b.open_object(fields.len() + extra.as_ref().map_or(0, |e| e.len()));
    for (k, v) in fields {
        b.push(Node::Str(strs.len()));
        strs.push(recipe.key(&k).ok_or_else(general)?.unbind());
        walk(&v, b, strs, depth + 1, true).map_err(to_general)?;
    }
    if let Some(extra) = extra {
        let py = obj.py();
        for (k, v) in &extra {
            let k = k.cast_into_exact::<PyString>().map_err(|_| general())?;
            // An extra field named like a field would be a key twice.
            let text = k.to_str().map_err(|_| general())?;
            let keys = strs.get(first..).unwrap_or_default();
            if keys
                .iter()
                .any(|s| s.bind(py).to_str().is_ok_and(|t| t == text))
            {
                return Err(general());
            }
            b.push(Node::Str(strs.len()));
            strs.push(k.unbind());
            walk(&v, b, strs, depth + 1, true).map_err(to_general)?;
        }
    }
    close(b)
}

fn walk_dict<'py>(
    obj: &Bound<'py, PyAny>,
    b: &mut TreeBuilder,
    strs: &mut Vec<Py<PyString>>,
    depth: usize,
    models: bool,
) -> Result<(), NotJson> {
    let d = obj.cast::<PyDict>().map_err(|_| unreadable())?;
    if depth >= MAX_DEPTH {
        return Err(too_deep());
    }
    b.open_object(d.len());
    for (k, v) in d {
        if !(k.is_exact_instance_of::<PyString>() || k.is_instance_of::<PyString>()) {
            return Err(NotJson::new(format!(
                "a dict key of type {} (JSON keys are str)",
                type_name(&k)
            )));
        }
        let at = strs.len();
        b.push(Node::Str(at));
        strs.push(
            k.cast_into::<PyString>()
                .map_err(|_| unreadable())?
                .unbind(),
        );
        if let Err(e) = walk(&v, b, strs, depth + 1, models) {
            let name = strs.get(at).map_or_else(String::new, |k| {
                k.bind(v.py()).to_string_lossy().into_owned()
            });
            return Err(e.at(Step::Key(name)));
        }
    }
    close(b)
}

#[cold]
fn unreadable() -> NotJson {
    NotJson::new("a value whose type changed while it was read")
}

fn too_deep() -> NotJson {
    NotJson::new(format!("nesting deeper than {MAX_DEPTH} levels"))
}

fn close(b: &mut TreeBuilder) -> Result<(), NotJson> {
    b.close().map_err(|e| NotJson::new(e.to_string()))
}

/// An int as a tree node: a 64-bit integer. Past that range a tree cannot
/// hold it exactly (a float would alter it, Q42): an exact int is reported as
/// [`NotJson::big_int`], and the event is read from its JSON text instead.
fn int_node(i: &Bound<'_, PyInt>) -> Result<Node, NotJson> {
    if let Ok(v) = i.extract::<i64>() {
        return Ok(Node::I64(v));
    }
    if let Ok(v) = i.extract::<u64>() {
        return Ok(Node::U64(v));
    }
    let mut e = NotJson::new(format!("the int {i} (past the 64-bit range)"));
    // Only an exact int: a subclass could run Python code when written out.
    e.big_int = i.is_exact_instance_of::<PyInt>();
    Err(e)
}

/// The UTF-8 text of every string of a tree, in tree order, into `out`.
pub(crate) fn texts_into<'a>(
    py: Python<'a>,
    strs: &'a [Py<PyString>],
    out: &mut Vec<&'a str>,
) -> Result<(), NotJson> {
    out.reserve(strs.len());
    for s in strs {
        let text = s
            .bind(py)
            .to_str()
            .map_err(|_| NotJson::new("a str with a lone surrogate (not valid UTF-8)"))?;
        out.push(text);
    }
    Ok(())
}

/// A finished tree over `texts`.
pub(crate) fn tree<'a>(b: &'a TreeBuilder, texts: &'a [&'a str]) -> Result<Tree<'a>, NotJson> {
    b.tree(texts).map_err(|e| NotJson::new(e.to_string()))
}
