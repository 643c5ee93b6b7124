"""Craft untrusted model files from a good one (regression suite only).

    craft_models.py MODEL DATA OUTDIR

MODEL is a model.h5 that cairn wrote, with one embedding table 'user' fed
by ids 'user' and two layers; DATA the data it was trained on.  Writes one
file per case into OUTDIR (NAME.h5: a model; NAME.data.h5: a data file;
NAME.h5 may also be a FIFO or a symbolic link) and OUTDIR/manifest.tsv, one
line per case: NAME, the model and data file names (relative to OUTDIR),
and the fragment that both `cairn eval` and python/cairn_model.py must say
(a fixed string; "-" for a file both must accept).  Each case is a file
another tool, a damaged disk or an attacker could hand over: dtypes that
would be converted, sizes a header declares but the file does not hold,
attributes that disagree with the datasets, non-finite weights, links out
of the file, a FIFO.  Uses Debian's h5py and numpy.
"""
import os
import shutil
import sys

import h5py
import numpy as np

MODEL, DATA, OUT = sys.argv[1:4]
CASES = []


def case(name, fragment, data=None):
    """Register a case; its model file is a copy of MODEL, open for editing."""
    def wrap(edit):
        CASES.append((name, fragment, data, edit))
        return edit
    return wrap


def replace(f, path, data=None, **kw):
    """Dataset path again, as data or kw say, keeping its attributes."""
    attrs = dict(f[path].attrs)
    del f[path]
    d = f.create_dataset(path, data=data, **kw)
    for k, v in attrs.items():
        d.attrs[k] = v


def fixed(s):
    """A fixed-length string attribute value, as cairn writes them."""
    return np.bytes_(s)


def set_attr(obj, name, value):
    if name in obj.attrs:
        del obj.attrs[name]
    obj.attrs[name] = value


# ---- dtypes: exactly the model's (f32), no conversion ----
@case("w_int32", "/layers/0/W: its element type is not f32")
def _(f):
    replace(f, "layers/0/W", (f["layers/0/W"][()] * 100).astype(np.int32))


@case("w_f16", "/layers/0/W: its element type is not f32")
def _(f):
    replace(f, "layers/0/W", f["layers/0/W"][()].astype(np.float16))


@case("w_f64", "/layers/0/W: its element type is not f32")
def _(f):
    replace(f, "layers/0/W", f["layers/0/W"][()].astype(np.float64))


@case("b_i64", "/layers/1/b: its element type is not f32")
def _(f):
    replace(f, "layers/1/b", f["layers/1/b"][()].astype(np.int64))


@case("table_i64", "/embeddings/user/table: its element type is not f32")
def _(f):
    replace(f, "embeddings/user/table", (f["embeddings/user/table"][()] * 10).astype(np.int64))


@case("w_bigendian", "-")  # the same numbers in the other byte order: accepted
def _(f):
    replace(f, "layers/0/W", f["layers/0/W"][()].astype(">f4"))


# ---- sizes a header declares but the file does not hold ----
@case("table_huge", "/embeddings/user/table: it keeps 0 of its 13194139533312 bytes in the file")
def _(f):
    replace(f, "embeddings/user/table", shape=(2**40, 3), dtype="f4", chunks=(1024, 3))


@case("w_huge", "/layers/0/W: it keeps 0 of its 469762048 bytes in the file")
def _(f):
    replace(f, "layers/0/W", shape=(7, 2**24), dtype="f4", chunks=(7, 1024))


# ---- attributes against the datasets that exist ----
@case("layers_fewer", "/layers: it holds 2 objects, but attribute 'layers' is 1")
def _(f):
    set_attr(f, "layers", np.int64(1))


@case("layers_more", "/layers: it holds 2 objects, but attribute 'layers' is 3")
def _(f):
    set_attr(f, "layers", np.int64(3))


@case("layers_renamed", "/layers/1: no such group")
def _(f):
    f.move("layers/1", "layers/7")


@case("layers_zero", "attribute 'layers' is 0, outside [1, 64]")
def _(f):
    set_attr(f, "layers", np.int64(0))


@case("layers_negative", "attribute 'layers' is -1, outside [1, 64]")
def _(f):
    set_attr(f, "layers", np.int64(-1))


@case("layers_float", "attribute 'layers' is not an integer")
def _(f):
    set_attr(f, "layers", np.float64(2))


@case("layers_bool", "attribute 'layers' is not an integer")
def _(f):
    set_attr(f, "layers", np.bool_(True))


@case("layers_array", "attribute 'layers' does not hold exactly one value")
def _(f):
    set_attr(f, "layers", np.array([2, 2], dtype=np.int64))


@case("inputs_negative", "attribute 'inputs' is -1, outside [0, 16777216]")
def _(f):
    set_attr(f, "inputs", np.int64(-1))


@case("eval_batch_zero", "attribute 'eval_batch' is 0, outside [1, 16777216]")
def _(f):
    set_attr(f, "eval_batch", np.int64(0))


@case("not_a_model", "no attribute 'cairn_version': not a model file cairn wrote")
def _(f):
    del f.attrs["cairn_version"]


@case("loss_unknown", "unknown loss 'hinge'")
def _(f):
    set_attr(f, "loss", fixed("hinge"))


@case("loss_missing", "attribute 'loss' is missing")
def _(f):
    del f.attrs["loss"]


@case("loss_vlen", "attribute 'loss' is not a fixed-length string")
def _(f):
    set_attr(f, "loss", "mse")  # h5py writes str as a variable-length string


@case("dtype_f16", "dtype 'f16' is not f32 or f64")
def _(f):
    set_attr(f, "dtype", fixed("f16"))


@case("activation_unknown", "/layers/1: unknown activation 'gelu'")
def _(f):
    set_attr(f["layers/1"], "activation", fixed("gelu"))


@case("activation_missing", "/layers/0: attribute 'activation' is missing")
def _(f):
    del f["layers/0"].attrs["activation"]


@case("combine_unknown", "/embeddings/user: combine is 'max', not sum or mean")
def _(f):
    set_attr(f["embeddings/user"], "combine", fixed("max"))


@case("column_range", "/embeddings/user: attribute 'column' is 1073741824, outside [0, 16777216]")
def _(f):
    set_attr(f["embeddings/user"], "column", np.int64(2**30))


@case("column_gap", "table 'user' starts at input column 5, not 4")
def _(f):
    set_attr(f["embeddings/user"], "column", np.int64(5))


# ---- shapes ----
@case("b_short", "/layers/0/b: it has 7 values; the layer has 8 units")
def _(f):
    replace(f, "layers/0/b", f["layers/0/b"][:7])


@case("b_2d", "/layers/0/b: it has 2 dimensions, not 1")
def _(f):
    replace(f, "layers/0/b", f["layers/0/b"][()][None, :])


@case("w_rows", "/layers/0/W: it is [8, 8]; it must be [7, 1 .. 16777216]")
def _(f):
    replace(f, "layers/0/W", np.zeros((8, 8), np.float32))


@case("w_chain", "/layers/1/W: it is [9, 3]; it must be [8, 1 .. 16777216]")
def _(f):
    replace(f, "layers/1/W", np.zeros((9, 3), np.float32))


@case("w_group", "/layers/0/W: it is not a dataset")
def _(f):
    del f["layers/0/W"]
    f.create_group("layers/0/W")


# ---- non-finite values ----
@case("w_nan", "/layers/0/W: non-finite value at [3, 7]")
def _(f):
    w = f["layers/0/W"][()]
    w[3, 7] = np.nan
    replace(f, "layers/0/W", w)


@case("b_inf", "/layers/1/b: non-finite value at [1]")
def _(f):
    b = f["layers/1/b"][()]
    b[1] = np.inf
    replace(f, "layers/1/b", b)


@case("table_nan", "/embeddings/user/table: non-finite value at [")  # found when a batch reads the rows
def _(f):
    t = f["embeddings/user/table"][()]
    t[:, 2] = -np.inf
    replace(f, "embeddings/user/table", t)


# ---- links and storage out of the file ----
@case("w_soft", "/layers/0/W: it is behind a soft or external link")
def _(f):
    f["W0"] = f["layers/0/W"][()]
    del f["layers/0/W"]
    f["layers/0/W"] = h5py.SoftLink("/W0")


@case("layers_soft", "/layers: it is behind a soft or external link")
def _(f):
    f.move("layers", "real_layers")
    f["layers"] = h5py.SoftLink("/real_layers")


@case("embeddings_dangling", "/embeddings: it is behind a soft or external link")
def _(f):
    f.move("embeddings", "real_embeddings")
    f["embeddings"] = h5py.SoftLink("/nowhere")  # h5py's `in` calls this one absent


@case("table_external", "/embeddings/user/table: it is behind a soft or external link")
def _(f):
    with h5py.File(os.path.join(OUT, "elsewhere.h5"), "w") as e:
        e["table"] = f["embeddings/user/table"][()]
    del f["embeddings/user/table"]
    f["embeddings/user/table"] = h5py.ExternalLink("elsewhere.h5", "/table")


@case("w_external_storage", "/layers/0/W: it keeps its data outside the file")
def _(f):
    w = f["layers/0/W"][()]
    raw = os.path.join(OUT, "w_external_storage.raw")
    w.tofile(raw)
    replace(f, "layers/0/W", shape=w.shape, dtype="f4", external=[(os.path.basename(raw), 0, w.nbytes)])


@case("layers_u64", "attribute 'layers' is 18446744073709551615, outside [1, 64]")  # named as stored
def _(f):
    set_attr(f, "layers", np.uint64(2**64 - 1))


@case("table_name_bytes", "/embeddings: the table name 'us\\xffer\\x1b[31m' is not printable UTF-8")
def _(f):
    f["embeddings"].move("user", b"us\xffer\x1b[31m")


# ---- data files, for the Python loader's checks of them ----
@case("ids_wide", "ids dataset 'user' in ids_wide.data.h5 is [400, 70000]: bags of more than 65536 ids per "
      "sample are not supported", data="wide")
def _(d):
    del d["user"]  # a header that claims the bags, no data (a chunked dataset stores nothing yet)
    d.create_dataset("user", shape=(len(d["labels"]), 70000), dtype="i8", chunks=(1, 1000))


@case("ids_huge", "dataset 'user' in 'ids_huge.data.h5' is [2305843009213693952], more than 2^60 elements",
      data="huge")
def _(d):
    del d["user"]
    d.create_dataset("user", shape=(2**61,), dtype="i8", chunks=(1024,))


@case("ids_bool", "dataset 'user' in 'ids_bool.data.h5' must be numeric with 1 to 8 dimensions", data="bool")
def _(d):
    replace(d, "user", d["user"][()] > 0)


@case("ids_float", "ids dataset 'user' in ids_float.data.h5 holds f32 values; ids must be integers", data="float")
def _(d):
    replace(d, "user", d["user"][()].astype(np.float32))


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = []
    for name, fragment, data, edit in CASES:
        model, data_file = name + ".h5", os.path.abspath(DATA)
        if data:  # a data case: the good model, a crafted data file
            model, data_file = os.path.abspath(MODEL), name + ".data.h5"
            shutil.copy(DATA, os.path.join(OUT, data_file))
            target = data_file
        else:
            shutil.copy(MODEL, os.path.join(OUT, model))
            target = model
        with h5py.File(os.path.join(OUT, target), "a") as f:
            edit(f)
        lines.append((name, model, data_file, fragment))
    # not HDF5 edits: a FIFO (must not hang either reader) and a link to the good model
    os.mkfifo(os.path.join(OUT, "fifo.h5"))
    lines.append(("fifo", "fifo.h5", os.path.abspath(DATA), "fifo.h5: not a regular file"))
    os.symlink(os.path.abspath(MODEL), os.path.join(OUT, "symlink.h5"))
    lines.append(("symlink", "symlink.h5", os.path.abspath(DATA), "-"))
    with open(os.path.join(OUT, "manifest.tsv"), "w") as m:
        for line in lines:
            m.write("\t".join(line) + "\n")


main()
