//! The common event fed from decoded data without decoding it: what the
//! binding's memo of Python dicts and SDK objects needs of the core.
//!
//! The bytes path keeps a template of the last common event's text (a
//! [`super::scan::Memo`]); decoded data has no text, so the binding keeps its
//! own template of the event's Python objects. The core's part is in two
//! steps:
//!
//! 1. **Learning.** When the general, typed decode of a tree (a dict read in
//!    place) gives exactly a dialect's common event, the dialect notes its facts
//!    and where its one string is ([`Stream::learned`]); the assembler hands
//!    that to the binding as a [`Common`] once the event was applied without
//!    error.
//! 2. **Serving.** An event the binding finds equal, as JSON data, to that
//!    template except for that one string is the same event with another
//!    string: [`Assembler::feed_common`] applies it as the dialect applies the
//!    typed event its memo fills, counted and checked as any event.
//!
//! A dialect without a common event never notes one, so nothing is served
//! for it.
//!
//! **Stamps.** OpenAI adds a per-event nonce (`obfuscation`, on by default)
//! to every chat chunk and Responses event, and the Responses API numbers its
//! events (`sequence_number`): in a stream straight from the API no two
//! events are the same. A common event may carry those stamps; the template
//! then has a place for each besides the string, and the event is served with
//! its own stamps ([`Stamp`]), which the dialect applies as the general path
//! does (a nonce seen before is a replay, Q61; a number out of order is
//! Q33's). The bytes path's memo has places of its own for both
//! (`scan/memo.rs`).

use super::scan::{Facts, NotedEvent};
use super::state::Stream;
use super::{Assembler, Dialect, Error, Fail, Input, LiveEvent};

/// A dialect's common event, learned from a tree: its facts, the id it names
/// (a Responses delta's `item_id`, the same in every event the template
/// matches), the dialect, the event's own type (for messages, as the general
/// path names it), and the address and length of its string in the tree's
/// texts (compared, never dereferenced: the binding finds which of its strings
/// that was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Common {
    pub(crate) dialect: Dialect,
    pub(crate) facts: Facts,
    pub(crate) id: Option<String>,
    pub(crate) event_type: Option<String>,
    pub(crate) piece: (usize, usize),
    /// Where the event's nonce is (address and length, as `piece`), when it
    /// carries one.
    pub(crate) nonce: Option<(usize, usize)>,
    /// The event's `sequence_number`, when it carries one (the binding finds
    /// its place by it: the top-level member of that name).
    pub(crate) seq: Option<u64>,
}

/// The per-event stamps of a common event (see the module): its nonce and
/// its sequence number, as the event carries them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamp<'a> {
    pub(crate) nonce: Option<&'a str>,
    pub(crate) seq: Option<u64>,
}

/// Address and length of a string of the tree.
fn place(s: &str) -> (usize, usize) {
    (s.as_ptr() as usize, s.len())
}

/// Notes, for a tree, the facts of a dialect's common event and where its
/// string is (`common` gives both for an event that is exactly the common one).
#[inline]
pub(crate) fn note<E>(
    s: &mut Stream,
    input: Input<'_>,
    ev: &E,
    common: fn(&E) -> Option<(Facts, &str)>,
) {
    note_named(s, input, ev, |e| {
        common(e).map(|(f, p)| (f, None, p, Stamp::default()))
    });
}

/// [`note`] for a common event that may also name an id and carry stamps
/// (its facts, the id, its string and its stamps).
#[inline]
pub(crate) fn note_named<E>(
    s: &mut Stream,
    input: Input<'_>,
    ev: &E,
    common: impl Fn(&E) -> Option<(Facts, Option<&str>, &str, Stamp<'_>)>,
) {
    if let Input::Tree(_) = input {
        s.learned = common(ev).map(|(facts, id, p, stamp)| NotedEvent {
            facts,
            id: id.map(str::to_owned),
            piece: place(p),
            nonce: stamp.nonce.map(place),
            seq: stamp.seq,
        });
    }
}

impl Assembler {
    /// Feeds one event as a tree, and gives the common event it was, if the
    /// dialect's general decode found it to be exactly one (see the module).
    ///
    /// # Errors
    /// See [`Assembler::feed_json`].
    pub(crate) fn feed_tree_learning(
        &mut self,
        event_name: Option<&str>,
        tree: super::Tree<'_>,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<Option<Common>, Error> {
        self.stream.learned = None;
        self.feed_tree(event_name, tree, live)?;
        let Some(NotedEvent {
            facts,
            id,
            piece,
            nonce,
            seq,
        }) = self.stream.learned.take()
        else {
            return Ok(None);
        };
        // Only an object dispatched to its dialect as it is (not a body, not
        // an array of events) notes anything; checked again here.
        let Some(dialect) = self.dialect.filter(|_| tree.is_object()) else {
            return Ok(None);
        };
        Ok(Some(Common {
            dialect,
            facts,
            id,
            event_type: Input::Tree(tree).self_type(),
            piece,
            nonce,
            seq,
        }))
    }

    /// Applies the common event `common` with `piece` as its string: the
    /// event the binding found equal to the one `common` was learned from,
    /// but for that string and its `stamp` (the stamps `common` has a place
    /// for, each the event's own). `None` (nothing changed) when this assembler
    /// cannot serve it: another dialect, a stream that is closed or ended, whose
    /// error the general path gives, or stamps other than the template's.
    ///
    /// # Errors
    /// What applying the event the memo stands for gives (a protocol error, a
    /// replayed nonce, a limit crossed, …), as from [`Assembler::feed_json`].
    pub(crate) fn feed_common(
        &mut self,
        event_name: Option<&str>,
        common: &Common,
        piece: &str,
        stamp: Stamp<'_>,
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Option<Result<(), Error>> {
        if self.dialect != Some(common.dialect)
            || self.stream.is_closed()
            || self.stream.done
            || common.nonce.is_some() != stamp.nonce.is_some()
            || common.seq.is_some() != stamp.seq.is_some()
        {
            return None;
        }
        let state = self.state.as_mut()?;
        let before = (self.events, self.stream.ordinal);
        self.events += 1;
        self.stream.ordinal = self.events;
        let s = &mut self.stream;
        s.unknown = None;
        let mut live = s.live(live);
        let facts = (common.facts, common.id.as_deref());
        let Some(r) = state.feed_common(s, event_name, facts, piece, stamp, &mut live) else {
            (self.events, self.stream.ordinal) = before;
            return None;
        };
        let r = match r {
            Ok(()) => {
                // A delta of a block this version skips (Q29): skipped and
                // counted, as the general path does with the same event.
                if let Some(event_type) = self.stream.unknown.take() {
                    self.stream.skip(&event_type);
                }
                Ok(())
            }
            Err(f) => {
                if matches!(f, Fail::Provider { .. }) {
                    self.stream.fail_all();
                }
                let e = f.into_error(self.event_ref_with(event_name, || common.event_type.clone()));
                self.record(&e);
                Err(e)
            }
        };
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use serde_json::{json, Value};

    use super::super::tree::tests::build;
    use super::super::{Assembler, AssemblerLimits, Dialect, Error, Tree, TreeBuilder};
    use super::{Common, Stamp};

    /// Feeds `v` as a tree (strings in a side table, as the binding reads a dict);
    /// also gives the address of each string, to find the one a `Common` names.
    fn feed_tree(asm: &mut Assembler, v: &Value) -> (Result<Option<Common>, Error>, Vec<usize>) {
        let mut b = TreeBuilder::default();
        let mut owned = Vec::new();
        build(v, &mut b, &mut owned);
        let strs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let tree: Tree<'_> = b.tree(&strs).unwrap();
        let at = strs.iter().map(|s| s.as_ptr() as usize).collect();
        (asm.feed_tree_learning(None, tree, None), at)
    }

    fn chunk(delta: &Value) -> Value {
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": null}]})
    }

    fn fragment(arguments: &str) -> Value {
        chunk(&json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}))
    }

    fn head() -> Vec<Value> {
        vec![
            chunk(&json!({"tool_calls": [{"index": 0, "id": "call_1",
                "function": {"name": "f", "arguments": ""}}]})),
            fragment("{\"a\""),
        ]
    }

    fn chat() -> Assembler {
        Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default())
    }

    #[test]
    fn a_common_event_learned_from_a_tree_is_served_as_its_text_is_read() {
        let (mut text, mut trees) = (chat(), chat());
        let mut learned = None;
        for ev in head() {
            text.feed_json(None, ev.to_string().as_bytes(), None)
                .unwrap();
            learned = feed_tree(&mut trees, &ev).0.unwrap();
        }
        let common = learned.expect("a fragment of the open call is the common event");
        assert_eq!(common.event_type.as_deref(), Some("chat.completion.chunk"));
        for piece in [": 1", ", \"b\": \"\\u00e9\"", "}"] {
            text.feed_json(None, fragment(piece).to_string().as_bytes(), None)
                .unwrap();
            assert!(matches!(
                trees.feed_common(None, &common, piece, Stamp::default(), None),
                Some(Ok(()))
            ));
        }
        text.feed_json(None, chunk(&json!({})).to_string().as_bytes(), None)
            .unwrap();
        text.close(None).unwrap();
        trees.close(None).unwrap();
        assert_eq!(trees.messages(), text.messages());
        assert_eq!(trees.messages()[0].blocks.len(), 1);
    }

    proptest::proptest! {
        /// Any strings served as the common event give what the same events as
        /// JSON text give, errors and limits included.
        #[test]
        fn served_strings_read_as_their_text(
            pieces in proptest::collection::vec(".{0,12}", 1..12),
            max_input_bytes in 8_usize..64,
        ) {
            let limits = AssemblerLimits { max_input_bytes, ..AssemblerLimits::default() };
            let mut text = Assembler::new(Some(Dialect::OpenAiChat), limits);
            let mut trees = Assembler::new(Some(Dialect::OpenAiChat), limits);
            let mut learned = None;
            for ev in head() {
                let a = text.feed_json(None, ev.to_string().as_bytes(), None).map_err(|e| e.to_string());
                let (b, _) = feed_tree(&mut trees, &ev);
                proptest::prop_assert_eq!(a.is_ok(), b.is_ok());
                learned = b.ok().flatten().or(learned);
            }
            let Some(common) = learned else { return Ok(()) };
            for piece in &pieces {
                let a = text.feed_json(None, fragment(piece).to_string().as_bytes(), None);
                let b = trees.feed_common(None, &common, piece, Stamp::default(), None);
                let b = b.ok_or_else(|| proptest::test_runner::TestCaseError::fail("not served"))?;
                proptest::prop_assert_eq!(a.map_err(|e| e.to_string()), b.map_err(|e| e.to_string()));
            }
            text.close(None).ok();
            trees.close(None).ok();
            proptest::prop_assert_eq!(trees.messages(), text.messages());
        }
    }

    #[test]
    fn the_string_a_common_event_names_is_the_trees_own() {
        let mut asm = chat();
        feed_tree(&mut asm, &head()[0]).0.unwrap();
        let (learned, at) = feed_tree(&mut asm, &fragment("{\"a\""));
        let common = learned.unwrap().unwrap();
        assert_eq!(at.iter().filter(|a| **a == common.piece.0).count(), 1);
        assert_eq!(common.piece.1, 4);
        // Not common: a name, a finish reason, arguments as an object.
        for ev in [
            chunk(
                &json!({"tool_calls": [{"index": 0, "function": {"name": "g", "arguments": "x"}}]}),
            ),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ] {
            assert_eq!(feed_tree(&mut chat(), &ev).0.unwrap(), None);
        }
    }

    #[test]
    fn nothing_is_served_where_the_general_path_decides() {
        let mut learned = None;
        let mut asm = chat();
        for ev in head() {
            learned = feed_tree(&mut asm, &ev).0.unwrap();
        }
        let common = learned.unwrap();
        // Another dialect's assembler, and a stream ended by [DONE] or closed.
        let mut other = Assembler::new(Some(Dialect::Anthropic), AssemblerLimits::default());
        assert!(other
            .feed_common(None, &common, "x", Stamp::default(), None)
            .is_none());
        let mut done = chat();
        for ev in head() {
            feed_tree(&mut done, &ev).0.unwrap();
        }
        done.feed_json(None, b"[DONE]", None).unwrap();
        assert!(done
            .feed_common(None, &common, "x", Stamp::default(), None)
            .is_none());
        asm.close(None).ok();
        assert!(asm
            .feed_common(None, &common, "x", Stamp::default(), None)
            .is_none());
    }

    #[test]
    fn a_limit_crossed_by_a_served_event_is_the_error_it_always_was() {
        let limits = AssemblerLimits {
            max_input_bytes: 8,
            ..AssemblerLimits::default()
        };
        let mut asm = Assembler::new(Some(Dialect::OpenAiChat), limits);
        let mut learned = None;
        for ev in head() {
            learned = feed_tree(&mut asm, &ev).0.unwrap();
        }
        let r = asm.feed_common(
            None,
            &learned.unwrap(),
            "0123456789",
            Stamp::default(),
            None,
        );
        let Some(Err(e)) = r else {
            panic!("over the limit: {r:?}")
        };
        assert!(matches!(e, Error::Limit { .. }), "{e}");
        assert!(
            e.to_string().contains("event #3 (chat.completion.chunk)"),
            "{e}"
        );
    }

    /// Feeds `events` as text to one assembler and as trees to another; the
    /// common event the last tree was.
    fn learn(dialect: Dialect, events: &[Value]) -> (Assembler, Assembler, Option<Common>) {
        let limits = AssemblerLimits::default();
        let (mut text, mut trees) = (
            Assembler::new(Some(dialect), limits),
            Assembler::new(Some(dialect), limits),
        );
        let mut learned = None;
        for ev in events {
            text.feed_json(None, ev.to_string().as_bytes(), None)
                .unwrap();
            learned = feed_tree(&mut trees, ev).0.unwrap();
        }
        (text, trees, learned)
    }

    fn delta(piece: &str) -> Value {
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
            "output_index": 0, "delta": piece})
    }

    #[test]
    fn a_responses_delta_is_served_with_its_item_id() {
        let added = json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}});
        let (mut text, mut trees, learned) =
            learn(Dialect::OpenAiResponses, &[added, delta("{\"a\"")]);
        let common = learned.expect("a delta of the open call is the common event");
        assert_eq!(common.id.as_deref(), Some("fc_1"));
        for piece in [": 1", "}"] {
            text.feed_json(None, delta(piece).to_string().as_bytes(), None)
                .unwrap();
            assert!(matches!(
                trees.feed_common(None, &common, piece, Stamp::default(), None),
                Some(Ok(()))
            ));
        }
        text.close(None).unwrap();
        trees.close(None).unwrap();
        assert_eq!(trees.messages(), text.messages());
        assert_eq!(trees.messages()[0].blocks.len(), 1);
        let with = |more: Value| {
            let mut ev = delta("x");
            ev.as_object_mut()
                .unwrap()
                .extend(more.as_object().unwrap().clone());
            learn(Dialect::OpenAiResponses, &[ev]).2
        };
        // Numbered, with a nonce: the common event with its stamps.
        let numbered = with(json!({"sequence_number": 3, "obfuscation": "n"})).unwrap();
        assert_eq!(
            (numbered.seq, numbered.nonce.map(|n| n.1)),
            (Some(3), Some(1))
        );
        // With more members, or a nonce that is no string: not the common event.
        for more in [
            json!({"name": "f"}),
            json!({"obfuscation": 12}),
            json!({"obfuscation": {"n": 1}}),
        ] {
            assert_eq!(with(more), None);
        }
    }

    /// A chat chunk with its per-event nonce (`obfuscation`), as the API sends it.
    fn stamped(arguments: &str, nonce: &str) -> Value {
        let mut ev = fragment(arguments);
        ev["obfuscation"] = json!(nonce);
        ev
    }

    #[test]
    fn a_stamped_fragment_is_served_with_its_own_nonce_and_a_replay_refused() {
        let (mut text, mut trees) = (chat(), chat());
        let mut learned = None;
        for ev in [head()[0].clone(), stamped("{\"a\"", "nonce0001")] {
            text.feed_json(None, ev.to_string().as_bytes(), None)
                .unwrap();
            learned = feed_tree(&mut trees, &ev).0.unwrap();
        }
        let common = learned.expect("a fragment with a nonce is the common event");
        assert_eq!(common.nonce.map(|n| n.1), Some(9));
        // Stamps other than the template's: not served, nothing changed.
        assert!(trees
            .feed_common(None, &common, "x", Stamp::default(), None)
            .is_none());
        let seq = Stamp {
            nonce: Some("nonce0009"),
            seq: Some(1),
        };
        assert!(trees.feed_common(None, &common, "x", seq, None).is_none());
        for (piece, nonce) in [(": 1", "nonce0002"), ("}", "nonce0003"), ("}", "nonce0002")] {
            let a = text.feed_json(None, stamped(piece, nonce).to_string().as_bytes(), None);
            let stamp = Stamp {
                nonce: Some(nonce),
                seq: None,
            };
            let b = trees
                .feed_common(None, &common, piece, stamp, None)
                .unwrap();
            assert_eq!(a.map_err(|e| e.to_string()), b.map_err(|e| e.to_string()));
        }
        text.close(None).ok();
        trees.close(None).ok();
        assert_eq!(trees.messages(), text.messages());
        let problems = &trees.messages()[0].problems;
        assert!(
            problems.iter().any(|p| p.message.contains("nonce0002")),
            "{problems:?}"
        );
        // As JSON text, the same fragments again: the replay is refused there
        // too (the bytes path's memo: `fast_tests/nonce.rs`).
        let mut asm = chat();
        let events = [stamped("{", "nonce0001"), stamped("}", "nonce0002")];
        for ev in [&head()[0], &events[0], &events[1], &events[1], &events[1]] {
            let r = asm.feed_json(None, ev.to_string().as_bytes(), None);
            assert_eq!(
                r.is_err(),
                std::ptr::eq(ev, &events[1]) && asm.events > 3,
                "{r:?}"
            );
        }
    }

    #[test]
    fn a_fragment_typed_function_is_common_and_no_other_type_is() {
        let typed = |kind: Value| {
            chunk(&json!({"tool_calls": [{"index": 0, "type": kind,
                "function": {"arguments": "x"}}]}))
        };
        let (mut text, mut trees, learned) = learn(
            Dialect::OpenAiChat,
            &[head()[0].clone(), typed(json!("function"))],
        );
        let common = learned.expect("a fragment typed `function` is the common event");
        assert_eq!(common.facts.0, 1);
        text.feed_json(None, typed(json!("function")).to_string().as_bytes(), None)
            .unwrap();
        trees
            .feed_common(None, &common, "x", Stamp::default(), None)
            .unwrap()
            .unwrap();
        assert_eq!(trees.messages(), text.messages());
        for kind in [json!("custom"), json!("tool")] {
            assert_eq!(learn(Dialect::OpenAiChat, &[typed(kind)]).2, None);
        }
    }

    #[test]
    fn a_piece_of_text_alone_is_common_and_with_a_refusal_is_not() {
        let text = |piece: &str| chunk(&json!({"content": piece}));
        let (mut asm_text, mut trees, learned) = learn(Dialect::OpenAiChat, &[text("Let ")]);
        let common = learned.expect("a delta of text alone is the common event");
        assert_eq!((common.facts.0, common.piece.1), (2, 4));
        for piece in ["me ", "look."] {
            asm_text
                .feed_json(None, text(piece).to_string().as_bytes(), None)
                .unwrap();
            trees
                .feed_common(None, &common, piece, Stamp::default(), None)
                .unwrap()
                .unwrap();
        }
        assert_eq!(trees.messages(), asm_text.messages());
        let with_refusal = chunk(&json!({"content": "x", "refusal": "no"}));
        let parts = chunk(&json!({"content": [{"type": "text", "text": "x"}]}));
        for ev in [with_refusal, parts] {
            assert_eq!(learn(Dialect::OpenAiChat, &[ev]).2, None);
        }
    }

    #[test]
    fn a_chunk_named_a_body_reads_as_a_chunk_from_a_tree_as_from_text() {
        let mut ev = fragment("x");
        ev["object"] = json!("chat.completion");
        let (mut text, mut trees) = (chat(), chat());
        for e in [head()[0].clone(), ev] {
            text.feed_json(None, e.to_string().as_bytes(), None)
                .unwrap();
            feed_tree(&mut trees, &e).0.unwrap();
        }
        assert_eq!(trees.messages(), text.messages());
        assert_eq!(text.messages()[0].blocks.len(), 1);
    }
}
