//! The chat dialect's common event: one choice whose delta is the next
//! argument fragment of one call, or the next piece of text or of reasoning
//! (`reasoning_content` or `reasoning`, each alone), and nothing else
//! (what a [`crate::providers::scan::Memo`] of the bytes and the binding's memo of decoded
//! events serve).

use super::content::Content;
use super::{scan_chunk, scan_chunk_with, Chunk, Delta, Function};
use crate::providers::common::Stamp;
use crate::providers::json::{Few, Loose, Str, TextOrObject};
use crate::providers::scan::{self, Facts, Memoized, Scan};

/// The tag of [`Facts`] for a fragment whose call says `"type": "function"`
/// (LiteLLM's chunks say it in every fragment); 0 for one that names no type.
/// Any other type is not the common event.
const TYPED_FUNCTION: u8 = 1;

/// The tag of [`Facts`] for a piece of text: a delta that is `content` alone.
const TEXT: u8 = 2;

/// The tag of [`Facts`] for a piece of reasoning as DeepSeek, Qwen, vLLM and
/// xAI send it: a delta that is `reasoning_content` alone.
const REASONING_CONTENT: u8 = 3;

/// The tag of [`Facts`] for a piece of reasoning as OpenRouter, Ollama and
/// newer vLLM send it: a delta that is `reasoning` alone.
const REASONING: u8 = 4;

/// Makes `chunk` (fresh) the chunk of the common event: one choice whose
/// delta is the next argument fragment of one call (with `"type": "function"`
/// when the tag says so) or, tagged [`TEXT`], [`REASONING_CONTENT`] or
/// [`REASONING`], the next piece of text or reasoning, and nothing else
/// (what a [`crate::providers::scan::Memo`] serves). Built in place, as the
/// scanner builds.
pub(super) fn fragment_chunk<'a>(chunk: &mut Chunk<'a>, (tag, choice, call): Facts, arguments: Str<'a>) {
    let Some(ch) = chunk.choices.insert(Few::default()).slot() else {
        return;
    };
    ch.index = choice;
    let delta = ch.delta.insert(Delta::default());
    match tag {
        TEXT => delta.content = Some(Content::Text(arguments)),
        REASONING_CONTENT => delta.reasoning_content = Some(arguments),
        REASONING => delta.reasoning = Some(arguments),
        _ => {
            let Some(tc) = delta.tool_calls.insert(Few::default()).slot() else {
                return;
            };
            tc.index = call;
            if tag == TYPED_FUNCTION {
                tc.kind = Some(Str("function".into()));
            }
            tc.function = Some(Function {
                name: None,
                arguments: Some(TextOrObject::Text(arguments)),
            });
        }
    }
}

/// The facts, the string and the nonce of a chunk that is exactly a
/// [`fragment_chunk`] with, perhaps, a nonce (`obfuscation`, as a string):
/// the common event of a tree, served with its own nonce (`common.rs`).
pub(super) fn stamped_common<'c>(chunk: &'c Chunk<'_>) -> Option<(Facts, &'c str, Stamp<'c>)> {
    let nonce = match &chunk.obfuscation {
        None => None,
        Some(Loose::Str(n)) => Some(&**n),
        Some(Loose::Json(_)) => return None,
    };
    let choice = chunk.choices.as_ref()?.iter().next()?;
    let delta = choice.delta.as_ref()?;
    let (facts, piece) = if let Some(Content::Text(text)) = &delta.content {
        ((TEXT, choice.index, None), text)
    } else if let Some(r) = &delta.reasoning_content {
        ((REASONING_CONTENT, choice.index, None), r)
    } else if let Some(r) = &delta.reasoning {
        ((REASONING, choice.index, None), r)
    } else {
        let call = delta.tool_calls.as_ref()?.iter().next()?;
        let Some(TextOrObject::Text(arguments)) = call.function.as_ref()?.arguments.as_ref() else {
            return None;
        };
        let tag = match call.kind.as_deref() {
            None => 0,
            Some("function") => TYPED_FUNCTION,
            Some(_) => return None,
        };
        ((tag, choice.index, call.index), arguments)
    };
    let mut again = Chunk::default();
    fragment_chunk(&mut again, facts, piece.clone());
    again.obfuscation = nonce.map(|n| Loose::Str(n.into()));
    let stamp = Stamp { nonce, seq: None };
    (again == *chunk).then_some((facts, &**piece, stamp))
}

impl<'a> Memoized<'a> for Chunk<'a> {
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>> {
        scan_chunk(text, self)
    }
    fn scan_in(&mut self, text: &'a str, decoded: &'a mut String) -> Option<Option<(usize, usize)>> {
        let mut p = Scan::new(text);
        p.lend(decoded);
        scan_chunk_with(p, self)
    }
    fn facts(&self) -> Option<Facts> {
        stamped_common(self).map(|(facts, _, _)| facts)
    }
    fn fill(&mut self, facts: Facts, piece: Str<'a>) {
        fragment_chunk(self, facts, piece);
    }
    fn nonce(&self, text: &str) -> Option<Option<(usize, usize)>> {
        let Loose::Str(nonce) = self.obfuscation.as_ref()? else {
            return Some(None);
        };
        // Read from the text as it stands: its address is in the text,
        // between quotes (an escaped nonce was decoded elsewhere: no span,
        // and the event is not learned).
        Some(scan::quoted_span(text, nonce))
    }
    fn stamp(&mut self, nonce: &'a str) {
        self.obfuscation = Some(Loose::Str(nonce.into()));
    }
}
