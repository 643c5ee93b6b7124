# Background saves (checkpoint.async = true) of a model job with embedding
# tables on 2 PS shards: the same checkpoint files and model.h5 bytes as
# synchronous saves; a resume from every epoch's checkpoint ends with the
# same bytes; a kill at each point of a background write and commit leaves
# the previous checkpoint the newest loadable one and the rerun ends with
# the same bytes; a save held in flight (CAIRN_FAULT hold) makes the next
# one wait and say so, and a preemption then finishes it before its own
# save; the main lane's automatic watchdog timeout leaves a background
# save's time out; debug.grads is refused beside background saves.  The
# watchdog's cases of a few seconds are in ckpt_async_watch.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=120
mpi data 2 data synth --out e.h5 --samples 3000 --features 4 --classes 2 --seed 5 \
    --table user:5000:1 --table item:700:3
expect_rc fixture/data data 0
cp "$CAIRN_ROOT/regression/jobs/emb_async.cfg" e.cfg
async=(--set checkpoint.async=true)
# stalls: the metrics' ckpt_stall lines, "background" or "now" per save
stalls() { grep '"kind":"ckpt_stall"' "$1" | sed -n 's/.*"background":\(true\|false\).*/\1/p' |
    sed 's/true/background/; s/false/now/' | xargs; }

# ---- the same bytes as synchronous saves ----------------------------------------------
mpi sync 3 run e.cfg --run-dir sync
expect_rc sync/exit sync 0
expect_eq sync/every-save-now "$(stalls sync/metrics.jsonl)" "now now now now now"
mpi async 3 run e.cfg --run-dir async "${async[@]}"
expect_rc async/exit async 0
# epoch 0 to 3 in the background; the last before the download, at once
expect_eq async/saves "$(stalls async/metrics.jsonl)" "background background background background now"
same_bytes async/model sync/model.h5 async/model.h5
for e in 0 1 2 3 4; do
    same_bytes "async/checkpoint-$e" "sync/ckpt/ckpt-e00000$e.h5" "async/ckpt/ckpt-e00000$e.h5"
done
expect_count async/committed-each async/cairn.log "checkpoint saved: epoch [0-4] step 0" 5

# ---- a resume from every epoch ----------------------------------------------------------
for e in 0 1 2 3; do
    cp -r async "r$e"
    mpi "res$e" 3 run e.cfg --run-dir "r$e" --resume=$e "${async[@]}"
    expect_rc "resume$e/exit" "res$e" 0
    expect_grep "resume$e/from" "res$e.out" "resuming after epoch $e "
    same_bytes "resume$e/model" sync/model.h5 "r$e/model.h5"
done

# ---- a kill at each point of epoch 2's background write and commit ---------------------
# point rank resume-epoch
for spec in "allocate 0 1" "write 1 1" "write 0 1" "before_rename 0 1" "after_rename 0 1" \
    "index_tmp 0 1" "after_index 0 2"; do
    set -- $spec
    point=$1 rank=$2 from=$3 name=kill-$1-rank$2
    CAIRN_FAULT=kill:$point:$rank:2 mpi "$name" 3 run e.cfg --run-dir "$name" "${async[@]}"
    rc=$(cat "$name.rc")
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && pass "$name/killed" || fail "$name/killed" "exit $rc" "$name.err"
    expect_grep "$name/at-point" "$name.err" "CAIRN_FAULT kills this rank at $point"
    expect_eq "$name/newest-committed" "$(ckpt_ls "$name/ckpt" | tail -n 1 | cut -f1,5)" "$from	ok"
    for f in $(ckpt_ls "$name/ckpt" | cut -f3); do
        run "$name-verify" "$CAIRN" ckpt verify "$name/ckpt/$f"
        [ "$(cat "$name-verify.rc")" = 0 ] || fail "$name/listed-verify" "$f does not verify"
    done
    mpi "$name-rerun" 3 run e.cfg --run-dir "$name" "${async[@]}"
    expect_rc "$name/rerun-exit" "$name-rerun" 0
    expect_grep "$name/resumed-from" "$name-rerun.out" "resuming after epoch $from "
    same_bytes "$name/model" sync/model.h5 "$name/model.h5"
    expect_eq "$name/unfinished-removed" "$(ls "$name/ckpt" | grep -c '\.tmp')" 0
done

# ---- a save in flight: the next one waits for it -----------------------------------------
CAIRN_FAULT=hold:write:1:1 mpi held 3 run e.cfg --run-dir held "${async[@]}"
expect_rc held/exit held 0
expect_grep held/holding held.err "rank 1: CAIRN_FAULT holds the background save at write until the run waits for it"
expect_grep held/waited held.out "waited [0-9.]+ s for the background save of the checkpoint after epoch 1$"
expect_count held/wait-metric held/metrics.jsonl '"kind":"ckpt_wait","epoch":1,' 1
same_bytes held/model sync/model.h5 held/model.h5
same_bytes held/checkpoint-1 sync/ckpt/ckpt-e000001.h5 held/ckpt/ckpt-e000001.h5

# ---- preempted while a save is in flight -----------------------------------------------------
# epoch 2's save is held at its commit (rank 0, before the rename) until
# the run waits for it; USR1 after epoch 3's first step: the save in
# flight is finished, then the position saved
CAIRN_FAULT=hold:before_rename:0:2,signal:USR1:0:3 mpi pre 3 run e.cfg --run-dir pre "${async[@]}"
expect_rc pre/exit pre 75
expect_grep pre/holding pre.err "rank 0: CAIRN_FAULT holds the background save at before_rename"
expect_grep pre/waited pre.out "waited [0-9.]+ s for the background save of the checkpoint after epoch 2$"
expect_eq pre/committed "$(ckpt_ls pre/ckpt | cut -f1,2,5 | tr '\t\n' ' ')" "0 0 ok 1 0 ok 2 0 ok 2 1 ok "
expect_grep pre/preempted pre.err "preempted by signal USR1 in epoch 3 after step 1: checkpoint saved in"
mpi pre-rerun 3 run e.cfg --run-dir pre "${async[@]}"
expect_rc pre/rerun-exit pre-rerun 0
expect_grep pre/resumed pre-rerun.out "resuming in epoch 3 after step 1 "
same_bytes pre/model sync/model.h5 pre/model.h5

# ---- the main lane's automatic timeout beside a writer ------------------------------------
# (its 60 s floor is far from any healthy step: this case runs beside others)
counter_data
# The automatic timeout follows the slowest step and the slowest stall of
# the main lane by a save: of a background save, its copy alone.  Epoch
# 1's background save takes 22 s (its writer's lane allows that), and in
# epoch 3 rank 1 never ends op 'sum' (CAIRN_FAULT busy): rank 0 waits for
# it in 'allreduce_sum' and stops after the 60 s floor, not after 3 x 22 s.
CAIRN_FAULT=slow:write@22:0:1,busy:sum:1:3 T_TIMEOUT=150 mpi c-limit 2 run "$JOBS/counter.cfg" \
    --run-dir c-limit --set groups.0.ranks=2 "${async[@]}"
expect_rc main-limit/exit c-limit 3
expect_grep main-limit/slow-save c-limit.err "rank 0: CAIRN_FAULT holds this rank at write for 22 s"
expect_grep main-limit/floor c-limit/exit_status "^3 stalled: rank 0 \([^)]+\): watchdog: no progress for 60 s \(watchdog.timeout 60 s\) in epoch 3 step 1: task 'count' \(group main\): op 'allreduce_sum' "

# ---- refused beside it -----------------------------------------------------------------------
# debug.grads writes with collective HDF5 in a step, which the writer's HDF5 cannot run beside
run grads "$CAIRN" check e.cfg --set 'debug.grads="g.h5"' --set checkpoint.async=true
expect_rc refused/debug-grads grads 2
expect_grep refused/debug-grads-says grads.err "debug.grads writes its file with collective HDF5 calls in the first step, which cannot run beside a background save .*: set checkpoint.async = false with it"

# ---- the fault list is checked ---------------------------------------------------------------
CAIRN_FAULT=hold:write:0,bogus mpi badfault 3 run e.cfg --run-dir bf
expect_rc bad-fault/exit badfault 2
expect_grep bad-fault/names-part badfault.err "CAIRN_FAULT='hold:write:0,bogus': 'bogus' is not"
