"""Code as people write it: layer objects in each convention, several outputs, constants,
losses in both styles, crashing and aliasing backward passes. Each correct and broken."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import GradientMismatch, LayerConventionError

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
SQ = RNG.standard_normal((4, 4))


# -- convention 4: attributes W, b with dW, db accumulated with += ------------------------
class Dense:
    def __init__(self, n, m, seed=0, broken=False):
        rng = np.random.default_rng(seed)
        self.W, self.b = rng.standard_normal((n, m)), rng.standard_normal(m)
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        self.broken = broken

    def forward(self, x):
        self.x = x  # the cache lives on the object
        return x @ self.W + self.b

    def backward(self, dout):
        if self.broken:  # the classic: dW transposed, unnoticed on square weights
            self.dW += dout.T @ self.x
        else:
            self.dW += self.x.T @ dout
        self.db += dout.sum(axis=0)
        return dout @ self.W.T


def test_attribute_layer_with_accumulated_gradients():
    layer = Dense(4, 4)
    layer.dW += 5.0  # stale gradient from an earlier step: the change is what counts
    before = layer.W.copy(), layer.dW.copy()
    res = gradcheck.check_layer(layer, SQ, seed=1)
    assert res.passed, res.report()
    assert [i.name for i in res.inputs] == ["x0", "W", "b"] and res.kind == "layer"
    assert np.array_equal(layer.W, before[0]) and np.array_equal(layer.dW, before[1])
    assert not hasattr(layer, "x")  # every evaluation ran on a copy


def test_attribute_layer_broken_is_named():
    res = gradcheck.check_layer(Dense(4, 4, broken=True), SQ, seed=1)
    assert not res.passed and [i.name for i in res.inputs if not i.passed] == ["W"]
    with pytest.raises(GradientMismatch, match="W"):
        gradcheck.assert_layer(Dense(4, 4, broken=True), SQ)


# -- convention 2: params / grads dicts, a list of cached inputs -----------------------------
class DictAffine:
    def __init__(self, n, m, broken=False):
        rng = np.random.default_rng(1)
        self.params = {"W": rng.standard_normal((n, m)), "b": np.zeros(m)}
        self.grads = {}
        self.inputs = []  # grows with every forward: must not leak between evaluations
        self.broken = broken

    def forward(self, x):
        self.inputs.append(x)
        return np.tanh(x @ self.params["W"] + self.params["b"])

    def backward(self, dout):
        x = self.inputs[-1]
        y = np.tanh(x @ self.params["W"] + self.params["b"])
        dz = dout * (1 - y * y)
        self.grads["W"] = x.T @ dz
        self.grads["b"] = dz.sum(axis=0) if not self.broken else dout.sum(axis=0)
        return dz @ self.params["W"].T


@pytest.mark.parametrize("broken", [False, True])
def test_dict_layer(broken):
    res = gradcheck.check_layer(DictAffine(3, 2, broken=broken), X, seed=2)
    assert res.passed is (not broken), res.report()
    names = [i.name for i in res.inputs]
    assert names == ["x0", "params['W']", "params['b']"]
    if broken:
        assert [i.name for i in res.inputs if not i.passed] == ["params['b']"]


# -- convention 3: parameter objects; other method names; state ---------------------------
class Parameter:
    def __init__(self, data):
        self.data = data
        self.grad = None


class Scale:
    """forward_pass / backward_pass(accum_grad), a timestep counter and a dropout mask."""

    def __init__(self, n, broken=False):
        self.gain = Parameter(np.linspace(0.5, 1.5, n))
        self.t = 0
        self.rng = np.random.default_rng(3)
        self.broken = broken

    def forward_pass(self, x):
        self.t += 1
        self.mask = (self.rng.random(x.shape) > 0.2) / 0.8
        self.x = x
        return x * self.gain.data * self.mask

    def backward_pass(self, accum_grad):
        g = accum_grad * self.mask
        if self.gain.grad is None:
            self.gain.grad = np.zeros_like(self.gain.data)
        self.gain.grad += (g * self.x).sum(axis=0)
        return g * (self.gain.data if not self.broken else 1.0)


@pytest.mark.parametrize("broken", [False, True])
def test_parameter_objects_and_method_names(broken):
    layer = Scale(3, broken=broken)
    res = gradcheck.check_layer(layer, X, forward="forward_pass", backward="backward_pass")
    assert res.passed is (not broken), res.report()
    assert [i.name for i in res.inputs] == ["x0", "gain"]
    assert layer.t == 0 and layer.gain.grad is None


# -- explicit names, and the error when nothing matches ------------------------------------
class Odd:
    def __init__(self):
        self.weights = np.random.default_rng(4).standard_normal((3, 2))

    def forward(self, x):
        self.x = x
        return x @ self.weights

    def backward(self, d):
        self.weight_gradient = self.x.T @ d
        return d @ self.weights.T


def test_a_stored_gradient_of_a_name_never_seen_is_matched_by_its_shape():
    res = gradcheck.check_layer(Odd(), X)
    assert res.passed, res.report()
    assert [i.name for i in res.inputs] == ["x0", "weights"]
    assert any("weight_gradient" in n and "only array stored of its shape" in n
               for n in res.notes), res.notes


class OddTwins(Odd):
    """Two arrays of one shape, and two gradients stored under names that say nothing."""

    def __init__(self):
        super().__init__()
        self.scales = np.random.default_rng(5).standard_normal((3, 2))

    def forward(self, x):
        self.x = x
        return x @ (self.weights * self.scales)

    def backward(self, d):
        self.g1 = (self.x.T @ d) * self.scales
        self.g2 = (self.x.T @ d) * self.weights
        return d @ (self.weights * self.scales).T


def test_unknown_convention_says_what_was_observed():
    with pytest.raises(LayerConventionError) as info:
        gradcheck.check_layer(OddTwins(), X)
    msg = str(info.value)
    assert "the output depends on" in msg and "weights (3, 2)" in msg and "scales" in msg
    assert "stored g1 (3, 2) float64, g2 (3, 2) float64" in msg and "params=" in msg


def test_explicit_paths_and_callables():
    res = gradcheck.check_layer(Odd(), X, params={"weights": "weights"},
                                grads={"weights": lambda layer: layer.weight_gradient})
    assert res.passed and [i.name for i in res.inputs] == ["x0", "weights"]
    only_input = gradcheck.check_layer(Odd(), X, params={})
    assert only_input.passed and [i.name for i in only_input.inputs] == ["x0"]


def test_missing_method_is_a_clear_error():
    with pytest.raises(TypeError, match="has no method 'fprop'"):
        gradcheck.check_layer(Dense(3, 2), X, forward="fprop")


# -- several outputs, structured inputs, constants -----------------------------------------
def lstm_step(x, state, p):
    """One LSTM-like step: returns (h, c), with the state and parameters as dicts."""
    h, c = state["h"], state["c"]
    z = x @ p["Wx"] + h @ p["Wh"] + p["b"]
    n = h.shape[1]
    i, f = 1 / (1 + np.exp(-z[:, :n])), 1 / (1 + np.exp(-z[:, n:2 * n]))
    o, g = 1 / (1 + np.exp(-z[:, 2 * n:3 * n])), np.tanh(z[:, 3 * n:])
    c2 = f * c + i * g
    h2 = o * np.tanh(c2)
    return (h2, c2), (x, h, c, p, i, f, o, g, c2)


def lstm_step_backward(dout, cache, broken=False):
    dh2, dc2 = dout
    x, h, c, p, i, f, o, g, c2 = cache
    tc = np.tanh(c2)
    do = dh2 * tc
    dc = dc2 + dh2 * o * (1 - tc * tc) * (0.0 if broken else 1.0)
    di, df, dg, dc_prev = dc * g, dc * c, dc * i, dc * f
    dz = np.concatenate([di * i * (1 - i), df * f * (1 - f), do * o * (1 - o),
                         dg * (1 - g * g)], axis=1)
    grads_p = {"Wx": x.T @ dz, "Wh": h.T @ dz, "b": dz.sum(axis=0)}
    return dz @ p["Wx"].T, {"h": dz @ p["Wh"].T, "c": dc_prev}, grads_p


def _lstm_inputs():
    rng = np.random.default_rng(5)
    n, d, b = 3, 2, 4
    return [rng.standard_normal((b, d)),
            {"h": rng.standard_normal((b, n)), "c": rng.standard_normal((b, n))},
            {"Wx": rng.standard_normal((d, 4 * n)) * 0.5,
             "Wh": rng.standard_normal((n, 4 * n)) * 0.5, "b": rng.standard_normal(4 * n)}]


@pytest.mark.parametrize("broken", [False, True])
def test_lstm_step_with_two_outputs_and_nested_inputs(broken):
    res = gradcheck.check_vjp(lstm_step,
                              lambda d, c: lstm_step_backward(d, c, broken=broken),
                              _lstm_inputs(), seed=4)
    assert res.passed is (not broken), res.report()
    names = [i.name for i in res.inputs]
    # named as lstm_step(x, state, p) names its parameters
    assert names == ["x", "state['h']", "state['c']", "p['Wx']", "p['Wh']", "p['b']"]
    if broken:  # the c-path through h2 = o tanh(c2) is dropped
        assert "state['c']" in {i.name for i in res.inputs if not i.passed}


def test_dict_inputs_are_keyword_arguments_and_names():
    def fwd(x, params):
        return {"y": x @ params["W"], "norm": np.sum(x * x)}, (x, params)

    def bwd(dy, cache):
        x, p = cache
        return {"x": dy["y"] @ p["W"].T + 2 * x * dy["norm"], "params": {"W": x.T @ dy["y"]}}

    inputs = {"x": X, "params": {"W": RNG.standard_normal((3, 2))}}
    res = gradcheck.check_vjp(fwd, bwd, inputs)
    assert res.passed, res.report()
    assert [i.name for i in res.inputs] == ["x", "params['W']"]


def test_wrt_makes_constants_of_any_type():
    def fwd(x, W, mode, scale):
        y = x @ W * scale
        return (np.tanh(y) if mode == "tanh" else y), (x, W, y, mode, scale)

    def bwd(dy, cache):
        x, W, y, mode, scale = cache
        dz = dy * (1 - np.tanh(y) ** 2) * scale
        return dz @ W.T, None, "ignored", object()

    W = RNG.standard_normal((3, 2))
    res = gradcheck.check_vjp(fwd, bwd, [X, W, "tanh", 0.5], wrt=[0])
    assert res.passed, res.report()
    assert [i.status for i in res.inputs] == ["ok", "constant", "constant", "constant"]
    # without wrt, None marks the floating W a constant, said so; named in wrt, a failure
    none_for_w = lambda d, c: (*bwd(d, c)[:2], None, None)  # noqa: E731
    res = gradcheck.check_vjp(fwd, none_for_w, [X, W, "tanh", 0.5])
    assert res.passed and res.inputs[1].status == "constant", res.report()
    assert "backward returned no gradient for it (None" in res.inputs[1].message
    assert any(n.startswith("mode: settings") for n in res.notes), res.notes
    res = gradcheck.check_vjp(fwd, none_for_w, [X, W, "tanh", 0.5], wrt=[0, 1])
    assert not res.passed and res.inputs[1].status == "mismatch"
    assert "wrt" in res.inputs[1].hint
    with pytest.raises(ValueError, match="wrt: 5 is not an input"):
        gradcheck.check_vjp(fwd, bwd, [X, W, "tanh", 0.5], wrt=[5])


# -- losses in both styles -------------------------------------------------------------------
def softmax_loss(x, y, broken=False):
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.mean(np.log(p[np.arange(n), y]))
    dx = p.copy()
    dx[np.arange(n), y] -= 1
    return loss, dx if broken else dx / n  # broken: the 1/N is missing


@pytest.mark.parametrize("broken", [False, True])
def test_cs231n_style_loss(broken):
    y = np.array([0, 2, 1, 2])
    res = gradcheck.check_loss(lambda x, t: softmax_loss(x, t, broken), X, y)
    assert res.passed is (not broken), res.report()
    assert res.kind == "loss" and [i.status for i in res.inputs][1] == "constant"


class MSELoss:
    """An object loss: forward(pred, target) -> scalar, backward() with no argument."""

    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, pred, target):
        self.diff = pred - target
        return float(np.mean(self.diff ** 2))

    def backward(self):
        return (2 if not self.broken else 1) * self.diff / self.diff.size


@pytest.mark.parametrize("broken", [False, True])
def test_object_loss_without_dout_and_a_float_constant_target(broken):
    target = RNG.standard_normal(X.shape)
    res = gradcheck.check_layer(MSELoss(broken), X, target, wrt=["x0"])
    assert res.passed is (not broken), res.report()
    assert [i.status for i in res.inputs][1] == "constant"


# -- errors, mutation and aliasing -----------------------------------------------------------
def test_crashing_backward_is_a_status_with_the_users_frame():
    def bwd(dy, cache):
        return (dy @ np.ones((5, 5)),)  # a shape bug

    res = gradcheck.check_vjp(lambda x: (x * 2, x), bwd, [X])
    assert res.status == "error" and not res.passed
    assert res.error["type"] == "ValueError" and res.error["in"] == "backward"
    assert "test_layers.py" in res.error["where"] and "dy @ np.ones" in res.error["where"]
    assert "test_layers.py" in res.report()
    with pytest.raises(GradientMismatch) as info:
        gradcheck.assert_vjp(lambda x: (x * 2, x), bwd, [X])
    assert isinstance(info.value.__cause__, ValueError)


def test_crashing_layer_forward_is_a_status():
    class Broken(Dense):
        def forward(self, x):
            return np.matmul(x, self.W.T)  # removed transpose: a shape error

    res = gradcheck.check_layer(Broken(3, 2), X)
    assert res.status == "error" and "Broken.forward" in res.message


class _Holder:
    def __init__(self, W):
        self.W = W
        self.buf = None


def test_backward_writing_into_an_object_in_the_cache_is_mutation():
    def fwd(x):
        return x * 2, _Holder(x.copy())

    def bwd(dy, holder):
        holder.W *= 0  # edits an array held by an object in the cache
        return (dy * 2,)

    res = gradcheck.check_vjp(fwd, bwd, [X])
    assert res.status == "mutation" and "cache.W" in res.message


def test_backward_handing_out_views_it_edits_later_is_aliasing():
    def fwd(x):
        return x * 2, _Holder(x)

    def bwd(dy, holder):
        if holder.buf is None:
            holder.buf = np.empty_like(dy)
        np.multiply(dy, 2, out=holder.buf)
        return (holder.buf,)  # a view of a buffer the next call overwrites

    res = gradcheck.check_vjp(fwd, bwd, [X])
    assert res.status == "aliasing" and "views" in res.message

    def fresh(dy, holder):
        return (dy * 2,)

    assert gradcheck.check_vjp(fwd, fresh, [X]).passed


# -- float32 sensitivity ---------------------------------------------------------------------
def _gelu_exact_derivative(dy, cache):
    from scipy.special import erf

    x = cache.x.astype(np.float64)
    d = 0.5 * (1 + erf(x / np.sqrt(2))) + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
    return ((dy * d).astype(np.float32),)


@pytest.mark.parametrize("n", [16, 24])
def test_float32_small_relative_errors_are_caught_at_every_seed(n):
    """5e-4 relative on a smooth float32 layer of n >= 16 elements, 40 seeds; and a GELU
    whose backward uses the exact derivative under the tanh forward (<= 6e-4 relative)."""
    from gradcheck_model.activations import gelu_tanh_backward, gelu_tanh_forward

    def scaled(dy, c):
        return (gelu_tanh_backward(dy, c) * np.float32(1 + 5e-4),)

    def good(dy, c):
        return (gelu_tanh_backward(dy, c),)

    for seed in range(40):
        x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
        for bwd, label in ((scaled, "scaled"), (_gelu_exact_derivative, "exact-derivative")):
            res = gradcheck.check_vjp(gelu_tanh_forward, bwd, [x], seed=seed)
            assert not res.passed, f"{label} missed at seed={seed}:\n{res.report()}"
        ok = gradcheck.check_vjp(gelu_tanh_forward, good, [x], seed=seed)
        assert ok.passed, f"false alarm at seed={seed}:\n{ok.report()}"


# -- issue 19: parameters where real code keeps them -------------------------------------------
class LN:
    def __init__(self, d):
        self.gamma, self.beta = np.linspace(0.5, 1.5, d), np.linspace(-0.3, 0.3, d)
        self.dgamma, self.dbeta = np.zeros(d), np.zeros(d)

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        self.rstd = 1 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
        self.xn = (x - mu) * self.rstd
        return self.xn * self.gamma + self.beta

    def backward(self, dout):
        self.dgamma += (dout * self.xn).sum(axis=0)
        self.dbeta += dout.sum(axis=0)
        dxn = dout * self.gamma
        return self.rstd * (dxn - dxn.mean(axis=-1, keepdims=True)
                            - self.xn * (dxn * self.xn).mean(axis=-1, keepdims=True))


class SelfAttention:
    def __init__(self, c, seed, broken=False):
        r = np.random.default_rng(seed)
        for n in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, n, r.standard_normal((c, c)) / np.sqrt(c))
            setattr(self, "d" + n, np.zeros((c, c)))
        self.broken = broken

    def forward(self, x):
        self.x = x
        self.q, self.k, self.v = x @ self.W_q, x @ self.W_k, x @ self.W_v
        s = self.q @ self.k.T / np.sqrt(x.shape[1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        self.p = e / e.sum(axis=-1, keepdims=True)
        self.a = self.p @ self.v
        return self.a @ self.W_o

    def backward(self, dout):
        self.dW_o += self.a.T @ dout
        da = dout @ self.W_o.T
        dp, dv = da @ self.v.T, self.p.T @ da
        ds = self.p * (dp - (dp * self.p).sum(axis=-1, keepdims=True)) / np.sqrt(self.x.shape[1])
        dq, dk = ds @ self.k, ds.T @ self.q
        self.dW_q += self.x.T @ dq
        self.dW_k += self.x.T @ (dq if self.broken else dk)  # broken: the key branch from q
        self.dW_v += self.x.T @ dv
        return dq @ self.W_q.T + dk @ self.W_k.T + dv @ self.W_v.T


class FFN:
    def __init__(self, c, seed):
        r = np.random.default_rng(seed)
        self.W1, self.b1 = r.standard_normal((c, 2 * c)) / np.sqrt(c), r.standard_normal(2 * c)
        self.W2 = r.standard_normal((2 * c, c)) / np.sqrt(2 * c)
        self.dW1, self.db1, self.dW2 = (np.zeros_like(a) for a in (self.W1, self.b1, self.W2))

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W1 + self.b1)
        return self.h @ self.W2

    def backward(self, dout):
        self.dW2 += self.h.T @ dout
        dz = (dout @ self.W2.T) * (1 - self.h ** 2)
        self.dW1 += self.x.T @ dz
        self.db1 += dz.sum(axis=0)
        return dz @ self.W1.T


class EncoderBlock:
    """h = x + attn(ln1(x)); y = h + ffn(ln2(h)): 11 tensors in four sub-layers."""

    def __init__(self, c, seed, broken=False):
        self.ln1, self.attn = LN(c), SelfAttention(c, seed, broken)
        self.ln2, self.ffn = LN(c), FFN(c, seed + 1)

    def forward(self, x):
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, dout):
        dh = dout + self.ln2.backward(self.ffn.backward(dout))  # y = h + ffn(ln2(h))
        return dh + self.ln1.backward(self.attn.backward(dh))  # h = x + attn(ln1(x))


class Encoder:
    def __init__(self, c, n, broken_block=None):
        self.blocks = [EncoderBlock(c, 10 * k, broken=k == broken_block) for k in range(n)]

    def forward(self, x):
        for b in self.blocks:
            x = b.forward(x)
        return x

    def backward(self, dout):
        for b in reversed(self.blocks):
            dout = b.backward(dout)
        return dout


ENC_X = np.random.default_rng(11).standard_normal((4, 3))


def test_encoder_block_every_tensor_of_every_sub_layer_is_checked():
    res = gradcheck.check_layer(EncoderBlock(3, 0), ENC_X, seed=1)
    assert res.passed, res.report()
    names = [i.name for i in res.inputs]
    assert len(names) == 12 and all(i.checked > 0 for i in res.inputs), names  # x0 + 11
    assert {"ln1.gamma", "attn.W_q", "attn.W_o", "ffn.b1", "ln2.beta"} <= set(names)


def test_wrong_tensor_in_a_list_of_blocks_is_named_by_its_path():
    res = gradcheck.check_layer(Encoder(3, 2, broken_block=1), ENC_X, seed=1)
    assert not res.passed and len(res.inputs) == 1 + 22
    assert [i.name for i in res.inputs if not i.passed] == ["blocks[1].attn.W_k"]


def test_a_buffer_the_output_ignores_is_state_not_an_error():
    enc = Encoder(3, 2)
    enc.blocks[1].attn.mask = np.tril(np.ones((4, 4)))  # a float buffer no forward reads
    res = gradcheck.check_layer(enc, ENC_X)
    assert res.passed, res.report()
    assert "blocks[1].attn.mask" not in [i.name for i in res.inputs]
    assert any(n.startswith("state: the output does not depend on blocks[1].attn.mask")
               for n in res.notes), res.notes


class Scaled(Odd):
    """Odd with a float buffer its forward reads and no gradient for it."""

    def __init__(self):
        super().__init__()
        self.temperature = np.full((1,), 1.5)

    def forward(self, x):
        return super().forward(x) * self.temperature

    def backward(self, d):
        self.dweights = self.x.T @ d * self.temperature
        return d * self.temperature @ self.weights.T


def test_a_buffer_the_output_reads_with_no_gradient_is_an_error_that_lists_it():
    with pytest.raises(LayerConventionError) as info:
        gradcheck.check_layer(Scaled(), X)
    msg = str(info.value)
    assert "the output depends on temperature (1,) float64" in msg, msg
    assert "params=" in msg


class BatchNorm1d:
    """gamma/beta with dgamma/dbeta, and running statistics that are no parameter."""

    def __init__(self, d):
        self.gamma, self.beta = np.ones(d) * 1.2, np.zeros(d) + 0.1
        self.dgamma, self.dbeta = np.zeros(d), np.zeros(d)
        self.running_mean, self.running_var = np.zeros(d), np.ones(d)

    def forward(self, x):
        mu, var = x.mean(axis=0), x.var(axis=0)
        self.running_mean = 0.9 * self.running_mean + 0.1 * mu
        self.running_var = 0.9 * self.running_var + 0.1 * var
        self.std = np.sqrt(var + 1e-5)
        self.xn = (x - mu) / self.std
        return self.gamma * self.xn + self.beta

    def backward(self, dout):
        self.dgamma += (dout * self.xn).sum(axis=0)
        self.dbeta += dout.sum(axis=0)
        dxn = dout * self.gamma
        return (dxn - dxn.mean(axis=0) - self.xn * (dxn * self.xn).mean(axis=0)) / self.std


def test_running_statistics_are_state_the_output_does_not_depend_on():
    res = gradcheck.check_layer(BatchNorm1d(3), X)
    assert res.passed and [i.name for i in res.inputs] == ["x0", "gamma", "beta"]
    assert "state: the output does not depend on running_mean, running_var (not checked)" \
        in res.notes


    class NoMeanTerm(BatchNorm1d):
        def backward(self, dout):
            return super().backward(dout) + (dout * self.gamma).mean(axis=0) / self.std

    assert gradcheck.check_layer(NoMeanTerm(3), X).status == "mismatch"
    res = gradcheck.check_layer(BatchNorm1d(3), X, params={"gamma": "gamma", "beta": "beta"})
    assert res.passed and [i.name for i in res.inputs] == ["x0", "gamma", "beta"]


class ListLayer:
    """A book's layer: self.params = [W, b], self.grads = [dW, db] filled in place."""

    def __init__(self, broken=False):
        r = np.random.default_rng(12)
        self.params = [r.standard_normal((3, 2)), r.standard_normal(2)]
        self.grads = [np.zeros((3, 2)), np.zeros(2)]
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.params[0] + self.params[1]

    def backward(self, dout):
        self.grads[0][...] = self.x.T @ dout
        self.grads[1][...] = dout.sum(axis=0) * (2.0 if self.broken else 1.0)
        return dout @ self.params[0].T


class ListNet:
    """The book's composite: its own lists are its layers' arrays again."""

    def __init__(self, broken=False):
        self.layers = [ListLayer(), ListLayer(broken)]
        self.layers[1].params[0] = self.layers[1].params[0][:2]  # (2, 2) after (3, 2)
        self.layers[1].grads[0] = self.layers[1].grads[0][:2]
        self.params, self.grads = [], []
        for layer in self.layers:
            self.params += layer.params
            self.grads += layer.grads

    def forward(self, x):
        return self.layers[1].forward(self.layers[0].forward(x))

    def backward(self, dout):
        return self.layers[0].backward(self.layers[1].backward(dout))


@pytest.mark.parametrize("broken", [False, True])
def test_params_and_grads_lists_shared_by_a_composite_count_once(broken):
    res = gradcheck.check_layer(ListNet(broken), X, seed=3)
    assert res.passed is (not broken), res.report()
    assert [i.name for i in res.inputs] == ["x0", "layers[0].params[0]", "layers[0].params[1]",
                                            "layers[1].params[0]", "layers[1].params[1]"]
    if broken:
        assert [i.name for i in res.inputs if not i.passed] == ["layers[1].params[1]"]


class LazyOdd:
    """Weights built on the first forward, their gradient under a name no convention knows."""

    def __init__(self):
        self.weights = None

    def forward(self, x):
        if self.weights is None:
            self.weights = np.full((x.shape[1], 2), 0.3)
        self.x = x
        return x @ self.weights

    def backward(self, d):
        self.weight_gradient = self.x.T @ d
        return d @ self.weights.T


def test_weights_built_on_the_first_forward_are_matched_by_observation_too():
    res = gradcheck.check_layer(LazyOdd(), X)
    assert res.passed and [i.name for i in res.inputs] == ["x0", "weights"], res.report()
    assert any("weight_gradient" in n for n in res.notes), res.notes


def test_float32_layer_gradients_are_not_reported_as_float64():
    """Issue 21: check_layer's own conversion is no user's dtype change."""
    layer = Dense(3, 2)
    layer.W, layer.b = layer.W.astype(np.float32), layer.b.astype(np.float32)
    layer.dW, layer.db = layer.dW.astype(np.float32), layer.db.astype(np.float32)
    res = gradcheck.check_layer(layer, X.astype(np.float32), seed=2)
    assert res.passed, res.report()
    assert not any("float64" in n for n in res.notes), res.notes
    layer.dW = layer.dW.astype(np.float64)  # a layer that really widens its gradient
    res = gradcheck.check_layer(layer, X.astype(np.float32), seed=2)
    assert any("gradient of W is float64, input is float32" in n for n in res.notes)


# -- issue 19: calling conventions, each stated in the notes -----------------------------------
class LossWithDout:
    def __init__(self, ignores_dout=False):
        self.ignores_dout = ignores_dout

    def forward(self, x, t):
        self.diff = x - t
        return 0.5 * float(np.sum(self.diff ** 2))

    def backward(self, dout=1.0):
        return self.diff.copy() if self.ignores_dout else self.diff * dout


def test_a_loss_backward_with_dout_gets_a_non_unit_one():
    t = RNG.standard_normal(X.shape)
    ok = gradcheck.check_layer(LossWithDout(), X, t, wrt=["x0"])
    assert ok.passed and any("received the output gradient" in n for n in ok.notes)
    bad = gradcheck.check_layer(LossWithDout(ignores_dout=True), X, t, wrt=["x0"])
    assert bad.status == "mismatch"


def test_one_returned_array_goes_to_the_wrt_input_or_says_where_it_went():
    class Loss:
        def forward(self, target, predicted):
            self.d = predicted - target
            return float(np.mean(self.d ** 2))

        def backward(self):
            return 2 * self.d / self.d.size

    t, p = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    assert gradcheck.check_layer(Loss(), t, p, wrt=["x1"]).passed
    res = gradcheck.check_layer(Loss(), t, p)  # no wrt: read as x0's, stated, and wrong
    assert not res.passed and any("read as the gradient of x0" in n for n in res.notes)


def test_backward_returning_the_wrong_number_of_gradients_is_a_clear_status():
    class Two:
        def forward(self, a, b):
            return a * b

        def backward(self, dout):
            return dout, dout, dout

    res = gradcheck.check_layer(Two(), X, X)
    assert res.status == "shape-mismatch" and "3 gradients for 2 inputs" in res.message


def test_check_vjp_conventions_are_stated_in_the_notes():
    from suites.test_real_code import (
        batchnorm_backward,
        batchnorm_forward,
        lstm_step_backward,
        lstm_step_forward,
    )

    gamma, beta = np.ones(3), np.zeros(3)
    res = gradcheck.check_vjp(batchnorm_forward, batchnorm_backward,
                              [X, gamma, beta, {"mode": "train"}], wrt=[0, 1, 2])
    assert res.passed and any("wrt inputs [0, 1, 2]" in n for n in res.notes)
    res = gradcheck.check_vjp(lambda x, g, b: batchnorm_forward(x, g, b, {}),
                              lambda d, c: batchnorm_backward(d, c)[:2], [X, gamma, beta])
    assert res.status == "shape-mismatch" and "name them with wrt=" in res.message
    r = np.random.default_rng(1)
    ins = [r.standard_normal((2, 4)), r.standard_normal((2, 3)), r.standard_normal((2, 3)),
           r.standard_normal((4, 12)), r.standard_normal((3, 12)), r.standard_normal(12)]
    res = gradcheck.check_vjp(lstm_step_forward, lstm_step_backward, ins)
    assert res.passed, res.report()
    assert any("cache last" in n for n in res.notes)
    assert any("separate arguments" in n for n in res.notes)


def test_check_elementwise_catches_a_function_that_is_not_element_wise():
    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def diagonal_only(x):  # what some libraries call the softmax gradient
        p = softmax(x)
        return p * (1 - p)

    assert gradcheck.check_elementwise(softmax, diagonal_only, X).status == "mismatch"
    assert gradcheck.check_elementwise(np.tanh, lambda x: 1 - np.tanh(x) ** 2, X).passed
    res = gradcheck.check_elementwise(np.sum, lambda x: np.ones_like(x), X)
    assert res.status == "bad-protocol" and "not an element-wise function" in res.message
    with pytest.raises(ValueError, match="wrt must be the index of one argument"):
        gradcheck.check_elementwise(np.tanh, np.tanh, X, wrt=2)
    with pytest.raises(GradientMismatch):
        gradcheck.assert_elementwise(np.tanh, lambda x: 1 - x ** 2, X)


class StepCache:
    """Caches kept per call in a dict and a list that grow: not weights."""

    def __init__(self):
        self.W, self.dW = np.full((3, 2), 0.2), np.zeros((3, 2))
        self.t, self.cache, self.history = 0, {}, []

    def forward(self, x):
        self.t += 1
        self.cache[self.t] = x
        self.history.append(np.tanh(x @ self.W))
        return self.history[-1]

    def backward(self, dout):
        x = self.cache[self.t]
        dz = dout * (1 - self.history[-1] ** 2)
        self.dW += x.T @ dz
        return dz @ self.W.T


def test_caches_in_growing_containers_are_not_taken_for_weights():
    res = gradcheck.check_layer(StepCache(), X)
    assert res.passed and [i.name for i in res.inputs] == ["x0", "W"], res.report()


def test_an_optional_flag_of_a_loss_backward_is_no_output_gradient():
    class Loss(MSELoss):
        def backward(self, retain=True):  # a flag, not dout: called as backward()
            return super().backward()

    target = RNG.standard_normal(X.shape)
    res = gradcheck.check_layer(Loss(), X, target, wrt=["x0"])
    assert res.passed and not res.notes, res.report()


def test_one_input_gradient_as_a_one_tuple_or_as_a_list_for_a_list_input():
    class Tanh:
        def __init__(self, broken=False):
            self.broken = broken

        def forward(self, x):
            self.y = np.tanh(x)
            return self.y

        def backward(self, dout):
            return (dout * (1 - self.y ** (1 if self.broken else 2)),)

    assert gradcheck.check_layer(Tanh(), X).passed
    assert gradcheck.check_layer(Tanh(broken=True), X).status == "mismatch"

    class Concat:
        def forward(self, xs):
            self.ends = np.cumsum([x.shape[1] for x in xs])[:-1]
            return np.concatenate(xs, axis=1)

        def backward(self, dout):
            return np.split(dout, self.ends, axis=1)

    res = gradcheck.check_layer(Concat(), [X])  # a list of one array: a list of one gradient
    assert res.passed and [i.name for i in res.inputs] == ["x0[0]"], res.report()
    assert gradcheck.check_layer(Concat(), [X, SQ[:, :2]]).passed


def test_gradients_for_the_floating_inputs_only_need_no_wrt():
    """cs231n's conv and pooling: the params dict of integers gets no gradient."""
    def pool_forward(x, pool_param):
        s = pool_param["stride"]
        n, d = x.shape
        out = x.reshape(n, d // s, s).max(axis=2)
        return out, (x, pool_param)

    def pool_backward(dout, cache, broken=False):
        x, pool_param = cache
        s = pool_param["stride"]
        n, d = x.shape
        xr = x.reshape(n, d // s, s)
        mask = xr == xr.max(axis=2, keepdims=True)
        dx = mask * (dout[:, :, None] if not broken else 1.0)
        return dx.reshape(x.shape)

    def scale_forward(x, w, conv_param):
        return x * w * conv_param["k"], (x, w, conv_param["k"])

    def scale_backward(dout, cache):
        x, w, k = cache
        return dout * w * k, (dout * x * k).sum(axis=0)

    x = np.random.default_rng(13).standard_normal((3, 4))
    res = gradcheck.check_vjp(pool_forward, pool_backward, [x, {"stride": 2}])
    assert res.passed and any("only one holding a float array" in n for n in res.notes)
    broken = gradcheck.check_vjp(pool_forward, lambda d, c: pool_backward(d, c, True),
                                 [x, {"stride": 2}])
    assert broken.status == "mismatch"
    w = np.linspace(0.5, 1.5, 4)
    res = gradcheck.check_vjp(scale_forward, scale_backward, [x, w, {"k": 3}])
    assert res.passed and any("floating inputs [0, 1]" in n for n in res.notes), res.report()


# -- issue 19 review: what wrt= leaves out is visible; wrong names are clear errors --------
class ListBadDb(ListLayer):
    def backward(self, dout):
        dx = super().backward(dout)
        self.grads[1][...] = 0.0  # db never computed
        return dx


def test_parameters_left_out_by_wrt_count_in_the_coverage_with_the_reason():
    res = gradcheck.check_layer(ListBadDb(), X, wrt=["x0"])
    assert res.passed, res.report()  # the user asked for x0 only
    assert res.coverage == ("checked 1/3 tensors (2 held constant by wrt: params[0], "
                            "params[1])")
    assert res.coverage in str(res) and res.to_dict()["coverage"] == res.coverage
    caught = gradcheck.check_layer(ListBadDb(), X, wrt=["x0", "params[1]"])
    assert caught.status == "mismatch" and caught.coverage.startswith("checked 2/3 tensors")


def test_wrt_takes_input_positions_as_check_vjp_does():
    for wrt in ([0], 0, [-1]):
        res = gradcheck.check_layer(ListBadDb(), X, wrt=wrt)
        assert res.passed and [i.status for i in res.inputs] == ["ok", "constant", "constant"]
    res = gradcheck.check_layer(ListBadDb(), X, wrt=[0, "params[1]"])
    assert [i.name for i in res.inputs if not i.passed] == ["params[1]"]
    with pytest.raises(ValueError, match="wrt= names input 2, but forward takes 1 input"):
        gradcheck.check_layer(ListBadDb(), X, wrt=[2])


def test_a_path_given_that_leads_nowhere_is_an_error_naming_it_and_what_is_held():
    with pytest.raises(LayerConventionError) as info:
        gradcheck.check_layer(Dense(3, 2), X, params={"W": "W"}, grads={"W": "dw"})
    msg = str(info.value)
    assert "grads['W'] = 'dw'" in msg and "after a forward and backward" in msg
    assert "it holds the float arrays W, b, dW, db, x" in msg
    with pytest.raises(LayerConventionError, match=r"params\['W'\] = 'Wt': no array at that "
                       r"path in the layer of Dense; it holds the float arrays W, b, dW, db"):
        gradcheck.check_layer(Dense(3, 2), X, params={"W": "Wt"}, grads={"W": "dW"})
    with pytest.raises(LayerConventionError, match=r"grads\['weights'\] = 'dweights' \(the "
                       r"default for params\['weights'\]; give grads= to name it\)"):
        gradcheck.check_layer(Odd(), X, params={"weights": "weights"})
    res = gradcheck.check_layer(Dense(3, 2), X, params={"W": "W", "b": "b"})
    assert res.passed and res.coverage == "checked 3/3 tensors"


class PReLU:
    """alpha held as a float scalar, its gradient in dalpha; eps is a hyperparameter."""

    def __init__(self, alpha, broken=False):
        self.alpha, self.dalpha, self.eps, self.broken = alpha, 0.0 * alpha, 1e-5, broken
        self.kind = type(alpha)

    def forward(self, x):
        assert type(self.alpha) is self.kind  # written back as the type it was
        self.x = x
        return np.where(x > 0, x, self.alpha * x) + self.eps

    def backward(self, dout):
        self.dalpha = (dout * np.where(self.x > 0, 0.0, self.x)).sum() * (
            3.0 if self.broken else 1.0)
        return dout * np.where(self.x > 0, 1.0, self.alpha)


@pytest.mark.parametrize("alpha", [0.25, np.float64(0.25), np.float32(0.25)])
@pytest.mark.parametrize("broken", [False, True])
def test_a_float_scalar_with_a_gradient_is_a_parameter_and_checked(alpha, broken):
    res = gradcheck.check_layer(PReLU(alpha, broken), X + 0.3, seed=2)
    assert [i.name for i in res.inputs] == ["x0", "alpha"], res.report()
    assert res.passed is (not broken) and res.coverage == "checked 2/2 tensors", res.report()
    if broken:
        assert [i.name for i in res.inputs if not i.passed] == ["alpha"]
    assert any("held constant" in n and "eps" in n and "alpha" not in n for n in res.notes)


class Gain:
    """A Python-float gain beside an array weight; dgain never computed (the review's case)."""

    def __init__(self, broken):
        self.W = np.random.default_rng(5).standard_normal((3, 2))
        self.gain, self.dgain, self.broken = 2.0, 0.0, broken

    def forward(self, x):
        self.x, self.z = x, x @ self.W
        return self.gain * self.z

    def backward(self, dout):
        self.dW = self.gain * self.x.T @ dout
        self.dgain = 0.0 if self.broken else float((dout * self.z).sum())
        return self.gain * dout @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_scalar_gain_left_at_zero_is_caught(broken):
    res = gradcheck.check_layer(Gain(broken), X)
    assert res.coverage == "checked 3/3 tensors" and res.passed is (not broken), res.report()
    if broken:
        assert [i.name for i in res.inputs if not i.passed] == ["gain"]


class RebindLayer(ListLayer):
    """Rebinds self.grads[k] instead of writing into it (fine alone, stale in a composite)."""

    def backward(self, dout):
        self.grads[0] = self.x.T @ dout
        self.grads[1] = dout.sum(axis=0)
        return dout @ self.params[0].T


class RebindNet(ListNet):
    def __init__(self, rebind):
        super().__init__()
        if rebind:
            self.layers = [RebindLayer(), RebindLayer()]
            self.layers[1].params[0] = self.layers[1].params[0][:2]
            self.layers[1].grads[0] = self.layers[1].grads[0][:2]
            self.params, self.grads = [], []
            for layer in self.layers:
                self.params += layer.params
                self.grads += layer.grads


@pytest.mark.parametrize("rebind", [False, True])
def test_every_place_a_gradient_is_read_must_hold_it(rebind):
    alone = gradcheck.check_layer(RebindLayer(), X)
    assert alone.passed, alone.report()  # one path, one gradient location: correct
    res = gradcheck.check_layer(RebindNet(rebind), X, seed=3)
    assert res.passed is (not rebind), res.report()
    if rebind:  # the composite's grads, what its optimizer reads, stay zeros
        assert res.status == "mismatch"
        assert res.message.startswith("gradient mismatch at grads[0] (unchanged by the "
                                      "backward: stale): the parameter layers[0].params[0]")
        assert "self.grads[0][...] = ..." in res.message
    else:
        assert res.coverage == "checked 5/5 tensors"
