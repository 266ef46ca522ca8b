"""Readings by observation found on held-out code (corpora 119 on, and what corpora 99-118
left unread): each with a correct subject that passes and a broken twin that fails with a
gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- a column-vector layer taking its output gradient as a row, storing diff_* gradients ----
class _ColumnDense:
    """``forward(x)`` of one column ``(n, 1)`` returns ``W @ x + b``; ``backward(dout)``
    takes the output's gradient as a row ``(1, m)``, returns the input's as a row and
    stores ``diff_Weights`` and ``diff_bias`` (a row for the column ``b``), and a copy of
    the weights under another name."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(300)
        self.Weights, self.bias = rng.standard_normal((4, 3)), rng.standard_normal((4, 1))
        self.bug = bug

    def forward(self, other):
        self.other = other
        return self.Weights @ other + self.bias

    def backward(self, dout):
        self.diff_out = np.copy(self.Weights)
        self.diff_bias = 2 * dout if self.bug == "bias" else dout
        self.diff_Weights = dout.T @ self.other.T
        return dout @ self.diff_out


@pytest.mark.parametrize("bug, failing", [("", None), ("bias", ["bias"])])
def test_a_row_gradient_layer_stores_its_column_bias_gradient_as_a_row(bug, failing):
    x = np.random.default_rng(301).standard_normal((3, 1))
    res = gradcheck.check_layer(_ColumnDense(bug), x)
    _expect(res, failing)
    assert any("a row for a column" in n and "bias" in n for n in res.notes), res.notes


def test_a_row_stored_for_a_column_is_still_a_shape_mismatch_outside_the_row_reading():
    class Dense(_ColumnDense):
        def backward(self, dout):  # takes the column gradient as given, stores a row
            self.diff_bias = dout.T
            self.diff_Weights = dout @ self.other.T
            return self.Weights.T @ dout

    res = gradcheck.check_layer(Dense(), np.random.default_rng(302).standard_normal((3, 1)))
    assert res.status == "shape-mismatch" and "diff_bias" in res.message, res.report()


# -- a misspelt "backpro" stepping np.matrix weights ------------------------------------------
class _MatrixLinear:
    """``forward`` computes with ``np.matrix``; ``backpro(delta, lr=0.1)`` steps the
    weights and returns the input's gradient."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(303)
        self.weight, self.bias = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.bug = bug

    def forward(self, input_data):
        self.reg = np.asmatrix(input_data)
        return np.asarray(self.reg * np.asmatrix(self.weight)) + self.bias

    def backpro(self, delta_loss, lr=0.1):
        delta_w = self.reg.T * np.asmatrix(delta_loss)
        dx = np.asarray(np.asmatrix(delta_loss) * np.asmatrix(self.weight).T)
        self.weight -= lr * np.asarray(delta_w) * (-1 if self.bug == "uphill" else 1)
        self.bias -= lr * np.asarray(delta_loss).sum(axis=0)
        return dx


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("bug, failing", [("", None), ("uphill", ["weight"])])
def test_a_backpro_method_stepping_matrix_weights(bug, failing):
    x = np.random.default_rng(304).standard_normal((4, 3))
    res = gradcheck.check_layer(_MatrixLinear(bug), x)
    _expect(res, failing)
    assert any("backpro" in n for n in res.notes), res.notes


# -- a forward storing a zero-padded copy of its input per filter beside its output ----------
class _TiledConv:
    """``forward`` returns None and stores ``impad``: the input zero-padded, once per
    filter on a new axis, and ``output``; the copy is no second output."""

    def __init__(self, bug=""):
        self.k = np.random.default_rng(305).standard_normal((2, 3))
        self.bug = bug

    def forward(self, x):
        n = x.shape[1]
        self.impad = np.zeros((x.shape[0], n + 2, 2))
        for f in range(2):
            self.impad[:, 1:-1, f] = x
        self.output = np.stack([sum(self.k[f, j] * self.impad[:, j:j + n, f] for j in range(3))
                                for f in range(2)], axis=-1)

    def backward(self, d):
        n = d.shape[1]
        self.dk = np.array([[(d[..., f] * self.impad[:, j:j + n, f]).sum() for j in range(3)]
                            for f in range(2)])
        dpad = np.zeros(self.impad.shape[:2])
        for f in range(2 if self.bug != "one" else 1):
            for j in range(3):
                dpad[:, j:j + n] += self.k[f, j] * d[..., f]
        self.dinputs = dpad[:, 1:-1]


@pytest.mark.parametrize("bug, failing", [("", None), ("one", ["x0"])])
def test_a_padded_copy_of_the_input_per_filter_is_no_second_output(bug, failing):
    x = np.random.default_rng(306).standard_normal((2, 5))
    res = gradcheck.check_layer(_TiledConv(bug), x)
    _expect(res, failing)
    assert any("stores in output" in n for n in res.notes), res.notes


def test_only_an_arrangement_of_every_input_value_and_zeros_is_a_copy():
    """A ReLU of the padded input drops the negative values: it is no copy."""
    from gradcheck.read._observe import padded

    x = np.random.default_rng(307).standard_normal((2, 4))
    pad = np.pad(x, 1)
    assert padded(pad, x) and padded(np.stack([pad, pad]), x)
    assert not padded(np.maximum(pad, 0), x) and not padded(2 * pad, x)
    assert not padded(x.copy(), x) and not padded(np.zeros((4, 6)), np.zeros((2, 4)))
