"""Encoder block, post-norm or pre-norm, with explicit residual fan-out.

post-norm: ``h = LN1(x + Attn(x)); y = LN2(h + FFN(h))``
pre-norm:  ``h = x + Attn(LN1(x)); y = h + FFN(LN2(h))``

Shapes: ``x, y (B, T, C)``. ``p`` maps the block's parameter names (``ln1.g``,
``attn.Wq``, ``ffn.W1``...) to arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .attention import AttentionCache, attention_backward, attention_forward
from .feedforward import FeedForwardCache, feedforward_backward, feedforward_forward
from .layernorm import LayerNormCache, layernorm_backward, layernorm_forward

__all__ = ["BLOCK_PARAMS", "BlockCache", "block_backward", "block_forward"]

BLOCK_PARAMS = (
    "ln1.g", "ln1.b",
    "attn.Wq", "attn.bq", "attn.Wk", "attn.bk", "attn.Wv", "attn.bv", "attn.Wo", "attn.bo",
    "ln2.g", "ln2.b",
    "ffn.W1", "ffn.b1", "ffn.W2", "ffn.b2",
)


class BlockCache(NamedTuple):
    norm: str  # "pre" or "post"
    ln1: LayerNormCache
    attn: AttentionCache
    ln2: LayerNormCache
    ffn: FeedForwardCache


def block_forward(
    x: np.ndarray,
    p: dict[str, np.ndarray],
    *,
    n_heads: int,
    causal: bool,
    activation: str,
    norm: str,
) -> tuple[np.ndarray, BlockCache]:
    """One encoder block.

    Returns
    -------
    y : ndarray, shape (B, T, C)
    cache : BlockCache
    """

    def attn(u: np.ndarray) -> tuple[np.ndarray, AttentionCache]:
        return attention_forward(
            u, p["attn.Wq"], p["attn.bq"], p["attn.Wk"], p["attn.bk"], p["attn.Wv"],
            p["attn.bv"], p["attn.Wo"], p["attn.bo"], n_heads=n_heads, causal=causal,
        )

    def ffn(u: np.ndarray) -> tuple[np.ndarray, FeedForwardCache]:
        return feedforward_forward(
            u, p["ffn.W1"], p["ffn.b1"], p["ffn.W2"], p["ffn.b2"], activation=activation
        )

    if norm == "post":
        a, attn_c = attn(x)
        h, ln1_c = layernorm_forward(x + a, p["ln1.g"], p["ln1.b"])
        f, ffn_c = ffn(h)
        y, ln2_c = layernorm_forward(h + f, p["ln2.g"], p["ln2.b"])
    else:
        u, ln1_c = layernorm_forward(x, p["ln1.g"], p["ln1.b"])
        a, attn_c = attn(u)
        h = x + a
        w, ln2_c = layernorm_forward(h, p["ln2.g"], p["ln2.b"])
        f, ffn_c = ffn(w)
        y = h + f
    return y, BlockCache(norm, ln1_c, attn_c, ln2_c, ffn_c)


def block_backward(
    dy: np.ndarray, cache: BlockCache
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Gradients of :func:`block_forward`, the forward read in reverse.

    Returns
    -------
    dx : ndarray, shape (B, T, C)
    grads : dict
        Keys of :data:`BLOCK_PARAMS`.
    """
    norm, ln1_c, attn_c, ln2_c, ffn_c = cache
    g: dict[str, np.ndarray] = {}
    if norm == "post":
        # y = LN2(h + f)
        ds, g["ln2.g"], g["ln2.b"] = layernorm_backward(dy, ln2_c)
        # s = h + f: the residual sends ds to both h and f
        dh_ffn, gf = feedforward_backward(ds, ffn_c)
        dh = ds + dh_ffn
        # h = LN1(x + a)
        dr, g["ln1.g"], g["ln1.b"] = layernorm_backward(dh, ln1_c)
        # r = x + a: the residual sends dr to both x and a
        dx_attn, ga = attention_backward(dr, attn_c)
        dx = dr + dx_attn
    else:
        # y = h + f, f = FFN(w), w = LN2(h)
        dw, gf = feedforward_backward(dy, ffn_c)
        dh_ln, g["ln2.g"], g["ln2.b"] = layernorm_backward(dw, ln2_c)
        dh = dy + dh_ln
        # h = x + a, a = Attn(u), u = LN1(x)
        du, ga = attention_backward(dh, attn_c)
        dx_ln, g["ln1.g"], g["ln1.b"] = layernorm_backward(du, ln1_c)
        dx = dh + dx_ln
    g.update({f"attn.{k}": v for k, v in ga.items()})
    g.update({f"ffn.{k}": v for k, v in gf.items()})
    return dx, g
