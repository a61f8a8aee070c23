# Sourced by the `tackle` memory benchmarks and scripts/link_order.sh after `steps` is set: a
# temporary directory `$work` (removed on exit, with the fake and any server started by
# `start_serve`) with a workspace of `steps` + 1 small notes, the fake model playing
# `bench/peers/scripts/read_loop.json` in loop mode, and the provider variables pointing at it.
# The caller runs `tackle run ... --model "fake-steps-$steps"`, or `start_serve` then `agent_turn`.
work=$(mktemp -d)
fake_pid=
serve_pid=
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/workspace/notes"
for k in $(seq 0 "$steps"); do echo "note $k" > "$work/workspace/notes/$k.txt"; done
./target/release/tackle-fake-model --script bench/peers/scripts/read_loop.json --addr 127.0.0.1:0 > "$work/url" &
fake_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
export OPENAI_API_KEY=sk-bench OPENAI_BASE_URL="$(cat "$work/url")/v1" TACKLE_PROVIDER=openai
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# start_serve HOME CMD...: runs `CMD serve` on `$port` over the workspace in the background
# (`$serve_pid`); CMD is a `tackle` binary, or one behind a wrapper such as valgrind.
start_serve() {
  local home=$1; shift
  TACKLE_HOME="$home" "$@" serve --bind "127.0.0.1:$port" --workspace "$work/workspace" \
    --model "fake-steps-$steps" --max-steps $((steps + 1)) > /dev/null 2>&1 &
  serve_pid=$!
}

# agent_turn: waits for the server's `/healthz`, then sends one streamed `tackle-agent` turn to
# `/v1/chat/completions` and fails unless its stream finishes.
agent_turn() {
  for _ in $(seq 1200); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.05; done
  curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'content-type: application/json' \
    -d '{"model": "tackle-agent", "stream": true, "messages": [{"role": "user", "content": "read the notes"}]}' \
    | grep -q '^data: \[DONE\]' || { echo "the server's agent turn did not finish" >&2; return 1; }
}

# stop_serve: stops the server with SIGTERM (a graceful shutdown) and waits for it.
stop_serve() {
  kill -TERM "$serve_pid"
  wait "$serve_pid" || true
  serve_pid=
}
