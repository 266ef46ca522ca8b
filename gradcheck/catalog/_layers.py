"""Small, plain layers that the bug catalog breaks on purpose.

The catalog is the checker's own: it shows what the checker catches whatever the
subject, so it carries its own layers (2-D where that suffices, one attention head)
instead of importing a subject's. Each ``*_forward`` returns ``(y, cache)`` and each
``*_backward(dy, cache)`` the gradients of the inputs, in the cs231n protocol.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import erf

__all__ = [
    "attention_backward", "attention_forward", "batchnorm_backward", "batchnorm_forward",
    "conv1d_backward", "conv1d_forward", "cross_entropy_backward", "cross_entropy_forward",
    "embedding_backward", "embedding_forward", "gelu_forward", "layernorm_backward",
    "layernorm_forward", "linear_backward", "linear_forward", "maxpool_backward",
    "maxpool_forward", "sigmoid", "softmax", "tanh_backward", "tanh_forward",
]


def linear_forward(x: np.ndarray, W: np.ndarray, b: np.ndarray
                   ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``y = x W + b`` for ``x (N, Cin)``, ``W (Cin, Cout)``."""
    return x @ W + b, (x, W)


def linear_backward(dy: np.ndarray, cache: tuple[np.ndarray, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, W = cache
    return dy @ W.T, x.T @ dy, dy.sum(axis=0)


def softmax(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (shifted by the row maximum)."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class LNCache(NamedTuple):
    xhat: np.ndarray
    rstd: np.ndarray
    gamma: np.ndarray


def layernorm_forward(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5
                      ) -> tuple[np.ndarray, LNCache]:
    xc = x - x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xhat = xc * rstd
    return xhat * g + b, LNCache(xhat, rstd, g)


def layernorm_backward(dy: np.ndarray, c: LNCache
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gg = dy * c.gamma
    dx = c.rstd * (gg - gg.mean(axis=-1, keepdims=True)
                   - c.xhat * (gg * c.xhat).mean(axis=-1, keepdims=True))
    return dx, (dy * c.xhat).sum(axis=0), dy.sum(axis=0)


class ActCache(NamedTuple):
    x: np.ndarray
    aux: np.ndarray  # GELU: Phi(x); tanh: y


def gelu_forward(x: np.ndarray) -> tuple[np.ndarray, ActCache]:
    """Exact GELU ``x Phi(x)``."""
    cdf = 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
    return x * cdf, ActCache(x, cdf)


def tanh_forward(x: np.ndarray) -> tuple[np.ndarray, ActCache]:
    y = np.tanh(x)
    return y, ActCache(x, y)


def tanh_backward(dy: np.ndarray, c: ActCache) -> np.ndarray:
    return dy * (1.0 - c.aux * c.aux)


class AttnCache(NamedTuple):
    x: np.ndarray  # (T, C)
    Wq: np.ndarray
    Wk: np.ndarray
    Wv: np.ndarray
    Wo: np.ndarray
    q: np.ndarray  # (T, C)
    k: np.ndarray
    v: np.ndarray
    att: np.ndarray  # (T, T)
    ctx: np.ndarray  # (T, C)
    scale: float


def attention_forward(x: np.ndarray, Wq: np.ndarray, Wk: np.ndarray, Wv: np.ndarray,
                      Wo: np.ndarray) -> tuple[np.ndarray, AttnCache]:
    """Causal single-head self-attention of one sequence ``x (T, C)``, no biases."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q @ k.T) * scale
    s = np.where(np.triu(np.ones(s.shape, dtype=bool), k=1), -np.inf, s)
    att = softmax(s)
    ctx = att @ v
    return ctx @ Wo, AttnCache(x, Wq, Wk, Wv, Wo, q, k, v, att, ctx, scale)


def attention_backward(dy: np.ndarray, c: AttnCache, *, query_only: bool = False
                       ) -> tuple[np.ndarray, ...]:
    """Gradients of ``x, Wq, Wk, Wv, Wo``; ``query_only`` drops the key and value
    branches of ``dx`` (a classic bug)."""
    dctx = dy @ c.Wo.T
    datt = dctx @ c.v.T
    dv = c.att.T @ dctx
    ds = c.att * (datt - (datt * c.att).sum(axis=-1, keepdims=True)) * c.scale
    dq, dk = ds @ c.k, ds.T @ c.q
    dx = dq @ c.Wq.T
    if not query_only:
        dx = dx + dk @ c.Wk.T + dv @ c.Wv.T
    return dx, c.x.T @ dq, c.x.T @ dk, c.x.T @ dv, c.ctx.T @ dy


class EmbCache(NamedTuple):
    tokens: np.ndarray
    vocab: int


def embedding_forward(tokens: np.ndarray, E: np.ndarray, P: np.ndarray
                      ) -> tuple[np.ndarray, EmbCache]:
    """``x[b, t] = E[tokens[b, t]] + P[t]``."""
    return E[tokens] + P[: tokens.shape[1]], EmbCache(tokens, E.shape[0])


def embedding_backward(dx: np.ndarray, c: EmbCache) -> tuple[np.ndarray, np.ndarray]:
    dE = np.zeros((c.vocab, dx.shape[-1]), dtype=dx.dtype)
    np.add.at(dE, c.tokens.reshape(-1), dx.reshape(-1, dx.shape[-1]))
    return dE, dx.sum(axis=0)


def cross_entropy_forward(z: np.ndarray, targets: np.ndarray
                          ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """Mean over rows of ``-log softmax(z)[target]``."""
    p = softmax(z)
    rows = np.arange(targets.size)
    flat = p.reshape(-1, p.shape[-1])
    return float(-np.mean(np.log(flat[rows, targets.reshape(-1)]))), (p, targets)


def cross_entropy_backward(dl: float, cache: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    p, targets = cache
    d = p.reshape(-1, p.shape[-1]).copy()
    d[np.arange(targets.size), targets.reshape(-1)] -= 1.0
    return (d * (dl / targets.size)).reshape(p.shape)


class BNCache(NamedTuple):
    xhat: np.ndarray
    rstd: np.ndarray  # broadcastable to x
    gamma: np.ndarray  # broadcastable to x
    axes: tuple[int, ...]  # the axes normalised over (the batch, and the positions)


def batchnorm_forward(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5
                      ) -> tuple[np.ndarray, BNCache]:
    """Training-mode BatchNorm of ``x (N, C)`` or ``x (N, C, L)``; ``g, b (C,)``."""
    axes = (0,) if x.ndim == 2 else (0, 2)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1)
    xc = x - x.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * rstd
    gamma = g.reshape(shape)
    return xhat * gamma + b.reshape(shape), BNCache(xhat, rstd, gamma, axes)


def batchnorm_backward(dy: np.ndarray, c: BNCache, *, mean_term: bool = True,
                       var_term: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mean_term=False`` or ``var_term=False`` leave that term out (classic bugs)."""
    gg = dy * c.gamma
    dx = gg
    if mean_term:
        dx = dx - gg.mean(axis=c.axes, keepdims=True)
    if var_term:
        dx = dx - c.xhat * (gg * c.xhat).mean(axis=c.axes, keepdims=True)
    return c.rstd * dx, (dy * c.xhat).sum(axis=c.axes), dy.sum(axis=c.axes)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, without overflow for large ``|x|``."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def conv1d_forward(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray,
                                                                           np.ndarray]]:
    """Valid cross-correlation of each row of ``x (N, L)`` with ``w (K,)``:
    ``y[n, i] = sum_k x[n, i + k] w[k]``, ``y (N, L - K + 1)``."""
    k = w.shape[0]
    cols = np.stack([x[:, j:j + x.shape[1] - k + 1] for j in range(k)], axis=-1)
    return cols @ w, (x, w)


def conv1d_backward(dy: np.ndarray, cache: tuple[np.ndarray, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
    x, w = cache
    k, n_out = w.shape[0], dy.shape[1]
    dx = np.zeros_like(x)
    dw = np.zeros_like(w)
    for j in range(k):
        dx[:, j:j + n_out] += dy * w[j]
        dw[j] = np.sum(dy * x[:, j:j + n_out])
    return dx, dw


def maxpool_forward(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Max over non-overlapping pairs along the last axis of ``x (N, 2 L)``."""
    pairs = x.reshape(x.shape[0], -1, 2)
    arg = pairs.argmax(axis=-1)
    return np.take_along_axis(pairs, arg[..., None], axis=-1)[..., 0], arg


def maxpool_backward(dy: np.ndarray, arg: np.ndarray) -> np.ndarray:
    dpairs = np.zeros((*dy.shape, 2), dtype=dy.dtype)
    np.put_along_axis(dpairs, arg[..., None], dy[..., None], axis=-1)
    return dpairs.reshape(dy.shape[0], -1)
