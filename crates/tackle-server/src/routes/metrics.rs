//! `GET /metrics`: Prometheus metrics of turns, model calls and tool calls.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, AppState, ErrorBody};

/// Metrics in the Prometheus text format (0.0.4): `tackle_turns_total{end}`,
/// `tackle_steps_total`, `tackle_model_calls_total{provider,model,outcome}`,
/// `tackle_tokens_total{provider,model,type}` (input, cached, cache_creation, output),
/// `tackle_prompt_cache_hit_ratio`, `tackle_provider_errors_total{provider,class}`,
/// `tackle_tool_calls_total{tool,outcome}` and latency histograms of turns, model calls (and
/// their first chunk) and tool calls, in seconds. Needs a user's bearer token or the scrape
/// token when the server has tokens. 404 when the server was started without metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain", body = String),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    match state.metrics() {
        Some(m) => ([(CONTENT_TYPE, tackle_telemetry::CONTENT_TYPE)], m.render()).into_response(),
        None => ApiError::not_found("route", "/metrics (this server collects no metrics)").into_response(),
    }
}
