//! Workspace checkpoints (`tackle-checkpoint` decides what goes in them): content-addressed
//! objects shared by every session (`checkpoint_objects`: a digest, the raw size, the compressed
//! bytes) and, per session and turn, the manifest of the workspace before that turn
//! (`checkpoints`).

use serde_json::Value;

use crate::db::{DbRow, now_ms};
use crate::sql::{Conn, Query, no_session};
use crate::writer::Placement;
use crate::{Store, StoreError};

/// An object to store: its digest (hex), its raw size and its compressed bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointObject {
    /// Hex BLAKE3 digest of the raw bytes.
    pub digest: String,
    /// Raw size.
    pub size: i64,
    /// The bytes as stored (compressed).
    pub data: Vec<u8>,
}

/// A checkpoint to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCheckpoint {
    /// The session.
    pub session_id: String,
    /// The turn it precedes.
    pub turn: i64,
    /// The workspace recorded (absolute path).
    pub workspace: String,
    /// Digest of the manifest object.
    pub manifest: String,
    /// What recording it measured.
    pub stats: Value,
}

/// A recorded checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRecord {
    /// The session.
    pub session_id: String,
    /// The turn it precedes.
    pub turn: i64,
    /// The workspace recorded.
    pub workspace: String,
    /// Digest of the manifest object.
    pub manifest: String,
    /// What recording it measured.
    pub stats: Value,
    /// When, Unix milliseconds.
    pub created_at: i64,
}

const INSERT_OBJECT: &str =
    "INSERT INTO checkpoint_objects (digest, size, data, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (digest) DO NOTHING";

fn record(row: &(impl DbRow + ?Sized)) -> Result<CheckpointRecord, StoreError> {
    Ok(CheckpointRecord {
        session_id: row.try_get("session_id")?,
        turn: row.try_get("turn")?,
        workspace: row.try_get("workspace")?,
        manifest: row.try_get("manifest")?,
        stats: serde_json::from_str(row.try_get::<&str>("stats")?)?,
        created_at: row.try_get("created_at")?,
    })
}

/// `$1, $2, ..., $n`.
fn placeholders(n: usize) -> String {
    (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// Runs each insert of [`Checkpoints::put_objects`](crate::Checkpoints::put_objects) (with its object's stored size);
/// returns the bytes of the objects that were new.
async fn put_objects(conn: &mut Conn<'_>, inserts: &[(Query, u64)]) -> Result<u64, StoreError> {
    let mut added = 0u64;
    for (insert, len) in inserts {
        if conn.execute(insert).await? > 0 {
            added += len;
        }
    }
    Ok(added)
}

/// File checkpoints of a session's workspace: manifests per turn and the content-addressed
/// objects they name.
/// From [`Checkpoints::list`](crate::Checkpoints::list); a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Checkpoints<'s> {
    pub(crate) store: &'s Store,
}

impl Checkpoints<'_> {
    /// Stores objects not stored yet (in one transaction); returns the compressed bytes added.
    pub async fn put_objects(self, objects: Vec<CheckpointObject>) -> Result<u64, StoreError> {
        if objects.is_empty() {
            return Ok(0);
        }
        let now = now_ms();
        let inserts: Vec<(Query, u64)> = objects
            .into_iter()
            .map(|o| {
                let len = o.data.len() as u64;
                (Query::new(INSERT_OBJECT).bind(o.digest).bind(o.size).bind(o.data).bind(now), len)
            })
            .collect();
        self.store
            .db
            .transaction(Placement::InPlace, None, async move |conn| put_objects(conn, &inserts).await)
            .await
    }

    /// The stored (compressed) bytes of the objects among `digests` that exist.
    pub async fn get_objects(self, digests: &[String]) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut out = Vec::with_capacity(digests.len());
        for chunk in digests.chunks(500) {
            let sql = format!(
                "SELECT digest, data FROM checkpoint_objects WHERE digest IN ({})",
                placeholders(chunk.len())
            );
            let query = chunk.iter().fold(Query::assembled(sql), |q, d| q.bind(d));
            out.extend(
                self.store
                    .db
                    .read_all(query, |r| Ok((r.try_get::<String>("digest")?, r.try_get::<Vec<u8>>("data")?)))
                    .await?,
            );
        }
        Ok(out)
    }

    /// Whether the object `digest` is stored.
    pub async fn has_object(self, digest: &str) -> Result<bool, StoreError> {
        let query = Query::new("SELECT 1 AS one FROM checkpoint_objects WHERE digest = $1").bind(digest);
        Ok(self.store.db.read_optional(query, |_| Ok(())).await?.is_some())
    }

    /// Records (or replaces) the checkpoint before `turn` of a session.
    pub async fn save(self, new: NewCheckpoint) -> Result<(), StoreError> {
        let query = Query::new(
            "INSERT INTO checkpoints (session_id, turn, workspace, manifest, stats, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (session_id, turn) DO UPDATE SET workspace = excluded.workspace,
                 manifest = excluded.manifest, stats = excluded.stats, created_at = excluded.created_at",
        )
        .bind(&new.session_id)
        .bind(new.turn)
        .bind(&new.workspace)
        .bind(&new.manifest)
        .bind(serde_json::to_string(&new.stats)?)
        .bind(now_ms());
        self.store.db.execute(None, query).await.map_err(|e| no_session(e, &new.session_id))?;
        Ok(())
    }

    /// The checkpoint before `turn` of a session.
    pub async fn get(self, session_id: &str, turn: i64) -> Result<Option<CheckpointRecord>, StoreError> {
        let query = Query::new(
            "SELECT session_id, turn, workspace, manifest, stats, created_at FROM checkpoints
             WHERE session_id = $1 AND turn = $2",
        )
        .bind(session_id)
        .bind(turn);
        self.store.db.read_optional(query, |r| record(r)).await
    }

    /// A session's checkpoints, by turn.
    pub async fn list(self, session_id: &str) -> Result<Vec<CheckpointRecord>, StoreError> {
        let query = Query::new(
            "SELECT session_id, turn, workspace, manifest, stats, created_at FROM checkpoints
             WHERE session_id = $1 ORDER BY turn",
        )
        .bind(session_id);
        self.store.db.read_all(query, |r| record(r)).await
    }

    /// The latest checkpoint of a workspace, whatever its session.
    pub async fn latest_for_workspace(self, workspace: &str) -> Result<Option<CheckpointRecord>, StoreError> {
        let query = Query::new(
            "SELECT session_id, turn, workspace, manifest, stats, created_at FROM checkpoints
             WHERE workspace = $1 ORDER BY created_at DESC, turn DESC LIMIT 1",
        )
        .bind(workspace);
        self.store.db.read_optional(query, |r| record(r)).await
    }

    /// Copies the checkpoints of turns up to `upto_turn` of one session to another (a fork).
    pub async fn copy(self, from: &str, to: &str, upto_turn: i64) -> Result<u64, StoreError> {
        let query = Query::new(
            "INSERT INTO checkpoints (session_id, turn, workspace, manifest, stats, created_at)
             SELECT $2, turn, workspace, manifest, stats, created_at FROM checkpoints
             WHERE session_id = $1 AND turn <= $3
             ON CONFLICT (session_id, turn) DO NOTHING",
        )
        .bind(from)
        .bind(to)
        .bind(upto_turn);
        self.store.db.execute(None, query).await.map_err(|e| no_session(e, to))
    }

    /// Every manifest a checkpoint refers to.
    pub async fn manifests(self) -> Result<Vec<String>, StoreError> {
        let query = Query::new("SELECT DISTINCT manifest FROM checkpoints");
        self.store.db.read_all(query, |r| r.try_get::<String>("manifest")).await
    }

    /// Objects stored before `before_ms` (garbage collection candidates).
    pub async fn objects_before(self, before_ms: i64) -> Result<Vec<String>, StoreError> {
        let query = Query::new("SELECT digest FROM checkpoint_objects WHERE created_at < $1").bind(before_ms);
        self.store.db.read_all(query, |r| r.try_get::<String>("digest")).await
    }

    /// Deletes these objects; returns how many went.
    pub async fn delete_objects(self, digests: &[String]) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for chunk in digests.chunks(500) {
            let sql =
                format!("DELETE FROM checkpoint_objects WHERE digest IN ({})", placeholders(chunk.len()));
            let query = chunk.iter().fold(Query::assembled(sql), |q, d| q.bind(d));
            deleted += self.store.db.execute(None, query).await?;
        }
        Ok(deleted)
    }
}
