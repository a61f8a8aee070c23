//! Session state: small typed values by key (active skills, catalog fingerprint, calibration).

use std::collections::HashMap;

use crate::db::{DbRow, on_db};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::db::now_ms;
use crate::{Store, StoreError};

/// Every state value of one session, read in one query (see [`Store::session_state`]).
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

impl Store {
    /// Every state value of `session_id`: opening a session needs several, and one query costs
    /// what one key does.
    pub async fn session_state(&self, session_id: &str) -> Result<SessionState, StoreError> {
        on_db!(self, pool => {
            let rows = sqlx::query("SELECT key, value FROM session_state WHERE session_id = $1")
                .bind(session_id)
                .fetch_all(pool)
                .await?;
            let mut values = HashMap::with_capacity(rows.len());
            for row in rows {
                values.insert(row.try_get::<String>("key")?, row.try_get::<String>("value")?);
            }
            Ok(SessionState { values })
        })
    }

    /// Stores several values in one statement (see [`Store::set_state`]).
    pub async fn set_states(
        &self,
        session_id: &str,
        values: &[(&str, serde_json::Value)],
    ) -> Result<(), StoreError> {
        on_db!(self, pool => {
            if values.is_empty() {
                return Ok(());
            }
            let rows = (0..values.len())
                .map(|i| format!("(${}, ${}, ${}, ${})", 4 * i + 1, 4 * i + 2, 4 * i + 3, 4 * i + 4))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "INSERT INTO session_state (session_id, key, value, updated_at) VALUES {rows}
                 ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
            );
            let now = now_ms();
            // Built from fixed fragments only; every value is bound.
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (key, value) in values {
                query = query.bind(session_id).bind(*key).bind(serde_json::to_string(value)?).bind(now);
            }
            query.execute(pool).await.map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
                    StoreError::not_found("session", session_id)
                }
                _ => StoreError::Database(e),
            })?;
            Ok(())
        })
    }

    /// The value stored under `key`, if any.
    pub async fn get_state<T: DeserializeOwned>(
        &self,
        session_id: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        on_db!(self, pool => {
            let row = sqlx::query("SELECT value FROM session_state WHERE session_id = $1 AND key = $2")
                .bind(session_id)
                .bind(key)
                .fetch_optional(pool)
                .await?;
            match row {
                Some(r) => Ok(Some(serde_json::from_str(r.try_get::<&str>("value")?)?)),
                None => Ok(None),
            }
        })
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub async fn set_state<T: Serialize + ?Sized>(
        &self,
        session_id: &str,
        key: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        on_db!(self, pool => {
            sqlx::query(
                "INSERT INTO session_state (session_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .bind(session_id)
            .bind(key)
            .bind(serde_json::to_string(value)?)
            .bind(now_ms())
            .execute(pool)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_foreign_key_violation() => StoreError::not_found("session", session_id),
                _ => StoreError::Database(e),
            })?;
            Ok(())
        })
    }

    /// Removes the value under `key`.
    pub async fn delete_state(&self, session_id: &str, key: &str) -> Result<(), StoreError> {
        on_db!(self, pool => {
            sqlx::query("DELETE FROM session_state WHERE session_id = $1 AND key = $2")
                .bind(session_id)
                .bind(key)
                .execute(pool)
                .await?;
            Ok(())
        })
    }
}
