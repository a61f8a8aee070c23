//! `GET /metrics`: Prometheus metrics of turns, model calls and tool calls.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, AppState, ErrorBody};

/// Metrics in the Prometheus text format (0.0.4): `tackle_turns_total{end}`,
/// `tackle_steps_total`, `tackle_model_calls_total{provider,model,outcome}`,
/// `tackle_tokens_total{provider,model,type}` (input, cached, cache_creation, output),
/// `tackle_prompt_cache_hit_ratio`, `tackle_provider_errors_total{provider,class}`,
/// `tackle_tool_calls_total{tool,outcome}`, `tackle_http_requests_total{method,route,status}`
/// and latency histograms of turns, model calls (and
/// their first chunk), tool calls and HTTP requests (to the response head), in seconds. Needs a user's bearer token or the scrape
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

/// Middleware of every route: counts the request in `/metrics` by method, route template and
/// status, with the time to its response head. Does nothing when the server has no metrics.
pub(crate) async fn count_request(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(metrics) = state.metrics().cloned() else { return next.run(request).await };
    let started = Instant::now();
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let response = next.run(request).await;
    metrics.record_http_request(
        method.as_str(),
        route.as_deref(),
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}
