//! A turn's events as MCP `notifications/progress` to the client that asked for them.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tackle_protocol::AgentEvent;
use tackle_tools::EventSink;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Forwards progress while a turn runs; [`Progress::finish`] waits until every notification was
/// handed to the transport, so none arrives after the call's result.
pub(crate) struct Progress {
    sink: EventSink,
    forwarder: Option<JoinHandle<()>>,
}

impl Progress {
    /// Progress for `token` to `client`; without a token, a sink that drops every event.
    pub(crate) fn new(client: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let Some(token) = token else { return Self { sink: EventSink::discard(), forwarder: None } };
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let forwarder = tokio::spawn(async move {
            let mut progress = 0.0;
            while let Some(message) = rx.recv().await {
                // Progress must increase with every notification, whatever the total.
                progress += 1.0;
                let mut params = ProgressNotificationParam::new(token.clone(), progress);
                params.message = Some(message);
                if let Err(e) = client.notify_progress(params).await {
                    tracing::debug!(error = %e, "cannot send progress to the MCP client");
                    break;
                }
            }
        });
        let sink = EventSink::new(move |event| {
            if let Some(message) = describe(&event) {
                let _ = tx.send(message);
            }
        });
        Self { sink, forwarder: Some(forwarder) }
    }

    /// The sink the turn reports to.
    pub(crate) fn sink(&self) -> &EventSink {
        &self.sink
    }

    /// Waits until every notification is sent.
    pub(crate) async fn finish(self) {
        let Self { sink, forwarder } = self;
        drop(sink);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
    }
}

/// What a person watching the call learns from `event`; text deltas and other fine-grained
/// events are left out (one notification per step, tool call and approval).
fn describe(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::StepStarted { step, max_steps } => Some(format!("step {step} of at most {max_steps}")),
        AgentEvent::ToolCall { name, .. } => Some(format!("calling {name}")),
        AgentEvent::ToolResult { name, outcome, duration_ms, .. } => {
            let how = match outcome {
                tackle_protocol::ToolOutcome::Ok { .. } => "done",
                _ => "failed",
            };
            Some(format!("{name} {how} in {duration_ms} ms"))
        }
        AgentEvent::ApprovalRequested { tool, .. } => Some(format!("waiting for approval of {tool}")),
        AgentEvent::Retry { .. } => Some("retrying the model request".to_owned()),
        AgentEvent::ContextCompacted { .. } => Some("compacted the context".to_owned()),
        _ => None,
    }
}
