"""Multi-head self-attention with an optional causal mask.

Shapes: ``x (B, T, C)``; ``H`` heads of width ``D = C / H``; ``Wq, Wk, Wv, Wo (C, C)``;
``bq, bk, bv, bo (C,)``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from .linear import LinearCache, linear_backward, linear_forward

__all__ = [
    "AttentionCache",
    "attention_backward",
    "attention_forward",
    "softmax_backward",
    "softmax_forward",
]


def softmax_forward(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by the row maximum (stable for any finite s).

    Parameters
    ----------
    s : ndarray, shape (..., N)

    Returns
    -------
    p : ndarray, shape (..., N)

    Raises
    ------
    ValueError
        If a row is entirely ``-inf`` (every position masked).
    """
    top = s.max(axis=-1, keepdims=True)
    if np.isneginf(top).any():
        raise ValueError(
            "softmax: a row has every position masked (all -inf); its probabilities are "
            "undefined"
        )
    p = s - top
    np.exp(p, out=p)
    p /= p.sum(axis=-1, keepdims=True)
    return p


def softmax_backward(dp: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``ds = p * (dp - sum(dp * p))`` over the last axis."""
    ds = dp - np.sum(dp * p, axis=-1, keepdims=True)
    ds *= p
    return ds


class AttentionCache(NamedTuple):
    qkv_cache: LinearCache  # x (B, T, C), [Wq | Wk | Wv] (C, 3C): one fused projection
    o_cache: LinearCache  # context (B, T, C), Wo
    q: np.ndarray  # (B, H, T, D)
    k: np.ndarray  # (B, H, T, D)
    v: np.ndarray  # (B, H, T, D)
    att: np.ndarray  # (B, H, T, T) attention probabilities
    scale: float  # 1 / sqrt(D)


def _split_qkv(qkv: np.ndarray, n_heads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(B, T, 3C)`` -> q, k, v of shape ``(B, H, T, D)`` each (contiguous copies)."""
    b, t, c3 = qkv.shape
    d = c3 // (3 * n_heads)
    heads = qkv.reshape(b, t, 3, n_heads, d).transpose(2, 0, 3, 1, 4)
    return (np.ascontiguousarray(heads[0]), np.ascontiguousarray(heads[1]),
            np.ascontiguousarray(heads[2]))


def _merge_heads(x: np.ndarray) -> np.ndarray:
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


@functools.lru_cache(maxsize=64)
def _causal_mask(t: int) -> np.ndarray:
    """``(t, t)``, True above the diagonal; one read-only array per length (a full
    gradient check runs the forward thousands of times at one length)."""
    mask = np.triu(np.ones((t, t), dtype=bool), k=1)
    mask.setflags(write=False)
    return mask


def attention_forward(
    x: np.ndarray,
    Wq: np.ndarray,
    bq: np.ndarray,
    Wk: np.ndarray,
    bk: np.ndarray,
    Wv: np.ndarray,
    bv: np.ndarray,
    Wo: np.ndarray,
    bo: np.ndarray,
    *,
    n_heads: int,
    causal: bool,
) -> tuple[np.ndarray, AttentionCache]:
    """Scaled dot-product self-attention over ``n_heads`` heads.

    Returns
    -------
    y : ndarray, shape (B, T, C)
    cache : AttentionCache

    Notes
    -----
    ``att = softmax(q k^T / sqrt(D) + mask)``, ``y = merge(att v) Wo + bo``; the causal
    mask is ``-inf`` above the diagonal (the diagonal is always visible, so no row is
    fully masked). The three input projections run as one GEMM with ``[Wq | Wk | Wv]``.
    """
    W = np.concatenate((Wq, Wk, Wv), axis=1)
    bias = np.concatenate((bq, bk, bv))
    qkv, qkv_cache = linear_forward(x, W, bias)
    q, k, v = _split_qkv(qkv, n_heads)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(0, 1, 3, 2)
    scores *= scale
    if causal:
        np.copyto(scores, -np.inf, where=_causal_mask(x.shape[1]))
    att = softmax_forward(scores)
    ctx = _merge_heads(att @ v)
    y, o_cache = linear_forward(ctx, Wo, bo)
    return y, AttentionCache(qkv_cache, o_cache, q, k, v, att, scale)


def attention_backward(
    dy: np.ndarray, cache: AttentionCache
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Gradients of :func:`attention_forward`.

    Returns
    -------
    dx : ndarray, shape (B, T, C)
        The sum of the query, key and value branches (one GEMM with ``[Wq | Wk | Wv]``).
    grads : dict
        ``Wq, bq, Wk, bk, Wv, bv, Wo, bo``.
    """
    qkv_cache, o_cache, q, k, v, att, scale = cache
    b, n_heads, t, d = q.shape
    c = n_heads * d
    # y = ctx Wo + bo
    dctx, dWo, dbo = linear_backward(dy, o_cache)
    # ctx = merge(att v)
    dctx_h = dctx.reshape(b, t, n_heads, d).transpose(0, 2, 1, 3)
    datt = dctx_h @ v.transpose(0, 1, 3, 2)
    dqkv = np.empty((3, b, n_heads, t, d), dtype=dctx.dtype)
    np.matmul(att.transpose(0, 1, 3, 2), dctx_h, out=dqkv[2])
    # att = softmax(scores); masked entries have att == 0, so their gradient is 0
    dscores = softmax_backward(datt, att)
    # scores = q k^T * scale
    dscores *= scale
    np.matmul(dscores, k, out=dqkv[0])
    np.matmul(dscores.transpose(0, 1, 3, 2), q, out=dqkv[1])
    # [q | k | v] = x [Wq | Wk | Wv] + [bq | bk | bv]: dx sums the three branches
    dqkv_flat = dqkv.transpose(1, 3, 0, 2, 4).reshape(b, t, 3 * c)
    dx, dW, dbias = linear_backward(dqkv_flat, qkv_cache)
    grads = {"Wq": dW[:, :c].copy(), "bq": dbias[:c].copy(),
             "Wk": dW[:, c:2 * c].copy(), "bk": dbias[c:2 * c].copy(),
             "Wv": dW[:, 2 * c:].copy(), "bv": dbias[2 * c:].copy(),
             "Wo": dWo, "bo": dbo}
    return dx, grads
