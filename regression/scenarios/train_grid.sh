# Pipeline stages on T ranks (pipeline.ranks_per_stage): each stage's layers
# run as ScaLAPACK p?gemm on a T x 1 grid.
#  - gradient transparency: one mini-batch's gradients for T = 1, 2, 4
#    match the single-process reference within 1e-5 of the gradient's
#    largest magnitude in f32 (1e-12 in f64): the sums over a layer's
#    inputs and outputs are split over the members and added in
#    another order, so the last bits differ; T = 1 stays bitwise;
#  - layout independence: trained parameters for T = 2 and 4 (and 2
#    replicas of T = 2) agree with T = 1 within 1e-5 relative; 2 replicas
#    of T = 2 are bitwise 1 replica of T = 2;
#  - a run stopped and resumed at the same T is bitwise the uninterrupted
#    one; a checkpoint of T = 2 resumes at T = 1;
#  - model.rank_memory_mb: a layer too large for one rank is refused at
#    T = 1 and trains at T = 2.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=90
synth data 2 g.h5 1024 16 5 3 4
cat >g.cfg <<'CFG'
name = "grid";
seed = 5;
model = { inputs = 16;
  layers = ( { units = 24; activation = "tanh"; }, { units = 16; activation = "relu"; },
             { units = 20; activation = "sigmoid"; }, { units = 5; activation = "identity"; } ); };
data = { file = "g.h5"; batch = 50; };
pipeline = { block = 4; chunks = 4; };
ps = { shards = 2; optimizer = "sgd"; lr = 0.1; };
stop = { max_epochs = 1; };
steps_per_epoch = 1;
debug = { grads = "dist.h5"; };
CFG

# close A B TOL: every gradient of B within TOL of A's largest magnitude
close() {
    py 'import h5py, numpy as np, sys
a, b, tol = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), float(sys.argv[3])
names = [f"grads/L{l}/{w}" for l in range(4) for w in "Wb"]
worst = max(float(np.abs(a[n][()] - b[n][()]).max() / np.abs(a[n][()]).max()) for n in names)
print(f"{worst:.1e}"); sys.exit(0 if worst <= tol else 1)' "$1" "$2" "$3"
}

for dt in f32 f64; do
    tol=1e-5
    [ $dt = f64 ] && tol=1e-12
    run "ref-$dt" "$CAIRN" grads g.cfg -o "ref-$dt.h5" --set model.dtype=$dt
    expect_rc "grads/$dt/reference" "ref-$dt" 0
    for S in 1 2; do
        for T in 1 2 4; do
            name=grads/$dt/S$S-T$T
            rm -f dist.h5
            mpi "g-$dt-$S-$T" $((S * T + 2)) run g.cfg --run-dir "g-$dt-$S-$T" --set model.dtype=$dt \
                --set pipeline.stages=$S --set pipeline.ranks_per_stage=$T
            if [ "$(cat "g-$dt-$S-$T.rc")" != 0 ]; then
                fail "$name" "exit $(cat "g-$dt-$S-$T.rc")" "g-$dt-$S-$T.err"
            elif [ $T = 1 ]; then
                same_h5 "$name/bitwise" "ref-$dt.h5" dist.h5 /grads
            else
                d=$(close "ref-$dt.h5" dist.h5 $tol) && pass "$name/within-$tol ($d)" ||
                    fail "$name/within-$tol" "largest difference $d of the largest gradient"
            fi
        done
    done
done

# ---- training: layout independence, resume and elastic restart -------------------
synth data2 2 d.h5 4096 16 6 9 4
cp "$CAIRN_ROOT/regression/jobs/mlp.cfg" li.cfg
li=(--set 'name="gl"' --set seed=5 --set steps_per_epoch=10 --set pipeline.stages=2 --set ps.shards=1
    --set pipeline.block=8 --set ps.optimizer='"sgd"' --set ps.lr=0.05
    --set 'model.layers=({ units = 48; activation = "relu"; }, { units = 32; activation = "tanh"; },
                         { units = 6; activation = "identity"; })')

within() { # a b tolerance: prints the largest relative difference; exit 0 if within
    py 'import h5py, numpy as np, sys
a, b, tol = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), float(sys.argv[3])
worst = max(float(np.abs(a[n][()] - b[n][()]).max() / np.abs(a[n][()]).max())
            for n in (f"layers/{l}/{w}" for l in range(3) for w in "Wb"))
print(f"{worst:.1e}"); sys.exit(0 if worst <= tol else 1)' "$1" "$2" "$3"
}

mpi T1 3 run li.cfg "${li[@]}" --run-dir T1
expect_rc train/T1/exit T1 0
for v in "T2 5 1" "T4 9 1" "R2T2 9 2"; do
    set -- $v
    mpi "$1" "$2" run li.cfg "${li[@]}" --run-dir "$1" --set pipeline.ranks_per_stage=${1: -1} \
        --set replicas=$3
    expect_rc "train/$1/exit" "$1" 0
    d=$(within T1/model.h5 "$1/model.h5" 1e-5) && pass "train/$1/within-1e-5 ($d)" ||
        fail "train/$1/within-1e-5" "relative difference $d"
done
same_model train/R2T2/bitwise-as-one-replica T2/model.h5 R2T2/model.h5 # the gradient tree, at T = 2 too
h5differ T1/model.h5 T2/model.h5 /layers && pass train/T2/sums-split ||
    fail train/T2/not-trivially-equal "T = 2 gave T = 1's bits (or no model): the test would not see a difference"

# resume at the same T: stop after epoch 1, go on to 3 = 3 epochs at once
mpi rs1 5 run li.cfg "${li[@]}" --run-dir rs --set pipeline.ranks_per_stage=2 --set stop.max_epochs=1
mpi rs2 5 run li.cfg "${li[@]}" --run-dir rs --set pipeline.ranks_per_stage=2
expect_grep resume/resumed rs2.out "resuming after epoch 1 "
same_model resume/bitwise T2/model.h5 rs/model.h5

# elastic: epoch 1 at T = 2, then on from its checkpoint at T = 1
mpi el1 5 run li.cfg "${li[@]}" --run-dir el --set pipeline.ranks_per_stage=2 --set stop.max_epochs=1
mpi el2 3 run li.cfg "${li[@]}" --run-dir el --set pipeline.ranks_per_stage=1
expect_rc elastic/exit el2 0
expect_grep elastic/resumed el2.out "resuming after epoch 1 "
expect_grep elastic/layout el2.out "layout changed since that checkpoint: world 5 -> 3 ranks"
d=$(within T1/model.h5 el/model.h5 1e-5) && pass "elastic/within-1e-5 ($d)" ||
    fail elastic/within-1e-5 "relative difference $d"

# ---- the per-rank memory cap ---------------------------------------------------------
cat >wide.cfg <<'CFG'
name = "wide";
seed = 3;
model = { inputs = 16; rank_memory_mb = 3;
  layers = ( { units = 1024; activation = "relu"; }, { units = 512; activation = "relu"; },
             { units = 6; activation = "identity"; } ); };
data = { file = "d.h5"; batch = 64; };
pipeline = { ranks_per_stage = 2; };
ps = { shards = 3; optimizer = "sgd"; };
stop = { max_epochs = 1; };
steps_per_epoch = 2;
CFG
# the 1024 x 512 layer: 2 MiB, and as much again for its gradient
mpi cap-T2 5 run wide.cfg --run-dir cap2
expect_rc memory/T2-trains cap-T2 0
run cap-T1 "$CAIRN" check wide.cfg --set pipeline.ranks_per_stage=1
expect_rc memory/T1-refused cap-T1 2
expect_grep memory/T1-message cap-T1.err \
    "wide.cfg:3: pipeline stage 0 needs 4\.2 MiB per rank .*ranks_per_stage = 1, over model.rank_memory_mb = 3: it fits with pipeline.ranks_per_stage = 2"
mpi cap-T1-run 4 run wide.cfg --run-dir cap1 --set pipeline.ranks_per_stage=1
expect_rc memory/T1-run-refused cap-T1-run 2
[ -e cap1/ckpt ] && fail memory/T1-nothing-written "cap1/ckpt exists" || pass memory/T1-nothing-written
run cap-ps "$CAIRN" check wide.cfg --set ps.shards=1
expect_rc memory/ps-refused cap-ps 2
expect_grep memory/ps-message cap-ps.err "wide.cfg:3: each PS shard needs up to .* with ps.shards = 1, over model.rank_memory_mb = 3: it fits with ps.shards = [2-9]"

# ---- print shows each stage's grid ----------------------------------------------------
run print "$CAIRN" print li.cfg "${li[@]}" --set pipeline.ranks_per_stage=2 --set replicas=2
expect_grep print/grid print.out "^  stage0: ranks 0-3 \(2 ranks per replica on a 2 x 1 BLACS grid, blocks of 8\)$"
expect_grep print/ps print.out "^  ps: rank 8$"
