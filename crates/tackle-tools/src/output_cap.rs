//! Capping tool output for the model: keep the head and the tail, say exactly what was cut.

use std::ops::Range;

use crate::FullOutput;

/// Limits of what the model sees from one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputCap {
    /// Most bytes the model sees: head, tail and the marker line between them.
    pub max_bytes: usize,
    /// Most lines the model sees, the marker line included.
    pub max_lines: usize,
}

impl Default for OutputCap {
    fn default() -> Self {
        Self { max_bytes: 16 * 1024, max_lines: 400 }
    }
}

/// A capped output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// What the model sees.
    pub text: String,
    /// The byte range of the original that was replaced by the marker; `None` when the text is
    /// whole. The model sees `original[..cut.start]`, a newline if that head ends mid-line, the
    /// marker line, then `original[cut.end..]`.
    pub cut: Option<Range<usize>>,
    /// Bytes of the original.
    pub bytes: usize,
    /// Lines of the original.
    pub lines: usize,
}

impl Capped {
    /// Whether anything was cut.
    pub fn truncated(&self) -> bool {
        self.cut.is_some()
    }
}

/// Number of lines of `text` (a trailing line without newline counts).
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    newlines(text.as_bytes()) + usize::from(!text.ends_with('\n'))
}

fn newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

/// Keeps the head (60%) and tail (40%) of `text` within `cap`, cutting at line boundaries when
/// a line fits and never inside a UTF-8 character, with one marker line in between saying
/// exactly which bytes and lines were cut.
///
/// The marker counts against the cap, so the model never sees more than `cap.max_bytes` bytes
/// and `cap.max_lines` lines (a cap smaller than the marker itself keeps only the marker). A
/// cut is only made if it makes the text shorter: an input barely over the cap, whose cut part
/// is no longer than the marker, is returned whole.
///
/// ```
/// use tackle_tools::{OutputCap, cap_output};
/// let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
/// let capped = cap_output(&text, OutputCap { max_bytes: 10_000, max_lines: 11 });
/// assert_eq!(capped.text.lines().count(), 11);
/// assert!(capped.text.starts_with("line 1\n"));
/// assert!(capped.text.ends_with("line 100\n"));
/// assert!(capped.text.contains("[... 717 bytes cut, in lines 7-96; output was 792 bytes, 100 lines ...]"));
/// ```
pub fn cap_output(text: &str, cap: OutputCap) -> Capped {
    let bytes = text.len();
    let lines = count_lines(text);
    let whole = || Capped { text: text.to_owned(), cut: None, bytes, lines };
    if bytes <= cap.max_bytes && lines <= cap.max_lines {
        return whole();
    }
    let ends = Ends { head: text, tail: text, bytes, lines, newlines: newlines(text.as_bytes()) };
    cut(&ends, cap).unwrap_or_else(whole)
}

/// What capping reads of an output: its first and last bytes and its totals. The cut keeps at
/// most `max_bytes` at either end, so ends of `max_bytes + 1` bytes decide it exactly as the
/// whole text would (for a whole text, both ends are the text).
struct Ends<'a> {
    /// A prefix of the output.
    head: &'a str,
    /// A suffix of the output.
    tail: &'a str,
    /// Bytes of the output.
    bytes: usize,
    /// Lines of the output.
    lines: usize,
    /// Newlines in the output.
    newlines: usize,
}

/// The capped text of an output longer than the cap, or `None` when cutting would not make it
/// shorter (the caller then keeps it whole). Offsets are the output's.
fn cut(ends: &Ends<'_>, cap: OutputCap) -> Option<Capped> {
    let Ends { head: prefix, tail: suffix, bytes, lines, .. } = *ends;
    // The marker (with the newline that may precede it) is part of what the model sees.
    let budget_bytes = cap.max_bytes.saturating_sub(marker_reserve(bytes, lines));
    let budget_lines = cap.max_lines.saturating_sub(1);
    let head_bytes = budget_bytes * 3 / 5;
    let head_lines = budget_lines * 3 / 5;
    let head_end = head_end(prefix, head_bytes, head_lines);
    // Where the tail starts, in the output and in `suffix`.
    let in_suffix = tail_start(suffix, budget_bytes - head_bytes, budget_lines - head_lines);
    let tail_start = bytes.checked_sub(suffix.len() - in_suffix)?.max(head_end);
    if head_end == tail_start {
        return None;
    }
    let head = prefix.get(..head_end)?;
    let tail = suffix.get(suffix.len().checked_sub(bytes - tail_start)?..)?;
    // Lines are numbered from 1; the cut touches the lines of its first and its last byte.
    let first_line = newlines(head.as_bytes()) + 1;
    let from_last_cut = suffix.as_bytes().get(suffix.len().checked_sub(bytes - (tail_start - 1))?..)?;
    let inside = ends.newlines.checked_sub(newlines(head.as_bytes()) + newlines(from_last_cut))?;
    let last_line = first_line + inside;
    let marker = marker(tail_start - head_end, first_line, last_line, bytes, lines);
    let separator = if !head.is_empty() && !head.ends_with('\n') { "\n" } else { "" };
    let shown = head.len() + separator.len() + marker.len() + tail.len();
    if shown >= bytes {
        return None;
    }
    let mut out = String::with_capacity(shown);
    out.push_str(head);
    out.push_str(separator);
    out.push_str(&marker);
    out.push_str(tail);
    Some(Capped { text: out, cut: Some(head_end..tail_start), bytes, lines })
}

/// Caps a tool's full output ([`FullOutput`]) as [`cap_output`] would cap it whole, reading only
/// its ends from the spool: what the model sees of an output whose view (a tool's head and
/// tail of it) was itself cut, with the marker counting the whole output. Invalid UTF-8 is
/// read lossily, as the view is.
pub fn cap_full_output(full: &FullOutput, cap: OutputCap) -> std::io::Result<Capped> {
    let bytes = usize::try_from(full.len()).unwrap_or(usize::MAX);
    let window = cap.max_bytes.saturating_add(1);
    // Small enough to read whole: exactly `cap_output`.
    if bytes <= window.saturating_mul(4) {
        return Ok(cap_output(&full.to_text()?, cap));
    }
    let head = full.read_range(0, window)?;
    let tail = full.read_range(full.len() - window as u64, window)?;
    let lines = usize::try_from(full.lines()).unwrap_or(usize::MAX);
    let newlines = lines.saturating_sub(usize::from(tail.last().is_some_and(|b| *b != b'\n')));
    // A character cut by a window's edge is left out of that window.
    let head = String::from_utf8_lossy(utf8_prefix(&head)).into_owned();
    let tail = String::from_utf8_lossy(utf8_suffix(&tail)).into_owned();
    let ends = Ends { head: &head, tail: &tail, bytes, lines, newlines };
    match cut(&ends, cap) {
        Some(capped) => Ok(capped),
        // The cut would not shorten it (a cap smaller than its marker): decided on the whole.
        None if bytes <= WHOLE_READ_BYTES => Ok(cap_output(&full.to_text()?, cap)),
        None => Err(std::io::Error::other("the ends of the output do not make a cut")),
    }
}

/// Outputs up to this size may be read whole to be capped.
const WHOLE_READ_BYTES: usize = 64 * 1024;

/// `bytes` without a multi-byte character cut at its end.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without the continuation bytes of a character cut at its start.
fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count();
    &bytes[skip..]
}

/// The marker line that replaces `cut_bytes` bytes touching lines `first..=last`.
fn marker(cut_bytes: usize, first: usize, last: usize, bytes: usize, lines: usize) -> String {
    let span = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
    marker_for_span(cut_bytes, &span, bytes, lines)
}

fn marker_for_span(cut_bytes: usize, span: &str, bytes: usize, lines: usize) -> String {
    format!("[... {cut_bytes} bytes cut, in {span}; output was {bytes} bytes, {lines} lines ...]\n")
}

/// The most bytes the marker of an output of `bytes` bytes and `lines` lines can take, with the
/// newline before it: every number in it is at most `bytes` or `lines`.
fn marker_reserve(bytes: usize, lines: usize) -> usize {
    marker_for_span(bytes, &format!("lines {lines}-{lines}"), bytes, lines).len() + 1
}

/// End of the head: at most `max_bytes` and `max_lines` lines, preferring a line boundary.
fn head_end(text: &str, max_bytes: usize, max_lines: usize) -> usize {
    let mut end = 0;
    for (n, (i, _)) in text.match_indices('\n').enumerate() {
        if n >= max_lines || i + 1 > max_bytes {
            break;
        }
        end = i + 1;
    }
    if end == 0 && max_lines > 0 {
        // The first line alone is too long: cut it at a character boundary.
        end = floor_char_boundary(text, max_bytes.min(text.len()));
    }
    end
}

/// Start of the tail: at most `max_bytes` and `max_lines` lines from the end.
fn tail_start(text: &str, max_bytes: usize, max_lines: usize) -> usize {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut start = text.len();
    for (taken, (i, _)) in body.rmatch_indices('\n').enumerate() {
        if taken + 1 > max_lines || text.len() - (i + 1) > max_bytes {
            break;
        }
        start = i + 1;
    }
    if start == text.len() && max_lines > 0 {
        // The last line alone is too long: keep its end, from a character boundary.
        start = ceil_char_boundary(text, text.len().saturating_sub(max_bytes));
    }
    start
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
#[path = "output_cap_tests.rs"]
mod tests;
