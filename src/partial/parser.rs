//! The incremental state machine behind [`PartialJson`].
//!
//! Containers being built live on an explicit stack of frames, so hostile
//! nesting costs heap, bounded by `max_depth`, never native stack. A scalar
//! being built (string, number, keyword) is held beside the stack with
//! whatever bytes of it cannot be decoded yet. Each input byte is consumed
//! exactly once; string runs without escapes are copied in bulk.

use std::collections::HashMap;

use super::{Error, OpenContainer, OpenScalar, PartialOptions, PartialValue, MAX_DEPTH_CEILING};

/// Objects with this many members get a key index, so that duplicate-key
/// checks stay O(1) on hostile objects with very many keys.
const INDEX_THRESHOLD: usize = 16;

/// Longest key quoted back in a duplicate-key message.
const KEY_IN_MESSAGE: usize = 64;

/// An incremental parser of partial JSON. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct PartialJson {
    opts: PartialOptions,
    /// Strict mode (the tool boundary): duplicate keys, lone surrogates and
    /// numbers `serde_json` cannot hold are errors instead of being tolerated.
    strict: bool,
    stack: Vec<Frame>,
    /// A serial number per open container (parallel to `stack`): a container
    /// closed and another opened at the same depth have different serials.
    serials: Vec<u64>,
    next_serial: u64,
    /// Object members replaced by a duplicate key so far, over the parser's life.
    replacements: u64,
    mode: Mode,
    scalar: Scalar,
    /// The whole top-level value, once it is complete.
    root: Option<PartialValue>,
    fed: usize,
    processed: usize,
    generation: u64,
    error: Option<Error>,
}

/// What the next structural byte may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A value (top level, after `:`, after `,` in an array).
    Value,
    /// Right after `[`: a value or `]`.
    ArrayFirst,
    /// Right after `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    ObjectKey,
    /// After a key: `:`.
    Colon,
    /// After a value: `,` or the closer, or (top level) whitespace only.
    AfterValue,
}

#[derive(Debug, Clone)]
enum Frame {
    Array(Vec<PartialValue>),
    Object(ObjectFrame),
}

#[derive(Debug, Clone, Default)]
struct ObjectFrame {
    members: Vec<(String, PartialValue)>,
    /// Key → position, built once the object is large.
    index: Option<HashMap<String, usize>>,
    /// The key whose value is being parsed.
    key: Option<PendingKey>,
    /// Positions of members whose value a duplicate key replaced, in order.
    replaced: Vec<usize>,
}

#[derive(Debug, Clone)]
struct PendingKey {
    name: String,
    /// Position of an earlier member with the same key (its value is replaced).
    slot: Option<usize>,
}

impl ObjectFrame {
    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.members.iter().position(|(k, _)| k == key),
        }
    }

    /// Adds a member, or replaces the earlier one of the same key; true when
    /// it replaced one.
    fn insert(&mut self, key: PendingKey, value: PartialValue) -> bool {
        if let Some(slot) = key.slot {
            if let Some(member) = self.members.get_mut(slot) {
                member.1 = value;
                self.replaced.push(slot);
                return true;
            }
        }
        let position = self.members.len();
        if let Some(index) = &mut self.index {
            index.insert(key.name.clone(), position);
        }
        self.members.push((key.name, value));
        if self.index.is_none() && self.members.len() >= INDEX_THRESHOLD {
            self.index = Some(
                self.members
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect(),
            );
        }
        false
    }
}

#[derive(Debug, Clone)]
enum Scalar {
    None,
    Str(StrState),
    Num(NumState),
    Literal {
        word: &'static [u8],
        matched: usize,
        start: usize,
    },
}

#[derive(Debug, Clone)]
struct StrState {
    text: String,
    is_key: bool,
    /// Offset of the opening quote.
    start: usize,
    escape: Escape,
    /// Offset of the backslash of the escape being read.
    escape_start: usize,
    /// A high surrogate waiting for its low half, and its escape's offset.
    high: Option<(u16, usize)>,
    /// An incomplete UTF-8 sequence held back, and its offset.
    utf8: [u8; 4],
    utf8_len: usize,
    utf8_start: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// After `\`.
    Backslash,
    /// Inside `\uXXXX`, `digits` hex digits read so far.
    Hex {
        code: u16,
        digits: u8,
    },
    /// After a high surrogate: expecting the `\` of its low half.
    LowBackslash,
    /// After a high surrogate and `\`: expecting `u`.
    LowU,
}

#[derive(Debug, Clone)]
struct NumState {
    text: String,
    at: NumAt,
    /// Length of the longest prefix of `text` that is a valid number.
    valid_len: usize,
    start: usize,
}

/// Where a number's grammar is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumAt {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpInt,
}

impl NumAt {
    fn next(self, b: u8) -> Option<NumAt> {
        use NumAt::{Dot, Exp, ExpInt, ExpSign, Frac, Int, Minus, Zero};
        match (self, b) {
            (Minus, b'0') => Some(Zero),
            (Minus, b'1'..=b'9') | (Int, b'0'..=b'9') => Some(Int),
            (Zero | Int, b'.') => Some(Dot),
            (Dot | Frac, b'0'..=b'9') => Some(Frac),
            (Zero | Int | Frac, b'e' | b'E') => Some(Exp),
            (Exp, b'+' | b'-') => Some(ExpSign),
            (Exp | ExpSign | ExpInt, b'0'..=b'9') => Some(ExpInt),
            _ => None,
        }
    }

    fn is_complete(self) -> bool {
        matches!(self, NumAt::Zero | NumAt::Int | NumAt::Frac | NumAt::ExpInt)
    }
}

/// What the byte loop does after one step.
enum Step {
    /// The byte was consumed.
    Consumed,
    /// The byte ended the scalar before it; look at it again.
    Again,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", char::from(b))
    } else {
        format!("byte 0x{b:02X}")
    }
}

fn syntax(offset: usize, message: impl Into<String>) -> Error {
    Error::Syntax {
        offset,
        message: message.into(),
    }
}

fn hex_value(b: u8) -> Option<u16> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u16::try_from(d).ok())
}

impl Default for PartialJson {
    fn default() -> Self {
        Self::new(PartialOptions::default())
    }
}

impl PartialJson {
    /// A parser with `opts` (`max_depth` is lowered to [`MAX_DEPTH_CEILING`]).
    #[must_use]
    pub fn new(opts: PartialOptions) -> Self {
        let opts = PartialOptions {
            max_depth: opts.max_depth.min(MAX_DEPTH_CEILING),
            ..opts
        };
        Self {
            opts,
            strict: false,
            stack: Vec::new(),
            serials: Vec::new(),
            next_serial: 0,
            replacements: 0,
            mode: Mode::Value,
            scalar: Scalar::None,
            root: None,
            fed: 0,
            processed: 0,
            generation: 0,
            error: None,
        }
    }

    /// The strict parser of the tool boundary (see [`crate::validate`]).
    pub(crate) fn new_strict(max_depth: usize) -> Self {
        let mut parser = Self::new(PartialOptions {
            partial_strings: false,
            max_depth,
            max_bytes: usize::MAX,
        });
        parser.strict = true;
        parser
    }

    /// The options in effect.
    #[must_use]
    pub fn options(&self) -> PartialOptions {
        self.opts
    }

    /// Bytes accepted so far (a fragment rejected by `max_bytes` is not
    /// counted; one that hit a syntax error is).
    #[must_use]
    pub fn bytes_fed(&self) -> usize {
        self.fed
    }

    /// True once a whole top-level value has been seen. A top-level number
    /// is complete only once a byte after it (whitespace) or [`finish`](Self::finish)
    /// has ended it.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.root.is_some()
    }

    /// The error that stopped this parser, if any.
    #[must_use]
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// A counter that changes whenever the value may have changed (each
    /// non-empty fragment fed), so a caller can reuse its converted value
    /// while the counter stays the same.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bytes the state machine has stepped over: each byte fed is processed
    /// once, so this never exceeds [`bytes_fed`](Self::bytes_fed).
    #[cfg(test)]
    pub(crate) fn bytes_processed(&self) -> usize {
        self.processed
    }

    /// Feed the next fragment; it may end anywhere (inside a UTF-8 sequence,
    /// an escape, a number, a keyword).
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] at the first byte that cannot continue valid JSON
    /// (bytes before it are kept), [`Error::Limit`] on too deep nesting or too
    /// many bytes. Errors are sticky.
    pub fn feed(&mut self, fragment: &[u8]) -> Result<(), Error> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        if fragment.is_empty() {
            return Ok(());
        }
        match self.fed.checked_add(fragment.len()) {
            Some(total) if total <= self.opts.max_bytes => {}
            _ => {
                let error = Error::Limit {
                    limit: "max_bytes",
                    max: self.opts.max_bytes,
                    offset: self.fed,
                };
                self.error = Some(error.clone());
                return Err(error);
            }
        }
        self.generation = self.generation.wrapping_add(1);
        let result = self.run(fragment);
        self.fed = self.fed.saturating_add(fragment.len());
        if let Err(error) = &result {
            self.error = Some(error.clone());
        }
        result
    }

    /// The input has ended: a top-level number still open is complete now.
    ///
    /// # Errors
    ///
    /// The sticky error if the parser failed, or [`Error::Syntax`] at the end
    /// of the input when no whole value has arrived. An incomplete value is
    /// not made sticky: the value so far stays readable.
    pub fn finish(&mut self) -> Result<(), Error> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        if self.stack.is_empty() {
            if let Scalar::Num(num) = &self.scalar {
                if num.at.is_complete() {
                    let offset = self.fed;
                    self.complete_scalar(offset)?;
                }
            }
        }
        if self.is_complete() {
            return Ok(());
        }
        let what = match (&self.scalar, self.stack.last()) {
            (Scalar::Str(s), _) if s.is_key => "an object key",
            (Scalar::Str(_), _) => "a string",
            (Scalar::Num(_), _) => "a number",
            (Scalar::Literal { .. }, _) => "a keyword",
            (Scalar::None, Some(Frame::Array(_))) => "an array",
            (Scalar::None, Some(Frame::Object(_))) => "an object",
            (Scalar::None, None) => "the input: no JSON value",
        };
        Err(syntax(self.fed, format!("unexpected end of {what}")))
    }

    /// The best-effort value so far, or `None` when no value has started or
    /// nothing of it is showable yet. Costs time proportional to the size of
    /// the tree, however it was fragmented.
    #[must_use]
    pub fn value(&self) -> Option<PartialValue> {
        if let Some(root) = &self.root {
            return Some(root.clone());
        }
        let mut child = self.open_scalar().map(|scalar| match scalar {
            OpenScalar::String(text) => PartialValue::String(text.to_owned()),
            OpenScalar::Number(text) => PartialValue::Number(text.to_owned()),
        });
        for open in self.open_containers().rev() {
            child = Some(match open {
                OpenContainer::Array { items, .. } => {
                    let mut items = items.to_vec();
                    items.extend(child);
                    PartialValue::Array(items)
                }
                OpenContainer::Object { members, key, .. } => {
                    let mut members = members.to_vec();
                    if let (Some(value), Some((name, slot))) = (child, key) {
                        match slot.and_then(|i| members.get_mut(i)) {
                            Some(member) => member.1 = value,
                            None => members.push((name.to_owned(), value)),
                        }
                    }
                    PartialValue::Object(members)
                }
            });
        }
        child
    }

    /// The whole top-level value, once it is complete.
    #[must_use]
    pub fn complete_value(&self) -> Option<&PartialValue> {
        self.root.as_ref()
    }

    /// The containers still open, outermost first: what [`value`](Self::value)
    /// is made of, borrowed. Each one's finished children never change, except
    /// that an object member may be replaced by a later duplicate key (listed
    /// in its `replaced`). Empty once the value is complete.
    pub fn open_containers(&self) -> impl DoubleEndedIterator<Item = OpenContainer<'_>> {
        self.stack
            .iter()
            .zip(&self.serials)
            .map(|(frame, &serial)| match frame {
                Frame::Array(items) => OpenContainer::Array { serial, items },
                Frame::Object(object) => OpenContainer::Object {
                    serial,
                    members: &object.members,
                    replaced: &object.replaced,
                    key: object.key.as_ref().map(|key| (key.name.as_str(), key.slot)),
                },
            })
    }

    /// The members of the top-level object whose values are complete, in the
    /// order their keys first appeared: the finished members of the object while
    /// it is open, all of them once it is complete; `None` when the top-level
    /// value is not an object (or has not started). A member is here only once its
    /// value has closed (a string at its quote, a number at the byte after it, a
    /// container at its bracket); a later duplicate key replaces its value in place.
    #[must_use]
    pub fn finished_members(&self) -> Option<&[(String, PartialValue)]> {
        match (&self.root, self.stack.first()) {
            (Some(PartialValue::Object(members)), _) => Some(members),
            (None, Some(Frame::Object(object))) => Some(&object.members),
            _ => None,
        }
    }

    /// What is shown of the scalar still arriving (innermost), if anything.
    #[must_use]
    pub fn open_scalar(&self) -> Option<OpenScalar<'_>> {
        match &self.scalar {
            Scalar::Str(s) if !s.is_key && self.opts.partial_strings => {
                Some(OpenScalar::String(&s.text))
            }
            Scalar::Num(num) if num.valid_len > 0 => {
                num.text.get(..num.valid_len).map(OpenScalar::Number)
            }
            _ => None,
        }
    }

    /// How many object members a duplicate key has replaced so far: while it
    /// stays the same, every finished child seen earlier is still in place.
    #[must_use]
    pub fn replacements(&self) -> u64 {
        self.replacements
    }

    /// Moves the complete top-level value out, without a copy (for the strict
    /// parser, which is dropped right after).
    pub(crate) fn take_complete(&mut self) -> Option<PartialValue> {
        self.root.take()
    }

    fn run(&mut self, fragment: &[u8]) -> Result<(), Error> {
        let base = self.fed;
        let mut i = 0;
        while let Some(&b) = fragment.get(i) {
            let offset = base.saturating_add(i);
            let step = match &mut self.scalar {
                Scalar::None => self.structural(b, offset)?,
                Scalar::Str(s) => {
                    if s.escape == Escape::None && s.utf8_len == 0 && b != b'"' && b != b'\\' {
                        let rest = fragment.get(i..).unwrap_or_default();
                        let taken = string_run(s, rest, offset)?;
                        if taken > 0 {
                            i += taken;
                            self.processed = self.processed.saturating_add(taken);
                            continue;
                        }
                    }
                    self.string_byte(b, offset)?
                }
                Scalar::Num(num) => match num.at.next(b) {
                    Some(at) => {
                        // The run of bytes that continues the number, taken at once.
                        let rest = fragment.get(i..).unwrap_or_default();
                        let (taken, at, valid) = number_run(at, rest);
                        if let Some(run) =
                            rest.get(..taken).and_then(|r| std::str::from_utf8(r).ok())
                        {
                            let before = num.text.len();
                            num.text.push_str(run);
                            num.at = at;
                            if let Some(valid) = valid {
                                num.valid_len = before + valid;
                            }
                        }
                        i += taken;
                        self.processed = self.processed.saturating_add(taken);
                        continue;
                    }
                    None if num.at.is_complete() => {
                        self.complete_scalar(offset)?;
                        Step::Again
                    }
                    None => {
                        return Err(syntax(
                            offset,
                            format!("invalid number: expected a digit, found {}", describe(b)),
                        ))
                    }
                },
                Scalar::Literal { word, matched, .. } => {
                    if word.get(*matched) != Some(&b) {
                        let word = String::from_utf8_lossy(word);
                        return Err(syntax(
                            offset,
                            format!("invalid literal: expected '{word}', found {}", describe(b)),
                        ));
                    }
                    *matched += 1;
                    if *matched == word.len() {
                        self.complete_scalar(offset)?;
                    }
                    Step::Consumed
                }
            };
            if let Step::Consumed = step {
                i += 1;
                self.processed = self.processed.saturating_add(1);
            }
        }
        Ok(())
    }

    fn structural(&mut self, b: u8, offset: usize) -> Result<Step, Error> {
        if is_ws(b) {
            return Ok(Step::Consumed);
        }
        match self.mode {
            Mode::ArrayFirst if b == b']' => self.close_container(offset)?,
            Mode::Value | Mode::ArrayFirst => self.start_value(b, offset)?,
            Mode::ObjectFirst | Mode::ObjectKey if b == b'"' => self.start_string(true, offset),
            Mode::ObjectFirst if b == b'}' => self.close_container(offset)?,
            Mode::ObjectFirst | Mode::ObjectKey => {
                return Err(syntax(
                    offset,
                    format!(
                        "expected '\"' to start an object key, found {}",
                        describe(b)
                    ),
                ))
            }
            Mode::Colon if b == b':' => self.mode = Mode::Value,
            Mode::Colon => {
                return Err(syntax(
                    offset,
                    format!("expected ':' after an object key, found {}", describe(b)),
                ))
            }
            Mode::AfterValue => match (self.stack.last(), b) {
                (Some(Frame::Array(_)), b',') => self.mode = Mode::Value,
                (Some(Frame::Object(_)), b',') => self.mode = Mode::ObjectKey,
                (Some(Frame::Array(_)), b']') | (Some(Frame::Object(_)), b'}') => {
                    self.close_container(offset)?;
                }
                (Some(Frame::Array(_)), _) => {
                    return Err(syntax(
                        offset,
                        format!("expected ',' or ']' in an array, found {}", describe(b)),
                    ))
                }
                (Some(Frame::Object(_)), _) => {
                    return Err(syntax(
                        offset,
                        format!("expected ',' or '}}' in an object, found {}", describe(b)),
                    ))
                }
                (None, _) => {
                    return Err(syntax(
                        offset,
                        format!(
                        "unexpected {} after the complete JSON value (only whitespace may follow)",
                        describe(b)
                    ),
                    ))
                }
            },
        }
        Ok(Step::Consumed)
    }

    fn start_value(&mut self, b: u8, offset: usize) -> Result<(), Error> {
        match b {
            b'{' => {
                self.push_frame(Frame::Object(ObjectFrame::default()), offset)?;
                self.mode = Mode::ObjectFirst;
            }
            b'[' => {
                self.push_frame(Frame::Array(Vec::new()), offset)?;
                self.mode = Mode::ArrayFirst;
            }
            b'"' => self.start_string(false, offset),
            b'-' | b'0'..=b'9' => {
                let at = match b {
                    b'-' => NumAt::Minus,
                    b'0' => NumAt::Zero,
                    _ => NumAt::Int,
                };
                // Room for a typical number, so that it grows without reallocating.
                let mut text = String::with_capacity(24);
                text.push(char::from(b));
                self.scalar = Scalar::Num(NumState {
                    text,
                    at,
                    valid_len: usize::from(at != NumAt::Minus),
                    start: offset,
                });
            }
            b't' | b'f' | b'n' => {
                let word: &'static [u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.scalar = Scalar::Literal {
                    word,
                    matched: 1,
                    start: offset,
                };
            }
            _ => {
                return Err(syntax(
                    offset,
                    format!("expected a JSON value, found {}", describe(b)),
                ))
            }
        }
        Ok(())
    }

    fn start_string(&mut self, is_key: bool, offset: usize) {
        self.scalar = Scalar::Str(StrState {
            text: String::new(),
            is_key,
            start: offset,
            escape: Escape::None,
            escape_start: offset,
            high: None,
            utf8: [0; 4],
            utf8_len: 0,
            utf8_start: offset,
        });
    }

    fn push_frame(&mut self, frame: Frame, offset: usize) -> Result<(), Error> {
        if self.stack.len() >= self.opts.max_depth {
            return Err(Error::Limit {
                limit: "max_depth",
                max: self.opts.max_depth,
                offset,
            });
        }
        self.stack.push(frame);
        self.serials.push(self.next_serial);
        self.next_serial = self.next_serial.wrapping_add(1);
        Ok(())
    }

    fn close_container(&mut self, offset: usize) -> Result<(), Error> {
        self.serials.pop();
        let value = match self.stack.pop() {
            Some(Frame::Array(items)) => PartialValue::Array(items),
            Some(Frame::Object(object)) => PartialValue::Object(object.members),
            None => return Err(syntax(offset, "unbalanced closing bracket")),
        };
        self.place_value(value);
        Ok(())
    }

    /// Places a finished value in its parent (or as the root).
    fn place_value(&mut self, value: PartialValue) {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Array(items)) => items.push(value),
            Some(Frame::Object(object)) => {
                if let Some(key) = object.key.take() {
                    if object.insert(key, value) {
                        self.replacements = self.replacements.wrapping_add(1);
                    }
                }
            }
        }
        self.mode = Mode::AfterValue;
    }

    /// Ends the scalar being built (number at its delimiter, keyword at its
    /// last letter, string at its closing quote).
    fn complete_scalar(&mut self, offset: usize) -> Result<(), Error> {
        let value = match std::mem::replace(&mut self.scalar, Scalar::None) {
            Scalar::None => return Ok(()),
            Scalar::Str(s) if s.is_key => return self.key_complete(s),
            Scalar::Str(s) => PartialValue::String(s.text),
            Scalar::Num(num) => {
                if self.strict && num.text.parse::<serde_json::Number>().is_err() {
                    return Err(syntax(
                        num.start,
                        format!("number {} is out of range", num.text),
                    ));
                }
                PartialValue::Number(num.text)
            }
            Scalar::Literal { word, start, .. } => match word {
                b"true" => PartialValue::Bool(true),
                b"false" => PartialValue::Bool(false),
                b"null" => PartialValue::Null,
                _ => return Err(syntax(start.min(offset), "unknown literal")),
            },
        };
        self.place_value(value);
        Ok(())
    }

    fn key_complete(&mut self, s: StrState) -> Result<(), Error> {
        let Some(Frame::Object(object)) = self.stack.last_mut() else {
            return Err(syntax(s.start, "object key outside an object"));
        };
        let slot = object.position(&s.text);
        if slot.is_some() && self.strict {
            let mut shown: String = s.text.chars().take(KEY_IN_MESSAGE).collect();
            if shown.len() < s.text.len() {
                shown.push('…');
            }
            return Err(syntax(s.start, format!("duplicate object key \"{shown}\"")));
        }
        object.key = Some(PendingKey { name: s.text, slot });
        self.mode = Mode::Colon;
        Ok(())
    }

    /// One byte inside a string, outside the bulk path.
    fn string_byte(&mut self, b: u8, offset: usize) -> Result<Step, Error> {
        let strict = self.strict;
        let Scalar::Str(s) = &mut self.scalar else {
            return Ok(Step::Again);
        };
        match s.escape {
            Escape::None if s.utf8_len > 0 => {
                utf8_continue(s, b)?;
            }
            Escape::None => match b {
                b'"' => {
                    self.complete_scalar(offset)?;
                }
                b'\\' => {
                    s.escape = Escape::Backslash;
                    s.escape_start = offset;
                }
                0..=0x1F => {
                    return Err(syntax(
                        offset,
                        format!(
                            "control character {} in a string must be escaped",
                            describe(b)
                        ),
                    ))
                }
                0x20..=0x7F => s.text.push(char::from(b)),
                _ => {
                    s.utf8_start = offset;
                    utf8_continue(s, b)?;
                }
            },
            Escape::Backslash => {
                let decoded = match b {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        s.escape = Escape::Hex { code: 0, digits: 0 };
                        return Ok(Step::Consumed);
                    }
                    _ => {
                        return Err(syntax(
                            offset,
                            format!("invalid escape: '\\' followed by {}", describe(b)),
                        ))
                    }
                };
                s.text.push(decoded);
                s.escape = Escape::None;
            }
            Escape::Hex { code, digits } => {
                let Some(digit) = hex_value(b) else {
                    return Err(syntax(
                        offset,
                        format!(
                            "invalid \\u escape: expected a hex digit, found {}",
                            describe(b)
                        ),
                    ));
                };
                let code = (code << 4) | digit;
                if digits < 3 {
                    s.escape = Escape::Hex {
                        code,
                        digits: digits + 1,
                    };
                } else {
                    utf16_unit(s, code, strict)?;
                }
            }
            Escape::LowBackslash if b == b'\\' => {
                s.escape = Escape::LowU;
                s.escape_start = offset;
            }
            Escape::LowU if b == b'u' => s.escape = Escape::Hex { code: 0, digits: 0 },
            Escape::LowBackslash | Escape::LowU => {
                // The high surrogate is not followed by a low one: the byte
                // belongs to whatever comes next.
                lone_surrogate(s, strict)?;
                s.escape = if s.escape == Escape::LowU {
                    Escape::Backslash
                } else {
                    Escape::None
                };
                return Ok(Step::Again);
            }
        }
        Ok(Step::Consumed)
    }
}

/// Copies a run of plain string bytes (up to a quote, backslash or control
/// byte) in one go; returns how many bytes it took. An incomplete UTF-8
/// sequence at the end of the fragment is held back in `s.utf8`.
fn string_run(s: &mut StrState, rest: &[u8], offset: usize) -> Result<usize, Error> {
    let end = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(rest.len());
    let run = rest.get(..end).unwrap_or_default();
    match std::str::from_utf8(run) {
        Ok(text) => s.text.push_str(text),
        Err(e) => {
            let good = e.valid_up_to();
            if let Some(text) = run.get(..good).and_then(|r| std::str::from_utf8(r).ok()) {
                s.text.push_str(text);
            }
            let bad_offset = offset.saturating_add(good);
            let tail = run.get(good..).unwrap_or_default();
            if e.error_len().is_some() || end < rest.len() || tail.len() > 3 {
                return Err(syntax(bad_offset, "invalid UTF-8 in a string"));
            }
            for (slot, &byte) in s.utf8.iter_mut().zip(tail) {
                *slot = byte;
            }
            s.utf8_len = tail.len();
            s.utf8_start = bad_offset;
        }
    }
    Ok(end)
}

/// The bytes at the start of `rest` that continue a number whose first of them
/// moves its grammar to `at`: how many, where the grammar ends, and the length
/// (within the run) of the longest prefix after which the number is complete.
fn number_run(mut at: NumAt, rest: &[u8]) -> (usize, NumAt, Option<usize>) {
    let mut valid = at.is_complete().then_some(1);
    let mut taken = 1;
    for &b in rest.iter().skip(1) {
        match at.next(b) {
            Some(next) => {
                at = next;
                taken += 1;
                if at.is_complete() {
                    valid = Some(taken);
                }
            }
            None => break,
        }
    }
    (taken, at, valid)
}

/// Adds one byte to the held-back UTF-8 sequence, emitting it when whole.
fn utf8_continue(s: &mut StrState, b: u8) -> Result<(), Error> {
    let invalid = |s: &StrState| syntax(s.utf8_start, "invalid UTF-8 in a string");
    let Some(slot) = s.utf8.get_mut(s.utf8_len) else {
        return Err(invalid(s));
    };
    *slot = b;
    s.utf8_len += 1;
    let held = s.utf8.get(..s.utf8_len).unwrap_or_default();
    match std::str::from_utf8(held) {
        Ok(text) => {
            s.text.push_str(text);
            s.utf8_len = 0;
            Ok(())
        }
        Err(e) if e.error_len().is_none() => Ok(()),
        Err(_) => Err(invalid(s)),
    }
}

/// Handles one decoded `\uXXXX` code unit.
fn utf16_unit(s: &mut StrState, code: u16, strict: bool) -> Result<(), Error> {
    s.escape = Escape::None;
    if let Some((high, _)) = s.high {
        if (0xDC00..=0xDFFF).contains(&code) {
            s.high = None;
            let scalar = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(code) - 0xDC00);
            s.text.push(char::from_u32(scalar).unwrap_or('\u{FFFD}'));
            return Ok(());
        }
        lone_surrogate(s, strict)?;
    }
    match code {
        0xD800..=0xDBFF => {
            s.high = Some((code, s.escape_start));
            s.escape = Escape::LowBackslash;
        }
        0xDC00..=0xDFFF => {
            if strict {
                return Err(syntax(
                    s.escape_start,
                    format!("lone low surrogate \\u{code:04X} in a string"),
                ));
            }
            s.text.push('\u{FFFD}');
        }
        _ => s
            .text
            .push(char::from_u32(u32::from(code)).unwrap_or('\u{FFFD}')),
    }
    Ok(())
}

/// A high surrogate not followed by a low one: an error when strict,
/// otherwise shown as U+FFFD.
fn lone_surrogate(s: &mut StrState, strict: bool) -> Result<(), Error> {
    if let Some((high, at)) = s.high.take() {
        if strict {
            return Err(syntax(
                at,
                format!("lone high surrogate \\u{high:04X} in a string (no low surrogate follows)"),
            ));
        }
        s.text.push('\u{FFFD}');
    }
    Ok(())
}
