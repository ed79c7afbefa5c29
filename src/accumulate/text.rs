use super::{Budget, Error};

/// Appends the text of a single block (the `Text` and `Refusal` accumulators).
///
/// [`Appender::block`] is `None` until the first add; an add of empty text
/// still yields a block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Appender {
    text: Option<String>,
    budget: Budget,
    #[serde(with = "crate::statics")]
    what: crate::statics::Name,
}

impl Appender {
    /// An empty accumulator for `what` (`"text"`, `"refusal"`) bounded by `max_bytes`.
    #[must_use]
    pub fn new(what: &'static str, max_bytes: usize) -> Self {
        Self {
            text: None,
            budget: Budget::new("max_bytes", max_bytes),
            what,
        }
    }

    /// Appends `text`.
    ///
    /// # Errors
    /// [`Error::Limit`] when the text would pass `max_bytes`; nothing changes then.
    pub fn add(&mut self, text: &str) -> Result<(), Error> {
        let used = self.budget.check(text.len(), || self.what.to_owned())?;
        self.budget.used = used;
        self.text.get_or_insert_with(String::new).push_str(text);
        Ok(())
    }

    /// The text so far, or `None` before the first add.
    #[must_use]
    pub fn block(&self) -> Option<&str> {
        self.text.as_deref()
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

    /// The byte limit.
    #[must_use]
    pub fn max_bytes(&self) -> usize {
        self.budget.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_until_first_add_then_appends() {
        let mut a = Appender::new("text", 10);
        assert_eq!(a.block(), None);
        assert!(a.add("").is_ok());
        assert_eq!(a.block(), Some(""));
        assert!(a.add("héllo").is_ok());
        assert!(a.add(" wörld").is_err());
        assert_eq!(a.block(), Some("héllo"));
    }
}
