//! The embedded web chat page and API docs page: static files compiled into the binary, no
//! build step and no downloads. The chat page runs only its own scripts (a Content Security
//! Policy forbids inline and foreign ones), so markup in model output can never execute even
//! if it slipped past the renderer, which builds DOM nodes and never parses HTML.

use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};

/// Only the page's own files; no inline script, no plugins, no framing; images only inline.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                        connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The page's files: name, content type, content.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", "text/javascript; charset=utf-8", include_str!("../web/app.js")),
    ("markdown.js", "text/javascript; charset=utf-8", include_str!("../web/markdown.js")),
    ("app.css", "text/css; charset=utf-8", include_str!("../web/app.css")),
];

fn protected(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// `GET /` and `GET /s/{id}` (a session's own URL): the web chat. When an application nests
/// Tackle's router under a prefix (`/agent`), the page's assets and API calls carry it.
pub async fn index(OriginalUri(original): OriginalUri, uri: Uri) -> Response {
    let prefix = mount_prefix(original.path(), uri.path());
    let page = include_str!("../web/index.html").replace("=\"/web/", &format!("=\"{prefix}/web/")).replace(
        "<meta charset=\"utf-8\">",
        &format!("<meta charset=\"utf-8\">\n<meta name=\"tackle-base\" content=\"{prefix}\">"),
    );
    protected(Html(page).into_response())
}

/// The path the router is mounted under: the request's original path without the part the
/// router saw. Only plain path characters are kept (anything else mounts at the root), so it
/// can go into the page as is.
fn mount_prefix(original: &str, inner: &str) -> String {
    let prefix = if inner == "/" {
        original.trim_end_matches('/')
    } else {
        original.strip_suffix(inner).unwrap_or("")
    };
    let plain = prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"/-_.~".contains(&b));
    if plain && (prefix.is_empty() || prefix.starts_with('/')) { prefix.to_owned() } else { String::new() }
}

/// `GET /web/{asset}`: the chat page's script, renderer and styles.
pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => protected(([(header::CONTENT_TYPE, *kind)], *body).into_response()),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

/// `GET /docs`: the API reference, rendered from `/openapi.json`.
pub async fn docs() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-cache")], Html(include_str!("../web/docs.html")))
}

#[cfg(test)]
mod tests {
    use super::mount_prefix;

    #[test]
    fn the_mount_prefix_is_what_the_router_did_not_see() {
        assert_eq!(mount_prefix("/", "/"), "");
        assert_eq!(mount_prefix("/s/abc", "/s/abc"), "");
        assert_eq!(mount_prefix("/agent", "/"), "/agent");
        assert_eq!(mount_prefix("/agent/s/abc", "/s/abc"), "/agent");
        assert_eq!(mount_prefix("/a\"><script>/s/x", "/s/x"), "", "markup never reaches the page");
    }
}
