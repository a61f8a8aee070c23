#!/usr/bin/env bash
# Installs the real peers the integration tests drive: an unprivileged user for the sandbox
# tests, Debian's Chromium (web chat page) and tmux (the REPL on a real terminal), playwright-core
# (to drive it), the official `openai` Python SDK and the OpenAI Agents SDK (OpenAI-compatible
# endpoints), the MCP reference servers, @copilotkit/aimock (an independent Responses API double)
# and the codex app-server from npm. Idempotent, and quick when everything is there.
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

# An unprivileged user: the sandbox tests (crates/tackle-cli/tests/security.rs) run Tackle as it
# too, since a sandbox must hold for root and for ordinary users alike.
if [ "$(id -u)" = 0 ] && ! id tackle-test >/dev/null 2>&1; then
  echo "creating the unprivileged user tackle-test (sandbox tests)"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin tackle-test
fi
for tool in setpriv unshare ps python3; do
  command -v "$tool" >/dev/null || { echo "the sandbox tests need $tool (util-linux, procps, python3)" >&2; exit 1; }
done

# npm packages, pinned by the lock file in scripts/test-deps/.
if [ ! -f "$deps/node/.installed" ] || ! cmp -s scripts/test-deps/package-lock.json "$deps/node/.installed"; then
  echo "installing npm test peers (playwright-core, MCP reference servers, aimock, codex)"
  mkdir -p "$deps/node"
  cp scripts/test-deps/package.json scripts/test-deps/package-lock.json "$deps/node/"
  (cd "$deps/node" && npm ci --no-audit --no-fund --loglevel=error)
  cp scripts/test-deps/package-lock.json "$deps/node/.installed"
fi

# Python: the official OpenAI SDK and the OpenAI Agents SDK in a virtualenv, pinned by
# requirements.txt (reinstalled when it changes).
if [ ! -x "$deps/venv/bin/python" ] || ! cmp -s scripts/test-deps/requirements.txt "$deps/venv/.installed" \
  || ! "$deps/venv/bin/python" -c "import openai, agents" 2>/dev/null; then
  echo "installing the openai and openai-agents Python SDKs into $deps/venv"
  python3 -m venv "$deps/venv"
  "$deps/venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/test-deps/requirements.txt
  cp scripts/test-deps/requirements.txt "$deps/venv/.installed"
fi
