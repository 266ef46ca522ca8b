"""A catalog of classic backprop bugs, each next to its correct twin.

Each :class:`Case` has a forward, a correct backward, a buggy backward and a way to
draw inputs from a seeded generator. The test suites check that the checker catches
every bug and passes every twin; the report shows the same table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import erf

from ._layers import (
    attention_backward,
    attention_forward,
    batchnorm_backward,
    batchnorm_forward,
    cross_entropy_backward,
    cross_entropy_forward,
    embedding_backward,
    embedding_forward,
    gelu_forward,
    layernorm_backward,
    layernorm_forward,
    linear_backward,
    linear_forward,
    softmax,
    tanh_backward,
    tanh_forward,
)
from ._shapes import (
    _activation,
    _conv,
    _pool,
    _unreduced,
)

__all__ = ["CASES", "Case"]

Arrays = list[np.ndarray]


@dataclass(frozen=True)
class Case:
    """One bug and its correct twin.

    Attributes
    ----------
    name : str
    description : str
    make : callable
        ``make(rng, dtype) -> (fwd, good_bwd, bad_bwd, inputs)``.
    hint_class : str
        A phrase that a hint naming the class of this bug contains; empty when no class
        of :mod:`gradcheck.check._hints` describes it (then the right hint is none).
    status : str
        The status the check of the bug ends with (``"mismatch"``, or
        ``"shape-mismatch"`` for a gradient of the wrong shape).
    """

    name: str
    description: str
    make: Callable[[np.random.Generator, np.dtype[Any]], tuple[Any, Any, Any, Arrays]]
    hint_class: str = ""  # a phrase the hint must contain to name the class ("" : none)
    status: str = "mismatch"


def _n(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, scale: float = 1.0) -> Any:
    return (scale * rng.standard_normal(shape)).astype(dtype)


# -- linear --------------------------------------------------------------------------
def _linear(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    n = 5  # square shapes, where the classic mistakes do not crash
    x, W, b = _n(rng, (n, n), dtype), _n(rng, (n, n), dtype), _n(rng, (n,), dtype)

    def good(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        return linear_backward(dy, c)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        dx, dW, db = linear_backward(dy, c)
        x_, W_ = c
        if bug == "transposed_dW":
            dW = (x_.T @ dy).T
        elif bug == "missing_transpose":
            dx = dy @ W_
        elif bug == "bias_axis":
            db = dy.sum(axis=1)
        elif bug == "sign_flip_one":
            dW = dW.copy()
            dW[1, 2] = -dW[1, 2]
        elif bug == "column_zeroed":
            dW = dW.copy()
            dW[:, 3] = 0
        return dx, dW, db

    return linear_forward, good, bad, [x, W, b]


# -- softmax ---------------------------------------------------------------------------
def _softmax(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    s = _n(rng, (4, 6), dtype)

    def fwd(s_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = softmax(s_)
        return p, p

    def good(dp: np.ndarray, p: np.ndarray) -> tuple[np.ndarray]:
        return (p * (dp - np.sum(dp * p, axis=-1, keepdims=True)),)

    def bad(dp: np.ndarray, p: np.ndarray) -> tuple[np.ndarray]:
        return (p * dp,)

    return fwd, good, bad, [s]


# -- layernorm -------------------------------------------------------------------------
def _layernorm(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (4, 8), dtype)
    g = (1 + 0.1 * rng.standard_normal(8)).astype(dtype)
    b = _n(rng, (8,), dtype, 0.1)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        xhat, rstd, gamma = c
        _, dg, db = layernorm_backward(dy, c)
        gg = dy * gamma
        if bug == "mean":
            dx = rstd * (gg - xhat * np.mean(gg * xhat, axis=-1, keepdims=True))
        else:
            dx = rstd * (gg - gg.mean(axis=-1, keepdims=True))
        return dx, dg, db

    return layernorm_forward, layernorm_backward, bad, [x, g, b]


# -- activations -----------------------------------------------------------------------
def _gelu_mixed(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (6, 6), dtype, 2.0)

    def good(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        x_, cdf = c
        pdf = np.exp(-0.5 * x_ * x_) / math.sqrt(2 * math.pi)
        return (dy * (cdf + x_ * pdf),)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        # the derivative of the tanh approximation under an exact-GELU forward
        x_ = c.x
        k = math.sqrt(2 / math.pi)
        t = np.tanh(k * (x_ + 0.044715 * x_**3))
        return (dy * (0.5 * (1 + t) + 0.5 * x_ * (1 - t * t) * k * (1 + 3 * 0.044715 * x_**2)),)

    return gelu_forward, good, bad, [x]


def _tanh(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (6, 6), dtype)

    def good(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        return (tanh_backward(dy, c),)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        if bug == "one_minus_t":
            return (dy * (1 - c.aux),)
        return (tanh_backward(dy, c) * (1 + 1e-4),)

    return tanh_forward, good, bad, [x]


# -- attention -------------------------------------------------------------------------
def _attention(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    t, c = 4, 4
    x = _n(rng, (t, c), dtype)
    ws = [_n(rng, (c, c), dtype, 0.7) for _ in range(4)]

    def good(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
        return attention_backward(dy, cache)

    def bad(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
        if bug == "query_only":
            return attention_backward(dy, cache, query_only=True)
        return attention_backward(dy, cache._replace(scale=1.0))

    return attention_forward, good, bad, [x, *ws]


# -- residual ------------------------------------------------------------------------
def _residual(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    x, W = _n(rng, (4, 5), dtype), _n(rng, (5, 5), dtype, 0.5)

    def fwd(x_: np.ndarray, W_: np.ndarray) -> Any:
        z = x_ @ W_
        t = np.tanh(z)
        return x_ + t, (x_, W_, t)

    def good(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        x_, W_, t = c
        dz = dy * (1 - t * t)
        return dy + dz @ W_.T, x_.T @ dz

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        x_, W_, t = c
        dz = dy * (1 - t * t)
        return dz @ W_.T, x_.T @ dz  # the skip branch's dy is dropped

    return fwd, good, bad, [x, W]


# -- embedding -------------------------------------------------------------------------
def _embedding(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    v, t, c = 5, 6, 3
    tokens = rng.integers(0, v, (2, t))
    tokens[0, :2] = 1  # repeated ids guaranteed
    E, P = _n(rng, (v, c), dtype), _n(rng, (t, c), dtype)

    def good(dy: np.ndarray, cache: Any) -> tuple[Any, ...]:
        return (None, *embedding_backward(dy, cache))

    def bad(dy: np.ndarray, cache: Any) -> tuple[Any, ...]:
        dE, dP = embedding_backward(dy, cache)
        dE = np.zeros_like(dE)
        dE[cache.tokens.reshape(-1)] = dy.reshape(-1, dy.shape[-1])  # assigns, last wins
        return None, dE, dP

    return embedding_forward, good, bad, [tokens, E, P]


# -- dropout ---------------------------------------------------------------------------
def _dropout(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (6, 6), dtype)
    keep = 0.8
    mask = (rng.random((6, 6)) < keep).astype(dtype)

    def fwd(x_: np.ndarray) -> Any:
        return x_ * mask / keep, mask

    def good(dy: np.ndarray, m: np.ndarray) -> tuple[np.ndarray]:
        return (dy * m / keep,)

    def bad(dy: np.ndarray, m: np.ndarray) -> tuple[np.ndarray]:
        return (dy * m,)

    return fwd, good, bad, [x]


# -- clipping inside the backward ------------------------------------------------------
def _clipped(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    x = _n(rng, (6, 6), dtype)

    def fwd(x_: np.ndarray) -> Any:
        return 3.0 * np.sinh(x_), x_

    def good(dy: np.ndarray, x_: np.ndarray) -> tuple[np.ndarray]:
        return (dy * 3.0 * np.cosh(x_),)

    def bad(dy: np.ndarray, x_: np.ndarray) -> tuple[np.ndarray]:
        return (np.clip(dy * 3.0 * np.cosh(x_), -1.0, 1.0),)

    return fwd, good, bad, [x]


# -- cross-entropy ---------------------------------------------------------------------
def _ce_pair(targets: np.ndarray) -> tuple[Any, Any]:
    """The cross-entropy forward against ``targets`` and its correct backward."""

    def fwd(z: np.ndarray) -> Any:
        loss, cache = cross_entropy_forward(z, targets)
        return np.asarray(loss), cache

    def good(dl: np.ndarray, c: Any) -> tuple[np.ndarray]:
        return (cross_entropy_backward(float(dl), c),)

    return fwd, good


def _cross_entropy(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    logits = _n(rng, (2, 3, 5), dtype)
    targets = rng.integers(0, 5, (2, 3))
    fwd, good = _ce_pair(targets)

    def bad(dl: np.ndarray, c: Any) -> tuple[np.ndarray]:
        return (cross_entropy_backward(float(dl), c) * targets.size,)

    return fwd, good, bad, [logits]


def _erf_scaled(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    """A smooth layer whose gradient is wrong by a relative 1e-6 (float64 target)."""
    x = _n(rng, (6, 6), dtype)

    def fwd(x_: np.ndarray) -> Any:
        return erf(x_), x_

    def good(dy: np.ndarray, x_: np.ndarray) -> tuple[np.ndarray]:
        return (dy * 2 / math.sqrt(math.pi) * np.exp(-x_ * x_),)

    def bad(dy: np.ndarray, x_: np.ndarray) -> tuple[np.ndarray]:
        return (good(dy, x_)[0] * (1 + 1e-6),)

    return fwd, good, bad, [x]


# -- normalisations over the batch --------------------------------------------------------
def _batchnorm(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    shape = (4, 3, 4) if bug == "spatial_mean" else (8, 5)
    x = _n(rng, shape, dtype)
    g = (1 + 0.1 * rng.standard_normal(shape[1])).astype(dtype)
    b = _n(rng, (shape[1],), dtype, 0.1)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        return batchnorm_backward(dy, c, mean_term=bug == "var", var_term=bug != "var")

    return batchnorm_forward, batchnorm_backward, bad, [x, g, b]


# -- softmax and its losses -----------------------------------------------------------------
def _softmax_bug(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    s = _n(rng, (5, 6), dtype)
    log = bug == "log_missing"

    def fwd(s_: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        p = softmax(s_)
        return (np.log(p) if log else p), (p, s_)

    def good(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        p, _ = c
        if log:
            return (dy - p * dy.sum(axis=-1, keepdims=True),)
        return (p * (dy - np.sum(dy * p, axis=-1, keepdims=True)),)

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray]:
        p, s_ = c
        if log:
            return (dy.copy(),)  # the - p * sum(dy) term is missing
        if bug == "axis":
            return (p * (dy - np.sum(dy * p, axis=0, keepdims=True)),)
        if bug == "logits":  # the cached logits where the probabilities belong
            return (s_ * (dy - np.sum(dy * s_, axis=-1, keepdims=True)),)
        return (dy * p * (1 - p),)  # the Jacobian's diagonal only

    return fwd, good, bad, [s]


def _cross_entropy_onehot(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    logits = _n(rng, (6, 5), dtype)
    targets = rng.integers(0, 5, 6)
    fwd, good = _ce_pair(targets)

    def bad(dl: np.ndarray, c: Any) -> tuple[np.ndarray]:
        p, t = c
        return (p * (float(dl) / t.size),)  # p instead of p - onehot(target)

    return fwd, good, bad, [logits]


def _mse(rng: np.random.Generator, dtype: Any, bug: str) -> tuple[Any, Any, Any, Arrays]:
    y, t = _n(rng, (6, 4), dtype), _n(rng, (6, 4), dtype)

    def fwd(y_: np.ndarray) -> Any:
        r = y_ - t
        return np.asarray(np.mean(r * r)), r

    def good(dl: np.ndarray, r: np.ndarray) -> tuple[np.ndarray]:
        return (2 * r * (float(dl) / r.size),)

    def bad(dl: np.ndarray, r: np.ndarray) -> tuple[np.ndarray]:
        if bug == "sign":
            return (-2 * r * (float(dl) / r.size),)  # (t - y) for (y - t)
        return (r * (float(dl) / r.size),)  # the 2 of the square is missing

    return fwd, good, bad, [y]


def _weight_decay(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    x, W, t = _n(rng, (6, 4), dtype), _n(rng, (4, 3), dtype), _n(rng, (6, 3), dtype)
    lam = 0.05

    def fwd(x_: np.ndarray, W_: np.ndarray) -> Any:
        r = x_ @ W_ - t
        return np.asarray(0.5 * np.sum(r * r) + 0.5 * lam * np.sum(W_ * W_)), (x_, W_, r)

    def good(dl: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        x_, W_, r = c
        return (r @ W_.T) * dl, (x_.T @ r + lam * W_) * dl

    def bad(dl: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        x_, W_, r = c
        return (r @ W_.T) * dl, (x_.T @ r) * dl  # the L2 term's lam * W is missing

    return fwd, good, bad, [x, W]


# -- gradients of parameters left per example -----------------------------------------------
def _dropout_mask(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    fwd, good, _, inputs = _dropout(rng, dtype)

    def bad(dy: np.ndarray, m: np.ndarray) -> tuple[np.ndarray]:
        return (dy / 0.8,)  # the mask is missing

    return fwd, good, bad, inputs


# -- convolution and pooling ---------------------------------------------------------------

def _layernorm_axis(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any, Any, Arrays]:
    fwd, good, _, inputs = _layernorm(rng, dtype, "mean")

    def bad(dy: np.ndarray, c: Any) -> tuple[np.ndarray, ...]:
        _, dg, db = layernorm_backward(dy, c)
        gg = dy * c.gamma
        dx = c.rstd * (gg - gg.mean(axis=0, keepdims=True)  # the mean over the batch
                       - c.xhat * (gg * c.xhat).mean(axis=-1, keepdims=True))
        return dx, dg, db

    return fwd, good, bad, inputs


CASES: list[Case] = [
    Case("linear_transposed_dW", "linear: weight gradient transposed (square W)",
         lambda r, d: _linear(r, d, "transposed_dW"),
         "transpose"),
    Case("linear_missing_transpose", "linear: dx = dy W instead of dy W^T",
         lambda r, d: _linear(r, d, "missing_transpose"),
         "transpose"),
    Case("linear_bias_axis", "linear: bias gradient summed over the wrong axis",
         lambda r, d: _linear(r, d, "bias_axis"),
         "wrong axis"),
    Case("softmax_missing_sum", "softmax backward without the sum(dp * p) term", _softmax,
         "softmax"),
    Case("layernorm_missing_mean", "LayerNorm backward without the mean term",
         lambda r, d: _layernorm(r, d, "mean"),
         "mean term"),
    Case("layernorm_missing_var", "LayerNorm backward without the variance term",
         lambda r, d: _layernorm(r, d, "var"),
         "variance term"),
    Case("gelu_tanh_under_exact", "tanh-approximation GELU backward under an exact GELU",
         _gelu_mixed, "approximation mismatch"),
    Case("tanh_one_minus_t", "tanh derivative written 1 - t",
         lambda r, d: _tanh(r, d, "one_minus_t"), "derivative formula"),
    Case("attention_query_only", "attention input gradient from the query branch only",
         lambda r, d: _attention(r, d, "query_only"),
         "branch"),
    Case("attention_missing_scale", "attention backward without the 1/sqrt(d) scale",
         lambda r, d: _attention(r, d, "scale"),
         "factor"),
    Case("residual_dropped_skip", "residual block whose skip gradient is dropped", _residual,
         "skip"),
    Case("embedding_assign", "embedding backward assigns instead of accumulating repeats",
         _embedding,
         "repeated indices"),
    Case("dropout_no_rescale", "dropout backward without the 1/keep rescale", _dropout,
         "factor"),
    Case("clipped_in_backward", "gradient clipped inside the backward", _clipped,
         "clipp"),
    Case("cross_entropy_no_mean", "cross-entropy gradient without 1/N", _cross_entropy,
         "1/N"),
    Case("sign_flip_one_element", "one element of dW with a flipped sign",
         lambda r, d: _linear(r, d, "sign_flip_one"),
         "sign"),
    Case("column_zeroed", "one column of dW zeroed", lambda r, d: _linear(r, d, "column_zeroed"),
         "zero"),
    Case("scaled_1e-4", "the whole gradient scaled by 1 + 1e-4", lambda r, d: _tanh(r, d, "scale"),
         "relative"),
    # the classes issue 19 named
    Case("batchnorm_missing_mean", "BatchNorm backward without the mean term",
         lambda r, d: _batchnorm(r, d, "mean"), "mean term"),
    Case("batchnorm_missing_var", "BatchNorm backward without the variance term",
         lambda r, d: _batchnorm(r, d, "var"), "variance term"),
    Case("spatial_batchnorm_missing_mean", "BatchNorm over (N, C, L) without the mean term",
         lambda r, d: _batchnorm(r, d, "spatial_mean"), "mean term"),
    Case("softmax_sum_wrong_axis", "softmax backward summing over the batch axis",
         lambda r, d: _softmax_bug(r, d, "axis"), "wrong axis"),
    Case("softmax_diagonal_only", "softmax backward with the Jacobian's diagonal p(1-p) only",
         lambda r, d: _softmax_bug(r, d, "diag"), "diagonal of the softmax Jacobian"),
    Case("log_softmax_missing_sum", "log-softmax backward without the p * sum(dy) term",
         lambda r, d: _softmax_bug(r, d, "log_missing"), "without its sum term"),
    Case("cross_entropy_missing_onehot", "cross-entropy gradient p instead of p - onehot",
         _cross_entropy_onehot, "one-hot"),
    Case("linear_bias_unreduced", "linear: bias gradient not summed over the batch",
         lambda r, d: _unreduced(r, d, "linear_bias"), "not reduced over the batch",
         "shape-mismatch"),
    Case("layernorm_gain_unreduced", "LayerNorm: gain gradient not summed over the batch",
         lambda r, d: _unreduced(r, d, "layernorm_gain"), "not reduced over the batch",
         "shape-mismatch"),
    Case("linear_dW_transposed_shape", "linear: dW = dy^T x for a non-square W",
         lambda r, d: _unreduced(r, d, "linear_dW_T"), "transpose", "shape-mismatch"),
    Case("softmax_at_logits", "softmax backward evaluated at the logits",
         lambda r, d: _softmax_bug(r, d, "logits"), "wrong tensor"),
    Case("sigmoid_of_preactivation", "sigmoid derivative s(1-s) taken of the input",
         lambda r, d: _activation(r, d, "sigmoid_input"), "wrong tensor"),
    Case("sigmoid_applied_twice", "sigmoid derivative taken of the output (sigmoid(s))",
         lambda r, d: _activation(r, d, "sigmoid_twice"), "wrong tensor"),
    Case("tanh_of_preactivation", "tanh derivative 1 - t^2 taken of the input",
         lambda r, d: _activation(r, d, "tanh_input"), "wrong tensor"),
    # more classic bugs
    Case("relu_mask_missing", "ReLU backward without its mask",
         lambda r, d: _activation(r, d, "relu_nomask"), "mask"),
    Case("leaky_relu_slope_missing", "leaky ReLU backward without its negative slope",
         lambda r, d: _activation(r, d, "leaky_slope"), "negative side"),
    Case("relu_mask_inverted", "ReLU backward with the mask x <= 0",
         lambda r, d: _activation(r, d, "relu_inverted"), "inverted mask"),
    Case("dropout_mask_missing", "dropout backward without its mask", _dropout_mask,
         "mask"),
    Case("maxpool_every_element", "max-pool backward sending dy to every element of a window",
         lambda r, d: _pool(r, d, "max_all"), "mask"),
    Case("avgpool_missing_scale", "average-pool backward without the 1/k",
         lambda r, d: _pool(r, d, "avg_scale"), "factor"),
    Case("mse_missing_two", "squared-error gradient without the 2",
         lambda r, d: _mse(r, d, "two"), "factor of 1/2"),
    Case("mse_sign_flipped", "squared-error gradient (t - y) for (y - t)",
         lambda r, d: _mse(r, d, "sign"), "sign flipped"),
    Case("weight_decay_missing", "L2-regularised loss whose backward forgets lam * W",
         _weight_decay, "weight decay"),
    Case("conv_kernel_not_flipped", "conv1d kernel gradient reversed",
         lambda r, d: _conv(r, d, "flip"), "flip"),
    Case("conv_off_by_one", "conv1d input gradient shifted by one index",
         lambda r, d: _conv(r, d, "shift"), "off-by-one"),
    Case("layernorm_mean_over_batch", "LayerNorm backward taking its mean over the batch axis",
         _layernorm_axis),
]

#: Cases only float64 is expected to catch (a relative 1e-6).
CASES_FLOAT64_ONLY: list[Case] = [
    Case("scaled_1e-6", "the whole gradient scaled by 1 + 1e-6", _erf_scaled,
         "relative"),
]
