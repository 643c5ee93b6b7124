# Categorical data for embedding tables: `cairn data synth --table` writes
# Zipf-distributed ids (the same file on 1 and 3 ranks; the file without
# tables is unchanged), `cairn data balance` shows cairn's spread placement
# keeping shards within 1.25x of the mean where contiguous blocks of ids do
# not, and every malformed ids dataset is refused naming it and its first
# bad row.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=60
tables=(--table user:100000:1 --table item:5000:4)
mpi one 1 data synth --out a.h5 --samples 6000 --features 5 --classes 2 --seed 3 "${tables[@]}"
mpi three 3 data synth --out b.h5 --samples 6000 --features 5 --classes 2 --seed 3 "${tables[@]}"
expect_rc synth/rc one 0
expect_grep synth/says one.out "ids 'user' of 100000 rows, up to 1 per sample; ids 'item' of 5000 rows, up to 4"
same_h5 synth/any-ranks a.h5 b.h5

# the ids: shapes, ranges, bags padded with -1 at their ends, Zipf's head
got=$(py '
import h5py, numpy as np, sys
f = h5py.File("a.h5", "r")
u, i, y = f["user"][()], f["item"][()], f["labels"][()]
assert u.shape == (6000, 1) and u.dtype == np.int64 and i.shape == (6000, 4), (u.shape, i.shape)
assert u.min() >= 0 and u.max() < 100000 and i.max() < 5000 and i.min() >= -1
lens = (i >= 0).sum(1)
assert lens.min() == 1 and lens.max() == 4
assert not ((i[:, :-1] == -1) & (i[:, 1:] >= 0)).any(), "an id after a -1"
c = np.bincount(u[:, 0])
# Zipf 1.1 over 1e5 ids: id 0 takes 1/H = 14.5% of draws, id 1 half as much x 2^-0.1
assert abs(c[0] / 6000 - 0.145) < 0.02 and c[0] > c[1] > c[3], c[:4]
assert 0.3 < y.mean() < 0.7, y.mean()
print("ok")')
expect_eq synth/ids "$got" ok

# a bag's length and its ids come from separate streams (issue 36: they
# shared counters): bags of up to 5 instead of 3 change the lengths but
# keep every id both have; another Zipf exponent changes the ids but not
# the lengths
for v in k3:3:1.1 k5:5:1.1 z2:3:2.0; do
    IFS=: read -r tag k z <<<"$v"
    mpi "$tag" 2 data synth --out "$tag.h5" --samples 2000 --features 2 --classes 2 --seed 3 \
        --table item:5000:"$k" --zipf "$z"
    expect_rc "streams/$tag/rc" "$tag" 0
done
expect_eq synth/streams "$(py '
import h5py, numpy as np
a, b, z = (h5py.File(n + ".h5", "r")["item"][()] for n in ("k3", "k5", "z2"))
la, lb, lz = ((x >= 0).sum(1) for x in (a, b, z))
both = np.arange(3)[None, :] < np.minimum(la, lb)[:, None]
bad = []
if not (a[both] == b[:, :3][both]).all(): bad.append("ids differ with K: %d of %d" % ((a[both] != b[:, :3][both]).sum(), both.sum()))
if (la == lb).all() or lb.max() != 5: bad.append("K did not change the lengths")
if not (la == lz).all(): bad.append("the exponent changed %d lengths" % (la != lz).sum())
if (a[a >= 0] == z[z >= 0]).all(): bad.append("the exponent changed no id")
print("; ".join(bad) or "ok")')" ok

# without tables, the file is the one earlier versions wrote (its bytes are
# pinned by the demo's documented results): no ids datasets appear
mpi plain 1 data synth --out p.h5 --samples 100 --features 5 --classes 2 --seed 3
expect_eq synth/plain "$(py 'import h5py; print(sorted(h5py.File("p.h5","r")))')" "['features', 'labels']"

# labels follow the ids: the label rate of the 20 most frequent user ids
# varies far more than chance would make it
got=$(py '
import h5py, numpy as np
f = h5py.File("a.h5", "r"); u, y = f["user"][()][:, 0], f["labels"][()]
rates = [y[u == k].mean() for k in range(20)]
print("ok" if max(rates) - min(rates) > 0.3 else rates)')
expect_eq synth/learnable "$got" ok

# balance: spread within 1.25x of the mean at 2 and 4 shards, blocks not
mpi zipf 1 data synth --out z.h5 --samples 16384 --features 2 --classes 2 --table user:1000000:1
run bal "$CAIRN" data balance z.h5 --ids user --rows 1000000 --shards 2,4 --batch 4096
expect_rc balance/rc bal 0
for P in 2 4; do
    line=$(awk -v p=$P '$1 == p' bal.out)
    got=$(echo "$line" | awk '{ gsub(/[(),]/, " "); print ($4 <= 1.25 && $6 <= 1.25 && $7 >= 1.5) ? "ok" : $0 }')
    expect_eq "balance/P$P" "$got" ok
done

# bad ids: each names the dataset and, for values, the first bad row
py '
import h5py, numpy as np
with h5py.File("bad.h5", "w") as f:
    f["float"] = np.zeros((4, 2), np.float32)
    f["cube"] = np.zeros((4, 2, 2), np.int64)
    f["big"] = np.array([[0], [3], [10], [11]], np.int64)
    f["neg"] = np.array([0, -1, -2, 1], np.int32)
    f["ok"] = np.array([0, -1, 9, 1], np.int32)
    # shapes a file claims without storing a byte (chunks never written)
    f.create_dataset("wide", shape=(4, 2**40), dtype="i8", chunks=(1, 1024))
    f.create_dataset("huge", shape=(2**61,), dtype="i8", chunks=(1024,))
    f["u64"] = np.array([[0], [2**64 - 1]], np.uint64)'
bad() { # NAME ROWS PATTERN
    run "bad-$1" "$CAIRN" data balance bad.h5 --ids "$1" --rows "$2"
    expect_rc "bad/$1/rc" "bad-$1" 2
    expect_grep "bad/$1/says" "bad-$1.err" "$3"
}
bad float 10 "ids dataset 'float' in bad.h5 holds f32 values; ids must be integers"
bad cube 10 "ids dataset 'cube' in bad.h5 is \[4, 2, 2\], not \[N\] or \[N, k\]"
bad big 10 "ids dataset 'big' in bad.h5: row 2 holds id 10; the table has rows 0 to 9 \(and -1 means no id\)"
bad neg 10 "ids dataset 'neg' in bad.h5: row 2 holds id -2"
bad missing 10 "no dataset 'missing'"
bad wide 10 "ids dataset 'wide' in bad.h5 is \[4, 1099511627776\]: bags of more than 65536 ids per sample are not supported"
bad huge 10 "dataset 'huge' in 'bad.h5' is \[2305843009213693952\], more than 2\^60 elements"
bad u64 10 "ids dataset 'u64' in bad.h5: row 1 holds id 18446744073709551615; the table has rows 0 to 9"
run good "$CAIRN" data balance bad.h5 --ids ok --rows 10 --shards 1,3
expect_rc bad/ok-1-d "good" 0

# a batch larger than the data is one step of all of it: memory follows the
# data (under a 4 GB address-space limit, which the sanitizers' shadow
# memory cannot live with; there an allocation that size would abort)
big=(data balance bad.h5 --ids ok --rows 10 --shards 1,3 --batch 9999999999)
if [ -n "${T_SANITIZED:-}" ]; then run big-batch "$CAIRN" "${big[@]}"
else run big-batch bash -c 'ulimit -v 4000000 && exec "$@"' sh "$CAIRN" "${big[@]}"; fi
expect_rc balance/big-batch/rc big-batch 0
expect_grep balance/big-batch/says big-batch.out "^bad.h5 'ok': 4 samples of up to 1 ids, 10 rows, steps of 4 samples \(--batch is more than the data: one step of all of it\)$"
expect_eq balance/big-batch/same-figures "$(tail -n 2 big-batch.out)" "$("$CAIRN" data balance bad.h5 --ids ok --rows 10 --shards 1,3 --batch 4 | tail -n 2)"

# the same ids found bad when a run starts (2 ranks: a trainer and a PS
# shard): exit 2 naming the table, file and dataset, the message also in
# cairn.log, and exit_status written, as for any failure once the run
# directory is set up
mpi tdata 1 data synth --out t.h5 --samples 64 --features 3 --classes 2 --seed 1 --table user:10:1
cat >t.cfg <<'CFG'
name = "tbl";
seed = 1;
model = {
  inputs = 3;
  embeddings = ( { name = "user"; rows = 10; dim = 2; ids = "user"; } );
  layers = ( { units = 4; activation = "relu"; }, { units = 2; activation = "identity"; } );
};
data = { file = "t.h5"; batch = 16; holdout = 0.25; };
ps = { shards = 1; };
stop = { max_epochs = 1; };
CFG
py '
import h5py, numpy as np
src = h5py.File("t.h5", "r")
for name in ("tbad", "tu64", "twide"):
    with h5py.File(name + ".h5", "w") as f:
        f["features"], f["labels"] = src["features"][()], src["labels"][()]
        u = src["user"][()]
        if name == "tbad":
            u[5, 0] = 10
            f["user"] = u
        elif name == "tu64":
            v = u.astype(np.uint64); v[6, 0] = 2**64 - 1
            f["user"] = v
        else:
            f.create_dataset("user", shape=(64, 2**40), dtype="i8", chunks=(1, 1024))'
trun() { # NAME PATTERN: t.cfg on NAME.h5, refused at start-up
    mpi "run-$1" 2 run t.cfg --run-dir "r-$1" --set "data.file=\"$1.h5\""
    expect_rc "run/$1/rc" "run-$1" 2
    expect_grep "run/$1/says" "run-$1.err" "^cairn: t.cfg:5: table 'user': $2"
    expect_grep "run/$1/logged" "r-$1/cairn.log" "cairn: error: t.cfg:5: table 'user': $2"
    expect_grep "run/$1/exit-status" "r-$1/exit_status" "^2 input: t.cfg:5: table 'user': $2"
}
trun tbad "ids dataset 'user' in tbad.h5: row 5 holds id 10; the table has rows 0 to 9"
trun tu64 "ids dataset 'user' in tu64.h5: row 6 holds id 18446744073709551615;"
trun twide "ids dataset 'user' in twide.h5 is \[64, 1099511627776\]: bags of more than 65536 ids"

# a dataset name with an escape sequence reaches stderr, cairn.log and
# exit_status escaped
sed "s/ids = \"user\"/ids = \"$(printf '\033')[31muser\"/" t.cfg >tesc.cfg
mpi run-esc 2 run tesc.cfg --run-dir r-esc
expect_rc run/esc/rc run-esc 2
expect_grep run/esc/says run-esc.err "^cairn: tesc.cfg:5: table 'user': file 't.h5' has no dataset '\\\\x1b\[31muser'$"
n=$(cat run-esc.err run-esc.out r-esc/cairn.log r-esc/exit_status | LC_ALL=C grep -c $'\x1b')
expect_eq run/esc/no-escape-byte "$n" 0

# and by eval and predict, with a model of the same job
mpi run-good 2 run t.cfg --run-dir r-good
expect_rc run/good/rc run-good 0
run eval-wide "$CAIRN" eval r-good/model.h5 twide.h5
expect_rc eval/wide/rc eval-wide 2
expect_grep eval/wide/says eval-wide.err "ids dataset 'user' in twide.h5 is \[64, 1099511627776\]: bags of more than 65536 ids"
mpi predict-u64 2 predict r-good/model.h5 tu64.h5 -o p.h5
expect_rc predict/u64/rc predict-u64 2
expect_grep predict/u64/says predict-u64.err "ids dataset 'user' in tu64.h5: row 6 holds id 18446744073709551615;"

# bad options of both commands: exit 2 with a message
opt() { # NAME PATTERN ARGS...
    local n=$1 p=$2
    shift 2
    run "opt-$n" "$CAIRN" data "$@"
    expect_rc "options/$n/rc" "opt-$n" 2
    expect_grep "options/$n/says" "opt-$n.err" "$p"
}
s=(synth --out o.h5 --samples 10 --features 2 --classes 2)
opt no-k "needs NAME:ROWS:K" "${s[@]}" --table user:10
opt zero-rows "needs NAME:ROWS:K" "${s[@]}" --table user:0:1
opt big-bag "needs NAME:ROWS:K" "${s[@]}" --table user:10:65
opt no-name "needs NAME:ROWS:K" "${s[@]}" --table :10:1
opt clash "would replace the features or labels" "${s[@]}" --table labels:10:1
opt twice "table 'u' given twice" "${s[@]}" --table u:10:1 --table u:5:1
opt zipf "needs an exponent above 0" "${s[@]}" --zipf 0
opt nine "more than 8 tables" "${s[@]}" --table a:1:1 --table b:1:1 --table c:1:1 --table d:1:1 \
    --table e:1:1 --table f:1:1 --table g:1:1 --table h:1:1 --table i:1:1
opt shards "needs up to 16 counts" balance z.h5 --ids user --rows 10 --shards 2,x
opt no-rows "balance needs FILE.h5, --ids and --rows" balance z.h5 --ids user
[ -e o.h5 ] && fail options/no-file "a refused synth wrote o.h5" || pass options/no-file
