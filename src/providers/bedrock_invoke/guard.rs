//! What the guard needs of this dialect (see `providers/guarded.rs`).

use crate::providers::guarded::{ErrorShape, GuardSpec, aws_error};

/// An event-stream exception frame (boto3 raises `EventStreamError`); a whole response is Bedrock's `ModelErrorException` (424, which boto3 does not retry).
pub(crate) const GUARD: GuardSpec = GuardSpec {
    provider_name: "aws.bedrock",
    request_paths: &["/invoke-with-response-stream", "/invoke"],
    error: ErrorShape {
        sse_event: None,
        event: aws_error,
        exception: Some("modelStreamErrorException"),
        status: 424,
        body: aws_error,
        headers: AWS_HEADERS,
    },
};

const AWS_HEADERS: &[(&str, &str)] = &[("x-amzn-ErrorType", "ModelErrorException")];
