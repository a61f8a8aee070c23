//! [`IdleSessions`]: sessions kept loaded between their turns.
//!
//! The server answers each message of a session with a fresh request, and loading a session
//! (record, messages, state, skills, system files, token accounting) is most of a short turn's
//! cost. A bounded set of recently used sessions stays in memory, exactly as the REPL keeps its
//! session between turns. A kept session is used only if the store says nothing changed it since
//! (its `updated_at`, which every turn, in any process, moves); otherwise it is loaded again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tackle_agent::Session;

/// Sessions kept by default: enough for the sessions active at once on one instance, small next
/// to the store.
pub const DEFAULT_IDLE_SESSIONS: usize = 256;

/// Loaded sessions between turns, least recently used dropped first.
pub(crate) struct IdleSessions {
    capacity: usize,
    sessions: Mutex<HashMap<String, (Session, Instant)>>,
}

impl IdleSessions {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { capacity, sessions: Mutex::new(HashMap::new()) }
    }

    /// The kept session `id` if it is still what the store has (`updated_at` unchanged); it
    /// leaves the set (a turn owns it until it is put back).
    pub(crate) fn take(&self, id: &str, updated_at: i64) -> Option<Session> {
        let (session, _) = self.lock().remove(id)?;
        (session.record().updated_at == updated_at).then_some(session)
    }

    /// Keeps `session` for its next turn, dropping the least recently used beyond capacity.
    pub(crate) fn put(&self, session: Session) {
        if self.capacity == 0 {
            return;
        }
        let mut sessions = self.lock();
        sessions.insert(session.id().to_owned(), (session, Instant::now()));
        while sessions.len() > self.capacity {
            let Some(oldest) = sessions.iter().min_by_key(|(_, (_, used))| *used).map(|(id, _)| id.clone())
            else {
                break;
            };
            sessions.remove(&oldest);
        }
    }

    /// Forgets `id` (deleted).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Sessions kept now.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Session, Instant)>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}
