"""Position-wise feed-forward: ``y = act(x W1 + b1) W2 + b2``.

Shapes: ``x (B, T, C)``, ``W1 (C, F)``, ``b1 (F,)``, ``W2 (F, C)``, ``b2 (C,)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .activations import ACTIVATIONS, ActivationCache
from .linear import LinearCache, linear_backward, linear_forward

__all__ = ["FeedForwardCache", "feedforward_backward", "feedforward_forward"]


class FeedForwardCache(NamedTuple):
    fc1: LinearCache  # x, W1
    act: ActivationCache  # z1 = x W1 + b1 (and the activation's aux)
    fc2: LinearCache  # a1 = act(z1), W2
    activation: str


def feedforward_forward(
    x: np.ndarray,
    W1: np.ndarray,
    b1: np.ndarray,
    W2: np.ndarray,
    b2: np.ndarray,
    *,
    activation: str,
) -> tuple[np.ndarray, FeedForwardCache]:
    """Two linear layers with an activation between them.

    Returns
    -------
    y : ndarray, shape (B, T, C)
    cache : FeedForwardCache
    """
    act_forward, _ = ACTIVATIONS[activation]
    z1, fc1 = linear_forward(x, W1, b1)
    a1, act = act_forward(z1)
    y, fc2 = linear_forward(a1, W2, b2)
    return y, FeedForwardCache(fc1, act, fc2, activation)


def feedforward_backward(
    dy: np.ndarray, cache: FeedForwardCache
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Gradients of :func:`feedforward_forward`.

    Returns
    -------
    dx : ndarray, shape (B, T, C)
    grads : dict
        ``W1, b1, W2, b2``.
    """
    fc1, act, fc2, activation = cache
    _, act_backward = ACTIVATIONS[activation]
    # y = a1 W2 + b2
    da1, dW2, db2 = linear_backward(dy, fc2)
    # a1 = act(z1)
    dz1 = act_backward(da1, act)
    # z1 = x W1 + b1
    dx, dW1, db1 = linear_backward(dz1, fc1)
    return dx, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}
