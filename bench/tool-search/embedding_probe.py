#!/usr/bin/env python3
"""Would a better static embedding lift tool_search to the BFCL targets? A probe, not a ranker.

    embedding_probe.py DATA.json DUMP.json

DATA.json is `bfcl.py export` output, DUMP.json `tool_search_bfcl DATA.json --dump` output (the
shipped BM25F ranker's best 100 tools per request, with scores). The probe embeds every tool
(split name, description, parameter names) and every request with WordLlama's `l2_supercat_256`
(static token embeddings distilled from LLaMA 2, 32,000 tokens x 256 dimensions, shipped inside
the `wordllama` wheel: no network), mean-pooled and normalised, and reports recall@1 / recall@5
for the embedding alone and for the hybrid mix Tackle's `hybrid` ranker uses (BM25F score over
the best one, plus the min-max scaled cosine), at several lexical shares, on all requests and
on the held-out half (odd FNV-1a hash of the id, as in `tool_search_bfcl`).
`bench/tool-search/run.sh --probe` installs the wheel and runs it.
"""

import json
import re
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer
import wordllama

ROOT = wordllama.__path__[0]
TABLE = load_file(f"{ROOT}/weights/l2_supercat_256.safetensors")["embedding.weight"].astype(np.float32)
TOKENIZER = Tokenizer.from_file(f"{ROOT}/tokenizers/l2_supercat_tokenizer_config.json")


def split_name(name):
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return re.sub(r"[_.\-/]", " ", name)


def tool_text(tool):
    props = (tool.get("inputSchema") or {}).get("properties") or {}
    return " ".join([split_name(tool["name"]) + ".", tool.get("description") or ""] + [split_name(k) for k in props])


def embed(texts):
    out = np.zeros((len(texts), TABLE.shape[1]), dtype=np.float32)
    for i, text in enumerate(texts):
        v = TABLE[TOKENIZER.encode(text).ids[:512]].mean(0)
        out[i] = v / (np.linalg.norm(v) + 1e-9)
    return out


def held_out(qid):
    h = 0xCBF29CE484222325
    for b in qid.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h % 2 == 1


def recall(ranked_rows):
    """ranked_rows: (relevant ids, ranked ids) per request; recall@k capped by min(|R|, k)."""
    at1 = at5 = 0.0
    for relevant, ranked in ranked_rows:
        at1 += len(relevant & set(ranked[:1])) / min(len(relevant), 1)
        at5 += len(relevant & set(ranked[:5])) / min(len(relevant), 5)
    n = max(len(ranked_rows), 1)
    return at1 / n, at5 / n


def main():
    data = json.load(open(sys.argv[1]))
    dump = json.load(open(sys.argv[2]))
    index = {name: i for i, name in enumerate(dump["names"])}
    assert len(index) == len(data["tools"]), "DATA.json and DUMP.json describe different catalogues"
    tools = embed([tool_text(t) for t in data["tools"]])
    by_id = {q["id"]: q for q in data["queries"]}
    rows = dump["rows"]
    cosines = embed([by_id[r["id"]]["query"] for r in rows]) @ tools.T

    def report(label, rank):
        ranked = [(set(index[n] for n in r["relevant"]), rank(i, r)) for i, r in enumerate(rows)]
        held = [x for x, r in zip(ranked, rows) if held_out(r["id"])]
        a, h = recall(ranked), recall(held)
        print(f"| {label} | {a[0]:.3f} | {a[1]:.3f} | {h[0]:.3f} / {h[1]:.3f} |")

    print("| ranker | recall@1 | recall@5 | recall@1 / @5, held-out half |")
    print("|---|---|---|---|")
    report("WordLlama l2_supercat_256 alone", lambda i, r: list(np.argsort(-cosines[i], kind="stable")[:5]))
    for share in [1.0, 0.7, 0.6, 0.5, 0.4]:

        def hybrid(i, r, share=share):
            if not r["hits"]:
                return []
            c = cosines[i]
            lo, span = c.min(), max(c.max() - c.min(), 1e-9)
            best = max(s for _, s in r["hits"])
            scored = [(share * s / best + (1 - share) * (c[index[n]] - lo) / span, index[n]) for n, s in r["hits"]]
            scored.sort(key=lambda x: (-x[0], x[1]))
            return [d for _, d in scored[:5]]

        report(f"{dump['ranker']} x WordLlama, lexical share {share}", hybrid)

    # How many first-place misses are near-duplicates of a relevant tool (the pooled catalogue
    # holds several tools for the same job): name and description words, Jaccard >= 0.5.
    def words(tool):
        text = split_name(tool["name"]) + " " + (tool.get("description") or "")
        return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}

    vocab = [words(t) for t in data["tools"]]
    misses = near = 0
    for r in rows:
        relevant = {index[n] for n in r["relevant"]}
        top = index[r["hits"][0][0]] if r["hits"] else None
        if top in relevant:
            continue
        misses += 1
        if top is not None and max(len(vocab[top] & vocab[x]) / max(len(vocab[top] | vocab[x]), 1) for x in relevant) >= 0.5:
            near += 1
    print(f"\n{dump['ranker']}: {misses} requests with a wrong first result; {near} of them a near-duplicate of a relevant tool")


if __name__ == "__main__":
    main()
