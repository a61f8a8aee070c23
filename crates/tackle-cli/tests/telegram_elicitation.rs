//! An MCP server's questions (elicitation) answered in Telegram: `tackle serve` with a bot
//! (against the Bot API emulator, npm `telegram-test-api` behind tackle-channels'
//! `peers/telegram_emulator.cjs`) and the reference `server-everything` (npm), whose tools ask
//! a thirteen-field form and a link. The person answers with buttons and replies, is asked again
//! when a reply does not fit the form, and what they answered is what the server returns to
//! the model; a link is confirmed; a question nobody answers is declined when its time is up.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn, peers};

use crate::telegram_emulator;

const BIN: &str = env!("CARGO_BIN_EXE_tackle");
const TOKEN: &str = "123456:elicitation-test-token";
const ANN: i64 = 1001;
const BOB: i64 = 1002;

struct Emulator {
    _child: tokio::process::Child,
    url: String,
    http: reqwest::Client,
}

/// A bot message as the emulator keeps it.
#[derive(Debug, Clone)]
struct Shown {
    id: i64,
    text: String,
    /// `(label, callback data or url)` of every button.
    buttons: Vec<(String, String)>,
}

impl Shown {
    /// The callback data of the button labelled `label` (prefix match).
    fn data(&self, label: &str) -> String {
        self.buttons
            .iter()
            .find(|(l, _)| l.starts_with(label))
            .unwrap_or_else(|| panic!("no button {label:?} in {self:?}"))
            .1
            .clone()
    }
}

impl Emulator {
    async fn start() -> Option<Self> {
        let (child, url) = telegram_emulator::start().await?;
        Some(Self { _child: child, url, http: reqwest::Client::new() })
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.http.post(format!("{}{path}", self.url)).json(&body).send().await.unwrap().json().await.unwrap()
    }

    /// `who` writes `text` in their private chat with the bot (Bob writes in Ann's chat: a group
    /// would be the same to the bot).
    async fn say(&self, who: i64, text: &str) {
        let message = json!({"chat": {"id": ANN, "type": "private"}, "text": text,
            "from": {"id": who, "is_bot": false, "first_name": if who == ANN { "Ann" } else { "Bob" }}});
        self.post("/__user/message", json!({"token": TOKEN, "message": message})).await;
    }

    /// `who` presses the button with `data` under message `id`; returns the callback id.
    async fn press(&self, who: i64, id: i64, data: &str) -> String {
        let message = json!({"message_id": id, "date": 0, "chat": {"id": ANN, "type": "private"}});
        let from = json!({"id": who, "is_bot": false, "first_name": if who == ANN { "Ann" } else { "Bob" }});
        let r = self
            .post("/__user/callback", json!({"token": TOKEN, "from": from, "message": message, "data": data}))
            .await;
        r["callback_id"].as_str().map(str::to_owned).unwrap_or_else(|| r["callback_id"].to_string())
    }

    async fn messages(&self) -> Vec<Shown> {
        let all = telegram_emulator::bot_messages(&self.http, &self.url, TOKEN).await;
        all.iter()
            .map(|m| Shown {
                id: m["message_id"].as_i64().unwrap(),
                text: visible(m["text"].as_str().unwrap_or_default()),
                buttons: m["reply_markup"]["inline_keyboard"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|row| row.as_array().cloned().unwrap_or_default())
                    .map(|b| {
                        let target =
                            b["callback_data"].as_str().or_else(|| b["url"].as_str()).unwrap_or_default();
                        (b["text"].as_str().unwrap_or_default().to_owned(), target.to_owned())
                    })
                    .collect(),
            })
            .collect()
    }

    /// Waits for the question step whose text contains `needle` (the last message with
    /// question buttons) and returns it.
    async fn step(&self, needle: &str) -> Shown {
        for _ in 0..3600 {
            let found = self
                .messages()
                .await
                .into_iter()
                .rev()
                .find(|m| m.buttons.iter().any(|(_, d)| d.starts_with("el:")) && m.text.contains(needle));
            if let Some(found) = found {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "timed out waiting for the question step {needle:?}: {:#?}\nthe bot's Bot API calls: {}",
            self.messages().await,
            self.calls().await
        );
    }

    /// The Bot API calls the bot made (method and parameters), for a failure's message.
    async fn calls(&self) -> String {
        let log: Value =
            self.http.get(format!("{}/__log", self.url)).send().await.unwrap().json().await.unwrap();
        log["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("\n  {} {} -> {}", c["method"], c["params"], c["status"]))
            .collect::<String>()
            + &format!(
                "\npending updates: {}",
                self.http
                    .get(format!("{}/__pending?token={TOKEN}", self.url))
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap()
            )
    }

    /// Waits for a bot message containing `needle`.
    async fn text(&self, needle: &str) -> Shown {
        for _ in 0..3600 {
            if let Some(found) = self.messages().await.into_iter().find(|m| m.text.contains(needle)) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for a message with {needle:?}: {:#?}", self.messages().await);
    }

    /// The notice the bot answered a button press with.
    async fn acknowledgement(&self, callback_id: &str) -> String {
        for _ in 0..3600 {
            let log: Value =
                self.http.get(format!("{}/__log", self.url)).send().await.unwrap().json().await.unwrap();
            let notice = log["calls"].as_array().unwrap().iter().find_map(|c| {
                let id = &c["params"]["callback_query_id"];
                let id = id.as_str().map(str::to_owned).unwrap_or_else(|| id.to_string());
                (c["method"] == "answerCallbackQuery" && id == callback_id)
                    .then(|| c["params"]["text"].as_str().unwrap_or_default().to_owned())
            });
            if let Some(notice) = notice {
                return notice;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for the button press {callback_id} to be acknowledged");
    }
}

/// The text a person sees in Telegram HTML.
fn visible(html: &str) -> String {
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

fn everything() -> Option<PathBuf> {
    let dir = peers::or_skip(peers::npm_package("@modelcontextprotocol/server-everything"))?;
    Some(dir.join("dist/index.js"))
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `tackle serve` with the bot and server-everything; questions time out after
/// `question_timeout` seconds (set through its `TACKLE_*` variable).
fn serve(home: &Path, ws: &Path, fake: &FakeModel, emulator: &Emulator, question_timeout: u64) -> Serve {
    let script = everything().unwrap();
    std::fs::write(home.join("telegram.token"), format!("{TOKEN}\n")).unwrap();
    std::fs::write(
        ws.join("tackle.toml"),
        format!(
            "[channels.telegram]\ntoken_file = \"~/telegram.token\"\nallowed_users = [{ANN}, {BOB}]\napi_url = \"{}\"\n\
             poll_timeout_secs = 1\nedit_interval_ms = 100\n",
            emulator.url
        ),
    )
    .unwrap();
    let servers =
        json!({"everything": {"command": "node", "args": [script, "stdio"], "start_timeout_secs": 30}})
            .to_string();
    let mut child = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TACKLE_HOME", home.join("data"))
        .env("TACKLE_PROVIDER", "openai")
        .env("TACKLE_MODEL", "gpt-test")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base_url()))
        .env("TACKLE_SANDBOX_MODE", "off")
        .env("TACKLE_MCP_SERVERS", servers)
        .env("TACKLE_CHANNELS_QUESTION_TIMEOUT_SECS", question_timeout.to_string())
        // What the server did, on stderr: shown only when the test fails.
        .env("RUST_LOG", "info,tackle_channels=debug,tackle_mcp=debug")
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("tackle serving on"), "{line}");
    Serve(child)
}

/// The tool result the model saw in its request `i`.
fn tool_result(fake: &FakeModel, i: usize) -> String {
    let requests = fake.requests();
    let body = &requests[i].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().map(str::to_owned).unwrap_or_else(|| m["content"].to_string()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_form_is_filled_in_telegram_with_buttons_and_replies() {
    let Some(emulator) = Emulator::start().await else { return };
    if everything().is_none() {
        return;
    }
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("everything__trigger-elicitation-request", "{}"),
        Turn::text("Thanks, you are signed up."),
    ]))
    .await
    .unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let _serve = serve(home.path(), ws.path(), &fake, &emulator, 600);
    emulator.say(ANN, "sign me up").await;

    // A required text field: a reply; only Decline and Cancel as buttons.
    let step = emulator.step("String (1 of 13, required)").await;
    assert!(
        step.text.contains("everything asks: Please provide inputs for the following fields:"),
        "{step:?}"
    );
    assert!(step.text.contains("Your full, legal name"), "{step:?}");
    let labels: Vec<&str> = step.buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["🚫 Decline", "⏹ Cancel"]);
    // Only the person whose turn asked may answer.
    let pressed = emulator.press(BOB, step.id, &step.data("🚫 Decline")).await;
    assert_eq!(emulator.acknowledgement(&pressed).await, "Only Ann can answer this.");
    emulator.say(ANN, "Ann Lovelace").await;

    let step = emulator.step("Boolean (2 of 13)").await;
    emulator.press(ANN, step.id, &step.data("Yes")).await;
    // The earlier step now shows what was taken, without buttons.
    let answered = emulator.text("✔ String: Ann Lovelace").await;
    assert!(answered.buttons.is_empty(), "{answered:?}");

    let step = emulator.step("String with default (3 of 13)").await;
    assert!(step.text.contains("Default: It was a dark and stormy night."), "{step:?}");
    emulator.press(ANN, step.id, &step.data("Use default")).await;

    // A reply that does not fit the form is refused with the reason, and asked again.
    let step = emulator.step("String with email format (4 of 13)").await;
    assert!(step.text.contains("Reply with text (email)."), "{step:?}");
    emulator.say(ANN, "not an address").await;
    let again = emulator.step("is not a \"email\"").await;
    assert!(again.text.contains("Try again."), "{again:?}");
    assert!(again.id > step.id);
    emulator.say(ANN, "ann@example.com").await;

    let step = emulator.step("String with uri format (5 of 13)").await;
    emulator.press(ANN, step.id, &step.data("Skip")).await;
    emulator.step("String with date format (6 of 13)").await;
    emulator.say(ANN, "1815-12-10").await;

    let step = emulator.step("Integer (7 of 13)").await;
    emulator.say(ANN, "500").await;
    let again = emulator.step("500 is greater than the maximum of 100").await;
    assert!(again.id > step.id);
    emulator.press(ANN, again.id, &again.data("Use default (42)")).await;

    emulator.step("Number in range 1-1000 (8 of 13)").await;
    emulator.say(ANN, "2.5").await;
    let step = emulator.step("Untitled Single Select Enum (9 of 13)").await;
    let labels: Vec<&str> = step.buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels[..6], ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"]);
    emulator.press(ANN, step.id, &step.data("Joey")).await;
    // A button of an answered step is refused.
    let stale = emulator.press(ANN, step.id, &step.data("Ross")).await;
    assert_eq!(emulator.acknowledgement(&stale).await, "This step was already answered.");

    let step = emulator.step("Untitled Multiple Select Enum (10 of 13)").await;
    assert!(step.text.contains("1 Guitar, 2 Piano, 3 Violin, 4 Drums, 5 Bass"), "{step:?}");
    emulator.say(ANN, "Piano, 3").await;
    let step = emulator.step("Titled Single Select Enum (11 of 13)").await;
    emulator.press(ANN, step.id, &step.data("Wonder Woman")).await;
    emulator.step("Titled Multiple Select Enum (12 of 13)").await;
    emulator.say(ANN, "Tuna, Trout").await;
    let step = emulator.step("Legacy Titled Single Select Enum (13 of 13)").await;
    emulator.press(ANN, step.id, &step.data("Dogs")).await;

    emulator.text("Thanks, you are signed up.").await;
    let closing = emulator.text("✅ Sent:").await;
    assert!(closing.text.contains("String with email format: ann@example.com"), "{closing:?}");
    // What the server got back is what Ann answered, defaults where she took them.
    let result = tool_result(&fake, 1);
    for expected in [
        "User provided the requested information",
        "Ann Lovelace",
        "ann@example.com",
        "It was a dark and stormy night.",
        "1815-12-10",
        "42",
        "2.5",
        "Joey",
        "Piano",
        "Violin",
        "hero-3",
        "fish-1",
        "fish-3",
        "pet-2",
    ] {
        assert!(result.contains(expected), "{expected:?} missing from the tool result: {result}");
    }
    assert!(!result.contains("Ross"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_is_opened_and_confirmed() {
    let Some(emulator) = Emulator::start().await else { return };
    if everything().is_none() {
        return;
    }
    let fake = FakeModel::start(Script::new(vec![
        Turn::call(
            "everything__trigger-url-elicitation",
            r#"{"url": "https://pay.example/invoice/7", "message": "Pay invoice 7"}"#,
        ),
        Turn::text("Paid."),
    ]))
    .await
    .unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let _serve = serve(home.path(), ws.path(), &fake, &emulator, 600);
    emulator.say(ANN, "pay it").await;

    let step = emulator.step("everything asks: Pay invoice 7").await;
    assert!(step.text.contains("Open this page: https://pay.example/invoice/7"), "{step:?}");
    assert_eq!(step.data("🔗 Open"), "https://pay.example/invoice/7", "a button that opens the page");
    // A written reply does not confirm a link: the person is told what to press.
    emulator.say(ANN, "ok i paid").await;
    let again = emulator.step("press Done when you have finished").await;
    emulator.press(ANN, again.id, &again.data("✅ Done")).await;
    emulator.text("Paid.").await;
    let result = tool_result(&fake, 1);
    assert!(result.contains("User completed the URL elicitation flow"), "{result}");
    assert!(result.contains("https://pay.example/invoice/7"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_is_declined_when_its_time_is_up() {
    let Some(emulator) = Emulator::start().await else { return };
    if everything().is_none() {
        return;
    }
    let fake = FakeModel::start(Script::new(vec![
        Turn::call("everything__trigger-elicitation-request", "{}"),
        Turn::text("All done."),
    ]))
    .await
    .unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let _serve = serve(home.path(), ws.path(), &fake, &emulator, 3);
    emulator.say(ANN, "sign me up").await;

    let step = emulator.step("String (1 of 13, required)").await;
    let closed = emulator.text("⌛ Not answered within 3 seconds: declined.").await;
    assert_eq!(closed.id, step.id, "the question's message says so, its buttons gone");
    assert!(closed.buttons.is_empty());
    emulator.text("All done.").await;
    let result = tool_result(&fake, 1);
    assert!(result.contains("User declined"), "{result}");
    assert!(result.contains("nobody answered the question in telegram within 3 seconds"), "{result}");
}
