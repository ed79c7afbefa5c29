use std::collections::BTreeMap;

use super::{too_many, Budget, Error};

/// Blocks by index, bounded in number and in bytes taken in: the shape that
/// [`Thinking`](super::Thinking) and [`Images`](super::Images) share. Each
/// block type adds its own `new` and `add`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Indexed<T> {
    entries: BTreeMap<i64, T>,
    max_entries: usize,
    #[serde(with = "crate::statics")]
    entries_limit: crate::statics::Name,
    budget: Budget,
}

impl<T: Clone + Default> Indexed<T> {
    pub(crate) fn with_limits(
        entries_limit: &'static str,
        max_entries: usize,
        max_bytes: usize,
    ) -> Self {
        Self {
            entries: BTreeMap::new(),
            max_entries,
            entries_limit,
            budget: Budget::new("max_bytes", max_bytes),
        }
    }

    /// The entry at `index` (made when absent) for a fragment of `incoming`
    /// bytes, once both limits allow it; the bytes are counted as taken in.
    pub(crate) fn admit(
        &mut self,
        index: i64,
        incoming: usize,
        what: &str,
    ) -> Result<&mut T, Error> {
        let target = || format!("{what} at index {index}");
        let used = self.budget.check(incoming, target)?;
        if !self.entries.contains_key(&index) && self.entries.len() >= self.max_entries {
            return Err(too_many(self.entries_limit, self.max_entries, target()));
        }
        self.budget.used = used;
        Ok(self.entries.entry(index).or_default())
    }

    /// A fresh copy of every block, in ascending index order.
    #[must_use]
    pub fn blocks(&self) -> Vec<T> {
        self.entries.values().cloned().collect()
    }

    /// Every block with its index, in ascending index order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &T)> {
        self.entries.iter().map(|(k, v)| (*k, v))
    }

    /// The number of distinct indexes seen.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True until the first fragment.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All bytes taken in so far (what `max_bytes` bounds).
    #[must_use]
    pub fn bytes_used(&self) -> usize {
        self.budget.used
    }

    /// Raises the count of bytes taken in to `used` (restoring a saved accumulator).
    pub fn restore_bytes_used(&mut self, used: usize) {
        self.budget.used = self.budget.used.max(used);
    }

    /// `(max_entries, max_bytes)`, as the constructor takes them.
    #[must_use]
    pub fn limits(&self) -> (usize, usize) {
        (self.max_entries, self.budget.max)
    }
}
