//! Per-call context handed to every tool: no globals.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
        }
    }

    /// The same context for another call of the same turn.
    pub fn for_call(&self, call_id: impl Into<ToolCallId>) -> Self {
        Self {
            call_id: call_id.into(),
            cancel: self.cancel.child_token(),
            spool: SpoolBudget::new(usize::try_from(self.spool.cap()).unwrap_or(usize::MAX)),
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
