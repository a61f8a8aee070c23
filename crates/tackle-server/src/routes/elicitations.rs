//! Questions MCP servers ask (elicitation): list a session's pending questions, answer one.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_tools::ElicitationAnswer;
use tackle_tools::elicitation::{apply_defaults, validate_form};
use utoipa::ToSchema;

use crate::auth::User;
use crate::extract::ValidPath;
use crate::json::ValidJson;
use crate::{ApiError, AppState, ErrorBody};

/// A question waiting for a person: a form to fill in, or a page to visit.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationView {
    /// Elicitation id (`POST /v1/elicitations/{id}`).
    pub id: String,
    /// Session id.
    pub session_id: String,
    /// The asking tool call.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// The MCP server that asks.
    pub server: String,
    /// The server's question.
    pub message: String,
    /// `form` or `url`.
    pub mode: String,
    /// The form: a JSON Schema object of primitive fields (`mode: form`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The page to open (`mode: url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `GET /v1/sessions/{id}/elicitations` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ElicitationList {
    /// Pending questions, oldest first.
    pub elicitations: Vec<ElicitationView>,
}

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerAction {
    /// Give the answer (`content` for a form; for a page: the person visited it).
    Accept,
    /// Do not answer; the tool goes on without it.
    Decline,
    /// Stop the operation.
    Cancel,
}

/// `POST /v1/elicitations/{id}` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Accept, decline or cancel.
    pub action: AnswerAction,
    /// The filled-in form, for `accept` of a form; fields left out get their defaults.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, Value>>,
}

/// `POST /v1/elicitations/{id}` response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    /// Elicitation id.
    pub id: String,
    /// The answer's action.
    pub action: AnswerAction,
}

fn view(q: tackle_store::StoredElicitation) -> ElicitationView {
    ElicitationView {
        id: q.id,
        session_id: q.session_id,
        call_id: q.call_id,
        tool: q.tool,
        server: q.server,
        message: q.message,
        mode: q.mode,
        schema: q.schema,
        url: q.url,
    }
}

/// Pending questions MCP servers asked in the session's running turn.
#[utoipa::path(get, path = "/v1/sessions/{id}/elicitations", tag = "elicitations", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = ElicitationList), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<ElicitationList>, ApiError> {
    state.owned_session(&id, &user).await?;
    // Those waiting here, then those waiting on other instances on the same database.
    let mut questions: Vec<ElicitationView> = state
        .inner
        .elicitations
        .pending(Some(&id))
        .iter()
        .map(|r| view(crate::elicitations::stored(r)))
        .collect();
    for q in state.agent().store().elicitations().pending(&id).await? {
        if !questions.iter().any(|v| v.id == q.id) {
            questions.push(view(q));
        }
    }
    Ok(Json(ElicitationList { elicitations: questions }))
}

/// Answers a pending question. The call waiting on it goes on at once.
#[utoipa::path(post, path = "/v1/elicitations/{id}", tag = "elicitations", request_body = Answer,
    params(("id" = String, Path, description = "Elicitation id (from an `elicitation_requested` event)")),
    responses((status = 200, body = Answered), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn answer(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    ValidJson(body): ValidJson<Answer>,
) -> Result<Json<Answered>, ApiError> {
    let store = state.agent().store();
    let local = state.inner.elicitations.get(&id).map(|r| crate::elicitations::stored(&r));
    let question = match local {
        Some(q) => q,
        // Waiting on another instance on the same database, perhaps.
        None => {
            let session = store
                .elicitations()
                .session_of(&id)
                .await?
                .ok_or_else(|| ApiError::not_found("pending question", &id))?;
            store
                .elicitations()
                .pending(&session)
                .await?
                .into_iter()
                .find(|q| q.id == id)
                .ok_or_else(|| ApiError::not_found("pending question", &id))?
        }
    };
    // Another user's question is as invisible as a missing one.
    state
        .owned_session(&question.session_id, &user)
        .await
        .map_err(|_| ApiError::not_found("pending question", &id))?;
    let answer = match body.action {
        AnswerAction::Decline => ElicitationAnswer::decline("the user declined to answer"),
        AnswerAction::Cancel => ElicitationAnswer::Cancel,
        AnswerAction::Accept => {
            let content = Value::Object(body.content.unwrap_or_default());
            let content = match &question.schema {
                Some(schema) => {
                    let content = apply_defaults(schema, content);
                    validate_form(schema, &content).map_err(|problem| {
                        ApiError::invalid_field(
                            "content",
                            format!("the answer does not fit the form: {problem}"),
                        )
                    })?;
                    content
                }
                None => Value::Object(Default::default()),
            };
            ElicitationAnswer::Accept { content }
        }
    };
    let answered = match state.inner.elicitations.answer(&id, answer.clone()) {
        Ok(()) => true,
        // The instance whose turn waits picks the answer up from the store.
        Err(_) => {
            store.elicitations().answer(&id, &serde_json::to_value(&answer).unwrap_or(Value::Null)).await?
        }
    };
    if !answered {
        return Err(ApiError::not_found("pending question", &id));
    }
    Ok(Json(Answered { id, action: body.action }))
}
