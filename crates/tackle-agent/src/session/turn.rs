//! The agent loop: one turn of a session, step by step.
//!
//! A step resolves which tools are callable (mask, skills, deferral; the definitions never
//! change), appends a tail note if the state it reports changed, builds and encodes the request
//! once (measuring prefix stability on the exact bytes), streams the model's answer, commits it,
//! runs the tool calls (concurrently when all are read-only or idempotent), commits their
//! results, and asks the loop guard whether to go on.

use std::ops::ControlFlow;
use std::time::Instant;

use serde_json::Value;
use tackle_context::Pressure;
use tackle_protocol::{
    AgentEvent, CacheBreakpoint, ContentBlock, Message, ModelRequest, ModelResponse, SessionId, StepMetrics,
    StopReason, ToolResult, ToolUse, TurnEnd, Usage,
};
use tackle_provider::ProviderError;
use tackle_store::{SessionStatus, SessionUpdate, StepCommit, StepRecord, ToolCallFinish};
use tackle_tools::{EventSink, HookEvent, HookPayload, HookScope, HookStop, PermissionMode, TurnState};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use tracing::field::Empty;

use super::history::Change;
use super::loop_guard::{LoopGuard, Verdict};
use super::model_call::{ChatLabels, ModelCallError, call_model};
use super::tail_note::TailState;
use super::tool_calls::{CallBatch, ExecutedCall, plan_calls, run_calls, starts, unique_call_ids};
use crate::context::CALIBRATION_KEY;
use crate::context::CompactReason;
use crate::conversation::Conversation;
use crate::output::TurnOutput;
use crate::tools::{LoopRequests, MaskStrategy, Requests, StepTools, StepView};
use crate::{AgentError, Session, ToolMask, TurnFailure, TurnInput, TurnOutcome};

/// Longest session title derived from a first message.
const TITLE_CHARS: usize = 60;

/// What one step measured, for events and the store.
struct StepReport {
    step: u32,
    stop_reason: StopReason,
    usage: Usage,
    started: Instant,
    metrics: StepMetrics,
    strategy: MaskStrategy,
    /// The token-count calibration the step's usage moved, stored with the step's commit.
    calibration: Option<f64>,
}

/// What a phase of a step returns: `Continue` with what the next phase needs, or `Break` with
/// the turn's outcome when the turn ends there (completed, or a [`TurnFailure`]).
type Phase<T = ()> = Result<ControlFlow<TurnOutcome, T>, AgentError>;

/// The value of a phase that went on, or the step returns the outcome it ended the turn with.
macro_rules! proceed {
    ($phase:expr) => {
        match $phase? {
            ControlFlow::Continue(value) => value,
            ControlFlow::Break(outcome) => return Ok(ControlFlow::Break(outcome)),
        }
    };
}

/// What the steps of one turn share.
struct TurnRun {
    turn: i64,
    session_id: SessionId,
    /// The step running (1-based; 0 before the first).
    step: u32,
    max_steps: u32,
    /// The request's mask, if it names any tool.
    mask: Option<ToolMask>,
    guard: LoopGuard,
    /// What the turn's tool calls share (store, approval and elicitation policies, mode).
    turn_state: TurnState,
    /// What the agent's own tools ask of the loop (also in `turn_state`, where they find it).
    requests: LoopRequests,
    /// A Stop hook asked for more work in this turn.
    stop_hook_active: bool,
    /// The tail-note fallback was warned about.
    fallback_warned: bool,
    /// Usage summed over the turn's steps.
    usage: Usage,
    /// The turn's output schema and how it is asked for (structured output).
    output: Option<TurnOutput>,
}

impl TurnRun {
    /// The step running is the turn's last: its tool choice is `none`.
    fn last(&self) -> bool {
        self.step == self.max_steps
    }

    /// The turn's outcome, ending at the step running.
    fn end(&self, end: TurnEnd, text: String, error: Option<TurnFailure>) -> TurnOutcome {
        // A structured answer is the turn's result only when the turn completed.
        let output =
            if end == TurnEnd::Completed { self.output.as_ref().and_then(|o| o.value.clone()) } else { None };
        let text = output.as_ref().map_or(text, Value::to_string);
        TurnOutcome {
            session_id: self.session_id.clone(),
            steps: self.step,
            end,
            text,
            output,
            usage: self.usage,
            error,
        }
    }

    /// The turn ended at its step limit (`calls_pending`: with calls left unrun), with a warning.
    fn at_limit(&self, text: String, calls_pending: bool, sink: &EventSink) -> TurnOutcome {
        let note = TurnFailure::MaxSteps { limit: self.max_steps, calls_pending };
        sink.emit(AgentEvent::Warning {
            code: tackle_protocol::WarningCode::MaxSteps,
            message: note.to_string(),
        });
        self.end(TurnEnd::MaxSteps, text, Some(note))
    }
}

impl Session {
    /// Runs one turn: the user's message, then model steps and tool calls until the model
    /// answers without tools, the step limit, cancellation, or a stop by the loop guard.
    ///
    /// Every message is committed to the store before the next provider call, so a crash loses
    /// at most the step in flight, and tool calls never run twice.
    pub async fn run_turn(
        &mut self,
        mut input: TurnInput,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        // Tool-source changes land here, between turns, never between two steps.
        self.apply_tool_changes().await?;
        let turn = self.next_turn;
        self.next_turn += 1;
        // Read afresh each turn: between turns another process may have changed them.
        self.open_todos = None;
        let store = self.agent.store().clone();
        let resumed = !self.history.is_empty();
        let mut update = SessionUpdate { status: Some(SessionStatus::Running), ..SessionUpdate::default() };
        if self.record.title.is_empty() {
            update.title = Some(title_from(&input.message));
        }
        sink.emit(AgentEvent::SessionStarted {
            session_id: self.record.id.clone(),
            provider: self.agent.provider().name().to_owned(),
            model: self.agent.config().model.clone(),
            resumed,
            sandbox: self.agent.config().sandbox.clone(),
        });
        for warning in std::mem::take(&mut self.pending_warnings) {
            sink.emit(warning);
        }
        // Hooks before the turn: SessionStart (the first turn of this value), UserPromptSubmit
        // (which may refuse the prompt); what they add joins the user's message.
        let hooks = self.agent.executor().script_hooks().clone();
        let mut hook_context: Vec<(HookEvent, String)> = Vec::new();
        if let Some(source) = self.start_source.take()
            && hooks.has(HookEvent::SessionStart)
        {
            let payload = HookPayload::SessionStart {
                source: source.to_owned(),
                model: self.agent.config().model.clone(),
            };
            let done = hooks.run_event(&payload, &self.hook_scope(), sink).await;
            hook_context.extend(done.context.into_iter().map(|c| (HookEvent::SessionStart, c)));
        }
        if hooks.has(HookEvent::UserPromptSubmit) {
            let payload = HookPayload::UserPromptSubmit { prompt: input.message.clone() };
            let done = hooks.run_event(&payload, &self.hook_scope(), sink).await;
            if let Some(why) = done.blocked.or(done.stop) {
                let failure = TurnFailure::PromptBlocked(why);
                sink.emit(AgentEvent::Error { code: failure.code(), message: failure.to_string() });
                sink.emit(AgentEvent::TurnFinished {
                    steps: 0,
                    reason: TurnEnd::Failed,
                    text: String::new(),
                    usage: Usage::default(),
                });
                return Ok(TurnOutcome {
                    session_id: self.record.id.clone(),
                    steps: 0,
                    end: TurnEnd::Failed,
                    text: String::new(),
                    output: None,
                    usage: Usage::default(),
                    error: Some(failure),
                });
            }
            hook_context.extend(done.context.into_iter().map(|c| (HookEvent::UserPromptSubmit, c)));
        }
        // The workspace before the turn (whatever changes it next: tools, shell commands), so a
        // rewind can restore it. A checkpoint that fails is reported; the turn goes on.
        if let Some(checkpoints) = self.agent.checkpoints() {
            match checkpoints.record(&self.record.id, turn, &self.workspace).await {
                Ok(done) => sink.emit(AgentEvent::CheckpointCreated {
                    turn,
                    files: done.entries,
                    hashed: done.hashed,
                    stored_bytes: done.stored_bytes,
                    duration_ms: u64::try_from(done.duration.as_millis()).unwrap_or(u64::MAX),
                }),
                Err(e) => {
                    tracing::warn!(session = %self.record.id, error = %e, "checkpoint failed");
                    sink.emit(AgentEvent::Warning {
                        code: tackle_protocol::WarningCode::CheckpointFailed,
                        message: format!("the workspace was not checkpointed before this turn, so it cannot be rewound to it: {e}"),
                    });
                }
            }
        }
        // Calls a crash or a cancelled turn left open are answered first; then the session is
        // marked running and the user's message committed, in one store call.
        self.close_open_calls(turn).await?;
        let mut message = Message::user(std::mem::take(&mut input.message));
        message.content.extend(
            hook_context
                .into_iter()
                .map(|(event, text)| ContentBlock::text(format!("[{event} hook context]\n{text}"))),
        );
        let tokens = self.context.count_message(&message);
        let (record, seq) = store
            .sessions()
            .start_turn(&self.record.id, update, turn, &message, i64::try_from(tokens).ok())
            .await?;
        self.record = record;
        self.history.push(message, Some(seq), tokens);
        // The current turn starts here; compaction never touches it.
        self.turn_start = self.history.len() - 1;

        // The turn's span (OpenTelemetry GenAI `invoke_agent`); disabled, and free, unless a
        // subscriber collects the `gen_ai` target.
        let span = tracing::info_span!(target: "gen_ai", "invoke_agent",
            // `invoke_agent {gen_ai.agent.name}`, as the GenAI conventions name it.
            "otel.name" = "invoke_agent tackle",
            "otel.status_code" = Empty,
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = "tackle",
            "gen_ai.provider.name" = self.agent.provider().name(),
            "gen_ai.request.model" = self.agent.config().model.as_str(),
            "gen_ai.conversation.id" = self.record.id.as_str(),
            "gen_ai.usage.input_tokens" = Empty,
            "gen_ai.usage.output_tokens" = Empty,
            "tackle.turn.steps" = Empty,
            "tackle.turn.end" = Empty,
            "error.type" = Empty,
        );
        let outcome = self.run_steps(turn, input, sink, cancel).instrument(span.clone()).await;
        if !span.is_disabled() {
            record_turn(&span, &outcome);
        }
        let status = match &outcome {
            Ok(o) if o.end == TurnEnd::Failed => SessionStatus::Failed,
            Ok(_) => SessionStatus::Idle,
            Err(_) => SessionStatus::Failed,
        };
        // Most turns end in their last step's commit; the others here.
        if !std::mem::take(&mut self.turn_ended)
            && let Ok(record) = store
                .sessions()
                .update(&self.record.id, SessionUpdate { status: Some(status), ..Default::default() })
                .await
        {
            self.record = record;
        }
        let outcome = outcome?;
        // A turn that stopped at its step limit ended normally (its warning said so); every
        // other failure is the turn's `error` event.
        if let Some(failure) = outcome.error.as_ref().filter(|_| outcome.end != TurnEnd::MaxSteps) {
            sink.emit(AgentEvent::Error { code: failure.code(), message: failure.to_string() });
        }
        sink.emit(AgentEvent::TurnFinished {
            steps: outcome.steps,
            reason: outcome.end,
            text: outcome.text.clone(),
            usage: outcome.usage,
        });
        Ok(outcome)
    }

    /// The steps of a turn: each runs its phases ([`Session::run_step`]) until one ends the
    /// turn, or the step limit does.
    async fn run_steps(
        &mut self,
        turn: i64,
        input: TurnInput,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let mut run = self.begin_steps(turn, input, sink);
        while run.step < run.max_steps {
            if cancel.is_cancelled() {
                return Ok(run.end(TurnEnd::Cancelled, String::new(), Some(TurnFailure::Cancelled)));
            }
            run.step += 1;
            if let ControlFlow::Break(outcome) = self.run_step(&mut run, sink, cancel).await? {
                return Ok(outcome);
            }
        }
        // Unreachable in practice: the last step always ends the turn.
        Ok(run.end(TurnEnd::MaxSteps, String::new(), None))
    }

    /// What the steps of a turn share, set up once: its limits, the mask (with a warning for
    /// names no tool has), the loop guard, and the turn state its tools see.
    fn begin_steps(&self, turn: i64, input: TurnInput, sink: &EventSink) -> TurnRun {
        let config = self.agent.config();
        let max_steps = input.max_steps.unwrap_or(config.max_steps).max(1);
        let mask = input.tool_mask.filter(|m| !m.is_empty());
        if let Some(m) = &mask {
            let unknown: Vec<&str> = m.names().filter(|n| !self.tools.catalog().contains(n)).collect();
            if !unknown.is_empty() {
                sink.emit(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::UnknownToolInMask,
                    message: format!("the tool mask names tools that do not exist: {}", unknown.join(", ")),
                });
            }
        }
        let turn_state = TurnState::default();
        // Tools that keep session state write through the turn's (possibly fenced) store.
        turn_state.insert(crate::tools::TurnStore(self.agent.store().clone()));
        if let Some(policy) = input.approval {
            turn_state.insert(policy);
        }
        // The mode of the turn's calls; `propose_plan` may change it mid-turn.
        turn_state.insert(self.mode);
        // Questions tools ask (MCP elicitation): the turn's policy, else the agent's, else the
        // one matching the approval policy (see `tackle_tools::elicit`).
        let elicitation = &self.agent.inner.elicitation;
        if let Some(policy) = input.elicitation.or_else(|| elicitation.policy.clone()) {
            turn_state.insert(policy);
        }
        if let Some(elicitor) = &elicitation.elicitor {
            turn_state.insert(tackle_tools::TurnElicitor(std::sync::Arc::clone(elicitor)));
        }
        let requests = LoopRequests::default();
        turn_state.insert(requests.clone());
        // What sub-agents started in this turn inherit (only when the agent has the tool).
        if let Some(host) = crate::subagent::SubAgentHost::of(self) {
            turn_state.insert(host);
        }
        let native = self.agent.provider().capabilities().native_output_schema;
        // The final-answer tool takes a name no tool the session can call has (deferred ones
        // included): the same name for the same tools, so the tools' bytes stay stable.
        let output = input.output_schema.map(|s| {
            let taken = (!native).then(|| self.agent.deferral().reachable(self.tools.catalog()));
            TurnOutput::new(s, native, self.tools.catalog().specs(), |name| {
                taken.as_ref().is_some_and(|t| t.contains(name))
            })
        });
        TurnRun {
            turn,
            session_id: self.record.id.clone(),
            step: 0,
            max_steps,
            mask,
            guard: LoopGuard::new(config.loop_guard.clone()),
            turn_state,
            requests,
            stop_hook_active: false,
            fallback_warned: false,
            usage: Usage::default(),
            output,
        }
    }

    /// One step, as phases: resolve the step's tools, state the tail note, call the model (the
    /// request fitted into the context window), then either end on the answer or run the calls
    /// and decide whether to go on. Each phase returns `Break` with the turn's outcome when the
    /// turn ends there.
    async fn run_step(&mut self, run: &mut TurnRun, sink: &EventSink, cancel: &CancellationToken) -> Phase {
        sink.emit(AgentEvent::StepStarted { step: run.step, max_steps: run.max_steps });
        let started = Instant::now();
        let view = self.resolve_tools(run, sink).await?;
        if !run.last() {
            let state = self.tail_state(&view).await?;
            if let Some(note) = self.notes.next(&state) {
                self.append(run.turn, note).await?;
            }
        }
        let (response, metrics) = proceed!(self.sample(run, &view.tools, sink, cancel).await);
        let report = self.accept(run, &response, metrics, started, view.tools.strategy);
        let text = response.text();
        let mut response = response;
        // Every call runs once, whatever ids the model used: a reused id gets a fresh one
        // before the message is committed, so the history and the audit stay one-to-one.
        unique_call_ids(self, &mut response.content, sink).await?;
        let calls: Vec<ToolUse> = response.tool_uses().cloned().collect();
        if let Some(output) = &run.output
            && calls.iter().any(|c| output.is_final_answer(c))
        {
            return self.final_answer_call(run, report, text, response, calls, sink).await;
        }
        if calls.is_empty() {
            return self.answered(run, report, text, response, sink).await;
        }
        if run.last() {
            return self.refuse_at_limit(run, report, text, response, calls, sink).await;
        }
        let (executed, requests) =
            self.run_tools(run, report, &view, response.into_message(), &calls, sink, cancel).await?;
        self.after_tools(run, text, (&calls, &executed), requests, sink, cancel).await
    }

    /// The step's tools (the session's tool state read once; plan mode narrows the step to the
    /// tools that run in it), reported, with a warning the first time a server that may not
    /// accept `allowed_tools` gets a tail note instead.
    async fn resolve_tools(&self, run: &mut TurnRun, sink: &EventSink) -> Result<StepView, AgentError> {
        let plan_mask = (run.turn_state.get::<PermissionMode>() == Some(PermissionMode::Plan))
            .then(|| self.plan_mask(run.mask.as_ref()));
        let step_mask = plan_mask.as_ref().or(run.mask.as_ref());
        let view = self.tools.step(&self.agent, &self.record.id, step_mask, run.last()).await?;
        let tools = &view.tools;
        sink.emit(AgentEvent::ToolsResolved {
            step: run.step,
            active: tools.active.clone(),
            inactive: tools.inactive.clone(),
            strategy: tools.strategy.as_str().to_owned(),
        });
        if tools.strategy == MaskStrategy::TailNote
            && !run.fallback_warned
            && self.agent.provider().capabilities().allowed_tools_unverified
        {
            run.fallback_warned = true;
            sink.emit(AgentEvent::Warning {
                code: tackle_protocol::WarningCode::StrategyFallback,
                message:
                    "this server is not known to accept allowed_tools: the active tools are stated in a \
                          tail note and enforced by the executor (set openai_dialect = \"openai\" if it \
                          accepts them)"
                        .into(),
            });
        }
        Ok(view)
    }

    /// Calls the model with the step's request. A provider that finds the request too long
    /// gets one more compaction and, if something shrank, one retry.
    async fn sample(
        &mut self,
        run: &TurnRun,
        tools: &StepTools,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Phase<(ModelResponse, StepMetrics)> {
        let (answer, metrics) = proceed!(self.attempt(run, tools, sink, cancel).await);
        let (answer, metrics) = match answer {
            Err(ModelCallError::Provider(ProviderError::ContextExceeded { message })) => {
                match self.compact_after_overflow(message, sink).await? {
                    None => proceed!(self.attempt(run, tools, sink, cancel).await),
                    Some(unshrinkable) => (Err(unshrinkable), metrics),
                }
            }
            answer => (answer, metrics),
        };
        match answer {
            Ok(response) => Ok(ControlFlow::Continue((response, metrics))),
            Err(ModelCallError::Cancelled { partial }) => {
                let text = partial.text();
                if !text.is_empty() {
                    // Keep what the user already saw; drop half-streamed tool calls.
                    self.append(run.turn, Message::assistant(format!("{text}\n[cancelled]"))).await?;
                }
                Ok(ControlFlow::Break(run.end(TurnEnd::Cancelled, text, Some(TurnFailure::Cancelled))))
            }
            Err(ModelCallError::Provider(e)) => Ok(ControlFlow::Break(run.end(
                TurnEnd::Failed,
                String::new(),
                Some(TurnFailure::Provider(e)),
            ))),
        }
    }

    /// One model call: the request kept inside the context window (compacted past the trigger,
    /// refused past the hard block), built and encoded once, its prefix stability measured on
    /// the exact bytes, then streamed.
    async fn attempt(
        &mut self,
        run: &TurnRun,
        tools: &StepTools,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Phase<(Result<ModelResponse, ModelCallError>, StepMetrics)> {
        let thresholds = self.agent.config().context.thresholds;
        let mut budget = self.context.budget(&self.history);
        if thresholds.pressure(&budget) != Pressure::Fine {
            self.compact(self.turn_start, CompactReason::Threshold, sink).await?;
            budget = self.context.budget(&self.history);
            if thresholds.pressure(&budget) == Pressure::Block {
                let failure = TurnFailure::ContextFull { percent: budget.percent() };
                return Ok(ControlFlow::Break(run.end(TurnEnd::Failed, String::new(), Some(failure))));
            }
        }
        let mut request = self.build_request(tools, sink);
        if let Some(output) = &run.output {
            output.apply(&mut request);
        }
        // Streamed only when someone watches (or the setting says so): one request, one path.
        let provider = self.agent.provider();
        let delivery = self.agent.config().streaming.delivery(sink.discards(), &provider.capabilities());
        let encoded = provider.encode_as(&request, delivery);
        self.last_request_len = request.messages.len();
        // The request only borrowed the history: dropping it lets the history grow without a
        // copy.
        drop(request);
        let encoded = match encoded {
            Ok(e) => e,
            Err(e) => {
                let failure = TurnFailure::Encode(e.to_string());
                return Ok(ControlFlow::Break(run.end(TurnEnd::Failed, String::new(), Some(failure))));
            }
        };
        let mut metrics = StepMetrics {
            context: Some(self.context.report(&budget, &self.history)),
            ..StepMetrics::default()
        };
        if let Some(stats) = self.prefix.observe(encoded.cache_order, &encoded.body) {
            metrics.prefix_bytes = Some(stats.prefix_bytes);
            metrics.prefix_ratio = Some(stats.ratio);
            metrics.request_bytes = Some(stats.request_bytes);
            metrics.cache_break = stats.cache_break;
        }
        if let Some(path) = &metrics.cache_break
            && !std::mem::take(&mut self.compacted)
        {
            sink.emit(AgentEvent::Warning {
                code: tackle_protocol::WarningCode::CacheBreak,
                message: format!(
                    "the request prefix changed at {path}; the provider cache is invalidated from there"
                ),
            });
        }
        let config = self.agent.config();
        let labels = ChatLabels {
            model: &config.model,
            max_output_tokens: config.max_output_tokens,
            conversation: self.record.id.as_str(),
            record_content: config.telemetry.record_content,
        };
        let answer = call_model(self.agent.provider(), encoded, sink, cancel, &labels).await;
        Ok(ControlFlow::Continue((answer, metrics)))
    }

    /// After a provider found the request too long (`message`): compacts, and returns `None`
    /// when something shrank (the request is worth sending again), else the error to end with.
    async fn compact_after_overflow(
        &mut self,
        message: String,
        sink: &EventSink,
    ) -> Result<Option<ModelCallError>, AgentError> {
        tracing::warn!(session = %self.record.id, %message, "provider reported context exceeded; compacting");
        let report = self.compact(self.turn_start, CompactReason::ContextExceeded, sink).await?;
        if report.tokens_after < report.tokens_before || report.messages_after != report.messages_before {
            return Ok(None);
        }
        // Nothing shrank: the same request would get the same answer.
        let message = format!(
            "{message} (compaction found nothing to shrink: the current turn is kept whole, so the request \
             was not sent again; send a shorter message or start a new session)"
        );
        Ok(Some(ModelCallError::Provider(ProviderError::ContextExceeded { message })))
    }

    /// Takes the model's answer into the turn: its usage counted, the token calibration
    /// updated, and what the step measured kept for its commit.
    fn accept(
        &mut self,
        run: &mut TurnRun,
        response: &ModelResponse,
        metrics: StepMetrics,
        started: Instant,
        strategy: MaskStrategy,
    ) -> StepReport {
        run.usage.add(&response.usage);
        // Stored with the step's commit, not in one of its own.
        let calibration = self.context.observe_usage(self.last_request_len, response.usage.input_tokens);
        StepReport {
            step: run.step,
            stop_reason: response.stop_reason.clone(),
            usage: response.usage,
            started,
            metrics,
            strategy,
            calibration,
        }
    }

    /// An answer without tool calls: committed, then the turn ends (completed, cut off, or at
    /// its step limit) unless a Stop hook asks for more work.
    async fn answered(
        &mut self,
        run: &mut TurnRun,
        report: StepReport,
        text: String,
        response: ModelResponse,
        sink: &EventSink,
    ) -> Phase {
        let cut = cut_off(&report.stop_reason).map(str::to_owned);
        let message = response.into_message();
        let answer = (!message.is_empty()).then_some(message);
        let hooks = self.agent.executor().script_hooks().clone();
        // Unless a check may still send the model back to work (an output schema, a Stop
        // hook), the turn ends with this answer: its end is committed with it.
        let may_go_on = run.output.is_some() || (!run.last() && hooks.has(HookEvent::Stop));
        let ends = match &cut {
            Some(_) => Some(SessionStatus::Failed),
            None => (!may_go_on).then_some(SessionStatus::Idle),
        };
        self.finish_step(sink, run.turn, report, answer, Vec::new(), ends).await?;
        if let Some(reason) = cut {
            // What was said stays in the history; the turn did not complete.
            return Ok(ControlFlow::Break(run.end(
                TurnEnd::Failed,
                text,
                Some(TurnFailure::Truncated { reason }),
            )));
        }
        if let Some(output) = run.output.as_mut() {
            match output.text_answer(&text) {
                Ok(value) => output.value = Some(value),
                Err(error) => return self.invalid_output(run, text, error, sink).await,
            }
        }
        if !run.last() && hooks.has(HookEvent::Stop) {
            let payload = HookPayload::Stop {
                stop_hook_active: run.stop_hook_active,
                last_assistant_message: text.clone(),
            };
            let done = hooks.run_event(&payload, &self.hook_scope_in(&run.turn_state), sink).await;
            if let Some(why) = done.stop {
                sink.emit(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::HookStopped,
                    message: format!("a Stop hook stopped the turn: {why}"),
                });
            } else if let Some(why) = done.blocked {
                // The hook wants more work: its reason is the model's next instruction.
                run.stop_hook_active = true;
                self.append(run.turn, Message::user(format!("[Stop hook] {why}"))).await?;
                return Ok(ControlFlow::Continue(()));
            }
        }
        if run.last() && run.step > 1 {
            return Ok(ControlFlow::Break(run.at_limit(text, false, sink)));
        }
        Ok(ControlFlow::Break(run.end(TurnEnd::Completed, text, None)))
    }

    /// A final answer that does not match the output schema: one repair round (the error sent
    /// back as a user message, or as the final-answer tool's result already committed), then the
    /// turn fails with [`TurnFailure::OutputInvalid`].
    async fn invalid_output(
        &mut self,
        run: &mut TurnRun,
        text: String,
        error: String,
        sink: &EventSink,
    ) -> Phase {
        let Some(output) = run.output.as_mut() else {
            return Ok(ControlFlow::Break(run.end(TurnEnd::Completed, text, None)));
        };
        let name = output.schema.name().to_owned();
        if output.repairs_left == 0 || run.step >= run.max_steps {
            let failure = TurnFailure::OutputInvalid { name, error };
            return Ok(ControlFlow::Break(run.end(TurnEnd::Failed, text, Some(failure))));
        }
        output.repairs_left -= 1;
        sink.emit(AgentEvent::Warning {
            code: tackle_protocol::WarningCode::OutputRepair,
            message: format!(
                "the final answer does not match the output schema {name:?}: {error}; asking again"
            ),
        });
        if output.native {
            let repair = format!(
                "[output schema] Your final answer does not match the required JSON Schema {name:?}: {error}. \
                 Answer again with only the corrected JSON value."
            );
            self.append(run.turn, Message::user(repair)).await?;
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The model called the final-answer tool (providers without native structured output):
    /// its input is the answer. The message and a result for each call are committed (other
    /// calls of the same step are answered, not run); a valid answer ends the turn, an invalid
    /// one gets its validation error as the tool's result and the repair round.
    async fn final_answer_call(
        &mut self,
        run: &mut TurnRun,
        report: StepReport,
        text: String,
        response: ModelResponse,
        calls: Vec<ToolUse>,
        sink: &EventSink,
    ) -> Phase {
        let Some(output) = run.output.as_mut() else {
            return Ok(ControlFlow::Break(run.end(TurnEnd::Completed, text, None)));
        };
        let mut verdict = None;
        let mut results = Vec::with_capacity(calls.len());
        for call in &calls {
            if !output.is_final_answer(call) || verdict.is_some() {
                results.push(not_run(
                    call.id.as_str(),
                    &call.name,
                    "not run: the final answer was given in the same step",
                    "call the other tools first, then give the final answer alone",
                ));
                continue;
            }
            let checked = output.call_answer(call);
            results.push(output.call_result(call, &checked));
            verdict = Some(checked);
        }
        self.append(run.turn, response.into_message()).await?;
        self.finish_step(sink, run.turn, report, Some(Message::tool_results(results)), Vec::new(), None)
            .await?;
        match verdict {
            Some(Ok(value)) => {
                output.value = Some(value);
                Ok(ControlFlow::Break(run.end(TurnEnd::Completed, text, None)))
            }
            Some(Err(error)) => self.invalid_output(run, text, error, sink).await,
            None => Ok(ControlFlow::Continue(())),
        }
    }

    /// The model called tools although the last step's tool choice was `none`: each call is
    /// answered so the history stays valid, nothing runs, and the turn ends at its limit.
    async fn refuse_at_limit(
        &mut self,
        run: &TurnRun,
        report: StepReport,
        text: String,
        response: ModelResponse,
        calls: Vec<ToolUse>,
        sink: &EventSink,
    ) -> Phase {
        self.append(run.turn, response.into_message()).await?;
        let results = calls.iter().map(|c| step_limit_result(&c.id, &c.name)).collect::<Vec<_>>();
        let results = Some(Message::tool_results(results));
        // The turn ends at its limit: its end is committed with the step.
        self.finish_step(sink, run.turn, report, results, Vec::new(), Some(SessionStatus::Idle)).await?;
        Ok(ControlFlow::Break(run.at_limit(text, true, sink)))
    }

    /// Runs the step's calls: the message and its calls, recorded as running, are committed
    /// together before any call runs; their results are committed with the step. Returns them
    /// with what the agent's own tools asked of the loop meanwhile.
    #[allow(clippy::too_many_arguments)]
    async fn run_tools(
        &mut self,
        run: &TurnRun,
        report: StepReport,
        view: &StepView,
        message: Message,
        calls: &[ToolUse],
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<(Vec<ExecutedCall>, Requests), AgentError> {
        let planned = plan_calls(self, view, sink, calls);
        if self.agent.inner.subagents.is_some() {
            // The request this step sent, for sub-agents' first requests to be measured against
            // (a shared buffer, not a copy).
            run.turn_state.insert(crate::subagent::ParentRequest(self.prefix.clone()));
        }
        let begun = self.append_with_calls(run.turn, message, &starts(&planned)).await?;
        let batch = CallBatch { session: self, view, turn_state: &run.turn_state, sink, cancel };
        let executed = run_calls(batch, &planned, begun).await?;
        let requests = run.requests.take();
        if requests.tail_state_changed {
            self.open_todos = None;
        }
        let results: Vec<ToolResult> = executed.iter().map(|r| r.result.clone()).collect();
        let finished = executed.iter().filter_map(|r| r.finish.clone()).collect();
        self.finish_step(sink, run.turn, report, Some(Message::tool_results(results)), finished, None)
            .await?;
        Ok((executed, requests))
    }

    /// After the calls: the loop guard's verdict on them, what the tools changed in the turn
    /// (the permission mode, a hook's stop), cancellation, and a compaction `requests` asks for.
    async fn after_tools(
        &mut self,
        run: &mut TurnRun,
        text: String,
        (calls, executed): (&[ToolUse], &[ExecutedCall]),
        requests: Requests,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Phase {
        // Tokens spent by sub-agents during the calls count in this turn.
        run.usage.add(&requests.usage);
        let mut stop = None;
        for (call, done) in calls.iter().zip(executed) {
            let args = call.input.as_json().cloned().unwrap_or_else(|| call.input.to_wire_string().into());
            match run.guard.observe(&done.tool, &args, done.outcome.as_ref().err()) {
                Verdict::Continue => {}
                Verdict::Remind(text) => {
                    sink.emit(AgentEvent::Warning {
                        code: tackle_protocol::WarningCode::RepeatedFailure,
                        message: text.clone(),
                    });
                    self.append(run.turn, Message::user(text)).await?;
                }
                Verdict::Stop(message) => stop = stop.or(Some(message)),
            }
        }
        if let Some(message) = stop {
            let failure = TurnFailure::LoopGuard(message);
            return Ok(ControlFlow::Break(run.end(TurnEnd::Failed, text, Some(failure))));
        }
        if let Some(mode) = run.turn_state.get::<PermissionMode>() {
            self.mode = mode;
        }
        if let Some(HookStop(why)) = run.turn_state.get::<HookStop>() {
            sink.emit(AgentEvent::Warning {
                code: tackle_protocol::WarningCode::HookStopped,
                message: format!("a hook stopped the turn: {why}"),
            });
            return Ok(ControlFlow::Break(run.end(TurnEnd::Completed, text, None)));
        }
        if cancel.is_cancelled() {
            return Ok(ControlFlow::Break(run.end(TurnEnd::Cancelled, text, Some(TurnFailure::Cancelled))));
        }
        if requests.compact {
            self.compact(self.turn_start, CompactReason::Forced, sink).await?;
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The request of a step: frozen tools, the step's tool choice, the history as a
    /// [`Conversation`] (lent, not copied; repaired first only if it is not valid), cache
    /// breakpoints after the system prompt and at the end of the history (and where the
    /// previous request ended, so its cache entry is read).
    pub(crate) fn build_request(&mut self, tools: &StepTools, sink: &EventSink) -> ModelRequest {
        let conversation = self.conversation(sink);
        let config = self.agent.config();
        let last = self.history.len().saturating_sub(1);
        let previous = self.last_request_len.saturating_sub(1);
        let mut request = ModelRequest::new(config.model.clone(), conversation.lend());
        request.system = self.system.clone();
        request.tools = self.tools.catalog().specs().clone();
        request.tool_choice = tools.tool_choice.clone();
        request.max_output_tokens = config.max_output_tokens;
        request.prompt_cache_key = Some(self.cache_key());
        request.cache_breakpoints = vec![CacheBreakpoint::System, CacheBreakpoint::Message { index: last }];
        if self.last_request_len > 0 && previous < last {
            request.cache_breakpoints.push(CacheBreakpoint::Message { index: previous });
        }
        request
    }

    /// The history as a [`Conversation`]: shared as it is when valid, else repaired, each
    /// repair reported (a `history_repaired` warning and a log line), and the repaired
    /// conversation taking the history's place (its positions no longer match stored rows).
    pub(crate) fn conversation(&mut self, sink: &EventSink) -> Conversation {
        if let Ok(conversation) = self.history.conversation() {
            return conversation;
        }
        let (conversation, repairs) = Conversation::repair(self.history.messages());
        tracing::warn!(session = %self.record.id, ?repairs, "history repaired before the request");
        let said: Vec<String> = repairs.iter().map(ToString::to_string).collect();
        sink.emit(AgentEvent::Warning {
            code: tackle_protocol::WarningCode::HistoryRepaired,
            message: format!(
                "the stored history was not a valid conversation; before the request Tackle {} (the stored \
                 messages are unchanged)",
                said.join("; ")
            ),
        });
        let context = &self.context;
        self.history.adopt(conversation.clone(), Change::Repaired, |m| context.count_message(m));
        self.context.forget_report();
        conversation
    }

    /// The fields every hook of this session receives.
    pub(crate) fn hook_scope(&self) -> HookScope<'_> {
        HookScope { session_id: &self.record.id, cwd: &self.workspace, mode: self.mode }
    }

    /// The same, with the mode the turn is in now.
    fn hook_scope_in(&self, turn_state: &TurnState) -> HookScope<'_> {
        HookScope { mode: turn_state.get::<PermissionMode>().unwrap_or(self.mode), ..self.hook_scope() }
    }

    /// The mask of a plan-mode step: the tools `mask` allows that run in plan mode (never no
    /// mask at all, which would allow everything).
    fn plan_mask(&self, mask: Option<&ToolMask>) -> ToolMask {
        let rules = self.agent.executor().mode_rules();
        let mut names: Vec<(String, bool)> = self
            .tools
            .catalog()
            .specs()
            .iter()
            .filter(|s| mask.is_none_or(|m| m.allows(&s.name)) && rules.runs_in_plan(s))
            .map(|s| (s.name.clone(), true))
            .collect();
        if names.is_empty() {
            names.push((String::new(), true));
        }
        ToolMask::new(names)
    }

    /// What the tail note should say before a step.
    async fn tail_state(&mut self, view: &StepView) -> Result<TailState, AgentError> {
        let open_todos = match &self.open_todos {
            Some(todos) => todos.clone(),
            None => {
                let todos =
                    crate::tools::todo::recited(self.agent.store(), &self.record.id, self.tools.catalog())
                        .await?;
                self.open_todos = Some(todos.clone());
                todos
            }
        };
        Ok(TailState {
            active_tools: view.tools.note(),
            open_todos,
            extra: self.tools.deferred_note(view).into_iter().collect(),
        })
    }

    /// Commits the step's last message (the answer, or the tool results), if any, with the
    /// ends of the calls left to it, the step's record and what its usage taught about token
    /// counts, in one store call, then reports the step finished. `ends`: the step ends the
    /// turn, and the session's status after it is committed with it.
    async fn finish_step(
        &mut self,
        sink: &EventSink,
        turn: i64,
        report: StepReport,
        message: Option<Message>,
        finished: Vec<(String, ToolCallFinish)>,
        ends: Option<SessionStatus>,
    ) -> Result<(), AgentError> {
        let duration_ms = u64::try_from(report.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let record = StepRecord {
            turn,
            step: i64::from(report.step),
            stop_reason: report.stop_reason.to_string(),
            input_tokens: report.usage.input_tokens,
            output_tokens: report.usage.output_tokens,
            cache_read_tokens: report.usage.cache_read_tokens,
            cache_write_tokens: report.usage.cache_write_tokens,
            request_bytes: report.metrics.request_bytes,
            prefix_bytes: report.metrics.prefix_bytes,
            prefix_ratio: report.metrics.prefix_ratio,
            cache_break: report.metrics.cache_break.clone(),
            strategy: Some(report.strategy.as_str().to_owned()),
            duration_ms,
        };
        // Counted now and stored with the message, as `append` does.
        let tokens = message.as_ref().map(|m| self.context.count_message(m));
        let commit = StepCommit {
            turn,
            message: message.as_ref().zip(tokens).map(|(m, t)| (m, i64::try_from(t).ok())),
            finished,
            step: &record,
            state: report.calibration.map(|c| (CALIBRATION_KEY, serde_json::json!(c))).into_iter().collect(),
        };
        let steps = self.agent.store().steps();
        let seq = match ends {
            Some(status) => {
                let (seq, session) = steps.commit_last(&self.record.id, commit, status).await?;
                self.record = session;
                self.turn_ended = true;
                seq
            }
            None => steps.commit(&self.record.id, commit).await?,
        };
        if let (Some(message), Some(tokens)) = (message, tokens) {
            self.history.push(message, seq, tokens);
        }
        sink.emit(AgentEvent::StepFinished {
            step: report.step,
            stop_reason: report.stop_reason,
            usage: report.usage,
            duration_ms,
            metrics: Some(report.metrics),
        });
        Ok(())
    }
}

/// How the turn ended, on its `invoke_agent` span.
fn record_turn(span: &tracing::Span, outcome: &Result<TurnOutcome, AgentError>) {
    match outcome {
        Ok(o) => {
            let end = match o.end {
                TurnEnd::Completed => "completed",
                TurnEnd::MaxSteps => "max_steps",
                TurnEnd::Cancelled => "cancelled",
                TurnEnd::Failed => "failed",
            };
            span.record("tackle.turn.end", end);
            span.record("tackle.turn.steps", u64::from(o.steps));
            span.record("gen_ai.usage.input_tokens", o.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", o.usage.output_tokens);
            if end == "failed" {
                // OTel's `error.type`: the failure's stable code (`rate_limited`, `loop_guard`, ...).
                let code = o.error.as_ref().map_or(tackle_protocol::ErrorCode::Other, TurnFailure::code);
                span.record("error.type", code.as_str());
                span.record("otel.status_code", "error");
            }
        }
        Err(_) => {
            span.record("tackle.turn.end", "failed");
            span.record("error.type", "_OTHER");
            span.record("otel.status_code", "error");
        }
    }
}

fn step_limit_result(call_id: &str, tool: &str) -> ToolResult {
    not_run(
        call_id,
        tool,
        "not run: the step limit of this turn was reached",
        "answer in text; the user can continue the session",
    )
}

/// The result of a call the loop answers without running it: why, and what to do instead.
fn not_run(call_id: &str, tool: &str, why: &str, hint: &str) -> ToolResult {
    let envelope =
        tackle_protocol::ToolError::new(tool, tackle_protocol::ErrorCategory::Denied, why).with_hint(hint);
    ToolResult::error(call_id, envelope.to_json())
}

fn title_from(message: &str) -> String {
    let line = message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("untitled");
    match line.char_indices().nth(TITLE_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// Why an answer without tool calls is incomplete, when its stop reason says it was cut off: the
/// output token limit, the context window, or a Responses `incomplete` status.
fn cut_off(stop: &StopReason) -> Option<&str> {
    match stop {
        StopReason::MaxTokens | StopReason::ContextExceeded => Some(stop.as_str()),
        StopReason::Other(reason) if reason.starts_with("incomplete") => Some(reason),
        _ => None,
    }
}
