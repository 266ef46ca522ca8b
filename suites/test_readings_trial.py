"""Readings by observation found on held-out code (corpora 98 on): method names spelt
otherwise, and which of several runnable call orders a backward means. Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- misspelt method names: foward / backword -------------------------------------------------
class _Affine:
    """``foward(x, train)`` returns ``x @ W + B``; ``backword(out, input, output)`` (the
    network hands it the forward's input and output again) stores ``dw``/``db``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(150)
        self.W, self.B = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.bug = bug

    def foward(self, x, train):
        return x @ self.W + self.B

    def backword(self, out, input, output):
        self.db = out.sum(0) if self.bug != "db" else out.mean(0)
        self.dw = input.T @ out
        return out @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("db", ["B"])])
def test_misspelt_forward_and_backward_are_found(bug, failing):
    x = np.random.default_rng(151).standard_normal((4, 3))
    res = gradcheck.check_layer(_Affine(bug), x, True)
    _expect(res, failing)
    assert any("foward" in n for n in res.notes), res.notes


def test_a_misspelling_is_no_method_of_another_kind():
    class Words:
        def fold(self, x):
            return x

        def flowed(self, x):
            return x

        def backup(self, g):
            return g

    with pytest.raises(TypeError, match="no forward-like method"):
        gradcheck.check_layer(Words(), np.ones(3))


# -- several call orders run: what they store, then the arguments' names, settle it ----------
def test_an_order_storing_a_weight_gradient_of_no_weights_shape_is_not_taken():
    """``backword(out, input, output)``: given the output for the input, ``input.T @ out``
    is (2, 2), no array's shape; the return is the same either way."""
    x = np.random.default_rng(152).standard_normal((4, 3))
    layer = _Affine()
    res = gradcheck.check_layer(layer, x, True)
    assert res.passed and {"W", "B"} <= {i.name for i in res.inputs}, res.report()


class _Relu:
    """``backward(dout, input, output)``: masks on the input; its twin masks on the
    output, which is never below zero (no mask at all)."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, x, train):
        return np.maximum(x, 0)

    def backward(self, dout, input, output):
        return dout * (input >= 0) if not self.bug else dout * (output >= 0)


@pytest.mark.parametrize("bug, failing", [("", None), ("mask", ["x0"])])
def test_arguments_named_input_and_output_settle_the_order(bug, failing):
    x = np.random.default_rng(153).standard_normal((4, 5))
    x[np.abs(x) < 0.1] = 0.5
    _expect(gradcheck.check_layer(_Relu(bug), x, True), failing)


def test_names_that_do_not_settle_it_give_no_reading():
    """``backward(a, b, c)``, or ``backward(a, x, output)`` naming the output alone, of a
    ReLU masking on either: which argument is the input is not said, so no order is
    taken (``backward(grad, output)`` of one input is the same, test_readings_returns)."""
    class Relu:
        def forward(self, x, train):
            return np.maximum(x, 0)

        def backward(self, a, b, c):
            return a * (b >= 0)

    class Named(Relu):
        def backward(self, a, b, output):
            return a * (b >= 0)

    x = np.random.default_rng(155).standard_normal((4, 5))
    x[np.abs(x) < 0.1] = 0.5
    for layer in (Relu(), Named()):
        res = gradcheck.check_layer(layer, x, True)
        assert not res.passed and res.status not in ("mismatch", "shape-mismatch"), res.report()


# -- a gradient of the wrong shape is listed in the result, under its array's name ----------
class _Bias:
    """Stores ``db`` of shape (1, 1, 3) for a bias of (3, 1): more than a size-1 axis off."""

    def __init__(self, bug=""):
        self.W, self.b = np.ones((3, 2)), np.zeros((3, 1))
        self.bug = bug

    def forward(self, x):
        self.x = x
        return x @ self.W.T + self.b.T

    def backward(self, g):
        self.dW = g.T @ self.x
        self.db = g.sum(0)[:, None] if not self.bug else g.sum(0)[None, None, :]
        return g @ self.W


@pytest.mark.parametrize("bug", ["", "shape"])
def test_a_misshapen_stored_gradient_is_listed_under_its_array(bug):
    x = np.random.default_rng(156).standard_normal((4, 2))
    res = gradcheck.check_layer(_Bias(bug), x)
    if not bug:
        assert res.passed, res.report()
        return
    assert res.status == "shape-mismatch", res.report()
    assert [(i.name, i.status, i.shape) for i in res.inputs] == [
        ("b", "shape-mismatch", (3, 1))], res.report()
