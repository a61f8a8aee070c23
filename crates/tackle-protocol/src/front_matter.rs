//! The front matter of a `SKILL.md` (or any Markdown file that starts with one): the one reader
//! of it that local skills and the skills an MCP server serves share.

/// `(yaml, body)` of `---\nyaml\n---\nbody`; `None` when the text does not start with front
/// matter closed by a line of its own. A byte-order mark is skipped; the delimiter lines may
/// end in spaces or `\r\n`.
///
/// ```
/// use tackle_protocol::split_front_matter;
/// let text = "---\nname: git\ndescription: Work with git.\n---\nUse git_log first.\n";
/// assert_eq!(split_front_matter(text), Some(("name: git\ndescription: Work with git.\n", "Use git_log first.\n")));
/// assert_eq!(split_front_matter("no front matter"), None);
/// assert_eq!(split_front_matter("---\nname: x\n----\nnot closed"), None);
/// ```
pub fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?.trim_start_matches([' ', '\t', '\r']).strip_prefix('\n')?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_are_whole_lines() {
        assert_eq!(split_front_matter("\u{feff}---\r\na: 1\r\n--- \r\nbody"), Some(("a: 1\r\n", "body")));
        assert_eq!(split_front_matter("---\na: 1\n---"), Some(("a: 1\n", "")));
        assert_eq!(split_front_matter("---\n---\nbody"), Some(("", "body")));
        assert_eq!(split_front_matter("---a: 1\n---\n"), None, "the opening line is only the delimiter");
        assert_eq!(split_front_matter("---\na: 1\n---b\n"), None, "so is the closing one");
        assert_eq!(split_front_matter("text\n---\na: 1\n---\n"), None);
    }
}
