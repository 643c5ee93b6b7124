# Several nodes: the demo on a private 3-node Slurm cluster
# (slurm/testcluster/nodes: each node in its own network, UTS, mount and
# PID namespaces), submitted with slurm/cairn.sbatch; ranks go round-robin
# over the nodes, so the pipeline stages and the PS shards sit on different
# nodes and activations, gradients and parameters cross TCP.  The cases
# below are shared by the scenarios nodes*.sh, each with a cluster of its
# own (port NODES_PORT + ${CAIRN_NODES_PORT:-16847}-16847), so that they
# run side by side:
# - Across 3 nodes under mpirun and under srun --mpi=pmix: model.h5 is
#   byte-identical to a single-node run's; the log shows the placement.
# - A node-local checkpoint directory: one line naming the nodes that do
#   not see it, exit 2, no requeue.
# - Preemption by USR1 and by the time limit: requeued, resumed, same model.
# - A node lost in epoch 2 (killed mid-epoch under each launcher, killed
#   while a checkpoint is written, or cut off from the network): every rank
#   has exited within BOUND seconds and the launcher has returned within
#   LAUNCH_BOUND (watchdog.liveness 10 s, plus the launcher's teardown;
#   Slurm's node timeout is 300 s, far above both: a script that waits for
#   Slurm cannot pass), however the survivors ended (watchdog or a broken
#   connection: a race),
#   cairn.sbatch finds the node that does not answer and runs cairn again
#   at once on the 2 left, in the same allocation (-N2-3, --no-kill); it
#   resumes from the newest committed checkpoint and ends with the same
#   model, byte for byte.  Also when Slurm notices the dead node first, and
#   with a layout that fits the ranks given (PS shards [2, 4]: 4 on 3
#   nodes, 2 on the 2 left).
# - Stopping a cluster with a dead node leaves nothing behind.
# A scenario sets NODES_PORT and runs nodes_cases with its default cases;
# NODES_CASES="across cut ..." runs only those.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
why=""
[ "$(id -u)" = 0 ] || why="needs root (network namespaces)"
for c in slurmctld slurmd munged ip nsenter unshare; do
    [ -n "$why" ] || command -v "$c" >/dev/null || why="$c is not installed (make deps installs it)"
done
if [ -z "$why" ] && ! { ip netns add "cairn-probe-$$" && ip netns delete "cairn-probe-$$"; } 2>/dev/null; then
    why="cannot create network namespaces here"
fi
if [ -n "$why" ]; then
    echo "skip - $T_NAME: $why"
    exit 0
fi
enter
T_TIMEOUT=240
BOUND=60        # every rank of a run that lost a node has exited (s)
LAUNCH_BOUND=90 # ... and its launcher has returned (s); Slurm's node timeout is 300 s
cluster=$PWD/cluster
NODES=$CAIRN_ROOT/slurm/testcluster/nodes
export CAIRN_SLURM_PORT=$((${CAIRN_NODES_PORT:-16847} + NODES_PORT - 16847)) CAIRN_SLURMD_TIMEOUT=300
trap '"$NODES" stop "$cluster" >/dev/null 2>&1' EXIT
trap 'exit 1' TERM INT # the driver's timeout: stop the cluster on the way out
if ! "$NODES" start "$cluster" 3 >start.out 2>&1; then
    fail cluster/start "the test cluster did not start" start.out "$cluster/log/slurmctld.log"
    exit 1
fi
pass cluster/start
slurm_client() { "$NODES" run "$cluster" "$@"; }
export CAIRN JOB=$JOBS/demo.cfg KILL_GRACE=3
SBATCH=$CAIRN_ROOT/slurm/cairn.sbatch
epochs=(--set stop.max_epochs=3)

# NODES_SAMPLES: a smaller data set (the demo's 32768 samples by default)
# for shorter epochs, where nothing waits on an epoch's length
demo_data data 2 demo.h5 "${NODES_SAMPLES:-}"
mpi base 4 run "$JOB" --run-dir base "${epochs[@]}"
expect_rc baseline/exit base 0

# between the nodes, only the cluster's bridge
net=$(awk '$2 == "ctl" {print $1}' "$cluster/hosts" | cut -d. -f1-3)
export OMPI_MCA_btl_tcp_if_include=$net.0/24 OMPI_MCA_oob_tcp_if_include=$net.0/24

# submit TAG LAUNCHER [SBATCH-OPTION...] [-- CAIRN-ARG...]: cairn.sbatch on
# the cluster, 4 ranks (or $NTASKS) spread over the nodes round-robin;
# prints the job id
submit() {
    local tag=$1 launcher=$2 opts=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    RUN_DIR=$tag LAUNCHER=$launcher OMPI_MCA_rmaps_base_mapping_policy=node \
        slurm_client sbatch --parsable -o "$tag.out" "${NTASKS:--n4}" --distribution=cyclic "${opts[@]}" \
        "${SCRIPT:-$SBATCH}" "${epochs[@]}" "$@"
}

# crashes TAG: how many of TAG's launches died before cairn logged a line
# (Open MPI now and then fails at start-up: mpirun in hwloc, orte_init, a
# rank in PMIx; PLATFORM.md); cairn.sbatch requeues the job, so each costs
# one restart.  A crash with a frame in cairn's code is a test failure.
crashes() {
    awk '/^cairn.sbatch: job [0-9]+, restart/ {logged = 0}
         / cairn: /                           {logged = 1}
         /^cairn.sbatch: the run died / && !logged {n++}
         END {print n + 0}' "$1.out"
}
no_crash_in_cairn() {
    if grep -Eq "^\[[^]]*\] \[ *[0-9]+\] .*/cairn\(" "$1.out"; then
        fail "$1/no-crash-in-cairn" "a crash in cairn's code" "$1.out"
    else
        pass "$1/no-crash-in-cairn"
    fi
}

# alive PID: a process that has not ended (zombies have)
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

case_across() {
    local L j
    for L in mpirun srun; do
        j=$(submit "across-$L" $L -N3)
        expect_eq "across-$L/completed" "$(job_wait "$j")" COMPLETED
        same_bytes "across-$L/model-as-on-one-node" base/model.h5 "across-$L/model.h5"
        expect_grep "across-$L/nodes" "across-$L/cairn.log" "slurm: job $j, restart $(crashes "across-$L"), nodes node\[1-3\], launched by $L"
        no_crash_in_cairn "across-$L"
        expect_grep "across-$L/placement" "across-$L/cairn.log" \
            "placement: node1: ranks 0,3 \(stage0, ps\); node2: rank 1 \(stage1\); node3: rank 2 \(ps\)"
    done
}

# A checkpoint directory on a node-local disk: one clear line at start-up,
# exit 2, and no requeue.
case_nodelocal() {
    local j
    j=$(submit nodelocal mpirun -N3 -- --set "checkpoint.dir=\"$cluster/nodelocal/ckpt\"")
    expect_eq nodelocal/failed "$(job_wait "$j")" FAILED
    expect_grep nodelocal/named nodelocal.out "the checkpoint directory $cluster/nodelocal/ckpt is not shared by all nodes: node2 \(rank 1\), node3 \(rank 2\) cannot see the file rank 0 \(node1\) wrote there"
    expect_grep nodelocal/exit-2 nodelocal.out "cairn.sbatch: cairn exited with 2"
    expect_count nodelocal/not-requeued nodelocal.out "requeueing" 0
}

# Preemption across nodes: USR1 (under mpirun) and the time limit (under
# srun: a 2-minute limit and a 70 s margin, with the clock moved a minute
# ahead in epoch 2 so that the limit comes there whatever the machine's
# speed); each requeues itself and resumes.  The USR1 job's first run
# waits for its signal in epoch 2's first step (CAIRN_FAULT await), and
# rank 0 holds epoch 1's saves for 6 s (CAIRN_FAULT slow: the end of epoch 1 and the
# preemption's, which has epoch 1 done too), longer than this cluster's
# KillWait (5 s): the log warns, once per run, that a TERM would kill such
# a save.
case_usr1() {
    local j
    first_run_fault slow:write@6:0:1,await:train_step:0:2 held
    j=$(CAIRN=$PWD/once.sh submit usr1 mpirun -N3)
    held usr1
    slurm_client scancel --signal=USR1 --batch "$j"
    expect_eq usr1/completed "$(job_wait "$j")" COMPLETED
    expect_grep usr1/preempted usr1/cairn.log "preempted by signal USR1 in epoch [23] after step [0-9]+: saving"
    expect_grep usr1/requeued usr1/cairn.log "requeueing slurm job $j: it resumes from this checkpoint"
    expect_count usr1/requeue-answered usr1/cairn.log "the requeue failed" 0
    expect_grep usr1/resumed usr1/cairn.log "slurm: job $j, restart $((1 + $(crashes usr1))), nodes node\[1-3\]"
    no_crash_in_cairn usr1
    same_bytes usr1/model-as-uninterrupted base/model.h5 usr1/model.h5
    expect_count usr1/kill-wait-warned usr1/cairn.log "warning: a checkpoint at a stop takes [0-9.]+ s \(its save to the shared directory\), longer than Slurm's KillWait \(5 s\): a preemption by TERM would kill the job before its save is committed" 1
}
case_limit() {
    local j
    sed '/^#SBATCH --signal/d' "$SBATCH" >nosignal.sbatch
    j=$(CAIRN_FAULT=clock:60:0:2 SCRIPT=nosignal.sbatch submit limit srun -N3 --time=2 -- --set slurm.time_margin=70)
    expect_eq time-limit/completed "$(job_wait "$j")" COMPLETED
    expect_grep time-limit/stopped limit/cairn.log "preempted by the time limit \(margin 70 s\) in epoch 2 after step 1:"
    expect_grep time-limit/resumed limit/cairn.log "slurm: job $j, restart $((1 + $(crashes limit))), nodes node\[1-3\]"
    no_crash_in_cairn limit
    same_bytes time-limit/model-as-uninterrupted base/model.h5 limit/model.h5
}

# lose_node TAG LAUNCHER HOW: node3 (rank 2, a PS shard) is lost in epoch 2,
# after the first checkpoint is committed.  HOW is
#   kill         the node dies in epoch 2;
#   kill-in-save the node dies while rank 2 writes checkpoint 2 (paused
#                there by CAIRN_FAULT): epoch 1's checkpoint is resumed;
#   cut          the node's network link goes down in epoch 2;
#   slurm-first  the node dies and Slurm marks it DOWN at once;
#   local        with a node-local checkpoint tier (checkpoint.local on
#                each node's own disk, flushed every 10 epochs), the node
#                dies while its first rank writes the final shared
#                checkpoint (paused there): the newest checkpoint is epoch
#                2's, on the nodes alone, and node3's parts survive only as
#                partner copies on node1, from which the rerun on fewer
#                ranks (flex: 6 to 4) restores and re-splits them.
# Apart from slurm-first, cairn acts first (Slurm would notice the node
# only after its 300 s timeout): every rank of the run has to be gone
# within BOUND seconds, and cairn.sbatch has to run cairn again on the two
# nodes left.  Once that run has finished, the test (heals the link and)
# marks the node DOWN so that the job can end, as a health check would.
lose_node() {
    local tag=$1 how=$3 j t0 took bin=$PWD/once.sh extra=() pids paused=2 held=2 wd=30
    [ "$how" = local ] && paused=3 # the save rank 2 is paused in
    [ "$how" = local ] &&
        extra=(--set "checkpoint.local=\"$cluster/nodelocal\"" --set checkpoint.flush_every=10)
    # flex: whole nodes, 2 ranks on each, and 2 to 4 PS shards: 6 ranks (4
    # shards) on 3 nodes, then 4 ranks (2 shards) on the 2 left
    if [ "${4:-}" = flex ]; then
        sed '/^#SBATCH --ntasks=/d' "$SBATCH" >pernode.sbatch
        extra+=(--set "ps.shards=[2, 4]")
        local NTASKS=--exclusive SCRIPT=pernode.sbatch RANKS_PER_NODE=2
        export RANKS_PER_NODE
        held=4 # node3's first rank
    fi
    # In the first run only (once.sh, until the test has seen it held), a
    # rank on node3 is held where the node is to be lost, however fast the
    # machine: in a save (paused), or
    # in epoch 2 (busy in its PS op, alive: the others wait for it).  The
    # watchdog then gives the survivors 30 s, so that the ring (10 s) is
    # what finds the loss; a rank paused in a save is a stall the watchdog
    # may name first (10 s).
    case $how in
    kill-in-save) first_run_fault pause:write:2:2 held && wd=10 ;;
    local) first_run_fault "pause:write:$held:3" held && wd=10 ;;
    *) first_run_fault "busy:ps_step:$held:2" held ;;
    esac
    j=$(CAIRN=$bin submit "$tag" "$2" -N2-3 -- --set watchdog.timeout=$wd "${extra[@]}")
    if [ "$how" = kill-in-save ] || [ "$how" = local ]; then
        wait_log "$tag.out" "rank $held: CAIRN_FAULT pauses this rank at write"
    else
        wait_log "$tag.out" "rank $held: CAIRN_FAULT keeps this rank busy in op 'ps_step'"
    fi
    touch once.fired # the reruns run clean
    pids=$(pgrep -f -- "^$CAIRN run $JOB --run-dir $tag " | xargs)
    t0=$(date +%s.%N)
    case $how in
    cut) "$NODES" cut "$cluster" 3 ;;
    slurm-first) "$NODES" kill "$cluster" 3 && slurm_client scontrol update nodename=node3 state=down reason=killed ;;
    *) "$NODES" kill "$cluster" 3 ;;
    esac
    echo "# $tag: node3 lost ($how)"
    # shellcheck disable=SC2086 # one pid a word
    ranks_gone "$tag" "$t0" $pids
    # the launcher has returned within LAUNCH_BOUND s of the loss, long
    # before Slurm's node timeout (300 s here) would release it
    if wait_log "$tag.out" "cairn.sbatch: the run (died|stalled|lost)"; then
        took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
        echo "# $tag: $2 returned after $took s"
        awk -v t="$took" -v b="$LAUNCH_BOUND" 'BEGIN {exit !(t < b)}' &&
            pass "$tag/launcher-gone-within-${LAUNCH_BOUND}s" ||
            fail "$tag/launcher-gone-within-${LAUNCH_BOUND}s" "$2 returned after $took s"
    else
        fail "$tag/launcher-gone-within-${LAUNCH_BOUND}s" "$2 still runs" "$tag.out"
    fi
    wait_log "$tag.out" "cairn.sbatch: (cairn exited with|not requeueing)"
    expect_grep "$tag/died" "$tag.out" "cairn.sbatch: the run (died \($2 returned [0-9]+; cairn did not end in order\)|stalled \(3 stalled: rank [0-9]+ \(node[1-3]\): watchdog: no progress|lost \(3 lost: rank [0-9]+ \(node[1-3]\): )"
    # How the survivors end is a race: the watchdog (in a task, or in the
    # agreement between steps on whether to stop), a rank that dies of the
    # broken connection first and takes the rest with it, or an MPI call
    # failing ("lost"); the output names which.  Cut off, node3's ranks
    # live on and can be the first to name a silent peer across the cut.
    [ "$how" = slurm-first ] ||
        expect_grep "$tag/death-explained" "$tag.out" "watchdog: no progress for [1-3][0-9] s \(watchdog.timeout $wd s\) in (epoch 2 step [0-9]+: (task|agreeing whether to stop here)|saving the checkpoint of epoch $paused step 0 )|srun: error: node[12]: tasks? [0-9,-]+: (Killed|Broken pipe|Terminated|Segmentation fault)|ORTE has lost communication with a remote daemon|exited on signal [0-9]+ \((Killed|Broken pipe|Terminated|Segmentation fault)\)|3 lost: rank [0-9]+ \(node[12]\)|3 lost: rank [0-9]+ \(node3\): rank [0-9]+ \(node[12]\) has not been heard from"
    blame "$tag" "$2"
    expect_grep "$tag/again-on-the-nodes-left" "$tag.out" "cairn.sbatch: 1 of 3 nodes do not answer; running again on node1,node2, "
    expect_grep "$tag/finished-in-place" "$tag.out" "cairn.sbatch: cairn exited with 0"
    expect_count "$tag/not-requeued" "$tag.out" "requeueing" "$(crashes "$tag")"
    # the job ends once Slurm has released node3, as a health check would
    # (a healed link alone leaves the job waiting a minute or more on
    # node3's slurmd)
    [ "$how" = cut ] && "$NODES" heal "$cluster" 3
    slurm_client scontrol update nodename=node3 state=down reason=lost
    expect_eq "$tag/completed" "$(job_wait "$j")" COMPLETED
    expect_grep "$tag/placed-on-the-nodes-left" "$tag/cairn.log" "placement: node1: [^;]*; node2: [^;]*$"
    expect_grep "$tag/nodes-used-logged" "$tag/cairn.log" "slurm: job $j, restart $(crashes "$tag"), nodes node1,node2 of node\[1-3\], launched by $2"
    no_crash_in_cairn "$tag"
    if [ "$how" = local ]; then
        expect_count "$tag/saved-on-the-nodes" "$tag/cairn.log" "checkpoint saved \(node-local\): epoch [12] step 0 " 2
        expect_count "$tag/not-flushed" "$tag/cairn.log" "checkpoint saved: epoch [12] step 0 " 0
        expect_grep "$tag/from-partner-copies" "$tag/cairn.log" "node-local checkpoint local/ckpt-e000002: restored from partner copies for ranks? ([0-9]+, )*$held(, [0-9]+)*, from the ranks' own copies for the rest"
        expect_grep "$tag/resumed-node-local" "$tag/cairn.log" "resuming after epoch 2 "
    elif [ "$how" = kill-in-save ]; then
        expect_grep "$tag/resumed-previous" "$tag/cairn.log" "resuming after epoch 1 "
        expect_count "$tag/save-never-committed" "$tag/cairn.log" "checkpoint saved: epoch 2 step 0 " 1
    else
        expect_grep "$tag/resumed" "$tag/cairn.log" "resuming after epoch [12] "
    fi
    if [ "${4:-}" = flex ]; then
        expect_grep "$tag/flex-placement" "$tag/cairn.log" "placement: node1: ranks 0,1 \(stage0, stage1\); node2: ranks 2,3 \(ps\); node3: ranks 4,5 \(ps\)"
        expect_grep "$tag/flex-placement-after" "$tag/cairn.log" "placement: node1: ranks 0,1 \(stage0, stage1\); node2: ranks 2,3 \(ps\)$"
        expect_grep "$tag/layout-changed" "$tag/cairn.log" "layout changed since that checkpoint: world 6 -> 4 ranks, ps 4 -> 2; sharded state re-split"
    fi
    same_bytes "$tag/model-as-uninterrupted" base/model.h5 "$tag/model.h5"
    "$NODES" restart "$cluster" 3
}

# blame TAG LAUNCHER: a loss is reported once.  The rank of the ring that
# finds its predecessor silent logs it and tells every other rank, which
# ends at once without a word: at most one finding from node1 and node2 in
# cairn.log (a ring that went on named the ranks that had ended for the
# lost one, on live nodes; node3, cut off, cannot be told and may report
# its own side), and the run's exit_status is that finding.  Under srun
# the rank named is node3's (under mpirun the ranks on node1 end too when
# their connections to node3 fail, and may be silent first).
blame() {
    local tag=$1 n found
    n=$(grep -Ec "rank [0-9]+ \(node[12]\): rank [0-9]+ \([^)]*\) has not been heard from" "$tag/cairn.log")
    [ "$n" -le 1 ] && pass "$tag/one-finding" || fail "$tag/one-finding" "$n findings in $tag/cairn.log" "$tag/cairn.log"
    # the run's status: a finding in cairn.log (node3's own, when cut off,
    # may come first: the file system is shared)
    found=$(grep -o "the run lost (3 lost: rank [0-9]* (node[0-9]): rank [0-9]* (node[0-9]) has not been heard from" \
        "$tag.out" | sed 's/^the run lost (3 lost: //')
    [ -n "$found" ] || return 0 # the watchdog or the launcher came first
    if grep -Fq "$found" "$tag/cairn.log"; then
        pass "$tag/exit-status-is-the-finding"
    else
        fail "$tag/exit-status-is-the-finding" "the run's status '$found ...' is no finding in cairn.log" "$tag/cairn.log"
    fi
    if [ "$2" = srun ]; then
        expect_grep "$tag/lost-node-named" "$tag/cairn.log" \
            "rank [0-9]+ \(node[12]\): rank [0-9]+ \(node3\) has not been heard from"
    fi
}

# ranks_gone TAG T0 PIDS...: every rank of the run has exited within BOUND
# seconds of T0
ranks_gone() {
    local tag=$1 t0=$2 left took p
    shift 2
    [ $# -gt 0 ] || { fail "$tag/ranks-gone-within-${BOUND}s" "no rank of the run was seen"; return; }
    for _ in $(seq 1 900); do
        left=0
        for p in "$@"; do alive "$p" && left=$((left + 1)); done
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    echo "# $tag: every rank of the run gone after $took s"
    [ "$left" = 0 ] && awk -v t="$took" -v b="$BOUND" 'BEGIN {exit !(t < b)}' &&
        pass "$tag/ranks-gone-within-${BOUND}s" || fail "$tag/ranks-gone-within-${BOUND}s" "$left ranks left after $took s"
}

# lose_batch_host TAG LAUNCHER: node1, which runs cairn.sbatch (and mpirun,
# and ranks 0 and 3), dies in epoch 2.  The ranks on the other nodes end
# (watchdog, or their launcher's daemons), and once Slurm reports node1 not
# responding or DOWN (the test marks it DOWN, as a health check would; its
# own timeout is 300 s), the guard step cairn.sbatch left on node2 requeues
# the job, which resumes on node2 and node3 and ends with the same model.
lose_batch_host() {
    local tag=$1 j t0 pids
    # rank 0 (node1) held in epoch 2 of the first run, as in lose_node
    first_run_fault busy:train_step:0:2 held
    j=$(CAIRN=$PWD/once.sh submit "$tag" "$2" -N2-3 -- --set watchdog.timeout=30)
    wait_log "$tag.out" "rank 0: CAIRN_FAULT keeps this rank busy in op 'train_step'"
    touch once.fired
    pids=$(pgrep -f -- "^$CAIRN run $JOB --run-dir $tag " | xargs)
    t0=$(date +%s.%N)
    "$NODES" kill "$cluster" 1
    # shellcheck disable=SC2086 # one pid a word
    ranks_gone "$tag" "$t0" $pids
    slurm_client scontrol update nodename=node1 state=down reason=lost
    expect_eq "$tag/completed" "$(job_wait "$j")" COMPLETED
    expect_grep "$tag/guard-requeued" "$tag.out" "cairn.sbatch: guard on node2: the batch host node1 is [A-Z_+*]*(DOWN|NOT_RESPONDING)[A-Z_+*]*; requeueing job $j, "
    expect_grep "$tag/restarted" "$tag/cairn.log" "slurm: job $j, restart $((1 + $(crashes "$tag"))), nodes node\[2-3\], launched by $2"
    no_crash_in_cairn "$tag"
    expect_grep "$tag/resumed" "$tag/cairn.log" "resuming after epoch [12] "
    expect_grep "$tag/placed-on-the-nodes-left" "$tag/cairn.log" "placement: node2: [^;]*; node3: [^;]*$"
    same_bytes "$tag/model-as-uninterrupted" base/model.h5 "$tag/model.h5"
    "$NODES" restart "$cluster" 1
}

case_batch-host-mpirun() { lose_batch_host batch-host-mpirun mpirun; }
case_batch-host-srun() { lose_batch_host batch-host-srun srun; }
case_kill-mpirun() { lose_node kill-mpirun mpirun kill flex; }
case_kill-srun() { lose_node kill-srun srun kill; }
case_kill-in-save() { lose_node kill-in-save mpirun kill-in-save; }
case_cut() { lose_node cut srun cut; }
case_kill-slurm-first() { lose_node kill-slurm-first mpirun slurm-first; }

# checkpoint.local on a directory every node sees: one clear line at
# start-up naming the nodes that see it, exit 2, no requeue.
case_local-shared() {
    local j
    j=$(submit local-shared mpirun -N3 -- --set "checkpoint.local=\"$PWD/not-local\"")
    expect_eq local-shared/failed "$(job_wait "$j")" FAILED
    expect_grep local-shared/named local-shared.out "checkpoint.local = \"$PWD/not-local\" is not node-local: node2 \(rank 1\), node3 \(rank 2\) see the file rank 0 \(node1\) wrote there"
    expect_grep local-shared/exit-2 local-shared.out "cairn.sbatch: cairn exited with 2"
    expect_count local-shared/not-requeued local-shared.out "requeueing" 0
}
case_local() { lose_node local mpirun local flex; }

# The liveness ring's heartbeats are UDP: with UDP from node1 to node2
# dropped (a blackhole rule in node1's routing), every rank fails at
# start-up with one line naming the two ranks and hosts, rather than
# taking node1 for lost 10 s later; not requeued.
case_udp-blocked() {
    local j ns=cn$(((CAIRN_SLURM_PORT - 16000) % 200 + 20))-node1 to
    to=$(awk '$2 == "node2" {print $1}' "$cluster/hosts")
    if ! ip -n "$ns" rule add ipproto udp to "$to" blackhole 2>rule.err; then
        fail udp-blocked/setup "cannot drop UDP from node1 to node2" rule.err
        return
    fi
    j=$(submit udp-blocked mpirun -N3)
    expect_eq udp-blocked/failed "$(job_wait "$j")" FAILED
    ip -n "$ns" rule del ipproto udp to "$to" blackhole
    expect_grep udp-blocked/named udp-blocked.out "rank 1 \(node2\) heard no heartbeat from rank 0 \(node1\) in 9 s: UDP datagrams between them do not get through \(a firewall\?\); let them through, or set watchdog.liveness = 0 to run without the liveness ring"
    expect_grep udp-blocked/exit-3 udp-blocked.out "cairn.sbatch: cairn exited with 3"
    expect_count udp-blocked/not-requeued udp-blocked.out "requeueing" 0
}

# Stopping a cluster with a dead node leaves nothing behind.
case_stop() {
    local tag left
    "$NODES" kill "$cluster" 3
    "$NODES" stop "$cluster" >stop.out 2>&1
    tag=cn$(((CAIRN_SLURM_PORT - 16000) % 200 + 20))
    left=$( (ip netns list; ip -o link show) | grep -c "$tag-" || true)
        expect_eq cluster/stop-leaves-nothing "$left $(pgrep -fc "slurm(ctld|d) .*$cluster/slurm.conf" || true)" "0 0"
}

# nodes_cases CASE...: the scenario's cases, or those in NODES_CASES
nodes_cases() {
    local c
    for c in ${NODES_CASES:-$*}; do
        "case_$c"
    done
}
