"""A two-layer perceptron whose failing model check a failing layer check explains, or
does not, for suites/test_explain.py.

The model is ``linear -> tanh -> linear -> mse``, written as ``*_forward`` /
``*_backward`` functions (``tanh_block`` wraps ``tanh`` the way a feed-forward wraps
its activation). ``TANH``: the tanh backward drops its ``1 - y**2`` factor, in the layer
cases and in the model: the model's failures sit below (``W1``, ``b1``) the failing
``tanh`` layer. ``OWN_BELOW``: the same wrong ``tanh`` case, a model running the correct
tanh with a bug of its own below it. ``ELSEWHERE``: the ``tanh`` layer case is just as
wrong, but the model runs the correct tanh and has a bug of its own (the output bias
gradient doubled): no layer check explains that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck import LayerCase, Subject


def linear_forward(x: np.ndarray, W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Any]:
    return x @ W + b, (x, W)


def linear_backward(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
    x, W = cache
    return dy @ W.T, x.T @ dy, dy.sum(axis=0)


def tanh_forward(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.tanh(x)
    return y, y


def tanh_backward(dy: np.ndarray, y: np.ndarray) -> np.ndarray:
    return dy * (1 - y * y)


def tanh_backward_dropped(dy: np.ndarray, y: np.ndarray) -> np.ndarray:
    return dy.copy()  # the 1 - y**2 factor forgotten


def tanh_block(x: np.ndarray, W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Any]:
    """linear then tanh, one layer case of its own."""
    h, c1 = linear_forward(x, W, b)
    a, c2 = tanh_forward(h)
    return a, (c1, c2)


class MLP:
    """``params`` / ``loss`` / ``loss_and_grads``: the model protocol."""

    def __init__(self, dtype: str, tanh_bwd: Any = tanh_backward, bias_factor: float = 1.0,
                 w1_factor: float = 1.0, linear_bwd: Any = linear_backward):
        rng = np.random.default_rng(5)
        self.params = {n: rng.standard_normal(s).astype(dtype) * 0.5 for n, s in
                       (("W1", (4, 6)), ("b1", (6,)), ("W2", (6, 3)), ("b2", (3,)))}
        self.tanh_bwd, self.bias_factor = tanh_bwd, bias_factor
        self.w1_factor, self.linear_bwd = w1_factor, linear_bwd

    def _forward(self, x: np.ndarray) -> tuple[np.ndarray, Any]:
        p = self.params
        h, c1 = linear_forward(x, p["W1"], p["b1"])
        a, c2 = tanh_forward(h)
        y, c3 = linear_forward(a, p["W2"], p["b2"])
        return y, (c1, c2, c3)

    def loss(self, x: np.ndarray, t: np.ndarray) -> float:
        return 0.5 * float(np.sum((self._forward(x)[0] - t) ** 2))

    def loss_and_grads(self, x: np.ndarray, t: np.ndarray) -> tuple[float, dict[str, Any]]:
        y, (c1, c2, c3) = self._forward(x)
        dy = y - t
        da, dW2, db2 = self.linear_bwd(dy, c3)
        dx, dW1, db1 = self.linear_bwd(self.tanh_bwd(da, c2), c1)
        return (0.5 * float(np.sum(dy * dy)),
                {"W1": self.w1_factor * dW1, "b1": db1, "W2": dW2,
                 "b2": self.bias_factor * db2})


def _x(rng: np.random.Generator, dt: Any, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(dt)


def linear_backward_db_doubled(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
    x, W = cache
    return dy @ W.T, x.T @ dy, 2 * dy.sum(axis=0)  # the bias gradient doubled


def _layers(tanh_bwd: Any, linear_bwd: Any = linear_backward) -> list[LayerCase]:
    def block_bwd(da: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
        c1, c2 = cache
        return linear_backward(tanh_bwd(da, c2), c1)

    return [
        LayerCase("linear", lambda r, d: [_x(r, d, 5, 4), _x(r, d, 4, 6), _x(r, d, 6)],
                  linear_forward, linear_bwd),
        LayerCase("tanh block", lambda r, d: [_x(r, d, 5, 4), _x(r, d, 4, 6), _x(r, d, 6)],
                  tanh_block, block_bwd),
        LayerCase("tanh", lambda r, d: [_x(r, d, 5, 6)], tanh_forward,
                  lambda dy, y: (tanh_bwd(dy, y),)),
    ]


def _batch(model: MLP, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal((5, 4)), rng.standard_normal((5, 3))


TANH = Subject(name="mlp, tanh backward wrong", layers=_layers(tanh_backward_dropped),
               model=lambda dtype: MLP(dtype, tanh_backward_dropped), batch=_batch)
#: The tanh layer case is wrong; the model runs the correct tanh backward and has its own
#: bug below it (W1's gradient tripled): a failing layer that the model's backward does
#: not run explains nothing.
OWN_BELOW = Subject(name="mlp, tanh layer case wrong, model W1 gradient tripled",
                    layers=_layers(tanh_backward_dropped),
                    model=lambda dtype: MLP(dtype, w1_factor=3.0), batch=_batch)
ELSEWHERE = Subject(name="mlp, tanh layer case wrong, model bias gradient doubled",
                    layers=_layers(tanh_backward_dropped),
                    model=lambda dtype: MLP(dtype, bias_factor=2.0), batch=_batch)
