//! Claude Code's hook protocol, without IO: the JSON a hook reads on its standard input, the
//! JSON it may print, and what its exit code and output mean.
//!
//! - Input: `session_id`, `cwd`, `permission_mode`, `hook_event_name`, then the event's fields
//!   (`tool_name`, `tool_input`, `tool_use_id`, `tool_response`, `prompt`, `stop_hook_active`,
//!   `source`, `reason`, `trigger`, `message`, ...).
//! - Exit 0: success; standard output is read as JSON when it is a JSON object, else as text
//!   (context for the model on `UserPromptSubmit` and `SessionStart`, shown in verbose mode
//!   otherwise).
//! - Exit 2: a blocking error; standard error says why (to the model, or to the user for
//!   `UserPromptSubmit`).
//! - Any other exit code: a non-blocking error; standard error is shown, the turn goes on.
//! - JSON: `continue` (false stops the turn, `stopReason` says why), `systemMessage` (shown to
//!   the user), `suppressOutput`, `decision: "block"` + `reason`, and
//!   `hookSpecificOutput` with `permissionDecision` (`allow`, `deny`, `ask`),
//!   `permissionDecisionReason`, `updatedInput`, `additionalContext`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::HookEvent;
use crate::PermissionMode;

/// The fields every hook receives.
#[derive(Debug, Clone, Copy)]
pub struct HookScope<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The workspace (the hook's working directory).
    pub cwd: &'a Path,
    /// The session's permission mode.
    pub mode: PermissionMode,
}

/// The event-specific part of a hook's input.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum HookPayload {
    /// `PreToolUse`.
    PreToolUse {
        /// The tool.
        tool_name: String,
        /// Its arguments.
        tool_input: Value,
        /// The call id.
        tool_use_id: String,
    },
    /// `PostToolUse`.
    PostToolUse {
        /// The tool.
        tool_name: String,
        /// Its arguments (as run, after any `updatedInput`).
        tool_input: Value,
        /// What it returned: its structured data when it has some, else `{"output": text}`.
        tool_response: Value,
        /// The call id.
        tool_use_id: String,
    },
    /// `UserPromptSubmit`.
    UserPromptSubmit {
        /// The user's message.
        prompt: String,
    },
    /// `Stop`.
    Stop {
        /// True when the turn already went on because a Stop hook asked (check it to avoid
        /// keeping the model going forever).
        stop_hook_active: bool,
        /// The model's last answer.
        last_assistant_message: String,
    },
    /// `SessionStart`.
    SessionStart {
        /// `startup` (a new session) or `resume`.
        source: String,
        /// The model.
        model: String,
    },
    /// `SessionEnd`.
    SessionEnd {
        /// `clear`, `prompt_input_exit` (the user left) or `other`.
        reason: String,
    },
    /// `PreCompact`.
    PreCompact {
        /// `auto` (the window filled up) or `manual` (a command or the model asked).
        trigger: String,
        /// Instructions given with a manual compaction (empty).
        custom_instructions: String,
    },
    /// `Notification`.
    Notification {
        /// What Tackle needs.
        message: String,
        /// `permission_prompt`.
        notification_type: String,
    },
}

impl HookPayload {
    /// The event this payload belongs to.
    pub fn event(&self) -> HookEvent {
        match self {
            Self::PreToolUse { .. } => HookEvent::PreToolUse,
            Self::PostToolUse { .. } => HookEvent::PostToolUse,
            Self::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            Self::Stop { .. } => HookEvent::Stop,
            Self::SessionStart { .. } => HookEvent::SessionStart,
            Self::SessionEnd { .. } => HookEvent::SessionEnd,
            Self::PreCompact { .. } => HookEvent::PreCompact,
            Self::Notification { .. } => HookEvent::Notification,
        }
    }

    /// The value a non-tool event's `matcher` is matched against.
    pub fn match_value(&self) -> Option<&str> {
        match self {
            Self::SessionStart { source, .. } => Some(source),
            Self::SessionEnd { reason } => Some(reason),
            Self::PreCompact { trigger, .. } => Some(trigger),
            Self::Notification { notification_type, .. } => Some(notification_type),
            _ => None,
        }
    }

    /// The whole input JSON of a hook.
    ///
    /// ```
    /// use std::path::Path;
    /// use serde_json::json;
    /// use tackle_tools::{HookPayload, HookScope, PermissionMode};
    /// let scope = HookScope { session_id: "s1", cwd: Path::new("/ws"), mode: PermissionMode::AcceptEdits };
    /// let payload = HookPayload::UserPromptSubmit { prompt: "hi".into() };
    /// assert_eq!(payload.input(&scope), json!({
    ///     "session_id": "s1", "cwd": "/ws", "permission_mode": "acceptEdits",
    ///     "hook_event_name": "UserPromptSubmit", "prompt": "hi"
    /// }));
    /// ```
    pub fn input(&self, scope: &HookScope<'_>) -> Value {
        let mut input = serde_json::json!({
            "session_id": scope.session_id,
            "cwd": scope.cwd.display().to_string(),
            "permission_mode": scope.mode.claude_name(),
            "hook_event_name": self.event().as_str(),
        });
        if let (Some(map), Ok(Value::Object(fields))) = (input.as_object_mut(), serde_json::to_value(self)) {
            map.extend(fields);
        }
        input
    }
}

/// What a hook process did: its exit code (`None` when it timed out or could not start) and
/// its output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookReply {
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Why there is no exit code (`timed out after 60s`, `cannot start: ...`).
    pub failure: Option<String>,
}

impl HookReply {
    /// Exit 0 with this standard output (for in-process hooks).
    pub fn ok(stdout: impl Into<String>) -> Self {
        Self { exit_code: Some(0), stdout: stdout.into(), ..Self::default() }
    }

    /// Exit 0 printing `json`.
    pub fn json(json: Value) -> Self {
        Self::ok(json.to_string())
    }

    /// Exit 2 with this standard error: a blocking error.
    pub fn block(stderr: impl Into<String>) -> Self {
        Self { exit_code: Some(2), stderr: stderr.into(), ..Self::default() }
    }
}

/// The JSON a hook may print on success (unknown fields are ignored, as Claude Code does).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookJsonOutput {
    /// False stops the turn after the hook (its `stopReason` is shown).
    #[serde(rename = "continue")]
    pub continue_: Option<bool>,
    /// Why the turn stops.
    pub stop_reason: Option<String>,
    /// Hide the standard output from verbose display.
    pub suppress_output: Option<bool>,
    /// A message for the user.
    pub system_message: Option<String>,
    /// `block` (PostToolUse, Stop, UserPromptSubmit; PreToolUse's older form, with `approve`).
    pub decision: Option<String>,
    /// Why (shown to the model for PostToolUse and Stop, to the user for UserPromptSubmit).
    pub reason: Option<String>,
    /// Event-specific fields.
    pub hook_specific_output: Option<HookSpecificOutput>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    /// The event it answers (informational).
    pub hook_event_name: Option<String>,
    /// PreToolUse: `allow`, `deny` or `ask`.
    pub permission_decision: Option<String>,
    /// Why (to the model for `deny`, to the user for `ask`).
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: the arguments to run the tool with instead.
    pub updated_input: Option<Value>,
    /// Text added to the model's context.
    pub additional_context: Option<String>,
}

/// A permission decision of a PreToolUse hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// Run without asking (deny rules still apply).
    Allow(Option<String>),
    /// Refuse; the reason goes to the model.
    Deny(String),
    /// Ask the user; the reason is shown with the question.
    Ask(Option<String>),
}

/// What one hook run decided, read from its exit code and output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookVerdict {
    /// Exit code 2, or `decision: "block"` / `permissionDecision: "deny"`: why.
    pub block: Option<String>,
    /// A non-blocking error: what to show.
    pub error: Option<String>,
    /// `continue: false`: why the turn stops.
    pub stop: Option<String>,
    /// PreToolUse's permission decision.
    pub permission: Option<Permission>,
    /// PreToolUse's replacement arguments.
    pub updated_input: Option<Value>,
    /// Context for the model (`additionalContext`, or plain standard output where Claude Code
    /// adds it).
    pub context: Option<String>,
    /// `systemMessage`.
    pub system_message: Option<String>,
    /// Standard output to show in verbose mode (`None` when suppressed or empty).
    pub output: Option<String>,
}

impl HookVerdict {
    /// `ok`, `blocked` or `error`, as the `hook_finished` event says.
    pub fn outcome(&self) -> &'static str {
        if self.block.is_some() {
            "blocked"
        } else if self.error.is_some() {
            "error"
        } else {
            "ok"
        }
    }
}

/// Reads a hook's reply for `event`.
///
/// ```
/// use serde_json::json;
/// use tackle_tools::{HookEvent, HookReply, Permission, interpret};
/// let deny = interpret(HookEvent::PreToolUse, &HookReply::json(json!({
///     "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
///                            "permissionDecisionReason": "not on main"}})));
/// assert_eq!(deny.permission, Some(Permission::Deny("not on main".into())));
/// let blocked = interpret(HookEvent::PreToolUse, &HookReply::block("rm -rf is not allowed"));
/// assert_eq!(blocked.block.as_deref(), Some("rm -rf is not allowed"));
/// let context = interpret(HookEvent::UserPromptSubmit, &HookReply::ok("today is Tuesday\n"));
/// assert_eq!(context.context.as_deref(), Some("today is Tuesday"));
/// ```
pub fn interpret(event: HookEvent, reply: &HookReply) -> HookVerdict {
    let mut verdict = HookVerdict::default();
    let stderr = reply.stderr.trim();
    let code = match reply.exit_code {
        Some(code) => code,
        None => {
            let why = reply.failure.clone().unwrap_or_else(|| "the hook did not finish".to_owned());
            verdict.error = Some(if stderr.is_empty() { why } else { format!("{why}: {stderr}") });
            return verdict;
        }
    };
    if code == 2 {
        let why = if stderr.is_empty() {
            format!("blocked by a {event} hook (exit code 2, no reason given)")
        } else {
            stderr.to_owned()
        };
        if event == HookEvent::PreToolUse {
            verdict.permission = Some(Permission::Deny(why.clone()));
        }
        verdict.block = Some(why);
        return verdict;
    }
    if code != 0 {
        verdict.error = Some(if stderr.is_empty() {
            format!("the {event} hook exited with code {code}")
        } else {
            format!("exit code {code}: {stderr}")
        });
        return verdict;
    }
    let stdout = reply.stdout.trim();
    let json =
        if stdout.starts_with('{') { serde_json::from_str::<HookJsonOutput>(stdout).ok() } else { None };
    let Some(json) = json else {
        if !stdout.is_empty() {
            verdict.output = Some(stdout.to_owned());
            // Claude Code adds the plain output of these two to the model's context.
            if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) {
                verdict.context = Some(stdout.to_owned());
            }
        }
        return verdict;
    };
    if json.suppress_output != Some(true) && !stdout.is_empty() {
        verdict.output = Some(stdout.to_owned());
    }
    verdict.system_message = json.system_message.clone().filter(|m| !m.trim().is_empty());
    if json.continue_ == Some(false) {
        verdict.stop =
            Some(json.stop_reason.clone().unwrap_or_else(|| format!("a {event} hook stopped the turn")));
    }
    let specific = json.hook_specific_output.clone().unwrap_or_default();
    verdict.context = specific.additional_context.clone().filter(|c| !c.trim().is_empty());
    let reason = json.reason.clone().filter(|r| !r.trim().is_empty());
    match json.decision.as_deref() {
        Some("block") => {
            verdict.block = Some(reason.clone().unwrap_or_else(|| format!("blocked by a {event} hook")));
        }
        // PreToolUse's older form.
        Some("approve") if event == HookEvent::PreToolUse => {
            verdict.permission = Some(Permission::Allow(reason))
        }
        _ => {}
    }
    if event == HookEvent::PreToolUse {
        let why = specific.permission_decision_reason.clone().filter(|r| !r.trim().is_empty());
        match specific.permission_decision.as_deref() {
            Some("allow") => verdict.permission = Some(Permission::Allow(why)),
            Some("ask") => verdict.permission = Some(Permission::Ask(why)),
            Some("deny") => {
                let why = why.unwrap_or_else(|| "denied by a PreToolUse hook".to_owned());
                verdict.permission = Some(Permission::Deny(why.clone()));
                verdict.block = Some(why);
            }
            _ => {}
        }
        if verdict.block.is_some() && !matches!(verdict.permission, Some(Permission::Deny(_))) {
            let why = verdict.block.clone().unwrap_or_default();
            verdict.permission = Some(Permission::Deny(why));
        }
        verdict.updated_input = specific.updated_input.filter(Value::is_object);
    }
    verdict
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn exit_codes() {
        let error = interpret(
            HookEvent::PostToolUse,
            &HookReply { exit_code: Some(1), stderr: "oops".into(), ..Default::default() },
        );
        assert_eq!((error.outcome(), error.error.as_deref()), ("error", Some("exit code 1: oops")));
        let timeout = interpret(
            HookEvent::Stop,
            &HookReply { failure: Some("timed out after 1s".into()), ..Default::default() },
        );
        assert_eq!(timeout.outcome(), "error");
        let quiet_block = interpret(HookEvent::Stop, &HookReply::block(""));
        assert!(quiet_block.block.unwrap().contains("exit code 2"));
        let pre = interpret(HookEvent::PreToolUse, &HookReply::block("no"));
        assert_eq!(pre.permission, Some(Permission::Deny("no".into())), "exit code 2 denies the call");
        let text = interpret(HookEvent::PostToolUse, &HookReply::ok("formatted 3 files"));
        assert_eq!((text.output.as_deref(), text.context), (Some("formatted 3 files"), None));
    }

    #[test]
    fn json_fields() {
        let v = interpret(
            HookEvent::PreToolUse,
            &HookReply::json(json!({
                "continue": false, "stopReason": "budget spent", "systemMessage": "heads up",
                "suppressOutput": true,
                "hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"},
                                       "additionalContext": "ran ls instead"}
            })),
        );
        assert_eq!(v.stop.as_deref(), Some("budget spent"));
        assert_eq!(v.system_message.as_deref(), Some("heads up"));
        assert_eq!(v.output, None);
        assert_eq!(v.permission, Some(Permission::Allow(None)));
        assert_eq!(v.updated_input, Some(json!({"command": "ls"})));
        assert_eq!(v.context.as_deref(), Some("ran ls instead"));
        let old =
            interpret(HookEvent::PreToolUse, &HookReply::json(json!({"decision": "block", "reason": "no"})));
        assert_eq!(old.permission, Some(Permission::Deny("no".into())));
        let stop = interpret(
            HookEvent::Stop,
            &HookReply::json(json!({"decision": "block", "reason": "run the tests"})),
        );
        assert_eq!(stop.block.as_deref(), Some("run the tests"));
        // Not JSON after all: plain text.
        let broken = interpret(HookEvent::SessionStart, &HookReply::ok("{not json"));
        assert_eq!(broken.context.as_deref(), Some("{not json"));
    }
}
