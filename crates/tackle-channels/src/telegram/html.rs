//! Telegram HTML (`parse_mode: "HTML"`) from a [`Document`]: every piece of text escaped, only
//! tags Telegram knows, always balanced, so no message is ever rejected for its markup.

use crate::rich::{Block, Document, Style};

/// Escapes text for Telegram HTML (`&`, `<`, `>` and `"`; Telegram knows only these entities).
///
/// ```
/// assert_eq!(tackle_channels::telegram::html::escape(r#"<b>&"x""#), "&lt;b&gt;&amp;&quot;x&quot;");
/// ```
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The document as Telegram HTML; blocks separated by a blank line.
///
/// ```
/// use tackle_channels::rich::Document;
/// let doc = Document::markdown("a **<b>** `x&y`\n\n```py\nif a < b: pass\n```");
/// assert_eq!(
///     tackle_channels::telegram::html::render(&doc),
///     "a <b>&lt;b&gt;</b> <code>x&amp;y</code>\n\n<pre><code class=\"language-py\">if a &lt; b: pass</code></pre>"
/// );
/// ```
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    for (i, block) in doc.blocks.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        match block {
            Block::Paragraph(spans) => {
                for span in spans.iter().filter(|s| !s.text.is_empty()) {
                    let text = escape(&span.text);
                    match span.style {
                        Style::Plain => out.push_str(&text),
                        Style::Bold => out.push_str(&format!("<b>{text}</b>")),
                        Style::Italic => out.push_str(&format!("<i>{text}</i>")),
                        Style::Code => out.push_str(&format!("<code>{text}</code>")),
                    }
                }
            }
            Block::Code { lang, text } => {
                let text = escape(text);
                // The language is a plain word (checked when it was read); escaped all the same.
                match lang {
                    Some(l) => out.push_str(&format!(
                        "<pre><code class=\"language-{}\">{text}</code></pre>",
                        escape(l)
                    )),
                    None => out.push_str(&format!("<pre>{text}</pre>")),
                }
            }
        }
    }
    out
}
