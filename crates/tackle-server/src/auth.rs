//! Bearer-token authentication: each token maps to a user; tokens are kept and compared as
//! digests, in constant time.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, AppState, UserToken};

/// The authenticated user of a request (`local` when the server runs without tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(pub String);

/// The user without tokens configured (loopback only).
pub const LOCAL_USER: &str = "local";

/// Finds the user whose token is `presented`. Every configured token is compared (as digests,
/// in constant time), so the time taken says nothing about which token or prefix matched.
///
/// ```
/// use tackle_server::{UserToken, auth::user_for_token};
/// let tokens = vec![UserToken::new("alice", "tok-alice-0123456789")];
/// assert_eq!(user_for_token(&tokens, "tok-alice-0123456789").as_deref(), Some("alice"));
/// assert_eq!(user_for_token(&tokens, "tok-alice"), None);
/// ```
pub fn user_for_token(tokens: &[UserToken], presented: &str) -> Option<String> {
    let mut found: Option<&str> = None;
    for t in tokens {
        if t.matches(presented) {
            found = Some(&t.user);
        }
    }
    found.map(str::to_owned)
}

/// Middleware: resolves the bearer token to a [`User`] extension or answers 401 in the error
/// shape `E` of the router it guards (Tackle's own, or OpenAI's for the compatible routes):
/// each router picks its shape when it adds the layer, so this module knows no route.
pub async fn require_user<E>(State(state): State<AppState>, mut request: Request, next: Next) -> Response
where
    E: From<ApiError> + IntoResponse,
{
    let tokens = &state.inner.config.tokens;
    let user = if tokens.is_empty() {
        Some(LOCAL_USER.to_owned())
    } else {
        bearer(&request).and_then(|t| user_for_token(tokens, t))
    };
    match user {
        Some(user) => {
            tracing::Span::current().record("user", user.as_str());
            request.extensions_mut().insert(User(user));
            next.run(request).await
        }
        None => E::from(ApiError::unauthorized()).into_response(),
    }
}

/// Middleware of `/metrics`: any user's token or the scrape token ([`ServerConfig::metrics_token`])
/// opens it; without any token configured it is open, like every route of such a server.
///
/// [`ServerConfig::metrics_token`]: crate::ServerConfig::metrics_token
pub async fn require_metrics_reader(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let config = &state.inner.config;
    let scrape = config.metrics_token.as_ref();
    if config.tokens.is_empty() && scrape.is_none() {
        return next.run(request).await;
    }
    let presented = bearer(&request);
    let allowed = presented.is_some_and(|t| {
        // Both checks always run, so the time taken says nothing about which kind matched.
        let user = user_for_token(&config.tokens, t).is_some();
        let scraper = scrape.is_some_and(|s| s.matches(t));
        user | scraper
    });
    if allowed { next.run(request).await } else { ApiError::unauthorized().into_response() }
}

/// The bearer token of a request, if it carries one.
fn bearer(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
}

impl<S: Send + Sync> FromRequestParts<S> for User {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<User>().cloned().ok_or_else(ApiError::unauthorized)
    }
}
