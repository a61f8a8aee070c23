#!/usr/bin/env bash
# Peak RSS of `tackle run` binaries measured alternately, for comparing two builds of the CLI
# (e.g. `dist` with and without a change) in one sitting.
# Usage: scripts/bench/rss_pair.sh ROUNDS STEPS BIN...   (each BIN a `tackle` executable; their
# file names must differ). Each round runs every BIN twice on its own home (the first run creates
# the store; the second is measured, as a user's runs are) for STEPS `read_file` steps against the
# fake model in loop mode, and prints: name, peak RSS KiB, voluntary and involuntary context
# switches, minor faults. Every BIN is read into the page cache first, so fault-around maps the
# same neighbourhood for each.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=$1; steps=$2; shift 2
cargo build --release --locked -q -p tackle-testkit
work=$(mktemp -d)
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/workspace/notes"
for k in $(seq 0 "$steps"); do echo "note $k" > "$work/workspace/notes/$k.txt"; done
./target/release/tackle-fake-model --script bench/peers/scripts/read_loop.json --addr 127.0.0.1:0 > "$work/url" &
fake_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
export OPENAI_API_KEY=sk-bench OPENAI_BASE_URL="$(cat "$work/url")/v1" TACKLE_PROVIDER=openai
for bin in "$@"; do cat "$bin" > /dev/null; done
echo "binary peak_rss_kib voluntary_csw involuntary_csw minor_faults"
for _ in $(seq "$rounds"); do
  for bin in "$@"; do
    home="$work/home-$(basename "$bin")"
    for _pass in 1 2; do
      TACKLE_HOME="$home" /usr/bin/time -f "%M %w %c %R" -o "$work/time" "$bin" run "read the notes" --yes --json \
        --workspace "$work/workspace" --model "fake-steps-$steps" --max-steps $((steps + 1)) > "$work/out.json" 2>/dev/null
    done
    echo "$(basename "$bin") $(cat "$work/time")"
  done
done
