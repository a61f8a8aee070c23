//! Streamable HTTP: the MCP endpoint at `/mcp`, behind a bearer-token layer like `tackle serve`'s.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::TackleMcp;

/// Resolves a presented bearer token to its user (`None`: no such token). The server's token
/// check (constant-time digests) is passed in, so this crate keeps no tokens of its own.
pub type Authenticator = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The user a request authenticated as, for the sessions it creates and may continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpUser(pub(crate) String);

/// The MCP endpoint (`POST`/`GET`/`DELETE /mcp`) serving `server`, one handler per MCP session.
///
/// With `auth`, every request needs `Authorization: Bearer <token>` of a user (401 otherwise)
/// and any `Host` is accepted (the token is the protection). Without it, the caller must bind a
/// loopback address, and only loopback `Host` headers are accepted (DNS rebinding).
/// `shutdown` ends every MCP session.
pub fn http_router(
    server: TackleMcp,
    auth: Option<Authenticator>,
    shutdown: CancellationToken,
) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    if auth.is_some() {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.connection()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().route_service("/mcp", service);
    match auth {
        Some(auth) => router.layer(axum::middleware::from_fn_with_state(auth, require_user)),
        None => router,
    }
}

async fn require_user(State(auth): State<Authenticator>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented.and_then(|token| auth(token)) {
        Some(user) => {
            request.extensions_mut().insert(McpUser(user));
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            axum::Json(serde_json::json!({"error": {
                "code": "unauthorized",
                "message": "missing or invalid bearer token: send `Authorization: Bearer <token>` with a token \
                            configured for the server ([server] tokens_file, TACKLE_SERVER_TOKENS)"
            }})),
        )
            .into_response(),
    }
}
