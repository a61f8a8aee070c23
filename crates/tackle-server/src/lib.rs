//! `tackle serve`: Tackle over HTTP.
//!
//! A chat API whose turns stream the agent's events as SSE, with tool masks, approvals,
//! restoring offloaded outputs and compaction; an OpenAI-compatible `/v1/chat/completions`;
//! an OpenAPI 3.1 document at `/openapi.json` with a docs page at `/docs`; and a web chat page
//! at `/`. Build an [`AppState`] from an agent whose executor asks an [`ApprovalQueue`] for
//! confirmations, add any [`ServerAddon`]s (the chat channels), then [`serve`] it.
//!
//! [`ApprovalQueue`]: tackle_tools::ApprovalQueue
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use tower::ServiceExt;
//! use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
//! use tackle_server::{AppState, ServerConfig, router};
//! use tackle_tools::{ApprovalMode, ApprovalQueue};
//!
//! let approvals = ApprovalQueue::default();
//! let provider = OpenAiChat::new(ProviderConfig::new(ProviderKind::Openai)).unwrap();
//! let agent = tackle_agent::Agent::builder(provider)
//!     .model("gpt-4.1")
//!     .hooks(Vec::new(), ApprovalMode::Server)
//!     .approver(approvals.clone())
//!     .build()
//!     .await
//!     .unwrap();
//! let state = AppState::new(agent, approvals, ServerConfig::new(std::env::temp_dir()));
//! let request = http::Request::get("/healthz").body(axum::body::Body::empty()).unwrap();
//! let response = router(state).oneshot(request).await.unwrap();
//! assert_eq!(response.status(), 200);
//! # });
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

pub mod auth;
mod config;
mod elicitations;
mod error;
mod extract;
mod json;
mod openapi;
pub mod routes;
mod state;
mod turns;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::Request;
use axum::middleware;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use config::{MIN_TOKEN_LEN, ScrapeToken, ServerConfig, UserToken};
pub use elicitations::SharedElicitations;
pub use error::{ApiError, ErrorBody, ErrorDetail, ServerError};
pub use openapi::{ApiDoc, document as openapi_document};
pub use state::AppState;
pub use turns::SharedApprovals;

use routes::openai::{chat as openai, responses, shared};
use routes::{
    approvals, elicitations as elicitation_routes, health, messages, metrics, results, rewind, sessions, web,
};

/// A part of the application served beside the HTTP API, such as the chat channels: its routes
/// are merged outside bearer authentication (it authenticates its own callers, e.g. a webhook's
/// secret token), and it is shut down when the server shuts down, with the same grace period for
/// its running work, before the store is closed. Add one with [`AppState::add_addon`].
#[async_trait::async_trait]
pub trait ServerAddon: Send + Sync {
    /// Routes to serve (paths must not collide with the API's).
    fn routes(&self) -> Router;
    /// Stops: no new work at once; running work gets `grace`, then is cancelled.
    async fn shutdown(&self, grace: Duration);
}

/// The application: every route with its middleware.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/v1/sessions", post(sessions::create).get(sessions::list))
        .route("/v1/sessions/{id}", get(sessions::show).patch(sessions::update).delete(sessions::delete))
        .route("/v1/sessions/{id}/messages", post(messages::send))
        .route("/v1/sessions/{id}/events", get(messages::events))
        .route("/v1/sessions/{id}/cancel", post(messages::cancel))
        .route("/v1/sessions/{id}/compact", post(messages::compact))
        .route("/v1/sessions/{id}/context", get(sessions::context))
        .route("/v1/sessions/{id}/children", get(sessions::children))
        .route("/v1/sessions/{id}/turns", get(rewind::turns))
        .route("/v1/sessions/{id}/rewind", post(rewind::rewind))
        .route("/v1/sessions/{id}/fork", post(rewind::fork))
        .route("/v1/sessions/{id}/approvals", get(approvals::list))
        .route("/v1/sessions/{id}/results/{locator}", get(results::read))
        .route("/v1/approvals/{id}", post(approvals::decide))
        .route("/v1/sessions/{id}/elicitations", get(elicitation_routes::list))
        .route("/v1/elicitations/{id}", post(elicitation_routes::answer))
        .route("/v1/tools", get(sessions::tools))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_user::<ApiError>))
        .layer(middleware::from_fn(extract::json_errors::<ApiError>));
    // The OpenAI-compatible routes answer every error, 401 and axum's own 405/415 included, in
    // OpenAI's shape (their paths are `routes::openai::shared::OPENAI_ROUTES`, which the OpenAPI document reads).
    let openai_api = Router::new()
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/v1/responses", post(responses::create))
        .route("/v1/models", get(openai::models))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_user::<shared::OpenAiError>))
        .layer(middleware::from_fn(extract::json_errors::<shared::OpenAiError>));
    // Operators scrape it: a scrape token opens it without a user's powers (see auth.rs).
    let operations = Router::new()
        .route("/metrics", get(metrics::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_metrics_reader));
    let limit = state.config().body_limit;
    let addons = state.addons().iter().fold(Router::new(), |routes, addon| routes.merge(addon.routes()));
    let counted = state.clone();
    Router::new()
        .route("/", get(web::index))
        .route("/s/{id}", get(web::index))
        .route("/web/{asset}", get(web::asset))
        .route("/docs", get(web::docs))
        .route("/healthz", get(health::healthz))
        .route("/openapi.json", get(openapi_json))
        .merge(api)
        .merge(openai_api)
        .merge(operations)
        .fallback(not_found)
        .with_state(state)
        .merge(addons)
        // Inside the router's layers a request carries the route template it matched.
        .layer(middleware::from_fn_with_state(counted, routes::metrics::count_request))
        .layer(DefaultBodyLimit::max(limit))
        // Everything else (the fallback's 404, the pages) in Tackle's shape.
        .layer(middleware::from_fn(extract::json_errors::<ApiError>))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
            let id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            // Never the headers themselves: they carry bearer tokens.
            let span = tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id = %id, user = tracing::field::Empty);
            // A caller's `traceparent` makes this request, and the turn it runs, part of its trace.
            tackle_telemetry::propagation::adopt_remote_parent(&span, request.headers());
            span
        }))
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

async fn openapi_json(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> axum::Json<serde_json::Value> {
    axum::Json(openapi::document_for(&state))
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found("route", uri.path())
}

/// Binds `state.config().bind` and serves until `shutdown` resolves, then shuts down
/// gracefully (see [`serve_on`]).
pub async fn serve(
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    state.config().validate()?;
    let addr = state.config().bind;
    let listener =
        TcpListener::bind(addr).await.map_err(|source| ServerError::Io { addr: addr.to_string(), source })?;
    serve_on(listener, state, shutdown).await
}

/// Serves on a bound listener until `shutdown` resolves. Then new turns are refused (503),
/// running turns get the configured grace period to finish and are cancelled after it (their
/// calls in flight are recorded as interrupted), open streams end, and the store is closed.
pub async fn serve_on(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    tracing::info!(%addr, auth = !state.config().tokens.is_empty(), "tackle server listening");
    let stopping = state.clone();
    let grace = state.config().shutdown_grace;
    // Addons begin stopping with the server and are waited for before the store closes.
    let addons_stopping: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>> = Arc::default();
    let addons_slot = addons_stopping.clone();
    let addons = state.addons();
    // SSE writes many small frames; with Nagle's algorithm each one after the first waits for
    // the client's delayed ACK (up to 40 ms), so every accepted stream gets TCP_NODELAY.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on a connection");
        }
    });
    axum::serve(listener, router(state.clone()))
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!(running = stopping.running_turns(), "shutting down");
            stopping.begin_shutdown();
            let addons = addons.clone();
            let handle = tokio::spawn(async move {
                for addon in addons {
                    addon.shutdown(grace).await;
                }
            });
            *addons_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                if stopping.running_turns() > 0 {
                    tracing::warn!(
                        running = stopping.running_turns(),
                        "grace period over: cancelling running turns"
                    );
                }
                stopping.cancel_all_turns();
            });
        })
        .await
        .map_err(|source| ServerError::Io { addr: addr.clone(), source })?;
    state.cancel_all_turns();
    state.wait_for_turns().await;
    let handle = addons_stopping.lock().unwrap_or_else(|p| p.into_inner()).take();
    match handle {
        Some(h) => {
            let _ = h.await;
        }
        None => {
            for addon in state.addons() {
                addon.shutdown(grace).await;
            }
        }
    }
    state.agent().store().close().await;
    tracing::info!("server stopped");
    Ok(())
}
