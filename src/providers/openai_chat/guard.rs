//! What the guard needs of this dialect (see `providers/guarded.rs`).

use crate::providers::guarded::{ErrorShape, GuardSpec, NO_RETRY, openai_error};

/// OpenAI's error object: the SDK raises `APIError` on a chunk that carries one.
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "openai",
    request_paths: &["/chat/completions"],
    error: ErrorShape {
        sse_event: None,
        event: openai_error,
        exception: None,
        status: 502,
        body: openai_error,
        headers: NO_RETRY,
    },
};
