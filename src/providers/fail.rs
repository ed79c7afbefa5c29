//! Why an adapter refused an event, before the assembler names the event:
//! what every layer of the adapters returns. A leaf: it knows the public
//! errors and nothing of the stream's state.

use serde_json::Value;

use super::error::{DecodeKind, Limit, Rule};
use crate::accumulate;

/// Why an adapter refused an event; the assembler adds which event it was.
#[derive(Debug)]
pub(crate) enum Fail {
    Limit {
        limit: Limit,
        max: usize,
        would_be: usize,
        target: String,
    },
    Provider {
        error_type: String,
        message: String,
        raw: Option<String>,
    },
    Bad {
        kind: DecodeKind,
        detail: String,
    },
    Protocol {
        rule: Rule,
        target: Option<String>,
        detail: String,
    },
}

impl Fail {
    /// The public error, naming the event that caused it.
    pub(crate) fn into_error(self, event: super::EventRef) -> super::Error {
        use super::Error;
        match self {
            Fail::Limit {
                limit,
                max,
                would_be,
                target,
            } => Error::Limit {
                event,
                limit,
                max,
                would_be,
                target,
            },
            Fail::Provider {
                error_type,
                message,
                raw,
            } => Error::Provider {
                event,
                error_type,
                message,
                raw,
            },
            Fail::Bad { kind, detail } => Error::Decode {
                event,
                kind,
                detail,
            },
            Fail::Protocol {
                rule,
                target,
                detail,
            } => Error::Protocol {
                event,
                rule,
                target,
                detail,
            },
        }
    }
}

impl From<accumulate::Error> for Fail {
    fn from(e: accumulate::Error) -> Self {
        match e {
            accumulate::Error::Limit {
                limit,
                max,
                would_be,
                target,
            } => Fail::Limit {
                limit: Limit::of_accumulator(limit),
                max,
                would_be,
                target,
            },
        }
    }
}

pub(crate) type R<T = ()> = Result<T, Fail>;

pub(crate) fn violation(rule: Rule, target: Option<String>, detail: impl Into<String>) -> Fail {
    Fail::Protocol {
        rule,
        target,
        detail: detail.into(),
    }
}

/// An error object a provider sent in the stream (`{"error": {...}}` chunks,
/// error events). Q35: the error's type is the
/// most specific one sent: a string `code` (`tool_use_failed`) before the
/// `type` (`invalid_request_error`), a numeric code (an HTTP status) after it.
pub(crate) fn provider_error(err: &Value) -> Fail {
    let field = |k: &str| -> Option<String> {
        err.get(k).and_then(|v| match v {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    let string_code = err
        .get("code")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let message = field("message").unwrap_or_else(|| err.to_string());
    let error_type = string_code
        .or_else(|| field("type"))
        .or_else(|| field("code"))
        .or_else(|| field("status"))
        .unwrap_or_default();
    Fail::Provider {
        error_type,
        message,
        raw: (!err.is_null()).then(|| err.to_string()),
    }
}
