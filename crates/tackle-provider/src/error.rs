//! Typed provider failures.

use std::time::Duration;

use thiserror::Error;

/// Why a model call failed.
///
/// Every failure of a provider ends in one of these, whatever the provider sent: an HTML error
/// page, a malformed stream, a dropped connection. Messages say what to do.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider asked to slow down (HTTP 429).
    #[error("rate limited by the provider{}: {message}", retry_after.map(|d| format!(" (retry after {:.1}s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
        /// Provider message.
        message: String,
    },
    /// The provider is overloaded (Anthropic 529, `overloaded_error`).
    #[error("the provider is overloaded; try again later: {message}")]
    Overloaded {
        /// Provider message.
        message: String,
    },
    /// The API key is missing, wrong, or lacks permission (HTTP 401/403).
    #[error("authentication failed: {message}; check the API key (OPENAI_API_KEY / ANTHROPIC_API_KEY)")]
    Auth {
        /// Provider message.
        message: String,
    },
    /// The provider rejected the request (HTTP 400/404/422).
    #[error("the provider rejected the request: {message}")]
    BadRequest {
        /// Provider message.
        message: String,
    },
    /// The prompt does not fit the model's context window (or the request is too large: HTTP 413).
    #[error("the prompt does not fit the model's context window: {message}")]
    ContextExceeded {
        /// Provider message.
        message: String,
    },
    /// The provider failed (HTTP 5xx).
    #[error("provider error (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// Provider message.
        message: String,
    },
    /// The connection failed, or the stream ended before the response was complete.
    #[error("network error: {message}")]
    Network {
        /// What happened.
        message: String,
    },
    /// The provider did not answer in time.
    #[error("timed out: {message}")]
    Timeout {
        /// What timed out.
        message: String,
    },
    /// The provider sent something that does not follow its wire format.
    #[error("protocol error: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
}

impl ProviderError {
    /// Whether the same request may succeed if sent again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Network { .. }
                | Self::Timeout { .. }
                | Self::Protocol { .. }
        )
    }

    /// A stable snake_case name of the variant, for events and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "rate_limited",
            Self::Overloaded { .. } => "overloaded",
            Self::Auth { .. } => "auth",
            Self::BadRequest { .. } => "bad_request",
            Self::ContextExceeded { .. } => "context_exceeded",
            Self::Server { .. } => "server",
            Self::Network { .. } => "network",
            Self::Timeout { .. } => "timeout",
            Self::Protocol { .. } => "protocol",
        }
    }

    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Self::Protocol { message: message.into() }
    }

    pub(crate) fn network(message: impl Into<String>) -> Self {
        Self::Network { message: message.into() }
    }

    /// Maps a transport error of reqwest, naming the URL it failed on with its credentials
    /// masked ([`tackle_protocol::mask_url`]).
    pub(crate) fn from_reqwest(err: reqwest::Error) -> Self {
        let timeout = err.is_timeout();
        let message = describe_reqwest(err);
        if timeout { Self::Timeout { message } } else { Self::Network { message } }
    }
}

fn describe_reqwest(err: reqwest::Error) -> String {
    use std::error::Error as _;
    let url = err.url().map(|u| tackle_protocol::mask_url(u.as_str()));
    let err = err.without_url();
    let mut message = url.map(|u| format!("{u}: ")).unwrap_or_default();
    message.push_str(&err.to_string());
    let mut source = err.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}
