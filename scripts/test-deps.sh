#!/usr/bin/env bash
# Installs the real peers the integration tests drive: an unprivileged user for the sandbox
# tests, a Chromium-family browser (web chat page), tmux (the REPL on a real terminal), jq (hook scripts),
# playwright-core (to drive it), the MCP reference servers, @copilotkit/aimock (an independent
# Responses API double), the codex app-server and the Telegram Bot API emulator
# (telegram-test-api) from npm, and a Python virtualenv with the
# official `openai` SDK, the OpenAI Agents SDK, schemathesis (API conformance) and the BFCL data
# (bfcl-eval, pinned). What the
# machine lacks to install them (node and npm, python3 with venv, the browser, tmux, PostgreSQL) comes from
# apt. Idempotent, and quick when everything is there. Everything but system packages lives under
# target/test-deps (so `cargo clean` resets it); tests find it through `tackle_testkit::peers`.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$PWD/target/test-deps"
mkdir -p "$deps"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=
apt_install() {
  if ! command -v apt-get >/dev/null; then
    echo "test-deps: $* missing and there is no apt-get; install them with your package manager" >&2
    exit 2
  fi
  echo "test-deps: installing $* (apt)"
  if [ -z "$apt_updated" ]; then
    as_root apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Node and npm (npm ships with NodeSource's nodejs; Debian packages it apart).
if ! command -v node >/dev/null; then
  apt_install nodejs npm
elif ! command -v npm >/dev/null; then
  apt_install npm
fi

# Python with a working venv (Debian's python3 needs python3-venv for ensurepip).
if ! command -v python3 >/dev/null; then
  apt_install python3 python3-venv
fi
venv_works() {
  local probe
  probe="$(mktemp -d)"
  python3 -m venv "$probe/v" >/dev/null 2>&1
  local ok=$?
  rm -rf "$probe"
  return $ok
}
if [ ! -x "$deps/venv/bin/python" ] && ! venv_works; then
  apt_install python3-venv
fi

# A browser, wherever it is: TACKLE_CHROMIUM, PATH, the usual install paths; apt otherwise.
find_browser() {
  if [ -n "${TACKLE_CHROMIUM:-}" ] && [ -x "$TACKLE_CHROMIUM" ]; then
    echo "$TACKLE_CHROMIUM"
    return
  fi
  local name path
  for name in chromium chromium-browser google-chrome google-chrome-stable chrome; do
    if path="$(command -v "$name")"; then
      echo "$path"
      return
    fi
  done
  for path in /usr/lib/chromium/chromium /usr/lib/chromium-browser/chromium-browser \
    /snap/bin/chromium /opt/google/chrome/chrome; do
    if [ -x "$path" ]; then
      echo "$path"
      return
    fi
  done
  return 1
}
if ! browser="$(find_browser)"; then
  apt_install chromium
  browser="$(find_browser)" || { echo "test-deps: no browser after installing chromium" >&2; exit 1; }
fi
# The tests look here first (tackle_testkit::peers::chromium).
ln -sfn "$browser" "$deps/chromium"

if ! command -v tmux >/dev/null; then
  apt_install tmux
fi

# jq: hook scripts written the way Claude Code's documentation shows read their input with it
# (the script-hook tests run such scripts unchanged).
if ! command -v jq >/dev/null; then
  apt_install jq
fi

# PostgreSQL server binaries (Debian's postgresql package): scripts/postgres.sh runs a throwaway
# cluster from them for the store tests on PostgreSQL and the two-instance server tests.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  apt_install postgresql
fi

# An unprivileged user: the sandbox tests (crates/tackle-cli/tests/security.rs) run Tackle as it
# too, since a sandbox must hold for root and for ordinary users alike.
if [ "$(id -u)" = 0 ] && ! id tackle-test >/dev/null 2>&1; then
  echo "test-deps: creating the unprivileged user tackle-test (sandbox tests)"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin tackle-test
fi
for tool in setpriv unshare ps python3; do
  command -v "$tool" >/dev/null || { echo "the sandbox tests need $tool (util-linux, procps, python3)" >&2; exit 1; }
done

# npm packages, pinned by the lock file in scripts/test-deps/.
if [ ! -f "$deps/node/.installed" ] || ! cmp -s scripts/test-deps/package-lock.json "$deps/node/.installed"; then
  echo "test-deps: installing npm test peers (playwright-core, MCP reference servers, the MCP TypeScript SDK and Inspector CLI, aimock, codex, telegram-test-api, the AI SDK)"
  mkdir -p "$deps/node"
  cp scripts/test-deps/package.json scripts/test-deps/package-lock.json "$deps/node/"
  (cd "$deps/node" && npm ci --no-audit --no-fund --loglevel=error)
  cp scripts/test-deps/package-lock.json "$deps/node/.installed"
fi

# Python packages, pinned by requirements.txt, in a virtualenv.
if [ ! -f "$deps/venv/.installed" ] || ! cmp -s scripts/test-deps/requirements.txt "$deps/venv/.installed" \
  || ! "$deps/venv/bin/python" -c "import openai, agents, schemathesis, mcp" 2>/dev/null; then
  echo "test-deps: installing the Python test peers into $deps/venv"
  [ -x "$deps/venv/bin/python" ] || python3 -m venv "$deps/venv"
  "$deps/venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/test-deps/requirements.txt
  cp scripts/test-deps/requirements.txt "$deps/venv/.installed"
fi

# BFCL v4 (Apache-2.0): the tool-search tests read its real functions and requests from the
# wheel (bench/tool-search/bfcl.py). Pinned, and without its dependencies: it is an evaluation
# harness (torch, vLLM, provider SDKs) of which only the data files are read.
bfcl_version=2026.3.23
if ! "$deps/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('bfcl-eval') != '$bfcl_version')" 2>/dev/null; then
  echo "test-deps: installing bfcl-eval $bfcl_version (data only, --no-deps)"
  "$deps/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "bfcl-eval==$bfcl_version"
fi
