#!/usr/bin/env bash
# Peak resident memory of `tackle serve` while CALLS sessions (default 8) each run one shell call
# that prints SIZE MiB (`head -c` of `yes`) at the same time, against the fake model: what
# concurrent big outputs cost a server on their way to the store. Compare a size with size 0.
# Usage: scripts/bench/spool_rss_serve.sh [PROFILE] [SIZE_MIB...]   (PROFILE: debug (default),
# release or dist; builds the CLI and the fake model with it first; sizes default to 0 16 64;
# CALLS=n in the environment changes the number of concurrent calls)
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${1:-debug}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0 16 64)
calls="${CALLS:-8}"
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
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
token=bench-token-0123456789abcdef
for size in "${sizes[@]}"; do
  # Stateless: every session's first request gets the call, its second (one tool result) the answer.
  cat > "$work/script-$size.json" <<JSON
{"turns": [
  {"tool_calls": [{"name": "shell", "arguments": "{\"command\": \"yes 'tackle spool line' | head -c ${size}M; echo\"}"}]},
  {"text": "done"}
]}
JSON
done
for size in "${sizes[@]}"; do
  rm -rf "$work/home" "$work/workspace" "$work/url" "$work/serve.out"
  mkdir -p "$work/home" "$work/workspace"
  ./target/$dir/tackle-fake-model --stateless --script "$work/script-$size.json" --addr 127.0.0.1:0 \
    > "$work/url" &
  fake_pid=$!
  for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
  env -i PATH="$PATH" HOME="$work/home" TACKLE_HOME="$work/home/data" \
    TACKLE_PROVIDER=openai TACKLE_MODEL=fake OPENAI_API_KEY=sk-bench \
    OPENAI_BASE_URL="$(cat "$work/url")/v1" TACKLE_SERVER_TOKENS="bench:$token" \
    TACKLE_HOOKS='[{"tools": "shell", "action": "log"}]' \
    TACKLE_BUILTINS_SHELL_TIMEOUT_SECS=600 TACKLE_TOOLS_TIMEOUT_SECS=600 \
    /usr/bin/time -v -o "$work/time.txt" ./target/$dir/tackle serve --bind 127.0.0.1:0 \
    --workspace "$work/workspace" > "$work/serve.out" 2> "$work/serve.err" &
  serve_pid=$!
  for _ in $(seq 600); do grep -q "tackle serving on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
  base=$(sed -n 's/^tackle serving on //p' "$work/serve.out" | head -1)
  [ -n "$base" ] || { cat "$work/serve.err"; exit 1; }
  python3 - "$base" "$token" "$calls" <<'PY'
import json, sys, threading, urllib.request
base, token, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)
sessions = [post("/v1/sessions", {})["id"] for _ in range(calls)]
answers = [None] * calls
def run(i):
    answers[i] = post(f"/v1/sessions/{sessions[i]}/messages",
                      {"message": "print it", "stream": False, "maxSteps": 3})
threads = [threading.Thread(target=run, args=(i,)) for i in range(calls)]
for t in threads: t.start()
for t in threads: t.join()
bad = [a for a in answers if not a or a.get("text") != "done"]
if bad:
    a = dict(bad[0]); events = a.pop("events", [])
    sys.exit(f"unexpected turn: {a!r}"[:600] + "\n" + "\n".join(json.dumps(e)[:300] for e in events[-6:]))
PY
  # SIGTERM to tackle itself (the child of /usr/bin/time), which then reports the peak.
  kill -TERM "$(pgrep -P "$serve_pid")"
  wait "$serve_pid" || true
  serve_pid=
  kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null || true; fake_pid=
  rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time.txt")
  echo "$calls concurrent calls of ${size} MiB: peak RSS of tackle serve $((rss_kb / 1024)) MiB ($rss_kb KiB)"
done
