//! What the guard needs of this dialect (see `providers/guarded.rs`).

use serde_json::{json, Value};

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY, openai_error};

/// `response.failed`, with OpenAI's error object beside it (the SDK raises `APIError` on an event that carries one).
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "openai",
    request_paths: &["/responses"],
    error: ErrorShape {
        sse_event: Some("response.failed"),
        event: response_failed,
        exception: None,
        status: 502,
        body: openai_error,
        headers: NO_RETRY,
    },
};

fn response_failed(message: &str) -> Value {
    let Value::Object(mut event) = openai_error(message) else {
        return openai_error(message);
    };
    event.insert("type".to_owned(), json!("response.failed"));
    event.insert(
        "response".to_owned(),
        json!({"object": "response", "status": "failed",
               "error": {"code": "server_error", "message": message}, "output": []}),
    );
    Value::Object(event)
}
