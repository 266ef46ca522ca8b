"""Readings by observation found on held-out code (corpora 67 on), and the policies that
the earlier corpora showed too strict. Each with a correct subject that passes and a
broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- a gradient with leading axes of length 1: (1, D) for a (D,) parameter -------------------
def _rms_forward(x, gamma, eps=1e-6):
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return x / rms * gamma, (x, gamma, rms)


def _rms_backward(dout, cache, bug=""):
    """``dgamma`` summed with ``keepdims=True``: shape ``(1, D)`` for ``gamma`` of ``(D,)``."""
    x, gamma, rms = cache
    d = x.shape[-1]
    dgamma = np.sum(dout * x / rms, axis=0, keepdims=True)
    dxn = dout * gamma
    dx = dxn / rms - x * np.sum(dxn * x, axis=-1, keepdims=True) / (
        d * (rms if bug == "rms" else rms ** 3))
    return dx, dgamma * (0.5 if bug == "gamma" else 1.0)


@pytest.mark.parametrize("bug, failing", [("", None), ("rms", ["x"]), ("gamma", ["gamma"])])
def test_a_gradient_with_leading_unit_axes_gets_a_verdict_with_a_note(bug, failing):
    rng = np.random.default_rng(67)
    x, gamma = rng.standard_normal((5, 6)), rng.standard_normal(6)
    res = gradcheck.check_vjp(_rms_forward,
                              lambda dy, c: _rms_backward(dy, c, bug), [x, gamma])
    _expect(res, failing)
    note = [n for n in res.notes if "gradient of gamma has shape (1, 6), gamma has (6,)" in n]
    assert note and "an in-place update of gamma by it raises" in note[0], res.notes


class _StoredNorm:
    """A layer storing ``self.dgamma`` of shape ``(1, D)`` for ``self.gamma`` of ``(D,)``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(68)
        self.gamma, self.beta, self.bug = rng.standard_normal(4), rng.standard_normal(4), bug

    def forward(self, x):
        self.x = x
        return x * self.gamma + self.beta

    def backward(self, dout):
        self.dgamma = np.sum(dout * self.x, axis=0, keepdims=True)
        self.dbeta = np.sum(dout, axis=0, keepdims=True) * (2.0 if self.bug == "beta" else 1.0)
        return dout * self.gamma


@pytest.mark.parametrize("bug, failing", [("", None), ("beta", ["beta"])])
def test_a_stored_gradient_with_leading_unit_axes_gets_a_verdict(bug, failing):
    x = np.random.default_rng(69).standard_normal((3, 4))
    res = gradcheck.check_layer(_StoredNorm(bug), x)
    _expect(res, failing)
    assert any("gradient of beta has shape (1, 4), beta has (4,)" in n for n in res.notes)


def test_a_gradient_whose_update_would_change_the_values_stays_a_shape_mismatch():
    """``(6, 1)`` for ``(6,)`` broadcasts to ``(6, 6)`` in an update: no reading of it."""
    rng = np.random.default_rng(70)
    x, gamma = rng.standard_normal((5, 6)), rng.standard_normal(6)
    res = gradcheck.check_vjp(
        _rms_forward, lambda dy, c: (_rms_backward(dy, c)[0], _rms_backward(dy, c)[1].T),
        [x, gamma])
    assert res.status == "shape-mismatch", res.report()


# -- a loss returning more than (loss, dx): each item read by what it does -------------------
def _masked_ce(logits, targets, mask, alpha, bug=""):
    """``(loss_sum, num_real, d_logits, d_alpha)``: a token count between the loss and
    the gradients, and ``alpha`` (a float argument) scaling the scores."""
    z = logits * alpha
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(len(targets))
    loss = -np.sum(mask * np.log(p[rows, targets]))
    dz = p.copy()
    dz[rows, targets] -= 1
    dz *= mask[:, None] if bug != "mask" else 1.0
    d_alpha = np.sum(dz * logits, axis=1, keepdims=True) * (-1 if bug == "alpha" else 1)
    return loss, float(mask.sum()), dz * alpha, d_alpha


def _ce_args():
    rng = np.random.default_rng(71)
    return [rng.standard_normal((4, 5)), np.array([0, 3, 1, 4]), np.array([1.0, 1.0, 0.0, 1.0]),
            rng.uniform(0.5, 1.5, (4, 1))]


@pytest.mark.parametrize("bug, failing", [("", None), ("mask", ["x0", "x3"]),
                                          ("alpha", ["x3"])])
def test_a_loss_returning_a_count_between_loss_and_gradients(bug, failing):
    res = gradcheck.check_loss(lambda *a: _masked_ce(*a, bug=bug), *_ce_args())
    _expect(res, failing)
    assert any("item 0 is the loss" in n and "item 2 x0's gradient" in n
               and "item 3 x3's gradient" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug, failing", [("", None), ("n", ["x0"])])
def test_a_loss_returning_probabilities_beside_its_gradient(bug, failing):
    """``(y_pred, loss, dz)``: two arrays of the scores' shape, each checked as the
    gradient; the probabilities never pass, so the gradient decides the verdict."""
    def probs_loss_grad(logits, targets, mask, alpha):
        loss, _, dz, _ = _masked_ce(logits, targets, mask, alpha)
        p = np.exp(logits * alpha)
        return p / p.sum(1, keepdims=True), loss, dz * (4.0 if bug else 1.0)

    res = gradcheck.check_loss(probs_loss_grad, *_ce_args())
    _expect(res, failing)
    assert any("x0's gradient one of items [0, 2]" in n for n in res.notes), res.notes
    shown = "the one that passes" if failing is None else "none of items [0, 2] passes"
    assert any(n.startswith("item 2 is") and shown in n for n in res.notes), res.notes
