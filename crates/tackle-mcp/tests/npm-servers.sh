#!/usr/bin/env bash
# Installs the reference MCP servers used by the tackle-mcp integration tests into a cache dir.
# Idempotent: does nothing when both packages are already installed.
#
# Usage: crates/tackle-mcp/tests/npm-servers.sh [PREFIX]
#   PREFIX defaults to <repo>/target/mcp-servers (node_modules ends up under it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
prefix="${1:-$repo/target/mcp-servers}"

packages=(@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem)

installed() {
  for p in "${packages[@]}"; do
    [ -f "$prefix/node_modules/$p/package.json" ] || return 1
  done
}

if installed; then
  echo "npm-servers: already installed in $prefix/node_modules"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "npm-servers: npm not found on PATH" >&2
  exit 127
fi

mkdir -p "$prefix"
# Tests run in parallel processes: one installs, the others wait and then find it installed.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$prefix/.install.lock"
  flock 9
  if installed; then
    echo "npm-servers: already installed in $prefix/node_modules"
    exit 0
  fi
fi
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${packages[@]}"
echo "npm-servers: installed into $prefix/node_modules"
