"""Kinks: a catalog of classic backward bugs on inputs with 5% of elements at kinks.

Each layer is checked at 4k and 40k elements, with 5% of its inputs placed within 1e-6
of a non-differentiable point (ReLU, leaky ReLU and abs at 0, clip at its bounds, max
pooling at a tie). Every bug must be caught and no correct backward flagged, at five
seeds, in directional mode (random directions) and with the default mode.
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


@dataclass(frozen=True)
class Layer:
    name: str
    fwd: Callable
    bwd: Callable
    bugs: dict[str, Callable]
    points: tuple[float, ...] = (0.0,)
    pool: bool = False

    def inputs(self, seed: int, size: int) -> list[np.ndarray]:
        rng = np.random.default_rng([seed, size])
        if self.pool:
            side = int(np.sqrt(size // 16))
            return [_pool_input(rng, (4, 4, side, side))]
        side = int(np.sqrt(size))
        scale = 1.5 if self.points != (0.0,) else 1.0
        return [_near_kinks(rng, scale * rng.standard_normal((side, side)), self.points)]


LAYERS = [
    Layer("relu", relu_f, relu_b, {
        "forgets the mask": lambda dy, x: (dy.copy(),),
        "inverted mask": lambda dy, x: (dy * (x < 0),),
        "mask of dy, not x": lambda dy, x: (dy * (dy > 0),),
    }),
    Layer("leaky_relu", leaky_f, leaky_b, {
        "drops the slope 0.01": lambda dy, x: (dy * (x > 0),),
        "slope on the wrong side": lambda dy, x: (dy * np.where(x > 0, 0.01, 1.0),),
    }),
    Layer("abs", abs_f, abs_b, {
        "no sign": lambda dy, x: (dy.copy(),),
        "ReLU mask for the sign": lambda dy, x: (dy * (x > 0),),
    }),
    Layer("clip", clip_f, clip_b, {
        "passes everything": lambda dy, x: (dy.copy(),),
        "inverted mask": lambda dy, x: (dy * ~((x > -1.0) & (x < 1.0)),),
    }, points=(-1.0, 1.0)),
    Layer("maxpool", pool_f, pool_b, {
        "averages the window": pool_b_average,
        "first element of the window": pool_b_first,
    }, pool=True),
]

SIZES = [4096, 40_000]


def _cases(correct: bool):
    for layer in LAYERS:
        for size in SIZES:
            marks = [pytest.mark.slow] if size > 4096 and layer.name != "relu" else []
            if correct:
                yield pytest.param(layer, None, size, id=f"{layer.name}({size})", marks=marks)
            else:
                for bug in layer.bugs:
                    yield pytest.param(layer, bug, size, id=f"{layer.name}({size}):{bug}",
                                       marks=marks)


@pytest.mark.parametrize("mode", ["directional", "auto"])
@pytest.mark.parametrize(("layer", "bug", "size"), list(_cases(correct=False)))
def test_every_bug_is_caught_at_every_seed(layer, bug, size, mode):
    if mode == "auto" and size <= 4096:
        pytest.skip("auto is full mode at 4k elements: the directions are not used")
    for seed in SEEDS:
        res = gradcheck.check_vjp(layer.fwd, layer.bugs[bug], layer.inputs(seed, size),
                                  mode=mode, seed=seed, localise=False)
        assert res.status == "mismatch", f"seed={seed}\n{res.report()}"


@pytest.mark.parametrize("mode", ["directional", "auto"])
@pytest.mark.parametrize(("layer", "bug", "size"), list(_cases(correct=True)))
def test_no_correct_backward_is_flagged_at_any_seed(layer, bug, size, mode):
    if mode == "auto" and size <= 4096:
        pytest.skip("auto is full mode at 4k elements: the directions are not used")
    for seed in SEEDS:
        res = gradcheck.check_vjp(layer.fwd, layer.bwd, layer.inputs(seed, size), mode=mode,
                                  seed=seed)
        assert res.passed, f"seed={seed}\n{res.report()}"
        assert res.inputs[0].kink_outputs > 0, res.report()
