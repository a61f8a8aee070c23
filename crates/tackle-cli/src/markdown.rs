//! Assistant markdown for the terminal, rendered as it streams: each complete line is styled
//! (headings, lists, quotes, code blocks, emphasis, inline code, links) as soon as its newline
//! arrives; a table is held until its last row and drawn as a grid. On a terminal without colour
//! (`NO_COLOR`, `TERM=dumb`) the same rendering is plain text: no markers, no escape codes. Off a
//! terminal (a pipe, a file) the text passes through unchanged, so programs get exactly what the
//! model wrote.

use crate::style::{Style, sanitize, strip_ansi};

/// How markdown reaches the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkdownMode {
    /// As the model wrote it (a pipe or a file).
    Raw,
    /// Rendered for a person, without escape codes (a terminal with `NO_COLOR`).
    Plain,
    /// Rendered with colours and styles.
    Styled,
}

/// A streaming renderer for one answer.
///
/// ```ignore
/// let mut md = MarkdownStream::new(Style::plain());
/// assert_eq!(md.push("**hi**\nthere"), "**hi**\nthere");
/// let mut md = MarkdownStream::plain_text();
/// assert_eq!(md.push("**hi**\nthere"), "hi\n");
/// ```
#[derive(Debug)]
pub struct MarkdownStream {
    mode: MarkdownMode,
    style: Style,
    /// Columns available for a table (none: as wide as it needs).
    width: Option<usize>,
    /// Text after the last newline, waiting for its end (rendering modes only).
    pending: String,
    /// Inside a fenced code block: the fence that closes it.
    fence: Option<String>,
    /// A line that may be a table's header, waiting for the next line to tell.
    header: Option<String>,
    /// A table being read: held until its last row.
    table: Option<Table>,
}

/// A markdown table as read so far.
#[derive(Debug)]
struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Center,
    Right,
}

impl MarkdownStream {
    /// Styled when `style` writes colour, else raw: the text passes through.
    #[cfg(test)]
    pub fn new(style: Style) -> Self {
        let mode = if style.is_color() { MarkdownMode::Styled } else { MarkdownMode::Raw };
        Self::with_mode(mode)
    }

    /// Rendered as plain text: markers removed, code and tables drawn, no escape codes.
    #[cfg(test)]
    pub fn plain_text() -> Self {
        Self::with_mode(MarkdownMode::Plain)
    }

    /// A renderer in `mode`.
    pub fn with_mode(mode: MarkdownMode) -> Self {
        let style = if mode == MarkdownMode::Styled { Style::colored() } else { Style::plain() };
        Self { mode, style, width: None, pending: String::new(), fence: None, header: None, table: None }
    }

    /// Tables wider than `columns` are shown as one record per row instead of a grid.
    pub fn with_width(mut self, columns: Option<usize>) -> Self {
        self.width = columns.filter(|&c| c > 0);
        self
    }

    /// Adds streamed text; returns what can be shown now.
    pub fn push(&mut self, text: &str) -> String {
        let text = sanitize(text);
        if self.mode == MarkdownMode::Raw {
            return text;
        }
        self.pending.push_str(&text);
        let Some(cut) = self.pending.rfind('\n') else { return String::new() };
        let complete: String = self.pending.drain(..=cut).collect();
        let mut out = String::new();
        for line in complete.split_terminator('\n') {
            self.complete_line(line, &mut out);
        }
        out
    }

    /// Whether anything is held back (a partial line, a table not ended yet).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || self.header.is_some() || self.table.is_some()
    }

    /// Ends the answer: whatever was held back, rendered (without a final newline).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let mut out = String::new();
        if !rest.is_empty() && self.fence.is_none() && self.table.is_some() && is_row(&rest) {
            // The table's last row, without its newline.
            self.complete_line(&rest, &mut out);
            self.end_table(&mut out);
        } else {
            self.end_table(&mut out);
            if !rest.is_empty() {
                out.push_str(&self.line(&rest));
            }
        }
        if out.ends_with('\n') {
            out.pop();
        }
        self.fence = None;
        out
    }

    /// One complete line: tables are gathered, everything else rendered at once.
    fn complete_line(&mut self, line: &str, out: &mut String) {
        if self.fence.is_none() {
            if let Some(table) = &mut self.table {
                if is_row(line) {
                    let mut cells = split_row(line);
                    cells.resize(table.header.len(), String::new());
                    table.rows.push(cells);
                    return;
                }
                self.end_table(out);
            }
            if let Some(header) = self.header.take() {
                let cells = split_row(&header);
                match delimiter_row(line) {
                    Some(align) if align.len() == cells.len() => {
                        self.table = Some(Table { header: cells, align, rows: Vec::new() });
                        return;
                    }
                    _ => {
                        out.push_str(&self.line(&header));
                        out.push('\n');
                    }
                }
            }
            if is_row(line) {
                self.header = Some(line.to_owned());
                return;
            }
        }
        out.push_str(&self.line(line));
        out.push('\n');
    }

    /// Draws the table being read, and a header that turned out not to be one.
    fn end_table(&mut self, out: &mut String) {
        if let Some(table) = self.table.take() {
            out.push_str(&self.draw(&table));
        }
        if let Some(header) = self.header.take() {
            out.push_str(&self.line(&header));
            out.push('\n');
        }
    }

    /// A table as a grid of box-drawing lines, or as records when the grid is too wide.
    fn draw(&self, table: &Table) -> String {
        let s = self.style;
        let render = |cell: &str| self.inline(cell.trim());
        let header: Vec<String> = table.header.iter().map(|c| render(c)).collect();
        let rows: Vec<Vec<String>> =
            table.rows.iter().map(|r| r.iter().map(|c| render(c)).collect()).collect();
        let width = |text: &str| strip_ansi(text).chars().count();
        let mut widths: Vec<usize> = header.iter().map(|h| width(h).max(1)).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let total = widths.iter().sum::<usize>() + 3 * widths.len() + 1;
        if self.width.is_some_and(|max| total > max) {
            // Too wide for the terminal: one record per row, `header: value` lines.
            let names: Vec<String> = header.iter().map(|h| strip_ansi(h)).collect();
            let mut out = String::new();
            for (i, row) in rows.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                for (name, cell) in names.iter().zip(row) {
                    out.push_str(&format!("{} {cell}\n", s.bold(&format!("{name}:"))));
                }
            }
            return out;
        }
        let rule = |left: &str, mid: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            s.dim(&format!("{left}{}{right}", parts.join(mid)))
        };
        let line = |cells: &[String], bold: bool| {
            let mut out = s.dim("│");
            for (i, w) in widths.iter().enumerate() {
                let cell = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(width(cell));
                let (before, after) = match table.align.get(i).copied().unwrap_or(Align::Left) {
                    Align::Left => (0, pad),
                    Align::Right => (pad, 0),
                    Align::Center => (pad / 2, pad - pad / 2),
                };
                let text = if bold { s.bold(&strip_ansi(cell)) } else { cell.to_owned() };
                out.push_str(&format!(" {}{text}{} {}", " ".repeat(before), " ".repeat(after), s.dim("│")));
            }
            out
        };
        let mut out = rule("┌", "┬", "┐") + "\n";
        out.push_str(&line(&header, true));
        out.push('\n');
        out.push_str(&rule("├", "┼", "┤"));
        out.push('\n');
        for row in &rows {
            out.push_str(&line(row, false));
            out.push('\n');
        }
        out.push_str(&rule("└", "┴", "┘"));
        out.push('\n');
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

/// Whether `line` can be a table row: it has a cell separator (GFM's leading and trailing
/// pipes are optional, but a row must have one somewhere).
fn is_row(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with('|') && t.len() > 1) || split_row(t).len() > 1
}

/// The cells of a table row: split on `|` outside code spans and not escaped, the outer pipes
/// dropped.
fn split_row(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut in_code = false;
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '`' => {
                in_code = !in_code;
                cell.push(c);
            }
            '|' if !in_code => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    if !cell.trim().is_empty() || !t.ends_with('|') {
        cells.push(cell);
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The alignments of a delimiter row (`|---|:--:|--:|`), or `None` when `line` is not one.
fn delimiter_row(line: &str) -> Option<Vec<Align>> {
    if !line.contains('-') {
        return None;
    }
    let cells = split_row(line);
    cells
        .iter()
        .map(|c| {
            let left = c.starts_with(':');
            let right = c.ends_with(':') && c.len() > 1;
            let dashes = c.trim_start_matches(':').trim_end_matches(':');
            (!dashes.is_empty() && dashes.chars().all(|ch| ch == '-')).then_some(match (left, right) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
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
