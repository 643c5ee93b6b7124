#!/usr/bin/env bash
# cairn predict against PyTorch 1.13 inference of the same model (the
# demo's, trained one epoch), on the same data (the demo's 32768 rows) and
# cores, in one run; and against the BLAS limit: the rows/s one core's
# best sgemm rate allows for the model's multiply-adds (cairn bench sgemm),
# times the cores used.  Best of 3 runs each; torch on 2 cores as the
# better of 2 intra-op threads with 1 or 2 BLAS threads.  Not a test.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cairn=$root/build/cairn
work=$root/build/bench/predict
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$work" && cd "$work"
[ -f demo.h5 ] || CAIRN=$cairn "$root/jobs/demo_data.sh" demo.h5 2 >/dev/null
[ -f run/model.h5 ] || mpirun --oversubscribe -np 4 "$cairn" run "$root/jobs/demo.cfg" --run-dir run \
    --set stop.max_epochs=1 --force --resume=none >/dev/null
best() { # CMD...: the best rows/s of 3 runs of a command printing one JSON line
    local b=0 r i
    for i in 1 2 3; do
        r=$("$@" | /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.stdin.readlines()[-1])["rows_per_second"])')
        b=$(/usr/bin/python3 -c "print(max($b, $r))")
    done
    echo "$b"
}
batch=$(/usr/bin/python3 -c 'import h5py; print(h5py.File("run/model.h5", "r").attrs["eval_batch"])')
macs=$(/usr/bin/python3 -c 'import h5py; f = h5py.File("run/model.h5", "r"); print(sum(f["layers/%d/W" % i].shape[0] * f["layers/%d/W" % i].shape[1] for i in range(f.attrs["layers"])))')
gflops=$("$cairn" bench sgemm 1024 | sed -nE 's/.* ([0-9.]+) GFLOP\/s.*/\1/p')
c1=$(best "$cairn" predict run/model.h5 demo.h5 -o c1.h5 --json)
c2=$(best mpirun -np 2 "$cairn" predict run/model.h5 demo.h5 -o c2.h5 --json)
t1=$(best /usr/bin/python3 "$root/regression/bench/torch_predict.py" run/model.h5 demo.h5 t1.h5 1 "$batch")
t2=$(best /usr/bin/python3 "$root/regression/bench/torch_predict.py" run/model.h5 demo.h5 t2.h5 2 "$batch")
# torch's BLAS with its own 2 threads too (a user's default): the better counts
t2b=$(best env -u OPENBLAS_NUM_THREADS /usr/bin/python3 "$root/regression/bench/torch_predict.py" run/model.h5 demo.h5 t2.h5 2 "$batch")
t2=$(/usr/bin/python3 -c "print(max($t2, $t2b))")
# the torch path (README's snippet) gives cairn's outputs
/usr/bin/python3 -c '
import h5py, numpy as np
a, b = h5py.File("c1.h5", "r"), h5py.File("t1.h5", "r")
d = float(np.abs(a["outputs"][()] - b["outputs"][()]).max())
print("torch outputs against cairn predict: max difference %.2g (%s), classes %s" % (d,
      "within 1e-5" if d <= 1e-5 else "NOT within 1e-5", "equal" if (a["predicted"][()] == b["predicted"][()]).all() else "differ"))'
/usr/bin/python3 - "$macs" "$gflops" "$c1" "$c2" "$t1" "$t2" "$batch" <<'PY'
import sys
macs, gflops, c1, c2, t1, t2 = (float(v) for v in sys.argv[1:7])
lim = gflops * 1e9 / (2 * macs)
print("predict, the demo's model (%.2f M multiply-adds a row), 32768 rows, batch %s" % (macs / 1e6, sys.argv[7]))
print("  BLAS limit: %.0f rows/s per core (sgemm %.1f GFLOP/s)" % (lim, gflops))
print("%-34s %12s %10s %10s" % ("", "rows/s", "vs torch", "vs limit"))
for name, v, t, cores in (("cairn predict, 1 rank", c1, t1, 1), ("cairn predict, 2 ranks", c2, t2, 2),
                          ("torch 1.13, 1 thread", t1, t1, 1), ("torch 1.13, 2 threads", t2, t2, 2)):
    print("%-34s %12.0f %9.2fx %9.2f" % (name, v, v / t, v / (lim * cores)))
PY
