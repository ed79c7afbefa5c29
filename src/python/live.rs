//! Partial and strict JSON values as Python objects.
//!
//! [`to_py`] converts a whole [`PartialValue`] tree with an explicit stack, so
//! its depth costs heap, never native stack. [`LiveValue`] is the converter of
//! a value that is still arriving: it keeps the Python objects of what is
//! finished between reads and builds only what changed, so reading the value
//! after every fragment costs about the size of the change plus one copy of
//! each container still open (not the size of the whole value).
//!
//! What a read returns, and what it shares:
//!
//! - the containers still being built (the path from the top-level value down
//!   to the innermost open one) are new objects on every read, so mutating
//!   them never changes a later read, and a value read earlier never changes;
//! - finished subtrees (a closed array or object below an open one, and every
//!   string and number) are the same objects from one read to the next: treat
//!   them as read-only, or copy them before changing them;
//! - once the whole value is complete, every read returns a new tree that
//!   shares nothing with earlier reads.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::errors::{error_instance, Kind};
use crate::partial::{OpenContainer, OpenScalar, PartialJson, PartialOptions, PartialValue};
use crate::providers::LiveEvent;

/// How a number too long for Python's `int()` (its `sys.get_int_max_str_digits()`
/// bound, 4300 digits by default) is given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Numbers {
    /// For display: its digits as a `str`, exactly as received.
    Display,
    /// At the tool boundary: a `ToolInputError`. (The strict parser refuses
    /// numbers outside the float range first, so this is a backstop.)
    Strict,
}

/// A JSON number's text as a Python `int` (integral text, any size Python's
/// `int()` accepts) or `float`.
fn number_to_py<'py>(py: Python<'py>, text: &str, numbers: Numbers) -> PyResult<Bound<'py, PyAny>> {
    let integral = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if integral {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(n.into_pyobject(py)?.into_any());
        }
        // Beyond 64 bits: Python's own int parser keeps every digit, up to the
        // interpreter's digit bound (which guards against its quadratic cost).
        return match py.get_type::<PyInt>().call1((text,)) {
            Ok(int) => Ok(int),
            Err(e) if e.is_instance_of::<PyValueError>(py) => match numbers {
                Numbers::Display => Ok(PyString::new(py, text).into_any()),
                Numbers::Strict => Err(error_instance(
                    py,
                    Kind::ToolInput,
                    (
                        format!(
                            "an integer of {} digits is beyond this interpreter's int() bound \
                             (sys.get_int_max_str_digits())",
                            text.trim_start_matches('-').len()
                        ),
                        0usize,
                    ),
                    None,
                )),
            },
            Err(e) => Err(e),
        };
    }
    // Any JSON number parses as an f64 (an overflow is infinite).
    Ok(PyFloat::new(py, text.parse::<f64>().unwrap_or(f64::NAN)).into_any())
}

/// A scalar leaf as a Python object; `None` for arrays and objects.
fn leaf_to_py<'py>(
    py: Python<'py>,
    value: &PartialValue,
    numbers: Numbers,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(Some(match value {
        PartialValue::Null => py.None().into_bound(py),
        PartialValue::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        PartialValue::Number(text) => number_to_py(py, text, numbers)?,
        PartialValue::String(s) => PyString::new(py, s).into_any(),
        PartialValue::Array(_) | PartialValue::Object(_) => return Ok(None),
    }))
}

/// A container being filled by [`to_py`], with the children still to add.
enum Filling<'a, 'py> {
    List(Bound<'py, PyList>, std::slice::Iter<'a, PartialValue>),
    Dict(
        Bound<'py, PyDict>,
        std::slice::Iter<'a, (String, PartialValue)>,
    ),
}

/// An empty Python container for `value` and the children to put in it, or
/// `None` for a scalar.
fn start_container<'a, 'py>(
    py: Python<'py>,
    value: &'a PartialValue,
) -> Option<(Bound<'py, PyAny>, Filling<'a, 'py>)> {
    match value {
        PartialValue::Array(items) => {
            let list = PyList::empty(py);
            Some((list.clone().into_any(), Filling::List(list, items.iter())))
        }
        PartialValue::Object(members) => {
            let dict = PyDict::new(py);
            Some((dict.clone().into_any(), Filling::Dict(dict, members.iter())))
        }
        _ => None,
    }
}

/// The whole value as new Python objects (`dict` members in arrival order).
/// Iterative: nesting costs heap, not native stack.
pub(crate) fn to_py<'py>(
    py: Python<'py>,
    value: &PartialValue,
    numbers: Numbers,
) -> PyResult<Bound<'py, PyAny>> {
    let Some((root, filling)) = start_container(py, value) else {
        return leaf_to_py(py, value, numbers)
            .map(|leaf| leaf.unwrap_or_else(|| py.None().into_bound(py)));
    };
    let mut stack = vec![filling];
    while let Some(top) = stack.last_mut() {
        let (child, key) = match top {
            Filling::List(_, items) => match items.next() {
                Some(item) => (item, None),
                None => {
                    stack.pop();
                    continue;
                }
            },
            Filling::Dict(_, members) => match members.next() {
                Some((key, item)) => (item, Some(key.as_str())),
                None => {
                    stack.pop();
                    continue;
                }
            },
        };
        let (object, nested) = match leaf_to_py(py, child, numbers)? {
            Some(leaf) => (leaf, None),
            None => match start_container(py, child) {
                Some((container, filling)) => (container, Some(filling)),
                None => (py.None().into_bound(py), None),
            },
        };
        match (top, key) {
            (Filling::List(list, _), _) => list.append(object)?,
            (Filling::Dict(dict, _), Some(key)) => dict.set_item(key, object)?,
            (Filling::Dict(..), None) => {}
        }
        stack.extend(nested);
    }
    Ok(root)
}

// ----------------------------------------------------------------- LiveValue

/// The private Python container of an open one: its finished children,
/// converted. Never handed out (reads get copies), so only this code changes it.
enum Private {
    List(Py<PyList>),
    Dict(Py<PyDict>),
}

struct Cached {
    /// The open container this mirrors.
    serial: u64,
    private: Private,
    /// Finished children of the container converted into `private`.
    converted: usize,
    /// Entries of an object's replacement log already applied.
    replaced_seen: usize,
}

impl Cached {
    /// A mirror of `open` with every finished child converted.
    fn new(py: Python<'_>, open: &OpenContainer<'_>, numbers: Numbers) -> PyResult<Self> {
        let private = match open {
            OpenContainer::Array { .. } => Private::List(PyList::empty(py).unbind()),
            OpenContainer::Object { .. } => Private::Dict(PyDict::new(py).unbind()),
        };
        let mut cached = Self {
            serial: open.serial(),
            private,
            converted: 0,
            replaced_seen: 0,
        };
        cached.update(py, open, None, false, numbers)?;
        Ok(cached)
    }

    /// Converts the finished children added since the last read (the first of
    /// them may be `carried`: the finished Python object of the container that
    /// was open inside this one), and, when members were replaced by duplicate
    /// keys, the replaced ones again.
    fn update(
        &mut self,
        py: Python<'_>,
        open: &OpenContainer<'_>,
        mut carried: Option<Bound<'_, PyAny>>,
        replacements: bool,
        numbers: Numbers,
    ) -> PyResult<()> {
        match (&self.private, open) {
            (Private::List(list), OpenContainer::Array { items, .. }) => {
                let list = list.bind(py);
                for item in items.get(self.converted..).unwrap_or_default() {
                    match carried.take() {
                        Some(object) => list.append(object)?,
                        None => list.append(to_py(py, item, numbers)?)?,
                    }
                }
                self.converted = items.len();
            }
            (
                Private::Dict(dict),
                OpenContainer::Object {
                    members, replaced, ..
                },
            ) => {
                let dict = dict.bind(py);
                if replacements {
                    for &at in replaced.get(self.replaced_seen..).unwrap_or_default() {
                        if at < self.converted {
                            if let Some((name, value)) = members.get(at) {
                                dict.set_item(name, to_py(py, value, numbers)?)?;
                            }
                        }
                    }
                }
                for (name, value) in members.get(self.converted..).unwrap_or_default() {
                    match carried.take() {
                        Some(object) => dict.set_item(name, object)?,
                        None => dict.set_item(name, to_py(py, value, numbers)?)?,
                    }
                }
                self.converted = members.len();
                self.replaced_seen = replaced.len();
            }
            // A serial names one container, whose kind never changes.
            _ => {}
        }
        Ok(())
    }

    /// The finished Python object of the container this mirrored, now closed
    /// as `value`: the private container with the children that arrived since
    /// the last read (the first may be `carried`). Only called when no member
    /// anywhere was replaced by a duplicate key since the last read, so the
    /// children converted then are still in place.
    fn finish<'py>(
        self,
        py: Python<'py>,
        value: &PartialValue,
        mut carried: Option<Bound<'py, PyAny>>,
        numbers: Numbers,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match (self.private, value) {
            (Private::List(list), PartialValue::Array(items)) => {
                let list = list.into_bound(py);
                for item in items.get(self.converted..).unwrap_or_default() {
                    match carried.take() {
                        Some(object) => list.append(object)?,
                        None => list.append(to_py(py, item, numbers)?)?,
                    }
                }
                Ok(Some(list.into_any()))
            }
            (Private::Dict(dict), PartialValue::Object(members)) => {
                let dict = dict.into_bound(py);
                for (name, item) in members.get(self.converted..).unwrap_or_default() {
                    match carried.take() {
                        Some(object) => dict.set_item(name, object)?,
                        None => dict.set_item(name, to_py(py, item, numbers)?)?,
                    }
                }
                Ok(Some(dict.into_any()))
            }
            _ => Ok(None),
        }
    }

    /// A new container with the finished children and, last, `child`.
    fn fresh<'py>(
        &self,
        py: Python<'py>,
        open: &OpenContainer<'_>,
        child: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match &self.private {
            Private::List(list) => {
                let list = list.bind(py);
                let copy = list.get_slice(0, list.len());
                if let Some(child) = child {
                    copy.append(child)?;
                }
                Ok(copy.into_any())
            }
            Private::Dict(dict) => {
                let copy = dict.bind(py).copy()?;
                if let (
                    Some(child),
                    OpenContainer::Object {
                        key: Some((name, _)),
                        ..
                    },
                ) = (child, open)
                {
                    copy.set_item(*name, child)?;
                }
                Ok(copy.into_any())
            }
        }
    }
}

/// The child at `index` of a finished array or object.
fn child_at(value: &PartialValue, index: usize) -> Option<&PartialValue> {
    match value {
        PartialValue::Array(items) => items.get(index),
        PartialValue::Object(members) => members.get(index).map(|(_, v)| v),
        _ => None,
    }
}

/// The Python value of a [`PartialJson`] read again and again while it grows,
/// reusing what is finished (see the [module docs](self)).
#[derive(Default)]
pub(crate) struct LiveValue {
    /// Mirrors of the open containers at the last read, outermost first.
    frames: Vec<Cached>,
    /// The parser's replacement count at the last read.
    replacements: u64,
}

impl LiveValue {
    /// The value so far (`None` when nothing is showable yet).
    pub(crate) fn read<'py>(
        &mut self,
        py: Python<'py>,
        parser: &PartialJson,
        numbers: Numbers,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let Some(root) = parser.complete_value() {
            self.frames.clear();
            return to_py(py, root, numbers).map(Some);
        }
        let open: Vec<OpenContainer<'_>> = parser.open_containers().collect();
        let replacements = parser.replacements() != self.replacements;
        self.replacements = parser.replacements();
        let common = self
            .frames
            .iter()
            .zip(&open)
            .take_while(|(cached, open)| cached.serial == open.serial())
            .count();
        // Containers open at the last read and closed since: their mirrors make
        // their finished objects, unless a duplicate key replaced a member
        // anywhere since (then what they hold may be stale; they are converted anew).
        let closed = self.frames.split_off(common);
        let mut carried = match (common.checked_sub(1), replacements) {
            (Some(parent), false) => self.finish_closed(py, parent, &open, closed, numbers)?,
            _ => None,
        };
        for (i, container) in open.iter().enumerate() {
            match self.frames.get_mut(i) {
                Some(cached) => {
                    let reuse = if i + 1 == common {
                        carried.take()
                    } else {
                        None
                    };
                    cached.update(py, container, reuse, replacements, numbers)?;
                }
                None => self.frames.push(Cached::new(py, container, numbers)?),
            }
        }
        let mut child = match parser.open_scalar() {
            Some(OpenScalar::String(text)) => Some(PyString::new(py, text).into_any()),
            Some(OpenScalar::Number(text)) => Some(number_to_py(py, text, numbers)?),
            None => None,
        };
        for (cached, container) in self.frames.iter().zip(&open).rev() {
            child = Some(cached.fresh(py, container, child)?);
        }
        Ok(child)
    }

    /// The finished Python object of the container that was open inside the
    /// still-open `open[parent]` at the last read and has closed since (with
    /// every container that was open inside it), built from their mirrors.
    fn finish_closed<'py>(
        &self,
        py: Python<'py>,
        parent: usize,
        open: &[OpenContainer<'_>],
        closed: Vec<Cached>,
        numbers: Numbers,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (Some(cached_parent), Some(open_parent)) = (self.frames.get(parent), open.get(parent))
        else {
            return Ok(None);
        };
        if closed.is_empty() {
            return Ok(None);
        }
        // The closed values, outermost first: each landed where the next
        // finished child of its parent goes.
        let first = match open_parent {
            OpenContainer::Array { items, .. } => items.get(cached_parent.converted),
            OpenContainer::Object { members, .. } => {
                members.get(cached_parent.converted).map(|(_, v)| v)
            }
        };
        let mut values: Vec<&PartialValue> = Vec::with_capacity(closed.len());
        let mut next = first;
        for cached in &closed {
            let Some(value) = next else { break };
            values.push(value);
            next = child_at(value, cached.converted);
        }
        // Innermost first, each finished object carried into its parent.
        let mut carried = None;
        for (cached, value) in closed.into_iter().zip(values).rev() {
            carried = match cached.finish(py, value, carried, numbers)? {
                Some(object) => Some(object),
                None => Some(to_py(py, value, numbers)?),
            };
        }
        Ok(carried)
    }
}

// ----------------------------------------------------------- ArgumentTracker

/// One call an [`ArgumentTracker`] follows.
struct Followed {
    id: String,
    parser: PartialJson,
    /// Finished top-level members already reported.
    reported: usize,
    /// Their keys, as JSON Pointers (what `final_paths` answers).
    paths: Vec<String>,
    /// The call's block ended: nothing more is parsed.
    finished: bool,
}

impl Followed {
    fn new(id: String) -> Self {
        Self {
            id,
            parser: PartialJson::new(PartialOptions::default()),
            reported: 0,
            paths: Vec::new(),
            finished: false,
        }
    }

    /// Feeds a fragment: appended, or with `replaces` the whole new input, parsed
    /// from its start. Only the assembler's flag says a fragment replaces: a
    /// restatement can happen to parse as the continuation of what it replaces
    /// (`{"a":` then `{"b":1}`), so it is never guessed from the text. Text that
    /// cannot continue the input leaves it failed (the strict parse refuses it
    /// too): the members finished before the invalid byte are all it reports,
    /// however the text was cut.
    fn feed(&mut self, fragment: &str, replaces: bool) {
        if replaces {
            self.parser = PartialJson::new(PartialOptions::default());
            self.reported = 0;
            self.paths.clear();
        }
        if self.parser.error().is_some() {
            return;
        }
        // The error stays in the parser, which then reports nothing more.
        let _ = self.parser.feed(fragment.as_bytes());
    }

    /// The members finished since the last report.
    fn report(&mut self, choice: i64, index: i64, out: &mut Vec<Done>) {
        let Some(members) = self.parser.finished_members() else {
            return;
        };
        for (key, value) in members.get(self.reported..).unwrap_or_default() {
            let path = json_pointer(key);
            self.paths.push(path.clone());
            out.push(Done {
                choice,
                index,
                id: self.id.clone(),
                path: Some(path),
                value: value.clone(),
            });
        }
        self.reported = members.len();
    }
}

/// What the tracker tells, copied out of its lock: a top-level member whose value
/// completed, or (`path: None`) that the call's input was replaced.
struct Done {
    choice: i64,
    index: i64,
    id: String,
    path: Option<String>,
    value: PartialValue,
}

/// `/key`, with `~` and `/` escaped (RFC 6901).
fn json_pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

static DONE_CLASS: super::imports::Imports<PyAny, 2> = super::imports::Imports::new(
    "toolstitch.calls",
    ["ToolArgumentDone", "ToolArgumentsReset"],
);

/// Follows the calls of a stream through the `Assembler`'s live events and tells
/// when a top-level value of a call's arguments is complete.
///
/// `update(events)` takes what a `feed`, `feed_bytes` or `close` returned (or any
/// iterable of live events) and returns a `ToolArgumentDone(choice, index, id,
/// path, value)` for each top-level member of a call's arguments whose value closed
/// in them: `path` is its JSON Pointer (`"/path"`), `value` the parsed value, equal
/// to the strict parse's at that key. Nothing is reported before the value's last
/// byte (a string's closing quote, the byte after a number, a container's closing
/// bracket). When the assembler replaces a call's input (a `ToolInputDelta` with
/// `replaces`), `update` gives `ToolArgumentsReset(choice, index, id)` first: every
/// path reported for that call before is void, and the members of the new input
/// are reported as they complete. `final_paths()` lists, per call, the paths
/// reported so far (since the last reset). For display and early starts only: a
/// tool runs on the validated call.
///
/// An `Assembler` does none of this work unless a tracker is given its events.
#[pyclass(module = "toolstitch", name = "ArgumentTracker", frozen)]
pub struct ArgumentTracker {
    calls: super::Locked<std::collections::BTreeMap<(i64, i64), Followed>>,
}

/// The events of a Python iterable (live event objects) as Rust events.
fn events_of(events: &Bound<'_, PyAny>) -> PyResult<Vec<LiveEvent>> {
    let mut out = Vec::new();
    for item in events.try_iter()? {
        let item = item?;
        let name = item.get_type().name()?;
        let choice = || item.getattr("choice")?.extract::<i64>();
        let index = || item.getattr("index")?.extract::<i64>();
        match name.to_str()? {
            "ToolCallStarted" => out.push(LiveEvent::ToolCallStarted {
                choice: choice()?,
                index: index()?,
                id: item.getattr("id")?.extract()?,
                name: item.getattr("name")?.extract()?,
            }),
            "ToolInputDelta" => out.push(LiveEvent::ToolInputDelta {
                choice: choice()?,
                index: index()?,
                fragment: item.getattr("fragment")?.extract()?,
                // An event made by hand before the field existed appends.
                replaces: match item.getattr("replaces") {
                    Ok(flag) => flag.is_truthy()?,
                    Err(_) => false,
                },
            }),
            "ToolCallFinished" => out.push(LiveEvent::ToolCallFinished {
                choice: choice()?,
                index: index()?,
            }),
            _ => {}
        }
    }
    Ok(out)
}

impl ArgumentTracker {
    fn apply(&self, py: Python<'_>, events: &[LiveEvent]) -> PyResult<Vec<Done>> {
        let mut done = Vec::new();
        let mut calls = self.calls.lock(py)?;
        for event in events {
            match event {
                LiveEvent::ToolCallStarted {
                    choice, index, id, ..
                } => {
                    calls
                        .entry((*choice, *index))
                        .or_insert_with(|| Followed::new(id.clone()))
                        .id
                        .clone_from(id);
                }
                LiveEvent::ToolInputDelta {
                    choice,
                    index,
                    fragment,
                    replaces,
                } => {
                    let call = calls
                        .entry((*choice, *index))
                        .or_insert_with(|| Followed::new(String::new()));
                    if !call.finished {
                        if *replaces {
                            done.push(Done {
                                choice: *choice,
                                index: *index,
                                id: call.id.clone(),
                                path: None,
                                value: PartialValue::Null,
                            });
                        }
                        call.feed(fragment, *replaces);
                        call.report(*choice, *index, &mut done);
                    }
                }
                LiveEvent::ToolCallFinished { choice, index } => {
                    if let Some(call) = calls.get_mut(&(*choice, *index)) {
                        call.finished = true;
                        // The parsed tree is no longer needed; the paths stay.
                        call.parser = PartialJson::new(PartialOptions::default());
                    }
                }
                _ => {}
            }
        }
        Ok(done)
    }
}

#[pymethods]
impl ArgumentTracker {
    #[new]
    fn new() -> Self {
        Self {
            calls: super::Locked::new(std::collections::BTreeMap::new()),
        }
    }

    /// The `ToolArgumentDone` events that `events` (live events of the Assembler)
    /// cause, in order.
    fn update<'py>(&self, events: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        let py = events.py();
        let done = if let Ok(live) = events.cast::<super::output::LiveEvents>() {
            self.apply(py, live.get().events())?
        } else {
            let events = events_of(events)?;
            self.apply(py, &events)?
        };
        // The lock is released: the events become Python objects.
        if done.is_empty() {
            return Ok(PyTuple::empty(py));
        }
        let (done_class, reset_class) = (DONE_CLASS.get(py, 0)?, DONE_CLASS.get(py, 1)?);
        let items = done
            .into_iter()
            .map(|d| match d.path {
                Some(path) => {
                    let value = to_py(py, &d.value, Numbers::Display)?;
                    done_class.call1((d.choice, d.index, d.id, path, value))
                }
                None => reset_class.call1((d.choice, d.index, d.id)),
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// `{(choice, index): (path, ...)}`: for every call seen, the paths of its
    /// arguments reported final so far, in the order they completed.
    fn final_paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let copied: Vec<((i64, i64), Vec<String>)> = self
            .calls
            .lock(py)?
            .iter()
            .map(|(key, call)| (*key, call.paths.clone()))
            .collect();
        let out = PyDict::new(py);
        for (key, paths) in copied {
            out.set_item(key, PyTuple::new(py, paths)?)?;
        }
        Ok(out)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let calls = self.calls.lock(py)?;
        let open = calls.values().filter(|c| !c.finished).count();
        Ok(format!(
            "ArgumentTracker(calls={}, open={open})",
            calls.len()
        ))
    }
}
