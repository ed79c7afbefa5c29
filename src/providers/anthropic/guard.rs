//! What the guard needs of this dialect (see `providers/guarded.rs`).

use serde_json::{json, Value};

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY};

/// Anthropic's `error` event (the SDK raises `APIStatusError`).
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "anthropic",
    request_paths: &["/messages"],
    error: ErrorShape {
        sse_event: Some("error"),
        event: anthropic_error,
        exception: None,
        status: 502,
        body: anthropic_error,
        headers: NO_RETRY,
    },
};

fn anthropic_error(message: &str) -> Value {
    json!({"type": "error", "error": {"type": "invalid_tool_call_error", "message": message}})
}
