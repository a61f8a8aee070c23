//! Token counting with the real BPE vocabularies (tiktoken's o200k and cl100k).
//!
//! Counts come from a fast counter (`bpe.rs`: a hand-written pretokenizer and tiktoken's own
//! merge ranks, compiled in as ready-made tables by `vocab.rs`) that gives exactly tiktoken's
//! `encode_ordinary(text).len()`; the tests check that against tiktoken itself. Nothing is
//! loaded at run time: the first count of a process costs what any other does, so counting never
//! delays a request.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tackle_protocol::{ContentBlock, Message, SystemSection, ToolSpec};

use crate::bpe::FastCounter;
use crate::pretokenize::{Classes, Pattern};
use crate::vocab::{CL100K_BASE, O200K_BASE};

/// Tokens added per message by chat formats (role, separators), as in OpenAI's counting guide.
pub const TOKENS_PER_MESSAGE: u64 = 4;
/// Tokens added per tool definition (wrapper and separators), estimated.
pub const TOKENS_PER_TOOL: u64 = 8;

/// Texts at least this long have their counts memoized by content hash.
const MEMO_MIN_BYTES: usize = 256;
/// Most memoized counts kept (about 0.4 MB); the memo is cleared when full.
const MEMO_CAPACITY: usize = 8192;

type Memo = Mutex<HashMap<(Encoding, [u8; 32]), u64>>;
static MEMO: OnceLock<Memo> = OnceLock::new();

/// A BPE vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-5, o-series; also the base estimate for other families.
    O200kBase,
    /// GPT-4, GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The vocabulary's name, as OpenAI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The vocabulary a model uses (or the best estimate for models without a public one).
    ///
    /// ```
    /// use tackle_context::Encoding;
    /// assert_eq!(Encoding::for_model("gpt-4-turbo"), Encoding::Cl100kBase);
    /// assert_eq!(Encoding::for_model("gpt-4.1-mini"), Encoding::O200kBase);
    /// assert_eq!(Encoding::for_model("claude-sonnet-4-5"), Encoding::O200kBase);
    /// ```
    pub fn for_model(model: &str) -> Self {
        let m = model.to_ascii_lowercase();
        let legacy = m.starts_with("gpt-3.5")
            || (m.starts_with("gpt-4") && !m.starts_with("gpt-4o") && !m.starts_with("gpt-4.1"));
        if legacy { Self::Cl100kBase } else { Self::O200kBase }
    }

    /// The counter of this vocabulary (made on first use, which only builds the pretokenizer's
    /// character classes); `None` if those could not be built (never expected: counts are then
    /// estimated at 4 bytes per token).
    fn fast(self) -> Option<&'static FastCounter> {
        static CLASSES: OnceLock<Option<Classes>> = OnceLock::new();
        static O200K: OnceLock<Option<FastCounter>> = OnceLock::new();
        static CL100K: OnceLock<Option<FastCounter>> = OnceLock::new();
        let (cell, vocab, pattern) = match self {
            Self::O200kBase => (&O200K, &O200K_BASE, Pattern::O200k),
            Self::Cl100kBase => (&CL100K, &CL100K_BASE, Pattern::Cl100k),
        };
        cell.get_or_init(|| {
            let classes = CLASSES.get_or_init(Classes::build).as_ref();
            if classes.is_none() {
                tracing::warn!("token counter unavailable (character classes); estimating 4 bytes per token");
            }
            Some(FastCounter::new(vocab, classes?, pattern))
        })
        .as_ref()
    }
}

/// Whether a model's provider publishes its tokenizer; others (Claude) are estimated with
/// o200k and corrected by a calibration factor learned from reported usage.
pub fn is_exact(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    m.starts_with("gpt") || m.starts_with('o') && m.chars().nth(1).is_some_and(|c| c.is_ascii_digit())
}

/// Counts tokens of text, messages, tools and system prompts for one model.
///
/// ```
/// use tackle_context::TokenCounter;
/// let counter = TokenCounter::for_model("gpt-4o");
/// assert_eq!(counter.count_text("hello world"), 2);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokenCounter {
    encoding: Encoding,
}

impl TokenCounter {
    /// A counter with the vocabulary of `model`.
    pub fn for_model(model: &str) -> Self {
        Self { encoding: Encoding::for_model(model) }
    }

    /// A counter with this vocabulary.
    pub fn new(encoding: Encoding) -> Self {
        Self { encoding }
    }

    /// The vocabulary in use.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens of `text`, exactly as tiktoken counts them. Never panics.
    pub fn count_text(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        if text.len() < MEMO_MIN_BYTES {
            return self.encode_len(text);
        }
        // The same long texts (tool definitions, system prompts, stored outputs) are counted
        // again by every session that opens; hashing is ~100x cheaper than BPE.
        let key = (self.encoding, *blake3::hash(text.as_bytes()).as_bytes());
        let memo = MEMO.get_or_init(Mutex::default);
        if let Some(n) = memo.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *n;
        }
        let n = self.encode_len(text);
        let mut memo = memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.len() >= MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(key, n);
        n
    }

    fn encode_len(&self, text: &str) -> u64 {
        let estimate = (text.len() as u64).div_ceil(4);
        let Some(fast) = self.encoding.fast() else { return estimate };
        // A panic here would be a bug in the counter; it must not take a turn down with it.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fast.count(text) as u64)).unwrap_or(estimate)
    }

    /// Tokens of one message, including the per-message overhead.
    pub fn count_message(&self, message: &Message) -> u64 {
        let mut n = TOKENS_PER_MESSAGE;
        for block in &message.content {
            n += match block {
                ContentBlock::Text { text } => self.count_text(text),
                ContentBlock::ToolUse(u) => {
                    4 + self.count_text(&u.name) + self.count_text(&u.input.to_wire_string())
                }
                ContentBlock::ToolResult(r) => 4 + self.count_text(&r.content),
                ContentBlock::Reasoning(r) => self.count_text(&r.text),
            };
        }
        n
    }

    /// Tokens of tool definitions as sent (name, description, schema).
    pub fn count_tools(&self, tools: &[ToolSpec]) -> u64 {
        tools
            .iter()
            .map(|t| {
                TOKENS_PER_TOOL
                    + self.count_text(&t.name)
                    + self.count_text(&t.description)
                    + self.count_text(&t.input_schema.to_string())
            })
            .sum()
    }

    /// Tokens of system sections.
    pub fn count_system(&self, sections: &[SystemSection]) -> u64 {
        sections.iter().map(|s| self.count_text(&s.text)).sum::<u64>()
            + if sections.is_empty() { 0 } else { TOKENS_PER_MESSAGE }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl TokenCounter {
        /// Tokens of `text` by tiktoken itself.
        fn tiktoken_len(&self, text: &str) -> Option<u64> {
            let pattern = match self.encoding {
                Encoding::O200kBase => Pattern::O200k,
                Encoding::Cl100kBase => Pattern::Cl100k,
            };
            Some(crate::bpe::tests::reference_bpe(pattern).encode_ordinary(text).len() as u64)
        }
    }

    /// Reference counts produced by OpenAI's tiktoken (the `tiktoken` 1.0.22 npm bindings of the
    /// same Rust core, with their bundled vocabularies) for the same strings.
    #[test]
    fn counts_match_tiktoken_reference_strings() {
        let o200k = TokenCounter::new(Encoding::O200kBase);
        let cl100k = TokenCounter::new(Encoding::Cl100kBase);
        let long = "a".repeat(1000);
        let cases = [
            ("hello world", 2, 2),
            ("tiktoken is great!", 6, 6),
            ("The quick brown fox jumps over the lazy dog.", 10, 10),
            ("fn main() { println!(\"hi\"); }", 9, 9),
            ("Привет, мир! 你好世界 🚀🚀", 12, 19),
            ("    indented\n\n\tcode\r\n", 6, 6),
            (long.as_str(), 125, 125),
        ];
        for (text, o, c) in cases {
            assert_eq!(o200k.count_text(text), o, "o200k {text:?}");
            assert_eq!(cl100k.count_text(text), c, "cl100k {text:?}");
        }
    }

    #[test]
    fn exact_families() {
        assert!(is_exact("gpt-4.1"));
        assert!(is_exact("o3-mini"));
        assert!(!is_exact("claude-opus-4"));
        assert!(!is_exact("llama3"));
    }

    #[test]
    fn memoized_counts_equal_fresh_counts_per_vocabulary() {
        let long: String = (0..200).map(|i| format!("line {i}: the quick brown fox\n")).collect();
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let c = TokenCounter::new(encoding);
            let fresh = c.encode_len(&long);
            assert_eq!(c.count_text(&long), fresh, "first count");
            assert_eq!(c.count_text(&long), fresh, "memoized count");
        }
        // The key includes the vocabulary: the two counts differ for this text.
        let o = TokenCounter::new(Encoding::O200kBase).count_text(&long);
        let cl = TokenCounter::new(Encoding::Cl100kBase).count_text(&long);
        assert_eq!(o, TokenCounter::new(Encoding::O200kBase).encode_len(&long));
        assert_eq!(cl, TokenCounter::new(Encoding::Cl100kBase).encode_len(&long));
    }

    /// The fast counter is what `count_text` uses, and it counts as tiktoken does, through the
    /// public path (memo included).
    #[test]
    fn fast_counter_is_live_and_counts_like_tiktoken() {
        let texts = [
            include_str!("tokens.rs"),
            include_str!("budget.rs"),
            "It's a naïve café — they'RE here. 東京 🚀\r\n\n    x  ",
            "",
            " ",
        ];
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            assert!(encoding.fast().is_some(), "{} fast counter not built", encoding.name());
            let c = TokenCounter::new(encoding);
            for text in texts {
                let expected = c.tiktoken_len(text).expect("tiktoken");
                assert_eq!(c.count_text(text), expected, "{} {text:?}", encoding.name());
                assert_eq!(c.encode_len(text), expected, "{} {text:?}", encoding.name());
            }
        }
    }

    #[test]
    fn messages_count_their_blocks_and_overhead() {
        let c = TokenCounter::for_model("gpt-4o");
        assert_eq!(c.count_message(&Message::user("hello world")), 2 + TOKENS_PER_MESSAGE);
    }
}
