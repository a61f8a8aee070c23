//! The embedded web chat page and API docs page: static HTML compiled into the binary, no
//! build step and no downloads.

use axum::http::header;
use axum::response::{Html, IntoResponse};

/// `GET /`: the web chat.
pub async fn index() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-cache")], Html(include_str!("../../web/index.html")))
}

/// `GET /docs`: the API reference, rendered from `/openapi.json`.
pub async fn docs() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-cache")], Html(include_str!("../../web/docs.html")))
}
