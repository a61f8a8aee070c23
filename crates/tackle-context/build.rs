//! Builds each vocabulary's token table at compile time (`vocab/*.tokens` -> `OUT_DIR`), so a
//! process counts tokens without building anything: the tables are read in place from the binary.

use std::path::Path;

#[path = "src/vocab_table.rs"]
#[allow(dead_code)]
mod vocab_table;

use vocab_table::{EMPTY, SLOT_BYTES};

/// The vocabularies, as `vocab/<name>.tokens` (see vocab/README.md).
const VOCABULARIES: [&str; 2] = ["o200k_base", "cl100k_base"];

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for name in VOCABULARIES {
        let source = format!("vocab/{name}.tokens");
        println!("cargo::rerun-if-changed={source}");
        let packed = std::fs::read(&source).unwrap_or_else(|e| panic!("cannot read {source}: {e}"));
        let (table, bytes) = build(&packed).unwrap_or_else(|e| panic!("{source}: {e}"));
        write(&Path::new(&out).join(format!("{name}.table")), &table);
        write(&Path::new(&out).join(format!("{name}.bytes")), &bytes);
    }
    println!("cargo::rerun-if-changed=src/vocab_table.rs");
}

fn write(path: &Path, data: &[u8]) {
    std::fs::write(path, data).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// The token table and the concatenated token bytes of a packed vocabulary: each token in rank
/// order as a length byte and its bytes.
fn build(packed: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut tokens: Vec<&[u8]> = Vec::new();
    let mut rest = packed;
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len);
        if len == 0 || len > tail.len() {
            return Err(format!("token {} is cut or empty", tokens.len()));
        }
        tokens.push(&tail[..len]);
        rest = &tail[len..];
    }
    if tokens.len() > vocab_table::MAX_TOKENS {
        return Err(format!("{} tokens; the table holds {}", tokens.len(), vocab_table::MAX_TOKENS));
    }
    let bytes: Vec<u8> = tokens.concat();
    if bytes.len() > vocab_table::MAX_TOKEN_BYTES {
        return Err(format!("{} token bytes; the table holds {}", bytes.len(), vocab_table::MAX_TOKEN_BYTES));
    }
    let size = vocab_table::slots_for(tokens.len());
    let mask = size - 1;
    let mut slots = vec![EMPTY; size];
    let mut offset = 0;
    for (rank, token) in tokens.iter().enumerate() {
        let h = vocab_table::hash(token);
        let mut i = h as usize & mask;
        while slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        slots[i] = vocab_table::meta(rank, token.len(), offset, h);
        offset += token.len();
    }
    // Every token must be found as itself (no duplicates), and every byte must be a token, or the
    // merge loop could end on an unknown part.
    let find = |piece: &[u8]| {
        let h = vocab_table::hash(piece);
        let mut i = h as usize & mask;
        while slots[i] != EMPTY {
            let (off, len) = vocab_table::bytes_of(slots[i]);
            if &bytes[off..off + len] == piece {
                return Some(vocab_table::rank_of(slots[i]) as usize);
            }
            i = (i + 1) & mask;
        }
        None
    };
    for (rank, token) in tokens.iter().enumerate() {
        if find(token) != Some(rank) {
            return Err(format!("token {rank} ({token:?}) is a duplicate"));
        }
    }
    if let Some(byte) = (0..=255u8).find(|b| find(&[*b]).is_none()) {
        return Err(format!("byte {byte} is not a token"));
    }
    let mut table = Vec::with_capacity(size * SLOT_BYTES);
    for slot in slots {
        table.extend_from_slice(&slot.to_le_bytes());
    }
    Ok((table, bytes))
}
