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
    // The digests the previous manifest has: built when the first file is hashed (most
    // checkpoints hash nothing).
    let mut known: Option<HashSet<&Digest>> = None;
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
            let name = name.as_bytes();
            let Ok(file_type) = item.file_type() else { continue };
            let mut child = Vec::with_capacity(rel.len() + 1 + name.len());
            child.extend_from_slice(&rel);
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(name);
            if rules.skips(&child, name, file_type.is_dir()) {
                continue;
            }
            // `fstatat` on the open directory: no path to resolve again.
            let Ok(meta) = item.metadata() else { continue };
            let stat = Stat {
                size: meta.size(),
                mtime_ns: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
                ctime_ns: meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
                ino: meta.ino(),
            };
            let mode = meta.mode() & 0o7777;
            let racy = stat.mtime_ns.max(stat.ctime_ns) >= started;
            let kind = if meta.file_type().is_dir() {
                stack.push((item.path(), child.clone()));
                Kind::Dir
            } else if meta.file_type().is_symlink() {
                match std::fs::read_link(item.path()) {
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
                    _ => match std::fs::read(item.path()) {
                        Ok(bytes) => {
                            stats.hashed += 1;
                            stats.hashed_bytes += bytes.len() as u64;
                            let digest: Digest = *blake3::hash(&bytes).as_bytes();
                            let known = known.get_or_insert_with(|| {
                                prev.map(|m| m.entries.iter().filter_map(Entry::digest).collect())
                                    .unwrap_or_default()
                            });
                            if !known.contains(&digest) && emitted.insert(digest) {
                                new_content(digest, &bytes)?;
                            }
                            Kind::File(digest)
                        }
                        Err(e) => {
                            tracing::debug!(path = %item.path().display(), error = %e, "unreadable file recorded without content");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckpointConfig;

    fn scan_now(root: &Path, prev: Option<&Manifest>, margin: Duration) -> Manifest {
        let rules = Rules::new(root, &CheckpointConfig::default(), &[]).unwrap();
        scan(root, prev, &rules, margin, &mut |_, _| Ok(())).unwrap().0
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
