//! Workspace checkpoints: before each turn, the workspace tree is recorded as a content-addressed
//! snapshot, so a rewind restores it byte for byte — whatever changed it: Tackle's file tools,
//! shell commands, or anything else.
//!
//! A checkpoint is a [`Manifest`] (every path with its kind, mode and BLAKE3 digest, plus the
//! `stat` fields of each file) and the content of the files whose digest no earlier checkpoint
//! stored. Taking one costs an `lstat` per path (through its open directory, on every core): a
//! file is read and hashed only when its size, times, inode or mode changed since the previous
//! checkpoint of the workspace (or when its times were too recent to vouch for it: the "racily
//! clean" rule of git's index). Objects and
//! manifests live in the session store (`checkpoint_objects`, `checkpoints`), shared by every
//! session, so unchanged files are stored once.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use tackle_checkpoint::{CheckpointConfig, Checkpoints};
//! use tackle_store::{NewSession, Store};
//! let store = Store::open_in_memory().await.unwrap();
//! let ws = tempfile::tempdir().unwrap();
//! let session = store.sessions().create(NewSession { owner: "me".into(), title: String::new(), provider: "p".into(),
//!     model: "m".into(), workspace: ws.path().display().to_string(), metadata: serde_json::Value::Null }).await.unwrap();
//! let checkpoints = Checkpoints::new(store, CheckpointConfig::default());
//! std::fs::write(ws.path().join("a.txt"), "before").unwrap();
//! checkpoints.record(&session.id, 1, ws.path()).await.unwrap();
//! std::fs::write(ws.path().join("a.txt"), "after").unwrap();
//! std::fs::write(ws.path().join("new.txt"), "x").unwrap();
//! let plan = checkpoints.preview(&session.id, 1, ws.path()).await.unwrap();
//! assert_eq!(plan.counts(), (0, 1, 1, 0, 0)); // a.txt modified back, new.txt deleted
//! checkpoints.restore(&session.id, 1, ws.path()).await.unwrap();
//! assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "before");
//! assert!(!ws.path().join("new.txt").exists());
//! # });
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tackle_store::{CheckpointObject, NewCheckpoint, Store, StoreError};
use thiserror::Error;

mod config;
mod manifest;
mod restore;
mod scan;

pub use config::CheckpointConfig;
pub use manifest::{Digest, Entry, Kind, Manifest, Stat, hex};
pub use restore::{Change, Leftovers, PathChange, RestorePlan};
pub use scan::ScanStats;

/// How recent a file's times may be before they cannot prove it unchanged at the next
/// checkpoint: file systems stamp times with a coarse clock (a kernel tick, 2 s on FAT), so a
/// write right after a checkpoint may leave the same times. Such files are read again.
pub const RACY_MARGIN: Duration = Duration::from_secs(2);

/// New content is sent to the store in batches of about this many compressed bytes.
const BATCH_BYTES: usize = 8 * 1024 * 1024;

/// Why a checkpoint or a restore failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A path could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The workspace has more entries than `[checkpoints] max_files`.
    #[error(
        "the workspace has more than {limit} files and directories, so it is not checkpointed; add its \
         generated directories to [checkpoints] ignore, or raise max_files"
    )]
    TooManyFiles {
        /// The limit.
        limit: usize,
    },
    /// No checkpoint of that turn.
    #[error(
        "session {session} has no checkpoint of turn {turn}; `tackle rewind {session}` lists its checkpoints"
    )]
    NoCheckpoint {
        /// The session.
        session: String,
        /// The turn.
        turn: i64,
    },
    /// Stored data does not read back as written.
    #[error("checkpoint data is corrupt: {0}")]
    Corrupt(String),
    /// The configuration cannot be used.
    #[error("{0}")]
    Config(String),
}

/// What recording a checkpoint did.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointStats {
    /// The turn it precedes.
    pub turn: i64,
    /// Paths recorded.
    pub entries: u64,
    /// Files read and hashed (new or changed).
    pub hashed: u64,
    /// Compressed bytes of new content stored.
    pub stored_bytes: u64,
    /// The workspace is as the previous checkpoint recorded it.
    pub unchanged: bool,
    /// Wall time.
    #[serde(skip)]
    pub duration: Duration,
}

/// A recorded checkpoint, as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointInfo {
    /// The turn it precedes.
    pub turn: i64,
    /// The workspace it recorded.
    pub workspace: String,
    /// When, Unix milliseconds.
    pub created_at: i64,
    /// What recording it measured.
    pub stats: serde_json::Value,
}

/// What a restore did.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreReport {
    /// What changed.
    pub plan: RestorePlan,
    /// Paths that could not be made as recorded, with why.
    pub leftovers: Leftovers,
    /// Wall time.
    #[serde(skip)]
    pub duration: Duration,
}

#[derive(Clone)]
struct Cached {
    digest: String,
    manifest: Arc<Manifest>,
}

/// Records checkpoints of workspaces and restores them. Cheap to share behind an `Arc`; keeps
/// the last manifest of each workspace in memory, so a checkpoint of an unchanged workspace
/// reads nothing from the store.
pub struct Checkpoints {
    store: Store,
    config: CheckpointConfig,
    exclude: Vec<PathBuf>,
    racy_margin: Duration,
    parallel_from: usize,
    last: Mutex<HashMap<PathBuf, Cached>>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints").field("config", &self.config).field("exclude", &self.exclude).finish()
    }
}

impl Checkpoints {
    /// Checkpoints kept in `store`.
    pub fn new(store: Store, config: CheckpointConfig) -> Self {
        Self {
            store,
            config,
            exclude: Vec::new(),
            racy_margin: RACY_MARGIN,
            parallel_from: restore::PARALLEL_WRITES,
            last: Mutex::default(),
        }
    }

    /// Never records (nor touches) these absolute paths: Tackle's own data directory, when it
    /// lies inside a workspace.
    pub fn exclude(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.exclude.extend(paths);
        self
    }

    /// Another margin for the racily-clean rule (tests and benchmarks that cannot wait).
    pub fn racy_margin(mut self, margin: Duration) -> Self {
        self.racy_margin = margin;
        self
    }

    /// Restores that write at least this many files write them on several threads (default
    /// 64; tests lower it to cover that path with small workspaces).
    pub fn parallel_restore_from(mut self, files: usize) -> Self {
        self.parallel_from = files.max(1);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    fn rules(&self, workspace: &Path) -> Result<config::Rules, CheckpointError> {
        config::Rules::new(workspace, &self.config, &self.exclude)
    }

    fn cached(&self, workspace: &Path) -> Option<Cached> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).get(workspace).cloned()
    }

    fn remember(&self, workspace: &Path, cached: Option<Cached>) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match cached {
            Some(c) => last.insert(workspace.to_owned(), c),
            None => last.remove(workspace),
        };
    }

    /// The last manifest recorded for `workspace` (by any session): from memory, else the store.
    async fn previous(&self, workspace: &Path) -> Result<Option<Cached>, CheckpointError> {
        if let Some(c) = self.cached(workspace) {
            // Still stored (a garbage collection after a session was deleted may have taken it
            // and, with it, content it refers to).
            if self.store.checkpoints().has_object(&c.digest).await? {
                return Ok(Some(c));
            }
            self.remember(workspace, None);
        }
        let Some(record) =
            self.store.checkpoints().latest_for_workspace(&workspace.display().to_string()).await?
        else {
            return Ok(None);
        };
        let manifest = self.load_manifest(&record.manifest).await?;
        Ok(Some(Cached { digest: record.manifest, manifest: Arc::new(manifest) }))
    }

    async fn load_manifest(&self, digest: &str) -> Result<Manifest, CheckpointError> {
        let objects = self.store.checkpoints().get_objects(&[digest.to_owned()]).await?;
        let data = objects.into_iter().next().map(|(_, d)| d).ok_or_else(|| {
            CheckpointError::Corrupt(format!("the manifest {digest} is missing from the store"))
        })?;
        let bytes = decompress(&data)?;
        Manifest::decode(&bytes)
    }

    /// Records `workspace` as it is now, as the checkpoint before `turn` of `session_id`.
    pub async fn record(
        &self,
        session_id: &str,
        turn: i64,
        workspace: &Path,
    ) -> Result<CheckpointStats, CheckpointError> {
        let started = Instant::now();
        let rules = self.rules(workspace)?;
        let previous = self.previous(workspace).await?;
        let prev_manifest = previous.as_ref().map(|p| p.manifest.clone());
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<CheckpointObject>>(2);
        let root = workspace.to_owned();
        let margin = self.racy_margin;
        let scanning = tokio::task::spawn_blocking(move || {
            // Filled by the scanning threads; a full batch goes to the store while they go on.
            let batch = Mutex::new((Vec::new(), 0usize));
            let send = |digest: Digest, bytes: &[u8]| -> Result<(), CheckpointError> {
                let data = zstd::bulk::compress(bytes, 1)
                    .map_err(|e| CheckpointError::Io { path: PathBuf::from("(compressing)"), source: e })?;
                let full = {
                    let mut batch = batch.lock().unwrap_or_else(|p| p.into_inner());
                    batch.1 += data.len();
                    batch.0.push(CheckpointObject { digest: hex(&digest), size: bytes.len() as i64, data });
                    (batch.1 >= BATCH_BYTES).then(|| {
                        batch.1 = 0;
                        std::mem::take(&mut batch.0)
                    })
                };
                if let Some(full) = full {
                    tx.blocking_send(full)
                        .map_err(|_| CheckpointError::Corrupt("the store stopped taking content".into()))?;
                }
                Ok(())
            };
            let scanned = scan::scan(&root, prev_manifest.as_ref(), &rules, margin, &send)?;
            let (rest, _) = batch.into_inner().unwrap_or_else(|p| p.into_inner());
            if !rest.is_empty() {
                tx.blocking_send(rest)
                    .map_err(|_| CheckpointError::Corrupt("the store stopped taking content".into()))?;
            }
            Ok::<_, CheckpointError>(scanned)
        });
        let mut stored_bytes = 0u64;
        let mut store_error = None;
        while let Some(batch) = rx.recv().await {
            match self.store.checkpoints().put_objects(batch).await {
                Ok(n) => stored_bytes += n,
                Err(e) => {
                    store_error = Some(e);
                    break;
                }
            }
        }
        drop(rx);
        let scanned =
            scanning.await.map_err(|e| CheckpointError::Corrupt(format!("the scan stopped: {e}")))?;
        if let Some(e) = store_error {
            return Err(e.into());
        }
        let (manifest, stats, same) = scanned?;
        // The same entries as the previous manifest: the same bytes, so no encoding nor hashing.
        let (digest_hex, unchanged) = match previous.as_ref().filter(|_| same) {
            Some(p) => (p.digest.clone(), true),
            None => {
                let encoded = manifest.encode();
                let digest_hex = hex(blake3::hash(&encoded).as_bytes());
                let unchanged = previous.as_ref().is_some_and(|p| p.digest == digest_hex);
                if !unchanged {
                    let data = zstd::bulk::compress(&encoded, 3).map_err(|e| CheckpointError::Io {
                        path: PathBuf::from("(compressing)"),
                        source: e,
                    })?;
                    stored_bytes += self
                        .store
                        .checkpoints()
                        .put_objects(vec![CheckpointObject {
                            digest: digest_hex.clone(),
                            size: encoded.len() as i64,
                            data,
                        }])
                        .await?;
                }
                (digest_hex, unchanged)
            }
        };
        let result = CheckpointStats {
            turn,
            entries: stats.entries,
            hashed: stats.hashed,
            stored_bytes,
            unchanged,
            duration: started.elapsed(),
        };
        let stats_json = serde_json::json!({
            "entries": stats.entries, "hashed": stats.hashed, "hashed_bytes": stats.hashed_bytes,
            "opaque": stats.opaque, "stored_bytes": stored_bytes,
            "duration_ms": u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
        });
        self.store
            .checkpoints()
            .save(NewCheckpoint {
                session_id: session_id.to_owned(),
                turn,
                workspace: workspace.display().to_string(),
                manifest: digest_hex.clone(),
                stats: stats_json,
            })
            .await?;
        self.remember(workspace, Some(Cached { digest: digest_hex, manifest }));
        Ok(result)
    }

    /// The checkpoints of a session, oldest first.
    pub async fn list(&self, session_id: &str) -> Result<Vec<CheckpointInfo>, CheckpointError> {
        Ok(self
            .store
            .checkpoints()
            .list(session_id)
            .await?
            .into_iter()
            .map(|r| CheckpointInfo {
                turn: r.turn,
                workspace: r.workspace,
                created_at: r.created_at,
                stats: r.stats,
            })
            .collect())
    }

    async fn target(&self, session_id: &str, turn: i64) -> Result<Manifest, CheckpointError> {
        let record = self
            .store
            .checkpoints()
            .get(session_id, turn)
            .await?
            .ok_or_else(|| CheckpointError::NoCheckpoint { session: session_id.to_owned(), turn })?;
        self.load_manifest(&record.manifest).await
    }

    /// Scans `workspace` as it is now (hashing what changed since the last checkpoint; nothing
    /// is stored).
    async fn current(&self, workspace: &Path) -> Result<Arc<Manifest>, CheckpointError> {
        let rules = self.rules(workspace)?;
        let previous = self.previous(workspace).await?;
        let root = workspace.to_owned();
        let margin = self.racy_margin;
        let (manifest, _, _) = tokio::task::spawn_blocking(move || {
            scan::scan(&root, previous.as_ref().map(|p| &p.manifest), &rules, margin, &|_, _| Ok(()))
        })
        .await
        .map_err(|e| CheckpointError::Corrupt(format!("the scan stopped: {e}")))??;
        Ok(manifest)
    }

    /// What restoring the checkpoint before `turn` into `workspace` would change. Nothing is
    /// touched.
    pub async fn preview(
        &self,
        session_id: &str,
        turn: i64,
        workspace: &Path,
    ) -> Result<RestorePlan, CheckpointError> {
        let target = self.target(session_id, turn).await?;
        let current = self.current(workspace).await?;
        Ok(restore::plan(&current, &target))
    }

    /// Restores `workspace` to the checkpoint before `turn`: contents, modes, symbolic links and
    /// empty directories as recorded; paths created since are removed; ignored paths are left
    /// alone. Files recorded without content are reported if they changed.
    pub async fn restore(
        &self,
        session_id: &str,
        turn: i64,
        workspace: &Path,
    ) -> Result<RestoreReport, CheckpointError> {
        let started = Instant::now();
        let target = self.target(session_id, turn).await?;
        self.restore_manifest(&target, workspace, started).await
    }

    /// Writes the checkpoint before `turn` of `session_id` into `dest` (an empty or missing
    /// directory): a copy of the workspace as it was, e.g. for a fork.
    pub async fn materialize(
        &self,
        session_id: &str,
        turn: i64,
        dest: &Path,
    ) -> Result<RestoreReport, CheckpointError> {
        let started = Instant::now();
        let target = self.target(session_id, turn).await?;
        std::fs::create_dir_all(dest)
            .map_err(|e| CheckpointError::Io { path: dest.to_owned(), source: e })?;
        let nonempty = std::fs::read_dir(dest)
            .map_err(|e| CheckpointError::Io { path: dest.to_owned(), source: e })?
            .next()
            .is_some();
        if nonempty {
            return Err(CheckpointError::Config(format!(
                "{} is not empty; choose a new or empty directory for the copy",
                dest.display()
            )));
        }
        self.restore_manifest(&target, dest, started).await
    }

    async fn restore_manifest(
        &self,
        target: &Manifest,
        workspace: &Path,
        started: Instant,
    ) -> Result<RestoreReport, CheckpointError> {
        let current = self.current(workspace).await?;
        let plan = restore::plan(&current, target);
        // Every object is read, decompressed and checked before anything is touched: each
        // chunk is decompressed on a blocking thread while the store reads the next.
        let needed: Vec<String> = plan.needed().iter().map(hex).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
        let mut unpacking = std::collections::VecDeque::new();
        let mut contents = HashMap::with_capacity(needed.len());
        for chunk in needed.chunks(UNPACK_CHUNK) {
            let packed = self.store.checkpoints().get_objects(chunk).await?;
            unpacking.push_back(tokio::task::spawn_blocking(move || unpack(&packed)));
            if unpacking.len() >= threads
                && let Some(oldest) = unpacking.pop_front()
            {
                contents.extend(joined(oldest.await)?);
            }
        }
        for part in unpacking {
            contents.extend(joined(part.await)?);
        }
        let root = workspace.to_owned();
        let parallel_from = self.parallel_from;
        let (plan, leftovers) = tokio::task::spawn_blocking(move || {
            let leftovers = restore::apply(&root, &plan, &contents, parallel_from);
            (plan, leftovers)
        })
        .await
        .map_err(|e| CheckpointError::Corrupt(format!("the restore stopped: {e}")))?;
        // Files not recorded since are known only to this scan: the next checkpoint starts from
        // the stored manifest again, so it stores them.
        self.remember(workspace, None);
        Ok(RestoreReport { plan, leftovers, duration: started.elapsed() })
    }

    /// Deletes stored content no checkpoint refers to any more (after sessions were deleted),
    /// leaving alone what was stored in the last hour (a checkpoint may be being recorded).
    /// Returns how many objects went.
    pub async fn collect_garbage(&self) -> Result<u64, CheckpointError> {
        let cutoff = tackle_store::now_ms() - 3_600_000;
        let candidates = self.store.checkpoints().objects_before(cutoff).await?;
        if candidates.is_empty() {
            return Ok(0);
        }
        let mut live = std::collections::HashSet::new();
        for digest in self.store.checkpoints().manifests().await? {
            let manifest = self.load_manifest(&digest).await?;
            live.extend(manifest.entries.iter().filter_map(Entry::digest).map(hex));
            live.insert(digest);
        }
        let dead: Vec<String> = candidates.into_iter().filter(|d| !live.contains(d)).collect();
        Ok(self.store.checkpoints().delete_objects(&dead).await?)
    }
}

/// Objects are at most this large once decompressed (a file's content is at most
/// `max_file_bytes`); a frame that says more is decompressed as a stream.
const MAX_OBJECT_BYTES: u64 = 1 << 30;

fn decompress(data: &[u8]) -> Result<Vec<u8>, CheckpointError> {
    let mut d = zstd::bulk::Decompressor::new()
        .map_err(|e| CheckpointError::Corrupt(format!("cannot decompress: {e}")))?;
    decompress_with(&mut d, data)
}

/// Decompresses one object with a reused context, straight into a buffer of its recorded size.
fn decompress_with(d: &mut zstd::bulk::Decompressor<'_>, data: &[u8]) -> Result<Vec<u8>, CheckpointError> {
    let bad = |e: std::io::Error| CheckpointError::Corrupt(format!("cannot decompress: {e}"));
    match zstd::zstd_safe::get_frame_content_size(data) {
        Ok(Some(size)) if size <= MAX_OBJECT_BYTES => d.decompress(data, size as usize).map_err(bad),
        _ => zstd::stream::decode_all(data).map_err(bad),
    }
}

/// The objects a restore reads from the store at once (and decompresses on one thread).
const UNPACK_CHUNK: usize = 500;

/// Decompresses objects read for a restore and checks each against its digest.
fn unpack(objects: &[(String, Vec<u8>)]) -> Result<Vec<(Digest, Vec<u8>)>, CheckpointError> {
    let mut d = zstd::bulk::Decompressor::new()
        .map_err(|e| CheckpointError::Corrupt(format!("cannot decompress: {e}")))?;
    objects
        .iter()
        .map(|(digest, data)| {
            let bytes = decompress_with(&mut d, data)?;
            let actual = *blake3::hash(&bytes).as_bytes();
            if hex(&actual) != *digest {
                return Err(CheckpointError::Corrupt(format!("object {digest} does not match its digest")));
            }
            Ok((actual, bytes))
        })
        .collect()
}

fn joined<T>(done: Result<Result<T, CheckpointError>, tokio::task::JoinError>) -> Result<T, CheckpointError> {
    done.map_err(|e| CheckpointError::Corrupt(format!("decompressing stopped: {e}")))?
}
