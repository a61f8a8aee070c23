//! Counting BPE tokens without tiktoken's regex: the hand-written pretokenizer, the compiled-in
//! vocabularies (`vocab.rs`), a count-only port of tiktoken's merge loop, and a bounded cache of
//! piece counts shared by all threads.

use std::sync::Mutex;

use crate::pretokenize::{Classes, Pattern};
use crate::vocab::{Vocab, same_bytes};
use crate::vocab_table::hash;

/// tiktoken switches from its quadratic merge loop to a heap at this piece length.
const LARGE_PIECE: usize = 100;
/// Cache shards (a power of two): threads counting at once rarely share a lock.
const CACHE_SHARDS: usize = 16;
/// Pieces kept per shard (32,768 in all).
const CACHE_SLOTS: usize = 2048;
/// Longer pieces are not cached (they rarely repeat); a slot with its bytes fills 64 bytes.
const CACHE_MAX_PIECE: usize = 48;
/// "No merge" (tiktoken's `Rank::MAX`).
const NONE: u32 = u32::MAX;

impl Vocab {
    #[inline]
    fn rank_or_none(&self, piece: &[u8]) -> u32 {
        self.rank(piece).unwrap_or(NONE)
    }

    /// Tokens of one piece: tiktoken's `byte_pair_encode(piece).len()`.
    fn piece_tokens(&self, piece: &[u8]) -> usize {
        match piece.len() {
            0 => 0,
            1 => 1,
            n if n < LARGE_PIECE => self.merge_small(piece),
            _ => self.merge_large(piece),
        }
    }

    /// tiktoken's `_byte_pair_merge`: repeatedly merge the lowest-ranked adjacent pair (the
    /// leftmost on ties); the parts left are the tokens. The parts are a linked list here
    /// (tiktoken shifts a vector), in arrays sized for the piece: same merges, same order.
    fn merge_small(&self, piece: &[u8]) -> usize {
        if piece.len() <= 16 {
            self.merge_linked::<16>(piece)
        } else {
            self.merge_linked::<LARGE_PIECE>(piece)
        }
    }

    /// `merge_small` for pieces of at most `N` bytes (`N <= LARGE_PIECE`, so a `u8` indexes).
    fn merge_linked<const N: usize>(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        // Parts are named by their start: `next[i]` is the start of the part after part `i`
        // (`n` after the last), `rank[i]` the rank of part `i` merged with its next one.
        let mut next = [0u8; N];
        let mut rank = [NONE; N];
        for i in 0..n - 1 {
            next[i] = (i + 1) as u8;
            rank[i] = self.rank_or_none(&piece[i..i + 2]);
        }
        next[n - 1] = n as u8;
        let mut parts = n;
        loop {
            let (mut best, mut at, mut before) = (NONE, 0, usize::MAX);
            let (mut prev, mut i) = (usize::MAX, 0);
            while i < n {
                if rank[i] < best {
                    (best, at, before) = (rank[i], i, prev);
                }
                prev = i;
                i = usize::from(next[i]);
            }
            if best == NONE {
                return parts;
            }
            // Part `at` absorbs the next one; its new neighbour is `after`.
            let after = usize::from(next[usize::from(next[at])]);
            next[at] = after as u8;
            parts -= 1;
            rank[at] = if after < n { self.rank_or_none(&piece[at..usize::from(next[after])]) } else { NONE };
            if before != usize::MAX {
                rank[before] = self.rank_or_none(&piece[before..after]);
            }
        }
    }

    /// tiktoken's `_byte_pair_merge_large` (the same merges, found with a heap), counting.
    fn merge_large(&self, piece: &[u8]) -> usize {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;

        struct State {
            prev: usize,
            end: usize,
            next_end: usize,
            next_rank: u32,
        }
        let n = piece.len();
        let mut state: Vec<State> = (0..n)
            .map(|i| State { prev: i.wrapping_sub(1), end: i + 1, next_end: i + 2, next_rank: NONE })
            .collect();
        // Min-heap on (rank, start): the lowest rank, then the leftmost.
        let mut heap = BinaryHeap::with_capacity(n);
        for i in 0..n - 1 {
            let rank = self.rank_or_none(&piece[i..i + 2]);
            if rank != NONE {
                heap.push(Reverse((rank, i)));
                state[i].next_rank = rank;
            }
        }
        let potential =
            |state: &mut [State], heap: &mut BinaryHeap<Reverse<(u32, usize)>>, start: usize, end: usize| {
                state[start].next_end = end;
                state[start].next_rank = NONE;
                if end <= n {
                    let rank = self.rank_or_none(&piece[start..end]);
                    if rank != NONE {
                        heap.push(Reverse((rank, start)));
                        state[start].next_rank = rank;
                    }
                }
            };
        let mut tokens = n;
        while let Some(Reverse((rank, left))) = heap.pop() {
            if rank != state[left].next_rank {
                continue; // invalidated by an earlier merge
            }
            let right = state[left].end;
            let right_end = state[left].next_end;
            let right_next_end = state[right].next_end;
            state[left].end = right_end;
            potential(&mut state, &mut heap, left, right_next_end);
            if right_end < n {
                state[right_end].prev = left;
            }
            if left > 0 {
                let prev = state[left].prev;
                potential(&mut state, &mut heap, prev, right_end);
            }
            state[right].next_rank = NONE;
            tokens -= 1;
        }
        tokens
    }
}

/// One remembered piece, in one cache line: its hash, token count, length and bytes.
#[derive(Clone, Copy)]
struct CacheSlot {
    hash: u64,
    tokens: u32,
    len: u8,
    bytes: [u8; CACHE_MAX_PIECE],
}

/// A bounded, thread-safe cache of the token counts of pieces that are not tokens themselves
/// (identifiers, rare or made-up words, runs of punctuation). Direct-mapped: a new piece replaces the one
/// in its slot, so memory is fixed (`CACHE_SHARDS × CACHE_SLOTS` slots of 64 bytes, 2 MB,
/// allocated on first use) and nothing is allocated per piece.
struct PieceCache {
    shards: Vec<Mutex<Vec<CacheSlot>>>,
}

impl PieceCache {
    fn new() -> Self {
        Self { shards: (0..CACHE_SHARDS).map(|_| Mutex::default()).collect() }
    }

    /// The cached count of `piece` (at most `CACHE_MAX_PIECE` bytes, hash `h`), or `compute`
    /// it and remember it.
    #[inline]
    fn get_or_insert(&self, piece: &[u8], h: u64, compute: impl FnOnce() -> usize) -> usize {
        // The shard from the top bits, the slot from the middle ones (the vocabulary table
        // uses the bottom bits; this keeps the three independent).
        let shard = &self.shards[(h >> 60) as usize % CACHE_SHARDS];
        let index = (h >> 32) as usize % CACHE_SLOTS;
        {
            let slots = shard.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = slots.get(index)
                && slot.hash == h
                && usize::from(slot.len) == piece.len()
                && same_bytes(&slot.bytes[..piece.len()], piece)
            {
                return slot.tokens as usize;
            }
        }
        // Computed outside the lock: two threads may count the same piece at once, which
        // costs a little work but never a wrong count.
        let n = compute();
        let (Ok(len), Ok(tokens)) = (u8::try_from(piece.len()), u32::try_from(n)) else { return n };
        let mut slots = shard.lock().unwrap_or_else(|p| p.into_inner());
        if slots.is_empty() {
            let empty = CacheSlot { hash: 0, tokens: 0, len: 0, bytes: [0; CACHE_MAX_PIECE] };
            slots.resize(CACHE_SLOTS, empty);
        }
        if let Some(slot) = slots.get_mut(index)
            && let Some(bytes) = slot.bytes.get_mut(..piece.len())
        {
            bytes.copy_from_slice(piece);
            slot.hash = h;
            slot.tokens = tokens;
            slot.len = len;
        }
        n
    }
}

/// Counts tokens like tiktoken's `CoreBPE::encode_ordinary(text).len()`, several times faster.
/// Its agreement with tiktoken is checked by the tests (every vocabulary entry, corpora,
/// property tests), not at run time.
pub(crate) struct FastCounter {
    classes: &'static Classes,
    pattern: Pattern,
    vocab: &'static Vocab,
    cache: PieceCache,
}

impl std::fmt::Debug for FastCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastCounter").field("pattern", &self.pattern).field("vocab", &self.vocab).finish()
    }
}

impl FastCounter {
    /// A counter over `vocab`, splitting text with `pattern`.
    pub(crate) fn new(vocab: &'static Vocab, classes: &'static Classes, pattern: Pattern) -> Self {
        Self { classes, pattern, vocab, cache: PieceCache::new() }
    }

    /// Tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut total = 0;
        self.classes.for_each_piece(self.pattern, text, |piece| {
            total += self.piece_tokens(piece.as_bytes());
        });
        total
    }

    #[inline]
    fn piece_tokens(&self, piece: &[u8]) -> usize {
        // Most pieces (common words with their leading space) are tokens themselves.
        let h = hash(piece);
        if self.vocab.rank_hashed(piece, h).is_some() {
            return 1;
        }
        if piece.len() > CACHE_MAX_PIECE {
            return self.vocab.piece_tokens(piece);
        }
        self.cache.get_or_insert(piece, h, || self.vocab.piece_tokens(piece))
    }

    /// Drops every cached piece count (for tests of cold counts).
    #[cfg(test)]
    pub(crate) fn clear_cache(&self) {
        for shard in &self.cache.shards {
            shard.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;

    use super::*;

    /// Text that exercises the scanner's corner cases: contractions in any case (and `ſ`),
    /// CRLF and trailing spaces, digit runs, marks, non-ASCII spaces and line separators.
    const TRICKY: &str = "Hello, World! It's we'RE they'll I'M ſ'ſ 'Ll x'D don't.\n\n\
    fn main() {\r\n    let x = vec![1, 22, 333, 4444];  // done\n}\t\n  \n\
    {\"key\": [\"value\", 3.14159, null], \"url\": \"https://example.com/a/b?c=d\"}\n\
    Привет, мир! 你好世界 🚀🚀 café naïve ǅemal ʰa A\u{301}B \u{301}. x\u{a0}y\u{3000}z\u{2028}\n\
    ABCdefGHI aBC 123456789 ١٢٣٤ Ⅻ½     \n\n\n   end   ";

    /// Real-ish texts: Rust (this crate's sources), Python, JSON, prose, logs, and long runs
    /// (pieces of 100 bytes or more go through the heap merge).
    pub(crate) fn corpora() -> Vec<String> {
        let python = r#"
import os, sys
from typing import Optional

class TokenBudget:
    """Tracks the context window's budget; it's simple."""

    def __init__(self, window: int = 200_000, reserve: Optional[int] = None) -> None:
        self.window = window
        self.reserve = reserve or window // 10

    def fits(self, tokens: int) -> bool:
        return tokens + self.reserve <= self.window  # don't overflow

if __name__ == "__main__":
    print(f"{TokenBudget().fits(int(sys.argv[1]))!r}", file=sys.stderr)
"#;
        let json = serde_json::json!({
            "model": "gpt-4o-2024-08-06",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant.\nBe concise."},
                {"role": "user", "content": "What's the weather in Zürich? 天気は？"},
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
                "required": ["city"]}}}],
            "temperature": 0.7, "max_tokens": 4096, "ids": [1, 22, 333, 4444, 55555, 666666],
        });
        let prose = "It's a truth universally acknowledged, that a single man in possession of a good \
            fortune, must be in want of a wife. They'RE here; we'll see. I'd've thought you'D KNOW.\n\n\
            Naïve café-goers in São Paulo — and Москва — don’t agree. «Ça va?» 東京タワーは高い。 \
            Ünïcödé ǅemal ʰello e\u{301}te\u{301}.\r\n";
        let logs = "2025-03-01T12:00:00.123Z INFO  tackle_agent::turn: request sent model=gpt-4o tokens=1234\n\
            2025-03-01T12:00:01.456Z WARN  tackle_mcp::connection: retrying in 250ms (attempt 3/5)\n\
            2025-03-01T12:00:02.789Z ERROR tackle_tools::executor: exit status 101: thread 'main' panicked at src/main.rs:10:5\n";
        let mut out: Vec<String> = vec![
            include_str!("bpe.rs").into(),
            include_str!("pretokenize.rs").into(),
            include_str!("tokens.rs").into(),
            include_str!("budget.rs").into(),
            include_str!("compaction.rs").into(),
            include_str!("../Cargo.toml").into(),
            python.into(),
            json.to_string(),
            serde_json::to_string_pretty(&json).unwrap_or_default(),
            prose.into(),
            logs.into(),
            TRICKY.into(),
        ];
        let runs = [
            " ".repeat(300),
            " ".repeat(300) + "x",
            "\n".repeat(200),
            "\t".repeat(150) + "\n" + &" ".repeat(120) + "y",
            "1234567890".repeat(60),
            "a".repeat(1000),
            "ab".repeat(300),
            "A".repeat(300) + "bc",
            "aA".repeat(200),
            "=".repeat(500),
            "-=".repeat(120) + "\n/",
            "🚀".repeat(100),
            "中文字符".repeat(60),
            "Привет".repeat(50),
            "x\u{301}".repeat(100),
            "'s".repeat(100),
            "\u{3000}".repeat(120) + "z",
            "QmFzZTY0IGVuY29kZWQgZGF0YSBnb2VzIGhlcmUgYW5kIGl0IGlzIHF1aXRlIGxvbmcgaW5kZWVk".repeat(5),
            "deadbeef0123456789abcdef".repeat(20),
        ];
        out.extend(runs);
        out
    }

    pub(crate) fn reference_bpe(pattern: Pattern) -> &'static tiktoken_rs::CoreBPE {
        static O200K: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
        static CL100K: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
        match pattern {
            Pattern::O200k => O200K.get_or_init(|| tiktoken_rs::o200k_base().expect("o200k")),
            Pattern::Cl100k => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().expect("cl100k")),
        }
    }

    pub(crate) fn vocab(pattern: Pattern) -> &'static Vocab {
        match pattern {
            Pattern::O200k => &crate::vocab::O200K_BASE,
            Pattern::Cl100k => &crate::vocab::CL100K_BASE,
        }
    }

    fn fast(pattern: Pattern) -> &'static FastCounter {
        static O200K: OnceLock<FastCounter> = OnceLock::new();
        static CL100K: OnceLock<FastCounter> = OnceLock::new();
        let classes = crate::pretokenize::tests::classes();
        let build = || FastCounter::new(vocab(pattern), classes, pattern);
        match pattern {
            Pattern::O200k => O200K.get_or_init(build),
            Pattern::Cl100k => CL100K.get_or_init(build),
        }
    }

    /// Asserts the fast count of `text` is tiktoken's, for both vocabularies, with the piece
    /// cache cold and then warm.
    fn assert_same_count(text: &str) {
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            let expected = reference_bpe(pattern).encode_ordinary(text).len();
            assert_eq!(fast(pattern).count(text), expected, "{pattern:?} count of {text:?}");
            assert_eq!(fast(pattern).count(text), expected, "{pattern:?} cached count of {text:?}");
        }
    }

    #[test]
    fn corpora_count_like_tiktoken() {
        for text in corpora() {
            assert_same_count(&text);
        }
    }

    #[test]
    fn cold_cache_counts_like_tiktoken() {
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            fast(pattern).clear_cache();
            let text = include_str!("pretokenize.rs");
            assert_eq!(fast(pattern).count(text), reference_bpe(pattern).encode_ordinary(text).len());
        }
    }

    #[test]
    fn heap_merge_agrees_with_the_quadratic_merge() {
        let vocab = &fast(Pattern::O200k).vocab;
        let mut seed = 0x1234_5678_9abc_def1u64;
        for len in 2..LARGE_PIECE {
            for _ in 0..20 {
                let piece: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        b"aaabbcde ._\xc3\xa9"[(seed % 13) as usize]
                    })
                    .collect();
                assert_eq!(vocab.merge_small(&piece), vocab.merge_large(&piece), "{piece:?}");
            }
        }
    }

    const FRAGMENTS: &[&str] = &[
        "a",
        "Z",
        "hello",
        " world",
        "HELLO",
        "camelCase",
        "snake_case",
        "'s",
        "'S",
        "'re",
        "'LL",
        "'d",
        "'",
        "don't",
        "I'M",
        "ſ",
        "ǅemal",
        "ʰa",
        "中文",
        "日本語",
        "e\u{301}",
        "\u{301}",
        "Привет",
        "🚀",
        "👨\u{200d}👩\u{200d}👧",
        " ",
        "    ",
        "\t",
        "\n",
        "\r\n",
        "\n\n",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "7",
        "42",
        "1234567",
        "٣",
        "Ⅻ",
        "3.14",
        ".",
        ", ",
        "!",
        "/",
        "//",
        "(",
        ")",
        "{",
        "}",
        "==",
        "->",
        "::",
        "\"",
        "#",
        "_",
        "@",
        "\u{200b}",
        "xyzzyq",
        "qwrtpsdf",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn random_fragment_text_counts_like_tiktoken(
            text in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60).prop_map(|v| v.concat())
        ) {
            assert_same_count(&text);
        }

        #[test]
        fn random_unicode_text_counts_like_tiktoken(text in "\\PC{0,60}|[\\s\\S]{0,60}") {
            assert_same_count(&text);
        }
    }
}
