#!/usr/bin/env bash
# Checkpoint throughput written and read from 3 nodes (ckpt.sh with
# BENCH_NODES=3): needs root for the test cluster's namespaces.
set -eu
if [ "$(id -u)" != 0 ]; then
    echo "skip: the 3-node test cluster needs root"
    exit 0
fi
BENCH_NODES=3 exec "$(dirname "$0")/ckpt.sh"
