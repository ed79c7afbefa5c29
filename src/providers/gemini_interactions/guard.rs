//! What the guard needs of this dialect (see `providers/guarded.rs`).

use serde_json::{json, Value};

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY, google_error};

/// The Interactions API's `error` event (Google's error object under `event_type: "error"`).
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "gcp.gemini",
    request_paths: &["/interactions"],
    error: ErrorShape {
        sse_event: None,
        event: interactions_error,
        exception: None,
        status: 502,
        body: google_error,
        headers: NO_RETRY,
    },
};

fn interactions_error(message: &str) -> Value {
    let Value::Object(mut event) = google_error(message) else {
        return google_error(message);
    };
    event.insert("event_type".to_owned(), json!("error"));
    Value::Object(event)
}
