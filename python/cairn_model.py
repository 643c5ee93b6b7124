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
"""
import h5py
import numpy as np

ACTIVATIONS = {
    "identity": lambda v: v,
    "relu": lambda v: np.maximum(v, 0),
    "tanh": np.tanh,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
}


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


class Table:
    """An embedding table: rows [rows, dim] in id order, fed by an ids dataset."""

    def __init__(self, name, group):
        self.name = name
        self.rows = group["table"][()]
        self.ids = _text(group.attrs["ids"])
        self.mean = _text(group.attrs["combine"]) == "mean"
        self.column = int(group.attrs["column"]) if "column" in group.attrs else None

    def combine(self, ids):
        """Each row's bag of ids (-1: no id) -> the sum or mean of its vectors."""
        ids = np.asarray(ids).reshape(len(ids), -1)
        if ((ids < -1) | (ids >= len(self.rows))).any():
            raise ValueError("table %s: an id is outside -1 .. %d" % (self.name, len(self.rows) - 1))
        ok = ids >= 0
        v = (self.rows[np.where(ok, ids, 0)] * ok[..., None]).sum(1)
        if self.mean:
            v = v / np.maximum(ok.sum(1), 1)[:, None]
        return v


class Model:
    """A cairn model: dense layers y = act(x W + b), after optional tables."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            if "cairn_version" not in f.attrs:
                raise ValueError("%s: not a model file cairn wrote" % path)
            self.loss = _text(f.attrs["loss"])
            self.inputs = int(f.attrs["inputs"])
            self.features = _text(f.attrs.get("features", "features"))
            self.labels = _text(f.attrs.get("labels", "labels"))
            self.layers = []
            for i in range(int(f.attrs["layers"])):
                g = f["layers/%d" % i]
                self.layers.append((g["W"][()], g["b"][()], _text(g.attrs["activation"])))
            tables = [Table(n, g) for n, g in f.get("embeddings", {}).items()]
            if len(tables) > 1 and any(t.column is None for t in tables):
                raise ValueError("%s: the tables have no 'column' attribute: their order is unknown" % path)
            order = [t.column if t.column is not None else self.inputs for t in tables]
            self.tables = [t for _, t in sorted(zip(order, tables), key=lambda p: p[0])]

    def input(self, data, rows=slice(None)):
        """The first layer's input for rows of an open h5py data file."""
        cols = [np.asarray(data[self.features][rows])]
        cols += [t.combine(data[t.ids][rows]) for t in self.tables]
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
        with h5py.File(path, "r") as d:
            return self.outputs(self.input(d, rows))

    def to_torch(self):
        """The dense layers as torch.nn.Sequential (tables: combine() first)."""
        import torch

        acts = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}
        mods = []
        for W, b, act in self.layers:
            lin = torch.nn.Linear(W.shape[0], W.shape[1], dtype=torch.from_numpy(W).dtype)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(W.T)))
                lin.bias.copy_(torch.from_numpy(b))
            mods.append(lin)
            if act in acts:
                mods.append(acts[act]())
        return torch.nn.Sequential(*mods)


def load(path):
    return Model(path)
