//! Why a turn failed, stable for machines: the code of [`crate::AgentEvent::Error`] and of the
//! error bodies of the HTTP API.

use serde::{Deserialize, Serialize};

/// The kind of a turn failure (serialized in snake case).
///
/// Front ends decide from the code, never from the message: the server's HTTP status, a
/// client's retry, a channel's wording. The codes of provider failures follow
/// `tackle_provider::ProviderError`'s classes.
///
/// ```
/// use tackle_protocol::ErrorCode;
/// assert_eq!(ErrorCode::ContextLengthExceeded.as_str(), "context_length_exceeded");
/// assert_eq!(ErrorCode::RateLimited, "rate_limited");
/// assert!(ErrorCode::Overloaded.is_retryable());
/// let parsed: ErrorCode = serde_json::from_str("\"a_code_from_a_newer_tackle\"").unwrap();
/// assert_eq!(parsed, ErrorCode::Other);
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The provider asked to slow down (HTTP 429).
    RateLimited,
    /// The provider is overloaded (Anthropic 529).
    Overloaded,
    /// The provider refused the API key (HTTP 401/403): an operator's problem, not the caller's.
    ProviderAuth,
    /// The provider rejected the request (HTTP 400/404/422).
    ProviderRejected,
    /// The conversation does not fit the model's context window, even after compaction.
    ContextLengthExceeded,
    /// The provider failed (HTTP 5xx).
    ProviderError,
    /// The provider could not be reached, or its stream broke off.
    ProviderUnreachable,
    /// The provider did not answer in time.
    ProviderTimeout,
    /// The provider sent something outside its wire format.
    ProviderProtocol,
    /// The loop guard stopped a model that kept repeating a failing call.
    LoopGuard,
    /// The model's answer was cut off (its output limit, a content filter).
    OutputTruncated,
    /// The turn reached its step limit.
    MaxSteps,
    /// The turn was cancelled.
    Cancelled,
    /// A `UserPromptSubmit` hook refused the prompt.
    PromptBlocked,
    /// Another instance took the session over (its lease moved on); this turn stopped.
    LeaseLost,
    /// The model's final answer did not match the turn's output schema, even after one repair
    /// round that showed it the validation error.
    OutputInvalid,
    /// Tackle itself failed (the store, an encoding bug); the message says what.
    Internal,
    /// A code this version does not know (from a newer Tackle).
    #[serde(other)]
    Other,
}

impl ErrorCode {
    /// The code as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::ProviderAuth => "provider_auth",
            Self::ProviderRejected => "provider_rejected",
            Self::ContextLengthExceeded => "context_length_exceeded",
            Self::ProviderError => "provider_error",
            Self::ProviderUnreachable => "provider_unreachable",
            Self::ProviderTimeout => "provider_timeout",
            Self::ProviderProtocol => "provider_protocol",
            Self::LoopGuard => "loop_guard",
            Self::OutputTruncated => "output_truncated",
            Self::MaxSteps => "max_steps",
            Self::Cancelled => "cancelled",
            Self::PromptBlocked => "prompt_blocked",
            Self::LeaseLost => "lease_lost",
            Self::OutputInvalid => "output_invalid",
            Self::Internal => "internal",
            Self::Other => "other",
        }
    }

    /// Whether the same message may succeed if sent again later (the provider was busy, slow or
    /// unreachable), as opposed to failing the same way.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited
                | Self::Overloaded
                | Self::ProviderError
                | Self::ProviderUnreachable
                | Self::ProviderTimeout
                | Self::ProviderProtocol
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A turn's failure as data: what the sessions API returns, a stored outcome holds and a client
/// decides from.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureReport {
    /// Why, stable for machines.
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
    /// How long the provider asked to wait before trying again, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code round-trips through its serialized name, and `as_str` is that name.
    #[test]
    fn codes_serialize_as_their_names() {
        let all = [
            ErrorCode::RateLimited,
            ErrorCode::Overloaded,
            ErrorCode::ProviderAuth,
            ErrorCode::ProviderRejected,
            ErrorCode::ContextLengthExceeded,
            ErrorCode::ProviderError,
            ErrorCode::ProviderUnreachable,
            ErrorCode::ProviderTimeout,
            ErrorCode::ProviderProtocol,
            ErrorCode::LoopGuard,
            ErrorCode::OutputTruncated,
            ErrorCode::MaxSteps,
            ErrorCode::Cancelled,
            ErrorCode::PromptBlocked,
            ErrorCode::LeaseLost,
            ErrorCode::OutputInvalid,
            ErrorCode::Internal,
            ErrorCode::Other,
        ];
        for code in all {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
    }
}
