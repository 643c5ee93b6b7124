# The storage layer (src/ckpt): cairn writes the bytes it wrote before the
# layer was restructured (every checkpoint, model file and node-local part
# of three jobs against the SHA-256 sums of what commit 51297a0 wrote,
# regression/golden), and a checkpoint resumes on another number of
# pipeline stages, bitwise.
. "$(dirname "$0")/../lib.sh"
enter
G=$CAIRN_ROOT/regression/golden

run golden env CAIRN="$CAIRN" "$G/make.sh" "$PWD/g"
expect_rc golden/ran golden 0
while read -r sum file; do
    expect_eq "golden/$file" "$(awk -v f="$file" '$2 == f {print $1}' golden.out)" "$sum"
done <"$G/sums"
cd g || exit 1

# another number of stages: the stages' cursors are one family (the same
# state on each), the parameters live on the shards
mpi mlp-s2 4 run "$G/mlp.cfg" --run-dir s2to1 --set stop.max_epochs=1
mpi mlp-to-s1 3 run "$G/mlp.cfg" --run-dir s2to1 --set pipeline.stages=1
expect_rc stages/2-to-1 mlp-to-s1 0
expect_grep stages/2-to-1-said s2to1/cairn.log "layout changed since that checkpoint: world 4 -> 3 ranks, stage groups 2 -> 1; sharded state re-split"
same_bytes stages/2-to-1-as-uninterrupted mlp/model.h5 s2to1/model.h5
mpi mlp-s1 3 run "$G/mlp.cfg" --run-dir s1to3 --set stop.max_epochs=2 --set pipeline.stages=1
mpi mlp-to-s3 5 run "$G/mlp.cfg" --run-dir s1to3 --set pipeline.stages=3
expect_rc stages/1-to-3 mlp-to-s3 0
expect_grep stages/1-to-3-said s1to3/cairn.log "stage groups 1 -> 3"
same_bytes stages/1-to-3-as-uninterrupted mlp/model.h5 s1to3/model.h5
mpi lm-s2 3 run "$G/lm.cfg" --run-dir lm2to1 --set stop.max_epochs=1
mpi lm-to-s1 2 run "$G/lm.cfg" --run-dir lm2to1 --set pipeline.stages=1
expect_rc stages/lm-2-to-1 lm-to-s1 0
same_bytes stages/lm-2-to-1-as-uninterrupted lm/model.h5 lm2to1/model.h5
mpi mlp-r1 4 run "$G/mlp.cfg" --run-dir r1to2 --set stop.max_epochs=2
mpi mlp-to-r2 6 run "$G/mlp.cfg" --run-dir r1to2 --set replicas=2
expect_rc replicas/1-to-2 mlp-to-r2 0
same_bytes replicas/1-to-2-as-uninterrupted mlp/model.h5 r1to2/model.h5
run verify-s1 "$CAIRN" ckpt verify mlp/ckpt/ckpt-e000003.h5 --job "$G/mlp.cfg" --set pipeline.stages=1
expect_rc stages/verify-fits-1-stage verify-s1 0
# a stage's other state is still checked: a checkpoint of another model is refused
run verify-other "$CAIRN" ckpt verify mlp/ckpt/ckpt-e000003.h5 --job "$G/mlp.cfg" --set pipeline.stages=1 \
    --set model.layers.0.units=32
expect_rc stages/other-model-refused verify-other 2
expect_grep stages/other-model-named verify-other.err "was written for other settings: blob ps/L0.W: the checkpoint has f32\[32, 64\] sharded, this job f32\[32, 32\] sharded"

# node-local checkpoints restore on another layout, re-split from the parts
# as from the shared file; each first run stops after its node-local save
# of epoch 1, the newest checkpoint
local_first() { # TAG RUN_DIR
    run "$1" env CAIRN_FAULT=kill:local_index:0:2 mpirun --oversubscribe -np 4 "$CAIRN" run "$G/mlp.cfg" \
        --run-dir "$2" --set "checkpoint.local=\"$PWD/nodes\"" --set checkpoint.flush_every=10
    expect_grep "local/$1-saved" "$2/cairn.log" "checkpoint saved \(node-local\): epoch 1 step 0 "
}
tier=(--set "checkpoint.local=\"$PWD/nodes\"" --set checkpoint.flush_every=10)
local_first first-a rs
run verify-local "$CAIRN" ckpt verify rs/ckpt/local/ckpt-e000001 --job "$G/mlp.cfg" --set ps.shards=1
expect_rc local/verify verify-local 0
expect_count local/verify-each-part verify-local.out "^ok	rank [0-3]'s part \(own copy\)$" 4
# extract joins a blob's parts: the same values as the shared file's
run extract-local "$CAIRN" ckpt extract rs/ckpt --epoch 1 --blob ps/L0.W --blob stage1/cursor -o local-x.h5
expect_rc local/extract extract-local 0
run extract-shared "$CAIRN" ckpt extract mlp/ckpt --epoch 1 --blob ps/L0.W --blob stage1/cursor -o shared-x.h5
same_h5 local/extract-sharded-as-shared shared-x.h5 local-x.h5 /ps/L0.W
same_h5 local/extract-replicated-as-shared shared-x.h5 local-x.h5 /stage1/cursor
mpi local-3 3 run "$G/mlp.cfg" --run-dir rs "${tier[@]}" --set ps.shards=1
expect_rc local/4-to-3 local-3 0
expect_grep local/4-to-3-node-local rs/cairn.log "checkpoint loaded \(node-local\): epoch 1 step 0 "
expect_grep local/4-to-3-said rs/cairn.log "layout changed since that checkpoint: world 4 -> 3 ranks, ps 2 -> 1; sharded state re-split"
same_bytes local/4-to-3-as-uninterrupted mlp/model.h5 rs/model.h5
local_first first-b rs2
mpi local-s1 4 run "$G/mlp.cfg" --run-dir rs2 "${tier[@]}" --set ps.shards=3 --set pipeline.stages=1
expect_rc local/stages-and-shards local-s1 0
expect_grep local/stages-and-shards-said rs2/cairn.log "layout changed since that checkpoint: ps 2 -> 3, stage groups 2 -> 1; sharded state re-split"
same_bytes local/stages-and-shards-as-uninterrupted mlp/model.h5 rs2/model.h5
# a damaged part: verify names it; the load sets it aside and, with no
# partner copy on one node, resumes from the shared tier (epoch 0)
local_first first-c rs3
part=$(sed -n 's/^root //p' rs3/ckpt/local/ckpt-e000001)/ckpt-e000001/rank000002
py 'import sys; f = open(sys.argv[1], "r+b"); f.seek(-8, 2); b = f.read(1); f.seek(-8, 2); f.write(bytes([b[0] ^ 1]))' "$part"
run verify-damaged "$CAIRN" ckpt verify rs3/ckpt/local/ckpt-e000001
expect_rc local/verify-damaged verify-damaged 1
expect_grep local/verify-damaged-named verify-damaged.out "rank000002: rank 2's part fails its checksum"
mpi local-damaged 3 run "$G/mlp.cfg" --run-dir rs3 "${tier[@]}" --set ps.shards=1
expect_rc local/damaged-resumed local-damaged 0
expect_grep local/damaged-set-aside rs3/cairn.log "warning: the node-local checkpoint after epoch 1 \(local/ckpt-e000001\) cannot be loaded: rank 2's part fails its checksum; resuming from the shared checkpoints"
expect_grep local/damaged-shared-taken rs3/cairn.log "resuming after epoch 0 "
same_bytes local/damaged-as-uninterrupted mlp/model.h5 rs3/model.h5

# extract joins each kind of blob: a sharded one's rows in rank order, a
# per-rank one under a ranks dimension, a replicated one once; the run is
# killed in its shared commit of epoch 2, after its node-local one
cat >pr.cfg <<'CFG'
name = "pr";
groups = ( { name = "g"; ranks = 2; } );
init = ( { group = "g"; steps = (
    { op = "range"; out = "w"; shape = [6, 3]; dist = "sharded"; },
    { op = "range"; out = "mine"; shape = [2, 3]; dist = "per-rank"; start = 10.0; },
    { op = "range"; out = "total"; shape = [4]; start = 100.0; } ); } );
epoch = ( { group = "g"; steps = (
    { op = "scale"; in = "w"; out = "w"; factor = 2.0; },
    { op = "scale"; in = "mine"; out = "mine"; factor = 3.0; },
    { op = "scale"; in = "total"; out = "total"; factor = 0.5; } ); } );
stop = { max_epochs = 3; };
CFG
mpi pr-shared 2 run pr.cfg --run-dir prs
run pr-local env CAIRN_FAULT=kill:index_tmp:0:2 mpirun --oversubscribe -np 2 "$CAIRN" run pr.cfg --run-dir prl \
    --set "checkpoint.local=\"$PWD/nodes\"" --set checkpoint.flush_every=1
blobs=(--blob g/w --blob g/mine --blob g/total)
run pr-x-local "$CAIRN" ckpt extract prl/ckpt --epoch 2 "${blobs[@]}" -o pr-local.h5
expect_grep kinds/extract-took-node-local pr-x-local.out "pr-local.h5: 3 blobs of epoch 2 \(local/ckpt-e000002\)"
run pr-x-shared "$CAIRN" ckpt extract prs/ckpt --epoch 2 "${blobs[@]}" -o pr-shared.h5
expect_rc kinds/extract-shared pr-x-shared 0
for b in w mine total; do same_h5 "kinds/extract-$b-as-shared" pr-shared.h5 pr-local.h5 "/g/$b"; done
expect_eq kinds/per-rank-stacked "$(py 'import h5py, sys; print(h5py.File(sys.argv[1], "r")["g/mine"].shape)' pr-local.h5)" "(2, 2, 3)"
