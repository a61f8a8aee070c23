//! Assistant markdown for the terminal, rendered as it streams: each complete line is styled
//! (headings, lists, quotes, code blocks, emphasis, inline code, links) as soon as its newline
//! arrives. Without colour the text passes through unchanged, so pipes and `NO_COLOR` get
//! exactly what the model wrote.

use crate::style::{Style, sanitize};

/// A streaming renderer for one answer.
///
/// ```ignore
/// let mut md = MarkdownStream::new(Style::plain());
/// assert_eq!(md.push("**hi**\nthere"), "**hi**\nthere");
/// ```
#[derive(Debug)]
pub struct MarkdownStream {
    style: Style,
    /// Text after the last newline, waiting for its end (colour mode only).
    pending: String,
    /// Inside a fenced code block: the fence that closes it.
    fence: Option<String>,
}

impl MarkdownStream {
    pub fn new(style: Style) -> Self {
        Self { style, pending: String::new(), fence: None }
    }

    /// Adds streamed text; returns what can be shown now.
    pub fn push(&mut self, text: &str) -> String {
        let text = sanitize(text);
        if !self.style.is_color() {
            return text;
        }
        self.pending.push_str(&text);
        let Some(cut) = self.pending.rfind('\n') else { return String::new() };
        let complete: String = self.pending.drain(..=cut).collect();
        let mut out = String::new();
        for line in complete.split_terminator('\n') {
            out.push_str(&self.line(line));
            out.push('\n');
        }
        out
    }

    /// Whether a partial line is held back.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Ends the answer: the held-back partial line, rendered (without a newline).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let out = if rest.is_empty() { String::new() } else { self.line(&rest) };
        self.fence = None;
        out
    }

    fn line(&mut self, line: &str) -> String {
        let s = self.style;
        let trimmed = line.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(fence.as_str()) && trimmed.trim_end().chars().all(|c| c == '`' || c == '~')
            {
                self.fence = None;
                return s.dim("  └────");
            }
            return format!("  {} {}", s.dim("│"), s.yellow(line));
        }
        if let Some(fence) = opening_fence(trimmed) {
            let lang = trimmed[fence.len()..].trim();
            self.fence = Some(fence);
            return s.dim(&format!("  ┌──── {lang}"));
        }
        if let Some(rest) = heading(trimmed) {
            return s.bold_cyan(&strip_inline(rest));
        }
        if is_rule(trimmed) {
            return s.dim(&"─".repeat(40));
        }
        if let Some(rest) = trimmed.strip_prefix('>') {
            return format!("{} {}", s.dim("│"), s.italic(&self.inline(rest.trim_start())));
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((marker, rest)) = list_item(trimmed) {
            let bullet =
                if marker.chars().all(|c| "-*+".contains(c)) { "•".to_owned() } else { marker.to_owned() };
            let task = rest.strip_prefix("[ ] ").map(|r| ("☐ ", r)).or_else(|| {
                rest.strip_prefix("[x] ").or_else(|| rest.strip_prefix("[X] ")).map(|r| ("☑ ", r))
            });
            let (check, rest) = task.unwrap_or(("", rest));
            return format!("{indent}{} {check}{}", s.cyan(&bullet), self.inline(rest));
        }
        if trimmed.starts_with('|') && trimmed.trim_end().ends_with('|') {
            if trimmed.chars().all(|c| "|-: ".contains(c)) {
                return s.dim(line);
            }
            return line.split('|').map(|cell| self.inline(cell)).collect::<Vec<_>>().join(&s.dim("|"));
        }
        self.inline(line)
    }

    /// Emphasis, strong, inline code and links within one line.
    fn inline(&self, text: &str) -> String {
        let s = self.style;
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        let mut plain = String::new();
        let flush = |plain: &mut String, out: &mut String| out.push_str(&std::mem::take(plain));
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' && i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() {
                plain.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == '`' {
                let ticks = chars[i..].iter().take_while(|&&c| c == '`').count();
                if let Some(end) = find_run(&chars, i + ticks, '`', ticks) {
                    flush(&mut plain, &mut out);
                    let code: String = chars[i + ticks..end].iter().collect();
                    out.push_str(&s.cyan(code.trim()));
                    i = end + ticks;
                    continue;
                }
            }
            if (c == '*' || c == '_') && i + 1 < chars.len() {
                let strong = chars[i + 1] == c;
                let n = if strong { 2 } else { 1 };
                let opens = chars.get(i + n).is_some_and(|c| !c.is_whitespace());
                // `_` inside a word (snake_case) is not emphasis.
                let intraword = c == '_' && i > 0 && chars[i - 1].is_alphanumeric();
                if opens
                    && !intraword
                    && let Some(end) = find_closing(&chars, i + n, c, n)
                {
                    flush(&mut plain, &mut out);
                    let inner: String = chars[i + n..end].iter().collect();
                    let inner = self.inline(&inner);
                    out.push_str(&if strong { s.bold(&inner) } else { s.italic(&inner) });
                    i = end + n;
                    continue;
                }
            }
            if c == '['
                && let Some((label_end, url_end)) = link(&chars, i)
            {
                flush(&mut plain, &mut out);
                let label: String = chars[i + 1..label_end].iter().collect();
                let url: String = chars[label_end + 2..url_end].iter().collect();
                out.push_str(&s.underline(&self.inline(&label)));
                if url != label {
                    out.push_str(&s.dim(&format!(" ({url})")));
                }
                i = url_end + 1;
                continue;
            }
            plain.push(c);
            i += 1;
        }
        flush(&mut plain, &mut out);
        out
    }
}

fn opening_fence(line: &str) -> Option<String> {
    for ch in ['`', '~'] {
        let n = line.chars().take_while(|&c| c == ch).count();
        if n >= 3 {
            let rest = &line[n..];
            if ch == '`' && rest.contains('`') {
                return None;
            }
            return Some(std::iter::repeat_n(ch, n).collect());
        }
    }
    None
}

fn heading(line: &str) -> Option<&str> {
    let n = line.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&n) && line[n..].starts_with(' ') { Some(line[n..].trim()) } else { None }
}

fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && (t.chars().all(|c| c == '-') || t.chars().all(|c| c == '*') || t.chars().all(|c| c == '_'))
}

fn list_item(line: &str) -> Option<(&str, &str)> {
    if let Some(rest) =
        line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")).or_else(|| line.strip_prefix("+ "))
    {
        return Some((&line[..1], rest));
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let after = &line[digits..];
        if after.starts_with(". ") || after.starts_with(") ") {
            return Some((&line[..digits + 1], &after[2..]));
        }
    }
    None
}

/// Heading text without the markers of emphasis (a heading is bold already).
fn strip_inline(text: &str) -> String {
    text.replace("**", "").replace('`', "")
}

fn find_run(chars: &[char], from: usize, ch: char, n: usize) -> Option<usize> {
    let mut i = from;
    while i + n <= chars.len() {
        if chars[i..i + n].iter().all(|&c| c == ch) && chars.get(i + n) != Some(&ch) {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn find_closing(chars: &[char], from: usize, ch: char, n: usize) -> Option<usize> {
    let mut i = from + 1;
    while i + n <= chars.len() {
        let closes = chars[i..i + n].iter().all(|&c| c == ch)
            && !chars[i - 1].is_whitespace()
            && (n == 2 || chars.get(i + 1) != Some(&ch))
            && !(ch == '_' && chars.get(i + n).is_some_and(|c| c.is_alphanumeric()));
        if closes {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// `[label](url)` starting at `start`: the index of `]` and of `)`.
fn link(chars: &[char], start: usize) -> Option<(usize, usize)> {
    let label_end = (start + 1..chars.len()).find(|&j| chars[j] == ']')?;
    if chars.get(label_end + 1) != Some(&'(') {
        return None;
    }
    let url_end = (label_end + 2..chars.len()).find(|&j| chars[j] == ')')?;
    let url: String = chars[label_end + 2..url_end].iter().collect();
    (!url.contains(char::is_whitespace) && !url.is_empty()).then_some((label_end, url_end))
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
