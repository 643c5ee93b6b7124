#!/usr/bin/env bash
# The node-local checkpoint tier against raw local I/O, and its flush to the
# shared directory against raw shared I/O: ckpt.sh with BENCH_TIER=local
# (BENCH_NODES=3 for partner copies on the test cluster, as root).
set -eu
BENCH_TIER=local exec "$(dirname "$0")/ckpt.sh"
