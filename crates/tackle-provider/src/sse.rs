//! Server-sent events decoding (the `text/event-stream` format), incremental and chunk-agnostic.
//!
//! Written here rather than taken from `eventsource-stream` because the clients need three
//! things at once: identical events for any split of the byte stream (a property test checks
//! it), tolerance of invalid UTF-8 and stray lines without errors, and throughput well above
//! 100 MB/s (see `benches/sse.rs`).

use memchr::memchr2;

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none (meaning `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
}

/// Incremental SSE decoder: feed it byte chunks of any size, collect events.
///
/// ```
/// use tackle_provider::sse::SseDecoder;
/// let mut dec = SseDecoder::default();
/// let mut out = Vec::new();
/// dec.push(b"event: ping\nda", &mut out);
/// dec.push(b"ta: {}\n\n", &mut out);
/// assert_eq!(out[0].event, "ping");
/// assert_eq!(out[0].data, "{}");
/// ```
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of an incomplete line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`, so a leading `\n` is part of that line ending.
    after_cr: bool,
    /// Nothing decoded yet: a leading UTF-8 BOM is dropped.
    at_start: bool,
    event: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    id: Option<Vec<u8>>,
    started: bool,
}

impl SseDecoder {
    /// Decodes `chunk`, appending every completed event to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        if !self.started {
            self.started = true;
            self.at_start = true;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match memchr2(b'\n', b'\r', chunk) {
                Some(pos) => {
                    let ending = chunk[pos];
                    if self.line.is_empty() {
                        self.process_line(&chunk[..pos], out);
                    } else {
                        self.line.extend_from_slice(&chunk[..pos]);
                        let line = std::mem::take(&mut self.line);
                        self.process_line(&line, out);
                        self.line = line;
                        self.line.clear();
                    }
                    chunk = &chunk[pos + 1..];
                    if ending == b'\r' {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                }
                None => {
                    self.line.extend_from_slice(chunk);
                    break;
                }
            }
        }
    }

    /// Ends the stream. Per the SSE specification an event without its terminating blank line is
    /// discarded; this returns `true` when such a partial event (or line) was pending, which
    /// callers treat as a stream cut mid-event.
    pub fn finish(&mut self) -> bool {
        let pending = !self.line.is_empty() || self.has_data || !self.event.is_empty();
        self.line.clear();
        self.reset_event();
        pending
    }

    fn process_line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) {
        if self.at_start {
            self.at_start = false;
            if let Some(rest) = line.strip_prefix("\u{feff}".as_bytes()) {
                line = rest;
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment (often a keep-alive)
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => self.id = Some(value.to_vec()),
            _ => {} // `retry` and unknown fields do not matter to a client that never reconnects
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: lossy(&self.event),
                data: lossy(&self.data),
                id: self.id.as_deref().map(lossy),
            });
        }
        self.reset_event();
    }

    fn reset_event(&mut self) {
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }
}

fn lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut dec = SseDecoder::default();
        let mut out = Vec::new();
        for c in chunks {
            dec.push(c, &mut out);
        }
        out
    }

    #[test]
    fn parses_fields_comments_and_multiline_data() {
        let out = decode_chunks(&[b": keep-alive\nevent: a\ndata: one\ndata:two\nid: 7\nretry: 10\n\n"]);
        assert_eq!(out, vec![SseEvent { event: "a".into(), data: "one\ntwo".into(), id: Some("7".into()) }]);
    }

    #[test]
    fn every_line_ending_is_accepted() {
        for body in [&b"data: x\n\n"[..], b"data: x\r\n\r\n", b"data: x\r\r"] {
            assert_eq!(decode_chunks(&[body]).len(), 1, "{body:?}");
        }
        // A CRLF split across chunks is one line ending, not two.
        let out = decode_chunks(&[b"data: x\r", b"\ndata: y\r\n\r\n"]);
        assert_eq!(out[0].data, "x\ny");
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert!(decode_chunks(&[b"event: ping\n\n"]).is_empty());
    }

    #[test]
    fn bom_and_invalid_utf8_do_not_fail() {
        let out = decode_chunks(&[b"\xEF\xBB\xBFdata: \xFF\xFEok\n\n"]);
        assert_eq!(out.len(), 1);
        assert!(out[0].data.ends_with("ok"));
    }

    #[test]
    fn finish_reports_a_cut_event() {
        let mut dec = SseDecoder::default();
        let mut out = Vec::new();
        dec.push(b"data: {\"partial\":", &mut out);
        assert!(dec.finish());
        assert!(out.is_empty());
        let mut dec = SseDecoder::default();
        dec.push(b"data: {}\n\n", &mut out);
        assert!(!dec.finish());
    }

    fn sample_stream() -> Vec<u8> {
        let mut s = Vec::new();
        s.extend_from_slice(b"event: message_start\ndata: {\"a\":1}\n\n: comment\r\n");
        for i in 0..20 {
            s.extend_from_slice(
                format!("data: {{\"i\":{i},\"t\":\"h\\u00e9llo \u{1F600}\"}}\r\n\r\n").as_bytes(),
            );
        }
        s.extend_from_slice(b"event: x\rdata: y\r\rdata: [DONE]\n\n");
        s
    }

    proptest! {
        /// Any split of a valid stream into chunks yields the same events.
        #[test]
        fn chunking_does_not_change_events(cuts in proptest::collection::vec(0usize..2000, 0..40)) {
            let stream = sample_stream();
            let whole = decode_chunks(&[&stream]);
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (stream.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for p in points {
                chunks.push(&stream[start..p]);
                start = p;
            }
            chunks.push(&stream[start..]);
            prop_assert_eq!(decode_chunks(&chunks), whole);
        }

        /// Arbitrary bytes never panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), split in 0usize..512) {
            let split = split.min(bytes.len());
            let _ = decode_chunks(&[&bytes[..split], &bytes[split..]]);
        }
    }
}
