//! Why a turn ended without its answer: a typed value every front end maps (the server to an
//! HTTP status, the terminal to a line, a channel to a message), never a string to parse.

use std::time::Duration;

use tackle_protocol::{ErrorCode, FailureReport};
use tackle_provider::ProviderError;
use thiserror::Error;

/// Why a turn failed or stopped short, carried by [`crate::TurnOutcome::error`] and named by the
/// turn's `error` event ([`TurnFailure::code`]).
///
/// Failures outside a turn (the store, the workspace) are [`crate::AgentError`]s instead.
///
/// ```
/// use tackle_agent::TurnFailure;
/// use tackle_protocol::ErrorCode;
///
/// let failure = TurnFailure::ContextFull { percent: 97.0 };
/// assert_eq!(failure.code(), ErrorCode::ContextLengthExceeded);
/// assert!(failure.to_string().contains("97%"));
/// ```
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum TurnFailure {
    /// The model call failed after the retries its class allows; the class is the
    /// provider's ([`ProviderError`]: rate limited, overloaded, context exceeded, ...).
    #[error("model call failed: {0}")]
    Provider(ProviderError),
    /// The conversation does not fit the context window even after compaction.
    #[error(
        "the conversation uses {percent:.0}% of the context window even after compaction; start a new session \
         (this one stays stored) or configure a larger context.window"
    )]
    ContextFull {
        /// Share of the window the conversation uses.
        percent: f64,
    },
    /// The loop guard stopped a model that kept repeating a failing call.
    #[error("{0}")]
    LoopGuard(String),
    /// The model's answer was cut off; what it said is the turn's text.
    #[error(
        "the model's answer was cut off ({reason}); raise max_output_tokens or ask for a shorter answer, then send \
         another message to continue"
    )]
    Truncated {
        /// The provider's stop reason (`max_tokens`, `content_filter`, ...).
        reason: String,
    },
    /// The step limit was reached (the turn ends `max_steps`, with the last step's text).
    #[error(
        "reached the step limit ({limit}){}",
        if *.calls_pending {
            " with tool calls pending; they were not run"
        } else {
            "; the last step ran without tools. Send another message to continue, or raise --max-steps."
        }
    )]
    MaxSteps {
        /// The limit.
        limit: u32,
        /// Whether the last step still called tools (answered, not run).
        calls_pending: bool,
    },
    /// The turn was cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
    /// A `UserPromptSubmit` hook refused the prompt; nothing was sent to the model.
    #[error("a UserPromptSubmit hook blocked the prompt: {0}")]
    PromptBlocked(String),
    /// The final answer did not match the turn's output schema, even after the repair round that
    /// showed the model the validation error; the turn's text is the last answer.
    #[error(
        "the final answer does not match the output schema {name:?}: {error} (the model was shown the \
         error once and answered again; simplify the schema or try a stronger model)"
    )]
    OutputInvalid {
        /// The schema's name.
        name: String,
        /// What is wrong, by JSON pointer.
        error: String,
    },
    /// The request could not be encoded for the provider (a bug: the message says what).
    #[error("the request could not be encoded: {0}")]
    Encode(String),
}

impl TurnFailure {
    /// The stable code of this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Provider(e) => provider_code(e),
            Self::ContextFull { .. } => ErrorCode::ContextLengthExceeded,
            Self::LoopGuard(_) => ErrorCode::LoopGuard,
            Self::Truncated { .. } => ErrorCode::OutputTruncated,
            Self::MaxSteps { .. } => ErrorCode::MaxSteps,
            Self::Cancelled => ErrorCode::Cancelled,
            Self::PromptBlocked(_) => ErrorCode::PromptBlocked,
            Self::OutputInvalid { .. } => ErrorCode::OutputInvalid,
            Self::Encode(_) => ErrorCode::Internal,
        }
    }

    /// How long the provider asked to wait before the next try, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Provider(ProviderError::RateLimited { retry_after, .. }) => *retry_after,
            _ => None,
        }
    }

    /// The failure as stored and sent: code, message and the wait the provider asked for.
    pub fn report(&self) -> FailureReport {
        FailureReport {
            code: self.code(),
            message: self.to_string(),
            retry_after_ms: self.retry_after().map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// The code of a provider's failure class.
pub fn provider_code(error: &ProviderError) -> ErrorCode {
    match error {
        ProviderError::RateLimited { .. } => ErrorCode::RateLimited,
        ProviderError::Overloaded { .. } => ErrorCode::Overloaded,
        ProviderError::Auth { .. } => ErrorCode::ProviderAuth,
        ProviderError::BadRequest { .. } => ErrorCode::ProviderRejected,
        ProviderError::ContextExceeded { .. } => ErrorCode::ContextLengthExceeded,
        ProviderError::Server { .. } => ErrorCode::ProviderError,
        ProviderError::Network { .. } => ErrorCode::ProviderUnreachable,
        ProviderError::Timeout { .. } => ErrorCode::ProviderTimeout,
        ProviderError::Protocol { .. } => ErrorCode::ProviderProtocol,
        // A class newer than this mapping: a provider failure all the same.
        _ => ErrorCode::ProviderError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_class_has_its_own_code() {
        let cases = [
            (ProviderError::RateLimited { retry_after: None, message: String::new() }, "rate_limited"),
            (ProviderError::Overloaded { message: String::new() }, "overloaded"),
            (ProviderError::Auth { message: String::new() }, "provider_auth"),
            (ProviderError::BadRequest { message: String::new() }, "provider_rejected"),
            (ProviderError::ContextExceeded { message: String::new() }, "context_length_exceeded"),
            (ProviderError::Server { status: 500, message: String::new() }, "provider_error"),
            (ProviderError::Network { message: String::new() }, "provider_unreachable"),
            (ProviderError::Timeout { message: String::new() }, "provider_timeout"),
            (ProviderError::Protocol { message: String::new() }, "provider_protocol"),
        ];
        for (error, code) in cases {
            assert_eq!(TurnFailure::Provider(error.clone()).code(), code, "{error:?}");
            assert_eq!(provider_code(&error).is_retryable(), error.is_retryable(), "{error:?}");
        }
    }

    #[test]
    fn a_rate_limit_reports_the_wait_the_provider_asked_for() {
        let failure = TurnFailure::Provider(ProviderError::RateLimited {
            retry_after: Some(Duration::from_millis(2500)),
            message: "slow down".into(),
        });
        let report = failure.report();
        assert_eq!(report.code, ErrorCode::RateLimited);
        assert_eq!(report.retry_after_ms, Some(2500));
        assert!(report.message.contains("slow down"), "{}", report.message);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "rate_limited", "message": report.message, "retryAfterMs": 2500})
        );
    }
}
