"""Readings by observation found on held-out code (corpora 196 on): each with a correct
subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- gradients stored under each other's names are no gradients of the other by shape ------
class _Conv:
    """``backward(g)`` returns dx and stores ``grad_W`` / ``grad_b`` (swapped: the bug)."""

    def __init__(self, swap):
        r = np.random.default_rng(701)
        self.W, self.b, self.swap = r.standard_normal((3, 2)), r.standard_normal(3), swap

    def forward(self, x):
        self.x = x
        return x @ self.W.T + self.b

    def backward(self, g):
        dW, db = g.T @ self.x, g.sum(0)
        self.grad_W, self.grad_b = (db, dW) if self.swap else (dW, db)
        return g @ self.W


@pytest.mark.parametrize("swap", [False, True])
def test_gradients_stored_under_each_others_names_are_a_shape_mismatch(swap):
    res = gradcheck.check_layer(_Conv(swap), np.random.default_rng(702).standard_normal((4, 2)))
    if swap:
        assert res.status == "shape-mismatch" and "grad_W" in res.message, res.report()
    else:
        _expect(res, None)
        assert res.coverage == "checked 3/3 tensors", res.report()
