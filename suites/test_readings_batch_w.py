"""Readings of held-out code met in stop 55's batch W (corpora 284-287). Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


# -- grad_x(x, grad_out) beside grad_params(x, grad_out), the output gradient dropped (285) --
class _ReLU:
    def forward(self, x):
        return np.maximum(0, x)

    def grad_x(self, x, grad_out):
        return grad_out * (x > 0)

    def grad_params(self, x, grad_out):
        return []

    def num_params(self):
        return 0


class _ReLUBroken(_ReLU):
    def grad_x(self, x, grad_out):
        return 1.0 * (x > 0)  # BUG: the output gradient dropped


@pytest.mark.parametrize("cls", [_ReLU, _ReLUBroken])
def test_a_method_taking_the_inputs_and_a_named_output_gradient_is_the_backward(cls):
    x = np.random.default_rng(10).standard_normal((4, 5))
    x[np.abs(x) < 0.1] = 0.5  # away from the kink
    res = gradcheck.check_layer(cls(), x)
    assert (res.status == "mismatch") if cls is _ReLUBroken else res.passed, res.report()
    assert any("grad_x" in n for n in res.notes), res.notes


# -- a function pair returning the input's gradient last, under names (corpus 284) -----------
def _ffn(Z, W1, W2):
    return np.tanh(Z @ W1) @ W2


def _deriv_ffn(dY, X, W1, W2):
    h = np.tanh(X @ W1)
    dW2 = h.T @ dY
    dh = dY @ W2.T * (1 - h ** 2)
    dW1 = X.T @ dh
    dX_total = dh @ W1.T
    return dW1, dW2, dX_total


def _deriv_ffn_broken(dY, X, W1, W2):
    h = np.tanh(X @ W1)
    dW2 = h.T @ dY
    dh = dY @ W2.T  # BUG: tanh's derivative left out
    dW1 = X.T @ dh
    dX_total = dh @ W1.T
    return dW1, dW2, dX_total


@pytest.mark.parametrize("bwd", [_deriv_ffn, _deriv_ffn_broken])
def test_gradients_returned_in_another_order_are_placed_by_their_names(bwd):
    rng = np.random.default_rng(11)
    Z, W1, W2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(
        (5, 2))
    res = gradcheck.check_vjp(_ffn, bwd, [Z, W1, W2])
    if bwd is _deriv_ffn:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch", res.report()
        assert {i.name for i in res.inputs if not i.passed} == {"Z", "W1"}, res.report()
    assert any("read by their names as the gradients of" in n for n in res.notes), res.notes


# -- a backward taking inputs by their names but for case (corpus 284) -------------------------
def _ffn2(X, W1, B1, W2, B2):
    return np.tanh(X @ W1 + B1) @ W2 + B2


def _deriv_ffn2(dY, X, W1, b1, W2):
    h = np.tanh(X @ W1 + b1)
    dW2, db2 = h.T @ dY, dY.sum(axis=0, keepdims=True)
    dh = dY @ W2.T * (1 - h ** 2)
    dW1, db1 = X.T @ dh, dh.sum(axis=0, keepdims=True)
    dX = dh @ W1.T
    return dW2, db2, dW1, db1, dX


def _deriv_ffn2_broken(dY, X, W1, b1, W2):
    h = np.tanh(X @ W1 + b1)
    dW2, db2 = h.T @ dY, dY.sum(axis=0, keepdims=True)
    dh = dY @ W2.T * (1 - h ** 2)
    dW1, db1 = X.T @ dh, 2 * dh.sum(axis=0, keepdims=True)  # BUG: twice the bias gradient
    dX = dh @ W1.T
    return dW2, db2, dW1, db1, dX


@pytest.mark.parametrize("bwd", [_deriv_ffn2, _deriv_ffn2_broken])
def test_inputs_taken_back_by_their_names_but_for_case(bwd):
    rng = np.random.default_rng(12)
    X, W1, W2 = (rng.standard_normal(s) for s in ((3, 4), (4, 5), (5, 2)))
    B1, B2 = rng.standard_normal((1, 5)), rng.standard_normal((1, 2))
    res = gradcheck.check_vjp(_ffn2, bwd, [X, W1, B1, W2, B2])
    if bwd is _deriv_ffn2:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["B1"], res.report()
    assert any("by their names and dY, the output gradient" in n for n in res.notes), res.notes
