#!/usr/bin/env bash
# The context cost contrast in one command, from a clean clone: the reference dynamic-tools
# scenario of `tackle bench cache` (OpenAI format, simulated prompt cache) run by Tackle, then the
# same scenario through the Vercel AI SDK with `activeTools` and with every tool at every step.
# Prints the table BENCHMARKS.md quotes. Options: see bench/cache/compare.py --help.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench/install.sh tackle node
exec python3 bench/cache/compare.py "$@"
