"""The peers of `cairn data import` (regression/bench/import.sh), and its
inputs.  Prints the best seconds of 3 runs of a peer reading a file, timed
inside Python (the interpreter's start is not counted: the peers' best
case).

  import_peers.py make-numeric OUT ROWS   13 f32-like features and a label
  import_peers.py make-criteo OUT ROWS    the Criteo click-log layout
  import_peers.py time CMD...             a command's best wall seconds
  import_peers.py raw FILE                read the bytes (the page cache's rate)
  import_peers.py pandas-csv FILE         pandas.read_csv, then the arrays cairn writes
  import_peers.py pandas-h5 FILE          that, written to an HDF5 file with h5py and synced
  import_peers.py cairn CMD...            the best of cairn's own in-process seconds (its summary line)
  import_peers.py loadtxt FILE            numpy.loadtxt
  import_peers.py pandas-criteo FILE      pandas.read_csv of the TSV (parsing only: no hashing)
"""
import os
import random
import subprocess
import sys
import time

import numpy as np


def best(fn):
    b = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t)
    return b


def make_numeric(path, rows):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, 13)).astype(np.float32)
    y = rng.integers(0, 2, rows)
    with open(path, "w") as f:
        f.write(",".join("f%d" % i for i in range(13)) + ",label\n")
        for i in range(0, rows, 65536):
            chunk = [",".join("%.7g" % v for v in x[j]) + ",%d" % y[j] for j in range(i, min(rows, i + 65536))]
            f.write("\n".join(chunk) + "\n")


def make_criteo(path, rows):
    rng = random.Random(1)
    with open(path, "w") as f:
        for _ in range(rows):
            v = [str(rng.randrange(2))]
            v += ["" if rng.random() < 0.2 else str(int(rng.expovariate(0.01))) for _ in range(13)]
            v += ["" if rng.random() < 0.1 else "%08x" % rng.getrandbits(32 if rng.random() < 0.2 else 12) for _ in range(26)]
            f.write("\t".join(v) + "\n")


def main(argv):
    cmd, path = argv[1], argv[2]
    if cmd == "cairn":
        def run():
            out = subprocess.run(argv[2:], check=True, capture_output=True, text=True).stdout
            return float(out.split(" in ")[-1].split(" s ")[0])
        print(min(run() for _ in range(3)))
        return
    if cmd == "time":
        print(best(lambda: subprocess.run(argv[2:], check=True, stdout=subprocess.DEVNULL)))
        return
    if cmd == "make-numeric":
        return make_numeric(path, int(argv[3]))
    if cmd == "make-criteo":
        return make_criteo(path, int(argv[3]))
    if cmd == "raw":
        def read():
            with open(path, "rb") as f:
                while f.read(1 << 22):
                    pass
        print(best(read))
        return
    import pandas as pd

    if cmd == "pandas-csv":
        def read():
            d = pd.read_csv(path)
            x = d.iloc[:, :-1].to_numpy(np.float32)
            y = d.iloc[:, -1].to_numpy(np.int32)
            return x, y
        print(best(read))
    elif cmd == "pandas-h5":  # the script a user writes for a data file (synced, as cairn's is)
        import h5py

        def convert():
            x, y = None, None
            d = pd.read_csv(path)
            with h5py.File("peer.h5", "w") as f:
                f["features"] = d.iloc[:, :-1].to_numpy(np.float32)
                f["labels"] = d.iloc[:, -1].to_numpy(np.int32)
            with open("peer.h5", "rb+") as f:
                os.fsync(f.fileno())
        print(best(convert))
    elif cmd == "loadtxt":
        print(best(lambda: np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)))
    elif cmd == "pandas-criteo":
        print(best(lambda: pd.read_csv(path, sep="\t", header=None)))


if __name__ == "__main__":
    main(sys.argv)
