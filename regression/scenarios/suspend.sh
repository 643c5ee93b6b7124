# Suspension: `scontrol suspend` (and gang scheduling, PreemptMode=SUSPEND)
# stops every process of a job with SIGSTOP, for as long as Slurm likes,
# and `scontrol resume` continues them.  A suspended job must go on as if
# nothing happened: the time it was stopped is no rank's idleness, for the
# watchdog or for the heartbeat ring.  Each case stops the demo for much
# longer than both watchdog.timeout and watchdog.liveness while it trains
# (right after a committed epoch), and the run must end 0, in one launch,
# with the model of an uninterrupted run, bit for bit.
#
# First without Slurm (kill -STOP / -CONT of every rank, the ranks resumed
# one after the other, a second apart, as a slow resume would), then with
# real `scontrol suspend` / `scontrol resume` on a private single-node
# cluster (slurm/testcluster), under mpirun and under srun.
# check: quiet (watchdog and liveness timeouts of a few seconds around a stop)
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=240
export CAIRN JOB=$JOBS/demo.cfg KILL_GRACE=5
epochs=(--set stop.max_epochs=3 --set steps_per_epoch=12)
# a fixed timeout far below the suspension (the automatic one is 60 s at
# least), still far above a demo step
guards=(--set watchdog.timeout=5 --set watchdog.liveness=3)
STOPPED=16 # seconds: more than 3 x watchdog.timeout, 5 x watchdog.liveness

demo_data data 2 demo.h5
mpi base 4 run "$JOB" --run-dir base "${epochs[@]}"
expect_rc baseline/exit base 0

# ranks TAG: the pids of the cairn ranks whose run directory is TAG
ranks() { pgrep -f -- "^$CAIRN run .*--run-dir $1( |$)" | xargs; }

# all_stopped PIDS...: every one is stopped (state T in /proc/PID/stat),
# waiting up to 10 s for the last
all_stopped() {
    local i p n
    for i in $(seq 1 50); do
        n=0
        for p in "$@"; do [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && n=$((n + 1)); done
        [ "$n" = $# ] && return 0
        sleep 0.2
    done
    return 1
}

# at TAG PATTERN: the Unix time of the first line of TAG/cairn.log that
# matches
at() { date -d "$(grep -Em1 -- "$2" "$1/cairn.log" | cut -c1-19)" +%s 2>/dev/null || echo 0; }

# went_on TAG OUT: the run in TAG (its output OUT) ended 0 in one launch,
# after a stop in epoch 2, with the uninterrupted run's model
went_on() {
    local tag=$1 out=$2 t1 t2 took
    t1=$(at "$tag" "checkpoint saved: epoch 1 step 0 ") t2=$(at "$tag" "epoch 2 done in ")
    [ $((t2 - t1)) -ge "$STOPPED" ] && pass "$tag/stopped-in-epoch-2" ||
        fail "$tag/stopped-in-epoch-2" "epoch 2 ended $((t2 - t1)) s after it began" "$tag/cairn.log"
    # its time, as logged, leaves the stop out (the log's clock has seconds)
    took=$(grep -Eom1 "epoch 2 done in [0-9]+" "$tag/cairn.log" | awk '{print $NF}')
    [ -n "$took" ] && [ "$took" -le $((t2 - t1 - STOPPED + 1)) ] && pass "$tag/stop-not-timed" ||
        fail "$tag/stop-not-timed" "epoch 2 took ${took:-?} s by the log, $((t2 - t1)) s by the clock" "$tag/cairn.log"
    expect_count "$tag/not-stalled" "$out" "stalled|has not been heard from|watchdog:" 0
    expect_count "$tag/not-resumed" "$tag/cairn.log" "resuming " 0
    expect_grep "$tag/trained-on" "$tag/cairn.log" "epoch 3 done in "
    expect_eq "$tag/exit-status" "$(cat "$tag/exit_status" 2>/dev/null)" 0
    same_bytes "$tag/same-model-bytes" base/model.h5 "$tag/model.h5"
}

# Without Slurm: all four ranks stopped in epoch 2, then continued in
# reverse rank order, a second apart.
(mpirun --oversubscribe -np 4 "$CAIRN" run "$JOB" --run-dir plain "${epochs[@]}" "${guards[@]}" \
    >plain.out 2>plain.err; echo $? >plain.rc) &
launched=$!
if wait_log plain/cairn.log "checkpoint saved: epoch 1 step 0 "; then
    pids=$(ranks plain)
    expect_eq plain/four-ranks "$(wc -w <<<"$pids")" 4
    kill -STOP $pids
    all_stopped $pids && pass plain/stopped || fail plain/stopped "not every rank stopped: $pids"
    sleep "$STOPPED"
    for p in $(tr ' ' '\n' <<<"$pids" | sort -rn); do kill -CONT "$p" && sleep 1; done
fi
( sleep "$T_TIMEOUT" && kill "$launched" ) 2>/dev/null &
guard=$!
wait "$launched"
kill "$guard" 2>/dev/null
expect_rc plain/exit plain 0
went_on plain plain.err

slurm_cluster 16877 slurm

# suspended TAG LAUNCHER: cairn.sbatch suspended by Slurm in epoch 2 for
# STOPPED seconds, then resumed
suspended() {
    local tag=$1 j pids
    j=$(RUN_DIR=$tag LAUNCHER=$2 sbatch --parsable -o "$tag.out" "$CAIRN_ROOT/slurm/cairn.sbatch" \
        "${epochs[@]}" "${guards[@]}")
    if wait_log "$tag/cairn.log" "checkpoint saved: epoch 1 step 0 "; then
        pids=$(ranks "$tag")
        scontrol suspend "$j"
        expect_eq "$tag/suspended" "$(scontrol -o show job "$j" | grep -o 'JobState=[A-Z_]*')" JobState=SUSPENDED
        expect_eq "$tag/four-ranks" "$(wc -w <<<"$pids")" 4
        all_stopped $pids && pass "$tag/ranks-stopped" || fail "$tag/ranks-stopped" "not every rank stopped: $pids"
        sleep "$STOPPED"
        scontrol resume "$j"
    fi
    expect_eq "$tag/completed" "$(job_wait "$j")" COMPLETED
    expect_eq "$tag/finished" "$(tail -n 1 "$tag.out" | cut -d, -f1)" "cairn.sbatch: cairn exited with 0"
    expect_count "$tag/one-launch" "$tag.out" "cairn.sbatch: job $j" 1
    went_on "$tag" "$tag.out"
}

suspended susp-mpirun mpirun
suspended susp-srun srun

"$CAIRN_ROOT/slurm/testcluster/stop" "$cluster"
trap - EXIT
