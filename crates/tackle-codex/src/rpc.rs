//! The app-server's JSON-RPC framing: one JSON object per line, no `"jsonrpc"` field, integer
//! or string ids. Parsing and rendering only; no IO.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "internal error", used when Tackle cannot answer a request it understood.
pub const INTERNAL_ERROR: i64 = -32603;

/// A request id as the peer sent it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (what Codex sends).
    Int(i64),
    /// A string id.
    Str(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// One message from the app-server.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request the client must answer (`item/tool/call`, approvals, ...).
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// The answer to one of the client's requests.
    Response {
        /// The request's id.
        id: RequestId,
        /// The result, or the error `(code, message)`.
        result: Result<Value, (i64, String)>,
    },
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    /// The start of the line (at most 200 characters).
    pub excerpt: String,
    /// What is wrong.
    pub error: String,
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RawError>,
}

#[derive(Deserialize)]
struct RawError {
    code: i64,
    #[serde(default)]
    message: String,
}

/// Parses one line.
///
/// ```
/// use tackle_codex::rpc::{Incoming, RequestId, parse_line};
/// let m = parse_line(r#"{"id":0,"method":"item/tool/call","params":{"callId":"c1"}}"#).unwrap();
/// assert!(matches!(m, Incoming::Request { id: RequestId::Int(0), .. }));
/// assert!(parse_line("not json").is_err());
/// ```
pub fn parse_line(line: &str) -> Result<Incoming, FrameError> {
    let fail = |error: String| FrameError { excerpt: line.chars().take(200).collect(), error };
    let raw: Raw = serde_json::from_str(line).map_err(|e| fail(e.to_string()))?;
    let params = raw.params.unwrap_or(Value::Null);
    match (raw.id, raw.method, raw.result, raw.error) {
        (Some(id), Some(method), None, None) => Ok(Incoming::Request { id, method, params }),
        (None, Some(method), None, None) => Ok(Incoming::Notification { method, params }),
        (Some(id), None, Some(result), None) => Ok(Incoming::Response { id, result: Ok(result) }),
        (Some(id), None, None, Some(e)) => Ok(Incoming::Response { id, result: Err((e.code, e.message)) }),
        // `"result": null` deserializes as absent.
        (Some(id), None, None, None) if line.contains("\"result\"") => {
            Ok(Incoming::Response { id, result: Ok(Value::Null) })
        }
        _ => Err(fail("neither a request, a notification nor a response".into())),
    }
}

/// A request line.
pub fn request_line(id: i64, method: &str, params: &Value) -> String {
    json!({"id": id, "method": method, "params": params}).to_string()
}

/// A notification line.
pub fn notification_line(method: &str, params: Option<&Value>) -> String {
    match params {
        Some(p) => json!({"method": method, "params": p}).to_string(),
        None => json!({"method": method}).to_string(),
    }
}

/// The answer to a request of the app-server.
pub fn response_line(id: &RequestId, result: &Value) -> String {
    json!({"id": id, "result": result}).to_string()
}

/// An error answer to a request of the app-server.
pub fn error_line(id: &RequestId, code: i64, message: &str) -> String {
    json!({"id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_kind_parses_with_or_without_jsonrpc_field() {
        let n = parse_line(r#"{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":1}"#).unwrap();
        assert!(matches!(n, Incoming::Notification { ref method, .. } if method == "turn/started"));
        let r = parse_line(r#"{"jsonrpc":"2.0","id":"a","result":{"ok":true}}"#).unwrap();
        assert_eq!(r, Incoming::Response { id: RequestId::Str("a".into()), result: Ok(json!({"ok": true})) });
        let e = parse_line(r#"{"id":3,"error":{"code":-32600,"message":"Invalid request: x"}}"#).unwrap();
        assert_eq!(
            e,
            Incoming::Response { id: RequestId::Int(3), result: Err((-32600, "Invalid request: x".into())) }
        );
        let null = parse_line(r#"{"id":4,"result":null}"#).unwrap();
        assert_eq!(null, Incoming::Response { id: RequestId::Int(4), result: Ok(Value::Null) });
        let m = parse_line(r#"{"method":"initialized"}"#).unwrap();
        assert_eq!(m, Incoming::Notification { method: "initialized".into(), params: Value::Null });
    }

    #[test]
    fn malformed_lines_are_errors_with_an_excerpt() {
        for bad in ["{", "[]", "42", r#"{"id":1}"#, r#"{"id":1,"method":"x","result":{}}"#, &"x".repeat(500)]
        {
            let e = parse_line(bad).unwrap_err();
            assert!(e.excerpt.chars().count() <= 200, "{e:?}");
        }
    }

    #[test]
    fn rendered_lines_round_trip() {
        let line = request_line(7, "turn/start", &json!({"threadId": "t"}));
        assert!(!line.contains('\n') && !line.contains("jsonrpc"));
        let back = error_line(&RequestId::Int(7), METHOD_NOT_FOUND, "no");
        assert_eq!(
            parse_line(&back).unwrap(),
            Incoming::Response { id: RequestId::Int(7), result: Err((METHOD_NOT_FOUND, "no".into())) }
        );
        assert_eq!(notification_line("initialized", None), r#"{"method":"initialized"}"#);
    }
}
