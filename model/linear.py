"""Linear layer on the last axis: ``y = x @ W + b``.

Shapes: ``x (..., Cin)``, ``W (Cin, Cout)``, ``b (Cout,)``, ``y (..., Cout)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["LinearCache", "linear_backward", "linear_forward"]


class LinearCache(NamedTuple):
    x: np.ndarray  # (..., Cin) the input
    W: np.ndarray  # (Cin, Cout) the weight used


def linear_forward(
    x: np.ndarray, W: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, LinearCache]:
    """Affine map on the last axis.

    Parameters
    ----------
    x : ndarray, shape (..., Cin)
    W : ndarray, shape (Cin, Cout)
    b : ndarray, shape (Cout,)

    Returns
    -------
    y : ndarray, shape (..., Cout)
    cache : LinearCache
    """
    cin, cout = W.shape
    # One 2-D GEMM over the flattened leading axes (a stacked matmul would call BLAS
    # once per leading index).
    y = x.reshape(-1, cin) @ W
    y += b
    return y.reshape(*x.shape[:-1], cout), LinearCache(x, W)


def linear_backward(
    dy: np.ndarray, cache: LinearCache
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`linear_forward`.

    Parameters
    ----------
    dy : ndarray, shape (..., Cout)
    cache : LinearCache

    Returns
    -------
    dx : ndarray, shape (..., Cin)
    dW : ndarray, shape (Cin, Cout)
    db : ndarray, shape (Cout,)

    Notes
    -----
    ``dx = dy W^T``, ``dW = x^T dy`` and ``db = sum(dy)`` with the leading axes of
    ``x`` and ``dy`` flattened into one.
    """
    x, W = cache
    cin, cout = W.shape
    dy2 = dy.reshape(-1, cout)
    dW = x.reshape(-1, cin).T @ dy2
    db = dy2.sum(axis=0)
    dx = (dy2 @ W.T).reshape(x.shape)
    return dx, dW, db
