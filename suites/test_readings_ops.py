"""Operations taking a settings dict and a list of inputs (corpus 278's one-person
framework: static ``forward(ctx, inputs)`` and ``backward(ctx, inputs, dout)`` returning
a list laid out as ``inputs``): a list gradient with a number or nothing for its
integer items, a backward dropping its output gradient, a loss over ``[x, labels]``.
Each with a correct subject that passes and a broken twin that fails with a gradient
verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


class Embed:
    @staticmethod
    def forward(ctx, inputs):
        idx, W = inputs
        return W[idx]

    @staticmethod
    def backward(ctx, inputs, dout):
        idx, W = inputs
        dW = np.zeros_like(W)
        for i, word in enumerate(idx):
            dW[word] += dout[i]
        return [0.0, dW]


class EmbedBroken(Embed):
    @staticmethod
    def backward(ctx, inputs, dout):
        idx, W = inputs
        dW = np.zeros_like(W)
        for i, word in enumerate(idx):
            dW[word] = dout[i]  # BUG: a repeated id keeps its last row only
        return [0.0, dW]


@pytest.mark.parametrize("op", [Embed, EmbedBroken])
def test_a_number_in_a_list_gradient_stands_for_an_integer_item(op):
    rng = np.random.default_rng(0)
    idx, W = np.array([1, 3, 1, 0]), rng.standard_normal((5, 3))
    res = gradcheck.check_layer(op(), {}, [idx, W])
    if op is Embed:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed and i.status != "skipped"] == \
            ["x1[1]"], res.report()


class Sigmoid:
    @staticmethod
    def forward(ctx, inputs):
        x, = inputs
        return 1 / (1 + np.exp(-x))

    @staticmethod
    def backward(ctx, inputs, dout):
        x, = inputs
        y = 1 / (1 + np.exp(-x))
        return [dout * y * (1.0 - y)]


class SigmoidBroken(Sigmoid):
    @staticmethod
    def backward(ctx, inputs, dout):
        x, = inputs
        y = 1 / (1 + np.exp(-x))
        return [y * (1.0 - y)]  # BUG: the output gradient dropped


@pytest.mark.parametrize("op", [Sigmoid, SigmoidBroken])
def test_a_backward_dropping_its_named_output_gradient_keeps_the_reading_by_names(op):
    x = np.random.default_rng(1).standard_normal((3, 4))
    res = gradcheck.check_layer(op(), {}, [x])
    assert (res.status == "mismatch") if op is SigmoidBroken else res.passed, res.report()


class SoftmaxLoss:
    """A loss over ``[scores, labels]`` whose backward returns ``[dx]`` alone (no guard
    in the log: the gradient is exact)."""

    @staticmethod
    def forward(ctx, inputs):
        x, label = inputs
        z = x - x.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return -logp[np.arange(len(label)), label].mean()

    @staticmethod
    def backward(ctx, inputs, dout=1):
        x, label = inputs
        z = np.exp(x - x.max(axis=1, keepdims=True))
        dx = z / z.sum(axis=1, keepdims=True)
        dx[np.arange(len(label)), label] -= 1
        return [dx * dout / len(label)]


class SoftmaxLossBroken(SoftmaxLoss):
    @staticmethod
    def backward(ctx, inputs, dout=1):
        x, label = inputs
        z = np.exp(x - x.max(axis=1, keepdims=True))
        dx = z / z.sum(axis=1, keepdims=True)
        dx[np.arange(len(label)), label] -= 1
        return [dx * dout]  # BUG: the mean's 1/N left out


@pytest.mark.parametrize("op", [SoftmaxLoss, SoftmaxLossBroken])
def test_one_gradient_per_float_item_of_a_list_with_labels(op):
    rng = np.random.default_rng(2)
    x, label = rng.standard_normal((4, 5)), np.array([0, 2, 4, 1])
    res = gradcheck.check_layer(op(), {}, [x, label])
    assert (res.status == "mismatch") if op is SoftmaxLossBroken else res.passed, \
        res.report()
    assert any(i.name == "x1[0]" and i.status != "skipped" for i in res.inputs), res.report()
