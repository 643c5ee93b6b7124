#!/usr/bin/python3
"""The peer side of regression/bench/predict.sh: a cairn model.h5 run by
PyTorch 1.13 for inference, the way a user would (python/cairn_model.py's
to_torch(), torch.no_grad(), batches of BATCH rows), on the same data, with
the same output written (softmax probabilities and classes into HDF5).

  torch_predict.py MODEL.h5 DATA.h5 OUT.h5 THREADS BATCH

Prints one JSON line: rows, seconds (read, forward, write), rows_per_second.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import cairn_model  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

model, data, out, threads, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
net = cairn_model.load(model).to_torch().eval()
t0 = time.perf_counter()
with h5py.File(data, "r") as d, h5py.File(out, "w") as o:
    x = d["features"]
    n = len(x)
    probs = o.create_dataset("outputs", (n, net[-1].out_features), "f4")
    cls = o.create_dataset("predicted", (n,), "i4")
    with torch.no_grad():
        for lo in range(0, n, batch):
            z = net(torch.from_numpy(x[lo:lo + batch]))
            p = torch.softmax(z, 1)
            probs[lo:lo + len(p)] = p.numpy()
            cls[lo:lo + len(p)] = p.argmax(1).numpy().astype(np.int32)
s = time.perf_counter() - t0
print(json.dumps({"rows": n, "seconds": round(s, 4), "rows_per_second": round(n / s, 1)}))
