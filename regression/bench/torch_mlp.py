#!/usr/bin/python3
"""The peer side of regression/bench/peers.sh: jobs/demo.cfg's model trained
by PyTorch (Debian's python3-torch 1.13) the way a user would write it.

Same model (dense layers with ReLU, softmax cross-entropy), Glorot-uniform
weights and zero biases, Adam with lr 0.001, float32, the same HDF5 file
with the same held-out split (the last HOLDOUT of the rows), a fresh
permutation of the training rows every pass, global mini-batch BATCH.

  torch_mlp.py threads N ...   one process, N intra-op threads
  torch_mlp.py ddp N ...       N processes (gloo, one thread each), each
                               taking BATCH / N rows of every mini-batch

Prints one JSON line per epoch: samples, train_seconds (the steps, between
barriers), seconds (the epoch with its held-out evaluation) and accuracy.
"""
import argparse
import json
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["threads", "ddp"])
    p.add_argument("n", type=int)
    p.add_argument("--data", default="demo.h5")
    p.add_argument("--widths", default="32,1024,1024,1024,8")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--holdout", type=float, default=0.2)
    p.add_argument("--steps", type=int, default=0, help="steps per epoch (0: a whole pass)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--accuracy", type=float, default=0.0, help="stop once held-out accuracy reaches it")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--port", type=int, default=29517)
    return p.parse_args()


def model(widths):
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        lin = torch.nn.Linear(a, b)
        torch.nn.init.xavier_uniform_(lin.weight)
        torch.nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def run(rank, args):
    ddp = args.mode == "ddp"
    world = args.n if ddp else 1
    torch.set_num_threads(1 if ddp else args.n)
    torch.manual_seed(args.seed)
    if ddp:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=world)
    with h5py.File(args.data, "r") as f:
        x = torch.from_numpy(np.asarray(f["features"], dtype=np.float32))
        y = torch.from_numpy(np.asarray(f["labels"], dtype=np.int64))
    n_train = len(x) - int(args.holdout * len(x))
    xt, yt, xh, yh = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    net = model([int(w) for w in args.widths.split(",")])
    if ddp:
        net = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    lossf = torch.nn.CrossEntropyLoss()
    per = args.batch // world
    steps = args.steps or n_train // args.batch
    gen = torch.Generator().manual_seed(args.seed)
    order, at = torch.randperm(n_train, generator=gen), 0
    for epoch in range(1, args.epochs + 1):
        if ddp:
            dist.barrier()
        t0 = time.perf_counter()
        samples = 0
        for _ in range(steps):
            if at + args.batch > n_train:
                order, at = torch.randperm(n_train, generator=gen), 0
            idx = order[at + rank * per: at + (rank + 1) * per]
            at += args.batch
            opt.zero_grad(set_to_none=True)
            lossf(net(xt[idx]), yt[idx]).backward()
            opt.step()
            samples += args.batch
        if ddp:
            dist.barrier()
        train = time.perf_counter() - t0
        with torch.no_grad():
            acc = (net(xh).argmax(1) == yh).float().mean().item()
        total = time.perf_counter() - t0
        if rank == 0:
            print(json.dumps({"epoch": epoch, "samples": samples, "train_seconds": train,
                              "seconds": total, "accuracy": acc}), flush=True)
        if args.accuracy and acc >= args.accuracy:
            break
    if ddp:
        dist.destroy_process_group()


def main():
    args = parse()
    if args.mode == "ddp":
        mp.spawn(run, args=(args,), nprocs=args.n)
    else:
        run(0, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
