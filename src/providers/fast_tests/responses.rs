//! The fast path of OpenAI Responses (`scan_event`) against the general
//! decode: any event text, and whole SSE streams cut anywhere, give the same
//! with the fast path as without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::LazyLock;

use proptest::prelude::*;

use super::gen::{event_text, index, junk, members, obj_field, str_field, text, Rng, J};
use super::{arguments, fast_is_general, fragments, memo_case_of, obj, s, sse};
use crate::providers::{responses, Dialect};

/// The delta types the fast path serves.
const DELTAS: [&str; 6] = [
    "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
];

/// Other types: read by the general path, progress, or unknown.
const OTHERS: [&str; 10] = [
    "response.created",
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
    "response.completed",
    "response.failed",
    "error",
    "response.content_part.added",
    "response.future_event.delta",
];

/// A `sequence_number`: mostly a small integer, sometimes any spelling (the
/// edges of `u64` too), a string, null or another value.
fn sequence_number(r: &mut Rng) -> J {
    match r.below(40) {
        0..=29 => J::Num(r.pick(&["0", "1", "2", "41"])),
        30..=35 => J::Num(r.pick(&[
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            "100000000000000000000",
            "9223372036854775808",
            "1234567890123456789",
            "-1",
            "-0",
            "01",
            "1.0",
            "1e2",
            "0.5",
            "1E0",
            "00",
            "-",
        ])),
        36 => J::Num(r.pick(super::gen::INDEXES)),
        37 => J::Str(r.pick(&["1", "x"]).to_owned()),
        38 => J::Null,
        _ => junk(r, 1),
    }
}

/// An index: mostly a small integer, else any of [`index`]'s.
fn small_index(r: &mut Rng) -> J {
    if r.chance(75) {
        J::Num(r.pick(&["0", "1", "2"]))
    } else {
        index(r)
    }
}

/// An event of any shape: mostly a delta, with every member the typed decode
/// reads present now and then, and unknown members holding anything.
fn event(r: &mut Rng) -> J {
    let kind = match r.below(20) {
        0..=12 => J::Str(r.pick(&DELTAS).to_owned()),
        13..=17 => J::Str(r.pick(&OTHERS).to_owned()),
        18 => J::Str(text(r)),
        _ => junk(r, 1),
    };
    let item = obj_field(r, |r| {
        let v = vec![
            (90, "type", J::Str("function_call".to_owned())),
            (60, "id", str_field(r)),
            (40, "call_id", str_field(r)),
            (40, "name", str_field(r)),
            (50, "arguments", str_field(r)),
            (20, "input", str_field(r)),
            (20, "status", str_field(r)),
        ];
        members(r, v)
    });
    let response = obj_field(r, |r| {
        let v = vec![(80, "id", str_field(r)), (60, "status", str_field(r))];
        members(r, v)
    });
    // Mostly `null` when present: the one value of these the fast path serves.
    let nullish = |r: &mut Rng, j: J| if r.chance(50) { J::Null } else { j };
    let item = nullish(r, item);
    let response = nullish(r, response);
    let code = str_field(r);
    let code = nullish(r, code);
    let message = str_field(r);
    let message = nullish(r, message);
    let nested = junk(r, 3);
    let v = vec![
        (95, "type", kind),
        (50, "sequence_number", sequence_number(r)),
        (85, "output_index", small_index(r)),
        (50, "content_index", small_index(r)),
        (20, "summary_index", small_index(r)),
        (70, "item_id", str_field(r)),
        (85, "delta", str_field(r)),
        (8, "arguments", str_field(r)),
        (8, "input", str_field(r)),
        (8, "name", str_field(r)),
        (6, "item", item),
        (6, "response", response),
        (4, "code", code),
        (4, "message", message),
        (20, "obfuscation", str_field(r)),
        (10, "logprobs", nested),
    ];
    members(r, v)
}

/// The SSE name of an event of type `kind`: mostly its type, sometimes none
/// or another one (the event's own `type` is what is read).
fn name_for(r: &mut Rng, kind: &'static str) -> Option<&'static str> {
    match r.below(20) {
        0..=15 => Some(kind),
        16 | 17 => None,
        _ => Some(r.pick(&[
            "response.output_text.delta",
            "response.created",
            "message",
            "error",
        ])),
    }
}

/// A well-formed Responses stream: reasoning, text and a refusal, function
/// and custom tool calls with their deltas in fragments, the response's end;
/// numbered (for some seeds, with a number resent or skipped), and (for
/// some seeds) with a few events of any shape among them.
fn events(r: &mut Rng) -> Vec<(Option<&'static str>, J)> {
    let mut out: Vec<(&'static str, J)> = Vec::new();
    let mut push = |kind: &'static str, mut fields: Vec<(&str, J)>| {
        fields.insert(0, ("type", s(kind)));
        out.push((kind, obj(fields)));
    };
    let response = |status: &str| {
        obj(vec![
            ("id", s("resp_1")),
            ("object", s("response")),
            ("status", s(status)),
            ("model", s("gpt-5")),
        ])
    };
    push(
        "response.created",
        vec![("response", response("in_progress"))],
    );
    let num = ["0", "1", "2", "3", "4", "5", "6"];
    let mut at = 0;
    let item = |kind: &str, id: &str| obj(vec![("type", s(kind)), ("id", s(id))]);
    if r.chance(40) {
        push(
            "response.output_item.added",
            vec![
                ("output_index", J::Num(num[at])),
                ("item", item("reasoning", "rs_0")),
            ],
        );
        let kind = if r.chance(70) {
            "response.reasoning_summary_text.delta"
        } else {
            "response.reasoning_text.delta"
        };
        for (part, said) in [text(r), text(r)].iter().enumerate() {
            for piece in fragments(r, said) {
                push(
                    kind,
                    vec![
                        ("item_id", s("rs_0")),
                        ("output_index", J::Num(num[at])),
                        ("summary_index", J::Num(num[part])),
                        ("delta", J::Str(piece)),
                    ],
                );
            }
        }
        push(
            "response.output_item.done",
            vec![
                ("output_index", J::Num(num[at])),
                ("item", item("reasoning", "rs_0")),
            ],
        );
        at += 1;
    }
    if r.chance(60) {
        push(
            "response.output_item.added",
            vec![
                ("output_index", J::Num(num[at])),
                ("item", item("message", "msg_0")),
            ],
        );
        let said = text(r);
        for piece in fragments(r, &said) {
            push(
                "response.output_text.delta",
                vec![
                    ("item_id", s("msg_0")),
                    ("output_index", J::Num(num[at])),
                    ("content_index", J::Num("0")),
                    ("delta", J::Str(piece)),
                    ("logprobs", J::Arr(Vec::new())),
                ],
            );
        }
        if r.chance(20) {
            push(
                "response.refusal.delta",
                vec![
                    ("item_id", s("msg_0")),
                    ("output_index", J::Num(num[at])),
                    ("content_index", J::Num("1")),
                    ("delta", J::Str(text(r))),
                ],
            );
        }
        push(
            "response.output_item.done",
            vec![
                ("output_index", J::Num(num[at])),
                ("item", item("message", "msg_0")),
            ],
        );
        at += 1;
    }
    // The response's output, as `response.completed` restates it.
    let mut output = Vec::new();
    if at > 0 && r.chance(50) {
        output.push(item("message", "msg_0"));
    }
    for i in 0..r.below(4) {
        let custom = r.chance(25);
        let (kind, field, delta, done) = if custom {
            (
                "custom_tool_call",
                "input",
                "response.custom_tool_call_input.delta",
                "response.custom_tool_call_input.done",
            )
        } else {
            (
                "function_call",
                "arguments",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
            )
        };
        let id = format!("fc_{i}");
        let call = |args: &str| {
            obj(vec![
                ("type", s(kind)),
                ("id", J::Str(id.clone())),
                ("call_id", J::Str(format!("call_{i}"))),
                ("name", J::Str(format!("f{i}"))),
                (field, s(args)),
            ])
        };
        push(
            "response.output_item.added",
            vec![("output_index", J::Num(num[at])), ("item", call(""))],
        );
        let args = arguments(r);
        for piece in fragments(r, &args) {
            push(
                delta,
                vec![
                    ("item_id", J::Str(id.clone())),
                    ("output_index", J::Num(num[at])),
                    ("delta", J::Str(piece)),
                    ("obfuscation", s("Xy")),
                ],
            );
        }
        // Restated as the deltas said, mostly; now and then otherwise (at
        // times in text of the same length).
        let restated = |r: &mut Rng| {
            if r.chance(85) {
                args.clone()
            } else if r.chance(50) {
                args.replacen('k', "j", 1)
            } else {
                arguments(r)
            }
        };
        let said = restated(r);
        push(
            done,
            vec![
                ("item_id", J::Str(id.clone())),
                ("output_index", J::Num(num[at])),
                (field, J::Str(said)),
            ],
        );
        let said = restated(r);
        push(
            "response.output_item.done",
            vec![("output_index", J::Num(num[at])), ("item", call(&said))],
        );
        if r.chance(90) {
            let said = restated(r);
            output.push(call(&said));
        }
        at += 1;
    }
    let usage = obj(vec![
        ("input_tokens", J::Num("10")),
        ("output_tokens", J::Num("20")),
    ]);
    let mut end = response("completed");
    if let J::Obj(m) = &mut end {
        m.push(("usage".to_owned(), usage));
        if r.chance(80) {
            m.push(("output".to_owned(), J::Arr(output)));
        }
    }
    push("response.completed", vec![("response", end)]);
    if r.chance(60) {
        number(r, &mut out);
    }
    let mut named: Vec<(Option<&'static str>, J)> = out
        .into_iter()
        .map(|(kind, j)| (name_for(r, kind), j))
        .collect();
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(named.len() + 1);
            let any = event(r);
            if r.chance(50) && at < named.len() {
                named[at].1 = any;
            } else {
                let name = r.pick(&DELTAS);
                named.insert(at, (Some(name), any));
            }
        }
    }
    named
}

/// The numbers the generated events carry, as written.
static NUMBERS: LazyLock<Vec<String>> = LazyLock::new(|| (0..512).map(|n| n.to_string()).collect());

/// Gives the events their `sequence_number`s in order, with (for some seeds)
/// one event resent, one number skipped or two events swapped.
fn number(r: &mut Rng, out: &mut Vec<(&'static str, J)>) {
    let mut seq: Vec<usize> = (0..out.len()).collect();
    let at = r.below(out.len());
    match r.below(4) {
        0 => {
            let again = out[at].clone();
            out.insert(at, again);
            seq.insert(at, at);
        }
        1 => seq[at..].iter_mut().for_each(|n| *n += 1),
        2 if at + 1 < seq.len() => seq.swap(at, at + 1),
        _ => {}
    }
    for ((_, j), n) in out.iter_mut().zip(seq) {
        if let J::Obj(m) = j {
            m.push(("sequence_number".to_owned(), J::Num(&NUMBERS[n.min(511)])));
        }
    }
}

fn check_stream(seed: u64) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let events = events(&mut r);
    let bytes = sse(&mut r, &events, false);
    fast_is_general(&mut r, Dialect::OpenAiResponses, &bytes)
}

/// The events a memo takes as templates: the deltas of text, arguments and
/// custom input, sometimes with other members.
fn memo_event(r: &mut Rng) -> J {
    let kind = if r.chance(90) {
        J::Str(
            r.pick(&[
                "response.output_text.delta",
                "response.function_call_arguments.delta",
                "response.custom_tool_call_input.delta",
                "response.refusal.delta",
            ])
            .to_owned(),
        )
    } else {
        str_field(r)
    };
    let v = vec![
        (98, "type", kind),
        (80, "item_id", str_field(r)),
        (90, "output_index", small_index(r)),
        (50, "content_index", small_index(r)),
        (97, "delta", str_field(r)),
        (5, "sequence_number", sequence_number(r)),
        (5, "obfuscation", str_field(r)),
    ];
    members(r, v)
}

fn agrees(seed: u64) -> (String, Result<bool, String>) {
    let mut r = Rng::new(seed);
    let j = event(&mut r);
    let text = event_text(&mut r, &j);
    let agrees = responses::fast_path_agrees(&text);
    (text, agrees)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A Responses event of any shape: the fast decode is the general one,
    /// or leaves the event to it.
    #[test]
    fn fast_and_general_decoders_agree_on_responses_events(seed in any::<u64>()) {
        let (text, agrees) = agrees(seed);
        prop_assert!(agrees.is_ok(), "{:?}: {:?}", text, agrees);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// An event made from a template the memo took: what the memo gives is
    /// the general decode, or it leaves the event to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_responses_events(seed in any::<u64>()) {
        if let Some((template, event)) = memo_case_of(seed, memo_event, responses::memo_parts) {
            let agrees = responses::memo_agrees(&template, &event);
            prop_assert!(agrees.is_ok(), "template {:?}, event {:?}: {:?}", template, event, agrees);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A whole Responses stream as SSE bytes, cut anywhere: the same reads,
    /// errors, live events and messages with the fast path as without it.
    #[test]
    fn fast_and_general_decoders_agree_on_responses_streams(seed in any::<u64>()) {
        check_stream(seed)?;
    }
}

/// The generated events are served often enough for the property above not
/// to hold vacuously (many are hostile, mutated, of other types or carry
/// members the fast path leaves), and left often too.
#[test]
fn the_responses_fast_path_serves_a_share_of_the_generated_events() {
    let outcomes: Vec<Result<bool, String>> = (0..2000_u64).map(|seed| agrees(seed).1).collect();
    let served = outcomes.iter().filter(|a| **a == Ok(true)).count();
    let left = outcomes.iter().filter(|a| **a == Ok(false)).count();
    assert!(served > 350, "served {served} of 2000");
    assert!(left > 700, "left {left} of 2000");
}

/// The fast path serves the deltas of a stream, and leaves to the general
/// path what it does not read itself or cannot certify.
#[test]
fn the_responses_fast_path_serves_the_deltas_and_leaves_the_rest() {
    let served = [
        r#"{"type":"response.output_text.delta","item_id":"msg_0","output_index":0,"content_index":0,"delta":"Th"}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"q\": \"caf\u00e9 \\\\ \ud83e\udd80\n\"","obfuscation":"ab"}"#,
        r#"{"delta":"x","output_index":2,"sequence_number":7,"type":"response.custom_tool_call_input.delta"}"#,
        r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"日本\/\t","sequence_number":18446744073709551615}"#,
        r#"{"type":"response.reasoning_text.delta","delta":"a","item":null,"response":null,"code":null,"message":null,"name":null}"#,
        r#" { "type" : "response.refusal.delta" , "delta" : "no" , "logprobs" : [{"a":[1,-2.5e3,true,null]}] } "#,
        r#"{"type":"response.output_text.delta","sequence_number":null,"output_index":null,"delta":null}"#,
        r#"{"type":"response.function_call_arguments.done","output_index":0,"item_id":"fc_1","arguments":"{\"q\": 1}"}"#,
        r#"{"type":"response.custom_tool_call_input.done","output_index":1,"input":"ls -la","name":"shell"}"#,
        // Progress events: their part or text skipped, as the typed decode skips it.
        r#"{"type":"response.content_part.added","output_index":0,"part":{"type":"output_text","text":""}}"#,
        r#"{"type":"response.output_text.done","output_index":0,"text":"x\n"}"#,
        // Output items: their members read, any other skipped.
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"q\": \"\u00e9\"}","status":"completed"}}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"custom_tool_call","input":"ls","arguments":null,"name":null}}"#,
        r#"{"type":"response.output_item.added","item":null}"#,
    ];
    for text in served {
        assert_eq!(responses::fast_path_agrees(text), Ok(true), "{text}");
    }
    // A delta with only its indexes and item id is a template.
    let template = served[0];
    let (prefix, suffix) = responses::memo_parts(template).unwrap();
    assert!(
        prefix.ends_with(r#""delta":"#) && suffix == "}",
        "{prefix} {suffix}"
    );
    let next = r#"{"type":"response.output_text.delta","item_id":"msg_0","output_index":0,"content_index":0,"delta":"\u00e9"}"#;
    assert_eq!(responses::memo_agrees(template, next), Ok(true));
    // Stamps are places of the template (`stamps.rs`).
    assert!(
        responses::memo_parts(served[1]).is_some(),
        "an obfuscation nonce"
    );
    assert!(
        responses::memo_parts(served[2]).is_some(),
        "a sequence number"
    );
    let left = [
        // Types the fast path does not serve, or none.
        r#"{"type":"response.web_search_call.completed","output_index":0,"item":{"type":"message"}}"#,
        r#"{"type":"response.future.delta","delta":"x"}"#,
        r#"{"output_index":0,"delta":"x"}"#,
        r#"{"type":null,"delta":"x"}"#,
        // Members the general path reads.
        r#"{"type":"response.output_text.delta","delta":"x","response":{"id":"r"}}"#,
        r#"{"type":"response.output_text.delta","delta":"x","item":{}}"#,
        r#"{"type":"response.content_part.added","item":{"type":"function_call"}}"#,
        // Items the fast path does not certify: not an object, arguments
        // that are no string, a member twice, an escaped key.
        r#"{"type":"response.output_item.added","item":["function_call"]}"#,
        r#"{"type":"response.output_item.added","item":"function_call"}"#,
        r#"{"type":"response.output_item.done","item":{"type":"function_call","arguments":{"q":1}}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"custom_tool_call","input":5}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"function_call","name":"a","name":"b"}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"function_call","n\u0061me":"a"}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"function_call","id":1}}"#,
        r#"{"type":"response.output_text.delta","delta":"x","code":"c"}"#,
        // Duplicate keys: a `duplicate field` error of the typed decode.
        r#"{"type":"response.output_text.delta","delta":"a","delta":"b"}"#,
        r#"{"type":"response.output_text.delta","type":"response.output_text.delta"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":1,"sequence_number":1}"#,
        r#"{"type":"response.output_text.delta","item":null,"item":null}"#,
        // Numbers serde refuses or the scanner does not certify.
        r#"{"type":"response.output_text.delta","sequence_number":-1}"#,
        r#"{"type":"response.output_text.delta","sequence_number":1.0}"#,
        r#"{"type":"response.output_text.delta","sequence_number":1e2}"#,
        r#"{"type":"response.output_text.delta","sequence_number":01}"#,
        r#"{"type":"response.output_text.delta","sequence_number":18446744073709551616}"#,
        r#"{"type":"response.output_text.delta","sequence_number":"1"}"#,
        r#"{"type":"response.output_text.delta","output_index":-1}"#,
        r#"{"type":"response.output_text.delta","output_index":"1"}"#,
        // Wrong types, bad strings, escaped keys, not an object, trailing text.
        r#"{"type":"response.output_text.delta","delta":1}"#,
        r#"{"type":"response.output_text.delta","delta":"\ud800"}"#,
        r#"{"typ\u0065":"response.output_text.delta","delta":"x"}"#,
        r#"["response.output_text.delta"]"#,
        r#"{"type":"response.output_text.delta","delta":"x"} x"#,
    ];
    for text in left {
        assert_eq!(responses::fast_path_agrees(text), Ok(false), "{text}");
    }
}

/// A call's arguments restated by `.done` as the deltas said them, then by
/// its item's end in other text of the same length: read by the fast path
/// as by the general one (the restatement `.done` left for the next one to
/// be compared with stands only for those very bytes).
#[test]
fn a_restatement_of_the_same_length_in_other_text_is_read_as_the_general_path_reads_it() {
    let item = |args: &str| {
        format!(
            r#"{{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":{}}}"#,
            serde_json::to_string(args).unwrap()
        )
    };
    for later in [r#"{"q":"ab"}"#, r#"{"q":"ac"}"#] {
        let events = [
            r#"{"type":"response.created","response":{"id":"r","status":"in_progress"}}"#.to_owned(),
            format!(r#"{{"type":"response.output_item.added","output_index":0,"item":{}}}"#, item("")),
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"q\":\"ab\"}"}"#.to_owned(),
            r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"q\":\"ab\"}"}"#.to_owned(),
            format!(r#"{{"type":"response.output_item.done","output_index":0,"item":{}}}"#, item(later)),
            format!(
                r#"{{"type":"response.completed","response":{{"id":"r","status":"completed","output":[{}]}}}}"#,
                item(later)
            ),
        ];
        let bytes: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        let limits = crate::providers::AssemblerLimits::default();
        let fast = super::run(None, limits, bytes.as_bytes(), &[], true);
        let general = super::run(None, limits, bytes.as_bytes(), &[], false);
        assert_eq!(fast, general, "{later}");
    }
}
