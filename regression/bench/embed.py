#!/usr/bin/python3
"""Embedding tables on the PS shards (`make bench`, through embed.sh).

  1. sparse: the step time of a job with a 1,000,000 x 16 table (Adam)
     whose batches touch 0.1%, 1%, 10% and 100% of its rows (ids that are
     a permutation, so a batch of B samples touches exactly B rows; a
     2-unit layer, so the table is the step's work), 1 trainer and 1
     shard, against a dense push and pull of the same table in the same
     run (densetable.c: the whole table to the trainer and a whole
     gradient back, and Adam over every row; the trainer's compute left
     out, so the least a dense step costs), added to the same step without
     the table (its data read and layer).  Each run's figure is its best
     of 7, since this VM's noise only ever adds time: for cairn the best
     of 7 epochs' mean step (epochs of 8 steps, 1 at 100%), for the dense
     push and pull the best of 7 single steps (which favours dense).
     BENCH_BEFORE=<an older cairn> adds its 1% step, in the same rounds.
     Target: at 1%, dense over sparse >= 20.
  2. ctr: samples/s of jobs/ctr.cfg's model on the demo's data on all the
     cores, cairn in several layouts against PyTorch 1.13 as a user would
     tune it (torch_ctr.py: nn.EmbeddingBag(sparse=True) fed 1-d ids with
     offsets, no padding row, SparseAdam; one process with N threads,
     with 1, and with 1 and N OpenBLAS threads, and DDP with N processes),
     both sides whole epochs (205 steps of 1024), taking turns round after
     round; the median and range over the rounds of each run's best epoch,
     each round's ratio of the two bests, the load average before and
     after.  BENCH_CTR=<regex> keeps only the configurations whose names
     match (fewer runs, more rounds, on a busy machine).
     Target: cairn's best >= 1.2x PyTorch's best.
  3. memory: the peak resident memory of a PS shard (GNU time's maximum
     RSS) holding half of a 10,000,000 x 16 table with Adam's moments,
     against the bytes it holds (the run's shard_bytes), with checkpoints
     off and every epoch, and against the same job with a 1,000-row table
     (MPI's and HDF5's own memory).  Target: at most 1.2x plus a few MB.

Shard balance under Zipf 1.1 is `cairn data balance` (README).  The
checkpoint of the table is ckpt_table.sh.  Arguments: the sections
(default all).  Environment: BENCH_ROUNDS (default 3), BENCH_DIR.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (its helpers: env, pin, sh, spread, machine, rounds)

ROOT = peers.ROOT
CAIRN = peers.CAIRN
DIR = os.environ.get("BENCH_DIR", os.path.join(ROOT, "build", "bench", "embed"))
ROUNDS = peers.ROUNDS
CORES = peers.CORES
TORCH = os.path.join(ROOT, "regression", "bench", "torch_ctr.py")

run_no = [0]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def epochs_of(rd):
    return [json.loads(l) for l in open(os.path.join(rd, "metrics.jsonl")) if '"kind":"epoch"' in l]


def cairn(ranks, job, sets, peak=False, binary=CAIRN):
    run_no[0] += 1
    rd = f"c{run_no[0]}"
    cmd = [binary, "run", job, "--run-dir", rd]
    for s in sets:
        cmd += ["--set", s]
    if peak:
        cmd = ["sh", "-c", f'exec /usr/bin/time -f %M -o {rd}.rss.$OMPI_COMM_WORLD_RANK "$@"', "sh"] + cmd
    peers.sh(peers.pin(CORES) + ["mpirun", "-np", str(ranks)] + cmd, rd + ".log")
    return rd


# ---- 1. sparse against dense ------------------------------------------------------------

SPARSE_ROWS = 1000000


def sparse():
    subprocess.run(["/usr/bin/python3", "-c", f"""
import h5py, numpy as np
r = np.random.default_rng(3); n = {SPARSE_ROWS}
with h5py.File("perm.h5", "w") as f:
    f["features"] = r.standard_normal((n, 1)).astype(np.float32)
    f["labels"] = r.integers(0, 2, n).astype(np.int32)
    f["ids"] = r.permutation(n)"""], check=True)
    write("sparse.cfg", f"""name = "sparse";
model = {{ inputs = 1; embeddings = ( {{ name = "t"; rows = {SPARSE_ROWS}; dim = 16; ids = "ids"; }} );
          layers = ( {{ units = 2; }} ); }};
data = {{ file = "perm.h5"; shuffle = false; }};
pipeline = {{ chunks = 1; }};
ps = {{ shards = 1; optimizer = "adam"; lr = 0.003; }};
checkpoint = {{ every = 0; }};
stop = {{ max_epochs = 3; }};
""")
    blas = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
    libs = subprocess.run(["pkg-config", "--libs", "hdf5-openmpi", "libconfig", "openblas"], capture_output=True,
                          text=True, check=True).stdout.split()
    peers.sh(["mpicc", "-std=c17", "-O2", "-D_GNU_SOURCE", "-I" + os.path.join(ROOT, "include"), "-o", "densetable",
              os.path.join(ROOT, "regression", "bench", "densetable.c"), os.path.join(ROOT, "build", "libcairn.a")]
             + libs + ["-L" + blas, "-lm", "-lpthread"], "densetable-build.log")
    write("base.cfg", open("sparse.cfg").read().replace(
        f'embeddings = ( {{ name = "t"; rows = {SPARSE_ROWS}; dim = 16; ids = "ids"; }} );', ""))
    fractions = [0.001, 0.01, 0.1, 1.0]
    runs = [(f, (lambda f=f: step(f, "sparse.cfg"))) for f in fractions]
    runs += [(("base", f), (lambda f=f: step(f, "base.cfg"))) for f in fractions] + [("dense", dense)]
    if peers.BEFORE:
        runs += [("before", lambda: step(0.01, "sparse.cfg", binary=peers.BEFORE))]
    res = peers.rounds(runs, ROUNDS, lambda v: v)
    med = {k: sorted(v)[len(v) // 2] for k, v in res.items()}
    d = med["dense"]
    print(f"\n1. a {SPARSE_ROWS:,} x 16 f32 table (Adam), 1 trainer + 1 shard on {CORES} cores: step time "
          f"(median of {ROUNDS} rounds, each the best of {SPARSE_EPOCHS - 1} epochs' mean step)")
    print(f"   dense push and pull of the whole table + Adam on every row: {d * 1e3:.1f} ms "
          f"(range {min(res['dense']) * 1e3:.1f}-{max(res['dense']) * 1e3:.1f})")
    print("   a dense step is the same step without the table (the data read and the layer) plus that;")
    print(f"   {'rows touched':>16}{'no table ms':>13}{'sparse step ms':>26}{'dense step ms':>15}{'dense / sparse':>16}")
    for f in fractions:
        s, b = med[f], med[("base", f)]
        print(f"   {f * 100:>6g}% {int(f * SPARSE_ROWS):>8}{b * 1e3:>13.2f}"
              f"{peers.spread([x * 1e3 for x in res[f]], '{:.2f}'):>26}"
              f"{(b + d) * 1e3:>15.1f}{(b + d) / s:>16.1f}")
    if peers.BEFORE:
        s, b = med["before"], med[("base", 0.01)]
        print(f"   {'1% before':>16}{'':>13}{peers.spread([x * 1e3 for x in res['before']], '{:.2f}'):>26}"
              f"{(b + d) * 1e3:>15.1f}{(b + d) / s:>16.1f}   ({peers.BEFORE})")


SPARSE_EPOCHS = 8  # the first warms up; each figure is the best of the other 7


def step(fraction, cfg, binary=CAIRN):
    batch = int(fraction * SPARSE_ROWS)
    steps = max(1, min(8, SPARSE_ROWS // batch))
    rd = cairn(2, cfg, [f"data.batch={batch}", f"steps_per_epoch={steps}", f"stop.max_epochs={SPARSE_EPOCHS}"],
               binary=binary)
    return min(e["train_seconds"] for e in epochs_of(rd)[1:]) / steps


def dense():
    out = subprocess.run(peers.pin(CORES) + ["mpirun", "-np", "2", "./densetable", str(SPARSE_ROWS), "16",
                                             str(SPARSE_EPOCHS - 1)],
                         capture_output=True, text=True, env=peers.env(), check=True).stdout
    return float(out.split()[3])


# ---- 2. the ctr model against PyTorch -----------------------------------------------------

CTR = os.path.join(ROOT, "jobs", "ctr.cfg")
CTR_EPOCHS = 3  # whole epochs on both sides; the first warms up
ONE = ["pipeline.stages=1", "pipeline.balance=[3]"]
CTR_LAYOUTS = [
    ("cairn: 2 stages + 2 shards (ctr.cfg)", 4, []),
    ("cairn: 1 trainer + 1 shard", 2, ONE + ["ps.shards=1"]),
    ("cairn: 1 trainer + 2 shards", 3, ONE),
    ("cairn: 2 replicas + 1 shard", 3, ONE + ["replicas=2", "ps.shards=1"]),
    ("cairn: 2 replicas + 1 shard, 2 chunks", 3, ONE + ["replicas=2", "ps.shards=1", "pipeline.chunks=2"]),
]


def ctr_cairn(ranks, sets):
    """(samples/s of the best epoch, the last epoch's held-out loss and accuracy)"""
    rd = cairn(ranks, CTR, sets + ["checkpoint.every=0", f"stop.max_epochs={CTR_EPOCHS}"])
    logs = [json.loads(l) for l in open(os.path.join(rd, "metrics.jsonl")) if '"kind":"log"' in l]
    return max(e["samples"] / e["train_seconds"] for e in epochs_of(rd)), logs[-1]["loss"], logs[-1]["accuracy"]


def ctr_torch(mode, n, threads_blas):
    run_no[0] += 1
    log = f"t{run_no[0]}.log"
    peers.sh(peers.pin(CORES) + ["/usr/bin/python3", TORCH, "ctr.h5", mode, str(n), "--epochs", str(CTR_EPOCHS),
                                 "--port", str(29500 + run_no[0] % 400)], log,
             {"OPENBLAS_NUM_THREADS": str(threads_blas), "OMP_NUM_THREADS": str(n)})
    eps = [json.loads(l) for l in open(log) if l.startswith("{")]
    return max(e["samples"] / e["train_seconds"] for e in eps), eps[-1]["loss"], eps[-1]["accuracy"]


def ctr():
    peers.sh(["bash", os.path.join(ROOT, "jobs", "ctr_data.sh"), "ctr.h5", "2"], "ctr-data.log",
             {"CAIRN": CAIRN})
    runs = [(name, (lambda r=r, s=s: ctr_cairn(r, s))) for name, r, s in CTR_LAYOUTS]
    n = CORES
    runs.append((f"PyTorch: 1 process, {n} threads", lambda: ctr_torch("threads", n, n)))
    if n > 1:
        runs.append(("PyTorch: 1 process, 1 thread", lambda: ctr_torch("threads", 1, 1)))
        runs.append((f"PyTorch: 1 thread, {n} OpenBLAS threads", lambda: ctr_torch("threads", 1, n)))
        runs.append((f"PyTorch: DDP, {n} processes", lambda: ctr_torch("ddp", n, 1)))
    runs = [r for r in runs if re.search(os.environ.get("BENCH_CTR", ""), r[0])]
    load0 = os.getloadavg()
    out = peers.rounds(runs, ROUNDS, lambda v: v)
    load1 = os.getloadavg()
    res = {k: [v[0] for v in vs] for k, vs in out.items()}
    med = {k: sorted(v)[len(v) // 2] for k, v in res.items()}
    best_c = max((k for k in med if k.startswith("cairn")), key=med.get)
    best_t = max((k for k in med if k.startswith("PyTorch")), key=med.get)
    print(f"\n2. the ctr model (1,000,000 x 16 and 100,000 x 16 tables, 13 dense features, 45-128-64-2, "
          f"batch 1024, Adam; {CTR_EPOCHS} whole epochs) on {n} cores: samples/s of each run's best epoch, "
          f"median (range) of {ROUNDS} rounds; load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"   {'':<40}{'samples/s':>24}{'':>26}{'held-out loss, accuracy (last round)':>40}")
    for k in med:
        print(f"   {k:<40}{peers.spread(res[k]):>24}{med[k] / med[best_t]:>8.2f}x PyTorch's best"
              f"{out[k][-1][1]:>24.4f}, {out[k][-1][2]:.4f}")
    pairs = [c / t for c, t in zip(res[best_c], res[best_t])]
    print(f"   cairn's best ({best_c}) / PyTorch's best ({best_t}): {med[best_c] / med[best_t]:.2f}; "
          f"round by round {peers.spread(pairs, '{:.2f}')}")


# ---- 3. a shard's memory against what it holds --------------------------------------------

def memory():
    big = 10000000
    subprocess.run(["/usr/bin/python3", "-c", f"""
import h5py, numpy as np
r = np.random.default_rng(4); n = 65536
with h5py.File("mem.h5", "w") as f:
    f["features"] = r.standard_normal((n, 1)).astype(np.float32)
    f["labels"] = r.integers(0, 2, n).astype(np.int32)
    f["ids"] = r.integers(0, 1000, n)"""], check=True)
    job = """name = "memory";
model = { inputs = 1; embeddings = ( { name = "t"; rows = ROWS; dim = 16; ids = "ids"; } );
          layers = ( { units = 2; } ); };
data = { file = "mem.h5"; batch = 1024; };
pipeline = { chunks = 1; };
ps = { shards = 2; optimizer = "adam"; };
steps_per_epoch = 8;
stop = { max_epochs = 2; };
"""
    write("mem-big.cfg", job.replace("ROWS", str(big)))
    write("mem-small.cfg", job.replace("ROWS", "1000"))
    print(f"\n3. peak resident memory of a PS shard (1 trainer + 2 shards; GNU time's maximum RSS; MiB)")
    print(f"   {'table':<22}{'checkpoints':<14}{'holds':>8}{'RSS':>8}{'RSS - base':>12}{'ratio':>8}")
    base = None
    for rows, cfg in ((1000, "mem-small.cfg"), (big, "mem-big.cfg")):
        for ck in ("off", "every epoch"):
            rd = cairn(3, cfg, ["checkpoint.every=0"] if ck == "off" else [], peak=True)
            holds = max(e["shard_bytes"] for e in epochs_of(rd)) / 2**20
            rss = max(int(open(f"{rd}.rss.{r}").read().split()[-1]) for r in (1, 2)) / 1024
            if base is None:
                base = rss
            extra = rss - base
            print(f"   {rows:>10,} x 16 (adam){ck:>14}{holds:>8.1f}{rss:>8.1f}{extra:>12.1f}"
                  f"{(extra / holds if holds > 1 else float('nan')):>8.2f}")


def main():
    sections = sys.argv[1:] or ["sparse", "ctr", "memory"]
    unknown = set(sections) - {"sparse", "ctr", "memory"}
    if unknown:
        sys.exit(f"embed: no section {', '.join(sorted(unknown))}")
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    os.chdir(DIR)
    print(f"machine: {peers.machine()}")
    for s in sections:
        globals()[s]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
