#!/usr/bin/env bash
# The language model (jobs/demo_lm.cfg's: 4 blocks of width 128, 4 heads,
# context 64, f32, Adam, 32 windows a step) against the references a user
# would weigh it by, measured in the same run:
#  1. training tokens/s of cairn (1 stage; 2 replicas, as DDP splits the
#     batch; 1 stage on 2 ranks, tensor-parallel; 2 stages; each with a PS shard per trainer or one, and no
#     recomputation, as PyTorch; and the demo's layout as it runs, with
#     recomputation) against PyTorch 1.13 on the same cores, model, data and batch
#     (one process with 1 and 2 threads, and DDP on 2 processes), and
#     against the cores' limit: the model's matmul FLOPs per token over
#     this machine's sgemm rate (cairn bench sgemm) times the cores;
#  2. the 2-stage pipeline's efficiency, T1 / (2 T2) from the time in the
#     schedule, against GPipe's ideal for 4 micro-batches, 4 / (4 + 1);
#  3. a stage's peak memory (RSS) in each recomputation mode, beside the
#     activations model.rank_memory_mb counts for it;
#  4. generation: tokens/s with the cache of keys and values against
#     without (the whole window through the model for each token).
# Each cairn figure is the best epoch of three; checkpoints are off.
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
cairn=$root/build/cairn
dir=${BENCH_DIR:-$root/build/bench/lm}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
job=$root/jobs/demo_lm.cfg
quick=(--set checkpoint.every=0 --set steps_per_epoch=30 --set stop.max_epochs=3 --set data.holdout=0
    --set data.file='"text.h5"')
corpus=/usr/share/games/fortunes
if [ -d "$corpus" ]; then
    "$cairn" data text --out text.h5 --context 64 $(find "$corpus" -maxdepth 1 -type f ! -name '*.*' | sort) >/dev/null
else
    "$cairn" data text --out text.h5 --context 64 "$root"/doc/* "$root"/README.md >/dev/null
fi
gflops=$("$cairn" bench sgemm 1024 | awk '{print $3}')

# 1, 2: cairn on 1 stage, 2 replicas and 2 stages without recomputation,
# and on the demo's layout as it is
never=(--set pipeline.checkpoint='"never"')
mpirun -np 2 "$cairn" run "$job" --run-dir s1 "${quick[@]}" "${never[@]}" --set pipeline.stages=1 --set ps.shards=1 >s1.log
mpirun -np 3 "$cairn" run "$job" --run-dir r2 "${quick[@]}" "${never[@]}" --set pipeline.stages=1 --set replicas=2 \
    --set ps.shards=1 >r2.log
mpirun -np 3 "$cairn" run "$job" --run-dir tp2 "${quick[@]}" "${never[@]}" --set pipeline.stages=1 \
    --set pipeline.ranks_per_stage=2 --set ps.shards=1 >tp2.log
mpirun -np 4 "$cairn" run "$job" --run-dir s2 "${quick[@]}" "${never[@]}" >s2.log
mpirun -np 4 "$cairn" run "$job" --run-dir demo "${quick[@]}" >demo.log
# 3: the demo's layout in each recomputation mode, peak RSS of the ranks
for mode in always except_last never; do
    mpirun -np 4 "$cairn" run "$job" --run-dir m-$mode "${quick[@]}" --set stop.max_epochs=1 \
        --set pipeline.checkpoint="\"$mode\"" >m-$mode.log
    "$cairn" print "$job" --set pipeline.checkpoint="\"$mode\"" | grep "memory:" >m-$mode.print
done
# PyTorch, the same model and batch
for n in 1 2; do /usr/bin/python3 "$root/regression/bench/torch_lm.py" threads $n --steps 60 >t$n.json; done
/usr/bin/python3 "$root/regression/bench/torch_lm.py" ddp 2 --steps 60 >ddp2.json
# 4: generation, with and without the cache (256 tokens: the window slides)
"$cairn" generate s2/model.h5 --prompt "The " --tokens 256 --json | tail -n 1 >gen-cache.json
"$cairn" generate s2/model.h5 --prompt "The " --tokens 256 --no-cache --json | tail -n 1 >gen-full.json

/usr/bin/python3 - "$gflops" "$(nproc)" <<'PY'
import json, sys
gflops, cores = float(sys.argv[1]), int(sys.argv[2])
d, mlp, ctx, V, B = 128, 512, 64, 256, 4
fwd = B * (2 * (4 * d * d + 2 * d * mlp) + 4 * ctx * d) + 2 * d * V  # matmul FLOPs a token, forward
train = 3 * fwd  # and the two halves of the backward
limit = gflops * 1e9 * cores / train
def rows(path, kind):
    return [r for r in map(json.loads, open(path)) if r["kind"] == kind]
def cairn(run):
    ep = rows(f"{run}/metrics.jsonl", "epoch")
    return max(r["samples"] * ctx / r["train_seconds"] for r in ep), min(r["pipe_seconds"] for r in ep)
s1, p1 = cairn("s1")
s2, p2 = cairn("s2")
r2, _ = cairn("r2")
tp2, _ = cairn("tp2")
demo, _ = cairn("demo")
peers = {name: json.load(open(f"{name}.json"))["tokens_per_second"] for name in ("t1", "t2", "ddp2")}
best = max(peers.values())
print(f"machine: {cores} cores, sgemm {gflops:.1f} GFLOP/s a core; {train / 1e6:.2f} MFLOP of matmuls a token to train")
print(f"{'training, tokens/s':44}{'cairn':>10}{'ratio to':>10}{'limit':>8}")
print(f"{'  the cores limit (sgemm rate x cores)':44}{limit:10.0f}")
print(f"{'  PyTorch 1.13, 1 thread':44}{peers['t1']:10.0f}{'':10}{peers['t1'] / limit:8.2f}")
print(f"{'  PyTorch 1.13, 2 threads':44}{peers['t2']:10.0f}{'':10}{peers['t2'] / limit:8.2f}")
print(f"{'  PyTorch 1.13, DDP 2 processes':44}{peers['ddp2']:10.0f}{'':10}{peers['ddp2'] / limit:8.2f}")
for name, v in (("1 stage + 1 shard", s1), ("2 replicas + 1 shard", r2), ("1 stage on 2 ranks (T = 2)", tp2),
                ("2 stages + 2 shards", s2),
                ("the demo (2 + 2, except_last)", demo)):
    print(f"{'  cairn, ' + name:44}{v:10.0f}{v / best:9.2f}x{v / limit:8.2f}")
eff, ideal = p1 / (2 * p2), 4 / (4 + 2 - 1)
print(f"pipeline efficiency, S=2, m=4: {eff:.3f} against GPipe's {ideal:.3f} ({eff / ideal:.2f} of it)")
for mode in ("always", "except_last", "never"):
    done = rows(f"m-{mode}/metrics.jsonl", "done")[0]
    print(f"peak memory, {mode:12} {done['peak_mib']:7.1f} MiB (rank {done['peak_rank']}); counted:"
          f" {open(f'm-{mode}.print').read().strip()}")
c, f = (json.loads(open(p).read()) for p in ("gen-cache.json", "gen-full.json"))
print(f"generation, tokens/s: {c['tokens_per_second']:.0f} with the cache, {f['tokens_per_second']:.0f} without"
      f" ({c['tokens_per_second'] / f['tokens_per_second']:.1f}x)")
PY
