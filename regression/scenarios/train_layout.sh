# Layout independence: after several epochs the final parameters are bit
# for bit the same for 1, 2 or 4 data-parallel replicas crossed with 1 or 2
# pipeline stages and 1 or 2 PS shards (and 3 shards, and 4 replicas of 2
# stages with 4 shards on 12 ranks): a mini-batch's micro-batches are the
# same whatever the replicas, and their gradients are added over one fixed
# tree whose top the replicas share.  The logged losses and accuracies are
# the same too, and a shard holds the same bytes whatever the replicas.  A
# restart that changes the number of PS shards or of replicas continues
# exactly.  A replica count the tree cannot keep is refused.
. "$(dirname "$0")/../lib.sh"
enter
synth data 2 d.h5 4096 16 6 9 4
# the small model job, wider, on 6 classes, 1 stage and 1 shard to start
cp "$CAIRN_ROOT/regression/jobs/mlp.cfg" li.cfg
li=(--set 'name="li"' --set seed=5 --set steps_per_epoch=20 --set pipeline.stages=1 --set ps.shards=1
    --set ps.weight_decay=0.0001
    --set 'model.layers=({ units = 48; activation = "relu"; }, { units = 32; activation = "tanh"; },
                         { units = 6; activation = "identity"; })')

li+=(--set pipeline.chunks=4)

for R in 1 2 4; do
    for S in 1 2; do
        for P in 1 2 3 4; do
            case $R-$S-$P in 1-*-3 | [124]-[12]-[12] | 4-2-4) ;; *) continue ;; esac
            d=R$R-S$S-P$P
            mpi "$d" $((R * S + P)) run li.cfg "${li[@]}" --run-dir "$d" --set replicas=$R \
                --set pipeline.stages=$S --set ps.shards=$P
            expect_rc "$d/exit" "$d" 0
            [ -e "$d/model.h5" ] || continue
            [ "$d" = R1-S1-P1 ] && continue
            same_model "$d/bitwise" R1-S1-P1/model.h5 "$d/model.h5"
            expect_eq "$d/same-losses" "$(metric "$d/metrics.jsonl" log loss) $(metric "$d/metrics.jsonl" log train_loss)" \
                "$(metric R1-S1-P1/metrics.jsonl log loss) $(metric R1-S1-P1/metrics.jsonl log train_loss)"
        done
    done
done
# steps of 1843, 1843 and 1 rows (3687 training rows): the last one's
# micro-batches 1-3 are empty, and so are replicas 1-3 of 4 in it
for R in 1 2 4; do
    mpi "tiny-R$R" $((R + 1)) run li.cfg "${li[@]}" --run-dir "tiny-R$R" --set replicas=$R --set data.batch=1843
    expect_rc "tiny-R$R/exit" "tiny-R$R" 0
done
same_model empty-micro-batches/R2 tiny-R1/model.h5 tiny-R2/model.h5
same_model empty-micro-batches/R4 tiny-R1/model.h5 tiny-R4/model.h5
# 20 steps: 6 passes of 3687 rows, then 2 steps of 1843
expect_eq empty-micro-batches/1-row-steps "$(metric tiny-R1/metrics.jsonl epoch samples | cut -d' ' -f1)" 25808

# the shards' gradient memory does not grow with the replicas
for R in 2 4; do
    expect_eq "R$R/shard-bytes" "$(metric R$R-S2-P2/metrics.jsonl epoch shard_bytes)" \
        "$(metric R1-S2-P2/metrics.jsonl epoch shard_bytes)"
done
[ -n "$(metric R1-S2-P2/metrics.jsonl epoch shard_bytes)" ] && pass shard-bytes/logged || fail shard-bytes/logged "no shard_bytes"

# elastic replicas: 2 replicas for 1 epoch, then 1 to the end, = 1
# throughout; 1 replica for 1 epoch, then 4
mpi r21a 3 run li.cfg "${li[@]}" --run-dir r21 --set replicas=2 --set stop.max_epochs=1
mpi r21b 2 run li.cfg "${li[@]}" --run-dir r21 --set replicas=1
expect_grep elastic-replicas/2-to-1-resumed r21b.out "resuming after epoch 1 "
same_model elastic-replicas/2-to-1 R1-S1-P1/model.h5 r21/model.h5
mpi r14a 2 run li.cfg "${li[@]}" --run-dir r14 --set replicas=1 --set stop.max_epochs=1
mpi r14b 5 run li.cfg "${li[@]}" --run-dir r14 --set replicas=4
expect_grep elastic-replicas/1-to-4-resumed r14b.out "resuming after epoch 1 "
same_model elastic-replicas/1-to-4 R1-S1-P1/model.h5 r14/model.h5

# a replica count that is no power of two dividing pipeline.chunks
mpi R3 4 run li.cfg "${li[@]}" --run-dir R3 --set replicas=3
expect_rc refused/exit R3 2
expect_grep refused/message R3.err "replicas = 3 is not a power of two that divides pipeline.chunks = 4: the micro-batches' gradients are added over one fixed tree, so that the model is the same bits for any number of replicas; use 1, 2, 4"

# elastic PS: 2 shards for 1 epoch, then 3 shards to the end = 2 shards throughout
mpi e1 3 run li.cfg "${li[@]}" --run-dir el --set ps.shards=2 --set stop.max_epochs=1
mpi e2 4 run li.cfg "${li[@]}" --run-dir el --set ps.shards=3
expect_grep elastic-ps/resumed e2.out "resuming after epoch 1 "
same_model elastic-ps/bitwise R1-S1-P1/model.h5 el/model.h5
