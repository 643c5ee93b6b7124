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
run verify-s1 "$CAIRN" ckpt verify mlp/ckpt/ckpt-e000003.h5 --job "$G/mlp.cfg" --set pipeline.stages=1
expect_rc stages/verify-fits-1-stage verify-s1 0
# a stage's other state is still checked: a checkpoint of another model is refused
run verify-other "$CAIRN" ckpt verify mlp/ckpt/ckpt-e000003.h5 --job "$G/mlp.cfg" --set pipeline.stages=1 \
    --set model.layers.0.units=32
expect_rc stages/other-model-refused verify-other 2
expect_grep stages/other-model-named verify-other.err "was written for other settings: blob ps/L0.W: the checkpoint has f32\[32, 64\] sharded, this job f32\[32, 32\] sharded"
