use proptest::prelude::*;

use super::*;

fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn code_text(doc: &Document) -> String {
    doc.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Code { text, .. } => Some(squeeze(text)),
            Block::Paragraph(_) => None,
        })
        .collect()
}

#[test]
fn markdown_reads_fences_paragraphs_and_inline_styles() {
    let doc = Document::markdown(
        "Hello **world** and `x < y`.\nsecond line\n\n\n```rust extra\nfn a() {}\n\n}\n```\ntail **unclosed",
    );
    assert_eq!(doc.blocks.len(), 3, "{doc:?}");
    assert_eq!(
        doc.blocks[0],
        Block::Paragraph(vec![
            Span::plain("Hello "),
            Span::bold("world"),
            Span::plain(" and "),
            Span::code("x < y"),
            Span::plain(".\nsecond line"),
        ])
    );
    assert_eq!(doc.blocks[1], Block::Code { lang: Some("rust".into()), text: "fn a() {}\n\n}".into() });
    assert_eq!(doc.blocks[2], Block::Paragraph(vec![Span::plain("tail **unclosed")]));
}

#[test]
fn an_unclosed_fence_runs_to_the_end_and_odd_languages_are_dropped() {
    let doc = Document::markdown("```<script>\nrm -rf /\n");
    assert_eq!(doc.blocks, vec![Block::Code { lang: None, text: "rm -rf /\n".into() }]);
}

#[test]
fn length_counts_utf16_units() {
    let doc = Document::plain("😀é");
    assert_eq!(doc.visible_len(), 3);
}

#[test]
fn paragraphs_are_packed_and_never_cut_when_they_fit() {
    let paras: Vec<String> = (0..10).map(|i| format!("{i}").repeat(30)).collect();
    let doc = Document::markdown(&paras.join("\n\n"));
    let parts = doc.split(100);
    // 30 + 2 + 30 + 2 + 30 = 94: three paragraphs per part.
    assert_eq!(parts.iter().map(|p| p.blocks.len()).collect::<Vec<_>>(), vec![3, 3, 3, 1]);
    let rejoined: Vec<String> = parts.iter().flat_map(|p| p.blocks.iter().map(Block::plain_text)).collect();
    assert_eq!(rejoined, paras);
}

#[test]
fn a_long_paragraph_is_cut_at_line_ends_then_spaces() {
    let lines: Vec<String> = (0..8).map(|i| format!("line {i} {}", "w ".repeat(10))).collect();
    let doc = Document::plain(&lines.join("\n"));
    for part in doc.split(70) {
        let text = part.plain_text();
        assert!(units(&text) <= 70);
        assert!(text.starts_with("line "), "cut at a line end: {text:?}");
    }
    let words = "word ".repeat(40);
    let parts = Document::plain(&words).split(32);
    for part in &parts {
        let text = part.plain_text();
        assert!(!text.starts_with(' ') && text.split(' ').all(|w| w.is_empty() || w == "word"), "{text:?}");
    }
    let joined: Vec<String> = parts.iter().map(Document::plain_text).collect();
    assert_eq!(joined.join(" ").trim_end(), words.trim_end());
}

#[test]
fn a_long_code_block_becomes_several_code_blocks_with_its_language() {
    let code: Vec<String> = (0..50).map(|i| format!("let x{i} = {i};")).collect();
    let doc = Document::markdown(&format!("intro\n\n```rust\n{}\n```\n\noutro", code.join("\n")));
    let parts = doc.split(200);
    assert!(parts.len() > 3);
    assert_eq!(
        parts[0].blocks,
        vec![Block::Paragraph(vec![Span::plain("intro")])],
        "the intro is not filled up with code"
    );
    let mut lines = Vec::new();
    for part in &parts {
        for b in &part.blocks {
            if let Block::Code { lang, text } = b {
                assert_eq!(lang.as_deref(), Some("rust"));
                lines.extend(text.lines().map(str::to_owned));
            }
        }
    }
    assert_eq!(lines, code, "every line once, in order, none cut");
    assert_eq!(parts.last().unwrap().plain_text().lines().last(), Some("outro"));
}

#[test]
fn an_endless_line_is_cut_anywhere_but_never_inside_a_character() {
    let doc = Document::plain(&"😀".repeat(100));
    let parts = doc.split(33);
    assert!(parts.iter().all(|p| p.visible_len() <= 33));
    assert_eq!(parts.iter().map(Document::plain_text).collect::<String>(), "😀".repeat(100));
}

#[test]
fn blank_documents_split_into_nothing() {
    assert!(Document::markdown("  \n\n ").split(100).is_empty());
    assert!(Document::default().split(100).is_empty());
}

fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z ]{0,40}",
        "[a-z<>&\"' ]{1,12}".prop_map(|s| format!("**{s}**")),
        "[a-z<>&]{1,12}".prop_map(|s| format!("`{s}`")),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        "[a-z<>& ]{0,200}".prop_map(|s| format!("\n```py\n{s}\n{s}\n```\n")),
        "[😀é漢a ]{0,120}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    /// Whatever the text: every part fits, nothing visible is lost or reordered, code stays code.
    #[test]
    fn split_keeps_everything_within_the_limit(text in markdownish(), limit in 16usize..300) {
        let doc = Document::markdown(&text);
        let parts = doc.split(limit);
        for part in &parts {
            prop_assert!(part.visible_len() <= limit, "{} > {limit}", part.visible_len());
            prop_assert!(!part.is_blank());
        }
        let before: String = squeeze(&doc.plain_text());
        let after: String = parts.iter().map(|p| squeeze(&p.plain_text())).collect();
        prop_assert_eq!(before, after);
        let code_before = code_text(&doc);
        let code_after: String = parts.iter().map(code_text).collect();
        prop_assert_eq!(code_before, code_after);
    }
}
