//! The Telegram Bot API emulator (npm `telegram-test-api` behind tackle-channels'
//! `peers/telegram_emulator.cjs`), shared by the tests that run `tackle serve` with a bot.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncBufReadExt;

/// Starts the emulator; returns its process (killed when dropped) and base URL, or `None` when
/// it is not installed (a failure under `TACKLE_REQUIRE_PEERS`).
pub async fn start() -> Option<(tokio::process::Child, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let modules = root.join("target/test-deps/node/node_modules");
    if !modules.join("telegram-test-api").is_dir() {
        assert!(
            std::env::var_os("TACKLE_REQUIRE_PEERS").is_none(),
            "the Telegram Bot API emulator (npm telegram-test-api) is not installed: run scripts/test-deps.sh"
        );
        eprintln!("skipped: telegram-test-api is not installed (run scripts/test-deps.sh)");
        return None;
    }
    let mut child = tokio::process::Command::new("node")
        .arg(root.join("crates/tackle-channels/tests/peers/telegram_emulator.cjs"))
        .env("TACKLE_NODE_MODULES", &modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line =
        tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.unwrap().unwrap().unwrap();
    let port = serde_json::from_str::<Value>(&line).unwrap()["port"].as_u64().unwrap();
    Some((child, format!("http://127.0.0.1:{port}")))
}

/// Everything the bot has sent so far (the emulator's `__messages` for `token`), oldest first.
pub async fn bot_messages(http: &reqwest::Client, url: &str, token: &str) -> Vec<Value> {
    let all: Value =
        http.get(format!("{url}/__messages?token={token}")).send().await.unwrap().json().await.unwrap();
    all.as_array().unwrap().clone()
}
