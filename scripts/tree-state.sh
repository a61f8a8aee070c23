#!/usr/bin/env bash
# A fingerprint of the working tree as git sees it: the status of every path (untracked files
# included, ignored ones not) and the contents of every changed or untracked file. scripts/test.sh
# takes one before the tests and one after: the suite must leave the tree as it found it (tests
# write under target/ or a temporary directory, never into the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git checkout"; exit 0; }
git status --porcelain=v1 -uall
git diff HEAD --binary | sha256sum
git ls-files -o --exclude-standard -z | xargs -0 -r sha256sum
