//! What the guard needs of this dialect (see `providers/guarded.rs`).

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY, google_error};

/// Google's error object, as a stream event or a whole response.
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "gcp.gemini",
    request_paths: &[":streamGenerateContent", ":generateContent"],
    error: ErrorShape {
        sse_event: None,
        event: google_error,
        exception: None,
        status: 502,
        body: google_error,
        headers: NO_RETRY,
    },
};
