//! `tackle serve` with a Telegram bot configured in tackle.toml, against the Bot API emulator
//! (npm `telegram-test-api` behind tackle-channels' `peers/telegram_emulator.cjs`): the real
//! binary answers, is killed with SIGKILL mid-turn, and the next process handles every update
//! exactly once. `tackle channels status` and `tackle config` show it, the token masked.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Fault, Script, Turn};

use crate::telegram_emulator;

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const TOKEN: &str = "123456:cli-test-secret-token";
const ANN: i64 = 1001;

struct Emulator {
    _child: tokio::process::Child,
    url: String,
    http: reqwest::Client,
}

impl Emulator {
    async fn start() -> Option<Self> {
        let (child, url) = telegram_emulator::start().await?;
        Some(Self { _child: child, url, http: reqwest::Client::new() })
    }

    async fn say(&self, text: &str) {
        let message = json!({"chat": {"id": ANN, "type": "private"}, "text": text,
            "from": {"id": ANN, "is_bot": false, "first_name": "Ann"}});
        self.http
            .post(format!("{}/__user/message", self.url))
            .json(&json!({"token": TOKEN, "message": message}))
            .send()
            .await
            .unwrap();
    }

    async fn texts(&self) -> Vec<String> {
        let all = telegram_emulator::bot_messages(&self.http, &self.url, TOKEN).await;
        all.iter().map(|m| m["text"].as_str().unwrap_or_default().to_owned()).collect()
    }

    async fn pending(&self) -> usize {
        let p: Value = self
            .http
            .get(format!("{}/__pending?token={TOKEN}", self.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        p.as_array().unwrap().len()
    }
}

fn tackle(home: &Path, fake: &FakeModel) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_PROVIDER", "openai")
        .stdin(Stdio::null());
    cmd
}

/// `tackle serve` in `ws`; returns the child and the lines it printed first (address, bot).
fn serve(home: &Path, ws: &Path, fake: &FakeModel) -> (Child, Vec<String>) {
    let mut cmd = tackle(home, fake);
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        lines.push(line.trim().to_owned());
    }
    (child, lines)
}

async fn until<F: FnMut() -> Fut, Fut: std::future::Future<Output = bool>>(what: &str, mut f: F) {
    for _ in 0..600 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

fn last_user_text(body: &Value) -> Option<String> {
    body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn serve_runs_the_telegram_bot_and_a_killed_process_loses_and_repeats_nothing() {
    let Some(emulator) = Emulator::start().await else { return };
    let fake = FakeModel::start(Script::new(vec![
        Turn::text("answer-a"),
        Turn::text("answer-b"),
        Turn::text("answer-c"),
        Turn::text("answer-d"),
    ]))
    .await
    .unwrap();
    // m1's model call hangs: the process is killed while it runs.
    fake.push_fault(Fault::Latency { ms: 60_000 });
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("telegram.token"), format!("{TOKEN}\n")).unwrap();
    std::fs::write(
        ws.path().join("tackle.toml"),
        format!(
            "[channels.telegram]\ntoken_file = \"~/telegram.token\"\nallowed_users = [{ANN}]\napi_url = \"{}\"\n\
             poll_timeout_secs = 1\nedit_interval_ms = 100\n",
            emulator.url
        ),
    )
    .unwrap();

    let (mut child, lines) = serve(home.path(), ws.path(), &fake);
    assert!(lines[0].starts_with("tackle serving on http://127.0.0.1:"), "{lines:?}");
    assert_eq!(lines[1], "telegram bot @TestNameBot receiving by polling");
    emulator.say("m1").await;
    until("m1 at the model", || async { !fake.requests().is_empty() }).await;
    emulator.say("m2").await;
    emulator.say("m3").await;
    until("m2 and m3 fetched", || async { emulator.pending().await == 0 }).await;
    // Stored before the offset moved past them (the emulator saw the confirming offset): the
    // process dies now, without a word.
    child.kill().unwrap();
    child.wait().unwrap();
    emulator.say("m4").await;

    let (mut child, _) = serve(home.path(), ws.path(), &fake);
    until("three answers", || async {
        let t = emulator.texts().await;
        ["answer-a", "answer-b", "answer-c"].iter().all(|a| t.iter().any(|x| x == a))
    })
    .await;
    // A later message as the oracle for "exactly once": the chat's messages are handled in
    // order, so a repeat of m2..m4 would reach the model (and be answered) before m5.
    emulator.say("m5").await;
    until("m5's answer", || async { emulator.texts().await.iter().any(|t| t == "answer-d") }).await;
    let texts = emulator.texts().await;
    assert!(texts[0].contains("Tackle restarted while working on your message “m1”"), "{texts:?}");
    assert_eq!(texts.len(), 5, "the notice and one answer each for m2..m5: {texts:?}");
    let firsts: Vec<String> = fake.requests().iter().filter_map(|r| last_user_text(&r.body)).collect();
    assert_eq!(firsts, ["m1", "m2", "m3", "m4", "m5"], "every message reached the model exactly once");
    assert_eq!(emulator.pending().await, 0);

    // SIGTERM: the bot stops with the server, cleanly.
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert!(status.success());

    let status = {
        let mut cmd = tackle(home.path(), &fake);
        cmd.args(["channels", "status", "--json", "--workspace"]).arg(ws.path());
        tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
    };
    let stdout = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(status.status.success(), "{stdout}");
    assert!(!stdout.contains("cli-test-secret"), "the token is masked: {stdout}");
    let row = &serde_json::from_str::<Value>(&stdout).unwrap()[0];
    assert_eq!(row["token"], "123456:***");
    assert_eq!(row["check"], json!({"ok": true, "bot": "TestNameBot"}));
    assert_eq!((row["store"]["queued"].as_u64(), row["store"]["running"].as_u64()), (Some(0), Some(0)));
    assert_eq!(row["store"]["done"], 5);
    assert_eq!(row["store"]["sessions"], 1);
    assert_eq!(row["server"]["running"], false);

    let config = {
        let mut cmd = tackle(home.path(), &fake);
        cmd.args(["config", "--json", "--workspace"]).arg(ws.path());
        tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
    };
    let stdout = String::from_utf8_lossy(&config.stdout).into_owned();
    assert!(!stdout.contains("cli-test-secret"), "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["channel_tokens"]["telegram"]["token"], "123456:***");
    assert_eq!(v["settings"]["channels"]["telegram"]["allowed_users"], json!([ANN]));
}

#[tokio::test]
async fn a_bad_channel_configuration_stops_serve_with_a_usage_error() {
    let fake = FakeModel::start(Script::new(vec![])).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("tackle.toml"),
        "[channels.telegram]\nallowed_users = [1]\nmode = \"webhook\"\n",
    )
    .unwrap();
    let mut cmd = tackle(home.path(), &fake);
    cmd.env("TACKLE_TELEGRAM_TOKEN", "1:abc")
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws.path());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs webhook_url"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cmd = tackle(home.path(), &fake);
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--workspace"]).arg(ws.path());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no Telegram bot token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
