# The counter job (jobs/counter.cfg) on 1 and on several ranks: the total
# after every epoch, the epochs run, the downloaded result, idle ranks.
. "$(dirname "$0")/../lib.sh"
enter
counter_data

want_totals="103 115 136 145"

check_run() { # name tag
    expect_rc "$1/exit" "$2" 0
    expect_eq "$1/totals" "$(metric "$2/metrics.jsonl" log total)" "$want_totals"
    expect_eq "$1/result" "$(metric "$2/metrics.jsonl" log result)" "145"
    expect_eq "$1/epochs" "$(metric "$2/metrics.jsonl" done epochs)" "4"
    expect_grep "$1/epochs-logged" "$2.out" "job counter finished: 4 epochs run"
}

run single "$CAIRN" run "$JOBS/counter.cfg" --run-dir single
check_run singleton single

mpi np1 1 run "$JOBS/counter.cfg" --run-dir np1
check_run np1 np1

# three readers share each epoch's 3 records: 1 record each
mpi np3 3 run "$JOBS/counter.cfg" --run-dir np3 --set groups.0.ranks=3
check_run group3 np3

# two readers of a group of 2, two spare ranks that must not hang
mpi spare 4 run "$JOBS/counter.cfg" --run-dir spare --set groups.0.ranks=2
check_run spare spare
expect_grep spare/warning spare.out "warning: 4 ranks given but the groups use 2; ranks 2-3 idle"

# the log file holds what rank 0 printed, and reads well in a Slurm output file
expect_grep log-file np3/cairn.log "epoch 4 step 1: main/total = 145"
expect_grep phase-durations np3/cairn.log "init done in [0-9.]+ s"

# max_epochs stops earlier than the reader
mpi short 2 run "$JOBS/counter.cfg" --run-dir short --set stop.max_epochs=2
expect_rc short/exit short 0
expect_eq short/totals "$(metric short/metrics.jsonl log total)" "103 115"
expect_grep short/reason short.out "stopping after epoch 2: max_epochs reached"
