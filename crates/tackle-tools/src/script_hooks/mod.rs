//! Script hooks: commands run at lifecycle events, speaking Claude Code's hook protocol, so its
//! users' hook scripts run unchanged where the tool names match.
//!
//! Configured as `[[hooks]]` entries with an `event` and a `command` ([`ScriptHook`]), beside
//! the declarative rules ([`crate::HookRule`]); several hooks of one event run in order. The
//! executor runs `PreToolUse` and `PostToolUse` around each call; the agent's loop runs the
//! others. Every run is reported as a `hook_finished` event and a `hook` tracing span.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::path::Path;
//! use tackle_sandbox::Sandbox;
//! use tackle_tools::{EventSink, HookEnv, HookEvent, HookPayload, HookScope, PermissionMode, ScriptHook, ScriptHooks};
//! let hooks = ScriptHooks::from_config(
//!     &[ScriptHook::command(HookEvent::UserPromptSubmit, "echo 'the build is green'")],
//!     &Sandbox::off(),
//!     &HookEnv::default(),
//! ).unwrap();
//! let ws = std::env::temp_dir();
//! let scope = HookScope { session_id: "s1", cwd: &ws, mode: PermissionMode::Default };
//! let done = hooks.run_event(&HookPayload::UserPromptSubmit { prompt: "status?".into() }, &scope, &EventSink::discard()).await;
//! assert_eq!(done.context, ["the build is green"]);
//! # });
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tackle_protocol::{AgentEvent, ToolSpec};
use tackle_sandbox::Sandbox;
use tracing::Instrument as _;
use tracing::field::Empty;

use crate::EventSink;

mod config;
mod names;
mod protocol;
mod runner;

pub use config::{
    DEFAULT_HOOK_TIMEOUT_SECS, HookEntry, HookEvent, HookMatcher, ScriptHook, ScriptHookError,
    UnknownHookEvent, split_hooks,
};
pub use names::HookToolNames;
pub use protocol::{
    HookJsonOutput, HookPayload, HookReply, HookScope, HookSpecificOutput, HookVerdict, Permission, interpret,
};
pub use runner::{CommandHook, HookEnv, HookHandler};

#[derive(Clone)]
struct Registered {
    matcher: HookMatcher,
    handler: Arc<dyn HookHandler>,
    timeout: Duration,
}

/// The script hooks of an agent, in order. Cheap to clone.
#[derive(Clone, Default)]
pub struct ScriptHooks {
    hooks: Arc<Vec<Registered>>,
}

impl std::fmt::Debug for ScriptHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.listing()).finish()
    }
}

/// One hook, as `/hooks` and `tackle config` show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HookListing {
    /// Its event.
    pub event: HookEvent,
    /// Its command (or an in-process handler's label).
    pub hook: String,
    /// Seconds it may run.
    pub timeout_secs: u64,
}

/// What the `PreToolUse` hooks decided about a call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolOutcome {
    /// The strongest decision: deny, then ask, then allow.
    pub permission: Option<Permission>,
    /// The arguments to run with instead (after every hook's `updatedInput`).
    pub input: Option<Value>,
    /// Context for the model, added to the call's result.
    pub context: Vec<String>,
    /// A hook asked to stop the turn (`continue: false`): why.
    pub stop: Option<String>,
}

/// What the hooks of a non-tool event (or `PostToolUse`) decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventOutcome {
    /// The first block's reason (exit code 2, `decision: "block"`).
    pub blocked: Option<String>,
    /// Context for the model (`additionalContext`, or plain output where Claude Code adds it),
    /// one entry per hook that gave some.
    pub context: Vec<String>,
    /// A hook asked to stop the turn (`continue: false`): why.
    pub stop: Option<String>,
}

impl ScriptHooks {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Command hooks from configuration, run under `sandbox` with `env`'s rules; an invalid
    /// entry is an error naming it.
    pub fn from_config(
        hooks: &[ScriptHook],
        sandbox: &Sandbox,
        env: &HookEnv,
    ) -> Result<Self, ScriptHookError> {
        let mut out = Self::new();
        for hook in hooks {
            let matcher = hook.matcher()?;
            out.push(
                matcher,
                Arc::new(CommandHook::new(&hook.command, sandbox.clone(), env.clone())),
                hook.timeout(),
            );
        }
        Ok(out)
    }

    /// Command hooks from configuration, run without a sandbox (as Claude Code runs them), for
    /// embedders built without one (`tackle-agent` without its `sandbox` feature).
    pub fn from_config_unsandboxed(hooks: &[ScriptHook], env: &HookEnv) -> Result<Self, ScriptHookError> {
        Self::from_config(hooks, &Sandbox::off(), env)
    }

    /// Adds a hook after the others.
    pub fn push(&mut self, matcher: HookMatcher, handler: Arc<dyn HookHandler>, timeout: Duration) {
        Arc::make_mut(&mut self.hooks).push(Registered { matcher, handler, timeout });
    }

    /// Whether there is no hook at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether some hook runs at `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.matcher.hook_event() == event)
    }

    /// Every hook, in order.
    pub fn listing(&self) -> Vec<HookListing> {
        self.hooks
            .iter()
            .map(|h| HookListing {
                event: h.matcher.hook_event(),
                hook: h.handler.label(),
                timeout_secs: h.timeout.as_secs(),
            })
            .collect()
    }

    fn matching<'a>(
        &'a self,
        payload: &'a HookPayload,
        spec: Option<&'a ToolSpec>,
    ) -> impl Iterator<Item = &'a Registered> + 'a {
        let event = payload.event();
        self.hooks.iter().filter(move |h| {
            h.matcher.hook_event() == event
                && match (spec, payload.match_value()) {
                    (Some(spec), _) => h.matcher.matches_tool(spec),
                    (None, Some(value)) => h.matcher.matches_value(value),
                    (None, None) => true,
                }
        })
    }

    /// Runs one hook, reports it, and reads its verdict.
    async fn run_one(
        &self,
        hook: &Registered,
        payload: &HookPayload,
        scope: &HookScope<'_>,
        sink: &EventSink,
    ) -> HookVerdict {
        let event = payload.event();
        let label = hook.handler.label();
        let span = tracing::info_span!("hook",
            "otel.name" = %format_args!("hook {event}"),
            "tackle.hook.event" = event.as_str(),
            "tackle.hook.command" = label.as_str(),
            "tackle.hook.outcome" = Empty,
            "tackle.hook.exit_code" = Empty,
        );
        let started = Instant::now();
        let names = hook.matcher.names();
        let mut input = payload.input(scope);
        let tool = match payload {
            HookPayload::PreToolUse { tool_name, .. } | HookPayload::PostToolUse { tool_name, .. } => {
                Some(tool_name.as_str())
            }
            _ => None,
        };
        if let (Some(tool), Value::Object(fields)) = (tool, &mut input)
            && names != HookToolNames::Tackle
        {
            fields.insert("tool_name".into(), Value::from(names.tool_name(tool)));
            if let Some(args) = fields.get_mut("tool_input") {
                *args = names.input_for_hook(tool, args);
            }
        }
        let reply = hook.handler.run(&input, scope.cwd, hook.timeout).instrument(span.clone()).await;
        let mut verdict = interpret(event, &reply);
        if let Some(tool) = tool {
            verdict.updated_input = verdict.updated_input.map(|i| names.input_from_hook(tool, i));
        }
        span.record("tackle.hook.outcome", verdict.outcome());
        if let Some(code) = reply.exit_code {
            span.record("tackle.hook.exit_code", i64::from(code));
        }
        let message = verdict
            .block
            .clone()
            .or_else(|| verdict.error.clone())
            .or_else(|| verdict.stop.clone())
            .or_else(|| verdict.system_message.clone());
        match verdict.outcome() {
            "error" => tracing::warn!(event = %event, hook = %label, message = ?message, "hook failed"),
            outcome => tracing::info!(event = %event, hook = %label, outcome, "hook ran"),
        }
        sink.emit(AgentEvent::HookFinished {
            event: event.as_str().to_owned(),
            hook: label,
            outcome: verdict.outcome().to_owned(),
            exit_code: reply.exit_code,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            message,
            output: verdict.output.clone(),
        });
        verdict
    }

    /// Runs the `PreToolUse` hooks matching `spec`, in order: each sees the arguments as the
    /// hooks before it left them (`updatedInput`); a denial stops the rest.
    pub async fn pre_tool_use(
        &self,
        spec: &ToolSpec,
        call_id: &str,
        args: &Value,
        scope: &HookScope<'_>,
        sink: &EventSink,
    ) -> PreToolOutcome {
        let mut outcome = PreToolOutcome::default();
        let mut payload = HookPayload::PreToolUse {
            tool_name: spec.name.clone(),
            tool_input: args.clone(),
            tool_use_id: call_id.to_owned(),
        };
        let hooks: Vec<Registered> = self.matching(&payload, Some(spec)).cloned().collect();
        for hook in &hooks {
            let verdict = self.run_one(hook, &payload, scope, sink).await;
            outcome.context.extend(verdict.context);
            if outcome.stop.is_none() {
                outcome.stop = verdict.stop;
            }
            if let Some(input) = verdict.updated_input {
                if let HookPayload::PreToolUse { tool_input, .. } = &mut payload {
                    *tool_input = input.clone();
                }
                outcome.input = Some(input);
            }
            match verdict.permission {
                Some(Permission::Deny(why)) => {
                    outcome.permission = Some(Permission::Deny(why));
                    break;
                }
                Some(Permission::Ask(why)) => outcome.permission = Some(Permission::Ask(why)),
                Some(Permission::Allow(why)) if outcome.permission.is_none() => {
                    outcome.permission = Some(Permission::Allow(why));
                }
                _ => {}
            }
        }
        outcome
    }

    /// Runs the `PostToolUse` hooks matching `spec` after a successful call; `blocked` and
    /// `context` are feedback for the model.
    pub async fn post_tool_use(
        &self,
        spec: &ToolSpec,
        call_id: &str,
        args: &Value,
        response: Value,
        scope: &HookScope<'_>,
        sink: &EventSink,
    ) -> EventOutcome {
        let payload = HookPayload::PostToolUse {
            tool_name: spec.name.clone(),
            tool_input: args.clone(),
            tool_response: response,
            tool_use_id: call_id.to_owned(),
        };
        self.run_matching(&payload, Some(spec), scope, sink, false).await
    }

    /// Runs the hooks of a non-tool event, in order. For events that can block
    /// (`UserPromptSubmit`, `Stop`, `PreCompact`) the first block stops the rest.
    pub async fn run_event(
        &self,
        payload: &HookPayload,
        scope: &HookScope<'_>,
        sink: &EventSink,
    ) -> EventOutcome {
        let stops =
            matches!(payload.event(), HookEvent::UserPromptSubmit | HookEvent::Stop | HookEvent::PreCompact);
        self.run_matching(payload, None, scope, sink, stops).await
    }

    async fn run_matching(
        &self,
        payload: &HookPayload,
        spec: Option<&ToolSpec>,
        scope: &HookScope<'_>,
        sink: &EventSink,
        stop_at_block: bool,
    ) -> EventOutcome {
        let mut outcome = EventOutcome::default();
        let hooks: Vec<&Registered> = self.matching(payload, spec).collect();
        for hook in hooks {
            let verdict = self.run_one(hook, payload, scope, sink).await;
            outcome.context.extend(verdict.context);
            if outcome.stop.is_none() {
                outcome.stop = verdict.stop;
            }
            if let Some(why) = verdict.block {
                if outcome.blocked.is_none() {
                    outcome.blocked = Some(why);
                } else if let Some(b) = outcome.blocked.as_mut() {
                    b.push('\n');
                    b.push_str(&why);
                }
                if stop_at_block {
                    break;
                }
            }
        }
        outcome
    }
}
