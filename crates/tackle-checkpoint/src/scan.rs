//! Scanning a workspace into a [`Manifest`], cheaply: every path costs its share of a
//! `getdents` and one `fstatat` through its open directory, and a file is read and hashed only
//! when its size, times, inode or mode differ from the previous manifest (or when the previous
//! manifest could not vouch for it: see [`Entry::racy`]). Directories are read on as many
//! threads as there are cores (at most 8): an unchanged workspace is bound by those system
//! calls, a first checkpoint by reading and hashing, and both spread over cores.

use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::io::Read;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};

use crate::CheckpointError;
use crate::config::Rules;
use crate::manifest::{Digest, Entry, Kind, Manifest, Stat};

/// What a scan did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Paths recorded (files, directories, links).
    pub entries: u64,
    /// Files read and hashed because they changed (or were new).
    pub hashed: u64,
    /// Bytes read to hash them.
    pub hashed_bytes: u64,
    /// Files recorded without content (over the size limit, or unreadable).
    pub opaque: u64,
}

impl ScanStats {
    fn add(&mut self, other: &ScanStats) {
        self.entries += other.entries;
        self.hashed += other.hashed;
        self.hashed_bytes += other.hashed_bytes;
        self.opaque += other.opaque;
    }
}

/// Receives the bytes of content no earlier checkpoint stored, with their digest; called from
/// the scanning threads.
pub(crate) type ContentSink<'a> = dyn Fn(Digest, &[u8]) -> Result<(), CheckpointError> + Sync + 'a;

/// Most threads a scan reads directories on.
const MAX_THREADS: usize = 8;

/// Entries a thread records before adding them to the shared count (`max_files`).
const COUNT_EVERY: usize = 256;

/// Scans `root`. `prev` is the previous manifest of the same workspace; `new_content` receives
/// the bytes of every file whose digest `prev` does not have (once per digest). Returns the
/// manifest and whether it is `prev` itself (every entry as `prev` has it: then `prev` is
/// returned, neither sorted nor compared again).
pub(crate) fn scan(
    root: &Path,
    prev: Option<&Arc<Manifest>>,
    rules: &Rules,
    racy_margin: Duration,
    new_content: &ContentSink<'_>,
) -> Result<(Arc<Manifest>, ScanStats, bool), CheckpointError> {
    let io = |source: std::io::Error| CheckpointError::Io { path: root.to_owned(), source };
    let root_fd = rustix::fs::open(root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| io(e.into()))?;
    let walk = Walk {
        root,
        root_fd: &root_fd,
        prev: prev.map(|p| &**p),
        rules,
        racy_from: now_ns() - i64::try_from(racy_margin.as_nanos()).unwrap_or(i64::MAX),
        new_content,
        queue: Mutex::new(Queue { dirs: vec![Vec::new()], busy: 0, waiting: 0 }),
        changed: Condvar::new(),
        count: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        known: OnceLock::new(),
        emitted: Mutex::new(HashSet::new()),
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS);
    let parts: Vec<Part> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(|| walk.work())).collect();
        let mut parts = vec![walk.work()];
        for helper in helpers {
            match helper.join() {
                Ok(part) => parts.push(part),
                Err(_) => walk.fail(CheckpointError::Corrupt("a scanning thread panicked".into())),
            }
        }
        parts
    });
    if let Some(e) = walk.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut stats = ScanStats::default();
    let total = parts.iter().map(|p| p.entries.len()).sum();
    let matched: usize = parts.iter().map(|p| p.matched).sum();
    for part in &parts {
        stats.add(&part.stats);
    }
    stats.entries = total as u64;
    // Paths are unique: as many entries equal to one of `prev` as `prev` has, and no other,
    // is `prev`.
    if let Some(prev) = prev
        && matched == total
        && total == prev.entries.len()
    {
        return Ok((prev.clone(), stats, true));
    }
    let mut entries = Vec::with_capacity(total);
    for part in parts {
        entries.extend(part.entries);
    }
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok((Arc::new(Manifest { entries }), stats, false))
}

/// What one thread recorded.
#[derive(Default)]
struct Part {
    entries: Vec<Entry>,
    stats: ScanStats,
    /// Entries equal to the previous manifest's at their path.
    matched: usize,
    /// Directories found in the directory being read (then queued).
    found: Vec<Vec<u8>>,
}

/// The entries of the previous manifest under the directory `rel`, and the length of their
/// common prefix (`rel/`): paths sharing a prefix are contiguous in a sorted manifest.
fn children<'m>(prev: &'m Manifest, rel: &[u8]) -> (&'m [Entry], usize) {
    if rel.is_empty() {
        return (&prev.entries, 0);
    }
    let mut prefix = Vec::with_capacity(rel.len() + 1);
    prefix.extend_from_slice(rel);
    prefix.push(b'/');
    let from = prev.entries.partition_point(|e| e.path.as_slice() < prefix.as_slice());
    let len = prev.entries[from..].partition_point(|e| e.path.starts_with(&prefix));
    (&prev.entries[from..from + len], prefix.len())
}

/// The entry named `name` among `children` (whose paths all start with `prefix` bytes).
fn child<'m>(children: &'m [Entry], prefix: usize, name: &[u8]) -> Option<&'m Entry> {
    children
        .binary_search_by(|e| e.path.get(prefix..).unwrap_or_default().cmp(name))
        .ok()
        .map(|i| &children[i])
}

/// The directories left to read (relative paths) and how many threads are reading one.
struct Queue {
    dirs: Vec<Vec<u8>>,
    busy: usize,
    /// Threads waiting for a directory (woken only when one comes, or when the walk ends).
    waiting: usize,
}

/// One scan, shared by its threads.
struct Walk<'a> {
    root: &'a Path,
    root_fd: &'a OwnedFd,
    prev: Option<&'a Manifest>,
    rules: &'a Rules,
    /// Times at or after this (ns) cannot vouch for a file at the next checkpoint.
    racy_from: i64,
    new_content: &'a ContentSink<'a>,
    queue: Mutex<Queue>,
    changed: Condvar,
    /// Entries recorded so far (for `max_files`).
    count: AtomicUsize,
    stop: AtomicBool,
    error: Mutex<Option<CheckpointError>>,
    /// The digests the previous manifest has: built when the first file is hashed (most
    /// checkpoints hash nothing).
    known: OnceLock<HashSet<&'a Digest>>,
    emitted: Mutex<HashSet<Digest>>,
}

impl Walk<'_> {
    /// One thread's share: directories taken from the queue until none is left and no thread
    /// is reading one (which could add more).
    fn work(&self) -> Part {
        let mut part = Part::default();
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 32 * 1024];
        loop {
            let dir = {
                let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if self.stop.load(Ordering::Relaxed) {
                        return part;
                    }
                    if let Some(dir) = queue.dirs.pop() {
                        queue.busy += 1;
                        break dir;
                    }
                    if queue.busy == 0 {
                        return part;
                    }
                    queue.waiting += 1;
                    queue = self.changed.wait(queue).unwrap_or_else(|p| p.into_inner());
                    queue.waiting -= 1;
                }
            };
            if let Err(e) = self.read_dir(&dir, &mut buf, &mut part) {
                self.fail(e);
            }
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.busy -= 1;
            queue.dirs.append(&mut part.found);
            let wake = queue.waiting > 0 && (!queue.dirs.is_empty() || queue.busy == 0);
            drop(queue);
            if wake {
                self.changed.notify_all();
            }
        }
    }

    fn fail(&self, error: CheckpointError) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(error);
        self.stop.store(true, Ordering::Relaxed);
        drop(slot);
        // Taken under the queue's lock, so no thread misses the stop between its check and
        // its wait.
        drop(self.queue.lock().unwrap_or_else(|p| p.into_inner()));
        self.changed.notify_all();
    }

    /// Records the entries of the directory `rel` (relative to the root; empty for the root),
    /// and adds its subdirectories to `part.found`.
    fn read_dir(
        &self,
        rel: &[u8],
        buf: &mut [MaybeUninit<u8>],
        part: &mut Part,
    ) -> Result<(), CheckpointError> {
        let opened;
        let fd: BorrowedFd<'_> = if rel.is_empty() {
            self.root_fd.as_fd()
        } else {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match c_path(rel).and_then(|p| rustix::fs::openat(self.root_fd, &p, flags, Mode::empty())) {
                Ok(fd) => {
                    opened = fd;
                    opened.as_fd()
                }
                // A subdirectory that cannot be read keeps its entry, and a rewind leaves its
                // content alone.
                Err(e) => {
                    tracing::debug!(dir = %lossy(rel), error = %e, "unreadable directory left out of the checkpoint");
                    return Ok(());
                }
            }
        };
        let (before, prefix) = self.prev.map_or((&[][..], 0), |prev| children(prev, rel));
        let mut uncounted = 0;
        let mut listing = RawDir::new(fd, buf);
        while let Some(item) = listing.next() {
            let item = match item {
                Ok(item) => item,
                // A listing cut short would record its missing paths as deleted.
                Err(e) => return Err(self.io_error(rel, e)),
            };
            let name = item.file_name();
            let name_bytes = name.to_bytes();
            if name_bytes == b"." || name_bytes == b".." {
                continue;
            }
            let mut child_path = Vec::with_capacity(rel.len() + 1 + name_bytes.len());
            child_path.extend_from_slice(rel);
            if !child_path.is_empty() {
                child_path.push(b'/');
            }
            child_path.extend_from_slice(name_bytes);
            // The listing's type, when the file system gives one, decides the ignore rules
            // before any `stat`.
            let listed = item.file_type();
            let early = if listed == FileType::Unknown {
                match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => Some(st),
                    Err(_) => continue,
                }
            } else {
                None
            };
            let is_dir = match &early {
                Some(st) => FileType::from_raw_mode(st.st_mode) == FileType::Directory,
                None => listed == FileType::Directory,
            };
            if self.rules.skips(&child_path, name_bytes, is_dir) {
                continue;
            }
            let st = match early {
                Some(st) => st,
                None => match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => st,
                    Err(_) => continue,
                },
            };
            let previous = child(before, prefix, name_bytes);
            let Some(entry) = self.entry(fd, name, child_path, &st, previous, part)? else {
                continue;
            };
            if previous == Some(&entry) {
                part.matched += 1;
            }
            part.entries.push(entry);
            uncounted += 1;
            if uncounted == COUNT_EVERY {
                self.count(std::mem::take(&mut uncounted))?;
            }
        }
        self.count(uncounted)
    }

    /// Adds entries to the shared count (in batches: one counter updated by every thread for
    /// every entry costs more than the entry).
    fn count(&self, entries: usize) -> Result<(), CheckpointError> {
        if self.count.fetch_add(entries, Ordering::Relaxed) + entries > self.rules.max_files {
            return Err(CheckpointError::TooManyFiles { limit: self.rules.max_files });
        }
        Ok(())
    }

    /// The entry of `name` in the directory `dir` (`path` relative to the root), or `None` when
    /// it is not recorded.
    fn entry(
        &self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        path: Vec<u8>,
        st: &rustix::fs::Stat,
        previous: Option<&Entry>,
        part: &mut Part,
    ) -> Result<Option<Entry>, CheckpointError> {
        let stats = &mut part.stats;
        let ns = |secs: i64, nsec: u64| {
            secs.saturating_mul(1_000_000_000).saturating_add(i64::try_from(nsec).unwrap_or(0))
        };
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        let stat = Stat {
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as u64),
            ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as u64),
            ino: st.st_ino as u64,
        };
        let mode = st.st_mode & 0o7777;
        let racy = stat.mtime_ns.max(stat.ctime_ns) >= self.racy_from;
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                part.found.push(path.clone());
                Kind::Dir
            }
            FileType::Symlink => match rustix::fs::readlinkat(dir, name, Vec::new()) {
                Ok(target) => Kind::Symlink(target.into_bytes()),
                Err(_) => return Ok(None),
            },
            FileType::RegularFile => match previous {
                Some(p)
                    if !p.racy
                        && p.stat == stat
                        && p.mode == mode
                        && matches!(p.kind, Kind::File(_) | Kind::Opaque) =>
                {
                    if p.kind == Kind::Opaque {
                        stats.opaque += 1;
                    }
                    p.kind.clone()
                }
                _ if stat.size > self.rules.max_file_bytes => {
                    stats.opaque += 1;
                    Kind::Opaque
                }
                _ => match read_file(dir, name, stat.size) {
                    Ok(bytes) => {
                        stats.hashed += 1;
                        stats.hashed_bytes += bytes.len() as u64;
                        let digest: Digest = *blake3::hash(&bytes).as_bytes();
                        if self.is_new(&digest) {
                            (self.new_content)(digest, &bytes)?;
                        }
                        Kind::File(digest)
                    }
                    Err(e) => {
                        tracing::debug!(path = %lossy(&path), error = %e, "unreadable file recorded without content");
                        stats.opaque += 1;
                        Kind::Opaque
                    }
                },
            },
            // Sockets, pipes, devices: not recorded, never touched.
            _ => return Ok(None),
        };
        Ok(Some(Entry { path, kind, mode, stat, racy }))
    }

    /// Whether `digest` is neither in the previous manifest nor sent already (and it is sent
    /// now).
    fn is_new(&self, digest: &Digest) -> bool {
        let known = self.known.get_or_init(|| {
            self.prev.map(|m| m.entries.iter().filter_map(Entry::digest).collect()).unwrap_or_default()
        });
        !known.contains(digest) && self.emitted.lock().unwrap_or_else(|p| p.into_inner()).insert(*digest)
    }

    fn io_error(&self, rel: &[u8], e: rustix::io::Errno) -> CheckpointError {
        CheckpointError::Io { path: absolute(self.root, rel), source: e.into() }
    }
}

/// Reads the file `name` of the directory `dir` (not following a link that replaced it since
/// its `stat`).
fn read_file(dir: BorrowedFd<'_>, name: &CStr, size: u64) -> std::io::Result<Vec<u8>> {
    let fd =
        rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn c_path(rel: &[u8]) -> rustix::io::Result<CString> {
    CString::new(rel).map_err(|_| rustix::io::Errno::INVAL)
}

fn lossy(path: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(path)
}

/// The absolute path of a manifest path under `root`.
pub(crate) fn absolute(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckpointConfig;

    fn scan_now(root: &Path, prev: Option<&Manifest>, margin: Duration) -> Manifest {
        let rules = Rules::new(root, &CheckpointConfig::default(), &[]).unwrap();
        let prev = prev.map(|m| Arc::new(m.clone()));
        Arc::unwrap_or_clone(scan(root, prev.as_ref(), &rules, margin, &|_, _| Ok(())).unwrap().0)
    }

    /// The racily-clean rule: a file whose times are too recent to vouch for it is marked, and a
    /// marked file is read again even when its `stat` is unchanged (a same-size write within
    /// the clock tick of the checkpoint leaves the same `stat`); an unmarked one is trusted.
    #[test]
    fn a_racily_clean_file_is_read_again_whatever_its_stat_says() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("f"), "after").unwrap();
        let fresh = scan_now(ws.path(), None, Duration::from_secs(3600));
        assert!(fresh.entries[0].racy, "written just now: racy");
        assert!(!scan_now(ws.path(), None, Duration::ZERO).entries[0].racy);
        // A previous manifest with this very stat but other content ("before", same size as
        // a same-tick rewrite would leave it).
        let stale = |racy: bool| Manifest {
            entries: vec![Entry { kind: Kind::File([9; 32]), racy, ..fresh.entries[0].clone() }],
        };
        let real = Kind::File(*blake3::hash(b"after").as_bytes());
        assert_eq!(scan_now(ws.path(), Some(&stale(true)), Duration::ZERO).entries[0].kind, real);
        // Not marked: trusted (this is what makes an unchanged workspace cheap).
        assert_eq!(
            scan_now(ws.path(), Some(&stale(false)), Duration::ZERO).entries[0].kind,
            Kind::File([9; 32])
        );
    }
}
