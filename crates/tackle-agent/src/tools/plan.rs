//! `propose_plan`: how the model ends plan mode. In plan mode only tools that read run; the model
//! investigates, then calls `propose_plan` with its plan. The call asks the user (the executor
//! treats it as the plan-approval tool): approved, the session's mode becomes `default` and the
//! model carries the plan out in the same turn; denied with a reason, the model revises it.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::{AgentEvent, ToolAnnotations};
use tackle_store::Store;
use tackle_tools::{PermissionMode, ToolContext, ToolDoc, ToolFailure, ToolOutput, TypedTool};

/// The tool's name.
pub(crate) const PROPOSE_PLAN: &str = "propose_plan";

/// Session-state key of the session's permission mode.
pub(crate) const MODE_KEY: &str = "permission_mode";

/// Arguments of `propose_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposePlanArgs {
    /// The plan, in Markdown: the steps you will take, the files you will change and how you
    /// will check the result. Example: "1. Add `parse_date` to src/date.rs ...".
    pub plan: String,
}

/// The `propose_plan` tool.
#[derive(Debug, Clone)]
pub(crate) struct ProposePlan {
    store: Store,
}

impl ProposePlan {
    pub(crate) fn new(store: Store) -> Self {
        Self { store }
    }
}

#[async_trait]
impl TypedTool for ProposePlan {
    type Args = ProposePlanArgs;

    fn name(&self) -> &str {
        PROPOSE_PLAN
    }

    fn description(&self) -> String {
        ToolDoc::new("Present your plan to the user for approval, in plan mode.")
            .use_when("the session is in plan mode and you have investigated enough to say exactly what you will do")
            .use_when("the user asked for changes to your previous plan: call it again with the revised plan")
            .does_not("change anything: approval switches the session to default mode, then you carry the plan out")
            .does_not("do anything outside plan mode (it says so); just do the work then")
            .arg("plan", "The plan in Markdown: steps, files to change, how you will check. Example: \"1. ...\"")
            .returns("Whether the user approved; if not, what they want changed.")
            .example(r#"{"plan": "1. Add a --json flag to src/cli.rs\n2. Print the report with serde_json\n3. Run cargo test"}"#)
            .render()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
            ..ToolAnnotations::default()
        }
    }

    async fn run(&self, args: ProposePlanArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        if args.plan.trim().is_empty() {
            return Err(ToolFailure::invalid_args("the plan is empty; write the steps you will take"));
        }
        if ctx.turn.get::<PermissionMode>().unwrap_or_default() != PermissionMode::Plan {
            return Ok(ToolOutput::text(
                "The session is not in plan mode, so there is nothing to approve: carry on with the task.",
            ));
        }
        // The executor asked the user before this ran: the plan is approved.
        self.store
            .sessions()
            .set_state(&ctx.session_id, MODE_KEY, &PermissionMode::Default)
            .await
            .map_err(|e| ToolFailure::internal(e.to_string()))?;
        ctx.turn.insert(PermissionMode::Default);
        ctx.events.emit(AgentEvent::ModeChanged {
            mode: PermissionMode::Default.as_str().to_owned(),
            reason: "plan_approved".to_owned(),
        });
        Ok(ToolOutput::text(
            "The user approved the plan. The session is now in default mode: carry the plan out now, step by step.",
        ))
    }
}
