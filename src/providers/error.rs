use std::fmt;

/// Which event an error is about: its ordinal number in the stream (1-based,
/// counting every event fed, skipped ones included) and its type as the event
/// names itself (its own `type`, the SSE event name, or `chunk` for dialects
/// whose events carry no type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef {
    pub ordinal: u64,
    pub event_type: String,
}

impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.event_type.is_empty() {
            write!(f, "event #{}", self.ordinal)
        } else {
            write!(f, "event #{} ({})", self.ordinal, self.event_type)
        }
    }
}

/// What kind of decoding problem an event had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeKind {
    /// Not JSON at all, or cut short.
    MalformedJson,
    /// JSON, but not an object.
    NotAnObject,
    /// A field of the wrong type (`arguments: 5`), or a value out of range.
    WrongType,
    /// A field whose value breaks the dialect's rules (a bad argument path).
    BadValue,
}

/// Which rule of a dialect's protocol an event broke (QUIRKS Q24–Q26).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Content for a message after its end (its finish reason, or the end
    /// event the dialect declares).
    AfterEnd,
    /// Any event after `[DONE]`.
    AfterDone,
    /// Content for a block (or call) after its own stop.
    AfterStop,
    /// A block or call opened a second time at the same position.
    OpenedTwice,
    /// A message started a second time (a replayed or concatenated stream).
    StartedTwice,
    /// Two calls with one id in one message.
    DuplicateId,
    /// Content of the wrong kind for its block (a text delta on a tool-use block).
    WrongBlock,
    /// A second end of a message that disagrees with the first.
    EndedTwice,
    /// A final snapshot of the message (a dialect's end event restating its
    /// output) holding a call the stream did not assemble: clients that read
    /// the snapshot would run another call than the one checked.
    SnapshotDiffers,
    /// An event sent again byte for byte, told by the per-event nonce it
    /// carries (OpenAI's `obfuscation`, Q61): never applied twice.
    Replayed,
}

impl Rule {
    /// A short name for the rule (`after-end`, `opened-twice`, …), stable for programs.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Rule::AfterEnd => "after-end",
            Rule::AfterDone => "after-done",
            Rule::AfterStop => "after-stop",
            Rule::OpenedTwice => "opened-twice",
            Rule::StartedTwice => "started-twice",
            Rule::DuplicateId => "duplicate-id",
            Rule::WrongBlock => "wrong-block",
            Rule::EndedTwice => "ended-twice",
            Rule::SnapshotDiffers => "snapshot-differs",
            Rule::Replayed => "replayed",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Rule::AfterEnd => "content after the message ended",
            Rule::AfterDone => "an event after [DONE]",
            Rule::AfterStop => "content after its block stopped",
            Rule::OpenedTwice => "a block opened twice",
            Rule::StartedTwice => "a message started twice",
            Rule::DuplicateId => "two calls with one id",
            Rule::WrongBlock => "content of the wrong kind for its block",
            Rule::EndedTwice => "a second end that disagrees with the first",
            Rule::SnapshotDiffers => "a final snapshot that differs from the stream",
            Rule::Replayed => "an event replayed",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Everything an [`Assembler`](super::Assembler) refuses. After any error,
/// everything accumulated before the offending event (or fragment) stays readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A dialect name that is not one of the known ones.
    UnknownDialect { name: String },
    /// An event that could not be read.
    Decode {
        event: EventRef,
        kind: DecodeKind,
        detail: String,
    },
    /// The provider reported an error in the stream (an error event, a failed
    /// response, an `{"error": …}` chunk, an exception event or frame).
    Provider {
        event: EventRef,
        error_type: String,
        message: String,
        /// The provider's error object as compact JSON, when it sent one.
        raw: Option<String>,
    },
    /// An event that breaks the dialect's protocol (Q24–Q26). It was not applied,
    /// and every message it concerns carries a problem, so none is executable.
    Protocol {
        event: EventRef,
        rule: Rule,
        /// The call or block concerned (`tool call toolu_1`, `block 2`), when there is one.
        target: Option<String>,
        detail: String,
    },
    /// An event of another dialect than the one named (Q32).
    WrongDialect {
        event: EventRef,
        expected: super::Dialect,
        looks_like: super::Dialect,
        /// The assembler was `auto` and an earlier event settled `expected`:
        /// the stream mixes dialects, so naming a provider would not help.
        auto: bool,
    },
    /// A limit would be crossed; the offending fragment was rejected.
    Limit {
        event: EventRef,
        limit: Limit,
        max: usize,
        would_be: usize,
        target: String,
    },
    /// `auto` could not tell the dialect from an event that fits none.
    UnknownShape { event: EventRef },
    /// An event fed after `close()`.
    Closed { event: EventRef },
}

impl Error {
    /// The event this error is about, if any.
    #[must_use]
    pub fn event(&self) -> Option<&EventRef> {
        match self {
            Error::UnknownDialect { .. } => None,
            Error::Decode { event, .. }
            | Error::Provider { event, .. }
            | Error::Protocol { event, .. }
            | Error::WrongDialect { event, .. }
            | Error::Limit { event, .. }
            | Error::UnknownShape { event }
            | Error::Closed { event } => Some(event),
        }
    }
}

impl Error {
    /// The event this error is about, to rename it (an event made from a
    /// whole response body names the body too).
    pub(crate) fn event_mut(&mut self) -> Option<&mut EventRef> {
        match self {
            Error::UnknownDialect { .. } => None,
            Error::Decode { event, .. }
            | Error::Provider { event, .. }
            | Error::Protocol { event, .. }
            | Error::WrongDialect { event, .. }
            | Error::Limit { event, .. }
            | Error::UnknownShape { event }
            | Error::Closed { event } => Some(event),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownDialect { name } => {
                // The registry's names, so that a new dialect is listed by itself.
                let names: Vec<String> = super::Dialect::ALL
                    .iter()
                    .map(|d| format!("{:?}", d.name()))
                    .collect();
                write!(
                    f,
                    "unknown provider {name:?}: expected one of {} or {:?}",
                    names.join(", "),
                    super::AUTO
                )
            }
            Error::Decode { event, kind, detail } => {
                let what = match kind {
                    DecodeKind::MalformedJson => "is not valid JSON",
                    DecodeKind::NotAnObject => "is not a JSON object",
                    DecodeKind::WrongType => "has a field of the wrong type",
                    DecodeKind::BadValue => "has an invalid value",
                };
                write!(f, "{event} {what}: {detail}")
            }
            Error::Provider {
                event,
                error_type,
                message,
                ..
            } => {
                if error_type.is_empty() {
                    write!(f, "{event}: the provider reported an error: {message}")
                } else {
                    write!(f, "{event}: the provider reported an error ({error_type}): {message}")
                }
            }
            Error::Protocol {
                event,
                rule,
                target,
                detail,
            } => {
                write!(f, "{event} breaks the stream's protocol ({rule})")?;
                if let Some(t) = target {
                    write!(f, " for {t}")?;
                }
                write!(f, ": {detail}; it was not applied and the message is not complete")
            }
            Error::WrongDialect {
                event,
                expected,
                looks_like,
                auto,
            } => {
                write!(f, "{event} is not an event of the {expected} dialect")?;
                if *auto {
                    write!(
                        f,
                        ", which the stream's earlier events settled (provider \"auto\"): it \
                         looks like {looks_like}, so the stream mixes two dialects (two \
                         responses joined in one capture?); read each response on its own"
                    )
                } else {
                    write!(
                        f,
                        ": it looks like {looks_like}; name that provider, or use \"auto\""
                    )
                }
            }
            Error::Limit {
                event,
                limit,
                max,
                would_be,
                target,
            } => write!(
                f,
                "{event}: {target}: the fragment would make {limit} {would_be}, over the limit of {max}; \
                 it was rejected and everything before it is kept"
            ),
            Error::UnknownShape { event } => write!(
                f,
                "{event}: cannot tell the provider from this event (provider \"auto\"); \
                 name the provider explicitly"
            ),
            Error::Closed { event } => {
                write!(f, "{event}: the stream was already closed; start a new Assembler")
            }
        }
    }
}

impl std::error::Error for Error {}

/// The bounds of one stream ([`AssemblerLimits`](super::AssemblerLimits)'s
/// fields), named as the constructor names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    MaxCalls,
    MaxInputBytes,
    MaxTotalBytes,
    MaxEventBytes,
    MaxChoices,
    MaxBlocks,
    MaxArgNodes,
    /// The bytes of one text, refusal or thinking block.
    MaxBytes,
}

impl Limit {
    /// Every limit.
    pub const ALL: [Limit; 8] = [
        Limit::MaxCalls,
        Limit::MaxInputBytes,
        Limit::MaxTotalBytes,
        Limit::MaxEventBytes,
        Limit::MaxChoices,
        Limit::MaxBlocks,
        Limit::MaxArgNodes,
        Limit::MaxBytes,
    ];

    /// The limit's name (`max_calls`), as the constructor's keyword spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Limit::MaxCalls => "max_calls",
            Limit::MaxInputBytes => "max_input_bytes",
            Limit::MaxTotalBytes => "max_total_bytes",
            Limit::MaxEventBytes => "max_event_bytes",
            Limit::MaxChoices => "max_choices",
            Limit::MaxBlocks => "max_blocks",
            Limit::MaxArgNodes => "max_arg_nodes",
            Limit::MaxBytes => "max_bytes",
        }
    }

    /// The limit an accumulator names (its bounds are named the same way);
    /// a bound of one accumulator that is none of the stream's is [`Limit::MaxBytes`].
    pub(crate) fn of_accumulator(name: &str) -> Limit {
        Limit::ALL
            .into_iter()
            .find(|l| l.name() == name)
            .unwrap_or(Limit::MaxBytes)
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod limit_tests {
    use super::Limit;

    #[test]
    fn limits_are_named_as_the_constructor_names_them() {
        let limits = crate::providers::AssemblerLimits::default();
        let fields = serde_json::to_value(limits).unwrap_or_default();
        for l in Limit::ALL {
            assert_eq!(Limit::of_accumulator(l.name()), l);
            assert!(
                l == Limit::MaxBytes || fields.get(l.name()).is_some(),
                "{l} is no field of AssemblerLimits"
            );
        }
        assert_eq!(Limit::of_accumulator("max_images"), Limit::MaxBytes);
    }
}
