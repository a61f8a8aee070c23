//! [`ClientApprovals`]: confirmations and questions of a turn asked of the MCP client that
//! started it, through elicitation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, ProtocolVersion};
use rmcp::service::ElicitationMode;
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tackle_protocol::SessionId;
use tackle_tools::{
    ApprovalDecision, ApprovalRequest, Approver, ElicitationAnswer, ElicitationKind, ElicitationRequest,
    Elicitor,
};

/// The approver (and elicitor) of an agent served over MCP: a turn whose client declared the
/// elicitation capability is [registered](ClientApprovals::register) under its session while
/// it runs, and each confirmation it needs becomes an `elicitation/create` form sent to that
/// client. A session nobody registered is denied (the server sets a turn policy for those,
/// so this is a last resort, never a silent approval).
#[derive(Clone, Default)]
pub struct ClientApprovals {
    clients: Arc<Mutex<HashMap<SessionId, Peer<RoleServer>>>>,
}

/// Unregisters its session when dropped (the turn ended, however it ended).
pub(crate) struct Registration {
    approvals: ClientApprovals,
    session: SessionId,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.approvals.lock().remove(&self.session);
    }
}

impl ClientApprovals {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Peer<RoleServer>>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks `client` what session `session`'s turns need confirmed until the guard is dropped.
    pub(crate) fn register(&self, session: SessionId, client: Peer<RoleServer>) -> Registration {
        self.lock().insert(session.clone(), client);
        Registration { approvals: self.clone(), session }
    }

    fn client(&self, session: &SessionId) -> Option<Peer<RoleServer>> {
        self.lock().get(session).cloned()
    }
}

/// Whether the client of a request can be asked to fill in a form: it declared the
/// elicitation capability (form mode) and speaks a protocol that lets servers send it requests
/// (2026-07-28 forbids them; such clients get the configured policy instead).
pub(crate) fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    let legacy = ctx.protocol_version().is_some_and(|v| v < ProtocolVersion::V_2026_07_28);
    let form = ctx
        .client_capabilities()
        .and_then(|c| c.elicitation)
        // No mode named means form (the 2025-06-18 shape).
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    legacy && form
}

/// The form of a confirmation: one switch, on by default, so the client's "accept" approves and
/// its "decline" denies.
fn approval_form() -> Result<ElicitationSchema, serde_json::Error> {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve",
                "description": "Let Tackle run this call",
                "default": true
            }
        },
        "required": ["approve"]
    }))
}

/// What the person is asked: the tool, its arguments (shortened) and the rule that asked.
fn approval_message(request: &ApprovalRequest) -> String {
    const MAX_ARGS: usize = 2000;
    let mut args = request.args.to_string();
    if args.len() > MAX_ARGS {
        let mut end = MAX_ARGS;
        while !args.is_char_boundary(end) {
            end -= 1;
        }
        args.truncate(end);
        args.push('…');
    }
    format!(
        "Tackle (session {}) wants to run `{}` with {args}; it needs your confirmation ({}). Approve?",
        request.session_id, request.tool, request.rule
    )
}

#[async_trait]
impl Approver for ClientApprovals {
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let Some(client) = self.client(&request.session_id) else {
            return ApprovalDecision::deny(
                "nobody can confirm calls of this session: no MCP client that answers questions runs it",
            );
        };
        let form = match approval_form() {
            Ok(form) => form,
            Err(e) => return ApprovalDecision::deny(format!("the confirmation form cannot be built: {e}")),
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: approval_message(&request),
            requested_schema: form,
        };
        match client.create_elicitation(params).await {
            Ok(result) => match result.action {
                ElicitationAction::Accept => {
                    let approved = result
                        .content
                        .as_ref()
                        .and_then(|c| c.get("approve"))
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    if approved {
                        ApprovalDecision::approve()
                    } else {
                        ApprovalDecision::deny("the user did not approve it in the MCP client")
                    }
                }
                ElicitationAction::Decline => {
                    ApprovalDecision::deny("the user declined it in the MCP client")
                }
                // Cancel, or an action of a later protocol: not an approval.
                _ => ApprovalDecision::deny("the user dismissed the confirmation in the MCP client"),
            },
            Err(e) => ApprovalDecision::deny(format!("the MCP client could not ask the user: {e}")),
        }
    }
}

#[async_trait]
impl Elicitor for ClientApprovals {
    /// A question one of the agent's own MCP servers asks, passed on to the client.
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let Some(client) = self.client(&request.session_id) else {
            return ElicitationAnswer::decline(
                "the MCP server asked the user a question, and the MCP client running this session cannot answer questions",
            );
        };
        let message = format!("{} (asked by the MCP server `{}`)", request.message, request.server);
        let params = match request.kind {
            ElicitationKind::Form { schema } => match serde_json::from_value::<ElicitationSchema>(schema) {
                Ok(requested_schema) => {
                    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }
                }
                Err(e) => {
                    return ElicitationAnswer::decline(format!("the server's form cannot be passed on: {e}"));
                }
            },
            ElicitationKind::Url { url } => {
                if !client.supported_elicitation_modes().contains(&ElicitationMode::Url) {
                    return ElicitationAnswer::decline(
                        "the MCP server asked the user to open a page, and the MCP client cannot show pages",
                    );
                }
                ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message,
                    url,
                    elicitation_id: request.id.to_string(),
                }
            }
        };
        match client.create_elicitation(params).await {
            Ok(result) => match result.action {
                ElicitationAction::Accept => {
                    ElicitationAnswer::Accept { content: result.content.unwrap_or_else(|| json!({})) }
                }
                ElicitationAction::Decline => {
                    ElicitationAnswer::decline("the user declined in the MCP client")
                }
                _ => ElicitationAnswer::Cancel,
            },
            Err(e) => ElicitationAnswer::decline(format!("the MCP client could not ask the user: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approval_form_is_an_elicitation_schema_with_one_switch() {
        let form = serde_json::to_value(approval_form().unwrap()).unwrap();
        assert_eq!(form["type"], "object");
        assert_eq!(form["properties"]["approve"]["type"], "boolean");
        assert_eq!(form["properties"]["approve"]["default"], true);
        assert_eq!(form["required"], json!(["approve"]));
    }

    #[test]
    fn the_question_names_the_call_and_stays_short() {
        let request = ApprovalRequest {
            id: tackle_protocol::ApprovalId::new("a1"),
            session_id: SessionId::new("s1"),
            call_id: tackle_protocol::ToolCallId::new("c1"),
            tool: "write_file".into(),
            args: json!({"path": "out.txt", "content": "é".repeat(5000)}),
            rule: "default for destructive tools".into(),
        };
        let message = approval_message(&request);
        assert!(message.contains("`write_file`") && message.contains("out.txt"), "{message}");
        assert!(message.contains("default for destructive tools"));
        assert!(message.len() < 2300, "{} bytes", message.len());
    }
}
