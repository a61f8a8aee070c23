//! Restoring a workspace to a [`Manifest`]: what would change ([`RestorePlan`], shown before
//! anything is touched), then the changes, made so that the result matches the manifest byte
//! for byte (contents, modes, symbolic links, empty directories). Ignored paths are neither
//! recorded nor touched.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::manifest::{Digest, Entry, Kind, Manifest};
use crate::scan::absolute;

/// How one path changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// It comes back (it was deleted since).
    Create,
    /// Its content (or kind) goes back.
    Modify,
    /// It goes (it was created since).
    Delete,
    /// Only its permissions go back.
    Mode,
    /// It changed but cannot go back: its content was not recorded (over `max_file_bytes`, or
    /// unreadable).
    Unrestorable,
}

/// One path a restore changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathChange {
    /// Relative to the workspace (lossy UTF-8).
    pub path: String,
    /// How.
    pub change: Change,
    /// What it is in the checkpoint (`file`, `dir`, `symlink`, `opaque`), or `None` when deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
}

/// What a restore changes, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestorePlan {
    /// Every change.
    pub changes: Vec<PathChange>,
    #[serde(skip)]
    steps: Steps,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Steps {
    /// Files and links to remove (deleted, or replaced by another kind).
    remove: Vec<Vec<u8>>,
    /// Directories to remove, deepest first.
    rmdir: Vec<Vec<u8>>,
    /// Directories to create, parents first.
    mkdir: Vec<Vec<u8>>,
    /// Files and links to write.
    write: Vec<Entry>,
    /// Everything whose mode must be set at the end (deepest first).
    chmod: Vec<(Vec<u8>, u32)>,
}

impl RestorePlan {
    /// Nothing would change.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// How many paths change in each way: (created, modified, deleted, mode only, unrestorable).
    pub fn counts(&self) -> (usize, usize, usize, usize, usize) {
        let n = |c: Change| self.changes.iter().filter(|p| p.change == c).count();
        (n(Change::Create), n(Change::Modify), n(Change::Delete), n(Change::Mode), n(Change::Unrestorable))
    }

    /// The digests of the content a restore writes.
    pub(crate) fn needed(&self) -> Vec<Digest> {
        let mut seen = HashSet::new();
        self.steps.write.iter().filter_map(Entry::digest).filter(|d| seen.insert(**d)).copied().collect()
    }
}

fn kind_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::File(_) => "file",
        Kind::Symlink(_) => "symlink",
        Kind::Dir => "dir",
        Kind::Opaque => "opaque",
    }
}

fn lossy(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// What restoring `target` over `current` (a fresh scan) changes.
pub(crate) fn plan(current: &Manifest, target: &Manifest) -> RestorePlan {
    let mut plan = RestorePlan::default();
    let steps = &mut plan.steps;
    let push = |changes: &mut Vec<PathChange>, path: &[u8], change: Change, kind: Option<&Kind>| {
        changes.push(PathChange { path: lossy(path), change, kind: kind.map(kind_name) });
    };
    let mut changes = Vec::new();
    for t in &target.entries {
        let c = current.get(&t.path);
        match (c, &t.kind) {
            (Some(c), _) if c.same_content(t) => {}
            (Some(c), Kind::Opaque)
                if c.kind == Kind::Opaque
                    && c.stat.size == t.stat.size
                    && c.stat.mtime_ns == t.stat.mtime_ns =>
            {
                if c.mode != t.mode {
                    steps.chmod.push((t.path.clone(), t.mode));
                    push(&mut changes, &t.path, Change::Mode, Some(&t.kind));
                }
            }
            (_, Kind::Opaque) => push(&mut changes, &t.path, Change::Unrestorable, Some(&t.kind)),
            (Some(c), _) if c.kind == t.kind => {
                // Same content, other permissions.
                steps.chmod.push((t.path.clone(), t.mode));
                push(&mut changes, &t.path, Change::Mode, Some(&t.kind));
            }
            (c, kind) => {
                match c.map(|c| &c.kind) {
                    None => {}
                    Some(Kind::Dir) => steps.rmdir.push(t.path.clone()),
                    Some(_) => steps.remove.push(t.path.clone()),
                }
                match kind {
                    Kind::Dir => {
                        steps.mkdir.push(t.path.clone());
                        steps.chmod.push((t.path.clone(), t.mode));
                    }
                    Kind::Symlink(_) => steps.write.push(t.clone()),
                    // The file is written with its mode (no second `chmod`).
                    _ => steps.write.push(t.clone()),
                }
                let change = if c.is_some() { Change::Modify } else { Change::Create };
                push(&mut changes, &t.path, change, Some(kind));
            }
        }
    }
    for c in &current.entries {
        if target.get(&c.path).is_none() {
            match c.kind {
                Kind::Dir => steps.rmdir.push(c.path.clone()),
                _ => steps.remove.push(c.path.clone()),
            }
            push(&mut changes, &c.path, Change::Delete, None);
        }
    }
    // Deepest first for removals and modes, parents first for creation.
    steps.rmdir.sort_unstable_by(|a, b| b.cmp(a));
    steps.mkdir.sort_unstable();
    steps.chmod.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    plan.changes = changes;
    plan
}

/// Paths a restore could not leave as the checkpoint has them, with why.
pub type Leftovers = Vec<(String, String)>;

/// Applies `plan` under `root`, with `contents` holding the bytes of every digest it writes.
pub(crate) fn apply(
    root: &Path,
    plan: &RestorePlan,
    contents: &HashMap<Digest, Vec<u8>>,
    parallel_from: usize,
) -> Leftovers {
    let steps = &plan.steps;
    let mut left = Leftovers::new();
    let mut fail = |path: &[u8], why: String| left.push((lossy(path), why));
    // Directories we change things in may be read-only now: the owner gets write access until
    // the final modes are set.
    let mut opened: HashMap<PathBuf, Option<u32>> = HashMap::new();
    let mut writable = |path: &Path| {
        let Some(parent) = path.parent() else { return };
        if opened.contains_key(parent) {
            return;
        }
        let mut was = None;
        if let Ok(meta) = std::fs::symlink_metadata(parent)
            && meta.is_dir()
            && meta.permissions().mode() & 0o700 != 0o700
        {
            let mode = meta.permissions().mode() & 0o7777;
            if std::fs::set_permissions(parent, std::fs::Permissions::from_mode(mode | 0o700)).is_ok() {
                was = Some(mode);
            }
        }
        opened.insert(parent.to_owned(), was);
    };
    for rel in &steps.remove {
        let path = absolute(root, rel);
        writable(&path);
        if let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            fail(rel, format!("cannot remove: {e}"));
        }
    }
    for rel in &steps.rmdir {
        let path = absolute(root, rel);
        writable(&path);
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.permissions().mode() & 0o700 != 0o700
        {
            let _ = std::fs::set_permissions(
                &path,
                std::fs::Permissions::from_mode(meta.permissions().mode() | 0o700),
            );
        }
        match std::fs::remove_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            // Ignored content (a `target/` inside) keeps it.
            Err(e) => fail(rel, format!("directory kept: {e} (it holds paths checkpoints ignore)")),
        }
    }
    for rel in &steps.mkdir {
        let path = absolute(root, rel);
        writable(&path);
        if let Err(e) = std::fs::create_dir(&path)
            && e.kind() != std::io::ErrorKind::AlreadyExists
        {
            fail(rel, format!("cannot create the directory: {e}"));
        }
    }
    for entry in &steps.write {
        writable(&absolute(root, &entry.path));
    }
    for (rel, why) in write_all(root, &steps.write, contents, parallel_from) {
        fail(&rel, why);
    }
    for (rel, mode) in &steps.chmod {
        let path = absolute(root, rel);
        if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))
            && e.kind() != std::io::ErrorKind::NotFound
        {
            fail(rel, format!("cannot set its mode: {e}"));
        }
    }
    // Directories opened for writing and not given a mode by the plan get theirs back.
    let chmodded: HashSet<&[u8]> = steps.chmod.iter().map(|(p, _)| p.as_slice()).collect();
    for (dir, was) in opened {
        let rel = dir.strip_prefix(root).map(|p| p.as_os_str().as_bytes().to_vec()).unwrap_or_default();
        if let Some(mode) = was
            && !chmodded.contains(rel.as_slice())
        {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode));
        }
    }
    left
}

/// Below this many files a restore writes them on the calling thread.
pub(crate) const PARALLEL_WRITES: usize = 64;

/// Writes the files and links of a plan, on a few threads when there are many (each file is a
/// handful of system calls that wait on the file system: a full rewind of a large workspace
/// is bound by them, not by the CPU). Returns the paths that failed, with why.
fn write_all(
    root: &Path,
    write: &[Entry],
    contents: &HashMap<Digest, Vec<u8>>,
    parallel_from: usize,
) -> Vec<(Vec<u8>, String)> {
    let one = |entry: &Entry| -> Option<(Vec<u8>, String)> {
        let path = absolute(root, &entry.path);
        let done = match &entry.kind {
            Kind::Symlink(target) => {
                let _ = std::fs::remove_file(&path);
                std::os::unix::fs::symlink(OsStr::from_bytes(target), &path)
            }
            Kind::File(digest) => match contents.get(digest) {
                Some(bytes) => write_file(&path, bytes, entry.mode),
                None => Err(std::io::Error::other("its content is missing from the store")),
            },
            _ => Ok(()),
        };
        done.err().map(|e| (entry.path.clone(), format!("cannot write: {e}")))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    if write.len() < parallel_from || threads < 2 {
        return write.iter().filter_map(one).collect();
    }
    let chunk = write.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = write
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().filter_map(one).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join().unwrap_or_else(|_| vec![(Vec::new(), "a restore thread panicked".to_owned())])
            })
            .collect()
    })
}

/// Writes `bytes` to `path` through a temporary file renamed over it (a reader never sees half a
/// file, and a read-only file is replaced, not opened), with `mode`.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tackle-restore-").tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
