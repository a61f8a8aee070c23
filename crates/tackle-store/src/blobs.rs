//! Offloaded outputs: large tool outputs kept out of the context, compressed, checked by
//! digest, valid only in their own session, with a time to live.

use std::time::Duration;

use crate::db::DbRow;
use crate::sql::{Query, no_session};
use serde::{Deserialize, Serialize};

use crate::db::now_ms;
use crate::frames;
use crate::writer::Placement;
use crate::{Store, StoreError};

/// zstd level: tool output (logs, JSON, code) compresses well even at the fastest positive
/// level (a 1 MB build log: 10x at level 1, 13x at level 3, which compresses 25% slower).
const ZSTD_LEVEL: i32 = 1;

/// Outputs up to this size are compressed and written in place (SQLite's [no-wait-in-place]:
/// tens of microseconds); larger ones on a blocking thread, so a big write never holds a
/// runtime thread.
pub(crate) const IN_PLACE_BYTES: usize = 64 * 1024;

/// `work`, which may take long (reading a streamed output, compressing it) but borrows from the
/// caller, without holding a runtime thread's other tasks: on a multi-thread runtime in
/// `block_in_place`; on a one-thread runtime (which has nowhere to move them) in place.
fn off_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Packs (hashing and compressing an output over [`IN_PLACE_BYTES`]) running at once in this
/// process: one per core. Packing is CPU-bound, so more at once finish no sooner, while each
/// holds a frame of raw bytes, a zstd context and its output buffer (about 0.9 MB); a server
/// offloading many big outputs together would otherwise hold all of them at its peak
/// (`scripts/bench/spool_rss_serve.sh`). Waiting for a slot is async and never holds a thread.
fn packing_slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| tokio::sync::Semaphore::new(frames::cores()))
}

/// A packing slot, held until dropped.
async fn packing_slot() -> Result<tokio::sync::SemaphorePermit<'static>, StoreError> {
    // The semaphore is never closed, so this cannot fail; the error is for form's sake.
    packing_slots().acquire().await.map_err(|e| StoreError::Io(std::io::Error::other(e)))
}

/// `work` on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| StoreError::Io(std::io::Error::other(e)))?
}

/// Metadata of a stored output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobMeta {
    /// Opaque, unguessable locator (`out_` + 32 hex digits).
    pub locator: String,
    /// Session it belongs to.
    pub session_id: String,
    /// Tool that produced it.
    pub tool: String,
    /// Call that produced it.
    pub call_id: String,
    /// blake3 of the raw bytes, hex.
    pub digest: String,
    /// Size of the raw bytes.
    pub raw_bytes: u64,
    /// Lines of the raw text.
    pub lines: u64,
    /// Creation, unix ms.
    pub created_at: i64,
    /// Expiry, unix ms.
    pub expires_at: i64,
}

/// A stored output with its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Metadata.
    pub meta: BlobMeta,
    /// The raw bytes, exactly as stored.
    pub data: Vec<u8>,
}

/// An output to store.
#[derive(Debug, Clone, Copy)]
pub struct NewBlob<'a> {
    /// Tool that produced it.
    pub tool: &'a str,
    /// Call that produced it.
    pub call_id: &'a str,
    /// The bytes.
    pub bytes: &'a [u8],
    /// Time to live.
    pub ttl: Duration,
}

fn meta(row: &(impl DbRow + ?Sized)) -> Result<BlobMeta, StoreError> {
    Ok(BlobMeta {
        locator: row.try_get("locator")?,
        session_id: row.try_get("session_id")?,
        tool: row.try_get("tool")?,
        call_id: row.try_get("call_id")?,
        digest: row.try_get("digest")?,
        raw_bytes: row.try_get::<i64>("raw_bytes")?.max(0) as u64,
        lines: row.try_get::<i64>("lines")?.max(0) as u64,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
    })
}

/// Outputs at least this large are hashed on another thread while they are compressed.
const PARALLEL_HASH_BYTES: usize = 64 * 1024;

/// The blake3 digest and the compressed frames of `bytes`; for large outputs both at once.
fn digest_and_compress(bytes: &[u8]) -> (blake3::Hash, std::io::Result<Vec<u8>>) {
    if bytes.len() < PARALLEL_HASH_BYTES {
        return (blake3::hash(bytes), frames::compress(bytes, ZSTD_LEVEL));
    }
    std::thread::scope(|scope| {
        let hashing = scope.spawn(|| blake3::hash(bytes));
        let compressed = frames::compress(bytes, ZSTD_LEVEL);
        (hashing.join().unwrap_or_else(|_| blake3::hash(bytes)), compressed)
    })
}

fn count_lines(bytes: &[u8]) -> u64 {
    if bytes.is_empty() {
        return 0;
    }
    bytes.iter().filter(|b| **b == b'\n').count() as u64 + u64::from(!bytes.ends_with(b"\n"))
}

/// The stored form of an output: digest, frames, size and lines.
struct Packed {
    digest: blake3::Hash,
    compressed: Vec<u8>,
    raw_bytes: u64,
    lines: u64,
}

/// Reads `reader` one frame at a time, hashing, counting and compressing as it goes: memory holds
/// one frame of raw bytes and the compressed output, never the whole output.
fn pack_stream(reader: &mut impl std::io::Read) -> std::io::Result<Packed> {
    let mut compressor = frames::compressor(ZSTD_LEVEL)?;
    let mut hasher = blake3::Hasher::new();
    let (mut compressed, mut raw_bytes, mut newlines, mut last) = (Vec::new(), 0u64, 0u64, None);
    let mut buf = vec![0u8; frames::FRAME_BYTES];
    loop {
        let mut filled = 0;
        while filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if filled == 0 {
            break;
        }
        let chunk = &buf[..filled];
        hasher.update(chunk);
        compressed.extend_from_slice(&compressor.compress(chunk)?);
        raw_bytes += filled as u64;
        newlines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        last = chunk.last().copied();
        if filled < buf.len() {
            break;
        }
    }
    if raw_bytes == 0 {
        compressed = compressor.compress(&[])?;
    }
    let lines = newlines + u64::from(last.is_some_and(|b| b != b'\n'));
    Ok(Packed { digest: hasher.finalize(), compressed, raw_bytes, lines })
}

/// Offloaded outputs (the `blobs` table): zstd-compressed, blake3-checked, per session, with a
/// time to live.
/// From [`Store::blobs`]; a borrowed view of the store, free to copy.
#[derive(Debug, Clone, Copy)]
pub struct Blobs<'s> {
    pub(crate) store: &'s Store,
}

impl Blobs<'_> {
    /// Stores an output and returns its metadata (with a new locator). An output larger than
    /// 64 KiB is compressed and written on a blocking thread, never on the caller's
    /// runtime thread.
    pub async fn put(self, session_id: &str, new: NewBlob<'_>) -> Result<BlobMeta, StoreError> {
        let pack = |bytes: &[u8]| -> Result<Packed, StoreError> {
            let (digest, compressed) = digest_and_compress(bytes);
            Ok(Packed {
                digest,
                compressed: compressed?,
                raw_bytes: bytes.len() as u64,
                lines: count_lines(bytes),
            })
        };
        let packed = if new.bytes.len() > IN_PLACE_BYTES {
            let _slot = packing_slot().await?;
            let bytes = new.bytes.to_vec();
            blocking(move || pack(&bytes)).await?
        } else {
            pack(new.bytes)?
        };
        self.insert_blob(session_id, new.tool, new.call_id, new.ttl, packed).await
    }

    /// Stores the output `reader` yields, read and compressed one frame at a time, so an output
    /// of any size costs one frame of raw bytes in memory plus its compressed form; the stored
    /// blob is the same as [`Blobs::put`](crate::Blobs::put) of the same bytes would store.
    /// On a multi-thread runtime `reader` is read and compressed in `block_in_place`, so the
    /// runtime thread's other tasks move to another thread meanwhile. At most one output per
    /// core is packed at once in the process (others wait for a slot without holding a thread),
    /// so `reader` must not wait for another write to finish.
    pub async fn put_from(
        self,
        session_id: &str,
        tool: &str,
        call_id: &str,
        ttl: Duration,
        mut reader: impl std::io::Read + Send,
    ) -> Result<BlobMeta, StoreError> {
        let slot = packing_slot().await?;
        let packed = off_runtime(|| pack_stream(&mut reader))?;
        drop(slot);
        self.insert_blob(session_id, tool, call_id, ttl, packed).await
    }

    async fn insert_blob(
        self,
        session_id: &str,
        tool: &str,
        call_id: &str,
        ttl: Duration,
        packed: Packed,
    ) -> Result<BlobMeta, StoreError> {
        let Packed { digest, compressed, raw_bytes, lines } = packed;
        let compressed_len = compressed.len();
        let meta = BlobMeta {
            locator: format!("out_{}", uuid::Uuid::new_v4().simple()),
            session_id: session_id.to_owned(),
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            digest: digest.to_hex().to_string(),
            raw_bytes,
            lines,
            created_at: now_ms(),
            expires_at: 0,
        };
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let meta = BlobMeta { expires_at: meta.created_at.saturating_add(ttl_ms), ..meta };
        let query = Query::new(
            "INSERT INTO blobs (locator, session_id, tool, call_id, digest, raw_bytes, lines, data, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&meta.locator)
        .bind(session_id)
        .bind(tool)
        .bind(call_id)
        .bind(&meta.digest)
        .bind(i64::try_from(meta.raw_bytes).unwrap_or(i64::MAX))
        .bind(i64::try_from(meta.lines).unwrap_or(i64::MAX))
        .bind(compressed)
        .bind(meta.created_at)
        .bind(meta.expires_at);
        let placement =
            if compressed_len > IN_PLACE_BYTES { Placement::Blocking } else { Placement::InPlace };
        self.store
            .db
            .execute_on(placement, self.store.epoch_for(session_id), query)
            .await
            .map_err(|e| no_session(e, session_id))?;
        // The row holds exactly these values; reading them back would cost a query.
        Ok(meta)
    }

    /// The session a locator belongs to, for a local client that owns every session
    /// (`tackle results show`). Servers must use [`Blobs::get`](crate::Blobs::get) with the caller's session.
    pub async fn session_of(self, locator: &str) -> Result<String, StoreError> {
        let query = Query::new("SELECT session_id FROM blobs WHERE locator = $1").bind(locator);
        let session = self.store.db.read_optional(query, |r| r.try_get::<String>("session_id")).await?;
        session.ok_or_else(|| StoreError::not_found("locator", locator))
    }

    /// Metadata of a stored output, even after it expired.
    pub async fn meta(self, session_id: &str, locator: &str) -> Result<BlobMeta, StoreError> {
        let query = Query::new(
            "SELECT locator, session_id, tool, call_id, digest, raw_bytes, lines, created_at, expires_at
             FROM blobs WHERE locator = $1 AND session_id = $2",
        )
        .bind(locator)
        .bind(session_id);
        let meta = self.store.db.read_optional(query, |r| meta(r)).await?;
        // Another session's locator is reported exactly like a missing one.
        meta.ok_or_else(|| StoreError::not_found("locator", locator))
    }

    /// The stored output, byte-exact. A locator of another session is not found; an expired
    /// one is [`StoreError::Expired`]; data that does not match its digest is corrupt.
    pub async fn get(self, session_id: &str, locator: &str) -> Result<Blob, StoreError> {
        let query = Query::new(
            "SELECT locator, session_id, tool, call_id, digest, raw_bytes, lines, created_at, expires_at, data
             FROM blobs WHERE locator = $1 AND session_id = $2",
        )
        .bind(locator)
        .bind(session_id);
        let row = self
            .store
            .db
            .read_optional(query, |r| Ok((meta(r)?, r.try_get::<Option<Vec<u8>>>("data")?)))
            .await?;
        let (meta, data) = row.ok_or_else(|| StoreError::not_found("locator", locator))?;
        let data = match data {
            Some(d) if meta.expires_at > now_ms() => d,
            _ => return Err(StoreError::Expired { locator: meta.locator, expired_at: meta.expires_at }),
        };
        let capacity = usize::try_from(meta.raw_bytes).unwrap_or(0);
        let raw = frames::decompress(&data, capacity)
            .map_err(|e| StoreError::Corrupt { what: "output", detail: format!("{locator}: {e}") })?;
        // Frames written with checksums were verified while decoding (cheaper than hashing the
        // whole output again); older blobs are checked against their digest.
        if !frames::has_checksums(&data) && blake3::hash(&raw).to_hex().as_str() != meta.digest {
            return Err(StoreError::Corrupt {
                what: "output",
                detail: format!("{locator}: digest mismatch"),
            });
        }
        Ok(Blob { meta, data: raw })
    }

    /// Removes the data of outputs expired at `now_ms`, keeping their metadata so a later read
    /// says "expired" rather than "not found". Returns how many were purged.
    pub async fn purge_expired(self, now_ms: i64) -> Result<u64, StoreError> {
        let query = Query::new("UPDATE blobs SET data = NULL WHERE expires_at <= $1 AND data IS NOT NULL")
            .bind(now_ms);
        self.store.db.execute(None, query).await
    }
}

#[cfg(test)]
#[path = "blobs_tests.rs"]
mod tests;
