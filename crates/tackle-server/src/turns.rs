//! Turns across instances: which sessions run a turn here, the database lease that makes them
//! busy everywhere else, and the background coordinator that carries cancellations and approval
//! decisions posted to other instances to the turn that waits here.
//!
//! A turn starts with [`RunningTurns::start`] (through `AppState::start_turn`): the session is marked busy in this process and
//! its lease taken in the store ([`tackle_store::Leases::acquire`]); either refusal is a
//! 409. The coordinator (one task per server, started with the first turn) renews this
//! process's leases every third of [`crate::ServerConfig::lease`], cancels the turns another
//! instance asked to cancel, and resolves approvals decided on another instance. It polls only
//! while a turn runs here (cancellations, leases) or an approval waits here (decisions), every
//! [`POLL`], so a request made on another instance takes effect within that bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tackle_protocol::AgentEvent;
use tackle_store::{Lease, LeaseRefusal, Store, StoredApproval, StoredEvent};
use tackle_tools::{ApprovalDecision, ApprovalQueue, ApprovalRequest, Approver};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ApiError;

/// How often the coordinator looks for requests made on other instances.
pub(crate) const POLL: Duration = Duration::from_millis(200);

/// Sessions running a turn in this process, with the token that cancels each.
#[derive(Default)]
pub(crate) struct RunningTurns {
    running: Running,
    coordinator: std::sync::OnceLock<()>,
}

impl RunningTurns {
    /// Cancels the turn of `session` if it runs here; false when it does not.
    pub(crate) fn cancel(&self, session: &str) -> bool {
        cancel_in(&self.running, session)
    }

    pub(crate) fn cancel_all(&self) {
        for token in self.running.lock().unwrap_or_else(|p| p.into_inner()).values() {
            token.cancel();
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl RunningTurns {
    /// Marks `session` busy here and takes its lease in `store` for `lease`; 409 when a turn
    /// runs on it, here or on another instance. The first turn starts the coordinator.
    pub(crate) async fn start(
        &self,
        session: &str,
        store: &Store,
        lease: Duration,
        approvals: &ApprovalQueue,
    ) -> Result<TurnGuard, ApiError> {
        let cancel = CancellationToken::new();
        {
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            if running.contains_key(session) {
                return Err(ApiError::busy(session));
            }
            running.insert(session.to_owned(), cancel.clone());
        }
        let mut guard = TurnGuard {
            running: self.running.clone(),
            session: session.to_owned(),
            cancel,
            store: store.clone(),
            lease: None,
        };
        match store.leases().acquire(session, lease).await? {
            Ok(taken) => guard.lease = Some(taken),
            Err(LeaseRefusal::Busy) => return Err(ApiError::busy(session)),
        }
        self.coordinator.get_or_init(|| {
            spawn_coordinator(Arc::downgrade(&self.running), approvals.clone(), store.clone(), lease)
        });
        Ok(guard)
    }
}

/// A session marked busy here and leased in the store. [`TurnGuard::finish`] releases both;
/// dropping the guard without it (an error path) releases them in the background.
pub(crate) struct TurnGuard {
    running: Running,
    session: String,
    pub(crate) cancel: CancellationToken,
    store: Store,
    lease: Option<Lease>,
}

impl TurnGuard {
    /// The turn's lease in the store: its session's writes are fenced by it
    /// (`Session::hold_lease`).
    pub(crate) fn lease(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    /// The id of the session's last streamed event before this turn.
    pub(crate) fn event_base(&self) -> i64 {
        self.lease.as_ref().map_or(0, |l| l.event_base)
    }

    /// Ends the turn: the lease is released (recording `last_event`), then the busy mark.
    pub(crate) async fn finish(mut self, last_event: i64) {
        if let Some(lease) = self.lease.take()
            && let Err(e) = self.store.leases().release(&lease, last_event).await
        {
            tracing::warn!(session = %self.session, error = %e, "cannot release the turn's lease; it expires by itself");
        }
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let store = self.store.clone();
            let last_event = lease.event_base;
            runtime.spawn(async move {
                if let Err(e) = store.leases().release(&lease, last_event).await {
                    tracing::warn!(session = %lease.session_id, error = %e, "cannot release the turn's lease; it expires by itself");
                }
            });
        }
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.session);
    }
}

/// Running turns, shared with their guards.
type Running = Arc<Mutex<HashMap<String, CancellationToken>>>;

fn spawn_coordinator(
    running: Weak<Mutex<HashMap<String, CancellationToken>>>,
    approvals: ApprovalQueue,
    store: Store,
    lease: Duration,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut renewed = Instant::now();
        loop {
            tick.tick().await;
            // The server's state is gone once nothing holds the running map.
            let Some(running) = running.upgrade() else { break };
            let busy = !running.lock().unwrap_or_else(|p| p.into_inner()).is_empty();
            if busy {
                match store.leases().cancel_requests().await {
                    Ok(ids) => {
                        for id in ids {
                            if cancel_in(&running, &id) {
                                tracing::info!(session = %id, "turn cancelled from another instance");
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot read cancel requests"),
                }
                if renewed.elapsed() >= lease / 3 {
                    if let Err(e) = store.leases().renew_held(lease).await {
                        tracing::warn!(error = %e, "cannot renew turn leases");
                    }
                    renewed = Instant::now();
                }
            } else {
                renewed = Instant::now();
            }
            drop(running);
            if !approvals.pending(None).is_empty() {
                match store.approvals().decided().await {
                    Ok(decisions) => {
                        for d in decisions {
                            // Not waiting here any more (withdrawn): nothing to resume.
                            let _ = approvals.resolve(&d.id, d.approved, d.reason);
                            if let Err(e) = store.approvals().delete(&d.id).await {
                                tracing::warn!(error = %e, "cannot forget a decided approval");
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot read approval decisions"),
                }
            }
        }
    });
}

fn cancel_in(running: &Running, session: &str) -> bool {
    running.lock().unwrap_or_else(|p| p.into_inner()).get(session).map(CancellationToken::cancel).is_some()
}

/// The approver of a server's agents: requests wait in the in-process [`ApprovalQueue`] (which
/// the approval routes of this instance resolve) and are recorded in the store, so every
/// instance on the database lists them and can decide them.
#[derive(Clone)]
pub struct SharedApprovals {
    queue: ApprovalQueue,
    store: Store,
}

impl SharedApprovals {
    /// Approvals waiting in `queue` (the one given to [`crate::AppState::new`]), shared through `store`.
    pub fn new(queue: ApprovalQueue, store: Store) -> Self {
        Self { queue, store }
    }
}

#[async_trait]
impl Approver for SharedApprovals {
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let id = request.id.to_string();
        let stored = StoredApproval {
            id: id.clone(),
            session_id: request.session_id.to_string(),
            call_id: request.call_id.to_string(),
            tool: request.tool.clone(),
            args: request.args.clone(),
            rule: request.rule.clone(),
        };
        if let Err(e) = self.store.approvals().put(&stored).await {
            tracing::warn!(error = %e, "cannot share an approval request; only this instance can decide it");
        }
        let decision = self.queue.decide(request).await;
        if let Err(e) = self.store.approvals().delete(&id).await {
            tracing::debug!(error = %e, "cannot forget a decided approval");
        }
        decision
    }
}

/// Streams a turn's events into the store in batches, so a client can reconnect with
/// `Last-Event-ID` on any instance. Numbering starts after the session's last event.
pub(crate) struct EventRecorder {
    tx: mpsc::UnboundedSender<Recorded>,
    next: std::sync::atomic::AtomicI64,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

enum Recorded {
    Event(StoredEvent),
    Close,
}

/// Events written in one statement at most.
const RECORD_BATCH: usize = 200;

impl EventRecorder {
    pub(crate) fn start(store: Store, session: String, base: i64) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Recorded>();
        let writer = tokio::spawn(async move {
            let mut batch = Vec::new();
            let mut open = true;
            while open {
                match rx.recv().await {
                    Some(Recorded::Event(e)) => batch.push(e),
                    Some(Recorded::Close) | None => open = false,
                }
                // Whatever arrived while the last batch was written goes in the next.
                while open && batch.len() < RECORD_BATCH {
                    match rx.try_recv() {
                        Ok(Recorded::Event(e)) => batch.push(e),
                        Ok(Recorded::Close) => open = false,
                        Err(_) => break,
                    }
                }
                if !batch.is_empty() {
                    if let Err(e) = store.events().append(&session, &batch).await {
                        tracing::warn!(session = %session, error = %e, "cannot store streamed events; a reconnect will miss them");
                    }
                    batch.clear();
                }
            }
        });
        Self { tx, next: std::sync::atomic::AtomicI64::new(base + 1), writer: Mutex::new(Some(writer)) }
    }

    /// Numbers `event`, queues it for the store, and returns its id and its data (JSON), which
    /// the live stream sends as they are.
    pub(crate) fn record(&self, event: &AgentEvent) -> (i64, String) {
        let seq = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let data = serde_json::to_string(event).unwrap_or_else(|_| "null".to_owned());
        let stored = StoredEvent { seq, name: event.name().to_owned(), data: data.clone() };
        let _ = self.tx.send(Recorded::Event(stored));
        (seq, data)
    }

    /// Writes what is queued and stops; returns the id of the last event recorded.
    pub(crate) async fn finish(&self) -> i64 {
        let _ = self.tx.send(Recorded::Close);
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        self.next.load(std::sync::atomic::Ordering::Relaxed) - 1
    }
}
