//! [`ChannelsConfig`]: the `[channels]` table of `tackle.toml`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::telegram::TelegramConfig;

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
    /// Seconds a confirmation waits for Approve or Deny before the call is denied.
    pub approval_timeout_secs: u64,
    /// Seconds an MCP server's question waits for an answer in the chat before it is declined.
    pub question_timeout_secs: u64,
    /// Where files people send are saved, relative to the workspace.
    pub uploads_dir: PathBuf,
    /// Largest file downloaded, in bytes (the Telegram Bot API serves at most 20 MB).
    pub max_upload_bytes: u64,
    /// Messages of one chat queued while a turn runs; more are refused with a notice.
    pub max_queued: usize,
    /// The Telegram bot (`[channels.telegram]`), when configured.
    pub telegram: Option<TelegramConfig>,
}

impl Default for ChannelsConfig {
    fn default() -> Self {
        Self {
            approval_timeout_secs: 300,
            question_timeout_secs: 600,
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
}
