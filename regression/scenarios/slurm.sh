# Slurm: the scripts users copy (slurm/cairn.sbatch, slurm/sweep.sbatch)
# on a private single-node cluster (slurm/testcluster) that this scenario
# starts and always stops.  The demo job (2 epochs) is preempted in every
# way Slurm preempts: USR1 from --signal, under mpirun and srun --mpi=pmix;
# TERM from scontrol requeue; three times in a row; the time limit with no
# signal; scancel; and in an array job.  Each requeued run must end with
# the model of an uninterrupted run, bit for bit.
#
# Slurm holds a requeued job back for cred_expire + 1 s (about 12 s here),
# so that the old run has surely ended; the waits below are that long.
# check: slots 2 (its waits are Slurm's and the logs', its timeouts the defaults: a little company)
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
slurm_cluster 16837
# mpirun's kill grace (cairn.sbatch): 2 x 5 s is ample for the demo and
# halves the wait each mpirun exit 75 costs
export CAIRN JOB=$JOBS/demo.cfg KILL_GRACE=5
SBATCH=$CAIRN_ROOT/slurm/cairn.sbatch
epochs=(--set stop.max_epochs=2)

demo_data data 2 demo.h5
mpi base 4 run "$JOB" --run-dir base "${epochs[@]}"
expect_rc baseline/exit base 0

# submit TAG LAUNCHER [SBATCH-OPTION...] [-- CAIRN-ARG...]: cairn.sbatch with
# run dir TAG and output TAG.out; prints the job id
submit() {
    local tag=$1 launcher=$2 opts=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    RUN_DIR=$tag LAUNCHER=$launcher sbatch --parsable -o "$tag.out" "${opts[@]}" \
        "${SCRIPT:-$SBATCH}" "${epochs[@]}" "$@"
}

# mid_epoch_2 TAG: wait until TAG is a little into epoch 2
mid_epoch_2() {
    wait_log "$1/cairn.log" "checkpoint saved: epoch 1 step 0 " && sleep 1.5
}

# preempted_step TAG [N]: the step after which TAG's Nth preemption saved
preempted_step() {
    grep -Eo 'preempted by .* after step [0-9]+' "$1/cairn.log" | sed -n "${2:-1}p" | awk '{print $NF}'
}

# usr1 TAG LAUNCHER: preempt mid-epoch 2 with USR1 from Slurm; the job
# saves, exits 75, requeues itself and resumes where it stopped
usr1() {
    local tag=$1 j s
    j=$(submit "$tag" "$2")
    mid_epoch_2 "$tag"
    scancel --signal=USR1 --batch "$j"
    expect_eq "$tag/completed" "$(job_wait "$j")" COMPLETED
    expect_grep "$tag/launcher" "$tag/cairn.log" "slurm: job $j, restart 0, nodes [^ ]+, launched by $2, ends "
    expect_grep "$tag/preempted-mid-epoch" "$tag/cairn.log" "preempted by signal USR1 in epoch 2 after step ([1-9]|[1-4][0-9]|5[01]): saving"
    s=$(preempted_step "$tag")
    expect_grep "$tag/saved-mid-epoch" "$tag/cairn.log" "checkpoint saved: epoch 1 step $s \(ckpt-e000001-s0*$s.h5\)"
    expect_grep "$tag/exit-75" "$tag.out" "cairn: preempted by signal USR1 in epoch 2 after step $s: checkpoint saved in $tag/ckpt; exit 75: rerun to continue"
    expect_grep "$tag/requeued-itself" "$tag/cairn.log" "requeueing slurm job $j: it resumes from this checkpoint"
    expect_count "$tag/requeue-answered" "$tag/cairn.log" "the requeue failed" 0
    expect_grep "$tag/restarted" "$tag/cairn.log" "slurm: job $j, restart 1, "
    expect_grep "$tag/resumed-at-step" "$tag/cairn.log" "resuming in epoch 2 after step $s \(init skipped\)"
    # the rest of epoch 2, no sample skipped or seen twice (26215 per epoch, 512 a step)
    expect_grep "$tag/rest-of-epoch" "$tag/cairn.log" "epoch 2 done in [0-9.]+ s \($((26215 - 512 * s)) samples"
    expect_grep "$tag/output-appended" "$tag.out" "cairn.sbatch: job $j, restart 0, "
    expect_eq "$tag/finished" "$(tail -n 1 "$tag.out" | cut -d, -f1)" "cairn.sbatch: cairn exited with 0"
    same_bytes "$tag/same-model-bytes" base/model.h5 "$tag/model.h5"
}

usr1 usr1-mpirun mpirun
usr1 usr1-srun srun
expect_grep usr1-srun/exit-75-from-srun usr1-srun.out "cairn.sbatch: cairn exited with 75"

# scontrol requeue: Slurm sends TERM to every process of the job, mpirun
# included; cairn saves before mpirun's kill grace runs out
j=$(submit requeue mpirun)
mid_epoch_2 requeue
scontrol requeue "$j"
expect_eq requeue/completed "$(job_wait "$j")" COMPLETED
# Slurm's TERM reaches the ranks directly and, passed on by cairn.sbatch as
# USR1, through the launcher: whichever comes first names the stop
expect_grep requeue/saved-on-term requeue/cairn.log "preempted by signal (TERM|USR1) in epoch 2 after step [0-9]+: saving"
expect_grep requeue/left-to-slurm requeue/cairn.log "not requeueing slurm job $j: it is [A-Z_]+ already"
# whatever mpirun returns when Slurm signals it, the log says what cairn did
expect_grep requeue/exit-75-logged requeue.out "cairn.sbatch: cairn exited with 75[ ,]"
s=$(preempted_step requeue)
expect_grep requeue/resumed-at-step requeue/cairn.log "resuming in epoch 2 after step $s \(init skipped\)"
same_bytes requeue/same-model-bytes base/model.h5 requeue/model.h5

# three preemptions at different points: mid-epoch 1, the start-up of the
# first restart, mid-epoch 2 of the second
j=$(submit thrice srun)
wait_log thrice/cairn.log "checkpoint saved: epoch 0 step 0 " && sleep 1.5
scancel --signal=USR1 --batch "$j"
wait_log thrice/cairn.log "resuming in epoch 1" && scancel --signal=USR1 --batch "$j"
mid_epoch_2 thrice
scancel --signal=USR1 --batch "$j"
expect_eq thrice/completed "$(job_wait "$j")" COMPLETED
expect_grep thrice/first-mid-epoch-1 thrice/cairn.log "preempted by signal USR1 in epoch 1 after step"
expect_grep thrice/third-mid-epoch-2 thrice/cairn.log "preempted by signal USR1 in epoch 2 after step"
expect_count thrice/preempted-3-times thrice/cairn.log "preempted by signal USR1 " 3
expect_count thrice/requeued-3-times thrice/cairn.log "requeueing slurm job $j:" 3
expect_grep thrice/restart-3 thrice/cairn.log "slurm: job $j, restart 3, "
expect_grep thrice/finished thrice/cairn.log "job demo finished: 2 epochs run"
same_bytes thrice/same-model-bytes base/model.h5 thrice/model.h5

# the time limit, no signal: a copy of cairn.sbatch without --signal, one
# minute, stopping 50 s before the end; every run stops and requeues
# itself until the job is done.  Rank 0's clock jumps a minute ahead after
# the first step of epoch 2, so the limit comes there at the latest,
# however fast this machine runs the job.  Progress lines come at every
# step: they show the time left, and once the clock has jumped, warn
# that the job cannot end before the limit.
sed '/^#SBATCH --signal/d' "$SBATCH" >nosignal.sbatch
j=$(CAIRN_FAULT=clock:60:0:2 SCRIPT=nosignal.sbatch submit limit srun --time=1 -- --set slurm.time_margin=50 --set progress=1e-9)
expect_eq time-limit/completed "$(job_wait "$j")" COMPLETED
n=$(grep -c "preempted by the time limit (margin 50 s) " limit/cairn.log)
[ "$n" -ge 1 ] && pass time-limit/stopped-by-limit || fail time-limit/stopped-by-limit "no time-limit stop" limit/cairn.log
expect_count time-limit/no-signal limit/cairn.log "preempted by signal" 0
expect_count time-limit/requeued limit/cairn.log "requeueing slurm job $j:" "$n"
expect_grep time-limit/by-epoch-2 limit/cairn.log "preempted by the time limit \(margin 50 s\) in epoch (1|2) after step"
expect_grep time-limit/end-time-logged limit/cairn.log "slurm: job $j, restart 0, .* ends [0-9-]+T"
expect_grep time-limit/progress-shows-limit limit/cairn.log "cairn: epoch [12] step [0-9]+/52 \([0-9]+%\): .*, job ETA [0-9:]+ \(epoch [12] of 2\), time limit in 0:0[01]:[0-9]{2}$"
expect_grep time-limit/warned limit/cairn.log "warning: at the measured rate the job needs about [0-9:]+ more, but Slurm's time limit comes in [0-9:]+: it will be stopped there"
same_bytes time-limit/same-model-bytes base/model.h5 limit/model.h5

# scancel: TERM, and the job is being cancelled, so cairn saves but does
# not requeue; rerunning the command continues
j=$(submit cancel srun)
mid_epoch_2 cancel
scancel "$j"
expect_eq scancel/cancelled "$(job_wait "$j")" CANCELLED
expect_grep scancel/saved cancel/cairn.log "preempted by signal (TERM|USR1) in epoch 2 after step [0-9]+: saving"
expect_grep scancel/not-requeued cancel/cairn.log "not requeueing slurm job $j: it is (CANCELLED|COMPLETING) already"
mpi cancel-rerun 4 run "$JOB" --run-dir cancel "${epochs[@]}"
expect_rc scancel/rerun cancel-rerun 0
expect_grep scancel/resumed cancel-rerun.out "resuming in epoch 2 after step"
same_bytes scancel/same-model-bytes base/model.h5 cancel/model.h5

# --no-requeue: saved, exit 75 through mpirun, and the job ends there
j=$(submit norq mpirun -- --no-requeue)
mid_epoch_2 norq
scancel --signal=USR1 --batch "$j"
expect_eq no-requeue/failed "$(job_wait "$j")" FAILED
expect_grep no-requeue/said-so norq/cairn.log "not requeueing slurm job $j \(--no-requeue\)"
expect_grep no-requeue/exit-75 norq.out "cairn.sbatch: cairn exited with 75"
expect_count no-requeue/ran-once norq.out "cairn.sbatch: job" 1

# an array job: three settings, each task in its own run directory; task 1
# (the demo's own learning rate) is preempted and requeues itself by its
# ARRAYJOB_TASK id
j=$(CAIRN_SBATCH=$SBATCH SWEEP_DIR=sweep LAUNCHER=srun sbatch --parsable --array=0-2 \
    -o 'sweep-%a.out' "$CAIRN_ROOT/slurm/sweep.sbatch" "${epochs[@]}")
mid_epoch_2 sweep/1
scancel --signal=USR1 --batch "${j}_1"
expect_eq array/completed "$(job_wait "$j")" "COMPLETED COMPLETED COMPLETED"
for t in 0 1 2; do
    lr=$(sed -n "$((t + 1))p" <<<"0.0005
0.001
0.002")
    expect_grep "array/$t/setting" "sweep-$t.out" "cairn run $JOB --run-dir sweep/$t --set ps.lr=$lr --set stop.max_epochs=2"
    expect_grep "array/$t/task-id" "sweep/$t/cairn.log" "slurm: job ${j}_$t, restart 0, "
    [ -f "sweep/$t/model.h5" ] && pass "array/$t/model" || fail "array/$t/model" "no sweep/$t/model.h5" "sweep-$t.out"
done
expect_grep array/1/requeued sweep/1/cairn.log "requeueing slurm job ${j}_1: it resumes"
expect_grep array/1/restarted sweep/1/cairn.log "slurm: job ${j}_1, restart 1, "
same_bytes array/1/same-model-bytes base/model.h5 sweep/1/model.h5
cmp -s sweep/0/model.h5 sweep/2/model.h5 && fail array/settings-differ "tasks 0 and 2 made the same model" ||
    pass array/settings-differ

# a run that dies (rank 1 killed mid-save in epoch 2, in the first run
# only): cairn.sbatch requeues the job itself under either launcher, and the
# rerun resumes from epoch 1 with the same model
for L in mpirun srun; do
    first_run_fault kill:write:1:2
    j=$(CAIRN=$PWD/once.sh submit "died-$L" $L)
    expect_eq "died-$L/completed" "$(job_wait "$j")" COMPLETED
    # the launcher ends the rest, or the ring notices the silent rank first
    expect_grep "died-$L/said" "died-$L.out" "cairn.sbatch: the run (died \($L returned [0-9]+; cairn did not end in order\)|lost \(3 lost: rank [0-9]+ \([^)]+\): rank 1 \([^)]+\) has not been heard from)"
    expect_grep "died-$L/requeued" "died-$L.out" "cairn.sbatch: requeueing job $j to resume from its newest checkpoint"
    expect_grep "died-$L/resumed" "died-$L/cairn.log" "resuming after epoch 1 "
    same_bytes "died-$L/same-model-bytes" base/model.h5 "died-$L/model.h5"
done
# a failure cairn diagnosed itself (an op fails on rank 1 in epoch 2): its
# reason is in exit_status and cairn.log, and a rerun cannot help, so
# cairn.sbatch neither reruns nor requeues it, under either launcher
for L in mpirun srun; do
    j=$(CAIRN_FAULT=op:train_step:1:2 submit "fatal-$L" $L)
    expect_eq "fatal-$L/failed" "$(job_wait "$j")" FAILED
    expect_grep "fatal-$L/exit-status" "fatal-$L/exit_status" "^3 fatal: rank 1 \([^)]+\): epoch 2 step 1: task 'train1' \(group stage1\): op 'train_step' .*: injected fault"
    expect_grep "fatal-$L/logged" "fatal-$L/cairn.log" "cairn\[1\]: rank 1 .*op 'train_step' .*: injected fault"
    expect_grep "fatal-$L/said" "fatal-$L.out" "cairn.sbatch: cairn exited with 3"
    expect_count "fatal-$L/ran-once" "fatal-$L.out" "cairn.sbatch: job" 1
    expect_count "fatal-$L/not-requeued" "fatal-$L.out" "requeueing" 0
done
first_run_fault kill:write:1:2
j=$(CAIRN=$PWD/once.sh submit died-norq mpirun -- --no-requeue)
expect_eq died-no-requeue/failed "$(job_wait "$j")" FAILED
expect_grep died-no-requeue/said died-norq.out "cairn.sbatch: not running again \(--no-requeue\)"

# the template from an installed copy (make install PREFIX): cairn and the
# job come from the module's environment (PATH, CAIRN_SHARE), none from
# this tree
run install make -s -C "$CAIRN_ROOT" install PREFIX="$PWD/opt"
expect_rc installed/install install 0
j=$(env -u CAIRN -u JOB PATH="$PWD/opt/bin:$PATH" CAIRN_SHARE="$PWD/opt/share/cairn" RUN_DIR=installed \
    LAUNCHER=mpirun sbatch --parsable -o installed.out "$PWD/opt/share/cairn/slurm/cairn.sbatch" "${epochs[@]}")
expect_eq installed/completed "$(job_wait "$j")" COMPLETED
expect_grep installed/its-cairn installed.out "cairn.sbatch: job $j, restart 0, .*: mpirun -np 4 cairn run $PWD/opt/share/cairn/jobs/demo.cfg --run-dir installed "
same_bytes installed/same-model-bytes base/model.h5 installed/model.h5

# launches that cannot work: one clear line from task 0, exit 2
for plugin in pmi2 none; do
    run "srun-$plugin" srun --mpi=$plugin -n 2 "$CAIRN" run "$JOB" --run-dir "srun-$plugin"
    expect_rc "srun-$plugin/exit" "srun-$plugin" 2
    expect_count "srun-$plugin/one-line" "srun-$plugin.err" "^cairn: " 1
    run "srun-$plugin-predict" srun --mpi=$plugin -n 2 "$CAIRN" predict base/model.h5 demo.h5 -o "srun-$plugin.h5"
    expect_rc "srun-$plugin/predict/exit" "srun-$plugin-predict" 2
    expect_count "srun-$plugin/predict/one-line" "srun-$plugin-predict.err" "^cairn: " 1
    [ -e "srun-$plugin.h5" ] && fail "srun-$plugin/predict/no-file" "written" || pass "srun-$plugin/predict/no-file"
done
expect_grep srun-pmi2/message srun-pmi2.err "^cairn: cairn was started by srun --mpi=pmi2, which this Open MPI cannot use .*; launch it with srun --mpi=pmix, or with mpirun inside the allocation$"
expect_grep srun-none/message srun-none.err "^cairn: cairn was started by srun without an MPI plugin"

# nothing left behind
"$CAIRN_ROOT/slurm/testcluster/stop" "$cluster"
trap - EXIT
left=$(pgrep -f "$cluster" | xargs)
for pid in $(pgrep -x slurmstepd); do
    { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF" && left="$left $pid"
done
expect_eq cluster/stopped "$left" ""
