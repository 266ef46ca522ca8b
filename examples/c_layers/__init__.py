"""Example (c): LayerNorm, multi-head attention and the feed-forward in C, checked
through ctypes, as the source projects' C and C++ engines would be.

``layers.c`` holds the forward and backward of each layer; :func:`library` compiles it
with the system C compiler (the one ``sysconfig`` names, as Python's own extensions
use) into a cache folder, once per source and compiler. The wrappers below give each
layer the functional protocol, and ``CModel`` chains them into a small language model
(NumPy embedding and head around a pre-norm block of C layers). ``BROKEN`` is the
failure of the source projects' partial backprop: gradients reach only the output
projection and the embedding::

    gradcheck report --subject examples.c_layers:SUBJECT
    gradcheck report --subject examples.c_layers:BROKEN     # FAIL: no gradient flows

The C code is double precision: the cases are checked in float64.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess  # noqa: S404 - runs the system C compiler with fixed arguments
import sysconfig
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from gradcheck import LayerCase, Subject

SOURCE = Path(__file__).with_name("layers.c")


class CompilerMissing(RuntimeError):
    """No C compiler here: the C example cannot be built."""


def compiler() -> list[str]:
    """The C compiler ``sysconfig`` names (``CC``), as an argument list."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        raise CompilerMissing(f"no C compiler: sysconfig names {cc[:1]}, not on PATH")
    return cc


@cache
def library() -> ctypes.CDLL:
    """Compile ``layers.c`` (once per source and compiler) and load it."""
    cc = compiler()
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join(cc).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"gradcheck-c-example-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / f"layers-{key}.so"
    if not target.exists():
        tmp = folder / f".layers-{key}-{os.getpid()}.so"
        proc = subprocess.run([*cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(SOURCE),  # noqa: S603
                               "-lm"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"compiling {SOURCE.name} failed:\n{proc.stderr}")
        os.replace(tmp, target)
    return ctypes.CDLL(str(target))


def _p(a: np.ndarray) -> Any:
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _c(a: Any) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


# -- the layers, through ctypes ---------------------------------------------------------------
def layernorm_forward(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Any]:
    x, g, b = _c(x), _c(g), _c(b)
    n, c = x.reshape(-1, x.shape[-1]).shape
    y, xhat, rstd = np.empty_like(x), np.empty_like(x), np.empty(n)
    library().layernorm_forward(_p(x), _p(g), _p(b), _p(y), _p(xhat), _p(rstd), n, c)
    return y, (xhat, rstd, g)


def layernorm_backward(dy: np.ndarray, cache_: Any) -> tuple[np.ndarray, ...]:
    xhat, rstd, g = cache_
    dy = _c(dy)
    n, c = dy.reshape(-1, dy.shape[-1]).shape
    dx, dg, db = np.empty_like(dy), np.empty(c), np.empty(c)
    library().layernorm_backward(_p(dy), _p(xhat), _p(rstd), _p(g), _p(dx), _p(dg), _p(db),
                                 n, c)
    return dx, dg, db


def ffn_forward(x: np.ndarray, W1: np.ndarray, b1: np.ndarray, W2: np.ndarray,
                b2: np.ndarray) -> tuple[np.ndarray, Any]:
    x, W1, b1, W2, b2 = map(_c, (x, W1, b1, W2, b2))
    c, f = W1.shape
    n = x.size // c
    z, a, y = np.empty((n, f)), np.empty((n, f)), np.empty_like(x)
    library().ffn_forward(_p(x), _p(W1), _p(b1), _p(W2), _p(b2), _p(z), _p(a), _p(y), n, c, f)
    return y, (x, z, a, W1, W2)


def ffn_backward(dy: np.ndarray, cache_: Any) -> tuple[np.ndarray, ...]:
    x, z, a, W1, W2 = cache_
    dy = _c(dy)
    c, f = W1.shape
    n = x.size // c
    dx, dW1, db1 = np.empty_like(x), np.empty_like(W1), np.empty(f)
    dW2, db2, dz = np.empty_like(W2), np.empty(c), np.empty((n, f))
    library().ffn_backward(_p(dy), _p(x), _p(z), _p(a), _p(W1), _p(W2), _p(dx), _p(dW1),
                           _p(db1), _p(dW2), _p(db2), _p(dz), n, c, f)
    return dx, dW1, db1, dW2, db2


def mha(n_heads: int) -> tuple[Any, Any]:
    """The forward and backward of causal attention with ``n_heads`` heads, ``x (B, T, C)``."""

    def forward(x: np.ndarray, Wq: np.ndarray, Wk: np.ndarray, Wv: np.ndarray,
                Wo: np.ndarray) -> tuple[np.ndarray, Any]:
        x, Wq, Wk, Wv, Wo = map(_c, (x, Wq, Wk, Wv, Wo))
        b, t, c = x.shape
        q, k, v, ctx, y = (np.empty_like(x) for _ in range(5))
        att = np.empty((b, n_heads, t, t))
        library().mha_forward(_p(x), _p(Wq), _p(Wk), _p(Wv), _p(Wo), _p(q), _p(k), _p(v),
                              _p(att), _p(ctx), _p(y), b, t, c, n_heads)
        return y, (x, Wq, Wk, Wv, Wo, q, k, v, att, ctx)

    def backward(dy: np.ndarray, cache_: Any) -> tuple[np.ndarray, ...]:
        x, Wq, Wk, Wv, Wo, q, k, v, att, ctx = cache_
        dy = _c(dy)
        b, t, c = x.shape
        dx, dq, dk, dv, dctx, tmp = (np.empty_like(x) for _ in range(6))
        dWq, dWk, dWv, dWo = (np.empty_like(Wq) for _ in range(4))
        library().mha_backward(_p(dy), _p(x), _p(Wq), _p(Wk), _p(Wv), _p(Wo), _p(q), _p(k),
                               _p(v), _p(att), _p(ctx), _p(dx), _p(dWq), _p(dWk), _p(dWv),
                               _p(dWo), _p(dq), _p(dk), _p(dv), _p(dctx), _p(tmp), b, t, c,
                               n_heads)
        return dx, dWq, dWk, dWv, dWo

    return forward, backward


# -- a model of C layers -------------------------------------------------------------------------
class CModel:
    """Embedding (NumPy), a pre-norm block of C layers, head and cross-entropy (NumPy)."""

    def __init__(self, vocab: int = 11, c: int = 8, f: int = 16, heads: int = 2,
                 seed: int = 0, partial_backprop: bool = False) -> None:
        rng = np.random.default_rng(seed)
        n = rng.standard_normal
        self.params = {
            "tok": n((vocab, c)), "pos": 0.1 * n((8, c)),
            "ln1.g": 1 + 0.1 * n(c), "ln1.b": 0.1 * n(c),
            **{f"W{k}": n((c, c)) / np.sqrt(c) for k in "qkvo"},
            "ln2.g": 1 + 0.1 * n(c), "ln2.b": 0.1 * n(c),
            "W1": n((c, f)) / np.sqrt(c), "b1": 0.1 * n(f),
            "W2": n((f, c)) / np.sqrt(f), "b2": 0.1 * n(c),
            "head.W": n((c, vocab)) / np.sqrt(c), "head.b": np.zeros(vocab),
        }
        self.attn = mha(heads)
        self.partial_backprop = partial_backprop

    def _forward(self, tokens: np.ndarray) -> tuple[np.ndarray, tuple[Any, ...]]:
        p = self.params
        x = p["tok"][tokens] + p["pos"][: tokens.shape[1]]
        u, c1 = layernorm_forward(x, p["ln1.g"], p["ln1.b"])
        a, c2 = self.attn[0](u, p["Wq"], p["Wk"], p["Wv"], p["Wo"])
        h = x + a
        w, c3 = layernorm_forward(h, p["ln2.g"], p["ln2.b"])
        f, c4 = ffn_forward(w, p["W1"], p["b1"], p["W2"], p["b2"])
        y = h + f
        return y @ p["head.W"] + p["head.b"], (y, c1, c2, c3, c4)

    def loss(self, tokens: np.ndarray, targets: np.ndarray) -> float:
        return self._loss(self._forward(tokens)[0], targets)[0]

    @staticmethod
    def _loss(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
        z = np.exp(logits - logits.max(-1, keepdims=True))
        prob = (z / z.sum(-1, keepdims=True)).reshape(-1, logits.shape[-1])
        n = targets.size
        loss = float(-np.log(prob[np.arange(n), targets.reshape(-1)]).mean())
        prob[np.arange(n), targets.reshape(-1)] -= 1
        return loss, (prob / n).reshape(logits.shape)

    def loss_and_grads(self, tokens: np.ndarray, targets: np.ndarray
                       ) -> tuple[float, dict[str, np.ndarray]]:
        p = self.params
        logits, (y, c1, c2, c3, c4) = self._forward(tokens)
        loss, d = self._loss(logits, targets)
        c = y.shape[-1]
        g = {k: np.zeros_like(v) for k, v in p.items()}
        g["head.W"], g["head.b"] = y.reshape(-1, c).T @ d.reshape(-1, d.shape[-1]), \
            d.reshape(-1, d.shape[-1]).sum(0)
        dy = d @ p["head.W"].T
        if self.partial_backprop:  # the source projects: "only embedding and output projection"
            dx = dy
        else:
            dw, g["W1"], g["b1"], g["W2"], g["b2"] = ffn_backward(dy, c4)
            dh_ln, g["ln2.g"], g["ln2.b"] = layernorm_backward(dw, c3)
            dh = dy + dh_ln.reshape(dy.shape)
            du, g["Wq"], g["Wk"], g["Wv"], g["Wo"] = self.attn[1](dh, c2)
            dx_ln, g["ln1.g"], g["ln1.b"] = layernorm_backward(du, c1)
            dx = dh + dx_ln.reshape(dh.shape)
        np.add.at(g["tok"], tokens.reshape(-1), dx.reshape(-1, c))
        g["pos"][: tokens.shape[1]] = dx.sum(axis=0)
        return loss, g


# -- the subject ----------------------------------------------------------------------------------
def _x(r: np.random.Generator, d: Any, *shape: int, s: float = 1.0) -> np.ndarray:
    return (s * r.standard_normal(shape)).astype(d)


_MHA = mha(2)
LAYERS = [
    LayerCase("C layernorm", lambda r, d: [_x(r, d, 2, 3, 6), 1 + _x(r, d, 6, s=0.1),
                                           _x(r, d, 6, s=0.1)],
              layernorm_forward, layernorm_backward, dtypes=("float64",)),
    LayerCase("C multi-head attention", lambda r, d: [_x(r, d, 2, 4, 6)]
              + [_x(r, d, 6, 6, s=0.5) for _ in range(4)], _MHA[0], _MHA[1],
              dtypes=("float64",)),
    LayerCase("C feed-forward (ReLU)", lambda r, d: [_x(r, d, 2, 3, 4), _x(r, d, 4, 6, s=0.5),
                                                     _x(r, d, 6, s=0.1), _x(r, d, 6, 4, s=0.5),
                                                     _x(r, d, 4, s=0.1)],
              ffn_forward, ffn_backward, dtypes=("float64",)),
]


def _batch(model: CModel, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(0, 11, (2, 5)), rng.integers(0, 11, (2, 5))


def _models(partial: bool) -> Any:
    from gradcheck import ModelCase

    def cases(level: str, seed: int) -> list[ModelCase]:
        def build() -> tuple[Any, tuple[Any, ...]]:
            m = CModel(seed=seed, partial_backprop=partial)
            return m, _batch(m, np.random.default_rng(seed))

        return [ModelCase("C model [float64]" + (" (partial backprop)" if partial else ""),
                          build)]

    return cases


SUBJECT = Subject(name="C layers through ctypes (example c)", layers=LAYERS,
                  model_cases=_models(False))
BROKEN = Subject(name="C layers, gradients only to the head and the embedding "
                      "(example c, broken)", layers=LAYERS, model_cases=_models(True))
