"""Readings of held-out code met in stop 55's batch U (corpora 276-279). Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


# -- a second forward that stores what the backward needs (corpus 277) -----------------------
class _Layer:
    """``forwardPropagate(x)`` stores nothing; ``zStoreForwardPropagate(x)`` returns the
    same and stores ``prevX``, ``prevZ``; ``backwardPropagate(dOut, learningRate)`` steps
    the weights by ``learningRate`` and returns the input gradient."""

    def __init__(self, bug=False):
        rng = np.random.default_rng(11)
        self.W, self.b = rng.standard_normal((3, 4)) * 0.7, rng.standard_normal(3) * 0.5
        self.prevZ = self.prevX = None
        self.bug = bug

    def backwardPropagate(self, dOut, learningRate):  # noqa: N802, N803 - its names
        delta = dOut if self.bug else self.prevZ * (1.0 - self.prevZ) * dOut  # BUG: derivative
        held = delta @ self.W
        self.W -= learningRate * delta.T @ self.prevX
        self.b -= learningRate * delta.sum(axis=0)
        return held

    def forwardPropagate(self, x):  # noqa: N802
        return 1.0 / (1.0 + np.exp(-(x @ self.W.T) - self.b))

    def zStoreForwardPropagate(self, x):  # noqa: N802
        self.prevX = x
        self.prevZ = 1.0 / (1.0 + np.exp(-(x @ self.W.T) - self.b))
        return self.prevZ


@pytest.mark.parametrize("bug", [False, True])
def test_the_forward_that_stores_what_the_backward_needs_is_taken(bug):
    x = np.random.default_rng(12).standard_normal((3, 4))
    res = gradcheck.check_layer(_Layer(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {i.name for i in res.inputs} == {"x0", "W", "b"}, res.report()
    assert any("zStoreForwardPropagate, the one other method named as a forward" in n
               for n in res.notes), res.notes


# -- a backward taking the output under the loss's name for it, returning lists (276) -----
class _MLP:
    """``forward(x)`` (softmax), ``loss(y_hat, y)`` and ``backward(y_hat, y)`` returning
    ``(dws, dbs)``, lists laid out as ``self.ws`` and ``self.bs``."""

    def __init__(self, bug=False):
        rng = np.random.default_rng(21)
        self.ws = [rng.standard_normal((4, 5)) * 0.5, rng.standard_normal((5, 3)) * 0.5]
        self.bs = [rng.standard_normal(5) * 0.1, rng.standard_normal(3) * 0.1]
        self.bug = bug

    def forward(self, x):
        self.hs, self.zs = [x], []
        z = x @ self.ws[0] + self.bs[0]
        self.zs.append(z)
        h = np.maximum(z, 0)
        self.hs.append(h)
        z = h @ self.ws[1] + self.bs[1]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        output = e / e.sum(axis=1, keepdims=True)
        return output

    def loss(self, y_hat, y):
        return float(-np.mean(np.log(y_hat[np.arange(len(y)), y])))

    def backward(self, y_hat, y):
        n = len(y)
        phi = y_hat.copy()
        phi[np.arange(n), y] -= 1
        dw1, db1 = self.hs[1].T @ phi / n, phi.mean(axis=0)
        phi = phi @ self.ws[1].T * (self.zs[0] > 0)
        dw0 = self.hs[0].T @ phi / n
        db0 = phi.sum(axis=0) if self.bug else phi.mean(axis=0)  # BUG: the 1/N
        return [dw0, dw1], [db0, db1]


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_output_as_the_loss_names_it_returning_lists(bug):
    rng = np.random.default_rng(22)
    x, y = rng.standard_normal((4, 4)), np.array([0, 2, 1, 2])
    res = gradcheck.check_layer(_MLP(bug), x, y)
    assert {i.name for i in res.inputs if i.status != "constant"} >= {
        "ws[0]", "ws[1]", "bs[0]", "bs[1]"}, res.report()
    if bug:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["bs[0]"], res.report()
    else:
        assert res.passed, res.report()
    assert any("given the forward's output by name" in n for n in res.notes), res.notes
