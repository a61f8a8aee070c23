#!/usr/bin/env bash
# tool_search on real data: the BFCL v4 single-turn catalogue (1,233 functions pooled into one
# MCP server's tools) and its 2,135 user requests, from the pinned `bfcl-eval` wheel. Prints
# recall@1, recall@5 and MRR, search latency p50/p99, index build time and heap size for the
# shipped ranker (bm25f) and the plain lexical one (bm25); `--tune` reruns the weight search on
# the tuning half and reports the held-out half. The tables are quoted in BENCHMARKS.md.
# `--probe` measures whether a better static embedding (WordLlama, from its wheel) would reach the
# targets on top of the shipped ranker (embedding_probe.py).
# Usage: bench/tool-search/run.sh [--tune | --probe]. Installs into target/bench-deps (BENCH_DEPS).
set -euo pipefail
cd "$(dirname "$0")/../.."
deps="${BENCH_DEPS:-$PWD/target/bench-deps}"
venv="$deps/bfcl-venv"
version=2026.3.23
mkdir -p "$deps"
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('bfcl-eval') != '$version')" 2>/dev/null; then
  echo "==> bfcl-eval $version (data only, --no-deps)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "bfcl-eval==$version"
fi
"$venv/bin/python" bench/tool-search/bfcl.py export "$deps/bfcl.json"
if [ "${1:-}" = "--probe" ]; then
  probe="$deps/probe-venv"
  if ! "$probe/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('wordllama') != '0.4.0.post1')" 2>/dev/null; then
    echo "==> wordllama 0.4.0.post1 (its wheel carries the weights)" >&2
    python3 -m venv "$probe"
    "$probe/bin/pip" install --quiet --disable-pip-version-check "wordllama==0.4.0.post1"
  fi
  cargo run --release --locked -q -p tackle-mcp --example tool_search_bfcl -- "$deps/bfcl.json" --dump "$deps/bm25f-top100.json"
  exec "$probe/bin/python" bench/tool-search/embedding_probe.py "$deps/bfcl.json" "$deps/bm25f-top100.json"
fi
cargo run --release --locked -q -p tackle-mcp --example tool_search_bfcl -- "$deps/bfcl.json" "$@"
