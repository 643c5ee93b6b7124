#!/bin/bash
# The golden files of the storage scenario (regression/scenarios/storage.sh):
# in OUT, with the cairn binary CAIRN, run each job here on its data and print
# the SHA-256 of what it wrote: every checkpoint, its model.h5, and the
# node-local parts of the mlp job (a run stopped after its node-local save of
# epoch 1).  sums holds what commit 51297a0 wrote, before the storage layer
# was restructured: the scenario asserts that cairn still writes those bytes
# (to see a difference, run this with both binaries and compare the files).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cairn=${CAIRN:?CAIRN=path/to/cairn}
out=${1:?usage: make.sh OUT}
mpi=(mpirun --oversubscribe -np)
mkdir -p "$out" && cd "$out"
"$cairn" data synth --out mlp.h5 --samples 2048 --features 32 --classes 8 --hidden 4 --seed 11 >/dev/null
"${mpi[@]}" 2 "$cairn" data synth --out ctr.h5 --samples 2048 --features 13 --classes 2 --hidden 8 --seed 21 \
    --table user:1000:1 --table item:100:4 >/dev/null
seq 1 4000 >corpus.txt
"$cairn" data text --out lm.h5 --context 8 corpus.txt >/dev/null
run() { # RUN_DIR JOB NP [ARGS...]
    local dir=$1 job=$2 np=$3
    shift 3
    "${mpi[@]}" "$np" "$cairn" run "$here/$job.cfg" --run-dir "$dir" "$@" >"$dir.log" 2>&1
}
run mlp mlp 4
run ctr ctr 3
run lm lm 3
CAIRN_FAULT=kill:local_index:0:1 run local mlp 4 --set "checkpoint.local=\"$out/nodes\"" || true
sha256sum {mlp,ctr,lm}/ckpt/ckpt-*.h5 {mlp,ctr,lm}/model.h5
cd nodes/cairn-*/
sha256sum ckpt-e000001/rank*
