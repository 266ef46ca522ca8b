"""The checker's own behaviour: statuses, errors, modes, methods, messages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import gradcheck
from gradcheck import GradientMismatch, check_grad, check_vjp


def tanh_fwd(x):
    y = np.tanh(x)
    return y, y


def tanh_bwd(dy, y):
    return (dy * (1 - y * y),)


def lin_fwd(x, W):
    return x @ W, (x, W)


def lin_bwd(dy, c):
    x, W = c
    return dy @ W.T, x.T @ dy


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# -- passing and failing, the basic contract ------------------------------------------
def test_correct_layer_passes_and_reports(rng):
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    res = check_vjp(lin_fwd, lin_bwd, [x, W], seed=3)
    assert res.passed and res.status == "ok"
    assert res.seed == 3 and res.mode == "full" and res.method == "central"
    assert [i.checked for i in res.inputs] == [12, 8]
    # x's rows reach only their own output rows and W's columns only their own output
    # columns: the full check moves a group at a time (fewer than 2 per element)
    assert 2 < res.evaluations < 2 * 20
    assert "separable" in res.inputs[0].message and "separable" in res.inputs[1].message
    d = res.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["inputs"][0]["shape"] == [3, 4]
    assert "atol" in d["inputs"][0] and "rtol" in d["inputs"][0]


def test_coverage_counts_the_inputs_compared_in_text_json_and_report(rng):
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    res = check_vjp(lin_fwd, lin_bwd, [x, W])
    assert (res.tensors_checked, res.tensors_total) == (2, 2)
    assert "checked 2/2 tensors" in str(res)
    d = res.to_dict()
    assert d["coverage"] == "checked 2/2 tensors" and d["tensors_checked"] == 2
    from gradcheck.report import render as report

    html = report.render_html(report.build_plugin_report([d]))
    assert "checked 2/2 tensors" in html
    # a constant input is not one to differentiate
    res = check_vjp(lin_fwd, lambda dy, c: (dy @ c[1].T, None), [x, W], wrt=[0])
    assert res.passed and res.coverage == "checked 1/1 tensors"


def test_a_check_that_compares_nothing_is_inconclusive_not_passed():
    def fwd(i):
        return np.asarray(i, dtype=float) * 2.0, None

    res = check_vjp(fwd, lambda dy, c: (None,), [np.arange(4)])
    assert not res.passed and res.status == "inconclusive", res.report()
    assert "nothing was compared" in res.message
    assert res.coverage == "checked 0/0 tensors"
    with pytest.raises(GradientMismatch, match="inconclusive"):
        gradcheck.assert_vjp(fwd, lambda dy, c: (None,), [np.arange(4)])


def test_directions_leave_outputs_at_kinks_out_with_the_backward_at_a_masked_dy(rng):
    x = rng.standard_normal((100, 100))
    x[rng.random(x.shape) < 0.05] = 0.0  # 5% exactly at the kink
    res = check_vjp(lambda v: (np.maximum(v, 0), v), lambda dy, v: (dy * (v > 0),), [x],
                    mode="directional", seed=2)
    assert res.passed, res.report()
    inp = res.inputs[0]
    assert inp.checked >= 2 and inp.kink_outputs > 0
    assert res.backward_calls > 3  # the backward called again with the masked dy
    assert "output(s) at kinks left out" in res.message
    assert res.to_dict()["inputs"][0]["kink_outputs"] == inp.kink_outputs
    bad = check_vjp(lambda v: (np.maximum(v, 0), v), lambda dy, v: (dy.copy(),), [x],
                    mode="directional", seed=2)
    assert bad.status == "mismatch", bad.report()


def test_assert_vjp_raises_assertion_error_with_table_and_seed(rng):
    x, W = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))

    def bad(dy, c):
        x_, W_ = c
        return dy @ W_.T, (x_.T @ dy) * 2

    with pytest.raises(AssertionError) as info:
        gradcheck.assert_vjp(lin_fwd, bad, [x, W], seed=11)
    assert isinstance(info.value, GradientMismatch)
    msg = str(info.value)
    assert "seed=11" in msg and "analytic" in msg and "numeric" in msg
    assert "constant factor of 2" in msg
    assert info.value.result.inputs[1].status == "mismatch"


def test_assert_vjp_returns_result_when_passing(rng):
    res = gradcheck.assert_vjp(tanh_fwd, tanh_bwd, [rng.standard_normal(5)])
    assert res.passed


def test_scalar_output_and_check_grad(rng):
    x = rng.standard_normal(6)
    res = check_grad(lambda v: float(np.sum(np.sin(v) ** 2)), lambda v: np.sin(2 * v), x)
    assert res.passed
    bad = check_grad(lambda v: float(np.sum(np.sin(v) ** 2)), lambda v: np.sin(v), x)
    assert not bad.passed


def test_check_grad_rejects_vector_function(rng):
    with pytest.raises(ValueError, match="f must return a scalar"):
        check_grad(lambda v: v, lambda v: v, rng.standard_normal(3))


# -- sensitivity -----------------------------------------------------------------------
@pytest.mark.parametrize("rel", [1e-4, 1e-6])
def test_float64_catches_small_relative_errors(rng, rel):
    x = rng.standard_normal((8, 8))

    def bad(dy, y):
        return (dy * (1 - y * y) * (1 + rel),)

    assert check_vjp(tanh_fwd, tanh_bwd, [x]).passed
    res = check_vjp(tanh_fwd, bad, [x])
    assert not res.passed
    assert "same factor" in res.inputs[0].hint or res.inputs[0].hint


def test_error_at_one_element_named(rng):
    x = rng.standard_normal((6, 7))

    def bad(dy, y):
        g = dy * (1 - y * y)
        g[4, 5] *= 1.001
        return (g,)

    res = check_vjp(tanh_fwd, bad, [x])
    assert not res.passed
    worst = res.inputs[0].worst[0]
    assert worst.index == (4, 5) and worst.failed


# -- no false alarms ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kinks_near_zero_are_skipped_not_hidden(rng, dtype):
    x = rng.standard_normal(120).astype(dtype)
    x[:30] = rng.uniform(-1e-7, 1e-7, 30).astype(dtype)
    x[30:33] = 0

    def relu(x_):
        return np.maximum(x_, 0), x_

    res = check_vjp(relu, lambda dy, x_: (dy * (x_ > 0),), [x])
    assert res.passed and res.kinks >= 25
    assert res.inputs[0].kinks == res.kinks

    def relu_wrong(dy, x_):
        g = dy * (x_ > 0)
        g[100] = -g[100] if g[100] != 0 else 1.0  # wrong at a smooth point
        return (g,)

    assert not check_vjp(relu, relu_wrong, [x]).passed

    def relu_not_subgradient(dy, x_):
        return (dy * np.where(np.abs(x_) < 1e-6, -1.0, x_ > 0),)

    assert not check_vjp(relu, relu_not_subgradient, [x]).passed


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_abs_with_every_element_at_its_kink_is_inconclusive_not_passed(rng, dtype):
    x = rng.uniform(-1e-7, 1e-7, 40).astype(dtype)
    res = check_vjp(lambda v: (np.abs(v), v), lambda dy, v: (dy * np.sign(v),), [x])
    assert not res.passed and res.status == "inconclusive", res.report()
    assert res.inputs[0].status == "inconclusive" and res.inputs[0].kinks == 40
    assert "all 40 element(s) sat at a kink" in res.message
    assert "another point" in res.message
    # half of the elements away from the kink: those are compared, and the check passes
    x[:20] -= 1.0
    res = check_vjp(lambda v: (np.abs(v), v), lambda dy, v: (dy * np.sign(v),), [x])
    assert res.passed and res.inputs[0].kinks == 20, res.report()
    assert not check_vjp(lambda v: (np.abs(v), v), lambda dy, v: (dy.copy(),), [x]).passed


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradients_over_many_orders_of_magnitude(dtype):
    x = np.linspace(-15, 15, 301).astype(dtype)
    good = check_vjp(lambda v: (np.exp(v), v), lambda dy, v: (dy * np.exp(v),), [x])
    assert good.passed, good.report()
    bad = check_vjp(lambda v: (np.exp(v), v), lambda dy, v: (dy * np.exp(v) * (1 + 1e-4),), [x])
    assert not bad.passed


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tiny_gradients(rng, dtype):
    x = rng.standard_normal((10, 10)).astype(dtype)

    def f(v):
        return 1e-9 * np.sin(v), v

    assert check_vjp(f, lambda dy, v: (dy * 1e-9 * np.cos(v),), [x]).passed
    assert not check_vjp(f, lambda dy, v: (dy * 1e-9 * np.cos(v) * 1.001,), [x]).passed
    # a fixed absolute tolerance would pass this: the error is 1e-12
    assert not check_vjp(f, lambda dy, v: (dy * 1e-9 * np.cos(v) + 1e-12,), [x]).passed


def test_float32_stays_float32(rng):
    seen = []

    def fwd(v):
        seen.append(v.dtype)
        return np.tanh(v), np.tanh(v)

    res = check_vjp(fwd, tanh_bwd, [rng.standard_normal(5).astype(np.float32)])
    assert res.passed and set(seen) == {np.dtype(np.float32)}
    assert res.method == "richardson" and res.inputs[0].dtype == "float32"


def test_tolerance_override_is_used(rng):
    x = rng.standard_normal(5)
    res = check_vjp(tanh_fwd, tanh_bwd, [x], atol=0.5, rtol=0.25)
    assert res.inputs[0].atol == 0.5 and res.inputs[0].rtol == 0.25
    loose = check_vjp(tanh_fwd, lambda dy, y: (dy * (1 - y * y) + 0.1,), [x], atol=0.5)
    assert loose.passed  # the user asked for it
    assert not check_vjp(tanh_fwd, lambda dy, y: (dy * (1 - y * y) + 0.1,), [x]).passed


def test_tolerance_is_stated_per_element(rng):
    res = check_vjp(tanh_fwd, lambda dy, y: (dy * (1 - y * y) * 1.01,), [rng.standard_normal(9)])
    w = res.inputs[0].worst[0]
    assert w.tolerance > 0 and w.error > w.tolerance
    assert w.error == pytest.approx(abs(w.analytic - w.numeric))


# -- modes ---------------------------------------------------------------------------
def test_auto_picks_by_budget(rng):
    x = rng.standard_normal((40, 40))
    assert check_vjp(tanh_fwd, tanh_bwd, [x]).mode == "full"
    res = check_vjp(tanh_fwd, tanh_bwd, [x], budget=100)
    assert res.mode == "directional" and res.passed
    assert res.inputs[0].miss_probability is not None and res.inputs[0].miss_probability < 1e-6


def test_directional_cost_independent_of_size(rng):
    evals = []
    for n in (10, 100, 1000):
        res = check_vjp(tanh_fwd, tanh_bwd, [rng.standard_normal((n, 10))], mode="directional")
        assert res.passed
        evals.append(res.evaluations)
    assert len(set(evals)) == 1


@pytest.mark.parametrize("size", [300, 9000])
def test_directional_failure_is_localised(rng, size):
    x = rng.standard_normal(size)

    def bad(dy, y):
        g = dy * (1 - y * y)
        g[size // 3] += 0.5
        return (g,)

    res = check_vjp(tanh_fwd, bad, [x], mode="directional")
    assert not res.passed and res.inputs[0].localised
    failing = [w for w in res.inputs[0].worst if w.failed and w.kind == "element"]
    assert failing and failing[0].index == (size // 3,)
    if size > 4096:
        assert res.evaluations < 2000  # bisection, not every element


def test_sampled_mode(rng):
    x = rng.standard_normal(500)
    res = check_vjp(tanh_fwd, tanh_bwd, [x], mode="sampled", samples=20)
    assert res.passed and res.inputs[0].checked == 20
    assert res.inputs[0].miss_probability == pytest.approx(1 - 20 / 500)


def test_full_mode_costs_two_evaluations_per_element(rng):
    x = rng.standard_normal((64, 64))
    res = check_vjp(tanh_fwd, tanh_bwd, [x], mode="full")
    assert res.passed
    assert res.evaluations <= 2 * x.size + 2


# -- methods ---------------------------------------------------------------------------
def test_complex_step_used_when_verified(rng):
    x = rng.standard_normal(8)
    res = check_vjp(lambda v: (np.sin(v) * v, v), lambda dy, v: (dy * (np.cos(v) * v + np.sin(v)),),
                    [x], method="complex")
    assert res.passed and res.method == "complex" and not res.notes
    assert res.inputs[0].max_abs_error < 1e-14


def test_complex_step_rejected_for_abs(rng):
    x = rng.standard_normal(8)
    res = check_vjp(lambda v: (np.abs(v) ** 3, v), lambda dy, v: (dy * 3 * v * np.abs(v),),
                    [x], method="complex")
    assert res.passed and res.method == "central"
    assert any("complex step rejected" in n for n in res.notes)


def test_richardson_method(rng):
    res = check_vjp(tanh_fwd, tanh_bwd, [rng.standard_normal(6)], method="richardson")
    assert res.passed and res.method == "richardson"
    assert res.evaluations <= 4 * 6 + 2


def test_numeric_agrees_with_scipy_differentiate(rng):
    from scipy.differentiate import derivative

    x = rng.uniform(-2, 2, 7)
    f = np.sinh
    res = check_vjp(lambda v: (f(v), v), lambda dy, v: (dy * np.cosh(v) * 1.5,), [x])
    for w in res.inputs[0].worst:
        # with y = f(x) elementwise, phi's derivative along e_j is dy_j f'(x_j)
        ratio = w.analytic / 1.5
        ref = derivative(f, x[w.index]).df
        assert w.numeric == pytest.approx(ratio, rel=1e-7)
        assert ratio / (ref) == pytest.approx(w.numeric / ref, rel=1e-7)


# -- statuses for bad functions --------------------------------------------------------
def test_wrong_gradient_count(rng):
    res = check_vjp(lin_fwd, lambda dy, c: (dy,), [rng.standard_normal((2, 2))] * 2)
    assert res.status == "shape-mismatch" and "1 gradient(s) for 2 input(s)" in res.message


def test_wrong_gradient_shape(rng):
    res = check_vjp(tanh_fwd, lambda dy, y: (dy.T,), [rng.standard_normal((2, 3))])
    assert res.status == "shape-mismatch"
    assert "gradient of x has shape (3, 2), expected (2, 3)" in res.message  # tanh_fwd(x)


def test_forward_without_cache(rng):
    res = check_vjp(np.tanh, tanh_bwd, [rng.standard_normal(3)])
    assert res.status == "bad-protocol" and "forward must return (y, cache)" in res.message


def test_backward_returns_bare_array(rng):
    """One array is the gradient of a one-input function (issue 19); for two inputs it
    is an error unless wrt names the one it belongs to."""
    x = rng.standard_normal(3)
    assert check_vjp(tanh_fwd, lambda dy, y: dy * (1 - y * y), [x]).passed
    assert not check_vjp(tanh_fwd, lambda dy, y: dy * (1 - y), [x]).passed
    res = check_vjp(lin_fwd, lambda dy, c: dy, [rng.standard_normal((2, 2))] * 2)
    assert res.status == "bad-protocol" and "wrt=" in res.message


@pytest.mark.parametrize("where", ["output", "gradient", "perturbed"])
def test_non_finite_is_a_status(where):
    x = np.array([0.5, 1.0, 2.0])
    if where == "output":
        res = check_vjp(lambda v: (np.log(v - 1), v), lambda dy, v: (dy / (v - 1),), [x])
    elif where == "gradient":
        res = check_vjp(tanh_fwd, lambda dy, y: (dy / 0 * y,), [x])
    else:
        z = np.array([1e-300, 1.0])
        res = check_vjp(lambda v: (np.log(v), v), lambda dy, v: (dy / v,), [z])
    assert res.status == "non-finite" and not res.passed


def test_nondeterministic_forward(rng):
    noise = np.random.default_rng(0)
    res = check_vjp(lambda v: (v + noise.standard_normal(v.shape), v), lambda dy, v: (dy,),
                    [rng.standard_normal(3)])
    assert res.status == "nondeterministic" and "forward" in res.message


def test_nondeterministic_backward(rng):
    noise = np.random.default_rng(0)
    res = check_vjp(tanh_fwd, lambda dy, y: (dy * (1 - y * y) + noise.random() * 1e-3,),
                    [rng.standard_normal(3)])
    assert res.status == "nondeterministic" and "backward" in res.message


@pytest.mark.parametrize("broken", [False, True])
def test_backward_writing_into_dy_is_checked_and_fails(rng, broken):
    """Masking dout in place corrupts the caller's gradient (STYLE.md): a mutation even
    when the gradients are right, which the message says; a wrong gradient is a mismatch,
    the write in the notes."""
    def bwd(dy, y):
        dy *= 1 - y * y if not broken else 1 + y * y
        return (dy,)

    res = check_vjp(tanh_fwd, bwd, [rng.standard_normal(4)])
    if broken:
        assert res.status == "mismatch", res.report()
        assert "backward modified dy (the output gradient) in place" in res.notes
    else:
        assert res.status == "mutation" and not res.passed, res.report()
        assert "the gradients it returns are right" in res.message


def test_a_backward_writing_into_dy_fails_where_dy_is_shared_by_a_residual(rng):
    def relu_bwd(dout, x):  # the in-place idiom of a popular textbook
        dout[x <= 0] = 0
        return dout

    def fwd(x):
        return x + np.maximum(x, 0), x

    def bwd(dout, x):  # y = x + relu(x): dout reaches x by both branches
        return (dout + relu_bwd(dout, x),)

    x = rng.standard_normal(8)
    x[np.abs(x) < 0.1] = 0.5
    res = check_vjp(fwd, bwd, [x])
    assert res.status == "mismatch", res.report()
    assert check_vjp(fwd, lambda d, c: (d + relu_bwd(d.copy(), c),), [x]).passed


def test_backward_mutating_cache(rng):
    def bwd(dy, y):
        y *= 2
        return (dy,)

    res = check_vjp(tanh_fwd, bwd, [rng.standard_normal(4)])
    assert res.status == "mutation" and "cache" in res.message


def test_forward_mutating_input(rng):
    def fwd(x):
        x += 1
        return x.copy(), None

    res = check_vjp(fwd, lambda dy, c: (dy,), [rng.standard_normal(4)])
    assert res.status == "mutation" and "forward modified its input x" in res.message


def test_inputs_never_mutated_even_when_forward_raises(rng):
    x = rng.standard_normal(5)
    keep = x.copy()
    calls = {"n": 0}

    def fwd(v):
        calls["n"] += 1
        if calls["n"] > 4:
            raise RuntimeError("boom")
        return np.tanh(v), np.tanh(v)

    res = check_vjp(fwd, tanh_bwd, [x])
    assert res.status == "error" and "RuntimeError: boom" in res.message
    assert "forward (at a perturbed input)" in res.message
    assert np.array_equal(x, keep)
    res = check_vjp(tanh_fwd, tanh_bwd, [x])
    assert res.passed and np.array_equal(x, keep)


def test_read_only_and_non_contiguous_inputs(rng):
    base = rng.standard_normal((6, 6))
    x = base[:, ::2]
    base.flags.writeable = False
    res = check_vjp(tanh_fwd, tanh_bwd, [x])
    assert res.passed and res.inputs[0].checked == x.size


def test_integer_and_constant_inputs(rng):
    idx = np.array([0, 2])

    def fwd(x, i, c):
        return x[i] * c, (x, i, c)

    def bwd(dy, cache):
        x, i, c = cache
        g = np.zeros_like(x)
        np.add.at(g, i, dy * c)
        return g, None, None

    res = check_vjp(fwd, bwd, [rng.standard_normal(3), idx, 2.0])
    # without wrt=, None marks c a constant (said so, not checked); named in wrt=, the
    # output's dependence on it makes None a failure
    assert res.passed and res.inputs[2].status == "constant"
    assert res.inputs[1].status == "skipped"
    res = check_vjp(fwd, bwd, [rng.standard_normal(3), idx, 2.0], wrt=[0, 2])
    assert not res.passed and res.inputs[2].status == "mismatch"
    assert "returned None" in res.inputs[2].hint

    def fwd2(x, i):
        return x[i] * 3.0, (x, i)

    def bwd2(dy, cache):
        x, i = cache
        g = np.zeros_like(x)
        np.add.at(g, i, dy * 3.0)
        return g, None

    assert check_vjp(fwd2, bwd2, [rng.standard_normal(3), idx]).passed


def test_empty_and_zero_d_inputs():
    res = check_vjp(tanh_fwd, tanh_bwd, [np.zeros((0, 3))])
    assert res.passed and res.inputs[0].checked == 0
    res = check_vjp(tanh_fwd, tanh_bwd, [np.float64(0.3)])
    assert res.passed and res.inputs[0].checked == 1


# -- argument validation -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"mode": "fast"}, ValueError, "mode must be one of auto, full, sampled, directional"),
        ({"method": "forward"}, ValueError, "method must be one of"),
        ({"seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"seed": 1.5}, ValueError, "seed must be a non-negative integer"),
        ({"atol": -1.0}, ValueError, "atol must be finite and >= 0"),
        ({"rtol": "x"}, TypeError, "rtol must be a float or None"),
        ({"directions": 0}, ValueError, "directions must be an integer >= 1"),
        ({"budget": 0}, ValueError, "budget must be an integer >= 1"),
        ({"localise": 1}, TypeError, "localise must be True or False"),
    ],
)
def test_option_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_vjp(tanh_fwd, tanh_bwd, [np.ones(2)], **kwargs)


def test_argument_errors():
    with pytest.raises(TypeError, match="fwd must be callable"):
        check_vjp(1, tanh_bwd, [np.ones(2)])
    with pytest.raises(TypeError, match="bwd must be callable"):
        check_vjp(tanh_fwd, None, [np.ones(2)])
    with pytest.raises(TypeError, match=r"wrap a single array as \[x\]"):
        check_vjp(tanh_fwd, tanh_bwd, np.ones(2))
    with pytest.raises(TypeError, match="inputs\\[0\\] is complex"):
        check_vjp(tanh_fwd, tanh_bwd, [np.ones(2, dtype=complex)])
    with pytest.raises(TypeError, match="inputs\\[0\\] has dtype object"):
        check_vjp(tanh_fwd, tanh_bwd, [np.array([None, 1])])


# -- hints -------------------------------------------------------------------------------
RNG_W = np.random.default_rng(99).standard_normal((6, 6))

@pytest.mark.parametrize(
    ("transform", "hint"),
    [
        (lambda g: -g, "sign flipped"),
        (lambda g: 2 * g, "factor of 2"),
        (lambda g: g / 6, "1/6"),
        (lambda g: np.zeros_like(g), "zero everywhere"),
        (lambda g: g.T, "transpose"),
        (lambda g: g + 0.3, "constant offset of 0.3"),
        (lambda g: g * (1 + 1e-4), "too large by a relative 1.0e-04"),
        (lambda g: g + 0.01 * RNG_W, "proportional to the parameter"),
    ],
)
def test_hints(rng, transform, hint):
    x, W = rng.standard_normal((6, 6)), RNG_W

    def bad(dy, c):
        dx, dW = lin_bwd(dy, c)
        return dx, transform(dW)

    res = check_vjp(lin_fwd, bad, [x, W])
    assert hint in res.inputs[1].hint, res.report()


def test_result_report_lists_statuses():
    assert set(gradcheck.STATUSES) >= {
        "ok", "mismatch", "shape-mismatch", "non-finite", "nondeterministic", "mutation",
    }
    assert math.isfinite(gradcheck.DEFAULT_RTOL["float64"])


def test_shape_mismatch_says_when_a_sum_over_leading_axes_fixes_it(rng):
    """A LayerNorm gain gradient left unreduced over the batch."""
    x, g = rng.standard_normal((4, 5)), 1 + 0.1 * rng.standard_normal(5)

    def fwd(x_, g_):
        return x_ * g_, (x_, g_)

    def bwd(dy, c):
        x_, g_ = c
        return dy * g_, dy * x_  # the gain gradient is not summed over the rows

    res = check_vjp(fwd, bwd, [x, g])
    assert res.status == "shape-mismatch"
    assert "summing it over the leading axes (.sum(axis=0))" in res.message


# -- input names -------------------------------------------------------------------------
def _linear_fwd(x, W, b):
    return x @ W + b, (x, W)


def _linear_bad(dy, cache):
    x, W = cache
    return dy @ W.T, x.T @ dy, 2 * dy.sum(axis=0)  # db doubled


def test_inputs_are_named_by_the_forwards_parameters(rng):
    inputs = [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)]
    res = check_vjp(_linear_fwd, _linear_bad, inputs)
    assert [i.name for i in res.inputs] == ["x", "W", "b"]
    assert [i.name for i in res.inputs if not i.passed] == ["b"]
    assert {w.input for i in res.inputs if not i.passed for w in i.worst} == {"b"}
    with pytest.raises(GradientMismatch) as info:
        gradcheck.assert_vjp(_linear_fwd, _linear_bad, inputs, name="linear", seed=5)
    first = str(info.value).splitlines()[0]
    assert first.startswith("hint: ") and "(b mismatch in linear, seed=5)" in first
    # a check of the correct backward is silent about names: it passes
    good = lambda dy, c: (dy @ c[1].T, c[0].T @ dy, dy.sum(axis=0))  # noqa: E731
    assert check_vjp(_linear_fwd, good, inputs).passed


def test_inputs_without_names_keep_x0(rng):
    inputs = [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)]

    def star(*a):
        return _linear_fwd(*a)

    assert [i.name for i in check_vjp(star, _linear_bad, inputs).inputs] == ["x0", "x1", "x2"]
    # fewer named parameters than inputs: the names cannot all come from it
    mixed = lambda x, *w: _linear_fwd(x, *w)  # noqa: E731
    assert [i.name for i in check_vjp(mixed, _linear_bad, inputs).inputs] == ["x0", "x1", "x2"]
    from gradcheck.check._core import input_names

    assert input_names(max, 2) == ["x0", "x1"]  # a builtin without one
    assert input_names(_linear_fwd, 2) == ["x", "W"]


def test_check_grad_names_the_point_as_f_does(rng):
    def loss(w):
        return float((w * w).sum())

    res = check_grad(loss, lambda w: 3 * w, rng.standard_normal(3))
    assert [i.name for i in res.inputs] == ["w"] and not res.passed


# -- outputs that are not new arrays: a buffer the forward reuses, a view of the input ----
class _Buffered:
    """A forward that writes into one output buffer it keeps (as C code often does)."""

    def __init__(self, scale: float) -> None:
        self.out: np.ndarray | None = None
        self.scale = scale

    def fwd(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = np.empty_like(x)
        np.tanh(x, out=self.out)
        return self.out, self.out.copy()

    def bwd(self, dy, y):
        return (self.scale * dy * (1 - y * y),)


@pytest.mark.parametrize("mode", ["full", "sampled", "directional"])
def test_an_output_buffer_reused_by_the_forward_is_copied_per_evaluation(mode):
    x = np.random.default_rng(0).standard_normal((6, 5))
    good = _Buffered(1.0)
    assert check_vjp(good.fwd, good.bwd, [x], mode=mode).passed
    bad = _Buffered(1.001)
    assert check_vjp(bad.fwd, bad.bwd, [x], mode=mode).status == "mismatch"


class _Ring:
    """A forward that writes into two output buffers in turn: two calls return different
    arrays, yet a third overwrites the first's."""

    def __init__(self, scale: float) -> None:
        self.bufs: list[np.ndarray] = []
        self.i, self.scale = 0, scale

    def fwd(self, x):
        if not self.bufs:
            self.bufs = [np.empty_like(x), np.empty_like(x)]
        b = self.bufs[self.i]
        self.i ^= 1
        np.tanh(x, out=b)
        return b, np.tanh(x)

    def bwd(self, dy, y):
        return (self.scale * dy * (1 - y * y),)


@pytest.mark.parametrize("mode", ["full", "sampled", "directional"])
@pytest.mark.parametrize("scale", [0.0, 1.5])
def test_output_buffers_used_in_turn_never_hide_a_wrong_gradient(mode, scale):
    x = np.random.default_rng(3).standard_normal((6, 5))
    assert check_vjp(_Ring(1.0).fwd, _Ring(1.0).bwd, [x], mode=mode).passed
    ring = _Ring(scale)
    assert check_vjp(ring.fwd, ring.bwd, [x], mode=mode).status == "mismatch"


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_an_output_that_is_a_view_of_the_input_is_copied_per_evaluation(mode):
    x = np.random.default_rng(1).standard_normal((4, 3))
    assert check_vjp(lambda a: (a.reshape(-1), None),
                     lambda dy, _c: (dy.reshape(4, 3),), [x], mode=mode).passed
    res = check_vjp(lambda a: (a.reshape(-1), None),
                    lambda dy, _c: (0.5 * dy.reshape(4, 3),), [x], mode=mode)
    assert res.status == "mismatch"


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_a_nan_only_at_a_perturbed_point_is_named_whatever_the_shortcut(mode):
    """Finite sums (yp - y0).dy say the outputs are finite only when dy has no zero; a
    NaN reached only off the point (sqrt just below 0) is still found."""
    x = np.abs(np.random.default_rng(2).standard_normal((3, 3)))
    x[1, 1] = 0.0
    def bwd(dy, a):
        return (dy * 0.5 / np.sqrt(np.where(a > 0, a, 1.0)),)  # finite everywhere

    res = check_vjp(lambda a: (np.sqrt(a), a), bwd, [x], mode=mode)
    assert res.status == "non-finite", res.report()
    assert "gradient" not in res.message, res.message
