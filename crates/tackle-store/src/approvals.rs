//! Approvals waiting for a person, shared by every instance on the database: the instance whose
//! turn waits records each request; any instance lists them and records a decision; the waiting
//! instance picks decisions up ([`Approvals::decided`](crate::Approvals::decided)).

use serde_json::Value;

use crate::db::DbRow;
use crate::sql::{Query, Row};
use crate::{Store, StoreError, now_ms};

/// A tool call waiting for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredApproval {
    /// Approval id.
    pub id: String,
    /// Session id.
    pub session_id: String,
    /// Tool call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments of the call.
    pub args: Value,
    /// The hook rule that asked.
    pub rule: String,
}

/// A decision recorded for an approval this process waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecisionRecord {
    /// Approval id.
    pub id: String,
    /// Run the call or not.
    pub approved: bool,
    /// Why, when given.
    pub reason: Option<String>,
}

/// Approvals asked of a user and their decisions, durable across restarts.
/// From [`Store::approvals`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Approvals<'s> {
    pub(crate) store: &'s Store,
}

impl Approvals<'_> {
    /// Records a request this process waits on.
    pub async fn put(self, approval: &StoredApproval) -> Result<(), StoreError> {
        let query = Query::new(
            "INSERT INTO approvals (id, session_id, call_id, tool, args, rule, runner, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&approval.id)
        .bind(&approval.session_id)
        .bind(&approval.call_id)
        .bind(&approval.tool)
        .bind(serde_json::to_string(&approval.args)?)
        .bind(&approval.rule)
        .bind(crate::runner::current_id())
        .bind(now_ms());
        self.store.db.execute(None, query).await?;
        Ok(())
    }

    /// Undecided approvals of `session_id`'s live turn, oldest first.
    pub async fn pending(self, session_id: &str) -> Result<Vec<StoredApproval>, StoreError> {
        let query = Query::new(
            "SELECT a.id, a.session_id, a.call_id, a.tool, a.args, a.rule, s.runner, s.lease_until
             FROM approvals a JOIN sessions s ON s.id = a.session_id
             WHERE a.session_id = $1 AND a.approved IS NULL AND s.status = 'running' AND s.runner = a.runner
             ORDER BY a.created_at, a.id",
        )
        .bind(session_id);
        let rows = self.store.db.read_all(query, |row| Ok((pending(row)?, alive(row, now_ms())?))).await?;
        // Requests of a turn whose instance died wait for nobody.
        Ok(rows.into_iter().filter(|(_, alive)| *alive).map(|(approval, _)| approval).collect())
    }

    /// The session of an undecided approval, if there is one with this id.
    pub async fn session_of(self, id: &str) -> Result<Option<String>, StoreError> {
        let query =
            Query::new("SELECT session_id FROM approvals WHERE id = $1 AND approved IS NULL").bind(id);
        self.store.db.read_optional(query, |r| r.try_get::<String>("session_id")).await
    }

    /// Records a decision for whichever instance waits on it; false when the approval is not
    /// pending (decided already, or gone).
    pub async fn decide(self, id: &str, approved: bool, reason: Option<&str>) -> Result<bool, StoreError> {
        let query = Query::new(
            "UPDATE approvals SET approved = $1, reason = $2, decided_at = $3 WHERE id = $4 AND approved IS NULL",
        )
        .bind(i64::from(approved))
        .bind(reason)
        .bind(now_ms())
        .bind(id);
        Ok(self.store.db.execute(None, query).await? == 1)
    }

    /// Decisions recorded for approvals this process waits on.
    pub async fn decided(self) -> Result<Vec<ApprovalDecisionRecord>, StoreError> {
        let query = Query::new(
            "SELECT id, approved, reason FROM approvals WHERE runner = $1 AND approved IS NOT NULL",
        )
        .bind(crate::runner::current_id());
        self.store
            .db
            .read_all(query, |r| {
                Ok(ApprovalDecisionRecord {
                    id: r.try_get("id")?,
                    approved: r.try_get::<i64>("approved")? != 0,
                    reason: r.try_get("reason")?,
                })
            })
            .await
    }

    /// Forgets an approval (decided, or its call ended).
    pub async fn delete(self, id: &str) -> Result<(), StoreError> {
        self.store.db.execute(None, Query::new("DELETE FROM approvals WHERE id = $1").bind(id)).await?;
        Ok(())
    }
}

fn pending(row: &dyn Row) -> Result<StoredApproval, StoreError> {
    Ok(StoredApproval {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        call_id: row.try_get("call_id")?,
        tool: row.try_get("tool")?,
        args: serde_json::from_str(row.try_get::<&str>("args")?)?,
        rule: row.try_get("rule")?,
    })
}

/// Whether the turn that asked still runs (its instance is alive), at `now`.
pub(crate) fn alive(row: &dyn Row, now: i64) -> Result<bool, StoreError> {
    Ok(crate::sessions::turn_alive(row.try_get("runner")?, row.try_get("lease_until")?, now))
}
