#!/usr/bin/env bash
# Training benchmarks on jobs/demo.cfg's model and wider ones, each against
# a reference measured in the same run (peers.sh sets samples/s against the
# BLAS-bound limit and PyTorch):
#  1. pipeline efficiency of 2 balanced stages with 4 micro-batches,
#     T1 / (2 T2) from the time spent in the pipeline schedule, against
#     the GPipe ideal m / (m + S - 1) = 0.8 (target >= 0.9 of it);
#  2. the download (one MPI_Gatherv per parameter from 2 PS shards to
#     trainer 0) against one MPI_Gatherv of the same bytes, for the demo
#     and for a model 10x its size (hidden width 3264; target <= 1.2x);
#  3. multi-rank stages: the step time of one stage on T = 1, 2, 4 ranks
#     (plus 1 shard, all on this machine's cores) for hidden widths 1024,
#     2048 and 4096, against the FLOP-proportional ideal T1 / min(T, cores).
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

best() { /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, kind, expr = sys.argv[1:4]
rows = [json.loads(l) for l in open(path)]
vals = [eval(expr, {}, r) for r in rows if r["kind"] == kind]
print(max(vals) if expr.startswith("-") is False else min(vals))
PY
}

# 1. pipeline: the same 4 micro-batches on 1 stage and on 2 balanced stages
mpirun -np 2 "$cairn" run "$job" --run-dir p1 "${quick[@]}" --set pipeline.stages=1 \
    --set 'pipeline.balance=[4]' --set ps.shards=1 >p1.log
mpirun -np 3 "$cairn" run "$job" --run-dir p2 "${quick[@]}" --set ps.shards=1 >p2.log
t1=$(best p1/metrics.jsonl epoch '-pipe_seconds')
t2=$(best p2/metrics.jsonl epoch '-pipe_seconds')

# shellcheck disable=SC2046 # wide's words are split on purpose
# 2. the download, three times each, beside MPI_Gatherv of the same bytes
wide() { # --set options for hidden width $1 (3 hidden layers, as the demo; no spaces)
    local l="{units=$1;activation=\"relu\";}"
    echo "--set model.layers=($l,$l,$l,{units=8;activation=\"identity\";})"
}
for w in 1024 3264; do
    for i in 1 2 3; do
        mpirun -np 4 "$cairn" run "$job" --run-dir dl$w-$i --set checkpoint.every=0 \
            --set steps_per_epoch=1 --set stop.max_epochs=1 --set debug.compare_gatherv=true \
            $(wide $w) >dl$w-$i.log
    done
done

# 3. one stage on T ranks, widths 1024-4096 (fewer steps for wider ones)
for w in 1024 2048 4096; do
    for T in 1 2 4; do
        mpirun -np $((T + 1)) "$cairn" run "$job" --run-dir g$w-$T --set checkpoint.every=0 \
            --set steps_per_epoch=$((24 * 1024 / w)) --set stop.max_epochs=3 \
            --set pipeline.stages=1 --set 'pipeline.balance=[4]' --set pipeline.chunks=1 \
            --set ps.shards=1 --set pipeline.ranks_per_stage=$T $(wide $w) >g$w-$T.log
    done
done

/usr/bin/python3 - "$t1" "$t2" "$(nproc)" <<'PY'
import glob, json, sys
t1, t2, cores = abs(float(sys.argv[1])), abs(float(sys.argv[2])), int(sys.argv[3])
def rows(pattern, kind):
    return [r for f in sorted(glob.glob(pattern)) for r in map(json.loads, open(f)) if r["kind"] == kind]
eff, ideal = t1 / (2 * t2), 4 / (4 + 2 - 1)
print(f"{'measure':38}{'cairn':>12}{'reference':>12}{'ratio':>8}  target")
print(f"{'pipeline efficiency, S=2, m=4':38}{eff:12.3f}{ideal:12.3f}{eff / ideal:8.2f}  >= 0.9 (GPipe ideal)")
for w in (1024, 3264):
    dl = rows(f"dl{w}-*/metrics.jsonl", "download")
    s, g = min(r["seconds"] for r in dl), min(r["gatherv_seconds"] for r in dl)
    name = f"download of {dl[0]['bytes'] / 1e6:.1f} MB, s"
    print(f"{name:38}{s:12.4f}{g:12.4f}{s / g:8.2f}  <= 1.2 (MPI_Gatherv)")
print(f"\none stage on T ranks + 1 shard on {cores} cores: step time (s), best of 3 epochs")
print(f"{'hidden width':14}{'T':>3}{'step s':>10}{'ideal s':>10}{'/ ideal':>9}")
for w in (1024, 2048, 4096):
    steps = 24 * 1024 // w
    base = None
    for T in (1, 2, 4):
        t = min(r["train_seconds"] for r in rows(f"g{w}-{T}/metrics.jsonl", "epoch")) / steps
        base = base or t
        ideal = base / min(T, cores)
        print(f"{w:<14}{T:>3}{t:10.4f}{ideal:10.4f}{t / ideal:9.2f}")
PY
