//! Running the tool calls of one step: name repair, at-most-once audit, concurrency, events.
//!
//! Each call is an `execute_tool {name}` span (target `gen_ai`, OpenTelemetry GenAI
//! conventions) with the tool's name, the call id and its outcome (`ok` or the error category
//! the model saw, also as `error.type`); arguments and result only when content is opted in.

use std::time::Duration;

use std::collections::HashSet;

use tackle_protocol::{AgentEvent, ContentBlock, ToolError, ToolOutcome, ToolResult, ToolUse, WarningCode};
use tackle_store::{BeginOutcome, ToolCallFinish, ToolCallStatus};
use tackle_tools::{CallOptions, EventSink, ToolContext, TurnState};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use tracing::field::Empty;

use crate::conversation::interrupted_result;
use crate::tools::repair_tool_name;
use crate::tools::{Planned, StepView};
use crate::{AgentError, Session};

/// Characters of a successful output shown in `tool_result` events.
const PREVIEW_CHARS: usize = 300;

/// What the calls of one step share.
pub(crate) struct CallBatch<'a> {
    pub(crate) session: &'a Session,
    /// The step's tools and the session's tool state, read once at the step's start.
    pub(crate) view: &'a StepView,
    pub(crate) turn_state: &'a TurnState,
    pub(crate) sink: &'a EventSink,
    pub(crate) cancel: &'a CancellationToken,
}

/// One finished call, as the loop needs it.
pub(crate) struct ExecutedCall {
    /// The tool that ran (after name repair).
    pub(crate) tool: String,
    /// `Err` with the envelope when it failed.
    pub(crate) outcome: Result<(), ToolError>,
    /// What the model sees.
    pub(crate) result: ToolResult,
    /// The call's end, when it is committed with the step's results (call id, how it ended).
    pub(crate) finish: Option<(String, ToolCallFinish)>,
}

/// Gives every tool use of a new assistant message an id no earlier call of the session has
/// (in the history or the audit) and no other call of the message has: some models, proxies
/// and gateways reuse ids, and a reused id must not be mistaken for a call that already ran.
/// A reused id becomes `<id>_<n>` (provider-valid: letters, digits, `_`, `-` stay so), and a
/// `tool_call_id_reused` warning says so.
pub(crate) async fn unique_call_ids(
    session: &Session,
    content: &mut [ContentBlock],
    sink: &EventSink,
) -> Result<(), AgentError> {
    let ids: Vec<String> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.id.to_string()),
            _ => None,
        })
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let store = session.agent.store();
    let sid = &session.record.id;
    let mut taken: HashSet<String> =
        session.history.messages().iter().flat_map(|m| m.tool_uses().map(|u| u.id.to_string())).collect();
    // Every audited call was committed as a tool use first, so a history that holds the whole
    // session knows every id; after compaction the audit is asked too.
    if !session.history.is_complete() {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        taken.extend(store.calls().recorded_ids(sid, &ids).await?);
    }
    for block in content.iter_mut() {
        let ContentBlock::ToolUse(call) = block else { continue };
        if !taken.contains(call.id.as_str()) {
            taken.insert(call.id.to_string());
            continue;
        }
        // A fresh id, checked against the audit too (it may hold ids the history lost to
        // compaction).
        let mut n = 2u32;
        let fresh = loop {
            let candidate = format!("{}_{n}", call.id);
            if !taken.contains(&candidate)
                && (session.history.is_complete()
                    || store.calls().recorded_ids(sid, &[candidate.as_str()]).await?.is_empty())
            {
                break candidate;
            }
            n += 1;
        };
        sink.emit(AgentEvent::Warning {
            code: WarningCode::ToolCallIdReused,
            message: format!(
                "the model reused the tool-call id {:?} ({}); the call runs as {fresh:?}",
                call.id, call.name
            ),
        });
        taken.insert(fresh.clone());
        call.id = fresh.into();
    }
    Ok(())
}

/// The step's calls as they will run: names repaired (with a warning), `call_tool` calls of
/// deferred tools unwrapped, calls the step may not make refused.
pub(crate) fn plan_calls(
    session: &Session,
    view: &StepView,
    sink: &EventSink,
    calls: &[ToolUse],
) -> Vec<Planned> {
    let registry = session.agent.executor().registry();
    let names = registry.names();
    let resolved: Vec<ToolUse> = calls
        .iter()
        .map(|c| match repair_tool_name(&c.name, &names) {
            Some(fixed) => {
                sink.emit(AgentEvent::Warning {
                    code: tackle_protocol::WarningCode::ToolNameRepaired,
                    message: format!("the model called `{}`; ran `{fixed}`", c.name),
                });
                ToolUse { name: fixed.to_owned(), ..c.clone() }
            }
            None => c.clone(),
        })
        .collect();
    // Deferred tools: `call_tool(name, arguments)` runs the named tool (found by tool_search)
    // as an ordinary call with the same id; the history keeps the call as the model made it.
    session.tools.plan_calls(view, resolved)
}

/// The calls of `planned` that will run, as the audit records them when the assistant message
/// is committed (see [`tackle_store::Calls::append_with_calls`]), with their arguments.
pub(crate) fn starts(planned: &[Planned]) -> Vec<(String, String, serde_json::Value)> {
    planned
        .iter()
        .filter_map(|p| match p {
            Planned::Run { call, .. } => {
                Some((call.id.to_string(), call.name.clone(), call.input.to_value()))
            }
            Planned::Refuse { .. } => None,
        })
        .collect()
}

/// Runs the `planned` calls, each recorded as running already (`begun`, one per call that
/// runs, in order), concurrently when every one is read-only or idempotent, else in order;
/// results come back in call order. In order, the last call's end is left to the step's
/// commit (it is committed with the results, in one transaction); every other call's end is
/// committed as it finishes, so a crash never loses a result that is in.
pub(crate) async fn run_calls(
    batch: CallBatch<'_>,
    planned: &[Planned],
    begun: Vec<BeginOutcome>,
) -> Result<Vec<ExecutedCall>, AgentError> {
    let registry = batch.session.agent.executor().registry();
    let mut begun = begun.into_iter();
    let calls: Vec<(&Planned, Option<BeginOutcome>)> = planned
        .iter()
        .map(|p| match p {
            Planned::Run { .. } => (p, begun.next()),
            Planned::Refuse { .. } => (p, None),
        })
        .collect();
    let parallel = planned.len() > 1
        && planned.iter().all(|p| {
            matches!(p, Planned::Run { call, .. } if registry.get(&call.name).is_some_and(|t| {
                let a = t.spec().annotations;
                a.read_only || a.idempotent || a.concurrent
            }))
        });
    if parallel {
        let futures = calls.into_iter().map(|(p, b)| run_planned(&batch, p, b, false));
        futures::future::join_all(futures).await.into_iter().collect()
    } else {
        let mut out = Vec::with_capacity(calls.len());
        let last = calls.len().saturating_sub(1);
        for (i, (p, b)) in calls.into_iter().enumerate() {
            out.push(run_planned(&batch, p, b, i == last).await?);
        }
        Ok(out)
    }
}

async fn run_planned(
    batch: &CallBatch<'_>,
    planned: &Planned,
    begun: Option<BeginOutcome>,
    defer_finish: bool,
) -> Result<ExecutedCall, AgentError> {
    let call = match planned {
        Planned::Run { call, .. } | Planned::Refuse { call, .. } => call,
    };
    let span = tracing::info_span!(target: "gen_ai", "execute_tool",
        "otel.name" = %format_args!("execute_tool {}", call.name),
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = call.name.as_str(),
        "gen_ai.tool.call.id" = call.id.as_str(),
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "tackle.tool.outcome" = Empty,
        "error.type" = Empty,
    );
    let done = run_planned_in_span(batch, planned, begun, defer_finish).instrument(span.clone()).await;
    if !span.is_disabled() {
        let content = batch.session.agent.config().telemetry.record_content;
        match &done {
            Ok(done) => {
                let outcome = match &done.outcome {
                    Ok(()) => "ok",
                    Err(e) => {
                        span.record("error.type", e.category.as_str());
                        span.record("otel.status_code", "error");
                        e.category.as_str()
                    }
                };
                span.record("tackle.tool.outcome", outcome);
                if content {
                    span.record("gen_ai.tool.call.arguments", call.input.to_wire_string().as_str());
                    span.record("gen_ai.tool.call.result", done.result.content.as_str());
                }
            }
            Err(_) => {
                span.record("tackle.tool.outcome", "_OTHER");
                span.record("error.type", "_OTHER");
                span.record("otel.status_code", "error");
            }
        }
    }
    done
}

async fn run_planned_in_span(
    batch: &CallBatch<'_>,
    planned: &Planned,
    begun: Option<BeginOutcome>,
    defer_finish: bool,
) -> Result<ExecutedCall, AgentError> {
    match planned {
        Planned::Run { call, unwrapped } => {
            let allowed = if *unwrapped { None } else { batch.view.tools.allowed() };
            run_one(batch, call, allowed, begun, defer_finish).await
        }
        Planned::Refuse { call, error } => {
            batch.sink.emit(AgentEvent::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                args: call.input.to_value(),
            });
            let result = ToolResult::error(&call.id, error.to_json());
            let outcome = Err(error.clone());
            emit_result(
                batch.sink,
                call,
                &result,
                &outcome,
                result.content.len() as u64,
                false,
                None,
                Duration::ZERO,
            );
            Ok(ExecutedCall { tool: call.name.clone(), outcome, result, finish: None })
        }
    }
}

async fn run_one(
    batch: &CallBatch<'_>,
    call: &ToolUse,
    allowed: Option<&[String]>,
    begun: Option<BeginOutcome>,
    defer_finish: bool,
) -> Result<ExecutedCall, AgentError> {
    let session = batch.session;
    let store = session.agent.store();
    let sid = &session.record.id;
    let args = call.input.to_value();
    batch.sink.emit(AgentEvent::ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        args: args.clone(),
    });

    let begun = match begun {
        Some(b) => b,
        None => store.calls().begin(sid, &call.id, &call.name, &args).await?,
    };
    match begun {
        BeginOutcome::Started => {}
        BeginOutcome::AlreadyFinished(record) => {
            // This call id already ran (a retried step or a resumed session): never run it twice.
            let result = record.result.unwrap_or_else(|| interrupted_result(&call.id, &call.name));
            let outcome = match record.envelope {
                Some(e) => Err(e),
                None => Ok(()),
            };
            emit_result(
                batch.sink,
                call,
                &result,
                &outcome,
                record.bytes,
                false,
                record.locator,
                Duration::ZERO,
            );
            return Ok(ExecutedCall { tool: call.name.clone(), outcome, result, finish: None });
        }
        BeginOutcome::AlreadyRunning(_) => {
            let result = interrupted_result(&call.id, &call.name);
            let envelope: ToolError = serde_json::from_str(&result.content).unwrap_or_else(|_| {
                ToolError::new(&call.name, tackle_protocol::ErrorCategory::Interrupted, "interrupted")
            });
            return Ok(ExecutedCall {
                tool: call.name.clone(),
                outcome: Err(envelope),
                result,
                finish: None,
            });
        }
    }

    let ctx = ToolContext {
        session_id: sid.clone(),
        call_id: call.id.clone(),
        workspace: session.workspace.clone(),
        cancel: batch.cancel.child_token(),
        turn: batch.turn_state.clone(),
        progress: progress_sink(batch.sink),
        events: batch.sink.clone(),
        // The executor gives the call its own budget of stored output.
        spool: Default::default(),
        wait_clock: Default::default(),
    };
    let report = session.agent.executor().execute(call, ctx, &CallOptions { allowed }).await;
    let outcome = match &report.outcome {
        Ok(_) => Ok(()),
        Err(e) => Err(e.clone()),
    };
    let status = match &outcome {
        Ok(()) => ToolCallStatus::Ok,
        Err(e) if e.category == tackle_protocol::ErrorCategory::Interrupted => ToolCallStatus::Interrupted,
        Err(_) => ToolCallStatus::Error,
    };
    let finish = ToolCallFinish {
        status,
        result: report.result.clone(),
        envelope: outcome.clone().err(),
        bytes: report.bytes,
        truncated: report.truncated,
        locator: report.locator.clone(),
        duration_ms: u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
    };
    let finish = if defer_finish {
        Some((call.id.to_string(), finish))
    } else {
        store.calls().finish(sid, &call.id, finish).await?;
        None
    };
    emit_result(
        batch.sink,
        call,
        &report.result,
        &outcome,
        report.bytes,
        report.truncated,
        report.locator.clone(),
        report.duration,
    );
    let _ = report.lines;
    Ok(ExecutedCall { tool: report.tool.clone(), outcome, result: report.result, finish })
}

#[allow(clippy::too_many_arguments)]
fn emit_result(
    sink: &EventSink,
    call: &ToolUse,
    result: &ToolResult,
    outcome: &Result<(), ToolError>,
    bytes: u64,
    truncated: bool,
    locator: Option<String>,
    duration: Duration,
) {
    let outcome = match outcome {
        Ok(()) => ToolOutcome::Ok { preview: preview(&result.content), tail: tail(&result.content) },
        Err(e) => ToolOutcome::Error { envelope: e.clone() },
    };
    sink.emit(AgentEvent::ToolResult {
        id: call.id.clone(),
        name: call.name.clone(),
        outcome,
        bytes,
        lines: result.content.lines().count() as u64,
        truncated,
        locator,
        duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    });
}

/// The last lines of an output longer than its preview: at most 8 lines and `PREVIEW_CHARS`
/// characters, starting at a line boundary.
fn tail(text: &str) -> Option<String> {
    if text.chars().count() <= PREVIEW_CHARS {
        return None;
    }
    let trimmed = text.trim_end_matches('\n');
    let mut start = trimmed.len();
    for (lines, (i, _)) in trimmed.rmatch_indices('\n').enumerate() {
        if lines == 8 || trimmed[i + 1..].chars().count() > PREVIEW_CHARS {
            break;
        }
        start = i + 1;
    }
    if start == trimmed.len() {
        // One last line longer than the budget: its end.
        let skip = trimmed.chars().count().saturating_sub(PREVIEW_CHARS);
        return Some(format!("…{}", trimmed.chars().skip(skip).collect::<String>()));
    }
    Some(trimmed[start..].to_owned())
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

fn progress_sink(sink: &EventSink) -> tackle_tools::ProgressSink {
    let sink = sink.clone();
    tackle_tools::ProgressSink::new(move |p| {
        sink.emit(AgentEvent::Custom {
            name: "tool_progress".into(),
            data: serde_json::json!({ "call_id": p.call_id, "message": p.message }),
        })
    })
}

#[cfg(test)]
mod tail_tests {
    use super::{PREVIEW_CHARS, tail};

    #[test]
    fn short_outputs_have_no_tail() {
        assert_eq!(tail("exit code: 0\nstdout:\nhi\n"), None);
    }

    #[test]
    fn the_tail_is_the_last_lines_within_the_budget() {
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text).unwrap();
        assert_eq!(t.lines().count(), 8);
        assert!(t.starts_with("line 192") && t.ends_with("line 199"), "{t}");
    }

    #[test]
    fn one_huge_line_keeps_its_end_on_a_char_boundary() {
        let text = "é".repeat(PREVIEW_CHARS * 3);
        let t = tail(&text).unwrap();
        assert_eq!(t.chars().count(), PREVIEW_CHARS + 1);
        assert!(t.starts_with('…'));
    }
}
