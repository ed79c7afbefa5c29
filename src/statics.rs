//! Serde for the `&'static str` names kept in state (limit names, what a
//! buffer holds): written as strings, read back as the same static strings.
//!
//! Reading interns each distinct name once (it is leaked, so that it can be
//! `'static`): a saved state names only the few dozen names the code uses, and
//! the table is bounded, so a crafted state cannot grow it without end.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use serde::{de, Deserialize, Deserializer, Serializer};

/// A static name in a serialised struct. (An alias, because serde borrows a
/// field spelled `&str` from its input, which a `'static` one cannot be.)
pub(crate) type Name = &'static str;

/// Distinct names interned at most; more is refused as a malformed state.
const MAX_NAMES: usize = 1024;
/// Bytes of one name at most.
const MAX_NAME_BYTES: usize = 256;

static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// The static string equal to `name`, interned on first use.
///
/// # Errors
/// A message when the name is too long or the table is full.
pub(crate) fn intern(name: &str) -> Result<&'static str, String> {
    if name.len() > MAX_NAME_BYTES {
        return Err(format!("a name of {} bytes in a saved state", name.len()));
    }
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = names.get(name) {
        return Ok(found);
    }
    if names.len() >= MAX_NAMES {
        return Err("too many distinct names in saved states".to_owned());
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    Ok(leaked)
}

/// `#[serde(with = "crate::statics")]` on a `&'static str` field.
pub(crate) fn serialize<S: Serializer>(name: &Name, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(name)
}

/// See [`serialize`].
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
    let name = String::deserialize(d)?;
    intern(&name).map_err(de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_back_as_one_static_string() {
        let a = intern("max_calls").unwrap_or_default();
        let b = intern(&String::from("max_calls")).unwrap_or_default();
        assert!(std::ptr::eq(a, b));
        assert!(intern(&"x".repeat(MAX_NAME_BYTES + 1)).is_err());
    }
}

/// `#[serde(with = "crate::statics::pairs")]` on a map whose keys are not
/// strings or integers (a tuple): written as a list of `[key, value]` pairs.
pub(crate) mod pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub(crate) fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}
