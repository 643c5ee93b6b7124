# Slurm, the rest (regression/slurm_lib.sh): scancel (saved, not
# requeued, a rerun continues), --no-requeue, an array job
# (slurm/sweep.sbatch) with one task preempted, a run that dies (requeued
# by cairn.sbatch) or fails (not requeued) under either launcher, the
# template from an installed copy, and launches that cannot work.
# check: slots 2 (its waits are Slurm's and the logs', its timeouts the defaults: a little company)
SLURM_PORT=16907
. "$(dirname "$0")/../slurm_lib.sh"

# scancel: TERM, and the job is being cancelled, so cairn saves but does
# not requeue; rerunning the command continues
awaiting 2
j=$(CAIRN=$PWD/once.sh submit cancel srun)
held cancel
scancel "$j"
expect_eq scancel/cancelled "$(job_wait "$j")" CANCELLED
expect_grep scancel/saved cancel/cairn.log "preempted by signal (TERM|USR1) in epoch 2 after step [0-9]+: saving"
expect_grep scancel/not-requeued cancel/cairn.log "not requeueing slurm job $j: it is (CANCELLED|COMPLETING) already"
mpi cancel-rerun 4 run "$JOB" --run-dir cancel "${epochs[@]}"
expect_rc scancel/rerun cancel-rerun 0
expect_grep scancel/resumed cancel-rerun.out "resuming in epoch 2 after step"
same_bytes scancel/same-model-bytes base/model.h5 cancel/model.h5

# --no-requeue: saved, exit 75 through mpirun, and the job ends there
awaiting 2
j=$(CAIRN=$PWD/once.sh submit norq mpirun -- --no-requeue)
held norq
scancel --signal=USR1 --batch "$j"
expect_eq no-requeue/failed "$(job_wait "$j")" FAILED
expect_grep no-requeue/said-so norq/cairn.log "not requeueing slurm job $j \(--no-requeue\)"
expect_grep no-requeue/exit-75 norq.out "cairn.sbatch: cairn exited with 75"
expect_count no-requeue/ran-once norq.out "cairn.sbatch: job" 1

# an array job: three settings, each task in its own run directory; task 1
# (the demo's own learning rate) is preempted and requeues itself by its
# ARRAYJOB_TASK id
awaiting 2 '[ "$SLURM_ARRAY_TASK_ID" = 1 ]'
j=$(CAIRN=$PWD/once.sh CAIRN_SBATCH=$SBATCH SWEEP_DIR=sweep LAUNCHER=srun sbatch --parsable --array=0-2 \
    -o 'sweep-%a.out' "$CAIRN_ROOT/slurm/sweep.sbatch" "${epochs[@]}")
held sweep-1
scancel --signal=USR1 --batch "${j}_1"
expect_eq array/completed "$(job_wait "$j")" "COMPLETED COMPLETED COMPLETED"
for t in 0 1 2; do
    lr=$(sed -n "$((t + 1))p" <<<"0.0005
0.001
0.002")
    expect_grep "array/$t/setting" "sweep-$t.out" "/once.sh run $JOB --run-dir sweep/$t --set ps.lr=$lr --set stop.max_epochs=2"
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

slurm_done
