//! Scanning a workspace into a [`Manifest`], cheaply: every path is `lstat`ed, but a file is
//! read and hashed only when its size, times, inode or mode differ from the previous manifest
//! (or when the previous manifest could not vouch for it: see [`Entry::racy`]).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Receives the bytes of content no earlier checkpoint stored, with their digest.
pub(crate) type ContentSink<'a> = dyn FnMut(Digest, &[u8]) -> Result<(), CheckpointError> + 'a;

/// Scans `root`. `prev` is the previous manifest of the same workspace; `new_content` receives
/// the bytes of every file whose digest `prev` does not have (once per digest).
pub(crate) fn scan(
    root: &Path,
    prev: Option<&Manifest>,
    rules: &Rules,
    racy_margin: Duration,
    new_content: &mut ContentSink<'_>,
) -> Result<(Manifest, ScanStats), CheckpointError> {
    let started = now_ns() - i64::try_from(racy_margin.as_nanos()).unwrap_or(i64::MAX);
    let known: HashSet<&Digest> =
        prev.map(|m| m.entries.iter().filter_map(Entry::digest).collect()).unwrap_or_default();
    let mut emitted: HashSet<Digest> = HashSet::new();
    let mut stats = ScanStats::default();
    let mut entries = Vec::new();
    let mut stack: Vec<(PathBuf, Vec<u8>)> = vec![(root.to_owned(), Vec::new())];
    while let Some((dir, rel)) = stack.pop() {
        let listing = match std::fs::read_dir(&dir) {
            Ok(l) => l,
            // The root must be readable; a subdirectory that is not keeps its entry, and a
            // rewind leaves its content alone.
            Err(e) if rel.is_empty() => return Err(CheckpointError::Io { path: dir, source: e }),
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "unreadable directory left out of the checkpoint");
                continue;
            }
        };
        for item in listing {
            let item = item.map_err(|e| CheckpointError::Io { path: dir.clone(), source: e })?;
            let name = item.file_name();
            let path = dir.join(&name);
            let Ok(file_type) = item.file_type() else { continue };
            if rules.skips(&path, file_type.is_dir()) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            let mut child = rel.clone();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(name.as_bytes());
            let stat = Stat {
                size: meta.size(),
                mtime_ns: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
                ctime_ns: meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
                ino: meta.ino(),
            };
            let mode = meta.mode() & 0o7777;
            let racy = stat.mtime_ns.max(stat.ctime_ns) >= started;
            let kind = if meta.file_type().is_dir() {
                stack.push((path, child.clone()));
                Kind::Dir
            } else if meta.file_type().is_symlink() {
                match std::fs::read_link(&path) {
                    Ok(target) => Kind::Symlink(target.as_os_str().as_bytes().to_vec()),
                    Err(_) => continue,
                }
            } else if meta.file_type().is_file() {
                let previous = prev.and_then(|m| m.get(&child));
                match previous {
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
                    _ if stat.size > rules.max_file_bytes => {
                        stats.opaque += 1;
                        Kind::Opaque
                    }
                    _ => match std::fs::read(&path) {
                        Ok(bytes) => {
                            stats.hashed += 1;
                            stats.hashed_bytes += bytes.len() as u64;
                            let digest: Digest = *blake3::hash(&bytes).as_bytes();
                            if !known.contains(&digest) && emitted.insert(digest) {
                                new_content(digest, &bytes)?;
                            }
                            Kind::File(digest)
                        }
                        Err(e) => {
                            tracing::debug!(path = %path.display(), error = %e, "unreadable file recorded without content");
                            stats.opaque += 1;
                            Kind::Opaque
                        }
                    },
                }
            } else {
                // Sockets, pipes, devices: not recorded, never touched.
                continue;
            };
            entries.push(Entry { path: child, kind, mode, stat, racy });
            if entries.len() > rules.max_files {
                return Err(CheckpointError::TooManyFiles { limit: rules.max_files });
            }
        }
    }
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    stats.entries = entries.len() as u64;
    Ok((Manifest { entries }, stats))
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
