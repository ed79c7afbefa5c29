//! Which response and which item an event names (Q54, Q59): ids checked
//! against the stream's first response and each output index's item,
//! with GitHub Copilot's rotated ids told apart from misrouting.

#![allow(clippy::wildcard_imports)]

use super::*;

impl State {
    /// The call an argument delta names: the one the last event (a delta of
    /// the same output index and item, whose call [`Self::remember_delta`]
    /// kept) named, given back as the hit, else [`Self::call`]'s. (Off with
    /// the fast paths, for the tests that hold them to the general path.)
    pub(super) fn delta_call(
        &mut self,
        s: &mut Stream,
        oi: Option<i64>,
        item_id: &str,
        kind: Option<&str>,
        last: Option<LastDelta>,
        live: &mut Live<'_>,
    ) -> R<(i64, Option<LastDelta>)> {
        match last {
            Some(hit) if hit.0 == oi.unwrap_or(-1) && hit.1 == item_id && scan::enabled() => {
                Ok((hit.2, Some(hit)))
            }
            _ => Ok((self.call(s, oi, item_id, ("", ""), kind, false, live)?, None)),
        }
    }

    /// Keeps `key` as the call of the delta just applied when [`Self::call`]
    /// would give it again, changing nothing, for the next event of the same
    /// output index and item: the output index's call is `key`, and the item
    /// id (if any) is that index's and the call holds its provider state. A
    /// `hit` of [`Self::delta_call`] is kept as it is.
    pub(super) fn remember_delta(
        &mut self,
        s: &mut Stream,
        oi: Option<i64>,
        item_id: &str,
        key: i64,
        hit: Option<LastDelta>,
    ) {
        if hit.is_some() {
            *self.last_delta = hit;
            return;
        }
        let oi = oi.unwrap_or(-1);
        let Some(ch) = s.existing(C) else {
            return;
        };
        let same = ch.call_at((NS_TOOL, oi, 0)) == Some(key)
            && (item_id.is_empty()
                || (self.item_at.get(&oi).is_some_and(|held| held == item_id)
                    && self.items.get(item_id) == Some(&oi)
                    && ch.tools.get(key).is_some_and(|b| b.provider_state.is_some())));
        if same {
            *self.last_delta = Some((oi, item_id.to_owned(), key));
        }
    }

    /// An event that names an item (`item_id`) must name the item its
    /// output index holds: an event for another item (an early `done` for
    /// `fc_1` read as `fc_2`'s arguments) is refused, naming both.
    ///
    /// Q59: an item id never seen before, on an event whose output index holds
    /// an item announced by `output_item.added` and not done yet, is the same
    /// item under a rotated id (GitHub Copilot gives every event a new one):
    /// `Ok(true)`. An id naming another known item stays refused.
    pub(super) fn same_item(&mut self, oi: i64, item_id: &str) -> R<bool> {
        if item_id.is_empty() {
            return Ok(false);
        }
        let held = self.item_at.get(&oi).filter(|held| held.as_str() != item_id);
        let elsewhere = self.items.get(item_id).filter(|&&at| at != oi);
        if held.is_none() && elsewhere.is_none() {
            self.item_at.entry(oi).or_insert_with(|| item_id.to_owned());
            return Ok(false);
        }
        if held.is_some() && !self.items.contains_key(item_id) && self.open_items.contains(&oi) {
            return Ok(true);
        }
        let detail = match (held, elsewhere) {
            (Some(held), _) => format!(
                "an event names item {item_id:?} at output index {oi}, which holds item \
                 {held:?}: whose arguments these are cannot be told"
            ),
            (None, Some(at)) => format!(
                "an event names item {item_id:?} at output index {oi}, but that item is at \
                 output index {at}: whose arguments these are cannot be told"
            ),
            (None, None) => String::new(),
        };
        Err(Fail::Bad {
            kind: crate::providers::DecodeKind::BadValue,
            detail,
        })
    }

    /// Q54: a capture that holds two responses (a second `response.created`
    /// with another response id, its `sequence_number` from 0 again) is
    /// refused loudly, before the sequence numbers would pass its events off
    /// as resent ones (Q33): one assembler reads one response, and which
    /// calls belong to which cannot be left to chance. The same response
    /// again (its id) stays Q33's resend.
    ///
    /// Q59: another id on any other event that moves the numbered stream on
    /// is the same response under a rotated id
    /// (GitHub Copilot gives every event its own): a note, the first id kept.
    pub(super) fn same_response(
        &mut self,
        s: &mut Stream,
        kind: &str,
        response: Option<&Response>,
        seq: Option<u64>,
    ) -> R {
        let Some(id) = response.and_then(|r| r.id.as_deref()).filter(|id| !id.is_empty()) else {
            return Ok(());
        };
        // Rotation is only told apart where the stream is numbered: an event
        // without a sequence number naming another response stays Q54's.
        let moves_on = seq.is_some_and(|n| self.last_seq.is_none_or(|last| n > last));
        let starts_over = kind == "response.created" || !moves_on;
        match &self.response_id {
            None => {
                self.response_id = Some(id.to_owned());
                Ok(())
            }
            Some(first) if first == id => Ok(()),
            Some(first) if !starts_over => {
                let first = first.clone();
                let ch = s.choice(C)?;
                if !ch.notes.iter().any(|n| n.kind == NoteKind::ResponseIdRotated) {
                    s.note(
                        C,
                        NoteKind::ResponseIdRotated,
                        None,
                        format!(
                            "{kind} names the response {id:?} in the numbered stream of the \
                             response {first:?} (no second response.created, no sequence \
                             number again): one response whose id rotates"
                        ),
                    );
                }
                Ok(())
            }
            Some(first) => Err(violation(
                Rule::StartedTwice,
                Some(format!("response {id}")),
                format!(
                    "{kind} names the response {id:?} in the stream of the response \
                     {first:?}: a second response in one stream is not read (feed each \
                     response to an assembler of its own)"
                ),
            )),
        }
    }
}
