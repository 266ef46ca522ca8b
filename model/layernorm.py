"""Layer normalisation over the last axis with gain and bias.

Shapes: ``x (..., C)``, ``gamma (C,)``, ``beta (C,)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["LayerNormCache", "layernorm_backward", "layernorm_forward"]


class LayerNormCache(NamedTuple):
    xhat: np.ndarray  # (..., C) normalised input
    rstd: np.ndarray  # (..., 1) 1 / sqrt(var + eps)
    gamma: np.ndarray  # (C,)


def layernorm_forward(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5
) -> tuple[np.ndarray, LayerNormCache]:
    """``y = (x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis.

    Parameters
    ----------
    x : ndarray, shape (..., C)
    gamma, beta : ndarray, shape (C,)
    eps : float
        Keeps rows of zero variance finite.

    Returns
    -------
    y : ndarray, shape (..., C)
    cache : LayerNormCache
    """
    c = x.shape[-1]  # (np.add.reduce and a division: np.mean's result without its
    mean = np.add.reduce(x, axis=-1, keepdims=True) / c  # wrapper's cost)
    xc = x - mean
    var = np.add.reduce(xc * xc, axis=-1, keepdims=True) / c
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * rstd
    y = xhat * gamma
    y += beta
    return y, LayerNormCache(xhat, rstd, gamma)


def layernorm_backward(
    dy: np.ndarray, cache: LayerNormCache
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`layernorm_forward`.

    Returns
    -------
    dx : ndarray, shape (..., C)
    dgamma, dbeta : ndarray, shape (C,)

    Notes
    -----
    With ``g = dy * gamma``:
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``; the ``mean(g)`` term comes
    from the mean, the ``xhat * mean(g xhat)`` term from the variance.
    """
    xhat, rstd, gamma = cache
    c = xhat.shape[-1]
    dbeta = dy.reshape(-1, c).sum(axis=0)
    dgamma = (dy * xhat).reshape(-1, c).sum(axis=0)
    g = dy * gamma
    dx = g - np.add.reduce(g, axis=-1, keepdims=True) / c
    dx -= xhat * (np.add.reduce(g * xhat, axis=-1, keepdims=True) / c)
    dx *= rstd
    return dx, dgamma, dbeta
