//! The layout of a vocabulary's token table, shared by the build script (which builds the tables
//! into the binary) and the library (which reads them): hashing, slot encoding, probing.
//!
//! The table is an open-addressing hash table (linear probing) of 8-byte little-endian slots,
//! each rank | offset | length | hash tag of one token. A lookup compares length and tag, then
//! confirms a candidate against its bytes, found at `offset` in the vocabulary's concatenated
//! token bytes. (16-byte slots holding each token's first 8 bytes answered most lookups from the
//! table alone, but cost twice the memory: 4 MB for o200k, resident in any run that counts a few
//! thousand words.)
//!
//! This file has no dependencies and no `crate::` paths: `build.rs` includes it with `#[path]`.

/// Bytes per slot.
pub const SLOT_BYTES: usize = 8;
/// An empty slot.
pub const EMPTY: u64 = u64::MAX;
/// Bits of a slot holding the rank (up to 262,143; o200k has 199,998 tokens).
const RANK_BITS: u32 = 18;
/// Bits holding the token's length.
const LEN_BITS: u32 = 8;
/// Bits holding the offset of its bytes (token bytes up to 2 MiB; o200k has 1.4 MB).
const OFFSET_BITS: u32 = 21;
/// The rest is a tag from the hash's top bits, compared before anything else.
const TAG_SHIFT: u32 = RANK_BITS + LEN_BITS + OFFSET_BITS;

/// The most tokens a table can hold (the all-ones rank stays unused, so no slot is [`EMPTY`]).
pub const MAX_TOKENS: usize = (1 << RANK_BITS) - 1;
/// The most token bytes a table can point into.
pub const MAX_TOKEN_BYTES: usize = 1 << OFFSET_BITS;
/// The longest token a table can hold.
pub const MAX_TOKEN_LEN: usize = (1 << LEN_BITS) - 1;

/// The number of slots for `tokens` tokens: a load of 0.4 to 0.8 (0.76 for both of OpenAI's
/// vocabularies; a sparser table measured no faster, its size costing the cache what shorter
/// probes save).
pub fn slots_for(tokens: usize) -> usize {
    (tokens + tokens / 4 + 1).max(1024).next_power_of_two()
}

/// The first 8 bytes of `b` (at least 8 long), little-endian.
#[inline]
pub fn read_u64(b: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[..8]);
    u64::from_le_bytes(word)
}

/// The first 4 bytes of `b` (at least 4 long), little-endian.
#[inline]
pub fn read_u32(b: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&b[..4]);
    u32::from_le_bytes(word)
}

/// A fast multiplicative hash of a short byte string (FxHash-style over 8-byte words, the tail
/// read as overlapping words rather than copied, then mixed so that the low bits index the table
/// and the high bits tag it).
#[inline]
pub fn hash(bytes: &[u8]) -> u64 {
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

/// What a lookup of a piece of `len` bytes with hash `h` compares: length and tag.
#[inline]
pub fn key(len: usize, h: u64) -> u64 {
    ((len.min(MAX_TOKEN_LEN) as u64) << RANK_BITS) | (h >> TAG_SHIFT) << TAG_SHIFT
}

/// The part of a slot that [`key`] gives.
pub const KEY_MASK: u64 = !(((1 << OFFSET_BITS) - 1) << (RANK_BITS + LEN_BITS) | ((1 << RANK_BITS) - 1));

/// The slot of a token of `len` bytes at `offset` with hash `h`.
#[inline]
pub fn meta(rank: usize, len: usize, offset: usize, h: u64) -> u64 {
    key(len, h) | (offset as u64) << (RANK_BITS + LEN_BITS) | rank as u64
}

/// The rank in a slot.
#[inline]
pub fn rank_of(meta: u64) -> u32 {
    (meta & ((1 << RANK_BITS) - 1)) as u32
}

/// The (offset, length) of the token bytes in a slot.
#[inline]
pub fn bytes_of(meta: u64) -> (usize, usize) {
    let len = (meta >> RANK_BITS) & ((1 << LEN_BITS) - 1);
    let offset = (meta >> (RANK_BITS + LEN_BITS)) & ((1 << OFFSET_BITS) - 1);
    (offset as usize, len as usize)
}
