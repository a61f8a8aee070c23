//! The streamed events of a session's latest turn, kept so a client that lost its SSE
//! connection can reconnect with `Last-Event-ID`, on any instance, and get what it missed.

use crate::db::DbRow;
use crate::sql::Query;
use crate::{Store, StoreError, now_ms};

/// One streamed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its SSE id: increasing within a session.
    pub seq: i64,
    /// Its SSE event name.
    pub name: String,
    /// Its data (JSON).
    pub data: String,
}

/// Events appended in one statement at most (bound values stay under every backend's limit).
const BATCH: usize = 200;

/// A session's streamed events, kept so a client can resume after a disconnect.
/// From [`Store::events`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Events<'s> {
    pub(crate) store: &'s Store,
}

impl Events<'_> {
    /// Appends events of the running turn. A fenced store ([`Store::fenced`]) appends them only
    /// while the turn holds its lease: a turn that lost it streams nothing more into the
    /// session's replay.
    pub async fn append(self, session_id: &str, events: &[StoredEvent]) -> Result<(), StoreError> {
        let epoch = self.store.epoch_for(session_id);
        for chunk in events.chunks(BATCH) {
            let rows = (0..chunk.len())
                .map(|i| {
                    format!(
                        "(${}, ${}, ${}, ${}, ${})",
                        5 * i + 1,
                        5 * i + 2,
                        5 * i + 3,
                        5 * i + 4,
                        5 * i + 5
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            // Built from fixed fragments only; every value is bound.
            let sql = format!(
                "INSERT INTO session_events (session_id, seq, name, data, created_at) VALUES {rows}
                 ON CONFLICT (session_id, seq) DO NOTHING"
            );
            let now = now_ms();
            let query = chunk.iter().fold(Query::assembled(sql), |q, event| {
                q.bind(session_id).bind(event.seq).bind(&event.name).bind(&event.data).bind(now)
            });
            self.store.db.execute(epoch.clone(), query).await?;
        }
        Ok(())
    }

    /// Stored events of `session_id` after `after`, in order, at most `limit`.
    pub async fn after(
        self,
        session_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let query = Query::new(
            "SELECT seq, name, data FROM session_events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(session_id)
        .bind(after)
        .bind(i64::from(limit));
        self.store
            .db
            .read_all(query, |r| {
                Ok(StoredEvent { seq: r.try_get("seq")?, name: r.try_get("name")?, data: r.try_get("data")? })
            })
            .await
    }
}
