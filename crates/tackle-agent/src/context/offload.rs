//! Recoverable offloading: large tool outputs go to the session store; the model sees a compact
//! reference with a preview and the locator that restores them (`read_result`).

use std::time::Duration;

use async_trait::async_trait;
use tackle_store::{NewBlob, Store};
use tackle_tools::{FullOutput, Offloaded, OutputOffloader, ToolContext, ToolFailure};

/// Default size above which outputs are offloaded.
pub const DEFAULT_OFFLOAD_BYTES: usize = 4 * 1024;

const HEAD_LINES: usize = 15;
const TAIL_LINES: usize = 8;
const PREVIEW_LINE_CHARS: usize = 200;

/// Offloads outputs to a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOffloader {
    store: Store,
    threshold: usize,
    ttl: Duration,
}

impl StoreOffloader {
    /// Offloads outputs over `threshold` bytes, kept for `ttl`.
    pub fn new(store: Store, threshold: usize, ttl: Duration) -> Self {
        Self { store, threshold, ttl }
    }
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(PREVIEW_LINE_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// Bytes of a line kept for the preview: enough for [`PREVIEW_LINE_CHARS`] characters of any
/// width, plus one more to know it was cut.
const PREVIEW_LINE_BYTES: usize = (PREVIEW_LINE_CHARS + 1) * 4;

/// The preview of an output read in pieces: its size, its line count, its first and last lines
/// (each cut to [`PREVIEW_LINE_CHARS`]), in memory bounded whatever the output's size.
#[derive(Debug, Default)]
pub struct OutputPreview {
    bytes: u64,
    lines: usize,
    /// The first lines, up to `HEAD_LINES + TAIL_LINES` (all of them when the output is short).
    head: Vec<String>,
    /// The last `TAIL_LINES` complete lines.
    tail: std::collections::VecDeque<String>,
    /// The start of the line being read.
    line: Vec<u8>,
    /// Whether the line being read has any byte (an empty line still counts).
    in_line: bool,
}

impl OutputPreview {
    /// Takes the next piece of the output.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        while !bytes.is_empty() {
            let end = bytes.iter().position(|b| *b == b'\n');
            let piece = &bytes[..end.unwrap_or(bytes.len())];
            let room = PREVIEW_LINE_BYTES.saturating_sub(self.line.len());
            self.line.extend_from_slice(&piece[..room.min(piece.len())]);
            self.in_line = true;
            match end {
                Some(i) => {
                    self.end_line();
                    bytes = &bytes[i + 1..];
                }
                None => break,
            }
        }
    }

    fn end_line(&mut self) {
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') && line.len() < PREVIEW_LINE_BYTES {
            line.pop();
        }
        let line = clip(&String::from_utf8_lossy(&line));
        self.lines += 1;
        self.in_line = false;
        if self.head.len() < HEAD_LINES + TAIL_LINES {
            self.head.push(line.clone());
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }

    /// The text the model sees instead of the output, stored under `locator`.
    pub fn reference(mut self, tool: &str, locator: &str) -> String {
        if self.in_line {
            // A last line without a newline; a lone "\r" there is kept, as `str::lines` does.
            let line = clip(&String::from_utf8_lossy(&std::mem::take(&mut self.line)));
            self.lines += 1;
            if self.head.len() < HEAD_LINES + TAIL_LINES {
                self.head.push(line.clone());
            }
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
        let count = self.lines;
        let mut out =
            format!("[{tool} output stored outside the context: {} bytes, {count} lines]\n", self.bytes);
        let mut push = |title: String, lines: &mut dyn Iterator<Item = &String>| {
            out.push_str(&title);
            out.push('\n');
            for l in lines {
                out.push_str(l);
                out.push('\n');
            }
        };
        if count <= HEAD_LINES + TAIL_LINES {
            push("--- preview ---".to_owned(), &mut self.head.iter());
        } else {
            push(format!("--- first {HEAD_LINES} lines ---"), &mut self.head.iter().take(HEAD_LINES));
            push(format!("--- last {TAIL_LINES} lines ---"), &mut self.tail.iter());
        }
        out.push_str(&format!(
            "locator: {locator}\nTo read more, call read_result with {{\"locator\": \"{locator}\", \"offset\": {}, \"limit\": 200}}; \
             add \"pattern\" (a regex) to keep only matching lines.",
            HEAD_LINES + 1
        ));
        out
    }
}

/// The text the model sees instead of an offloaded output.
pub fn offload_reference(tool: &str, output: &str, locator: &str) -> String {
    let mut preview = OutputPreview::default();
    preview.push(output.as_bytes());
    preview.reference(tool, locator)
}

/// Passes what it reads to an [`OutputPreview`] on the way.
struct Previewing<'a, R> {
    inner: R,
    preview: &'a mut OutputPreview,
}

impl<R: std::io::Read> std::io::Read for Previewing<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.preview.push(&buf[..n]);
        Ok(n)
    }
}

#[async_trait]
impl OutputOffloader for StoreOffloader {
    fn threshold_bytes(&self, _tool: &str) -> Option<usize> {
        // Tools whose output is sized for the context already say so themselves
        // (`ToolAnnotations::sized_output`); the executor never offloads them.
        Some(self.threshold)
    }

    async fn offload(&self, ctx: &ToolContext, tool: &str, output: &str) -> Result<Offloaded, ToolFailure> {
        let meta = self
            .store
            .blobs()
            .put(
                &ctx.session_id,
                NewBlob { tool, call_id: &ctx.call_id, bytes: output.as_bytes(), ttl: self.ttl },
            )
            .await
            .map_err(|e| ToolFailure::internal(format!("could not store the output: {e}")))?;
        Ok(Offloaded { reference: offload_reference(tool, output, &meta.locator), locator: meta.locator })
    }

    async fn offload_full(
        &self,
        ctx: &ToolContext,
        tool: &str,
        full: &FullOutput,
    ) -> Result<Offloaded, ToolFailure> {
        // Read once, in pieces: into the store's frames and the preview at the same time.
        let mut preview = OutputPreview::default();
        let reader = Previewing { inner: full.reader(), preview: &mut preview };
        let meta = self
            .store
            .blobs()
            .put_from(&ctx.session_id, tool, &ctx.call_id, self.ttl, reader)
            .await
            .map_err(|e| ToolFailure::internal(format!("could not store the output: {e}")))?;
        Ok(Offloaded { reference: preview.reference(tool, &meta.locator), locator: meta.locator })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_shows_head_and_tail_and_how_to_restore() {
        let long: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let r = offload_reference("shell", &long, "out_x");
        assert!(r.starts_with("[shell output stored outside the context: 792 bytes, 100 lines]\n"), "{r}");
        assert!(
            r.contains("--- first 15 lines ---\nline 1\n") && r.contains("line 15\n--- last 8 lines ---\n")
        );
        assert!(
            r.contains("line 93\n") && r.contains("line 100\nlocator: out_x\n") && !r.contains("line 16\n")
        );
        assert!(r.contains(r#"{"locator": "out_x", "offset": 16, "limit": 200}"#));

        let short = "a\nb";
        let r = offload_reference("t", short, "out_y");
        assert!(r.contains("3 bytes, 2 lines]\n--- preview ---\na\nb\nlocator: out_y"), "{r}");
        let wide = "x".repeat(500);
        assert!(offload_reference("t", &wide, "l").contains(&format!("{}…\n", "x".repeat(200))));
    }
    /// The first implementation, over the whole text: the oracle of the streamed preview.
    fn whole_reference(tool: &str, output: &str, locator: &str) -> String {
        // Outputs here are large (megabytes): walk only the lines shown, from both ends, and count
        // the rest without collecting them.
        let count = output.lines().count();
        let mut out =
            format!("[{tool} output stored outside the context: {} bytes, {count} lines]\n", output.len());
        let mut push = |lines: &mut dyn Iterator<Item = &str>| {
            for l in lines {
                out.push_str(&clip(l));
                out.push('\n');
            }
        };
        if count <= HEAD_LINES + TAIL_LINES {
            push(&mut "--- preview ---".lines().chain(output.lines()));
        } else {
            push(
                &mut std::iter::once(format!("--- first {HEAD_LINES} lines ---").as_str())
                    .chain(output.lines().take(HEAD_LINES)),
            );
            let tail: Vec<&str> = output.lines().rev().take(TAIL_LINES).collect();
            push(
                &mut std::iter::once(format!("--- last {TAIL_LINES} lines ---").as_str())
                    .chain(tail.into_iter().rev()),
            );
        }
        out.push_str(&format!(
            "locator: {locator}\nTo read more, call read_result with {{\"locator\": \"{locator}\", \"offset\": {}, \"limit\": 200}}; \
             add \"pattern\" (a regex) to keep only matching lines.",
            HEAD_LINES + 1
        ));
        out
    }

    #[test]
    fn the_streamed_preview_is_the_preview_of_the_whole_text() {
        let long_line = format!("{}é{}", "x".repeat(199), "y".repeat(5000));
        let cases: Vec<String> = vec![
            String::new(),
            "one".into(),
            "a\n\nb\n".into(),
            "crlf\r\nline\r\nlast\r".into(),
            (1..=23).map(|i| format!("l{i}\n")).collect(),
            (1..=24).map(|i| format!("l{i}\n")).collect(),
            (1..=500).map(|i| format!("line {i} {}\n", "é".repeat(i % 300))).collect::<String>() + "tail",
            format!("{long_line}\n{long_line}\n\r\n"),
            "\n".repeat(40),
        ];
        for text in &cases {
            let expected = whole_reference("shell", text, "out_z");
            assert_eq!(offload_reference("shell", text, "out_z"), expected);
            for piece in [1, 2, 3, 7, 64, 1000] {
                let mut preview = OutputPreview::default();
                for chunk in text.as_bytes().chunks(piece) {
                    preview.push(chunk);
                }
                assert_eq!(preview.reference("shell", "out_z"), expected, "{piece}-byte pieces of {text:?}");
            }
        }
    }
}
