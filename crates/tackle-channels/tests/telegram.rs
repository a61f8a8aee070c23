//! The Telegram channel against a real Bot API emulator (npm `telegram-test-api`, extended on the
//! tests' side by `peers/telegram_emulator.cjs`), with the scripted fake model and real tools.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use tackle_testkit::{FakeModel, Script, Turn};

struct Setup {
    emulator: Emulator,
    fake: FakeModel,
    workspace: tempfile::TempDir,
    db: tempfile::TempDir,
}

impl Setup {
    async fn new(script: Script) -> Option<Self> {
        let emulator = Emulator::start().await?;
        let fake = FakeModel::start(script).await.unwrap();
        Some(Self {
            emulator,
            fake,
            workspace: tempfile::tempdir().unwrap(),
            db: tempfile::tempdir().unwrap(),
        })
    }

    async fn bot(&self, setup: BotSetup) -> Bot {
        Bot::start(
            &self.emulator,
            &self.fake.base_url(),
            &self.db.path().join("tackle.db"),
            self.workspace.path(),
            setup,
        )
        .await
    }

    /// Every displayed version of each bot message in `chat`: the text sent, then each edit.
    async fn shown(&self, chat: Chat) -> Vec<Vec<String>> {
        let calls = self.emulator.calls().await;
        let mut versions: Vec<(i64, Vec<String>)> = Vec::new();
        for c in calls.iter().filter(|c| c["status"] == 200 && c["params"]["chat_id"] == chat.id) {
            match c["method"].as_str() {
                Some("sendMessage") => {
                    let id = c["response"]["result"]["message_id"].as_i64().unwrap();
                    versions.push((id, vec![visible(c["params"]["text"].as_str().unwrap())]));
                }
                Some("editMessageText") => {
                    let id = c["params"]["message_id"].as_i64().unwrap();
                    if let Some(v) = versions.iter_mut().find(|(m, _)| *m == id) {
                        v.1.push(visible(c["params"]["text"].as_str().unwrap()));
                    }
                }
                _ => {}
            }
        }
        versions.into_iter().map(|(_, v)| v).collect()
    }

    /// Waits until a message in `chat` shows `needle` (in its current text).
    async fn wait_for(&self, chat: Chat, needle: &str) {
        until(&format!("a message containing {needle:?}"), || async {
            self.emulator
                .messages_in(chat)
                .await
                .iter()
                .any(|m| visible(m["text"].as_str().unwrap_or("")).contains(needle))
        })
        .await;
    }

    /// No Bot API call was refused by the emulator's checks (markup, length, edits).
    async fn assert_all_accepted(&self) {
        for c in self.emulator.calls().await {
            // A long poll still waiting has no status yet.
            if c["fault"].is_null() && !(c["status"].is_null() && c["method"] == "getUpdates") {
                assert_eq!(c["status"], 200, "a call was refused: {c}");
            }
        }
    }
}

#[tokio::test]
async fn a_multi_step_tool_task_is_answered_with_status_edits_and_a_final_message() {
    let mut script = Script::new(vec![
        Turn::call("list_files", r#"{"path":"."}"#),
        Turn::call("read_file", r#"{"path":"notes.md"}"#),
        Turn::text("There are **2 files**; `notes.md` says <hello> & goodbye."),
    ]);
    script.latency_ms = Some(400);
    let Some(s) = Setup::new(script).await else { return };
    std::fs::write(s.workspace.path().join("notes.md"), "<hello> & goodbye\n").unwrap();
    std::fs::write(s.workspace.path().join("b.txt"), "b").unwrap();
    let bot = s.bot(BotSetup::default()).await;
    s.emulator.say(ANN.private(), ANN, "what is in this repo?").await;
    s.wait_for(ANN.private(), "There are 2 files").await;

    let shown = s.shown(ANN.private()).await;
    assert_eq!(shown.len(), 2, "a status message and the answer: {shown:#?}");
    let status = &shown[0];
    assert!(
        status.iter().any(|v| v.contains("list_files .") && !v.contains("read_file")),
        "the status was shown before the second call: {status:#?}"
    );
    let last = status.last().unwrap();
    assert!(last.contains("✅ list_files . → ok"), "{last}");
    assert!(last.contains("✅ read_file notes.md → ok"), "{last}");
    assert!(status.len() >= 2, "edited, not re-sent: {status:#?}");
    assert_eq!(shown[1], vec!["There are 2 files; notes.md says <hello> & goodbye.".to_owned()]);
    let answer = s.emulator.calls_of("sendMessage").await.last().unwrap()["params"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(answer, "There are <b>2 files</b>; <code>notes.md</code> says &lt;hello&gt; &amp; goodbye.");
    assert!(!s.emulator.calls_of("sendChatAction").await.is_empty(), "typing was shown");
    // Edits at a bounded rate: the emulator never sees two edits within the interval (100 ms),
    // however the machine is loaded (the interval counts from the previous call's answer).
    let edits: Vec<i64> =
        s.emulator.calls_of("editMessageText").await.iter().map(|c| c["at"].as_i64().unwrap()).collect();
    for pair in edits.windows(2) {
        assert!(pair[1] - pair[0] >= 100, "edits {} ms apart", pair[1] - pair[0]);
    }
    assert!(s.fake.requests()[0].body.to_string().contains("what is in this repo?"));
    s.assert_all_accepted().await;
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_ten_thousand_character_answer_is_split_on_boundaries_and_every_part_is_accepted() {
    // Paragraphs, a code block full of markup characters, and one endless line.
    let mut text = String::new();
    for i in 0..12 {
        text.push_str(&format!("Paragraph {i}: {}\n\n", "words <b>&amp; more ".repeat(18)));
    }
    text.push_str("```html\n");
    for i in 0..60 {
        text.push_str(&format!("<div class=\"x\">{i} & {i}</div>\n"));
    }
    text.push_str("```\n\n");
    text.push_str(&"x".repeat(10_000 - text.chars().count().min(9_000)));
    assert!(text.chars().count() >= 10_000);
    let Some(s) = Setup::new(Script::new(vec![Turn::text(text.clone())])).await else { return };
    let bot = s.bot(BotSetup::default()).await;
    s.emulator.say(ANN.private(), ANN, "write a lot").await;
    until("the whole answer", || async {
        s.emulator
            .messages_in(ANN.private())
            .await
            .iter()
            .any(|m| m["text"].as_str().unwrap_or("").ends_with("xxxx"))
    })
    .await;
    // Stopping with a grace period waits for the turn's last edits.
    bot.stop(Duration::from_secs(5)).await;
    s.assert_all_accepted().await;
    let parts: Vec<String> = s
        .emulator
        .messages_in(ANN.private())
        .await
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(parts.len() >= 3, "{} parts", parts.len());
    for p in &parts {
        let v = visible(p);
        assert!(v.encode_utf16().count() <= 4096, "a part of {} units", v.encode_utf16().count());
        assert_eq!(p.matches("<pre>").count(), p.matches("</pre>").count(), "{p}");
    }
    // Nothing lost or reordered: the visible text is the answer's, whitespace aside.
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let shown: String = parts.iter().map(|p| squeeze(&visible(p))).collect();
    let expected = squeeze(&text.replace("```html", "").replace("```", ""));
    assert_eq!(shown, expected);
    // Paragraphs are never cut: each starts a line of some part.
    for i in 0..12 {
        let start = format!("Paragraph {i}:");
        assert!(parts.iter().any(|p| visible(p).lines().any(|l| l.starts_with(&start))), "{start}");
    }
    // Every line of the code block is whole, inside <pre>.
    let code: Vec<String> = parts
        .iter()
        .flat_map(|p| p.split("<pre>").skip(1).map(|c| visible(c.split("</pre>").next().unwrap())))
        .flat_map(|c| c.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    for i in 0..60 {
        assert!(code.contains(&format!("<div class=\"x\">{i} & {i}</div>")), "code line {i}");
    }
}

#[tokio::test]
async fn a_disallowed_user_gets_one_polite_refusal_and_nothing_else() {
    let Some(s) = Setup::new(Script::new(vec![Turn::text("never")])).await else { return };
    let bot = s.bot(BotSetup::default()).await;
    let chat = EVE.private();
    s.emulator.say(chat, EVE, "hello?").await;
    s.emulator.say(chat, EVE, "/new").await;
    s.emulator.say(chat, EVE, "please").await;
    s.emulator.press(chat, EVE, 1, "ap:whatever:y").await;
    until("all four updates confirmed", || async { s.emulator.pending().await.is_empty() }).await;
    s.wait_for(chat, "Your user id is 666000").await;
    // Every confirmed update was handed to the bot's tasks; stopping with a grace period
    // waits for them all, so whatever they would send has been sent.
    bot.stop(Duration::from_secs(5)).await;
    let sent = s.emulator.calls_of("sendMessage").await;
    assert_eq!(sent.len(), 1, "one refusal: {sent:#?}");
    assert!(sent[0]["params"]["text"].as_str().unwrap().starts_with("Sorry"));
    let acks = s.emulator.calls_of("answerCallbackQuery").await;
    assert_eq!(acks.len(), 1);
    assert!(acks[0]["params"]["text"].is_null(), "the button press is acknowledged without a word");
    assert!(s.fake.requests().is_empty(), "the model never saw them");
    assert!(s.emulator.calls_of("sendChatAction").await.is_empty());

    // Not even after a restart.
    let bot = s.bot(BotSetup::default()).await;
    s.emulator.say(chat, EVE, "again").await;
    until("confirmed", || async { s.emulator.pending().await.is_empty() }).await;
    bot.stop(Duration::from_secs(5)).await;
    assert_eq!(s.emulator.calls_of("sendMessage").await.len(), 1);
}

#[tokio::test]
async fn approve_and_deny_with_the_inline_keyboard() {
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command":"echo approved > out.txt"}"#),
        Turn::text("Written."),
        Turn::call("shell", r#"{"command":"rm -f keep.txt"}"#),
        Turn::text("I left it alone."),
    ]);
    let Some(s) = Setup::new(script).await else { return };
    std::fs::write(s.workspace.path().join("keep.txt"), "precious").unwrap();
    let bot = s.bot(BotSetup::default()).await;

    // In a group: Ann asks, Bob (allowed too) cannot answer her confirmation.
    s.emulator.say(GROUP, ANN, "write the file").await;
    let confirmation = wait_for_buttons(&s, GROUP).await;
    let data = button(&confirmation, 0);
    assert!(data.starts_with("ap:") && data.ends_with(":y"), "{data}");
    assert!(visible(confirmation["text"].as_str().unwrap()).contains("shell echo approved > out.txt"));
    let id = confirmation["message_id"].as_i64().unwrap();
    s.emulator.press(GROUP, BOB, id, &data).await;
    until("Bob's press acknowledged", || async {
        !s.emulator.calls_of("answerCallbackQuery").await.is_empty()
    })
    .await;
    let ack = &s.emulator.calls_of("answerCallbackQuery").await[0];
    assert_eq!(ack["params"]["text"], "Only Ann can answer this.");
    assert_eq!(bot.approvals.pending(None).len(), 1, "still pending");
    assert!(!s.workspace.path().join("out.txt").exists());

    s.emulator.press(GROUP, ANN, id, &data).await;
    s.wait_for(GROUP, "Written.").await;
    assert_eq!(std::fs::read_to_string(s.workspace.path().join("out.txt")).unwrap().trim(), "approved");
    let acks = s.emulator.calls_of("answerCallbackQuery").await;
    assert_eq!(acks[1]["params"]["text"], "Approved");
    let after = message(&s, id).await;
    assert!(
        visible(after["text"].as_str().unwrap()).starts_with("✅ Approved: shell echo approved"),
        "{after}"
    );
    assert!(after["reply_markup"].is_null(), "the buttons are gone");

    // Deny.
    s.emulator.say(GROUP, ANN, "now delete keep.txt").await;
    let confirmation = wait_for_buttons(&s, GROUP).await;
    let deny = button(&confirmation, 1);
    assert!(deny.ends_with(":n"));
    s.emulator.press(GROUP, ANN, confirmation["message_id"].as_i64().unwrap(), &deny).await;
    s.wait_for(GROUP, "I left it alone.").await;
    assert!(s.workspace.path().join("keep.txt").exists(), "denied: nothing ran");
    let denied = message(&s, confirmation["message_id"].as_i64().unwrap()).await;
    assert!(
        visible(denied["text"].as_str().unwrap()).starts_with("❌ Denied: shell rm -f keep.txt"),
        "{denied}"
    );
    let seen = s.fake.requests()[3].body.to_string();
    assert!(seen.contains("the user denied this call: denied in telegram by the user"), "{seen}");
    // A late press of an old button changes nothing.
    s.emulator.press(GROUP, ANN, id, &data).await;
    until("the late press acknowledged", || async {
        s.emulator.calls_of("answerCallbackQuery").await.len() == 4
    })
    .await;
    assert_eq!(
        s.emulator.calls_of("answerCallbackQuery").await[3]["params"]["text"],
        "This confirmation is no longer pending."
    );
    s.assert_all_accepted().await;
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn an_unanswered_confirmation_times_out_into_a_denial_the_model_sees() {
    let script = Script::new(vec![
        Turn::call("shell", r#"{"command":"touch never.txt"}"#),
        Turn::text("Nobody confirmed."),
    ]);
    let Some(s) = Setup::new(script).await else { return };
    let bot = s.bot(BotSetup { approval_timeout_secs: 1, ..BotSetup::default() }).await;
    let started = Instant::now();
    s.emulator.say(ANN.private(), ANN, "touch it").await;
    let confirmation = wait_for_buttons(&s, ANN.private()).await;
    assert!(visible(confirmation["text"].as_str().unwrap()).contains("within 1 second"));
    s.wait_for(ANN.private(), "Nobody confirmed.").await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(!s.workspace.path().join("never.txt").exists());
    let seen = s.fake.requests()[1].body.to_string();
    assert!(seen.contains("nobody answered the confirmation in telegram within 1 second"), "{seen}");
    let after = message(&s, confirmation["message_id"].as_i64().unwrap()).await;
    assert!(visible(after["text"].as_str().unwrap()).starts_with("❌ Denied: shell touch never.txt"));
    assert!(after["reply_markup"].is_null());
    s.assert_all_accepted().await;
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn two_people_in_one_group_get_separate_sessions_and_new_starts_a_fresh_one() {
    let mut script = Script::new(vec![
        Turn::text("Hello Ann."),
        Turn::text("Hello Bob."),
        Turn::text("You are Ann."),
        Turn::text("Fresh start."),
    ]);
    script.latency_ms = Some(200);
    let Some(s) = Setup::new(script).await else { return };
    let bot = s.bot(BotSetup::default()).await;
    // All at once: the chat runs one turn at a time and queues the rest.
    s.emulator.say(GROUP, ANN, "I am Ann").await;
    s.emulator.say(GROUP, BOB, "I am Bob").await;
    s.emulator.say(GROUP, ANN, "who am I?").await;
    s.emulator.say(GROUP, ANN, "/new").await;
    s.emulator.say(GROUP, ANN, "hello again").await;
    s.wait_for(GROUP, "Fresh start.").await;
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 4);
    let texts: Vec<String> = requests.iter().map(|r| request_text(&r.body)).collect();
    assert!(texts[1].contains("I am Bob") && !texts[1].contains("I am Ann"), "Bob's session is his own");
    assert!(texts[2].contains("I am Ann") && texts[2].contains("who am I?") && !texts[2].contains("Bob"));
    assert!(texts[3].contains("hello again") && !texts[3].contains("I am Ann"), "/new: {}", texts[3]);
    let owners: Vec<String> =
        bot.store.sessions().list(Default::default()).await.unwrap().into_iter().map(|s| s.owner).collect();
    assert_eq!(owners.iter().filter(|o| *o == "telegram:1001").count(), 2, "{owners:?}");
    assert_eq!(owners.iter().filter(|o| *o == "telegram:1002").count(), 1);
    // The chat ran one turn at a time: each request came after the previous answer was sent.
    let shown = s.shown(GROUP).await;
    let order: Vec<&str> = shown.iter().map(|v| v.last().unwrap().as_str()).collect();
    assert_eq!(order[..3], ["Hello Ann.", "Hello Bob.", "You are Ann."]);
    assert!(order[3].starts_with("🆕 New session"));
    assert_eq!(order[4], "Fresh start.");
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_restarted_bot_handles_no_update_twice_and_loses_none() {
    let mut script = Script::new(vec![Turn::text("one"), Turn::text("two"), Turn::text("three")]);
    script.latency_ms = Some(1500);
    let Some(s) = Setup::new(script).await else { return };
    let bot = s.bot(BotSetup::default()).await;
    let chat = ANN.private();
    s.emulator.say(chat, ANN, "m1").await;
    s.emulator.say(chat, ANN, "m2").await;
    s.emulator.say(chat, ANN, "m3").await;
    until("m1 at the model", || async { !s.fake.requests().is_empty() }).await;
    until("all three received", || async {
        s.emulator.pending().await.is_empty()
            || bot.store.channels().summary("telegram").await.unwrap().queued >= 2
    })
    .await;
    // Stop mid-turn, without grace: m1's turn is cancelled, m2 and m3 wait in the store.
    bot.stop(Duration::ZERO).await;
    s.emulator.say(chat, ANN, "m4").await;
    let bot = s.bot(BotSetup::default()).await;
    // The fake model answers in order; the cancelled request of m1 got no answer, so m2..m4
    // get "one".."three".
    s.wait_for(chat, "three").await;
    // Every stored message is done (a store row, not a pause): nothing is left to run again.
    until("every message done", || async {
        let summary = bot.store.channels().summary("telegram").await.unwrap();
        (summary.queued, summary.running) == (0, 0)
    })
    .await;
    bot.stop(Duration::from_secs(5)).await;
    // Each message started exactly one turn.
    let firsts: Vec<String> = s.fake.requests().iter().filter_map(|r| last_user_text(&r.body)).collect();
    for m in ["m1", "m2", "m3", "m4"] {
        assert_eq!(firsts.iter().filter(|t| t.as_str() == m).count(), 1, "{m}: {firsts:?}");
    }
    let texts: Vec<String> =
        s.emulator.messages_in(chat).await.iter().map(|m| visible(m["text"].as_str().unwrap())).collect();
    assert_eq!(texts, ["⏹ Stopped.", "one", "two", "three"], "m1 stopped, the others answered once each");
    assert!(s.emulator.pending().await.is_empty());
    s.assert_all_accepted().await;
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after_and_network_errors_are_retried() {
    let Some(s) = Setup::new(Script::new(vec![Turn::text("pong")])).await else { return };
    s.emulator.fault("getUpdates", "drop", 0, 1).await;
    s.emulator.fault("sendMessage", "429", 2, 1).await;
    let bot = s.bot(BotSetup::default()).await;
    s.emulator.say(ANN.private(), ANN, "ping").await;
    s.wait_for(ANN.private(), "pong").await;
    let sends = s.emulator.calls_of("sendMessage").await;
    assert_eq!(sends.len(), 2, "one refused, one retried: {sends:#?}");
    assert_eq!(sends[0]["status"], 429);
    assert_eq!(sends[1]["status"], 200);
    let waited = sends[1]["at"].as_i64().unwrap() - sends[0]["at"].as_i64().unwrap();
    assert!(waited >= 2000, "retried after {waited} ms, not the 2 s asked");
    assert_eq!(s.emulator.messages_in(ANN.private()).await.len(), 1, "sent once");
    let polls = s.emulator.calls_of("getUpdates").await;
    assert_eq!(polls[0]["status"], 0, "the first poll lost its connection");
    bot.stop(Duration::from_secs(5)).await;
}

/// The typing indicator and the command menu are optional: failing (500) or never answered,
/// they are tried once and neither the start nor the turn waits for them. The model's text before
/// its tool call stays in the status message, above the call.
#[tokio::test]
async fn failing_optional_calls_delay_nothing_and_text_before_a_call_is_shown() {
    let script = Script::new(vec![
        Turn::text("Let me look around first.").with_call("list_files", r#"{"path":"."}"#),
        Turn::text("Two files."),
    ]);
    let Some(s) = Setup::new(script).await else { return };
    std::fs::write(s.workspace.path().join("a.txt"), "a").unwrap();
    s.emulator.fault("setMyCommands", "500", 0, 100).await;
    s.emulator.fault("sendChatAction", "hang", 0, 100).await;
    let bot = s.bot(BotSetup::default()).await;
    s.emulator.say(ANN.private(), ANN, "what is here?").await;
    s.wait_for(ANN.private(), "Two files.").await;
    assert_eq!(s.emulator.calls_of("setMyCommands").await.len(), 1, "tried once, not retried");
    let typing = s.emulator.calls_of("sendChatAction").await;
    assert!(!typing.is_empty() && typing.iter().all(|c| c["status"].is_null()), "asked, never answered");

    let shown = s.shown(ANN.private()).await;
    let status = shown[0].last().unwrap();
    assert!(status.contains("Let me look around first."), "{shown:#?}");
    let (said, call) = (status.find("Let me look around").unwrap(), status.find("list_files .").unwrap());
    assert!(said < call, "the text is above its call: {status}");
    assert_eq!(shown.last().unwrap(), &vec!["Two files.".to_owned()]);
    bot.stop(Duration::from_secs(5)).await;
}

/// `/stop` while a confirmation waits: the turn stops and the confirmation loses its buttons.
#[tokio::test]
async fn stop_while_a_confirmation_waits_removes_its_buttons() {
    let script =
        Script::new(vec![Turn::call("shell", r#"{"command":"touch never.txt"}"#), Turn::text("unused")]);
    let Some(s) = Setup::new(script).await else { return };
    let bot = s.bot(BotSetup::default()).await;
    let chat = ANN.private();
    s.emulator.say(chat, ANN, "touch it").await;
    let confirmation = wait_for_buttons(&s, chat).await;
    s.emulator.say(chat, ANN, "/stop").await;
    s.wait_for(chat, "⏹ Stopped.").await;
    until("the confirmation edited", || async {
        message(&s, confirmation["message_id"].as_i64().unwrap()).await["reply_markup"].is_null()
    })
    .await;
    let after = message(&s, confirmation["message_id"].as_i64().unwrap()).await;
    assert!(visible(after["text"].as_str().unwrap()).contains("No longer needed"), "{after}");
    assert!(!s.workspace.path().join("never.txt").exists());
    assert_eq!(s.fake.requests().len(), 1, "the stopped turn asked the model nothing more");
    s.assert_all_accepted().await;
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn commands_new_stop_compact_context_and_tools() {
    let mut script = Script::new(vec![Turn::text("slow answer")]);
    script.latency_ms = Some(20_000);
    let Some(s) = Setup::new(script).await else { return };
    let bot = s.bot(BotSetup::default()).await;
    let chat = ANN.private();
    s.emulator.say(chat, ANN, "/start").await;
    s.wait_for(chat, "Hi Ann!").await;
    s.emulator.say(chat, ANN, "/tools").await;
    s.wait_for(chat, "🧰").await;
    let tools = s.emulator.messages_in(chat).await.last().unwrap()["text"].as_str().unwrap().to_owned();
    assert!(tools.contains("shell") && tools.contains("read_file"), "{tools}");
    s.emulator.say(chat, ANN, "/context").await;
    s.wait_for(chat, "Context:").await;
    s.emulator.say(chat, ANN, "/compact").await;
    s.wait_for(chat, "Compacted").await;
    s.emulator.say(chat, ANN, "/frobnicate").await;
    s.wait_for(chat, "Unknown command /frobnicate").await;
    // /stop is handled at once, while the turn runs.
    s.emulator.say(chat, ANN, "take your time").await;
    until("the turn at the model", || async { !s.fake.requests().is_empty() }).await;
    s.emulator.say(chat, BOB, "/stop").await;
    s.wait_for(chat, "Only the person whose request is running can stop it.").await;
    s.emulator.say(chat, ANN, "/stop").await;
    s.wait_for(chat, "⏹ Stopped.").await;
    s.emulator.say(chat, ANN, "/stop").await;
    s.wait_for(chat, "Nothing is running.").await;
    s.assert_all_accepted().await;
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn files_sent_by_a_person_are_stored_in_the_workspace_and_referenced() {
    let Some(s) = Setup::new(Script::new(vec![Turn::text("Got it."), Turn::text("Too big.")])).await else {
        return;
    };
    let bot = s.bot(BotSetup { max_upload_bytes: 1000, ..BotSetup::default() }).await;
    let chat = ANN.private();
    s.emulator.add_file("doc-1", "documents/file_1.txt", b"quarterly numbers: 42\n").await;
    let update = s
        .emulator
        .send_raw(json!({"chat": {"id": chat.id, "type": "private"}, "from": ANN.json(), "caption": "summarize this",
            "document": {"file_id": "doc-1", "file_unique_id": "u1", "file_name": "../report.txt", "mime_type": "text/plain", "file_size": 22}}))
        .await;
    s.wait_for(chat, "Got it.").await;
    let seen = last_user_text(&s.fake.requests()[0].body).unwrap();
    let path = format!(".tackle/uploads/telegram/1001/{update}-0-_report.txt");
    assert!(seen.starts_with("summarize this"), "{seen}");
    assert!(
        seen.contains(&format!(
            "[attachment: document, text/plain, 22 bytes, saved in the workspace as {path}]"
        )),
        "{seen}"
    );
    assert_eq!(std::fs::read(s.workspace.path().join(&path)).unwrap(), b"quarterly numbers: 42\n");

    s.emulator.add_file("big-1", "photos/big.jpg", &vec![7u8; 5000]).await;
    s.emulator
        .send_raw(json!({"chat": {"id": chat.id, "type": "private"}, "from": ANN.json(),
            "photo": [{"file_id": "big-1", "file_unique_id": "b1", "width": 10, "height": 10}]}))
        .await;
    s.wait_for(chat, "Too big.").await;
    let seen = last_user_text(&s.fake.requests()[1].body).unwrap();
    assert!(
        seen.contains("[attachment: photo, image/jpeg that could not be downloaded: the file is"),
        "{seen}"
    );
    bot.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn webhook_mode_takes_updates_only_with_the_secret_token() {
    let Some(s) = Setup::new(Script::new(vec![Turn::text("via webhook")])).await else { return };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}{}", tackle_channels::telegram::WEBHOOK_PATH);
    let bot = Bot::build(
        &s.emulator,
        &s.fake.base_url(),
        &s.db.path().join("tackle.db"),
        s.workspace.path(),
        BotSetup {
            mode: tackle_channels::telegram::TelegramMode::Webhook,
            webhook_url: Some(url.clone()),
            ..BotSetup::default()
        },
    )
    .await;
    let app = bot.registry.routes();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    bot.registry.start().await.unwrap();
    let set = s.emulator.calls_of("setWebhook").await;
    assert_eq!(set[0]["params"]["url"], url.as_str());
    let secret = set[0]["params"]["secret_token"].as_str().unwrap().to_owned();
    assert!(secret.len() >= 32);

    // Forged calls: no secret, a wrong one.
    let http = reqwest::Client::new();
    let forged = json!({"update_id": 999, "message": {"message_id": 1, "date": 0, "chat": {"id": ANN.id, "type": "private"},
        "from": ANN.json(), "text": "forged"}});
    let r = http.post(&url).json(&forged).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = http
        .post(&url)
        .header("x-telegram-bot-api-secret-token", "wrong")
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    s.emulator.say(ANN.private(), ANN, "hello by webhook").await;
    s.wait_for(ANN.private(), "via webhook").await;
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 1);
    assert!(!request_text(&requests[0].body).contains("forged"));
    assert!(s.emulator.webhook_log().await.iter().all(|d| d["status"] == 200));
    // A redelivered update (Telegram retries when it saw no 200) is not handled twice.
    let redelivered = json!({"update_id": s.emulator.webhook_log().await[0]["update_id"], "message": {"message_id": 1, "date": 0,
        "chat": {"id": ANN.id, "type": "private"}, "from": ANN.json(), "text": "hello by webhook"}});
    let r = http
        .post(&url)
        .header("x-telegram-bot-api-secret-token", &secret)
        .json(&redelivered)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The webhook stored what it answered 200 for; stopping with a grace period waits for
    // whatever it handed on.
    bot.stop(Duration::from_secs(5)).await;
    assert_eq!(s.fake.requests().len(), 1);
}

async fn wait_for_buttons(s: &Setup, chat: Chat) -> Value {
    for _ in 0..600 {
        if let Some(m) = s.emulator.messages_in(chat).await.into_iter().find(|m| !m["reply_markup"].is_null())
        {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for a message with buttons");
}

fn button(message: &Value, i: usize) -> String {
    message["reply_markup"]["inline_keyboard"][0][i]["callback_data"].as_str().unwrap().to_owned()
}

async fn message(s: &Setup, id: i64) -> Value {
    s.emulator.messages().await.into_iter().find(|m| m["message_id"] == id).unwrap()
}
