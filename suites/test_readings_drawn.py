"""Readings of held-out code met in stop 52's batches (corpora 232-235): each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


class _Dropout:
    """A mask drawn from the global generator in forward; backward(input, grad)."""

    def __init__(self, p: float = 0.5, fresh: bool = False) -> None:
        self.p, self.fresh, self.mask = p, fresh, None

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.mask = np.random.binomial(1, 1 - self.p, size=x.shape)  # noqa: NPY002
        return self.mask * x

    def backward(self, x: np.ndarray, grad: np.ndarray) -> np.ndarray:
        mask = np.random.binomial(1, self.p, size=x.shape) if self.fresh else self.mask  # noqa: NPY002
        return mask * grad


@pytest.mark.parametrize("fresh", [False, True])
def test_a_backward_drawing_its_own_mask_is_a_mismatch_not_a_nondeterministic(fresh):
    """A backward that draws a fresh mask from the global generator (corpus 235) starts
    every call from where its forward left the generator: the same wrong mask each time,
    so a gradient verdict; the mask the forward stored passes."""
    x = np.random.default_rng(0).standard_normal((4, 6))
    state = np.random.get_state()  # noqa: NPY002
    res = gradcheck.check_layer(_Dropout(fresh=fresh), x)
    assert (res.status == "mismatch") if fresh else res.passed, res.report()
    after = np.random.get_state()  # noqa: NPY002
    assert after[2] == state[2] and np.array_equal(after[1], state[1])  # the user's, back


class _PerSampleLinear:
    """``x @ W.T + b`` with ``b`` a column; backward stores one gradient per sample,
    ``(N, out, in)`` and ``(N, out, 1)``, which its update sums."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(5)
        self.weights, self.biases = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
        self.bug = bug

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return x @ self.weights.T + self.biases.reshape(1, -1)

    def backward(self, dout: np.ndarray) -> np.ndarray:
        n = len(dout)
        self.w_grad = dout.reshape(n, -1, 1) @ self.x.reshape(n, 1, -1)
        self.b_grad = dout.reshape(n, -1, 1) / (n if self.bug else 1)
        return dout @ self.weights


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_stored_per_sample_are_checked_as_their_sum(bug):
    """Corpus 234: a per-sample stack ``(N, *W.shape)`` is the gradient summed over the
    batch (noted); a spurious 1/N on the bias is a mismatch of the bias alone."""
    x = np.random.default_rng(6).standard_normal((5, 4))
    res = gradcheck.check_layer(_PerSampleLinear(bug), x)
    if bug:
        assert res.status == "mismatch" and [t.name for t in res.inputs if not t.passed] == [
            "biases"], res.report()
    else:
        assert res.passed and len(res.inputs) == 3, res.report()
        assert any("per sample, shape (5, 3, 4)" in n for n in res.notes), res.notes
