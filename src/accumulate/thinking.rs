use std::collections::BTreeMap;

use super::{too_many, Budget, Error};
use crate::blocks::ThinkingBlock;

/// Accumulates reasoning by index: text appended, the signature's last
/// non-empty value wins together with its format, provider state replaced only
/// when both state and format are non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thinking {
    blocks: BTreeMap<i64, ThinkingBlock>,
    max_blocks: usize,
    budget: Budget,
}

/// One reasoning fragment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThinkingFragment<'a> {
    pub thinking: &'a str,
    pub signature: &'a str,
    pub signature_format: &'a str,
    pub provider_state: Option<&'a str>,
    pub provider_state_format: &'a str,
}

impl Thinking {
    /// An empty accumulator.
    #[must_use]
    pub fn new(max_blocks: usize, max_bytes: usize) -> Self {
        Self {
            blocks: BTreeMap::new(),
            max_blocks,
            budget: Budget::new("max_bytes", max_bytes),
        }
    }

    /// Adds one fragment of the block at `index`.
    ///
    /// # Errors
    /// [`Error::Limit`] when the fragment would cross a limit; nothing changes then.
    pub fn add(&mut self, index: i64, f: ThinkingFragment<'_>) -> Result<(), Error> {
        let state = f
            .provider_state
            .filter(|s| !s.is_empty() && !f.provider_state_format.is_empty());
        let incoming = f
            .thinking
            .len()
            .saturating_add(f.signature.len())
            .saturating_add(f.signature_format.len())
            .saturating_add(state.map_or(0, |s| s.len() + f.provider_state_format.len()));
        let target = || format!("thinking block at index {index}");
        let used = self.budget.check(incoming, target)?;
        if !self.blocks.contains_key(&index) && self.blocks.len() >= self.max_blocks {
            return Err(too_many("max_blocks", self.max_blocks, target()));
        }
        let block = self.blocks.entry(index).or_default();
        block.thinking.push_str(f.thinking);
        if !f.signature.is_empty() {
            f.signature.clone_into(&mut block.signature);
            f.signature_format.clone_into(&mut block.signature_format);
        }
        if let Some(state) = state {
            block.provider_state = Some(state.to_owned());
            f.provider_state_format
                .clone_into(&mut block.provider_state_format);
        }
        self.budget.used = used;
        Ok(())
    }

    /// A fresh copy of every block, in ascending index order.
    #[must_use]
    pub fn blocks(&self) -> Vec<ThinkingBlock> {
        self.blocks.values().cloned().collect()
    }

    /// Every block with its index, in ascending index order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &ThinkingBlock)> {
        self.blocks.iter().map(|(k, v)| (*k, v))
    }

    /// The number of distinct indexes seen.
    #[must_use]
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True until the first fragment.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
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

    /// `(max_blocks, max_bytes)`.
    #[must_use]
    pub fn limits(&self) -> (usize, usize) {
        (self.max_blocks, self.budget.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_travels_with_its_format() {
        let mut t = Thinking::new(4, 1000);
        let add = |t: &mut Thinking, i, th, sig, fmt| {
            t.add(
                i,
                ThinkingFragment {
                    thinking: th,
                    signature: sig,
                    signature_format: fmt,
                    ..Default::default()
                },
            )
        };
        assert!(add(&mut t, 1, "b", "", "").is_ok());
        assert!(add(&mut t, 0, "a", "s1", "anthropic").is_ok());
        assert!(add(&mut t, 0, "a", "", "ignored").is_ok());
        assert!(add(&mut t, 0, "", "s2", "").is_ok());
        let b = t.blocks();
        assert_eq!(b[0].thinking, "aa");
        assert_eq!(
            (b[0].signature.as_str(), b[0].signature_format.as_str()),
            ("s2", "")
        );
        assert_eq!(b[1].thinking, "b");
    }
}
