"""Autograd-style functions (corpus 274's CMU 11-785 "mytorch" homework): a static
``forward(ctx, *inputs)`` keeping what the backward needs on a context, and a static
``backward(ctx, grad_output)`` returning one gradient per input, on arrays or on the
code's own ``Tensor`` boxes. Each with a correct subject that passes and a broken twin
that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


class Tensor:
    """The homework's box: ``.data`` beside ``.grad = None`` and flags."""

    def __init__(self, data, requires_grad=False, is_leaf=True):
        self.data = np.array(data)
        self.requires_grad = requires_grad
        self.is_leaf = is_leaf
        self.grad = None
        self.grad_fn = None


class ContextManager:
    """The homework's context: its backward reads ``saved_tensors``."""

    def __init__(self):
        self.saved_tensors = []

    def save_for_backward(self, *args):
        for arg in args:
            self.saved_tensors.append(arg)


class Function:
    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Tensor(a.data * b.data, requires_grad=True, is_leaf=False)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return Tensor(b.data * grad_output.data), Tensor(a.data * grad_output.data)


class MulBroken(Mul):
    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return Tensor(b.data * grad_output.data), Tensor(b.data * grad_output.data)  # BUG


class Exp(Function):
    """One input, a bare Tensor returned (no tuple)."""

    @staticmethod
    def forward(ctx, a):
        out = np.exp(a.data)
        ctx.out = out
        return Tensor(out, requires_grad=True, is_leaf=False)

    @staticmethod
    def backward(ctx, grad_output):
        return Tensor(grad_output.data * ctx.out)


class ExpBroken(Exp):
    @staticmethod
    def backward(ctx, grad_output):
        return Tensor(grad_output.data * ctx.out / 2)  # BUG: a factor


@pytest.mark.parametrize("fn", [Mul, MulBroken, Exp, ExpBroken])
def test_a_static_forward_with_a_context_is_read_as_an_autograd_function(fn):
    rng = np.random.default_rng(0)
    n = 2 if issubclass(fn, Mul) else 1
    xs = [Tensor(rng.standard_normal((3, 4)), requires_grad=True) for _ in range(n)]
    res = gradcheck.check_layer(fn(), *xs)
    broken = fn.__name__.endswith("Broken")
    assert (res.status == "mismatch") if broken else res.passed, res.report()
    assert {i.name for i in res.inputs} == {f"x{k}" for k in range(n)}, res.report()
    assert any("read as an autograd function" in t and "ContextManager" in t
               for t in res.notes), res.notes
    assert all(x.grad is None and x.data.shape == (3, 4) for x in xs)  # nothing mutated


# -- on arrays, with no context class in the code: gradcheck's own ---------------------------
class _Scale:
    """``forward(ctx, x, w)`` on plain arrays, ``ctx.save_for_backward`` as PyTorch's,
    and an integer argument (a constant) whose gradient is None."""

    @staticmethod
    def forward(ctx, x, w, power):
        ctx.save_for_backward(x, w)
        ctx.power = power
        return (x @ w) ** power

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        d = g * ctx.power * (x @ w) ** (ctx.power - 1)
        return d @ w.T, x.T @ d, None


class _ScaleBroken(_Scale):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        d = g * ctx.power * (x @ w) ** (ctx.power - 1)
        return d @ w.T, x.T @ g, None  # BUG: the power's derivative left out of dW


@pytest.mark.parametrize("fn", [_Scale, _ScaleBroken])
@pytest.mark.parametrize("as_class", [False, True])
def test_a_function_on_arrays_gets_a_context_of_gradcheck_s(fn, as_class, monkeypatch):
    monkeypatch.delitem(globals(), "ContextManager")  # no context class in the module
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    res = gradcheck.check_layer(fn if as_class else fn(), x, w, 2)
    if fn is _Scale:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == ["x1"], res.report()
    assert any("a context of gradcheck's" in t for t in res.notes), res.notes


class _Plain:
    """Static methods of a cs231n pair, ``forward(x, w)`` returning ``(out, cache)`` and
    ``backward(dout, cache)``: given both inputs, not an autograd function."""

    @staticmethod
    def forward(x, w):
        return x @ w, (x, w)

    @staticmethod
    def backward(dout, cache):
        x, w = cache
        return dout @ w.T, x.T @ dout


def test_static_methods_taking_the_inputs_given_are_not_read_as_a_function():
    rng = np.random.default_rng(2)
    res = gradcheck.check_layer(_Plain(), rng.standard_normal((3, 4)),
                                rng.standard_normal((4, 2)))
    assert not any("autograd function" in t for t in res.notes), res.notes
