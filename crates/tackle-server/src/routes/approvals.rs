//! Confirmations: list a session's pending approvals, approve or deny one.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::User;
use crate::extract::ValidPath;
use crate::json::ValidJson;
use crate::{ApiError, AppState, ErrorBody};

/// A tool call waiting for a person's decision.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    /// Approval id (`POST /v1/approvals/{id}`).
    pub id: String,
    /// Session id.
    pub session_id: String,
    /// Tool call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments of the call.
    pub args: Value,
    /// The hook rule that asked for confirmation.
    pub rule: String,
}

/// `GET /v1/sessions/{id}/approvals` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalList {
    /// Pending approvals, oldest first.
    pub approvals: Vec<ApprovalView>,
}

/// `POST /v1/approvals/{id}` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    /// Run the call (`true`) or refuse it (`false`).
    pub approve: bool,
    /// Why; the model sees it when the call is refused.
    pub reason: Option<String>,
}

/// `POST /v1/approvals/{id}` response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    /// Approval id.
    pub id: String,
    /// The decision.
    pub approved: bool,
}

/// Pending confirmations of a session, and of the sessions its sub-agents run in (each names
/// its `sessionId`): a sub-agent's calls are confirmed where its parent's are.
#[utoipa::path(get, path = "/v1/sessions/{id}/approvals", tag = "approvals", params(("id" = String, Path, description = "Session id")),
    responses((status = 200, body = ApprovalList), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
) -> Result<Json<ApprovalList>, ApiError> {
    state.owned_session(&id, &user).await?;
    let mut approvals: Vec<ApprovalView> = Vec::new();
    for session in with_sub_agents(&state, &id).await? {
        // Those waiting here, then those waiting on other instances on the same database.
        approvals.extend(state.inner.approvals.pending(Some(&session)).into_iter().map(|r| ApprovalView {
            id: r.id.into(),
            session_id: r.session_id.into(),
            call_id: r.call_id.into(),
            tool: r.tool,
            args: r.args,
            rule: r.rule,
        }));
        for r in state.agent().store().approvals().pending(&session).await? {
            if !approvals.iter().any(|a| a.id == r.id) {
                approvals.push(ApprovalView {
                    id: r.id,
                    session_id: r.session_id,
                    call_id: r.call_id,
                    tool: r.tool,
                    args: r.args,
                    rule: r.rule,
                });
            }
        }
    }
    Ok(Json(ApprovalList { approvals }))
}

/// Session `id` and the sessions its sub-agents ran in, nested (at most ten levels).
async fn with_sub_agents(state: &AppState, id: &str) -> Result<Vec<String>, ApiError> {
    let store = state.agent().store();
    let mut all = vec![id.to_owned()];
    let mut level = vec![id.to_owned()];
    for _ in 0..10 {
        let mut next = Vec::new();
        for session in &level {
            next.extend(store.sessions().children(session).await?.into_iter().map(|c| c.id));
        }
        if next.is_empty() {
            break;
        }
        all.extend(next.iter().cloned());
        level = next;
    }
    Ok(all)
}

/// Approves or denies a pending confirmation. The turn waiting on it goes on at once.
#[utoipa::path(post, path = "/v1/approvals/{id}", tag = "approvals", request_body = Decide,
    params(("id" = String, Path, description = "Approval id (from an `approval_requested` event)")),
    responses((status = 200, body = Decided), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn decide(
    State(state): State<AppState>,
    User(user): User,
    ValidPath(id): ValidPath<String>,
    ValidJson(body): ValidJson<Decide>,
) -> Result<Json<Decided>, ApiError> {
    let store = state.agent().store();
    let local = state.inner.approvals.get(&id).map(|r| r.session_id.to_string());
    let session = match local {
        Some(session) => session,
        // Waiting on another instance on the same database, perhaps.
        None => store
            .approvals()
            .session_of(&id)
            .await?
            .ok_or_else(|| ApiError::not_found("pending approval", &id))?,
    };
    // Another user's approval is as invisible as a missing one.
    state.owned_session(&session, &user).await.map_err(|_| ApiError::not_found("pending approval", &id))?;
    let reason = body.reason.or_else(|| (!body.approve).then(|| "denied by the user".to_owned()));
    let decided = match state.inner.approvals.resolve(&id, body.approve, reason.clone()) {
        Ok(()) => true,
        // The instance whose turn waits picks the decision up from the store.
        Err(_) => store.approvals().decide(&id, body.approve, reason.as_deref()).await?,
    };
    if !decided {
        return Err(ApiError::not_found("pending approval", &id));
    }
    Ok(Json(Decided { id, approved: body.approve }))
}
