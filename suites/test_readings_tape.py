"""Readings by observation found on held-out code (corpora 81 on). Each with a correct
subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- an autograd tape: the backward accumulates into the cache's zero .grad buffers ----------
class _Node:
    """A value with a ``.grad`` buffer of zeros and the operation that made it."""

    def __init__(self, value, parents=(), push=None):
        self.value, self.grad = value, np.zeros_like(value)
        self.parents, self.push = list(parents), push

    def backward(self, dout):
        self.grad += dout
        if self.push is not None:
            for parent, g in zip(self.parents, self.push(dout), strict=True):
                parent.backward(g)
        self.parents.clear()  # the tape is released once used


def _tape_pair(bug=""):
    def fwd(a, w):
        na, nw = _Node(a), _Node(w)
        t = np.tanh(a @ w)

        def push(dout):
            dz = dout * (1 - t * t) if bug != "tanh" else dout * (1 - t)
            return dz @ w.T, a.T @ dz
        return t, (na, nw, _Node(t, (na, nw), push))

    def bwd(dout, cache):
        na, nw, out = cache
        out.backward(dout)
        return na.grad, nw.grad
    return fwd, bwd


@pytest.mark.parametrize("bug, failing", [("", None), ("tanh", ["a", "w"])])
def test_a_backward_filling_the_caches_zero_buffers_gets_a_fresh_cache_per_call(bug, failing):
    rng = np.random.default_rng(81)
    fwd, bwd = _tape_pair(bug)
    res = gradcheck.check_vjp(fwd, bwd, [rng.standard_normal((3, 4)),
                                         rng.standard_normal((4, 2))])
    _expect(res, failing)
    assert any("a cache used once" in n and "cache[0].grad" in n for n in res.notes), res.notes


def test_a_backward_changing_the_caches_data_is_still_a_mutation():
    rng = np.random.default_rng(82)
    fwd, _ = _tape_pair()

    def bwd(dout, cache):
        na, nw, out = cache
        out.value *= 0.0  # the forward's result, not a zero buffer
        out.backward(dout)
        return na.grad, nw.grad

    res = gradcheck.check_vjp(fwd, bwd, [rng.standard_normal((3, 4)),
                                         rng.standard_normal((4, 2))])
    assert res.status == "mutation" and "cache[2].value" in res.message, res.report()
