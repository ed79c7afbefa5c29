use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use super::{
    too_many, Budget, Error, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_TOTAL_BYTES,
};
use crate::blocks::ToolUseBlock;

/// Bounds on one [`ToolUses`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolUseLimits {
    /// Distinct indexes (calls) held at once.
    pub max_calls: usize,
    /// Bytes of input of one call.
    pub max_input_bytes: usize,
    /// All bytes taken in (ids, names, input, provider state) over the accumulator's life.
    pub max_total_bytes: usize,
}

impl Default for ToolUseLimits {
    fn default() -> Self {
        Self {
            max_calls: DEFAULT_MAX_ENTRIES,
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

/// Accumulates tool-call fragments by the provider's index (the seed contract).
///
/// - `id` and `name`: the last non-empty value wins; an empty one never clears;
/// - `input` is appended verbatim, never parsed; an empty fragment still creates
///   the entry for its index;
/// - provider state is replaced only when both state and format are non-empty;
/// - [`ToolUses::blocks`] gives one block per index seen, in ascending order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolUses {
    /// Boxed: a map's node holds room for eleven entries, and most streams
    /// have one or two calls.
    calls: BTreeMap<i64, Box<ToolUseBlock>>,
    limits: ToolUseLimits,
    total: usize,
}

fn call_at(index: i64) -> String {
    format!("tool call at index {index}")
}

impl ToolUses {
    /// An empty accumulator with the given limits.
    #[must_use]
    pub fn new(limits: ToolUseLimits) -> Self {
        Self {
            calls: BTreeMap::new(),
            limits,
            total: 0,
        }
    }

    /// The limits this accumulator enforces.
    #[must_use]
    pub fn limits(&self) -> ToolUseLimits {
        self.limits
    }

    /// Adds one fragment of the call at `index`.
    ///
    /// # Errors
    /// [`Error::Limit`] when the fragment would cross a limit; nothing changes then.
    pub fn add(
        &mut self,
        index: i64,
        id: &str,
        name: &str,
        input_json: &str,
        provider_state: Option<&str>,
        provider_state_format: &str,
    ) -> Result<(), Error> {
        let state = match provider_state {
            Some(s) if !s.is_empty() && !provider_state_format.is_empty() => Some(s),
            _ => None,
        };
        let incoming = id
            .len()
            .saturating_add(name.len())
            .saturating_add(input_json.len())
            .saturating_add(state.map_or(0, |s| s.len() + provider_state_format.len()));
        let total = Budget {
            used: self.total,
            max: self.limits.max_total_bytes,
            name: "max_total_bytes",
        }
        .check(incoming, || call_at(index))?;

        let held = self.calls.len();
        let call = match self.calls.entry(index) {
            Entry::Occupied(e) => {
                let call = e.into_mut();
                if !input_json.is_empty() {
                    Budget {
                        used: call.input.len(),
                        max: self.limits.max_input_bytes,
                        name: "max_input_bytes",
                    }
                    .check(input_json.len(), || call_at(index))?;
                }
                call
            }
            Entry::Vacant(e) => {
                if held >= self.limits.max_calls {
                    return Err(too_many("max_calls", self.limits.max_calls, call_at(index)));
                }
                Budget::new("max_input_bytes", self.limits.max_input_bytes)
                    .check(input_json.len(), || call_at(index))?;
                // A new call: its strings made at their size, in one lookup.
                e.insert(Box::new(ToolUseBlock {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    input: input_json.to_owned(),
                    provider_state: state.map(str::to_owned),
                    provider_state_format: state
                        .map_or_else(String::new, |_| provider_state_format.to_owned()),
                    ..ToolUseBlock::default()
                }));
                self.total = total;
                return Ok(());
            }
        };

        if !id.is_empty() && call.id != id {
            id.clone_into(&mut call.id);
        }
        if !name.is_empty() && call.name != name {
            name.clone_into(&mut call.name);
        }
        call.input.push_str(input_json);
        if let Some(state) = state {
            call.provider_state = Some(state.to_owned());
            provider_state_format.clone_into(&mut call.provider_state_format);
        }
        self.total = total;
        Ok(())
    }

    /// Replaces the whole input of the call at `index` (creating the entry if
    /// needed). For provider adapters whose stream restates a call's final
    /// arguments (OpenAI Responses `done` events) and wins over the deltas.
    ///
    /// # Errors
    /// [`Error::Limit`] when the new input would cross a limit; nothing changes then.
    pub fn replace_input(&mut self, index: i64, input_json: &str) -> Result<(), Error> {
        let total = Budget {
            used: self.total,
            max: self.limits.max_total_bytes,
            name: "max_total_bytes",
        }
        .check(input_json.len(), || call_at(index))?;
        Budget::new("max_input_bytes", self.limits.max_input_bytes)
            .check(input_json.len(), || call_at(index))?;
        if !self.calls.contains_key(&index) && self.calls.len() >= self.limits.max_calls {
            return Err(too_many("max_calls", self.limits.max_calls, call_at(index)));
        }
        input_json.clone_into(&mut self.calls.entry(index).or_default().input);
        self.total = total;
        Ok(())
    }

    /// A fresh copy of every call, in ascending index order.
    #[must_use]
    pub fn blocks(&self) -> Vec<ToolUseBlock> {
        self.calls.values().map(|b| (**b).clone()).collect()
    }

    /// Every call with its index, in ascending index order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &ToolUseBlock)> {
        self.calls.iter().map(|(k, v)| (*k, &**v))
    }

    /// The call at `index`, if any fragment for it arrived.
    #[must_use]
    pub fn get(&self, index: i64) -> Option<&ToolUseBlock> {
        self.calls.get(&index).map(|b| &**b)
    }

    /// The number of distinct indexes seen.
    #[must_use]
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// True until the first fragment is added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Raises the count of bytes taken in to `total` (restoring a saved accumulator,
    /// whose replaced ids and names no longer show in its calls).
    pub fn restore_total_bytes(&mut self, total: usize) {
        self.total = self.total.max(total);
    }

    /// All bytes taken in so far (what `max_total_bytes` bounds).
    #[must_use]
    pub fn total_bytes(&self) -> usize {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(t: &mut ToolUses, index: i64, id: &str, name: &str, input: &str) {
        assert!(t.add(index, id, name, input, None, "").is_ok());
    }

    #[test]
    fn seed_example() {
        let mut t = ToolUses::default();
        add(&mut t, 0, "call-1", "weather", "{\"city\":");
        add(&mut t, 0, "", "", "\"Boston\"}");
        let b = t.blocks();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].id, "call-1");
        assert_eq!(b[0].name, "weather");
        assert_eq!(b[0].input, "{\"city\":\"Boston\"}");
    }

    #[test]
    fn ascending_order_for_extreme_indexes() {
        let mut t = ToolUses::default();
        for i in [i64::MAX, 5, i64::MIN, -1, 0] {
            add(&mut t, i, &format!("id{i}"), "n", "");
        }
        let ids: Vec<_> = t.iter().map(|(k, _)| k).collect();
        assert_eq!(ids, vec![i64::MIN, -1, 0, 5, i64::MAX]);
    }

    #[test]
    fn last_non_empty_id_and_name_win_and_late_ones_are_captured() {
        let mut t = ToolUses::default();
        add(&mut t, 3, "", "", "{\"a\":");
        add(&mut t, 3, "late", "", "1");
        add(&mut t, 3, "", "tool", "}");
        add(&mut t, 3, "", "", "");
        add(&mut t, 3, "final", "", "");
        let b = &t.blocks()[0];
        assert_eq!(
            (b.id.as_str(), b.name.as_str(), b.input.as_str()),
            ("final", "tool", "{\"a\":1}")
        );
    }

    #[test]
    fn empty_fragment_creates_its_entry() {
        let mut t = ToolUses::default();
        assert!(t.is_empty());
        add(&mut t, 7, "", "", "");
        assert_eq!(t.len(), 1);
        assert_eq!(t.blocks()[0], ToolUseBlock::default());
    }

    #[test]
    fn provider_state_needs_both_parts_and_is_replaced() {
        let mut t = ToolUses::default();
        assert!(t.add(0, "", "", "", Some("\"a\""), "").is_ok());
        assert_eq!(t.blocks()[0].provider_state, None);
        assert!(t.add(0, "", "", "", Some("\"a\""), "gemini").is_ok());
        assert!(t.add(0, "", "", "", Some(""), "other").is_ok());
        assert!(t.add(0, "", "", "", None, "other").is_ok());
        assert!(t.add(0, "", "", "", Some("\"b\""), "gemini2").is_ok());
        let b = &t.blocks()[0];
        assert_eq!(b.provider_state.as_deref(), Some("\"b\""));
        assert_eq!(b.provider_state_format, "gemini2");
        // A call opened with everything at once holds all of it, and the
        // total counts all of it.
        assert!(t.add(1, "id", "n", "{}", Some("\"s\""), "g").is_ok());
        let b = &t.blocks()[1];
        let got = (b.id.as_str(), b.name.as_str(), b.input.as_str());
        assert_eq!(got, ("id", "n", "{}"));
        assert_eq!(
            (
                b.provider_state.as_deref(),
                b.provider_state_format.as_str()
            ),
            (Some("\"s\""), "g")
        );
        assert_eq!(t.total, 9 + 10 + 9);
    }

    #[test]
    fn limits_reject_the_offending_fragment_only() {
        let limits = ToolUseLimits {
            max_calls: 2,
            max_input_bytes: 4,
            max_total_bytes: 12,
        };
        let mut t = ToolUses::new(limits);
        add(&mut t, 0, "", "", "ab");
        let err = t.add(0, "", "", "abc", None, "");
        assert!(matches!(
            err,
            Err(Error::Limit {
                limit: "max_input_bytes",
                ..
            })
        ));
        add(&mut t, 1, "", "", "cd");
        let err = t.add(2, "", "", "", None, "");
        assert!(matches!(
            err,
            Err(Error::Limit {
                limit: "max_calls",
                ..
            })
        ));
        let err = t.add(1, "very-long-id", "", "", None, "");
        assert!(matches!(
            err,
            Err(Error::Limit {
                limit: "max_total_bytes",
                ..
            })
        ));
        let inputs: Vec<_> = t.blocks().into_iter().map(|b| b.input).collect();
        assert_eq!(inputs, vec!["ab", "cd"]);
        assert_eq!(t.total_bytes(), 4);
        let msg = t
            .add(0, "", "", "xyz", None, "")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("tool call at index 0") && msg.contains("max_input_bytes"),
            "{msg}"
        );
    }

    #[test]
    fn a_new_call_over_the_input_limit_is_not_created() {
        let mut t = ToolUses::new(ToolUseLimits {
            max_calls: 8,
            max_input_bytes: 2,
            max_total_bytes: 100,
        });
        assert!(t.add(4, "", "", "abc", None, "").is_err());
        assert!(t.is_empty());
    }
}
