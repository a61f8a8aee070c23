//! [`ChannelsConfig`]: the `[channels]` table of `tackle.toml` and its `TACKLE_*` variables.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ChannelError;
use crate::telegram::TelegramConfig;

/// Reads an environment variable (a function, so tests need not touch the process environment).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Chat channels `tackle serve` starts.
///
/// ```toml
/// [channels]
/// approval_timeout_secs = 300
/// [channels.telegram]
/// token_file = "~/.config/tackle/telegram.token"
/// allowed_users = [123456789]
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelsConfig {
    /// Seconds a confirmation waits for Approve or Deny before the call is denied
    /// (`TACKLE_CHANNELS_APPROVAL_TIMEOUT_SECS`).
    pub approval_timeout_secs: u64,
    /// Where files people send are saved, relative to the workspace
    /// (`TACKLE_CHANNELS_UPLOADS_DIR`).
    pub uploads_dir: PathBuf,
    /// Largest file downloaded, in bytes (`TACKLE_CHANNELS_MAX_UPLOAD_BYTES`; the Telegram Bot API
    /// serves at most 20 MB).
    pub max_upload_bytes: u64,
    /// Messages of one chat queued while a turn runs; more are refused with a notice
    /// (`TACKLE_CHANNELS_MAX_QUEUED`).
    pub max_queued: usize,
    /// The Telegram bot (`[channels.telegram]`), when configured.
    pub telegram: Option<TelegramConfig>,
}

impl Default for ChannelsConfig {
    fn default() -> Self {
        Self {
            approval_timeout_secs: 300,
            uploads_dir: PathBuf::from(".tackle/uploads"),
            max_upload_bytes: 20 * 1024 * 1024,
            max_queued: 20,
            telegram: None,
        }
    }
}

impl ChannelsConfig {
    /// True when no channel is configured.
    pub fn is_empty(&self) -> bool {
        self.telegram.is_none()
    }

    /// Applies the `TACKLE_CHANNELS_*` and `TACKLE_TELEGRAM_*` variables. Any Telegram variable
    /// configures the Telegram channel if the file did not.
    ///
    /// ```
    /// use tackle_channels::ChannelsConfig;
    /// let mut c = ChannelsConfig::default();
    /// let env = |k: &str| match k {
    ///     "TACKLE_TELEGRAM_ALLOWED_USERS" => Some("1, 2".to_owned()),
    ///     "TACKLE_CHANNELS_APPROVAL_TIMEOUT_SECS" => Some("30".to_owned()),
    ///     _ => None,
    /// };
    /// c.apply_env(&env).unwrap();
    /// assert_eq!(c.telegram.unwrap().allowed_users, vec![1, 2]);
    /// assert_eq!(c.approval_timeout_secs, 30);
    /// ```
    pub fn apply_env(&mut self, env: EnvLookup<'_>) -> Result<(), ChannelError> {
        let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = get("TACKLE_CHANNELS_APPROVAL_TIMEOUT_SECS") {
            self.approval_timeout_secs = parse_number("TACKLE_CHANNELS_APPROVAL_TIMEOUT_SECS", &v)?;
        }
        if let Some(v) = get("TACKLE_CHANNELS_UPLOADS_DIR") {
            self.uploads_dir = PathBuf::from(v);
        }
        if let Some(v) = get("TACKLE_CHANNELS_MAX_UPLOAD_BYTES") {
            self.max_upload_bytes = parse_number("TACKLE_CHANNELS_MAX_UPLOAD_BYTES", &v)?;
        }
        if let Some(v) = get("TACKLE_CHANNELS_MAX_QUEUED") {
            self.max_queued = parse_number("TACKLE_CHANNELS_MAX_QUEUED", &v)?;
        }
        let telegram_vars = crate::telegram::ENV_VARS.iter().any(|k| get(k).is_some());
        if telegram_vars {
            self.telegram.get_or_insert_with(TelegramConfig::default).apply_env(env)?;
        }
        Ok(())
    }
}

/// Parses a number from variable `var`, saying which variable is wrong.
pub(crate) fn parse_number<T: std::str::FromStr>(var: &str, value: &str) -> Result<T, ChannelError> {
    value.trim().parse().map_err(|_| ChannelError::InvalidEnv {
        var: var.to_owned(),
        message: format!("{value:?} is not a number"),
    })
}
