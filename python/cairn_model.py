"""Load a model that cairn trained (RUN_DIR/model.h5) and use it with numpy.

Needs only numpy and h5py.  The layout of model.h5 is documented in
cairn-job(5), MODEL FILE.

    import cairn_model
    m = cairn_model.load("runs/demo/model.h5")
    out = m.predict("demo.h5")             # class probabilities (softmax) or values
    cls = out.argmax(1)                    # what `cairn predict` writes as /predicted
    net = m.to_torch()                     # the same model as torch.nn.Sequential

Outputs agree with `cairn predict` to about 1e-6 (numpy adds in another
order than BLAS; cairn's own figures are the same on any number of ranks).

A model file is untrusted input.  load() refuses every file that `cairn
eval` and `cairn predict` refuse, by the same rules and with the same
message, by raising ModelError (a ValueError) that names the file, the
object and the rule, e.g. "model.h5: /layers/0/W: non-finite value at
[3, 7]":
- the path must be a regular file (a FIFO is refused before it is opened);
- every object is reached through hard links only (no soft or external
  link), and every dataset keeps its data in the file, all of it;
- attributes hold one value of their class (fixed-length strings of at
  most 255 bytes, integers in range); loss, activations and combine rules
  are known names, never replaced by a default;
- attribute 'layers' counts exactly the groups /layers/0 .. L-1; W is
  [in, out] and b [out], chained; the tables' 'column' attributes tile the
  first layer's input after the dense features;
- datasets are stored as the model's dtype exactly (IEEE f32 or f64; only
  the byte order may differ): no int, f16 or other conversion;
- weights and biases are finite, and so are the table rows a prediction uses.
predict() refuses data files as cairn does (a dataset missing, not numeric,
of the wrong shape; ids not integers or out of range), with ModelError too.
"""
import os
import stat

import h5py
import numpy as np

ACTIVATIONS = {
    "identity": lambda v: v,
    "relu": lambda v: np.maximum(v, 0),
    "tanh": np.tanh,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
}
LOSSES = ("softmax_cross_entropy", "mse")
# dtype attribute -> numpy type and the stored HDF5 types that are exactly it
DTYPES = {
    "f32": (np.float32, (h5py.h5t.IEEE_F32LE, h5py.h5t.IEEE_F32BE)),
    "f64": (np.float64, (h5py.h5t.IEEE_F64LE, h5py.h5t.IEEE_F64BE)),
}
MAX_WIDTH, MAX_LAYERS, MAX_TABLES, MAX_TEXT, MAX_DIMS = 1 << 24, 64, 64, 255, 8
MAX_BAG, MAX_ELEMENTS = 65536, 1 << 60  # ids per sample (EMBED_IDS_K_MAX); a dataset (READER_MAX_ELEMENTS)


class ModelError(ValueError):
    """A model (or data) file that cairn would refuse: the message names
    the file, the object and the rule."""


def _escaped(b):
    """bytes as cairn prints them (cairn_escape): control bytes, C1 controls
    and bytes that are not valid UTF-8 as \\xNN, the rest as text."""
    out, i = [], 0
    while i < len(b):
        n = 1 if b[i] < 0x80 else 2 if 0xc2 <= b[i] <= 0xdf else 3 if 0xe0 <= b[i] <= 0xef else \
            4 if 0xf0 <= b[i] <= 0xf4 else 0
        try:
            c = b[i:i + n].decode() if n else ""
        except UnicodeDecodeError:
            c = ""
        if not c or ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f:
            out.append("\\x%02x" % b[i])
            i += 1
        else:
            out.append(c)
            i += n
    return "".join(out)


def _where(i, shape):
    return "[%s]" % ", ".join(str(int(v)) for v in np.unravel_index(i, shape))


def _finite(fail, what, a):
    """A NaN weight would score every row NaN: refuse it, at its position."""
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        fail("%s: non-finite value at %s" % (what, _where(bad[0], a.shape)))


class _File:
    """An open model.h5 and the checks cairn applies to it (src/train/infer.c)."""

    def __init__(self, path):
        self.path = path
        if not os.access(path, os.R_OK):
            self.fail("cannot read it")
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open
            self.fail("not a regular file")
        try:
            self.f = h5py.File(path, "r")
        except OSError:
            self.fail("not an HDF5 file (or a damaged one)")

    def fail(self, msg):
        raise ModelError("%s: %s" % (self.path, msg))

    def obj(self, path, kind):
        """path (absolute), reached by hard links only, of kind Group or Dataset."""
        what = "group" if kind is h5py.Group else "dataset"
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            link = self.f.get("/" + "/".join(parts[:i]), getlink=True)
            if link is None:
                self.fail("%s: no such %s" % (path, what))
            if not isinstance(link, h5py.HardLink):
                self.fail("%s: it is behind a soft or external link" % path)
        o = self.f[path]
        if not isinstance(o, kind):
            self.fail("%s: it is not a %s" % (path, what))
        return o

    def attr(self, obj, where, name, kind, lo=None, hi=None, default=None):
        """Attribute name of obj: one value of kind (str or int), in [lo, hi]."""
        pre = where + ": " if where else ""
        if name not in obj.attrs:
            if default is not None:
                return default
            self.fail(pre + "attribute '%s' is missing" % name)
        a = h5py.h5a.open(obj.id, name.encode())
        space, t = a.get_space(), a.get_type()
        if space.get_simple_extent_type() not in (h5py.h5s.SCALAR, h5py.h5s.SIMPLE) or \
                space.get_simple_extent_npoints() != 1:
            self.fail(pre + "attribute '%s' does not hold exactly one value" % name)
        if t.get_class() != (h5py.h5t.STRING if kind is str else h5py.h5t.INTEGER):
            self.fail(pre + "attribute '%s' is not %s" % (name, "a string" if kind is str else "an integer"))
        if kind is int:
            if t.get_size() > 8:
                self.fail(pre + "attribute '%s' is not a 64-bit signed integer" % name)
            v = int(np.asarray(obj.attrs[name]).reshape(-1)[0])
            if not lo <= v <= hi:
                self.fail(pre + "attribute '%s' is %d, outside [%d, %d]" % (name, v, lo, hi))
            return v
        if t.is_variable_str():
            self.fail(pre + "attribute '%s' is not a fixed-length string" % name)
        if not 0 < t.get_size() <= MAX_TEXT:
            self.fail(pre + "attribute '%s' has a bad length (%d bytes)" % (name, t.get_size()))
        v = np.asarray(obj.attrs[name]).reshape(-1)[0]
        return bytes(v).split(b"\0")[0].decode("utf-8", "replace")

    def dataset(self, path, ndim):
        """path: stored as the model's dtype exactly, ndim dimensions, data in the file."""
        d = self.obj(path, h5py.Dataset)
        if not any(d.id.get_type() == t for t in DTYPES[self.dtype][1]):
            self.fail("%s: its element type is not %s" % (path, self.dtype))
        space = d.id.get_space()
        if space.get_simple_extent_ndims() != ndim:
            self.fail("%s: it has %d dimensions, not %d" % (path, space.get_simple_extent_ndims(), ndim))
        dcpl = d.id.get_create_plist()
        if dcpl.get_external_count() or dcpl.get_layout() == h5py.h5d.VIRTUAL:
            self.fail("%s: it keeps its data outside the file" % path)
        return d, space.get_simple_extent_dims()

    def stored(self, d, path, rows, cols):
        """All of its bytes in the file, no more than the file holds: a few
        bytes of header must not declare gigabytes (or a table of zeros)."""
        want = float(rows) * float(cols) * d.id.get_type().get_size()
        have = float(min(d.id.get_storage_size(), self.f.id.get_filesize()))
        if have < want:
            self.fail("%s: it keeps %.0f of its %.0f bytes in the file: damaged, or not a model cairn wrote"
                      % (path, have, want))

    def read(self, d, path, rows, cols):
        """Dataset d, checked stored, read whole and checked finite."""
        self.stored(d, path, rows, cols)
        a = np.asarray(d[()], dtype=DTYPES[self.dtype][0])
        _finite(self.fail, path, a)
        return a


class Table:
    """An embedding table: rows [rows, dim] in id order, fed by an ids dataset."""

    def __init__(self, f, name):
        g = "/embeddings/" + name
        grp = f.obj(g, h5py.Group)
        self.name, self.path, self.file = name, g + "/table", f.path
        self.ids = f.attr(grp, g, "ids", str)
        combine = f.attr(grp, g, "combine", str)
        if combine not in ("sum", "mean"):
            f.fail("%s: combine is '%s', not sum or mean" % (g, combine))
        self.mean = combine == "mean"
        self.column = f.attr(grp, g, "column", int, 0, MAX_WIDTH) if "column" in grp.attrs else None
        d, (rows, dim) = f.dataset(self.path, 2)
        if not (rows >= 1 and 1 <= dim <= MAX_WIDTH):
            f.fail("%s: it is [%d, %d]; it must be [1 or more, 1 .. %d]" % (self.path, rows, dim, MAX_WIDTH))
        f.stored(d, self.path, rows, dim)
        self.rows = np.asarray(d[()], dtype=DTYPES[f.dtype][0])

    def combine(self, ids, first=0, data="data"):
        """Each row's bag of ids (-1: no id) -> the sum or mean of its vectors."""
        ids = np.asarray(ids).reshape(len(ids), -1)
        bad = np.flatnonzero((ids < -1) | (ids >= len(self.rows)))
        if bad.size:
            r, c = divmod(int(bad[0]), ids.shape[1])
            raise ModelError("ids dataset '%s' in %s: row %d holds id %d; the table has rows 0 to %d "
                             "(and -1 means no id)" % (self.ids, data, first + r, ids[r, c], len(self.rows) - 1))
        ok = ids >= 0
        self._finite_rows(np.unique(ids[ok]))
        v = (self.rows[np.where(ok, ids, 0)] * ok[..., None]).sum(1)
        if self.mean:
            v = v / np.maximum(ok.sum(1), 1)[:, None]
        return v

    def _finite_rows(self, used):
        """The rows a batch uses, checked as the weights were (cairn reads
        only those: a table may be too large to check whole)."""
        bad = np.flatnonzero(~np.isfinite(self.rows[used]))
        if bad.size:
            r, c = divmod(int(bad[0]), self.rows.shape[1])
            raise ModelError("%s: %s: non-finite value at [%d, %d]" % (self.file, self.path, used[r], c))


class Model:
    """A cairn model: dense layers y = act(x W + b), after optional tables."""

    def __init__(self, path):
        f = _File(path)
        try:
            self._read(f)
        finally:
            f.f.close()

    def _read(self, f):
        # in cairn's order, so that a file with two faults gets cairn's message
        if "cairn_version" not in f.f.attrs:
            f.fail("no attribute 'cairn_version': not a model file cairn wrote")
        root = f.f["/"]
        if "kind" in f.f.attrs:  # not a model of layers
            kind = f.attr(root, "", "kind", str)
            if kind == "lm":
                f.fail("a language model (kind 'lm'): cairn_lm.load() reads it")
            f.fail("unknown kind of model '%s'" % kind)
        self.loss = f.attr(root, "", "loss", str)
        if self.loss not in LOSSES:
            f.fail("unknown loss '%s'" % self.loss)
        f.dtype = f.attr(root, "", "dtype", str)
        if f.dtype not in DTYPES:
            f.fail("dtype '%s' is not f32 or f64" % f.dtype)
        self.inputs = f.attr(root, "", "inputs", int, 0, MAX_WIDTH)
        n_layers = f.attr(root, "", "layers", int, 1, MAX_LAYERS)
        self.features = f.attr(root, "", "features", str, default="features")
        self.labels = f.attr(root, "", "labels", str, default="labels")
        if "eval_batch" in f.f.attrs:
            f.attr(root, "", "eval_batch", int, 1, 1 << 24)
        n = len(f.obj("/layers", h5py.Group))
        if n != n_layers:  # a file saying 1 while /layers/1 exists is not what it claims
            f.fail("/layers: it holds %d objects, but attribute 'layers' is %d" % (n, n_layers))
        self.tables = self._tables(f)
        width = self.inputs + sum(t.rows.shape[1] for t in self.tables)
        if width < 1:
            f.fail("the model takes no inputs")
        self.layers = []
        for i in range(n_layers):
            self.layers.append(self._layer(f, i, width))
            width = self.layers[-1][0].shape[1]
        if self.loss == "softmax_cross_entropy" and width < 2:
            f.fail("a softmax model needs at least 2 outputs")

    @staticmethod
    def _layer(f, i, width):
        g = "/layers/%d" % i
        act = f.attr(f.obj(g, h5py.Group), g, "activation", str)
        if act not in ACTIVATIONS:
            f.fail("%s: unknown activation '%s'" % (g, act))
        d, (rows, units) = f.dataset(g + "/W", 2)
        if rows != width or not 1 <= units <= MAX_WIDTH:
            f.fail("%s/W: it is [%d, %d]; it must be [%d, 1 .. %d]" % (g, rows, units, width, MAX_WIDTH))
        W = f.read(d, g + "/W", rows, units)
        d, (n,) = f.dataset(g + "/b", 1)
        if n != units:
            f.fail("%s/b: it has %d values; the layer has %d units" % (g, n, units))
        return W, f.read(d, g + "/b", n, 1), act

    def _tables(self, f):
        """The tables, in the order their vectors follow the dense features."""
        if f.f.get("embeddings", getlink=True) is None:  # (a dangling link is not "none")
            return []
        names = list(f.obj("/embeddings", h5py.Group))
        for n in names:  # a name is printed: it must print as itself (h5py gives bytes if not UTF-8)
            b = n if isinstance(n, bytes) else n.encode()
            if _escaped(b) != b.decode("utf-8", "replace"):
                f.fail("/embeddings: the table name '%s' is not printable UTF-8" % _escaped(b))
        if any(len(n.encode()) > MAX_TEXT for n in names):
            f.fail("/embeddings: a table's name is too long")
        tables = [Table(f, n) for n in names]
        if len(tables) == 1 and tables[0].column is None:
            tables[0].column = self.inputs
        for t in tables:
            if t.column is None:
                f.fail("table '%s' has no attribute 'column': the file does not say in which order its %d "
                       "tables feed the first layer (an older cairn wrote it)" % (t.name, len(tables)))
        tables.sort(key=lambda t: t.column)
        width = self.inputs
        for t in tables:
            if t.column != width:
                f.fail("table '%s' starts at input column %d, not %d: the tables' columns must follow the "
                       "dense features without gaps" % (t.name, t.column, width))
            width += t.rows.shape[1]
            if width > MAX_WIDTH:
                f.fail("the tables are too wide")
        return tables

    def input(self, data, rows=slice(None), name="data"):
        """The first layer's input for rows of an open h5py data file (name: its path)."""
        x = _data(data, name, self.features)
        if x.ndim != 2 or x.shape[1] != self.inputs:
            raise ModelError("dataset '%s' in %s must be [N, %d] (the model's dense inputs), not %dD with %d "
                             "columns" % (self.features, name, self.inputs, x.ndim, x.shape[1] if x.ndim > 1 else 0))
        first = np.arange(len(x))[rows][:1]
        cols = [np.asarray(x[rows])]
        for t in self.tables:
            ids = _data(data, name, t.ids)
            if ids.id.get_type().get_class() != h5py.h5t.INTEGER:
                raise ModelError("ids dataset '%s' in %s holds %s values; ids must be integers"
                                 % (t.ids, name, "f32" if ids.dtype.itemsize == 4 else "f64"))
            shape = "[%s]" % ", ".join(map(str, ids.shape))
            if ids.ndim > 2 or (ids.ndim == 2 and ids.shape[1] < 1):
                raise ModelError("ids dataset '%s' in %s is %s, not [N] or [N, k] with k >= 1"
                                 % (t.ids, name, shape))
            if ids.ndim == 2 and ids.shape[1] > MAX_BAG:  # before anything is read: a file may claim any shape
                raise ModelError("ids dataset '%s' in %s is %s: bags of more than %d ids per sample are "
                                 "not supported" % (t.ids, name, shape, MAX_BAG))
            if len(ids) != len(x):
                raise ModelError("ids dataset '%s' in %s has %d rows but the features have %d"
                                 % (t.ids, name, len(ids), len(x)))
            cols.append(t.combine(ids[rows], int(first[0]) if len(first) else 0, name))
        return np.concatenate(cols, 1) if len(cols) > 1 else cols[0]

    def logits(self, x):
        """The last layer's outputs for inputs x [n, width]."""
        h = x
        for W, b, act in self.layers:
            h = ACTIVATIONS[act](h @ W + b)
        return h

    def outputs(self, x):
        """Class probabilities (softmax models) or values (mse), as cairn predict."""
        z = self.logits(x)
        if self.loss != "softmax_cross_entropy":
            return z
        e = np.exp(z.astype(np.float64) - z.max(1, keepdims=True))
        return (e / e.sum(1, keepdims=True)).astype(z.dtype)

    def predict(self, path, rows=slice(None)):
        if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
            raise ModelError("'%s' is not a regular file" % path)  # a FIFO would block the open
        try:
            d = h5py.File(path, "r")
        except OSError:
            raise ModelError("cannot open HDF5 file '%s'" % path) from None
        with d:
            return self.outputs(self.input(d, rows, path))

    def to_torch(self):
        """The dense layers as torch.nn.Sequential (tables: combine() first)."""
        import torch

        acts = {"identity": None, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}
        mods = []
        for W, b, act in self.layers:
            lin = torch.nn.Linear(W.shape[0], W.shape[1], dtype=torch.from_numpy(W).dtype)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(W.T)))
                lin.bias.copy_(torch.from_numpy(b))
            mods.append(lin)
            if acts[act]:  # every activation is known: load() refused any other
                mods.append(acts[act]())
        return torch.nn.Sequential(*mods)


def _data(d, name, path):
    """Dataset path of data file d (named name), as cairn's reader takes it:
    hard links only, its data in the file, numeric with 1 to 8 dimensions."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        link = d.get("/".join(parts[:i]), getlink=True)
        if link is None:
            raise ModelError("file '%s' has no dataset '%s'" % (name, path))
        if not isinstance(link, h5py.HardLink):
            raise ModelError("dataset '%s' in '%s' is behind a soft or external link" % (path, name))
    ds = d[path]
    if not isinstance(ds, h5py.Dataset):
        raise ModelError("file '%s' has no dataset '%s'" % (name, path))
    dcpl = ds.id.get_create_plist()
    if dcpl.get_external_count() or dcpl.get_layout() == h5py.h5d.VIRTUAL:
        raise ModelError("dataset '%s' in '%s' keeps its data outside the file" % (path, name))
    if ds.id.get_type().get_class() not in (h5py.h5t.INTEGER, h5py.h5t.FLOAT) or not 1 <= ds.ndim <= MAX_DIMS:
        raise ModelError("dataset '%s' in '%s' must be numeric with 1 to %d dimensions" % (path, name, MAX_DIMS))
    if int(np.prod([float(v) for v in ds.shape])) > MAX_ELEMENTS:
        raise ModelError("dataset '%s' in '%s' is [%s], more than 2^60 elements (a file may claim any shape; "
                         "cairn reads at most that)" % (path, name, ", ".join(map(str, ds.shape))))
    return ds


def load(path):
    """The model in path; ModelError for any file cairn would refuse."""
    return Model(path)
