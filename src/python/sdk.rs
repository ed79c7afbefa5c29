//! The classes of the provider SDKs whose objects `feed` reads in place: the
//! pydantic models of the `openai`, `anthropic` and `litellm` packages (chat chunks,
//! Responses events, Anthropic stream events and everything they nest).
//!
//! Such an object is read as its `to_dict(mode="json")` would be, without
//! making it: the fields of its `__dict__` that are in `__pydantic_fields_set__`
//! (`exclude_unset`), each under its serialization alias (`by_alias`), then
//! the fields of `__pydantic_extra__`. A class is looked at once, the first
//! time an object of it is fed ([`learn`]), and only one whose dump is exactly
//! that is read so ([`Recipe`]): a subclass of the SDK's own `BaseModel`,
//! defined in the SDK's package, that overrides neither `to_dict` nor
//! `model_dump` (but for LiteLLM's `exclude_unset` default, which `to_dict`
//! never reaches) nor attribute access, with no serializer of its own, no
//! computed field and no excluded field. LiteLLM's chunks are such models
//! (of the `openai` SDK's base, defined in `litellm`). Every other class
//! (google-genai's, a user's subclass) keeps the general path: its
//! `to_dict()` or `model_dump()` written out by Python.
//!
//! Reading a known object runs no Python code (`__dict__` and the two slots
//! are read through the base object's attribute access, the keys are exact
//! `str`), so it happens under the binding's lock like a dict's. Anything the
//! reading is not sure of — a key of `__dict__` that is not a declared field,
//! an extra field named like a field, a value that is not JSON data — sends
//! the whole event to the general path, which gives today's result or error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PySet, PyString, PyType};

/// How many classes are remembered; past that, a new class takes the general
/// path each time (the cache stays bounded whatever classes are fed).
const MAX_CLASSES: usize = 4096;

/// How a known SDK class is read.
pub(crate) struct Recipe {
    /// Its declared field names.
    names: Py<PyFrozenSet>,
    /// The same, in the order of declaration: the keys of a `__dict__` that
    /// pydantic or the SDK filled are these very objects, in this order, so
    /// that most keys are known declared by a pointer comparison.
    order: Vec<Py<PyString>>,
    /// The fields whose key in the dump is not their name: (name, key).
    aliases: Vec<(Box<str>, Py<PyString>)>,
}

impl Recipe {
    /// Whether `name`, the `n`th key of a `__dict__`, is one of the declared
    /// fields.
    #[inline]
    pub(crate) fn declares(&self, n: usize, name: &Bound<'_, PyString>) -> bool {
        self.order.get(n).is_some_and(|o| name.is(o))
            || self.names.bind(name.py()).contains(name).unwrap_or(false)
    }

    /// The key of the field `name` in the dump (its alias, else itself).
    #[inline]
    pub(crate) fn key<'py>(&self, name: &Bound<'py, PyString>) -> Option<Bound<'py, PyString>> {
        if self.aliases.is_empty() {
            return Some(name.clone());
        }
        let text = name.to_str().ok()?;
        Some(
            self.aliases
                .iter()
                .find(|(n, _)| **n == *text)
                .map_or_else(|| name.clone(), |(_, k)| k.bind(name.py()).clone()),
        )
    }
}

/// What is known of a class: how to read it, or that it is not read here.
enum Known {
    Read(Arc<Recipe>),
    General,
}

/// Classes seen, by address; each entry keeps its class alive, so that an
/// address is never reused for another class while it is remembered. A leaf
/// lock: nothing waits for anything and no Python code runs while it is held.
struct Classes(HashMap<usize, (Py<PyType>, Known)>);

static CLASSES: Mutex<Option<Classes>> = Mutex::new(None);

/// What [`recipe`] found for a class.
pub(crate) enum Lookup {
    Read(Arc<Recipe>),
    /// Not a class read here: the general path.
    General,
    /// Not looked at yet: [`learn`] it (outside the binding's lock).
    Unknown,
}

/// How objects of `ty` are read, as far as it is known.
#[inline]
pub(crate) fn recipe(ty: &Bound<'_, PyType>) -> Lookup {
    let classes = CLASSES.lock().unwrap_or_else(PoisonError::into_inner);
    match classes
        .as_ref()
        .and_then(|c| c.0.get(&(ty.as_ptr() as usize)))
    {
        Some((_, Known::Read(r))) => Lookup::Read(Arc::clone(r)),
        Some((_, Known::General)) => Lookup::General,
        None if classes.as_ref().is_some_and(|c| c.0.len() >= MAX_CLASSES) => Lookup::General,
        None => Lookup::Unknown,
    }
}

/// Looks at `ty` once and remembers what it is. Runs Python code (attribute
/// reads on the class): never under the binding's lock.
pub(crate) fn learn(ty: &Bound<'_, PyType>) {
    let known = match examine(ty) {
        Ok(Some(r)) => Known::Read(Arc::new(r)),
        Ok(None) | Err(_) => Known::General,
    };
    let mut classes = CLASSES.lock().unwrap_or_else(PoisonError::into_inner);
    let classes = classes.get_or_insert_with(|| Classes(HashMap::new()));
    if classes.0.len() < MAX_CLASSES {
        classes
            .0
            .entry(ty.as_ptr() as usize)
            .or_insert_with(|| (ty.clone().unbind(), known));
    }
}

/// The SDK packages whose models are read in place, and their base model's
/// module. LiteLLM's chunks (`ModelResponseStream` and what it nests) are
/// models of the `openai` SDK's base, defined in LiteLLM.
const SDKS: [(&str, &str); 3] = [
    ("openai", "openai._models"),
    ("anthropic", "anthropic._models"),
    ("litellm", "openai._models"),
];

/// The recipe of `ty`, or `None` when its objects are not read in place.
fn examine(ty: &Bound<'_, PyType>) -> PyResult<Option<Recipe>> {
    let py = ty.py();
    let module: String = ty.getattr("__module__")?.extract()?;
    let package = module.split('.').next().unwrap_or_default();
    let Some((_, models)) = SDKS.iter().find(|(p, _)| *p == package) else {
        return Ok(None);
    };
    // Only an SDK already imported (an object of it is at hand).
    let sys_modules = py.import("sys")?.getattr("modules")?;
    let Ok(models) = sys_modules.get_item(*models) else {
        return Ok(None);
    };
    let base = models.getattr("BaseModel")?;
    let base = base.cast::<PyType>()?;
    if !ty.is_subclass(base)? {
        return Ok(None);
    }
    // The dump is the base's, and so is attribute access. (`model_dump` may be
    // LiteLLM's override that only defaults `exclude_unset`, which `to_dict`
    // passes: `_dumps_as_base` knows it by its code.)
    let dumps_as_base = py
        .import("toolstitch.messages")?
        .getattr("_dumps_as_base")?
        .call1((ty, base))?
        .is_truthy()?;
    if !dumps_as_base {
        return Ok(None);
    }
    for name in ["to_dict", "__getattribute__", "__getattr__"] {
        let ours = ty.getattr(name).ok();
        let theirs = base.getattr(name).ok();
        match (ours, theirs) {
            (Some(a), Some(b)) if a.is(&b) => {}
            (None, None) => {}
            _ => return Ok(None),
        }
    }
    let object = py.get_type::<pyo3::types::PyAny>();
    if !ty
        .getattr("__getattribute__")?
        .is(&object.getattr("__getattribute__")?)
    {
        return Ok(None);
    }
    // No serializer, computed field or excluded field changes the dump.
    let decorators = ty.getattr("__pydantic_decorators__")?;
    for kind in ["field_serializers", "model_serializers"] {
        if decorators.getattr(kind)?.len()? != 0 {
            return Ok(None);
        }
    }
    if ty.getattr("__pydantic_computed_fields__")?.len()? != 0 {
        return Ok(None);
    }
    let fields = ty.getattr("__pydantic_fields__")?;
    let fields = fields.cast::<PyDict>()?;
    let mut aliases = Vec::new();
    let mut names = Vec::with_capacity(fields.len());
    for (name, info) in fields {
        let name = name.cast_into_exact::<PyString>()?;
        let excluded = info.getattr("exclude")?;
        if !excluded.is_none() && excluded.is_truthy()? {
            return Ok(None);
        }
        if info
            .getattr("exclude_if")
            .ok()
            .is_some_and(|f| !f.is_none())
        {
            return Ok(None);
        }
        let alias = info.getattr("serialization_alias")?;
        if !alias.is_none() {
            let alias = alias.cast_into_exact::<PyString>()?;
            if alias.to_str()? != name.to_str()? {
                aliases.push((name.to_str()?.into(), alias.unbind()));
            }
        }
        names.push(name);
    }
    Ok(Some(Recipe {
        names: PyFrozenSet::new(py, &names)?.unbind(),
        order: names.into_iter().map(Bound::unbind).collect(),
        aliases,
    }))
}

/// A model's `__dict__`, fields set and non-empty extra fields.
pub(crate) type Parts<'py> = (
    Bound<'py, PyDict>,
    Bound<'py, PySet>,
    Option<Bound<'py, PyDict>>,
);

/// A known model's `__dict__`, its fields set and its extra fields (`None`
/// when it has none); `None` when they are not of the exact types pydantic
/// keeps them in.
#[inline]
pub(crate) fn parts<'py>(obj: &Bound<'py, PyAny>) -> Option<Parts<'py>> {
    let py = obj.py();
    let dict = obj
        .getattr(pyo3::intern!(py, "__dict__"))
        .ok()?
        .cast_into_exact::<PyDict>()
        .ok()?;
    let set = obj
        .getattr(pyo3::intern!(py, "__pydantic_fields_set__"))
        .ok()?
        .cast_into_exact::<PySet>()
        .ok()?;
    let extra = obj.getattr(pyo3::intern!(py, "__pydantic_extra__")).ok()?;
    let extra = if extra.is_none() {
        None
    } else {
        Some(extra.cast_into_exact::<PyDict>().ok()?).filter(|d| !d.is_empty())
    };
    Some((dict, set, extra))
}
