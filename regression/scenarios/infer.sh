# Using a trained model: cairn eval gives the held-out figures the run
# logged (to the last printed digit) on 1 rank without mpirun and on 3,
# for the demo, a model with embedding tables (log loss and AUC too) and
# an mse model; cairn predict writes the same file on 1 and 3 ranks (and
# within 1e-5 with other batches), and
# python/cairn_model.py (numpy, h5py) computes the same outputs within
# 1e-5; models and data that do not fit are refused with exit 2 and no
# predictions file, and an old predictions file stays as it was.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=240
export PYTHONPATH=$CAIRN_ROOT/python

# the three models, trained side by side
fixture() { # TAG NP ARGS...: a training run that must succeed
    local tag=$1 np=$2
    shift 2
    [ "$tag" = demo ] && demo_data data 2 demo.h5
    mpi "$tag" "$np" "$@"
    expect_rc "fixture/$tag" "$tag" 0
}
side fixture demo 4 run "$JOBS/demo.cfg" --run-dir demo --set stop.max_epochs=2
mpi edata 2 data synth --out e.h5 --samples 3000 --features 4 --classes 2 --seed 5 \
    --table user:5000:1 --table item:700:3
cat >e.cfg <<'CFG'
name = "emb";
seed = 3;
model = {
  inputs = 4;
  embeddings = (
    { name = "user"; rows = 5000; dim = 4; ids = "user"; },
    { name = "item"; rows = 700; dim = 3; ids = "item"; combine = "mean"; }
  );
  layers = ( { units = 24; activation = "relu"; }, { units = 2; activation = "identity"; } );
};
data = { file = "e.h5"; batch = 96; holdout = 0.2; eval_batch = 100; };
ps = { shards = 2; optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 2; };
steps_per_epoch = 6;
CFG
cat >m.cfg <<'CFG'
name = "mse";
seed = 3;
model = {
  inputs = 4;
  layers = ( { units = 16; activation = "tanh"; }, { units = 2; activation = "sigmoid"; } );
  loss = "mse";
};
data = { file = "e.h5"; batch = 96; holdout = 0.2; eval_batch = 100; };
ps = { shards = 2; optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 2; };
steps_per_epoch = 6;
CFG
side fixture emb 3 run e.cfg --run-dir emb
side fixture mse 3 run m.cfg --run-dir mse
sides_done

# held_out FILE: the first held-out row of a data file (holdout = 0.2)
held_out() { py 'import h5py, sys; n = len(h5py.File(sys.argv[1], "r")["labels"]); print(n - max(int(0.2 * n), 1))' "$1"; }
# logged RUN: the last epoch's held-out figures as the log prints them
logged() { grep "/loss = " "$1/cairn.log" | tail -n 1 | sed -E 's/.*train_loss = [^,]*, //; s/[a-z0-9_]+\///g'; }
# figures TAG: the figures an eval printed
figures() { sed -nE 's/^eval: .*: (loss = .*) \([0-9.]+ s, .*/\1/p' "$1.out"; }

# ---- eval: the logged figures, alone and on 3 ranks -------------------------------------
eval_model() { # MODEL
    local m=$1 data=demo.h5 first
    [ $m = demo ] || data=e.h5
    first=$(held_out $data)
    run "eval-$m-1" "$CAIRN" eval "$m/model.h5" "$data" --rows "$first:"
    expect_rc "eval/$m/alone/rc" "eval-$m-1" 0
    expect_eq "eval/$m/alone/as-logged" "$(figures "eval-$m-1")" "$(logged $m)"
    mpi "eval-$m-3" 3 eval "$m/model.h5" "$data" --rows "$first:"
    expect_eq "eval/$m/3-ranks/as-logged" "$(figures "eval-$m-3")" "$(logged $m)"
}
for m in demo emb mse; do side eval_model $m; done
sides_done
expect_grep eval/emb/auc eval-emb-1.out "accuracy = [0-9.]+, auc = 0\.[0-9]+ "
mpi eval-json 2 eval emb/model.h5 e.h5 --rows "$(held_out e.h5):" --json
got=$(py '
import json, sys
e = json.loads(open("eval-json.out").read())
log = [json.loads(l) for l in open("emb/metrics.jsonl") if "\"auc\"" in l][-1]
bad = [k for k in ("loss", "accuracy", "auc") if e[k] != log[k]]
print("ok" if not bad and e["rows"] == 600 and e["ranks"] == 2 else "differ: %r %r" % (e, log))')
expect_eq eval/json/as-metrics.jsonl "$got" ok
run eval-all "$CAIRN" eval demo/model.h5 demo.h5 --batch 1000
expect_grep eval/all-rows eval-all.out "^eval: rows 0:32768 of demo.h5 on 1 rank: loss = [0-9.]+, accuracy = 0\.[0-9]+ "

# ---- predict: the same file on 1 and 3 ranks; numpy agrees -------------------------------
predict_model() { # MODEL
    local m=$1 data=demo.h5 got
    [ $m = demo ] || data=e.h5
    run "predict-$m-1" "$CAIRN" predict "$m/model.h5" "$data" -o "$m-1.h5"
    expect_rc "predict/$m/alone/rc" "predict-$m-1" 0
    mpi "predict-$m-3" 3 predict "$m/model.h5" "$data" -o "$m-3.h5"
    expect_rc "predict/$m/3-ranks/rc" "predict-$m-3" 0
    same_h5 "predict/$m/same-on-1-and-3-ranks" "$m-1.h5" "$m-3.h5" /outputs
    same_h5 "predict/$m/same-classes" "$m-1.h5" "$m-3.h5" /predicted
    got=$(py '
import sys, h5py, numpy as np, cairn_model
model, data, out = sys.argv[1:4]
m = cairn_model.load(model)
p = h5py.File(out, "r")
want, cls = p["outputs"][()], p["predicted"][()]
got = m.predict(data)
err = float(np.abs(got - want).max())
top = np.sort(want, 1)
close = top[:, -1] - top[:, -2] < 1e-5 # a near tie may go either way
same = (got.argmax(1) == cls) | close
probs = m.loss != "softmax_cross_entropy" or np.allclose(want.sum(1), 1, atol=1e-5)
print("ok" if err <= 1e-5 and same.all() and probs and len(cls) == len(h5py.File(data, "r")["labels"]) else
      "max difference %g, %d classes differ, probabilities %s" % (err, (~same).sum(), probs))' \
        "$m/model.h5" "$data" "$m-1.h5")
    expect_eq "predict/$m/numpy-within-1e-5" "$got" ok
}
for m in demo emb mse; do side predict_model $m; done
sides_done
expect_grep predict/says predict-demo-3.out "^predict: rows 0:32768 of demo.h5 on 3 ranks into demo-3.h5 in [0-9.]+ s \([0-9]+ rows/s\)"
expect_eq predict/attributes "$(py 'import h5py; f = h5py.File("emb-3.h5", "r"); print(f.attrs["outputs"].decode(), f["outputs"].shape)')" \
    "probabilities (3000, 2)"
# other batches: BLAS blocks a product by its size, so the last bits may
# differ (the batches, not the ranks, decide them)
mpi predict-rows 2 predict demo/model.h5 demo.h5 -o rows.h5 --rows 100:2250 --batch 777 --json
expect_grep predict/rows/json predict-rows.out '^\{"command":"predict","rows":2150,"first":100,"ranks":2,"seconds":'
expect_eq predict/rows/same-values "$(py '
import h5py, numpy as np
a, b = h5py.File("rows.h5", "r")["outputs"][()], h5py.File("demo-1.h5", "r")["outputs"][100:2250]
print(float(np.abs(a - b).max()) <= 1e-5)')" True

# ---- bad input: exit 2, a clear message, no predictions file ------------------------------
py '
import h5py, numpy as np
d = h5py.File("demo.h5", "r")
with h5py.File("narrow.h5", "w") as f:
    f["features"] = d["features"][:, :31]; f["labels"] = d["labels"][()]
with h5py.File("badclass.h5", "w") as f:
    y = d["labels"][()]; y[20000] = 9
    f["features"] = d["features"][()]; f["labels"] = y
with h5py.File("floatlabels.h5", "w") as f:
    f["features"] = d["features"][()]; f["labels"] = d["labels"][()].astype(np.float32)
e = h5py.File("e.h5", "r")
with h5py.File("badid.h5", "w") as f:
    for k in e: f[k] = e[k][()]
    u = f["user"][()]; del f["user"]; u[2900] = 5000; f["user"] = u
open("notes.txt", "w").write("not a model\n")
import shutil
shutil.copy("demo/model.h5", "hollow.h5") # W declared, its bytes never written
with h5py.File("hollow.h5", "a") as f:
    del f["layers/0/W"]; f.create_dataset("layers/0/W", (32, 1024), "f4", chunks=(8, 8))
shutil.copy("demo/model.h5", "flat.h5") # a layer that is a dataset, not a group
with h5py.File("flat.h5", "a") as f:
    del f["layers/1"]; f["layers/1"] = np.zeros(3)
b = open("demo/model.h5", "rb").read()
open("cut.h5", "wb").write(b[: len(b) // 2])'
bad() { # NAME PATTERN ARGS...: cairn ARGS exits 2 and says PATTERN
    local name=$1 pattern=$2
    shift 2
    mpi "bad-$name" 2 "$@"
    expect_rc "bad/$name/rc" "bad-$name" 2
    expect_grep "bad/$name/says" "bad-$name.err" "$pattern"
}
bad narrow "dataset 'features' in narrow.h5 must be \[N, 32\] \(the model's dense inputs\), not 2D with 31 columns" \
    eval demo/model.h5 narrow.h5
bad no-dataset "file 'demo.h5' has no dataset 'pixels'" predict demo/model.h5 demo.h5 --features pixels -o x.h5
bad not-hdf5 "model notes.txt: not an HDF5 file" eval notes.txt demo.h5
bad not-a-model "model demo.h5: no attribute 'cairn_version': not a model file cairn wrote" eval demo.h5 demo.h5
bad damaged "model cut.h5: " predict cut.h5 demo.h5 -o x.h5
bad class "dataset 'labels' in badclass.h5: row 20000 holds class 9, but the model has 8 outputs" \
    eval demo/model.h5 badclass.h5
bad float-labels "dataset 'labels' in floatlabels.h5 must hold one integer class per row" eval demo/model.h5 floatlabels.h5
bad rows "rows 100:99999 are not within the 32768 rows of demo.h5" eval demo/model.h5 demo.h5 --rows 100:99999
bad rows-syntax "--rows takes FIRST:END" eval demo/model.h5 demo.h5 --rows 5
bad no-out "needs -o OUT.h5" predict demo/model.h5 demo.h5
bad missing-model "model nothing.h5: cannot read it" eval nothing.h5 demo.h5
bad hollow "model hollow.h5: /layers/0/W: it keeps 0 of its 131072 bytes" eval hollow.h5 demo.h5
bad flat "model flat.h5: " predict flat.h5 demo.h5 -o x.h5
bad onto-data "-o demo.h5 is the data file: it would be replaced" predict demo/model.h5 demo.h5 -o demo.h5
# a bad id in the last rows (the last rank's share): found mid-run, no file
cp emb-1.h5 old.h5
bad id "ids dataset 'user' in badid.h5: row 2900 holds id 5000" predict emb/model.h5 badid.h5 -o old.h5
same_bytes bad/id/old-file-kept emb-1.h5 old.h5
ls ./*.tmp >/dev/null 2>&1 && fail bad/no-temporary "a .tmp file is left: $(ls ./*.tmp)" || pass bad/no-temporary
[ -e x.h5 ] && fail bad/no-file "x.h5 was written" || pass bad/no-file
