#!/usr/bin/python3
"""The ctr model of jobs/ctr.cfg in PyTorch 1.13, for embed.py.

usage: torch_ctr.py DATA.h5 MODE N [--steps S] [--epochs E] [--port P]

Two nn.EmbeddingBag tables with sparse gradients (user 1,000,000 x 16,
sum; item 100,000 x 16, mean; id -1 means no id, mapped to a padding row
that mean leaves out of its count, as cairn does), concatenated after the
13 dense features, then Linear 45-128-64-2 with ReLU and cross-entropy.
SparseAdam for the tables and Adam for the layers, both lr 0.003, batch
1024, the data's first 80% shuffled each epoch.  MODE "threads": one
process with N intra-op threads; "ddp": N processes (gloo), each a 1/N
share of every batch.  Prints one JSON line per epoch: samples and
train_seconds (the steps, without evaluation), as cairn's metrics have.
"""
import argparse
import json
import os
import time

import h5py
import numpy as np
import torch
import torch.distributed as dist
from torch import nn

TABLES = (("user", 1000000, "sum"), ("item", 100000, "mean"))


class Ctr(nn.Module):
    def __init__(self, inputs):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows + 1, 16, mode=mode, sparse=True, padding_idx=rows)
                                  for _, rows, mode in TABLES)
        self.mlp = nn.Sequential(nn.Linear(inputs + 16 * len(TABLES), 128), nn.ReLU(), nn.Linear(128, 64),
                                 nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x, ids):
        return self.mlp(torch.cat([x] + [bag(i) for bag, i in zip(self.bags, ids)], 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("mode", choices=("threads", "ddp"))
    ap.add_argument("n", type=int)
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--rank", type=int, default=-1)
    a = ap.parse_args()
    if a.mode == "ddp" and a.rank < 0: # the launcher: one process per rank
        procs = [os.spawnv(os.P_NOWAIT, "/usr/bin/python3", ["python3", __file__, a.data, "ddp", str(a.n),
                           "--steps", str(a.steps), "--epochs", str(a.epochs), "--port", str(a.port),
                           "--rank", str(r)]) for r in range(a.n)]
        bad = [os.waitpid(p, 0)[1] for p in procs]
        raise SystemExit(1 if any(bad) else 0)
    rank, world = (a.rank, a.n) if a.mode == "ddp" else (0, 1)
    torch.set_num_threads(1 if a.mode == "ddp" else a.n)
    torch.manual_seed(5)
    f = h5py.File(a.data, "r")
    n = f["features"].shape[0]
    n_train = n - int(0.2 * n)
    x = torch.from_numpy(f["features"][:n_train].astype(np.float32))
    y = torch.from_numpy(f["labels"][:n_train].astype(np.int64))
    ids = []
    for name, rows, _ in TABLES:
        v = f[name][:n_train].reshape(n_train, -1).astype(np.int64)
        ids.append(torch.from_numpy(np.where(v < 0, rows, v)))
    model = Ctr(x.shape[1])
    if a.mode == "ddp":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = nn.parallel.DistributedDataParallel(model)
    core = model.module if a.mode == "ddp" else model
    sparse = torch.optim.SparseAdam(list(core.bags.parameters()), lr=0.003)
    dense = torch.optim.Adam(core.mlp.parameters(), lr=0.003)
    loss_fn = nn.CrossEntropyLoss()
    batch, g = 1024, torch.Generator().manual_seed(5)
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(n_train, generator=g)
        t0 = time.perf_counter()
        for s in range(a.steps):
            idx = order[(s * batch) % n_train:][:batch]
            idx = idx[rank::world]
            sparse.zero_grad()
            dense.zero_grad()
            loss = loss_fn(model(x[idx], [i[idx] for i in ids]), y[idx])
            loss.backward()
            sparse.step()
            dense.step()
        dt = time.perf_counter() - t0
        if rank == 0:
            print(json.dumps({"epoch": epoch, "samples": a.steps * batch, "train_seconds": dt,
                              "loss": float(loss)}), flush=True)


if __name__ == "__main__":
    main()
