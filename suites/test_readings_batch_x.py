"""Readings of held-out code met in stop 55's batch X (corpora 288-291). Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


# -- the forward's own arguments' gradients stored by their names (corpus 289) -----------------
class _Affine:
    """``forward(A, W, b)`` (the batch along axis 1), ``backward(error)`` returning ``dA``
    and storing ``self.dW`` and ``self.db``."""

    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, A, W, b):
        self.A, self.W, self.b = A, W, b
        return W @ A + b

    def backward(self, error):
        self.db = error.sum(axis=0 if self.bug else 1, keepdims=True)  # BUG: the axis
        self.dW = error @ self.A.T
        return self.W.T @ error


@pytest.mark.parametrize("bug", [False, True])
def test_an_argument_s_gradient_stored_by_its_name_in_another_shape_is_that_mismatch(bug):
    rng = np.random.default_rng(15)
    A, W, b = rng.standard_normal((3, 4)), rng.standard_normal((2, 3)), rng.standard_normal(
        (2, 1))
    res = gradcheck.check_layer(_Affine(bug), A, W, b)
    if bug:  # never 'constant': a gradient named for it was stored
        assert res.status == "shape-mismatch", res.report()
        assert "x2" in res.message, res.report()
    else:
        assert res.passed, res.report()
        assert all(i.status == "ok" for i in res.inputs), res.report()


# -- a derivative written in the output, its argument named f (corpus 289) --------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _sigmoid_grad(f):
    return f * (1 - f)


def _sigmoid_grad_broken(f):
    return f * (1 + f)  # BUG: a sign


def test_a_derivative_of_the_output_named_f_is_no_verdict_and_its_twin_fails():
    x = np.random.default_rng(16).standard_normal((3, 4))
    res = gradcheck.check_elementwise(_sigmoid, _sigmoid_grad, x)
    assert res.status == "bad-protocol" and "df(f(x0))" in res.message, res.report()
    assert gradcheck.check_elementwise(_sigmoid, _sigmoid_grad_broken, x).status == "mismatch"
