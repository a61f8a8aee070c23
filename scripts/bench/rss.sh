#!/usr/bin/env bash
# Peak resident memory of one `tackle run` of 50 tool steps (`read_file` of a different small file
# each step, then an answer) against the fake model in loop mode.
# Usage: scripts/bench/rss.sh [STEPS]   (builds the CLI as shipped, profile dist, and the fake
# model first; STEPS defaults to 50). Also prints how many functions of the link order
# (crates/tackle-cli/link-order.txt) this build still has.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps="${1:-50}"
cargo build --release --locked -q -p tackle-testkit
cargo build --profile dist --locked -q -p tackle-cli --bin tackle
# shellcheck source=read_loop.sh
. scripts/bench/read_loop.sh
export TACKLE_HOME="$work/home"
run() {
  /usr/bin/time -v ./target/dist/tackle run "read the notes" --yes --json --workspace "$work/workspace" \
    --model "fake-steps-$steps" --max-steps $((steps + 1)) > "$work/out.json" 2> "$work/time.txt"
}
run # the first run creates the store; measure a later one, as a user's runs are
run
python3 - "$work/out.json" "$steps" <<'PY'
import json, sys
out, steps = json.load(open(sys.argv[1])), int(sys.argv[2])
if out["steps"] != steps + 1 or out["text"] != f"done after {steps} tool calls":
    sys.exit(f"unexpected run: {out['steps']} steps, {out['text']!r}")
PY
rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time.txt")
echo "steps: $((steps + 1)) model calls ($steps read_file calls)"
echo "peak RSS of tackle run: $((rss_kb / 1024)) MiB ($rss_kb KiB)"
# How much of crates/tackle-cli/link-order.txt this build still has (build.rs): a list gone stale
# (renamed code, a new dependency or toolchain) costs memory; regenerate it with
# scripts/link_order.sh when this falls.
listed=$(grep -v '^#' crates/tackle-cli/link-order.txt | sort -u)
found=$(nm --defined-only ./target/dist/tackle | awk '{print $3}' | sort -u | comm -12 - <(echo "$listed") | wc -l)
echo "link order: $found of $(echo "$listed" | wc -l) listed functions are in this build"
