//! The one list of dialects. Each dialect lives in its own folder beside this
//! file (`openai_chat/`, `responses/`, …) and describes itself in one
//! [`Spec`]: its name, how `auto` recognises its events and bodies, its
//! provider-state formats and item kinds, its usage shape, and the declaration
//! of its protocol that the one protocol machine runs. Generic code asks the
//! spec; it names no dialect's events or fields.
//!
//! Adding a dialect is one folder (a `SPEC`, a `State` implementing
//! [`Adapter`], a `body` module when it has non-streamed bodies) and one line
//! in the `dialects!` list at the top of `providers/mod.rs`, which declares
//! the folder's module, the [`Dialect`] variant and its state.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::body::{Body, Made};
use super::outcome::TokenUsage;
use super::protocol::Protocol;
use super::scan::Facts;
use super::state::{Fail, Live, Stream, R};
use super::{Dialect, Error, Input, Tree};

/// What one dialect is, for the generic code and for Python.
#[derive(Debug)]
pub(crate) struct Spec {
    /// The name `Assembler("…")` takes.
    pub(crate) name: &'static str,
    /// How an event that names no type is called in messages (`"chunk"`), or
    /// `""` when every event of the dialect names its type.
    pub(crate) untyped_event: &'static str,
    /// How `auto` recognises the dialect.
    pub(crate) hints: Hints,
    /// The dialect's whole (non-streamed) response, when it has one that
    /// differs from a streamed event.
    pub(crate) body: Option<BodySpec>,
    /// The token counts of the dialect's usage object.
    pub(crate) tokens: fn(&Map<String, Value>) -> TokenUsage,
    /// The protocol of a message of this dialect.
    pub(crate) protocol: Protocol,
    /// The `provider_state_format` / `signature_format` values the dialect writes.
    pub(crate) state_formats: &'static [&'static str],
    /// Kinds of calls for the client that are not JSON functions.
    pub(crate) client_items: &'static [&'static str],
    /// Kinds of calls the provider runs itself.
    pub(crate) server_items: &'static [&'static str],
    /// Where a response names itself and the model that answered.
    pub(crate) response: ResponseFields,
    /// What the guard needs: the provider's name, request paths, error shape.
    pub(crate) guard: super::guarded::GuardSpec,
}

/// JSON Pointers into one event (or the whole body) of the dialect: the
/// response's own id, and the model that answered. The first event with a
/// non-empty string at one of them gives it; an empty list: the dialect's
/// events never say (Bedrock's). Read only by [`super::facts`], off the path
/// that assembles.
#[derive(Debug)]
pub(crate) struct ResponseFields {
    pub(crate) id: &'static [&'static str],
    pub(crate) model: &'static [&'static str],
}

/// How `auto` tells a dialect from its first event. Each test is the
/// dialect's own; the generic code only asks them in a fixed order.
#[derive(Debug)]
pub(crate) struct Hints {
    /// Event names (SSE `event:`, `:event-type`, or the event's own type)
    /// that only this dialect sends.
    pub(crate) event_names: &'static [&'static [&'static str]],
    /// A prefix of event names only this dialect uses.
    pub(crate) event_prefix: Option<&'static str>,
    /// The suffix of the dialect's exception events, which AWS event-stream
    /// exception frames become (only this dialect's names end so).
    pub(crate) exception_suffix: Option<&'static str>,
    /// The dialect's error event: its type, and whether the error is nested
    /// under an `error` object (told apart from another dialect's event of the
    /// same type that way).
    pub(crate) error_event: Option<(&'static str, bool)>,
    /// The shape of an event that names no type of its own.
    pub(crate) shape: fn(&Map<String, Value>) -> bool,
}

impl Hints {
    /// True when an event name is one only this dialect uses.
    pub(crate) fn names(&self, name: &str) -> bool {
        self.event_names.iter().any(|list| list.contains(&name))
            || self.event_prefix.is_some_and(|p| name.starts_with(p))
            || self.exception_suffix.is_some_and(|s| name.ends_with(s))
    }
}

/// A dialect's whole response body (QUIRKS.md Q31).
#[derive(Debug)]
pub(crate) struct BodySpec {
    /// The body's name in messages (`"chat.completion"`).
    pub(crate) label: &'static str,
    /// JSON text every body holds and few streamed events do (`"\"output\""`):
    /// the one substring search an ordinary event of the dialect costs.
    pub(crate) marker: &'static [u8],
    /// The exact test on a decoded object.
    pub(crate) shape: fn(&Map<String, Value>) -> bool,
    /// The cheap test on a tree's top-level members (the exact one follows).
    pub(crate) tree: fn(Tree<'_>) -> bool,
    /// The events the body stands for, in protocol order.
    pub(crate) events: fn(&[u8]) -> Result<Vec<Made>, Fail>,
}

/// An event offered to its dialect's memo before the body check
/// ([`Adapter::feed_served`]): the stream, where its live events go, its
/// dialect, its name, and its text (or bytes not yet checked as UTF-8).
pub(crate) struct Offer<'o, 'l, T: ?Sized> {
    pub(crate) s: &'o mut Stream,
    pub(crate) live: &'o mut Live<'l>,
    pub(crate) dialect: Dialect,
    pub(crate) event_name: Option<&'o str>,
    pub(crate) text: &'o T,
}

impl<'o, 'l, T: ?Sized> Offer<'o, 'l, T> {
    /// The stream made ready for the event, once the memo took it (as
    /// `Assembler::dispatch` makes it ready: the dialect named, no event left
    /// unknown), and where its live events go.
    pub(crate) fn ready(self) -> (&'o mut Stream, &'o mut Live<'l>) {
        self.s.dialect = Some(self.dialect);
        self.s.unknown = None;
        (self.s, self.live)
    }
}

/// Declares the dialects: one line each, `Variant => folder`, in the order
/// of [`Dialect::ALL`]. It declares each folder's module, the [`Dialect`]
/// enum and the state of the one dialect a stream speaks.
macro_rules! dialects {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)+) => {
        $(mod $module;)+

        /// The wire dialects an [`Assembler`] reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum Dialect {
            $($(#[$doc])* $variant,)+
        }

        impl Dialect {
            /// Every dialect, in the order of the registry.
            pub const ALL: [Dialect; [$(stringify!($variant)),+].len()] =
                [$(Dialect::$variant,)+];

            /// The dialect's description.
            pub(crate) fn spec(self) -> &'static $crate::providers::registry::Spec {
                match self {
                    $(Dialect::$variant => &$module::SPEC,)+
                }
            }

            /// Whether the dialect's memo applies the events it takes before
            /// the body check ([`Adapter::SERVES`]).
            #[inline]
            pub(crate) fn serves(self) -> bool {
                match self {
                    $(Dialect::$variant => <$module::State as $crate::providers::registry::Adapter>::SERVES,)+
                }
            }
        }

        /// The state of the one dialect a stream speaks (static dispatch).
        #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
        pub(crate) enum DialectState {
            $($variant($module::State),)+
        }

        impl DialectState {
            pub(crate) fn new(d: Dialect) -> Self {
                match d {
                    $(Dialect::$variant => DialectState::$variant(Default::default()),)+
                }
            }

            #[inline]
            pub(crate) fn feed(
                &mut self,
                s: &mut $crate::providers::state::Stream,
                event_name: Option<&str>,
                input: $crate::providers::Input<'_>,
                live: &mut $crate::providers::state::Live<'_>,
            ) -> $crate::providers::state::R {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.feed(s, event_name, input, live),)+
                }
            }

            #[inline]
            pub(crate) fn feed_served(
                &mut self,
                offer: $crate::providers::registry::Offer<'_, '_, str>,
            ) -> Option<$crate::providers::state::R> {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.feed_served(offer),)+
                }
            }

            #[inline]
            pub(crate) fn feed_served_bytes(
                &mut self,
                offer: $crate::providers::registry::Offer<'_, '_, [u8]>,
            ) -> Option<$crate::providers::state::R> {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.feed_served_bytes(offer),)+
                }
            }

            #[inline]
            #[cfg_attr(not(feature = "python"), allow(dead_code))]
            pub(crate) fn feed_common(
                &mut self,
                s: &mut $crate::providers::state::Stream,
                event_name: Option<&str>,
                facts: ($crate::providers::scan::Facts, Option<&str>),
                piece: &str,
                stamp: $crate::providers::common::Stamp<'_>,
                live: &mut $crate::providers::state::Live<'_>,
            ) -> Option<$crate::providers::state::R> {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.feed_common(s, event_name, facts, piece, stamp, live),)+
                }
            }

            pub(crate) fn end_of_stream(
                &mut self,
                s: &mut $crate::providers::state::Stream,
                live: &mut $crate::providers::state::Live<'_>,
            ) -> $crate::providers::state::R {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.end_of_stream(s, live),)+
                }
            }

            pub(crate) fn ended_whole(
                &mut self,
                s: &mut $crate::providers::state::Stream,
                live: &mut $crate::providers::state::Live<'_>,
            ) -> $crate::providers::state::R {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.ended_whole(s, live),)+
                }
            }

            pub(crate) fn content_free(&self, input: $crate::providers::Input<'_>) -> Option<String> {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.content_free(input),)+
                }
            }

            pub(crate) fn rebuilt_inputs(&self) -> Vec<(i64, i64, String)> {
                use $crate::providers::registry::Adapter as _;
                match self {
                    $(DialectState::$variant(st) => st.rebuilt_inputs(),)+
                }
            }

            /// Dialect `d`'s direct reader of a whole body (`Adapter::read_body`).
            pub(crate) fn read_body(
                d: Dialect,
                body: $crate::providers::body::Body<'_, '_>,
            ) -> Option<Result<(), $crate::providers::Error>> {
                use $crate::providers::registry::Adapter as _;
                match d {
                    $(Dialect::$variant => <$module::State>::read_body(body),)+
                }
            }

            /// Whether dialect `d` tells `text` apart as surely no body (`Adapter::surely_event`).
            pub(crate) fn surely_event(d: Dialect, text: &[u8]) -> bool {
                use $crate::providers::registry::Adapter as _;
                match d {
                    $(Dialect::$variant => <$module::State>::surely_event(text),)+
                }
            }
        }
    };
}

/// What every dialect's state does with the events of its stream.
pub(crate) trait Adapter: Default {
    /// Applies one event.
    fn feed(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R;

    /// Whether [`Adapter::feed_served`] and [`Adapter::feed_served_bytes`]
    /// may take an event (the others are not asked).
    const SERVES: bool = false;

    /// Applies the event offered when the dialect's memo (its fast path's
    /// template) takes its text, as [`Adapter::feed`] applies it, the stream
    /// made ready first ([`Offer::ready`]); `None`, before anything changes,
    /// for text the memo does not take (and for a dialect without one here):
    /// the event is then fed as any other. A dialect may take here too an
    /// event it reads whole in one pass and knows to be no body (OpenAI
    /// Responses' events that carry the response, `responses/carrying.rs`).
    fn feed_served(&mut self, _offer: Offer<'_, '_, str>) -> Option<R> {
        None
    }

    /// [`Adapter::feed_served`] of bytes not yet checked as UTF-8 (an
    /// event-stream frame's payload): the memo checks what it reads of them
    /// (`Memo::fill_bytes`); `None`, before anything changes, as there.
    fn feed_served_bytes(&mut self, _offer: Offer<'_, '_, [u8]>) -> Option<R> {
        None
    }

    /// Applies the dialect's common event with these facts (and the id it
    /// names, if any), `piece` as its string and `stamp` as its stamps (see
    /// `common.rs`), as its memo's typed event is applied; `None`, before
    /// anything changes, for a dialect that has no common event.
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    fn feed_common(
        &mut self,
        _s: &mut Stream,
        _event_name: Option<&str>,
        _facts: (Facts, Option<&str>),
        _piece: &str,
        _stamp: super::common::Stamp<'_>,
        _live: &mut Live<'_>,
    ) -> Option<R> {
        None
    }

    /// The end of the stream (`[DONE]` or `close()`): anything the dialect
    /// still holds back goes into the stream now.
    fn end_of_stream(&mut self, _s: &mut Stream, _live: &mut Live<'_>) -> R {
        Ok(())
    }

    /// The stream ended whole: `[DONE]` came (after [`Self::end_of_stream`]),
    /// or a whole body's events were all applied.
    fn ended_whole(&mut self, _s: &mut Stream, _live: &mut Live<'_>) -> R {
        Ok(())
    }

    /// An event after `[DONE]` that carries nothing to apply to any message
    /// (Q58): what it holds, for the note; `None` for anything else, which
    /// stays Q24's error.
    fn content_free(&self, _input: Input<'_>) -> Option<String> {
        None
    }

    /// `(choice, key, input)` of open calls whose input the dialect rebuilds
    /// itself rather than keeping it as text in the stream.
    fn rebuilt_inputs(&self) -> Vec<(i64, i64, String)> {
        Vec::new()
    }

    /// Reads a whole body of the dialect directly (`body.rs`): `None`, with
    /// nothing changed, for a body left to the reference path (and for every
    /// body of a dialect without a direct reader).
    fn read_body(_body: Body<'_, '_>) -> Option<Result<(), Error>> {
        None
    }

    /// `true` for the JSON text of an event that holds the dialect's body
    /// marker and is surely no dialect's whole body (no body shape can match
    /// it), told without decoding it into a `Value` (`body.rs`); `false`
    /// when unsure.
    fn surely_event(_text: &[u8]) -> bool {
        false
    }
}

impl Dialect {
    /// The dialect's name as `FromStr` accepts it.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Parses a provider name: a dialect name, or `"auto"` (`Ok(None)`).
    ///
    /// # Errors
    /// [`Error::UnknownDialect`] naming the valid names.
    pub fn parse_provider(name: &str) -> Result<Option<Dialect>, Error> {
        if name == AUTO {
            Ok(None)
        } else {
            name.parse().map(Some)
        }
    }

    /// The provider-state formats the dialect writes.
    #[must_use]
    pub fn state_formats(self) -> &'static [&'static str] {
        self.spec().state_formats
    }

    /// Kinds of client calls that are not JSON functions.
    #[must_use]
    pub fn client_items(self) -> &'static [&'static str] {
        self.spec().client_items
    }

    /// Kinds of calls the provider runs itself.
    #[must_use]
    pub fn server_items(self) -> &'static [&'static str] {
        self.spec().server_items
    }
}

/// The provider name that decides the dialect from the stream.
pub const AUTO: &str = "auto";

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dialect {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| Error::UnknownDialect { name: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_the_dialects_in_declaration_order() {
        for (i, d) in Dialect::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i);
        }
    }

    #[test]
    fn names_are_unique_and_parse_back() {
        for d in Dialect::ALL {
            assert_eq!(d.name().parse::<Dialect>().ok(), Some(d));
            assert_eq!(
                Dialect::ALL.iter().filter(|o| o.name() == d.name()).count(),
                1
            );
        }
        assert!(matches!(Dialect::parse_provider(AUTO), Ok(None)));
        assert!(Dialect::parse_provider("nope").is_err());
    }

    #[test]
    fn formats_and_item_kinds_belong_to_one_dialect() {
        let mut formats: Vec<&str> = Dialect::ALL
            .iter()
            .flat_map(|d| d.state_formats().iter().copied())
            .collect();
        let n = formats.len();
        formats.sort_unstable();
        formats.dedup();
        assert_eq!(formats.len(), n, "a provider-state format written twice");
        for d in Dialect::ALL {
            for k in d.client_items() {
                assert!(!d.server_items().contains(k), "{d}: {k} is both");
            }
        }
    }

    #[test]
    fn event_name_hints_do_not_overlap() {
        for d in Dialect::ALL {
            for name in d.spec().hints.event_names.iter().flat_map(|l| l.iter()) {
                for other in Dialect::ALL.into_iter().filter(|o| *o != d) {
                    assert!(!other.spec().hints.names(name), "{name}: {d} and {other}");
                }
            }
        }
    }

    /// Generic code names no dialect's events: every event name a dialect
    /// declares (hints and protocol) is absent from the generic files, outside
    /// their tests.
    #[test]
    fn generic_code_names_no_dialects_events() {
        const GENERIC: [(&str, &str); 12] = [
            ("mod.rs", include_str!("mod.rs")),
            ("detect.rs", include_str!("detect.rs")),
            ("body.rs", include_str!("body.rs")),
            ("state.rs", include_str!("state.rs")),
            ("content.rs", include_str!("content.rs")),
            ("message.rs", include_str!("message.rs")),
            ("input.rs", include_str!("input.rs")),
            ("output.rs", include_str!("output.rs")),
            ("outcome.rs", include_str!("outcome.rs")),
            ("error.rs", include_str!("error.rs")),
            ("protocol/mod.rs", include_str!("protocol/mod.rs")),
            (
                "protocol/declaration.rs",
                include_str!("protocol/declaration.rs"),
            ),
        ];
        let mut names: Vec<&str> = Vec::new();
        for d in Dialect::ALL {
            let spec = d.spec();
            let p = &spec.protocol;
            names.extend(spec.hints.event_names.iter().flat_map(|l| l.iter()));
            names.extend(p.start.iter().chain(p.open).chain(p.add).chain(p.stop));
            names.extend(p.ends.iter().map(|(e, _)| *e));
        }
        // Words any protocol uses (`ping`, `error`) are not one dialect's.
        names.retain(|n| n.contains(['_', '-', '.']) || n.chars().any(char::is_uppercase));
        for (file, text) in GENERIC {
            let code = text.split("#[cfg(test)]").next().unwrap_or(text);
            for name in &names {
                for quoted in [format!("\"{name}\""), format!("`{name}`")] {
                    assert!(!code.contains(&quoted), "{file} names {quoted}");
                }
            }
        }
    }
}
