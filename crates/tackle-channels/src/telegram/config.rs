//! [`TelegramConfig`]: the `[channels.telegram]` table, and the bot token.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ChannelError;
use crate::env::EnvLookup;

/// The official Bot API server.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// How the bot receives updates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TelegramMode {
    /// Long polling (`getUpdates`): works behind NAT, nothing to expose.
    #[default]
    Polling,
    /// Telegram posts updates to `webhook_url`, served by `tackle serve` at
    /// `/channels/telegram/webhook`; each call must carry the secret token set at start.
    Webhook,
}

/// A Telegram `mode` that is not `polling` or `webhook`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not polling or webhook")]
pub struct UnknownTelegramMode(pub String);

impl std::str::FromStr for TelegramMode {
    type Err = UnknownTelegramMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "polling" => Ok(Self::Polling),
            "webhook" => Ok(Self::Webhook),
            other => Err(UnknownTelegramMode(other.to_owned())),
        }
    }
}

/// A Telegram bot (`[channels.telegram]`).
///
/// ```toml
/// [channels.telegram]
/// token_file = "~/.config/tackle/telegram.token"   # the token from @BotFather, alone in the file
/// allowed_users = [123456789]                      # Telegram user ids; everyone else is refused
/// mode = "polling"                                 # or "webhook" with webhook_url
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// File holding the bot token; relative to the workspace, `~/` for the home directory.
    /// `TACKLE_TELEGRAM_TOKEN` gives the token itself instead; the token is never part of the
    /// configuration `tackle config` shows.
    pub token_file: Option<PathBuf>,
    /// Telegram user ids allowed to talk to the bot (numbers, or numbers in strings, so
    /// `TACKLE_CHANNELS_TELEGRAM_ALLOWED_USERS=1,2` works). Anyone else gets one polite refusal
    /// that tells them their id, then silence.
    #[serde(deserialize_with = "user_ids")]
    pub allowed_users: Vec<i64>,
    /// `polling` or `webhook`.
    pub mode: TelegramMode,
    /// Base URL of the Bot API: a self-hosted Bot API server, or an emulator in tests.
    pub api_url: String,
    /// Public URL Telegram posts updates to in webhook mode, ending in
    /// `/channels/telegram/webhook`.
    pub webhook_url: Option<String>,
    /// Seconds one long poll waits for updates.
    pub poll_timeout_secs: u64,
    /// Least milliseconds between two edits of the message showing a turn; Telegram allows about
    /// one message a second per chat.
    pub edit_interval_ms: u64,
    /// Retries of a failed Bot API call (network errors, 5xx, 429 after its `retry_after`).
    pub max_retries: u32,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            token_file: None,
            allowed_users: Vec::new(),
            mode: TelegramMode::Polling,
            api_url: DEFAULT_API_URL.to_owned(),
            webhook_url: None,
            poll_timeout_secs: 25,
            edit_interval_ms: 1000,
            max_retries: 5,
        }
    }
}

impl TelegramConfig {
    /// Checks what can be checked without the network: URLs, webhook settings.
    pub fn validate(&self) -> Result<(), ChannelError> {
        let api = self.api_url.trim_end_matches('/');
        if !(api.starts_with("https://") || api.starts_with("http://")) || api.len() <= "https://".len() {
            return Err(ChannelError::Config(format!(
                "[channels.telegram] api_url {:?} is not an http(s) URL; leave it unset for {DEFAULT_API_URL}",
                self.api_url
            )));
        }
        if self.mode == TelegramMode::Webhook {
            let Some(url) = &self.webhook_url else {
                return Err(ChannelError::Config(
                    "[channels.telegram] mode = \"webhook\" needs webhook_url: the public https URL Telegram posts to, \
                     ending in /channels/telegram/webhook (or use mode = \"polling\")"
                        .into(),
                ));
            };
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(ChannelError::Config(format!(
                    "[channels.telegram] webhook_url {url:?} is not an http(s) URL"
                )));
            }
        }
        if self.allowed_users.is_empty() {
            tracing::warn!(
                "[channels.telegram] allowed_users is empty: the bot refuses everyone (the refusal tells each person \
                 their user id, to add it)"
            );
        }
        Ok(())
    }

    /// The bot token: `TACKLE_TELEGRAM_TOKEN`, else the contents of `token_file` (relative to
    /// `workspace`).
    pub fn token(&self, workspace: &Path, env: EnvLookup<'_>) -> Result<BotToken, ChannelError> {
        if let Some(t) = env("TACKLE_TELEGRAM_TOKEN").filter(|t| !t.trim().is_empty()) {
            return BotToken::new(t.trim());
        }
        let Some(file) = &self.token_file else {
            return Err(ChannelError::Config(
                "no Telegram bot token: set token_file in [channels.telegram] to a file holding the token from \
                 @BotFather, or set TACKLE_TELEGRAM_TOKEN"
                    .into(),
            ));
        };
        let path = expand(file, workspace, env);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ChannelError::Config(format!("cannot read the Telegram token file {}: {e}", path.display()))
        })?;
        BotToken::new(text.trim())
    }

    /// Where the token file is, resolved (for `tackle channels status`).
    pub fn token_path(&self, workspace: &Path, env: EnvLookup<'_>) -> Option<PathBuf> {
        self.token_file.as_ref().map(|f| expand(f, workspace, env))
    }
}

/// User ids as numbers or numeric strings (environment variables give strings).
fn user_ids<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Number(i64),
        Text(String),
    }
    Vec::<Id>::deserialize(deserializer)?
        .into_iter()
        .map(|id| match id {
            Id::Number(n) => Ok(n),
            Id::Text(t) => t
                .trim()
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("{t:?} is not a Telegram user id (a number)"))),
        })
        .collect()
}

fn expand(file: &Path, workspace: &Path, env: EnvLookup<'_>) -> PathBuf {
    if let Ok(rest) = file.strip_prefix("~")
        && let Some(home) = env("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    if file.is_absolute() { file.to_owned() } else { workspace.join(file) }
}

/// A bot token. Never printed: `Debug` and [`BotToken::masked`] show only the bot id.
#[derive(Clone, PartialEq, Eq)]
pub struct BotToken(String);

impl BotToken {
    /// Checks the characters (a token goes into URL paths).
    ///
    /// ```
    /// use tackle_channels::telegram::BotToken;
    /// let t = BotToken::new("123456:AAE-secret_part").unwrap();
    /// assert_eq!(t.masked(), "123456:***");
    /// assert_eq!(format!("{t:?}"), "BotToken(123456:***)");
    /// assert!(BotToken::new("12/../x").is_err());
    /// ```
    pub fn new(token: &str) -> Result<Self, ChannelError> {
        let ok = !token.is_empty()
            && token.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '-'));
        if !ok {
            return Err(ChannelError::Config(
                "the Telegram token has characters a token cannot have; copy it again from @BotFather".into(),
            ));
        }
        Ok(Self(token.to_owned()))
    }

    /// The bot id part, the secret masked.
    pub fn masked(&self) -> String {
        match self.0.split_once(':') {
            Some((id, _)) => format!("{id}:***"),
            None => "***".into(),
        }
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BotToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BotToken({})", self.masked())
    }
}
