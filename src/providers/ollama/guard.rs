//! What the guard needs of this dialect (see `providers/guarded.rs`).

use serde_json::{json, Value};

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY};

/// Ollama's `{"error": …}` line (the client raises `ResponseError`).
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "ollama",
    request_paths: &["/api/chat"],
    error: ErrorShape {
        sse_event: None,
        event: ollama_error,
        exception: None,
        status: 502,
        body: ollama_error,
        headers: NO_RETRY,
    },
};

fn ollama_error(message: &str) -> Value {
    json!({"error": message})
}
