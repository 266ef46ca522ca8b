"""The reference transformer rebuilt in PyTorch eager: the yardstick for its speed.

PyTorch is not a dependency of the project: this module imports it only inside its
functions, and is used by the optional speed comparison (``pip install -e '.[compare]'``,
which pins torch 2.13.0). The twin takes its weights from a :class:`model.Transformer`,
so both compute the same function; :func:`twin_loss_and_grads` returns NumPy arrays so
that a test can check the two agree before their speed is compared.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .block import BLOCK_PARAMS
from .transformer import Transformer

__all__ = ["TorchTwin", "twin_loss_and_grads"]


class TorchTwin:
    """A PyTorch eager copy of a :class:`model.Transformer` (same weights, same maths).

    Parameters
    ----------
    model : Transformer
        Its configuration and parameters are copied (the model is not changed). Only
        the plan's family is supported: ``loss="cross_entropy"``; any activation, norm
        placement and mask.
    """

    def __init__(self, model: Transformer) -> None:
        import torch

        cfg = model.cfg
        if cfg.loss != "cross_entropy":
            raise ValueError("TorchTwin supports loss='cross_entropy' only")
        self.cfg = cfg
        self.torch = torch
        self.dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
        self.params = {
            k: torch.tensor(np.array(v), dtype=self.dtype, requires_grad=True)
            for k, v in model.params.items()
        }
        t = cfg.max_len
        self.mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)

    def _act(self, z: Any) -> Any:
        f = self.torch.nn.functional
        name = self.cfg.activation
        if name == "gelu":
            return f.gelu(z)
        if name == "gelu_tanh":
            return f.gelu(z, approximate="tanh")
        if name == "relu":
            return f.relu(z)
        return self.torch.tanh(z)

    def _attention(self, x: Any, p: dict[str, Any]) -> Any:
        torch = self.torch
        b, t, c = x.shape
        h = self.cfg.n_heads
        d = c // h

        def heads(z: Any) -> Any:
            return z.view(b, t, h, d).transpose(1, 2)

        q = heads(x @ p["attn.Wq"] + p["attn.bq"])
        k = heads(x @ p["attn.Wk"] + p["attn.bk"])
        v = heads(x @ p["attn.Wv"] + p["attn.bv"])
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
        if self.cfg.causal:
            s = s.masked_fill(self.mask[:t, :t], float("-inf"))
        a = torch.softmax(s, dim=-1)
        ctx = (a @ v).transpose(1, 2).reshape(b, t, c)
        return ctx @ p["attn.Wo"] + p["attn.bo"]

    def _ln(self, x: Any, g: Any, bias: Any) -> Any:
        return self.torch.nn.functional.layer_norm(x, (x.shape[-1],), g, bias, eps=1e-5)

    def _block(self, x: Any, i: int) -> Any:
        p = {n: self.params[f"blocks.{i}.{n}"] for n in BLOCK_PARAMS}

        def ffn(u: Any) -> Any:
            return self._act(u @ p["ffn.W1"] + p["ffn.b1"]) @ p["ffn.W2"] + p["ffn.b2"]

        if self.cfg.norm == "post":
            h = self._ln(x + self._attention(x, p), p["ln1.g"], p["ln1.b"])
            return self._ln(h + ffn(h), p["ln2.g"], p["ln2.b"])
        h = x + self._attention(self._ln(x, p["ln1.g"], p["ln1.b"]), p)
        return h + ffn(self._ln(h, p["ln2.g"], p["ln2.b"]))

    def loss(self, tokens: Any, targets: Any) -> Any:
        """Mean cross-entropy of next-token ``targets`` (torch scalar, graph attached)."""
        p = self.params
        t = tokens.shape[1]
        x = p["tok_emb"][tokens] + p["pos_emb"][:t]
        for i in range(self.cfg.n_layers):
            x = self._block(x, i)
        if self.cfg.norm == "pre":
            x = self._ln(x, p["ln_f.g"], p["ln_f.b"])
        logits = x @ p["head.W"] + p["head.b"]
        return self.torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
        )

    def step(self, tokens: Any, targets: Any) -> float:
        """One training step's worth of work: forward, loss and backward (no update)."""
        for v in self.params.values():
            v.grad = None
        loss = self.loss(tokens, targets)
        loss.backward()
        return float(loss.detach())


def twin_loss_and_grads(
    model: Transformer, tokens: np.ndarray, targets: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Loss and gradients of ``model`` computed by its PyTorch twin, as NumPy arrays."""
    import torch

    twin = TorchTwin(model)
    tok = torch.as_tensor(np.asarray(tokens, dtype=np.int64))
    tgt = torch.as_tensor(np.asarray(targets, dtype=np.int64))
    loss = twin.step(tok, tgt)
    grads = {}
    for k, v in twin.params.items():
        g = v.grad
        grads[k] = np.zeros(v.shape, dtype=model.dtype) if g is None else g.numpy().copy()
    return loss, grads
