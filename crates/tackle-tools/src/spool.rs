//! The full output of a call, kept apart from what the model sees.
//!
//! A tool whose output is too large to return whole (a shell command printing megabytes) gives
//! the model a view (head and tail) and writes every byte it produced into [`Spool`]s drawing on
//! the call's [`SpoolBudget`] ([`crate::ToolContext::spool`], set by the executor from
//! [`crate::ExecLimits::max_spool_bytes`]). It returns the assembled [`FullOutput`] with its
//! [`crate::ToolOutput`]; the executor hands that, not the view, to the offloader, so a locator
//! restores what the tool produced, and says exactly how many bytes past the budget were dropped.
//!
//! ```
//! use tackle_tools::SpoolBudget;
//! let budget = SpoolBudget::new(8);
//! let (mut out, mut err) = (budget.spool(), budget.spool());
//! out.write(b"hello ");
//! err.write(b"world!");
//! assert_eq!((out.text(), err.text()), ("hello ".to_owned(), "wo".to_owned()));
//! assert_eq!((budget.written(), budget.dropped()), (12, 4));
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default size of the stored full output of one call: 64 MiB, far above what the model sees.
pub const DEFAULT_SPOOL_BYTES: usize = 64 * 1024 * 1024;

/// The bytes a call may keep of its full output, shared by the spools of its streams.
#[derive(Debug, Clone)]
pub struct SpoolBudget {
    cap: u64,
    kept: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
}

impl Default for SpoolBudget {
    fn default() -> Self {
        Self::new(DEFAULT_SPOOL_BYTES)
    }
}

impl SpoolBudget {
    /// A budget of `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self { cap: cap as u64, kept: Arc::default(), written: Arc::default() }
    }

    /// The cap in bytes.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// A new, empty spool drawing on this budget.
    pub fn spool(&self) -> Spool {
        Spool {
            data: SpoolData::Memory(Vec::new()),
            len: 0,
            newlines: 0,
            last: None,
            lost: 0,
            budget: self.clone(),
        }
    }

    /// Bytes written to every spool of this budget, kept or not.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Bytes written past the cap, which no spool kept.
    pub fn dropped(&self) -> u64 {
        self.written().saturating_sub(self.kept.load(Ordering::Relaxed))
    }

    /// Takes up to `n` bytes of the budget; returns how many were granted.
    fn take(&self, n: u64) -> u64 {
        self.written.fetch_add(n, Ordering::Relaxed);
        let mut granted = 0;
        let _ = self.kept.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |kept| {
            granted = n.min(self.cap.saturating_sub(kept));
            Some(kept + granted)
        });
        granted
    }
}

/// Bytes a spool keeps in memory; past this it moves to an unnamed temporary file, so a command
/// printing gigabytes costs the process at most this much per stream (invariant: the memory of a
/// call's output is bounded whatever its size).
pub const SPOOL_MEMORY_BYTES: usize = 256 * 1024;

#[derive(Debug)]
enum SpoolData {
    Memory(Vec<u8>),
    File(std::fs::File),
}

/// One stream of a call's full output (stdout, stderr, a body), kept while the budget lasts: in
/// memory while small, then in an unnamed temporary file (see [`SPOOL_MEMORY_BYTES`]).
#[derive(Debug)]
pub struct Spool {
    data: SpoolData,
    len: u64,
    newlines: u64,
    last: Option<u8>,
    /// Bytes granted by the budget that could not be written (the temporary file failed).
    lost: u64,
    budget: SpoolBudget,
}

impl Spool {
    /// Appends what the budget allows of `chunk`; the rest is counted as dropped.
    pub fn write(&mut self, chunk: &[u8]) {
        let granted = self.budget.take(chunk.len() as u64) as usize;
        let kept = &chunk[..granted.min(chunk.len())];
        if kept.is_empty() {
            return;
        }
        if self.lost > 0 {
            self.lost += kept.len() as u64;
            return;
        }
        if let SpoolData::Memory(bytes) = &mut self.data
            && bytes.len() + kept.len() > SPOOL_MEMORY_BYTES
        {
            let spilled = tempfile::tempfile().and_then(|mut file| {
                std::io::Write::write_all(&mut file, bytes)?;
                Ok(file)
            });
            match spilled {
                Ok(file) => self.data = SpoolData::File(file),
                Err(e) => {
                    tracing::warn!(error = %e, "could not spool output to a temporary file; the rest is dropped");
                    self.lost += kept.len() as u64;
                    return;
                }
            }
        }
        let written = match &mut self.data {
            SpoolData::Memory(bytes) => {
                bytes.extend_from_slice(kept);
                Ok(())
            }
            SpoolData::File(file) => std::io::Write::write_all(file, kept),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not write spooled output; the rest is dropped");
            self.lost += kept.len() as u64;
            return;
        }
        self.len += kept.len() as u64;
        self.newlines += kept.iter().filter(|b| **b == b'\n').count() as u64;
        self.last = kept.last().copied();
    }

    /// Bytes kept.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was kept.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes kept end with a newline (or none were kept).
    pub fn ends_with_newline(&self) -> bool {
        self.last.is_none_or(|b| b == b'\n')
    }

    /// Reads kept bytes from `offset` into `buf`; 0 at the end.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if offset >= self.len {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.len - offset).unwrap_or(usize::MAX));
        match &self.data {
            SpoolData::Memory(bytes) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                buf[..want].copy_from_slice(&bytes[start..start + want]);
                Ok(want)
            }
            SpoolData::File(file) => std::os::unix::fs::FileExt::read_at(file, &mut buf[..want], offset),
        }
    }

    /// All the bytes kept, read back into memory: for small spools and tests.
    pub fn to_vec(&self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut PartsReader { parts: vec![Part::Spool(self)], index: 0, offset: 0 },
            &mut out,
        )?;
        Ok(out)
    }

    /// The bytes kept, as (lossy UTF-8) text; empty if they cannot be read back.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.to_vec().unwrap_or_default()).into_owned()
    }
}

/// One piece of a [`FullOutput`]: text the tool wrote around its streams, or a stream's spool.
#[derive(Debug, Clone)]
pub enum FullPart {
    /// Literal text (a header such as `exit code: 0`).
    Text(String),
    /// A stream, read from its spool when the output is stored.
    Spool(Arc<Spool>),
}

impl PartialEq for FullPart {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Text(a), Self::Text(b)) => a == b,
            (Self::Spool(a), Self::Spool(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for FullPart {}

enum Part<'a> {
    Text(&'a [u8]),
    Spool(&'a Spool),
}

impl Part<'_> {
    fn len(&self) -> u64 {
        match self {
            Part::Text(t) => t.len() as u64,
            Part::Spool(s) => s.len(),
        }
    }
}

/// Reads parts in order, without copying any of them whole.
struct PartsReader<'a> {
    parts: Vec<Part<'a>>,
    index: usize,
    offset: u64,
}

impl std::io::Read for PartsReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some(part) = self.parts.get(self.index) {
            let n = match part {
                Part::Text(t) => {
                    let start = usize::try_from(self.offset).unwrap_or(usize::MAX).min(t.len());
                    let n = buf.len().min(t.len() - start);
                    buf[..n].copy_from_slice(&t[start..start + n]);
                    n
                }
                Part::Spool(s) => s.read_at(self.offset, buf)?,
            };
            if n > 0 || buf.is_empty() {
                self.offset += n as u64;
                return Ok(n);
            }
            if self.offset < part.len() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the spool was cut short",
                ));
            }
            self.index += 1;
            self.offset = 0;
        }
        Ok(0)
    }
}

/// The full output of a call, when the tool gave the model only a view of it: text and spooled
/// streams, read in order when stored (never assembled in memory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FullOutput {
    /// Everything kept, in the layout of the view (what `read_result` pages through).
    pub parts: Vec<FullPart>,
    /// Bytes the tool produced past the budget: not kept anywhere.
    pub dropped_bytes: u64,
    /// The budget, for the note that says so.
    pub cap_bytes: u64,
}

impl FullOutput {
    /// The full output `text`, with what `budget` dropped.
    pub fn new(text: String, budget: &SpoolBudget) -> Self {
        Self::from_parts(vec![FullPart::Text(text)], budget)
    }

    /// The full output made of `parts` in order, with what `budget` dropped.
    pub fn from_parts(parts: Vec<FullPart>, budget: &SpoolBudget) -> Self {
        let lost: u64 = parts
            .iter()
            .map(|p| match p {
                FullPart::Spool(s) => s.lost,
                FullPart::Text(_) => 0,
            })
            .sum();
        Self { parts, dropped_bytes: budget.dropped() + lost, cap_bytes: budget.cap() }
    }

    fn borrowed(&self) -> Vec<Part<'_>> {
        self.parts
            .iter()
            .map(|p| match p {
                FullPart::Text(t) => Part::Text(t.as_bytes()),
                FullPart::Spool(s) => Part::Spool(s),
            })
            .collect()
    }

    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.borrowed().iter().map(Part::len).sum()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lines, counted like [`crate::count_lines`]: a last line without a newline counts.
    pub fn lines(&self) -> u64 {
        let mut newlines = 0;
        let mut last = None;
        for part in &self.parts {
            match part {
                FullPart::Text(t) => {
                    newlines += t.bytes().filter(|b| *b == b'\n').count() as u64;
                    last = t.as_bytes().last().copied().or(last);
                }
                FullPart::Spool(s) => {
                    newlines += s.newlines;
                    last = s.last.or(last);
                }
            }
        }
        newlines + u64::from(last.is_some_and(|b| b != b'\n'))
    }

    /// The bytes in order, read in pieces (a spool is read from its file, never copied whole).
    pub fn reader(&self) -> impl std::io::Read + '_ {
        PartsReader { parts: self.borrowed(), index: 0, offset: 0 }
    }

    /// Up to `len` bytes from `offset` (fewer at the end), read from the parts where they are:
    /// the ends of a large output without reading its middle.
    pub fn read_range(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        let (mut filled, mut skip) = (0, offset);
        for part in self.borrowed() {
            if filled == len {
                break;
            }
            let part_len = part.len();
            if skip >= part_len {
                skip -= part_len;
                continue;
            }
            let mut at = skip;
            while filled < len && at < part_len {
                let n = match &part {
                    Part::Text(t) => {
                        let start = usize::try_from(at).unwrap_or(usize::MAX).min(t.len());
                        let n = (len - filled).min(t.len() - start);
                        out[filled..filled + n].copy_from_slice(&t[start..start + n]);
                        n
                    }
                    Part::Spool(s) => s.read_at(at, &mut out[filled..])?,
                };
                if n == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the spool was cut short",
                    ));
                }
                filled += n;
                at += n as u64;
            }
            skip = 0;
        }
        out.truncate(filled);
        Ok(out)
    }

    /// The whole output as (lossy UTF-8) text, in memory: only for outputs known to be small.
    pub fn to_text(&self) -> std::io::Result<String> {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut self.reader(), &mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The line the model sees when bytes were dropped, naming how many.
    pub fn dropped_note(&self) -> Option<String> {
        (self.dropped_bytes > 0).then(|| {
            format!(
                "[{} more bytes of output past the {}-byte limit of stored output were dropped and cannot be restored]",
                self.dropped_bytes, self.cap_bytes
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_exact() {
        let budget = SpoolBudget::new(10);
        let mut a = budget.spool();
        let mut b = budget.spool();
        a.write(b"0123");
        b.write(b"456789ab");
        a.write(b"cd");
        assert_eq!(a.to_vec().unwrap(), b"0123");
        assert_eq!(b.to_vec().unwrap(), b"456789");
        assert_eq!((budget.written(), budget.dropped()), (14, 4));
        let full = FullOutput::new(a.text() + &b.text(), &budget);
        assert_eq!(
            full.dropped_note().unwrap(),
            "[4 more bytes of output past the 10-byte limit of stored output were dropped and cannot be restored]"
        );
        assert!(FullOutput::new(String::new(), &SpoolBudget::new(10)).dropped_note().is_none());
    }

    #[test]
    fn a_big_stream_moves_to_a_file_and_reads_back_exactly() {
        let budget = SpoolBudget::new(3 * SPOOL_MEMORY_BYTES);
        let mut spool = budget.spool();
        let line = b"0123456789abcdef\n";
        let mut expected = Vec::new();
        while expected.len() < 2 * SPOOL_MEMORY_BYTES {
            spool.write(line);
            expected.extend_from_slice(line);
        }
        spool.write(b"no newline");
        expected.extend_from_slice(b"no newline");
        assert!(matches!(spool.data, SpoolData::File(_)), "past the memory limit the spool is a file");
        assert_eq!(spool.to_vec().unwrap(), expected);
        let full = FullOutput::from_parts(
            vec![
                FullPart::Text("stdout:\n".into()),
                FullPart::Spool(Arc::new(spool)),
                FullPart::Text("\n".into()),
            ],
            &budget,
        );
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut full.reader(), &mut read).unwrap();
        let whole = [b"stdout:\n".as_slice(), &expected, b"\n"].concat();
        assert_eq!(read, whole);
        assert_eq!(full.len(), whole.len() as u64);
        assert_eq!(full.lines(), crate::count_lines(std::str::from_utf8(&whole).unwrap()) as u64);
        assert_eq!(full.dropped_bytes, 0);
    }

    #[test]
    fn concurrent_writers_never_exceed_the_cap() {
        let budget = SpoolBudget::new(1000);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let mut spool = budget.spool();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        spool.write(&[7u8; 3]);
                    }
                    spool.len() as usize
                })
            })
            .collect();
        let kept: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(kept, 1000);
        assert_eq!((budget.written(), budget.dropped()), (2400, 1400));
    }
}
