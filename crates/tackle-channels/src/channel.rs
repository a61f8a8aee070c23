//! [`Channel`]: what a chat service (Telegram, ...) must do for the registry, and the messages
//! that cross it.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tackle_protocol::{ApprovalId, ElicitationId};
use tokio_util::sync::CancellationToken;

use crate::rich::Document;
use crate::{ChannelError, Inbox};

/// A chat (a private chat, a group) in a channel's own terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChatId(pub String);

/// A person in a channel's own terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UserId(pub String);

impl std::fmt::Display for ChatId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A message the bot sent, so it can be edited.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MessageRef {
    /// Its chat.
    pub chat: ChatId,
    /// Its id in the chat.
    pub id: String,
}

/// A file a person sent (a photo, a document, a voice note).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// What it is (`photo`, `document`, `voice`, ...).
    pub kind: String,
    /// The channel's handle to fetch it.
    pub file_id: String,
    /// Its file name, when the sender's app gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// Its size in bytes, when known before downloading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Something a person did in a chat, as stored in the inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inbound {
    /// The chat.
    pub chat: ChatId,
    /// Who.
    pub user: UserId,
    /// How to address them (first name or user name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    /// What.
    pub kind: InboundKind,
}

/// What a person did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InboundKind {
    /// A message for the agent, with any files attached.
    Message {
        /// Its text (or a file's caption).
        text: String,
        /// Files sent with it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// A command for the bot (`/new`): its name without the slash, and the rest of the line.
    Command {
        /// `new`, `stop`, ...
        name: String,
        /// Text after the command.
        #[serde(default)]
        args: String,
    },
    /// A button of a confirmation was pressed.
    Decision {
        /// The approval it answers.
        approval_id: ApprovalId,
        /// Approve or deny.
        approve: bool,
        /// The channel's id of the button press, to acknowledge it.
        callback_id: String,
    },
    /// A button of a question (an MCP server's form or link, see [`Question`]) was pressed.
    Answer {
        /// The question it answers.
        elicitation_id: ElicitationId,
        /// The step of the question the button belongs to (a press on an earlier step's button
        /// is refused).
        step: u32,
        /// What the button means (see [`ButtonAction::Reply`]).
        code: String,
        /// The channel's id of the button press, to acknowledge it.
        callback_id: String,
    },
    /// Something the bot cannot pass on (a sticker, a poll, a location): the person is told.
    Unsupported {
        /// What it was.
        what: String,
    },
}

/// One update a channel received: its id (unique and increasing per channel) and what it
/// carries, if it is for the bot at all (`None`: stored nowhere, only acknowledged).
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The channel's update id.
    pub update_id: i64,
    /// What it carries.
    pub inbound: Option<Inbound>,
}

/// A confirmation to ask for: approve or deny a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    /// The approval it answers.
    pub approval_id: ApprovalId,
    /// What is asked.
    pub text: Document,
}

/// A question to show with buttons: one step of an MCP server's form (a field) or a link to open.
/// Presses of its reply buttons come back as [`InboundKind::Answer`]; people may also answer by
/// writing a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question it belongs to.
    pub elicitation_id: ElicitationId,
    /// Which step of it this is.
    pub step: u32,
    /// What is asked.
    pub text: Document,
    /// Rows of buttons.
    pub buttons: Vec<Vec<Button>>,
}

/// A button under a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    /// Its label.
    pub label: String,
    /// What pressing it does.
    pub action: ButtonAction,
}

/// What a button does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ButtonAction {
    /// Answers with this short code (at most 8 ASCII characters), returned in
    /// [`InboundKind::Answer`].
    Reply(String),
    /// Opens this page in the person's browser.
    Open(String),
}

/// How a channel is doing, for `tackle channels status` and logs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelStatus {
    /// Channel name.
    pub channel: String,
    /// How it receives (`polling`, `webhook`).
    pub mode: String,
    /// Whether it is receiving now.
    pub running: bool,
    /// The bot's own name on the service, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot: Option<String>,
    /// The last error talking to the service, if the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When it last heard from the service (a poll answered, a webhook call), unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_contact_at: Option<i64>,
}

/// A chat service. The registry drives it: [`Channel::receive`] stores what arrives in the
/// [`Inbox`] (which is how an update is handled once, across restarts), and the registry answers
/// through the outbound methods. Implementations retry what the service asks them to retry
/// (rate limits, network errors) and escape everything they render.
#[async_trait]
pub trait Channel: Send + Sync + 'static {
    /// The channel's name (`telegram`); also the key of its rows in the store.
    fn name(&self) -> &str;

    /// Whether `user` may talk to the bot.
    fn allows(&self, user: &UserId) -> bool;

    /// The longest message the service accepts, in visible UTF-16 code units.
    fn max_message_len(&self) -> usize;

    /// How often one message may be edited while an answer streams.
    fn edit_interval(&self) -> Duration;

    /// Checks the credentials and prepares the service (registers commands, sets or removes the
    /// webhook). Called once by [`crate::ChannelRegistry::start`] before [`Channel::receive`]; an
    /// error stops the start (a bad token should not look like a running bot).
    async fn connect(&self) -> Result<(), ChannelError>;

    /// Receives updates until `stop` is cancelled, storing each in `inbox` before acknowledging
    /// it to the service. Returns early only on a configuration error (a bad token).
    async fn receive(&self, inbox: Inbox, stop: CancellationToken) -> Result<(), ChannelError>;

    /// Sends `text`, split into as many messages as the service needs; returns them in order.
    async fn send(&self, chat: &ChatId, text: &Document) -> Result<Vec<MessageRef>, ChannelError>;

    /// Replaces the text of a sent message (and removes its buttons). `text` must fit one message.
    async fn edit(&self, message: &MessageRef, text: &Document) -> Result<(), ChannelError>;

    /// Sends a confirmation with Approve and Deny buttons whose presses come back as
    /// [`InboundKind::Decision`].
    async fn confirm(&self, chat: &ChatId, confirmation: &Confirmation) -> Result<MessageRef, ChannelError>;

    /// Sends a question with buttons whose presses come back as [`InboundKind::Answer`]. The
    /// default sends the text alone (people answer by writing; the text says how).
    async fn ask(&self, chat: &ChatId, question: &Question) -> Result<MessageRef, ChannelError> {
        let mut sent = self.send(chat, &question.text).await?;
        if sent.is_empty() {
            return Err(ChannelError::Config("the question has no text".into()));
        }
        Ok(sent.remove(0))
    }

    /// Acknowledges a button press, with a short notice for the person who pressed it.
    async fn acknowledge(&self, callback_id: &str, notice: &str) -> Result<(), ChannelError>;

    /// Shows that the bot is working (a typing indicator).
    async fn typing(&self, chat: &ChatId) -> Result<(), ChannelError>;

    /// Downloads an attachment into `dest` (at most `max_bytes`); returns its size.
    async fn download(
        &self,
        attachment: &Attachment,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<u64, ChannelError>;

    /// HTTP routes the channel needs served (a webhook), if any. Served outside bearer
    /// authentication: the channel authenticates its callers itself.
    fn routes(&self) -> Option<axum::Router> {
        None
    }

    /// How the channel is doing.
    fn status(&self) -> ChannelStatus;
}
