//! The `embed_server` example: Tackle's API nested in a host axum application, run as a
//! process and called over HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn, example_binary};

/// Kills the example when the test ends, passed or not.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn embed_server_serves_the_host_routes_and_tackle_under_a_prefix() {
    let fake = FakeModel::start(Script::new(vec![Turn::text("Hello from the agent.")])).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let binary = example_binary("tackle-server", "embed_server").unwrap();
    let mut child = Command::new(binary)
        .arg("127.0.0.1:0")
        .current_dir(workspace.path())
        .env("OPENAI_API_KEY", "sk-example")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_HOME", home.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = Kill(child);
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let base = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_owned();
    let client = reqwest::Client::new();

    let hello = client.get(format!("{base}/hello")).send().await.unwrap().text().await.unwrap();
    assert_eq!(hello, "hello from the host app");
    let health = client.get(format!("{base}/agent/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);

    let session: Value = client
        .post(format!("{base}/agent/v1/sessions"))
        .json(&json!({"title": "embedded"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().unwrap();
    let turn: Value = client
        .post(format!("{base}/agent/v1/sessions/{id}/messages"))
        .json(&json!({"message": "hi", "stream": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(turn["text"], "Hello from the agent.", "{turn}");
    // The page is served under the prefix too, and points its assets and API calls there.
    let page = client.get(format!("{base}/agent")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<meta name="tackle-base" content="/agent">"#), "{html}");
    assert!(html.contains(r#"src="/agent/web/app.js""#), "{html}");
    let script = client.get(format!("{base}/agent/web/app.js")).send().await.unwrap();
    assert_eq!(script.status(), 200);
}
