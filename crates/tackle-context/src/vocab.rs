//! The BPE vocabularies, compiled in: tiktoken's merge ranks as token tables built at compile
//! time (`build.rs`, layout in `vocab_table.rs`) and read in place, so nothing is loaded or built
//! at run time and only the pages a process touches become resident (at most 2 MB of table and
//! 1.4 MB of token bytes for o200k).

use crate::vocab_table::{self, EMPTY, KEY_MASK, SLOT_BYTES};

/// One vocabulary's token table and token bytes.
pub(crate) struct Vocab {
    /// Slots of [`SLOT_BYTES`] bytes (see `vocab_table.rs`).
    table: &'static [u8],
    /// Every token's bytes, concatenated in rank order.
    bytes: &'static [u8],
    /// Slots - 1 (a power of two minus one).
    mask: usize,
}

impl std::fmt::Debug for Vocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocab")
            .field("slots", &(self.mask + 1))
            .field("token_bytes", &self.bytes.len())
            .finish()
    }
}

/// o200k_base (GPT-4o and later).
pub(crate) static O200K_BASE: Vocab = Vocab::new(
    include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.table")),
    include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.bytes")),
);

/// cl100k_base (GPT-4, GPT-3.5).
pub(crate) static CL100K_BASE: Vocab = Vocab::new(
    include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.table")),
    include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.bytes")),
);

/// Byte-string equality without a `memcmp` call: most tokens and pieces are a few bytes long.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    use vocab_table::{read_u32, read_u64};
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
    const fn new(table: &'static [u8], bytes: &'static [u8]) -> Self {
        // The build script writes a power of two of slots (at least 1024).
        let slots = table.len() / SLOT_BYTES;
        Self { table, bytes, mask: slots.saturating_sub(1) }
    }

    /// Slot `i`.
    #[inline]
    fn slot(&self, i: usize) -> u64 {
        let at = i * SLOT_BYTES;
        self.table.get(at..at + SLOT_BYTES).map_or(EMPTY, vocab_table::read_u64)
    }

    /// The rank of `piece`, if it is a token.
    #[inline]
    pub(crate) fn rank(&self, piece: &[u8]) -> Option<u32> {
        self.rank_hashed(piece, vocab_table::hash(piece))
    }

    /// The rank of `piece`, whose hash is `h`, if it is a token.
    #[inline]
    pub(crate) fn rank_hashed(&self, piece: &[u8], h: u64) -> Option<u32> {
        let key = vocab_table::key(piece.len(), h);
        let mut i = h as usize & self.mask;
        // At most every slot once (the table is never full; the bound only guards a corrupt one).
        for _ in 0..=self.mask {
            let slot = self.slot(i);
            if slot == EMPTY {
                return None;
            }
            if slot & KEY_MASK == key {
                let (offset, len) = vocab_table::bytes_of(slot);
                if self.bytes.get(offset..offset + len).is_some_and(|t| same_bytes(t, piece)) {
                    return Some(vocab_table::rank_of(slot));
                }
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Every token's bytes, in slot order (for tests).
    #[cfg(test)]
    pub(crate) fn tokens(&self) -> impl Iterator<Item = (u32, &'static [u8])> + '_ {
        (0..=self.mask).filter_map(|i| {
            let slot = self.slot(i);
            let (offset, len) = vocab_table::bytes_of(slot);
            (slot != EMPTY).then(|| (vocab_table::rank_of(slot), &self.bytes[offset..offset + len]))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::tests::reference_bpe;
    use crate::pretokenize::Pattern;

    /// The ordinary tokens of tiktoken's vocabulary (ranks 0.. up to the first gap or special
    /// token), in rank order.
    fn tiktoken_tokens(pattern: Pattern) -> Vec<Vec<u8>> {
        let bpe = reference_bpe(pattern);
        let specials: Vec<&[u8]> = bpe.special_tokens().into_iter().map(str::as_bytes).collect();
        let mut tokens = Vec::new();
        for rank in 0u32.. {
            let Ok(token) = bpe.decode_bytes(&[rank]) else { break };
            if specials.contains(&token.as_slice()) {
                break;
            }
            tokens.push(token);
        }
        tokens
    }

    fn packed(tokens: &[Vec<u8>]) -> Vec<u8> {
        tokens
            .iter()
            .flat_map(|t| {
                std::iter::once(u8::try_from(t.len()).expect("short token")).chain(t.iter().copied())
            })
            .collect()
    }

    fn vocabularies() -> [(Pattern, &'static str, &'static [u8], &'static Vocab); 2] {
        [
            (Pattern::O200k, "o200k_base", include_bytes!("../vocab/o200k_base.tokens"), &O200K_BASE),
            (Pattern::Cl100k, "cl100k_base", include_bytes!("../vocab/cl100k_base.tokens"), &CL100K_BASE),
        ]
    }

    /// The committed vocabularies are tiktoken's, token for token. A new tiktoken-rs with other
    /// vocabularies fails here; `TACKLE_REGENERATE_VOCAB=1 cargo test -p tackle-context vocab`
    /// rewrites the files from it.
    #[test]
    fn committed_vocabularies_are_tiktokens() {
        for (pattern, name, committed, _) in vocabularies() {
            let expected = packed(&tiktoken_tokens(pattern));
            if std::env::var_os("TACKLE_REGENERATE_VOCAB").is_some() {
                let path = format!("{}/vocab/{name}.tokens", env!("CARGO_MANIFEST_DIR"));
                std::fs::write(&path, &expected).expect("write the vocabulary");
                continue;
            }
            assert!(
                committed == expected.as_slice(),
                "vocab/{name}.tokens is not tiktoken-rs's {name}: regenerate it with \
                 TACKLE_REGENERATE_VOCAB=1 cargo test -p tackle-context vocab"
            );
        }
    }

    /// Every token is found at its rank, the table holds nothing else, and non-tokens are not
    /// found (a token with one byte more or one byte less, when that is not a token either).
    #[test]
    fn compiled_tables_find_every_token_at_its_rank() {
        // o200k_base has 199,998 ordinary tokens, cl100k_base 100,256.
        for ((pattern, name, _, vocab), count) in vocabularies().into_iter().zip([199_998, 100_256]) {
            let tokens = tiktoken_tokens(pattern);
            assert_eq!(tokens.len(), count, "{name}");
            for (rank, token) in tokens.iter().enumerate() {
                assert_eq!(vocab.rank(token), Some(rank as u32), "{name} token {rank} {token:?}");
            }
            let mut table: Vec<(u32, &[u8])> = vocab.tokens().collect();
            table.sort_unstable();
            assert_eq!(table.len(), count, "{name}: the table holds exactly the tokens");
            assert!(
                table
                    .iter()
                    .enumerate()
                    .all(|(rank, (r, t))| *r as usize == rank && *t == tokens[rank].as_slice())
            );
            let known: std::collections::HashSet<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
            for token in tokens.iter().step_by(7) {
                for other in [
                    [token.as_slice(), b"\x00"].concat(),
                    [token.as_slice(), b"zq"].concat(),
                    token[1..].to_vec(),
                ] {
                    assert_eq!(
                        vocab.rank(&other).is_some(),
                        known.contains(other.as_slice()),
                        "{name} {other:?}"
                    );
                }
            }
        }
    }
}
