# jobs/demo.cfg, as `make demo` runs it: it converges (held-out accuracy at
# least 0.85, chance being 0.125); model.h5 follows the documented layout
# and, evaluated with plain numpy, gives exactly the accuracy cairn logged
# last; stopped after epoch 3 and resumed, it ends with the same model bit
# for bit.  Also: `cairn data synth` writes the same file on any number of
# ranks.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=300
demo_data s1 1 one.h5
demo_data s3 3 demo.h5
same_bytes synth/same-on-1-and-3-ranks one.h5 demo.h5

mpi full 4 run "$JOBS/demo.cfg" --run-dir full
expect_rc full/exit full 0
acc=$(metric full/metrics.jsonl log accuracy | awk '{print $NF}')
py "import sys; sys.exit(0 if $acc >= 0.85 else 1)" && pass "convergence/accuracy-$acc-at-least-0.85" ||
    fail convergence/accuracy "held-out accuracy $acc < 0.85"
expect_grep download/logged full.out "download: [0-9.]+ MB of parameters onto trainer 0 in"
expect_grep download/set-up full.out "download: MPI_Gatherv from 2 shards to trainer 0, set up in"
expect_count download/once full/metrics.jsonl '"kind":"download"' 1

# model.h5: the documented layout, and numpy agrees with cairn's accuracy
py '
import h5py, numpy as np, sys
m, d = h5py.File("full/model.h5", "r"), h5py.File("demo.h5", "r")
assert m.attrs["loss"] == b"softmax_cross_entropy" and m.attrs["dtype"] == b"f32"
assert m.attrs["inputs"] == 32 and m.attrs["layers"] == 4
dims = [32, 1024, 1024, 1024, 8]
for i in range(4):
    assert m[f"layers/{i}/W"].shape == (dims[i], dims[i + 1]), i
    assert m[f"layers/{i}/b"].shape == (dims[i + 1],), i
x, y = d["features"][()], d["labels"][()]
n = len(y); held = int(np.floor(0.2 * n))
h = x[n - held:]
act = {b"relu": lambda v: np.maximum(v, 0), b"identity": lambda v: v,
       b"tanh": np.tanh, b"sigmoid": lambda v: 1 / (1 + np.exp(-v))}
for i in range(4):
    g = m[f"layers/{i}"]
    h = act[g.attrs["activation"]](h @ g["W"][()] + g["b"][()])
correct = int((h.argmax(1) == y[n - held:]).sum())
logged = float(sys.argv[1])
print(correct, held, logged)
sys.exit(0 if correct == round(logged * held) else 1)' "$acc" >numpy.out 2>&1 &&
    pass model.h5/numpy-reproduces-accuracy || fail model.h5/numpy-reproduces-accuracy "$(cat numpy.out)"

# stopped after epoch 3 (as a time limit would), resumed: the same model
mpi half 4 run "$JOBS/demo.cfg" --run-dir split --set stop.max_epochs=3
mpi rest 4 run "$JOBS/demo.cfg" --run-dir split
expect_rc resume/exit rest 0
expect_grep resume/from-epoch-3 rest.out "resuming after epoch 3 "
same_model resume/same-model-bitwise full/model.h5 split/model.h5
# and the same files, byte for byte: the model and the last checkpoint
same_bytes resume/model-same-bytes full/model.h5 split/model.h5
for f in full/ckpt/ckpt-e*.h5; do
    same_bytes "resume/$(basename "$f" .h5)-same-bytes" "$f" "split/ckpt/$(basename "$f")"
done
same_bytes resume/index-same-bytes full/ckpt/index split/ckpt/index
