# The node-local checkpoint tier (checkpoint.local) on one node, with the
# demo on 6 ranks (2 replicas of 2 stages, 2 PS shards: replicated state
# in groups of 2, sharded state on the shards).  Multi-node behaviour (a
# node lost, partner copies, a "local" directory every node sees) is in
# nodes.sh, nodes_loss.sh and nodes_host.sh.
# - Saves go to the nodes every epoch and to the shared directory every
#   flush_every epochs and at the end; `cairn ckpt ls` lists both tiers;
#   each node keeps only the newest node-local checkpoint, and none once
#   the final shared save supersedes it; the model is the one shared
#   checkpoints give, byte for byte.
# - A stop at an epoch whose save was a flush (both tiers) leaves nothing
#   on the node either.
# - A node-local save that fails (ENOSPC) sends the next save to the
#   shared file too, said once; a resumed run's first save goes there too.
# - A run killed in its final (shared) save resumes from the newer
#   node-local checkpoint and ends with the same bytes, with synchronous
#   and with background saves; --resume=EPOCH takes the shared checkpoint
#   of that epoch if there is one, else the node-local one.
# - A node-local checkpoint with a damaged part, a copy that disagrees with
#   its manifest, a missing part, a damaged manifest, or of another layout
#   is not loaded: the log says why, the
#   resume falls back to the newest shared checkpoint, and the model is the
#   same; it is marked bad (the run goes on from an older position).
# - On three nodes (namespaces on this machine) a damaged own copy is
#   replaced by its partner copy; a disk two nodes share is refused, every
#   node checking.
# - A node-local directory in memory (tmpfs) too small is refused; one on
#   ramfs or on tmpfs with size=0 (no size) is measured against the memory
#   available, and used.  A resumed run short of room there is not
#   refused: it warns and saves to the shared directory alone.
# - A kill while the parts are written leaves the previous checkpoint the
#   newest, and the rerun ends with the same bytes.
# - A directory that cannot be created is a clear error at start-up.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
demo_data data 2 demo.h5 8192
# the demo's model and state (the tiers' bytes), in short epochs: steps of
# 128 samples and a short evaluation (409 samples)
small=(--set data.batch=128 --set data.holdout=0.05)
job=(run "$JOBS/demo.cfg" --set replicas=2 --set steps_per_epoch=4 "${small[@]}")
local=(--set "checkpoint.local=\"$PWD/nodelocal\"")
mpi base 6 "${job[@]}" --run-dir base --set stop.max_epochs=4
expect_rc base/exit base 0

# ---- saves in both tiers ----------------------------------------------------------------
# (the tiers' protocol: the sanitized pass spares these launches, as the
# same code runs in the plain pass)
if [ -z "${T_SANITIZED:-}" ]; then
mpi tiers 6 "${job[@]}" --run-dir tiers --set stop.max_epochs=4 "${local[@]}" --set checkpoint.flush_every=2
expect_rc tiers/exit tiers 0
expect_grep tiers/one-node-noted tiers/cairn.log "note: every rank runs on [^ ]+: node-local checkpoints in $PWD/nodelocal have no partner copies"
expect_eq tiers/node-local-saves "$(grep -o 'checkpoint saved (node-local): epoch [0-9]' tiers/cairn.log | awk '{print $NF}' | xargs)" "0 1 2 3"
expect_eq tiers/shared-saves "$(grep -o 'checkpoint saved: epoch [0-9]' tiers/cairn.log | awk '{print $NF}' | xargs)" "0 2 4"
# the final (shared) save supersedes the node-local checkpoint of epoch 3:
# its parts leave the node, its manifest the list
expect_grep tiers/superseded tiers/cairn.log "the checkpoint after epoch 4 in tiers/ckpt supersedes the node-local ones: removed from the nodes of this run"
run tiers-ls "$CAIRN" ckpt ls tiers/ckpt
expect_eq tiers/listed "$(cut -f1,3,5 tiers-ls.out | tr '\t\n' ' ')" \
    "0 ckpt-e000000.h5 ok 2 ckpt-e000002.h5 ok 4 ckpt-e000004.h5 ok "
root=$(echo nodelocal/cairn-*)
expect_eq tiers/nothing-left-on-the-node "$(ls -A "$root")" ""
expect_eq tiers/no-manifest-left "$(ls tiers/ckpt/local | grep -c ckpt-)" 0
same_bytes tiers/model base/model.h5 tiers/model.h5
rm -rf nodelocal
fi

# ---- a stop at an epoch whose save went to the shared file too ------------------------------
# With one step an epoch, USR1 in epoch 2 stops the run after its save, a
# flush (flush_every=2): there is no stop save, yet the shared checkpoint
# supersedes the node-local ones, which leave the node and the list; the
# rerun resumes from the shared one and ends with the same bytes.
if [ -z "${T_SANITIZED:-}" ]; then
one=(run "$JOBS/demo.cfg" --set replicas=2 --set steps_per_epoch=1 --set stop.max_epochs=4 "${small[@]}")
mpi base1 6 "${one[@]}" --run-dir base1
expect_rc base1/exit base1 0
CAIRN_FAULT=signal:USR1:3:2 mpi flushstop 6 "${one[@]}" --run-dir flushstop "${local[@]}" --set checkpoint.flush_every=2
expect_rc flushstop/stopped flushstop 75
expect_grep flushstop/flushed flushstop/cairn.log "checkpoint saved: epoch 2 step 0"
expect_grep flushstop/superseded flushstop/cairn.log "the checkpoint after epoch 2 in flushstop/ckpt supersedes the node-local ones: removed from the nodes of this run"
expect_eq flushstop/nothing-left-on-the-node "$(ls -A nodelocal/cairn-*)" ""
expect_eq flushstop/no-manifest-left "$(ls flushstop/ckpt/local | grep -c ckpt-)" 0
mpi flushstop-rerun 6 "${one[@]}" --run-dir flushstop "${local[@]}" --set checkpoint.flush_every=2
expect_rc flushstop/rerun-exit flushstop-rerun 0
expect_grep flushstop/resumed flushstop/cairn.log "checkpoint loaded: epoch 2 step 0 \(ckpt-e000002.h5\)"
same_bytes flushstop/model base1/model.h5 flushstop/model.h5
rm -rf nodelocal
fi

# killed TAG [ARG...]: a run of 2 epochs that dies in its final save (to the
# shared directory only): the node-local checkpoint of epoch 1 is the
# newest, the shared one of epoch 0 the one before.
killed() {
    local tag=$1
    shift
    CAIRN_FAULT=kill:write:1:2 mpi "$tag-killed" 6 "${job[@]}" --run-dir "$tag" --set stop.max_epochs=2 \
        "${local[@]}" "$@"
    expect_rc "$tag/killed" "$tag-killed" 137
}
mpi base2 6 "${job[@]}" --run-dir base2 --set stop.max_epochs=2
expect_rc base2/exit base2 0

# One synchronous run killed so, kept (killed.tar: its run directory k and
# the node's tree): each case below that starts from such a run starts
# from a copy of it, in the same place (the node's tree is named by the
# run's checkpoint directory), and leaves it under the case's name.
killed k
tar cf killed.tar k nodelocal
from_killed() { rm -rf k nodelocal && tar xf killed.tar; }
keep_as() { mv k "$1" && rm -rf nodelocal; } # TAG

# ---- resume from the nodes ------------------------------------------------------------
modes="sync async"
[ -n "${T_SANITIZED:-}" ] && modes=sync # the writer thread: asan/ckpt_async
for mode in $modes; do
    extra=() dir=k
    if [ "$mode" = async ]; then
        extra=(--set checkpoint.async=true) dir=async
        killed "$mode" "${extra[@]}"
    else
        from_killed
    fi
    root=$(echo nodelocal/cairn-*)
    expect_eq "$mode/newest-kept-on-the-node" "$(ls "$root")" ckpt-e000001
    expect_eq "$mode/parts" "$(ls "$root/ckpt-e000001" | xargs)" "rank000000 rank000001 rank000002 rank000003 rank000004 rank000005"
    mpi "$mode-rerun" 6 "${job[@]}" --run-dir "$dir" --set stop.max_epochs=2 "${local[@]}" "${extra[@]}"
    expect_rc "$mode/rerun-exit" "$mode-rerun" 0
    expect_grep "$mode/loaded-node-local" "$dir/cairn.log" "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
    expect_grep "$mode/own-copies" "$dir/cairn.log" "node-local checkpoint local/ckpt-e000001: restored from the ranks' own copies$"
    expect_grep "$mode/resumed" "$dir/cairn.log" "resuming after epoch 1 "
    same_bytes "$mode/model" base2/model.h5 "$dir/model.h5"
    [ "$dir" = k ] && keep_as "$mode"
    rm -rf nodelocal
done

# ---- a failing node-local tier falls back to the shared file -----------------------------
# rank 3 cannot create its part after epoch 0's (ENOSPC, as on a full
# /dev/shm; build/eio.so): each save after a failed one goes to the shared
# file too, the log says so once, and a run killed in its final save
# resumes from epoch 3's shared checkpoint, not epoch 0's, with the same bytes
# (the sanitized build's ranks take the shim after their ASan runtime)
CAIRN_FAULT=kill:write:1:4 CAIRN_EIO=open:rank000003.tmp:2+:ENOSPC CAIRN_EIO_RANK=3 \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 run fallback \
    mpirun --oversubscribe -np 6 -x LD_PRELOAD="$CAIRN_ROOT/build/eio.so" -x CAIRN_EIO -x CAIRN_EIO_RANK \
    -x CAIRN_FAULT "$CAIRN" "${job[@]}" --run-dir fallback --set stop.max_epochs=4 "${local[@]}"
expect_rc fallback/killed fallback 137
expect_grep fallback/failed fallback.out "warning: node-local checkpoint after epoch 1 failed: .*No space left on device"
expect_eq fallback/node-local-saves "$(grep -o 'checkpoint saved (node-local): epoch [0-9]' fallback.out | awk '{print $NF}' | xargs)" "0"
expect_eq fallback/shared-saves "$(grep -o 'checkpoint saved: epoch [0-9]' fallback.out | awk '{print $NF}' | xargs)" "0 2 3"
expect_count fallback/said-once fallback.out "note: a node-local save failed, so the next save goes to the shared directory fallback/ckpt too" 1
mpi fallback-rerun 6 "${job[@]}" --run-dir fallback --set stop.max_epochs=4 "${local[@]}"
expect_rc fallback/rerun-exit fallback-rerun 0
expect_grep fallback/resumed fallback/cairn.log "checkpoint loaded: epoch 3 step 0 \(ckpt-e000003.h5\)"
same_bytes fallback/model base/model.h5 fallback/model.h5
rm -rf nodelocal

# the serial tools read the parts: verify each, extract a sharded blob whole
from_killed
run tools-verify "$CAIRN" ckpt verify k/ckpt/local/ckpt-e000001
expect_rc tools/verify tools-verify 0
expect_count tools/verify-each-part tools-verify.out "^ok	rank [0-5]'s part \(own copy\)$" 6
run tools-extract "$CAIRN" ckpt extract k/ckpt --blob ps/L0.W -o x.h5
expect_rc tools/extract tools-extract 0
expect_grep tools/extract-newest tools-extract.out "x.h5: 1 blob of epoch 1 \(local/ckpt-e000001\)"
expect_eq tools/extract-whole "$(py 'import h5py, sys; print(h5py.File(sys.argv[1], "r")["ps/L0.W"].shape)' x.h5)" "(32, 1024)"

if [ -z "${T_SANITIZED:-}" ]; then # the resume protocol's choice
# ---- --resume=EPOCH takes that epoch: the shared one where there is one --------------
from_killed
mpi pick0-rerun 6 "${job[@]}" --run-dir k --set stop.max_epochs=2 "${local[@]}" --resume=0
expect_rc pick0/rerun-exit pick0-rerun 0
expect_grep pick0/shared-epoch-0 k/cairn.log "checkpoint loaded: epoch 0 step 0 \(ckpt-e000000.h5\)"
# a resumed run's first save goes to the shared file too (as a fresh run's does)
expect_grep pick0/first-save-shared k/cairn.log "checkpoint saved: epoch 1 step 0 \(ckpt-e000001.h5\)"
same_bytes pick0/model base2/model.h5 k/model.h5
keep_as pick0
from_killed
mpi pick1-rerun 6 "${job[@]}" --run-dir k --set stop.max_epochs=2 "${local[@]}" --resume=1
expect_rc pick1/rerun-exit pick1-rerun 0
expect_grep pick1/node-local-epoch-1 k/cairn.log "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
same_bytes pick1/model base2/model.h5 k/model.h5
keep_as pick1
fi

# ---- a node-local checkpoint that cannot be loaded --------------------------------------
# unusable TAG WHY: the rerun of the killed run (k), its copy damaged as
# the case says, says WHY, marks the node-local checkpoint bad (whatever
# the cause: the run goes on from an older position), resumes from epoch
# 0's shared checkpoint, ends with the same bytes, and saves epoch 1 on the
# nodes again (that and the bad one gone from the list once the final
# shared save supersedes them)
unusable() {
    local tag=$1 why=$2
    shift 2
    mpi "$tag-rerun" "${NP:-6}" "${job[@]}" --run-dir k --set stop.max_epochs=2 "${local[@]}" "$@"
    expect_rc "$tag/rerun-exit" "$tag-rerun" 0
    expect_grep "$tag/said-why" k/cairn.log "warning: the node-local checkpoint after epoch 1 \(local/ckpt-e000001\) cannot be loaded: $why; resuming from the shared checkpoints in k/ckpt instead \(it is marked bad\)"
    expect_count "$tag/marked-bad" k/metrics.jsonl '"kind":"ckpt_local_unusable"' 1
    expect_grep "$tag/fell-back" k/cairn.log "resuming after epoch 0 "
    same_bytes "$tag/model" base2/model.h5 k/model.h5
    # (the killed run's log has the first)
    expect_count "$tag/saved-again" k/cairn.log "checkpoint saved \(node-local\): epoch 1 step 0 \(ckpt-e000001\)" 2
    # the final shared save superseded it: the bad one is not listed either
    run "$tag-ls" "$CAIRN" ckpt ls k/ckpt
    expect_eq "$tag/none-listed" "$(grep -c "local/" "$tag-ls.out")" 0
    keep_as "$tag"
}
part() { echo nodelocal/cairn-*/ckpt-e000001/rank00000"$1"; }

from_killed
# one byte of rank 4's data (a PS shard's), past its header
py 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-100, 2); b = f.read(1); f.seek(-100, 2); f.write(bytes([b[0] ^ 1]))' "$(part 4)"
unusable damaged "rank 4's part fails its checksum"

# a copy that is not the part the manifest lists (rank 2's under rank 3's name)
from_killed
cp "$(part 2)" "$(part 3)"
unusable disagree "$PWD/$(part 3) disagrees with the manifest \(another rank, position, size or checksum\)"

from_killed
rm "$(part 1)"
unusable missing "no node of this run holds rank 1's part \(its copy was on nodes it does not have\)"

from_killed
printf 'epoch 1\n' >>k/ckpt/local/ckpt-e000001
unusable manifest "k/ckpt/local/ckpt-e000001:[0-9]+: not a node-local checkpoint manifest"

# another layout: the parts re-split onto 8 ranks (4 shards), bitwise
from_killed
mpi resplit-rerun 8 "${job[@]}" --run-dir k --set stop.max_epochs=2 "${local[@]}" --set ps.shards=4
expect_rc resplit/rerun-exit resplit-rerun 0
expect_grep resplit/node-local k/cairn.log "checkpoint loaded \(node-local\): epoch 1 step 0 "
expect_grep resplit/said k/cairn.log "layout changed since that checkpoint: world 6 -> 8 ranks, ps 2 -> 4; sharded state re-split"
same_bytes resplit/model base2/model.h5 k/model.h5
keep_as resplit
# ... which a manifest of an earlier cairn (without its groups and settings) cannot
from_killed
sed -i '/^\(root\|group\|setting\) /d' k/ckpt/local/ckpt-e000001
NP=8 unusable layout "it is of 6 ranks, this run has 8 \(an older cairn wrote it: it loads on its own layout only\)" --set ps.shards=4
rm killed.tar

# ---- a damaged own copy: the partner copy stands in ---------------------------------------
# Three "nodes" of 2 ranks on this machine: each rank in a UTS namespace
# named nodeK and a mount namespace where nodelocal is diskK, so parts get
# partner copies on the next node.  Rank 4's own copy fails its checksum
# and rank 1's is another rank's part; their partner copies are good: the
# resume loads the node-local checkpoint of epoch 1 (not the shared one of
# epoch 0) from them and ends with the same bytes.
cat >fakenode.sh <<'EOF'
#!/bin/sh
# fakenode.sh DIR CMD...: this rank on node K = rank / 2 + 1, its disk the
# Kth of NODE_DISKS (default "1 2 3": each node its own)
k=$((${OMPI_COMM_WORLD_RANK:-0} / 2 + 1))
d=$(echo ${NODE_DISKS:-1 2 3} | cut -d' ' -f$k)
mkdir -p "$1/disk$d" "$1/nodelocal"
exec unshare --uts --mount --propagation private sh -c \
    'hostname "node$1" && mount --bind "$3/disk$2" "$3/nodelocal" && shift 3 && exec "$@"' sh "$k" "$d" "$@"
EOF
chmod +x fakenode.sh
# nodes TAG ARGS...: cairn ARGS on 6 ranks, on those three nodes
nodes() {
    local tag=$1
    shift
    CAIRN_FAULT=${CAIRN_FAULT:-} NODE_DISKS=${NODE_DISKS:-1 2 3} run "$tag" mpirun --oversubscribe -np 6 \
        -x CAIRN_FAULT -x NODE_DISKS ./fakenode.sh "$PWD" "$CAIRN" "$@"
}
if ! ./fakenode.sh "$PWD" true 2>/dev/null; then
    echo "skip - $T_NAME/partner: cannot make namespaces here (needs root)"
else
    CAIRN_FAULT=kill:write:1:2 nodes partner-killed "${job[@]}" --run-dir partner --set stop.max_epochs=2 "${local[@]}"
    expect_rc partner/killed partner-killed 137
    expect_count partner/partner-copies partner/cairn.log "have no partner copies" 0
    disk_part() { echo disk"$1"/cairn-*/ckpt-e000001/"$2"; }
    expect_eq partner/node1-holds "$(ls $(disk_part 1 '') | xargs)" "partner000004 partner000005 rank000000 rank000001"
    py 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-100, 2); b = f.read(1); f.seek(-100, 2); f.write(bytes([b[0] ^ 1]))' "$(disk_part 3 rank000004)"
    cp "$(disk_part 1 rank000000)" "$(disk_part 1 rank000001)"
    CAIRN_FAULT= nodes partner-rerun "${job[@]}" --run-dir partner --set stop.max_epochs=2 "${local[@]}"
    expect_rc partner/rerun-exit partner-rerun 0
    expect_grep partner/loaded-node-local partner/cairn.log "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
    expect_grep partner/from-partner-copies partner/cairn.log "node-local checkpoint local/ckpt-e000001: restored from partner copies for ranks 1, 4, from the ranks' own copies for the rest"
    expect_count partner/not-unusable partner/metrics.jsonl '"kind":"ckpt_local_unusable"' 0
    same_bytes partner/model base2/model.h5 partner/model.h5
    rm -rf nodelocal disk1 disk2 disk3

    # every node checks that no other node sees its node-local directory,
    # not rank 0's alone: nodes 2 and 3 on one disk are refused (exit 2),
    # named, before anything is written
    NODE_DISKS="1 2 2" nodes shared-disk "${job[@]}" --run-dir shared-disk "${local[@]}"
    expect_rc shared-disk/exit shared-disk 2
    expect_grep shared-disk/named shared-disk.err "checkpoint.local = \"$PWD/nodelocal\" is not node-local: node3 \(rank 4-5\) sees the file rank 2 \(node2\) wrote there"
    expect_eq shared-disk/nothing-saved "$(ls shared-disk/ckpt 2>/dev/null | grep -c ckpt-)" 0
fi
rm -rf nodelocal disk1 disk2 disk3

# ---- a kill while the parts are written -------------------------------------------------
CAIRN_FAULT=kill:local:3:1 mpi mid-killed 6 "${job[@]}" --run-dir mid --set stop.max_epochs=2 "${local[@]}"
expect_rc mid/killed mid-killed 137
run mid-ls "$CAIRN" ckpt ls mid/ckpt
expect_eq mid/previous-newest "$(cut -f1,3,5 mid-ls.out | tr '\t\n' ' ')" "0 ckpt-e000000.h5 ok 0 local/ckpt-e000000 ok "
mpi mid-rerun 6 "${job[@]}" --run-dir mid --set stop.max_epochs=2 "${local[@]}"
expect_rc mid/rerun-exit mid-rerun 0
expect_grep mid/resumed mid/cairn.log "resuming after epoch 0 "
same_bytes mid/model base2/model.h5 mid/model.h5
rm -rf nodelocal

# ---- a node-local directory in memory that cannot hold the tier ---------------------------
# On a 32 MiB tmpfs (as a small /dev/shm) the tier would need twice the
# ~26 MB state: refused before training (exit 2), naming the node and the
# sizes; a 160 MiB one is fine.
mkdir room
if mount -t tmpfs -o size=32m tmpfs room 2>/dev/null; then
    trap 'umount -l "$PWD/room" 2>/dev/null' EXIT
    mpi room 6 "${job[@]}" --run-dir room --set stop.max_epochs=1 --set "checkpoint.local=\"$PWD/room\""
    expect_rc room/refused room 2
    expect_grep room/said room.err "checkpoint.local = \"$PWD/room\" is in memory \(tmpfs\) on $(hostname), with room for 3[0-9.]+ MB, but that node will hold 5[0-9.]+ MB of node-local checkpoints \(its ranks' parts, twice while a save commits\)"
    expect_count room/before-training room.out "epoch 1 done" 0
    umount room && mount -t tmpfs -o size=160m tmpfs room
    mpi roomy 6 "${job[@]}" --run-dir roomy --set stop.max_epochs=1 --set "checkpoint.local=\"$PWD/room\""
    expect_rc roomy/exit roomy 0
    # ramfs, and tmpfs with size=0, have no size (statvfs says 0 blocks, 0
    # free): the tier is measured against the memory available, not
    # refused; a run killed in its final save resumes from the nodes and
    # ends with the same bytes
    for fs in ramfs tmpfs0; do
        umount room
        if [ $fs = ramfs ]; then mount -t ramfs ramfs room; else mount -t tmpfs -o size=0 tmpfs room; fi
        CAIRN_FAULT=kill:write:1:2 mpi "$fs-killed" 6 "${job[@]}" --run-dir "$fs" --set stop.max_epochs=2 \
            --set "checkpoint.local=\"$PWD/room\""
        expect_rc "$fs/killed" "$fs-killed" 137
        mpi "$fs-rerun" 6 "${job[@]}" --run-dir "$fs" --set stop.max_epochs=2 --set "checkpoint.local=\"$PWD/room\""
        expect_rc "$fs/rerun-exit" "$fs-rerun" 0
        expect_grep "$fs/loaded-node-local" "$fs/cairn.log" "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
        same_bytes "$fs/model" base2/model.h5 "$fs/model.h5"
    done
    # a resumed run whose node lacks the room (a rerun after a node loss
    # puts more ranks' parts on each node left; here the tmpfs shrinks under
    # the tree of the run before) is not refused: it warns once, saves to
    # the shared directory alone, and ends with the same bytes, leaving
    # nothing on the node
    umount room && mount -t tmpfs -o size=160m tmpfs room
    CAIRN_FAULT=kill:write:1:2 mpi shrunk-killed 6 "${job[@]}" --run-dir shrunk --set stop.max_epochs=2 \
        --set "checkpoint.local=\"$PWD/room\""
    expect_rc shrunk/killed shrunk-killed 137
    mount -o remount,size=40m room
    mpi shrunk-rerun 6 "${job[@]}" --run-dir shrunk --set stop.max_epochs=2 --set "checkpoint.local=\"$PWD/room\""
    expect_rc shrunk/rerun-exit shrunk-rerun 0
    expect_grep shrunk/loaded-node-local shrunk/cairn.log "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
    expect_count shrunk/warned-once shrunk/cairn.log "warning: checkpoint.local = \"$PWD/room\" is in memory \(tmpfs\) on $(hostname), with room for 4[0-9.]+ MB, but that node will hold 5[0-9.]+ MB .*; this run resumed a checkpoint, so it goes on without node-local saves: every save goes to the shared directory shrunk/ckpt$" 1
    expect_count shrunk/no-node-local-saves shrunk-rerun.out "checkpoint saved \(node-local\)" 0
    expect_eq shrunk/nothing-left-on-the-node "$(ls -A room/cairn-*)" ""
    same_bytes shrunk/model base2/model.h5 shrunk/model.h5
    umount room
else
    echo "skip - $T_NAME/room: cannot mount a tmpfs here (needs root)"
fi

# ---- a directory that cannot be made -----------------------------------------------------
touch afile
mpi nodir 6 "${job[@]}" --run-dir nodir --set "checkpoint.local=\"$PWD/afile/sub\""
expect_rc nodir/exit nodir 3
expect_grep nodir/said nodir.err "cannot create directory $PWD/afile/sub"
