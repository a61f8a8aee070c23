//! Session state: small typed values by key (active skills, catalog fingerprint, calibration).

use std::collections::HashMap;

use rusqlite::ToSql;

use crate::db::{Db, DbRow, on_db, session_fk};
use crate::fence::{self, CheckFence};
use crate::writer::{self, not_found_if_no_session};
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

const STATE: &str = "SELECT key, value FROM session_state WHERE session_id = $1";

impl Store {
    /// Every state value of `session_id`: opening a session needs several, and one query costs
    /// what one key does.
    pub async fn session_state(&self, session_id: &str) -> Result<SessionState, StoreError> {
        let pairs = match &self.db {
            Db::Sqlite(sqlite) => {
                let session = session_id.to_owned();
                sqlite
                    .writer
                    .call(move |conn| {
                        writer::query(conn, STATE, &[&session], |row| {
                            Ok((row.try_get("key")?, row.try_get("value")?))
                        })
                    })
                    .await?
            }
            Db::Postgres(pool) => {
                let rows = sqlx::query(STATE).bind(session_id).fetch_all(pool).await?;
                rows.iter()
                    .map(|row| Ok((row.try_get("key")?, row.try_get("value")?)))
                    .collect::<Result<Vec<(String, String)>, StoreError>>()?
            }
        };
        Ok(SessionState { values: pairs.into_iter().collect() })
    }

    /// Stores several values in one statement (see [`Store::set_state`]).
    pub async fn set_states(
        &self,
        session_id: &str,
        values: &[(&str, serde_json::Value)],
    ) -> Result<(), StoreError> {
        let values = values
            .iter()
            .map(|(key, value)| Ok(((*key).to_owned(), serde_json::to_string(value)?)))
            .collect::<Result<Vec<(String, String)>, StoreError>>()?;
        self.put_states(session_id, values).await
    }

    /// Upserts `values` (key, JSON text) in one statement.
    async fn put_states(&self, session_id: &str, values: Vec<(String, String)>) -> Result<(), StoreError> {
        if values.is_empty() {
            return Ok(());
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
        let epoch = self.epoch_for(session_id);
        match &self.db {
            Db::Sqlite(sqlite) => {
                let session = session_id.to_owned();
                sqlite
                    .writer
                    .write(epoch, move |conn| {
                        let mut params: Vec<&dyn ToSql> = Vec::with_capacity(4 * values.len());
                        for (key, value) in &values {
                            params.extend([&session as &dyn ToSql, key, value, &now]);
                        }
                        writer::execute(conn, &sql, &params)
                            .map_err(|e| not_found_if_no_session(e, &session))?;
                        Ok(())
                    })
                    .await
            }
            Db::Postgres(pool) => {
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
                for (key, value) in values {
                    query = query.bind(session_id).bind(key).bind(value).bind(now);
                }
                fence::pg_write(pool, &epoch, async |conn| {
                    query.execute(conn).await.map_err(|e| session_fk(e, session_id))?;
                    Ok(())
                })
                .await
            }
        }
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
        self.put_states(session_id, vec![(key.to_owned(), serde_json::to_string(value)?)]).await
    }

    /// Removes the value under `key`.
    pub async fn delete_state(&self, session_id: &str, key: &str) -> Result<(), StoreError> {
        on_db!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query("DELETE FROM session_state WHERE session_id = $1 AND key = $2")
                .bind(session_id)
                .bind(key)
                .execute(&mut *tx)
                .await?;
            tx.check_fence(&self.epoch_for(session_id)).await?;
            tx.commit().await?;
            Ok(())
        })
    }
}
