//! Where runtime components send [`AgentEvent`]s.

use std::sync::Arc;

use tackle_protocol::AgentEvent;

/// A cheap, clonable callback receiving [`AgentEvent`]s (a channel sender, a logger, a test
/// collector). Front ends subscribe by giving the agent a sink.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tackle_protocol::AgentEvent;
/// use tackle_tools::EventSink;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = { let seen = seen.clone(); EventSink::new(move |e| seen.lock().unwrap().push(e)) };
/// sink.emit(AgentEvent::TextDelta { text: "hi".into() });
/// assert_eq!(seen.lock().unwrap().len(), 1);
/// ```
#[derive(Clone)]
pub struct EventSink {
    send: Arc<dyn Fn(AgentEvent) + Send + Sync>,
}

impl EventSink {
    /// A sink that calls `f` for every event.
    pub fn new(f: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Self { send: Arc::new(f) }
    }

    /// A sink that drops every event.
    pub fn discard() -> Self {
        Self::new(|_| {})
    }

    /// Sends one event.
    pub fn emit(&self, event: AgentEvent) {
        (self.send)(event);
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}
