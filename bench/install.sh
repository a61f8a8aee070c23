#!/usr/bin/env bash
# Installs and builds what the benchmarks in bench/ run, from a clean clone:
#   tackle  Tackle's release binaries (CLI, fake model, the Rust peer workers)
#   rig     rig's worker (bench/peers/rig-worker: its own lock file and target directory, never
#           part of the workspace build)
#   node    the Vercel AI SDK (npm ci, lock file in bench/node)
#   python  LangChain and the OpenAI Agents SDK (pinned in bench/peers/python/requirements.txt)
# Usage: bench/install.sh [component...]   (all of them by default). Idempotent, and quick when
# everything is there. Everything lands under target/bench-deps (BENCH_DEPS to move it).
set -euo pipefail
cd "$(dirname "$0")/.."
deps="${BENCH_DEPS:-$PWD/target/bench-deps}"
mkdir -p "$deps"
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(tackle rig node python)

need() { command -v "$1" >/dev/null || { echo "$1 not found: the benchmarks need $2" >&2; exit 2; }; }

for component in "${components[@]}"; do
  case "$component" in
    tackle)
      need cargo "Rust (https://rustup.rs)"
      echo "==> Tackle release binaries, and the tackle CLI as shipped (profile dist)" >&2
      cargo build --release --locked -q -p tackle-testkit -p tackle-peer-workers
      cargo build --profile dist --locked -q -p tackle-cli --bin tackle
      ;;
    rig)
      need cargo "Rust (https://rustup.rs)"
      echo "==> rig worker (pinned rig 0.44)" >&2
      for profile in release dist; do
        CARGO_TARGET_DIR="$deps/rig-target" cargo build --profile "$profile" --locked -q \
          --manifest-path bench/peers/rig-worker/Cargo.toml
      done
      ;;
    node)
      need npm "Node 20 or later"
      if [ ! -f "$deps/node/.installed" ] || ! cmp -s bench/node/package-lock.json "$deps/node/.installed"; then
        echo "==> Vercel AI SDK (npm ci)" >&2
        mkdir -p "$deps/node"
        cp bench/node/package.json bench/node/package-lock.json "$deps/node/"
        (cd "$deps/node" && npm ci --no-audit --no-fund --loglevel=error)
        cp bench/node/package-lock.json "$deps/node/.installed"
      fi
      # The scripts run next to their node_modules (ES modules resolve packages from their path).
      cp bench/node/*.mjs "$deps/node/"
      ;;
    python)
      need python3 "Python 3.11 or later"
      req=bench/peers/python/requirements.txt
      if [ ! -x "$deps/venv/bin/python" ] || ! cmp -s "$req" "$deps/venv/.installed"; then
        echo "==> Python frameworks (pip, pinned)" >&2
        python3 -m venv "$deps/venv"
        "$deps/venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
        cp "$req" "$deps/venv/.installed"
      fi
      ;;
    *) echo "unknown component $component (tackle, rig, node, python)" >&2; exit 2 ;;
  esac
done
