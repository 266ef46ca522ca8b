"""Losses: softmax cross-entropy and mean squared error.

Shapes: ``logits (B, T, V)``, ``targets (B, T)`` int for cross-entropy; ``pred`` and
``target`` of any equal shape for MSE.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "CrossEntropyCache",
    "MSECache",
    "cross_entropy_backward",
    "cross_entropy_forward",
    "mse_backward",
    "mse_forward",
]


class CrossEntropyCache(NamedTuple):
    probs: np.ndarray  # (B, T, V) softmax of the logits
    targets: np.ndarray  # (B, T) target ids


def cross_entropy_forward(
    logits: np.ndarray, targets: np.ndarray
) -> tuple[float, CrossEntropyCache]:
    """Mean over tokens of ``logsumexp(logits) - logits[target]``.

    Computed with the log-sum-exp shift, so any finite logits give a finite loss
    (no epsilon inside a log).

    Returns
    -------
    loss : float
    cache : CrossEntropyCache
    """
    shifted = logits - logits.max(axis=-1, keepdims=True)
    expd = np.exp(shifted)
    sumexp = expd.sum(axis=-1, keepdims=True)
    logp_t = np.take_along_axis(shifted, targets[..., None], axis=-1) - np.log(sumexp)
    loss = -float(np.mean(logp_t, dtype=np.float64))
    expd /= sumexp
    return loss, CrossEntropyCache(expd, targets)


def cross_entropy_backward(dloss: float, cache: CrossEntropyCache) -> np.ndarray:
    """``dlogits = dloss * (softmax(logits) - onehot(target)) / N`` with N tokens."""
    probs, targets = cache
    n = targets.size
    d = probs.copy()
    np.put_along_axis(
        d, targets[..., None], np.take_along_axis(d, targets[..., None], axis=-1) - 1, axis=-1
    )
    d *= dloss / n
    return d


class MSECache(NamedTuple):
    diff: np.ndarray  # pred - target


def mse_forward(pred: np.ndarray, target: np.ndarray) -> tuple[float, MSECache]:
    """``mean((pred - target)^2)`` over every element."""
    diff = pred - target
    return float(np.mean(diff * diff, dtype=np.float64)), MSECache(diff)


def mse_backward(dloss: float, cache: MSECache) -> tuple[np.ndarray, np.ndarray]:
    """Gradients with respect to ``pred`` and ``target``: ``+-2 (pred - target) / N``."""
    (diff,) = cache
    d = diff * (2.0 * dloss / diff.size)
    return d, -d
