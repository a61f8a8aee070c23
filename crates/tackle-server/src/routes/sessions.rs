//! Session routes: create, list, show, delete, and the tools and context of a session.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::NewSessionOptions;
use tackle_protocol::ContextReport;
use tackle_store::{SessionFilter, SessionRecord, SessionSummary, SessionUpdate};
use tackle_tools::PermissionMode;
use utoipa::{IntoParams, ToSchema};

use crate::auth::User;
use crate::extract::{ValidPath, ValidQuery};
use crate::json::ValidJson;
use crate::{ApiError, AppState, ErrorBody};

/// `POST /v1/sessions` body. Every field is optional.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSession {
    /// Title; derived from the first message when omitted.
    pub title: Option<String>,
    /// Provider name; must be the server's provider when given.
    pub provider: Option<String>,
    /// Model; the server's model when omitted, else one of the models it allows.
    pub model: Option<String>,
    /// Workspace profile name, as configured on the server (`default` when omitted). Clients
    /// never send paths.
    pub workspace: Option<String>,
    /// Permission mode of the session (the server's default when omitted).
    pub mode: Option<SessionMode>,
}

/// A session's permission mode: `default` (tools that need confirmation ask), `accept-edits`
/// (file edits run without asking), `plan` (only tools that read run until the user approves
/// the model's plan, asked as an approval of `propose_plan`) or `bypass` (nothing asks; only on
/// servers whose sandbox is enforced). The document lists the modes this server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionMode {
    /// Tools that need confirmation ask.
    Default,
    /// File edits run without asking; the shell still asks.
    AcceptEdits,
    /// Only tools that read run, until a plan is approved.
    Plan,
    /// Nothing asks (sandbox enforced).
    Bypass,
}

impl From<SessionMode> for PermissionMode {
    fn from(m: SessionMode) -> Self {
        match m {
            SessionMode::Default => Self::Default,
            SessionMode::AcceptEdits => Self::AcceptEdits,
            SessionMode::Plan => Self::Plan,
            SessionMode::Bypass => Self::Bypass,
        }
    }
}

impl From<PermissionMode> for SessionMode {
    fn from(m: PermissionMode) -> Self {
        match m {
            PermissionMode::Default => Self::Default,
            PermissionMode::AcceptEdits => Self::AcceptEdits,
            PermissionMode::Plan => Self::Plan,
            PermissionMode::Bypass => Self::Bypass,
        }
    }
}

/// `PATCH /v1/sessions/{id}` body: what to change (a field omitted or null stays as it is).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateSession {
    /// New title: up to 200 characters, at least one of them not a space, no control characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub title: Option<String>,
    /// New permission mode, from the session's next turn.
    pub mode: Option<SessionMode>,
}

/// Longest title accepted, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// A session as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// Session id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// `idle`, `running`, `failed` or `archived`.
    pub status: String,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
    /// Last change, Unix milliseconds.
    pub updated_at: i64,
    /// Messages stored (lists only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_count: Option<i64>,
    /// The conversation as the model sees it (`GET /v1/sessions/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages: Option<Vec<Value>>,
    /// The permission mode (not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<SessionMode>,
}

impl From<SessionRecord> for SessionView {
    fn from(r: SessionRecord) -> Self {
        Self {
            id: r.id.into(),
            title: r.title,
            provider: r.provider,
            model: r.model,
            status: r.status.to_string(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            message_count: None,
            messages: None,
            mode: None,
        }
    }
}

impl From<SessionSummary> for SessionView {
    fn from(r: SessionSummary) -> Self {
        Self {
            id: r.id,
            title: r.title,
            provider: r.provider,
            model: r.model,
            status: r.status.to_string(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            message_count: Some(r.message_count),
            messages: None,
            mode: None,
        }
    }
}

/// `GET /v1/sessions` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    /// The caller's sessions, most recently updated first.
    pub sessions: Vec<SessionView>,
}

/// Paging of `GET /v1/sessions`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// At most this many (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// Skip this many.
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    pub offset: Option<u64>,
}

impl ListQuery {
    fn validate(&self) -> Result<(u32, u32), ApiError> {
        let limit = self.limit.unwrap_or(50);
        if !(1..=500).contains(&limit) {
            return Err(ApiError::invalid_field("limit", format!("limit is {limit}; use 1 to 500")));
        }
        let offset = self.offset.unwrap_or(0);
        if offset > i64::MAX as u64 {
            return Err(ApiError::invalid_field("offset", format!("offset {offset} is beyond 2^63-1")));
        }
        // Beyond u32 there is nothing to list anyway.
        Ok((limit, u32::try_from(offset).unwrap_or(u32::MAX)))
    }
}

/// A tool of the catalog.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    /// Name, as used in `toolMask`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// True for tools that only read.
    pub read_only: bool,
    /// True for tools that may destroy data (they ask for confirmation by default).
    pub destructive: bool,
}

/// `GET /v1/tools` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    /// Tools in catalog order: the order of every request's tool list.
    pub tools: Vec<ToolView>,
}

/// Creates a session owned by the caller.
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", request_body = CreateSession,
    responses((status = 201, body = SessionView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    User(user): User,
    ValidJson(body): ValidJson<CreateSession>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let default_agent = state.agent();
    if let Some(p) = &body.provider
        && p != default_agent.provider().name()
    {
        return Err(ApiError::invalid_field(
            "provider",
            format!(
                "this server uses provider {:?}; omit `provider` or pass that",
                default_agent.provider().name()
            ),
        ));
    }
    let model = match body.model {
        Some(m) if m == default_agent.config().model || state.config().models.contains(&m) => m,
        Some(m) => {
            let mut allowed = vec![default_agent.config().model.clone()];
            allowed.extend(state.config().models.iter().cloned());
            return Err(ApiError::invalid_field(
                "model",
                format!("model {m:?} is not offered by this server; choose one of {}", allowed.join(", ")),
            ));
        }
        None => default_agent.config().model.clone(),
    };
    let profile = body.workspace.unwrap_or_else(|| "default".to_owned());
    let Some(workspace) = state.config().workspaces.get(&profile) else {
        let names: Vec<&str> = state.config().workspaces.keys().map(String::as_str).collect();
        return Err(ApiError::invalid_field(
            "workspace",
            format!("no workspace profile {profile:?}; configured profiles: {}", names.join(", ")),
        ));
    };
    if let Some(mode) = body.mode {
        default_agent.mode_available(mode.into()).map_err(|why| {
            ApiError::invalid_field("mode", format!("mode {mode:?} is not available: {why}"))
        })?;
    }
    let agent = state.agent_for(&model);
    let session = agent
        .create_session(NewSessionOptions {
            title: body.title,
            workspace: workspace.clone(),
            owner: Some(user),
            history: Vec::new(),
        })
        .await?;
    if let Some(mode) = body.mode {
        agent.set_session_mode(session.id(), mode.into()).await?;
    }
    let mut view = SessionView::from(session.record().clone());
    view.mode = Some(agent.session_mode(session.id()).await?.into());
    Ok((StatusCode::CREATED, Json(view)))
}

/// Lists the caller's sessions.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(ListQuery),
    responses((status = 200, body = SessionList), (status = 401, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    User(user): User,
    ValidQuery(q): ValidQuery<ListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let (limit, offset) = q.validate()?;
    let sessions = state
        .agent()
        .store()
        .sessions()
        .list(SessionFilter { owner: Some(user), limit: Some(limit), offset })
        .await?;
    Ok(Json(SessionList { sessions: sessions.into_iter().map(SessionView::from).collect() }))
}

/// Shows a session with its conversation.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = SessionView), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn show(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<SessionView>, ApiError> {
    let record = state.owned_session(&id, &user).await?;
    let messages = state
        .agent()
        .history(&id)
        .await?
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mut view = SessionView::from(record);
    view.messages = Some(messages);
    view.mode = Some(state.agent().session_mode(&id).await?.into());
    Ok(Json(view))
}

/// Renames a session or changes its permission mode.
#[utoipa::path(patch, path = "/v1/sessions/{id}", tag = "sessions", request_body = UpdateSession,
    params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = SessionView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn update(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    ValidJson(body): ValidJson<UpdateSession>,
) -> Result<Json<SessionView>, ApiError> {
    let record = state.owned_session(&id, &user).await?;
    if let Some(title) = &body.title {
        // Exactly what the schema of `UpdateSession` says, so a client can check before sending.
        if title.trim().is_empty()
            || title.chars().count() > MAX_TITLE_CHARS
            || title.chars().any(char::is_control)
        {
            return Err(ApiError::invalid_field(
                "title",
                format!(
                    "a title is 1 to {MAX_TITLE_CHARS} characters on one line, without control characters"
                ),
            ));
        }
    }
    let agent = state.agent();
    if let Some(mode) = body.mode {
        agent.mode_available(mode.into()).map_err(|why| {
            ApiError::invalid_field("mode", format!("mode {mode:?} is not available: {why}"))
        })?;
        agent.set_session_mode(&id, mode.into()).await?;
    }
    let record = match body.title {
        Some(title) => {
            agent
                .store()
                .sessions()
                .update(
                    &id,
                    SessionUpdate { title: Some(title.trim().to_owned()), ..SessionUpdate::default() },
                )
                .await?
        }
        None => record,
    };
    let mut view = SessionView::from(record);
    view.mode = Some(agent.session_mode(&id).await?.into());
    Ok(Json(view))
}

/// Deletes a session and everything stored for it.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions", params(("id" = String, Path, description = "Session id")),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)), security(("bearer" = [])))]
pub async fn delete(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<StatusCode, ApiError> {
    state.owned_session(&id, &user).await?;
    // Holding the busy mark while deleting keeps a turn from starting meanwhile.
    let guard = state.start_turn(&id).await?;
    let deleted = state.agent().store().sessions().delete(&id).await;
    let base = guard.event_base();
    guard.finish(base).await;
    deleted?;
    Ok(StatusCode::NO_CONTENT)
}

/// The tool catalog: every tool a session's requests define, in order.
#[utoipa::path(get, path = "/v1/tools", tag = "sessions",
    responses((status = 200, body = ToolList)), security(("bearer" = [])))]
pub async fn tools(State(state): State<AppState>, User(_): User) -> Json<ToolList> {
    let tools = state
        .agent()
        .catalog()
        .specs()
        .iter()
        .map(|s| ToolView {
            name: s.name.clone(),
            description: s.description.clone(),
            read_only: s.annotations.read_only,
            destructive: s.annotations.destructive,
        })
        .collect();
    Json(ToolList { tools })
}

/// Context window use of the session's next request, by component.
#[utoipa::path(get, path = "/v1/sessions/{id}/context", tag = "sessions", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = ContextReport), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn context(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<ContextReport>, ApiError> {
    let record = state.owned_session(&id, &user).await?;
    let mut session = state.agent_for(&record.model).open_session(&id).await?;
    Ok(Json(session.context_report()))
}

/// `GET /v1/sessions/{id}/children`: the sessions a session's sub-agents ran in, and the
/// session and call that started this one, if any.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionFamily {
    /// The session and tool call that started this session (it is a sub-agent's), if any.
    pub parent: Option<ParentView>,
    /// The sessions this session's `agent` calls started, oldest first.
    pub children: Vec<ChildView>,
}

/// Which session and call started a session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentView {
    /// The parent session's id.
    pub session_id: String,
    /// The parent's `agent` call that started this session.
    pub call_id: String,
}

/// A sub-agent's session as its parent lists it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildView {
    /// Session id.
    pub id: String,
    /// Title (`[sub-agent] first line of the task`).
    pub title: String,
    /// Model.
    pub model: String,
    /// `idle`, `running`, `interrupted`, `failed` or `archived`.
    pub status: String,
    /// The parent's `agent` call that started it.
    pub call_id: String,
    /// Creation time, unix ms.
    pub created_at: i64,
}

/// Lists the sessions a session's sub-agents ran in (its children), with its own parent.
#[utoipa::path(get, path = "/v1/sessions/{id}/children", tag = "sessions", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = SessionFamily), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn children(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<SessionFamily>, ApiError> {
    state.owned_session(&id, &user).await?;
    let store = state.agent().store();
    let parent = store
        .sessions()
        .parent(&id)
        .await?
        .map(|p| ParentView { session_id: p.session_id, call_id: p.call_id });
    let children = store
        .sessions()
        .children(&id)
        .await?
        .into_iter()
        .map(|c| ChildView {
            id: c.id,
            title: c.title,
            model: c.model,
            status: c.status.to_string(),
            call_id: c.parent_call_id,
            created_at: c.created_at,
        })
        .collect();
    Ok(Json(SessionFamily { parent, children }))
}
