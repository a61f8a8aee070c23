//! [`TelegramConfig`]: the `[channels.telegram]` table and its `TACKLE_TELEGRAM_*` variables.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ChannelError;
use crate::config::{EnvLookup, parse_number};

/// The official Bot API server.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// Every variable [`TelegramConfig::apply_env`] reads (any of them configures the channel).
pub const ENV_VARS: &[&str] = &[
    "TACKLE_TELEGRAM_TOKEN",
    "TACKLE_TELEGRAM_TOKEN_FILE",
    "TACKLE_TELEGRAM_ALLOWED_USERS",
    "TACKLE_TELEGRAM_MODE",
    "TACKLE_TELEGRAM_API_URL",
    "TACKLE_TELEGRAM_WEBHOOK_URL",
    "TACKLE_TELEGRAM_POLL_TIMEOUT_SECS",
    "TACKLE_TELEGRAM_EDIT_INTERVAL_MS",
    "TACKLE_TELEGRAM_MAX_RETRIES",
];

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

impl std::str::FromStr for TelegramMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "polling" => Ok(Self::Polling),
            "webhook" => Ok(Self::Webhook),
            other => Err(format!("{other:?} is not polling or webhook")),
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
    /// File holding the bot token (`TACKLE_TELEGRAM_TOKEN_FILE`); relative to the workspace, `~/`
    /// for the home directory. `TACKLE_TELEGRAM_TOKEN` gives the token itself instead; the token
    /// is never part of the configuration `tackle config` shows.
    pub token_file: Option<PathBuf>,
    /// Telegram user ids allowed to talk to the bot (`TACKLE_TELEGRAM_ALLOWED_USERS=1,2`).
    /// Anyone else gets one polite refusal that tells them their id, then silence.
    pub allowed_users: Vec<i64>,
    /// `polling` or `webhook` (`TACKLE_TELEGRAM_MODE`).
    pub mode: TelegramMode,
    /// Base URL of the Bot API (`TACKLE_TELEGRAM_API_URL`): a self-hosted Bot API server, or an
    /// emulator in tests.
    pub api_url: String,
    /// Public URL Telegram posts updates to in webhook mode, ending in
    /// `/channels/telegram/webhook` (`TACKLE_TELEGRAM_WEBHOOK_URL`).
    pub webhook_url: Option<String>,
    /// Seconds one long poll waits for updates (`TACKLE_TELEGRAM_POLL_TIMEOUT_SECS`).
    pub poll_timeout_secs: u64,
    /// Least milliseconds between two edits of the message showing a turn
    /// (`TACKLE_TELEGRAM_EDIT_INTERVAL_MS`); Telegram allows about one message a second per chat.
    pub edit_interval_ms: u64,
    /// Retries of a failed Bot API call (network errors, 5xx, 429 after its `retry_after`)
    /// (`TACKLE_TELEGRAM_MAX_RETRIES`).
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
    /// Applies the `TACKLE_TELEGRAM_*` variables (except the token, read by [`Self::token`]).
    pub fn apply_env(&mut self, env: EnvLookup<'_>) -> Result<(), ChannelError> {
        let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = get("TACKLE_TELEGRAM_TOKEN_FILE") {
            self.token_file = Some(PathBuf::from(v));
        }
        if let Some(v) = get("TACKLE_TELEGRAM_ALLOWED_USERS") {
            self.allowed_users = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| parse_number("TACKLE_TELEGRAM_ALLOWED_USERS", s))
                .collect::<Result<_, _>>()?;
        }
        if let Some(v) = get("TACKLE_TELEGRAM_MODE") {
            self.mode = v.parse().map_err(|message| ChannelError::InvalidEnv {
                var: "TACKLE_TELEGRAM_MODE".into(),
                message,
            })?;
        }
        if let Some(v) = get("TACKLE_TELEGRAM_API_URL") {
            self.api_url = v;
        }
        if let Some(v) = get("TACKLE_TELEGRAM_WEBHOOK_URL") {
            self.webhook_url = Some(v);
        }
        if let Some(v) = get("TACKLE_TELEGRAM_POLL_TIMEOUT_SECS") {
            self.poll_timeout_secs = parse_number("TACKLE_TELEGRAM_POLL_TIMEOUT_SECS", &v)?;
        }
        if let Some(v) = get("TACKLE_TELEGRAM_EDIT_INTERVAL_MS") {
            self.edit_interval_ms = parse_number("TACKLE_TELEGRAM_EDIT_INTERVAL_MS", &v)?;
        }
        if let Some(v) = get("TACKLE_TELEGRAM_MAX_RETRIES") {
            self.max_retries = parse_number("TACKLE_TELEGRAM_MAX_RETRIES", &v)?;
        }
        Ok(())
    }

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
