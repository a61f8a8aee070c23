//! [`Manifest`]: one recorded state of a workspace tree — every path with its kind, mode and
//! content digest, plus the `stat` fields that tell a changed file from an unchanged one at the
//! next checkpoint. Encoded compactly (a few dozen bytes per entry) and stored as an object.

use crate::CheckpointError;

/// A BLAKE3 digest of some content.
pub type Digest = [u8; 32];

/// Hex of a digest, as the store keys objects.
pub fn hex(digest: &Digest) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// What a path is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A regular file and the digest of its bytes.
    File(Digest),
    /// A symbolic link and its target (not followed).
    Symlink(Vec<u8>),
    /// A directory (recorded so empty ones come back).
    Dir,
    /// A file whose content is not recorded (over `max_file_bytes`, or unreadable): a rewind
    /// reports it when it changed.
    Opaque,
}

/// What `stat` said about a path when it was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
}

/// One path of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Relative to the workspace, `/`-separated, as the file system spells it (bytes).
    pub path: Vec<u8>,
    /// What it is.
    pub kind: Kind,
    /// Permission bits (`mode & 0o7777`).
    pub mode: u32,
    /// What `stat` said.
    pub stat: Stat,
    /// Changed too close to the checkpoint for its times to prove it unchanged later: read
    /// again at the next checkpoint whatever its `stat` says (the "racily clean" rule).
    pub racy: bool,
}

impl Entry {
    /// The digest of a file's content.
    pub fn digest(&self) -> Option<&Digest> {
        match &self.kind {
            Kind::File(d) => Some(d),
            _ => None,
        }
    }

    /// Whether `other` is the same content at the same path with the same mode (what a restore
    /// must reproduce; times and inodes are not).
    pub fn same_content(&self, other: &Entry) -> bool {
        self.path == other.path
            && self.kind == other.kind
            && (self.mode == other.mode || self.kind_is_symlink())
    }

    fn kind_is_symlink(&self) -> bool {
        matches!(self.kind, Kind::Symlink(_))
    }
}

/// A recorded workspace: entries sorted by path bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The entries, sorted by `path`.
    pub entries: Vec<Entry>,
}

const MAGIC: &[u8; 4] = b"TKCP";
const VERSION: u8 = 1;

impl Manifest {
    /// The manifest's bytes (the same entries always give the same bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.entries.len() * 80);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        put_varint(&mut out, self.entries.len() as u64);
        for e in &self.entries {
            put_bytes(&mut out, &e.path);
            let (tag, extra): (u8, &[u8]) = match &e.kind {
                Kind::File(d) => (0, d.as_slice()),
                Kind::Symlink(t) => (1, t.as_slice()),
                Kind::Dir => (2, &[]),
                Kind::Opaque => (3, &[]),
            };
            out.push(tag | if e.racy { 0x80 } else { 0 });
            put_varint(&mut out, u64::from(e.mode));
            put_varint(&mut out, e.stat.size);
            out.extend_from_slice(&e.stat.mtime_ns.to_le_bytes());
            out.extend_from_slice(&e.stat.ctime_ns.to_le_bytes());
            put_varint(&mut out, e.stat.ino);
            match tag {
                0 => out.extend_from_slice(extra),
                1 => put_bytes(&mut out, extra),
                _ => {}
            }
        }
        out
    }

    /// Reads [`Manifest::encode`]'s bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != MAGIC || r.byte()? != VERSION {
            return Err(CheckpointError::Corrupt("not a version 1 checkpoint manifest".into()));
        }
        let count = usize::try_from(r.varint()?).map_err(|_| r.bad())?;
        let mut entries = Vec::with_capacity(count.min(1 << 20));
        for _ in 0..count {
            let path = r.bytes()?.to_vec();
            let tag = r.byte()?;
            let racy = tag & 0x80 != 0;
            let mode = u32::try_from(r.varint()?).map_err(|_| r.bad())?;
            let size = r.varint()?;
            let mtime_ns = i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| r.bad())?);
            let ctime_ns = i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| r.bad())?);
            let ino = r.varint()?;
            let kind = match tag & 0x7f {
                0 => Kind::File(r.take(32)?.try_into().map_err(|_| r.bad())?),
                1 => Kind::Symlink(r.bytes()?.to_vec()),
                2 => Kind::Dir,
                3 => Kind::Opaque,
                _ => return Err(r.bad()),
            };
            entries.push(Entry { path, kind, mode, stat: Stat { size, mtime_ns, ctime_ns, ino }, racy });
        }
        Ok(Self { entries })
    }

    /// The entry at `path`.
    pub fn get(&self, path: &[u8]) -> Option<&Entry> {
        self.entries.binary_search_by(|e| e.path.as_slice().cmp(path)).ok().map(|i| &self.entries[i])
    }

    /// Regular files recorded with their content.
    pub fn files(&self) -> usize {
        self.entries.iter().filter(|e| matches!(e.kind, Kind::File(_))).count()
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bad(&self) -> CheckpointError {
        CheckpointError::Corrupt(format!("checkpoint manifest unreadable at byte {}", self.at))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CheckpointError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len()).ok_or_else(|| self.bad())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, CheckpointError> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, CheckpointError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.bad())
    }

    fn bytes(&mut self) -> Result<&'a [u8], CheckpointError> {
        let n = usize::try_from(self.varint()?).map_err(|_| self.bad())?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_rejects_garbage() {
        let m = Manifest {
            entries: vec![
                Entry {
                    path: b"a".to_vec(),
                    kind: Kind::Dir,
                    mode: 0o755,
                    stat: Stat::default(),
                    racy: false,
                },
                Entry {
                    path: b"a/b\xff.txt".to_vec(),
                    kind: Kind::File([7; 32]),
                    mode: 0o644,
                    stat: Stat { size: 300, mtime_ns: -5, ctime_ns: 1 << 60, ino: u64::MAX },
                    racy: true,
                },
                Entry {
                    path: b"l".to_vec(),
                    kind: Kind::Symlink(b"../x".to_vec()),
                    mode: 0o777,
                    stat: Stat::default(),
                    racy: false,
                },
                Entry {
                    path: b"z".to_vec(),
                    kind: Kind::Opaque,
                    mode: 0o600,
                    stat: Stat::default(),
                    racy: false,
                },
            ],
        };
        let bytes = m.encode();
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        assert!(Manifest::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(Manifest::decode(b"nope").is_err());
        assert_eq!(m.get(b"l").unwrap().kind, Kind::Symlink(b"../x".to_vec()));
        assert!(m.get(b"q").is_none());
        assert_eq!(hex(&[0xab; 32]).len(), 64);
    }
}
