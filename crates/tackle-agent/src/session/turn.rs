//! The agent loop: one turn of a session, step by step.
//!
//! A step resolves which tools are callable (mask, skills, deferral; the definitions never
//! change), appends a tail note if the state it reports changed, builds and encodes the request
//! once (measuring prefix stability on the exact bytes), streams the model's answer, commits it,
//! runs the tool calls (concurrently when all are read-only or idempotent), commits their
//! results, and asks the loop guard whether to go on.

use std::time::Instant;

use tackle_context::Pressure;
use tackle_protocol::{
    AgentEvent, CacheBreakpoint, ContentBlock, Message, ModelRequest, StepMetrics, StopReason, ToolResult,
    TurnEnd, Usage,
};
use tackle_provider::ProviderError;
use tackle_store::{SessionStatus, SessionUpdate, StepCommit, StepRecord, ToolCallFinish};
use tackle_tools::{EventSink, HookEvent, HookPayload, HookScope, HookStop, PermissionMode, TurnState};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use tracing::field::Empty;

use super::loop_guard::{LoopGuard, Verdict};
use super::model_call::{ChatLabels, ModelCallError, call_model};
use super::tail_note::TailState;
use super::tool_calls::{CallBatch, plan_calls, run_calls, starts, unique_call_ids};
use crate::context::CALIBRATION_KEY;
use crate::context::{CompactReason, CompactionRequested};
use crate::invariants;
use crate::tools::{MaskStrategy, StepTools, StepView};
use crate::{AgentError, Session, ToolMask, TurnFailure, TurnInput, TurnOutcome};

use crate::tools::todo::NAME as TODO_TOOL;

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
        let (record, seq) =
            store.start_turn(&self.record.id, update, turn, &message, i64::try_from(tokens).ok()).await?;
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
        if let Ok(record) = store
            .update_session(&self.record.id, SessionUpdate { status: Some(status), ..Default::default() })
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

    async fn run_steps(
        &mut self,
        turn: i64,
        input: TurnInput,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let config = self.agent.config().clone();
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

        let mut guard = LoopGuard::new(config.loop_guard.clone());
        let turn_state = TurnState::default();
        // Tools that keep session state write through the turn's (possibly fenced) store.
        turn_state.insert(crate::tools::TurnStore(self.agent.store().clone()));
        if let Some(policy) = input.approval {
            turn_state.insert(policy);
        }
        // The mode of the turn's calls; `propose_plan` may change it mid-turn.
        turn_state.insert(self.mode);
        let hooks = self.agent.executor().script_hooks().clone();
        let mut stop_hook_active = false;
        // Questions tools ask (MCP elicitation): the turn's policy, else the agent's, else the
        // one matching the approval policy (see `tackle_tools::elicit`).
        let elicitation = &self.agent.inner.elicitation;
        if let Some(policy) = input.elicitation.clone().or_else(|| elicitation.policy.clone()) {
            turn_state.insert(policy);
        }
        if let Some(elicitor) = &elicitation.elicitor {
            turn_state.insert(tackle_tools::TurnElicitor(std::sync::Arc::clone(elicitor)));
        }
        let mut usage = Usage::default();
        let mut fallback_warned = false;
        let session_id = self.record.id.clone();
        let outcome = |steps: u32, end: TurnEnd, text: String, usage: Usage, error: Option<TurnFailure>| {
            TurnOutcome { session_id: session_id.clone(), steps, end, text, usage, error }
        };
        let cancelled = || Some(TurnFailure::Cancelled);
        let mut step = 0;
        while step < max_steps {
            step += 1;
            let last = step == max_steps;
            if cancel.is_cancelled() {
                return Ok(outcome(step - 1, TurnEnd::Cancelled, String::new(), usage, cancelled()));
            }
            sink.emit(AgentEvent::StepStarted { step, max_steps });
            let started = Instant::now();

            // The session's tool state, read once for the whole step; plan mode narrows the
            // step to the tools that run in it.
            let plan_mask = (turn_state.get::<PermissionMode>() == Some(PermissionMode::Plan))
                .then(|| self.plan_mask(mask.as_ref()));
            let step_mask = plan_mask.as_ref().or(mask.as_ref());
            let view = self.tools.step(&self.agent, &self.record.id, step_mask, last).await?;
            let tools = &view.tools;
            sink.emit(AgentEvent::ToolsResolved {
                step,
                active: tools.active.clone(),
                inactive: tools.inactive.clone(),
                strategy: tools.strategy.as_str().to_owned(),
            });
            if tools.strategy == MaskStrategy::TailNote
                && !fallback_warned
                && self.agent.provider().capabilities().allowed_tools_unverified
            {
                fallback_warned = true;
                sink.emit(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::StrategyFallback,
                    message:
                        "this server is not known to accept allowed_tools: the active tools are stated in a \
                              tail note and enforced by the executor (set openai_dialect = \"openai\" if it \
                              accepts them)"
                            .into(),
                });
            }
            if !last {
                let state = self.tail_state(&view).await?;
                if let Some(note) = self.notes.next(&state) {
                    self.append(turn, note).await?;
                }
            }

            // Keep the request inside the context window: compact past the trigger, refuse past
            // the hard block. A provider that still finds it too long triggers one more
            // compaction and one retry.
            let mut context_retried = false;
            let (response, metrics) = loop {
                let thresholds = config.context.thresholds;
                let mut budget = self.context.budget(&self.history);
                if thresholds.pressure(&budget) != Pressure::Fine {
                    self.compact(self.turn_start, CompactReason::Threshold, sink).await?;
                    budget = self.context.budget(&self.history);
                    if thresholds.pressure(&budget) == Pressure::Block {
                        let failure = TurnFailure::ContextFull { percent: budget.percent() };
                        return Ok(outcome(step, TurnEnd::Failed, String::new(), usage, Some(failure)));
                    }
                }
                let request = self.build_request(tools);
                let encoded = self.agent.provider().encode(&request);
                self.last_request_len = request.messages.len();
                // The request only borrowed the history: dropping it lets the history grow
                // without a copy.
                drop(request);
                let encoded = match encoded {
                    Ok(e) => e,
                    Err(e) => {
                        let failure = TurnFailure::Encode(e.to_string());
                        return Ok(outcome(step, TurnEnd::Failed, String::new(), usage, Some(failure)));
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
                    sink.emit(AgentEvent::Warning { code: tackle_protocol::WarningCode::CacheBreak,
                        message: format!("the request prefix changed at {path}; the provider cache is invalidated from there"),
                    });
                }
                let labels = ChatLabels {
                    model: &config.model,
                    max_output_tokens: config.max_output_tokens,
                    conversation: self.record.id.as_str(),
                    record_content: config.telemetry.record_content,
                };
                match call_model(self.agent.provider(), encoded, sink, cancel, &labels).await {
                    Err(ModelCallError::Provider(ProviderError::ContextExceeded { message }))
                        if !context_retried =>
                    {
                        context_retried = true;
                        tracing::warn!(session = %self.record.id, %message, "provider reported context exceeded; compacting");
                        let report =
                            self.compact(self.turn_start, CompactReason::ContextExceeded, sink).await?;
                        if report.tokens_after >= report.tokens_before
                            && report.messages_after == report.messages_before
                        {
                            // Nothing shrank: the same request would get the same answer.
                            let message = format!(
                                "{message} (compaction found nothing to shrink: the current turn is kept whole, so \
                                 the request was not sent again; send a shorter message or start a new session)"
                            );
                            break (
                                Err(ModelCallError::Provider(ProviderError::ContextExceeded { message })),
                                metrics,
                            );
                        }
                    }
                    other => break (other, metrics),
                }
            };
            let response = match response {
                Ok(r) => r,
                Err(ModelCallError::Cancelled { partial }) => {
                    let text = partial.text();
                    if !text.is_empty() {
                        // Keep what the user already saw; drop half-streamed tool calls.
                        self.append(turn, Message::assistant(format!("{text}\n[cancelled]"))).await?;
                    }
                    return Ok(outcome(step, TurnEnd::Cancelled, text, usage, cancelled()));
                }
                Err(ModelCallError::Provider(e)) => {
                    return Ok(outcome(
                        step,
                        TurnEnd::Failed,
                        String::new(),
                        usage,
                        Some(TurnFailure::Provider(e)),
                    ));
                }
            };
            usage.add(&response.usage);
            if let Some(calibration) =
                self.context.observe_usage(self.last_request_len, response.usage.input_tokens)
            {
                self.agent.store().set_state(&self.record.id, CALIBRATION_KEY, &calibration).await?;
            }
            let report = StepReport {
                step,
                stop_reason: response.stop_reason.clone(),
                usage: response.usage,
                started,
                metrics,
                strategy: tools.strategy,
            };
            let text = response.text();
            let mut response = response;
            // Every call runs once, whatever ids the model used: a reused id gets a fresh one
            // before the message is committed, so the history and the audit stay one-to-one.
            unique_call_ids(self, &mut response.content, sink).await?;
            let calls: Vec<_> = response.tool_uses().cloned().collect();
            let message = response.into_message();

            if calls.is_empty() {
                let cut = cut_off(&report.stop_reason).map(str::to_owned);
                let answer = (!message.is_empty()).then_some(message);
                self.finish_step(sink, turn, report, answer, Vec::new()).await?;
                if let Some(reason) = cut {
                    // What was said stays in the history; the turn did not complete.
                    let failure = TurnFailure::Truncated { reason };
                    return Ok(outcome(step, TurnEnd::Failed, text, usage, Some(failure)));
                }
                if !last && hooks.has(HookEvent::Stop) {
                    let payload =
                        HookPayload::Stop { stop_hook_active, last_assistant_message: text.clone() };
                    let done = hooks.run_event(&payload, &self.hook_scope_in(&turn_state), sink).await;
                    if let Some(why) = done.stop {
                        sink.emit(AgentEvent::Warning {
                            code: tackle_protocol::WarningCode::HookStopped,
                            message: format!("a Stop hook stopped the turn: {why}"),
                        });
                    } else if let Some(why) = done.blocked {
                        // The hook wants more work: its reason is the model's next instruction.
                        stop_hook_active = true;
                        self.append(turn, Message::user(format!("[Stop hook] {why}"))).await?;
                        continue;
                    }
                }
                if last && step > 1 {
                    let note = TurnFailure::MaxSteps { limit: max_steps, calls_pending: false };
                    sink.emit(AgentEvent::Warning {
                        code: tackle_protocol::WarningCode::MaxSteps,
                        message: note.to_string(),
                    });
                    return Ok(outcome(step, TurnEnd::MaxSteps, text, usage, Some(note)));
                }
                return Ok(outcome(step, TurnEnd::Completed, text, usage, None));
            }

            if last {
                // The model called tools although tool choice was `none`: answer each call so the
                // history stays valid, run nothing.
                self.append(turn, message).await?;
                let results = calls.iter().map(|c| step_limit_result(&c.id, &c.name)).collect::<Vec<_>>();
                self.finish_step(sink, turn, report, Some(Message::tool_results(results)), Vec::new())
                    .await?;
                let note = TurnFailure::MaxSteps { limit: max_steps, calls_pending: true };
                sink.emit(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::MaxSteps,
                    message: note.to_string(),
                });
                return Ok(outcome(step, TurnEnd::MaxSteps, text, usage, Some(note)));
            }

            // The message and its calls, recorded as running, are committed together before
            // any call runs.
            let batch = CallBatch { session: self, view: &view, turn_state: &turn_state, sink, cancel };
            let planned = plan_calls(&batch, &calls);
            let begun = self.append_with_calls(turn, message, &starts(&planned)).await?;
            let batch = CallBatch { session: self, view: &view, turn_state: &turn_state, sink, cancel };
            let executed = run_calls(batch, &planned, begun).await?;
            if calls.iter().any(|c| c.name == TODO_TOOL) {
                self.open_todos = None;
            }
            let results: Vec<ToolResult> = executed.iter().map(|r| r.result.clone()).collect();
            let finished = executed.iter().filter_map(|r| r.finish.clone()).collect();
            self.finish_step(sink, turn, report, Some(Message::tool_results(results)), finished).await?;

            let mut stop = None;
            for (call, done) in calls.iter().zip(&executed) {
                let args =
                    call.input.as_json().cloned().unwrap_or_else(|| call.input.to_wire_string().into());
                match guard.observe(&done.tool, &args, done.outcome.as_ref().err()) {
                    Verdict::Continue => {}
                    Verdict::Remind(text) => {
                        sink.emit(AgentEvent::Warning {
                            code: tackle_protocol::WarningCode::RepeatedFailure,
                            message: text.clone(),
                        });
                        self.append(turn, Message::user(text)).await?;
                    }
                    Verdict::Stop(message) => stop = stop.or(Some(message)),
                }
            }
            if let Some(message) = stop {
                return Ok(outcome(
                    step,
                    TurnEnd::Failed,
                    text,
                    usage,
                    Some(TurnFailure::LoopGuard(message)),
                ));
            }
            if let Some(mode) = turn_state.get::<PermissionMode>() {
                self.mode = mode;
            }
            if let Some(HookStop(why)) = turn_state.get::<HookStop>() {
                sink.emit(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::HookStopped,
                    message: format!("a hook stopped the turn: {why}"),
                });
                return Ok(outcome(step, TurnEnd::Completed, text, usage, None));
            }
            if cancel.is_cancelled() {
                return Ok(outcome(step, TurnEnd::Cancelled, text, usage, cancelled()));
            }
            if turn_state.get::<CompactionRequested>().is_some_and(|c| c.0) {
                turn_state.insert(CompactionRequested(false));
                self.compact(self.turn_start, CompactReason::Forced, sink).await?;
            }
        }
        // Unreachable in practice: the last step always returns above.
        Ok(outcome(step, TurnEnd::MaxSteps, String::new(), usage, None))
    }

    /// The request of a step: frozen tools, the step's tool choice, the history (lent, not
    /// copied; repaired first only if it is not provider-valid), cache breakpoints after the
    /// system prompt and at the end of the history (and where the previous request ended, so
    /// its cache entry is read).
    pub(crate) fn build_request(&mut self, tools: &StepTools) -> ModelRequest {
        if !invariants::is_valid(self.history.messages()) {
            let (repaired, repairs) = invariants::enforce(self.history.messages());
            tracing::warn!(session = %self.record.id, ?repairs, "history repaired before the request");
            // The repaired history replaces the old one: positions no longer match the store.
            let context = &self.context;
            self.history.replace_all(repaired, |m| context.count_message(m));
            self.context.forget_report();
        }
        let config = self.agent.config();
        let last = self.history.len().saturating_sub(1);
        let previous = self.last_request_len.saturating_sub(1);
        let mut request = ModelRequest::new(config.model.clone(), self.history.lend());
        request.system = self.system.clone();
        request.tools = self.tools.catalog().specs().clone();
        request.tool_choice = tools.tool_choice.clone();
        request.max_output_tokens = config.max_output_tokens;
        request.prompt_cache_key = Some(self.record.id.to_string());
        request.cache_breakpoints = vec![CacheBreakpoint::System, CacheBreakpoint::Message { index: last }];
        if self.last_request_len > 0 && previous < last {
            request.cache_breakpoints.push(CacheBreakpoint::Message { index: previous });
        }
        request
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
            // Only the todo tool keeps a list: a session without it has none to read.
            None if !self.tools.catalog().contains(TODO_TOOL) => {
                self.open_todos = Some(Vec::new());
                Vec::new()
            }
            None => {
                let todos = self.agent.store().open_todos(&self.record.id).await?;
                let todos: Vec<String> = todos.into_iter().map(|t| format!("{}. {}", t.id, t.text)).collect();
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
    /// ends of the calls left to it and the step's record, in one store call, then reports
    /// the step finished.
    async fn finish_step(
        &mut self,
        sink: &EventSink,
        turn: i64,
        report: StepReport,
        message: Option<Message>,
        finished: Vec<(String, ToolCallFinish)>,
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
        };
        let seq = self.agent.store().commit_step(&self.record.id, commit).await?;
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
    let envelope = tackle_protocol::ToolError::new(
        tool,
        tackle_protocol::ErrorCategory::Denied,
        "not run: the step limit of this turn was reached",
    )
    .with_hint("answer in text; the user can continue the session");
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
