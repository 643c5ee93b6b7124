# Slurm: the scripts users copy (slurm/cairn.sbatch) on a private
# single-node cluster (regression/slurm_lib.sh).  The demo job (2 epochs)
# is preempted in every way Slurm preempts: USR1 from --signal, under
# mpirun and srun --mpi=pmix; TERM from scontrol requeue; three times in a
# row; the time limit with no signal.  Each requeued run must end with the
# model of an uninterrupted run, bit for bit.  slurm_fail.sh has the rest.
# check: slots 2 (its waits are Slurm's and the logs', its timeouts the defaults: a little company)
SLURM_PORT=16837
. "$(dirname "$0")/../slurm_lib.sh"

# usr1 TAG LAUNCHER: preempt mid-epoch 2 with USR1 from Slurm; the job
# saves, exits 75, requeues itself and resumes where it stopped
usr1() {
    local tag=$1 j s
    awaiting 2
    j=$(CAIRN=$PWD/once.sh submit "$tag" "$2")
    held "$tag"
    scancel --signal=USR1 --batch "$j"
    expect_eq "$tag/completed" "$(job_wait "$j")" COMPLETED
    expect_grep "$tag/launcher" "$tag/cairn.log" "slurm: job $j, restart 0, nodes [^ ]+, launched by $2, ends "
    expect_grep "$tag/preempted-mid-epoch" "$tag/cairn.log" "preempted by signal USR1 in epoch 2 after step ([1-9]|1[0-2]): saving"
    s=$(preempted_step "$tag")
    expect_grep "$tag/saved-mid-epoch" "$tag/cairn.log" "checkpoint saved: epoch 1 step $s \(ckpt-e000001-s0*$s.h5\)"
    expect_grep "$tag/exit-75" "$tag.out" "cairn: preempted by signal USR1 in epoch 2 after step $s: checkpoint saved in $tag/ckpt; exit 75: rerun to continue"
    expect_grep "$tag/requeued-itself" "$tag/cairn.log" "requeueing slurm job $j: it resumes from this checkpoint"
    expect_count "$tag/requeue-answered" "$tag/cairn.log" "the requeue failed" 0
    expect_grep "$tag/restarted" "$tag/cairn.log" "slurm: job $j, restart 1, "
    expect_grep "$tag/resumed-at-step" "$tag/cairn.log" "resuming in epoch 2 after step $s \(init skipped\)"
    # the rest of epoch 2, no sample skipped or seen twice (6554 per epoch, 512 a step)
    expect_grep "$tag/rest-of-epoch" "$tag/cairn.log" "epoch 2 done in [0-9.]+ s \($((6554 - 512 * s)) samples"
    expect_grep "$tag/output-appended" "$tag.out" "cairn.sbatch: job $j, restart 0, "
    expect_eq "$tag/finished" "$(tail -n 1 "$tag.out" | cut -d, -f1)" "cairn.sbatch: cairn exited with 0"
    same_bytes "$tag/same-model-bytes" base/model.h5 "$tag/model.h5"
}

usr1 usr1-mpirun mpirun
usr1 usr1-srun srun
expect_grep usr1-srun/exit-75-from-srun usr1-srun.out "cairn.sbatch: cairn exited with 75"

# scontrol requeue: Slurm sends TERM to every process of the job, mpirun
# included; cairn saves before mpirun's kill grace runs out
awaiting 2
j=$(CAIRN=$PWD/once.sh submit requeue mpirun)
held requeue
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

# three preemptions at different points: mid-epoch 1, the first step of
# the first restart, mid-epoch 2 of the second.  The runs wait for them:
# the first two in epoch 1, the third in epoch 2, counted by the waits
# logged so far (a run that crashed at start-up waited for nothing)
cat >once.sh <<ONCE
#!/bin/bash
n=\$(cat thrice.out 2>/dev/null | grep -c "$HELD")
[ "\$n" -lt 2 ] && export CAIRN_FAULT=await:train_step:0:1
[ "\$n" = 2 ] && export CAIRN_FAULT=await:train_step:0:2
exec $CAIRN "\$@"
ONCE
chmod +x once.sh
j=$(CAIRN=$PWD/once.sh submit thrice srun)
for n in 1 2 3; do
    wait_log thrice.out "$HELD" $n || { fail "thrice/held-$n" "run $n did not wait for its signal" thrice.out; scancel "$j"; break; }
    scancel --signal=USR1 --batch "$j"
done
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
expect_grep time-limit/progress-shows-limit limit/cairn.log "cairn: epoch [12] step [0-9]+/13 \([0-9]+%\): .*, job ETA [0-9:]+ \(epoch [12] of 2\), time limit in 0:0[01]:[0-9]{2}$"
expect_grep time-limit/warned limit/cairn.log "warning: at the measured rate the job needs about [0-9:]+ more, but Slurm's time limit comes in [0-9:]+: it will be stopped there"
same_bytes time-limit/same-model-bytes base/model.h5 limit/model.h5

slurm_done
