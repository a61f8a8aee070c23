//! Session state: small typed values by key (active skills, catalog fingerprint, calibration).

use std::collections::HashMap;

use crate::db::DbRow;
use crate::sessions::Sessions;
use crate::sql::{Query, no_session};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::StoreError;
use crate::db::now_ms;

/// Every state value of one session, read in one query (see [`Sessions::state`](crate::Sessions::state)).
#[derive(Debug, Clone, Default)]
pub struct SessionState {
    values: HashMap<String, String>,
}

impl SessionState {
    /// The value under `key`, if any.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        self.values.get(key).map(|v| serde_json::from_str(v)).transpose().map_err(StoreError::from)
    }
}

const STATE: &str = "SELECT key, value FROM session_state WHERE session_id = $1";

impl Sessions<'_> {
    /// Every state value of `session_id`: opening a session needs several, and one query costs
    /// what one key does.
    pub async fn state(self, session_id: &str) -> Result<SessionState, StoreError> {
        let query = Query::new(STATE).bind(session_id);
        let pairs = self
            .store
            .db
            .fetch_all(None, query, |row| {
                Ok((row.try_get::<String>("key")?, row.try_get::<String>("value")?))
            })
            .await?;
        Ok(SessionState { values: pairs.into_iter().collect() })
    }

    /// Stores several values in one statement (see [`Sessions::set_state`](crate::Sessions::set_state)).
    pub async fn set_states(
        self,
        session_id: &str,
        values: &[(&str, serde_json::Value)],
    ) -> Result<(), StoreError> {
        self.put_states(session_id, state_texts(values)?).await
    }

    /// Upserts `values` (key, JSON text) in one statement.
    async fn put_states(self, session_id: &str, values: Vec<(String, String)>) -> Result<(), StoreError> {
        let Some(query) = upsert_states(session_id, values) else {
            return Ok(());
        };
        self.store
            .db
            .execute(self.store.epoch_for(session_id), query)
            .await
            .map_err(|e| no_session(e, session_id))?;
        Ok(())
    }

    /// The value stored under `key`, if any.
    pub async fn get_state<T: DeserializeOwned>(
        self,
        session_id: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        let query = Query::new("SELECT value FROM session_state WHERE session_id = $1 AND key = $2")
            .bind(session_id)
            .bind(key);
        let value = self.store.db.fetch_optional(None, query, |r| r.try_get::<String>("value")).await?;
        Ok(value.map(|v| serde_json::from_str(&v)).transpose()?)
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub async fn set_state<T: Serialize + ?Sized>(
        self,
        session_id: &str,
        key: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        self.put_states(session_id, vec![(key.to_owned(), serde_json::to_string(value)?)]).await
    }

    /// Removes the value under `key`.
    pub async fn delete_state(self, session_id: &str, key: &str) -> Result<(), StoreError> {
        let query = Query::new("DELETE FROM session_state WHERE session_id = $1 AND key = $2")
            .bind(session_id)
            .bind(key);
        self.store.db.execute(self.store.epoch_for(session_id), query).await?;
        Ok(())
    }
}

/// `values` as JSON text, in order.
pub(crate) fn state_texts(values: &[(&str, serde_json::Value)]) -> Result<Vec<(String, String)>, StoreError> {
    values.iter().map(|(key, value)| Ok(((*key).to_owned(), serde_json::to_string(value)?))).collect()
}

/// The one statement that upserts `values` (key, JSON text) of `session_id`; `None` when there
/// are none.
pub(crate) fn upsert_states(session_id: &str, values: Vec<(String, String)>) -> Option<Query> {
    if values.is_empty() {
        return None;
    }
    let rows = (0..values.len())
        .map(|i| format!("(${}, ${}, ${}, ${})", 4 * i + 1, 4 * i + 2, 4 * i + 3, 4 * i + 4))
        .collect::<Vec<_>>()
        .join(", ");
    // Built from fixed fragments only; every value is bound.
    let sql = format!(
        "INSERT INTO session_state (session_id, key, value, updated_at) VALUES {rows}
         ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
    );
    let now = now_ms();
    Some(
        values.into_iter().fold(Query::assembled(sql), |q, (key, value)| {
            q.bind(session_id).bind(key).bind(value).bind(now)
        }),
    )
}
