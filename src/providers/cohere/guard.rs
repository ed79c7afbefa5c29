//! What the guard needs of this dialect (see `providers/guarded.rs`).

use serde_json::{json, Value};

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY};

/// Cohere ends a failed stream with `message-end` and the finish reason `ERROR`; a whole error response is `{"message": …}`.
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "cohere",
    request_paths: &["/v2/chat"],
    error: ErrorShape {
        sse_event: Some("message-end"),
        event: cohere_end,
        exception: None,
        status: 502,
        body: cohere_error,
        headers: NO_RETRY,
    },
};

fn cohere_end(message: &str) -> Value {
    json!({"type": "message-end", "delta": {"finish_reason": "ERROR", "error": message}})
}

fn cohere_error(message: &str) -> Value {
    json!({"message": message})
}
