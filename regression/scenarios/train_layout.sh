# Layout independence: after several epochs the final parameters are bit
# for bit the same for 1, 2 or 3 PS shards and 1 or 2 pipeline stages; with
# 2 data-parallel replicas instead of 1 (same global batch and micro-batch
# split) they agree within 1e-5 relative (the replicas' gradients are
# added in another order).  A restart that changes the number of PS shards
# continues exactly.
. "$(dirname "$0")/../lib.sh"
enter
synth data 2 d.h5 4096 16 6 9 4
# the small model job, wider, on 6 classes, 1 stage and 1 shard to start
cp "$CAIRN_ROOT/regression/jobs/mlp.cfg" li.cfg
li=(--set 'name="li"' --set seed=5 --set steps_per_epoch=20 --set pipeline.stages=1 --set ps.shards=1
    --set ps.weight_decay=0.0001
    --set 'model.layers=({ units = 48; activation = "relu"; }, { units = 32; activation = "tanh"; },
                         { units = 6; activation = "identity"; })')

within() { # a b tolerance: prints the largest relative difference; exit 0 if within
    py 'import h5py, numpy as np, sys
a, b, tol = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), float(sys.argv[3])
worst = max(float(np.abs(a[n][()] - b[n][()]).max() / np.abs(a[n][()]).max())
            for n in (f"layers/{l}/{w}" for l in range(3) for w in "Wb"))
print(worst); sys.exit(0 if worst <= tol else 1)' "$1" "$2" "$3"
}

for S in 1 2; do
    for P in 1 2 3; do
        mpi "S$S-P$P" $((S + P)) run li.cfg "${li[@]}" --run-dir "S$S-P$P" --set pipeline.stages=$S --set ps.shards=$P
        expect_rc "S$S-P$P/exit" "S$S-P$P" 0
        [ -e "S$S-P$P/model.h5" ] || continue
        [ "$S$P" = 11 ] && continue
        same_model "S$S-P$P/bitwise" S1-P1/model.h5 "S$S-P$P/model.h5"
    done
done

# two replicas of one stage, one micro-batch each = one replica, two micro-batches
mpi R2 3 run li.cfg "${li[@]}" --run-dir R2 --set replicas=2 --set pipeline.chunks=1
expect_rc R2/exit R2 0
d=$(within S1-P1/model.h5 R2/model.h5 1e-5) && pass "R2/within-1e-5 ($d)" || fail R2/within-1e-5 "relative difference $d"
h5diff -q S1-P1/model.h5 R2/model.h5 /layers >/dev/null 2>&1 && fail R2/not-trivially-equal "bitwise equal: the test would not see a difference" ||
    pass R2/summation-order-differs

# elastic PS: 2 shards for 1 epoch, then 3 shards to the end = 2 shards throughout
mpi e1 3 run li.cfg "${li[@]}" --run-dir el --set ps.shards=2 --set stop.max_epochs=1
mpi e2 4 run li.cfg "${li[@]}" --run-dir el --set ps.shards=3
expect_grep elastic-ps/resumed e2.out "resuming after epoch 1 "
same_model elastic-ps/bitwise S1-P1/model.h5 el/model.h5
