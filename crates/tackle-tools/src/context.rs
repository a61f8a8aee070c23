//! Per-call context handed to every tool: no globals.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tackle_protocol::{SessionId, ToolCallId};
use tokio_util::sync::CancellationToken;

use crate::{EventSink, SpoolBudget};

/// Everything a tool call may use besides its arguments.
///
/// Cloning is cheap; all shared parts are reference-counted.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// Session the call belongs to.
    pub session_id: SessionId,
    /// Id of the tool call (as the model assigned it).
    pub call_id: ToolCallId,
    /// Workspace root: file tools and the shell are jailed inside it.
    pub workspace: PathBuf,
    /// Cancelled when the turn is cancelled or the call times out; long tools should watch it.
    pub cancel: CancellationToken,
    /// State shared by the calls of one turn.
    pub turn: TurnState,
    /// Where a tool reports progress of long work.
    pub progress: ProgressSink,
    /// Where runtime events of the turn go (approval requests, extension events).
    pub events: EventSink,
    /// The budget of this call's full output (see [`crate::Spool`]); the executor gives each
    /// call a fresh one of [`crate::ExecLimits::max_spool_bytes`].
    pub spool: SpoolBudget,
    /// Time the call waits for a person (an elicitation); the executor does not count it against
    /// the call's timeout.
    pub wait_clock: WaitClock,
}

impl ToolContext {
    /// A context for a call, with fresh turn state, a new cancellation token, and sinks that drop
    /// everything.
    ///
    /// ```
    /// use tackle_tools::ToolContext;
    /// let ctx = ToolContext::new("session-1", "call-1", std::env::temp_dir());
    /// assert!(!ctx.cancel.is_cancelled());
    /// ```
    pub fn new(session_id: impl Into<SessionId>, call_id: impl Into<ToolCallId>, workspace: PathBuf) -> Self {
        Self {
            session_id: session_id.into(),
            call_id: call_id.into(),
            workspace,
            cancel: CancellationToken::new(),
            turn: TurnState::default(),
            progress: ProgressSink::discard(),
            events: EventSink::discard(),
            spool: SpoolBudget::default(),
            wait_clock: WaitClock::default(),
        }
    }

    /// The same context for another call of the same turn.
    pub fn for_call(&self, call_id: impl Into<ToolCallId>) -> Self {
        Self {
            call_id: call_id.into(),
            cancel: self.cancel.child_token(),
            spool: SpoolBudget::new(usize::try_from(self.spool.cap()).unwrap_or(usize::MAX)),
            wait_clock: WaitClock::default(),
            ..self.clone()
        }
    }
}

/// Typed values shared by the tool calls of one turn (one value per type).
///
/// ```
/// use tackle_tools::TurnState;
/// #[derive(Clone, PartialEq, Debug, Default)]
/// struct FilesRead(u32);
/// let state = TurnState::default();
/// state.insert(FilesRead(1));
/// state.update(|n: &mut FilesRead| n.0 += 1);
/// assert_eq!(state.get::<FilesRead>(), Some(FilesRead(2)));
/// ```
#[derive(Clone, Default)]
pub struct TurnState {
    values: Arc<Mutex<HashMap<TypeId, Box<dyn Any + Send + Sync>>>>,
}

impl TurnState {
    /// Stores a value, replacing any value of the same type.
    pub fn insert<T: Any + Send + Sync>(&self, value: T) {
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// A copy of the value of type `T`, if any.
    pub fn get<T: Any + Send + Sync + Clone>(&self) -> Option<T> {
        let values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref::<T>()).cloned()
    }

    /// Changes the value of type `T` in place, starting from `T::default()` when absent.
    pub fn update<T: Any + Send + Sync + Default, R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        let entry = values.entry(TypeId::of::<T>()).or_insert_with(|| Box::new(T::default()));
        match entry.downcast_mut::<T>() {
            Some(v) => f(v),
            // Unreachable: the map is keyed by the value's own TypeId.
            None => f(&mut T::default()),
        }
    }
}

impl std::fmt::Debug for TurnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.values.lock().map(|v| v.len()).unwrap_or(0);
        f.debug_struct("TurnState").field("values", &n).finish()
    }
}

/// A progress message from a running tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolProgress {
    /// Call the message belongs to.
    pub call_id: String,
    /// What the tool is doing.
    pub message: String,
}

/// Receives [`ToolProgress`] messages; front ends show them as status lines.
#[derive(Clone)]
pub struct ProgressSink {
    send: Arc<dyn Fn(ToolProgress) + Send + Sync>,
}

impl ProgressSink {
    /// A sink that calls `f` for every message.
    pub fn new(f: impl Fn(ToolProgress) + Send + Sync + 'static) -> Self {
        Self { send: Arc::new(f) }
    }

    /// A sink that drops every message.
    pub fn discard() -> Self {
        Self::new(|_| {})
    }

    /// Reports progress of the call `call_id`.
    pub fn report(&self, call_id: &str, message: impl Into<String>) {
        (self.send)(ToolProgress { call_id: call_id.to_owned(), message: message.into() });
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Time a call spends waiting for a person, which its timeout does not count.
///
/// A tool holds [`WaitClock::pause`]'s guard while it waits; the executor stops the call's
/// clock meanwhile and moves its deadline by the time waited.
///
/// ```
/// use tackle_tools::WaitClock;
/// let clock = WaitClock::default();
/// { let _waiting = clock.pause(); assert!(clock.is_paused()); }
/// assert!(!clock.is_paused());
/// ```
#[derive(Clone)]
pub struct WaitClock {
    state: Arc<tokio::sync::watch::Sender<WaitState>>,
}

/// Where a [`WaitClock`] stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitState {
    /// Pauses in progress.
    pub pauses: usize,
    /// When the current pause began.
    pub since: Option<Instant>,
    /// Time waited in finished pauses.
    pub waited: Duration,
}

impl Default for WaitClock {
    fn default() -> Self {
        Self { state: Arc::new(tokio::sync::watch::Sender::new(WaitState::default())) }
    }
}

impl WaitClock {
    /// Stops the clock until the guard is dropped.
    pub fn pause(&self) -> WaitGuard {
        self.state.send_modify(|s| {
            if s.pauses == 0 {
                s.since = Some(Instant::now());
            }
            s.pauses += 1;
        });
        WaitGuard { clock: self.clone() }
    }

    /// Whether a pause is in progress.
    pub fn is_paused(&self) -> bool {
        self.state.borrow().pauses > 0
    }

    /// Time waited in finished pauses.
    pub fn waited(&self) -> Duration {
        self.state.borrow().waited
    }

    /// A receiver that sees every change (no change is missed between reading and waiting).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<WaitState> {
        self.state.subscribe()
    }

    fn resume(&self) {
        self.state.send_modify(|s| {
            s.pauses = s.pauses.saturating_sub(1);
            if s.pauses == 0
                && let Some(since) = s.since.take()
            {
                s.waited += since.elapsed();
            }
        });
    }
}

impl std::fmt::Debug for WaitClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitClock").field("state", &*self.state.borrow()).finish()
    }
}

/// Keeps a [`WaitClock`] stopped while alive.
#[must_use = "the clock runs again when the guard is dropped"]
pub struct WaitGuard {
    clock: WaitClock,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.clock.resume();
    }
}
