//! Sub-agents over HTTP: a child's confirmation is listed and answered where its parent's are,
//! and `/v1/sessions/{id}/children` links the two sessions.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{Harness, parse_sse, until};
use serde_json::json;
use tackle_agent::SubAgentRegistry;
use tackle_testkit::{Script, Turn};

#[tokio::test]
async fn a_childs_call_is_approved_through_the_parents_session_and_the_api_links_them() {
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "write the report"}"#),
        Turn::call("write_file", r#"{"path": "report.txt", "content": "all good"}"#),
        Turn::text("report written"),
        Turn::text("the sub-agent wrote it"),
    ]);
    let h = Harness::customized(script, |b| b.sub_agents(SubAgentRegistry::new())).await;
    let id = h.session(None).await;
    let base = h.listen().await;
    let stream = reqwest::Client::new()
        .post(format!("{base}/v1/sessions/{id}/messages"))
        .json(&json!({"message": "delegate"}))
        .send()
        .await
        .unwrap();
    let approvals = format!("/v1/sessions/{id}/approvals");
    until("the child's approval in the parent's list", || async {
        h.call(Method::GET, &approvals, None, None).await.1["approvals"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
    })
    .await;
    let pending = h.call(Method::GET, &approvals, None, None).await.1["approvals"][0].clone();
    assert_eq!(pending["tool"], "write_file");
    assert_ne!(pending["sessionId"], json!(id), "the call is the child's");
    let (status, body) = h
        .call(
            Method::POST,
            &format!("/v1/approvals/{}", pending["id"].as_str().unwrap()),
            None,
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let events = parse_sse(&stream.text().await.unwrap());
    assert!(events.iter().any(|e| e.event == "approval_requested"), "the parent's stream carried it");
    let last = events.last().unwrap();
    assert_eq!(
        (last.event.as_str(), last.data["text"].clone()),
        ("turn_finished", json!("the sub-agent wrote it"))
    );
    assert_eq!(std::fs::read_to_string(h.workspace.path().join("report.txt")).unwrap(), "all good");

    let (status, family) = h.call(Method::GET, &format!("/v1/sessions/{id}/children"), None, None).await;
    assert_eq!(status, StatusCode::OK, "{family}");
    assert_eq!(family["parent"], json!(null));
    let child = family["children"][0].clone();
    assert_eq!(child["id"], pending["sessionId"]);
    assert!(child["callId"].as_str().is_some_and(|c| !c.is_empty()));
    let (_, up) = h
        .call(Method::GET, &format!("/v1/sessions/{}/children", child["id"].as_str().unwrap()), None, None)
        .await;
    assert_eq!(up["parent"]["sessionId"], json!(id));
    assert_eq!(up["children"], json!([]));
    let (status, _) = h.call(Method::GET, "/v1/sessions/nope/children", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
