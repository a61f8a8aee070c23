//! Counting BPE tokens without tiktoken's regex: the hand-written pretokenizer, tiktoken's
//! merge ranks in a compact open-addressing table, a count-only port of tiktoken's merge loop,
//! and a bounded cache of piece counts shared by all threads.

use std::sync::Mutex;

use tiktoken_rs::CoreBPE;

use crate::pretokenize::{Classes, Pattern};

/// tiktoken switches from its quadratic merge loop to a heap at this piece length.
const LARGE_PIECE: usize = 100;
/// Cache shards (a power of two): threads counting at once rarely share a lock.
const CACHE_SHARDS: usize = 16;
/// Pieces kept per shard (32,768 in all).
const CACHE_SLOTS: usize = 2048;
/// Longer pieces are not cached (they rarely repeat); a slot with its bytes fills 64 bytes.
const CACHE_MAX_PIECE: usize = 48;
/// Sentinel of an empty table slot and of "no merge" (tiktoken's `Rank::MAX`).
const NONE: u32 = u32::MAX;

/// Text the fast counter must count exactly as tiktoken before it is trusted (a guard against
/// a future `tiktoken-rs` or `regex-syntax` whose behaviour the scanner does not reproduce).
const PROBE: &str = "Hello, World! It's we'RE they'll I'M ſ'ſ 'Ll x'D don't.\n\n\
    fn main() {\r\n    let x = vec![1, 22, 333, 4444];  // done\n}\t\n  \n\
    {\"key\": [\"value\", 3.14159, null], \"url\": \"https://example.com/a/b?c=d\"}\n\
    Привет, мир! 你好世界 🚀🚀 café naïve ǅemal ʰa A\u{301}B \u{301}. x\u{a0}y\u{3000}z\u{2028}\n\
    ABCdefGHI aBC 123456789 ١٢٣٤ Ⅻ½     \n\n\n   end   ";

/// A vocabulary's merge ranks: byte strings by rank, and a hash index over them.
pub(crate) struct Vocab {
    /// Token bytes, concatenated in rank order.
    bytes: Vec<u8>,
    /// Start of each rank's bytes in `bytes`, plus the end.
    offsets: Vec<u32>,
    /// Open-addressing slots (linear probing).
    slots: Vec<Slot>,
    /// `slots.len() - 1`.
    mask: usize,
}

impl std::fmt::Debug for Vocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocab").field("tokens", &(self.offsets.len() - 1)).finish()
    }
}

/// One slot of the token table: the token's first 8 bytes (zero-padded), so most lookups
/// are answered from this one cache line, and `meta` = rank | length << 32 | hash tag << 40.
#[derive(Debug, Clone, Copy)]
struct Slot {
    head: u64,
    meta: u64,
}

/// `Slot::meta` of an empty slot.
const EMPTY: u64 = u64::MAX;

/// The first (up to) 8 bytes of `b`, zero-padded, little-endian; built from overlapping
/// reads, which agree on the bytes they share, instead of a variable-length copy.
#[inline]
fn head(b: &[u8]) -> u64 {
    let n = b.len();
    match n {
        0 => 0,
        1..=3 => {
            u64::from(b[0]) | u64::from(b[n / 2]) << (8 * (n / 2)) | u64::from(b[n - 1]) << (8 * (n - 1))
        }
        4..=7 => u64::from(read_u32(b)) | u64::from(read_u32(&b[n - 4..])) << (8 * (n - 4)),
        _ => read_u64(b),
    }
}

/// `Slot::meta` without the rank: what a lookup of `piece` (hash `h`) compares.
#[inline]
fn meta_key(piece: &[u8], h: u64) -> u64 {
    (piece.len().min(255) as u64) << 32 | (h >> 40) << 40
}

/// A fast multiplicative hash of a short byte string (FxHash-style over 8-byte words, the
/// tail read as overlapping words rather than copied, then mixed so that the low bits index
/// the table and the high bits tag it).
#[inline]
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let step = |h: u64, word: u64| (h ^ word).wrapping_mul(K).rotate_left(26);
    let n = bytes.len();
    let mut h = n as u64;
    let mut rest = bytes;
    while rest.len() > 8 {
        let (word, tail) = rest.split_at(8);
        h = step(h, read_u64(word));
        rest = tail;
    }
    // The last 1..=8 bytes (the length is already in `h`, so overlapping reads are fine).
    let word = match rest.len() {
        8 => read_u64(rest),
        4..=7 => u64::from(read_u32(rest)) << 32 | u64::from(read_u32(&rest[rest.len() - 4..])),
        1..=3 => {
            u64::from(rest[0]) << 16 | u64::from(rest[rest.len() / 2]) << 8 | u64::from(rest[rest.len() - 1])
        }
        _ => 0,
    };
    h = step(h, word);
    h ^= h >> 31;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

/// The first 8 bytes of `b` (at least 8 long), little-endian.
#[inline]
fn read_u64(b: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[..8]);
    u64::from_le_bytes(word)
}

/// The first 4 bytes of `b` (at least 4 long), little-endian.
#[inline]
fn read_u32(b: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&b[..4]);
    u32::from_le_bytes(word)
}

/// Byte-string equality without a `memcmp` call: most tokens and pieces are a few bytes long.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=8 => read_u32(a) == read_u32(b) && read_u32(&a[n - 4..]) == read_u32(&b[n - 4..]),
        9..=16 => read_u64(a) == read_u64(b) && read_u64(&a[n - 8..]) == read_u64(&b[n - 8..]),
        _ => a == b,
    }
}

impl Vocab {
    /// Reads the ordinary tokens of `bpe` (ranks 0.. up to the first gap or special token).
    fn from_core(bpe: &CoreBPE) -> Option<Self> {
        let specials: Vec<&[u8]> = bpe.special_tokens().into_iter().map(str::as_bytes).collect();
        let mut bytes = Vec::new();
        let mut offsets = vec![0u32];
        for rank in 0u32.. {
            let Ok(token) = bpe.decode_bytes(&[rank]) else { break };
            if specials.contains(&token.as_slice()) {
                break;
            }
            bytes.extend_from_slice(&token);
            offsets.push(u32::try_from(bytes.len()).ok()?);
        }
        let tokens = offsets.len() - 1;
        // A load of 0.4 to 0.8 (0.76 for both vocabularies): 4 MB for o200k. A sparser table
        // measured no faster, its extra size costing the cache what shorter probes save.
        let size = (tokens + tokens / 4 + 1).max(1024).next_power_of_two();
        let empty = Slot { head: 0, meta: EMPTY };
        let mut vocab = Self { bytes, offsets, slots: vec![empty; size], mask: size - 1 };
        for rank in 0..tokens {
            let rank = u32::try_from(rank).ok()?;
            let token = vocab.token(rank);
            if vocab.rank(token).is_some() {
                return None; // duplicate bytes: not a vocabulary this port understands
            }
            let h = hash(token);
            let mut i = h as usize & vocab.mask;
            while vocab.slots[i].meta != EMPTY {
                i = (i + 1) & vocab.mask;
            }
            vocab.slots[i] = Slot { head: head(token), meta: meta_key(token, h) | u64::from(rank) };
        }
        // Every byte must be a token, or the merge loop could end on an unknown part.
        (0..=255u8).all(|byte| vocab.rank(&[byte]).is_some()).then_some(vocab)
    }

    fn token(&self, rank: u32) -> &[u8] {
        let start = self.offsets.get(rank as usize).copied().unwrap_or(0) as usize;
        let end = self.offsets.get(rank as usize + 1).copied().unwrap_or(0) as usize;
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The rank of `piece`, if it is a token.
    #[inline]
    fn rank(&self, piece: &[u8]) -> Option<u32> {
        self.rank_hashed(piece, hash(piece))
    }

    /// The rank of `piece`, whose hash is `h`, if it is a token.
    #[inline]
    fn rank_hashed(&self, piece: &[u8], h: u64) -> Option<u32> {
        let key = meta_key(piece, h);
        let first = head(piece);
        let mut i = h as usize & self.mask;
        loop {
            let slot = self.slots[i];
            if slot.meta == EMPTY {
                return None;
            }
            if slot.meta & !u64::from(u32::MAX) == key && slot.head == first {
                let rank = slot.meta as u32;
                if piece.len() <= 8 || same_bytes(self.token(rank), piece) {
                    return Some(rank);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

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

/// Counts tokens like `CoreBPE::encode_ordinary(text).len()`, several times faster.
pub(crate) struct FastCounter {
    classes: &'static Classes,
    pattern: Pattern,
    vocab: Vocab,
    cache: PieceCache,
}

impl std::fmt::Debug for FastCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastCounter").field("pattern", &self.pattern).field("vocab", &self.vocab).finish()
    }
}

impl FastCounter {
    /// Builds the counter from tiktoken's vocabulary; `None` (use tiktoken itself) if the
    /// vocabulary cannot be read or the counter disagrees with tiktoken on the probe text.
    pub(crate) fn new(bpe: &CoreBPE, classes: &'static Classes, pattern: Pattern) -> Option<Self> {
        let vocab = Vocab::from_core(bpe)?;
        let counter = Self { classes, pattern, vocab, cache: PieceCache::new() };
        let expected = bpe.encode_ordinary(PROBE).len();
        let got = counter.count(PROBE);
        if got != expected {
            tracing::warn!(?pattern, got, expected, "fast token counter disagrees with tiktoken; not used");
            return None;
        }
        Some(counter)
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
            PROBE.into(),
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

    fn reference_bpe(pattern: Pattern) -> &'static CoreBPE {
        static O200K: OnceLock<CoreBPE> = OnceLock::new();
        static CL100K: OnceLock<CoreBPE> = OnceLock::new();
        match pattern {
            Pattern::O200k => O200K.get_or_init(|| tiktoken_rs::o200k_base().expect("o200k")),
            Pattern::Cl100k => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().expect("cl100k")),
        }
    }

    fn fast(pattern: Pattern) -> &'static FastCounter {
        static O200K: OnceLock<FastCounter> = OnceLock::new();
        static CL100K: OnceLock<FastCounter> = OnceLock::new();
        let classes = crate::pretokenize::tests::classes();
        let build = || FastCounter::new(reference_bpe(pattern), classes, pattern).expect("fast counter");
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
    fn vocabularies_are_read_whole() {
        // o200k_base has 199,998 ordinary tokens, cl100k_base 100,256.
        assert_eq!(fast(Pattern::O200k).vocab.offsets.len() - 1, 199_998);
        assert_eq!(fast(Pattern::Cl100k).vocab.offsets.len() - 1, 100_256);
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            let vocab = &fast(pattern).vocab;
            for rank in (0..vocab.offsets.len() as u32 - 1).step_by(97) {
                assert_eq!(vocab.rank(vocab.token(rank)), Some(rank));
                assert_eq!(reference_bpe(pattern).decode_bytes(&[rank]).expect("decode"), vocab.token(rank));
            }
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
