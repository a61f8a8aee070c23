//! Approval requests of Codex's own tools (shell commands, file changes, extra permissions),
//! decided by Tackle's hook policy and approver.
//!
//! Codex's own tools are off unless `[codex] builtin_tools` is set. When they are on, each of
//! them is a tool of Tackle's hook policy under a `codex_` name, so `[[hooks]]` rules apply to
//! them like to any other tool:
//!
//! | Codex request                          | tool name           | annotations              |
//! |----------------------------------------|---------------------|--------------------------|
//! | `item/commandExecution/requestApproval`, `execCommandApproval` | `codex_exec` | destructive, open world |
//! | `item/fileChange/requestApproval`, `applyPatchApproval`        | `codex_apply_patch` | destructive |
//! | `item/permissions/requestApproval`     | `codex_permissions` | destructive, open world  |
//!
//! `deny` declines; `confirm` asks the approver; `log` and `silent` accept.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Value, json};
use tackle_protocol::{ToolAnnotations, ToolSpec};
use tackle_tools::{ApprovalRequest, Approver, HookAction, HookPolicy};

use crate::connection::ServerRequest;
use crate::rpc;
use crate::wire::{
    ApprovalDecision, ApprovalResponse, ElicitationAction, ElicitationResponse, PermissionGrantScope,
    PermissionsResponse, ReviewDecision, ReviewResponse, ServerRequestMethod, UserInputResponse,
};

/// One of Codex's own tools asking to run.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeToolRequest {
    /// Tool name under which the hook policy sees it (`codex_exec`, ...).
    pub tool: &'static str,
    /// Codex's item id (the call id of approval records).
    pub item_id: String,
    /// What it wants to do (command, cwd, reason, ...), as Codex sent it.
    pub args: Value,
}

impl NativeToolRequest {
    /// The tool as the hook policy sees it.
    pub fn spec(&self) -> ToolSpec {
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: self.tool != "codex_apply_patch",
            ..ToolAnnotations::default()
        };
        ToolSpec::new(self.tool, "one of Codex's own tools", json!({"type": "object"}))
            .with_annotations(annotations)
    }
}

/// Decides whether one of Codex's own tools may run.
#[async_trait]
pub trait CodexApprovals: Send + Sync {
    /// True to let it run.
    async fn allow(&self, request: &NativeToolRequest) -> bool;
}

/// Declines every request of Codex's own tools (the default: Tackle's tools replace them).
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyNativeTools;

#[async_trait]
impl CodexApprovals for DenyNativeTools {
    async fn allow(&self, request: &NativeToolRequest) -> bool {
        tracing::info!(tool = request.tool, "declined a request of Codex's own tools");
        false
    }
}

/// Tackle's hook policy and approver, for one session.
#[derive(Clone)]
pub struct HookApprovals {
    policy: HookPolicy,
    approver: Arc<dyn Approver>,
    session_id: String,
}

impl HookApprovals {
    /// Decisions of `policy`, asking `approver` on `confirm`, recorded for `session_id`.
    pub fn new(policy: HookPolicy, approver: Arc<dyn Approver>, session_id: impl Into<String>) -> Self {
        Self { policy, approver, session_id: session_id.into() }
    }
}

#[async_trait]
impl CodexApprovals for HookApprovals {
    async fn allow(&self, request: &NativeToolRequest) -> bool {
        let decision = self.policy.decide(&request.spec());
        match decision.action {
            HookAction::Deny => false,
            HookAction::Silent => true,
            HookAction::Log => {
                tracing::info!(session = %self.session_id, tool = request.tool, item = %request.item_id, "Codex's own tool runs");
                true
            }
            HookAction::Confirm => {
                let id = uuid::Uuid::now_v7().to_string();
                let asked = ApprovalRequest {
                    id: id.into(),
                    session_id: self.session_id.clone().into(),
                    call_id: request.item_id.clone().into(),
                    tool: request.tool.to_owned(),
                    args: request.args.clone(),
                    rule: decision.rule,
                };
                self.approver.decide(asked).await.approved
            }
        }
    }
}

/// The native tool a request asks about, if it is an approval request.
pub(crate) fn native_request(method: ServerRequestMethod, params: &Value) -> Option<NativeToolRequest> {
    use ServerRequestMethod as M;
    let tool = match method {
        M::CommandExecutionApproval | M::ExecCommandApproval => "codex_exec",
        M::FileChangeApproval | M::ApplyPatchApproval => "codex_apply_patch",
        M::PermissionsApproval => "codex_permissions",
        M::ToolRequestUserInput | M::McpServerElicitation | M::CurrentTimeRead => return None,
    };
    let item_id = params
        .get("itemId")
        .or_else(|| params.get("callId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut args = params.clone();
    if let Some(map) = args.as_object_mut() {
        for key in ["threadId", "turnId", "conversationId", "startedAtMs"] {
            map.remove(key);
        }
    }
    Some(NativeToolRequest { tool, item_id, args })
}

/// The answer to an approval request, in the shape its method's schema gives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Decision {
    /// The second protocol's commands and file changes.
    Approval(ApprovalResponse),
    /// The first protocol's commands and patches.
    Review(ReviewResponse),
    /// Extra permissions.
    Permissions(PermissionsResponse),
}

/// The answer to approval request `method` with `params`: allowed or not.
pub(crate) fn decision(method: ServerRequestMethod, params: &Value, allow: bool) -> Decision {
    use ServerRequestMethod as M;
    match method {
        M::ExecCommandApproval | M::ApplyPatchApproval => Decision::Review(ReviewResponse {
            decision: if allow {
                ReviewDecision::Approved
            } else {
                ReviewDecision::Denied { rejection: "declined by Tackle's hook policy".into() }
            },
        }),
        M::PermissionsApproval => {
            let asked = params.get("permissions").filter(|_| allow).cloned();
            Decision::Permissions(PermissionsResponse {
                permissions: asked.unwrap_or_else(|| Value::Object(Default::default())),
                scope: PermissionGrantScope::Turn,
            })
        }
        _ => Decision::Approval(ApprovalResponse {
            decision: if allow { ApprovalDecision::Accept } else { ApprovalDecision::Decline },
        }),
    }
}

/// Answers the requests a thread gets besides tool calls: approvals by `approvals`, questions
/// to the user with no answer, MCP elicitations declined, anything else refused.
pub(crate) async fn answer(request: ServerRequest, approvals: &dyn CodexApprovals) {
    let method = request.method.clone();
    let known = ServerRequestMethod::parse(&method);
    let result = match known {
        Some(m) => match native_request(m, &request.params) {
            Some(native) => {
                let allow = approvals.allow(&native).await;
                let answer = decision(m, &request.params, allow);
                request.answer(&answer)
            }
            // Nobody sits at Codex's side of the conversation: no answers.
            None if m == ServerRequestMethod::ToolRequestUserInput => {
                request.answer(&UserInputResponse::default())
            }
            None if m == ServerRequestMethod::McpServerElicitation => {
                request.answer(&ElicitationResponse { action: ElicitationAction::Decline, content: None })
            }
            None => unhandled(request),
        },
        None => unhandled(request),
    };
    if let Err(e) = result {
        tracing::debug!(%method, error = %e, "could not answer an app-server request");
    }
}

/// Refuses a request Tackle does not answer (never leaves it waiting).
pub(crate) fn unhandled(request: ServerRequest) -> Result<(), crate::CodexError> {
    tracing::warn!(method = %request.method, "codex app-server asked for something Tackle does not provide");
    let message = format!("Tackle does not handle {}", request.method);
    request.reject(rpc::METHOD_NOT_FOUND, &message)
}

#[cfg(test)]
mod tests {
    use tackle_tools::{ApprovalMode, AutoApprove, DenyAll, HookRule};

    use super::*;

    fn exec() -> NativeToolRequest {
        native_request(
            ServerRequestMethod::CommandExecutionApproval,
            &json!({"threadId": "t", "turnId": "u", "itemId": "call-1", "command": "rm -rf build", "startedAtMs": 1}),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn hook_rules_decide_codex_tools_like_any_other() {
        let request = exec();
        assert_eq!(request.tool, "codex_exec");
        assert_eq!(request.args, json!({"itemId": "call-1", "command": "rm -rf build"}));
        let deny =
            HookPolicy::new(vec![HookRule::tools("codex_*", HookAction::Deny)], ApprovalMode::Headless)
                .unwrap();
        assert!(!HookApprovals::new(deny, Arc::new(AutoApprove), "s").allow(&request).await);
        let silent =
            HookPolicy::new(vec![HookRule::tools("codex_exec", HookAction::Silent)], ApprovalMode::Headless)
                .unwrap();
        assert!(HookApprovals::new(silent, Arc::new(DenyAll::new("no")), "s").allow(&request).await);
        // No rule: destructive, so the approver decides.
        let defaults = HookPolicy::defaults(ApprovalMode::Headless);
        assert!(HookApprovals::new(defaults.clone(), Arc::new(AutoApprove), "s").allow(&request).await);
        assert!(!HookApprovals::new(defaults, Arc::new(DenyAll::new("no")), "s").allow(&request).await);
        assert!(!DenyNativeTools.allow(&request).await);
    }

    #[test]
    fn answers_have_each_methods_shape() {
        use ServerRequestMethod as M;
        let json = |d: Decision| serde_json::to_value(d).unwrap();
        assert_eq!(
            json(decision(M::CommandExecutionApproval, &json!({}), false)),
            json!({"decision": "decline"})
        );
        assert_eq!(json(decision(M::FileChangeApproval, &json!({}), true)), json!({"decision": "accept"}));
        assert_eq!(json(decision(M::ExecCommandApproval, &json!({}), true)), json!({"decision": "approved"}));
        assert_eq!(
            json(decision(M::ApplyPatchApproval, &json!({}), false))["decision"]["denied"]["rejection"],
            "declined by Tackle's hook policy"
        );
        let asked = json!({"permissions": {"network": {"enabled": true}}});
        assert_eq!(
            json(decision(M::PermissionsApproval, &asked, true)),
            json!({"permissions": {"network": {"enabled": true}}, "scope": "turn"})
        );
        assert_eq!(json(decision(M::PermissionsApproval, &asked, false))["permissions"], json!({}));
        assert_eq!(M::parse("item/tool/call"), None, "answered by the thread, not here");
        for m in M::ALL {
            assert_eq!(M::parse(m.as_str()), Some(m));
            let is_approval =
                !matches!(m, M::ToolRequestUserInput | M::McpServerElicitation | M::CurrentTimeRead);
            assert_eq!(native_request(m, &json!({})).is_some(), is_approval, "{m:?}");
        }
        // Every shape is what the pinned binary's schema expects.
        use crate::wire::tests::check;
        for allow in [true, false] {
            check(
                "CommandExecutionRequestApprovalResponse",
                &decision(M::CommandExecutionApproval, &asked, allow),
            );
            check("FileChangeRequestApprovalResponse", &decision(M::FileChangeApproval, &asked, allow));
            check("ExecCommandApprovalResponse", &decision(M::ExecCommandApproval, &asked, allow));
            check("ApplyPatchApprovalResponse", &decision(M::ApplyPatchApproval, &asked, allow));
            check("PermissionsRequestApprovalResponse", &decision(M::PermissionsApproval, &json!({}), allow));
            check("PermissionsRequestApprovalResponse", &decision(M::PermissionsApproval, &asked, allow));
        }
        check("ToolRequestUserInputResponse", &UserInputResponse::default());
        check(
            "McpServerElicitationRequestResponse",
            &ElicitationResponse { action: ElicitationAction::Decline, content: None },
        );
        check(
            "CurrentTimeReadResponse",
            &crate::wire::CurrentTimeReadResponse { current_time_at: 1_700_000_000 },
        );
    }
}
