"""Readings of held-out code met in stop 55's batch V (corpora 280-283). Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


# -- a Jacobian per sample of a batch laid out as column vectors (corpus 283) -----------------
def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_jacobian(z):
    """One (F, F) Jacobian per sample of an (N, F, 1) batch of columns."""
    a = _softmax(z)
    return np.stack([np.diagflat(s) - s @ s.T for s in a])


def _softmax_jacobian_broken(z):
    a = _softmax(z)
    return np.stack([np.diagflat(s) - np.diagflat(s * s) for s in a])  # BUG: -a_i a_i only


@pytest.mark.parametrize("df", [_softmax_jacobian, _softmax_jacobian_broken])
def test_a_jacobian_per_column_sample_is_read(df):
    z = np.random.default_rng(3).standard_normal((3, 4, 1))
    res = gradcheck.check_elementwise(_softmax, df, z)
    assert (res.status == "mismatch") if df is _softmax_jacobian_broken else res.passed, \
        res.report()
    assert any("Jacobian (3, 4, 4)" in n for n in res.notes), res.notes
