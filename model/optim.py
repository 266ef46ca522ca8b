"""Optimizers and gradient clipping, with a guard against non-finite updates.

A step first computes every new value; only if all are finite are they written, so a
refused step leaves the parameters (and the optimizer state) exactly as they were.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "Adam",
    "NonFiniteError",
    "SGD",
    "clip_by_global_norm",
    "clip_by_value",
    "global_norm",
]


class NonFiniteError(FloatingPointError):
    """A gradient or an update holds NaN/Inf; ``tensor`` names the first one."""

    def __init__(self, message: str, tensor: str = "") -> None:
        super().__init__(message)
        self.tensor = tensor


def _check_grads(params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
    for name, p in params.items():
        if name not in grads:
            raise KeyError(f"no gradient for parameter {name!r}")
        g = grads[name]
        if g.shape != p.shape:
            raise ValueError(f"gradient of {name} has shape {g.shape}, expected {p.shape}")
        if not np.all(np.isfinite(g)):
            raise NonFiniteError(f"gradient of {name} contains NaN/Inf; step refused", name)


def _commit(params: dict[str, np.ndarray], new: dict[str, np.ndarray]) -> None:
    for name, value in new.items():
        if not np.all(np.isfinite(value)):
            raise NonFiniteError(
                f"update would write NaN/Inf into {name}; step refused, parameters unchanged",
                name,
            )
    for name, value in new.items():
        np.copyto(params[name], value)


def clip_by_value(
    grads: dict[str, np.ndarray], low: float = -5.0, high: float = 5.0
) -> dict[str, np.ndarray]:
    """Clip every gradient element to ``[low, high]`` (new arrays; input untouched)."""
    if not low < high:
        raise ValueError(f"clip_by_value needs low < high, got [{low}, {high}]")
    return {k: np.clip(g, low, high) for k, g in grads.items()}


def global_norm(grads: dict[str, np.ndarray]) -> float:
    """The L2 norm of all gradients together (accumulated in float64)."""
    return math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads.values()))


def clip_by_global_norm(
    grads: dict[str, np.ndarray], max_norm: float
) -> tuple[dict[str, np.ndarray], float]:
    """Scale all gradients by ``min(1, max_norm / norm)``; returns (clipped, norm)."""
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm}")
    norm = global_norm(grads)
    if not math.isfinite(norm):
        raise NonFiniteError("global gradient norm is not finite; step refused")
    scale = min(1.0, max_norm / norm) if norm > 0 else 1.0
    return {k: g * g.dtype.type(scale) for k, g in grads.items()}, norm


class SGD:
    """Stochastic gradient descent with momentum and decoupled weight decay.

    ``u <- momentum * u + g``; ``p <- p - lr * u - lr * weight_decay * p``
    (``momentum=0`` is plain SGD).
    """

    def __init__(
        self, lr: float = 1e-2, *, momentum: float = 0.0, weight_decay: float = 0.0
    ) -> None:
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.u: dict[str, np.ndarray] = {}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        """Update ``params`` in place, or raise :class:`NonFiniteError` and change nothing."""
        _check_grads(params, grads)
        new, new_u = {}, {}
        with np.errstate(over="ignore", invalid="ignore"):  # checked in _commit
            for name, p in params.items():
                u = grads[name]
                if self.momentum:
                    u = self.momentum * self.u.get(name, np.zeros_like(p)) + u
                decay = 1.0 - self.lr * self.weight_decay
                new[name] = p * p.dtype.type(decay) - p.dtype.type(self.lr) * u
                new_u[name] = u
        _commit(params, new)
        if self.momentum:
            self.u = new_u


class Adam:
    """Adam with bias correction and optional decoupled weight decay (AdamW).

    ``m <- b1 m + (1-b1) g``, ``v <- b2 v + (1-b2) g^2``,
    ``p <- p - lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) - lr * wd * p``
    """

    def __init__(
        self,
        lr: float = 1e-3,
        *,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.t = 0
        self.m: dict[str, np.ndarray] = {}
        self.v: dict[str, np.ndarray] = {}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        """Update ``params`` in place, or raise :class:`NonFiniteError` and change nothing."""
        _check_grads(params, grads)
        b1, b2 = self.betas
        t = self.t + 1
        c1, c2 = 1.0 - b1**t, 1.0 - b2**t
        new, new_m, new_v = {}, {}, {}
        with np.errstate(over="ignore", invalid="ignore"):  # checked in _commit
            for name, p in params.items():
                g = grads[name]
                m = self.m.get(name, np.zeros_like(p))
                v = self.v.get(name, np.zeros_like(p))
                m = b1 * m + (1 - b1) * g
                v = b2 * v + (1 - b2) * (g * g)
                upd = (m / c1) / (np.sqrt(v / c2) + self.eps)
                new[name] = p - self.lr * upd - (self.lr * self.weight_decay) * p
                new_m[name], new_v[name] = m, v
        _commit(params, new)
        self.m, self.v, self.t = new_m, new_v, t
