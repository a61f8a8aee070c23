//! Bounded capture of a stream: keeps the first and last bytes, counts the rest, so a command
//! that prints gigabytes never exhausts memory.

use std::collections::VecDeque;

/// Head and tail of a byte stream.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    limit: usize,
    total: u64,
}

impl Capture {
    /// Keeps up to `limit` bytes at each end.
    pub(crate) fn new(limit: usize) -> Self {
        Self { head: Vec::new(), tail: VecDeque::new(), limit, total: 0 }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
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
    }
}
