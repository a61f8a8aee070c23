#!/usr/bin/env bash
# Peak resident memory of one `tackle run` (three steps with tool calls) against the scripted
# fake model. Usage: scripts/bench/rss.sh   (builds release binaries first)
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p tackle-cli -p tackle-testkit
work=$(mktemp -d)
trap 'kill "$fake_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/script.json" <<'JSON'
{"mode": "stateless", "turns": [
  {"text": "Listing.", "tool_calls": [{"name": "list_files", "arguments": "{\"path\": \".\"}"}],
   "usage": {"input_tokens": 3000, "output_tokens": 20}},
  {"tool_calls": [{"name": "read_file", "arguments": "{\"path\": \"Cargo.toml\"}"},
                  {"name": "shell", "arguments": "{\"command\": \"ls | wc -l\"}"}],
   "usage": {"input_tokens": 4000, "output_tokens": 30, "cache_read_tokens": 2900}},
  {"text": "Done: the workspace has a Cargo.toml.", "usage": {"input_tokens": 5000, "output_tokens": 12, "cache_read_tokens": 3900}}
]}
JSON
./target/release/tackle-fake-model --script "$work/script.json" --addr 127.0.0.1:0 > "$work/url" &
fake_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(cat "$work/url")
export TACKLE_HOME="$work/home" OPENAI_API_KEY=sk-bench OPENAI_BASE_URL="$url/v1" TACKLE_PROVIDER=openai
/usr/bin/time -v ./target/release/tackle run "inspect the workspace" --yes --json --workspace . \
  > "$work/out.json" 2> "$work/time.txt"
steps=$(python3 -c "import json,sys; print(json.load(open('$work/out.json'))['steps'])")
rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time.txt")
echo "steps: $steps"
echo "peak RSS of tackle run: $((rss_kb / 1024)) MB ($rss_kb KB)"
