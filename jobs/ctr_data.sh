#!/usr/bin/env bash
# ctr_data.sh OUT [NP]: the ctr demo's data file (262144 samples: 13 dense
# features, a user id from 1,000,000 and a bag of up to 4 item ids from
# 100,000, both Zipf 1.1; 2 classes from a teacher that sees the features
# and each id's latent vector), written by NP ranks (default 2).
set -eu
cairn=${CAIRN:-$(cd "$(dirname "$0")/.." && pwd)/build/cairn}
[ -x "$cairn" ] || cairn=cairn # installed (share/cairn/jobs): the cairn on PATH
exec mpirun --oversubscribe -np "${2:-2}" "$cairn" data synth --out "$1" --samples 262144 --features 13 \
    --classes 2 --hidden 8 --seed 21 --table user:1000000:1 --table item:100000:4
