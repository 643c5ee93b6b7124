#!/usr/bin/env bash
# `make demo-lm`: turn the fortunes collections into byte tokens, train
# jobs/demo_lm.cfg on 4 ranks (2 pipeline stages + 2 parameter-server
# shards), stop it halfway as a time limit would, resume it from its last
# checkpoint, score the held-out text against a unigram model of bytes,
# and let the model write.
set -eu
cd "$(dirname "$0")/.."
root=$PWD
cairn=$root/build/cairn
work=$root/build/demo_lm
corpus=/usr/share/games/fortunes
mkdir -p "$work"
cd "$work"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
job=$root/jobs/demo_lm.cfg

# the collections (not the index files, not the ASCII art), the general
# "fortunes" one last: the held-out end of the text
files=$(find "$corpus" -maxdepth 1 -type f ! -name '*.*' ! -name fortunes ! -name '*art*' | sort)
echo "== data: $(echo "$files" | wc -l) fortune collections and 'fortunes' (held out at the end), one token per byte"
"$cairn" data text --out fortunes.h5 --context 64 $files "$corpus/fortunes"
rm -rf runs/demo_lm
echo "== the plan"
"$cairn" print "$job" | sed -n '1,9p'
echo "== train 5 of 10 epochs, then stop (as a time limit would)"
mpirun -np 4 "$cairn" run "$job" --set stop.max_epochs=5
echo "== rerun the same command: it resumes from the epoch-5 checkpoint"
mpirun -np 4 "$cairn" run "$job"
first=$(/usr/bin/python3 -c 'import h5py; n = len(h5py.File("fortunes.h5", "r")["labels"]); print(n - int(0.02 * n))')
echo "== cairn eval on the held-out windows $first: (the log's last figures), against a unigram model"
"$cairn" eval runs/demo_lm/model.h5 fortunes.h5 --rows "$first:"
/usr/bin/python3 - "$first" <<'PY'
import sys, h5py, numpy as np
y = h5py.File("fortunes.h5", "r")["labels"][()]
first = int(sys.argv[1])
p = np.bincount(y[:first].ravel(), minlength=256) / y[:first].size  # byte frequencies of the training text
h = y[first:].ravel()
bits = -np.log2(np.maximum(p[h], 1e-12)).mean()
print("unigram model of the training bytes on the held-out text: %.3f bits per byte" % bits)
PY
echo "== cairn generate (temperature 0.8, the 20 likeliest bytes, seed 1)"
"$cairn" generate runs/demo_lm/model.h5 --prompt "The " --tokens 300 --temperature 0.8 --top-k 20 --seed 1
