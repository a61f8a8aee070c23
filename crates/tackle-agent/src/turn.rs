//! The agent loop: one turn of a session, step by step.
//!
//! A step builds the request from the frozen tool list and the repaired history, streams the
//! model's answer, commits it, runs the tool calls (concurrently when all are read-only or
//! idempotent), commits their results, and asks the loop guard whether to go on.

use std::time::Instant;

use tackle_protocol::{
    AgentEvent, Message, ModelRequest, StopReason, ToolChoice, ToolResult, TurnEnd, Usage,
};
use tackle_store::{SessionStatus, SessionUpdate};
use tackle_tools::{EventSink, TurnState};
use tokio_util::sync::CancellationToken;

use crate::invariants;
use crate::loop_guard::{LoopGuard, Verdict};
use crate::model_call::{ModelCallError, call_model};
use crate::tail_note::TailState;
use crate::tool_calls::{CallBatch, run_calls};
use crate::{AgentError, Session, TurnInput, TurnOutcome};

/// Longest session title derived from a first message.
const TITLE_CHARS: usize = 60;

impl Session {
    /// Runs one turn: the user's message, then model steps and tool calls until the model
    /// answers without tools, the step limit, cancellation, or a stop by the loop guard.
    ///
    /// Every message is committed to the store before the next provider call, so a crash loses
    /// at most the step in flight, and tool calls never run twice.
    pub async fn run_turn(
        &mut self,
        input: TurnInput,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let turn = self.next_turn;
        self.next_turn += 1;
        let store = self.agent.store().clone();
        let resumed = !self.history.is_empty();
        let mut update = SessionUpdate { status: Some(SessionStatus::Running), ..SessionUpdate::default() };
        if self.record.title.is_empty() {
            update.title = Some(title_from(&input.message));
        }
        self.record = store.update_session(&self.record.id, update).await?;
        sink.emit(AgentEvent::SessionStarted {
            session_id: self.record.id.clone(),
            provider: self.agent.provider().name().to_owned(),
            model: self.agent.config().model.clone(),
            resumed,
        });

        let outcome = self.run_steps(turn, input, sink, cancel).await;
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
        if let Some(error) = &outcome.error {
            let code = match outcome.end {
                TurnEnd::Cancelled => "cancelled",
                TurnEnd::MaxSteps => "max_steps",
                _ => "turn_failed",
            };
            if outcome.end != TurnEnd::MaxSteps {
                sink.emit(AgentEvent::Error { code: code.to_owned(), message: error.clone() });
            }
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
        self.close_open_calls(turn).await?;
        self.append(turn, Message::user(input.message)).await?;

        let mut guard = LoopGuard::new(config.loop_guard.clone());
        let turn_state = TurnState::default();
        let mut usage = Usage::default();
        let session_id = self.record.id.clone();
        let outcome = |steps: u32, end: TurnEnd, text: String, usage: Usage, error: Option<String>| {
            TurnOutcome { session_id: session_id.clone(), steps, end, text, usage, error }
        };
        let mut step = 0;
        while step < max_steps {
            step += 1;
            let last = step == max_steps;
            if cancel.is_cancelled() {
                return Ok(outcome(
                    step - 1,
                    TurnEnd::Cancelled,
                    String::new(),
                    usage,
                    Some("the turn was cancelled".into()),
                ));
            }
            sink.emit(AgentEvent::StepStarted { step, max_steps });
            let started = Instant::now();
            let request = self.build_request(last);
            let called = call_model(self.agent.provider(), &request, sink, cancel).await;
            // The request borrowed the history for the call; take it back.
            self.history = request.messages;

            let response = match called {
                Ok(r) => r,
                Err(ModelCallError::Cancelled { partial }) => {
                    let text = partial.text();
                    if !text.is_empty() {
                        // Keep what the user already saw; drop half-streamed tool calls.
                        self.append(turn, Message::assistant(format!("{text}\n[cancelled]"))).await?;
                    }
                    return Ok(outcome(
                        step,
                        TurnEnd::Cancelled,
                        text,
                        usage,
                        Some("the turn was cancelled".into()),
                    ));
                }
                Err(ModelCallError::Provider(e)) => {
                    let message = format!("model call failed: {e}");
                    return Ok(outcome(step, TurnEnd::Failed, String::new(), usage, Some(message)));
                }
            };
            usage.add(&response.usage);
            let stop_reason = response.stop_reason.clone();
            let step_usage = response.usage;
            let text = response.text();
            let calls: Vec<_> = response.tool_uses().cloned().collect();
            let message = response.into_message();
            if !message.is_empty() {
                self.append(turn, message).await?;
            }

            if calls.is_empty() {
                self.finish_step(sink, step, stop_reason, step_usage, started);
                if last && step > 1 {
                    let note = format!(
                        "reached the step limit ({max_steps}); the last step ran without tools. \
                         Send another message to continue, or raise --max-steps."
                    );
                    sink.emit(AgentEvent::Warning { code: "max_steps".into(), message: note.clone() });
                    return Ok(outcome(step, TurnEnd::MaxSteps, text, usage, Some(note)));
                }
                return Ok(outcome(step, TurnEnd::Completed, text, usage, None));
            }

            if last {
                // The model called tools although tool choice was `none`: answer each call so the
                // history stays valid, run nothing.
                let results = calls.iter().map(|c| step_limit_result(&c.id, &c.name)).collect::<Vec<_>>();
                self.append(turn, Message::tool_results(results)).await?;
                self.finish_step(sink, step, stop_reason, step_usage, started);
                let note = format!(
                    "reached the step limit ({max_steps}) with tool calls pending; they were not run"
                );
                sink.emit(AgentEvent::Warning { code: "max_steps".into(), message: note.clone() });
                return Ok(outcome(step, TurnEnd::MaxSteps, text, usage, Some(note)));
            }

            let batch = CallBatch { session: self, turn_state: &turn_state, sink, cancel };
            let reports = run_calls(batch, &calls).await?;
            let results: Vec<ToolResult> = reports.iter().map(|r| r.result.clone()).collect();
            self.append(turn, Message::tool_results(results)).await?;
            self.finish_step(sink, step, stop_reason, step_usage, started);

            let mut stop = None;
            for (call, report) in calls.iter().zip(&reports) {
                let args =
                    call.input.as_json().cloned().unwrap_or_else(|| call.input.to_wire_string().into());
                match guard.observe(&report.tool, &args, report.outcome.as_ref().err()) {
                    Verdict::Continue => {}
                    Verdict::Remind(text) => {
                        sink.emit(AgentEvent::Warning {
                            code: "repeated_failure".into(),
                            message: text.clone(),
                        });
                        self.append(turn, Message::user(text)).await?;
                    }
                    Verdict::Stop(message) => stop = stop.or(Some(message)),
                }
            }
            if let Some(message) = stop {
                return Ok(outcome(step, TurnEnd::Failed, text, usage, Some(message)));
            }
            if cancel.is_cancelled() {
                return Ok(outcome(
                    step,
                    TurnEnd::Cancelled,
                    text,
                    usage,
                    Some("the turn was cancelled".into()),
                ));
            }
            if let Some(note) = self.notes.next(&self.tail_state(&turn_state).await?) {
                self.append(turn, note).await?;
            }
        }
        // Unreachable in practice: the last step always returns above.
        Ok(outcome(step, TurnEnd::MaxSteps, String::new(), usage, None))
    }

    /// The request of the next step: frozen tools, repaired history, and on the last step tool
    /// choice `none` with the definitions unchanged. The history moves into the request (no copy
    /// of a long conversation per step); the caller moves it back after the call.
    pub(crate) fn build_request(&mut self, last_step: bool) -> ModelRequest {
        let history = std::mem::take(&mut self.history);
        let messages = if invariants::is_valid(&history) {
            history
        } else {
            let (repaired, repairs) = invariants::enforce(&history);
            tracing::warn!(session = %self.record.id, ?repairs, "history repaired before the request");
            repaired
        };
        let config = self.agent.config();
        let mut request = ModelRequest::new(config.model.clone(), messages);
        request.system = self.system.clone();
        request.tools = self.tools.clone();
        request.tool_choice = if last_step { ToolChoice::None } else { ToolChoice::Auto };
        request.max_output_tokens = config.max_output_tokens;
        request.prompt_cache_key = Some(self.record.id.clone());
        request
    }

    /// What the tail note should say after this step.
    async fn tail_state(&self, _turn: &TurnState) -> Result<TailState, AgentError> {
        let todos = self.agent.store().open_todos(&self.record.id).await?;
        Ok(TailState {
            active_tools: None,
            open_todos: todos.into_iter().map(|t| format!("{}. {}", t.id, t.text)).collect(),
            extra: Vec::new(),
        })
    }

    fn finish_step(
        &self,
        sink: &EventSink,
        step: u32,
        stop_reason: StopReason,
        usage: Usage,
        started: Instant,
    ) {
        sink.emit(AgentEvent::StepFinished {
            step,
            stop_reason,
            usage,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            metrics: None,
        });
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
