//! Capping tool output for the model: keep the head and the tail, say what was cut.

/// Limits of what the model sees from one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputCap {
    /// Most bytes kept (head and tail together, excluding the marker).
    pub max_bytes: usize,
    /// Most lines kept (head and tail together, excluding the marker).
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
    /// Whether anything was cut.
    pub truncated: bool,
    /// Bytes of the original.
    pub bytes: usize,
    /// Lines of the original.
    pub lines: usize,
}

/// Number of lines of `text` (a trailing line without newline counts).
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    memchr_count(text.as_bytes()) + usize::from(!text.ends_with('\n'))
}

fn memchr_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

/// Keeps the head (60%) and tail (40%) of `text` within `cap`, cutting at line boundaries when
/// a line fits and never inside a UTF-8 character, with one marker line in between saying
/// what was cut.
///
/// ```
/// use tackle_tools::{OutputCap, cap_output};
/// let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
/// let capped = cap_output(&text, OutputCap { max_bytes: 10_000, max_lines: 10 });
/// assert!(capped.truncated);
/// assert!(capped.text.starts_with("line 1\n"));
/// assert!(capped.text.ends_with("line 100\n"));
/// assert!(capped.text.contains("90 lines"));
/// ```
pub fn cap_output(text: &str, cap: OutputCap) -> Capped {
    let bytes = text.len();
    let lines = count_lines(text);
    if bytes <= cap.max_bytes && lines <= cap.max_lines {
        return Capped { text: text.to_owned(), truncated: false, bytes, lines };
    }
    let head_bytes = cap.max_bytes * 3 / 5;
    let tail_bytes = cap.max_bytes - head_bytes;
    let head_lines = cap.max_lines * 3 / 5;
    let tail_lines = cap.max_lines - head_lines;

    let head_end = head_end(text, head_bytes, head_lines);
    let tail_start = tail_start(text, tail_bytes, tail_lines).max(head_end);
    let (head, cut, tail) = (&text[..head_end], &text[head_end..tail_start], &text[tail_start..]);
    let marker = format!(
        "[... {} lines ({} bytes) cut; output was {} bytes, {} lines ...]\n",
        count_lines(cut),
        cut.len(),
        bytes,
        lines
    );
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 1);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    out.push_str(tail);
    Capped { text: out, truncated: true, bytes, lines }
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
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn small_outputs_pass_through() {
        let c = cap_output("a\nb\n", OutputCap::default());
        assert!(!c.truncated);
        assert_eq!(c.text, "a\nb\n");
        assert_eq!((c.bytes, c.lines), (4, 2));
    }

    #[test]
    fn one_huge_line_is_cut_on_char_boundaries() {
        let text = "é".repeat(10_000);
        let c = cap_output(&text, OutputCap { max_bytes: 101, max_lines: 10 });
        assert!(c.truncated);
        assert!(c.text.contains("bytes) cut"));
        assert!(c.text.len() < 300);
    }

    proptest! {
        #[test]
        fn cap_keeps_a_prefix_and_a_suffix_within_limits(
            text in "(\\PC{0,30}\n){0,200}\\PC{0,30}",
            max_bytes in 1usize..2000,
            max_lines in 1usize..50,
        ) {
            let cap = OutputCap { max_bytes, max_lines };
            let c = cap_output(&text, cap);
            if !c.truncated {
                prop_assert_eq!(&c.text, &text);
            } else {
                let marker_start = c.text.find("[... ").unwrap();
                let marker_end = marker_start + c.text[marker_start..].find("...]\n").unwrap() + 5;
                let head = &c.text[..marker_start];
                let tail = &c.text[marker_end..];
                // A head cut mid-line got a newline added before the marker.
                let head_orig = if text.starts_with(head) { head } else { head.strip_suffix('\n').unwrap() };
                prop_assert!(text.starts_with(head_orig), "head is a prefix");
                prop_assert!(text.ends_with(tail), "tail is a suffix");
                prop_assert!(head_orig.len() + tail.len() <= max_bytes);
                prop_assert!(count_lines(head_orig) + count_lines(tail) <= max_lines + 1);
            }
        }
    }
}
