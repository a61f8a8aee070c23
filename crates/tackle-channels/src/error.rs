//! [`ChannelError`]: why a channel could not do something; messages say what to do.

use thiserror::Error;

/// Why a channel operation failed.
#[derive(Debug, Error)]
pub enum ChannelError {
    /// The configuration cannot work (no token, a bad URL, webhook mode without a URL).
    #[error("{0}")]
    Config(String),
    /// The chat service refused or failed a call (after the retries it allows).
    #[error("{channel} {method} failed: {message}")]
    Api {
        /// Channel name.
        channel: String,
        /// The call (`sendMessage`).
        method: String,
        /// What the service said, or the network error. Never contains the bot token.
        message: String,
        /// The service's error code, when it answered.
        code: Option<i64>,
    },
    /// A file sent by a person is larger than allowed.
    #[error("the file is {size} bytes, over the limit of {max} bytes ([channels] max_upload_bytes)")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tackle_store::StoreError),
    /// The agent failed.
    #[error(transparent)]
    Agent(#[from] tackle_agent::AgentError),
    /// A file could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
