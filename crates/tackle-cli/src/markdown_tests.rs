use super::*;
use crate::style::strip_ansi;

fn render(text: &str, chunk: usize) -> String {
    let mut md = MarkdownStream::new(Style::colored());
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for piece in chars.chunks(chunk.max(1)) {
        out.push_str(&md.push(&piece.iter().collect::<String>()));
    }
    out.push_str(&md.finish());
    out
}

#[test]
fn plain_mode_passes_text_through_unchanged_and_at_once() {
    let mut md = MarkdownStream::new(Style::plain());
    assert_eq!(md.push("# Title\n**bold** and `co"), "# Title\n**bold** and `co");
    assert_eq!(md.push("de`"), "de`");
    assert_eq!(md.finish(), "");
}

#[test]
fn emphasis_code_and_links_are_styled_and_their_markers_removed() {
    let out = render("Use **strong**, *em*, `cargo test` and [docs](https://x.dev/a).\n", 3);
    assert!(out.contains("\x1b[1mstrong\x1b[0m"), "{out:?}");
    assert!(out.contains("\x1b[3mem\x1b[0m"), "{out:?}");
    assert!(out.contains("\x1b[36mcargo test\x1b[0m"), "{out:?}");
    assert_eq!(strip_ansi(&out), "Use strong, em, cargo test and docs (https://x.dev/a).\n");
}

#[test]
fn lists_headings_quotes_and_code_blocks() {
    let text = "## Plan\n- one\n  - nested\n2. two\n- [x] done\n> quoted\n```rust\nlet x = 1; // **not bold**\n```\nafter\n";
    let out = strip_ansi(&render(text, 5));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Plan");
    assert_eq!(lines[1], "• one");
    assert_eq!(lines[2], "  • nested");
    assert_eq!(lines[3], "2. two");
    assert_eq!(lines[4], "• ☑ done");
    assert_eq!(lines[5], "│ quoted");
    assert_eq!(lines[6], "  ┌──── rust");
    assert_eq!(lines[7], "  │ let x = 1; // **not bold**", "code is verbatim");
    assert_eq!(lines[8], "  └────");
    assert_eq!(lines[9], "after");
}

#[test]
fn snake_case_and_lone_markers_stay_as_written() {
    let out = strip_ansi(&render("call read_file or tool_search; 2 * 3 * 4; a_b_c\n", 4));
    assert_eq!(out, "call read_file or tool_search; 2 * 3 * 4; a_b_c\n");
}

#[test]
fn a_partial_line_waits_for_its_newline_or_the_end() {
    let mut md = MarkdownStream::new(Style::colored());
    assert_eq!(md.push("**half"), "");
    assert!(md.has_pending());
    assert_eq!(strip_ansi(&md.push(" done** ok\nnext")), "half done ok\n");
    assert_eq!(strip_ansi(&md.finish()), "next");
}

#[test]
fn escape_sequences_from_the_model_never_reach_the_terminal() {
    for style in [Style::plain(), Style::colored()] {
        let mut md = MarkdownStream::new(style);
        let out = md.push("hi \x1b]0;pwned\x07 \x1b[2J there\n") + &md.finish();
        assert!(!out.contains("\x1b]") && !out.contains("\x1b[2J"), "{out:?}");
    }
}

proptest::proptest! {
    /// Any text in any chunking renders without panicking, and stripped of styles it keeps
    /// every word of the input.
    #[test]
    fn any_text_renders(text in "[a-z *_`#>\\[\\]()\\n-]{0,200}", chunk in 1usize..9) {
        let out = strip_ansi(&render(&text, chunk));
        for word in text.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| !w.is_empty()) {
            proptest::prop_assert!(out.contains(word), "{word:?} lost: {text:?} -> {out:?}");
        }
    }
}
