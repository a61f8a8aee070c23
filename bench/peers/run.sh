#!/usr/bin/env bash
# The peer benchmark in one command, from a clean clone: installs and builds what it runs
# (bench/install.sh), then drives it (bench/peers/driver.py; its --help lists the options, e.g.
# --ns 5,20 --rounds 3 for a quick run). Prints the tables BENCHMARKS.md quotes.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench/install.sh
exec python3 bench/peers/driver.py "$@"
