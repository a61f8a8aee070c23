//! The web page's sub-agent links in headless Chromium (playwright-core and the browser found by
//! `tackle_testkit::peers`, installed by scripts/test-deps.sh): a child session's page links to
//! its parent, following the link opens the parent, and the parent's page lists the child.

use crate::common;

use std::path::PathBuf;

use axum::http::Method;
use common::{Harness, parse_sse};
use serde_json::{Value, json};
use tackle_agent::SubAgentRegistry;
use tackle_testkit::{Script, Turn, peers};

#[tokio::test]
async fn a_childs_page_links_to_its_parent_and_the_parent_lists_the_child() {
    let Some(browser) = peers::or_skip(peers::chromium()) else { return };
    let Some(_) = peers::or_skip(peers::npm_package("playwright-core")) else { return };
    let script = Script::new(vec![
        Turn::call("agent", r#"{"prompt": "Look around the workspace"}"#),
        Turn::text("the child looked around"),
        Turn::text("the parent is done"),
    ]);
    let h = Harness::customized(script, |b| b.sub_agents(SubAgentRegistry::new())).await;
    let parent = h.session(None).await;
    let base = h.listen().await;
    let stream = reqwest::Client::new()
        .post(format!("{base}/v1/sessions/{parent}/messages"))
        .json(&json!({"message": "delegate the look"}))
        .send()
        .await
        .unwrap();
    let events = parse_sse(&stream.text().await.unwrap());
    let last = events.last().unwrap();
    assert_eq!((last.event.as_str(), &last.data["text"]), ("turn_finished", &json!("the parent is done")));
    let (_, family) = h.call(Method::GET, &format!("/v1/sessions/{parent}/children"), None, None).await;
    let child = family["children"][0]["id"].as_str().unwrap().to_owned();
    let call = family["children"][0]["callId"].as_str().unwrap().to_owned();

    let out = tokio::process::Command::new("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/web_subagents.mjs"))
        .arg(&base)
        .arg(&child)
        .env("TACKLE_NODE_MODULES", peers::node_modules())
        .env("CHROMIUM", &browser)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the browser run failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["errors"], json!([]), "no script errors in the page: {seen}");

    // The child's page: its own conversation and one link, up to its parent and call.
    assert_eq!(seen["child"]["url"], format!("/s/{child}"));
    let up = seen["child"]["links"].as_array().unwrap();
    assert_eq!(up.len(), 1, "{seen}");
    assert_eq!(up[0]["href"], format!("/s/{parent}"), "{seen}");
    let text = up[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Sub-agent of session ") && text.contains(&parent[..8]) && text.contains(&call),
        "{text}"
    );
    let messages = seen["child"]["messages"].to_string();
    assert!(
        messages.contains("Look around the workspace") && messages.contains("the child looked around"),
        "{messages}"
    );
    assert!(
        !messages.contains("delegate the look"),
        "the parent's conversation is not the child's: {messages}"
    );

    // Followed: the parent's page, which lists the child by its title, status and call.
    assert_eq!(seen["parent"]["url"], format!("/s/{parent}"));
    let down = seen["parent"]["links"].as_array().unwrap();
    assert_eq!(down.len(), 1, "{seen}");
    assert_eq!(down[0]["href"], format!("/s/{child}"));
    let text = down[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Sub-agent session: [general-purpose] Look around the workspace")
            && text.contains("idle")
            && text.contains(&call),
        "{text}"
    );
    assert!(seen["parent"]["messages"].to_string().contains("the parent is done"), "{seen}");
    // And its link leads back down.
    assert_eq!(seen["back"], format!("/s/{child}"));
}
