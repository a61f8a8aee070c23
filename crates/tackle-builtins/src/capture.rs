//! Capture of a stream: the model's view keeps the first and last bytes and counts the rest, so
//! a command that prints gigabytes never floods the context; every byte also goes to the call's
//! [`Spool`] (up to its budget), which is what gets stored and restored.

use std::collections::VecDeque;

use tackle_tools::Spool;

/// Head and tail of a byte stream, and the stream itself in a spool.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    limit: usize,
    total: u64,
    spool: Option<Spool>,
}

impl Capture {
    /// Keeps up to `limit` bytes at each end.
    pub(crate) fn new(limit: usize) -> Self {
        Self { head: Vec::new(), tail: VecDeque::new(), limit, total: 0, spool: None }
    }

    /// Keeps up to `limit` bytes at each end for the view, and everything in `spool`.
    pub(crate) fn spooled(limit: usize, spool: Spool) -> Self {
        Self { spool: Some(spool), ..Self::new(limit) }
    }

    /// Whether the view lacks part of the stream.
    pub(crate) fn is_cut(&self) -> bool {
        self.total > self.head.len() as u64 + self.tail.len() as u64
    }

    /// The spool of the stream (what the view cuts is there), leaving none.
    pub(crate) fn take_spool(&mut self) -> Option<Spool> {
        self.spool.take()
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        if let Some(spool) = &mut self.spool {
            spool.write(bytes);
        }
        self.total += bytes.len() as u64;
        if self.head.len() < self.limit {
            let take = (self.limit - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.limit..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.limit);
        self.tail.drain(..overflow.min(self.tail.len()));
        self.tail.extend(bytes);
    }

    /// Total bytes seen.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The text: head, a marker with the number of bytes cut, tail (lossy UTF-8).
    pub(crate) fn render(&self) -> String {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            out.push_str(&format!("\n[... {} bytes cut ...]\n", self.total - kept));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_of_a_flood() {
        let mut c = Capture::new(4);
        for chunk in [&b"abc"[..], b"defgh", b"ij", b"klmnopqrstuvwxyz"] {
            c.push(chunk);
        }
        assert_eq!(c.total(), 26);
        assert_eq!(c.render(), "abcd\n[... 18 bytes cut ...]\nwxyz");
        let mut small = Capture::new(10);
        small.push(b"hello");
        assert_eq!(small.render(), "hello");
        assert!(!small.is_cut());
    }

    #[test]
    fn the_spool_keeps_what_the_view_cuts() {
        let budget = tackle_tools::SpoolBudget::new(20);
        let mut c = Capture::spooled(4, budget.spool());
        for chunk in [&b"abc"[..], b"defgh", b"ij", b"klmnopqrstuvwxyz"] {
            c.push(chunk);
        }
        assert!(c.is_cut());
        assert_eq!(c.render(), "abcd\n[... 18 bytes cut ...]\nwxyz");
        assert_eq!(c.take_spool().unwrap().text(), "abcdefghijklmnopqrst");
        assert_eq!(budget.dropped(), 6);
    }
}
