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

fn render_plain(text: &str, chunk: usize, width: Option<usize>) -> String {
    let mut md = MarkdownStream::plain_text().with_width(width);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for piece in chars.chunks(chunk.max(1)) {
        out.push_str(&md.push(&piece.iter().collect::<String>()));
    }
    out.push_str(&md.finish());
    out
}

const TABLE: &str = "Sizes:\n\n| file | lines | kind |\n|:-----|------:|:----:|\n| `a|b.rs` | 12 | **code** |\n| notes.md | 3 | text |\n\nDone.\n";

#[test]
fn a_table_is_drawn_as_a_grid_with_its_alignments_whatever_the_chunking() {
    let expected = "Sizes:\n\n\
┌──────────┬───────┬──────┐
│ file     │ lines │ kind │
├──────────┼───────┼──────┤
│ a|b.rs   │    12 │ code │
│ notes.md │     3 │ text │
└──────────┴───────┴──────┘

Done.";
    for chunk in [1, 3, 7, 500] {
        assert_eq!(strip_ansi(&render(TABLE, chunk)).trim_end(), expected, "chunk {chunk}");
        assert_eq!(render_plain(TABLE, chunk, None).trim_end(), expected, "chunk {chunk}");
    }
    // The header is bold, the borders dim.
    let styled = render(TABLE, 5);
    assert!(styled.contains("\x1b[1mfile\x1b[0m") && styled.contains("\x1b[2m┌"), "{styled:?}");
}

#[test]
fn a_table_ending_the_answer_or_too_wide_for_the_terminal() {
    // The last row without a newline: drawn at the end.
    let out = render_plain("| a | b |\n|---|---|\n| 1 | 2 |", 4, None);
    assert_eq!(out, "┌───┬───┐\n│ a │ b │\n├───┼───┤\n│ 1 │ 2 │\n└───┴───┘");
    // Wider than the terminal: one record per row.
    let out = render_plain(
        "| name | description |\n|---|---|\n| x | a long text |\n| y | another |\n",
        6,
        Some(12),
    );
    assert_eq!(out, "name: x\ndescription: a long text\n\nname: y\ndescription: another");
}

#[test]
fn pipes_without_a_delimiter_row_are_ordinary_text() {
    let out = render_plain("use a || b here\nor | this |\nplain\n", 3, None);
    assert_eq!(out, "use a || b here\nor | this |\nplain\n");
}

#[test]
fn plain_text_mode_removes_markers_and_frames_code_without_escape_codes() {
    let out = render_plain(
        "## Result\n\nThe file says **hi**; see `a.txt` and [docs](https://x.dev).\n\n- one\n\n```sh\ncat a.txt\n```\n",
        4,
        None,
    );
    assert!(!out.contains('\x1b'), "{out:?}");
    assert_eq!(
        out,
        "Result\n\nThe file says hi; see a.txt and docs (https://x.dev).\n\n• one\n\n  ┌──── sh\n  │ cat a.txt\n  └────\n"
    );
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
