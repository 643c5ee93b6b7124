#!/usr/bin/env bash
# `make demo`: train jobs/demo.cfg on 4 ranks (2 pipeline stages + 2
# parameter-server shards), stop it halfway as a crash or a time limit
# would, resume it from its last checkpoint, show the held-out accuracy
# of the model it saved, score it again with cairn eval, and plot the run.
set -eu
cd "$(dirname "$0")/.."
root=$PWD
cairn=$root/build/cairn
work=$root/build/demo
mkdir -p "$work"
cd "$work"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
job=$root/jobs/demo.cfg

echo "== data: 32768 samples, 32 features, 8 classes (2 ranks write it in parallel)"
CAIRN=$cairn "$root/jobs/demo_data.sh" demo.h5 2
rm -rf runs/demo
echo "== the plan"
"$cairn" print "$job"
echo "== train 3 of 6 epochs, then stop (as a time limit would)"
mpirun -np 4 "$cairn" run "$job" --set stop.max_epochs=3
echo "== rerun the same command: it resumes from the epoch-3 checkpoint"
mpirun -np 4 "$cairn" run "$job"
echo "== checkpoints"
"$cairn" ckpt ls runs/demo/ckpt
/usr/bin/python3 - runs/demo/model.h5 <<'PY'
import h5py, sys
m = h5py.File(sys.argv[1], "r")
print("== model.h5: %d layers, inputs %d, loss %s"
      % (m.attrs["layers"], m.attrs["inputs"], m.attrs["loss"].decode()))
PY
acc=$(/usr/bin/python3 -c '
import json
rows = [json.loads(l) for l in open("runs/demo/metrics.jsonl")]
print([r for r in rows if "accuracy" in r][-1]["accuracy"])')
echo "final held-out accuracy: $acc (chance: 0.125)"
first=$(/usr/bin/python3 -c 'import h5py; n = len(h5py.File("demo.h5", "r")["labels"]); print(n - int(0.2 * n))')
echo "== cairn eval on the held-out rows $first: (the same figures as the log's last epoch)"
"$cairn" eval runs/demo/model.h5 demo.h5 --rows "$first:"
echo "== cairn plot"
"$cairn" plot runs/demo -o runs/demo/demo.png
