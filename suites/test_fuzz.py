"""NaN/Inf fuzzing: extreme inputs, non-finite inputs, training under stress, the checker."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck_model import Config, NonFiniteValueError, Transformer
from gradcheck_model.attention import softmax_forward
from gradcheck_model.config import TINY
from gradcheck_model.layernorm import layernorm_backward, layernorm_forward
from gradcheck_model.losses import cross_entropy_backward, cross_entropy_forward
from gradcheck_model.train import load_corpus, small_config, train
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import gradcheck


def batch(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))


# -- extreme but finite ------------------------------------------------------------------------
@given(mag=st.sampled_from([1e4, 1e30]), dtype=st.sampled_from(["float64", "float32"]),
       seed=st.integers(0, 2**16))
def test_extreme_logits_give_a_finite_loss(examples, mag, dtype, seed):
    examples.tick()
    rng = np.random.default_rng(seed)
    logits = (mag * rng.choice([-1.0, 1.0], (2, 3, 5))).astype(dtype)
    targets = rng.integers(0, 5, (2, 3))
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        loss, cache = cross_entropy_forward(logits, targets)
        d = cross_entropy_backward(1.0, cache)
    assert np.isfinite(loss) and np.all(np.isfinite(d))


def test_fully_masked_softmax_row_is_a_clear_error():
    s = np.zeros((2, 4))
    s[1] = -np.inf
    with pytest.raises(ValueError, match="every position masked"):
        softmax_forward(s)


@given(value=st.floats(-1e6, 1e6), dtype=st.sampled_from(["float64", "float32"]))
def test_zero_variance_layernorm_rows_stay_finite(examples, value, dtype):
    examples.tick()
    x = np.full((3, 8), value, dtype=dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        y, cache = layernorm_forward(x, np.ones(8, dtype), np.zeros(8, dtype))
        dx, dg, db = layernorm_backward(np.ones_like(y), cache)
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(dx))


@given(scale=st.sampled_from([1e-12, 1e-6, 1e3, 1e6, 1e20]),
       dtype=st.sampled_from(["float64", "float32"]), seed=st.integers(0, 2**10))
def test_huge_and_tiny_weights_never_give_a_silent_nan(examples, scale, dtype, seed):
    examples.tick()
    m = Transformer(Config(**TINY, dtype=dtype, seed=seed))
    for k in m.params:
        m.params[k] *= m.params[k].dtype.type(scale)
    try:
        loss, grads = m.loss_and_grads(*batch(seed))
    except NonFiniteValueError as e:
        assert e.layer and e.op  # a clear error naming where
        return
    assert np.isfinite(loss)
    assert all(np.all(np.isfinite(g)) for g in grads.values())


# -- non-finite inputs ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["tok_emb", "blocks.1.attn.Wk", "blocks.0.ffn.b1", "head.W"])
def test_nan_in_a_parameter_is_named(name):
    m = Transformer(Config(**TINY))
    m.params[name].flat[3] = np.nan
    with pytest.raises(NonFiniteValueError, match="forward pass: first at") as info:
        m.loss(*batch())
    assert info.value.layer == name and info.value.op == "parameter"


def test_overflow_inside_a_layer_names_the_operation():
    m = Transformer(Config(**TINY, dtype="float32", activation="relu"))
    m.params["blocks.1.ffn.W1"][...] = 3e38  # x @ W1 overflows float32
    with pytest.raises(NonFiniteValueError) as info:
        m.forward(batch()[0])
    assert info.value.layer == "blocks.1"
    assert info.value.op == "feed-forward first linear"
    assert "blocks.1, feed-forward first linear" in str(info.value)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_locator_probes_the_models_own_forward(norm):
    """The probe sees the forward the model runs (same output), every parameter before
    its stage and every named intermediate in order; nothing is replayed elsewhere."""
    m = Transformer(Config(**TINY, norm=norm))
    seen = []
    out, _ = m._forward_unchecked(batch()[0], False, lambda layer, op, v: seen.append(
        (layer, op, np.array(v, copy=True))))
    np.testing.assert_array_equal(out, m.forward(batch()[0]))
    ops = [(layer, op) for layer, op, _v in seen]
    assert ops[:3] == [("tok_emb", "parameter"), ("pos_emb", "parameter"),
                       ("embedding", "token + position lookup")]
    block0 = [op for layer, op in ops if layer == "blocks.0"]
    first = "attention query projection" if norm == "post" else "LayerNorm ln1"
    assert block0[0] == first and block0[-1] == (
        "LayerNorm ln2" if norm == "post" else "feed-forward residual add")
    assert len(block0) == 13
    assert ops[-1] == ("head", "output projection")
    np.testing.assert_array_equal(seen[-1][2], out)


@pytest.mark.parametrize("norm, op", [("pre", "LayerNorm ln2"),
                                      ("post", "LayerNorm ln1")])
def test_overflow_is_named_in_both_block_layouts(norm, op):
    m = Transformer(Config(**TINY, norm=norm, dtype="float32"))
    if norm == "pre":
        m.params["blocks.0.ln2.g"][...] = 3e38  # finite, LN2's output overflows
        m.params["blocks.0.ln2.g"][0] = -3e38
    else:
        m.params["blocks.0.attn.bo"][...] = 3e38  # x + a is finite, LN1 of it overflows
    with pytest.raises(NonFiniteValueError) as info:
        m.forward(batch()[0])
    assert (info.value.layer, info.value.op) == ("blocks.0", op), str(info.value)


def test_the_locator_imports_no_part_of_the_model():
    import ast
    from pathlib import Path

    import gradcheck_model.anomaly

    tree = ast.parse(Path(gradcheck_model.anomaly.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith(("model", ".")) or m == ""], imported


def test_nan_in_dout_is_named():
    m = Transformer(Config(**TINY))
    out, cache = m.forward_train(batch()[0])
    dout = np.zeros_like(out)
    dout[0, 1, 2] = np.inf
    with pytest.raises(NonFiniteValueError, match="backward pass: first at dout"):
        m.backward(dout, cache)


def test_non_finite_gradient_in_the_backward_is_named():
    m = Transformer(Config(**TINY))
    out, cache = m.forward_train(batch()[0])
    dout = np.full_like(out, 1.5e308)  # finite, but the backward overflows
    with pytest.raises(NonFiniteValueError, match="backward pass: first at head"):
        m.backward(dout, cache)


def test_check_finite_can_be_switched_off():
    m = Transformer(Config(**TINY, check_finite=False))
    m.params["head.b"][0] = np.nan
    assert np.isnan(m.forward(batch()[0])).any()


@given(where=st.sampled_from(["input", "dy-output", "gradient"]),
       bad=st.sampled_from([np.nan, np.inf, -np.inf]), seed=st.integers(0, 2**16))
def test_checker_reports_non_finite_instead_of_passing(examples, where, bad, seed):
    examples.tick()
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(6)
    if where == "input":
        x[2] = bad
        res = gradcheck.check_vjp(lambda v: (np.tanh(v), v),
                                  lambda dy, v: (dy / np.cosh(v) ** 2,), [x])
    elif where == "dy-output":
        res = gradcheck.check_vjp(lambda v: (v * bad, v), lambda dy, v: (dy * bad,), [x])
    else:
        res = gradcheck.check_vjp(lambda v: (v, v), lambda dy, v: (dy * bad,), [x])
    assert res.status == "non-finite" and not res.passed


# -- training under stress --------------------------------------------------------------------
@given(lr=st.sampled_from([0.1, 1.0, 3.0, 10.0]), clip=st.sampled_from([5.0, 100.0, 1e6]),
       opt=st.sampled_from(["sgd", "adam"]), seed=st.integers(0, 2**8))
def test_training_under_stress_keeps_parameters_finite(examples, lr, clip, opt, seed):
    examples.tick()
    corpus = load_corpus()
    m = Transformer(small_config(corpus, d_model=16, d_ff=32, n_layers=1, seed=seed))
    try:
        r = train(m, corpus, epochs=3, steps_per_epoch=2, batch=4, length=16, optimizer=opt,
                  lr=lr, clip_value=clip, seed=seed)
        assert len(r.losses) == 3
    except NonFiniteValueError as e:
        assert e.layer  # a clear error, never a NaN loss
    assert all(np.all(np.isfinite(p)) for p in m.params.values())


# -- the checker fuzzed -----------------------------------------------------------------------
ODD_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


@given(
    x=arrays(st.sampled_from([np.float64, np.float32]),
             array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), elements=ODD_FLOATS),
    layout=st.sampled_from(["plain", "read-only", "non-contiguous"]),
    mode=st.sampled_from(["auto", "full", "sampled", "directional"]),
    kind=st.sampled_from(["tanh", "sum", "square", "shape-bug"]),
)
def test_checker_never_crashes(examples, x, layout, mode, kind):
    examples.tick()
    if layout == "read-only":
        x.flags.writeable = False
    elif layout == "non-contiguous" and x.ndim >= 1:
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    keep = np.array(x, copy=True)
    fns = {
        "tanh": (lambda v: (np.tanh(v), v), lambda dy, v: (dy * (1 - np.tanh(v) ** 2),)),
        "sum": (lambda v: (np.sum(v), v), lambda dy, v: (np.ones_like(v) * dy,)),
        "square": (lambda v: (v * v, v), lambda dy, v: (2 * v * dy,)),
        "shape-bug": (lambda v: (v, v), lambda dy, v: (np.zeros(v.size + 1),)),
    }
    fwd, bwd = fns[kind]
    res = gradcheck.check_vjp(fwd, bwd, [x], mode=mode)
    assert res.status in gradcheck.STATUSES
    assert res.passed == (res.status == "ok")
    finite = bool(np.all(np.isfinite(x)))
    if kind == "shape-bug":
        assert res.status in ("shape-mismatch", "non-finite")
    elif not finite:
        assert not res.passed
    assert np.array_equal(np.asarray(x), keep, equal_nan=True)  # never mutated
    res.to_dict()
    res.report()


def test_fuzz_poisons_dict_inputs_and_says_when_there_is_nothing_to_poison():
    from gradcheck import LayerCase
    from gradcheck.fuzz import fuzz_layer_case, nothing_to_fuzz

    def fwd(x, scale):
        return x * scale, scale

    def bwd(dy, scale):
        return {"x": dy * scale, "scale": None}

    named = LayerCase("scale", inputs=lambda rng, dt: {"x": rng.standard_normal(3).astype(dt),
                                                       "scale": 2.0},
                      fwd=fwd, bwd=bwd, wrt=["x"])
    rows = fuzz_layer_case(named, "float64")
    assert [r.input for r in rows] == ["x"] * 3 + ["scale"] * 3 and all(r.ok for r in rows)
    ints = LayerCase("lookup", inputs=lambda rng, dt: [rng.integers(0, 3, 4)],
                     fwd=lambda t: (t * 1.0, None), bwd=lambda dy, c: (None,))
    assert fuzz_layer_case(ints, "float64") == []
    assert "nothing to poison" in nothing_to_fuzz(ints, "float64")
