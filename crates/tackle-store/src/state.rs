//! Session state: small typed values by key (active skills, catalog fingerprint, calibration).

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;

use crate::db::now_ms;
use crate::{Store, StoreError};

impl Store {
    /// The value stored under `key`, if any.
    pub async fn get_state<T: DeserializeOwned>(
        &self,
        session_id: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        let row = sqlx::query("SELECT value FROM session_state WHERE session_id = ? AND key = ?")
            .bind(session_id)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) => Ok(Some(serde_json::from_str(r.try_get::<&str, _>("value")?)?)),
            None => Ok(None),
        }
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub async fn set_state<T: Serialize + ?Sized>(
        &self,
        session_id: &str,
        key: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_state (session_id, key, value, updated_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(session_id)
        .bind(key)
        .bind(serde_json::to_string(value)?)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(d) if d.is_foreign_key_violation() => StoreError::not_found("session", session_id),
            _ => StoreError::Database(e),
        })?;
        Ok(())
    }

    /// Removes the value under `key`.
    pub async fn delete_state(&self, session_id: &str, key: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_state WHERE session_id = ? AND key = ?")
            .bind(session_id)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
