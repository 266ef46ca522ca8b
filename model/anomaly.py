"""Find the first operation that produced a non-finite value.

The model checks each stage's output (embedding, every block, final LayerNorm, head)
with one ``isfinite`` pass; only when one fails does it replay the forward here,
operation by operation, to name where NaN/Inf first appeared, like PyTorch's anomaly
detection but at no cost on the normal path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .attention import attention_forward
from .block import BLOCK_PARAMS
from .embedding import embedding_forward
from .feedforward import feedforward_forward
from .layernorm import layernorm_forward
from .linear import linear_forward

if TYPE_CHECKING:
    from .transformer import Transformer

__all__ = ["NonFiniteValueError", "all_finite", "locate_forward"]


class NonFiniteValueError(FloatingPointError):
    """NaN/Inf appeared; ``layer`` and ``op`` say where it appeared first.

    Attributes
    ----------
    layer : str
        ``"embedding"``, ``"blocks.1"``, ``"ln_f"``, ``"head"``, ``"loss"``, or a
        parameter name.
    op : str
        The operation, for example ``"attention softmax"`` or ``"parameter"``.
    where : str
        ``"forward"`` or ``"backward"``.
    """

    def __init__(self, layer: str, op: str, where: str, detail: str = "") -> None:
        self.layer, self.op, self.where = layer, op, where
        msg = f"non-finite value (NaN/Inf) in the {where} pass: first at {layer}, {op}"
        super().__init__(msg + (f" ({detail})" if detail else ""))


def all_finite(*arrays: Any) -> bool:
    """Whether every array is free of NaN and Inf."""
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _count(a: np.ndarray) -> str:
    bad = int(a.size - np.count_nonzero(np.isfinite(a)))
    return f"{bad} of {a.size} values"


def _check(layer: str, steps: Iterable[tuple[str, np.ndarray]]) -> None:
    for op, value in steps:
        if not all_finite(value):
            raise NonFiniteValueError(layer, op, "forward", _count(np.asarray(value)))


def _check_params(model: Transformer, names: Iterable[str]) -> None:
    for name in names:
        if not all_finite(model.params[name]):
            raise NonFiniteValueError(name, "parameter", "forward", _count(model.params[name]))


def locate_forward(model: Transformer, tokens: np.ndarray) -> NonFiniteValueError:
    """Replay the forward operation by operation; return the error naming the first NaN."""
    cfg, p = model.cfg, model.params
    with np.errstate(all="ignore"):
        _check_params(model, ("tok_emb", "pos_emb"))
        x, _ = embedding_forward(tokens, p["tok_emb"], p["pos_emb"])
        _check("embedding", [("token + position lookup", x)])
        for i in range(cfg.n_layers):
            layer = f"blocks.{i}"
            _check_params(model, (f"{layer}.{n}" for n in BLOCK_PARAMS))
            bp = model._block_params(p, i)

            def attn(u: np.ndarray, layer: str = layer, bp: dict[str, Any] = bp) -> np.ndarray:
                y, c = attention_forward(
                    u, bp["attn.Wq"], bp["attn.bq"], bp["attn.Wk"], bp["attn.bk"],
                    bp["attn.Wv"], bp["attn.bv"], bp["attn.Wo"], bp["attn.bo"],
                    n_heads=cfg.n_heads, causal=cfg.causal)
                _check(layer, [("attention query projection", c.q),
                               ("attention key projection", c.k),
                               ("attention value projection", c.v),
                               ("attention softmax", c.att),
                               ("attention context (att @ v)", c.o_cache.x),
                               ("attention output projection", y)])
                return y

            def ffn(u: np.ndarray, layer: str = layer, bp: dict[str, Any] = bp) -> np.ndarray:
                y, c = feedforward_forward(u, bp["ffn.W1"], bp["ffn.b1"], bp["ffn.W2"],
                                           bp["ffn.b2"], activation=cfg.activation)
                _check(layer, [("feed-forward first linear", c.act.x),
                               (f"feed-forward {cfg.activation}", c.fc2.x),
                               ("feed-forward second linear", y)])
                return y

            def ln(u: np.ndarray, which: str, layer: str = layer,
                   bp: dict[str, Any] = bp) -> np.ndarray:
                y, _ = layernorm_forward(u, bp[f"{which}.g"], bp[f"{which}.b"])
                _check(layer, [(f"LayerNorm {which}", y)])
                return y

            if cfg.norm == "post":
                h = x + attn(x)
                _check(layer, [("attention residual add", h)])
                h = ln(h, "ln1")
                y = h + ffn(h)
                _check(layer, [("feed-forward residual add", y)])
                x = ln(y, "ln2")
            else:
                h = x + attn(ln(x, "ln1"))
                _check(layer, [("attention residual add", h)])
                x = h + ffn(ln(h, "ln2"))
                _check(layer, [("feed-forward residual add", x)])
        if cfg.norm == "pre":
            _check_params(model, ("ln_f.g", "ln_f.b"))
            x, _ = layernorm_forward(x, p["ln_f.g"], p["ln_f.b"])
            _check("ln_f", [("final LayerNorm", x)])
        if cfg.loss != "embedding_mse":
            _check_params(model, ("head.W", "head.b"))
            x, _ = linear_forward(x, p["head.W"], p["head.b"])
            _check("head", [("output projection", x)])
    return NonFiniteValueError("model", "unknown operation", "forward")
