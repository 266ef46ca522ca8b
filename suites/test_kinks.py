"""Kinks: a catalog of classic backward bugs on inputs with 5% of elements at kinks.

Each layer is checked at 4k and 40k elements, with 5% of its inputs placed within 1e-6
of a non-differentiable point (ReLU, leaky ReLU and abs at 0, clip at its bounds, max
pooling at a tie, a bias that brings ``x + b`` to 0, the margins of an SVM loss, the
targets of an L1 loss). Every bug must be caught and no correct backward flagged, at
five seeds, along random directions (where the default mode would check 4k elements
one by one, the directions are asked for).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import gradcheck

FRAC = 0.05  # share of the inputs at kinks
NEAR = 1e-6  # how near
SEEDS = range(5)


def _near_kinks(rng: np.random.Generator, x: np.ndarray, points: tuple[float, ...]
                ) -> np.ndarray:
    """Move ``FRAC`` of the elements of ``x`` within ``NEAR`` of one of ``points``."""
    m = rng.random(x.shape) < FRAC
    at = rng.choice(np.asarray(points), size=int(m.sum()))
    x[m] = at + rng.uniform(-NEAR, NEAR, int(m.sum()))
    return x


# -- the layers: forward, correct backward, classic bugs -------------------------------------
def relu_f(x):
    return np.maximum(x, 0.0), x


def relu_b(dy, x):
    return (dy * (x > 0),)


def leaky_f(x):
    return np.where(x > 0, x, 0.01 * x), x


def leaky_b(dy, x):
    return (dy * np.where(x > 0, 1.0, 0.01),)


def abs_f(x):
    return np.abs(x), x


def abs_b(dy, x):
    return (dy * np.sign(x),)


def clip_f(x):
    return np.clip(x, -1.0, 1.0), x


def clip_b(dy, x):
    return (dy * ((x > -1.0) & (x < 1.0)),)


def pool_f(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2)
    return win.max(axis=(3, 5)), x


def _pool_mask(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
        n, c, h // 2, w // 2, 4)
    first = np.argmax(win, axis=-1)
    mask = np.zeros_like(win)
    np.put_along_axis(mask, first[..., None], 1.0, axis=-1)
    return mask, (n, c, h, w)


def _unpool(mask, dy, shape):
    n, c, h, w = shape
    g = mask * dy[..., None]
    return g.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)


def pool_b(dy, x):
    mask, shape = _pool_mask(x)
    return (_unpool(mask, dy, shape),)


def pool_b_average(dy, x):  # bug: spreads the gradient over the window
    mask, shape = _pool_mask(x)
    return (_unpool(np.full_like(mask, 0.25), dy, shape),)


def pool_b_first(dy, x):  # bug: always the window's first element
    mask, shape = _pool_mask(x)
    mask[:] = 0.0
    mask[..., 0] = 1.0
    return (_unpool(mask, dy, shape),)


def _pool_input(rng, shape):
    x = rng.standard_normal(shape)
    n, c, h, w = shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2)
    top = win.max(axis=(3, 5), keepdims=True)
    # FRAC of the elements tie (within NEAR) with their window's maximum
    tie = (rng.random(win.shape) < FRAC) & (win < top)
    win[tie] = np.broadcast_to(top, win.shape)[tie] - rng.uniform(0, NEAR, int(tie.sum()))
    return x


def _elementwise(points: tuple[float, ...] = (0.0,), scale: float = 1.0,
                 dtype: str = "float64") -> Callable:
    def make(rng: np.random.Generator, size: int) -> list[np.ndarray]:
        side = int(np.sqrt(size))
        x = _near_kinks(rng, scale * rng.standard_normal((side, side)), points)
        return [x.astype(dtype)]
    return make


def _pool(rng, size):
    side = int(np.sqrt(size // 16))
    return [_pool_input(rng, (4, 4, side, side))]


def relu_bias_f(x, b):
    z = x + b
    return np.maximum(z, 0.0), z


def relu_bias_b(dy, z):
    g = dy * (z > 0)
    return g, g.sum(axis=0)


def _relu_bias(rng, size):
    side = int(np.sqrt(size))
    b = rng.standard_normal(side)
    x = rng.standard_normal((side, side))
    m = rng.random(x.shape) < FRAC  # x + b within NEAR of 0
    x[m] = -np.broadcast_to(b, x.shape)[m] + rng.uniform(-NEAR, NEAR, int(m.sum()))
    return [x, b]


def relu_linear_f(x, w):  # a ReLU, then a linear layer: every output sees kinks
    r = np.maximum(x, 0.0)
    return r @ w, (x, r, w)


def relu_linear_b(dy, cache):
    x, r, w = cache
    return (dy @ w.T) * (x > 0), r.T @ dy


def _relu_linear(rng, size):
    x = _near_kinks(rng, rng.standard_normal((size // 64, 64)), (0.0,))
    return [x, rng.standard_normal((64, 32))]


def hinge_f(s, y):  # multiclass SVM loss: one scalar output
    n = s.shape[0]
    m = np.maximum(0.0, s - s[np.arange(n), y][:, None] + 1.0)
    m[np.arange(n), y] = 0.0
    return m.sum() / n, (s, y, m)


def hinge_b(dy, cache):
    s, y, m = cache
    n = s.shape[0]
    g = (m > 0).astype(float)
    g[np.arange(n), y] = -g.sum(axis=1)
    return dy * g / n, None


def hinge_b_no_true_class(dy, cache):  # bug: no gradient to the true class's score
    s, y, m = cache
    return dy * (m > 0) / s.shape[0], None


def _hinge(rng, size):
    n, c = size // 10, 10
    y = rng.integers(0, c, n)
    s = rng.standard_normal((n, c))
    k = rng.random(s.shape) < FRAC  # margins within NEAR of 0
    target = np.broadcast_to(s[np.arange(n), y][:, None] - 1.0, s.shape)
    s[k] = target[k] + rng.uniform(-NEAR, NEAR, int(k.sum()))
    return [s, y]


def l1_f(x, t):  # an L1 loss: one scalar output
    return np.abs(x - t).sum(), (x, t)


def l1_b(dy, cache):
    x, t = cache
    return dy * np.sign(x - t), None


def _l1(rng, size):
    side = int(np.sqrt(size))
    x, t = rng.standard_normal((side, side)), rng.standard_normal((side, side))
    m = rng.random(x.shape) < FRAC
    x[m] = t[m] + rng.uniform(-NEAR, NEAR, int(m.sum()))
    return [x, t]


@dataclass(frozen=True)
class Layer:
    name: str
    fwd: Callable
    bwd: Callable
    bugs: dict[str, Callable]
    make: Callable
    wrt: list[int] | None = None

    def inputs(self, seed: int, size: int) -> list[np.ndarray]:
        return self.make(np.random.default_rng([seed, size]), size)


LAYERS = [
    Layer("relu", relu_f, relu_b, {
        "forgets the mask": lambda dy, x: (dy.copy(),),
        "inverted mask": lambda dy, x: (dy * (x < 0),),
        "mask of dy, not x": lambda dy, x: (dy * (dy > 0),),
    }, _elementwise()),
    Layer("relu_float32", relu_f, relu_b, {
        "forgets the mask": lambda dy, x: (dy.copy(),),
    }, _elementwise(dtype="float32")),
    Layer("leaky_relu", leaky_f, leaky_b, {
        "drops the slope 0.01": lambda dy, x: (dy * (x > 0),),
        "slope on the wrong side": lambda dy, x: (dy * np.where(x > 0, 0.01, 1.0),),
    }, _elementwise()),
    Layer("abs", abs_f, abs_b, {
        "no sign": lambda dy, x: (dy.copy(),),
        "ReLU mask for the sign": lambda dy, x: (dy * (x > 0),),
    }, _elementwise()),
    Layer("clip", clip_f, clip_b, {
        "passes everything": lambda dy, x: (dy.copy(),),
        "inverted mask": lambda dy, x: (dy * ~((x > -1.0) & (x < 1.0)),),
    }, _elementwise(points=(-1.0, 1.0), scale=1.5)),
    Layer("maxpool", pool_f, pool_b, {
        "averages the window": pool_b_average,
        "first element of the window": pool_b_first,
    }, _pool),
    Layer("relu(x+b)", relu_bias_f, relu_bias_b, {
        "bias gradient averaged": lambda dy, z: (dy * (z > 0), (dy * (z > 0)).mean(axis=0)),
        "bias gradient unmasked": lambda dy, z: (dy * (z > 0), dy.sum(axis=0)),
    }, _relu_bias),
    Layer("relu_linear", relu_linear_f, relu_linear_b, {
        "forgets the mask": lambda dy, c: (dy @ c[2].T, c[1].T @ dy),
        "weight gradient from x": lambda dy, c: ((dy @ c[2].T) * (c[0] > 0), c[0].T @ dy),
    }, _relu_linear),
    Layer("svm_loss", hinge_f, hinge_b, {
        "no gradient to the true class": hinge_b_no_true_class,
    }, _hinge, wrt=[0]),
    Layer("l1_loss", l1_f, l1_b, {
        "squared-error gradient": lambda dy, c: (dy * (c[0] - c[1]), None),
    }, _l1, wrt=[0]),
]

#: 4k elements in directional mode (the default would check them one by one), 40k with
#: the default mode (directional at that size)
SIZES = [(4096, "directional"), (40_000, "auto")]


def _cases(correct: bool):
    for layer in LAYERS:
        for size, mode in SIZES:
            marks = [pytest.mark.slow] if size > 4096 and layer.name != "relu" else []
            tag = f"{layer.name}({size},{mode})"
            if correct:
                yield pytest.param(layer, None, size, mode, id=tag, marks=marks)
            else:
                for bug in layer.bugs:
                    yield pytest.param(layer, bug, size, mode, id=f"{tag}:{bug}", marks=marks)


@pytest.mark.parametrize(("layer", "bug", "size", "mode"), list(_cases(correct=False)))
def test_every_bug_is_caught_at_every_seed(layer, bug, size, mode):
    for seed in SEEDS:
        res = gradcheck.check_vjp(layer.fwd, layer.bugs[bug], layer.inputs(seed, size),
                                  wrt=layer.wrt, mode=mode, seed=seed, localise=False)
        assert res.status == "mismatch", f"seed={seed}\n{res.report()}"


@pytest.mark.parametrize(("layer", "bug", "size", "mode"), list(_cases(correct=True)))
def test_no_correct_backward_is_flagged_at_any_seed(layer, bug, size, mode):
    for seed in SEEDS:
        res = gradcheck.check_vjp(layer.fwd, layer.bwd, layer.inputs(seed, size),
                                  wrt=layer.wrt, mode=mode, seed=seed)
        assert res.passed, f"seed={seed}\n{res.report()}"
        assert all(i.checked > 0 for i in res.inputs if i.differentiated), res.report()
