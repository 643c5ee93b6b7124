# The node-local checkpoint tier (checkpoint.local) on one node, with the
# demo on 6 ranks (2 replicas of 2 stages, 2 PS shards: replicated state
# in groups of 2, sharded state on the shards).  Multi-node behaviour (a
# node lost, partner copies, a "local" directory every node sees) is in
# nodes.sh.
# - Saves go to the nodes every epoch and to the shared directory every
#   flush_every epochs and at the end; `cairn ckpt ls` lists both tiers;
#   each node keeps only the newest node-local checkpoint; the model is
#   the one shared checkpoints give, byte for byte.
# - A run killed in its final (shared) save resumes from the newer
#   node-local checkpoint and ends with the same bytes, with synchronous
#   and with background saves; --resume=EPOCH takes the shared checkpoint
#   of that epoch if there is one, else the node-local one.
# - A node-local checkpoint with a damaged part, a copy that disagrees with
#   its manifest, a missing part, a damaged manifest, or of another layout
#   is not loaded: the log says why, the
#   resume falls back to the newest shared checkpoint, and the model is the
#   same; it is marked bad (the run goes on from an older position).
# - A kill while the parts are written leaves the previous checkpoint the
#   newest, and the rerun ends with the same bytes.
# - A directory that cannot be created is a clear error at start-up.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=180
demo_data data 2 demo.h5
job=(run "$JOBS/demo.cfg" --set replicas=2 --set steps_per_epoch=4)
local=(--set "checkpoint.local=\"$PWD/nodelocal\"")
mpi base 6 "${job[@]}" --run-dir base --set stop.max_epochs=4
expect_rc base/exit base 0

# ---- saves in both tiers ----------------------------------------------------------------
mpi tiers 6 "${job[@]}" --run-dir tiers --set stop.max_epochs=4 "${local[@]}" --set checkpoint.flush_every=2
expect_rc tiers/exit tiers 0
expect_grep tiers/one-node-noted tiers/cairn.log "note: every rank runs on [^ ]+: node-local checkpoints in $PWD/nodelocal have no partner copies"
expect_eq tiers/node-local-saves "$(grep -o 'checkpoint saved (node-local): epoch [0-9]' tiers/cairn.log | awk '{print $NF}' | xargs)" "0 1 2 3"
expect_eq tiers/shared-saves "$(grep -o 'checkpoint saved: epoch [0-9]' tiers/cairn.log | awk '{print $NF}' | xargs)" "0 2 4"
run tiers-ls "$CAIRN" ckpt ls tiers/ckpt
expect_eq tiers/listed "$(cut -f1,3,5 tiers-ls.out | tr '\t\n' ' ')" \
    "0 ckpt-e000000.h5 ok 2 ckpt-e000002.h5 ok 3 local/ckpt-e000003 ok 4 ckpt-e000004.h5 ok "
root=$(echo nodelocal/cairn-*)
expect_eq tiers/newest-kept-on-the-node "$(ls "$root")" ckpt-e000003
expect_eq tiers/parts "$(ls "$root/ckpt-e000003" | xargs)" "rank000000 rank000001 rank000002 rank000003 rank000004 rank000005"
same_bytes tiers/model base/model.h5 tiers/model.h5
rm -rf nodelocal

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

# ---- resume from the nodes ------------------------------------------------------------
for mode in sync async; do
    extra=()
    [ "$mode" = async ] && extra=(--set checkpoint.async=true)
    killed "$mode" "${extra[@]}"
    mpi "$mode-rerun" 6 "${job[@]}" --run-dir "$mode" --set stop.max_epochs=2 "${local[@]}" "${extra[@]}"
    expect_rc "$mode/rerun-exit" "$mode-rerun" 0
    expect_grep "$mode/loaded-node-local" "$mode/cairn.log" "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
    expect_grep "$mode/own-copies" "$mode/cairn.log" "node-local checkpoint local/ckpt-e000001: restored from the ranks' own copies$"
    expect_grep "$mode/resumed" "$mode/cairn.log" "resuming after epoch 1 "
    same_bytes "$mode/model" base2/model.h5 "$mode/model.h5"
    rm -rf nodelocal
done

# ---- --resume=EPOCH takes that epoch: the shared one where there is one --------------
killed pick0
mpi pick0-rerun 6 "${job[@]}" --run-dir pick0 --set stop.max_epochs=2 "${local[@]}" --resume=0
expect_rc pick0/rerun-exit pick0-rerun 0
expect_grep pick0/shared-epoch-0 pick0/cairn.log "checkpoint loaded: epoch 0 step 0 \(ckpt-e000000.h5\)"
same_bytes pick0/model base2/model.h5 pick0/model.h5
rm -rf nodelocal
killed pick1
mpi pick1-rerun 6 "${job[@]}" --run-dir pick1 --set stop.max_epochs=2 "${local[@]}" --resume=1
expect_rc pick1/rerun-exit pick1-rerun 0
expect_grep pick1/node-local-epoch-1 pick1/cairn.log "checkpoint loaded \(node-local\): epoch 1 step 0 \(local/ckpt-e000001\)"
same_bytes pick1/model base2/model.h5 pick1/model.h5
rm -rf nodelocal

# ---- a node-local checkpoint that cannot be loaded --------------------------------------
# unusable TAG WHY: the rerun says WHY, marks the node-local checkpoint bad
# (whatever the cause: the run goes on from an older position), resumes
# from epoch 0's shared checkpoint, ends with the same bytes, and its own
# node-local save of epoch 1 is listed in its place
unusable() {
    local tag=$1 why=$2
    shift 2
    mpi "$tag-rerun" "${NP:-6}" "${job[@]}" --run-dir "$tag" --set stop.max_epochs=2 "${local[@]}" "$@"
    expect_rc "$tag/rerun-exit" "$tag-rerun" 0
    expect_grep "$tag/said-why" "$tag/cairn.log" "warning: the node-local checkpoint after epoch 1 \(local/ckpt-e000001\) cannot be loaded: $why; resuming from the shared checkpoints in $tag/ckpt instead \(it is marked bad\)"
    expect_count "$tag/marked-bad" "$tag/metrics.jsonl" '"kind":"ckpt_local_unusable"' 1
    expect_grep "$tag/fell-back" "$tag/cairn.log" "resuming after epoch 0 "
    same_bytes "$tag/model" base2/model.h5 "$tag/model.h5"
    run "$tag-ls" "$CAIRN" ckpt ls "$tag/ckpt"
    expect_eq "$tag/saved-again" "$(grep -c "^1	0	local/ckpt-e000001	[0-9]*	ok$" "$tag-ls.out")" 1
    rm -rf nodelocal
}
part() { echo nodelocal/cairn-*/ckpt-e000001/rank00000"$1"; }

killed damaged
# one byte of rank 4's data (a PS shard's), past its header
py 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-100, 2); b = f.read(1); f.seek(-100, 2); f.write(bytes([b[0] ^ 1]))' "$(part 4)"
unusable damaged "rank 4's part fails its checksum"

# a copy that is not the part the manifest lists (rank 2's under rank 3's name)
killed disagree
cp "$(part 2)" "$(part 3)"
unusable disagree "$PWD/$(part 3) disagrees with the manifest \(another rank, position, size or checksum\)"

killed missing
rm "$(part 1)"
unusable missing "no node of this run holds rank 1's part \(its copy was on nodes it does not have\)"

killed manifest
printf 'epoch 1\n' >>manifest/ckpt/local/ckpt-e000001
unusable manifest "manifest/ckpt/local/ckpt-e000001:[0-9]+: not a node-local checkpoint manifest"

killed layout
NP=8 unusable layout "it is of 6 ranks, this run has 8" --set ps.shards=4

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

# ---- a directory that cannot be made -----------------------------------------------------
touch afile
mpi nodir 6 "${job[@]}" --run-dir nodir --set "checkpoint.local=\"$PWD/afile/sub\""
expect_rc nodir/exit nodir 3
expect_grep nodir/said nodir.err "cannot create directory $PWD/afile/sub"
