//! The Responses memo's places for an event's stamps: the `sequence_number`
//! the API puts on every event and the per-event nonce (`obfuscation`) after
//! each delta. A delta with its own number and nonce in those places is
//! served with them, and the stream checks them as the general path does (a
//! resend skipped and a late event refused, Q33; a nonce replayed refused,
//! Q61); any other number or nonce leaves the event to the scanner.

use proptest::prelude::*;

use super::super::{responses, Dialect};
use super::nonce::both_paths_of;

/// An argument delta as the API sends it: its number second, its nonce last.
fn delta(seq: &str, arguments: &str, nonce: &str) -> String {
    format!(
        r#"{{"type":"response.function_call_arguments.delta","sequence_number":{seq},"item_id":"fc_1","output_index":0,"delta":{arguments},"obfuscation":{nonce}}}"#
    )
}

/// The same delta with its number after the string, before the nonce.
fn delta_number_after(seq: &str, arguments: &str, nonce: &str) -> String {
    format!(
        r#"{{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":{arguments},"sequence_number":{seq},"obfuscation":{nonce}}}"#
    )
}

/// The same delta with its number last, after the nonce.
fn delta_number_last(seq: &str, arguments: &str, nonce: &str) -> String {
    format!(
        r#"{{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":{arguments},"obfuscation":{nonce},"sequence_number":{seq}}}"#
    )
}

type Shape = fn(&str, &str, &str) -> String;
const SHAPES: [Shape; 3] = [delta, delta_number_after, delta_number_last];

#[test]
fn a_delta_with_its_own_number_and_nonce_is_served_with_them() {
    for shape in SHAPES {
        let template = shape("7", r#""{\"city\"""#, r#""aB3dE5gH""#);
        for (seq, arguments, nonce) in [
            ("8", r#"": \"Par""#, r#""Zx9""#),
            ("0", r#""is\"}""#, r#""a-much-longer-nonce_0123""#),
            ("123456789", r#""\u00e9\n""#, r#""""#),
            ("18446744073709551615", r#""""#, r#""aB3dE5gH""#),
            ("7", r#""x""#, r#""aB3dE5gH""#),
            ("null", r#""x""#, r#""n""#),
            (" 9", r#""x""#, r#""n""#),
        ] {
            let event = shape(seq, arguments, nonce);
            assert_eq!(
                responses::memo_agrees(&template, &event),
                Ok(true),
                "{event}"
            );
        }
        // Left to the scanner, which reads each as the general path does.
        for (seq, nonce) in [
            ("01", r#""n""#),
            ("-1", r#""n""#),
            ("1.0", r#""n""#),
            ("1e2", r#""n""#),
            ("18446744073709551616", r#""n""#),
            (r#""1""#, r#""n""#),
            ("", r#""n""#),
            ("1", r#""esc\u0061ped""#),
            ("1", "null"),
            ("1", "12345678"),
            ("1", r#"{"a":1}"#),
            ("1", r#""unterminated"#),
        ] {
            let event = shape(seq, r#""x""#, nonce);
            assert_eq!(
                responses::memo_agrees(&template, &event),
                Ok(false),
                "{event}"
            );
        }
    }
}

#[test]
fn a_number_between_the_item_id_and_the_string_or_a_nonce_before_it_is_not_learned() {
    let between = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","sequence_number":3,"output_index":0,"delta":"x","obfuscation":"ab"}"#;
    let nonce_first = r#"{"type":"response.function_call_arguments.delta","obfuscation":"ab","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"x"}"#;
    for template in [between, nonce_first] {
        assert_eq!(responses::memo_parts(template), None, "{template}");
        let next = template.replace("\"x\"", "\"y\"").replace(":3", ":4");
        assert_eq!(
            responses::memo_agrees(template, &next),
            Ok(false),
            "{template}"
        );
    }
    // The number before the item id: the id is found from the string.
    let first = delta("9", r#""x""#, r#""ab""#);
    let longer = delta("10000", r#""y""#, r#""cd""#);
    assert_eq!(responses::memo_agrees(&first, &longer), Ok(true));
    let other_id = longer.replace("fc_1", "fc_2");
    assert_eq!(responses::memo_agrees(&first, &other_id), Ok(false));
}

/// A stream of one call: its item, then the deltas.
fn stream(deltas: impl IntoIterator<Item = String>) -> Vec<String> {
    let head = r#"{"type":"response.output_item.added","sequence_number":0,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}"#;
    let mut events = vec![head.to_owned()];
    events.extend(deltas);
    events
}

fn arguments_of(asm: &super::super::Assembler) -> String {
    asm.messages()[0].tool_uses[0].block.input.clone()
}

#[test]
fn a_resent_delta_is_skipped_and_a_late_one_refused_though_the_memo_serves_their_shape() {
    for shape in SHAPES {
        let pieces = [r#""{\"a\"""#, r#"": 1""#, r#""}""#];
        let mut deltas: Vec<String> = (1..)
            .zip(pieces)
            .map(|(n, p)| shape(&n.to_string(), p, &format!("\"nonce{n:04}\"")))
            .collect();
        // The second delta sent again, as it was.
        deltas.insert(2, deltas[1].clone());
        let (asm, results) = both_paths_of(Dialect::OpenAiResponses, &stream(deltas));
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(arguments_of(&asm), "{\"a\": 1}");
        let message = &asm.messages()[0];
        assert!(
            message
                .skipped
                .iter()
                .any(|s| format!("{s:?}").contains("resent, sequence_number 2")),
            "{:?}",
            message.skipped
        );

        // The third before the second: a gap, then a late arrival, not applied.
        let late = [(1, pieces[0]), (3, pieces[2]), (2, pieces[1])]
            .map(|(n, p)| shape(&n.to_string(), p, &format!("\"nonce{n:04}\"")));
        let (asm, _) = both_paths_of(Dialect::OpenAiResponses, &stream(late));
        let problems = format!("{:?}", asm.messages()[0].problems);
        assert!(
            problems.contains("sequence_number 2 arrived after 3"),
            "{problems}"
        );
        assert_eq!(arguments_of(&asm), "{\"a\"}");
    }
}

#[test]
fn a_replayed_nonce_is_refused_though_the_memo_serves_its_shape() {
    for shape in SHAPES {
        let deltas = [
            (1, r#""{\"a\"""#, "nonce-one"),
            (2, r#"": 1""#, "nonce-two"),
            (3, r#""}""#, "nonce-one"),
        ]
        .map(|(n, p, nonce)| shape(&n.to_string(), p, &format!("\"{nonce}\"")));
        let (asm, results) = both_paths_of(Dialect::OpenAiResponses, &stream(deltas));
        assert!(
            results[3].as_ref().is_err_and(|e| e.contains("nonce-one")),
            "{results:?}"
        );
        assert_eq!(arguments_of(&asm), "{\"a\": 1");
    }
}

proptest! {
    /// Any number text and any nonce text in their places: what the memo
    /// gives is the general decode, or it leaves the event to the scanner.
    #[test]
    fn any_stamps_in_their_places_read_as_the_general_decode(
        shape in 0_usize..3,
        seq in r#"[0-9.eE+\- n"]{0,22}"#,
        nonce in r#"[a-zA-Z0-9"\\/é🦀 ]{0,12}"#,
        arguments in r#"[a-z"\\{}:, ]{0,8}"#,
    ) {
        let shape = SHAPES[shape];
        let template = shape("7", r#""{\"city\"""#, r#""aB3dE5gH""#);
        let event = shape(&seq, &format!("\"{arguments}\""), &format!("\"{nonce}\""));
        prop_assert!(responses::memo_agrees(&template, &event).is_ok(), "{}", event);
    }

    /// A stream of deltas, each with a number and a nonce drawn from a few
    /// (so some resent, some late, some replayed): both paths read it alike.
    #[test]
    fn stamped_responses_streams_read_alike_on_both_paths(
        shape in 0_usize..3,
        stamps in proptest::collection::vec((1_u8..8, 0_u8..6), 1..12),
    ) {
        let shape = SHAPES[shape];
        let deltas = stamps
            .iter()
            .map(|(n, nonce)| shape(&n.to_string(), r#""x""#, &format!("\"nonce-{nonce:04}\"")));
        both_paths_of(Dialect::OpenAiResponses, &stream(deltas));
    }
}
