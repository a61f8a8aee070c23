#!/usr/bin/env bash
# Peak RSS of `tackle run` (or `tackle serve`) binaries measured alternately, for comparing two
# builds of the CLI (e.g. `dist` with and without a change) in one sitting.
# Usage: scripts/bench/rss_pair.sh [serve] ROUNDS STEPS BIN...   (each BIN a `tackle` executable;
# their file names must differ). Every BIN is read into the page cache first, so fault-around
# maps the same neighbourhood for each. The absolute peaks move by 1-2 MiB from one sitting to
# the next, and a single run can land 2-3 MiB below its binary's usual peak: compare binaries
# within one sitting, over several rounds.
# - `tackle run`: each round runs every BIN twice on its own home, kept across rounds (the second
#   run is measured), for STEPS `read_file` steps against the fake model in loop mode, and prints:
#   name, peak RSS KiB, voluntary and involuntary context switches, minor faults.
# - `serve`: each round starts every BIN's server on a new home, waits for `/healthz`, sends one
#   streamed `tackle-agent` turn of STEPS steps to `/v1/chat/completions`, and prints: name, peak
#   RSS KiB (VmHWM) and RSS KiB after the turn (VmRSS), before stopping the server.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=run
[ "$1" = serve ] && { mode=serve; shift; }
rounds=$1; steps=$2; shift 2
cargo build --release --locked -q -p tackle-testkit
# shellcheck source=read_loop.sh
. scripts/bench/read_loop.sh
for bin in "$@"; do cat "$bin" > /dev/null; done

run_round() {
  for bin in "$@"; do
    home="$work/home-$(basename "$bin")"
    for _pass in 1 2; do
      TACKLE_HOME="$home" /usr/bin/time -f "%M %w %c %R" -o "$work/time" "$bin" run "read the notes" --yes --json \
        --workspace "$work/workspace" --model "fake-steps-$steps" --max-steps $((steps + 1)) > "$work/out.json" 2>/dev/null
    done
    echo "$(basename "$bin") $(cat "$work/time")"
  done
}

serve_round() {
  for bin in "$@"; do
    start_serve "$work/home-$round-$(basename "$bin")" "$bin"
    agent_turn
    echo "$(basename "$bin") $(awk '/^VmHWM/ {h = $2} /^VmRSS/ {r = $2} END {print h, r}' "/proc/$serve_pid/status")"
    stop_serve
  done
}

if [ "$mode" = serve ]; then
  echo "binary peak_rss_kib rss_after_turn_kib"
else
  echo "binary peak_rss_kib voluntary_csw involuntary_csw minor_faults"
fi
for round in $(seq "$rounds"); do
  "${mode}_round" "$@"
done
