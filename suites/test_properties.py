"""Property-based tests (Hypothesis): shapes, invariances, backward properties, checks."""

from __future__ import annotations

import numpy as np
from gradcheck_model import Config, Transformer
from gradcheck_model.activations import ACTIVATIONS
from gradcheck_model.attention import attention_backward, attention_forward, softmax_forward
from gradcheck_model.block import BLOCK_PARAMS, block_backward, block_forward
from gradcheck_model.config import TINY
from gradcheck_model.feedforward import feedforward_backward, feedforward_forward
from gradcheck_model.layernorm import layernorm_backward, layernorm_forward
from gradcheck_model.linear import linear_backward, linear_forward
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import gradcheck

DTYPES = st.sampled_from(["float64", "float32"])


@st.composite
def dims(draw):
    """(B, T, H, D, F): batch, length, heads, head width, feed-forward width."""
    return (draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 3)),
            draw(st.integers(1, 4)), draw(st.integers(1, 6)))


def finite(shape, lo=-3.0, hi=3.0):
    return arrays(np.float64, shape, elements=st.floats(lo, hi, allow_nan=False,
                                                        allow_infinity=False, width=32))


def attn_params(rng, c, dtype):
    ws = []
    for _ in range(4):
        ws += [(0.5 * rng.standard_normal((c, c))).astype(dtype),
               (0.1 * rng.standard_normal(c)).astype(dtype)]
    return ws


def block_params(rng, c, f, dtype):
    shapes = {"ffn.W1": (c, f), "ffn.b1": (f,), "ffn.W2": (f, c)}
    p = {}
    for k in BLOCK_PARAMS:
        shape = shapes.get(k, (c, c) if ".W" in k else (c,))
        base = 1.0 if k.endswith(".g") else 0.0
        p[k] = (base + 0.4 * rng.standard_normal(shape)).astype(dtype)
    return p


# -- shapes and dtypes -------------------------------------------------------------------------
@given(d=dims(), dtype=DTYPES, act=st.sampled_from(sorted(ACTIVATIONS)),
       norm=st.sampled_from(["pre", "post"]), seed=st.integers(0, 2**16))
def test_layer_shapes_and_dtypes(examples, d, dtype, act, norm, seed):
    examples.tick()
    b, t, h, hd, f = d
    c = h * hd
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, c)).astype(dtype)
    p = block_params(rng, c, f, dtype)
    y, cache = block_forward(x, p, n_heads=h, causal=True, activation=act, norm=norm)
    assert y.shape == x.shape and y.dtype == x.dtype
    dx, g = block_backward(np.ones_like(y), cache)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    for k, v in g.items():
        assert v.shape == p[k].shape and v.dtype == p[k].dtype, k


@given(d=dims(), dtype=DTYPES, layers=st.integers(1, 2), v=st.integers(2, 9),
       loss=st.sampled_from(["cross_entropy", "mse", "embedding_mse"]),
       seed=st.integers(0, 2**16))
def test_model_shapes_and_dtypes(examples, d, dtype, layers, v, loss, seed):
    examples.tick()
    b, t, h, hd, f = d
    cfg = Config(vocab_size=v, d_model=h * hd, n_heads=h, d_ff=f, n_layers=layers,
                 max_len=t + 2, dtype=dtype, loss=loss, seed=seed)
    m = Transformer(cfg)
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, v, (b, t))
    out = m.forward(tokens)
    assert out.shape == (b, t, h * hd if loss == "embedding_mse" else v)
    assert out.dtype == np.dtype(dtype)
    targets = rng.standard_normal((b, t, v)) if loss == "mse" else rng.integers(0, v, (b, t))
    loss_value, grads = m.loss_and_grads(tokens, targets)
    assert np.isfinite(loss_value)
    for k, g in grads.items():
        assert g.shape == m.params[k].shape and g.dtype == np.dtype(dtype), k


# -- invariances ------------------------------------------------------------------------------
@given(s=finite((3, 5), -30, 30), shift=st.floats(-50, 50))
def test_softmax_shift_invariance(examples, s, shift):
    examples.tick()
    np.testing.assert_allclose(softmax_forward(s + shift), softmax_forward(s),
                               rtol=1e-12, atol=1e-14)


@given(x=finite((3, 6)), shift=st.floats(-20, 20), scale=st.floats(0.1, 10))
def test_layernorm_shift_and_scale_invariance(examples, x, shift, scale):
    examples.tick()
    rows = np.std(x, axis=-1)
    x = x[rows > 1e-3] if np.any(rows > 1e-3) else x[:0]
    g, b = np.ones(6), np.zeros(6)
    y, _ = layernorm_forward(x, g, b, eps=0.0)
    y2, _ = layernorm_forward(scale * x + shift, g, b, eps=0.0)
    np.testing.assert_allclose(y2, y, rtol=1e-6, atol=1e-6)


@given(d=dims(), t_cut=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_causal_attention_ignores_the_future(examples, d, t_cut, seed):
    examples.tick()
    b, t, h, hd, _ = d
    c = h * hd
    t_cut = min(t_cut, t - 1)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, c))
    w = attn_params(rng, c, np.float64)
    y, cache = attention_forward(x, *w, n_heads=h, causal=True)
    x2 = x.copy()
    x2[:, t_cut + 1:] = rng.standard_normal(x2[:, t_cut + 1:].shape) * 100
    y2, _ = attention_forward(x2, *w, n_heads=h, causal=True)
    np.testing.assert_allclose(y2[:, : t_cut + 1], y[:, : t_cut + 1], rtol=1e-10, atol=1e-12)
    dy = np.zeros_like(y)
    dy[:, : t_cut + 1] = rng.standard_normal(dy[:, : t_cut + 1].shape)
    dx, _ = attention_backward(dy, cache)
    assert np.all(dx[:, t_cut + 1:] == 0)


@given(d=dims(), seed=st.integers(0, 2**16), data=st.data())
def test_attention_without_mask_is_permutation_equivariant(examples, d, seed, data):
    examples.tick()
    b, t, h, hd, _ = d
    c = h * hd
    perm = np.array(data.draw(st.permutations(range(t))))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, c))
    w = attn_params(rng, c, np.float64)
    y, _ = attention_forward(x, *w, n_heads=h, causal=False)
    yp, _ = attention_forward(x[:, perm], *w, n_heads=h, causal=False)
    np.testing.assert_allclose(yp, y[:, perm], rtol=1e-10, atol=1e-12)


@given(extra=st.integers(1, 4), seed=st.integers(0, 2**16), dtype=DTYPES)
def test_padding_a_batch_leaves_the_others_unchanged(examples, extra, seed, dtype):
    examples.tick()
    cfg = Config(**TINY,
                 dtype=dtype, seed=seed)
    m = Transformer(cfg)
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 7, (2, 5))
    padded = np.concatenate([tokens, rng.integers(0, 7, (extra, 5))])
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(m.forward(padded)[:2], m.forward(tokens), rtol=tol, atol=tol)


# -- backward properties that need no finite differences -----------------------------------
@given(d=dims(), a=st.floats(-3, 3), c=st.floats(-3, 3), seed=st.integers(0, 2**16),
       layer=st.sampled_from(["linear", "layernorm", "attention", "feedforward", "block"]))
def test_backward_is_linear_in_dy(examples, d, a, c, seed, layer):
    examples.tick()
    b, t, h, hd, f = d
    ch = h * hd
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, ch))
    if layer == "linear":
        y, cache = linear_forward(x, rng.standard_normal((ch, f)), rng.standard_normal(f))

        def bwd(dy):
            return linear_backward(dy, cache)
    elif layer == "layernorm":
        y, cache = layernorm_forward(x, rng.standard_normal(ch), rng.standard_normal(ch))

        def bwd(dy):
            return layernorm_backward(dy, cache)
    elif layer == "attention":
        y, cache = attention_forward(x, *attn_params(rng, ch, np.float64), n_heads=h,
                                     causal=True)

        def bwd(dy):
            dx, g = attention_backward(dy, cache)
            return (dx, *g.values())
    elif layer == "feedforward":
        y, cache = feedforward_forward(x, rng.standard_normal((ch, f)), rng.standard_normal(f),
                                       rng.standard_normal((f, ch)), rng.standard_normal(ch),
                                       activation="gelu")

        def bwd(dy):
            dx, g = feedforward_backward(dy, cache)
            return (dx, *g.values())
    else:
        y, cache = block_forward(x, block_params(rng, ch, f, np.float64), n_heads=h,
                                 causal=True, activation="tanh", norm="pre")

        def bwd(dy):
            dx, g = block_backward(dy, cache)
            return (dx, *g.values())

    dy1, dy2 = rng.standard_normal(y.shape), rng.standard_normal(y.shape)
    lhs = bwd(a * dy1 + c * dy2)
    for left, g1, g2 in zip(lhs, bwd(dy1), bwd(dy2), strict=True):
        scale = 1 + np.abs(a * g1).max(initial=0) + np.abs(c * g2).max(initial=0)
        np.testing.assert_allclose(left, a * g1 + c * g2, rtol=1e-9, atol=1e-10 * scale)


@given(b=st.integers(2, 4), seed=st.integers(0, 2**16))
def test_batch_gradient_is_the_sum_of_per_example_gradients(examples, b, seed):
    examples.tick()
    cfg = Config(**TINY, seed=seed)
    m = Transformer(cfg)
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 7, (b, 5))
    dout = rng.standard_normal((b, 5, 7))  # a summed loss: its gradient per example
    _, cache = m.forward_train(tokens)
    full = m.backward(dout, cache)
    total = {k: np.zeros_like(v) for k, v in full.items()}
    for i in range(b):
        _, ci = m.forward_train(tokens[i : i + 1])
        for k, g in m.backward(dout[i : i + 1], ci).items():
            total[k] += g
    for k in full:
        np.testing.assert_allclose(total[k], full[k], rtol=1e-9, atol=1e-12)


@given(seed=st.integers(0, 2**16), dtype=DTYPES)
def test_forward_backward_deterministic_and_nothing_mutated(examples, seed, dtype):
    examples.tick()
    cfg = Config(**TINY,
                 dtype=dtype, seed=seed)
    m = Transformer(cfg)
    rng = np.random.default_rng(seed)
    tokens, targets = rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))
    keep = (tokens.copy(), targets.copy(), {k: v.copy() for k, v in m.params.items()})
    l1, g1 = m.loss_and_grads(tokens, targets)
    l2, g2 = m.loss_and_grads(tokens, targets)
    assert l1 == l2 and all(np.array_equal(g1[k], g2[k]) for k in g1)
    assert np.array_equal(tokens, keep[0]) and np.array_equal(targets, keep[1])
    assert all(np.array_equal(m.params[k], v) for k, v in keep[2].items())


# -- gradient checks drawn by Hypothesis -------------------------------------------------------
@given(d=dims(), dtype=DTYPES, seed=st.integers(0, 2**16),
       layer=st.sampled_from(["linear", "layernorm", "attention", "feedforward", "block",
                              *sorted(ACTIVATIONS)]))
@settings(max_examples=40)
def test_every_layer_passes_the_checker_on_drawn_shapes(examples, d, dtype, seed, layer):
    examples.tick()
    b, t, h, hd, f = d
    c = h * hd
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (b, t, c)).astype(dtype)
    if layer == "linear":
        res = gradcheck.check_vjp(linear_forward, linear_backward,
                                  [x, rng.standard_normal((c, f)).astype(dtype),
                                   rng.standard_normal(f).astype(dtype)], seed=seed)
    elif layer == "layernorm":
        res = gradcheck.check_vjp(layernorm_forward, layernorm_backward,
                                  [x, (1 + 0.2 * rng.standard_normal(c)).astype(dtype),
                                   rng.standard_normal(c).astype(dtype)], seed=seed)
    elif layer == "attention":
        def fwd(x_, *w):
            return attention_forward(x_, *w, n_heads=h, causal=True)

        def bwd(dy, cache):
            dx, g = attention_backward(dy, cache)
            return (dx, g["Wq"], g["bq"], g["Wk"], g["bk"], g["Wv"], g["bv"], g["Wo"], g["bo"])

        res = gradcheck.check_vjp(fwd, bwd, [x, *attn_params(rng, c, dtype)], seed=seed)
    elif layer == "feedforward":
        def fwd(x_, *w):
            return feedforward_forward(x_, *w, activation="gelu")

        def bwd(dy, cache):
            dx, g = feedforward_backward(dy, cache)
            return dx, g["W1"], g["b1"], g["W2"], g["b2"]

        ws = [rng.standard_normal(s).astype(dtype) * 0.5 for s in ((c, f), (f,), (f, c), (c,))]
        res = gradcheck.check_vjp(fwd, bwd, [x, *ws], seed=seed)
    elif layer == "block":
        p = block_params(rng, c, f, dtype)

        def fwd(x_, *ps):
            return block_forward(x_, dict(zip(BLOCK_PARAMS, ps, strict=True)), n_heads=h,
                                 causal=True, activation="gelu", norm="pre")

        def bwd(dy, cache):
            dx, g = block_backward(dy, cache)
            return (dx, *[g[k] for k in BLOCK_PARAMS])

        res = gradcheck.check_vjp(fwd, bwd, [x, *p.values()], seed=seed)
    else:
        fw, bw = ACTIVATIONS[layer]
        res = gradcheck.check_vjp(fw, lambda dy, cc: (bw(dy, cc),), [x], seed=seed)
    assert res.passed, res.report()


def test_a_failing_example_shrinks_to_a_minimal_one(examples):
    """A buggy softmax backward (no sum term) fails; Hypothesis shrinks it to 1 x 1.

    One element is the smallest case: softmax is then constant, its true gradient is
    zero, and the buggy ``p * dp`` is not.
    """

    def fwd(s):
        p = softmax_forward(s)
        return p, p

    def buggy(dp, p):
        return (p * dp,)

    def fails(shape):
        examples.tick()
        x = np.linspace(-1, 1, shape[0] * shape[1]).reshape(shape)
        return not gradcheck.check_vjp(fwd, buggy, [x]).passed

    minimal = find(st.tuples(st.integers(1, 6), st.integers(1, 6)), fails,
                   settings=settings(database=None, max_examples=200))
    assert minimal == (1, 1)
    examples.note = f"buggy softmax backward shrank to shape {minimal}"
    res = gradcheck.check_vjp(fwd, buggy, [np.zeros(minimal)])
    assert not res.passed and "s (1, 1)" in res.report()  # named as fwd(s) names it
