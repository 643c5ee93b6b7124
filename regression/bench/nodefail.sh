#!/usr/bin/env bash
# What a lost node costs: the demo (4 ranks, -N2-3, requeueable, submitted
# with slurm/cairn.sbatch) on a private 3-node Slurm cluster, node3 killed
# mid-epoch 2.  Three runs side by side:
#   cairn-srun    srun --mpi=pmix, the default watchdog (automatic timeout,
#                 60 s floor);
#   cairn-mpirun  the same under mpirun, which may notice the lost daemon
#                 itself;
#   no-watchdog   srun, the watchdog off (timeout 1e6 s): nothing happens
#                 until Slurm notices the node (SlurmdTimeout,
#                 BENCH_SLURMD_TIMEOUT s here; 300 by default).
# Prints, from the kill: every rank of the run gone, the rerun resuming
# (in the same allocation, or after a requeue: "requeued" is when the job
# was pending again, "-" if it never was) and Slurm marking the node DOWN.
# Needs root.
set -eu
if [ "$(id -u)" != 0 ]; then
    echo "skip: the 3-node test cluster needs root"
    exit 0
fi
cd "$(dirname "$0")/../.."
root=$PWD
cairn=$root/build/cairn
dir=${BENCH_DIR:-$root/build/bench/nodefail}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export CAIRN_SLURM_PORT=${CAIRN_SLURM_PORT:-16877} CAIRN_SLURMD_TIMEOUT=${BENCH_SLURMD_TIMEOUT:-120}
nodes=$root/slurm/testcluster/nodes
cluster=$dir/cluster
trap '"$nodes" stop "$cluster" >/dev/null 2>&1' EXIT
CAIRN=$cairn "$root/jobs/demo_data.sh" demo.h5 2 >/dev/null
job=$root/jobs/demo.cfg
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%6.1f", b - a}'; }

# one TAG LAUNCHER WATCHDOG-TIMEOUT: a fresh cluster, a job, node3 killed;
# prints a row
one() {
    local tag=$1 j t0 gone="" down="" pend="" back="" state
    "$nodes" start "$cluster" 3 >/dev/null
    local net
    net=$(awk '$2 == "ctl" {print $1}' "$cluster/hosts" | cut -d. -f1-3)
    j=$(RUN_DIR=$tag LAUNCHER=$2 CAIRN=$cairn JOB=$job KILL_GRACE=3 \
        OMPI_MCA_btl_tcp_if_include=$net.0/24 OMPI_MCA_oob_tcp_if_include=$net.0/24 \
        OMPI_MCA_rmaps_base_mapping_policy=node \
        "$nodes" run "$cluster" sbatch --parsable -o "$tag.out" -n4 -N2-3 --distribution=cyclic \
        "$root/slurm/cairn.sbatch" --set stop.max_epochs=3 --set "watchdog.timeout=$3")
    until grep -q "checkpoint saved: epoch 1 step 0 " "$tag/cairn.log" 2>/dev/null; do sleep 0.1; done
    sleep 1
    local pids p left
    pids=$(pgrep -f "^$cairn run $job --run-dir $tag " | xargs)
    t0=$(now)
    "$nodes" kill "$cluster" 3
    while [ -z "$back" ] || [ -z "$down" ]; do
        left=0
        for p in $pids; do [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && left=1; done
        [ -z "$gone" ] && [ "$left" = 0 ] && gone=$(now)
        [ -z "$down" ] && "$nodes" run "$cluster" sinfo -h -n node3 -o %T | grep -q down && down=$(now)
        state=$("$nodes" run "$cluster" squeue -h -j "$j" -o %T)
        [ -z "$pend" ] && [ "$state" = PENDING ] && pend=$(now)
        [ -z "$back" ] && grep -q "resuming after epoch" "$tag/cairn.log" && back=$(now)
        sleep 0.2
    done
    printf '%-13s %11s %11s %11s %11s\n' "$tag" "$(since "$t0" "$gone")" "$(since "$t0" "$back")" \
        "$([ -n "$pend" ] && since "$t0" "$pend" || echo -)" "$(since "$t0" "$down")"
    "$nodes" stop "$cluster" >/dev/null
}

echo "node3 killed mid-epoch 2; SlurmdTimeout $CAIRN_SLURMD_TIMEOUT s; seconds after the kill:"
printf '%-13s %11s %11s %11s %11s\n' run "ranks gone" "resumed" "requeued" "node DOWN"
one cairn-srun srun 0
one cairn-mpirun mpirun 0
one no-watchdog srun 1000000
