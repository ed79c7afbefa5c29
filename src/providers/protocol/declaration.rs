//! The declaration of one dialect's protocol: what each dialect's folder
//! fills in, what the machine runs, and what docs/providers.md shows.

use crate::providers::error::Rule;
use crate::providers::state::{violation, Fail, Src};

/// What may come after a message's end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AfterEnd {
    /// Events go on (usage-only chunks, restated reasons): only content for the
    /// ended message is refused.
    NoContent,
    /// Only these events (`*Suffix` matches a suffix).
    Only(&'static [&'static str]),
}

/// One dialect's protocol, as the machine runs it and the docs show it.
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))] // the docs-only fields feed the docs table
pub(crate) struct Protocol {
    /// What a message is called in errors (`"the message"`, `"the response"`).
    pub(crate) subject: &'static str,
    /// The event that starts a message, if the dialect sends one.
    pub(crate) start: &'static [&'static str],
    /// Events that open a block.
    pub(crate) open: &'static [&'static str],
    /// Events that add to a block.
    pub(crate) add: &'static [&'static str],
    /// Events that stop a block.
    pub(crate) stop: &'static [&'static str],
    /// The positions (namespaces of [`Src`]) whose blocks end with their own
    /// stop: a message ending normally with one of them unstopped lost an event.
    pub(crate) stopped_positions: &'static [u8],
    /// The events that end a message, and whether they can end it normally.
    pub(crate) ends: &'static [(&'static str, Ends)],
    /// How the end is called in errors (the end event's name).
    pub(crate) end_label: &'static str,
    /// What may follow the end.
    pub(crate) after_end: AfterEnd,
    /// How the dialect's clients read its events, where that differs from
    /// the assembler's reading.
    pub(crate) reading: Reading,
    /// The finish values (compared ignoring ASCII case) that say "the client
    /// has calls to run": a message that ends with one and holds no client
    /// call lost its calls, and is not complete (Q65).
    pub(crate) calls_finish: &'static [&'static str],
}

/// How a dialect's clients (the transport read as its specification defines
/// it, the official SDKs' stream helpers and the final messages they build)
/// read a stream, where that can differ from the assembler's reading. The
/// assembler keeps its own rules; where a stream is read otherwise by them
/// (`Stream::diverge`), the guard blocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// Clients dispatch each event on the name its transport gives it (the
    /// SSE `event:` field, the event-stream `:event-type` header): an event
    /// without one is skipped by them (the assembler reads it by its
    /// payload), and one whose name is not its payload's type is refused.
    pub(crate) named_events: bool,
    /// Clients keep a message's calls in a list and read each fragment's
    /// `index` as a position in it, concatenating name fragments (openai's
    /// `accumulate_delta`): a negative index, an index past the next
    /// position, an index that keeps another call than the assembler's, or a
    /// second non-empty name fragment for one call reads otherwise. They keep
    /// the choices in a list by their `index` too.
    pub(crate) calls_by_position: bool,
    /// Clients append each started block to a list and read a later event's
    /// `index` as a position in it (the anthropic SDK's message accumulator):
    /// a start whose index is not the next position, or an event for a
    /// negative or never-started position, reads otherwise.
    pub(crate) blocks_by_position: bool,
    /// Clients keep one current block, the one started last (AWS's example
    /// reader): content for another block while one is open reads otherwise.
    pub(crate) one_current_block: bool,
    /// Server items (of the dialect's `server_items`) that the SDKs hand to
    /// the application as ordinary calls: the guard checks them like any
    /// call instead of exempting them as server-run.
    pub(crate) client_run: &'static [&'static str],
}

impl Reading {
    /// Clients read the stream as the assembler does.
    pub(crate) const AS_ASSEMBLED: Reading = Reading {
        named_events: false,
        calls_by_position: false,
        blocks_by_position: false,
        one_current_block: false,
        client_run: &[],
    };
}

/// What an end event can mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    /// Normal when the recorded reason is.
    ByReason,
    /// Never normal.
    Abnormal,
    /// A provider error.
    Failed,
}

impl Protocol {
    /// Refuses an event after the message ended, unless the protocol allows it.
    pub(crate) fn after_end(&self, ended: bool, event: &str) -> Result<(), Fail> {
        let AfterEnd::Only(allowed) = self.after_end else {
            return Ok(());
        };
        if !ended || allowed.iter().any(|a| matches(a, event)) {
            return Ok(());
        }
        Err(violation(
            Rule::AfterEnd,
            Some(self.subject.to_owned()),
            format!("{event} arrived after {}", self.end_label),
        ))
    }

    /// True when `reason` is one of the finishes that say the client has calls to run.
    pub(crate) fn ends_for_calls(&self, reason: &str) -> bool {
        self.calls_finish
            .iter()
            .any(|f| f.eq_ignore_ascii_case(reason))
    }

    /// True when blocks at this position end with their own stop.
    pub(crate) fn stops(&self, src: Src) -> bool {
        self.stopped_positions.contains(&src.0)
    }
}

fn matches(pattern: &str, event: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some(suffix) => event.ends_with(suffix),
        None => pattern == event,
    }
}

/// The protocol table of docs/providers.md, one row per dialect, generated
/// from the declarations (a test checks the docs hold it verbatim).
#[cfg(test)]
fn docs_table() -> String {
    fn codes(events: &[&str]) -> String {
        if events.is_empty() {
            return "—".to_owned();
        }
        let quoted: Vec<String> = events
            .iter()
            .map(|e| match e.strip_prefix('*') {
                Some(suffix) => format!("`…{suffix}`"),
                None => format!("`{e}`"),
            })
            .collect();
        quoted.join(", ")
    }
    let mut out = String::from(
        "| dialect | message start | block start | block content | block stop (a call without it: not complete) | message end | may follow the end |\n|---|---|---|---|---|---|---|\n",
    );
    for d in crate::providers::Dialect::ALL {
        let p = &d.spec().protocol;
        let ends: Vec<String> = p
            .ends
            .iter()
            .map(|(e, how)| match how {
                Ends::ByReason => format!("`{e}` (normal when its reason is)"),
                Ends::Abnormal => format!("`{e}` (never normal)"),
                Ends::Failed => format!("`{e}` (a provider error)"),
            })
            .collect();
        let after = match p.after_end {
            AfterEnd::NoContent => "any event but content for the ended message".to_owned(),
            AfterEnd::Only([]) => "nothing".to_owned(),
            AfterEnd::Only(allowed) => codes(allowed),
        };
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                d.name(),
                codes(p.start),
                codes(p.open),
                codes(p.add),
                codes(p.stop),
                ends.join(", "),
                after,
            ),
        );
    }
    out
}

/// The safety net's table of docs/providers.md (Q65): the finishes each
/// dialect declares as "the client has calls to run".
#[cfg(test)]
fn calls_finish_table() -> String {
    let mut out =
        String::from("| dialect | a finish that says the client has calls to run |\n|---|---|\n");
    for d in crate::providers::Dialect::ALL {
        let p = &d.spec().protocol;
        let finishes = if p.calls_finish.is_empty() {
            "— (no finish value says so)".to_owned()
        } else {
            let quoted: Vec<String> = p.calls_finish.iter().map(|f| format!("`{f}`")).collect();
            quoted.join(", ")
        };
        let _ =
            std::fmt::Write::write_fmt(&mut out, format_args!("| {} | {finishes} |\n", d.name()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: Result<(), Fail>) -> Option<Rule> {
        match r {
            Err(Fail::Protocol { rule, .. }) => Some(rule),
            _ => None,
        }
    }

    #[test]
    fn after_the_end_only_what_the_protocol_allows() {
        let p = Protocol {
            subject: "the message",
            start: &[],
            open: &[],
            add: &[],
            stop: &[],
            stopped_positions: &[],
            ends: &[],
            end_label: "the end",
            after_end: AfterEnd::Only(&["ping", "*Exception"]),
            reading: Reading::AS_ASSEMBLED,
            calls_finish: &["tool_use"],
        };
        assert!(p.after_end(true, "ping").is_ok());
        assert!(p.after_end(true, "throttlingException").is_ok());
        assert!(p.after_end(false, "delta").is_ok());
        assert_eq!(rule(p.after_end(true, "delta")), Some(Rule::AfterEnd));
    }

    #[test]
    fn a_finish_for_calls_is_one_declared_ignoring_ascii_case() {
        let p = &crate::providers::Dialect::Cohere.spec().protocol;
        assert!(p.ends_for_calls("TOOL_CALL") && p.ends_for_calls("tool_call"));
        assert!(!p.ends_for_calls("COMPLETE") && !p.ends_for_calls(""));
        let gemini = &crate::providers::Dialect::Gemini.spec().protocol;
        assert!(!gemini.ends_for_calls("STOP"));
    }

    #[test]
    fn the_docs_show_the_declared_protocols() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/providers.md");
        let docs = std::fs::read_to_string(path).unwrap_or_default();
        let table = docs_table();
        assert!(
            docs.contains(&table),
            "docs/providers.md must hold the protocol table as declared:\n{table}"
        );
        let net = calls_finish_table();
        assert!(
            docs.contains(&net),
            "docs/providers.md must hold the safety net's table as declared:\n{net}"
        );
    }
}
