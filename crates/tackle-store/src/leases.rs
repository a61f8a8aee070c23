//! Session leases: which instance runs a session's turn, when several `tackle serve` processes
//! share one database.
//!
//! A turn begins by taking the lease ([`Leases::acquire`](crate::Leases::acquire)): the session is marked running
//! by this process, with a token of its own and an expiry the instance keeps pushing forward
//! ([`Leases::renew_held`](crate::Leases::renew_held)) while the turn runs. Another instance finds the session busy until
//! the turn ends ([`Leases::release`](crate::Leases::release)) or the lease expires: a killed instance stops
//! renewing, its session then reads as `interrupted`, and the next turn (on any instance)
//! answers its open calls `interrupted`, exactly as after a crash. A cancel posted to another
//! instance is recorded on the session ([`Leases::request_cancel`](crate::Leases::request_cancel)) and seen by the running
//! instance ([`Leases::cancel_requests`](crate::Leases::cancel_requests)).

use std::time::Duration;

use crate::db::DbRow;
use crate::fence;
use crate::sessions::turn_alive;
use crate::sql::{Conn, Query, Row};
use crate::writer::Placement;
use crate::{Store, StoreError};

/// A held lease on a session's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The session.
    pub session_id: String,
    /// This turn's token; only its holder renews or releases it.
    pub token: String,
    /// The id of the session's last streamed event before this turn: the turn's events are
    /// numbered from `event_base + 1`.
    pub event_base: i64,
    /// How many leases the session has had, this one included: the fence every write of the
    /// turn checks ([`Store::fenced`]).
    pub epoch: i64,
}

/// Why a lease could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseRefusal {
    /// Another turn runs (on this or another instance) and its lease is live.
    Busy,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Which instance runs a session's turn (leases with a time to live) and requests to cancel it.
/// From [`Store::leases`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Leases<'s> {
    pub(crate) store: &'s Store,
}

impl Leases<'_> {
    /// Takes the lease on `session_id`'s turn for `ttl`, or reports it busy. A session whose
    /// turn's process is gone or whose lease expired is free: taking it over is how a crashed
    /// instance's session continues. Clears the session's cancel request, its stale approvals and
    /// its previous turn's stored events.
    pub async fn acquire(
        self,
        session_id: &str,
        ttl: Duration,
    ) -> Result<Result<Lease, LeaseRefusal>, StoreError> {
        let query = Query::new(
            "SELECT status, runner, lease_id, lease_until, event_seq, (SELECT now_ms FROM db_clock) AS db_now
             FROM sessions WHERE id = $1",
        )
        .bind(session_id);
        let seen = self.store.db.fetch_optional(None, query, |row| LeaseRow::read(row)).await?;
        let seen = seen.ok_or_else(|| StoreError::not_found("session", session_id))?;
        // Expiry by the database's clock: instances' clocks may disagree.
        if seen.status == "running" && turn_alive(seen.runner.as_deref(), seen.lease_until, seen.db_now) {
            return Ok(Err(LeaseRefusal::Busy));
        }
        let token = uuid::Uuid::new_v4().simple().to_string();
        // Compare and set: another instance that read the same row and took the lease first
        // changed `lease_id`, and this update then matches nothing. The new epoch fences
        // every write of the turn this lease ends, should it wake up (`fence.rs`).
        let take = Query::new(
            "UPDATE sessions SET status = 'running', runner = $1, lease_id = $2,
                 lease_until = (SELECT now_ms FROM db_clock) + $3, cancel_requested = 0,
                 lease_epoch = lease_epoch + 1
             WHERE id = $4 AND status = $5 AND runner IS NOT DISTINCT FROM $6
                 AND lease_id IS NOT DISTINCT FROM $7 AND lease_until IS NOT DISTINCT FROM $8
             RETURNING lease_epoch",
        )
        .bind(crate::runner::current_id())
        .bind(&token)
        .bind(millis(ttl))
        .bind(session_id)
        .bind(seen.status)
        .bind(seen.runner)
        .bind(seen.lease_id)
        .bind(seen.lease_until);
        let clear = [
            Query::new("DELETE FROM approvals WHERE session_id = $1").bind(session_id),
            Query::new("DELETE FROM session_events WHERE session_id = $1").bind(session_id),
        ];
        let epoch = self
            .store
            .db
            .transaction(Placement::InPlace, None, async move |conn| take_lease(conn, &take, &clear).await)
            .await?;
        Ok(match epoch {
            Some(epoch) => {
                Ok(Lease { session_id: session_id.to_owned(), token, event_base: seen.event_seq, epoch })
            }
            None => Err(LeaseRefusal::Busy),
        })
    }

    /// Pushes the expiry of every lease this process holds to `ttl` from now (the database's
    /// clock); returns how many.
    pub async fn renew_held(self, ttl: Duration) -> Result<u64, StoreError> {
        let query = Query::new(
            "UPDATE sessions SET lease_until = (SELECT now_ms FROM db_clock) + $1
             WHERE runner = $2 AND lease_id IS NOT NULL",
        )
        .bind(millis(ttl))
        .bind(crate::runner::current_id());
        self.store.db.execute(None, query).await
    }

    /// Ends `lease`: the session is free for the next turn. `last_event` is the id of the turn's
    /// last streamed event. A session the turn left `running` (it never began, or it failed
    /// before it could say how it ended) becomes `idle`. Does nothing if the lease was lost.
    pub async fn release(self, lease: &Lease, last_event: i64) -> Result<(), StoreError> {
        let query = Query::new(
            "UPDATE sessions SET lease_id = NULL, lease_until = NULL, cancel_requested = 0, event_seq = $1,
                 status = CASE WHEN status = 'running' THEN 'idle' ELSE status END,
                 runner = CASE WHEN status = 'running' THEN NULL ELSE runner END
             WHERE id = $2 AND lease_id = $3",
        )
        .bind(last_event)
        .bind(&lease.session_id)
        .bind(&lease.token);
        self.store.db.execute(None, query).await?;
        Ok(())
    }

    /// Asks whichever instance runs `session_id`'s turn to cancel it; false when no live turn
    /// holds a lease on it.
    pub async fn request_cancel(self, session_id: &str) -> Result<bool, StoreError> {
        let query = Query::new(
            "UPDATE sessions SET cancel_requested = 1
             WHERE id = $1 AND status = 'running' AND lease_id IS NOT NULL
                 AND lease_until > (SELECT now_ms FROM db_clock)",
        )
        .bind(session_id);
        Ok(self.store.db.execute(None, query).await? == 1)
    }

    /// Sessions whose turns this process runs and that another instance asked to cancel.
    pub async fn cancel_requests(self) -> Result<Vec<String>, StoreError> {
        let query = Query::new("SELECT id FROM sessions WHERE runner = $1 AND cancel_requested = 1")
            .bind(crate::runner::current_id());
        self.store.db.read_all(query, |r| r.try_get::<String>("id")).await
    }
}

/// A session's lease as read before taking it over.
struct LeaseRow {
    status: String,
    runner: Option<String>,
    lease_id: Option<String>,
    lease_until: Option<i64>,
    event_seq: i64,
    db_now: i64,
}

impl LeaseRow {
    fn read(row: &dyn Row) -> Result<Self, StoreError> {
        Ok(Self {
            status: row.try_get("status")?,
            runner: row.try_get("runner")?,
            lease_id: row.try_get("lease_id")?,
            lease_until: row.try_get("lease_until")?,
            event_seq: row.try_get("event_seq")?,
            db_now: row.try_get("db_now")?,
        })
    }
}

/// Takes the lease if the row is still as read (`take`, which returns the new epoch), then
/// runs `clear`; `None` when another turn took it first.
async fn take_lease(conn: &mut Conn<'_>, take: &Query, clear: &[Query]) -> Result<Option<i64>, StoreError> {
    let Some(epoch) = conn.fetch_optional(take, |r| r.try_get::<i64>("lease_epoch")).await? else {
        return Ok(None);
    };
    for query in clear {
        conn.execute(query).await?;
    }
    Ok(Some(epoch))
}

impl Store {
    /// Checks the lease of a fenced store without writing: [`StoreError::LeaseLost`] when it
    /// moved on; `Ok` when it holds or the store is not fenced to `session_id`. A turn asks this
    /// before it starts tool calls, so a stalled turn that lost its session runs nothing more.
    pub async fn check_lease(&self, session_id: &str) -> Result<(), StoreError> {
        let epoch = self.epoch_for(session_id);
        if epoch.is_none() {
            return Ok(());
        }
        // The check alone, outside a transaction: it writes nothing, so it takes no write lock.
        self.db.write(Placement::InPlace, None, async move |conn| fence::check(conn, &epoch).await).await
    }
}
