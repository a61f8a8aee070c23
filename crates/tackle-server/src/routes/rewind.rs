//! Going back: `POST /v1/sessions/{id}/rewind` (the workspace's files and/or the conversation to
//! before a turn, with a dry run that previews it) and `POST /v1/sessions/{id}/fork`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tackle_agent::{ForkOptions, RewindOptions};
use utoipa::ToSchema;

use crate::auth::User;
use crate::extract::ValidPath;
use crate::json::ValidJson;
use crate::routes::sessions::SessionView;
use crate::{ApiError, AppState, ErrorBody};

/// `POST /v1/sessions/{id}/rewind` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RewindRequest {
    /// Go back to before this turn (`GET /v1/sessions/{id}/turns` lists them).
    #[schema(value_type = i64, minimum = 1, maximum = 4294967295_u64)]
    #[serde(deserialize_with = "whole")]
    pub turn: u32,
    /// Restore the workspace's files from the turn's checkpoint (default true).
    pub files: Option<bool>,
    /// Rewind the conversation (default true; later messages stay stored, hidden).
    pub conversation: Option<bool>,
    /// Only say what would change (default false).
    pub dry_run: Option<bool>,
}

/// One path a rewind changes.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileChangeView {
    /// Relative to the workspace.
    pub path: String,
    /// `create`, `modify`, `delete`, `mode` or `unrestorable`.
    pub change: String,
}

/// What a rewind changes (`dryRun`) or changed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindResult {
    /// The turn the session went back to before.
    pub turn: i64,
    /// Whether anything was changed (false for a dry run).
    pub applied: bool,
    /// The files that change, when files are rewound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileChangeView>>,
    /// Paths that could not be restored, with why.
    pub leftovers: Vec<Vec<String>>,
    /// Messages in the conversation before and after, when it is rewound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages_before: Option<i64>,
    /// Messages after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages_after: Option<i64>,
    /// The user's message of the turn, to send again or edit.
    pub prompt: String,
}

/// `POST /v1/sessions/{id}/fork` body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkRequest {
    /// The last turn the fork keeps (default: all of them).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295_u64)]
    #[serde(default, deserialize_with = "crate::json::optional_integer")]
    pub turn: Option<u32>,
    /// Title (default: "fork of ..."): up to 200 characters, no control characters.
    #[schema(max_length = 200, pattern = r"^[^\x00-\x1f\x7f-\x9f]*$")]
    pub title: Option<String>,
}

/// One turn of a session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnView {
    /// Turn number.
    pub turn: i64,
    /// The user's message.
    pub prompt: String,
    /// Still in the conversation (not rewound or compacted away).
    pub in_conversation: bool,
    /// The workspace was recorded before it (files can be rewound to it).
    pub checkpoint: bool,
    /// When it started, Unix milliseconds.
    pub created_at: i64,
}

/// `GET /v1/sessions/{id}/turns` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnList {
    /// The session's turns, oldest first.
    pub turns: Vec<TurnView>,
}

/// A required integer spelled `3` or `3.0`, as JSON Schema allows.
fn whole<'de, D: serde::Deserializer<'de>>(de: D) -> Result<u32, D::Error> {
    use serde::de::Error;
    crate::json::optional_integer(de)?.ok_or_else(|| D::Error::custom("expected an integer, got null"))
}

/// A turn the session does not have (yet), or files that were not recorded, conflict with the
/// session's state (409); 404 stays for a session that is not there.
fn rewind_error(e: tackle_agent::AgentError) -> ApiError {
    match e {
        tackle_agent::AgentError::Rewind(m) => ApiError::from_status(StatusCode::CONFLICT, m),
        tackle_agent::AgentError::Checkpoint(c @ tackle_checkpoint::CheckpointError::NoCheckpoint { .. }) => {
            ApiError::from_status(StatusCode::CONFLICT, c.to_string())
        }
        other => other.into(),
    }
}

/// A session's turns: the user's message of each, and whether its files can be rewound.
#[utoipa::path(get, path = "/v1/sessions/{id}/turns", tag = "sessions", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = TurnList), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn turns(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<TurnList>, ApiError> {
    state.owned_session(&id, &user).await?;
    let store = state.agent().store();
    let recorded: Vec<i64> = store.checkpoints().list(&id).await?.into_iter().map(|c| c.turn).collect();
    let turns = store
        .sessions()
        .turns(&id)
        .await?
        .into_iter()
        .filter(|t| t.turn > 0)
        .map(|t| TurnView {
            turn: t.turn,
            checkpoint: recorded.contains(&t.turn),
            prompt: t.prompt,
            in_conversation: !t.hidden,
            created_at: t.created_at,
        })
        .collect();
    Ok(Json(TurnList { turns }))
}

/// Rewinds a session to before a turn: the workspace's files as the turn's checkpoint recorded
/// them (whatever changed them since: tools or shell commands), and/or the conversation. With
/// `dryRun`, only says what would change. Refused (409) while a turn runs.
#[utoipa::path(post, path = "/v1/sessions/{id}/rewind", tag = "sessions", request_body = RewindRequest,
    params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = RewindResult), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn rewind(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    ValidJson(body): ValidJson<RewindRequest>,
) -> Result<Json<RewindResult>, ApiError> {
    state.owned_session(&id, &user).await?;
    let options =
        RewindOptions { files: body.files.unwrap_or(true), conversation: body.conversation.unwrap_or(true) };
    let agent = state.agent();
    let checkpoints = agent.checkpoints().map(|c| &**c);
    // Holding the session's busy mark keeps a turn from starting meanwhile.
    let guard = state.start_turn(&id).await?;
    let done = if body.dry_run.unwrap_or(false) {
        tackle_agent::rewind_preview(agent.store(), checkpoints, &id, i64::from(body.turn), options).await
    } else {
        tackle_agent::rewind(agent.store(), checkpoints, &id, i64::from(body.turn), options).await
    };
    let base = guard.event_base();
    guard.finish(base).await;
    let report = done.map_err(rewind_error)?;
    Ok(Json(RewindResult {
        turn: report.turn,
        applied: report.applied,
        files: report.files.map(|plan| {
            plan.changes
                .into_iter()
                .map(|c| FileChangeView {
                    path: c.path,
                    change: serde_json::to_value(c.change)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                })
                .collect()
        }),
        leftovers: report.leftovers.into_iter().map(|(p, w)| vec![p, w]).collect(),
        messages_before: report.messages.map(|m| m.0 as i64),
        messages_after: report.messages.map(|m| m.1 as i64),
        prompt: report.prompt,
    }))
}

/// Forks a session: a new session (the caller's) with the conversation up to a turn, in the same
/// workspace; the original is untouched.
#[utoipa::path(post, path = "/v1/sessions/{id}/fork", tag = "sessions", request_body = ForkRequest,
    params(("id" = String, Path, description = "Session id")),
    responses((status = 201, body = SessionView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn fork(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    ValidJson(body): ValidJson<ForkRequest>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    state.owned_session(&id, &user).await?;
    if let Some(title) = &body.title
        && (title.chars().count() > 200 || title.chars().any(char::is_control))
    {
        return Err(ApiError::invalid_field(
            "title",
            "a title is at most 200 characters, without control characters",
        ));
    }
    let agent = state.agent();
    let options = ForkOptions {
        turn: body.turn.map(i64::from),
        files: None,
        title: body.title.filter(|t| !t.trim().is_empty()),
    };
    let done = tackle_agent::fork(agent.store(), agent.checkpoints().map(|c| &**c), &id, options)
        .await
        .map_err(rewind_error)?;
    let record = agent.store().sessions().get(&done.session_id).await?;
    let mut view = SessionView::from(record);
    view.mode = Some(agent.session_mode(&done.session_id).await?.into());
    Ok((StatusCode::CREATED, Json(view)))
}
