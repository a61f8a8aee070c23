//! `GET /healthz`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;

/// Health of the server.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// `ok`, or `shutting_down` (with status 503).
    pub status: String,
    /// Tackle version.
    pub version: String,
    /// Turns running now.
    pub running_turns: usize,
}

/// Liveness and readiness: 200 while serving, 503 once shutdown began. No authentication.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let stopping = state.inner.shutdown.is_cancelled();
    let health = Health {
        status: if stopping { "shutting_down" } else { "ok" }.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        running_turns: state.running_turns(),
    };
    (if stopping { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK }, Json(health))
}
