//! [`ToolExecutor`]: lookup, argument validation, hook policy, run with timeout and
//! cancellation, output cap or offload, and the report the loop needs.

use futures::FutureExt as _;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

// tokio's clock, so a test with paused time sees the waits it skips.
use tokio::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use tackle_protocol::{
    AgentEvent, ApprovalId, ErrorCategory, ToolCallId, ToolError, ToolInput, ToolResult, ToolUse,
};

use crate::hooks::{HookAction, HookPolicy};
use crate::output_cap::{OutputCap, cap_full_output, cap_output, count_lines};
use crate::{
    ApprovalPolicy, ApprovalRequest, Approver, FullOutput, HookEvent, HookPayload, HookScope, ModeRules,
    Permission, PermissionMode, ScriptHooks, SpoolBudget, ToolContext, ToolFailure, ToolOutput, ToolRegistry,
};

/// The rule an approval of a plan names.
const PLAN_RULE: &str = "plan mode: approve this plan to switch to default mode and carry it out, or deny it saying what to change";

/// Put in the turn's [`crate::TurnState`] when a hook answered `continue: false`: the loop ends
/// the turn after the step's calls, saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStop(pub String);

/// How long a cancelled or timed-out tool gets to clean up (kill its processes) before its
/// call is dropped.
const CLEANUP_GRACE: Duration = Duration::from_secs(3);

/// Limits applied to every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecLimits {
    /// Default time limit of a call.
    pub timeout: Duration,
    /// Time limits by tool name.
    pub per_tool_timeout: HashMap<String, Duration>,
    /// Most bytes of output the model sees (head and tail kept).
    pub max_output_bytes: usize,
    /// Most lines of output the model sees.
    pub max_output_lines: usize,
    /// Largest arguments accepted, serialized.
    pub max_argument_bytes: usize,
    /// Most bytes of a call's full output kept for the offloader (see [`crate::Spool`]); what
    /// a tool produces beyond is dropped, and the model is told how much.
    pub max_spool_bytes: usize,
}

impl Default for ExecLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            per_tool_timeout: HashMap::new(),
            max_output_bytes: 16 * 1024,
            max_output_lines: 400,
            max_argument_bytes: 256 * 1024,
            max_spool_bytes: crate::DEFAULT_SPOOL_BYTES,
        }
    }
}

/// Options of one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallOptions<'a> {
    /// Tools callable in this step; `None` means every registered tool. Others get an
    /// `inactive_tool` envelope naming the callable ones.
    pub allowed: Option<&'a [String]>,
}

/// Stores large outputs outside the context and gives the model a reference instead.
#[async_trait]
pub trait OutputOffloader: Send + Sync {
    /// Outputs of `tool` larger than this many bytes are offloaded; `None` never offloads them
    /// (e.g. the tool that reads offloaded outputs back).
    fn threshold_bytes(&self, tool: &str) -> Option<usize>;

    /// Stores `output` of a call of `tool` and returns what the model sees instead.
    async fn offload(&self, ctx: &ToolContext, tool: &str, output: &str) -> Result<Offloaded, ToolFailure>;

    /// Stores the full output of a call whose tool returned only a view of it. The default reads
    /// it into memory and calls [`OutputOffloader::offload`]; offloaders that can should stream
    /// it instead ([`FullOutput::reader`]), as outputs here can be as large as the spool budget.
    async fn offload_full(
        &self,
        ctx: &ToolContext,
        tool: &str,
        full: &FullOutput,
    ) -> Result<Offloaded, ToolFailure> {
        let text = full
            .to_text()
            .map_err(|e| ToolFailure::internal(format!("could not read the spooled output: {e}")))?;
        self.offload(ctx, tool, &text).await
    }
}

/// An offloaded output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offloaded {
    /// What the model sees: a preview and how to restore the rest.
    pub reference: String,
    /// The locator that restores the full output.
    pub locator: String,
}

/// Everything about one finished call.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// Call id.
    pub call_id: ToolCallId,
    /// Tool name as called.
    pub tool: String,
    /// The tool's output, or the envelope the model sees.
    pub outcome: Result<ToolOutput, ToolError>,
    /// Exactly what the model sees.
    pub result: ToolResult,
    /// Size of the full output (or of the envelope), in bytes.
    pub bytes: u64,
    /// Lines of the full output.
    pub lines: u64,
    /// Whether the model sees a capped or offloaded version.
    pub truncated: bool,
    /// Locator of the full output when it was offloaded.
    pub locator: Option<String>,
    /// Wall time of the call, without the wait for approval (a person's thinking is not the
    /// tool's time).
    pub duration: Duration,
    /// How long the call waited for a decision on its approval (zero when none was asked).
    pub approval_wait: Duration,
}

/// The words of a denial under the approval policy `deny`: nobody was asked, because nobody
/// could answer (a front end recognizes such denials by them, to say how to allow the call).
pub const NOBODY_TO_CONFIRM: &str = "nobody can give it here (approval policy `deny`)";

/// Runs tool calls safely. Cheap to share behind an `Arc`.
pub struct ToolExecutor {
    /// Swapped whole (never edited in place) when a tool source changes at a turn boundary, so
    /// a call in flight keeps the registry it started with.
    registry: RwLock<Arc<ToolRegistry>>,
    hooks: HookPolicy,
    approver: Arc<dyn Approver>,
    limits: ExecLimits,
    offloader: Option<Arc<dyn OutputOffloader>>,
    script_hooks: ScriptHooks,
    modes: ModeRules,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field("registry", &self.registry())
            .field("limits", &self.limits)
            .finish()
    }
}

impl ToolExecutor {
    /// An executor over `registry`.
    pub fn new(
        registry: Arc<ToolRegistry>,
        hooks: HookPolicy,
        approver: Arc<dyn Approver>,
        limits: ExecLimits,
    ) -> Self {
        Self {
            registry: RwLock::new(registry),
            hooks,
            approver,
            limits,
            offloader: None,
            script_hooks: ScriptHooks::default(),
            modes: ModeRules::default(),
        }
    }

    /// Runs these script hooks around calls (`PreToolUse`, `PostToolUse`) and when a call
    /// waits for a person (`Notification`).
    pub fn with_script_hooks(mut self, hooks: ScriptHooks) -> Self {
        self.script_hooks = hooks;
        self
    }

    /// What the permission modes treat as edits and as plan-mode tools.
    pub fn with_mode_rules(mut self, modes: ModeRules) -> Self {
        self.modes = modes;
        self
    }

    /// The script hooks.
    pub fn script_hooks(&self) -> &ScriptHooks {
        &self.script_hooks
    }

    /// The mode rules.
    pub fn mode_rules(&self) -> &ModeRules {
        &self.modes
    }

    /// Offloads outputs above the offloader's threshold instead of capping them.
    pub fn with_offloader(mut self, offloader: Arc<dyn OutputOffloader>) -> Self {
        self.offloader = Some(offloader);
        self
    }

    /// The tools now.
    pub fn registry(&self) -> Arc<ToolRegistry> {
        self.registry.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the tools (a tool source changed); calls already running keep the old ones.
    pub fn replace_registry(&self, registry: ToolRegistry) {
        *self.registry.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(registry);
    }

    /// The limits.
    pub fn limits(&self) -> &ExecLimits {
        &self.limits
    }

    /// Runs one call through the whole pipeline. Never panics, whatever the tool does: every
    /// failure becomes an envelope in the report.
    pub async fn execute(&self, call: &ToolUse, ctx: ToolContext, opts: &CallOptions<'_>) -> CallReport {
        let started = Instant::now();
        let mut notes = Vec::new();
        let mut approval_wait = Duration::ZERO;
        let outcome = self.run(call, &ctx, opts, &mut notes, &mut approval_wait).await;
        let mut report = self.report(call, &ctx, outcome, started, approval_wait).await;
        if !notes.is_empty() && !report.result.is_error {
            // Hook feedback goes after whatever the model sees of the output (an offload
            // reference included).
            let text = &mut report.result.content;
            for note in notes {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&note);
            }
        }
        report
    }

    async fn run(
        &self,
        call: &ToolUse,
        ctx: &ToolContext,
        opts: &CallOptions<'_>,
        notes: &mut Vec<String>,
        approval_wait: &mut Duration,
    ) -> Result<ToolOutput, ToolError> {
        let name = call.name.as_str();
        let registry = self.registry();
        let Some(entry) = registry.entry(name) else {
            return Err(self.unknown_tool(name, opts));
        };
        // Plan mode first: its refusal says why, where the step's mask would only say "not now".
        let mode = ctx.turn.get::<PermissionMode>().unwrap_or_default();
        if mode == PermissionMode::Plan && !self.modes.runs_in_plan(entry.tool.spec()) {
            return Err(ToolError::new(
                name,
                ErrorCategory::Denied,
                format!("plan mode: `{name}` can change things, and only tools that read run until the user approves a plan"),
            )
            .with_hint("investigate with read-only tools, then call propose_plan with your plan"));
        }
        if let Some(allowed) = opts.allowed
            && !allowed.iter().any(|a| a == name)
        {
            let list = if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") };
            return Err(ToolError::new(
                name,
                ErrorCategory::InactiveTool,
                format!("`{name}` is not available in this step"),
            )
            .with_hint(format!("tools available now: {list}")));
        }
        let args = match &call.input {
            ToolInput::Json { value } => value.clone(),
            ToolInput::Invalid { raw, error } => {
                return Err(ToolError::new(
                    name,
                    ErrorCategory::InvalidArgs,
                    format!("the arguments are not valid JSON ({error}): {}", shorten(raw, 200)),
                )
                .with_hint("send the arguments as one JSON object matching the tool's schema"));
            }
        };
        let size = args.to_string().len();
        if size > self.limits.max_argument_bytes {
            return Err(ToolError::new(
                name,
                ErrorCategory::InvalidArgs,
                format!("the arguments are {size} bytes; the limit is {}", self.limits.max_argument_bytes),
            )
            .with_hint("send less data per call, e.g. write a large file in parts"));
        }
        if let Err(message) = entry.validator.validate(&args) {
            return Err(ToolError::new(name, ErrorCategory::InvalidArgs, message)
                .with_hint(format!("fix the arguments to match the schema of `{name}`")));
        }

        let spec = entry.tool.spec();
        let decision = self.hooks.decide(spec);
        if decision.action == HookAction::Deny {
            return Err(ToolError::new(name, ErrorCategory::Denied, format!("denied by {}", decision.rule))
                .with_hint("this tool is not allowed here; use another approach"));
        }
        let mut args = args;
        let mut permission = None;
        if self.script_hooks.has(HookEvent::PreToolUse) {
            let scope = HookScope { session_id: &ctx.session_id, cwd: &ctx.workspace, mode };
            let pre = self.script_hooks.pre_tool_use(spec, &call.id, &args, &scope, &ctx.events).await;
            if let Some(why) = pre.stop {
                ctx.turn.insert(HookStop(why));
            }
            notes.extend(pre.context.into_iter().map(|c| format!("[PreToolUse hook] {c}")));
            if let Some(Permission::Deny(why)) = &pre.permission {
                return Err(ToolError::new(
                    name,
                    ErrorCategory::Denied,
                    format!("a PreToolUse hook refused this call: {why}"),
                )
                .with_hint("do not retry it unchanged; follow the reason or take another approach"));
            }
            if let Some(input) = pre.input {
                if let Err(message) = entry.validator.validate(&input) {
                    return Err(ToolError::new(
                        name,
                        ErrorCategory::InvalidArgs,
                        format!("a PreToolUse hook rewrote the arguments into ones `{name}` does not accept: {message}"),
                    )
                    .with_hint("this is the hook's doing; tell the user, or call the tool differently"));
                }
                tracing::info!(tool = name, call_id = %call.id, "arguments rewritten by a PreToolUse hook");
                args = input;
            }
            permission = pre.permission;
        }
        let confirm_rule = match permission {
            Some(Permission::Allow(_)) => None,
            Some(Permission::Ask(why)) => Some(match why {
                Some(why) => format!("a PreToolUse hook asked: {why}"),
                None => "a PreToolUse hook asked for confirmation".to_owned(),
            }),
            _ if mode == PermissionMode::Plan && self.modes.is_plan_approval(name) => {
                Some(PLAN_RULE.to_owned())
            }
            _ if decision.action != HookAction::Confirm => None,
            _ if mode == PermissionMode::Bypass => None,
            _ if mode == PermissionMode::AcceptEdits && self.modes.is_edit(spec) => None,
            _ => Some(decision.rule.clone()),
        };
        if let Some(rule) = confirm_rule {
            let asked = Instant::now();
            let confirmed = self.confirm(call, ctx, &args, &rule, mode).await;
            *approval_wait = asked.elapsed();
            confirmed?;
        } else if decision.action == HookAction::Log || decision.action == HookAction::Confirm {
            tracing::info!(tool = name, call_id = %call.id, arg_bytes = size, %mode, "tool call");
        }
        let hook_args = self.script_hooks.has(HookEvent::PostToolUse).then(|| args.clone());

        let timeout = self.limits.per_tool_timeout.get(name).copied().unwrap_or(self.limits.timeout);
        let tool = entry.tool.clone();
        let mut task_ctx = ctx.clone();
        task_ctx.spool = SpoolBudget::new(self.limits.max_spool_bytes);
        // The call runs in the caller's task (a spawned task would cost two cross-thread
        // wake-ups per call when the turn is driven from outside the runtime's workers); a
        // panic is caught as a spawned task's would be.
        let call =
            std::panic::AssertUnwindSafe(async move { tool.call(args, task_ctx).await }).catch_unwind();
        let mut task = std::pin::pin!(call);
        let cancel = ctx.cancel.clone();
        let mut clock = ctx.wait_clock.subscribe();
        let began = tokio::time::Instant::now();
        let joined = loop {
            // Time spent waiting for a person (an elicitation) does not count: while the clock
            // is paused there is no deadline, and it moves by the time waited.
            let state = *clock.borrow_and_update();
            let deadline = (state.pauses == 0).then(|| began + timeout + state.waited);
            let expired = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = &mut task => break Some(r),
                _ = expired => break None,
                Ok(()) = clock.changed() => continue,
                _ = cancel.cancelled() => break None,
            }
        };
        let joined = match joined {
            Some(r) => r,
            None => {
                let timed_out = !cancel.is_cancelled();
                cancel.cancel();
                // Let the tool clean up (kill its process group) before dropping it.
                let _ = tokio::time::timeout(CLEANUP_GRACE, &mut task).await;
                return Err(if timed_out {
                    ToolError::new(
                        name,
                        ErrorCategory::Timeout,
                        format!("no result after {}s; the call was stopped", timeout.as_secs_f64()),
                    )
                    .with_hint(
                        "narrow the work (smaller input, a filter) or raise the tool timeout in tackle.toml",
                    )
                } else {
                    ToolError::new(
                        name,
                        ErrorCategory::Interrupted,
                        "the turn was cancelled while the call ran",
                    )
                });
            }
        };
        match joined {
            Ok(Ok(output)) => {
                if let Some(args) = hook_args {
                    let scope = HookScope { session_id: &ctx.session_id, cwd: &ctx.workspace, mode };
                    let response =
                        output.data.clone().unwrap_or_else(|| serde_json::json!({ "output": output.text }));
                    let post = self
                        .script_hooks
                        .post_tool_use(spec, &ctx.call_id, &args, response, &scope, &ctx.events)
                        .await;
                    if let Some(why) = post.stop {
                        ctx.turn.insert(HookStop(why));
                    }
                    notes.extend(
                        post.blocked
                            .into_iter()
                            .chain(post.context)
                            .map(|c| format!("[PostToolUse hook] {c}")),
                    );
                }
                Ok(output)
            }
            // A tool that gave up because the turn was cancelled reports its own error; the
            // model should learn that the call was interrupted.
            Ok(Err(_)) if cancel.is_cancelled() => Err(ToolError::new(
                name,
                ErrorCategory::Interrupted,
                "the turn was cancelled while the call ran",
            )),
            Ok(Err(failure)) => Err(failure.into_envelope(name)),
            Err(panic) => {
                let message = panic_message(panic);
                tracing::error!(tool = name, %message, "tool panicked");
                Err(ToolError::new(name, ErrorCategory::Internal, format!("the tool crashed: {message}"))
                    .with_hint("this is a bug in the tool; try another approach"))
            }
        }
    }

    /// Asks for confirmation as the turn's [`ApprovalPolicy`] (in its [`crate::TurnState`]) says;
    /// without one, the approver decides however long it takes (a person at a terminal, who
    /// can cancel the turn).
    async fn confirm(
        &self,
        call: &ToolUse,
        ctx: &ToolContext,
        args: &Value,
        rule: &str,
        mode: PermissionMode,
    ) -> Result<(), ToolError> {
        let policy = ctx.turn.get::<ApprovalPolicy>();
        match policy {
            Some(ApprovalPolicy::Auto) => {
                tracing::info!(tool = %call.name, call_id = %call.id, rule, "approved by the approval policy `auto`");
                return Ok(());
            }
            Some(ApprovalPolicy::Deny) => {
                return Err(ToolError::new(
                    &call.name,
                    ErrorCategory::Denied,
                    format!("this call needs a person's confirmation ({rule}) and {NOBODY_TO_CONFIRM}"),
                )
                .with_hint(
                    "do not retry it; finish the task without it, or tell the user which call to run or approve themselves",
                ));
            }
            Some(ApprovalPolicy::Wait(_)) | None => {}
        }
        let request = ApprovalRequest {
            id: ApprovalId::new(uuid::Uuid::now_v7().to_string()),
            session_id: ctx.session_id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args: args.clone(),
            rule: rule.to_owned(),
        };
        let approval_id = request.id.clone();
        if self.script_hooks.has(HookEvent::Notification) {
            let scope = HookScope { session_id: &ctx.session_id, cwd: &ctx.workspace, mode };
            let payload = HookPayload::Notification {
                message: format!("Tackle needs your permission to use {}", call.name),
                notification_type: "permission_prompt".to_owned(),
            };
            self.script_hooks.run_event(&payload, &scope, &ctx.events).await;
        }
        ctx.events.emit(AgentEvent::ApprovalRequested {
            approval_id: approval_id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args: args.clone(),
        });
        let wait = match policy {
            Some(ApprovalPolicy::Wait(timeout)) => timeout,
            _ => Duration::MAX,
        };
        let decision = tokio::select! {
            d = tokio::time::timeout(wait, self.approver.decide(request)) => d.ok(),
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::new(&call.name, ErrorCategory::Interrupted, "the turn was cancelled while waiting for approval"));
            }
        };
        let Some(decision) = decision else {
            let reason = format!("nobody decided within {wait:?}");
            ctx.events.emit(AgentEvent::ApprovalResolved {
                approval_id,
                approved: false,
                reason: Some(reason),
            });
            return Err(ToolError::new(
                &call.name,
                ErrorCategory::Denied,
                format!(
                    "this call needs a person's confirmation ({rule}) and nobody gave it within {wait:?}"
                ),
            )
            .with_hint(
                "do not retry it unchanged; finish the task without it, or ask the user to approve it",
            ));
        };
        ctx.events.emit(AgentEvent::ApprovalResolved {
            approval_id,
            approved: decision.approved,
            reason: decision.reason.clone(),
        });
        if decision.approved {
            return Ok(());
        }
        let reason = decision.reason.unwrap_or_else(|| "no reason given".into());
        if mode == PermissionMode::Plan && self.modes.is_plan_approval(&call.name) {
            return Err(ToolError::new(
                &call.name,
                ErrorCategory::Denied,
                format!("the user did not approve the plan; what they want changed: {reason}"),
            )
            .with_hint("revise the plan accordingly (investigate more if needed) and call it again with the new plan"));
        }
        Err(ToolError::new(&call.name, ErrorCategory::Denied, format!("the user denied this call: {reason}"))
            .with_hint("do not retry it unchanged; ask the user or take another approach"))
    }

    fn unknown_tool(&self, name: &str, opts: &CallOptions<'_>) -> ToolError {
        let names = self.registry().names();
        let candidates: Vec<&String> = match opts.allowed {
            Some(allowed) => names.iter().filter(|n| allowed.contains(n)).collect(),
            None => names.iter().collect(),
        };
        let mut scored: Vec<(usize, &String)> = candidates
            .iter()
            .map(|n| (edit_distance(&name.to_lowercase(), &n.to_lowercase()), *n))
            .filter(|(d, n)| *d <= (n.len() / 3).max(2) || n.contains(name) || name.contains(n.as_str()))
            .collect();
        scored.sort();
        let mut hint = format!(
            "available tools: {}",
            candidates.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        );
        if let Some((_, best)) = scored.first() {
            hint = format!("did you mean `{best}`? {hint}");
        }
        ToolError::new(name, ErrorCategory::UnknownTool, format!("there is no tool named `{name}`"))
            .with_hint(hint)
    }

    async fn report(
        &self,
        call: &ToolUse,
        ctx: &ToolContext,
        outcome: Result<ToolOutput, ToolError>,
        started: Instant,
        approval_wait: Duration,
    ) -> CallReport {
        let (result, bytes, lines, truncated, locator) = match &outcome {
            Ok(output) => {
                let view = if output.text.is_empty() { "(no output)" } else { output.text.as_str() };
                // What the tool produced, when the view is only part of it: that is what is
                // stored, counted and restored.
                let full = output.full.as_ref();
                let dropped = full.map_or(0, |f| f.dropped_bytes);
                let (stored_bytes, lines) = match full {
                    Some(f) => (f.len(), f.lines()),
                    None => (view.len() as u64, count_lines(view) as u64),
                };
                let bytes = stored_bytes + dropped;
                let mut shown = None;
                // A tool whose output is sized for the context says so; it is never offloaded.
                let sized =
                    self.registry().entry(&call.name).is_some_and(|e| e.tool.spec().annotations.sized_output);
                if let Some(off) = self.offloader.as_ref().filter(|_| !sized)
                    && off.threshold_bytes(&call.name).is_some_and(|t| stored_bytes > t as u64)
                {
                    let offloaded = match full {
                        Some(f) => off.offload_full(ctx, &call.name, f).await,
                        None => off.offload(ctx, &call.name, view).await,
                    };
                    match offloaded {
                        Ok(o) => shown = Some((o.reference, Some(o.locator))),
                        Err(e) => {
                            tracing::warn!(tool = %call.name, error = %e, "offloading failed; capping instead")
                        }
                    }
                }
                let (mut text, truncated, locator) = match shown {
                    Some((reference, locator)) => (reference, true, locator),
                    None => {
                        let cap = OutputCap {
                            max_bytes: self.limits.max_output_bytes,
                            max_lines: self.limits.max_output_lines,
                        };
                        // A view that is itself a cut of the output (`full`) and still too
                        // long is not cut again: the output is, from its ends, so the marker
                        // counts all of it. A view within the cap is shown as the tool made it.
                        let capped = match (cap_output(view, cap), full) {
                            (capped, Some(f)) if capped.truncated() => cap_full_output(f, cap).unwrap_or_else(|e| {
                                tracing::warn!(tool = %call.name, error = %e, "could not read the full output; capping the view");
                                capped
                            }),
                            (capped, _) => capped,
                        };
                        let truncated = capped.truncated() || full.is_some();
                        (capped.text, truncated, None)
                    }
                };
                if let Some(note) = full.and_then(FullOutput::dropped_note) {
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&note);
                }
                let result =
                    ToolResult::ok(&call.id, text).with_tool_references(output.tool_references.clone());
                (result, bytes, lines, truncated, locator)
            }
            Err(envelope) => {
                let json = envelope.to_json();
                let bytes = json.len() as u64;
                (ToolResult::error(&call.id, json), bytes, 1, false, None)
            }
        };
        CallReport {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            outcome,
            result,
            bytes,
            lines,
            truncated,
            locator,
            duration: started.elapsed().saturating_sub(approval_wait),
            approval_wait,
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} bytes)", &text[..i], text.len()),
        None => text.to_owned(),
    }
}

/// Levenshtein distance, for "did you mean" suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
