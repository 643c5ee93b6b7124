# Gradient transparency: the gradients of one mini-batch computed by the
# pipeline (S = 1, 2, 3 stages; 1 or 4 micro-batches; every activation
# checkpointing mode; both schedules; 1, 2 or 4 replicas adding theirs over
# the gradient tree; 2 PS shards receiving the sum) equal, bit for bit, the
# single-process reference `cairn grads` computes with the same micro-batch
# split and no pipeline, PS or MPI; also when some micro-batches are empty
# (a mini-batch of 3 rows in 4 micro-batches, on 4 replicas).
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=60
synth data 2 g.h5 1024 16 5 3 4
cat >g.cfg <<'CFG'
name = "grads";
seed = 5;
model = { inputs = 16;
  layers = ( { units = 24; activation = "tanh"; }, { units = 16; activation = "relu"; },
             { units = 20; activation = "sigmoid"; }, { units = 5; activation = "identity"; } ); };
data = { file = "g.h5"; batch = 50; };
ps = { shards = 2; optimizer = "sgd"; lr = 0.1; };
stop = { max_epochs = 1; };
steps_per_epoch = 1;
debug = { grads = "dist.h5"; };
CFG

same() { h5same "$1" "$2" /grads; } # a b: every gradient bitwise equal

for M in 1 4; do
    run "ref$M" "$CAIRN" grads g.cfg -o "ref$M.h5" --set pipeline.chunks=$M
    expect_rc "reference/chunks$M" "ref$M" 0
done
# the split matters (else this test could not fail): 4 micro-batches differ from 1
same ref1.h5 ref4.h5 && fail reference/split-matters "1 and 4 micro-batches gave the same bits" ||
    pass reference/split-matters

for S in 1 2 3; do
    for M in 1 4; do
        for mode in always except_last never; do
            for sch in gpipe 1f1b; do
                name=S$S-M$M-$mode-$sch
                rm -f dist.h5
                mpi "$name" $((S + 2)) run g.cfg --run-dir "r-$name" --set pipeline.stages=$S \
                    --set pipeline.chunks=$M --set pipeline.checkpoint=$mode --set pipeline.schedule=$sch
                if [ "$(cat "$name.rc")" = 0 ] && same "ref$M.h5" dist.h5; then pass "$name"
                else fail "$name" "exit $(cat "$name.rc") or gradients differ from the reference" "$name.err"; fi
            done
        done
    done
done

# f64 models and the mean squared error loss too
for variant in "model.dtype=f64" "model.loss=mse"; do
    tag=${variant%%=*}
    run "ref-$tag" "$CAIRN" grads g.cfg -o "ref-$tag.h5" --set "$variant" --set pipeline.chunks=4
    rm -f dist.h5
    mpi "dist-$tag" 4 run g.cfg --run-dir "r-$tag" --set "$variant" --set pipeline.stages=2 --set pipeline.chunks=4
    same "ref-$tag.h5" dist.h5 && pass "$tag/bitwise" || fail "$tag/bitwise" "gradients differ" "dist-$tag.err"
done

# replicas: each runs its micro-batches, and their sums meet over the tree
for R in 2 4; do
    rm -f dist.h5
    mpi "R$R" $((2 * R + 2)) run g.cfg --run-dir "r-R$R" --set pipeline.stages=2 --set pipeline.chunks=4 \
        --set replicas=$R
    same ref4.h5 dist.h5 && pass "replicas$R/bitwise" || fail "replicas$R/bitwise" "gradients differ" "R$R.err"
done
run ref-tiny "$CAIRN" grads g.cfg -o ref-tiny.h5 --set pipeline.chunks=4 --set data.batch=3
for R in 1 2 4; do
    rm -f dist.h5
    mpi "tiny-R$R" $((R + 2)) run g.cfg --run-dir "r-tiny-R$R" --set pipeline.chunks=4 --set data.batch=3 \
        --set replicas=$R
    same ref-tiny.h5 dist.h5 && pass "empty-micro-batches/R$R" || fail "empty-micro-batches/R$R" "gradients differ" "tiny-R$R.err"
done
