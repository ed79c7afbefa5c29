//! The generator of event texts for the fast-path properties: a seeded
//! random source, JSON values with every spelling the scanners must handle,
//! and their rendering (whitespace, escapes, mutated bytes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

/// xorshift64*: every generated text comes from one proptest seed.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::try_from(self.next() % n as u64).unwrap()
    }
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub(super) fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}

/// A JSON value to render; the spelling (whitespace, escapes, duplicates) is
/// chosen when it is rendered.
#[derive(Clone, Debug)]
pub(super) enum J {
    Null,
    Bool(bool),
    /// A number as written (possibly not JSON at all).
    Num(&'static str),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

pub(super) const CHARS: &[char] = &[
    'a',
    'b',
    'c',
    'x',
    'y',
    'z',
    ' ',
    '"',
    '\\',
    '/',
    '\n',
    '\t',
    '\r',
    '\u{1}',
    '\u{8}',
    '\u{c}',
    '\u{1f}',
    '\u{7f}',
    '\u{e9}',
    '\u{65e5}',
    '\u{1f980}',
    '\u{2028}',
    '\u{fffd}',
    '{',
    '}',
    '[',
    ']',
    ',',
    ':',
    '0',
    '9',
];

pub(super) const INDEXES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "17",
    "-1",
    "-0",
    "01",
    "00",
    "1.0",
    "1.5",
    "0.0",
    "1e2",
    "2E0",
    "1e-2",
    "123456789012345678",
    "1234567890123456789",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999",
    "1.",
    ".5",
    "- 1",
    "+1",
    "0x1",
    "1e",
    "-",
    "1e999",
];

pub(super) fn text(r: &mut Rng) -> String {
    let n = r.below(14);
    (0..n).map(|_| r.pick(CHARS)).collect()
}

/// Any value, nested at most `depth` more levels.
pub(super) fn junk(r: &mut Rng, depth: usize) -> J {
    match r.below(if depth == 0 { 5 } else { 7 }) {
        0 => J::Null,
        1 => J::Bool(r.chance(50)),
        2 => J::Num(r.pick(INDEXES)),
        3 | 4 => J::Str(text(r)),
        5 => J::Arr((0..r.below(3)).map(|_| junk(r, depth - 1)).collect()),
        _ => J::Obj(
            (0..r.below(3))
                .map(|_| {
                    (
                        r.pick(&["a", "type", "index", "text", ""]).to_owned(),
                        junk(r, depth - 1),
                    )
                })
                .collect(),
        ),
    }
}

/// A string field: mostly a string, sometimes null or a value of another type.
pub(super) fn str_field(r: &mut Rng) -> J {
    match r.below(20) {
        0 | 1 => J::Null,
        2 => junk(r, 2),
        _ => J::Str(text(r)),
    }
}

/// An index: mostly a small integer, sometimes any spelling.
pub(super) fn index(r: &mut Rng) -> J {
    match r.below(20) {
        0..=11 => J::Num(r.pick(&["0", "1", "2"])),
        12..=15 => J::Num(r.pick(INDEXES)),
        16 => J::Str(r.pick(&["1", " 2 ", "x", ""]).to_owned()),
        17 => J::Null,
        _ => junk(r, 1),
    }
}

/// An object field: mostly `object()`, sometimes null or another value.
pub(super) fn obj_field(r: &mut Rng, object: impl FnOnce(&mut Rng) -> J) -> J {
    match r.below(20) {
        0 | 1 => J::Null,
        2 => junk(r, 2),
        _ => object(r),
    }
}

/// An object of the members each present with its chance, plus extra keys,
/// in a random order.
pub(super) fn members(r: &mut Rng, fields: Vec<(u64, &str, J)>) -> J {
    let mut out: Vec<(String, J)> = fields
        .into_iter()
        .filter_map(|(chance, k, v)| Some((k.to_owned(), v)).filter(|_| r.chance(chance)))
        .collect();
    if r.chance(15) {
        let key = r.pick(&["extra", "logprobs", "role", "x", "obfuscation", "type"]);
        out.push((key.to_owned(), junk(r, 2)));
    }
    if r.chance(30) {
        for i in (1..out.len()).rev() {
            let j = r.below(i + 1);
            out.swap(i, j);
        }
    }
    J::Obj(out)
}

// ------------------------------------------------------------------ rendering

/// How far a rendering may stray from a well-formed event.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Spelling {
    /// Valid JSON, each key once.
    Clean,
    /// Valid JSON, keys sometimes twice.
    Duplicates,
    /// Also the rare invalid spellings: raw control characters, lone
    /// surrogates, bad escapes, whitespace JSON does not allow.
    Hostile,
}

/// Renders `j` with random spelling.
pub(super) fn render(r: &mut Rng, j: &J, how: Spelling, out: &mut String) {
    let hostile = how == Spelling::Hostile;
    ws(r, hostile, out);
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(n) => out.push_str(n),
        J::Str(s) => string(r, s, hostile, false, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                render(r, item, how, out);
            }
            ws(r, hostile, out);
            out.push(']');
        }
        J::Obj(members) => {
            let mut members = members.clone();
            // A key given twice: the typed decode refuses a known one.
            if how >= Spelling::Duplicates && !members.is_empty() && r.chance(6) {
                let i = r.below(members.len());
                let mut again = members[i].clone();
                if r.chance(50) {
                    again.1 = junk(r, 1);
                }
                let at = r.below(members.len() + 1);
                members.insert(at, again);
            }
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(r, hostile, out);
                string(r, k, hostile, true, out);
                ws(r, hostile, out);
                out.push(':');
                render(r, v, how, out);
            }
            ws(r, hostile, out);
            out.push('}');
        }
    }
    ws(r, hostile, out);
}

pub(super) fn ws(r: &mut Rng, hostile: bool, out: &mut String) {
    if r.chance(12) {
        out.push_str(r.pick(&[" ", "\n", "\t", "\r", "  ", "\r\n"]));
    } else if hostile && r.chance(1) {
        out.push(r.pick(&['\u{c}', '\u{a0}', '\u{b}', '\u{feff}']));
    }
}

pub(super) fn string(r: &mut Rng, s: &str, hostile: bool, key: bool, out: &mut String) {
    out.push('"');
    // Keys are escaped rarely (the fast paths leave escaped keys to the general
    // path): a few keys are, so that an event of many long keys is not nearly
    // always one with an escaped key; values often.
    let escape_rate = match key {
        true if r.chance(3) => 30,
        true => 0,
        false => 12,
    };
    for c in s.chars() {
        if hostile && r.chance(1) {
            out.push_str(r.pick(&[
                "\\ud800",
                "\\udc00",
                "\\ud800\\u0041",
                "\\x",
                "\\u12",
                "\\",
                "\u{1}",
            ]));
        }
        match c {
            '"' => out.push_str(r.pick(&["\\\"", "\\u0022"])),
            '\\' => out.push_str(r.pick(&["\\\\", "\\u005c", "\\u005C"])),
            '\n' => out.push_str(r.pick(&["\\n", "\\u000a", "\\u000A"])),
            '\t' => out.push_str(r.pick(&["\\t", "\\u0009"])),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str(r.pick(&["\\b", "\\u0008"])),
            '\u{c}' => out.push_str(r.pick(&["\\f", "\\u000c"])),
            c if u32::from(c) < 0x20 => {
                if hostile && r.chance(10) {
                    out.push(c);
                } else {
                    out.push_str(&format!("\\u{:04x}", u32::from(c)));
                }
            }
            '/' if r.chance(50) => out.push_str("\\/"),
            c if r.chance(escape_rate) => {
                let mut units = [0_u16; 2];
                for u in c.encode_utf16(&mut units) {
                    if r.chance(50) {
                        out.push_str(&format!("\\u{u:04x}"));
                    } else {
                        out.push_str(&format!("\\u{u:04X}"));
                    }
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Mutates the text's characters (so it stays a `&str`): deletions,
/// insertions of JSON tokens and stray characters, truncation, duplication.
pub(super) fn mutate(r: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..=r.below(3) {
        let at = r.below(chars.len() + 1);
        match r.below(5) {
            0 => {
                let end = (at + 1 + r.below(4)).min(chars.len());
                if at < end {
                    chars.drain(at..end);
                }
            }
            1 | 2 => {
                let token = r.pick(&[
                    "{", "}", "[", "]", ",", ":", "\"", "\\", "0", "-", "n", "null", " ", "\u{c}",
                    "x", "\"a\":1,", "\\u", "\u{e9}", "1e5", "[]",
                ]);
                for (i, c) in token.chars().enumerate() {
                    chars.insert(at + i, c);
                }
            }
            3 => chars.truncate(at),
            _ => {
                let end = (at + 1 + r.below(8)).min(chars.len());
                if at < end {
                    let copy: Vec<char> = chars[at..end].to_vec();
                    for (i, c) in copy.into_iter().enumerate() {
                        chars.insert(end + i, c);
                    }
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// One event's text: rendered, hostile or mutated for some seeds.
pub(super) fn event_text(r: &mut Rng, j: &J) -> String {
    let how = if r.chance(25) {
        Spelling::Hostile
    } else {
        Spelling::Duplicates
    };
    let mut out = String::new();
    render(r, j, how, &mut out);
    if r.chance(20) {
        out = mutate(r, &out);
    }
    out
}
