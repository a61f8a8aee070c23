//! Rich text for chat messages: a small document model (paragraphs of plain, bold, italic and
//! inline-code spans; code blocks), read from the Markdown subset models write, measured the way
//! chat services count (UTF-16 code units of the visible text) and split for services that limit
//! a message's length. Channels render it in their own markup; no IO here.
//!
//! ```
//! use tackle_channels::rich::{Block, Document};
//! let doc = Document::markdown("Run **this**:\n\n```sh\nls -la\n```");
//! assert_eq!(doc.blocks.len(), 2);
//! assert!(matches!(&doc.blocks[1], Block::Code { lang: Some(l), text } if l == "sh" && text == "ls -la"));
//! assert_eq!(doc.visible_len(), "Run this:".len() + 2 + "ls -la".len());
//! ```

/// How a span looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Style {
    /// Plain text.
    Plain,
    /// Bold.
    Bold,
    /// Italic.
    Italic,
    /// Inline code.
    Code,
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Its style.
    pub style: Style,
    /// Its text (unescaped).
    pub text: String,
}

impl Span {
    /// Plain text.
    pub fn plain(text: impl Into<String>) -> Self {
        Self { style: Style::Plain, text: text.into() }
    }

    /// Bold text.
    pub fn bold(text: impl Into<String>) -> Self {
        Self { style: Style::Bold, text: text.into() }
    }

    /// Italic text.
    pub fn italic(text: impl Into<String>) -> Self {
        Self { style: Style::Italic, text: text.into() }
    }

    /// Inline code.
    pub fn code(text: impl Into<String>) -> Self {
        Self { style: Style::Code, text: text.into() }
    }
}

/// A paragraph or a code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Text with inline styles; may contain single line breaks.
    Paragraph(Vec<Span>),
    /// Preformatted code.
    Code {
        /// Language named after the opening fence, if it is a plain word.
        lang: Option<String>,
        /// The code, without the fences.
        text: String,
    },
}

/// Blocks are shown separated by a blank line, which counts as two characters.
const SEPARATOR: usize = 2;

impl Block {
    /// Visible length in UTF-16 code units.
    pub fn visible_len(&self) -> usize {
        match self {
            Self::Paragraph(spans) => spans.iter().map(|s| units(&s.text)).sum(),
            Self::Code { text, .. } => units(text),
        }
    }

    /// The visible text.
    pub fn plain_text(&self) -> String {
        match self {
            Self::Paragraph(spans) => spans.iter().map(|s| s.text.as_str()).collect(),
            Self::Code { text, .. } => text.clone(),
        }
    }

    /// Pieces of at most `limit` units: this block if it fits, else a code block cut at line
    /// ends (each piece a code block of its own) or a paragraph cut at a line end, else at a
    /// space, else anywhere; the line break or space at a cut is dropped.
    fn pieces(&self, limit: usize) -> Vec<Block> {
        if self.visible_len() <= limit {
            return vec![self.clone()];
        }
        match self {
            Self::Code { lang, text } => cut_code(text, limit)
                .into_iter()
                .map(|text| Self::Code { lang: lang.clone(), text })
                .collect(),
            Self::Paragraph(spans) => cut_paragraph(spans, limit).into_iter().map(Self::Paragraph).collect(),
        }
    }
}

/// A message's content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// Paragraphs and code blocks, in order.
    pub blocks: Vec<Block>,
}

impl Document {
    /// Plain text: one paragraph per blank-line-separated part, no styles.
    pub fn plain(text: &str) -> Self {
        let blocks = paragraphs(text).map(|p| Block::Paragraph(vec![Span::plain(p)])).collect();
        Self { blocks }
    }

    /// The Markdown subset models write: fenced code blocks (an unclosed fence runs to the end),
    /// paragraphs separated by blank lines, `inline code` and `**bold**`. Anything else is text.
    pub fn markdown(text: &str) -> Self {
        let mut blocks = Vec::new();
        let mut paragraph: Vec<&str> = Vec::new();
        let mut code: Option<(Option<String>, Vec<&str>)> = None;
        let flush = |lines: &mut Vec<&str>, blocks: &mut Vec<Block>| {
            if !lines.is_empty() {
                blocks.push(Block::Paragraph(inline(&lines.join("\n"))));
                lines.clear();
            }
        };
        for line in text.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let fence = line.trim_start().starts_with("```");
            match &mut code {
                Some((lang, lines)) => {
                    if fence && line.trim() == "```" {
                        blocks.push(Block::Code { lang: lang.take(), text: lines.join("\n") });
                        code = None;
                    } else {
                        lines.push(line);
                    }
                }
                None if fence => {
                    flush(&mut paragraph, &mut blocks);
                    code = Some((fence_language(line.trim_start().trim_start_matches('`')), Vec::new()));
                }
                None if line.trim().is_empty() => flush(&mut paragraph, &mut blocks),
                None => paragraph.push(line),
            }
        }
        if let Some((lang, lines)) = code {
            blocks.push(Block::Code { lang, text: lines.join("\n") });
        }
        flush(&mut paragraph, &mut blocks);
        Self { blocks }
    }

    /// Appends a block.
    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// True when nothing visible is left (only whitespace).
    pub fn is_blank(&self) -> bool {
        self.blocks.iter().all(|b| b.plain_text().trim().is_empty())
    }

    /// Visible length in UTF-16 code units (how chat services count), blocks separated by a
    /// blank line.
    pub fn visible_len(&self) -> usize {
        let sum: usize = self.blocks.iter().map(Block::visible_len).sum();
        sum + SEPARATOR * self.blocks.len().saturating_sub(1)
    }

    /// The visible text, blocks separated by a blank line.
    pub fn plain_text(&self) -> String {
        self.blocks.iter().map(Block::plain_text).collect::<Vec<_>>().join("\n\n")
    }

    /// Splits into documents of at most `limit` visible units (at least 16), on block
    /// boundaries where possible: blocks are packed greedily, and a block longer than `limit`
    /// starts a new part and is cut (see [`Block`]). Blank parts are dropped.
    ///
    /// ```
    /// use tackle_channels::rich::Document;
    /// let text = format!("{}\n\n{}", "a".repeat(30), "b".repeat(30));
    /// let parts = Document::markdown(&text).split(40);
    /// assert_eq!(parts.len(), 2);
    /// assert_eq!(parts[1].plain_text(), "b".repeat(30));
    /// ```
    pub fn split(&self, limit: usize) -> Vec<Document> {
        let limit = limit.max(16);
        let mut parts = Vec::new();
        let mut current = Document::default();
        let mut len = 0;
        for block in &self.blocks {
            let oversized = block.visible_len() > limit;
            if oversized && !current.blocks.is_empty() {
                parts.push(std::mem::take(&mut current));
                len = 0;
            }
            for piece in block.pieces(limit) {
                let piece_len = piece.visible_len();
                let joined = if current.blocks.is_empty() { piece_len } else { len + SEPARATOR + piece_len };
                if joined <= limit {
                    current.blocks.push(piece);
                    len = joined;
                } else {
                    parts.push(std::mem::take(&mut current));
                    current.blocks.push(piece);
                    len = piece_len;
                }
            }
        }
        parts.push(current);
        parts.retain(|p| !p.is_blank());
        parts
    }
}

/// UTF-16 code units of `s`.
pub fn units(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Non-blank parts of `text` separated by blank lines.
fn paragraphs(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        if line.trim().is_empty() {
            if !lines.is_empty() {
                out.push(lines.join("\n"));
                lines.clear();
            }
        } else {
            lines.push(line);
        }
    }
    if !lines.is_empty() {
        out.push(lines.join("\n"));
    }
    out.into_iter()
}

/// The language after an opening fence, if it is one plain word.
fn fence_language(rest: &str) -> Option<String> {
    let word = rest.split_whitespace().next()?;
    let ok = word.len() <= 32
        && word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '#' | '.'));
    ok.then(|| word.to_owned())
}

/// Inline styles of one paragraph: `code` and **bold**; unmatched markers stay text.
fn inline(text: &str) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let marker = if rest.starts_with("**") {
            Some(("**", Style::Bold))
        } else if rest.starts_with('`') {
            Some(("`", Style::Code))
        } else {
            None
        };
        if let Some((m, style)) = marker
            && let Some(end) = rest[m.len()..].find(m)
            && end > 0
        {
            let inner = &rest[m.len()..m.len() + end];
            if !plain.is_empty() {
                spans.push(Span::plain(std::mem::take(&mut plain)));
            }
            spans.push(Span { style, text: inner.to_owned() });
            rest = &rest[m.len() + end + m.len()..];
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        plain.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !plain.is_empty() {
        spans.push(Span::plain(plain));
    }
    spans
}

/// Code cut at line ends into pieces of at most `limit` units; a longer line is cut anywhere.
fn cut_code(text: &str, limit: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    // The piece being filled (possibly an empty line) and its length.
    let mut current: Option<(String, usize)> = None;
    for line in text.split('\n') {
        let line_len = units(line);
        if let Some((piece, len)) = &mut current
            && *len + 1 + line_len <= limit
        {
            piece.push('\n');
            piece.push_str(line);
            *len += 1 + line_len;
            continue;
        }
        if let Some((piece, _)) = current.take() {
            pieces.push(piece);
        }
        let mut chunks = hard_cut(line, limit);
        let last = chunks.pop().unwrap_or_default();
        pieces.extend(chunks);
        let len = units(&last);
        current = Some((last, len));
    }
    pieces.extend(current.map(|(piece, _)| piece));
    pieces
}

/// `s` cut into pieces of at most `limit` units, never inside a character.
fn hard_cut(s: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut len = 0;
    for c in s.chars() {
        if len + c.len_utf16() > limit {
            out.push(std::mem::take(&mut current));
            len = 0;
        }
        current.push(c);
        len += c.len_utf16();
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A paragraph cut into pieces of at most `limit` units: at the last line break in the second
/// half of the budget, else the last space there, else at the limit. The break or space at a
/// cut is dropped; styles are kept.
fn cut_paragraph(spans: &[Span], limit: usize) -> Vec<Vec<Span>> {
    let chars: Vec<(char, Style)> =
        spans.iter().flat_map(|s| s.text.chars().map(move |c| (c, s.style))).collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        // The longest run from `start` within the limit.
        let mut end = start;
        let mut len = 0;
        while end < chars.len() && len + chars[end].0.len_utf16() <= limit {
            len += chars[end].0.len_utf16();
            end += 1;
        }
        if end == chars.len() {
            pieces.push(respan(&chars[start..end]));
            break;
        }
        let half = start + (end - start) / 2;
        let at = |pred: fn(char) -> bool| (half..end).rev().find(|&i| pred(chars[i].0));
        match at(|c| c == '\n').or_else(|| at(char::is_whitespace)) {
            Some(cut) if cut > start => {
                pieces.push(respan(&chars[start..cut]));
                start = cut + 1;
            }
            _ => {
                pieces.push(respan(&chars[start..end]));
                start = end;
            }
        }
    }
    pieces.retain(|p| !p.is_empty());
    pieces
}

fn respan(chars: &[(char, Style)]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for &(c, style) in chars {
        match spans.last_mut() {
            Some(last) if last.style == style => last.text.push(c),
            _ => spans.push(Span { style, text: c.to_string() }),
        }
    }
    spans
}

#[cfg(test)]
#[path = "rich_tests.rs"]
mod tests;
