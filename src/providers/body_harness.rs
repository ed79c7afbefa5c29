//! The property-test harness shared by the tests of the direct readers of
//! whole bodies (`body_tests.rs`, `bedrock/body_tests.rs`,
//! `responses/body_tests.rs`): a body fed with the direct readers and with the
//! reference path (the body's events, each dispatched) must leave the same
//! outcome, errors, live events, messages and assembler state, named and
//! `auto`, with default and tight limits, after each of a dialect's prefixes;
//! and the generators of bodies, usual, wild, cut and with one byte changed.

use proptest::prelude::*;

use super::body::{with_reference, with_typed, without_offer, DIRECT_READS, WHOLE_READS};
use super::{Assembler, AssemblerLimits, BytesAssembler, Dialect};
use crate::framing::FramingLimits;

/// Everything a feed leaves observable: the results of the feeds and of the
/// close, the live events, the messages and the whole serialised state.
fn outcome(d: Option<Dialect>, limits: AssemblerLimits, body: &str, prefix: &[&str]) -> String {
    let mut a = Assembler::new(d, limits);
    let mut live = Vec::new();
    let mut out = Vec::new();
    for event in prefix {
        out.push(format!("{:?}", a.feed_text(None, event, Some(&mut live))));
    }
    out.push(format!("{:?}", a.feed_text(None, body, Some(&mut live))));
    // Once more as bytes: the same body after itself (every event resent).
    out.push(format!(
        "{:?}",
        a.feed_json(None, body.as_bytes(), Some(&mut live))
    ));
    out.push(format!("{:?}", a.close(Some(&mut live))));
    out.push(format!("{live:?}"));
    out.push(format!("{:?}", a.messages()));
    out.push(serde_json::to_string(&a).unwrap_or_default());
    out.join("\n")
}

/// Everything a feed of `bytes` as a raw stream leaves observable, read in
/// two reads cut at `cut`: the results of the reads and of the close, the
/// live events, the messages and the assembler's state.
fn outcome_bytes(
    d: Option<Dialect>,
    limits: AssemblerLimits,
    framing: FramingLimits,
    bytes: &[u8],
    cut: usize,
) -> String {
    let mut a = BytesAssembler::new(Assembler::new(d, limits), framing);
    let mut live = Vec::new();
    let (head, tail) = bytes.split_at(cut.min(bytes.len()));
    let out = [
        format!("{:?}", a.feed_bytes(head, Some(&mut live))),
        format!("{:?}", a.feed_bytes(tail, Some(&mut live))),
        format!("{:?}", a.close(Some(&mut live))),
        format!("{live:?}"),
        format!("{:?}", a.core().messages()),
        serde_json::to_string(a.core()).unwrap_or_default(),
    ];
    out.join("\n")
}

/// A body as a raw stream read with its line offered whole
/// (`body::whole_first`) and with the framing checking it first: the same
/// outcome, in each layout of the line (newline or not, trailing
/// whitespace, a second value after it, a BOM) and cut anywhere; gives how
/// many were read whole.
pub(crate) fn agree_as_bytes(
    d: Option<Dialect>,
    limits: AssemblerLimits,
    body: &str,
) -> Result<usize, TestCaseError> {
    agree_in_layouts(d, limits, body, Layouts::All)
}

/// Which of [`agree_as_bytes`]'s layouts, cuts and framing limits a
/// comparison reads.
#[derive(Clone, Copy, PartialEq)]
enum Layouts {
    /// Every layout, cut and framing limit.
    All,
    /// The line with and without its newline, whole and cut after its
    /// first byte, with the default framing limits: what another
    /// assembler (`auto`, or tight assembler limits) reads differently is
    /// where the reader takes the line and what it refuses, not how the
    /// framing finds the line (which [`Layouts::All`] covers).
    Line,
}

fn agree_in_layouts(
    d: Option<Dialect>,
    limits: AssemblerLimits,
    body: &str,
    which: Layouts,
) -> Result<usize, TestCaseError> {
    let layouts = [
        format!("{body}\n"),
        body.to_owned(),
        format!("{body} \t\r\n"),
        format!("\u{feff}\n {body}\n{{\"choices\":[]}}\n"),
        format!("{body}{body}\n"),
        format!("{body} {body}"),
    ];
    let tight = FramingLimits {
        max_event_bytes: 64,
        ..FramingLimits::default()
    };
    let before = WHOLE_READS.with(std::cell::Cell::get);
    let read = if which == Layouts::All { 6 } else { 2 };
    for (i, stream) in layouts.iter().take(read).enumerate() {
        let bytes = stream.as_bytes();
        for cut in [bytes.len(), bytes.len() / 2, 1] {
            for framing in [FramingLimits::default(), tight] {
                if i > 1 && (cut == 1 || framing == tight) {
                    continue;
                }
                if which == Layouts::Line && (cut == bytes.len() / 2 || framing == tight) {
                    continue;
                }
                let whole = outcome_bytes(d, limits, framing, bytes, cut);
                let checked = without_offer(|| outcome_bytes(d, limits, framing, bytes, cut));
                prop_assert_eq!(
                    &whole,
                    &checked,
                    "{:?} {:?} cut {} {:?}",
                    d,
                    limits,
                    cut,
                    stream
                );
            }
        }
    }
    Ok(WHOLE_READS.with(std::cell::Cell::get) - before)
}

/// Bodies read directly while `f` ran.
fn direct_reads(f: impl FnOnce()) -> usize {
    let before = DIRECT_READS.with(std::cell::Cell::get);
    f();
    DIRECT_READS.with(std::cell::Cell::get) - before
}

/// How one dialect's bodies are compared.
pub(crate) struct Agree {
    /// The dialect named (each body is also fed to an `auto` assembler).
    pub dialect: Dialect,
    /// `max_total_bytes` of the tight limits (one call at most).
    pub tight_total_bytes: usize,
    /// Events a stream may hold before the body.
    pub prefixes: &'static [&'static [&'static str]],
    /// Whether the direct readers' typed decodes, without their scanners,
    /// must also give what the reference gives.
    pub typed: bool,
}

impl Agree {
    /// Both paths on one body, named and `auto`, with default and tight
    /// limits, after each prefix.
    pub(crate) fn check(&self, body: &str) -> Result<(), TestCaseError> {
        let tight = AssemblerLimits {
            max_calls: 1,
            max_total_bytes: self.tight_total_bytes,
            ..AssemblerLimits::default()
        };
        for named in [Some(self.dialect), None] {
            for limits in [AssemblerLimits::default(), tight] {
                // Every layout once, for the dialect named with the
                // default limits; the line alone for the other three.
                let which = if named.is_some() && limits == AssemblerLimits::default() {
                    Layouts::All
                } else {
                    Layouts::Line
                };
                agree_in_layouts(named, limits, body, which)?;
                for prefix in self.prefixes {
                    let direct = outcome(named, limits, body, prefix);
                    let reference = with_reference(|| outcome(named, limits, body, prefix));
                    prop_assert_eq!(
                        &direct,
                        &reference,
                        "{:?} {:?} {:?} {}",
                        named,
                        limits,
                        prefix,
                        body
                    );
                    if self.typed {
                        let typed = with_typed(|| outcome(named, limits, body, prefix));
                        prop_assert_eq!(
                            &typed,
                            &reference,
                            "typed: {:?} {:?} {:?} {}",
                            named,
                            limits,
                            prefix,
                            body
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// [`Agree::check`] on one hand-written body, which must agree; whether
    /// it was read directly.
    pub(crate) fn read_directly(&self, body: &str) -> bool {
        let mut r = Ok(());
        let direct = direct_reads(|| r = self.check(body));
        if let Err(e) = r {
            panic!("{e}");
        }
        direct > 0
    }

    /// [`Agree::check`] on `cases` generated bodies (now and then cut or
    /// with one byte changed); at least `share` of them must be read
    /// directly (else the comparison proves little).
    pub(crate) fn on(&self, bodies: BoxedStrategy<String>, cases: u32, share: f64) {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases,
            ..ProptestConfig::default()
        });
        let (direct, total) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let r = runner.run(&maybe_broken(bodies), |body| {
            total.set(total.get() + 1);
            let mut r = Ok(());
            let read = direct_reads(|| r = self.check(&body));
            direct.set(direct.get() + usize::from(read > 0));
            r
        });
        let (direct, total) = (direct.get(), total.get());
        if let Err(e) = r {
            panic!("{e}");
        }
        #[allow(clippy::cast_precision_loss)]
        let enough = direct as f64 >= share * total as f64;
        assert!(
            enough,
            "{:?}: {direct} of {total} bodies read directly",
            self.dialect
        );
    }
}

// ---------------------------------------------------------------- generators

/// A JSON object's text from its members, duplicates and order kept (an
/// empty value: the member is left out).
pub(crate) fn obj(members: Vec<(&'static str, String)>) -> String {
    let inner: Vec<String> = members
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(k)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Members, each present or not (`weight`: the chance, by key), now and
/// then one given twice: the first, or with `shuffle` any, and with
/// `shuffle` now and then all rotated by one.
pub(crate) fn members_with(
    list: Vec<(&'static str, BoxedStrategy<String>)>,
    weight: impl Fn(&str) -> f64,
    shuffle: bool,
) -> BoxedStrategy<Vec<(&'static str, String)>> {
    let parts: Vec<BoxedStrategy<Option<(&'static str, String)>>> = list
        .into_iter()
        .map(|(k, s)| proptest::option::weighted(weight(k), s.prop_map(move |v| (k, v))).boxed())
        .collect();
    (parts, 0..40_usize, any::<prop::sample::Index>())
        .prop_map(move |(ms, dup, at)| {
            let mut ms: Vec<(&'static str, String)> = ms.into_iter().flatten().collect();
            if dup == 0 && !ms.is_empty() {
                let twice = if shuffle { at.index(ms.len()) } else { 0 };
                let twice = ms.get(twice).cloned();
                ms.extend(twice);
            }
            if shuffle && dup == 1 && ms.len() > 1 {
                ms.rotate_left(1);
            }
            ms
        })
        .boxed()
}

/// One of `options`, as given.
pub(crate) fn lit(options: &[&'static str]) -> BoxedStrategy<String> {
    proptest::sample::select(options.to_vec())
        .prop_map(str::to_owned)
        .boxed()
}

/// Values of an unusual kind, for any member.
const ODD: &[&str] = &[
    "null", "\"\"", "5", "1e400", "-1", "1.5", "true", "[]", "{}", "[1,2]", "\"x\"",
];

/// `usual`, or when `wild` now and then (one in `1 + usual_weight`) a value
/// of an unusual kind.
pub(crate) fn odd_or(
    wild: bool,
    usual_weight: u32,
    usual: BoxedStrategy<String>,
) -> BoxedStrategy<String> {
    if !wild {
        return usual;
    }
    prop_oneof![usual_weight => usual, 1 => lit(ODD)].boxed()
}

/// A JSON string (quotes, backslashes, non-ASCII, newlines), or one of
/// `words` (JSON texts: a dialect's own words, `null`), or an escaped one,
/// or an empty one.
pub(crate) fn text_or(words: &[&'static str]) -> BoxedStrategy<String> {
    let mut literal = vec!["\"\\u00e9\\n\"", "\"\""];
    literal.extend_from_slice(words);
    prop_oneof![
        "[a-z \"\\\\é日🦀\n]{0,12}".prop_map(|s| serde_json::Value::from(s).to_string()),
        lit(&literal),
    ]
    .boxed()
}

/// A JSON array of up to `max` items.
pub(crate) fn list(item: BoxedStrategy<String>, max: usize) -> BoxedStrategy<String> {
    proptest::collection::vec(item, 0..=max)
        .prop_map(|v| format!("[{}]", v.join(",")))
        .boxed()
}

/// A body, now and then cut short or with one byte changed.
fn maybe_broken(body: BoxedStrategy<String>) -> BoxedStrategy<String> {
    (body, 0..10_usize, any::<prop::sample::Index>(), 0..5_usize)
        .prop_map(|(b, how, at, byte)| {
            let cut = at.index(b.len().max(1));
            let cut = (0..=cut)
                .rev()
                .find(|&i| b.is_char_boundary(i))
                .unwrap_or(0);
            let (head, tail) = b.split_at(cut);
            match how {
                0 => head.to_owned(),
                1 => {
                    let extra = ["\"", "}", ",", " ", "]"]
                        .get(byte)
                        .copied()
                        .unwrap_or_default();
                    format!("{head}{extra}{tail}")
                }
                _ => b,
            }
        })
        .boxed()
}
