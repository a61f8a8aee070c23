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
//! assert_eq!((out.bytes(), err.bytes()), (&b"hello "[..], &b"wo"[..]));
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
        Spool { bytes: Vec::new(), budget: self.clone() }
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

/// One stream of a call's full output (stdout, stderr, a body), kept while the budget lasts.
#[derive(Debug)]
pub struct Spool {
    bytes: Vec<u8>,
    budget: SpoolBudget,
}

impl Spool {
    /// Appends what the budget allows of `chunk`; the rest is counted as dropped.
    pub fn write(&mut self, chunk: &[u8]) {
        let granted = self.budget.take(chunk.len() as u64) as usize;
        self.bytes.extend_from_slice(&chunk[..granted.min(chunk.len())]);
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes kept, as (lossy UTF-8) text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// The full output of a call, when the tool gave the model only a view of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FullOutput {
    /// Everything kept, in the layout of the view (what `read_result` pages through).
    pub text: String,
    /// Bytes the tool produced past the budget: not kept anywhere.
    pub dropped_bytes: u64,
    /// The budget, for the note that says so.
    pub cap_bytes: u64,
}

impl FullOutput {
    /// The full output `text`, with what `budget` dropped.
    pub fn new(text: String, budget: &SpoolBudget) -> Self {
        Self { text, dropped_bytes: budget.dropped(), cap_bytes: budget.cap() }
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
        assert_eq!(a.bytes(), b"0123");
        assert_eq!(b.bytes(), b"456789");
        assert_eq!((budget.written(), budget.dropped()), (14, 4));
        let full = FullOutput::new(a.text() + &b.text(), &budget);
        assert_eq!(
            full.dropped_note().unwrap(),
            "[4 more bytes of output past the 10-byte limit of stored output were dropped and cannot be restored]"
        );
        assert!(FullOutput::new(String::new(), &SpoolBudget::new(10)).dropped_note().is_none());
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
                    spool.bytes().len()
                })
            })
            .collect();
        let kept: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(kept, 1000);
        assert_eq!((budget.written(), budget.dropped()), (2400, 1400));
    }
}
