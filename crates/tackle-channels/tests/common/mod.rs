//! The Telegram Bot API emulator (npm `telegram-test-api` behind `peers/telegram_emulator.cjs`)
//! and a bot: the channel registry over a real store and real tools, talking to the scripted
//! fake model.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tackle_agent::Agent;
use tackle_channels::telegram::{BotToken, TelegramChannel, TelegramConfig, TelegramMode};
use tackle_channels::{ChannelRegistry, ChannelsConfig};
use tackle_provider::{OpenAiChat, OpenAiDialect, ProviderConfig, ProviderKind, RetryPolicy};
use tackle_store::Store;
use tackle_tools::{ApprovalMode, ApprovalQueue};
use tokio::io::AsyncBufReadExt;

pub const TOKEN: &str = "123456:tackle-test-token";
/// Allowed users of the tests' bots.
pub const ANN: Person = Person { id: 1001, name: "Ann" };
pub const BOB: Person = Person { id: 1002, name: "Bob" };
/// Not allowed.
pub const EVE: Person = Person { id: 666_000, name: "Eve" };

#[derive(Debug, Clone, Copy)]
pub struct Person {
    pub id: i64,
    pub name: &'static str,
}

impl Person {
    pub fn json(&self) -> Value {
        json!({"id": self.id, "is_bot": false, "first_name": self.name, "username": self.name.to_lowercase()})
    }

    /// Their private chat with the bot.
    pub fn private(&self) -> Chat {
        Chat { id: self.id, kind: "private" }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Chat {
    pub id: i64,
    pub kind: &'static str,
}

pub const GROUP: Chat = Chat { id: -100_777, kind: "group" };

/// The emulator, a child process ended with the test.
pub struct Emulator {
    _child: tokio::process::Child,
    pub url: String,
    http: reqwest::Client,
}

fn node_modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/node/node_modules")
}

impl Emulator {
    /// Starts the emulator; `None` (the test is skipped) when it is not installed, which fails
    /// the test under `TACKLE_REQUIRE_PEERS`.
    pub async fn start() -> Option<Self> {
        let modules = node_modules();
        let node =
            std::process::Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
        if !node || !modules.join("telegram-test-api").is_dir() {
            assert!(
                std::env::var_os("TACKLE_REQUIRE_PEERS").is_none(),
                "the Telegram Bot API emulator (npm telegram-test-api) or node is not installed: run scripts/test-deps.sh"
            );
            eprintln!("skipped: telegram-test-api is not installed (run scripts/test-deps.sh)");
            return None;
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/telegram_emulator.cjs");
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .env("TACKLE_NODE_MODULES", &modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the emulator starts within 20 s")
            .unwrap()
            .expect("the emulator prints its port");
        let port = serde_json::from_str::<Value>(&line).unwrap()["port"].as_u64().unwrap();
        Some(Self { _child: child, url: format!("http://127.0.0.1:{port}"), http: reqwest::Client::new() })
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        self.http.post(format!("{}{path}", self.url)).json(&body).send().await.unwrap().json().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> Value {
        self.http.get(format!("{}{path}", self.url)).send().await.unwrap().json().await.unwrap()
    }

    /// A person writes in a chat; a leading `/word` is marked as a command. Returns the update id.
    pub async fn say(&self, chat: Chat, from: Person, text: &str) -> i64 {
        let mut message =
            json!({"chat": {"id": chat.id, "type": chat.kind}, "from": from.json(), "text": text});
        if text.starts_with('/') {
            let len = text.find(' ').unwrap_or(text.len());
            message["entities"] = json!([{"type": "bot_command", "offset": 0, "length": len}]);
        }
        self.send_raw(message).await
    }

    /// A person sends this message object (chat, from, text, document, ...).
    pub async fn send_raw(&self, message: Value) -> i64 {
        let r = self.post("/__user/message", json!({"token": TOKEN, "message": message})).await;
        r["update_id"].as_i64().unwrap()
    }

    /// A person presses a button of a bot message.
    pub async fn press(&self, chat: Chat, from: Person, message_id: i64, data: &str) -> i64 {
        let message =
            json!({"message_id": message_id, "date": 0, "chat": {"id": chat.id, "type": chat.kind}});
        let r = self
            .post(
                "/__user/callback",
                json!({"token": TOKEN, "from": from.json(), "message": message, "data": data}),
            )
            .await;
        r["update_id"].as_i64().unwrap()
    }

    /// Every Bot API call the bot made, with the emulator's answer.
    pub async fn calls(&self) -> Vec<Value> {
        self.get("/__log").await["calls"].as_array().unwrap().clone()
    }

    /// Calls of one method.
    pub async fn calls_of(&self, method: &str) -> Vec<Value> {
        self.calls().await.into_iter().filter(|c| c["method"] == method).collect()
    }

    /// Webhook deliveries.
    pub async fn webhook_log(&self) -> Vec<Value> {
        self.get("/__log").await["webhook"].as_array().unwrap().clone()
    }

    /// The bot's messages as they are now (text, buttons, edit history).
    pub async fn messages(&self) -> Vec<Value> {
        self.get(&format!("/__messages?token={TOKEN}")).await.as_array().unwrap().clone()
    }

    /// The bot's messages in one chat.
    pub async fn messages_in(&self, chat: Chat) -> Vec<Value> {
        self.messages().await.into_iter().filter(|m| m["chat_id"] == chat.id).collect()
    }

    /// Updates not confirmed by the bot yet.
    pub async fn pending(&self) -> Vec<i64> {
        serde_json::from_value(self.get(&format!("/__pending?token={TOKEN}")).await).unwrap()
    }

    /// The next `count` calls of `method` fail this way (`429` with `retry_after`, `drop`, `500`).
    pub async fn fault(&self, method: &str, kind: &str, retry_after: u64, count: u32) {
        self.post(
            "/__faults",
            json!({"method": method, "kind": kind, "retry_after": retry_after, "count": count}),
        )
        .await;
    }

    /// A file the Bot API serves for `file_id`.
    pub async fn add_file(&self, file_id: &str, file_path: &str, bytes: &[u8]) {
        use base64::Engine;
        let content = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.post("/__files", json!({"file_id": file_id, "file_path": file_path, "content_base64": content}))
            .await;
    }
}

/// What a test bot is made of.
#[derive(Debug, Clone)]
pub struct BotSetup {
    pub allowed: Vec<i64>,
    pub approval_timeout_secs: u64,
    pub mode: TelegramMode,
    pub webhook_url: Option<String>,
    pub max_upload_bytes: u64,
}

impl Default for BotSetup {
    fn default() -> Self {
        Self {
            allowed: vec![ANN.id, BOB.id],
            approval_timeout_secs: 60,
            mode: TelegramMode::Polling,
            webhook_url: None,
            max_upload_bytes: 1024 * 1024,
        }
    }
}

/// The bot under test.
pub struct Bot {
    pub registry: ChannelRegistry,
    pub store: Store,
    pub approvals: ApprovalQueue,
}

impl Bot {
    /// A bot on the store at `db` working in `workspace`, asking the fake model at `model_url`.
    pub async fn start(
        emulator: &Emulator,
        model_url: &str,
        db: &Path,
        workspace: &Path,
        setup: BotSetup,
    ) -> Self {
        let bot = Self::build(emulator, model_url, db, workspace, setup).await;
        bot.registry.start().await.expect("the bot starts");
        bot
    }

    /// Built, not started.
    pub async fn build(
        emulator: &Emulator,
        model_url: &str,
        db: &Path,
        workspace: &Path,
        setup: BotSetup,
    ) -> Self {
        let store = Store::open(db).await.unwrap();
        let approvals = ApprovalQueue::default();
        let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
        let config = ProviderConfig::new(ProviderKind::Openai)
            .with_base_url(format!("{model_url}/v1"))
            .with_api_key("sk-test")
            .with_retry(retry);
        let provider = OpenAiChat::with_dialect(config, OpenAiDialect::OpenAi).unwrap();
        let agent = Agent::builder(provider)
            .model("model-x")
            .store(store.clone())
            .workspace(workspace)
            .hooks(Vec::new(), ApprovalMode::Server)
            .approver(approvals.clone())
            .build()
            .await
            .unwrap();
        let telegram = TelegramConfig {
            allowed_users: setup.allowed,
            mode: setup.mode,
            api_url: emulator.url.clone(),
            webhook_url: setup.webhook_url,
            poll_timeout_secs: 1,
            edit_interval_ms: 100,
            max_retries: 5,
            token_file: None,
        };
        let channel = TelegramChannel::new(telegram, BotToken::new(TOKEN).unwrap()).unwrap();
        let config = ChannelsConfig {
            approval_timeout_secs: setup.approval_timeout_secs,
            max_upload_bytes: setup.max_upload_bytes,
            ..ChannelsConfig::default()
        };
        let registry = ChannelRegistry::builder(agent, approvals.clone(), workspace.to_owned())
            .config(config)
            .channel(Arc::new(channel))
            .build()
            .unwrap();
        Self { registry, store, approvals }
    }

    pub async fn stop(&self, grace: Duration) {
        self.registry.stop(grace).await;
        self.store.close().await;
    }
}

/// Waits until `f` is true (polling), or panics after 30 s.
pub async fn until<F: FnMut() -> Fut, Fut: std::future::Future<Output = bool>>(what: &str, mut f: F) {
    for _ in 0..600 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The text a person sees in Telegram HTML: tags removed, entities decoded.
pub fn visible(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

/// Text of every message the model saw in request `i` (user and tool results), joined.
pub fn request_text(body: &Value) -> String {
    body["messages"].to_string()
}

/// Last user message of a request body (what started the turn, or the latest tool result).
pub fn last_user_text(body: &Value) -> Option<String> {
    body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().map(str::to_owned).unwrap_or_else(|| m["content"].to_string()))
}
