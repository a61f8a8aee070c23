#!/usr/bin/env bash
# Peak RSS of `tackle run` binaries measured alternately, for comparing two builds of the CLI
# (e.g. `dist` with and without a change) in one sitting.
# Usage: scripts/bench/rss_pair.sh ROUNDS STEPS BIN...   (each BIN a `tackle` executable; their
# file names must differ). Each round runs every BIN twice on its own home, kept across rounds
# (the second run is measured), for STEPS `read_file` steps against the fake model in loop mode,
# and prints: name, peak RSS KiB, voluntary and involuntary context switches, minor faults. The
# absolute peaks move by 1-2 MiB from one sitting to the next, and a single run can land 2-3 MiB
# below its binary's usual peak: compare binaries within one sitting, over several rounds. Every BIN is read into the page cache first, so fault-around maps the
# same neighbourhood for each.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=$1; steps=$2; shift 2
cargo build --release --locked -q -p tackle-testkit
# shellcheck source=read_loop.sh
. scripts/bench/read_loop.sh
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
