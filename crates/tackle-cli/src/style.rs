//! Terminal colours: on only for a terminal, never with `NO_COLOR` or `TERM=dumb`.

use std::io::IsTerminal;

/// Whether colour and cursor control may be written to a stream that is (or is not) a terminal.
/// `NO_COLOR` (any non-empty value, <https://no-color.org>) and `TERM=dumb` turn it off.
pub fn color_allowed(is_terminal: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    is_terminal && !no_color && !dumb
}

/// Paints text with ANSI styles, or leaves it plain.
///
/// ```ignore
/// let s = Style::plain();
/// assert_eq!(s.red("x"), "x");
/// assert_eq!(Style::colored().red("x"), "\x1b[31mx\x1b[0m");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    color: bool,
}

impl Style {
    /// No escape codes at all.
    pub fn plain() -> Self {
        Self { color: false }
    }

    /// Escape codes always.
    pub fn colored() -> Self {
        Self { color: true }
    }

    /// For stderr: colour when it is a terminal and nothing forbids it.
    pub fn stderr() -> Self {
        Self { color: color_allowed(std::io::stderr().is_terminal()) }
    }

    /// Whether this style writes escape codes.
    pub fn is_color(self) -> bool {
        self.color
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color && !text.is_empty() { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    pub fn bold(self, t: &str) -> String {
        self.paint("1", t)
    }
    pub fn dim(self, t: &str) -> String {
        self.paint("2", t)
    }
    pub fn italic(self, t: &str) -> String {
        self.paint("3", t)
    }
    pub fn underline(self, t: &str) -> String {
        self.paint("4", t)
    }
    pub fn red(self, t: &str) -> String {
        self.paint("31", t)
    }
    pub fn green(self, t: &str) -> String {
        self.paint("32", t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.paint("33", t)
    }
    pub fn cyan(self, t: &str) -> String {
        self.paint("36", t)
    }
    pub fn bold_cyan(self, t: &str) -> String {
        self.paint("1;36", t)
    }
}

/// The width of the terminal `stream` is, in columns; `None` off a terminal.
pub fn columns_of(stream: &impl std::os::fd::AsFd) -> Option<usize> {
    terminal_size::terminal_size_of(stream).map(|(w, _)| usize::from(w.0)).filter(|&w| w > 0)
}

/// The width of stderr's terminal, where status lines and command output go.
pub fn stderr_columns() -> Option<usize> {
    columns_of(&std::io::stderr())
}

/// `text` wrapped at word boundaries to `width` columns: the first line starts with
/// `first` (already counted), the next ones with `indent`. A word longer than a line is cut,
/// the only case a word is. Without a width the text is one line.
///
/// ```ignore
/// assert_eq!(wrap("  a ", "b c d", 7, "    "), "  a b c\n    d");
/// ```
pub fn wrap(first: &str, text: &str, width: Option<usize>, indent: &str) -> String {
    let Some(width) = width else { return format!("{first}{text}") };
    let mut out = first.to_owned();
    let mut col = strip_ansi(first).chars().count();
    let indent_cols = indent.chars().count();
    let mut at_start = true;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if !at_start && col + 1 + len > width {
            out.push('\n');
            out.push_str(indent);
            col = indent_cols;
            at_start = true;
        }
        if !at_start {
            out.push(' ');
            col += 1;
        }
        let mut rest: Vec<char> = word.chars().collect();
        // A word wider than a whole line: cut where the line ends.
        while col + rest.len() > width && width > col + 1 {
            let take = width - col;
            out.extend(&rest[..take]);
            rest.drain(..take);
            out.push('\n');
            out.push_str(indent);
            col = indent_cols;
        }
        out.extend(&rest);
        col += rest.len();
        at_start = false;
    }
    out
}

/// Removes ANSI escape sequences (CSI and OSC) from `text`: what a log file or a test sees.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Neutralizes control characters in text from a model or a tool before it reaches the
/// terminal: escape sequences in it could move the cursor, retitle the window or fake output.
/// Tabs and newlines stay, carriage returns go, every other control character becomes `�`.
pub fn sanitize(text: &str) -> String {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return text.to_owned();
    }
    text.chars()
        .filter(|c| *c != '\r')
        .map(|c| if c.is_control() && c != '\n' && c != '\t' { '\u{fffd}' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_between_words_with_a_hanging_indent() {
        assert_eq!(wrap("  a ", "b c d", Some(7), "    "), "  a b c\n    d");
        assert_eq!(wrap("", "one two three", None, "  "), "one two three");
        let text =
            "Run a shell command with bash in the workspace and return its exit code, stdout and stderr.";
        let wrapped = wrap("  shell   active  ", text, Some(40), "                  ");
        for line in wrapped.lines() {
            assert!(line.chars().count() <= 40, "{line:?}");
        }
        let words: Vec<&str> = wrapped.split_whitespace().skip(2).collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>(), "no word is cut");
        // Only a word longer than a line is cut.
        assert_eq!(wrap("", "abcdefghij", Some(4), ""), "abcd\nefgh\nij");
    }

    #[test]
    fn plain_style_writes_no_escapes() {
        let s = Style::plain();
        assert_eq!(s.red("x") + &s.bold("y") + &s.dim("z"), "xyz");
        assert_eq!(Style::colored().red("x"), "\x1b[31mx\x1b[0m");
    }

    #[test]
    fn strip_removes_csi_and_osc() {
        assert_eq!(strip_ansi("\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok \x1b]8;;u\x1b\\l"), "red ok l");
    }

    #[test]
    fn hostile_control_characters_are_made_visible() {
        let s = sanitize("ok\x1b[2J\r\x07\tmore\n");
        assert!(!s.contains('\x1b') && !s.contains('\r') && !s.contains('\x07'));
        assert!(s.contains("\tmore\n"));
    }
}
