"""Load a language model that cairn trained (model.lm; RUN_DIR/model.h5)
into numpy and PyTorch.

Needs numpy and h5py; to_torch() needs torch.  The layout is documented in
cairn-job(5), MODEL FILE.

    import cairn_lm
    m = cairn_lm.load("runs/lm/model.h5")
    z = m.logits(tokens)          # numpy, tokens [n, context] ints -> [n, context, vocab]
    net = m.to_torch()            # a torch.nn.Module: net(LongTensor [n, t]) -> logits [n, t, vocab]

The logits agree with cairn's to about 1e-5 (f32) and 1e-12 (f64): the
arithmetic is the same, the order of the sums is not.  The file is checked
as `cairn eval` checks it (cairn_model's rules: hard links only, data in the
file, exact dtype and shapes, finite values), and a refused file raises
cairn_model.ModelError naming the object and the rule.
"""
import math

import h5py
import numpy as np

from cairn_model import ModelError, _File  # noqa: F401  (ModelError: for callers)

BLOCK = ["ln1.g", "ln1.b", "qkv.W", "qkv.b", "proj.W", "proj.b", "ln2.g", "ln2.b", "fc.W", "fc.b", "out.W", "out.b"]
DTYPES = {"f32": np.float32, "f64": np.float64}


class LanguageModel:
    def __init__(self, path):
        f = _File(path)
        try:
            self._read(f)
        finally:
            f.f.close()

    def _read(self, f):
        # in the order of src/train/infer.c and infer_lm.c, with their messages
        root = f.f["/"]
        if "cairn_version" not in f.f.attrs:
            f.fail("no attribute 'cairn_version': not a model file cairn wrote")
        if "kind" not in f.f.attrs:
            f.fail("not a language model: cairn_model.load() reads a model of layers")
        kind = f.attr(root, "", "kind", str)
        if kind != "lm":
            f.fail("unknown kind of model '%s'" % kind)
        f.dtype = f.attr(root, "", "dtype", str)
        if f.dtype not in DTYPES:
            f.fail("dtype '%s' is not f32 or f64" % f.dtype)
        self.features = f.attr(root, "", "features", str, default="features")
        self.labels = f.attr(root, "", "labels", str, default="labels")
        self.eval_batch = f.attr(root, "", "eval_batch", int, 1, 1 << 24, default=1024)
        V = self.vocab = f.attr(root, "", "vocab", int, 2, 1 << 24)
        C = self.context = f.attr(root, "", "context", int, 1, 1 << 16)
        D = self.width = f.attr(root, "", "width", int, 1, 1 << 16)
        H = self.heads = f.attr(root, "", "heads", int, 1, 1 << 12)
        B = self.blocks = f.attr(root, "", "blocks", int, 1, 62)
        M = self.mlp = f.attr(root, "", "mlp", int, 1, 1 << 20)
        INT_MAX = 2**31 - 1
        if D % H or C > INT_MAX // C or D > INT_MAX // (3 * D) or D > INT_MAX // M or V * D > INT_MAX \
                or C * V > INT_MAX:  # lm_shape_ok, and one MPI call per parameter
            f.fail("the attributes' shape (vocab %d, context %d, width %d, heads %d, mlp %d) is not one "
                   "cairn trains" % (V, C, D, H, M))
        block = {"ln1.g": (D,), "ln1.b": (D,), "qkv.W": (D, 3 * D), "qkv.b": (3 * D,), "proj.W": (D, D),
                 "proj.b": (D,), "ln2.g": (D,), "ln2.b": (D,), "fc.W": (D, M), "fc.b": (M,), "out.W": (M, D),
                 "out.b": (D,)}
        layers = [("/embed", {"tok": (V, D), "pos": (C, D)})] + \
            [("/blocks/%d" % b, {n: block[n] for n in BLOCK}) for b in range(B)] + \
            [("/head", {"lnf.g": (D,), "lnf.b": (D,), "W": (D, V)})]
        self._count(f, "/", 3)
        self._count(f, "/blocks", B)
        self.p = {}
        for g, params in layers:
            self._count(f, g, len(params))
            for name, shape in params.items():
                path = "%s/%s" % (g, name)
                d, dims = f.dataset(path, len(shape))
                if tuple(dims) != shape:
                    f.fail("%s: its shape is not [%s], as the attributes give it" % (path, ", ".join(map(str, shape))))
                self.p[path] = f.read(d, path, shape[0], shape[1] if len(shape) == 2 else 1)

    @staticmethod
    def _count(f, path, n):
        g = f.f["/"] if path == "/" else f.obj(path, h5py.Group)
        if len(g) != n:
            f.fail("%s: it holds %d objects, not %d" % (path, len(g), n))

    # ---- numpy ----------------------------------------------------------------

    def logits(self, tokens):
        """tokens [n, t] (t <= context) -> logits [n, t, vocab], in float64."""
        x = np.asarray(tokens)
        if x.ndim != 2 or not 1 <= x.shape[1] <= self.context or x.min() < 0 or x.max() >= self.vocab:
            raise ValueError("tokens must be [n, t], t <= %d, each in [0, %d)" % (self.context, self.vocab))
        p = {k: v.astype(np.float64) for k, v in self.p.items()}
        n, t = x.shape
        D, H = self.width, self.heads
        h = p["/embed/tok"][x] + p["/embed/pos"][:t]
        mask = np.tril(np.ones((t, t), bool))
        erf = np.vectorize(math.erf)
        for b in range(self.blocks):
            q = lambda name: p["/blocks/%d/%s" % (b, name)]
            qkv = _ln(h, q("ln1.g"), q("ln1.b")) @ q("qkv.W") + q("qkv.b")
            heads = [qkv[..., i * D:(i + 1) * D].reshape(n, t, H, D // H).transpose(0, 2, 1, 3) for i in range(3)]
            s = heads[0] @ heads[1].transpose(0, 1, 3, 2) / math.sqrt(D // H)
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ heads[2]).transpose(0, 2, 1, 3).reshape(n, t, D)
            h = h + a @ q("proj.W") + q("proj.b")
            u = _ln(h, q("ln2.g"), q("ln2.b")) @ q("fc.W") + q("fc.b")
            h = h + 0.5 * u * (1 + erf(u / math.sqrt(2))) @ q("out.W") + q("out.b")
        return _ln(h, p["/head/lnf.g"], p["/head/lnf.b"]) @ p["/head/W"]

    # ---- torch ----------------------------------------------------------------

    def to_torch(self):
        """The model as a torch.nn.Module (its parameters as the file's dtype)."""
        import torch

        m = self

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.params = torch.nn.ParameterDict(
                    {k.strip("/").replace("/", "_").replace(".", "_"): torch.nn.Parameter(torch.from_numpy(v.copy()))
                     for k, v in m.p.items()})

            def w(self, path):
                return self.params[path.strip("/").replace("/", "_").replace(".", "_")]

            def forward(self, tokens):
                F = torch.nn.functional
                n, t = tokens.shape
                D, H = m.width, m.heads
                h = self.w("/embed/tok")[tokens] + self.w("/embed/pos")[:t]
                mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
                for b in range(m.blocks):
                    q = lambda name: self.w("/blocks/%d/%s" % (b, name))
                    qkv = F.layer_norm(h, (D,), q("ln1.g"), q("ln1.b"), eps=1e-5) @ q("qkv.W") + q("qkv.b")
                    qh, kh, vh = (z.view(n, t, H, D // H).transpose(1, 2) for z in qkv.split(D, dim=-1))
                    s = (qh @ kh.transpose(-1, -2) / math.sqrt(D // H)).masked_fill(~mask, -math.inf)
                    a = (s.softmax(-1) @ vh).transpose(1, 2).reshape(n, t, D)
                    h = h + a @ q("proj.W") + q("proj.b")
                    u = F.layer_norm(h, (D,), q("ln2.g"), q("ln2.b"), eps=1e-5) @ q("fc.W") + q("fc.b")
                    h = h + F.gelu(u) @ q("out.W") + q("out.b")
                z = F.layer_norm(h, (D,), self.w("/head/lnf.g"), self.w("/head/lnf.b"), eps=1e-5)
                return z @ self.w("/head/W")

        return Net()


def _ln(h, g, b):
    mu = h.mean(-1, keepdims=True)
    var = ((h - mu) ** 2).mean(-1, keepdims=True)
    return (h - mu) / np.sqrt(var + 1e-5) * g + b


def load(path):
    """The language model in path; cairn_model.ModelError for a file cairn would refuse."""
    return LanguageModel(path)
