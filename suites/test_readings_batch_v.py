"""Readings of held-out code met in stop 55's batch V (corpora 280-283). Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


# -- a Jacobian per sample of a batch laid out as column vectors (corpus 283) -----------------
def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_jacobian(z):
    """One (F, F) Jacobian per sample of an (N, F, 1) batch of columns."""
    a = _softmax(z)
    return np.stack([np.diagflat(s) - s @ s.T for s in a])


def _softmax_jacobian_broken(z):
    a = _softmax(z)
    return np.stack([np.diagflat(s) - np.diagflat(s * s) for s in a])  # BUG: -a_i a_i only


@pytest.mark.parametrize("df", [_softmax_jacobian, _softmax_jacobian_broken])
def test_a_jacobian_per_column_sample_is_read(df):
    z = np.random.default_rng(3).standard_normal((3, 4, 1))
    res = gradcheck.check_elementwise(_softmax, df, z)
    assert (res.status == "mismatch") if df is _softmax_jacobian_broken else res.passed, \
        res.report()
    assert any("Jacobian (3, 4, 4)" in n for n in res.notes), res.notes


# -- parameters in a dict, gradients in a dict of the same keys beside it (corpus 283) ---------
class _Dense:
    def __init__(self, bug=False):
        rng = np.random.default_rng(4)
        self.P = {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal((3, 1))}
        self.G = {}
        self.bug = bug

    def forward(self, x):  # a batch of column vectors (N, in, 1)
        self.x = x
        self.z = np.einsum("jk,ikl->ijl", self.P["w"], x) + self.P["b"]
        return np.tanh(self.z)

    def backward(self, da):
        dz = da * (1 - np.tanh(self.z) ** 2)
        self.G["w"] = np.einsum("ijk,ilk->jl", dz, self.x)
        self.G["b"] = dz.sum(axis=0) if not self.bug else dz.mean(axis=0)  # BUG: a mean
        return np.einsum("kj,ikl->ijl", self.P["w"], dz)


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_in_a_dict_keyed_as_the_parameters_dict(bug):
    x = np.random.default_rng(5).standard_normal((3, 4, 1))
    res = gradcheck.check_layer(_Dense(bug), x)
    assert {i.name for i in res.inputs} == {"x0", "P['w']", "P['b']"}, res.report()
    if bug:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["P['b']"], res.report()
    else:
        assert res.passed, res.report()
    assert any("stored in G['w'] (a list or dict of the same shapes" in n for n in res.notes)


# -- the output gradient kept beside a gradient of its shape (corpus 281) ----------------------
class _FullyConnected:
    """Weights ``(in + 1, out)`` with the bias as the last row; the backward keeps the
    output gradient it was handed (``self.error``) and stores ``gradient_wt``: with a
    batch of ``in + 1`` rows both have the weights' shape."""

    def __init__(self, bug=False):
        self.weights = np.random.default_rng(6).standard_normal((4, 2))
        self.bug = bug

    def forward(self, x):
        self.input_tensor = np.hstack([x, np.ones((len(x), 1))])
        return self.input_tensor @ self.weights

    def backward(self, error_tensor):
        self.error = error_tensor
        self.gradient_wt = self.input_tensor.T @ error_tensor
        if self.bug:
            self.gradient_wt = self.gradient_wt / len(error_tensor)  # BUG: a mean
        return error_tensor @ self.weights[:-1].T


@pytest.mark.parametrize("bug", [False, True])
def test_the_output_gradient_kept_is_no_gradient_of_the_weights(bug):
    x = np.random.default_rng(7).standard_normal((4, 3))
    res = gradcheck.check_layer(_FullyConnected(bug), x)
    assert {i.name for i in res.inputs} == {"x0", "weights"}, res.report()
    if bug:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["weights"], res.report()
    else:
        assert res.passed, res.report()
    assert any("stored in gradient_wt" in n for n in res.notes), res.notes


# -- the targets handed to a flag, a loss object held, dropout from np.random (corpus 281) -----
class _BCE:
    def forward(self, y_true, y_pred):
        p = np.clip(y_pred, 1e-12, 1 - 1e-12)
        return float(-np.mean(y_true * np.log(p) + (1 - y_true) * np.log(1 - p)))


class _Net:
    """``_forward(X, training=True)`` (inverted dropout drawn from ``np.random``),
    ``self.loss_fn.forward(y_true, y_pred)``, ``_backward(y_true, y_pred)`` storing
    ``dW``/``db`` (sigmoid output, so the loss's gradient is ``(y_pred - y) / N``)."""

    def __init__(self, bug=False, rate=0.0):
        rng = np.random.default_rng(8)
        self.W1, self.b1 = rng.standard_normal((3, 5)) * 0.5, np.zeros((1, 5))
        self.W2, self.b2 = rng.standard_normal((5, 1)) * 0.5, np.zeros((1, 1))
        self.loss_fn, self.rate, self.bug = _BCE(), rate, bug

    def _forward(self, X, training=True):
        self.X = X
        self.z1 = X @ self.W1 + self.b1
        self.h = np.tanh(self.z1)
        self.mask = np.ones_like(self.h)
        if training and self.rate > 0:
            self.mask = (np.random.rand(*self.h.shape) > self.rate) / (  # noqa: NPY002
                1 - self.rate)  # (the subject's own global draw: what is read)
        self.hd = self.h * self.mask
        return 1 / (1 + np.exp(-(self.hd @ self.W2 + self.b2)))

    def _backward(self, y_true, y_pred):
        d2 = (y_pred - y_true) / len(y_true)
        self.dW2, self.db2 = self.hd.T @ d2, d2.sum(axis=0, keepdims=True)
        dh = d2 @ self.W2.T * self.mask
        d1 = dh if self.bug else dh * (1 - self.h ** 2)  # BUG: tanh's derivative
        self.dW1, self.db1 = self.X.T @ d1, d1.sum(axis=0, keepdims=True)


@pytest.mark.parametrize("rate", [0.0, 0.5])
@pytest.mark.parametrize("bug", [False, True])
def test_targets_given_where_the_forward_takes_a_flag_are_read_as_targets(bug, rate):
    rng = np.random.default_rng(9)
    X, y = rng.standard_normal((4, 3)), np.array([[0.0], [1.0], [1.0], [0.0]])
    res = gradcheck.check_layer(_Net(bug, rate), X, y)
    assert {i.name for i in res.inputs if i.status != "constant"} >= {
        "W1", "b1", "W2", "b2"}, res.report()
    if bug:
        assert res.status == "mismatch", res.report()
        assert {i.name for i in res.inputs if not i.passed} == {"W1", "b1"}, res.report()
    else:
        assert res.passed, res.report()
    assert any("the rest are the targets of loss_fn.forward" in n for n in res.notes)


# -- a network given its loss's gradient and a learning rate (corpus 282) ---------------------
class _StepNet:
    """``forward(X)``, ``compute_loss(Y_pred, Y_true)``, ``compute_loss_gradient(Y_pred,
    Y_true)`` and ``backward(dA, learning_rate)`` keeping its gradients in a cache dict
    and stepping the weights."""

    def __init__(self, bug=False):
        rng = np.random.default_rng(13)
        self.W, self.b = rng.standard_normal((3, 4)) * 0.5, np.zeros((3, 1))
        self.bug = bug

    def forward(self, X):
        self.X = X
        self.A = np.tanh(self.W @ X + self.b)
        return self.A

    def compute_loss(self, Y_pred, Y_true):
        return float(0.5 * np.sum((Y_pred - Y_true) ** 2))

    def compute_loss_gradient(self, Y_pred, Y_true):
        return Y_pred - Y_true

    def backward(self, dA, learning_rate):
        dZ = dA if self.bug else dA * (1 - self.A ** 2)  # BUG: tanh's derivative
        self.cache = {"dW": dZ @ self.X.T, "db": dZ.sum(axis=1, keepdims=True)}
        self.W = self.W - learning_rate * self.cache["dW"]
        self.b = self.b - learning_rate * self.cache["db"]


@pytest.mark.parametrize("bug", [False, True])
def test_a_network_given_its_loss_s_gradient_and_a_learning_rate(bug):
    rng = np.random.default_rng(14)
    X, Y = rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    res = gradcheck.check_layer(_StepNet(bug), X, Y)
    assert {i.name for i in res.inputs if i.status != "constant"} >= {"W", "b"}, res.report()
    if bug:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()
    assert any("given what compute_loss_gradient returns" in n for n in res.notes), res.notes


class _StepOnlyNet(_StepNet):
    """As :class:`_StepNet`, its gradients told by the step alone (corpus 291)."""

    def backward(self, dA, learning_rate):
        dZ = dA * (1 - self.A ** 2)
        self.W = self.W - learning_rate * dZ @ self.X.T
        self.b = self.b - learning_rate * dZ.sum(axis=1, keepdims=True)


def test_a_backward_taking_the_loss_s_gradient_is_never_handed_the_loss_s_own():
    rng = np.random.default_rng(14)
    X, Y = rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    res = gradcheck.check_layer(_StepOnlyNet(), X, Y)  # correct: no failing verdict
    assert res.status not in ("mismatch", "shape-mismatch", "non-finite"), res.report()
