# Runtime failures stop every rank promptly with exit 3 and a message that
# names the rank, the task and the op; input problems found at start-up
# exit 2 with FILE:LINE from rank 0 only.
# check: quiet (watchdog timeouts of a few seconds)
. "$(dirname "$0")/../lib.sh"
enter
counter_data
T_TIMEOUT=60

# an op fails on rank 1 only (fault injection), in epoch 2, while the
# other ranks wait in a collective
CAIRN_FAULT=op:add:1:2 mpi onerank 3 run "$JOBS/counter.cfg" --run-dir r1 --set groups.0.ranks=3
expect_rc one-rank/exit onerank 3
expect_grep one-rank/names onerank.err "cairn: rank 1 \([^)]*\): epoch 2 step 1: task 'count' \(group main\): op 'add' \([^)]*counter.cfg:[0-9]+\): injected fault"
expect_grep one-rank/epoch1-done onerank.out "epoch 1 done"
# ... and leaves its reason where cairn.sbatch and the user read it
expect_grep one-rank/exit-status r1/exit_status "^3 fatal: rank 1 \([^)]*\): epoch 2 step 1: task 'count' \(group main\): op 'add' \([^)]*counter.cfg:[0-9]+\): injected fault \(CAIRN_FAULT\)$"
expect_count one-rank/exit-status-one-line r1/exit_status "" 1
expect_grep one-rank/logged r1/cairn.log "cairn\[1\]: rank 1 \([^)]*\): epoch 2 step 1: task 'count' .*: injected fault"

# every rank fails in a collective: uneven batches cannot be allreduced
cat >uneven.cfg <<'CFG'
name = "uneven";
groups = ( { name = "g"; ranks = 2; } );
init = ( { group = "g"; steps = ( { op = "fill"; out = "cur"; dtype = "i64"; } ); } );
epoch = ( { group = "g"; steps = (
    { op = "read"; in = "cur"; out = ["b", "done"]; file = "counter.h5"; dataset = "values";
      limit = 3; dtype = "i64"; },
    { op = "allreduce_sum"; in = "b"; out = "b"; }
  ); } );
stop = { blobs = ["g/done"]; };
CFG
mpi uneven 2 run uneven.cfg --run-dir uneven
expect_rc collective/exit uneven 3
expect_grep collective/message uneven.err "op 'allreduce_sum' \(uneven.cfg:7\): blob 'b' has 1 to 2 elements"

# a missing data file is bad input, caught before init on every rank
mpi nofile 2 run "$JOBS/counter.cfg" --run-dir nofile --set groups.0.ranks=2 \
    --set 'epoch.0.steps.0.file="missing.h5"'
expect_rc missing-file/exit nofile 2
expect_count missing-file/rank0-only nofile.err "counter.cfg:[0-9]+: op 'read': cannot open HDF5 file 'missing.h5'" 1
[ ! -e nofile/metrics.jsonl ] || [ "$(metric nofile/metrics.jsonl phase phase)" = "" ] &&
    pass missing-file/no-init || fail missing-file/no-init "init ran"

# a dataset whose records do not have the declared shape
mpi shape 1 run "$JOBS/counter.cfg" --run-dir shape --set 'epoch.0.steps.0.record_shape=[2]'
expect_rc bad-shape/exit shape 2
expect_grep bad-shape/message shape.err "dataset 'values' in 'counter.h5' has shape \[10\]"

# a bad CAIRN_FAULT is itself reported
CAIRN_FAULT=bogus mpi badfault 1 run "$JOBS/counter.cfg" --run-dir bf
expect_rc bad-fault/exit badfault 2
CAIRN_FAULT=slow:write@0:0:1 mpi badslow 1 run "$JOBS/counter.cfg" --run-dir bf
expect_rc bad-fault/slow-seconds badslow 2
expect_grep bad-fault/slow-says badslow.err "CAIRN_FAULT='slow:write@0:0:1' is not .*slow:POINT\[@SECONDS\]:RANK\[:EPOCH\]"

# A rank stopped for good (CAIRN_FAULT pause) in the middle of epoch 2's
# checkpoint write: every rank's watchdog ends it within watchdog.timeout
# (exit 3, a line naming the rank, its host and the save), the committed
# checkpoints are untouched, and a rerun resumes after epoch 1 and ends as
# an uninterrupted run does.
mpi wd-ref 2 run "$JOBS/counter.cfg" --run-dir wd-ref --set groups.0.ranks=2
CAIRN_FAULT=pause:write:1:2 mpi wd 2 run "$JOBS/counter.cfg" --run-dir wd --set groups.0.ranks=2 \
    --set watchdog.timeout=2
expect_rc watchdog/exit wd 3
expect_grep watchdog/paused wd.err "rank 1: CAIRN_FAULT pauses this rank at write"
expect_grep watchdog/rank0 wd.err "cairn: rank 0 \([^)]+\): watchdog: no progress for [0-9]+ s \(watchdog.timeout 2 s(, plus [0-9]+ s for the checkpoint's size)?\) in saving the checkpoint of epoch 2 step 0 \(collective HDF5 I/O over all ranks\); the 1 other rank it waits for is in this work too, so none is late or lost: the work itself is stuck or slower than the timeout: ending the job"
expect_grep watchdog/rank1 wd.err "cairn: rank 1 \([^)]+\): watchdog: no progress for [0-9]+ s \(watchdog.timeout 2 s"
expect_grep watchdog/exit-status wd/exit_status "^3 stalled: rank [01] \([^)]+\): watchdog: no progress for [0-9]+ s \(watchdog.timeout 2 s"
expect_grep watchdog/logged wd/cairn.log "cairn(\[1\])?: rank [01] \([^)]+\): watchdog: no progress for [0-9]+ s \(watchdog.timeout 2 s"
expect_eq watchdog/committed "$(ckpt_ls wd/ckpt | awk '$5 == "ok" {print $1}' | xargs)" "0 1"
mpi wd-rerun 2 run "$JOBS/counter.cfg" --run-dir wd --set groups.0.ranks=2
expect_rc watchdog/rerun wd-rerun 0
expect_grep watchdog/resumed wd-rerun.out "resuming after epoch 1 "
expect_eq watchdog/result "$(metric wd/metrics.jsonl log result)" "$(metric wd-ref/metrics.jsonl log result)"
# The watchdog names the ranks a stuck collective waits for: it asks them
# over the liveness ring's communicator (never the stuck one) and waits 3 s
# for their answers.  Rank 1 of 3 never ends op 'sum' but shows progress
# (CAIRN_FAULT busy): ranks 0 and 2 wait for it in 'allreduce_sum', and the
# first of them to speak names rank 1, its host and where it is.
CAIRN_FAULT=busy:sum:1:2 mpi wd-late 3 run "$JOBS/counter.cfg" --run-dir wd-late --set groups.0.ranks=3 \
    --set watchdog.timeout=2
expect_rc watchdog/late/exit wd-late 3
expect_grep watchdog/late/busy wd-late.err "rank 1: CAIRN_FAULT keeps this rank busy in op 'sum'"
expect_grep watchdog/late/names-rank wd-late/exit_status "^3 stalled: rank [02] \($(hostname)\): watchdog: no progress for 2 s \(watchdog.timeout 2 s\) in epoch 2 step 1: task 'count' \(group main\): op 'allreduce_sum' \([^)]*counter.cfg:[0-9]+\), which waits for the group's other ranks; it waits for rank 1 \($(hostname)\) \[in epoch 2 step 1: task 'count' \(group main\): op 'sum' \([^)]*counter.cfg:[0-9]+\)\]; every rank it waits for answers, so none is lost: those named are elsewhere, late or stuck there: ending the job$"
expect_grep watchdog/late/logged wd-late/cairn.log "it waits for rank 1 \([^)]+\) \[in epoch 2 step 1"
# outside any op too: group b's rank waits for group a's in the save that
# follows the epoch, and names it and the op it is still in
cat >wd-two.cfg <<'CFG'
name = "two";
groups = ( { name = "a"; ranks = 1; }, { name = "b"; ranks = 1; } );
init = ( { group = "a"; steps = ( { op = "fill"; out = "n"; dtype = "i64"; value = 0; } ); },
         { group = "b"; steps = ( { op = "fill"; out = "n"; dtype = "i64"; value = 0; } ); } );
epoch = ( { name = "ta"; group = "a"; steps = ( { op = "sleep"; ms = 10; } ); },
          { name = "tb"; group = "b"; steps = ( { op = "sleep"; ms = 10; } ); } );
stop = { max_epochs = 2; };
watchdog = { timeout = 2; };
CFG
CAIRN_FAULT=busy:sleep:0:1 mpi wd-two 2 run wd-two.cfg --run-dir wd-two
expect_rc watchdog/elsewhere/exit wd-two 3
expect_grep watchdog/elsewhere/names-rank wd-two/exit_status "^3 stalled: rank 1 \([^)]+\): watchdog: no progress for [0-9]+ s \(watchdog.timeout 2 s(, plus [0-9]+ s for the checkpoint's size)?\) in saving the checkpoint of epoch 1 step 0 \(collective HDF5 I/O over all ranks\); it waits for rank 0 \($(hostname)\) \[in epoch 1 step 1: task 'ta' \(group a\): op 'sleep' \(wd-two.cfg:5\)\]; every rank it waits for answers"
# a rank that cannot answer (frozen, with the ring too slow to notice) is
# named as silent.  (A save's stall may add an allowance for the size when
# this run's saves were slow: 3 x the last save's time, which a loaded
# machine makes 0.5 s or more.)
CAIRN_FAULT=freeze:write:1:2 mpi wd-silent 3 run "$JOBS/counter.cfg" --run-dir wd-silent --set groups.0.ranks=3 \
    --set watchdog.timeout=2 --set watchdog.liveness=100
expect_rc watchdog/silent/exit wd-silent 3
expect_grep watchdog/silent/names-rank wd-silent/exit_status "^3 stalled: rank [02] \([^)]+\): watchdog: no progress for [0-9]+ s \(watchdog.timeout 2 s(, plus [0-9]+ s for the checkpoint's size)?\) in saving the checkpoint of epoch 2 step 0 \(collective HDF5 I/O over all ranks\); it waits for rank 1 \($(hostname)\) \[no answer within 3 s\]; a rank that gives no answer is stopped, or it, its node or the network to it is gone: ending the job$"
# with the liveness ring faster than the watchdog, a local stall is no lost
# peer, and the message says so
cat >wd-hint.cfg <<'CFG'
name = "hint";
groups = ( { name = "g"; ranks = 2; } );
init = ( { group = "g"; steps = ( { op = "fill"; out = "n"; dtype = "i64"; value = 0; } ); } );
epoch = ( { group = "g"; steps = ( { op = "sleep"; ms = 60000; } ); } );
stop = { max_epochs = 1; };
watchdog = { timeout = 4; liveness = 3; };
CFG
mpi wd-hint 2 run wd-hint.cfg --run-dir wd-hint
expect_rc watchdog/hint/exit wd-hint 3
expect_grep watchdog/hint/says wd-hint/exit_status "^3 stalled: rank [01] \([^)]+\): watchdog: no progress for 4 s .* op 'sleep' \(wd-hint.cfg:4\); every rank still sends its heartbeat \(watchdog.liveness\), so none is lost: this rank waits on work that is stuck or slower than the timeout: ending the job"

# The liveness ring: rank 1 of 3 freezes (SIGSTOP: no thread runs) in the
# middle of epoch 2's save.  Its successor, rank 2, hears nothing from it
# for watchdog.liveness seconds and ends the run (exit 3, "3 lost: ..."),
# long before the watchdog would; the committed checkpoints stay, and a
# rerun ends as an uninterrupted run does.
CAIRN_FAULT=freeze:write:1:2 mpi lv 3 run "$JOBS/counter.cfg" --run-dir lv --set groups.0.ranks=3 \
    --set watchdog.liveness=3 --set watchdog.timeout=100
expect_rc liveness/exit lv 3
expect_grep liveness/frozen lv.err "rank 1 \(pid [0-9]+\): CAIRN_FAULT freezes this rank at write"
expect_grep liveness/says lv.err "cairn: rank 2 \([^)]+\): rank 1 \([^)]+\) has not been heard from for [0-9]+ s \(watchdog.liveness 3 s\): that rank, its node or the network to it is gone; ending the job"
expect_grep liveness/exit-status lv/exit_status "^3 lost: rank 2 \([^)]+\): rank 1 \([^)]+\) has not been heard from"
expect_grep liveness/logged lv/cairn.log "rank 2 \([^)]+\): rank 1 \([^)]+\) has not been heard from"
expect_eq liveness/committed "$(ckpt_ls lv/ckpt | awk '$5 == "ok" {print $1}' | xargs)" "0 1"
mpi lv-rerun 3 run "$JOBS/counter.cfg" --run-dir lv --set groups.0.ranks=3
expect_rc liveness/rerun lv-rerun 0
expect_grep liveness/resumed lv-rerun.out "resuming after epoch 1 "
expect_eq liveness/result "$(metric lv/metrics.jsonl log result)" "$(metric wd-ref/metrics.jsonl log result)"

# A rank that cannot start the ring's threads ends the start on every rank
# with one line (before, the others waited for it in a collective for good)
# (3 s: the others wait for its first heartbeat up to 2 s before they agree)
CAIRN_FAULT=nothread:liveness:1 mpi lv-nothread 3 run "$JOBS/counter.cfg" --run-dir lv-nothread \
    --set groups.0.ranks=3 --set watchdog.liveness=3
expect_rc liveness/no-thread/exit lv-nothread 3
expect_grep liveness/no-thread/says lv-nothread/exit_status "^3 fatal: rank 1 \([^)]+\) cannot start its liveness threads; watchdog.liveness = 0 turns the liveness ring off$"
[ ! -e lv-nothread/metrics.jsonl ] || [ "$(metric lv-nothread/metrics.jsonl phase phase)" = "" ] &&
    pass liveness/no-thread/no-init || fail liveness/no-thread/no-init "init ran"

# A loss is reported once, by the rank that found it: rank 1 of 4 freezes
# (SIGSTOP) in epoch 2's save; its successor, rank 2, finds it silent,
# confirms that it gives no answer, names it and tells the others, which
# end at once and name nobody.  mpirun here waits 10 s before it kills the
# ranks left after one exits (odls_base_sigkill_timeout, as cairn.sbatch
# sets it): a ring that went on would then take rank 2, which ended on
# purpose, for a lost one (and rank 3 in turn).
OMPI_MCA_odls_base_sigkill_timeout=10 CAIRN_FAULT=freeze:write:1:2 mpi lv4 4 run "$JOBS/counter.cfg" \
    --run-dir lv4 --set groups.0.ranks=4 --set watchdog.liveness=3 --set watchdog.timeout=100
expect_rc liveness/once/exit lv4 3
expect_count liveness/once/one-finding lv4.err "has not been heard from" 1
expect_grep liveness/once/names-the-silent lv4.err "cairn: rank 2 \([^)]+\): rank 1 \([^)]+\) has not been heard from for [0-9]+ s \(watchdog.liveness 3 s\)"
expect_count liveness/once/logged-once lv4/cairn.log "has not been heard from" 1
expect_grep liveness/once/exit-status lv4/exit_status "^3 lost: rank 2 \([^)]+\): rank 1 \([^)]+\) has not been heard from"
expect_count liveness/once/no-other-named lv4/exit_status "rank [023] \([^)]+\) (has not been heard|do)" 0

# Each lane is watched on its own: an op that never ends (a 60 s sleep
# standing in for a collective hung on a dead peer) ends the run after
# watchdog.timeout beside a report step that logs every 100 ms, and in a
# parallel branch beside a busy one; before, their progress hid it.
cat >lanes-report.cfg <<'CFG'
name = "lanes";
groups = ( { name = "g"; ranks = 1; } );
init = ( { group = "g"; steps = ( { op = "fill"; out = "n"; dtype = "i64"; value = 0; } ); } );
epoch = ( { group = "g"; steps = (
    { report = 100; steps = ( { op = "log"; in = "n"; } ); },
    { op = "sleep"; ms = 60000; }
  ); } );
stop = { max_epochs = 1; };
watchdog = { timeout = 2; };
CFG
mpi lanes-report 1 run lanes-report.cfg --run-dir lanes-report
expect_rc lanes/report-exit lanes-report 3
expect_grep lanes/report-names-op lanes-report.err "watchdog: no progress for 2 s \(watchdog.timeout 2 s\) in epoch 1 step 1: task '[^']*' \(group g\): op 'sleep' \(lanes-report.cfg:6\)"
cat >lanes-branch.cfg <<'CFG'
name = "lanes";
groups = ( { name = "g"; ranks = 1; } );
init = ( { group = "g"; steps = ( { op = "fill"; out = "n"; dtype = "i64"; value = 0; } ); } );
epoch = ( { group = "g"; steps = ( { parallel = (
    ( { loop = 100000; steps = ( { op = "sleep"; ms = 10; } ); } ),
    ( { op = "sleep"; ms = 60000; } ) ); } ); } );
stop = { max_epochs = 1; };
watchdog = { timeout = 2; };
CFG
mpi lanes-branch 1 run lanes-branch.cfg --run-dir lanes-branch
expect_rc lanes/branch-exit lanes-branch 3
expect_grep lanes/branch-names-op lanes-branch.err "watchdog: no progress for 2 s \(watchdog.timeout 2 s\) in epoch 1 step 1: task '[^']*' \(group g\): op 'sleep' \(lanes-branch.cfg:6\)"

# A save that is slow but healthy (rank 0, which holds 200 MB, waits 5 s in
# the middle of it) ends no rank, not even rank 1, which holds nothing and
# waits in the collective I/O: every rank's allowance comes from the whole
# file (200 MB at 50 MB/s: 4 s) and adds to a fixed watchdog.timeout (3 s:
# room for the fill of 200 MB on a loaded machine, 2 s less than the wait).
cat >slowsave.cfg <<'CFG'
name = "slowsave";
groups = ( { name = "store"; ranks = 1; }, { name = "idle"; ranks = 1; } );
init = ( { group = "store"; steps = ( { op = "fill"; out = "x"; shape = [25000000]; dtype = "f64"; value = 1.0; } ); },
         { group = "idle"; steps = ( { op = "fill"; out = "n"; dtype = "i64"; value = 0; } ); } );
epoch = ( { group = "store"; steps = ( { op = "scale"; in = "x"; out = "x"; factor = 2.0; } ); },
          { group = "idle"; steps = ( { op = "sleep"; ms = 0; } ); } );
stop = { max_epochs = 1; };
checkpoint = { keep = 1; };
watchdog = { timeout = 3; };
CFG
CAIRN_FAULT=slow:write@5:0:1 mpi slowsave 2 run slowsave.cfg --run-dir slowsave
expect_rc slow-save/exit slowsave 0
expect_grep slow-save/was-slow slowsave.err "rank 0: CAIRN_FAULT holds this rank at write for 5 s"
expect_grep slow-save/saved slowsave.out "checkpoint saved: epoch 1 step 0 "
