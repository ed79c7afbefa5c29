//! The events that carry a Responses response, read before the body check
//! (`responses/carrying.rs`), against the general path's passes: any event
//! text it reads gives the typed decode's event, is one `surely_event` finds
//! no body in, and has the items the snapshot check reads; and whole streams
//! give the same reads, errors and messages with it as without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;

use super::gen::{event_text, junk, members, obj_field, render, str_field, text, Rng, Spelling, J};
use super::served::both;
use super::{obj, s};
use crate::providers::responses::carrying::agrees;
use crate::providers::{BytesError, Dialect};

/// The types read, and others.
const KINDS: [&str; 9] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.output_text.delta",
    "error",
    "response.completed.x",
];

/// A string member of an item: mostly a string.
fn string(r: &mut Rng) -> J {
    if r.chance(85) {
        J::Str(text(r))
    } else {
        str_field(r)
    }
}

/// An output item: a call, a message, reasoning, an item compared whole, or
/// anything.
fn item(r: &mut Rng) -> J {
    if r.chance(5) {
        return junk(r, 2);
    }
    let kind = match r.below(12) {
        0..=4 => s("function_call"),
        5 | 6 => s("custom_tool_call"),
        7 => s("message"),
        8 => s("reasoning"),
        9 => s(r.pick(&["computer_call", "mcp_approval_request", "web_search_call"])),
        _ => str_field(r),
    };
    let args = if r.chance(80) {
        J::Str(
            r.pick(&["{\"a\":1}", "{\"q\":\"x\\\"y\\n\"}", "", "{}"])
                .to_owned(),
        )
    } else {
        str_field(r)
    };
    let v = vec![
        (95, "type", kind),
        (80, "id", string(r)),
        (80, "call_id", string(r)),
        (80, "name", string(r)),
        (60, "arguments", args),
        (20, "input", string(r)),
        (40, "status", str_field(r)),
        (20, "content", junk(r, 3)),
    ];
    members(r, v)
}

/// A `response`: the members `Response` reads, an output, and others.
fn response(r: &mut Rng) -> J {
    let output = if r.chance(90) {
        J::Arr((0..r.below(4)).map(|_| item(r)).collect())
    } else {
        junk(r, 2)
    };
    let usage = obj_field(r, |r| {
        let v = vec![
            (
                90,
                "input_tokens",
                J::Num(r.pick(&["1", "20", "0", "7", "99", "1.5", "-1"])),
            ),
            (90, "output_tokens", J::Num("7")),
            (
                30,
                "output_tokens_details",
                obj(vec![("reasoning_tokens", J::Num("2"))]),
            ),
            (5, "x", junk(r, 1)),
        ];
        members(r, v)
    });
    let incomplete = obj_field(r, |r| {
        let reason = str_field(r);
        members(r, vec![(80, "reason", reason)])
    });
    let error = if r.chance(90) { J::Null } else { junk(r, 1) };
    let v = vec![
        (90, "id", str_field(r)),
        (80, "object", s("response")),
        (80, "status", str_field(r)),
        (60, "model", str_field(r)),
        (80, "output", output),
        (60, "usage", usage),
        (20, "incomplete_details", incomplete),
        (20, "error", error),
        (
            30,
            "created_at",
            J::Num(r.pick(&["1764547200", "1e3", "0"])),
        ),
    ];
    members(r, v)
}

/// An event carrying a response, mostly well formed.
fn event(r: &mut Rng) -> J {
    let kind = match r.below(10) {
        0..=6 => s(r.pick(&KINDS[..5])),
        7 | 8 => s(r.pick(&KINDS)),
        _ => junk(r, 1),
    };
    let response = if r.chance(90) {
        response(r)
    } else {
        junk(r, 2)
    };
    let v = vec![
        (97, "type", kind),
        (
            60,
            "sequence_number",
            J::Num(r.pick(&["0", "7", "-1", "1.0"])),
        ),
        (97, "response", response),
    ];
    members(r, v)
}

fn agreement(seed: u64) -> (String, Result<bool, String>) {
    let mut r = Rng::new(seed);
    let j = event(&mut r);
    // Half well formed, half as any event's text may be spelled.
    let text = if r.chance(50) {
        let mut out = String::new();
        render(&mut r, &j, Spelling::Clean, &mut out);
        out
    } else {
        event_text(&mut r, &j)
    };
    let agreed = agrees(&text);
    (text, agreed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Any event text read as an event that carries the response is what
    /// the general path's passes read in it.
    #[test]
    fn events_carrying_the_response_are_read_as_the_general_path_reads_them(seed in any::<u64>()) {
        let (text, agreed) = agreement(seed);
        prop_assert!(agreed.is_ok(), "{agreed:?} in {text}");
    }
}

/// The generated events are read often enough for the property above not to
/// hold vacuously, and left often too.
#[test]
fn a_share_of_the_generated_events_is_read() {
    let outcomes: Vec<Result<bool, String>> = (0..2000_u64).map(|seed| agreement(seed).1).collect();
    let read = outcomes.iter().filter(|a| **a == Ok(true)).count();
    let left = outcomes.iter().filter(|a| **a == Ok(false)).count();
    assert!(read > 200, "read {read} of 2000");
    assert!(left > 500, "left {left} of 2000");
}

#[test]
fn the_usual_events_are_read_and_the_unusual_left() {
    let read = [
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_0","object":"response","status":"in_progress","output":[]}}"#,
        r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"message","id":"m","content":[{"type":"output_text","text":"x"}]},{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{\"a\":\"x\\ny\"}","status":"completed"},{"type":"custom_tool_call","call_id":"d","name":"g","input":null}],"usage":{"input_tokens":1,"output_tokens_details":{"reasoning_tokens":2}},"error":null}}"#,
        r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens","x":[1]},"output":[{"type":"shell_call"}]}}"#,
    ];
    for text in read {
        assert_eq!(agrees(text), Ok(true), "{text}");
    }
    let left = [
        // The type after the response, another member, a member twice.
        r#"{"response":{"id":"r"},"type":"response.created"}"#,
        r#"{"type":"response.created","response":{"id":"r"},"obfuscation":"x"}"#,
        r#"{"type":"response.created","type":"response.created","response":{}}"#,
        r#"{"type":"response.created","response":{"id":"r","id":"s"}}"#,
        // Another type, no response, a response that is not an object.
        r#"{"type":"response.failed","response":{"error":{"code":"x"}}}"#,
        r#"{"type":"response.created"}"#,
        r#"{"type":"response.created","response":null}"#,
        r#"{"type":"response.created","response":[]}"#,
        // An unusual member of the response.
        r#"{"type":"response.completed","response":{"error":{"code":"x"}}}"#,
        r#"{"type":"response.completed","response":{"usage":{"n":-1}}}"#,
        r#"{"type":"response.completed","response":{"incomplete_details":["x"]}}"#,
        r#"{"type":"response.completed","response":{"output":{}}}"#,
        // Items: not an object, a member not a string, twice, compared whole.
        r#"{"type":"response.completed","response":{"output":[1]}}"#,
        r#"{"type":"response.completed","response":{"output":[{"type":"function_call","arguments":{}}]}}"#,
        r#"{"type":"response.completed","response":{"output":[{"type":"function_call","name":"f","name":"g"}]}}"#,
        r#"{"type":"response.completed","response":{"output":[{"type":"computer_call","id":"c"}]}}"#,
        r#"{"type":"response.completed","response":{"output":[{"type":"mcp_approval_request"}]}}"#,
        // A lone surrogate in a call's arguments, bad JSON.
        r#"{"type":"response.completed","response":{"output":[{"type":"function_call","arguments":"\ud800"}]}}"#,
        r#"{"type":"response.completed","response":{}} x"#,
    ];
    for text in left {
        assert_eq!(agrees(text), Ok(false), "{text}");
    }
}

/// A Responses stream with one call, ended by `response.completed` with
/// `output` (its text) as the response's output.
fn stream_ending_with(output: &str) -> Vec<u8> {
    format!(
        "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":{{\"id\":\"r\",\
         \"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}}}\n\n\
         event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\
         \"output_index\":0,\"item\":{{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\
         \"name\":\"f\",\"arguments\":\"\"}}}}\n\n\
         event: response.function_call_arguments.delta\ndata: {{\"type\":\
         \"response.function_call_arguments.delta\",\"item_id\":\"fc\",\"output_index\":0,\
         \"delta\":\"{{\\\"a\\\": 1}}\"}}\n\n\
         event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"id\":\"r\",\
         \"object\":\"response\",\"status\":\"completed\",\"output\":{output},\
         \"usage\":{{\"input_tokens\":3,\"output_tokens\":4}}}}}}\n\n"
    )
    .into_bytes()
}

/// The snapshot of a completed response read before the body check is
/// checked as the general path checks it: the same call restated (its
/// arguments spelled otherwise) is fine, another name, other arguments,
/// arguments that are `null` or a call the stream did not deliver are
/// refused, with the same errors.
#[test]
fn a_completed_response_read_before_the_body_check_has_its_snapshot_checked() {
    let call = |name: &str, args: &str| {
        format!(
            "{{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\"name\":\"{name}\",\
             \"arguments\":{args}}}"
        )
    };
    let message = "{\"type\":\"message\",\"id\":\"m\",\"content\":[]}";
    let same = format!("[{message},{}]", call("f", "\"{\\\"a\\\":1}\""));
    let (fast, served) = both(Dialect::OpenAiResponses, &stream_ending_with(&same));
    // Both events that carry the response (the one delta is the template).
    assert_eq!(served, 2);
    assert!(
        fast.reads.iter().all(|(r, _)| r.is_ok()),
        "{:?}",
        fast.reads
    );
    assert_eq!(fast.messages[0].finish_reason.as_deref(), Some("completed"));
    for output in [
        format!("[{}]", call("g", "\"{\\\"a\\\":1}\"")),
        format!("[{}]", call("f", "\"{\\\"a\\\":2}\"")),
        format!("[{}]", call("f", "null")),
        format!(
            "[{},{}]",
            call("f", "\"{\\\"a\\\":1}\""),
            call("f", "\"{}\"").replace("\"c\"", "\"other\"")
        ),
    ] {
        let (fast, served) = both(Dialect::OpenAiResponses, &stream_ending_with(&output));
        assert_eq!(served, 2, "{output}");
        let refused = fast.reads.iter().any(
            |(r, _)| matches!(r, Err(BytesError::Core(e)) if e.to_string().contains("snapshot")),
        );
        assert!(refused, "{output}: {:?}", fast.reads);
    }
    // An item compared whole is left to the general path.
    let whole = format!(
        "[{},{{\"type\":\"computer_call\",\"id\":\"cc\"}}]",
        call("f", "\"{}\"")
    );
    let (_, served) = both(Dialect::OpenAiResponses, &stream_ending_with(&whole));
    assert_eq!(served, 1, "{whole}");
}
