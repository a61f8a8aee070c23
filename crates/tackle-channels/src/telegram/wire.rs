//! Bot API wire types Tackle reads, and how an update becomes an [`Inbound`]. No IO.
//!
//! Updates are decoded one by one from JSON values, so one that Tackle cannot read (a new kind,
//! a malformed one) is skipped and acknowledged instead of blocking every later update.

use serde::Deserialize;
use serde_json::Value;

use tackle_protocol::{ApprovalId, ElicitationId};

use crate::{Attachment, ChatId, Inbound, InboundKind, Received, UserId};

/// Callback data of a confirmation button: `ap:<approval id>:y` or `:n`.
pub const DECISION_PREFIX: &str = "ap:";

/// Callback data of a question's reply button: `el:<elicitation id>:<step>:<code>` (at most 58
/// bytes with a UUID id and an 8-byte code, under Telegram's 64).
pub const ANSWER_PREFIX: &str = "el:";

/// The callback data of a question's reply button.
pub fn answer_data(elicitation_id: &str, step: u32, code: &str) -> String {
    format!("{ANSWER_PREFIX}{elicitation_id}:{step}:{code}")
}

fn parse_answer_data(data: &str) -> Option<(ElicitationId, u32, String)> {
    let rest = data.strip_prefix(ANSWER_PREFIX)?;
    let (rest, code) = rest.rsplit_once(':')?;
    let (id, step) = rest.rsplit_once(':')?;
    Some((ElicitationId::from(id), step.parse().ok()?, code.to_owned()))
}

/// The envelope of every Bot API answer.
#[derive(Debug, Deserialize)]
pub struct ApiResponse {
    /// Whether the call succeeded.
    pub ok: bool,
    /// The result, when it did.
    #[serde(default)]
    pub result: Option<Value>,
    /// Why it did not.
    #[serde(default)]
    pub description: Option<String>,
    /// The error code (HTTP-like).
    #[serde(default)]
    pub error_code: Option<i64>,
    /// Hints: how long to wait on 429.
    #[serde(default)]
    pub parameters: Option<ResponseParameters>,
}

/// Hints that come with an error.
#[derive(Debug, Default, Deserialize)]
pub struct ResponseParameters {
    /// Seconds to wait before retrying (429).
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// The group became a supergroup with this id.
    #[serde(default)]
    pub migrate_to_chat_id: Option<i64>,
}

/// A user or bot.
#[derive(Debug, Clone, Deserialize)]
pub struct User {
    /// Its id.
    pub id: i64,
    /// Whether it is a bot.
    #[serde(default)]
    pub is_bot: bool,
    /// First name.
    #[serde(default)]
    pub first_name: String,
    /// `@user name`, without the `@`.
    #[serde(default)]
    pub username: Option<String>,
}

/// A chat.
#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    /// Its id (negative for groups).
    pub id: i64,
}

#[derive(Debug, Deserialize)]
struct Entity {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    offset: usize,
}

#[derive(Debug, Deserialize)]
struct PhotoSize {
    file_id: String,
    #[serde(default)]
    file_size: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct FileInfo {
    file_id: String,
    #[serde(default)]
    file_name: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    file_size: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    from: Option<User>,
    chat: Chat,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    caption: Option<String>,
    #[serde(default)]
    entities: Vec<Entity>,
    #[serde(default)]
    photo: Vec<PhotoSize>,
    #[serde(default)]
    document: Option<FileInfo>,
    #[serde(default)]
    audio: Option<FileInfo>,
    #[serde(default)]
    voice: Option<FileInfo>,
    #[serde(default)]
    video: Option<FileInfo>,
    #[serde(default)]
    video_note: Option<FileInfo>,
    #[serde(default)]
    animation: Option<FileInfo>,
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    id: String,
    from: User,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    message: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Update {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    callback_query: Option<CallbackQuery>,
}

/// `getFile`'s answer.
#[derive(Debug, Deserialize)]
pub struct File {
    /// Path for the download URL.
    #[serde(default)]
    pub file_path: Option<String>,
    /// Size, when known.
    #[serde(default)]
    pub file_size: Option<u64>,
}

/// A sent message (only its id is read).
#[derive(Debug, Deserialize)]
pub struct SentMessage {
    /// Its id.
    pub message_id: i64,
}

/// Reads one update. `None` when it has no `update_id` (it cannot even be acknowledged);
/// otherwise a [`Received`] whose `inbound` is `None` when the update is not for the bot
/// (another bot's command, a bot's message, an unreadable or unknown update).
///
/// ```
/// use serde_json::json;
/// use tackle_channels::InboundKind;
/// use tackle_channels::telegram::wire::parse_update;
/// let u = json!({"update_id": 7, "message": {"message_id": 1, "date": 0, "chat": {"id": -5, "type": "group"},
///     "from": {"id": 42, "is_bot": false, "first_name": "Ada"}, "text": "/new@tackle_bot please",
///     "entities": [{"type": "bot_command", "offset": 0, "length": 15}]}});
/// let r = parse_update(&u, Some("tackle_bot")).unwrap();
/// let inbound = r.inbound.unwrap();
/// assert_eq!((inbound.chat.0.as_str(), inbound.user.0.as_str()), ("-5", "42"));
/// assert_eq!(inbound.kind, InboundKind::Command { name: "new".into(), args: "please".into() });
/// assert!(parse_update(&u, Some("other_bot")).unwrap().inbound.is_none());
/// ```
pub fn parse_update(value: &Value, bot_username: Option<&str>) -> Option<Received> {
    let update_id = value.get("update_id")?.as_i64()?;
    let inbound = match Update::deserialize(value) {
        Ok(update) => to_inbound(update, bot_username),
        Err(e) => {
            tracing::warn!(update_id, error = %e, "a Telegram update could not be read; it is skipped");
            None
        }
    };
    Some(Received { update_id, inbound })
}

fn to_inbound(update: Update, bot_username: Option<&str>) -> Option<Inbound> {
    if let Some(q) = update.callback_query {
        let chat = q
            .message
            .as_ref()
            .and_then(|m| m.get("chat"))
            .and_then(|c| c.get("id"))
            .and_then(Value::as_i64)
            .unwrap_or(q.from.id);
        let kind = match q.data.as_deref().and_then(parse_answer_data) {
            Some((elicitation_id, step, code)) => {
                InboundKind::Answer { elicitation_id, step, code, callback_id: q.id }
            }
            None => {
                let (approval_id, approve) = q
                    .data
                    .as_deref()
                    .and_then(|d| d.strip_prefix(DECISION_PREFIX))
                    .and_then(|d| d.rsplit_once(':'))
                    .map(|(id, yn)| (ApprovalId::from(id), yn == "y"))
                    .unwrap_or_default();
                InboundKind::Decision { approval_id, approve, callback_id: q.id }
            }
        };
        return Some(Inbound {
            chat: ChatId(chat.to_string()),
            user: UserId(q.from.id.to_string()),
            user_name: display_name(&q.from),
            kind,
        });
    }
    let message = update.message?;
    let from = message.from.as_ref()?;
    if from.is_bot {
        return None;
    }
    let attachments = attachments(&message);
    let text = message.text.clone().or_else(|| message.caption.clone()).unwrap_or_default();
    let kind = if attachments.is_empty() && text.starts_with('/') && is_command(&message) {
        let (head, args) = text.split_once(char::is_whitespace).unwrap_or((&text, ""));
        let head = &head[1..];
        let (name, target) = head.split_once('@').unwrap_or((head, ""));
        if !target.is_empty() && bot_username.is_some_and(|b| !b.eq_ignore_ascii_case(target)) {
            return None;
        }
        InboundKind::Command { name: name.to_ascii_lowercase(), args: args.trim().to_owned() }
    } else if text.trim().is_empty() && attachments.is_empty() {
        InboundKind::Unsupported { what: unsupported_kind(&message) }
    } else {
        InboundKind::Message { text, attachments }
    };
    Some(Inbound {
        chat: ChatId(message.chat.id.to_string()),
        user: UserId(from.id.to_string()),
        user_name: display_name(from),
        kind,
    })
}

/// A command is text starting with `/` marked as a bot command at offset 0 (clients always mark
/// it); a message without entities that starts with `/` counts too.
fn is_command(message: &Message) -> bool {
    message.entities.is_empty() || message.entities.iter().any(|e| e.kind == "bot_command" && e.offset == 0)
}

fn display_name(user: &User) -> Option<String> {
    if !user.first_name.is_empty() {
        return Some(user.first_name.clone());
    }
    user.username.clone()
}

fn attachments(m: &Message) -> Vec<Attachment> {
    let mut out = Vec::new();
    // Photos come in several sizes, the largest last.
    if let Some(p) = m.photo.last() {
        out.push(Attachment {
            kind: "photo".into(),
            file_id: p.file_id.clone(),
            name: None,
            mime: Some("image/jpeg".into()),
            size: p.file_size,
        });
    }
    for (kind, file) in [
        ("document", &m.document),
        ("audio", &m.audio),
        ("voice", &m.voice),
        ("video", &m.video),
        ("video_note", &m.video_note),
        ("animation", &m.animation),
    ] {
        if let Some(f) = file {
            out.push(Attachment {
                kind: kind.into(),
                file_id: f.file_id.clone(),
                name: f.file_name.clone(),
                mime: f.mime_type.clone(),
                size: f.file_size,
            });
        }
    }
    out
}

fn unsupported_kind(_m: &Message) -> String {
    "this kind of message (stickers, locations, polls and the like)".into()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(extra: Value) -> Value {
        let mut m = json!({"message_id": 3, "date": 1, "chat": {"id": 9, "type": "private"},
            "from": {"id": 9, "is_bot": false, "first_name": "Bo"}});
        if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
            m.extend(extra.clone());
        }
        json!({"update_id": 100, "message": m})
    }

    #[test]
    fn text_photos_documents_and_callbacks() {
        let r = parse_update(&message(json!({"text": "hi <b>"})), None).unwrap();
        assert_eq!(r.update_id, 100);
        assert_eq!(
            r.inbound.unwrap().kind,
            InboundKind::Message { text: "hi <b>".into(), attachments: vec![] }
        );

        let photo = message(json!({"caption": "look", "photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
            {"file_id": "big", "file_unique_id": "b", "width": 900, "height": 900, "file_size": 5000}]}));
        let InboundKind::Message { text, attachments } =
            parse_update(&photo, None).unwrap().inbound.unwrap().kind
        else {
            panic!()
        };
        assert_eq!(text, "look");
        assert_eq!(attachments[0].file_id, "big");
        assert_eq!(attachments[0].size, Some(5000));

        let doc = message(
            json!({"document": {"file_id": "d", "file_unique_id": "u", "file_name": "r.pdf", "mime_type": "application/pdf"}}),
        );
        let InboundKind::Message { text, attachments } =
            parse_update(&doc, None).unwrap().inbound.unwrap().kind
        else {
            panic!()
        };
        assert_eq!(text, "");
        assert_eq!(attachments[0].name.as_deref(), Some("r.pdf"));

        let cb = json!({"update_id": 5, "callback_query": {"id": "cb1", "chat_instance": "x",
            "from": {"id": 9, "is_bot": false, "first_name": "Bo"},
            "message": {"message_id": 4, "date": 1, "chat": {"id": -77, "type": "group"}}, "data": "ap:0190-ab:y"}});
        let inbound = parse_update(&cb, None).unwrap().inbound.unwrap();
        assert_eq!(inbound.chat.0, "-77");
        assert_eq!(
            inbound.kind,
            InboundKind::Decision { approval_id: "0190-ab".into(), approve: true, callback_id: "cb1".into() }
        );

        let id = "019ac0de-7a1b-7c3d-8e4f-0123456789ab";
        let data = answer_data(id, 12, "c10");
        assert!(data.len() <= 64, "{data}");
        let mut pressed = cb.clone();
        pressed["callback_query"]["data"] = json!(data);
        assert_eq!(
            parse_update(&pressed, None).unwrap().inbound.unwrap().kind,
            InboundKind::Answer {
                elicitation_id: id.into(),
                step: 12,
                code: "c10".into(),
                callback_id: "cb1".into()
            }
        );
        pressed["callback_query"]["data"] = json!("el:x:notanumber:c1");
        assert!(matches!(
            parse_update(&pressed, None).unwrap().inbound.unwrap().kind,
            InboundKind::Decision { .. }
        ));
    }

    #[test]
    fn what_is_not_for_the_bot_is_acknowledged_and_dropped() {
        let bot = message(json!({"text": "hello", "from": {"id": 1, "is_bot": true, "first_name": "B"}}));
        assert!(parse_update(&bot, None).unwrap().inbound.is_none());
        let edited = json!({"update_id": 8, "edited_message": {"message_id": 1}});
        assert!(parse_update(&edited, None).unwrap().inbound.is_none());
        let broken = json!({"update_id": 9, "message": {"chat": "not an object"}});
        assert_eq!(parse_update(&broken, None).unwrap().update_id, 9, "skipped, not a stall");
        assert!(parse_update(&json!({"message": {}}), None).is_none());
        let sticker = message(json!({"sticker": {"file_id": "s"}}));
        assert!(matches!(
            parse_update(&sticker, None).unwrap().inbound.unwrap().kind,
            InboundKind::Unsupported { .. }
        ));
        let path = message(
            json!({"text": "/usr/bin is a path", "entities": [{"type": "url", "offset": 0, "length": 4}]}),
        );
        assert!(matches!(
            parse_update(&path, None).unwrap().inbound.unwrap().kind,
            InboundKind::Message { .. }
        ));
    }
}
