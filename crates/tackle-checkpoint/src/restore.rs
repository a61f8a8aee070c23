//! Restoring a workspace to a [`Manifest`]: what would change ([`RestorePlan`], shown before
//! anything is touched), then the changes, made so that the result matches the manifest byte
//! for byte (contents, modes, symbolic links, empty directories). Ignored paths are neither
//! recorded nor touched.

use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::io::Write as _;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

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
    write: Vec<Write>,
    /// Everything whose mode must be set at the end (deepest first).
    chmod: Vec<(Vec<u8>, u32)>,
}

/// A file or link to write, and whether something is at its path now (a file or a link: it is
/// replaced in one `rename`, so a reader sees the old content or the new, never neither).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Write {
    entry: Entry,
    replace: bool,
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
        self.steps
            .write
            .iter()
            .filter_map(|w| w.entry.digest())
            .filter(|d| seen.insert(**d))
            .copied()
            .collect()
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
                // A directory goes first; a file or link is replaced by what is written.
                let replace = match c.map(|c| &c.kind) {
                    None => false,
                    Some(Kind::Dir) => {
                        steps.rmdir.push(t.path.clone());
                        false
                    }
                    Some(_) if *kind == Kind::Dir => {
                        steps.remove.push(t.path.clone());
                        false
                    }
                    Some(_) => true,
                };
                match kind {
                    Kind::Dir => {
                        steps.mkdir.push(t.path.clone());
                        steps.chmod.push((t.path.clone(), t.mode));
                    }
                    // The file is written with its mode (no second `chmod`).
                    _ => steps.write.push(Write { entry: t.clone(), replace }),
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
    let mut writable = |dir: &Path| {
        if opened.contains_key(dir) {
            return;
        }
        let mut was = None;
        if let Ok(meta) = std::fs::symlink_metadata(dir)
            && meta.is_dir()
            && meta.permissions().mode() & 0o700 != 0o700
        {
            let mode = meta.permissions().mode() & 0o7777;
            if std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700)).is_ok() {
                was = Some(mode);
            }
        }
        opened.insert(dir.to_owned(), was);
    };
    let parent = |rel: &[u8]| absolute(root, parent_of(rel));
    for rel in &steps.remove {
        writable(&parent(rel));
        if let Err(e) = std::fs::remove_file(absolute(root, rel))
            && e.kind() != std::io::ErrorKind::NotFound
        {
            fail(rel, format!("cannot remove: {e}"));
        }
    }
    for rel in &steps.rmdir {
        let path = absolute(root, rel);
        writable(&parent(rel));
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
        writable(&parent(rel));
        if let Err(e) = std::fs::create_dir(absolute(root, rel))
            && e.kind() != std::io::ErrorKind::AlreadyExists
        {
            fail(rel, format!("cannot create the directory: {e}"));
        }
    }
    let batches = batches(&steps.write);
    for batch in &batches {
        writable(&absolute(root, batch.dir));
    }
    for (rel, why) in write_all(root, &batches, contents, parallel_from) {
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

/// The directory part of a manifest path (empty at the top).
fn parent_of(rel: &[u8]) -> &[u8] {
    rel.iter().rposition(|b| *b == b'/').map_or(&[], |i| &rel[..i])
}

/// Below this many files a restore writes them on the calling thread.
pub(crate) const PARALLEL_WRITES: usize = 64;

/// At most this many files of one directory are written as one batch (one directory opened).
const BATCH_FILES: usize = 256;

/// Files and links to write in one directory.
struct Batch<'a> {
    /// Relative to the workspace (empty at the top).
    dir: &'a [u8],
    writes: Vec<&'a Write>,
}

/// The writes of a plan by directory, in batches of at most [`BATCH_FILES`].
fn batches(writes: &[Write]) -> Vec<Batch<'_>> {
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    let mut out: Vec<Batch<'_>> = Vec::new();
    for w in writes {
        let dir = parent_of(&w.entry.path);
        let at = match index.get(dir) {
            Some(&i) if out[i].writes.len() < BATCH_FILES => i,
            _ => {
                out.push(Batch { dir, writes: Vec::new() });
                index.insert(dir, out.len() - 1);
                out.len() - 1
            }
        };
        out[at].writes.push(w);
    }
    out
}

/// Writes the files and links of a plan, a directory's batch at a time, on a few threads when
/// there are many (each file is a few system calls: a full rewind of a large workspace is bound
/// by them). Returns the paths that failed, with why.
fn write_all(
    root: &Path,
    batches: &[Batch<'_>],
    contents: &HashMap<Digest, Vec<u8>>,
    parallel_from: usize,
) -> Vec<(Vec<u8>, String)> {
    let files: usize = batches.iter().map(|b| b.writes.len()).sum();
    let fail_all = |why: String| -> Vec<(Vec<u8>, String)> {
        batches.iter().flat_map(|b| &b.writes).map(|w| (w.entry.path.clone(), why.clone())).collect()
    };
    let root_fd = match rustix::fs::open(root, dir_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(e) => return fail_all(format!("cannot open the workspace: {e}")),
    };
    let writer = Writer { root: &root_fd, contents, umask: umask(), tmpfile: AtomicBool::new(true) };
    let next = AtomicUsize::new(0);
    let work = || {
        let mut failed = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(batch) = batches.get(i) else { return failed };
            writer.batch(batch, &mut failed);
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    if files < parallel_from || threads < 2 {
        return work();
    }
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut failed = work();
        for helper in helpers {
            match helper.join() {
                Ok(more) => failed.extend(more),
                Err(_) => failed.push((Vec::new(), "a restore thread panicked".to_owned())),
            }
        }
        failed
    })
}

fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// The process's umask, from `/proc/self/status` (reading it with `umask(2)` would change it
/// for other threads for a moment). `None` when unknown: every file then gets its mode set.
fn umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

/// Writes files into directories of the workspace, relative to open directories (no path walk
/// per file).
struct Writer<'a> {
    root: &'a OwnedFd,
    contents: &'a HashMap<Digest, Vec<u8>>,
    umask: Option<u32>,
    /// Whether `O_TMPFILE` works here (cleared at the first file system that refuses it).
    tmpfile: AtomicBool,
}

impl Writer<'_> {
    fn batch(&self, batch: &Batch<'_>, failed: &mut Vec<(Vec<u8>, String)>) {
        let opened;
        let dir = if batch.dir.is_empty() {
            self.root.as_fd()
        } else {
            match c_string(batch.dir).and_then(|d| {
                Ok(rustix::fs::openat(self.root, &d, dir_flags() | OFlags::NOFOLLOW, Mode::empty())?)
            }) {
                Ok(fd) => {
                    opened = fd;
                    opened.as_fd()
                }
                Err(e) => {
                    failed.extend(
                        batch.writes.iter().map(|w| (w.entry.path.clone(), format!("cannot write: {e}"))),
                    );
                    return;
                }
            }
        };
        for w in &batch.writes {
            if let Err(e) = self.one(dir, w) {
                failed.push((w.entry.path.clone(), format!("cannot write: {e}")));
            }
        }
    }

    fn one(&self, dir: BorrowedFd<'_>, w: &Write) -> std::io::Result<()> {
        let name = c_string(file_name(&w.entry.path))?;
        match &w.entry.kind {
            Kind::Symlink(target) => {
                let target = c_string(target)?;
                if w.replace {
                    // Made under a temporary name and renamed over what is there.
                    let tmp = temporary(|tmp| Ok(rustix::fs::symlinkat(&target, dir, tmp)?))?;
                    return self.rename_into(dir, &tmp, &name);
                }
                let _ = rustix::fs::unlinkat(dir, &name, AtFlags::empty());
                Ok(rustix::fs::symlinkat(&target, dir, &name)?)
            }
            Kind::File(digest) => {
                let Some(bytes) = self.contents.get(digest) else {
                    return Err(std::io::Error::other("its content is missing from the store"));
                };
                if !w.replace
                    && self.tmpfile.load(Ordering::Relaxed)
                    && self.create(dir, &name, bytes, w.entry.mode)?
                {
                    return Ok(());
                }
                self.replace(dir, &name, bytes, w.entry.mode)
            }
            Kind::Dir | Kind::Opaque => Ok(()),
        }
    }

    /// Writes a file that is not there: as an unnamed file (`O_TMPFILE`) given its name once
    /// complete, so a reader never sees part of it. `false` when that cannot be done here (then
    /// [`Writer::replace`] does it).
    fn create(&self, dir: BorrowedFd<'_>, name: &CStr, bytes: &[u8], mode: u32) -> std::io::Result<bool> {
        let flags = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(dir, c".", flags, Mode::from_raw_mode(mode & 0o777)) {
            Ok(fd) => fd,
            Err(_) => {
                // A file system without `O_TMPFILE` (or an old kernel).
                self.tmpfile.store(false, Ordering::Relaxed);
                return Ok(false);
            }
        };
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        self.set_mode(&file, mode)?;
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        match rustix::fs::linkat(rustix::fs::CWD, link.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW) {
            Ok(()) => Ok(true),
            // Something appeared there since the plan: replaced like any file.
            Err(rustix::io::Errno::EXIST) => Ok(false),
            Err(_) => {
                // No `/proc`, or a file system that cannot link: renamed instead from now on.
                self.tmpfile.store(false, Ordering::Relaxed);
                Ok(false)
            }
        }
    }

    /// Writes a file through a temporary file renamed over `name` (a reader sees the old content
    /// or the new; a read-only file is replaced, not opened).
    fn replace(&self, dir: BorrowedFd<'_>, name: &CStr, bytes: &[u8], mode: u32) -> std::io::Result<()> {
        let tmp = temporary(|tmp| {
            let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(dir, tmp, flags, Mode::from_raw_mode(mode & 0o777))?;
            let mut file = std::fs::File::from(fd);
            let written = file.write_all(bytes).and_then(|()| self.set_mode(&file, mode));
            if written.is_err() {
                let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
            }
            written
        })?;
        self.rename_into(dir, &tmp, name)
    }

    fn rename_into(&self, dir: BorrowedFd<'_>, tmp: &CStr, name: &CStr) -> std::io::Result<()> {
        rustix::fs::renameat(dir, tmp, dir, name).map_err(|e| {
            let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
            e.into()
        })
    }

    /// Gives `file` exactly `mode` when creating it with that mode did not (the umask took
    /// bits, or special bits that creation may drop).
    fn set_mode(&self, file: &std::fs::File, mode: u32) -> std::io::Result<()> {
        if self.umask.is_none_or(|u| mode & u != 0) || mode & 0o7000 != 0 {
            rustix::fs::fchmod(file, Mode::from_raw_mode(mode))?;
        }
        Ok(())
    }
}

/// Makes something under a fresh temporary name with `make` (which fails with
/// `AlreadyExists` when the name is taken); returns the name.
fn temporary(make: impl Fn(&CStr) -> std::io::Result<()>) -> std::io::Result<CString> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = c_string(format!(".tackle-restore-{}-{n}", std::process::id()).as_bytes())?;
        match make(&tmp) {
            Ok(()) => return Ok(tmp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name in the directory"))
}

/// The last component of a manifest path.
fn file_name(rel: &[u8]) -> &[u8] {
    rel.iter().rposition(|b| *b == b'/').map_or(rel, |i| &rel[i + 1..])
}

fn c_string(bytes: &[u8]) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| std::io::Error::other("a path holds a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Stat;

    fn entry(path: &str, kind: Kind) -> Entry {
        Entry { path: path.into(), kind, mode: 0o644, stat: Stat::default(), racy: false }
    }

    /// A file or link that changes is replaced in one `rename` (a reader sees the old content
    /// or the new, never no file); only what gives way to a directory, or a directory that
    /// gives way, is removed first.
    #[test]
    fn a_file_or_link_being_replaced_is_not_removed_first() {
        let current = Manifest {
            entries: vec![
                entry("a", Kind::File([1; 32])),
                entry("b", Kind::Symlink(b"x".to_vec())),
                entry("c", Kind::Dir),
                entry("d", Kind::File([3; 32])),
                entry("e", Kind::File([4; 32])),
            ],
        };
        let target = Manifest {
            entries: vec![
                entry("a", Kind::File([2; 32])),
                entry("b", Kind::File([2; 32])),
                entry("c", Kind::File([2; 32])),
                entry("d", Kind::Dir),
                entry("e", Kind::Symlink(b"y".to_vec())),
                entry("f", Kind::File([5; 32])),
            ],
        };
        let plan = plan(&current, &target);
        assert_eq!(plan.steps.remove, [b"d".to_vec()]);
        assert_eq!(plan.steps.rmdir, [b"c".to_vec()]);
        let writes: Vec<(&[u8], bool)> =
            plan.steps.write.iter().map(|w| (w.entry.path.as_slice(), w.replace)).collect();
        assert_eq!(writes, [(&b"a"[..], true), (b"b", true), (b"c", false), (b"e", true), (b"f", false)]);
    }
}
