"""Damage a cairn checkpoint file in one named way (regression suite only).

    damage.py KIND FILE

Each kind is a file that a storage fault, another tool or an attacker could
leave: attributes of the wrong shape or type, metadata changed without its
checksum, datasets of the wrong shape, type or name, huge declared sizes.
The loader and `cairn ckpt verify` must reject every kind as damage but
"unterminated" (a valid file whose string attribute has no terminator),
which they must accept, and "format_other" (a consistent file of another
format), which they must refuse as bad input without marking it bad.  Uses Debian's h5py and numpy.
"""
import os
import sys

import h5py
import numpy as np

M = 2**64
K = 0x9E3779B97F4A7C15


def fnv(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) % M
    return h


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M
    return z ^ (z >> 31)


def mix64(values):
    """cairn-mix64 of an integer array (bit patterns as unsigned 64-bit)."""
    s = 0
    for i, x in enumerate(np.asarray(values).reshape(-1).view(np.uint64)):
        s = (s + mix(int(x) ^ (i * K % M))) % M
    return s


def replace_attr(obj, name, value, dtype=None):
    del obj.attrs[name]
    obj.attrs.create(name, value, dtype=dtype)


def replace_dataset(f, path, data, keep_attrs=True, **kw):
    attrs = dict(f[path].attrs) if keep_attrs else {}
    del f[path]
    d = f.create_dataset(path, data=data, **kw)
    for k, v in attrs.items():
        d.attrs[k] = v
    return d


def seal_meta(f):
    """Give f a meta_checksum matching its (changed) root metadata."""
    a, g = f.attrs, f["groups/main"]
    meta = "format=%d\nepoch=%d\nstep=%d\ndone=%d\nseed=%d\nworld_size=%d\ngroup main ranks=%d\n" % (
        a["format_version"], a["epoch"], a["step"], a["done"], a["seed"], a["world_size"], g.attrs["ranks"])
    meta += a["settings"].decode().rstrip("\0")
    replace_attr(f, "meta_checksum", np.bytes_(b"%016x\0" % fnv(meta)))


def damage(kind, f):
    if kind == "w_rows":  # jobs/sharded.cfg: a row more, with a correct checksum
        v = np.concatenate([f["groups/store/w"][()], np.zeros((1, 3))])
        d = replace_dataset(f, "groups/store/w", v)
        d.attrs["checksum"] = np.uint64((mix64(v) + fnv("store/w")) % M)
        return
    if kind.startswith("w_row"):  # sharded.cfg's w: one row's value changed, the checksum kept
        row = int(kind[len("w_row"):])  # w_rowR: row R, which one rank of a split loads
        w = f["groups/store/w"]
        v = w[row]
        v[1] = -v[1] + 0.5
        w[row] = v
        return
    if kind == "external_storage":  # sharded.cfg's w, the same bytes kept beside the file
        w = "groups/store/w"
        v = f[w][()]
        raw = os.path.join(os.path.dirname(os.path.abspath(f.filename)), "raw.bin")
        v.tofile(raw)
        attrs = dict(f[w].attrs)
        del f[w]
        d = f.create_dataset(w, shape=v.shape, dtype=v.dtype, external=[(raw, 0, v.nbytes)])
        for k, a in attrs.items():
            d.attrs[k] = a
        return
    g = f["groups/main"]
    total = "groups/main/total"
    if kind == "checksum_array":
        c = g["total"].attrs["checksum"]
        replace_attr(g["total"], "checksum", np.array([c] * 64, dtype=np.uint64))
    elif kind in ("epoch_array", "step_array", "done_array"):
        name = kind.split("_")[0]
        replace_attr(f, name, np.array([f.attrs[name]] * 64, dtype=np.int64))
    elif kind == "format_array":
        replace_attr(f, "format_version", np.array([2] * 64, dtype=np.int32))
    elif kind == "format_changed":  # damage: the metadata checksum says format 2
        f.attrs["format_version"] = np.int32(7)
    elif kind == "format_other":  # a consistent file of another format: not damage
        f.attrs["format_version"] = np.int32(7)
        seal_meta(f)
    elif kind == "settings_dup":  # a blob listed twice, the metadata checksum consistent
        s = f.attrs["settings"].decode()
        replace_attr(f, "settings", np.bytes_(s.encode() + b"blob main/total=i64[] replicated\n\0"))
        seal_meta(f)
    elif kind == "settings_reordered":  # the same lines in another order, the checksum consistent
        lines = f.attrs["settings"].decode().rstrip("\0").splitlines(keepends=True)
        replace_attr(f, "settings", np.bytes_("".join(lines[::-1]).encode() + b"\0"))
        seal_meta(f)
    elif kind == "format_string":
        replace_attr(f, "format_version", np.bytes_(b"2"))
    elif kind == "ranks_array":
        replace_attr(g, "ranks", np.array([g.attrs["ranks"]] * 64, dtype=np.int64))
    elif kind == "settings_array":
        s = f.attrs["settings"]
        replace_attr(f, "settings", np.array([s] * 64))
    elif kind == "dist_array":
        replace_attr(g["total"], "dist", np.array([b"replicated"] * 64))
    elif kind == "dims9":
        replace_dataset(f, total, np.zeros((1,) * 9, dtype=np.int64))
    elif kind == "epoch_changed":
        f.attrs["epoch"] = np.int64(2)
    elif kind == "settings_changed":
        s = f.attrs["settings"].decode().replace("i64[] replicated", "i64[2] replicated", 1)
        replace_attr(f, "settings", np.bytes_(s.encode() + b"\0"))
    elif kind == "shape_crafted":  # a correct checksum for a wrong shape
        v = np.array([f[total][()]] * 2, dtype=np.int64)
        d = replace_dataset(f, total, v)
        d.attrs["checksum"] = np.uint64((mix64(v) + fnv("main/total")) % M)
    elif kind == "swapped":
        f.move("groups/main/total", "groups/main/tmp")
        f.move("groups/main/cursor", "groups/main/total")
        f.move("groups/main/tmp", "groups/main/cursor")
    elif kind == "huge_chunked":
        attrs = dict(f[total].attrs)
        del f[total]
        d = f.create_dataset(total, shape=(2**40,), maxshape=(None,), chunks=(1024,), dtype=np.int64)
        for k, v in attrs.items():
            d.attrs[k] = v
    elif kind == "deleted_dataset":
        del f["groups/main/cursor"]
    elif kind == "deleted_group":
        del f["groups/main"]
    elif kind == "dist_wrong":
        replace_attr(g["total"], "dist", np.bytes_(b"sharded\0"))
    elif kind == "dist_missing":
        del g["total"].attrs["dist"]
    elif kind == "dtype_changed":
        replace_dataset(f, total, np.int32(f[total][()]))
    elif kind in ("epoch_missing", "settings_missing", "meta_checksum_missing", "checksum_alg_missing"):
        del f.attrs[kind[: -len("_missing")]]
    elif kind == "checksum_float":
        replace_attr(g["total"], "checksum", np.float64(1.0))
    elif kind == "unterminated":  # valid: h5py writes numpy bytes null-padded, no terminator
        replace_attr(g["total"], "dist", np.bytes_(b"replicated"))
    elif kind == "external_link":  # the dataset's link names a FIFO beside the file
        del f[total]
        f[total] = h5py.ExternalLink("fifo", "/x")
    else:
        sys.exit("unknown kind " + kind)


if __name__ == "__main__":
    with h5py.File(sys.argv[2], "r+") as f:
        damage(sys.argv[1], f)
