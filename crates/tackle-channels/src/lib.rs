//! Chat channels for Tackle agents: people talk to an agent from a chat app.
//!
//! A [`Channel`] is a chat service (the [`telegram`] bot is the one built in). The
//! [`ChannelRegistry`] starts and stops channels with `tackle serve`, gives each person in each
//! chat their own stored session (`/new` starts a fresh one), runs one turn at a time per chat
//! (what arrives meanwhile waits in a queue), shows a turn as one message edited at a bounded
//! rate (tool status lines, the answer as it streams), asks for confirmations with buttons, and
//! handles every update exactly once across restarts through a durable inbox in the store.
//!
//! It drives the agent only through its public API: [`tackle_agent::Agent::create_session`],
//! [`tackle_agent::Agent::open_session`], [`tackle_agent::Session::run_turn`] with an
//! [`tackle_tools::EventSink`] and a cancellation token, and an [`tackle_tools::ApprovalQueue`]
//! shared with the agent's executor.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use tackle_channels::telegram::{BotToken, TelegramChannel, TelegramConfig, TelegramMode};
//! use tackle_channels::{ChannelRegistry, ChannelsConfig};
//! use tackle_provider::{OpenAiChat, ProviderConfig, ProviderKind};
//! use tackle_tools::{ApprovalMode, ApprovalQueue};
//!
//! // The executor asks `approvals`; the registry answers from the chat's buttons.
//! let approvals = ApprovalQueue::default();
//! let provider = OpenAiChat::new(ProviderConfig::new(ProviderKind::Openai)).unwrap();
//! let agent = tackle_agent::Agent::builder(provider)
//!     .model("gpt-4.1")
//!     .in_memory()
//!     .hooks(Vec::new(), ApprovalMode::Server)
//!     .approver(approvals.clone())
//!     .build()
//!     .await
//!     .unwrap();
//! let config = TelegramConfig {
//!     allowed_users: vec![123456789],
//!     mode: TelegramMode::Webhook,
//!     webhook_url: Some("https://bot.example.com/channels/telegram/webhook".into()),
//!     ..TelegramConfig::default()
//! };
//! let bot = TelegramChannel::new(config, BotToken::new("123456:AAE-example")?)?;
//! let registry = ChannelRegistry::builder(agent, approvals, std::env::temp_dir())
//!     .config(ChannelsConfig::default())
//!     .channel(Arc::new(bot))
//!     .build()?;
//! // `registry.start()` connects to Telegram; serve `registry.routes()` for the webhook, and
//! // `registry.stop(grace)` before the store closes.
//! assert_eq!(registry.status()[0].mode, "webhook");
//! # Ok::<(), tackle_channels::ChannelError>(())
//! # }).unwrap();
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

mod channel;
mod config;
mod env;
mod error;
mod hub;
mod inbox;
pub mod live;
pub mod questions;
mod registry;
pub mod rich;
pub mod telegram;

use std::path::Path;
use std::sync::Arc;

pub use channel::{
    Attachment, Button, ButtonAction, Channel, ChannelStatus, ChatId, Confirmation, Inbound, InboundKind,
    MessageRef, Question, Received, UserId,
};
pub use config::ChannelsConfig;
pub use env::EnvLookup;
pub use error::ChannelError;
pub use inbox::{Inbox, STATUS_KEY};
pub use registry::{ChannelRegistry, ChannelRegistryBuilder};

/// The registry of every channel `config` configures (reading their tokens), for `agent`'s
/// sessions in `workspace`; the questions of its turns that wait in `elicitations` (the agent's
/// elicitor) are asked in the chats. Empty when none is configured.
pub fn registry_from_config(
    config: &ChannelsConfig,
    agent: tackle_agent::Agent,
    approvals: tackle_tools::ApprovalQueue,
    elicitations: Option<tackle_tools::ElicitationQueue>,
    workspace: &Path,
    env: EnvLookup<'_>,
) -> Result<ChannelRegistry, ChannelError> {
    let mut builder = ChannelRegistry::builder(agent, approvals, workspace.to_owned()).config(config.clone());
    if let Some(queue) = elicitations {
        builder = builder.elicitations(queue);
    }
    if let Some(t) = &config.telegram {
        builder = builder.channel(Arc::new(telegram::TelegramChannel::from_config(t, workspace, env)?));
    }
    builder.build()
}
