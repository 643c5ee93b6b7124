#!/usr/bin/env bash
# The cost of bitwise independence of pipeline.ranks_per_stage: kblock.c.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p build/bench
blas=/usr/lib/x86_64-linux-gnu/openblas-pthread
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -o build/bench/kblock regression/bench/kblock.c \
    -I/usr/include/x86_64-linux-gnu/openblas-pthread -L$blas -Wl,-rpath,$blas -lopenblas
OPENBLAS_NUM_THREADS=1 taskset -c 0 build/bench/kblock "$@"
