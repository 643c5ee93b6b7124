# Embedding tables trained on the PS shards: the final model.h5 (dense
# layers and tables) is the same bits for any number of shards, stages and
# replicas and across a restart, also one on another number of shards; rows
# no batch touched keep their values; the first step's gradients of the
# touched rows match cairn grads; numpy reproduces the logged held-out
# accuracy from model.h5 and the data; malformed ids and layouts whose
# shards cannot hold the tables are refused before anything runs; the
# exchange behind the pulls keeps rounds apart.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=120
mpi data 2 data synth --out e.h5 --samples 3000 --features 4 --classes 2 --seed 5 \
    --table user:5000:1 --table item:700:3
expect_rc fixture/data data 0
cat >e.cfg <<'CFG'
name = "emb";
seed = 3;
model = {
  inputs = 4;
  embeddings = (
    { name = "user"; rows = 5000; dim = 4; ids = "user"; },
    { name = "item"; rows = 700; dim = 3; ids = "item"; combine = "mean"; }
  );
  layers = ( { units = 24; activation = "relu"; }, { units = 16; activation = "tanh"; },
             { units = 2; activation = "identity"; } );
};
data = { file = "e.h5"; batch = 96; holdout = 0.2; };
pipeline = { chunks = 4; };
ps = { shards = 2; optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 2; };
steps_per_epoch = 6;
CFG

# ---- the pulls' sparse exchange, back to back with a slow rank (coll.h) ----------------
run exchange mpirun --oversubscribe -np 4 "$CAIRN_ROOT/build/unit/mpi_exchange" 1000
expect_rc exchange/rc exchange 0
expect_grep exchange/rounds exchange.out "ok: 1000 rounds"

# ---- the same bits for any layout ---------------------------------------------------
layout() { # TAG RANKS SETTINGS...: a run in run-TAG
    local tag=$1 np=$2
    shift 2
    local sets=() s
    for s in "$@"; do sets+=(--set "$s"); done
    mpi "$tag" "$np" run e.cfg --run-dir "run-$tag" "${sets[@]}"
    expect_rc "layout/$tag/rc" "$tag" 0
}
side layout R1S1P2 3 replicas=1
side layout R1S1P1 2 ps.shards=1
side layout R1S1P3 4 ps.shards=3
side layout R1S2P2 4 pipeline.stages=2
side layout R2S1P2 4 replicas=2
side layout R2S2P3 7 replicas=2 pipeline.stages=2 ps.shards=3
side layout R4S1P1 5 replicas=4 ps.shards=1
sides_done
for tag in R1S1P1 R1S1P3 R1S2P2 R2S1P2 R2S2P3 R4S1P1; do
    same_h5 "bitwise/$tag" run-R1S1P2/model.h5 "run-$tag/model.h5" /layers
    same_h5 "bitwise/$tag/tables" run-R1S1P2/model.h5 "run-$tag/model.h5" /embeddings
done
expect_eq losses/same "$(grep -o '"train_loss":[^,]*' run-R2S2P3/metrics.jsonl)" \
    "$(grep -o '"train_loss":[^,]*' run-R1S1P2/metrics.jsonl)"

# without checkpoints, steps follow one another with no world collective
# between them (nothing keeps a fast reader's next pull out of this one)
layout none 4 replicas=2 checkpoint.every=0
same_h5 bitwise/no-checkpoints run-R1S1P2/model.h5 run-none/model.h5
# a stage on 2 ranks gathers the input gradient the tables need; T changes
# the dense sums' order (documented), so 2 replicas of T = 2 match one
layout T2 4 pipeline.ranks_per_stage=2
layout R2T2 6 replicas=2 pipeline.ranks_per_stage=2
same_h5 bitwise/T2-replicas run-T2/model.h5 run-R2T2/model.h5
expect_eq T2/near "$(py '
import h5py, numpy as np
a, b = h5py.File("run-R1S1P2/model.h5", "r"), h5py.File("run-T2/model.h5", "r")
for t in ("user", "item"):
    A, B = a["embeddings/" + t + "/table"][()], b["embeddings/" + t + "/table"][()]
    d = np.abs(A - B).max()
    if not d < 1e-3: print(t, d); break
else: print("ok")')" ok
# a table with fewer rows than shards: most shards hold none of it
mpi tiny-data 2 data synth --out tiny.h5 --samples 400 --features 2 --classes 2 --seed 9 --table t:5:2
cat >tiny.cfg <<'CFG'
name = "tiny";
seed = 3;
model = {
  inputs = 2;
  embeddings = ( { name = "t"; rows = 5; dim = 3; ids = "t"; } );
  layers = ( { units = 8; activation = "relu"; }, { units = 2; } );
};
data = { file = "tiny.h5"; batch = 32; holdout = 0.2; };
pipeline = { chunks = 4; };
ps = { optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 1; };
steps_per_epoch = 4;
CFG
mpi tiny1 2 run tiny.cfg --run-dir tiny1 --set ps.shards=1
mpi tiny12 14 run tiny.cfg --run-dir tiny12 --set ps.shards=12 --set replicas=2
expect_rc tiny/rc tiny12 0
same_h5 tiny/bitwise tiny1/model.h5 tiny12/model.h5

# every optimizer: the same bits on 1 shard and on 2 replicas with 3 shards
for opt in sgd momentum adagrad; do
    side layout "$opt-P1" 2 ps.shards=1 "ps.optimizer=\"$opt\""
    side layout "$opt-R2P3" 6 replicas=2 ps.shards=3 "ps.optimizer=\"$opt\""
done
sides_done
for opt in sgd momentum adagrad; do
    same_h5 "bitwise/$opt" "run-$opt-P1/model.h5" "run-$opt-R2P3/model.h5"
done
h5differ run-sgd-P1/model.h5 run-adagrad-P1/model.h5 &&
    pass optimizers/differ || fail optimizers/differ "sgd and adagrad trained the same model"

# ---- resume, and on another number of shards ----------------------------------------
mpi part 3 run e.cfg --run-dir resumed --set stop.max_epochs=1
expect_rc resume/first-rc part 0
mpi rest 3 run e.cfg --run-dir resumed
expect_rc resume/rest-rc rest 0
expect_grep resume/resumed rest.out "resum"
same_h5 resume/bitwise run-R1S1P2/model.h5 resumed/model.h5 /embeddings
same_h5 resume/bitwise-layers run-R1S1P2/model.h5 resumed/model.h5 /layers
mpi part3 3 run e.cfg --run-dir elastic --set stop.max_epochs=1
mpi rest3 4 run e.cfg --run-dir elastic --set ps.shards=3
expect_rc elastic/rc rest3 0
same_h5 elastic/2-to-3-shards run-R1S1P2/model.h5 elastic/model.h5 /embeddings
# momentum's velocities are no sums of squares: adagrad refuses them
mpi mom 3 run e.cfg --run-dir switch --set stop.max_epochs=1 --set 'ps.optimizer="momentum"'
mpi ada 3 run e.cfg --run-dir switch --set 'ps.optimizer="adagrad"'
expect_rc switch/refused ada 2
expect_grep switch/says ada.err "was written for other settings: blob ps/L0.W.sq: not in the checkpoint"

# ---- many shards: 4 replicas and 12 shards on 16 ranks -------------------------------
layout R4P12 16 replicas=4 ps.shards=12
same_h5 many/bitwise run-R1S1P2/model.h5 run-R4P12/model.h5 /embeddings

# ---- the first step's gradients, touched rows included, against cairn grads ----------
run ref "$CAIRN" grads e.cfg -o ref.h5
expect_rc grads/ref ref 0
grads() { # TAG RANKS SETTINGS...: debug.grads of a one-epoch run, compared with ref.h5
    local tag=$1 np=$2
    shift 2
    local sets=() s
    for s in "$@"; do sets+=(--set "$s"); done
    mpi "g-$tag" "$np" run e.cfg --run-dir "g-$tag" --set "debug.grads=\"g-$tag.h5\"" \
        --set stop.max_epochs=1 "${sets[@]}"
    expect_rc "grads/$tag/rc" "g-$tag" 0
    same_h5 "grads/$tag" ref.h5 "g-$tag.h5" /grads
}
grads R1S1P2 3
grads R2S2P3 7 replicas=2 pipeline.stages=2 ps.shards=3
grads R4S1P1 5 replicas=4 ps.shards=1
# one step per epoch: the first step is also the epoch's last, whose
# settle applies the push; the dump still holds its rows (issue 36)
grads last-step 6 replicas=2 ps.shards=3 steps_per_epoch=1
expect_eq grads/rows-touched "$(py 'import h5py, numpy as np
f = h5py.File("ref.h5", "r")
for t in ("user", "item"):
    ids, rows = f["grads/embeddings/%s/ids" % t][()], f["grads/embeddings/%s/rows" % t][()]
    assert len(ids) > 10 and len(set(ids)) == len(ids) and (np.abs(rows).sum(1) > 0).all(), t
print("ok")')" ok
# a stage on 2 ranks: the rows' gradients within 1e-5 (the input gradient's
# sums are split over the stage's ranks, as the dense layers' are)
mpi g-T2 4 run e.cfg --run-dir g-T2 --set 'debug.grads="g-T2.h5"' --set stop.max_epochs=1 \
    --set pipeline.ranks_per_stage=2
expect_rc grads/T2/rc g-T2 0
expect_eq grads/T2/within-1e-5 "$(py '
import h5py, numpy as np
a, b = h5py.File("ref.h5", "r"), h5py.File("g-T2.h5", "r")
for t in ("user", "item"):
    p = "grads/embeddings/%s/" % t
    assert (a[p + "ids"][()] == b[p + "ids"][()]).all(), t + ": other rows"
    A, B = a[p + "rows"][()], b[p + "rows"][()]
    d = np.abs(A - B).max() / np.abs(A).max()
    assert d < 1e-5, "%s: %g" % (t, d)
print("ok")')" ok
# the comparison can fail: another seed's first step touches other rows
mpi g-seed4 3 run e.cfg --run-dir g-seed4 --set 'debug.grads="g-seed4.h5"' --set stop.max_epochs=1 --set seed=4
expect_rc grads/seed4/rc g-seed4 0
h5differ ref.h5 g-seed4.h5 /grads/embeddings &&
    pass grads/other-seed-differs || fail grads/other-seed-differs "another seed gave the same table gradients"

# ---- sparse updates: rows no batch touched keep their initial values ------------------
layout lr0 3 ps.lr=0
got=$(py '
import h5py, numpy as np, sys
d = h5py.File("e.h5", "r"); n = d["features"].shape[0]
steps, batch, held = 12, 96, int(0.2 * n)
# the rows the training steps used: any training row may be drawn (shuffled),
# so compare rows of ids that appear nowhere in the file
a, z = h5py.File("run-R1S1P2/model.h5", "r"), h5py.File("run-lr0/model.h5", "r")
out = []
for t, rows in (("user", 5000), ("item", 700)):
    ids = d[t][()].ravel(); seen = np.zeros(rows, bool); seen[ids[ids >= 0]] = True
    A, Z = a["embeddings/" + t + "/table"][()], z["embeddings/" + t + "/table"][()]
    assert (A[~seen] == Z[~seen]).all(), t + ": an untouched row changed"
    assert (A[seen] != Z[seen]).any(axis=1).mean() > 0.5, t + ": touched rows did not train"
    assert a["embeddings/" + t].attrs["ids"].decode() == t
print("ok")')
expect_eq sparse/untouched-rows "$got" ok

# ---- numpy reproduces the held-out accuracy from model.h5 -----------------------------
got=$(py '
import h5py, json, numpy as np
m, d = h5py.File("run-R1S1P2/model.h5", "r"), h5py.File("e.h5", "r")
x = d["features"][()].astype(np.float64); n = len(x); first = n - int(0.2 * n)
cols = [x]
for t in ("user", "item"):
    g = m["embeddings/" + t]; T = g["table"][()].astype(np.float64); ids = d[g.attrs["ids"].decode()][()]
    ids = ids.reshape(n, -1); ok = ids >= 0
    v = (T[np.where(ok, ids, 0)] * ok[..., None]).sum(1)
    if g.attrs["combine"].decode() == "mean": v = v / np.maximum(ok.sum(1), 1)[:, None]
    cols.append(v)
h = np.concatenate(cols, 1)[first:]
for i in range(m.attrs["layers"]):
    L = m["layers/%d" % i]; h = h @ L["W"][()] + L["b"][()]
    a = L.attrs["activation"].decode()
    h = np.maximum(h, 0) if a == "relu" else np.tanh(h) if a == "tanh" else h
y = d["labels"][()][first:]
acc = (h.argmax(1) == y).mean()
z = h - h.max(1, keepdims=True); loss = -(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(1))).mean()
s = h[:, 1] - h[:, 0]; pos = s[y == 1]; neg = s[y == 0]
auc = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (len(pos) * len(neg))
log = [json.loads(l) for l in open("run-R1S1P2/metrics.jsonl") if "accuracy" in l][-1]
bad = []
if abs(acc - log["accuracy"]) > 1.5 / (n - first): bad.append("accuracy %r, logged %r" % (acc, log["accuracy"]))
if abs(loss - log["loss"]) > 1e-5 * abs(loss): bad.append("loss %r, logged %r" % (loss, log["loss"]))
if abs(auc - log["auc"]) > 1e-3: bad.append("auc %r, logged %r" % (auc, log["auc"]))
print("; ".join(bad) or "ok")')
expect_eq numpy/accuracy "$got" ok

# ---- bad ids: refused before training, naming the table, dataset and row --------------
py '
import h5py, numpy as np
src = h5py.File("e.h5", "r")
def bad(name, **over):
    with h5py.File(name, "w") as f:
        for k in src:
            f[k] = over.pop(k, src[k][()])
u = src["user"][()]
big = u.copy(); big[17, 0] = 5000; bad("big.h5", user=big)
neg = u.copy(); neg[5, 0] = -2; bad("neg.h5", user=neg)
bad("float.h5", user=u.astype(np.float32))
bad("short.h5", user=u[:100])
bad("cube.h5", user=u.reshape(-1, 1, 1))
i = src["item"][()]; i[2000, 2] = 700; bad("item.h5", item=i)'
badrun() { # NAME FILE PATTERN
    mpi "bad-$1" 3 run e.cfg --run-dir "bad-$1" --set "data.file=\"$2\""
    expect_rc "bad/$1/rc" "bad-$1" 2
    expect_grep "bad/$1/says" "bad-$1.err" "$3"
    ls "bad-$1"/ckpt/*.h5 >/dev/null 2>&1 && fail "bad/$1/nothing-written" "bad-$1 has a checkpoint" || pass "bad/$1/nothing-written"
}
side badrun big big.h5 "e.cfg:6: table 'user': ids dataset 'user' in big.h5: row 17 holds id 5000; the table has rows 0 to 4999 \(and -1 means no id\)"
side badrun neg neg.h5 "e.cfg:6: table 'user': .*row 5 holds id -2"
side badrun item item.h5 "e.cfg:7: table 'item': ids dataset 'item' in item.h5: row 2000 holds id 700"
side badrun float float.h5 "e.cfg:6: table 'user': ids dataset 'user' in float.h5 holds f32 values; ids must be integers"
side badrun short short.h5 "e.cfg:6: table 'user': ids dataset 'user' in short.h5 has 100 rows but the features have 3000"
side badrun cube cube.h5 "ids dataset 'user' in cube.h5 is \[3000, 1, 1\], not \[N\] or \[N, k\]"
sides_done

# ---- ids that go bad under a running job: exit 3, the same words ------------------------
# The trainer (rank 0) stops itself (SIGSTOP) in epoch 1's checkpoint
# write; while it cannot run, every user id in the file becomes 5000 (the
# bytes rewritten in place, as another program would), then it continues.
# Epoch 2's first batch finds them: exit 3 naming the table, dataset and
# row; epoch 1's checkpoint stays committed.  The watchdog is set far away:
# the pause lasts as long as this shell takes, not as long as a step.
# Every rank waits for rank 0 in the save, so no id of epoch 2 is read
# before the change.  The file is larger than HDF5's 64 KiB sieve buffer,
# which holds the last ids read: the held-out rows (the last 20%) that
# epoch 1's evaluation read before the save, none of the training rows.
mpi mid-data 2 data synth --out mid.h5 --samples 40000 --features 4 --classes 2 --seed 5 \
    --table user:5000:1 --table item:700:3
expect_rc midrun/data mid-data 0
off=$(py 'import h5py; d = h5py.File("mid.h5", "r")["user"]; print(d.id.get_offset(), d.shape[0])')
CAIRN_FAULT=freeze:write:0:1 mpi mid 3 run e.cfg --run-dir mid --set 'data.file="mid.h5"' \
    --set watchdog.timeout=3600 --set watchdog.liveness=0 &
bg=$!
frozen=
if wait_log mid.err "rank 0 \(pid [0-9]+\): CAIRN_FAULT freezes this rank at write"; then
    frozen=$(sed -n 's/.*rank 0 (pid \([0-9]*\)): CAIRN_FAULT freezes.*/\1/p' mid.err)
    for i in $(seq 1 300); do # until it is stopped (state T)
        [ "$(awk '{print $3}' "/proc/$frozen/stat" 2>/dev/null)" = T ] && break
        sleep 0.2
    done
fi
if [ "$(awk '{print $3}' "/proc/${frozen:-none}/stat" 2>/dev/null)" = T ]; then
    pass midrun/frozen
    py 'import numpy as np, os, sys
off, n = map(int, sys.argv[1:3])
fd = os.open("mid.h5", os.O_WRONLY)
os.pwrite(fd, np.full(n, 5000, np.int64).tobytes(), off)
os.fsync(fd); os.close(fd)' $off
    kill -CONT "$frozen"
else
    fail midrun/frozen "rank 0 of the run did not stop at the fault point" mid.err
    [ -n "$frozen" ] && kill -CONT "$frozen" 2>/dev/null # else the run's timeout ends it
fi
wait $bg
expect_rc midrun/rc mid 3
expect_grep midrun/says mid.err "e.cfg:6: table 'user': ids dataset 'user' in mid.h5: row [0-9]+ holds id 5000; the table has rows 0 to 4999 \(and -1 means no id\)"
expect_grep midrun/exit-status mid/exit_status "^3 .*row [0-9]+ holds id 5000"
expect_eq midrun/committed "$(ckpt_ls mid/ckpt | awk '$5 == "ok" {print $1}' | xargs)" "0 1"

# ---- bad tables in the job file: FILE:LINE and exit 2 ----------------------------------
badcfg() { # NAME SETTING PATTERN
    run "cfg-$1" "$CAIRN" check e.cfg --set "$2"
    expect_rc "config/$1/rc" "cfg-$1" 2
    expect_grep "config/$1/says" "cfg-$1.err" "$3"
}
t2='{ name = "user"; rows = 10; dim = 2; ids = "user"; }'
badcfg twice "model.embeddings=($t2, $t2)" "table 'user' is declared twice"
badcfg name 'model.embeddings=({ name = "a b"; rows = 10; dim = 2; ids = "user"; })' "table name \"a b\" must be 1 to 32 letters"
badcfg dim 'model.embeddings=({ name = "u"; rows = 10; dim = 0; ids = "user"; })' "dim"
badcfg combine 'model.embeddings=({ name = "u"; rows = 10; dim = 2; ids = "user"; combine = "max"; })' "combine must be one of \"sum\", \"mean\""
badcfg key 'model.embeddings=({ name = "u"; rows = 10; dim = 2; ids = "user"; size = 3; })' "size"
badcfg huge 'model.embeddings=({ name = "u"; rows = 1000000000; dim = 16; ids = "user"; })' "more than the 2147483647 that cairn takes in one table"
badcfg empty 'model.embeddings=()' "'embeddings' must be a list of 1 to 32"

# ---- a table larger than one shard's budget trains on enough shards ------------------
big='model.embeddings=({ name = "user"; rows = 5000; dim = 64; ids = "user"; }, { name = "item"; rows = 700; dim = 3; ids = "item"; combine = "mean"; })'
run cap "$CAIRN" check e.cfg --set "$big" --set model.rank_memory_mb=1 --set ps.shards=1
expect_rc memory/refused cap 2
expect_grep memory/says cap.err "each PS shard needs up to 3\.7 MiB \(parameters, tables, optimizer state and gradients\) with ps.shards = 1, over model.rank_memory_mb = 1: it fits with ps.shards = 4"
mpi cap-run 5 run e.cfg --run-dir cap --set "$big" --set model.rank_memory_mb=1 --set ps.shards=4
expect_rc memory/trains-on-4 cap-run 0
# background saves count the copy of the shard's state: what fits without it may not
run cap-sync "$CAIRN" check e.cfg --set "$big" --set model.rank_memory_mb=4 --set ps.shards=1
expect_rc memory/fits-without-copy cap-sync 0
run cap-async "$CAIRN" check e.cfg --set "$big" --set model.rank_memory_mb=4 --set ps.shards=1 \
    --set checkpoint.async=true
expect_rc memory/copy-refused cap-async 2
expect_grep memory/copy-says cap-async.err "each PS shard needs up to 7\.4 MiB \(parameters, tables, optimizer state and gradients, and their copy for checkpoint.async\) with ps.shards = 1, over model.rank_memory_mb = 4: it fits with ps.shards = 2, or with checkpoint.async = false"

# ---- the ctr example job, as shipped (a few steps) -------------------------------------
CAIRN=$CAIRN run ctr-data "$CAIRN_ROOT/jobs/ctr_data.sh" ctr.h5 2
expect_rc ctr/data ctr-data 0
mpi ctr 4 run "$CAIRN_ROOT/jobs/ctr.cfg" --run-dir ctr --set steps_per_epoch=8 --set stop.max_epochs=1
expect_rc ctr/rc ctr 0
expect_eq ctr/tables "$(py 'import h5py; m = h5py.File("ctr/model.h5", "r")
print(m["embeddings/user/table"].shape, m["embeddings/item/table"].shape, m["layers/0/W"].shape)')" \
    "(1000000, 16) (100000, 16) (45, 128)"
expect_grep ctr/auc ctr/metrics.jsonl '"auc":0\.[5-9]'
# model.h5's tables (streamed from the shards in blocks of 8 MiB: 8 of them
# for the user table) are
# the checkpoint's (kept by position, row i at (i a) mod rows), in id order
expect_eq ctr/table-order "$(py '
import h5py, math, numpy as np
m, c = h5py.File("ctr/model.h5", "r"), h5py.File("ctr/ckpt/ckpt-e000001.h5", "r")
for t in ("user", "item"):
    T, K = m["embeddings/" + t + "/table"][()], c["groups/ps/E." + t][()]
    n = len(T); a0 = int(n * 0.6180339887498949 + 0.5)
    a = next(x for d in range(n) for x in (a0 + d, a0 - d) if 0 < x < n and math.gcd(x, n) == 1)
    pos = np.arange(n, dtype=np.int64) * a % n
    assert (T == K[pos]).all(), t
print("ok")')" ok
