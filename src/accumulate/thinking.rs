use super::{Error, Indexed};
use crate::blocks::ThinkingBlock;

/// Accumulates reasoning by index: text appended, the signature's last
/// non-empty value wins together with its format, provider state replaced only
/// when both state and format are non-empty.
pub type Thinking = Indexed<ThinkingBlock>;

/// One reasoning fragment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThinkingFragment<'a> {
    pub thinking: &'a str,
    pub signature: &'a str,
    pub signature_format: &'a str,
    pub provider_state: Option<&'a str>,
    pub provider_state_format: &'a str,
}

impl Indexed<ThinkingBlock> {
    /// An empty accumulator.
    #[must_use]
    pub fn new(max_blocks: usize, max_bytes: usize) -> Self {
        Self::with_limits("max_blocks", max_blocks, max_bytes)
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
        let block = self.admit(index, incoming, "thinking block")?;
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
        Ok(())
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
