# The single-node Slurm scenarios' common part (slurm.sh, slurm_fail.sh):
# a private cluster (slurm/testcluster) on port SLURM_PORT in ./cluster,
# started here and always stopped, the demo's job on 8192 samples (epochs
# of 13 steps) and an uninterrupted 2-epoch run (base/model.h5) that every
# requeued job must match.  A preemption is never timed: the run waits for
# it (CAIRN_FAULT await), so it lands mid-epoch however fast the machine.
#
# Slurm holds a requeued job back for cred_expire + 1 s (about 12 s here),
# so that the old run has surely ended; the waits are that long.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
enter
T_TIMEOUT=180
slurm_cluster "$SLURM_PORT"
# mpirun's kill grace (cairn.sbatch): 2 x 5 s is ample for the demo and
# halves the wait each mpirun exit 75 costs
export CAIRN JOB=$JOBS/demo.cfg KILL_GRACE=5
SBATCH=$CAIRN_ROOT/slurm/cairn.sbatch
epochs=(--set stop.max_epochs=2)

demo_data data 2 demo.h5 8192
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

# awaiting EPOCH [CONDITION]: once.sh (first_run_fault), a cairn whose
# rank 0 waits in the first step of EPOCH for a preemption signal; a submit
# with CAIRN=$PWD/once.sh runs it
awaiting() { first_run_fault "await:train_step:0:$1" held "${2:-true}"; }

# preempted_step TAG [N]: the step after which TAG's Nth preemption saved
preempted_step() {
    grep -Eo 'preempted by .* after step [0-9]+' "$1/cairn.log" | sed -n "${2:-1}p" | awk '{print $NF}'
}

# slurm_done: stop the cluster; nothing is left behind
slurm_done() {
    local left pid
    "$CAIRN_ROOT/slurm/testcluster/stop" "$cluster"
    trap - EXIT
    left=$(pgrep -f "$cluster" | xargs)
    for pid in $(pgrep -x slurmstepd); do
        { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF" && left="$left $pid"
    done
    expect_eq cluster/stopped "$left" ""
}
