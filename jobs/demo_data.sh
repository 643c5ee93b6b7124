#!/usr/bin/env bash
# demo_data.sh OUT [NP]: the demo's data file (32768 samples, 32 features,
# 8 classes from a random teacher network), written by NP ranks (default 2)
# in parallel.  `make demo`, `make bench` and the regression suite use it;
# the file's bytes do not depend on NP.
set -eu
cairn=${CAIRN:-$(cd "$(dirname "$0")/.." && pwd)/build/cairn}
[ -x "$cairn" ] || cairn=cairn # installed (share/cairn/jobs): the cairn on PATH
# NP may exceed this machine's cores (the suite writes it on 3 ranks of 2)
exec mpirun --oversubscribe -np "${2:-2}" "$cairn" data synth --out "$1" --samples 32768 --features 32 \
    --classes 8 --hidden 4 --seed 11
