"""Inputs for `cairn data import` and independent readings of them
(regression/scenarios/data_import.sh): Python's csv module and numpy read
each input, and the file cairn wrote must hold exactly what they read.

  import_check.py csv OUT.csv ROWS SEED       a CSV with every quoting case
  import_check.py numeric OUT.csv ROWS SEED   numbers only (numpy.loadtxt reads it)
  import_check.py criteo OUT.tsv ROWS SEED    the Criteo click-log layout
  import_check.py npy DIR                     .npy and .npz arrays of every dtype
  import_check.py check-csv IN.csv OUT.h5     what the csv module reads, as cairn's
                                              options in data_import.sh ask
  import_check.py check-numeric IN.csv OUT.h5
  import_check.py check-criteo ROWS IN.tsv... OUT.h5   (hashes recomputed here)
  import_check.py check-npy DIR OUT.h5
Prints "ok" or what differs.
"""
import csv
import io
import math
import os
import random
import sys

import h5py
import numpy as np

M64 = (1 << 64) - 1


def fnv1a(data, h=0xCBF29CE484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def hashed(value, name, rows, seed=0):
    """cairn-job(5)'s hash: row of VALUE in the ids dataset NAME."""
    if value == b"":
        return -1
    salt = mix((fnv1a(name.encode()) + seed) & M64)
    return mix(fnv1a(value) ^ salt) % rows


def f32(text):
    return np.float32(float(text))  # correctly rounded double, then f32


def number(rng):
    k = rng.randrange(6)
    if k == 0:
        return repr(rng.uniform(-1e3, 1e3))  # 17 digits: beyond the fast path
    if k == 1:
        return "%.6g" % rng.gauss(0, 1)
    if k == 2:
        return str(rng.randrange(-99999, 99999))
    if k == 3:
        return "%.3e" % rng.uniform(-1e30, 1e30)
    if k == 4:
        return ".%d" % rng.randrange(1000)
    return "%d." % rng.randrange(1000)


def make_csv(path, rows, seed):
    """Columns: id (ids, integer), "a,b" (feature), c (feature, some
    empty), note (hashed text: quotes, commas, newlines), label."""
    rng = random.Random(seed)
    words = ["x", 'say "hi"', "a,b", "line\nbreak", "", "crlf\r\nin", "plain", "ünï"]
    out = io.StringIO()
    out.write('id,"a,b",c,note,label\r\n')
    for r in range(rows):
        f = [str(rng.randrange(-1, 50)), number(rng), "" if rng.random() < 0.1 else number(rng),
             rng.choice(words), str(rng.randrange(3))]
        cells = []
        for i, v in enumerate(f):
            if i == 3 or (i != 4 and rng.random() < 0.2):  # quote the text, and some numbers
                cells.append('"' + v.replace('"', '""') + '"')
            else:
                cells.append(v)
        out.write(",".join(cells) + ("\r\n" if rng.random() < 0.5 else "\n"))
        if rng.random() < 0.02:
            out.write("\n")  # blank lines are skipped
    with open(path, "w", newline="") as fh:
        fh.write(out.getvalue())


def check_csv(src, h5):
    with open(src, newline="", encoding="utf-8") as fh:
        recs = [r for r in csv.reader(fh) if r]
    head, recs = recs[0], recs[1:]
    assert head == ["id", "a,b", "c", "note", "label"], head
    fill = np.float32(-7.5)
    x = np.array([[f32(r[1]), f32(r[2]) if r[2] else fill] for r in recs], dtype=np.float32)
    y = np.array([int(r[4]) for r in recs], dtype=np.int32)
    ids = np.array([int(r[0]) for r in recs], dtype=np.int64)
    note = np.array([hashed(r[3].encode(), "note", 1000, 5) for r in recs], dtype=np.int64)
    f = h5py.File(h5, "r")
    got = {k: f[k][()] for k in ("features", "labels", "id", "note")}
    want = {"features": x, "labels": y, "id": ids, "note": note}
    for k in want:
        if got[k].dtype != want[k].dtype or got[k].shape != want[k].shape:
            return "%s: %s %s, want %s %s" % (k, got[k].dtype, got[k].shape, want[k].dtype, want[k].shape)
        if got[k].tobytes() != want[k].tobytes():
            bad = [j for j in range(len(recs)) if got[k][j].tobytes() != want[k][j].tobytes()]
            return "%s differs at rows %s: %s vs %s" % (k, bad[:3], got[k][bad[0]], want[k][bad[0]])
    return "ok"


def make_numeric(path, rows, seed):
    rng = random.Random(seed)
    with open(path, "w") as fh:
        for r in range(rows):
            fh.write(",".join(number(rng) for _ in range(6)) + "\n")


def check_numeric(src, h5):
    want = np.loadtxt(src, delimiter=",", dtype=np.float32, ndmin=2)
    got = h5py.File(h5, "r")["features"][()]
    if got.shape != want.shape or got.tobytes() != want.tobytes():
        return "features differ from numpy.loadtxt's (%s vs %s)" % (got.shape, want.shape)
    return "ok"


def make_criteo(path, rows, seed):
    rng = random.Random(seed)
    with open(path, "w") as fh:
        for r in range(rows):
            f = [str(rng.randrange(2))]
            f += ["" if rng.random() < 0.15 else str(rng.randrange(-3, 3000)) for _ in range(13)]
            f += ["" if rng.random() < 0.1 else "%08x" % rng.randrange(1 << 32 if rng.random() < 0.3 else 40)
                  for _ in range(26)]
            if rng.random() < 0.05:
                f[20] = '"%s"' % f[20]  # quoted: allowed, and the same value
            fh.write("\t".join(f) + "\n")


def check_criteo(rows, srcs, h5):
    recs = []
    for s in srcs:
        with open(s, newline="") as fh:
            recs += [r for r in csv.reader(fh, delimiter="\t") if r]
    rows = int(rows)
    x = np.array([[np.float32(math.log1p(max(float(v or 0), 0))) for v in r[1:14]] for r in recs], dtype=np.float32)
    y = np.array([int(r[0]) for r in recs], dtype=np.int32)
    f = h5py.File(h5, "r")
    if f["features"][()].tobytes() != x.tobytes() or f["labels"][()].tobytes() != y.tobytes():
        return "features or labels differ"
    for c in range(26):
        want = np.array([hashed(r[14 + c].encode(), "C%d" % (c + 1), rows) for r in recs], dtype=np.int64)
        got = f["C%d" % (c + 1)][()]
        if got.dtype != np.int64 or got.tobytes() != want.tobytes():
            return "C%d differs: %s vs %s" % (c + 1, got[:5], want[:5])
    return "ok"


def npy_arrays():
    rng = np.random.default_rng(7)
    return {
        "x": rng.standard_normal((50, 3)).astype(np.float32),
        "w": np.asfortranarray(rng.standard_normal((50, 2, 3))),
        "big": rng.integers(-(1 << 30), 1 << 30, 50).astype(">i4"),
        "u8": rng.integers(0, 255, (50, 4)).astype(np.uint8),
        "flag": rng.random(50) < 0.5,
        "h": rng.standard_normal(50).astype(np.float16),
    }


def make_npy(d):
    a = npy_arrays()
    for k in ("x", "w", "big"):
        np.save(os.path.join(d, k + ".npy"), a[k][:30])
    np.savez(os.path.join(d, "more.npz"), x=a["x"][30:], w=a["w"][30:], big=a["big"][30:])
    np.savez_compressed(os.path.join(d, "z.npz"), u8=a["u8"], flag=a["flag"], h=a["h"])


def check_npy(d, h5):
    a = npy_arrays()
    kept = {"x": np.float32, "w": np.float64, "big": np.int32, "u8": np.int32, "flag": np.int32, "h": np.float32}
    f = h5py.File(h5, "r")
    for k, t in kept.items():
        want = np.ascontiguousarray(a[k]).astype(t)
        got = f[k][()]
        if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
            return "%s: %s %s differs from numpy's %s %s" % (k, got.dtype, got.shape, want.dtype, want.shape)
    return "ok"


def main(argv):
    cmd = argv[1]
    if cmd == "csv":
        make_csv(argv[2], int(argv[3]), int(argv[4]))
    elif cmd == "numeric":
        make_numeric(argv[2], int(argv[3]), int(argv[4]))
    elif cmd == "criteo":
        make_criteo(argv[2], int(argv[3]), int(argv[4]))
    elif cmd == "npy":
        make_npy(argv[2])
    elif cmd == "check-csv":
        print(check_csv(argv[2], argv[3]))
    elif cmd == "check-numeric":
        print(check_numeric(argv[2], argv[3]))
    elif cmd == "check-criteo":
        print(check_criteo(argv[2], argv[3:-1], argv[-1]))
    elif cmd == "check-npy":
        print(check_npy(argv[2], argv[3]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
