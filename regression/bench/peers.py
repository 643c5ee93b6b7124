#!/usr/bin/python3
"""cairn against PyTorch 1.13 on the same model, data, batch, optimizer,
dtype and cores (`make bench`, through peers.sh).

For every N up to the machine's core count, both sides run pinned with
taskset to cores 0..N-1 (cairn's ranks all share them, however many there
are; OPENBLAS and torch get one thread per rank or process, except PyTorch's
threads mode, which gets N), taking turns round after round so both see
the machine's noise.  Each run's figure is its best epoch; the table quotes
the median and range over the rounds.

  1. samples/s on N cores: cairn in several layouts; PyTorch with N threads
     in one process (torch's and OpenBLAS's, as a user gets by default),
     with 1 torch thread and N OpenBLAS threads, and as DDP (gloo) with N
     processes; against the BLAS-bound limit (N x one core's sgemm rate,
     measured in every round, over the model's GEMM FLOPs per sample) and
     against PyTorch's best configuration.
  2. time to a held-out accuracy: cairn's best layout against PyTorch DDP
     (and PyTorch's best configuration) on N cores, one seed per round.
  3. scaling shape on all the cores: step time as the hidden width doubles
     against FLOP-proportional growth (both sides' best configurations),
     and as cairn's replicas double against the cores they can use.
  4. replicas: samples/s of the 2-replica layouts on all the cores against
     the BLAS-bound limit, and the peak resident memory of a PS shard
     (GNU time's maximum RSS of the shard's process) with R = 1, 2, 4
     replicas; each also for an older cairn binary given in BENCH_BEFORE
     (for example one built from the commit before a change), in the same
     rounds.

Arguments: the sections to run (default: all), by name: throughput,
accuracy, scaling, replicas.  Environment: BENCH_ROUNDS (default 3),
BENCH_DIR, BENCH_CORES (default: all), BENCH_TARGET (held-out accuracy,
default 0.91), BENCH_BEFORE.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
from functools import partial

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CAIRN = os.path.join(ROOT, "build", "cairn")
JOB = os.path.join(ROOT, "jobs", "demo.cfg")
TORCH = os.path.join(ROOT, "regression", "bench", "torch_mlp.py")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CORES = int(os.environ.get("BENCH_CORES", str(len(os.sched_getaffinity(0)))))
TARGET = float(os.environ.get("BENCH_TARGET", "0.91"))
DIR = os.environ.get("BENCH_DIR", os.path.join(ROOT, "build", "bench", "peers"))
BEFORE = os.environ.get("BENCH_BEFORE")
STEPS, EPOCHS, BATCH = 24, 3, 512

# cairn's layouts: name, ranks, --set overrides of jobs/demo.cfg
ONE = ["pipeline.stages=1", "pipeline.balance=[4]", "pipeline.chunks=1"]
LAYOUTS = [
    ("1 trainer + 1 shard", 2, ONE + ["ps.shards=1"]),
    ("2 replicas + 1 shard", 3, ONE + ["replicas=2", "pipeline.chunks=2", "ps.shards=1"]),
    ("2 replicas + 2 shards", 4, ONE + ["replicas=2", "pipeline.chunks=2", "ps.shards=2"]),
    ("2 stages + 2 shards (demo)", 4, []),
    ("1 trainer on 2 ranks + 1 shard", 3, ONE + ["pipeline.ranks_per_stage=2", "ps.shards=1"]),
]


def env():
    e = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMPI_MCA_rmaps_base_oversubscribe="1",
             OMPI_MCA_hwloc_base_binding_policy="none")
    if os.getuid() == 0:
        e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return e


def pin(n):
    return ["taskset", "-c", f"0-{n - 1}"]


def sh(cmd, log, extra=None):
    with open(log, "w") as out:
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=dict(env(), **(extra or {})),
                           timeout=1800)
    if r.returncode != 0:
        sys.exit(f"peers: {' '.join(cmd)} exited {r.returncode} (see {log})")


def flops(widths):
    """GEMM FLOPs per sample: forward, weight gradient and (past the first
    layer) input gradient of each dense layer."""
    return sum(2 * a * b * (2 if i == 0 else 3) for i, (a, b) in enumerate(zip(widths, widths[1:])))


def sgemm():
    out = subprocess.run(pin(1) + [CAIRN, "bench", "sgemm", "1024"], capture_output=True, text=True,
                         env=env(), check=True).stdout
    return float(out.split()[2])


def model_sets(widths):
    hidden = ", ".join(f'{{ units = {w}; activation = "relu"; }}' for w in widths[1:-1])
    return [f"model.inputs={widths[0]}",
            f'model.layers=({hidden}, {{ units = {widths[-1]}; activation = "identity"; }})']


run_no = [0]


def cairn(ranks, sets, n, steps=STEPS, epochs=EPOCHS, widths=None, stop=None, seed=7, binary=CAIRN,
          peak=False):
    """Epoch records of one cairn run pinned to n cores, with accuracy;
    with peak, each rank's maximum RSS goes to RUN_DIR.rss.RANK (KiB)."""
    run_no[0] += 1
    rd = f"c{run_no[0]}"
    args = ["--set", "checkpoint.every=0", "--set", f"steps_per_epoch={steps}",
            "--set", f"stop.max_epochs={epochs}",
            "--set", f"stop.accuracy={stop}" if stop else "stop.accuracy=1.0", "--set", f"seed={seed}"]
    for s in sets + (model_sets(widths) if widths else []):
        args += ["--set", s]
    cmd = [binary, "run", JOB, "--run-dir", rd] + args
    if peak: # time forks the rank, so the figure is the rank's own process
        cmd = ["sh", "-c", f'exec /usr/bin/time -f %M -o {rd}.rss.$OMPI_COMM_WORLD_RANK "$@"', "sh"] + cmd
    sh(pin(n) + ["mpirun", "-np", str(ranks)] + cmd, rd + ".log")
    rows = [json.loads(l) for l in open(os.path.join(rd, "metrics.jsonl"))]
    acc = {r["epoch"]: r["accuracy"] for r in rows if r["kind"] == "log" and "accuracy" in r}
    return [dict(r, accuracy=acc.get(r["epoch"], 0.0)) for r in rows if r["kind"] == "epoch"]


def torch(mode, n, steps=STEPS, epochs=EPOCHS, widths=None, stop=None, seed=7, threads=None, blas=1):
    """PyTorch pinned to n cores: mode "threads" (threads intra-op threads,
    default n) or "ddp" (n processes); blas: OpenBLAS threads per process
    (Debian's torch runs its matrix products in OpenBLAS, which takes its
    thread count from the environment, not from torch.set_num_threads)."""
    run_no[0] += 1
    log = f"t{run_no[0]}.log"
    cmd = pin(n) + ["/usr/bin/python3", TORCH, mode, str(threads or n), "--steps", str(steps),
                    "--epochs", str(epochs), "--seed", str(seed), "--port", str(29500 + run_no[0] % 400)]
    if widths:
        cmd += ["--widths", ",".join(map(str, widths))]
    if stop:
        cmd += ["--accuracy", str(stop)]
    sh(cmd, log, {"OPENBLAS_NUM_THREADS": str(blas), "OMP_NUM_THREADS": str(threads or n)})
    return [json.loads(l) for l in open(log) if l.startswith("{")]


def rate(epochs):
    return max(e["samples"] / e["train_seconds"] for e in epochs)


def step_time(epochs, steps):
    return min(e["train_seconds"] for e in epochs) / steps


def to_target(epochs):
    """Seconds (whole epochs, evaluation included) and epochs to TARGET."""
    t = 0.0
    for i, e in enumerate(epochs, 1):
        t += e["seconds"]
        if e["accuracy"] >= TARGET:
            return t, i
    return None, len(epochs)


def spread(vals, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(vals))} ({fmt.format(min(vals))}-{fmt.format(max(vals))})"


def machine():
    model = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    flags = open("/proc/cpuinfo").read()
    simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    mem = int(open("/proc/meminfo").readline().split()[1]) / 2**20
    ver = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True).stdout.strip()
    return f"{model} ({simd}), {len(os.sched_getaffinity(0))} cores, {mem:.0f} GiB; PyTorch {ver}"


def configs(n):
    """Every configuration tried on n cores: name -> run(steps, epochs, widths=, stop=)."""
    cs = {f"cairn: {name}": partial(cairn, r, s, n) for name, r, s in LAYOUTS}
    cs[f"PyTorch: {n} thread{'s' if n > 1 else ''}"] = partial(torch, "threads", n, blas=n)
    if n > 1:
        cs[f"PyTorch: 1 thread, {n} OpenBLAS threads"] = partial(torch, "threads", n, threads=1, blas=n)
    cs[f"PyTorch: DDP, {n} process{'es' if n > 1 else ''}"] = partial(torch, "ddp", n)
    return cs


def rounds(runs, n_rounds, measure):
    """{name: [measure(run()) per round]}, the runs in turn, every other
    round in reverse order."""
    res = {}
    for rnd in range(n_rounds):
        for name, fn in (reversed(runs) if rnd % 2 else runs):
            res.setdefault(name, []).append(measure(fn()))
    return res


def throughput(n, demo):
    """Section 1 on n cores; returns the best cairn and PyTorch names."""
    cs, rates = configs(n), []
    runs = [("sgemm", lambda: rates.append(sgemm()))]
    runs += [(name, partial(fn, STEPS, EPOCHS)) for name, fn in cs.items()]
    res = rounds(runs, ROUNDS, lambda e: e and rate(e))
    del res["sgemm"]
    limit = n * statistics.median(rates) * 1e9 / demo
    print(f"\n1. samples/s on {n} core{'s' if n > 1 else ''} (median of {ROUNDS} rounds, range):"
          f" sgemm {spread(rates, '{:.1f}')} GFLOP/s per core, BLAS-bound limit {limit:.0f}")
    best = {side: max((k for k in res if k.startswith(side)), key=lambda k: statistics.median(res[k]))
            for side in ("cairn", "PyTorch")}
    peer = statistics.median(res[best["PyTorch"]])
    print(f"   {'configuration':44}{'samples/s':>22}{'/ limit':>9}{'/ PyTorch best':>16}")
    for name, v in res.items():
        m = statistics.median(v)
        print(f"   {name:44}{spread(v):>22}{m / limit:9.2f}{m / peer:16.2f}")
    return best


def accuracy(n, best):
    """Section 2: each round another seed (initial weights and data order)
    for both sides; an epoch is a third of a pass, so the target is seen
    at a finer grain than passes."""
    cs, steps = configs(n), (32768 - int(0.2 * 32768)) // BATCH // 3
    names = [best["cairn"], next(k for k in cs if "DDP" in k)]
    if best["PyTorch"] not in names:
        names.append(best["PyTorch"])
    res = {}
    for seed in range(1, ROUNDS + 1):
        runs = [(k, partial(cs[k], steps, 30, stop=TARGET, seed=seed)) for k in names]
        for k, v in rounds(runs[::-1] if seed % 2 else runs, 1, to_target).items():
            res.setdefault(k, []).extend(v)
    print(f"\n2. time to held-out accuracy {TARGET} on {n} core{'s' if n > 1 else ''}, seeds 1-{ROUNDS}"
          f" (epochs of {steps} steps; seconds of the epochs, evaluation included):")
    for name, v in res.items():
        secs = [s for s, _ in v if s is not None]
        eps = ", ".join(str(e) for _, e in v)
        shown = spread(secs, "{:.2f}") + " s" if len(secs) == len(v) else f"missed in {len(v) - len(secs)} runs"
        print(f"   {name:44}{shown:>24}   epochs: {eps}")


def scaling(n, best):
    cs, base = configs(n), [32, 1024, 1024, 1024, 8]
    print(f"\n3. scaling on {n} cores: step time of a mini-batch of {BATCH} (best epoch of {EPOCHS}),"
          f" and its growth against the FLOPs' (x)\n   {best['cairn']}; {best['PyTorch']}")
    print(f"   {'hidden width':14}{'FLOPs x':>9}{'cairn s':>10}{'x':>7}{'PyTorch s':>11}{'x':>7}{'cairn speed-up':>16}")
    t0 = None
    for mult, steps in ((1, 24), (2, 12), (4, 6)):
        w = [base[0]] + [h * mult for h in base[1:-1]] + [base[-1]]
        c = step_time(cs[best["cairn"]](steps, EPOCHS, widths=w), steps)
        p = step_time(cs[best["PyTorch"]](steps, EPOCHS, widths=w), steps)
        t0 = t0 or (c, p, flops(w))
        print(f"   {w[1]:<14}{flops(w) / t0[2]:9.2f}{c:10.4f}{c / t0[0]:7.2f}{p:11.4f}{p / t0[1]:7.2f}"
              f"{p / c:16.2f}")
    print(f"   {'replicas + 1 shard':20}{'ideal speed-up':>15}{'step s':>10}{'speed-up':>10}")
    t1 = None
    for r in (1, 2, 4):
        t = step_time(cairn(r + 1, ONE + [f"replicas={r}", f"pipeline.chunks={r}", "ps.shards=1"], n), STEPS)
        t1 = t1 or t
        print(f"   {r:<20}{min(r, n):15.2f}{t:10.4f}{t1 / t:10.2f}")


def replicas(n):
    """Section 4: the 2-replica layouts' samples/s, and a shard's peak
    memory as the replicas double (1 shard, so its rank is the last)."""
    sides = [("cairn", CAIRN)] + ([("before", BEFORE)] if BEFORE else [])
    two = [(name, r, s) for name, r, s in LAYOUTS if "2 replicas" in name]
    rates, runs = [], [("sgemm", lambda: rates.append(sgemm()))]
    runs += [(f"{side}: {name}", partial(cairn, r, s, n, binary=b)) for side, b in sides for name, r, s in two]
    res = rounds(runs, ROUNDS, lambda e: e and rate(e))
    del res["sgemm"]
    limit = n * statistics.median(rates) * 1e9 / flops([32, 1024, 1024, 1024, 8])
    print(f"\n4. replicas on {n} cores (median of {ROUNDS} rounds, range): BLAS-bound limit {limit:.0f};"
          f" before: {BEFORE or 'not given (BENCH_BEFORE)'}")
    print(f"   {'configuration':44}{'samples/s':>22}{'/ limit':>9}")
    for name, v in res.items():
        print(f"   {name:44}{spread(v):>22}{statistics.median(v) / limit:9.2f}")
    print(f"   peak RSS of the shard, MiB (min of {ROUNDS} runs), 1 shard; shard_bytes: its tensors")
    print(f"   {'replicas':10}" + "".join(f"{side:>12}" for side, _ in sides) + f"{'shard_bytes':>14}")
    for r in (1, 2, 4):
        row, sb = [], ""
        for side, b in sides:
            peaks = []
            for _ in range(ROUNDS):
                cairn(r + 1, ONE + [f"replicas={r}", f"pipeline.chunks={r}", "ps.shards=1"], n, binary=b, peak=True)
                rd = f"c{run_no[0]}"
                peaks.append(int(open(f"{rd}.rss.{r}").read().split()[-1]) / 1024)
                if side == "cairn":
                    rows = [json.loads(l) for l in open(os.path.join(rd, "metrics.jsonl"))]
                    sb = f"{max(x['shard_bytes'] for x in rows if x['kind'] == 'epoch') / 2**20:.1f} MiB"
            row.append(min(peaks))
        print(f"   {r:<10}" + "".join(f"{v:12.1f}" for v in row) + f"{sb:>14}")


def main():
    shutil.rmtree(DIR, ignore_errors=True) # a run dir left from before would resume, not run
    os.makedirs(DIR)
    os.chdir(DIR)
    sh(["bash", os.path.join(ROOT, "jobs", "demo_data.sh"), "demo.h5", "2"], "data.log")
    demo = flops([32, 1024, 1024, 1024, 8])
    sections = sys.argv[1:] or ["throughput", "accuracy", "scaling", "replicas"]
    unknown = set(sections) - {"throughput", "accuracy", "scaling", "replicas"}
    if unknown:
        sys.exit(f"peers: no section {', '.join(sorted(unknown))}")
    print(f"machine: {machine()}")
    print(f"model: 32-1024-1024-1024-8, {demo / 1e6:.2f} MFLOP per sample; batch {BATCH}, Adam,"
          f" f32; {STEPS} steps x {EPOCHS} epochs per run")
    if {"throughput", "accuracy", "scaling"} & set(sections):
        best = {n: throughput(n, demo) for n in range(1, CORES + 1)}
        if "accuracy" in sections:
            for n in range(1, CORES + 1):
                accuracy(n, best[n])
        if "scaling" in sections:
            scaling(CORES, best[CORES])
    if "replicas" in sections:
        replicas(CORES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
