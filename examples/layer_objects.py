"""Example (b): a small network written as layer objects, in the from-scratch style.

Each layer keeps ``self.params`` and ``self.grads`` dicts and its caches on itself;
``forward(x)`` returns the output and ``backward(dout)`` the input gradient, writing
the parameter gradients into ``self.grads``. ``Network`` chains them and exposes the
flat ``params`` / ``loss`` / ``loss_and_grads`` that :func:`gradcheck.check_model`
reads. ``BROKEN`` leaves the attention backward as a placeholder (no gradient reaches
its parameters), a failure from the source projects::

    gradcheck report --subject examples.layer_objects:SUBJECT
    gradcheck report --subject examples.layer_objects:BROKEN    # FAIL, names attention
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradcheck import LayerCase, Subject


class Layer:
    def __init__(self) -> None:
        self.params: dict[str, np.ndarray] = {}
        self.grads: dict[str, np.ndarray] = {}

    def zero_grad(self) -> None:
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}


class Embedding(Layer):
    def __init__(self, vocab: int, c: int, rng: np.random.Generator, dt: Any) -> None:
        super().__init__()
        self.params = {"W": rng.standard_normal((vocab, c)).astype(dt)}
        self.zero_grad()

    def forward(self, tokens: np.ndarray) -> np.ndarray:
        self.tokens = tokens
        return self.params["W"][tokens]

    def backward(self, dout: np.ndarray) -> None:
        np.add.at(self.grads["W"], self.tokens.reshape(-1), dout.reshape(-1, dout.shape[-1]))


class LayerNorm(Layer):
    def __init__(self, c: int, rng: np.random.Generator, dt: Any) -> None:
        super().__init__()
        self.params = {"gamma": (1 + 0.1 * rng.standard_normal(c)).astype(dt),
                       "beta": (0.1 * rng.standard_normal(c)).astype(dt)}
        self.zero_grad()

    def forward(self, x: np.ndarray) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        self.rstd = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        self.xhat = (x - mu) * self.rstd
        return self.xhat * self.params["gamma"] + self.params["beta"]

    def backward(self, dout: np.ndarray) -> np.ndarray:
        c = dout.shape[-1]
        self.grads["gamma"] += (dout * self.xhat).reshape(-1, c).sum(0)
        self.grads["beta"] += dout.reshape(-1, c).sum(0)
        g = dout * self.params["gamma"]
        return self.rstd * (g - g.mean(-1, keepdims=True)
                            - self.xhat * (g * self.xhat).mean(-1, keepdims=True))


class SelfAttention(Layer):
    """Causal single-head self-attention."""

    def __init__(self, c: int, rng: np.random.Generator, dt: Any,
                 placeholder_backward: bool = False) -> None:
        super().__init__()
        self.params = {k: (rng.standard_normal((c, c)) / math.sqrt(c)).astype(dt)
                       for k in ("Wq", "Wk", "Wv", "Wo")}
        self.placeholder_backward = placeholder_backward
        self.zero_grad()

    def forward(self, x: np.ndarray) -> np.ndarray:
        p = self.params
        self.x = x
        self.q, self.k, self.v = x @ p["Wq"], x @ p["Wk"], x @ p["Wv"]
        self.scale = 1 / math.sqrt(x.shape[-1])
        s = self.q @ self.k.transpose(0, 2, 1) * self.scale
        s = np.where(np.triu(np.ones(s.shape[1:], dtype=bool), 1), -np.inf, s)
        a = np.exp(s - s.max(-1, keepdims=True))
        self.att = a / a.sum(-1, keepdims=True)
        self.ctx = self.att @ self.v
        return self.ctx @ p["Wo"]

    def backward(self, dout: np.ndarray) -> np.ndarray:
        if self.placeholder_backward:
            return dout  # TODO: attention backward (the placeholder of the source projects)
        p, c = self.params, dout.shape[-1]
        self.grads["Wo"] += self.ctx.reshape(-1, c).T @ dout.reshape(-1, c)
        dctx = dout @ p["Wo"].T
        da = dctx @ self.v.transpose(0, 2, 1)
        dv = self.att.transpose(0, 2, 1) @ dctx
        ds = self.att * (da - (da * self.att).sum(-1, keepdims=True)) * self.scale
        dq, dk = ds @ self.k, ds.transpose(0, 2, 1) @ self.q
        x2 = self.x.reshape(-1, c)
        for name, d in (("Wq", dq), ("Wk", dk), ("Wv", dv)):
            self.grads[name] += x2.T @ d.reshape(-1, c)
        return dq @ p["Wq"].T + dk @ p["Wk"].T + dv @ p["Wv"].T


class Dense(Layer):
    def __init__(self, n: int, m: int, rng: np.random.Generator, dt: Any, relu: bool = False):
        super().__init__()
        self.params = {"W": (rng.standard_normal((n, m)) / math.sqrt(n)).astype(dt),
                       "b": (0.1 * rng.standard_normal(m)).astype(dt)}
        self.relu = relu
        self.zero_grad()

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        z = x @ self.params["W"] + self.params["b"]
        self.mask = z > 0 if self.relu else None
        return np.maximum(z, 0) if self.relu else z

    def backward(self, dout: np.ndarray) -> np.ndarray:
        if self.mask is not None:
            dout = dout * self.mask
        n, m = self.params["W"].shape
        self.grads["W"] += self.x.reshape(-1, n).T @ dout.reshape(-1, m)
        self.grads["b"] += dout.reshape(-1, m).sum(0)
        return dout @ self.params["W"].T


class SoftmaxCrossEntropy:
    """forward(logits, targets) -> loss; backward() -> dlogits (no dout: a loss)."""

    def forward(self, logits: np.ndarray, targets: np.ndarray) -> float:
        z = logits - logits.max(-1, keepdims=True)
        p = np.exp(z)
        self.p = p / p.sum(-1, keepdims=True)
        self.targets = targets
        flat = self.p.reshape(-1, self.p.shape[-1])
        return float(-np.log(flat[np.arange(targets.size), targets.reshape(-1)]).mean())

    def backward(self) -> np.ndarray:
        d = self.p.reshape(-1, self.p.shape[-1]).copy()
        d[np.arange(self.targets.size), self.targets.reshape(-1)] -= 1
        return (d / self.targets.size).reshape(self.p.shape)


class Network:
    """tokens -> embedding -> x + attention(LN(x)) -> x + MLP(x) -> head -> loss."""

    def __init__(self, dtype: str = "float64", vocab: int = 11, c: int = 8, seed: int = 0,
                 placeholder_attention: bool = False) -> None:
        rng = np.random.default_rng(seed)
        dt = np.dtype(dtype)
        self.emb = Embedding(vocab, c, rng, dt)
        self.ln = LayerNorm(c, rng, dt)
        self.attn = SelfAttention(c, rng, dt, placeholder_attention)
        self.fc1, self.fc2 = Dense(c, 16, rng, dt, relu=True), Dense(16, c, rng, dt)
        self.head = Dense(c, vocab, rng, dt)
        self.loss_fn = SoftmaxCrossEntropy()
        self.layers = {"emb": self.emb, "ln": self.ln, "attn": self.attn, "fc1": self.fc1,
                       "fc2": self.fc2, "head": self.head}
        # a flat view: the same array objects the layers hold
        self.params = {f"{n}.{k}": v for n, layer in self.layers.items()
                       for k, v in layer.params.items()}

    def _logits(self, tokens: np.ndarray) -> np.ndarray:
        x = self.emb.forward(tokens)
        h = x + self.attn.forward(self.ln.forward(x))
        h = h + self.fc2.forward(self.fc1.forward(h))
        return self.head.forward(h)

    def loss(self, tokens: np.ndarray, targets: np.ndarray) -> float:
        return self.loss_fn.forward(self._logits(tokens), targets)

    def loss_and_grads(self, tokens: np.ndarray, targets: np.ndarray
                       ) -> tuple[float, dict[str, np.ndarray]]:
        for layer in self.layers.values():
            layer.zero_grad()
        loss = self.loss(tokens, targets)
        dh = self.head.backward(self.loss_fn.backward())
        dh = dh + self.fc1.backward(self.fc2.backward(dh))
        dx = dh + self.ln.backward(self.attn.backward(dh))
        self.emb.backward(dx)
        return loss, {f"{n}.{k}": g for n, layer in self.layers.items()
                      for k, g in layer.grads.items()}


# -- the subject ----------------------------------------------------------------------------------
def _x(r: np.random.Generator, d: Any, *shape: int) -> np.ndarray:
    return r.standard_normal(shape).astype(d)


def _cases(placeholder: bool) -> list[LayerCase]:
    return [
        LayerCase("LayerNorm", lambda r, d: [_x(r, d, 2, 3, 6)],
                  layer=lambda r, d: LayerNorm(6, r, d)),
        LayerCase("SelfAttention", lambda r, d: [_x(r, d, 2, 4, 6)],
                  layer=lambda r, d: SelfAttention(6, r, d, placeholder)),
        LayerCase("Dense", lambda r, d: [_x(r, d, 2, 3, 4)], layer=lambda r, d: Dense(4, 5, r, d)),
        LayerCase("SoftmaxCrossEntropy", lambda r, d: [_x(r, d, 2, 3, 5),
                                                       r.integers(0, 5, (2, 3))],
                  layer=lambda r, d: SoftmaxCrossEntropy()),
    ]


def _batch(model: Network, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(0, 11, (2, 5)), rng.integers(0, 11, (2, 5))


SUBJECT = Subject(name="layer objects (example b)", layers=_cases(False),
                  model=lambda dtype: Network(dtype), batch=_batch)
BROKEN = Subject(name="layer objects, attention backward a placeholder (example b, broken)",
                 layers=_cases(True),
                 model=lambda dtype: Network(dtype, placeholder_attention=True), batch=_batch)
