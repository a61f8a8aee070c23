//! The sessions API's `outputSchema`: the request asks natively, the result carries `output`,
//! an answer still invalid after the repair round is a 502 `output_invalid`, a bad schema a 400
//! before any model call; the OpenAPI document describes the field.

use crate::common;

use axum::http::{Method, StatusCode};
use common::Harness;
use serde_json::json;
use tackle_testkit::{Script, Turn};

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})
}

#[tokio::test]
async fn a_turn_with_an_output_schema_answers_with_the_validated_json() {
    let h =
        Harness::new(Script::new(vec![Turn::text(r#"{"ok": "yes"}"#), Turn::text(r#"{"ok": true}"#)])).await;
    let id = h.session(None).await;
    let path = format!("/v1/sessions/{id}/messages");
    let send =
        json!({"message": "fine?", "stream": false, "outputSchema": {"name": "verdict", "schema": schema()}});
    let (status, body) = h.call(Method::POST, &path, None, Some(send)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["output"], json!({"ok": true}), "{body}");
    assert_eq!(body["text"], r#"{"ok":true}"#);
    let requests = h.fake.requests();
    assert_eq!(
        requests[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema(), "strict": true}})
    );
    assert!(requests[1].body.to_string().contains("/ok"), "the repair carries the validation error");
}

#[tokio::test]
async fn an_answer_invalid_twice_is_a_502_output_invalid() {
    let h = Harness::new(Script::new(vec![Turn::text("{}"), Turn::text("[]")])).await;
    let id = h.session(None).await;
    let path = format!("/v1/sessions/{id}/messages");
    let send = json!({"message": "fine?", "stream": false, "outputSchema": {"schema": schema()}});
    let (status, body) = h.call(Method::POST, &path, None, Some(send)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(
        (body["end"].as_str(), body["error"]["code"].as_str()),
        (Some("failed"), Some("output_invalid"))
    );
    assert!(body.get("output").is_none(), "{body}");
    assert_eq!(h.fake.requests()[0].body["response_format"]["json_schema"]["name"], "output");

    // The body is what the document says of a 502: `SendFailure` is a `oneOf`, so it must match
    // exactly one of its shapes (the failed turn's, not also the refusal's).
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let failure = send_failure(&doc);
    assert!(
        failure.is_valid(&body),
        "{:?}",
        failure.iter_errors(&body).map(|e| e.to_string()).collect::<Vec<_>>()
    );
    let refused = json!({"error": {"code": "busy", "message": "the session is running a turn"}});
    assert!(failure.is_valid(&refused));
}

/// The schema of a failed `POST /v1/sessions/{id}/messages`, with the document's components.
fn send_failure(doc: &serde_json::Value) -> jsonschema::Validator {
    let root = json!({"$ref": "#/components/schemas/SendFailure", "components": doc["components"]});
    jsonschema::validator_for(&root).expect("the document's SendFailure compiles")
}

#[tokio::test]
async fn a_bad_schema_is_a_400_before_any_model_call() {
    let h = Harness::new(Script::new(vec![Turn::text("never")])).await;
    let id = h.session(None).await;
    let path = format!("/v1/sessions/{id}/messages");
    let send = json!({"message": "hi", "stream": false, "outputSchema": {"schema": {"type": "objekt"}}});
    let (status, body) = h.call(Method::POST, &path, None, Some(send)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.to_string().contains("outputSchema"), "{body}");
    assert!(h.fake.requests().is_empty());
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let field = &doc["components"]["schemas"]["SendMessage"]["properties"]["outputSchema"];
    assert!(!field.is_null(), "{field}");
}
