//! [`ValidQuery`] and [`ValidPath`]: query-string and path extractors whose failures are 400s
//! in the one JSON error shape, naming the parameter at fault; and [`json_errors`], which gives
//! every other error response (a 405, a rejection of axum's own) that shape too.

use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, Path};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderValue, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::ApiError;

/// Like `axum::extract::Query`, but a query string that does not fit `T` (`?limit=-1`,
/// `?offset=abc`) is a 400 whose `field` names the parameter.
#[derive(Debug, Clone)]
pub struct ValidQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ValidQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query().unwrap_or("")).map(ValidQuery)
    }
}

/// Parses a query string, naming the parameter at fault on error.
pub(crate) fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ApiError::invalid(format!("the query string is invalid: {inner}"))
        } else {
            ApiError::invalid_field(path.clone(), format!("query parameter `{path}`: {inner}"))
        }
    })
}

/// Like `axum::extract::Path`, but a path segment that cannot be decoded is a 400 in the JSON
/// error shape.
#[derive(Debug, Clone)]
pub struct ValidPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ValidPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ValidPath(value)),
            Err(rejection) => {
                Err(ApiError::invalid(format!("the URL path is invalid: {}", rejection.body_text())))
            }
        }
    }
}

/// The largest non-JSON error body kept as the message of the JSON error that replaces it.
const MAX_MESSAGE: usize = 1024;

/// Middleware: an error response (status 400 and above) that is not JSON gets the JSON error
/// shape `E` of the router it is layered on ([`ApiError`], or OpenAI's on the OpenAI-compatible
/// routes), keeping its status and headers (a 405 keeps `Allow`). Handlers already answer JSON;
/// this catches what axum answers itself (unknown methods, unreadable bodies, unsupported media
/// types). The shape comes from the layer, never from the URL.
pub async fn json_errors<E: From<ApiError> + IntoResponse>(request: Request<Body>, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if status.as_u16() < 400 || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = to_bytes(body, MAX_MESSAGE).await.ok().map(|b| String::from_utf8_lossy(&b).trim().to_owned());
    let message = match text.filter(|t| !t.is_empty()) {
        Some(text) => text,
        None if status.as_u16() == 405 => {
            let allowed = parts.headers.get("allow").and_then(|v| v.to_str().ok()).unwrap_or("");
            format!("this method is not allowed here; allowed: {allowed}")
        }
        None => status.canonical_reason().unwrap_or("error").to_owned(),
    };
    let mut fresh = E::from(ApiError::from_status(status, message)).into_response();
    parts.headers.remove(CONTENT_TYPE);
    parts.headers.remove("content-length");
    for (name, value) in &parts.headers {
        fresh.headers_mut().insert(name.clone(), value.clone());
    }
    fresh.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    fresh
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Page {
        #[allow(dead_code)]
        limit: Option<u32>,
        #[allow(dead_code)]
        offset: Option<u64>,
    }

    #[test]
    fn query_errors_name_the_parameter() {
        let e = parse_query::<Page>("limit=-1").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
        assert!(e.message.contains("query parameter `limit`"), "{}", e.message);
        let e = parse_query::<Page>("offset=abc").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("offset"));
        assert!(parse_query::<Page>("colour=red").is_ok(), "unknown parameters are ignored");
        assert!(parse_query::<Page>("limit=5&offset=18446744073709551615").is_ok());
        assert!(parse_query::<Page>("").is_ok());
    }
}
