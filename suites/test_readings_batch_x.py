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


# -- a flat gradient vector beside the flat parameter vector (corpus 289, Welch Labs) --------
class _Welch:
    def __init__(self, bug=False):
        rng = np.random.default_rng(17)
        self.W1, self.W2 = rng.standard_normal((2, 3)), rng.standard_normal((3, 1))
        self.bug = bug

    def forward(self, X):
        self.z2 = X @ self.W1
        self.a2 = 1 / (1 + np.exp(-self.z2))
        self.z3 = self.a2 @ self.W2
        return 1 / (1 + np.exp(-self.z3))

    def costFunction(self, X, y):  # noqa: N802 - the repository's names
        return float(0.5 * np.sum((y - self.forward(X)) ** 2))

    def costFunctionPrime(self, X, y):  # noqa: N802
        yHat = self.forward(X)  # noqa: N806
        delta3 = -(y - yHat) * yHat * (1 - yHat)
        dJdW2 = self.a2.T @ delta3  # noqa: N806
        delta2 = delta3 @ self.W2.T * (1 if self.bug else self.a2 * (1 - self.a2))  # BUG
        return X.T @ delta2, dJdW2

    def computeGradients(self, X, y):  # noqa: N802
        dJdW1, dJdW2 = self.costFunctionPrime(X, y)  # noqa: N806
        return np.concatenate((dJdW1.ravel(), dJdW2.ravel()))

    def getParams(self):  # noqa: N802
        return np.concatenate((self.W1.ravel(), self.W2.ravel()))

    def setParams(self, params):  # noqa: N802
        self.W1 = params[:6].reshape(2, 3)
        self.W2 = params[6:].reshape(3, 1)


@pytest.mark.parametrize("bug", [False, True])
def test_a_flat_gradient_is_split_as_the_flat_parameters_are_joined(bug):
    rng = np.random.default_rng(18)
    X, y = rng.standard_normal((4, 2)), rng.uniform(0, 1, (4, 1))
    res = gradcheck.check_layer(_Welch(bug), X, y)
    assert {i.name for i in res.inputs if i.status != "constant"} >= {"W1", "W2"}, \
        res.report()
    if bug:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["W1"], res.report()
    else:
        assert res.passed, res.report()


# -- a regression loss storing one gradient for two float inputs (corpus 290) ----------------
class _MSE:
    def forward(self, y_pred, y_true):
        return np.mean((y_true - y_pred) ** 2)

    def backward(self, y_pred, y_true):
        self.dinputs = -2 * (y_true - y_pred) / y_pred.size


class _MSEBroken(_MSE):
    def backward(self, y_pred, y_true):
        self.dinputs = 2 * (y_true - y_pred) / y_pred.size  # BUG: the sign


class _MSETargetFirst:
    def forward(self, y_true, y_pred):
        return np.mean((y_true - y_pred) ** 2)

    def backward(self, y_true, y_pred):
        self.dinputs = -2 * (y_true - y_pred) / y_pred.size


@pytest.mark.parametrize("cls", [_MSE, _MSEBroken, _MSETargetFirst])
def test_a_loss_storing_one_gradient_for_two_float_inputs_reads_the_prediction_s(cls):
    rng = np.random.default_rng(19)
    a, b = rng.standard_normal((4, 1)), rng.standard_normal((4, 1))
    res = gradcheck.check_layer(cls(), a, b)
    k = 1 if cls is _MSETargetFirst else 0
    assert (res.status == "mismatch") if cls is _MSEBroken else res.passed, res.report()
    assert res.inputs[1 - k].status == "constant", res.report()
    assert any(f"read as x{k}'s" in n for n in res.notes), res.notes


def test_no_hint_calls_a_derivative_of_the_output_a_bug():
    x = np.random.default_rng(16).standard_normal((3, 4))
    res = gradcheck.check_elementwise(_sigmoid, _sigmoid_grad, x)
    assert all("wrong tensor" not in i.hint for i in res.inputs), res.report()
    assert any("derivative of f's output" in i.hint for i in res.inputs), res.report()
