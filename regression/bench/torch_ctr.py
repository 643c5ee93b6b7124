#!/usr/bin/python3
"""The ctr model of jobs/ctr.cfg in PyTorch 1.13, for embed.py.

usage: torch_ctr.py DATA.h5 MODE N [--steps S] [--epochs E] [--port P]

Written as a user tuning PyTorch for this model would: two
nn.EmbeddingBag tables with sparse gradients and exactly the job's rows
(user 1,000,000 x 16, sum; item 100,000 x 16, mean), fed 1-d ids with
offsets: an id -1 is left out of its bag, so mean averages over the ids
present and an empty bag gives zeros, as cairn does (no padding row).
Concatenated after the 13 dense features, then Linear 45-128-64-2 with
ReLU and cross-entropy; initial values as cairn's (tables uniform in
+-1/sqrt(16), weights Glorot-uniform, biases zero).  SparseAdam for the
tables and Adam for the layers, both lr 0.003 (betas 0.9, 0.999, eps 1e-8),
gradients set to None between steps, batch 1024, the data's first 80%
shuffled each epoch.  --steps 0 (the default) is a whole epoch, its last
step the rows left, as cairn's.  MODE "threads": one process with N
intra-op threads; "ddp": N processes (gloo), each a 1/N share of every
batch.  Prints one JSON line per epoch: samples and train_seconds (the
steps, without evaluation, as cairn's metrics have), the last step's loss
(cairn's train_loss) and the held-out loss and accuracy.
"""
import argparse
import json
import math
import os
import time

import h5py
import numpy as np
import torch
import torch.distributed as dist
from torch import nn

TABLES = (("user", 1000000, "sum"), ("item", 100000, "mean"))
DIM, BATCH, LR = 16, 1024, 0.003


class Ctr(nn.Module):
    def __init__(self, inputs):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, DIM, mode=mode, sparse=True) for _, rows, mode in TABLES)
        self.mlp = nn.Sequential(nn.Linear(inputs + DIM * len(TABLES), 128), nn.ReLU(), nn.Linear(128, 64),
                                 nn.ReLU(), nn.Linear(64, 2))
        for bag in self.bags:
            nn.init.uniform_(bag.weight, -1 / math.sqrt(DIM), 1 / math.sqrt(DIM))
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x, bags):
        return self.mlp(torch.cat([x] + [bag(i, o) for bag, (i, o) in zip(self.bags, bags)], 1))


def bag_input(padded):
    """A batch's [B, k] ids as EmbeddingBag's 1-d ids and offsets, the
    -1s left out."""
    keep = padded >= 0
    offsets = torch.zeros(padded.shape[0], dtype=torch.int64)
    torch.cumsum(keep.sum(1)[:-1], 0, out=offsets[1:])
    return padded[keep], offsets


def load(f, lo, hi):
    x = torch.from_numpy(f["features"][lo:hi].astype(np.float32))
    y = torch.from_numpy(f["labels"][lo:hi].astype(np.int64))
    ids = [torch.from_numpy(f[name][lo:hi].reshape(hi - lo, -1).astype(np.int64)) for name, _, _ in TABLES]
    return x, y, ids


def evaluate(model, x, y, ids):
    with torch.no_grad():
        z = model(x, [bag_input(i) for i in ids])
        return float(nn.functional.cross_entropy(z, y)), float((z.argmax(1) == y).double().mean())


def spawn(a):
    """The DDP launcher: one process per rank."""
    procs = [os.spawnv(os.P_NOWAIT, "/usr/bin/python3", ["python3", __file__, a.data, "ddp", str(a.n),
                       "--steps", str(a.steps), "--epochs", str(a.epochs), "--port", str(a.port),
                       "--rank", str(r)]) for r in range(a.n)]
    bad = [os.waitpid(p, 0)[1] for p in procs]
    raise SystemExit(1 if any(bad) else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("mode", choices=("threads", "ddp"))
    ap.add_argument("n", type=int)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--rank", type=int, default=-1)
    a = ap.parse_args()
    if a.mode == "ddp" and a.rank < 0:
        spawn(a)
    rank, world = (a.rank, a.n) if a.mode == "ddp" else (0, 1)
    torch.set_num_threads(1 if a.mode == "ddp" else a.n)
    torch.manual_seed(5)
    f = h5py.File(a.data, "r")
    n = f["features"].shape[0]
    n_train = n - int(0.2 * n)
    x, y, ids = load(f, 0, n_train)
    held = load(f, n_train, n) if rank == 0 else None
    model = Ctr(x.shape[1])
    core = model
    if a.mode == "ddp":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = nn.parallel.DistributedDataParallel(model)
    sparse = torch.optim.SparseAdam(list(core.bags.parameters()), lr=LR)
    dense = torch.optim.Adam(core.mlp.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    steps = a.steps or -(-n_train // BATCH)
    g = torch.Generator().manual_seed(5)
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(n_train, generator=g)
        samples, t0 = 0, time.perf_counter()
        for s in range(steps):
            batch = order[(s * BATCH) % n_train:][:BATCH]
            samples += len(batch)
            idx = batch[rank::world]
            sparse.zero_grad(set_to_none=True)
            dense.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx], [bag_input(i[idx]) for i in ids]), y[idx])
            loss.backward()
            sparse.step()
            dense.step()
        dt = time.perf_counter() - t0
        if rank == 0:
            h_loss, h_acc = evaluate(core, *held)
            print(json.dumps({"epoch": epoch, "samples": samples, "train_seconds": dt, "train_loss": float(loss),
                              "loss": h_loss, "accuracy": h_acc}), flush=True)


if __name__ == "__main__":
    main()
