"""Example (a): a functional NumPy layer set and a tiny language model built from it.

Every layer is a ``*_forward(...) -> (y, cache)`` / ``*_backward(dy, cache) -> grads``
pair; ``TinyLM`` chains them (embedding, one pre-norm block with single-head causal
attention and a tanh-GELU feed-forward, a head, cross-entropy). ``SUBJECT`` declares
them for gradcheck; ``BROKEN`` is the same code with an attention backward "simplified"
to an identity pass-through, a failure from the source projects::

    gradcheck report --subject examples.numpy_layers:SUBJECT
    gradcheck report --subject examples.numpy_layers:BROKEN     # FAIL, names attention
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradcheck import LayerCase, Subject

C_TANH = math.sqrt(2.0 / math.pi)


def linear_forward(x, W, b):
    return x @ W + b, (x, W)


def linear_backward(dy, cache):
    x, W = cache
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return dy @ W.T, x2.T @ dy2, dy2.sum(axis=0)


def layernorm_forward(x, g, b, eps=1e-5):
    xc = x - x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xhat = xc * rstd
    return xhat * g + b, (xhat, rstd, g)


def layernorm_backward(dy, cache):
    xhat, rstd, g = cache
    dxhat = dy * g
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    c = xhat.shape[-1]
    return dx, (dy * xhat).reshape(-1, c).sum(0), dy.reshape(-1, c).sum(0)


def gelu_forward(x):
    t = np.tanh(C_TANH * (x + 0.044715 * x * x * x))
    return 0.5 * x * (1 + t), (x, t)


def gelu_backward(dy, cache):
    x, t = cache
    du = C_TANH * (1 + 3 * 0.044715 * x * x)
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du)


def attention_forward(x, Wq, Wk, Wv, Wo):
    """Causal single-head self-attention, ``x (B, T, C)``."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scale = 1.0 / math.sqrt(x.shape[-1])
    s = q @ k.transpose(0, 2, 1) * scale
    s = np.where(np.triu(np.ones(s.shape[1:], dtype=bool), 1), -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    ctx = a @ v
    return ctx @ Wo, (x, Wq, Wk, Wv, Wo, q, k, v, a, ctx, scale)


def attention_backward(dy, cache):
    x, Wq, Wk, Wv, Wo, q, k, v, a, ctx, scale = cache
    c = x.shape[-1]
    dctx = dy @ Wo.T
    dWo = ctx.reshape(-1, c).T @ dy.reshape(-1, c)
    da = dctx @ v.transpose(0, 2, 1)
    dv = a.transpose(0, 2, 1) @ dctx
    ds = a * (da - (da * a).sum(-1, keepdims=True)) * scale
    dq, dk = ds @ k, ds.transpose(0, 2, 1) @ q
    x2 = x.reshape(-1, c)
    dx = dq @ Wq.T + dk @ Wk.T + dv @ Wv.T
    return (dx, x2.T @ dq.reshape(-1, c), x2.T @ dk.reshape(-1, c),
            x2.T @ dv.reshape(-1, c), dWo)


def attention_backward_simplified(dy, cache):
    """The failure of the source projects: an "approximation" that passes dy through."""
    x, Wq, Wk, Wv, Wo = cache[:5]
    return dy, np.zeros_like(Wq), np.zeros_like(Wk), np.zeros_like(Wv), np.zeros_like(Wo)


def ffn_forward(x, W1, b1, W2, b2):
    h, c1 = linear_forward(x, W1, b1)
    a, c2 = gelu_forward(h)
    y, c3 = linear_forward(a, W2, b2)
    return y, (c1, c2, c3)


def ffn_backward(dy, cache):
    c1, c2, c3 = cache
    da, dW2, db2 = linear_backward(dy, c3)
    dh = gelu_backward(da, c2)
    dx, dW1, db1 = linear_backward(dh, c1)
    return dx, dW1, db1, dW2, db2


def cross_entropy(logits, targets):
    """Mean cross-entropy and its gradient (the cs231n style: loss, dlogits)."""
    z = logits - logits.max(-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(-1, keepdims=True)
    n = targets.size
    flat = p.reshape(-1, p.shape[-1])
    loss = -np.log(flat[np.arange(n), targets.reshape(-1)]).mean()
    d = flat.copy()
    d[np.arange(n), targets.reshape(-1)] -= 1
    return float(loss), (d / n).reshape(p.shape)


class TinyLM:
    """Embedding, one pre-norm block, head, cross-entropy; every backward by hand."""

    def __init__(self, dtype: str = "float64", vocab: int = 11, c: int = 8, f: int = 16,
                 seed: int = 0, attention_bwd: Any = attention_backward) -> None:
        rng = np.random.default_rng(seed)
        dt = np.dtype(dtype)

        def w(*shape: int, s: float = 0.4) -> np.ndarray:
            return (s * rng.standard_normal(shape)).astype(dt)

        self.params = {"tok": w(vocab, c, s=1.0), "pos": w(8, c, s=0.1),
                       "ln1.g": (1 + w(c, s=0.1)), "ln1.b": w(c, s=0.1),
                       "Wq": w(c, c), "Wk": w(c, c), "Wv": w(c, c), "Wo": w(c, c),
                       "ln2.g": (1 + w(c, s=0.1)), "ln2.b": w(c, s=0.1),
                       "W1": w(c, f), "b1": w(f, s=0.1), "W2": w(f, c), "b2": w(c, s=0.1),
                       "head.W": w(c, vocab), "head.b": w(vocab, s=0.1)}
        self.attention_bwd = attention_bwd

    def _forward(self, tokens: np.ndarray) -> tuple[np.ndarray, tuple[Any, ...]]:
        p = self.params
        x = p["tok"][tokens] + p["pos"][: tokens.shape[1]]
        u, c1 = layernorm_forward(x, p["ln1.g"], p["ln1.b"])
        a, c2 = attention_forward(u, p["Wq"], p["Wk"], p["Wv"], p["Wo"])
        h = x + a
        w_, c3 = layernorm_forward(h, p["ln2.g"], p["ln2.b"])
        f, c4 = ffn_forward(w_, p["W1"], p["b1"], p["W2"], p["b2"])
        y = h + f
        logits, c5 = linear_forward(y, p["head.W"], p["head.b"])
        return logits, (c1, c2, c3, c4, c5)

    def loss(self, tokens: np.ndarray, targets: np.ndarray) -> float:
        return cross_entropy(self._forward(tokens)[0], targets)[0]

    def loss_and_grads(self, tokens: np.ndarray, targets: np.ndarray
                       ) -> tuple[float, dict[str, np.ndarray]]:
        logits, (c1, c2, c3, c4, c5) = self._forward(tokens)
        loss, d = cross_entropy(logits, targets)
        g: dict[str, np.ndarray] = {}
        dy, g["head.W"], g["head.b"] = linear_backward(d, c5)   # logits = y W + b
        dw, g["W1"], g["b1"], g["W2"], g["b2"] = ffn_backward(dy, c4)   # f = FFN(w)
        dh_ln, g["ln2.g"], g["ln2.b"] = layernorm_backward(dw, c3)   # w = LN2(h)
        dh = dy + dh_ln                                              # y = h + f
        du, g["Wq"], g["Wk"], g["Wv"], g["Wo"] = self.attention_bwd(dh, c2)   # a = Attn(u)
        dx_ln, g["ln1.g"], g["ln1.b"] = layernorm_backward(du, c1)   # u = LN1(x)
        dx = dh + dx_ln                                              # h = x + a
        g["tok"] = np.zeros_like(self.params["tok"])
        np.add.at(g["tok"], tokens.reshape(-1), dx.reshape(-1, dx.shape[-1]))
        g["pos"] = np.zeros_like(self.params["pos"])
        g["pos"][: tokens.shape[1]] = dx.sum(axis=0)
        return loss, {k: g[k].astype(self.params[k].dtype) for k in self.params}


# -- the subject ----------------------------------------------------------------------------------
def _x(rng, dt, *shape, s=1.0):
    return (s * rng.standard_normal(shape)).astype(dt)


def _layers(attention_bwd: Any) -> list[LayerCase]:
    return [
        LayerCase("linear", lambda r, d: [_x(r, d, 2, 3, 4), _x(r, d, 4, 5), _x(r, d, 5)],
                  linear_forward, linear_backward),
        LayerCase("layernorm", lambda r, d: [_x(r, d, 2, 3, 6), 1 + _x(r, d, 6, s=0.1),
                                             _x(r, d, 6, s=0.1)],
                  layernorm_forward, layernorm_backward),
        LayerCase("gelu_tanh", lambda r, d: [_x(r, d, 3, 5)], gelu_forward,
                  lambda dy, c: (gelu_backward(dy, c),)),
        LayerCase("attention", lambda r, d: [_x(r, d, 2, 4, 6)] + [_x(r, d, 6, 6, s=0.5)
                                                                   for _ in range(4)],
                  attention_forward, attention_bwd),
        LayerCase("feedforward", lambda r, d: [_x(r, d, 2, 3, 4), _x(r, d, 4, 6, s=0.5),
                                               _x(r, d, 6, s=0.1), _x(r, d, 6, 4, s=0.5),
                                               _x(r, d, 4, s=0.1)],
                  ffn_forward, ffn_backward),
    ]


def _batch(model: TinyLM, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(0, 11, (2, 5)), rng.integers(0, 11, (2, 5))


SUBJECT = Subject(name="numpy layers (example a)", layers=_layers(attention_backward),
                  model=lambda dtype: TinyLM(dtype), batch=_batch)
BROKEN = Subject(name="numpy layers, attention backward simplified (example a, broken)",
                 layers=_layers(attention_backward_simplified),
                 model=lambda dtype: TinyLM(dtype, attention_bwd=attention_backward_simplified),
                 batch=_batch)
