#!/usr/bin/env bash
# Training benchmarks on jobs/demo.cfg's model, each against a reference
# measured in the same run:
#  1. samples/s on one trainer rank (plus its PS shard) against the
#     BLAS-bound limit: this core's sgemm GFLOP/s over the model's GEMM
#     FLOPs per sample (target >= 0.9);
#  2. pipeline efficiency of 2 balanced stages with 4 micro-batches,
#     T1 / (2 T2) from the time spent in the pipeline schedule, against
#     the GPipe ideal m / (m + S - 1) = 0.8 (target >= 0.9 of it);
#  3. the download (p?gemr2d from 2 PS shards to trainer 0) against an
#     MPI_Gatherv of the same bytes (target <= 1.5x).
# Each run is best of its epochs (or of three runs); checkpoints are off.
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
cairn=$root/build/cairn
dir=${BENCH_DIR:-$root/build/bench/train}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
job=$root/jobs/demo.cfg
quick=(--set checkpoint.every=0 --set steps_per_epoch=24 --set stop.max_epochs=3)

CAIRN=$cairn "$root/jobs/demo_data.sh" demo.h5 2 >/dev/null
gflops=$("$cairn" bench sgemm 1024 | awk '{print $3}')

best() { /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, kind, expr = sys.argv[1:4]
rows = [json.loads(l) for l in open(path)]
vals = [eval(expr, {}, r) for r in rows if r["kind"] == kind]
print(max(vals) if expr.startswith("-") is False else min(vals))
PY
}

# 1. one trainer rank: no pipeline, so one micro-batch of the whole batch
mpirun -np 2 "$cairn" run "$job" --run-dir one "${quick[@]}" --set pipeline.stages=1 \
    --set 'pipeline.balance=[4]' --set pipeline.chunks=1 --set ps.shards=1 >one.log
sps=$(best one/metrics.jsonl epoch 'samples / train_seconds')

# 2. pipeline: the same 4 micro-batches on 1 stage and on 2 balanced stages
mpirun -np 2 "$cairn" run "$job" --run-dir p1 "${quick[@]}" --set pipeline.stages=1 \
    --set 'pipeline.balance=[4]' --set ps.shards=1 >p1.log
mpirun -np 3 "$cairn" run "$job" --run-dir p2 "${quick[@]}" --set ps.shards=1 >p2.log
t1=$(best p1/metrics.jsonl epoch '-pipe_seconds')
t2=$(best p2/metrics.jsonl epoch '-pipe_seconds')

# 3. the download, three times, beside MPI_Gatherv of the same bytes
for i in 1 2 3; do
    mpirun -np 4 "$cairn" run "$job" --run-dir dl$i --set checkpoint.every=0 --set steps_per_epoch=4 \
        --set stop.max_epochs=1 --set debug.compare_gatherv=true >dl$i.log
done
dl=$(cat dl*/metrics.jsonl | grep '"kind":"download"' | /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
print(min(r["seconds"] for r in rows), min(r["gatherv_seconds"] for r in rows), rows[0]["bytes"])')

/usr/bin/python3 - "$gflops" "$sps" "$t1" "$t2" $dl <<'PY'
import sys
gflops, sps, t1, t2, dl, gv, nbytes = map(float, sys.argv[1:])
t1, t2 = abs(t1), abs(t2)
dims = [32, 1024, 1024, 1024, 8]
flops = sum(2 * a * b * (2 if i == 0 else 3) for i, (a, b) in enumerate(zip(dims, dims[1:])))
limit = gflops * 1e9 / flops
eff, ideal = t1 / (2 * t2), 4 / (4 + 2 - 1)
print(f"sgemm 1024 on one core: {gflops:.1f} GFLOP/s; the model: {flops / 1e6:.2f} MFLOP per sample")
print(f"{'measure':34}{'cairn':>12}{'reference':>12}{'ratio':>8}  target")
print(f"{'samples/s, 1 trainer rank':34}{sps:12.0f}{limit:12.0f}{sps / limit:8.2f}  >= 0.9 (BLAS-bound limit)")
print(f"{'pipeline efficiency, S=2, m=4':34}{eff:12.3f}{ideal:12.3f}{eff / ideal:8.2f}  >= 0.9 (GPipe ideal)")
print(f"{'download of %.1f MB, s' % (nbytes / 1e6):34}{dl:12.4f}{gv:12.4f}{dl / gv:8.2f}  <= 1.5 (MPI_Gatherv)")
PY
