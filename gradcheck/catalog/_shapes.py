"""Catalog cases of shape and support: an unreduced gradient, activations' derivatives,
convolution and pooling."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._layers import (
    conv1d_backward,
    conv1d_forward,
    layernorm_backward,
    layernorm_forward,
    linear_backward,
    linear_forward,
    maxpool_backward,
    maxpool_forward,
    sigmoid,
)

__all__: list[str] = []

Arrays = list[np.ndarray]


def _n(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, scale: float = 1.0) -> Any:
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _unreduced(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    if bug in ("linear_bias", "linear_dW_T"):
        x, W, b = _n(rng, (6, 4), dtype), _n(rng, (4, 3), dtype), _n(rng, (3,), dtype)

        def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
            dx, dW, db = linear_backward(dy, c)
            if bug == "linear_dW_T":
                return dx, dy.T @ c[0], db  # dW (3, 4) for W (4, 3)
            return dx, dW, dy.copy()  # db not summed over the rows

        return linear_forward, linear_backward, bad, [x, W, b]
    x = _n(rng, (5, 6), dtype)
    g = (1 + 0.1 * rng.standard_normal(6)).astype(dtype)
    b = _n(rng, (6,), dtype, 0.1)

    def bad_ln(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        dx, _, db = layernorm_backward(dy, c)
        return dx, dy * c.xhat, db  # dgamma not summed over the rows

    return layernorm_forward, layernorm_backward, bad_ln, [x, g, b]


# -- element-wise activations ---------------------------------------------------------------
def _activation(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (6, 6), dtype, 1.5)
    kind = bug.split("_")[0]

    def fwd(x_: np.ndarray) -> Any:
        y = sigmoid(x_) if kind == "sigmoid" else np.tanh(x_) if kind == "tanh" else \
            np.where(x_ > 0, x_, 0.1 * x_) if kind == "leaky" else np.maximum(x_, 0)
        return y, (x_, y)

    def good(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        x_, y = c
        d = {"sigmoid": y * (1 - y), "tanh": 1 - y * y, "relu": x_ > 0,
             "leaky": np.where(x_ > 0, 1.0, 0.1)}[kind]
        return ((d * dy).astype(dy.dtype),)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        x_, y = c
        d = {"sigmoid_input": lambda: x_ * (1 - x_),  # s(1-s) of the pre-activation
             "sigmoid_twice": lambda: sigmoid(y) * (1 - sigmoid(y)),
             "tanh_input": lambda: 1 - x_ * x_,  # 1 - t^2 of the pre-activation
             "relu_nomask": lambda: np.ones_like(x_),
             "relu_inverted": lambda: x_ <= 0,
             "leaky_slope": lambda: x_ > 0}[bug]()  # the 0.1 of the negative side lost
        return ((d * dy).astype(dy.dtype),)

    return fwd, good, bad, [x]


def _conv(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    x, w = _n(rng, (3, 9), dtype), _n(rng, (4,), dtype)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        dx, dw = conv1d_backward(dy, c)
        if bug == "flip":
            return dx, dw[::-1].copy()  # the kernel gradient of a convolution, not flipped
        shifted = np.zeros_like(dx)
        shifted[:, 1:] = dx[:, :-1]  # dx[n, i + k + 1] += ...: off by one
        return shifted, dw

    return conv1d_forward, conv1d_backward, bad, [x, w]


def _pool(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (4, 8), dtype)
    if bug == "avg_scale":
        def fwd(x_: np.ndarray) -> Any:
            return x_.reshape(4, 4, 2).mean(axis=-1), None

        def good(dy: np.ndarray, _c: Any) -> tuple[np.ndarray]:
            return (np.repeat(dy, 2, axis=1) / 2,)

        def bad_avg(dy: np.ndarray, _c: Any) -> tuple[np.ndarray]:
            return (np.repeat(dy, 2, axis=1),)  # the 1/2 of the mean is missing

        return fwd, good, bad_avg, [x]

    def bad(dy: np.ndarray, arg: np.ndarray) -> tuple[np.ndarray]:
        return (np.repeat(dy, 2, axis=1),)  # dy to every element of the window

    return maxpool_forward, lambda dy, a: (maxpool_backward(dy, a),), bad, [x]
