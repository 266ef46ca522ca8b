"""Full mode on separable forwards: groups of elements moved at once, same verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck_model.attention import softmax_backward, softmax_forward
from gradcheck_model.layernorm import layernorm_backward, layernorm_forward

import gradcheck.check._modes as modes
from gradcheck import check_vjp


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


def softmax_fwd(s):
    p = softmax_forward(s)
    return p, p


def softmax_bwd(dp, p):
    return (softmax_backward(dp, p),)


def ln_inputs(rng, n=12, c=8, dtype="float64"):
    return [rng.standard_normal((n, c)).astype(dtype),
            (1 + 0.1 * rng.standard_normal(c)).astype(dtype),
            (0.1 * rng.standard_normal(c)).astype(dtype)]


def one_row_wrong(dy, cache):
    dx, dg, db = layernorm_backward(dy, cache)
    dx = dx.copy()
    dx[3] *= 1.001  # a wrong gradient in one row only
    return dx, dg, db


def coupled_fwd(s):
    """Rows of a softmax, plus every row depending on s[0, 0]: not separable."""
    p = softmax_forward(s) + 0.01 * s[0, 0] ** 2
    return p, (p - 0.01 * s[0, 0] ** 2, s)


def coupled_bwd(dp, cache):
    p, s = cache
    ds = softmax_backward(dp, p)
    ds[0, 0] += 0.02 * s[0, 0] * dp.sum()
    return (ds,)


def coupled_bwd_missing_term(dp, cache):
    p, _s = cache
    return (softmax_backward(dp, p),)


def per_element(monkeypatch, fn):
    """Run ``fn`` with the separable path switched off (every element alone)."""
    with monkeypatch.context() as m:
        m.setattr(modes, "find_layout", lambda *a, **k: None)
        return fn()


def verdicts(res):
    return [(i.name, i.status, i.checked, i.kinks,
             sorted(w.index for w in i.worst if w.failed)) for i in res.inputs]


def test_layernorm_groups_rows_and_columns(rng):
    res = check_vjp(layernorm_forward, layernorm_backward, ln_inputs(rng), mode="full")
    assert res.passed, res.report()
    x, gamma, beta = res.inputs
    assert "separable along input axes [0]" in x.message  # rows
    assert "1 group(s)" in gamma.message and "1 group(s)" in beta.message  # columns
    # 8 groups of 12 for x, one group each for gamma and beta; 2 per bit of the slice
    # number for the leak tests (12 rows: 4 bits, 8 columns: 3 bits); a few probes each
    groups, leaks, probes = 2 * (8 + 1 + 1), 2 * (4 + 3 + 3), 3 * 4
    assert res.evaluations <= 2 + groups + leaks + probes < 2 * (12 * 8 + 16)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_wrong_row_is_caught_with_the_per_element_verdicts(rng, monkeypatch, dtype):
    inputs = ln_inputs(rng, dtype=dtype)

    def run():
        return check_vjp(layernorm_forward, one_row_wrong, inputs, mode="full", seed=4)

    grouped, alone = run(), per_element(monkeypatch, run)
    assert not grouped.passed and grouped.inputs[0].status == "mismatch"
    assert verdicts(grouped) == verdicts(alone)
    assert {w.index[0] for w in grouped.inputs[0].worst if w.failed} == {3}
    assert grouped.evaluations < alone.evaluations / 2


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_correct_layers_pass_with_the_per_element_verdicts(rng, monkeypatch, dtype):
    inputs = ln_inputs(rng, dtype=dtype)

    def run():
        return check_vjp(layernorm_forward, layernorm_backward, inputs, mode="full")

    grouped, alone = run(), per_element(monkeypatch, run)
    assert grouped.passed and alone.passed
    assert verdicts(grouped) == verdicts(alone)


@pytest.mark.parametrize("seed", range(4))
def test_coupling_the_probes_miss_falls_back_to_elements(rng, monkeypatch, seed):
    s = [rng.standard_normal((10, 6))]
    good = check_vjp(coupled_fwd, coupled_bwd, s, mode="full", seed=seed)
    assert good.passed, good.report()  # no false alarm from the spoilt credit
    bad = check_vjp(coupled_fwd, coupled_bwd_missing_term, s, mode="full", seed=seed)
    assert not bad.passed
    assert [w.index for w in bad.inputs[0].worst if w.failed] == [(0, 0)]

    def run():
        return check_vjp(coupled_fwd, coupled_bwd_missing_term, s, mode="full", seed=seed)

    assert verdicts(bad) == verdicts(per_element(monkeypatch, run))


def test_softmax_of_ten_thousand_elements_costs_a_couple_of_hundred_evaluations(rng):
    s = [rng.standard_normal((100, 100))]
    res = check_vjp(softmax_fwd, softmax_bwd, s, mode="full")
    assert res.passed, res.report()
    assert res.inputs[0].checked == 10_000
    # a pair per column group, the protocol's two, probes, leak tests (7 bits for 100 rows)
    assert res.evaluations <= 2 * 100 + 2 + 4 + 2 * 7


def test_fully_coupled_forward_is_checked_element_by_element(rng):
    def fwd(x):
        return x * np.sum(x), x

    def bwd(dy, x):
        return (dy * np.sum(x) + np.sum(dy * x),)

    res = check_vjp(fwd, bwd, [rng.standard_normal((5, 4))], mode="full")
    assert res.passed and "separable" not in res.inputs[0].message
    assert res.evaluations >= 2 * 20
