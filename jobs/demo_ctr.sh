#!/usr/bin/env bash
# `make demo-ctr`: train jobs/ctr.cfg on 4 ranks (2 pipeline stages + 2
# parameter-server shards holding two embedding tables) and show its
# held-out accuracy and AUC against the base rate.
set -eu
cd "$(dirname "$0")/.."
root=$PWD
cairn=$root/build/cairn
work=$root/build/demo-ctr
mkdir -p "$work"
cd "$work"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
job=$root/jobs/ctr.cfg

echo "== data: 262144 samples, 13 dense features, a user id (of 1,000,000) and up to 4 item ids (of 100,000)"
CAIRN=$cairn "$root/jobs/ctr_data.sh" ctr.h5 2
"$cairn" data balance ctr.h5 --ids user --rows 1000000 --shards 2 --batch 1024
rm -rf runs/ctr
echo "== train"
mpirun -np 4 "$cairn" run "$job"
/usr/bin/python3 - <<'PY'
import h5py, json
rows = [json.loads(l) for l in open("runs/ctr/metrics.jsonl")]
last = [r for r in rows if "accuracy" in r][-1]
y = h5py.File("ctr.h5", "r")["labels"][()]
held = y[len(y) - int(0.2 * len(y)):]
base = max(held.mean(), 1 - held.mean())
print("final held-out accuracy %.4f (base rate %.4f), log loss %.4f, AUC %.4f"
      % (last["accuracy"], base, last["loss"], last["auc"]))
PY
