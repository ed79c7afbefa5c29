//! The chat memo's second place: the per-event nonce OpenAI adds to every chunk
//! (`obfuscation`, Q61). A fragment with its own nonce after the arguments is
//! served with that nonce, which the stream checks as the general path does;
//! any other nonce (escaped, not a string, before the arguments, missing)
//! leaves the chunk to the scanner.

use proptest::prelude::*;

use super::super::openai_chat;
use super::super::{Assembler, AssemblerLimits, Dialect};

/// A chat fragment as the API sends it, its nonce last.
fn chunk(arguments: &str, nonce: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{arguments}}}}}]}},"logprobs":null,"finish_reason":null}}],"obfuscation":{nonce}}}"#
    )
}

const TEMPLATE_ARGUMENTS: &str = r#""{\"city\"""#;

#[test]
fn a_fragment_with_its_own_nonce_is_served_with_it() {
    let template = chunk(TEMPLATE_ARGUMENTS, r#""aB3dE5gH""#);
    for (arguments, nonce) in [
        (r#"": \"Par""#, r#""Zx9""#),
        (r#""is\"}""#, r#""a-much-longer-nonce_0123""#),
        (r#""\u00e9\n""#, r#""""#),
        (r#""""#, r#""aB3dE5gH""#),
    ] {
        let event = chunk(arguments, nonce);
        assert_eq!(
            openai_chat::memo_agrees(&template, &event),
            Ok(true),
            "{event}"
        );
    }
    // Left to the scanner, which reads each as the general path does.
    for (arguments, nonce) in [
        (r#""x""#, r#""esc\u0061ped""#),
        (r#""x""#, "null"),
        (r#""x""#, "12345678"),
        (r#""x""#, r#"{"a":1}"#),
        (r#""x""#, r#""unterminated"#),
    ] {
        let event = chunk(arguments, nonce);
        assert_eq!(
            openai_chat::memo_agrees(&template, &event),
            Ok(false),
            "{event}"
        );
    }
}

#[test]
fn a_nonce_before_the_arguments_or_escaped_is_not_learned() {
    let before = r#"{"obfuscation":"aB3dE5gH","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]}"#;
    let escaped = chunk(TEMPLATE_ARGUMENTS, r#""aB3d\u0045"#.to_owned().as_str());
    for template in [before, &escaped] {
        let next = template.replace("aB3d", "zzzz");
        assert_eq!(
            openai_chat::memo_agrees(template, &next),
            Ok(false),
            "{template}"
        );
    }
}

/// Feeds the chunks as SSE data (`feed_text`, the fast paths' way in) to one
/// assembler of `dialect`, and to another with the fast paths off; both give
/// the same results, errors included. The first assembler, and its results.
pub(super) fn both_paths_of(
    dialect: Dialect,
    chunks: &[String],
) -> (Assembler, Vec<Result<(), String>>) {
    let run = |general: bool| {
        super::GENERAL_ONLY.with(|g| g.set(general));
        let mut asm = Assembler::new(Some(dialect), AssemblerLimits::default());
        let results: Vec<_> = chunks
            .iter()
            .map(|c| asm.feed_text(None, c, None).map_err(|e| e.to_string()))
            .collect();
        asm.close(None).ok();
        super::GENERAL_ONLY.with(|g| g.set(false));
        (asm, results)
    };
    let (fast, a) = run(false);
    let (general, b) = run(true);
    assert_eq!(a, b);
    assert_eq!(fast.messages(), general.messages());
    (fast, a)
}

/// [`both_paths_of`] for chat chunks.
fn both_paths(chunks: &[String]) -> (Assembler, Vec<Result<(), String>>) {
    both_paths_of(Dialect::OpenAiChat, chunks)
}

#[test]
fn a_replayed_chunk_is_refused_though_the_memo_serves_its_shape() {
    let head = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#;
    let pieces = [r#""{\"a\"""#, r#"": 1""#, r#""}""#];
    let mut chunks = vec![head.to_owned()];
    chunks.extend(
        pieces
            .iter()
            .enumerate()
            .map(|(n, p)| chunk(p, &format!("\"nonce{n:04}\""))),
    );
    chunks.insert(3, chunks[2].clone());
    let (asm, results) = both_paths(&chunks);
    assert!(
        results[3].as_ref().is_err_and(|e| e.contains("nonce0001")),
        "{results:?}"
    );
    assert_eq!(asm.messages()[0].tool_uses[0].block.input, "{\"a\": 1}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Any nonce text (escapes, quotes, backslashes, multi-byte) in the nonce's
    /// place: what the memo gives is the general decode, or it leaves the chunk
    /// to the scanner.
    #[test]
    fn any_nonce_in_the_nonce_place_reads_as_the_general_decode(
        nonce in r#"[a-zA-Z0-9"\\/é🦀 ]{0,12}"#,
        arguments in r#"[a-z"\\{}:, ]{0,8}"#,
    ) {
        let template = chunk(TEMPLATE_ARGUMENTS, r#""aB3dE5gH""#);
        let event = chunk(&format!("\"{arguments}\""), &format!("\"{nonce}\""));
        prop_assert!(openai_chat::memo_agrees(&template, &event).is_ok(), "{}", event);
    }

    /// A stream of fragments, each with its own nonce, some repeated: both
    /// paths read it alike.
    #[test]
    fn stamped_streams_read_alike_on_both_paths(
        nonces in proptest::collection::vec(0_u8..6, 1..12),
    ) {
        let head = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}]}}]}"#;
        let mut chunks = vec![head.to_owned()];
        chunks.extend(nonces.iter().map(|n| chunk(r#""x""#, &format!("\"nonce-{n:04}\""))));
        both_paths(&chunks);
    }
}
