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
    /// Made by [`EventSink::discard`]: nobody sees the events.
    discards: bool,
}

impl EventSink {
    /// A sink that calls `f` for every event. It counts as watching the turn, whatever `f`
    /// does with the events: only [`EventSink::discard`] says nobody watches.
    pub fn new(f: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Self { send: Arc::new(f), discards: false }
    }

    /// A sink that drops every event, and says so ([`EventSink::discards`]): nothing waits for
    /// a turn's text as it is written, so the agent may ask the provider for whole answers
    /// instead of streams.
    ///
    /// ```
    /// use tackle_protocol::AgentEvent;
    /// use tackle_tools::EventSink;
    /// let sink = EventSink::discard();
    /// sink.emit(AgentEvent::TextDelta { text: "unseen".into() });
    /// assert!(sink.discards());
    /// assert!(!EventSink::new(|_| {}).discards(), "a callback watches, even one that drops events");
    /// ```
    pub fn discard() -> Self {
        Self { send: Arc::new(|_| {}), discards: true }
    }

    /// Whether the sink drops every event ([`EventSink::discard`]): nobody watches the turn.
    pub fn discards(&self) -> bool {
        self.discards
    }

    /// Sends one event.
    pub fn emit(&self, event: AgentEvent) {
        (self.send)(event);
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.discards { f.write_str("EventSink(discard)") } else { f.write_str("EventSink") }
    }
}
