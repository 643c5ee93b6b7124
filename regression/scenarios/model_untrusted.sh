# Model files are untrusted input.  Each case regression/craft_models.py
# makes from a tiny trained model (with an embedding table) is refused by
# `cairn eval` (exit 2, the expected message naming the object) and by
# python/cairn_model.py (ModelError with the same message): dtypes that
# would be converted, sizes the file does not hold, attributes that
# disagree with the datasets, non-finite weights, soft and external links,
# external storage, a FIFO (neither may hang).  A few go through `cairn
# predict` too, one that fails mid-run on 2 ranks: no predictions file is
# left.  The good model, the same model in the other byte order and a
# symbolic link to it are accepted by both.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=30
export PYTHONPATH=$CAIRN_ROOT/python

run data "$CAIRN" data synth --out d.h5 --samples 400 --features 4 --classes 3 --seed 5 --table user:300:2
expect_rc fixture/data data 0
cat >t.cfg <<'CFG'
name = "tiny";
seed = 3;
model = {
  inputs = 4;
  embeddings = ( { name = "user"; rows = 300; dim = 3; ids = "user"; combine = "mean"; } );
  layers = ( { units = 8; activation = "relu"; }, { units = 3; activation = "identity"; } );
};
data = { file = "d.h5"; batch = 50; holdout = 0.2; eval_batch = 100; };
ps = { shards = 1; optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 1; };
steps_per_epoch = 4;
CFG
mpi train 2 run t.cfg --run-dir tiny
expect_rc fixture/train train 0
/usr/bin/python3 "$CAIRN_ROOT/regression/craft_models.py" tiny/model.h5 d.h5 crafted >craft.out 2>&1 ||
    fail fixture/craft "craft_models.py failed" craft.out
cd crafted || exit 1
# what cairn and Python read must be what they leave: the crafted files,
# the model they came from and the data
inputs=$(find . ../tiny/model.h5 ../d.h5 -maxdepth 1 -type f | sort)
input_sums() { md5sum $inputs; }
before=$(input_sums)

# refused NAME TAG FRAGMENT: TAG exited 2 saying FRAGMENT (a fixed string),
# or for "-" exited 0
refused() {
    local rc
    rc=$(cat "$2.rc")
    if [ "$3" = - ]; then
        [ "$rc" = 0 ] && pass "$1" || fail "$1" "exit $rc, want 0" "$2.err"
    elif [ "$rc" != 2 ]; then
        fail "$1" "exit $rc, want 2" "$2.err"
    elif ! grep -qF -- "$3" "$2.err"; then
        fail "$1" "no '$3' in $2.err" "$2.err"
    else
        pass "$1"
    fi
}

# ---- the good model: both accept it ------------------------------------------------------
run good "$CAIRN" eval ../tiny/model.h5 ../d.h5
refused good/eval good -
PY_CHECK='
import sys, cairn_model
out = open(sys.argv[1], "w")
for line in open(sys.argv[2]):
    name, model, data, fragment = line.rstrip("\n").split("\t")
    if sys.argv[3:] and name not in sys.argv[3:]:
        continue
    try:
        cairn_model.load(model).predict(data)
        got = "accepted\t"
    except cairn_model.ModelError as e:
        got = "ModelError\t%s" % e
    except Exception as e:
        got = "%s\t%s" % (type(e).__name__, e)
    out.write("%s\t%s\n" % (name, got.replace("\n", " ")))'
echo "good	../tiny/model.h5	../d.h5	-" >good.tsv
py "$PY_CHECK" good.py.tsv good.tsv
expect_eq good/python "$(cut -f2 good.py.tsv)" accepted

# ---- every crafted case through cairn eval and the Python loader -------------------------
# one Python process for all but the FIFO, which gets its own timeout
timeout -k 5 "$T_TIMEOUT" /usr/bin/python3 -c "$PY_CHECK" py.tsv manifest.tsv $(cut -f1 manifest.tsv | grep -vx fifo)
timeout -k 5 10 /usr/bin/python3 -c "$PY_CHECK" fifo.py.tsv manifest.tsv fifo
cat fifo.py.tsv >>py.tsv 2>/dev/null # nothing if it hung
while IFS=$'\t' read -r name model data fragment; do
    run "eval-$name" "$CAIRN" eval "$model" "$data"
    refused "$name/eval" "eval-$name" "$fragment"
    got=$(awk -F'\t' -v n="$name" '$1 == n { print $2 "\t" $3 }' py.tsv)
    if [ "$fragment" = - ]; then
        expect_eq "$name/python" "$got" "accepted	"
    elif [ "${got%%	*}" != ModelError ]; then
        fail "$name/python" "got '${got:-nothing (a hang?)}', want ModelError"
    elif ! grep -qF -- "$fragment" <<<"$got"; then
        fail "$name/python" "ModelError '${got#*	}' does not say '$fragment'"
    else
        pass "$name/python"
    fi
done <manifest.tsv

# ---- cairn predict: refused before anything is written -----------------------------------
for name in w_nan table_huge layers_fewer w_soft fifo; do
    line=$(grep "^$name	" manifest.tsv)
    IFS=$'\t' read -r _ model data fragment <<<"$line"
    run "predict-$name" "$CAIRN" predict "$model" "$data" -o "pred-$name.h5"
    refused "$name/predict" "predict-$name" "$fragment"
    [ -e "pred-$name.h5" ] && fail "$name/predict/no-file" "pred-$name.h5 was written" || pass "$name/predict/no-file"
done
# a table row found non-finite only when a batch reads it: mid-run, on 2 ranks
mpi predict-table_nan-2 2 predict table_nan.h5 ../d.h5 -o pred-2.h5 --batch 50
refused table_nan/predict-2-ranks predict-table_nan-2 "/embeddings/user/table: non-finite value at ["
ls pred-2.h5* >/dev/null 2>&1 && fail table_nan/predict-2-ranks/no-file "$(ls pred-2.h5*) left" ||
    pass table_nan/predict-2-ranks/no-file
expect_eq inputs-unchanged "$(input_sums)" "$before"
