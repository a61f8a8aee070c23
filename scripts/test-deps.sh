#!/usr/bin/env bash
# Installs the real peers the integration tests drive: Debian's Chromium (web chat page) and
# tmux (the REPL on a real terminal), playwright-core (to drive the browser), the official
# `openai` Python SDK (OpenAI-compatible endpoint), the MCP reference servers and the Telegram
# Bot API emulator (telegram-test-api) from npm. Idempotent, and quick when everything is there.
# Everything but Chromium lives under target/test-deps, so `cargo clean` resets it.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$PWD/target/test-deps"
mkdir -p "$deps"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromium >/dev/null; then
  echo "installing Debian chromium (browser tests)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi

if ! command -v tmux >/dev/null; then
  echo "installing Debian tmux (REPL tests)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq tmux >/dev/null
fi

# npm packages, pinned by the lock file in scripts/test-deps/.
if [ ! -f "$deps/node/.installed" ] || ! cmp -s scripts/test-deps/package-lock.json "$deps/node/.installed"; then
  echo "installing npm test peers (playwright-core, MCP reference servers, telegram-test-api)"
  mkdir -p "$deps/node"
  cp scripts/test-deps/package.json scripts/test-deps/package-lock.json "$deps/node/"
  (cd "$deps/node" && npm ci --no-audit --no-fund --loglevel=error)
  cp scripts/test-deps/package-lock.json "$deps/node/.installed"
fi

# Python: the official OpenAI SDK in a virtualenv.
if [ ! -x "$deps/venv/bin/python" ] || ! "$deps/venv/bin/python" -c "import openai" 2>/dev/null; then
  echo "installing the openai Python SDK into $deps/venv"
  python3 -m venv "$deps/venv"
  "$deps/venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/test-deps/requirements.txt
fi
