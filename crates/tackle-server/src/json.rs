//! [`ValidJson`]: a JSON body extractor whose errors name the field at fault.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::de::DeserializeOwned;

use crate::{ApiError, AppState};

/// Like `axum::Json`, but a body that does not fit the type is a 400 whose `field` is the JSON
/// path of the offending value (`toolMask.shell`), and an oversized body is a 413 in the same
/// error shape.
#[derive(Debug, Clone)]
pub struct ValidJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ValidJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            let status = rejection.into_response().status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::too_large(state.inner.config.body_limit)
            } else {
                ApiError::invalid("the request body could not be read")
            }
        })?;
        parse(&bytes).map(ValidJson)
    }
}

/// Parses a JSON body, naming the field at fault on error.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::invalid("the request body is empty; send a JSON object"));
    }
    // serde reads a struct from an array too (`[null, null]` as two fields): every body is an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::invalid("the request body must be a JSON object"));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize(&mut de) {
        Ok(value) => Ok(value),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() {
                return Err(ApiError::invalid(format!("the request body is not valid JSON: {inner}")));
            }
            let mut message = format!("{path}: {inner}");
            if path.starts_with("toolMask") {
                message.push_str(
                    "; toolMask maps tool names to true (callable) or false (not callable), e.g. {\"shell\": false}",
                );
            }
            if path == "." {
                Err(ApiError::invalid(message))
            } else {
                Err(ApiError::invalid_field(path, message))
            }
        }
    }
}

/// `deserialize_with` for an optional `u32` that accepts what JSON Schema calls an integer:
/// `3` and also `3.0` (a number whose fraction is zero), so a body the OpenAPI document allows
/// is never refused for its spelling.
pub(crate) fn optional_integer<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<u32>, D::Error> {
    use serde::Deserialize;
    use serde::de::Error;
    let Some(number) = Option::<serde_json::Number>::deserialize(de)? else { return Ok(None) };
    let value = match (number.as_u64(), number.as_f64()) {
        (Some(n), _) => Some(n),
        (None, Some(f)) if f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&f) => Some(f as u64),
        _ => None,
    };
    value
        .and_then(|n| u32::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| D::Error::custom(format!("expected an integer from 0 to {}, got {number}", u32::MAX)))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Body {
        #[allow(dead_code)]
        message: String,
        #[allow(dead_code)]
        tool_mask: Option<std::collections::BTreeMap<String, bool>>,
    }

    #[derive(Debug, Deserialize)]
    struct Steps {
        #[serde(default, deserialize_with = "optional_integer")]
        n: Option<u32>,
    }

    #[test]
    fn integers_may_be_spelled_with_a_zero_fraction() {
        assert_eq!(parse::<Steps>(br#"{"n": 3}"#).unwrap().n, Some(3));
        assert_eq!(parse::<Steps>(br#"{"n": 67108863.0}"#).unwrap().n, Some(67108863));
        assert_eq!(parse::<Steps>(br#"{"n": null}"#).unwrap().n, None);
        assert_eq!(parse::<Steps>(br#"{}"#).unwrap().n, None);
        for bad in
            [r#"{"n": 1.5}"#, r#"{"n": -1}"#, r#"{"n": 4294967296}"#, r#"{"n": "3"}"#, r#"{"n": 1e300}"#]
        {
            let e = parse::<Steps>(bad.as_bytes()).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("n"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<Body>(br#"{"message":"hi","toolMask":{"shell":"no"}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("toolMask.shell"));
        assert!(e.message.contains("expected a boolean"), "{}", e.message);
        let e = parse::<Body>(br#"{"toolMask":{}}"#).unwrap_err();
        assert!(e.message.contains("missing field `message`"), "{}", e.message);
        let e = parse::<Body>(br#"{"message":"hi","extra":1}"#).unwrap_err();
        assert!(e.message.contains("unknown field `extra`"), "{}", e.message);
        let e = parse::<Body>(b"{nope").unwrap_err();
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
        assert!(parse::<Body>(b"").is_err());
    }
}
