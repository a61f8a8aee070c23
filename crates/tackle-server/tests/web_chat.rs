//! The web chat page in headless Chromium (found wherever it is by `tackle_testkit::peers`)
//! driven by playwright-core, both installed by scripts/test-deps.sh: send a message, see the
//! streamed reply and tool cards, approve a confirmation.

mod common;

use std::path::PathBuf;

use common::Harness;
use serde_json::{Value, json};
use tackle_testkit::{Script, Turn, peers};

#[tokio::test]
async fn the_web_page_streams_a_reply_shows_tool_cards_and_approves() {
    let Some(browser) = peers::or_skip(peers::chromium()) else { return };
    let Some(_) = peers::or_skip(peers::npm_package("playwright-core")) else { return };
    let script = Script::new(vec![
        Turn::call("list_files", r#"{"path":"."}"#),
        Turn::call("shell", r#"{"command":"echo hello from shell"}"#),
        Turn::text("Hello! I listed the files and ran the command."),
    ]);
    let h = Harness::new(script).await;
    std::fs::write(h.workspace.path().join("notes.md"), "x").unwrap();
    let base = h.listen().await;
    let shot = peers::repo_root().join("target/web-chat.png");
    let out = tokio::process::Command::new("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/web_chat.mjs"))
        .arg(&base)
        .env("TACKLE_NODE_MODULES", peers::node_modules())
        .env("CHROMIUM", &browser)
        .env("SCREENSHOT", &shot)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the browser run failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["errors"], json!([]), "no script errors in the page");
    assert!(seen["tools"].as_array().unwrap().contains(&json!("shell")));
    assert_eq!(seen["firstCard"], "list_files");
    let cards = seen["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 2, "{seen}");
    assert_eq!(cards[0]["status"], "ok");
    assert!(cards[0]["output"].as_str().unwrap().contains("notes.md"));
    assert_eq!(cards[1]["name"], "shell");
    assert_eq!(cards[1]["status"], "ok", "approved in the page, then ran");
    assert!(cards[1]["output"].as_str().unwrap().contains("hello from shell"));
    assert!(seen["answer"].as_str().unwrap().contains("Hello! I listed the files"), "{seen}");
    assert_eq!(seen["sessions"], 1);
    // The page's toggle masked web_fetch for the turn.
    let first = &h.fake.requests()[0].body;
    let allowed = first["tool_choice"]["allowed_tools"]["tools"].to_string();
    assert!(!allowed.contains("web_fetch") && allowed.contains("shell"), "{allowed}");
}
