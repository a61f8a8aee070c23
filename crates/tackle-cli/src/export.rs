//! `tackle sessions export` and `tackle sessions import`: a session as Markdown to read, or as
//! JSON that imports back into the same conversation.

use serde::{Deserialize, Serialize};
use tackle_protocol::{ContentBlock, Message, Role};
use tackle_store::{MessageFilter, NewSession, SessionRecord, Store, StoredMessage};

use crate::UsageError;

/// The JSON export's format name; imports refuse anything else.
pub const FORMAT: &str = "tackle-session/1";

/// A session as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Export {
    /// [`FORMAT`].
    pub format: String,
    /// Where it came from.
    pub session: ExportedSession,
    /// Every stored message in order, compacted (hidden) ones included and flagged.
    pub messages: Vec<ExportedMessage>,
}

/// The session record's portable part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedSession {
    pub id: String,
    pub title: String,
    pub provider: String,
    pub model: String,
    pub workspace: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedMessage {
    /// Turn it belongs to (0 for history given at creation).
    pub turn: i64,
    /// Hidden from the model by compaction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    pub message: Message,
}

/// Reads a session for export.
pub async fn export(store: &Store, record: &SessionRecord) -> Result<Export, tackle_store::StoreError> {
    let messages = store.messages().load(&record.id, MessageFilter { include_hidden: true }).await?;
    Ok(Export {
        format: FORMAT.to_owned(),
        session: ExportedSession {
            id: record.id.to_string(),
            title: record.title.clone(),
            provider: record.provider.clone(),
            model: record.model.clone(),
            workspace: record.workspace.clone(),
            created_at: record.created_at,
        },
        messages: messages
            .into_iter()
            .map(|m: StoredMessage| ExportedMessage { turn: m.turn, hidden: m.hidden, message: m.message })
            .collect(),
    })
}

/// Creates a new session holding the exported messages (with their turns and hidden flags);
/// returns its id. Nothing is written when the file is not a valid export, nor when it was
/// imported before, unless `duplicate` asks for another copy.
pub async fn import(store: &Store, text: &str, duplicate: bool) -> anyhow::Result<SessionRecord> {
    let export: Export = serde_json::from_str(text).map_err(|e| {
        UsageError(format!(
            "not a Tackle session export ({e}); make one with `tackle sessions export ID --format json`"
        ))
    })?;
    if export.format != FORMAT {
        return Err(UsageError(format!(
            "unsupported export format {:?}; this tackle reads {FORMAT:?}",
            export.format
        ))
        .into());
    }
    let s = &export.session;
    if !duplicate && let Some(first) = store.sessions().imported_from(&s.id).await?.first() {
        return Err(UsageError(format!(
            "this export (session {}) was imported before, as session {first}: resume it with `tackle chat \
             --session {first}`, or pass --duplicate to import another copy",
            s.id
        ))
        .into());
    }
    let record = store
        .sessions()
        .create(NewSession {
            owner: "local".to_owned(),
            title: s.title.clone(),
            provider: s.provider.clone(),
            model: s.model.clone(),
            workspace: s.workspace.clone(),
            metadata: serde_json::json!({ "imported_from": s.id }),
        })
        .await?;
    let mut hidden = Vec::new();
    for m in &export.messages {
        let seqs = store.messages().append_all(&record.id, m.turn, std::slice::from_ref(&m.message)).await?;
        if m.hidden {
            hidden.extend(seqs);
        }
    }
    if !hidden.is_empty() {
        store.messages().hide(&record.id, &hidden).await?;
    }
    Ok(record)
}

/// The session as Markdown: who said what, tool calls with their arguments and results.
pub fn markdown(export: &Export) -> String {
    let s = &export.session;
    let mut out = format!(
        "# {}\n\nSession `{}` · {} ({}) · workspace `{}`\n",
        if s.title.is_empty() { "Untitled session" } else { &s.title },
        s.id,
        s.model,
        s.provider,
        s.workspace
    );
    for m in &export.messages {
        let who = match m.message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool",
        };
        let hidden = if m.hidden { " (compacted: no longer sent to the model)" } else { "" };
        out.push_str(&format!("\n## {who}{hidden}\n"));
        for block in &m.message.content {
            out.push('\n');
            match block {
                ContentBlock::Text { text } => {
                    out.push_str(text.trim_end());
                    out.push('\n');
                }
                ContentBlock::ToolUse(u) => {
                    let args = u
                        .input
                        .as_json()
                        .map(|v| serde_json::to_string_pretty(v).unwrap_or_default())
                        .unwrap_or_else(|| u.input.to_wire_string());
                    out.push_str(&format!("**{}** (`{}`)\n\n{}", u.name, u.id, fenced("json", &args)));
                }
                ContentBlock::ToolResult(r) => {
                    let status = if r.is_error { "error" } else { "result" };
                    out.push_str(&format!("{status} of `{}`:\n\n{}", r.tool_use_id, fenced("", &r.content)));
                }
                ContentBlock::Reasoning(_) => out.push_str("_(reasoning)_\n"),
            }
        }
    }
    out
}

/// A fenced block whose fence is longer than any backtick run inside.
fn fenced(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}
