"""Encoder block, post-norm or pre-norm, with explicit residual fan-out.

post-norm: ``h = LN1(x + Attn(x)); y = LN2(h + FFN(h))``
pre-norm:  ``h = x + Attn(LN1(x)); y = h + FFN(LN2(h))``

Shapes: ``x, y (B, T, C)``. ``p`` maps the block's parameter names (``ln1.g``,
``attn.Wq``, ``ffn.W1``...) to arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .attention import AttentionCache, attention_backward, attention_forward
from .feedforward import FeedForwardCache, feedforward_backward, feedforward_forward
from .layernorm import LayerNormCache, layernorm_backward, layernorm_forward

__all__ = ["BLOCK_PARAMS", "BlockCache", "Probe", "block_backward", "block_forward"]

#: ``probe(layer, operation, value)``: called with every intermediate of a forward, in
#: order, when given (the non-finite locator of :mod:`gradcheck_model.anomaly` raises at the first
#: NaN/Inf); never called on the normal path.
Probe = Callable[[str, str, np.ndarray], None]

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
    probe: Probe | None = None,
    name: str = "block",
) -> tuple[np.ndarray, BlockCache]:
    """One encoder block.

    ``probe`` (optional) sees every intermediate, labelled with ``name``.

    Returns
    -------
    y : ndarray, shape (B, T, C)
    cache : BlockCache
    """

    def look(op: str, value: np.ndarray) -> None:
        if probe is not None:
            probe(name, op, value)

    def attn(u: np.ndarray) -> tuple[np.ndarray, AttentionCache]:
        return _attention_part(u, p, n_heads, causal, look if probe is not None else None)

    def ffn(u: np.ndarray) -> tuple[np.ndarray, FeedForwardCache]:
        return _feedforward_part(u, p, activation, look if probe is not None else None)

    def ln(u: np.ndarray, which: str) -> tuple[np.ndarray, LayerNormCache]:
        y, c = layernorm_forward(u, p[f"{which}.g"], p[f"{which}.b"])
        look(f"LayerNorm {which}", y)
        return y, c

    if norm == "post":
        a, attn_c = attn(x)
        r = x + a
        look("attention residual add", r)
        h, ln1_c = ln(r, "ln1")
        f, ffn_c = ffn(h)
        s = h + f
        look("feed-forward residual add", s)
        y, ln2_c = ln(s, "ln2")
    else:
        u, ln1_c = ln(x, "ln1")
        a, attn_c = attn(u)
        h = x + a
        look("attention residual add", h)
        w, ln2_c = ln(h, "ln2")
        f, ffn_c = ffn(w)
        y = h + f
        look("feed-forward residual add", y)
    return y, BlockCache(norm, ln1_c, attn_c, ln2_c, ffn_c)


def _attention_part(u: np.ndarray, p: dict[str, np.ndarray], n_heads: int, causal: bool,
                    look: Callable[[str, np.ndarray], None] | None
                    ) -> tuple[np.ndarray, AttentionCache]:
    """The block's attention, its intermediates shown to ``look``."""
    y, c = attention_forward(
        u, p["attn.Wq"], p["attn.bq"], p["attn.Wk"], p["attn.bk"], p["attn.Wv"],
        p["attn.bv"], p["attn.Wo"], p["attn.bo"], n_heads=n_heads, causal=causal,
    )
    if look is not None:
        for op, v in (("attention query projection", c.q),
                      ("attention key projection", c.k),
                      ("attention value projection", c.v), ("attention softmax", c.att),
                      ("attention context (att @ v)", c.o_cache.x),
                      ("attention output projection", y)):
            look(op, v)
    return y, c


def _feedforward_part(u: np.ndarray, p: dict[str, np.ndarray], activation: str,
                      look: Callable[[str, np.ndarray], None] | None
                      ) -> tuple[np.ndarray, FeedForwardCache]:
    """The block's feed-forward, its intermediates shown to ``look``."""
    y, c = feedforward_forward(
        u, p["ffn.W1"], p["ffn.b1"], p["ffn.W2"], p["ffn.b2"], activation=activation
    )
    if look is not None:
        for op, v in (("feed-forward first linear", c.act.x),
                      (f"feed-forward {activation}", c.fc2.x),
                      ("feed-forward second linear", y)):
            look(op, v)
    return y, c


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
