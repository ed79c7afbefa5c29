//! What a dialect declares for the guard (`crate::guard`) and the services
//! around it: the provider's name in OpenTelemetry's GenAI convention, the
//! request paths that speak the dialect, and the shape the provider ends a
//! response with when it fails, so that a blocked response ends the way the
//! provider's own SDKs expect an error to look.
//!
//! Each dialect's folder fills one [`GuardSpec`] in its `guard.rs`; the guard
//! and the proxy read only this, never a dialect by name.

use serde_json::{json, Value};

use super::Dialect;

/// One dialect's declaration for the guard.
#[derive(Debug)]
pub(crate) struct GuardSpec {
    /// `gen_ai.provider.name` (the convention's well-known values: `openai`,
    /// `anthropic`, `aws.bedrock`, `gcp.gemini`, `cohere`, …).
    pub(crate) provider_name: &'static str,
    /// Suffixes of request paths (query excluded) that speak this dialect
    /// (`/chat/completions`, `:streamGenerateContent`).
    pub(crate) request_paths: &'static [&'static str],
    /// How the provider reports an error.
    pub(crate) error: ErrorShape,
}

/// How a provider reports an error: in the stream, and as a whole response.
#[derive(Debug)]
pub(crate) struct ErrorShape {
    /// The SSE `event:` name of the in-stream error (`None`: a `data:` line alone).
    pub(crate) sse_event: Option<&'static str>,
    /// The JSON of the in-stream error (SSE data, a JSON line, an array element).
    pub(crate) event: fn(&str) -> Value,
    /// The `:exception-type` of an AWS event-stream exception frame, for the
    /// dialects streamed that way.
    pub(crate) exception: Option<&'static str>,
    /// The HTTP status of a whole error response (one the SDKs do not retry).
    pub(crate) status: u16,
    /// The JSON of a whole error response.
    pub(crate) body: fn(&str) -> Value,
    /// Headers of a whole error response besides its content type.
    pub(crate) headers: &'static [(&'static str, &'static str)],
}

/// The error object of OpenAI's API (and the servers compatible with it).
pub(crate) fn openai_error(message: &str) -> Value {
    json!({"error": {
        "message": message,
        "type": "invalid_tool_call",
        "code": "toolstitch_invalid_tool_call",
    }})
}

/// Google's one error shape (Gemini API, Vertex AI, the Interactions API).
pub(crate) fn google_error(message: &str) -> Value {
    json!({"error": {"code": 502, "message": message, "status": "INVALID_TOOL_CALL"}})
}

/// An AWS error body (`{"message": …}`), with its type in `x-amzn-ErrorType`.
pub(crate) fn aws_error(message: &str) -> Value {
    json!({"message": message})
}

/// Tells the SDKs not to retry: the same request would be blocked again.
pub(crate) const NO_RETRY: &[(&str, &str)] = &[("x-should-retry", "false")];

impl Dialect {
    /// The provider's name in OpenTelemetry's GenAI convention.
    #[must_use]
    pub fn provider_name(self) -> &'static str {
        self.spec().guard.provider_name
    }

    /// The dialect a request path speaks (its query left out), when one
    /// dialect declares it.
    #[must_use]
    pub fn for_path(path: &str) -> Option<Dialect> {
        let path = path.split('?').next().unwrap_or_default();
        let path = path.trim_end_matches('/');
        Dialect::ALL.into_iter().find(|d| {
            d.spec()
                .guard
                .request_paths
                .iter()
                .any(|suffix| path.ends_with(suffix))
        })
    }

    pub(crate) fn error_shape(self) -> &'static ErrorShape {
        &self.spec().guard.error
    }
}

/// The shape used before any dialect is known (OpenAI's, which most servers share).
pub(crate) const FALLBACK: ErrorShape = ErrorShape {
    sse_event: None,
    event: openai_error,
    exception: None,
    status: 502,
    body: openai_error,
    headers: NO_RETRY,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_path_names_one_dialect() {
        for d in Dialect::ALL {
            let paths = d.spec().guard.request_paths;
            assert!(!paths.is_empty(), "{d}: no request path");
            for p in paths {
                assert_eq!(Dialect::for_path(&format!("/x{p}")), Some(d), "{p}");
                assert_eq!(Dialect::for_path(&format!("/x{p}?key=1")), Some(d), "{p}");
            }
        }
        assert_eq!(Dialect::for_path("/v1/models"), None);
    }

    #[test]
    fn every_dialect_names_its_provider_and_errors() {
        for d in Dialect::ALL {
            assert!(!d.provider_name().is_empty());
            let shape = d.error_shape();
            assert!((400..600).contains(&shape.status));
            let text = (shape.event)("the message").to_string();
            assert!(text.contains("the message"), "{d}: {text}");
            let text = (shape.body)("the message").to_string();
            assert!(text.contains("the message"), "{d}: {text}");
        }
    }
}
