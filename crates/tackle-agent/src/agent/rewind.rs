//! Rewind and fork: going back to before a turn (files, conversation, or both), and branching a
//! new session off a turn. Free functions over the store and the checkpoints, so front ends that
//! hold no provider (`tackle rewind`) use them as the agent does.

use std::path::{Path, PathBuf};

use serde::Serialize;
use tackle_checkpoint::{Checkpoints, RestorePlan};
use tackle_store::{NewSession, SessionRecord, SessionStatus, Store};

use crate::AgentError;

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindOptions {
    /// The workspace's files (from the turn's checkpoint).
    pub files: bool,
    /// The conversation.
    pub conversation: bool,
}

impl Default for RewindOptions {
    fn default() -> Self {
        Self { files: true, conversation: true }
    }
}

/// What a rewind changes (before it is made) or changed.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RewindReport {
    /// The turn the session goes back to before.
    pub turn: i64,
    /// The files that change, when files are rewound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<RestorePlan>,
    /// Paths that could not be made as recorded (after a rewind), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leftovers: Vec<(String, String)>,
    /// Messages of the conversation now, and after the rewind, when the conversation is
    /// rewound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<(usize, usize)>,
    /// The user's message of the turn, to send again or edit.
    pub prompt: String,
    /// Whether the changes were made (false for a preview).
    pub applied: bool,
}

/// Refuses a session that runs a turn (a turn whose process is gone reads as interrupted, not
/// running). Callers that hold the session themselves (the server's busy mark) skip it.
pub async fn ensure_idle(store: &Store, session_id: &str) -> Result<(), AgentError> {
    if store.sessions().get(session_id).await?.status == SessionStatus::Running {
        return Err(AgentError::Rewind(format!(
            "session {session_id} is running a turn; cancel it or wait for it to end, then rewind"
        )));
    }
    Ok(())
}

async fn checked(store: &Store, session_id: &str, turn: i64) -> Result<(SessionRecord, String), AgentError> {
    let record = store.sessions().get(session_id).await?;
    let turns = store.sessions().turns(session_id).await?;
    let Some(summary) = turns.iter().find(|t| t.turn == turn) else {
        let known: Vec<String> = turns.iter().filter(|t| t.turn > 0).map(|t| t.turn.to_string()).collect();
        return Err(AgentError::Rewind(format!(
            "session {session_id} has no turn {turn}; its turns are {}",
            if known.is_empty() { "none yet".to_owned() } else { known.join(", ") }
        )));
    };
    Ok((record, summary.prompt.clone()))
}

/// What rewinding `session_id` to before `turn` would change; nothing is touched.
pub async fn rewind_preview(
    store: &Store,
    checkpoints: Option<&Checkpoints>,
    session_id: &str,
    turn: i64,
    options: RewindOptions,
) -> Result<RewindReport, AgentError> {
    let (record, prompt) = checked(store, session_id, turn).await?;
    let files = match (options.files, checkpoints) {
        (false, _) => None,
        (true, Some(c)) => Some(c.preview(session_id, turn, Path::new(&record.workspace)).await?),
        (true, None) => return Err(no_checkpoints()),
    };
    let messages = if options.conversation {
        let now = store.messages().load_context(session_id).await?.messages().len();
        let first = store.sessions().first_seq_of_turn(session_id, turn).await?;
        Some((now, store.sessions().conversation_before(session_id, first).await?.len()))
    } else {
        None
    };
    Ok(RewindReport { turn, files, leftovers: Vec::new(), messages, prompt, applied: false })
}

/// Rewinds `session_id` to before `turn`: the workspace's files as the turn's checkpoint
/// recorded them (shell writes included), and/or the conversation as it was (the later
/// messages stay stored, hidden: a later rewind may go back to them). The caller makes sure no
/// turn runs meanwhile ([`ensure_idle`], or holding the session as a server does).
pub async fn rewind(
    store: &Store,
    checkpoints: Option<&Checkpoints>,
    session_id: &str,
    turn: i64,
    options: RewindOptions,
) -> Result<RewindReport, AgentError> {
    let (record, prompt) = checked(store, session_id, turn).await?;
    let mut report =
        RewindReport { turn, files: None, leftovers: Vec::new(), messages: None, prompt, applied: true };
    if options.files {
        let checkpoints = checkpoints.ok_or_else(no_checkpoints)?;
        let restored = checkpoints.restore(session_id, turn, Path::new(&record.workspace)).await?;
        report.files = Some(restored.plan);
        report.leftovers = restored.leftovers;
    }
    if options.conversation {
        let done = store.sessions().rewind(session_id, turn).await?;
        report.messages = Some((done.messages_before, done.messages_after));
        report.prompt = done.prompt;
    }
    Ok(report)
}

fn no_checkpoints() -> AgentError {
    AgentError::Rewind(
        "checkpoints are off, so files cannot be rewound; rewind the conversation only, or turn \
         [checkpoints] enabled on for later turns"
            .to_owned(),
    )
}

/// How to fork a session.
#[derive(Debug, Clone, Default)]
pub struct ForkOptions {
    /// The last turn the fork keeps (default: every turn).
    pub turn: Option<i64>,
    /// Give the fork its own copy of the workspace, as it was after that turn, in this
    /// (new or empty) directory; without it the fork works in the same workspace.
    pub files: Option<PathBuf>,
    /// Title (default: "fork of <title>").
    pub title: Option<String>,
}

/// What a fork made.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ForkReport {
    /// The new session.
    pub session_id: String,
    /// The last turn it kept.
    pub turn: i64,
    /// Its workspace.
    pub workspace: String,
    /// Files written into its own workspace, when it got a copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
}

/// A new session with the history of `session_id` up to `turn` (and, optionally, a copy of its
/// workspace as it was then). The original session and its files are only read.
pub async fn fork(
    store: &Store,
    checkpoints: Option<&Checkpoints>,
    session_id: &str,
    options: ForkOptions,
) -> Result<ForkReport, AgentError> {
    let source = store.sessions().get(session_id).await?;
    let turns = store.sessions().turns(session_id).await?;
    let last = turns.iter().map(|t| t.turn).max().unwrap_or(0);
    let turn = options.turn.unwrap_or(last);
    if options.turn.is_some() && !turns.iter().any(|t| t.turn == turn) {
        let known: Vec<String> = turns.iter().map(|t| t.turn.to_string()).collect();
        return Err(AgentError::Rewind(format!(
            "session {session_id} has no turn {turn}; its turns are {}",
            if known.is_empty() { "none yet".to_owned() } else { known.join(", ") }
        )));
    }
    // The conversation through `turn`: everything before the next turn's first message.
    let next = turns.iter().filter(|t| t.turn > turn).map(|t| t.first_seq).min();
    let workspace = match &options.files {
        Some(dir) => {
            if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
                return Err(AgentError::Rewind(format!(
                    "{} is not an empty directory; choose a new or empty one for the fork's files",
                    dir.display()
                )));
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| AgentError::Rewind(format!("cannot create {}: {e}", dir.display())))?;
            crate::agent::canonical_workspace(dir)?
        }
        None => PathBuf::from(&source.workspace),
    };
    let title = options.title.unwrap_or_else(|| {
        if source.title.is_empty() { "fork".to_owned() } else { format!("fork of {}", source.title) }
    });
    let record = store
        .sessions()
        .fork(
            session_id,
            NewSession {
                owner: source.owner.clone(),
                title,
                provider: source.provider.clone(),
                model: source.model.clone(),
                workspace: workspace.display().to_string(),
                metadata: serde_json::json!({"forked_from": session_id, "fork_turn": turn}),
            },
            next,
        )
        .await?;
    store.checkpoints().copy(session_id, &record.id, turn).await?;
    let mut files = None;
    if options.files.is_some() {
        let checkpoints = checkpoints.ok_or_else(no_checkpoints)?;
        // The workspace after `turn` is the checkpoint before the next turn; after the last turn
        // it is the workspace now, recorded as the fork's checkpoint before its next turn.
        let (from, at) = match store.checkpoints().get(session_id, turn + 1).await? {
            Some(_) => (session_id.to_owned(), turn + 1),
            None if next.is_some() => {
                return Err(AgentError::Rewind(format!(
                    "turn {} of session {session_id} has no checkpoint, so the files after turn {turn} are unknown",
                    turn + 1
                )));
            }
            None => {
                checkpoints.record(&record.id, turn + 1, Path::new(&source.workspace)).await?;
                (record.id.to_string(), turn + 1)
            }
        };
        let written = checkpoints.materialize(&from, at, &workspace).await?;
        files = Some(written.plan.changes.len());
    }
    Ok(ForkReport {
        session_id: record.id.to_string(),
        turn,
        workspace: workspace.display().to_string(),
        files,
    })
}
