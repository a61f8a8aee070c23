#!/usr/bin/env bash
# Peak resident memory of one `tackle run` whose single shell call prints SIZE MiB (`head -c`
# of `yes`), against the fake model: how much a big output costs in memory on its way to the store.
# Usage: scripts/bench/spool_rss.sh [PROFILE] [SIZE_MIB...]   (PROFILE: debug (default), release
# or dist; builds the CLI and the fake model with it first; sizes default to 0 1 16 64 1024)
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${1:-debug}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0 1 16 64 1024)
flag=(--profile "$profile")
[ "$profile" = debug ] && flag=()
dir="$profile"
# SKIP_BUILD=1: measure the binaries already in target/PROFILE (e.g. built by the test suite).
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build "${flag[@]}" --locked -q -p tackle-testkit --bin tackle-fake-model
  cargo build "${flag[@]}" --locked -q -p tackle-cli --bin tackle
fi
work=$(mktemp -d)
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/workspace"
for size in "${sizes[@]}"; do
  cat > "$work/script-$size.json" <<JSON
{"turns": [
  {"tool_calls": [{"name": "shell", "arguments": "{\"command\": \"yes 'tackle spool line' | head -c ${size}M; echo\"}"}]},
  {"text": "done"}
]}
JSON
done
export TACKLE_HOME="$work/home" OPENAI_API_KEY=sk-bench TACKLE_PROVIDER=openai
for size in "${sizes[@]}"; do
  rm -f "$work/url"
  ./target/$dir/tackle-fake-model --script "$work/script-$size.json" --addr 127.0.0.1:0 > "$work/url" &
  fake_pid=$!
  for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
  export OPENAI_BASE_URL="$(cat "$work/url")/v1"
  /usr/bin/time -v ./target/$dir/tackle run "print it" --yes --json --workspace "$work/workspace" \
    --model fake --max-steps 3 > "$work/out.json" 2> "$work/time.txt" || { cat "$work/time.txt"; exit 1; }
  kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null || true; fake_pid=
  python3 - "$work/out.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
if out["text"] != "done":
    sys.exit(f"unexpected run: {out!r}"[:400])
PY
  rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time.txt")
  echo "output ${size} MiB: peak RSS of tackle run $((rss_kb / 1024)) MiB ($rss_kb KiB)"
done
