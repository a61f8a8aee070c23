#!/usr/bin/env bash
# The whole Tackle test suite: formatting, lints, every test. Installs what the tests need
# (idempotent, quick when already installed). CI runs exactly this script (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)" >&2; exit 2; }
for component in rustfmt clippy; do
  rustup component list --installed 2>/dev/null | grep -q "^$component" || rustup component add "$component"
done
command -v cargo-nextest >/dev/null || cargo install --locked cargo-nextest

# Test peers (MCP reference servers, Python SDK, browser) are installed by scripts/test-deps.sh.
if [ -x scripts/test-deps.sh ]; then
  step "test dependencies"
  scripts/test-deps.sh
fi

# No incremental artifacts: this script builds the whole workspace once (CI from nothing), where
# incremental compilation only costs time and a third of the build's disk (4.6 of 13 GB, cold).
export CARGO_INCREMENTAL=0

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tackle-agent without its default features (builtins, mcp, sandbox)"
# The library an embedder gets with `default-features = false` must still build; a check only
# (its unit tests run by hand: `cargo test -p tackle-agent --no-default-features --lib`).
cargo check -p tackle-agent --no-default-features --locked

step "PostgreSQL test server"
# A throwaway cluster on a free port for the store suite on PostgreSQL and the two-instance server
# tests (each test creates its own database); stopped and removed when this script exits.
if [ -z "${TACKLE_TEST_DATABASE_URL:-}" ]; then
  pgdir="$(mktemp -d)"
  chmod 755 "$pgdir"
  trap 'scripts/postgres.sh stop "$pgdir/pg"; rmdir "$pgdir" 2>/dev/null || true' EXIT
  TACKLE_TEST_DATABASE_URL="$(scripts/postgres.sh start "$pgdir/pg")"
  export TACKLE_TEST_DATABASE_URL
fi
echo "$TACKLE_TEST_DATABASE_URL"

step "tests"
tree_before="$(scripts/tree-state.sh)"
# Real peers (browser, Python SDK, MCP servers, PostgreSQL) are required here, never silently skipped.
export TACKLE_REQUIRE_PEERS=1
cargo nextest run --workspace --locked --no-fail-fast

step "doc tests"
cargo test --workspace --doc --locked

step "the tree is as the suite found it"
tree_after="$(scripts/tree-state.sh)"
if [ "$tree_before" != "$tree_after" ]; then
  echo "the suite changed the working tree (tests must write under target/ or a temp dir):" >&2
  diff <(echo "$tree_before") <(echo "$tree_after") >&2 || true
  exit 1
fi

echo
echo "all checks passed"
