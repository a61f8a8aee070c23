//! Errors: [`ServerError`] for starting the server, [`ApiError`] for one request.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header::RETRY_AFTER};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tackle_agent::{AgentError, TurnFailure};
use tackle_protocol::ErrorCode;
use tackle_provider::ProviderError;
use tackle_store::StoreError;
use thiserror::Error;
use utoipa::ToSchema;

/// Why the server could not start or stopped.
#[derive(Debug, Error)]
pub enum ServerError {
    /// The configuration is unusable; the message says what to change.
    #[error("{0}")]
    Config(String),
    /// Binding or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// A failed request: an HTTP status and a JSON body `{"error": {code, message, field?}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code (`invalid_request`, `not_found`, `busy`, ...).
    pub code: &'static str,
    /// What went wrong and what to do.
    pub message: String,
    /// JSON path of the offending field, for validation errors (`toolMask.shell`).
    pub field: Option<String>,
    /// Sent as `Retry-After` (whole seconds, rounded up): how long the provider asked to wait.
    pub retry_after: Option<Duration>,
}

/// The JSON body of an error response. Documented as closed (`additionalProperties: false`,
/// from `deny_unknown_fields`): a failed turn's `TurnResult` also carries `error`, and
/// `SendFailure`'s `oneOf` must match exactly one of the two.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// Details of an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code.
    pub code: String,
    /// What went wrong and what to do.
    pub message: String,
    /// JSON path of the offending field, when a field is at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), field: None, retry_after: None }
    }

    /// 400: the request is malformed.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 400 naming the field at fault.
    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: Some(field.into()), ..Self::invalid(message) }
    }

    /// 401: missing or unknown bearer token.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or invalid bearer token: send `Authorization: Bearer <token>` with a configured token",
        )
    }

    /// 404: no such resource for this user (other users' resources are 404 too).
    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("no {what} {id}"))
    }

    /// 409: the session is running a turn.
    pub fn busy(session: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "busy",
            format!(
                "session {session} is running a turn; wait for it to finish or POST /v1/sessions/{session}/cancel"
            ),
        )
    }

    /// 413: the body is over the limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!(
                "the request body is larger than {limit} bytes; send less (large files belong in the workspace)"
            ),
        )
    }

    /// 503: the server is shutting down.
    pub fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry later",
        )
    }

    /// 500 with a message safe to show (no secrets: errors of the store and the agent are).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// 502: the model provider failed.
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_GATEWAY, "provider_error", message)
    }

    /// A provider's failure, with the status its class calls for ([`status_of`]).
    pub fn provider(error: &ProviderError) -> Self {
        let code = tackle_agent::provider_code(error);
        let retry_after = match error {
            ProviderError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        };
        Self { retry_after, ..Self::new(status_of(code), code.as_str(), error.to_string()) }
    }

    /// A turn that failed, with the status its [`ErrorCode`] calls for ([`status_of`]).
    pub fn turn_failed(failure: &TurnFailure) -> Self {
        let code = failure.code();
        Self {
            retry_after: failure.retry_after(),
            ..Self::new(status_of(code), code.as_str(), failure.to_string())
        }
    }

    /// An error for a bare `status` (one axum answered itself), with its code derived from it.
    pub fn from_status(status: StatusCode, message: impl Into<String>) -> Self {
        let code = match status.as_u16() {
            401 => "unauthorized",
            403 => "forbidden",
            404 => "not_found",
            405 => "method_not_allowed",
            409 => "busy",
            410 => "expired",
            413 => "body_too_large",
            415 => "unsupported_media_type",
            503 => "unavailable",
            400..=499 => "invalid_request",
            _ => "internal",
        };
        Self::new(status, code, message)
    }

    /// The JSON body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message.clone(),
                field: self.field.clone(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        let retry_after = self.retry_after_header();
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(value) = retry_after {
            response.headers_mut().insert(RETRY_AFTER, value);
        }
        response
    }
}

impl ApiError {
    /// The `Retry-After` header value: whole seconds, rounded up (so a client never comes back
    /// early).
    pub(crate) fn retry_after_header(&self) -> Option<HeaderValue> {
        let wait = self.retry_after?;
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        HeaderValue::from_str(&secs.to_string()).ok()
    }
}

/// The HTTP status a turn's or a provider's failure is answered with, the same on every route:
///
/// | code | status |
/// |---|---|
/// | `rate_limited` | 429 (with `Retry-After` when the provider said) |
/// | `overloaded` | 503 |
/// | `context_length_exceeded` | 400 |
/// | `prompt_blocked` | 403 |
/// | `provider_timeout` | 504 |
/// | `lease_lost` | 409 |
/// | `output_truncated`, `max_steps`, `cancelled` | 200: not an HTTP error (the turn's result says how it ended, with its text) |
/// | `provider_auth`, `provider_rejected`, `provider_error`, `provider_unreachable`, `provider_protocol`, `loop_guard` | 502 |
/// | `internal` and anything else | 500 |
///
/// A provider that refused Tackle's key or request is a bad gateway, not the caller's fault:
/// the caller's request to Tackle was fine.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::ContextLengthExceeded => StatusCode::BAD_REQUEST,
        ErrorCode::PromptBlocked => StatusCode::FORBIDDEN,
        ErrorCode::ProviderTimeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::LeaseLost => StatusCode::CONFLICT,
        ErrorCode::OutputTruncated | ErrorCode::MaxSteps | ErrorCode::Cancelled => StatusCode::OK,
        ErrorCode::ProviderAuth
        | ErrorCode::ProviderRejected
        | ErrorCode::ProviderError
        | ErrorCode::ProviderUnreachable
        | ErrorCode::ProviderProtocol
        | ErrorCode::LoopGuard
        | ErrorCode::OutputInvalid => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { what, id } => Self::not_found(what, &id),
            // Another instance took the session over while this turn stalled.
            e @ StoreError::LeaseLost { .. } => Self::new(StatusCode::CONFLICT, "lease_lost", e.to_string()),
            other => Self::internal(other.to_string()),
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Store(s) => s.into(),
            AgentError::Provider(p) => Self::provider(&p),
            AgentError::Workspace { .. } => Self::invalid(e.to_string()),
            other => Self::internal(other.to_string()),
        }
    }
}
