"""Elementwise activations: ReLU, GELU (exact, erf), GELU (tanh approximation), tanh.

Every ``*_forward(x)`` returns ``(y, cache)`` and every ``*_backward(dy, cache)``
returns ``dx``; shapes are those of ``x``, any shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.special import erf

__all__ = [
    "ACTIVATIONS",
    "ActivationCache",
    "gelu_backward",
    "gelu_forward",
    "gelu_tanh_backward",
    "gelu_tanh_forward",
    "relu_backward",
    "relu_forward",
    "tanh_backward",
    "tanh_forward",
]

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_C = math.sqrt(2.0 / math.pi)


class ActivationCache(NamedTuple):
    x: np.ndarray  # the input (pre-activation)
    aux: np.ndarray  # ReLU: x > 0; GELU: Phi(x); GELU-tanh: tanh(u); tanh: y


def relu_forward(x: np.ndarray) -> tuple[np.ndarray, ActivationCache]:
    """``y = max(x, 0)``."""
    return np.maximum(x, 0), ActivationCache(x, x > 0)


def relu_backward(dy: np.ndarray, cache: ActivationCache) -> np.ndarray:
    """``dx = dy * [x > 0]`` (the subgradient 0 is used at ``x == 0``)."""
    return dy * cache.aux


def gelu_forward(x: np.ndarray) -> tuple[np.ndarray, ActivationCache]:
    """Exact GELU ``y = x * Phi(x)`` with ``Phi(x) = (1 + erf(x / sqrt 2)) / 2``."""
    cdf = x * (1.0 / _SQRT_2)
    erf(cdf, out=cdf)
    cdf += 1
    cdf *= 0.5
    return x * cdf, ActivationCache(x, cdf)


def gelu_backward(dy: np.ndarray, cache: ActivationCache) -> np.ndarray:
    """``dx = dy * (Phi(x) + x * phi(x))`` with ``phi`` the standard normal density."""
    x, cdf = cache
    pdf = x * x
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= _INV_SQRT_2PI
    pdf *= x
    pdf += cdf
    pdf *= dy
    return pdf


def gelu_tanh_forward(x: np.ndarray) -> tuple[np.ndarray, ActivationCache]:
    """GELU, tanh approximation: ``y = x/2 * (1 + tanh(c (x + 0.044715 x^3)))``.

    ``x^3`` is written as products: ``np.power`` with an integer exponent has no fast
    path on many CPUs (100x slower than ``x*x*x`` on float32 here).
    """
    t = x * x
    t *= 0.044715
    t += 1.0
    t *= x
    t *= _TANH_C
    np.tanh(t, out=t)
    y = t + 1.0
    y *= x
    y *= 0.5
    return y, ActivationCache(x, t)


def gelu_tanh_backward(dy: np.ndarray, cache: ActivationCache) -> np.ndarray:
    """Derivative of the tanh approximation (not of the exact GELU).

    ``dx = dy * (1 + t + x (1 - t^2) c (1 + 3 * 0.044715 x^2)) / 2``.
    """
    x, t = cache
    du = x * x
    du *= 3 * 0.044715 * _TANH_C
    du += _TANH_C
    s = t * t
    np.subtract(1.0, s, out=s)
    s *= x
    s *= du
    s += 1.0
    s += t
    s *= 0.5
    s *= dy
    return s


def tanh_forward(x: np.ndarray) -> tuple[np.ndarray, ActivationCache]:
    """``y = tanh(x)``."""
    y = np.tanh(x)
    return y, ActivationCache(x, y)


def tanh_backward(dy: np.ndarray, cache: ActivationCache) -> np.ndarray:
    """``dx = dy * (1 - y^2)``."""
    y = cache.aux
    dx = y * y
    np.subtract(1.0, dx, out=dx)
    dx *= dy
    return dx


Forward = Callable[[np.ndarray], tuple[np.ndarray, ActivationCache]]
Backward = Callable[[np.ndarray, ActivationCache], np.ndarray]

#: name -> (forward, backward)
ACTIVATIONS: dict[str, tuple[Forward, Backward]] = {
    "relu": (relu_forward, relu_backward),
    "gelu": (gelu_forward, gelu_backward),
    "gelu_tanh": (gelu_tanh_forward, gelu_tanh_backward),
    "tanh": (tanh_forward, tanh_backward),
}
