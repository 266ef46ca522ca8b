"""A network whose forward takes the data alone and whose one method taking the targets
returns the loss beside its gradient (corpus 273: ``forward_pass(x)`` then
``get_loss(true_class) -> (x_grads, loss)``; ``forward(x)`` then ``backwards(y) ->
(loss, grads)``). Each with a correct subject that passes and a broken twin that fails
with a gradient verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradcheck


class _SoftMax:
    def forward_pass(self, x):
        self.input = x - np.max(x)
        self.output = np.exp(self.input) / np.sum(np.exp(self.input))
        return self.output

    def get_loss(self, true_class):
        grads = self.output.copy()
        grads[true_class] -= 1
        return grads, -math.log(self.output[true_class])


class _SoftMaxBroken(_SoftMax):
    def get_loss(self, true_class):
        grads = self.output.copy()
        grads[true_class] -= 0.5  # BUG: half the one-hot term
        return grads, -math.log(self.output[true_class])


class _Net:
    """A dense layer then squared error; ``backwards(y)`` returns ``(loss, dx)`` and
    stores ``dW``, ``db``."""

    def __init__(self, bug=False):
        rng = np.random.default_rng(7)
        self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        self.bug = bug

    def forward(self, x):
        self.x = x
        self.out = np.tanh(x @ self.W + self.b)
        return self.out

    def backwards(self, y):
        r = self.out - y
        loss = float(0.5 * np.sum(r ** 2))
        d = r * (1 - self.out ** 2)
        self.dW = self.x.T @ (r if self.bug else d)  # BUG: tanh's derivative left out
        self.db = d.sum(axis=0)
        return loss, d @ self.W.T


@pytest.mark.parametrize("cls", [_SoftMax, _SoftMaxBroken])
def test_a_method_of_the_targets_returning_the_gradient_beside_the_loss(cls):
    x = np.random.default_rng(5).standard_normal(5)
    res = gradcheck.check_layer(cls(), x, 2)
    assert (res.status == "mismatch") if cls is _SoftMaxBroken else res.passed, res.report()
    assert any("returns the loss (its item 1)" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug", [False, True])
def test_a_network_s_backward_of_the_targets_returning_the_loss_first(bug):
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((2, 4)), rng.standard_normal((2, 3))
    res = gradcheck.check_layer(_Net(bug), x, y)
    assert {i.name for i in res.inputs if i.status != "constant"} >= {"x0", "W", "b"}, \
        res.report()
    if bug:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["W"], res.report()
    else:
        assert res.passed, res.report()
    assert any("backwards(), which returns the loss (its item 0)" in n for n in res.notes)


class _Accuracy(_SoftMax):
    """A method of the targets returning a number that does not move with the data
    (a hit count) beside the gradient: not read as the loss."""

    def get_loss(self, true_class):
        grads = self.output.copy()
        grads[true_class] -= 1
        return grads, 1.0


def test_a_number_that_does_not_move_with_the_data_is_no_loss():
    x = np.random.default_rng(5).standard_normal(5)
    with pytest.raises(TypeError, match="has no backward-like method"):
        gradcheck.check_layer(_Accuracy(), x, 2)


# -- review 106: a method of the targets that steps, or returns an accuracy -----------------
class _Stepping(_Net):
    """``backwards(y)`` returning ``(loss, dx)`` computed before an SGD step it takes."""

    def backwards(self, y):
        loss, dx = super().backwards(y)
        self.W = self.W - 0.5 * self.dW
        self.b = self.b - 0.5 * self.db
        return loss, dx


def test_a_method_of_the_targets_that_steps_is_no_loss_of_this_forward():
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((2, 4)), rng.standard_normal((2, 3))
    res = gradcheck.check_layer(_Stepping(), x, y)  # correct: never a failing verdict
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()


class _Hits(_SoftMax):
    """``get_loss(label)`` returning the gradient beside a hit count, which a move of
    the data can flip (a large batch): no loss."""

    def forward_pass(self, x):
        self.input = x
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.output = e / e.sum(axis=1, keepdims=True)
        return self.output

    def get_loss(self, labels):
        grads = self.output.copy()
        grads[np.arange(len(labels)), labels] -= 1
        return grads / len(labels), float(np.mean(self.output.argmax(axis=1) == labels))


def test_a_number_moving_by_jumps_is_no_loss():
    rng = np.random.default_rng(3)
    x, labels = rng.standard_normal((200, 3)) * 0.1, rng.integers(0, 3, 200)
    with pytest.raises(TypeError, match="has no backward-like method"):
        gradcheck.check_layer(_Hits(), x, labels)
