# The node-local tier and Slurm's time limit, on a private single-node
# cluster (slurm/testcluster): a stop writes the shared file alone, so the
# margin before the limit follows the shared saves, not the quick
# node-local ones, and with background saves one may be in flight when
# the stop comes.  A run resumed from a shared checkpoint writes its first
# save to the shared file too (which measures it); with rank 0's shared
# writes held up 16 s (CAIRN_FAULT slow: a slow parallel file system,
# whatever this machine's speed), checkpoint.async, and the clock moved
# past the limit in epoch 4 (once that save is measured: epoch 3's save
# waits for it), the run stops at the limit with a margin of
# 1.25 x (16 + 16) + 5 = 45 s at least, the log warns once that such a stop
# needs longer than Slurm's KillWait (30 s here), and the rerun ends with
# the bytes of an uninterrupted run.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
slurm_cluster 16867
export CAIRN JOB=$JOBS/demo.cfg KILL_GRACE=5
demo_data data 2 demo.h5
local=(--set "checkpoint.local=\"$PWD/nodelocal\"")
short=(--set steps_per_epoch=4 --set stop.max_epochs=4)
mpi base 4 run "$JOB" --run-dir base "${short[@]}"
expect_rc base/exit base 0

# one epoch outside Slurm: its stop leaves the shared checkpoint of epoch 1
mpi first 4 run "$JOB" --run-dir limit "${short[@]}" --set stop.max_epochs=1 "${local[@]}"
expect_rc first/exit first 0
# resumed under Slurm with a five-minute limit (room for a loaded machine;
# the clock jumps past it in epoch 4) and no signal ahead
sed '/^#SBATCH --signal/d' "$CAIRN_ROOT/slurm/cairn.sbatch" >nosignal.sbatch
j=$(CAIRN_FAULT=slow:write@16:0,clock:300:0:4 RUN_DIR=limit LAUNCHER=mpirun sbatch --parsable -o limit.out \
    --time=5 nosignal.sbatch "${short[@]}" --set slurm.requeue=false --set checkpoint.async=true "${local[@]}")
job_wait "$j" >/dev/null
expect_grep limit/resumed-shared limit/cairn.log "checkpoint loaded: epoch 1 step 0 \(ckpt-e000001.h5\)"
expect_grep limit/first-save-shared limit/cairn.log "checkpoint saved: epoch 2 step 0 \(ckpt-e000002.h5\)"
margin=$(grep -Eo "preempted by the time limit \(margin [0-9]+ s\) in epoch 4 " limit/cairn.log | grep -Eo "[0-9]+ s" | cut -d' ' -f1)
[ "${margin:-0}" -ge 45 ] && pass limit/margin-of-the-shared-save ||
    fail limit/margin-of-the-shared-save "margin '${margin:-none}' s, want 45 s or more" limit/cairn.log
expect_count limit/kill-wait-warned limit/cairn.log "warning: a checkpoint at a stop takes [0-9.]+ s \(a background save in flight, then the stop's own save to the shared directory\), longer than Slurm's KillWait \(30 s\)" 1
mpi rerun 4 run "$JOB" --run-dir limit "${short[@]}" "${local[@]}"
expect_rc limit/rerun-exit rerun 0
same_bytes limit/model base/model.h5 limit/model.h5
