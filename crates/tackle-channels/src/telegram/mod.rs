//! Telegram: a [`Channel`] over the Bot API.
//!
//! Long polling by default (the stored offset is how an update is acknowledged: only after it is
//! in the inbox), or a webhook served by `tackle serve` whose calls must carry the secret token
//! set at start. Answers are Telegram HTML, escaped, split at 4096 characters on paragraph and
//! code-block boundaries; confirmations carry Approve / Deny buttons.
//!
//! The client is Tackle's own, on the workspace's reqwest: Tackle needs a dozen methods, and the
//! `frankenstein` crate (reqwest 0.13 client) measured 68 s to compile alone here, plus ~15 s for
//! the derive crates it brings (bon, darling, serde_with), and its `Bot` prints its URL, which
//! holds the token, in `Debug`.

pub mod api;
mod config;
pub mod html;
pub mod wire;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

pub use api::BotApi;
pub use config::{BotToken, DEFAULT_API_URL, TelegramConfig, TelegramMode, UnknownTelegramMode};

use crate::rich::Document;
use crate::{
    Attachment, ButtonAction, Channel, ChannelError, ChannelStatus, ChatId, Confirmation, Inbox, MessageRef,
    Question, UserId,
};

/// Telegram's limit on a message's text, after entities are parsed.
pub const MAX_MESSAGE_LEN: usize = 4096;
/// Where `tackle serve` receives webhook calls.
pub const WEBHOOK_PATH: &str = "/channels/telegram/webhook";
/// The header carrying the webhook's secret token.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";
/// Updates the bot asks for.
const ALLOWED_UPDATES: [&str; 2] = ["message", "callback_query"];
/// Time limit of an optional call (the typing indicator, the command menu): one attempt, never
/// retried, so a failing or slow Bot API never delays the bot's start or a turn.
const OPTIONAL_CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Status is written to the store at most this often.
const STATUS_EVERY: Duration = Duration::from_secs(5);

/// What the webhook handler shares with the channel.
struct Shared {
    secret: String,
    inbox: Mutex<Option<Inbox>>,
    status: Mutex<ChannelStatus>,
    bot_username: Mutex<Option<String>>,
    last_recorded: Mutex<Option<std::time::Instant>>,
}

/// A Telegram bot.
pub struct TelegramChannel {
    api: BotApi,
    config: TelegramConfig,
    allowed: HashSet<i64>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TelegramChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramChannel").field("api", &self.api).field("mode", &self.config.mode).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TelegramChannel {
    /// A bot with `token`, configured by `config` (checked first).
    pub fn new(config: TelegramConfig, token: BotToken) -> Result<Self, ChannelError> {
        config.validate()?;
        let api = BotApi::new(&config.api_url, token, config.max_retries)?;
        // A fresh secret per start: setWebhook registers it, so nothing needs to be configured.
        let secret = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let mode = match config.mode {
            TelegramMode::Polling => "polling",
            TelegramMode::Webhook => "webhook",
        };
        let status =
            ChannelStatus { channel: "telegram".into(), mode: mode.into(), ..ChannelStatus::default() };
        Ok(Self {
            api,
            allowed: config.allowed_users.iter().copied().collect(),
            config,
            shared: Arc::new(Shared {
                secret,
                inbox: Mutex::new(None),
                status: Mutex::new(status),
                bot_username: Mutex::new(None),
                last_recorded: Mutex::new(None),
            }),
        })
    }

    /// The bot from configuration: the token from `TACKLE_TELEGRAM_TOKEN` or `token_file`.
    pub fn from_config(
        config: &TelegramConfig,
        workspace: &Path,
        env: crate::env::EnvLookup<'_>,
    ) -> Result<Self, ChannelError> {
        let token = config.token(workspace, env)?;
        Self::new(config.clone(), token)
    }

    /// `getMe`: the bot's user name (checks the token).
    pub async fn get_me(&self) -> Result<String, ChannelError> {
        let me: wire::User = self.api.call("getMe", &json!({}), None).await?;
        Ok(me.username.unwrap_or(me.first_name))
    }

    fn chat_id(chat: &ChatId) -> Value {
        chat.0.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::from(chat.0.clone()))
    }

    fn one_message(doc: &Document) -> String {
        let part = doc.split(MAX_MESSAGE_LEN).into_iter().next().unwrap_or_default();
        html::render(&part)
    }

    async fn note_contact(&self, inbox: &Inbox, error: Option<String>) {
        let status = {
            let mut s = lock(&self.shared.status);
            s.last_contact_at = error.is_none().then(tackle_store::now_ms).or(s.last_contact_at);
            s.last_error = error;
            s.clone()
        };
        record_status(&self.shared, inbox, status).await;
    }

    async fn poll(&self, inbox: Inbox, stop: CancellationToken) -> Result<(), ChannelError> {
        let mut offset = inbox.offset().await?;
        let poll = self.config.poll_timeout_secs;
        let mut backoff = Duration::from_secs(1);
        loop {
            let params = json!({ "offset": offset, "timeout": poll, "allowed_updates": ALLOWED_UPDATES });
            let call =
                self.api.call::<Vec<Value>>("getUpdates", &params, Some(Duration::from_secs(poll + 15)));
            let updates = tokio::select! {
                r = call => r,
                () = stop.cancelled() => return Ok(()),
            };
            let updates = match updates {
                Ok(u) => {
                    backoff = Duration::from_secs(1);
                    self.note_contact(&inbox, None).await;
                    u
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Telegram polling failed; retrying");
                    self.note_contact(&inbox, Some(e.to_string())).await;
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = stop.cancelled() => return Ok(()),
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    continue;
                }
            };
            if updates.is_empty() {
                continue;
            }
            let username = lock(&self.shared.bot_username).clone();
            let received: Vec<_> =
                updates.iter().filter_map(|u| wire::parse_update(u, username.as_deref())).collect();
            let Some(last) = received.iter().map(|r| r.update_id).max() else {
                tracing::warn!("Telegram sent updates without update_id; ignored");
                continue;
            };
            // Stored before the offset moves past them: a crash here means they come again, and
            // the inbox recognises them.
            loop {
                match inbox.accept(&received, Some(last + 1)).await {
                    Ok(_) => break,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot store Telegram updates; retrying");
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            () = stop.cancelled() => return Ok(()),
                        }
                    }
                }
            }
            offset = Some(last + 1);
        }
    }
}

async fn record_status(shared: &Shared, inbox: &Inbox, status: ChannelStatus) {
    {
        let mut last = lock(&shared.last_recorded);
        if status.last_error.is_none() && last.is_some_and(|t| t.elapsed() < STATUS_EVERY) {
            return;
        }
        *last = Some(std::time::Instant::now());
    }
    if let Err(e) = inbox.record_status(&status).await {
        tracing::debug!(error = %e, "cannot record the channel status");
    }
}

#[async_trait]
impl Channel for TelegramChannel {
    fn name(&self) -> &str {
        "telegram"
    }

    fn allows(&self, user: &UserId) -> bool {
        user.0.parse::<i64>().is_ok_and(|id| self.allowed.contains(&id))
    }

    fn max_message_len(&self) -> usize {
        MAX_MESSAGE_LEN
    }

    fn edit_interval(&self) -> Duration {
        Duration::from_millis(self.config.edit_interval_ms)
    }

    async fn connect(&self) -> Result<(), ChannelError> {
        let username = self.get_me().await.map_err(|e| match e {
            ChannelError::Api { code: Some(401 | 404), .. } => ChannelError::Config(format!(
                "Telegram refused the bot token ({e}); check token_file or TACKLE_TELEGRAM_TOKEN"
            )),
            other => other,
        })?;
        tracing::info!(bot = %username, "Telegram bot connected");
        *lock(&self.shared.bot_username) = Some(username.clone());
        lock(&self.shared.status).bot = Some(username);
        let commands = json!({ "commands": [
            {"command": "new", "description": "start a new session"},
            {"command": "stop", "description": "stop what the agent is doing"},
            {"command": "compact", "description": "compact the conversation"},
            {"command": "context", "description": "how full the context window is"},
            {"command": "tools", "description": "the tools the agent can use"},
            {"command": "help", "description": "the commands"},
        ]});
        // The menu is a convenience: registered beside the start, never before it.
        let api = self.api.clone();
        tokio::spawn(async move {
            if let Err(e) = api.call_once::<Value>("setMyCommands", &commands, OPTIONAL_CALL_TIMEOUT).await {
                tracing::info!(error = %e, "cannot register the bot's commands (the menu stays empty)");
            }
        });
        match self.config.mode {
            TelegramMode::Polling => {
                // Telegram refuses getUpdates while a webhook is set.
                self.api
                    .call::<Value>("deleteWebhook", &json!({ "drop_pending_updates": false }), None)
                    .await?;
            }
            TelegramMode::Webhook => {
                let url = self.config.webhook_url.clone().unwrap_or_default();
                let params = json!({
                    "url": url,
                    "secret_token": self.shared.secret,
                    "allowed_updates": ALLOWED_UPDATES,
                    "drop_pending_updates": false,
                });
                self.api.call::<Value>("setWebhook", &params, None).await?;
                tracing::info!(%url, "Telegram webhook set");
            }
        }
        Ok(())
    }

    async fn receive(&self, inbox: Inbox, stop: CancellationToken) -> Result<(), ChannelError> {
        lock(&self.shared.status).running = true;
        let result = match self.config.mode {
            TelegramMode::Polling => self.poll(inbox.clone(), stop).await,
            TelegramMode::Webhook => {
                *lock(&self.shared.inbox) = Some(inbox.clone());
                stop.cancelled().await;
                *lock(&self.shared.inbox) = None;
                Ok(())
            }
        };
        let status = {
            let mut s = lock(&self.shared.status);
            s.running = false;
            s.clone()
        };
        *lock(&self.shared.last_recorded) = None;
        record_status(&self.shared, &inbox, status).await;
        result
    }

    async fn send(&self, chat: &ChatId, text: &Document) -> Result<Vec<MessageRef>, ChannelError> {
        let mut sent = Vec::new();
        for part in text.split(MAX_MESSAGE_LEN) {
            let params = json!({
                "chat_id": Self::chat_id(chat),
                "text": html::render(&part),
                "parse_mode": "HTML",
                "link_preview_options": {"is_disabled": true},
            });
            let message: wire::SentMessage = self.api.call("sendMessage", &params, None).await?;
            sent.push(MessageRef { chat: chat.clone(), id: message.message_id.to_string() });
        }
        Ok(sent)
    }

    async fn edit(&self, message: &MessageRef, text: &Document) -> Result<(), ChannelError> {
        let params = json!({
            "chat_id": Self::chat_id(&message.chat),
            "message_id": message.id.parse::<i64>().unwrap_or_default(),
            "text": Self::one_message(text),
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": true},
        });
        match self.api.call::<Value>("editMessageText", &params, None).await {
            Ok(_) => Ok(()),
            // Editing to the same text is not an error worth reporting.
            Err(ChannelError::Api { message, .. }) if message.contains("message is not modified") => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn confirm(&self, chat: &ChatId, confirmation: &Confirmation) -> Result<MessageRef, ChannelError> {
        let id = &confirmation.approval_id;
        let params = json!({
            "chat_id": Self::chat_id(chat),
            "text": Self::one_message(&confirmation.text),
            "parse_mode": "HTML",
            "reply_markup": {"inline_keyboard": [[
                {"text": "✅ Approve", "callback_data": format!("{}{id}:y", wire::DECISION_PREFIX)},
                {"text": "❌ Deny", "callback_data": format!("{}{id}:n", wire::DECISION_PREFIX)},
            ]]},
        });
        let message: wire::SentMessage = self.api.call("sendMessage", &params, None).await?;
        Ok(MessageRef { chat: chat.clone(), id: message.message_id.to_string() })
    }

    async fn ask(&self, chat: &ChatId, question: &Question) -> Result<MessageRef, ChannelError> {
        let id = question.elicitation_id.as_str();
        let keyboard: Vec<Vec<Value>> = question
            .buttons
            .iter()
            .map(|row| {
                row.iter()
                    .map(|b| match &b.action {
                        ButtonAction::Reply(code) => {
                            json!({"text": b.label, "callback_data": wire::answer_data(id, question.step, code)})
                        }
                        ButtonAction::Open(url) => json!({"text": b.label, "url": url}),
                    })
                    .collect()
            })
            .filter(|row: &Vec<Value>| !row.is_empty())
            .collect();
        let mut params = json!({
            "chat_id": Self::chat_id(chat),
            "text": Self::one_message(&question.text),
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": true},
        });
        if !keyboard.is_empty() {
            params["reply_markup"] = json!({ "inline_keyboard": keyboard });
        }
        let message: wire::SentMessage = self.api.call("sendMessage", &params, None).await?;
        Ok(MessageRef { chat: chat.clone(), id: message.message_id.to_string() })
    }

    async fn acknowledge(&self, callback_id: &str, notice: &str) -> Result<(), ChannelError> {
        let mut params = json!({ "callback_query_id": callback_id });
        if !notice.is_empty() {
            params["text"] = Value::from(notice);
        }
        self.api.call::<Value>("answerCallbackQuery", &params, None).await.map(|_| ())
    }

    async fn typing(&self, chat: &ChatId) -> Result<(), ChannelError> {
        let params = json!({ "chat_id": Self::chat_id(chat), "action": "typing" });
        self.api.call_once::<Value>("sendChatAction", &params, OPTIONAL_CALL_TIMEOUT).await.map(|_| ())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<u64, ChannelError> {
        if let Some(size) = attachment.size
            && size > max_bytes
        {
            return Err(ChannelError::TooLarge { size, max: max_bytes });
        }
        self.api.download(&attachment.file_id, dest, max_bytes).await
    }

    fn routes(&self) -> Option<axum::Router> {
        (self.config.mode == TelegramMode::Webhook).then(|| {
            axum::Router::new()
                .route(WEBHOOK_PATH, axum::routing::post(webhook))
                .with_state(self.shared.clone())
        })
    }

    fn status(&self) -> ChannelStatus {
        lock(&self.shared.status).clone()
    }
}

/// A webhook call: the secret token checked (in constant time) before anything else, the update
/// stored before `200` (a failure answers `500`, and Telegram delivers it again).
async fn webhook(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
    if !bool::from(given.ct_eq(shared.secret.as_bytes())) {
        tracing::warn!("a webhook call without the right secret token was refused");
        return StatusCode::UNAUTHORIZED;
    }
    let Some(inbox) = lock(&shared.inbox).clone() else {
        return StatusCode::SERVICE_UNAVAILABLE;
    };
    let Ok(value) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    let username = lock(&shared.bot_username).clone();
    let Some(received) = wire::parse_update(&value, username.as_deref()) else {
        return StatusCode::OK;
    };
    match inbox.accept(&[received], None).await {
        Ok(_) => {
            let status = {
                let mut s = lock(&shared.status);
                s.last_contact_at = Some(tackle_store::now_ms());
                s.last_error = None;
                s.clone()
            };
            record_status(&shared, &inbox, status).await;
            StatusCode::OK
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot store a webhook update; Telegram will deliver it again");
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}
