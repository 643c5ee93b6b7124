#!/usr/bin/env bash
# Checkpoint throughput of the largest embedding state: ckpt.sh with
# BENCH_STATE=table (a 10,000,000 x 16 table and Adam's moments, 1.92 GB).
set -eu
BENCH_STATE=table exec "$(dirname "$0")/ckpt.sh"
