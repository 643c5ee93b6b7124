# The BLAS kernel is part of a run's identity (issue 36): `cairn --version`
# names this node's; a run whose ranks run different kernels (nodes of
# two CPU types, made here by giving one rank its own OPENBLAS_CORETYPE)
# says so at start-up, naming the ranks, their hosts and how to pin one;
# each checkpoint records the kernels, and a resume on another kernel
# warns that the rest is not bitwise the uninterrupted run, while a resume
# on the checkpoint's is silent and bitwise.
. "$(dirname "$0")/../lib.sh"
enter
T_TIMEOUT=60

# Prescott (SSE3) runs on every x86-64 CPU; the other kernel is this
# machine's own choice (or Core2, should that be Prescott)
run ver-native "$CAIRN" --version
B=$(sed -n 's/^BLAS kernel: \([A-Za-z0-9_]*\) (.*/\1/p' ver-native.out)
A=Prescott
[ "$B" = "$A" ] && B=Core2
OPENBLAS_CORETYPE=$A run ver-A "$CAIRN" --version
OPENBLAS_CORETYPE=$B run ver-B "$CAIRN" --version
if ! grep -q "^BLAS kernel: $A (" ver-A.out || ! grep -q "^BLAS kernel: $B (" ver-B.out; then
    echo "skip - $T_NAME: this OpenBLAS cannot be made to run kernels $A and $B (OPENBLAS_CORETYPE)"
    exit 0
fi
expect_grep version/kernel ver-A.out "^BLAS kernel: $A \(OpenBLAS [^)]*$A[^)]*\)$"

synth data 2 k.h5 1024 8 3 1
cat >k.cfg <<'CFG'
name = "kern";
seed = 4;
model = { inputs = 8;
  layers = ( { units = 32; activation = "tanh"; }, { units = 16; activation = "relu"; },
             { units = 3; activation = "identity"; } ); };
data = { file = "k.h5"; batch = 64; };
pipeline = { chunks = 4; };
replicas = 2;
ps = { shards = 1; optimizer = "adam"; lr = 0.01; };
stop = { max_epochs = 2; };
steps_per_epoch = 4;
CFG
# cores.sh RANK MINE OTHERS CMD...: world rank RANK runs kernel MINE, the
# others OTHERS, as on nodes of two CPU types
cat >cores.sh <<'SH'
r=$1 mine=$2 rest=$3
shift 3
if [ "$OMPI_COMM_WORLD_RANK" = "$r" ]; then OPENBLAS_CORETYPE=$mine; else OPENBLAS_CORETYPE=$rest; fi
export OPENBLAS_CORETYPE
exec "$@"
SH
job() { # TAG RANK MINE OTHERS ARGS...: k.cfg on 3 ranks (2 replicas, 1 shard)
    local tag=$1 r=$2 mine=$3 rest=$4
    shift 4
    run "$tag" mpirun --oversubscribe -np 3 sh cores.sh "$r" "$mine" "$rest" "$CAIRN" run k.cfg "$@"
    expect_rc "$tag/rc" "$tag" 0
}
kernels() { py 'import h5py, sys; print(h5py.File(sys.argv[1], "r").attrs["blas_kernels"].decode())' "$1"; }
host=$(hostname | sed 's/[.[\*^$]/\\&/g')

# ---- one kernel: no warning; the checkpoint names it, without ranks --------------------
job same 2 "$A" "$A" --run-dir same
grep -q "BLAS kernel" same.out && fail same/no-warning "a warning with one kernel" same.out || pass same/no-warning
expect_eq same/recorded "$(kernels same/ckpt/ckpt-e000002.h5 | sed 's/ (.*//')" "$A"
# the kernels do change bits (else nothing here could matter)
job other 2 "$B" "$B" --run-dir other
h5differ same/model.h5 other/model.h5 /layers && pass kernels-change-bits ||
    fail kernels-change-bits "kernels $A and $B trained the same bits"

# ---- replica 1 (rank 1; rank 2 is the shard) on another kernel: a warning -------------
# naming the ranks, their hosts and the pin
job mixed 1 "$B" "$A" --run-dir mixed
expect_grep mixed/warned mixed.out "warning: the ranks run different BLAS kernels: $A \(OpenBLAS [^)]*\) on ranks 0,2 \($host\); $B \(OpenBLAS [^)]*\) on rank 1 \($host\)\. The results are correct, .*OPENBLAS_CORETYPE=$A"
expect_grep mixed/logged mixed/cairn.log "warning: the ranks run different BLAS kernels"
expect_grep mixed/recorded <(kernels mixed/ckpt/ckpt-e000001.h5) "^$A \(.*\) on ranks 0,2; $B \(.*\) on rank 1$"
# replica 1 computes its micro-batches on B: the bits of neither kernel alone
h5differ same/model.h5 mixed/model.h5 /layers && pass mixed/own-bits ||
    fail mixed/own-bits "mixed kernels trained the bits of kernel $A alone"

# ---- resume on another kernel: warned; on the checkpoint's: silent and bitwise ----------
job part-other 2 "$A" "$A" --run-dir other-resume --set stop.max_epochs=1
job rest-other 2 "$B" "$B" --run-dir other-resume
expect_grep resume/warned rest-other.out "warning: the checkpoint was written on BLAS kernel $A \(OpenBLAS [^)]*\), this run runs $B \(OpenBLAS [^)]*\): the results stay correct but are not bitwise equal to a run that was never interrupted \(OPENBLAS_CORETYPE=$A in every rank's environment runs the checkpoint's kernel\)"
h5differ same/model.h5 other-resume/model.h5 /layers && pass resume/other-bits ||
    fail resume/other-bits "the resume on $B gave the uninterrupted run's bits"
job part-same 2 "$A" "$A" --run-dir same-resume --set stop.max_epochs=1
job rest-same 2 "$A" "$A" --run-dir same-resume
expect_grep resume/resumed rest-same.out "resuming after epoch 1"
grep -q "BLAS kernel" rest-same.out && fail resume/silent "a warning on the same kernel" rest-same.out ||
    pass resume/silent
same_model resume/bitwise same/model.h5 same-resume/model.h5

# ---- the node-local tier keeps them too: a run that dies in its final (shared) ----------
# save leaves epoch 1 on the nodes the newest, which the rerun loads
CAIRN_FAULT=kill:write:1:2 run local-part mpirun --oversubscribe -np 3 sh cores.sh 2 "$A" "$A" \
    "$CAIRN" run k.cfg --run-dir local --set 'checkpoint.local="nl"'
expect_rc local/killed local-part 137
expect_grep local/manifest local/ckpt/local/ckpt-e000001 "^blas $A \(OpenBLAS .*\)$"
job local-rest 2 "$B" "$B" --run-dir local --set 'checkpoint.local="nl"'
expect_grep local/resumed local-rest.out "checkpoint loaded \(node-local\): epoch 1 step 0"
expect_grep local/warned local-rest.out "warning: the checkpoint was written on BLAS kernel $A \(OpenBLAS [^)]*\), this run runs $B"
