//! The normalised outcome of a message: why it finished (`Finish`) and how
//! many tokens it used (`TokenUsage`), mapped from each dialect's own values.
//! The raw `finish_reason` and `usage` stay on the message beside them.

use serde_json::{Map, Value};

use super::Dialect;

/// Why a message finished, the same words for every dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Finish {
    /// The model finished its answer (`stop`, `end_turn`, `STOP`, `COMPLETE`, …).
    Stop,
    /// The model stopped to have tools called (`tool_calls`, `tool_use`, `TOOL_CALL`,
    /// or a normal stop with client tool calls in the message).
    ToolCalls,
    /// A token limit cut the answer (`length`, `max_tokens`, `MAX_TOKENS`, …).
    Length,
    /// A safety system stopped or withheld the answer (`content_filter`, `SAFETY`,
    /// `refusal`, `guardrail_intervened`, …).
    ContentFilter,
    /// The provider reported an error, or the response failed.
    Error,
    /// Any other reason (`pause_turn`, `cancelled`, `OTHER`, unknown values).
    Other,
}

impl Finish {
    /// The value as the Python API spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::ToolCalls => "tool-calls",
            Finish::Length => "length",
            Finish::ContentFilter => "content-filter",
            Finish::Error => "error",
            Finish::Other => "other",
        }
    }

    /// The normalised value of one provider finish / stop reason.
    #[must_use]
    pub fn from_reason(reason: &str) -> Finish {
        const STOP: [&str; 6] = [
            "stop",
            "end_turn",
            "stop_sequence",
            "complete",
            "completed",
            "eos",
        ];
        const TOOLS: [&str; 5] = [
            "tool_calls",
            "function_call",
            "tool_use",
            "tool_call",
            "requires_action",
        ];
        const LENGTH: [&str; 7] = [
            "length",
            "incomplete",
            "max_tokens",
            "max_output_tokens",
            "model_context_window_exceeded",
            "error_limit",
            "max_tokens_exceeded",
        ];
        const FILTER: [&str; 14] = [
            "content_filter",
            "content_filtered",
            "guardrail_intervened",
            "refusal",
            "safety",
            "recitation",
            "blocklist",
            "prohibited_content",
            "spii",
            "image_safety",
            "image_prohibited_content",
            "image_recitation",
            "error_toxic",
            "language_safety",
        ];
        const ERROR: [&str; 5] = [
            "error",
            "failed",
            "malformed_function_call",
            "unexpected_tool_call",
            "too_many_tool_calls",
        ];
        let is = |set: &[&str]| set.iter().any(|s| s.eq_ignore_ascii_case(reason));
        if is(&STOP) {
            Finish::Stop
        } else if is(&TOOLS) {
            Finish::ToolCalls
        } else if is(&LENGTH) {
            Finish::Length
        } else if is(&FILTER) {
            Finish::ContentFilter
        } else if is(&ERROR) {
            Finish::Error
        } else {
            Finish::Other
        }
    }
}

/// The finish of a message: `None` before its end; `Error` after a provider error.
pub(crate) fn finish_of(reason: Option<&str>, ended: bool, failed: bool) -> Option<Finish> {
    if failed {
        return Some(Finish::Error);
    }
    if !ended {
        return None;
    }
    Some(reason.map_or(Finish::Other, Finish::from_reason))
}

/// Token counts, each `None` when the provider did not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
}

/// A non-negative integer at `path` in the usage object (integral floats too).
pub(crate) fn count(usage: &Map<String, Value>, path: &[&str]) -> Option<u64> {
    let (first, rest) = path.split_first()?;
    let mut v = usage.get(*first)?;
    for key in rest {
        v = v.get(key)?;
    }
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
            .map(|f| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let n = f as u64;
                n
            })
    })
}

pub(crate) fn first(usage: &Map<String, Value>, paths: &[&[&str]]) -> Option<u64> {
    paths.iter().find_map(|p| count(usage, p))
}

/// The token counts of a dialect's usage object (see docs/providers.md for the
/// table; each dialect maps its own shape).
pub(crate) fn tokens_of(dialect: Dialect, usage: Option<&Map<String, Value>>) -> TokenUsage {
    usage
        .map(|u| (dialect.spec().tokens)(u))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dialects_reasons_map_to_one_vocabulary() {
        for (reason, finish) in [
            ("stop", Finish::Stop),
            ("end_turn", Finish::Stop),
            ("STOP", Finish::Stop),
            ("COMPLETE", Finish::Stop),
            ("completed", Finish::Stop),
            ("tool_calls", Finish::ToolCalls),
            ("tool_use", Finish::ToolCalls),
            ("TOOL_CALL", Finish::ToolCalls),
            ("length", Finish::Length),
            ("max_tokens", Finish::Length),
            ("MAX_TOKENS", Finish::Length),
            ("max_output_tokens", Finish::Length),
            ("content_filter", Finish::ContentFilter),
            ("SAFETY", Finish::ContentFilter),
            ("refusal", Finish::ContentFilter),
            ("guardrail_intervened", Finish::ContentFilter),
            ("ERROR_TOXIC", Finish::ContentFilter),
            ("failed", Finish::Error),
            ("MALFORMED_FUNCTION_CALL", Finish::Error),
            ("pause_turn", Finish::Other),
            ("something new", Finish::Other),
        ] {
            assert_eq!(Finish::from_reason(reason), finish, "{reason}");
        }
        assert_eq!(finish_of(Some("stop"), false, false), None);
        assert_eq!(finish_of(Some("stop"), true, true), Some(Finish::Error));
        assert_eq!(finish_of(None, true, false), Some(Finish::Other));
    }

    #[test]
    fn usage_shapes_map_to_token_counts() {
        let u = |v: Value| v.as_object().cloned();
        let chat = u(
            serde_json::json!({"prompt_tokens": 10, "completion_tokens": 5,
            "total_tokens": 15, "completion_tokens_details": {"reasoning_tokens": 2},
            "prompt_tokens_details": {"cached_tokens": 4}}),
        );
        assert_eq!(
            tokens_of(Dialect::OpenAiChat, chat.as_ref()),
            TokenUsage {
                input_tokens: Some(10),
                output_tokens: Some(5),
                total_tokens: Some(15),
                reasoning_tokens: Some(2),
                cached_input_tokens: Some(4)
            }
        );
        let cohere = u(serde_json::json!({"billed_units": {"input_tokens": 3.0},
            "tokens": {"input_tokens": 30, "output_tokens": 7}}));
        let t = tokens_of(Dialect::Cohere, cohere.as_ref());
        assert_eq!(
            (t.input_tokens, t.output_tokens, t.total_tokens),
            (Some(30), Some(7), None)
        );
        let anthropic = u(serde_json::json!({"input_tokens": 1.5, "output_tokens": -1}));
        let t = tokens_of(Dialect::Anthropic, anthropic.as_ref());
        assert_eq!((t.input_tokens, t.output_tokens), (None, None));
        assert_eq!(tokens_of(Dialect::Gemini, None), TokenUsage::default());
    }
}
