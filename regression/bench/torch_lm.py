#!/usr/bin/python3
"""The peer side of regression/bench/lm.sh: jobs/demo_lm.cfg's language model
trained by PyTorch (Debian's python3-torch 1.13) the way a user would write
it: the same decoder blocks (pre-norm, causal attention through the mask,
exact GELU), float32, Adam, the same windows of the same HDF5 file in a
fresh order each pass, global mini-batch BATCH.

  torch_lm.py threads N ...   one process, N intra-op threads
  torch_lm.py ddp N ...       N processes (gloo, one thread each), each
                              taking BATCH / N windows of every mini-batch

Prints one JSON line: tokens and train_seconds of the timed steps (after
WARM untimed ones), and tokens_per_second.
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
import torch.multiprocessing as mp
import torch.nn.functional as F


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["threads", "ddp"])
    p.add_argument("n", type=int)
    p.add_argument("--data", default="text.h5")
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warm", type=int, default=5)
    return p.parse_args()


class Block(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x, mask):
        n, t, d = x.shape
        q, k, v = (z.view(n, t, self.h, d // self.h).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(d, -1))
        s = (q @ k.transpose(-1, -2) / math.sqrt(d // self.h)).masked_fill(~mask, -math.inf)
        x = x + self.proj((s.softmax(-1) @ v).transpose(1, 2).reshape(n, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class LM(torch.nn.Module):
    def __init__(self, vocab, ctx, d, h, blocks):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(ctx, d)
        self.blocks = torch.nn.ModuleList(Block(d, h) for _ in range(blocks))
        self.lnf, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab, bias=False)
        self.mask = torch.tril(torch.ones(ctx, ctx, dtype=torch.bool))  # not a buffer: DDP (gloo) broadcasts no bool

    def forward(self, x):
        h = self.tok(x) + self.pos.weight[: x.shape[1]]
        for b in self.blocks:
            h = b(h, self.mask)
        return self.head(self.lnf(h))


def run(rank, a, world):
    torch.set_num_threads(a.n if a.mode == "threads" else 1)
    if a.mode == "ddp":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    f = h5py.File(a.data, "r")
    x_all = torch.from_numpy(f["features"][()].astype(np.int64))
    y_all = torch.from_numpy(f["labels"][()].astype(np.int64))
    ctx = x_all.shape[1]
    torch.manual_seed(1)
    model = LM(256, ctx, a.width, a.heads, a.blocks)
    if a.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    order = torch.randperm(len(x_all), generator=torch.Generator().manual_seed(7))
    per = a.batch // world
    t0, tokens = 0.0, 0
    for step in range(a.warm + a.steps):
        if step == a.warm:
            if a.mode == "ddp":
                dist.barrier()
            t0 = time.perf_counter()
        rows = order[(step * a.batch + rank * per) % len(order):][:per]
        loss = F.cross_entropy(model(x_all[rows]).reshape(-1, 256), y_all[rows].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= a.warm:
            tokens += a.batch * ctx
    if a.mode == "ddp":
        dist.barrier()
    secs = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"mode": a.mode, "n": a.n, "tokens": tokens, "train_seconds": secs,
                          "tokens_per_second": tokens / secs, "loss": float(loss)}), flush=True)
    if a.mode == "ddp":
        dist.destroy_process_group()


def main():
    a = parse()
    if a.mode == "threads":
        run(0, a, 1)
    else:
        mp.spawn(run, args=(a, a.n), nprocs=a.n)


if __name__ == "__main__":
    main()
