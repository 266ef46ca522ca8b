"""Multi-head self-attention with an optional causal mask.

Shapes: ``x (B, T, C)``; ``H`` heads of width ``D = C / H``; ``Wq, Wk, Wv, Wo (C, C)``;
``bq, bk, bv, bo (C,)``.
"""

from __future__ import annotations

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
    q_cache: LinearCache  # x, Wq
    k_cache: LinearCache  # x, Wk
    v_cache: LinearCache  # x, Wv
    o_cache: LinearCache  # context (B, T, C), Wo
    q: np.ndarray  # (B, H, T, D)
    k: np.ndarray  # (B, H, T, D)
    v: np.ndarray  # (B, H, T, D)
    att: np.ndarray  # (B, H, T, T) attention probabilities
    scale: float  # 1 / sqrt(D)


def _split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    b, t, c = x.shape
    return x.reshape(b, t, n_heads, c // n_heads).transpose(0, 2, 1, 3)


def _merge_heads(x: np.ndarray) -> np.ndarray:
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


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
    fully masked).
    """
    qf, q_cache = linear_forward(x, Wq, bq)
    kf, k_cache = linear_forward(x, Wk, bk)
    vf, v_cache = linear_forward(x, Wv, bv)
    q = _split_heads(qf, n_heads)
    k = _split_heads(kf, n_heads)
    v = _split_heads(vf, n_heads)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(0, 1, 3, 2)
    scores *= scale
    if causal:
        t = x.shape[1]
        np.copyto(scores, -np.inf, where=np.triu(np.ones((t, t), dtype=bool), k=1))
    att = softmax_forward(scores)
    ctx = _merge_heads(att @ v)
    y, o_cache = linear_forward(ctx, Wo, bo)
    return y, AttentionCache(q_cache, k_cache, v_cache, o_cache, q, k, v, att, scale)


def attention_backward(
    dy: np.ndarray, cache: AttentionCache
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Gradients of :func:`attention_forward`.

    Returns
    -------
    dx : ndarray, shape (B, T, C)
        The sum of the query, key and value branches.
    grads : dict
        ``Wq, bq, Wk, bk, Wv, bv, Wo, bo``.
    """
    q_cache, k_cache, v_cache, o_cache, q, k, v, att, scale = cache
    n_heads = q.shape[1]
    # y = ctx Wo + bo
    dctx, dWo, dbo = linear_backward(dy, o_cache)
    # ctx = merge(att v)
    dctx_h = _split_heads(dctx, n_heads)
    datt = dctx_h @ v.transpose(0, 1, 3, 2)
    dv = att.transpose(0, 1, 3, 2) @ dctx_h
    # att = softmax(scores); masked entries have att == 0, so their gradient is 0
    dscores = softmax_backward(datt, att)
    # scores = q k^T * scale
    dscores *= scale
    dq = dscores @ k
    dk = dscores.transpose(0, 1, 3, 2) @ q
    # q, k, v = x Wq + bq, x Wk + bk, x Wv + bv: the input gradient sums three branches
    dx_q, dWq, dbq = linear_backward(_merge_heads(dq), q_cache)
    dx_k, dWk, dbk = linear_backward(_merge_heads(dk), k_cache)
    dx_v, dWv, dbv = linear_backward(_merge_heads(dv), v_cache)
    dx = dx_q
    dx += dx_k
    dx += dx_v
    grads = {"Wq": dWq, "bq": dbq, "Wk": dWk, "bk": dbk, "Wv": dWv, "bv": dbv,
             "Wo": dWo, "bo": dbo}
    return dx, grads
