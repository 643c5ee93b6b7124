# The watchdog and background saves (checkpoint.async = true): a writer
# stuck for good is ended by the watchdog and the rerun ends with the bytes
# of synchronous saves; a save written inline (no writer thread) is watched
# with a save's allowance, as the writer's is.
# check: quiet (watchdog timeouts of a few seconds)
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=120
mpi data 2 data synth --out e.h5 --samples 3000 --features 4 --classes 2 --seed 5 \
    --table user:5000:1 --table item:700:3
expect_rc fixture/data data 0
cp "$CAIRN_ROOT/regression/jobs/emb_async.cfg" e.cfg
async=(--set checkpoint.async=true)
mpi sync 3 run e.cfg --run-dir sync
expect_rc sync/exit sync 0

# ---- a writer stopped for good: the watchdog ends the job -----------------------------------
# rank 1's writer pauses in epoch 2's write while its main thread trains
# on; every rank's watchdog sees a writer make no progress
CAIRN_FAULT=pause:write:1:2 mpi wd 3 run e.cfg --run-dir wd "${async[@]}" --set watchdog.timeout=6
expect_rc watchdog/exit wd 3
expect_grep watchdog/paused wd.err "rank 1: CAIRN_FAULT pauses this rank at write"
# (plus an allowance for the size when this run's saves were slow: 3 x the
# last save's time, which a loaded machine makes 0.5 s or more)
expect_grep watchdog/names-save wd.err "watchdog: no progress for [0-9]+ s \(watchdog.timeout 6 s(, plus [0-9]+ s for the checkpoint's size)?\) in saving the checkpoint of epoch 2 step 0"
expect_eq watchdog/committed "$(ckpt_ls wd/ckpt | awk '$5 == "ok" {print $1}' | xargs)" "0 1"
mpi wd-rerun 3 run e.cfg --run-dir wd "${async[@]}"
expect_rc watchdog/rerun wd-rerun 0
same_bytes watchdog/model sync/model.h5 wd/model.h5

# ---- the watchdog of a save without a thread ------------------------------------------------
# the counter job (4 epochs of one rank), its saves in the background
counter_data
mpi c-ref 1 run "$JOBS/counter.cfg" --run-dir c-ref
expect_rc no-thread/reference c-ref 0
# Epoch 2's save is slow in two parts (2 s at write, 2 s before the
# rename), each shorter than watchdog.timeout (3 s), together longer.
# Written by the writer thread, it is watched on the writer's lane, which
# each part's end moves on.  When no thread can be had (CAIRN_FAULT
# nothread), the main thread writes it at once: watched the same way (the
# main lane waits for it), not ended after 3 s as a stalled copy.
slow=slow:write@2:0:2,slow:before_rename@2:0:2
for t in thread nothread; do
    f=$slow
    [ $t = nothread ] && f=nothread:writer:0:2,$slow
    CAIRN_FAULT=$f mpi "c-$t" 1 run "$JOBS/counter.cfg" --run-dir "c-$t" "${async[@]}" --set watchdog.timeout=3
    expect_rc "no-thread/$t/exit" "c-$t" 0
    expect_grep "no-thread/$t/slow" "c-$t.err" "rank 0: CAIRN_FAULT holds this rank at before_rename for 2 s"
    expect_eq "no-thread/$t/result" "$(metric "c-$t/metrics.jsonl" log result)" "$(metric c-ref/metrics.jsonl log result)"
done
# Two ranks, rank 0 without a thread: rank 1's writer writes its share at
# once, but its main thread must not wait out rank 0's inline save (4 s)
# in the next step's first collective, watched as idleness (3 s): it
# waits beside the save, paused, and the run ends as the reference does.
mpi c-ref2 2 run "$JOBS/counter.cfg" --run-dir c-ref2 --set groups.0.ranks=2
expect_rc no-thread/two-ranks/reference c-ref2 0
CAIRN_FAULT=nothread:writer:0:2,$slow mpi c-two 2 run "$JOBS/counter.cfg" --run-dir c-two \
    --set groups.0.ranks=2 "${async[@]}" --set watchdog.timeout=3
expect_rc no-thread/two-ranks/exit c-two 0
expect_grep no-thread/two-ranks/inline c-two.err "rank 0: CAIRN_FAULT holds this rank at before_rename for 2 s"
expect_eq no-thread/two-ranks/result "$(metric c-two/metrics.jsonl log result)" "$(metric c-ref2/metrics.jsonl log result)"
