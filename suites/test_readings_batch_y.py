"""Readings of held-out code met in stop 55's batch Y (corpora 292-295). Each with a
correct subject that passes and a broken twin that never passes."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import LayerConventionError


# -- a gradients dict keyed otherwise than the parameters dict (corpus 295) -------------------
class _Dense:
    def __init__(self, key="W"):
        rng = np.random.default_rng(20)
        self.params = {"W": rng.standard_normal((3, 4)), "b": rng.standard_normal((1, 4))}
        self.grads = {}
        self.key = key

    def forward(self, x):
        self.input = x
        return np.tanh(x @ self.params["W"] + self.params["b"])

    def backward(self, grad_output):
        grad_z = grad_output * (1 - np.tanh(self.input @ self.params["W"] + self.params["b"])
                                ** 2)
        self.grads[self.key] = self.input.T @ grad_z  # key "w": a trainer finds no grads["W"]
        self.grads["b"] = grad_z.sum(axis=0, keepdims=True)
        return grad_z @ self.params["W"].T


@pytest.mark.parametrize("key", ["W", "w"])
def test_a_gradient_under_another_key_than_its_parameter_s_is_never_read_as_its(key):
    x = np.random.default_rng(21).standard_normal((2, 3))
    if key == "W":
        res = gradcheck.check_layer(_Dense(key), x)
        assert res.passed and {i.name for i in res.inputs} >= {"params['W']"}, res.report()
    else:  # the training loop's grads["W"] is missing: never a pass
        with pytest.raises(LayerConventionError, match=r"grads\['w'\]"):
            gradcheck.check_layer(_Dense(key), x)


# -- (array, gradient) pairs an optimizer reads, cached in __init__ (corpus 295) ---------------
class _PairedDense:
    """``parameters()`` returns ``[(W, dW), (b, db)]`` cached in ``__init__``: the backward
    must write the gradients in place (rebinding ``self.dW`` leaves the pair stale)."""

    def __init__(self, rebind=False):
        rng = np.random.default_rng(22)
        self.W, self.b = rng.standard_normal((3, 4)), np.zeros((1, 4))
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        self._cached_params = [(self.W, self.dW), (self.b, self.db)]
        self.rebind = rebind

    def forward(self, x):
        self._input = x
        return x @ self.W + self.b

    def backward(self, grad):
        if self.rebind:
            self.dW = self._input.T @ grad  # BUG: the optimizer's pair keeps the old array
        else:
            self.dW[...] = self._input.T @ grad
        self.db[...] = grad.sum(axis=0, keepdims=True)
        return grad @ self.W.T

    def parameters(self):
        return self._cached_params


@pytest.mark.parametrize("rebind", [False, True])
def test_a_gradient_rebound_beside_the_pair_an_optimizer_reads_is_stale(rebind):
    x = np.random.default_rng(23).standard_normal((2, 3))
    res = gradcheck.check_layer(_PairedDense(rebind), x)
    if rebind:
        assert res.status == "mismatch" and "stale" in res.message, res.report()
    else:
        assert res.passed, res.report()
        assert {i.name for i in res.inputs} == {"x0", "W", "b"}, res.report()


# -- a backward returning the Jacobian its caller multiplies by (corpus 292) -----------------
class _JacobianLinear:
    """``forward(X) = W @ X`` (columns); ``backward(X)`` returns ``W.T`` whatever it is
    given (the caller multiplies it by the output gradient); ``update(X, delta, LR)``
    steps the weights."""

    def __init__(self):
        self.W = np.random.default_rng(24).standard_normal((3, 4))

    def forward(self, X):
        return self.W @ X

    def backward(self, X):
        return self.W.T

    def update(self, X, delta, LR):  # noqa: N803 - the repository's names
        self.W -= LR * delta @ X.T


def test_a_backward_returning_the_same_array_for_any_gradient_is_no_verdict():
    X = np.random.default_rng(25).standard_normal((4, 3))  # W.T has X's shape
    try:
        res = gradcheck.check_layer(_JacobianLinear(), X)
    except (LayerConventionError, TypeError):
        return  # no verdict, said so
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()
