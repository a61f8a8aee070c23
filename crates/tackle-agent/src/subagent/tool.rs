//! The `agent` tool: a task run to completion in a child session.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tackle_protocol::{AgentEvent, CachePolicy, ErrorCategory, SystemSection, ToolAnnotations, TurnEnd};
use tackle_tools::{
    ApprovalPolicy, ElicitationPolicy, PermissionMode, ToolContext, ToolDoc, ToolFailure, ToolOutput,
    TypedTool,
};

use tackle_store::ParentLink;

use super::{AGENT_TOOL, ParentRequest, SubAgent, SubAgentHost, SubAgentRegistry, forwarding_sink};
use crate::session::{ChildOpening, Opening, PrefixTracker};
use crate::tools::LoopRequests;
use crate::{NewSessionOptions, Session, ToolMask, TurnInput};

/// Arguments of `agent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentArgs {
    /// The whole task: the sub-agent sees nothing of this conversation but this text.
    pub prompt: String,
    /// A configured sub-agent's name; without it a general-purpose sub-agent with every tool.
    #[serde(default)]
    pub agent: Option<String>,
}

/// The `agent` tool. Its description lists the configured sub-agents in name order, fixed when
/// the agent is built, so the catalog's bytes stay the same.
#[derive(Debug, Clone)]
pub(crate) struct AgentTool {
    description: String,
}

impl AgentTool {
    pub(crate) fn new(registry: &SubAgentRegistry) -> Self {
        let mut doc = ToolDoc::new(
            "Hand a self-contained task to a sub-agent: it works in its own session (its own context, \
             the same workspace) and returns only its final answer.",
        )
        .use_when("a task needs many steps whose details the rest of this conversation does not need")
        .use_when("independent tasks can run at the same time: call agent several times in one step")
        .does_not("share this conversation: put everything the sub-agent needs in prompt")
        .arg("prompt", "The task, complete and self-contained. Example: \"Find where retries are configured and list the files\"");
        doc = if registry.is_empty() {
            doc.arg("agent", "Leave it out: no sub-agents are configured.")
        } else {
            let list: Vec<String> =
                registry.iter().map(|a| format!("{}: {}", a.name, a.description.trim())).collect();
            doc.arg("agent", format!("Optional. One of the configured sub-agents: {}", list.join("; ")))
        };
        let description = doc
            .returns("The sub-agent's final answer, then its session id and how to read its transcript.")
            .example(r#"{"prompt": "Run the test suite and summarize the failures"}"#)
            .render();
        Self { description }
    }
}

#[async_trait]
impl TypedTool for AgentTool {
    type Args = AgentArgs;

    fn name(&self) -> &str {
        AGENT_TOOL
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn annotations(&self) -> ToolAnnotations {
        // Each call is its own session: calls of one step run together. The child's own calls
        // are confirmed one by one, so starting it needs no confirmation.
        ToolAnnotations { concurrent: true, open_world: true, ..ToolAnnotations::default() }
    }

    async fn run(&self, args: AgentArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        let host = ctx.turn.get::<SubAgentHost>().ok_or_else(|| {
            ToolFailure::new(ErrorCategory::Unavailable, "sub-agents run only inside a session's turn")
        })?;
        let max_depth = host.agent.config().subagents.max_depth;
        if host.depth >= max_depth {
            return Err(ToolFailure::denied(format!(
                "this session is a sub-agent at depth {} and sub-agents nest at most {max_depth} deep",
                host.depth
            ))
            .with_hint("do the task yourself with your other tools"));
        }
        let sub = match args.agent.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            None => None,
            Some(name) => Some(host.registry.get(name).cloned().ok_or_else(|| {
                let known: Vec<&str> = host.registry.iter().map(|a| a.name.as_str()).collect();
                ToolFailure::not_found(format!("no sub-agent is named {name:?}")).with_hint(
                    if known.is_empty() {
                        "leave agent out: no sub-agents are configured".to_owned()
                    } else {
                        format!("use one of: {}, or leave agent out", known.join(", "))
                    },
                )
            })?),
        };
        if args.prompt.trim().is_empty() {
            return Err(ToolFailure::invalid_args("prompt is empty: give the sub-agent its whole task"));
        }
        run_child(&host, sub.as_ref(), args.prompt, &ctx).await
    }
}

/// Creates the child session, runs the task as one turn, and returns its answer.
async fn run_child(
    host: &SubAgentHost,
    sub: Option<&SubAgent>,
    prompt: String,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolFailure> {
    let internal =
        |e: crate::AgentError| ToolFailure::internal(format!("the sub-agent's session failed: {e}"));
    let agent = match sub.and_then(|s| s.model.as_deref()) {
        Some(model) => host.agent.with_model(model),
        None => host.agent.clone(),
    };
    let name = sub.map_or("general-purpose", |s| s.name.as_str());
    let first_line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("task");
    let depth = host.depth + 1;
    // The parent's system sections as they were sent, then the sub-agent's instructions
    // (before any dynamic section, which must come last).
    let mut system = host.system.clone();
    if let Some(text) = sub.map(|s| s.instructions.trim()).filter(|t| !t.is_empty()) {
        let at = system.iter().position(|s| s.cache == CachePolicy::Dynamic).unwrap_or(system.len());
        system.insert(at, SystemSection::cacheable(format!("subagent:{name}"), text.to_owned()));
    }
    // Its first request is measured against the request of the parent's step that called it.
    let prefix = ctx
        .turn
        .get::<ParentRequest>()
        .map_or_else(PrefixTracker::default, |ParentRequest(parent)| PrefixTracker::child_of(&parent));
    let (session, _) = agent
        .new_session(NewSessionOptions {
            title: Some(format!("[{name}] {}", first_line.chars().take(60).collect::<String>())),
            workspace: ctx.workspace.clone(),
            owner: Some(host.owner.clone()),
            history: Vec::new(),
        })
        .map_err(internal)?;
    let child = ChildOpening {
        link: ParentLink { session_id: ctx.session_id.to_string(), call_id: ctx.call_id.to_string() },
        depth,
        system,
        cache_key: host.cache_key.clone(),
        prefix,
    };
    // The row, its link to this call and its first state in one commit; its context built once.
    let mut child =
        Session::start(agent.clone(), Opening::Child { session, child }).await.map_err(internal)?;
    let child_id = child.id().clone();
    let config = agent.config();
    if let Some(mode) = ctx.turn.get::<PermissionMode>()
        && agent.mode_available(mode).is_ok()
    {
        child.mode = mode;
    }
    let mut input = TurnInput::new(prompt);
    input.tool_mask = child_mask(&child, sub, depth < config.subagents.max_depth);
    input.approval = ctx.turn.get::<ApprovalPolicy>();
    input.elicitation = ctx.turn.get::<ElicitationPolicy>();
    ctx.events.emit(AgentEvent::Custom {
        name: "subagent_started".into(),
        data: serde_json::json!({
            "call_id": ctx.call_id, "session_id": child_id, "agent": name, "depth": depth,
        }),
    });
    let sink = forwarding_sink(&ctx.events, &child_id, &ctx.call_id, depth);
    let outcome = child.run_turn(input, &sink, &ctx.cancel).await;
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Err(internal(e)),
    };
    // The child's tokens are the parent's turn's too.
    LoopRequests::ask(ctx, |r| r.usage.add(&outcome.usage));
    ctx.events.emit(AgentEvent::Custom {
        name: "subagent_finished".into(),
        data: serde_json::json!({
            "call_id": ctx.call_id, "session_id": child_id, "agent": name, "depth": depth,
            "steps": outcome.steps, "end": outcome.end, "usage": outcome.usage,
        }),
    });
    let transcript = format!(
        "[sub-agent {name} · session {child_id} · {} steps · transcript: tackle sessions show {child_id}]",
        outcome.steps
    );
    match outcome.end {
        TurnEnd::Completed => Ok(ToolOutput::text(format!("{}\n\n{transcript}", outcome.text.trim()))),
        TurnEnd::Cancelled => Err(ToolFailure::new(
            ErrorCategory::Interrupted,
            format!("the sub-agent was cancelled {transcript}"),
        )),
        TurnEnd::MaxSteps | TurnEnd::Failed => {
            let why = outcome.error.as_ref().map_or_else(|| "it stopped".to_owned(), ToString::to_string);
            let said = if outcome.text.trim().is_empty() {
                String::new()
            } else {
                format!("; its last answer: {}", outcome.text.trim())
            };
            Err(ToolFailure::new(
                ErrorCategory::Internal,
                format!("the sub-agent did not finish: {why}{said} {transcript}"),
            )
            .with_hint("split the task or do it yourself"))
        }
    }
}

/// The child's mask: the sub-agent's tools (plus the agent's own bookkeeping tools, which
/// declare themselves `session_only` or `sized_output`: todo, read_result, tool_search, ...),
/// and no `agent` tool when the child is at the depth limit.
fn child_mask(child: &crate::Session, sub: Option<&SubAgent>, may_nest: bool) -> Option<ToolMask> {
    let specs = child.tools.catalog().specs();
    match sub.and_then(|s| s.tools.as_ref()) {
        Some(tools) => {
            let mut allowed: Vec<(String, bool)> = specs
                .iter()
                .filter(|s| {
                    let a = s.annotations;
                    tools.contains(&s.name) || a.session_only || a.sized_output
                })
                .filter(|s| may_nest || s.name != AGENT_TOOL)
                .map(|s| (s.name.clone(), true))
                .collect();
            if allowed.is_empty() {
                allowed.push((String::new(), true));
            }
            Some(ToolMask::new(allowed))
        }
        None if !may_nest => Some(ToolMask::new([(AGENT_TOOL.to_owned(), false)])),
        None => None,
    }
}
