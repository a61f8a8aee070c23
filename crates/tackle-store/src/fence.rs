//! Fencing: the writes of a turn are refused by the database once the turn's lease has moved on.
//!
//! A turn that holds a lease ([`crate::Lease`]) writes through a fenced store
//! ([`Store::fenced`]): every write it makes on its session (messages, tool-call starts and
//! ends, steps, session state and status, todos, offloaded outputs, snapshots, streamed events)
//! checks, in the same transaction, that the session's lease is still this turn's: same epoch
//! (no other turn took it since), not released, and not expired by the database's clock
//! (`db_clock`, never the instance's). A write that fails the check commits nothing and returns
//! [`StoreError::LeaseLost`]; the turn stops there.
//!
//! On PostgreSQL the check locks the session row (`FOR SHARE`) until the write commits, so a
//! takeover (which updates that row) waits for a write already checked, and a write that comes
//! after a takeover sees the new epoch. SQLite runs one write transaction at a time across every
//! process on the file, so the check and the write are never separated by a takeover there.

use std::sync::Arc;

use crate::sql::{Conn, Query};
use crate::{Backend, Lease, Store, StoreError};

/// The lease a fenced store writes under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fence {
    session_id: String,
    epoch: i64,
}

/// The session's lease is `$2`'s, live by the database's clock. PostgreSQL locks the row (see
/// the module's documentation).
macro_rules! check_sql {
    () => {
        "SELECT lease_epoch FROM sessions WHERE id = $1 AND lease_epoch = $2 AND lease_id IS NOT NULL
             AND lease_until > (SELECT now_ms FROM db_clock)"
    };
}
const CHECK: &str = check_sql!();
const CHECK_POSTGRES: &str = concat!(check_sql!(), " FOR SHARE OF sessions");

/// The lease of one session's turn that a write checks: `None` when the store is not fenced, or
/// fenced to another session.
pub(crate) type Epoch = Option<(String, i64)>;

fn lost(session: &str) -> StoreError {
    StoreError::LeaseLost { session: session.to_owned() }
}

/// Fails with [`StoreError::LeaseLost`] unless `epoch` holds, on `conn`: inside the caller's
/// write transaction (on PostgreSQL locking the session row until it commits).
pub(crate) async fn check(conn: &mut Conn<'_>, epoch: &Epoch) -> Result<(), StoreError> {
    let Some((session, e)) = epoch else { return Ok(()) };
    let sql = match conn.backend() {
        Backend::Sqlite => CHECK,
        Backend::Postgres => CHECK_POSTGRES,
    };
    let found = conn.fetch_optional(&Query::new(sql).bind(session).bind(*e), |_| Ok(())).await?;
    found.ok_or_else(|| lost(session))
}

impl Store {
    /// This store, with every write on `lease`'s session checked against the lease: once another
    /// turn took the session over, or the lease expired by the database's clock, such writes
    /// fail with [`StoreError::LeaseLost`] and commit nothing. Reads and other sessions' writes
    /// are unchanged. Clones share the connections.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use tackle_store::{NewSession, Store, StoreError};
    /// let store = Store::open_in_memory().await.unwrap();
    /// let s = store.sessions().create(NewSession { owner: "local".into(), ..Default::default() }).await.unwrap();
    /// let lease = store.leases().acquire(&s.id, Duration::from_secs(30)).await.unwrap().unwrap();
    /// let turn = store.fenced(&lease);
    /// turn.messages().append(&s.id, 1, &tackle_protocol::Message::user("hi")).await.unwrap();
    /// store.leases().release(&lease, 0).await.unwrap();
    /// let late = turn.messages().append(&s.id, 1, &tackle_protocol::Message::user("late")).await;
    /// assert!(matches!(late, Err(StoreError::LeaseLost { .. })));
    /// # });
    /// ```
    pub fn fenced(&self, lease: &Lease) -> Store {
        Store {
            fence: Some(Arc::new(Fence { session_id: lease.session_id.clone(), epoch: lease.epoch })),
            ..self.clone()
        }
    }

    /// The epoch a write on `session_id` must check, if this store is fenced to that session.
    pub(crate) fn epoch_for(&self, session_id: &str) -> Epoch {
        self.fence.as_ref().filter(|f| f.session_id == session_id).map(|f| (f.session_id.clone(), f.epoch))
    }

    /// Whether this store is fenced to `session_id`'s lease.
    pub fn is_fenced(&self, session_id: &str) -> bool {
        self.epoch_for(session_id).is_some()
    }
}
