//! Reads a client's JSON into tackle-wire's typed request structs, with errors in the OpenAI
//! API's own wording that name the parameter at fault (`input[2].call_id`):
//! `Missing required parameter: '...'.`, `Invalid type for '...': ...`, `Invalid value: '...'.
//! Supported values are: ...`. Both OpenAI-compatible endpoints read with it.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ApiError;

/// Reads `value`, found at parameter `at` of the request (`input[0]`, `tools[1]`), as `T`.
pub(crate) fn read<T: DeserializeOwned>(value: Value, at: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = join(at, &e.path().to_string());
        rejection(&inner, &e.into_inner().to_string())
    })
}

/// A body [`crate::json::ValidJson`] refused (`{path}: {serde's message}`), reworded as the
/// OpenAI API words it. Other errors pass unchanged.
pub(crate) fn reword(e: ApiError) -> ApiError {
    let Some(field) = e.field.as_deref() else { return e };
    match e.message.strip_prefix(field).and_then(|m| m.strip_prefix(": ")) {
        Some(serde) => rejection(field, serde),
        None => e,
    }
}

/// `at` followed by serde's path inside it (`.` is the value itself).
fn join(at: &str, path: &str) -> String {
    match path {
        "." | "" => at.to_owned(),
        p if p.starts_with('[') || at.is_empty() => format!("{at}{p}"),
        p => format!("{at}.{p}"),
    }
}

/// serde's message about the value at `param`, as the OpenAI API words its rejections.
fn rejection(param: &str, serde: &str) -> ApiError {
    // A message about bytes ends with where they failed, which the parameter already says.
    let serde = match serde.rsplit_once(" at line ") {
        Some((message, place)) if place.split(" column ").all(|n| n.parse::<u64>().is_ok()) => message,
        _ => serde,
    };
    let quoted = |s: &str| s.replace('`', "'");
    if let Some(field) = serde.strip_prefix("missing field `").and_then(|r| r.strip_suffix('`')) {
        let param = join(param, field);
        return ApiError {
            code: "missing_required_parameter",
            ..ApiError::invalid_field(param.clone(), format!("Missing required parameter: '{param}'."))
        };
    }
    if let Some(rest) = serde.strip_prefix("unknown variant `")
        && let Some((value, expected)) = rest.split_once("`, expected ")
    {
        let supported = expected.strip_prefix("one of ").unwrap_or(expected);
        return ApiError {
            code: "invalid_value",
            ..ApiError::invalid_field(
                param,
                format!("Invalid value: '{value}'. Supported values are: {}.", quoted(supported)),
            )
        };
    }
    if let Some(rest) = serde.strip_prefix("invalid type: ")
        && let Some((got, expected)) = rest.split_once(", expected ")
    {
        return ApiError {
            code: "invalid_type",
            ..ApiError::invalid_field(
                param,
                format!(
                    "Invalid type for '{param}': expected {}, but got {} instead.",
                    quoted(expected),
                    quoted(got)
                ),
            )
        };
    }
    ApiError {
        code: "invalid_value",
        ..ApiError::invalid_field(param, format!("Invalid value for '{param}': {serde}."))
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
