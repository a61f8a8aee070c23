//! The system prompt: a built-in base, then the workspace's `SOUL.md` (identity) and
//! `AGENTS.md` (project instructions), each a cacheable section in that order.

use std::path::Path;

use tackle_protocol::SystemSection;

/// The built-in base instructions.
pub const BASE_PROMPT: &str = "\
You are an agent working in a software workspace through tools. Work step by step: call tools \
to inspect and change things, read their results, and answer when the task is done.

How tools behave here:
- Paths are relative to the workspace root; tools cannot reach outside it.
- A failed call returns a JSON error envelope {tool, category, retryable, message, hint}. Read \
the message and hint before calling again; do not repeat an identical failing call.
- Large outputs may be shortened; when a result shows a `locator:` line, call read_result with \
that locator to read the rest.
- Messages starting with [runtime note] come from the runtime, not the user: they state which \
tools are available, the open todo items, or warnings.
- Destructive actions may need the user's approval; a denial comes back as an error envelope.

Answer concisely. When you finish, say what you did and what remains.";

/// Files of the workspace added to the system prompt, in order, with their section names.
pub const WORKSPACE_PROMPT_FILES: [(&str, &str); 2] = [("soul", "SOUL.md"), ("agents", "AGENTS.md")];

/// Largest prompt file read; longer files are cut with a note, so a stray file cannot flood
/// every request.
pub const MAX_PROMPT_FILE_BYTES: usize = 64 * 1024;

/// The system sections for a workspace: base, then `SOUL.md` and `AGENTS.md` when present.
pub fn system_sections(workspace: &Path) -> Vec<SystemSection> {
    let mut sections = vec![SystemSection::cacheable("base", BASE_PROMPT)];
    for (name, file) in WORKSPACE_PROMPT_FILES {
        let path = workspace.join(file);
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_PROMPT_FILE_BYTES)]).into_owned();
        if bytes.len() > MAX_PROMPT_FILE_BYTES {
            text.push_str(&format!("\n[{file} was cut at {MAX_PROMPT_FILE_BYTES} bytes]"));
        }
        if !text.trim().is_empty() {
            sections.push(SystemSection::cacheable(name, format!("# {file}\n\n{}", text.trim())));
        }
    }
    sections
}

#[cfg(test)]
mod tests {
    use tackle_protocol::CachePolicy;

    use super::*;

    fn texts(sections: &[SystemSection]) -> Vec<(&str, &str)> {
        sections.iter().map(|s| (s.name.as_str(), s.text.as_str())).collect()
    }

    #[test]
    fn the_base_alone_when_the_workspace_has_no_prompt_files() {
        let dir = tempfile::tempdir().unwrap();
        let sections = system_sections(dir.path());
        assert_eq!(texts(&sections), [("base", BASE_PROMPT)]);
        assert_eq!(sections[0].cache, CachePolicy::Cacheable);
    }

    #[test]
    fn soul_then_agents_each_with_its_file_heading_and_trimmed_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "\n  Use tabs.\nRun `make check`.\n\n").unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "You are Ferris.").unwrap();
        let sections = system_sections(dir.path());
        assert_eq!(
            texts(&sections),
            [
                ("base", BASE_PROMPT),
                ("soul", "# SOUL.md\n\nYou are Ferris."),
                ("agents", "# AGENTS.md\n\nUse tabs.\nRun `make check`."),
            ]
        );
        assert!(sections.iter().all(|s| s.cache == CachePolicy::Cacheable), "every section is stable");
    }

    #[test]
    fn a_blank_file_adds_nothing_and_a_huge_one_is_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOUL.md"), " \n\t\n").unwrap();
        let huge = "a".repeat(MAX_PROMPT_FILE_BYTES) + "TAIL";
        std::fs::write(dir.path().join("AGENTS.md"), &huge).unwrap();
        let sections = system_sections(dir.path());
        assert_eq!(sections.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["base", "agents"]);
        let expected = format!(
            "# AGENTS.md\n\n{}\n[AGENTS.md was cut at {MAX_PROMPT_FILE_BYTES} bytes]",
            "a".repeat(MAX_PROMPT_FILE_BYTES)
        );
        assert_eq!(sections[1].text, expected);
        assert!(!sections[1].text.contains("TAIL"));
    }
}
