//! The memo of decoded events: the common event of a stream fed as Python
//! dicts or SDK objects, served without reading it into a tree.
//!
//! Most events of a stream are the same event again with another string: the
//! next argument fragment of the open call. When the general path found an
//! event to be its dialect's common one (the core says so, and where its
//! string is: `providers::common`), the event becomes a [`Template`]: its
//! values in order, with a hole where that string is. The next event is
//! compared with the template, value by value, in its own order; when it
//! differs only by the string in the hole, the core applies the common event
//! with that string ([`crate::providers::Assembler::feed_common`]). Anything
//! else takes the general path, which may learn it in turn.
//!
//! "The same" is strict, so that the event read is the event learned:
//! - containers are exactly `dict` and `list` (no subclass, no tuple), of the
//!   same length, keys in the same order and equal;
//! - scalars are of exactly the type of the template and equal to it (ints as
//!   64-bit values, floats bit for bit, `True` / `False` / `None` by identity);
//! - the hole is exactly a `str`, valid UTF-8 (else the general path refuses it).
//!
//! SDK objects (pydantic models) are compared the same way through what
//! their `to_dict()` is made of: the exact class, its
//! `__pydantic_fields_set__` (which fields were set), the keys of its
//! `__dict__` in order and the value of every field set among them, then its
//! `__pydantic_extra__` (the extra fields, which LiteLLM's chunks keep their
//! content in) as a dict. A field not set is not in the dump, so its value is
//! not compared (a chat chunk sets about half its fields); the same keys in
//! the same order and the same fields set make the same dump, whatever
//! fields set are missing from `__dict__`. A template of SDK objects is learned only when the
//! string of the common event in their `to_dict()` is the very object held by
//! the model (the field's value passes through as it is), and it is compared
//! outside the binding's lock (attribute reads may run Python code).
//! Templates of dicts hold no models: comparing them runs no Python code.
//!
//! A common event that carries stamps (OpenAI's per-event nonce, the
//! Responses API's `sequence_number`: `providers/common.rs`) has a place for
//! each in its template besides the hole, found as the hole is (the nonce by
//! the address of its string, the number as the top-level member of that
//! name): exactly a `str` there, exactly an `int` that fits 64 bits unsigned
//! there, and the event is served with them, the core checking them as the
//! general path does.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyType};

use crate::providers::{Common, Stamp};

use super::event_tree::MAX_DEPTH;

/// A string of the template, as the object it was and its text.
struct Text {
    obj: Py<PyString>,
    text: Box<str>,
}

impl Text {
    fn of(s: &Bound<'_, PyString>) -> Option<Self> {
        Some(Self {
            obj: s.clone().unbind(),
            text: s.to_str().ok()?.into(),
        })
    }

    /// `s` is this string: the same object, or an exact `str` with the same text.
    #[inline]
    fn is(&self, s: &Bound<'_, PyAny>) -> bool {
        s.is(&self.obj)
            || s.cast_exact::<PyString>()
                .is_ok_and(|s| s.to_str().is_ok_and(|t| *t == *self.text))
    }
}

/// One value of a template, in the order a walk of the event meets it.
enum Slot {
    /// A dict of so many members; each is a `Key` then its value.
    Dict(usize),
    /// A list of so many items.
    List(usize),
    Key(Text),
    Str(Text),
    Int(i64),
    /// The bits of the float.
    Float(u64),
    Bool(bool),
    Null,
    /// The string that may differ.
    Hole,
    /// The event's nonce (a string that differs from event to event).
    Nonce,
    /// The event's `sequence_number` (an integer that differs likewise).
    Seq,
    /// An SDK model of exactly this class, with these fields set (exact
    /// `str`s), a `__dict__` of `len` members and `extra` extra fields. The members of
    /// `__dict__` follow in its order, each a `Field` then its value (a field
    /// set) or an `Unset` (a field not set, whose value the dump leaves out),
    /// then the extra fields in their order, each a `Key` then its value.
    Model {
        class: Py<PyType>,
        fields_set: Box<[Py<PyString>]>,
        len: usize,
        extra: usize,
    },
    /// A member of a model's `__dict__` that is a field set; its value follows.
    Field(Text),
    /// A member of a model's `__dict__` that is not a field set.
    Unset(Text),
}

/// The common event of a stream, as its dialect's general path found it.
pub(crate) struct Template {
    slots: Vec<Slot>,
    /// The SSE event name it was fed with.
    event_type: Option<String>,
    pub(crate) common: Common,
}

/// What the binding keeps of the last common events: templates for dicts and
/// for SDK objects.
#[derive(Default)]
pub(crate) struct Memo {
    pub(crate) dicts: Templates,
    pub(crate) objects: Templates,
}

/// How many templates are kept: the calls a stream interleaves, one template
/// each (a call's fragments carry its index), most streams one at a time.
const KEPT: usize = 4;

/// Events in a window: when fewer than a quarter of a window's events that
/// were compared with templates are served (more calls interleaved than are
/// kept, text after the calls), the memo rests for [`REST`] events, neither
/// compared nor learned, and then tries again.
const WINDOW: u32 = 32;
const REST: u32 = 256;

/// The last templates learned, the most recent first; shared, so that SDK
/// objects are compared with them outside the lock. `None` until the first
/// is learned (an empty `Arc` would be an allocation per open stream).
#[derive(Default)]
pub(crate) struct Templates {
    list: Option<Arc<Vec<Arc<Template>>>>,
    /// Events compared in this window, and how many of them were served.
    tried: u32,
    hits: u32,
    /// Events left to rest.
    rest: u32,
    /// Events served in all (for the tests that check the memo is used).
    pub(crate) served: u64,
}

impl Templates {
    /// Whether the next event is compared with the templates: not while there
    /// are none or the memo rests.
    pub(crate) fn compares(&mut self) -> bool {
        if self.rest > 0 {
            self.rest -= 1;
            return false;
        }
        self.list.is_some()
    }

    /// The templates, shared (for SDK objects, compared outside the lock).
    pub(crate) fn shared(&self) -> Option<Arc<Vec<Arc<Template>>>> {
        self.list.clone()
    }

    /// The first template `event` is, and what fills its places.
    #[inline]
    pub(crate) fn find<'py>(
        &self,
        event: &Bound<'py, PyAny>,
        event_type: Option<&str>,
    ) -> Option<(&Template, Filled<'py>)> {
        first(
            self.list.as_deref().map_or(&[], Vec::as_slice),
            event,
            event_type,
        )
    }

    /// Whether the memo may learn now (it does not while it rests).
    pub(crate) fn learning(&self) -> bool {
        self.rest == 0
    }

    /// An event compared with the templates was served, or not.
    pub(crate) fn tried(&mut self, served: bool) {
        self.served += u64::from(served);
        self.tried += 1;
        self.hits += u32::from(served);
        if self.tried == WINDOW {
            if self.hits * 4 < WINDOW {
                self.rest = REST;
            }
            (self.tried, self.hits) = (0, 0);
        }
    }

    /// Keeps `t` first, and at most [`KEPT`] templates.
    pub(crate) fn keep(&mut self, t: Template) {
        let mut list = Vec::with_capacity(KEPT);
        list.push(Arc::new(t));
        list.extend(
            self.list
                .iter()
                .flat_map(|l| l.iter())
                .take(KEPT - 1)
                .cloned(),
        );
        self.list = Some(Arc::new(list));
    }
}

/// The first of `list` that `event` is, and what fills its places.
#[inline]
pub(crate) fn first<'t, 'py>(
    list: &'t [Arc<Template>],
    event: &Bound<'py, PyAny>,
    event_type: Option<&str>,
) -> Option<(&'t Template, Filled<'py>)> {
    list.iter()
        .find_map(|t| t.fill(event, event_type).map(|piece| (&**t, piece)))
}

/// What an event found to be a template holds in its places: the string in
/// the hole, and its stamps where the template has a place for them.
#[derive(Default)]
pub(crate) struct Filled<'py> {
    pub(crate) piece: Option<Bound<'py, PyString>>,
    pub(crate) nonce: Option<Bound<'py, PyString>>,
    pub(crate) seq: Option<u64>,
}

impl Filled<'_> {
    /// The stamps, as the core takes them; `None` when the nonce is no UTF-8
    /// (the general path refuses it).
    pub(crate) fn stamp(&self) -> Option<Stamp<'_>> {
        let nonce = match &self.nonce {
            Some(n) => Some(n.to_str().ok()?),
            None => None,
        };
        Some(Stamp {
            nonce,
            seq: self.seq,
        })
    }
}

/// Whether a template may hold SDK models (learned from an SDK object).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Of {
    Dicts,
    Objects,
}

impl Template {
    /// The template of `event` (a dict or an SDK object, as `of` says), fed
    /// with `event_type`, whose general path was the common event `common`;
    /// `None` when it cannot be one (a value of another type, a string of the
    /// common event not found exactly once, …).
    pub(crate) fn learn(
        event: &Bound<'_, PyAny>,
        event_type: Option<&str>,
        common: Common,
        of: Of,
    ) -> Option<Self> {
        let mut learning = Learning {
            slots: Vec::new(),
            piece: common.piece,
            nonce: common.nonce,
            seq: common.seq,
            holes: 0,
            stamps: 0,
            of,
        };
        learning.value(event, 0)?;
        let stamps = usize::from(common.nonce.is_some()) + usize::from(common.seq.is_some());
        (learning.holes == 1 && learning.stamps == stamps).then(|| Self {
            slots: learning.slots,
            event_type: event_type.map(str::to_owned),
            common,
        })
    }

    /// What fills the template's places when `event`, fed with `event_type`,
    /// is the template's event with another string (and other stamps) there.
    #[inline]
    pub(crate) fn fill<'py>(
        &self,
        event: &Bound<'py, PyAny>,
        event_type: Option<&str>,
    ) -> Option<Filled<'py>> {
        if self.event_type.as_deref() != event_type {
            return None;
        }
        let mut at = 0;
        let mut hole = Filled::default();
        self.matches(event, &mut at, &mut hole)?;
        (at == self.slots.len() && hole.piece.is_some()).then_some(hole)
    }

    fn matches<'py>(
        &self,
        v: &Bound<'py, PyAny>,
        at: &mut usize,
        hole: &mut Filled<'py>,
    ) -> Option<()> {
        let slot = self.slots.get(*at)?;
        *at += 1;
        match slot {
            Slot::Dict(n) => {
                let d = v.cast_exact::<PyDict>().ok()?;
                if d.len() != *n {
                    return None;
                }
                self.members(d, at, hole)
            }
            Slot::List(n) => {
                let l = v.cast_exact::<PyList>().ok()?;
                if l.len() != *n {
                    return None;
                }
                for item in l {
                    self.matches(&item, at, hole)?;
                }
                Some(())
            }
            Slot::Str(t) => t.is(v).then_some(()),
            Slot::Int(i) => {
                (v.is_exact_instance_of::<PyInt>() && v.extract::<i64>().ok()? == *i).then_some(())
            }
            Slot::Float(bits) => {
                let f = v.cast_exact::<PyFloat>().ok()?;
                (f.value().to_bits() == *bits).then_some(())
            }
            Slot::Bool(b) => {
                let is = v.cast_exact::<PyBool>().ok()?;
                (is.is_true() == *b).then_some(())
            }
            Slot::Null => v.is_none().then_some(()),
            Slot::Hole => {
                hole.piece = Some(v.cast_exact::<PyString>().ok()?.clone());
                Some(())
            }
            Slot::Nonce => {
                hole.nonce = Some(v.cast_exact::<PyString>().ok()?.clone());
                Some(())
            }
            Slot::Seq => {
                if !v.is_exact_instance_of::<PyInt>() {
                    return None;
                }
                hole.seq = Some(v.extract::<u64>().ok()?);
                Some(())
            }
            Slot::Model {
                class,
                fields_set,
                len,
                extra,
            } => {
                if !v.get_type().is(class) {
                    return None;
                }
                let (dict, set, extras) = super::sdk::parts(v)?;
                if dict.len() != *len
                    || extras.as_ref().map_or(0, |e| e.len()) != *extra
                    || set.len() != fields_set.len()
                {
                    return None;
                }
                // As many fields set, each of the template's among them: the
                // same set. (Looking the template's up reads only the slots
                // they hash to, where comparing the sets would walk the whole
                // table of the object's, memory not otherwise read.)
                for name in fields_set {
                    if !set.contains(name.bind(v.py())).ok()? {
                        return None;
                    }
                }
                // The same fields are set and `__dict__` has the same keys in
                // the same order: the values of the fields set are compared.
                for (k, value) in &dict {
                    match self.slots.get(*at)? {
                        Slot::Field(key) if key.is(&k) => {
                            *at += 1;
                            self.matches(&value, at, hole)?;
                        }
                        Slot::Unset(key) if key.is(&k) => *at += 1,
                        _ => return None,
                    }
                }
                match extras {
                    Some(e) => self.members(&e, at, hole),
                    None => Some(()),
                }
            }
            Slot::Key(_) | Slot::Field(_) | Slot::Unset(_) => None,
        }
    }

    fn members<'py>(
        &self,
        d: &Bound<'py, PyDict>,
        at: &mut usize,
        hole: &mut Filled<'py>,
    ) -> Option<()> {
        for (k, value) in d {
            let Some(Slot::Key(key)) = self.slots.get(*at) else {
                return None;
            };
            *at += 1;
            if !key.is(&k) {
                return None;
            }
            self.matches(&value, at, hole)?;
        }
        Some(())
    }
}

/// The walk that makes a template.
struct Learning {
    slots: Vec<Slot>,
    /// Where the common event's string is (address and length of its UTF-8).
    piece: (usize, usize),
    /// Where its nonce is, and its sequence number (`Common`).
    nonce: Option<(usize, usize)>,
    seq: Option<u64>,
    holes: usize,
    /// The places of stamps found.
    stamps: usize,
    of: Of,
}

impl Learning {
    fn value(&mut self, v: &Bound<'_, PyAny>, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        if let Ok(s) = v.cast_exact::<PyString>() {
            let text = s.to_str().ok()?;
            let at = (text.as_ptr() as usize, text.len());
            let slot = if at == self.piece {
                self.holes += 1;
                Slot::Hole
            } else if Some(at) == self.nonce {
                self.stamps += 1;
                Slot::Nonce
            } else {
                Slot::Str(Text::of(s)?)
            };
            self.slots.push(slot);
            return Some(());
        }
        if let Ok(d) = v.cast_exact::<PyDict>() {
            return self.members(d, depth);
        }
        if let Ok(l) = v.cast_exact::<PyList>() {
            self.slots.push(Slot::List(l.len()));
            for item in l {
                self.value(&item, depth + 1)?;
            }
            return Some(());
        }
        let slot = if v.is_none() {
            Slot::Null
        } else if let Ok(b) = v.cast_exact::<PyBool>() {
            Slot::Bool(b.is_true())
        } else if v.is_exact_instance_of::<PyInt>() {
            Slot::Int(v.extract().ok()?)
        } else if let Ok(f) = v.cast_exact::<PyFloat>() {
            Slot::Float(f.value().to_bits())
        } else if self.of == Of::Objects {
            let (dict, set, extras) = super::sdk::parts(v)?;
            let fields_set = set
                .iter()
                .map(|k| k.cast_into_exact::<PyString>().ok().map(Bound::unbind))
                .collect::<Option<Box<[_]>>>()?;
            let at = self.slots.len();
            self.slots.push(Slot::Null);
            for (k, value) in &dict {
                let k = k.cast_exact::<PyString>().ok()?;
                if set.contains(k).ok()? {
                    self.slots.push(Slot::Field(Text::of(k)?));
                    self.member(k, &value, depth)?;
                } else {
                    self.slots.push(Slot::Unset(Text::of(k)?));
                }
            }
            let extra = extras.as_ref().map_or(0, |e| e.len());
            if let Some(e) = &extras {
                for (k, value) in e {
                    let k = k.cast_exact::<PyString>().ok()?;
                    self.slots.push(Slot::Key(Text::of(k)?));
                    self.member(k, &value, depth)?;
                }
            }
            let model = Slot::Model {
                class: v.get_type().unbind(),
                fields_set,
                len: dict.len(),
                extra,
            };
            *self.slots.get_mut(at)? = model;
            return Some(());
        } else {
            return None;
        };
        self.slots.push(slot);
        Some(())
    }

    fn members(&mut self, d: &Bound<'_, PyDict>, depth: usize) -> Option<()> {
        self.slots.push(Slot::Dict(d.len()));
        for (k, value) in d {
            let k = k.cast_exact::<PyString>().ok()?;
            self.slots.push(Slot::Key(Text::of(k)?));
            self.member(k, &value, depth)?;
        }
        Some(())
    }

    /// The value of the member `k` of a dict or model at `depth`: the
    /// event's sequence number is a place of the template (a top-level
    /// `sequence_number`, exactly an `int`, of the value the core noted).
    fn member(
        &mut self,
        k: &Bound<'_, PyString>,
        v: &Bound<'_, PyAny>,
        depth: usize,
    ) -> Option<()> {
        if depth == 0
            && self.seq.is_some()
            && v.is_exact_instance_of::<PyInt>()
            && k.to_str().ok()? == "sequence_number"
            && v.extract::<u64>().ok() == self.seq
        {
            self.stamps += 1;
            self.slots.push(Slot::Seq);
            return Some(());
        }
        self.value(v, depth + 1)
    }
}
