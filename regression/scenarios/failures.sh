# Runtime failures stop every rank promptly with exit 3 and a message that
# names the rank, the task and the op; input problems found at start-up
# exit 2 with FILE:LINE from rank 0 only.
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
expect_grep watchdog/rank0 wd.err "cairn: rank 0 \([^)]+\): watchdog: no progress for 2 s \(watchdog.timeout 2 s\) in saving the checkpoint of epoch 2 step 0 \(collective HDF5 I/O over all ranks\); a peer rank or its node is probably gone: ending the job"
expect_grep watchdog/rank1 wd.err "cairn: rank 1 \([^)]+\): watchdog: no progress for 2 s"
expect_eq watchdog/committed "$(ckpt_ls wd/ckpt | awk '$5 == "ok" {print $1}' | xargs)" "0 1"
mpi wd-rerun 2 run "$JOBS/counter.cfg" --run-dir wd --set groups.0.ranks=2
expect_rc watchdog/rerun wd-rerun 0
expect_grep watchdog/resumed wd-rerun.out "resuming after epoch 1 "
expect_eq watchdog/result "$(metric wd/metrics.jsonl log result)" "$(metric wd-ref/metrics.jsonl log result)"
