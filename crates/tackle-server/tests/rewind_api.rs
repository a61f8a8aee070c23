//! The sessions API's permission mode, plan approval over HTTP, and rewind and fork routes, on
//! the real router with the fake model and a real store.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{Harness, until};
use serde_json::{Value, json};
use tackle_checkpoint::CheckpointConfig;
use tackle_testkit::{Script, Turn};

async fn create(h: &Harness, body: Value) -> String {
    let (status, s) = h.call(Method::POST, "/v1/sessions", None, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{s}");
    s["id"].as_str().unwrap().to_owned()
}

async fn turn(h: &Harness, id: &str, message: &str) -> Value {
    let (status, result) = h
        .call(
            Method::POST,
            &format!("/v1/sessions/{id}/messages"),
            None,
            Some(json!({"message": message, "stream": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{result}");
    result
}

#[tokio::test]
async fn sessions_carry_a_permission_mode() {
    let h = Harness::customized(Script::new(vec![]), |b| b.plan_mode(true)).await;
    let id = create(&h, json!({"mode": "plan"})).await;
    let path = format!("/v1/sessions/{id}");
    let (_, shown) = h.call(Method::GET, &path, None, None).await;
    assert_eq!(shown["mode"], "plan");
    let (status, updated) = h.call(Method::PATCH, &path, None, Some(json!({"mode": "accept-edits"}))).await;
    assert_eq!((status, updated["mode"].as_str()), (StatusCode::OK, Some("accept-edits")), "{updated}");
    let (status, same) = h.call(Method::PATCH, &path, None, Some(json!({}))).await;
    assert_eq!(
        (status, same["mode"].as_str()),
        (StatusCode::OK, Some("accept-edits")),
        "an empty change is no change"
    );
    // Bypass needs an enforced sandbox this server does not have; unknown modes are refused.
    for bad in [json!({"mode": "bypass"}), json!({"mode": "yolo"})] {
        let (status, body) = h.call(Method::PATCH, &path, None, Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (status, body) = h.call(Method::POST, "/v1/sessions", None, Some(json!({"mode": "bypass"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("sandbox"), "{body}");
    // The document lists the modes this server accepts.
    let (_, doc) = h.call(Method::GET, "/openapi.json", None, None).await;
    let modes = &doc["components"]["schemas"]["UpdateSession"]["properties"]["mode"]["enum"];
    assert_eq!(modes, &json!(["default", "accept-edits", "plan", null]), "{modes}");
}

#[tokio::test]
async fn a_plan_is_approved_over_http_and_then_carried_out() {
    let script = Script::new(vec![
        Turn::call("write_file", r#"{"path": "a.txt", "content": "early"}"#),
        Turn::call("propose_plan", r#"{"plan": "1. Write a.txt"}"#),
        Turn::call("write_file", r#"{"path": "a.txt", "content": "planned"}"#),
        Turn::text("done"),
    ]);
    let h = Harness::customized(script, |b| b.plan_mode(true)).await;
    let id = create(&h, json!({"mode": "plan"})).await;
    let approvals = format!("/v1/sessions/{id}/approvals");
    let approve = async {
        // The plan, then the write it allows: both approved as a person would.
        for expected in ["propose_plan", "write_file"] {
            until(expected, || async {
                let (_, list) = h.call(Method::GET, &approvals, None, None).await;
                list["approvals"][0]["tool"] == expected
            })
            .await;
            let pending = h.call(Method::GET, &approvals, None, None).await.1["approvals"][0].clone();
            if expected == "propose_plan" {
                assert_eq!(pending["args"]["plan"], "1. Write a.txt");
            }
            let path = format!("/v1/approvals/{}", pending["id"].as_str().unwrap());
            let (status, _) = h.call(Method::POST, &path, None, Some(json!({"approve": true}))).await;
            assert_eq!(status, StatusCode::OK);
        }
    };
    let (result, ()) = tokio::join!(turn(&h, &id, "write a.txt"), approve);
    let events = result["events"].as_array().unwrap();
    let refused = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert!(refused["outcome"]["envelope"]["message"].as_str().unwrap().contains("plan mode"), "{refused}");
    assert!(events.iter().any(|e| e["type"] == "mode_changed" && e["mode"] == "default"));
    assert_eq!(std::fs::read_to_string(h.workspace.path().join("a.txt")).unwrap(), "planned");
    let (_, shown) = h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(shown["mode"], "default");
}

#[tokio::test]
async fn rewind_and_fork_over_http() {
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command": "printf one > a.txt"}"#),
        Turn::text("wrote a"),
        Turn::call("shell", r#"{"command": "printf two > a.txt && printf b > b.txt"}"#),
        Turn::text("wrote b"),
    ]);
    let h = Harness::customized(script, |b| {
        b.checkpoints(CheckpointConfig::default()).approver(tackle_tools::AutoApprove)
    })
    .await;
    let id = create(&h, json!({})).await;
    turn(&h, &id, "first").await;
    turn(&h, &id, "second").await;
    let ws = h.workspace.path();
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "two");

    let (status, turns) = h.call(Method::GET, &format!("/v1/sessions/{id}/turns"), None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(turns["turns"].as_array().unwrap().len(), 2);
    assert_eq!(turns["turns"][1]["prompt"], "second");
    assert_eq!(turns["turns"][1]["checkpoint"], true);

    let rewind = format!("/v1/sessions/{id}/rewind");
    let (status, preview) =
        h.call(Method::POST, &rewind, None, Some(json!({"turn": 2, "dryRun": true}))).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["applied"], false);
    assert_eq!(
        preview["files"],
        json!([{"path": "a.txt", "change": "modify"}, {"path": "b.txt", "change": "delete"}])
    );
    assert!(ws.join("b.txt").exists(), "a dry run changes nothing");
    let (status, done) = h.call(Method::POST, &rewind, None, Some(json!({"turn": 2.0}))).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!((done["applied"].as_bool(), done["prompt"].as_str()), (Some(true), Some("second")));
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one");
    assert!(!ws.join("b.txt").exists());
    let (_, shown) = h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await;
    let text = shown["messages"].to_string();
    assert!(text.contains("first") && !text.contains("second"), "{text}");
    // A turn the session does not have conflicts with its state (the session itself is there).
    for bad in [json!({"turn": 9}), json!({"turn": 0})] {
        let (status, body) = h.call(Method::POST, &rewind, None, Some(bad.clone())).await;
        assert_eq!(status, StatusCode::CONFLICT, "{bad}: {body}");
    }
    let (status, _) = h.call(Method::POST, &rewind, None, Some(json!({"turn": "2"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, fork) = h
        .call(
            Method::POST,
            &format!("/v1/sessions/{id}/fork"),
            None,
            Some(json!({"turn": 1, "title": "try b"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{fork}");
    assert_eq!(fork["title"], "try b");
    let fork_id = fork["id"].as_str().unwrap();
    let (_, forked) = h.call(Method::GET, &format!("/v1/sessions/{fork_id}"), None, None).await;
    assert!(forked["messages"].to_string().contains("first"));
    let (_, original) = h.call(Method::GET, &format!("/v1/sessions/{id}"), None, None).await;
    assert_eq!(original["messages"], shown["messages"], "the original is untouched");
}
