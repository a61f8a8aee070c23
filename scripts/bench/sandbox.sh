#!/usr/bin/env bash
# What the sandbox adds to starting a command: mean wall time of `true` run 200 times directly,
# under Landlock + seccomp, and under Linux namespaces (network off), with the release
# `tackle-sandbox-helper`. Usage: scripts/bench/sandbox.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-200}"
cargo build --release --locked -q -p tackle-sandbox
helper="$PWD/target/release/tackle-sandbox-helper"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws" "$work/tmp"
policy="{\"mode\":\"workspace-write\",\"network\":false,\"workspace\":\"$work/ws\",\"writable\":[],\"hidden\":[],\"cwd\":\"$work/ws\",\"tmp\":\"$work/tmp\"}"
mean_ms() { # command...
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do "$@" >/dev/null; done
  end=$(date +%s%N)
  echo "scale=2; ($end - $start) / $runs / 1000000" | bc
}
echo "unsandboxed  $(mean_ms /bin/true) ms"
echo "landlock     $(mean_ms env -i PATH=/usr/bin:/bin "$helper" __tackle_sandbox landlock "$policy" -- /bin/true) ms"
echo "namespaces   $(mean_ms env -i PATH=/usr/bin:/bin "$helper" __tackle_sandbox ns "$policy" -- /bin/true) ms"
