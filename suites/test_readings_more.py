"""More readings by observation (corpora 20-26): each with a correct subject that passes
and a broken twin that fails with a gradient verdict, and a refusal where observation
leaves a choice."""

import numpy as np
import pytest

import gradcheck


def _failing(res: gradcheck.CheckResult) -> list[str]:
    return [i.name for i in res.inputs if not i.passed]


# -- check_loss: items after (loss, gradient) that are no gradient ------------------------------
def _ce_with_extras(scores, labels, n, broken=False):
    """``(loss, delta, accuracy, predicted)``, the way a training loop wants it."""
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), labels]).sum() / n
    delta = p.copy()
    delta[np.arange(n), labels] -= 1
    delta /= 1 if broken else n
    pred = scores.argmax(axis=1)
    return loss, delta, float(np.mean(pred == labels)), pred


@pytest.mark.parametrize("broken", [False, True])
def test_check_loss_reads_extras_after_the_gradient(broken):
    rng = np.random.default_rng(90)
    res = gradcheck.check_loss(lambda s, y, n: _ce_with_extras(s, y, n, broken),
                               rng.standard_normal((4, 5)), np.array([0, 3, 1, 4]), 4)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()
    assert any("float64 scalar, int64 (4,)" in n for n in res.notes), res.notes


@pytest.mark.parametrize("broken", [False, True])
def test_check_loss_none_after_the_gradient_holds_a_float_target(broken):
    def mse(y, t, n):
        return 0.5 * np.sum((y - t) ** 2) / n, (y - t) / (1 if broken else n), None

    rng = np.random.default_rng(91)
    res = gradcheck.check_loss(mse, rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), 4)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()


def test_check_loss_float_array_after_the_gradient_is_no_extra():
    """A float array there may be a gradient (of a weight passed as a constant): no
    verdict on the first argument alone."""
    rng = np.random.default_rng(92)

    def fn(x, w):
        return float(np.sum((x @ w) ** 2)), 2 * (x @ w) @ w.T, np.zeros((2, 2))

    res = gradcheck.check_loss(fn, rng.standard_normal((4, 3)), rng.standard_normal((3, 5)))
    assert res.status == "bad-protocol", res.report()


def test_check_loss_float_scalar_extra_refused_beside_a_scalar_argument():
    rng = np.random.default_rng(93)

    def fn(x, scale):
        return float(scale * np.sum(x ** 2)), 2 * scale * x, float(np.sum(x ** 2))

    res = gradcheck.check_loss(fn, rng.standard_normal(3), 0.5)
    assert res.status == "bad-protocol", res.report()


# -- a loss's one array for inputs of one shape: labels first, or a difference --------------------
class _Hinge:
    """nano-keras: ``compute_loss(yTrue, yPred)``, ``compute_derivative(yTrue, yPred)``."""

    def __init__(self, broken=False):
        self.broken = broken

    def compute_loss(self, y_true, y_pred):
        return np.mean(np.maximum(0, 1 - y_true * y_pred))

    def compute_derivative(self, y_true, y_pred):
        d = -y_true * (1 - y_true * y_pred > 0).astype(float)
        return d if self.broken else d / y_true.size


def _signs_and_scores(seed):
    rng = np.random.default_rng(seed)
    return np.where(rng.random((4, 3)) < 0.5, -1.0, 1.0), 0.5 * rng.standard_normal((4, 3))


@pytest.mark.parametrize("broken", [False, True])
def test_a_labels_first_hinge_is_found_and_checked_at_the_prediction(broken):
    labels, scores = _signs_and_scores(94)
    res = gradcheck.check_layer(_Hinge(broken), labels, scores)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x1"], res.report()
    else:
        assert res.passed, res.report()
    assert [i.status for i in res.inputs][0] == "constant", res.report()


class _SquaredError:
    """``compute_loss(y_true, y_pred)`` and its derivative with respect to ``y_pred``."""

    def __init__(self, sign=1.0):
        self.sign = sign

    def compute_loss(self, y_true, y_pred):
        return np.mean(np.square(y_true - y_pred))

    def compute_derivative(self, y_true, y_pred):
        return self.sign * 2 * (y_pred - y_true) / y_true.size


class _PredFirst(_SquaredError):
    def compute_loss(self, y_pred, y_true):
        return super().compute_loss(y_true, y_pred)

    def compute_derivative(self, y_pred, y_true):
        return super().compute_derivative(y_true, y_pred)


def test_a_difference_loss_of_two_float_inputs_is_read_as_the_first_s_with_a_note():
    """Which of two float inputs is the prediction cannot be observed (a sign flip of one's
    gradient is the other's): the first, as documented, and a note naming wrt=."""
    rng = np.random.default_rng(95)
    target, pred = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(_PredFirst(), pred, target)
    assert res.passed, res.report()
    assert any("if x1 is the prediction, name it: wrt=['x1']" in n for n in res.notes)
    bad = gradcheck.check_layer(_PredFirst(-1.0), pred, target)
    assert bad.status == "mismatch" and _failing(bad) == ["x0"], bad.report()
    assert gradcheck.check_layer(_SquaredError(), target, pred, wrt=["x1"]).passed
    half = gradcheck.check_layer(_SquaredError(0.5), target, pred, wrt=["x1"])
    assert half.status == "mismatch" and _failing(half) == ["x1"], half.report()


# -- corpus 23: attention and normalisation code ----------------------------------------------
class _Lin:
    def __init__(self, seed, broken=False):
        g = np.random.default_rng(seed)
        self.weight, self.bias = g.standard_normal((3, 3)), g.standard_normal(3)
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.weight + self.bias

    def backward(self, d):
        self.grad_weight = self.x.T @ d
        self.grad_bias = d.mean(0) if self.broken else d.sum(0)
        return d @ self.weight.T, self.grad_weight, self.grad_bias


class _TwoInputs:
    """``backward`` returning ``dx, dy, {"A": (dW, db), ...}`` (nawdeep's attention)."""

    def __init__(self, broken=False, fresh=False):
        self.A, self.B, self.fresh = _Lin(1), _Lin(2, broken), fresh

    def forward(self, x, y):
        self.a, self.b = self.A.forward(x), self.B.forward(y)
        return self.a * self.b

    def backward(self, d):
        dx, dwa, dba = self.A.backward(d * self.b)
        dy, dwb, dbb = self.B.backward(d * self.a)
        if self.fresh:  # returned gradients that are not what it stored
            dwb = 2 * dwb
        return dx, dy, {"A": (dwa, dba), "B": (dwb, dbb)}


@pytest.mark.parametrize("broken", [False, True])
def test_input_gradients_then_containers_of_the_stored_ones(broken):
    rng = np.random.default_rng(96)
    res = gradcheck.check_layer(_TwoInputs(broken), rng.standard_normal((4, 3)),
                                rng.standard_normal((4, 3)))
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["B.bias"], res.report()
    else:
        assert res.passed, res.report()


def test_containers_after_the_input_gradients_holding_other_arrays_are_no_state():
    rng = np.random.default_rng(97)
    res = gradcheck.check_layer(_TwoInputs(fresh=True), rng.standard_normal((4, 3)),
                                rng.standard_normal((4, 3)))
    assert not res.passed, res.report()


class _OutNone:
    """``forward`` returning ``(out, None)``: attention weights not asked for (ViT)."""

    def __init__(self, broken=False):
        self.W = np.random.default_rng(1).standard_normal((3, 3))
        self.broken = broken

    def forward(self, x):
        self.x = x
        self.y = np.tanh(x @ self.W)
        return self.y, None

    def backward(self, d):
        dz = d * (1 - self.y ** (1 if self.broken else 2))
        self.dW = self.x.T @ dz
        return dz @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_forward_returning_its_output_and_none(broken):
    res = gradcheck.check_layer(_OutNone(broken), np.random.default_rng(98).standard_normal((4, 3)))
    if broken:
        assert res.status == "mismatch" and set(_failing(res)) == {"x0", "W"}, res.report()
    else:
        assert res.passed, res.report()


class _DeltaNamedNorm:
    """ZouJiu1's layer norm: ``gamma_delta``/``beta_delta``, ``gamma`` expanded to
    ``(1, 1, D)`` by the forward."""

    def __init__(self, broken=False):
        self.gamma, self.beta = np.linspace(0.5, 1.5, 4), np.linspace(-0.2, 0.3, 4)
        self.gamma_delta, self.beta_delta = np.zeros(4), np.zeros(4)
        self.broken = broken

    def forward(self, x):
        self.gamma, self.beta = self.gamma.reshape(1, 1, -1), self.beta.reshape(1, 1, -1)
        self.mu, self.sd = x.mean(-1, keepdims=True), np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        self.xn = (x - self.mu) / self.sd
        return self.xn * self.gamma + self.beta

    def backward(self, d):
        dxn = d * self.gamma
        dx = (dxn - dxn.mean(-1, keepdims=True)
              - self.xn * (dxn * self.xn).mean(-1, keepdims=True)) / self.sd
        self.gamma_delta += np.sum(d * self.xn, axis=(0, 1)) * (0.5 if self.broken else 1)
        self.beta_delta += np.sum(d, axis=(0, 1))
        return dx


@pytest.mark.parametrize("broken", [False, True])
def test_gradients_named_with_one_affix_of_the_layer_s_own(broken):
    x = np.random.default_rng(99).standard_normal((2, 3, 4))
    res = gradcheck.check_layer(_DeltaNamedNorm(broken), x)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["gamma"], res.report()
    else:
        assert res.passed, res.report()
    assert any("stored in gamma_delta" in n for n in res.notes), res.notes


class _FeedBack:
    """Val325: ``feedforward(x)`` and ``backforward(dout)``."""

    def __init__(self, broken=False):
        self.broken = broken

    def feedforward(self, x):
        self.x = x
        return np.sin(x)

    def backforward(self, dout):
        return dout * (np.sin(self.x) if self.broken else np.cos(self.x))


@pytest.mark.parametrize("broken", [False, True])
def test_feedforward_and_backforward_pair_by_name(broken):
    res = gradcheck.check_layer(_FeedBack(broken), np.random.default_rng(100).standard_normal(5))
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()


# -- corpus 25: a setting of the forward taken again by the backward, by name ------------------
def _pool_forward(a, hp, mode="max"):
    f = hp["f"]
    n, h, w = a.shape
    blocks = a.reshape(n, h // f, f, w // f, f)
    out = blocks.max(axis=(2, 4)) if mode == "max" else blocks.mean(axis=(2, 4))
    return out, (a, hp)


def _pool_backward(d, cache, mode="max", broken=False):
    a, hp = cache
    f = hp["f"]
    n, h, w = a.shape
    blocks = a.reshape(n, h // f, f, w // f, f)
    if mode == "max":
        mask = blocks == blocks.max(axis=(2, 4), keepdims=True)
        da = mask * d[:, :, None, :, None]
    else:
        da = np.broadcast_to(d[:, :, None, :, None] / (1 if broken else f * f), blocks.shape)
    return da.reshape(a.shape)


@pytest.mark.parametrize("broken", [False, True])
def test_check_vjp_gives_the_backward_the_forward_s_setting_by_name(broken):
    a = np.random.default_rng(101).standard_normal((2, 4, 4))

    def bwd(d, cache, mode="max"):
        return _pool_backward(d, cache, mode, broken)

    res = gradcheck.check_vjp(_pool_forward, bwd, [a, {"f": 2}, "average"])
    if broken:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()
        assert any("setting(s) mode" in n for n in res.notes), res.notes


# -- corpus 24: an epsilon guard the backward omits, told as such -------------------------------
class _StdNorm:
    """``(x - mu) / (std + eps)`` with the backward of ``(x - mu) / std`` (tinytorch)."""

    def __init__(self, eps, dropped=False):
        self.eps, self.dropped = eps, dropped

    def forward(self, x):
        mu, s = x.mean(-1, keepdims=True), x.std(-1, keepdims=True)
        self.s, self.xn = s, (x - mu) / (s + self.eps)
        return self.xn

    def backward(self, g):
        mean = 0 if self.dropped else g.mean(-1, keepdims=True)
        return (g - mean - (g * self.xn).mean(-1, keepdims=True) * self.xn) / (self.s + self.eps)


def test_an_omitted_epsilon_fails_with_a_hint_saying_how_small():
    x = np.random.default_rng(102).standard_normal((2, 3, 5))
    x[0, 0, 0] = x[0, 0, 1:].mean()  # one element of a row at its mean: a gradient near zero
    res = gradcheck.check_layer(_StdNorm(1e-6), x)
    assert res.status == "mismatch", res.report()  # stated, not excused
    assert "tiny" in res.inputs[0].hint and "epsilon" in res.inputs[0].hint, res.report()
    real = gradcheck.check_layer(_StdNorm(1e-6, dropped=True), x)
    assert real.status == "mismatch" and "tiny" not in real.inputs[0].hint, real.report()


def test_an_omitted_epsilon_large_only_near_zero_is_told_tiny_as_a_whole():
    x = np.random.default_rng(0).standard_normal((2, 3, 5))
    res = gradcheck.check_layer(_StdNorm(1e-6), x)
    assert res.status == "mismatch", res.report()
    assert "tiny as a whole" in res.inputs[0].hint, res.report()


# -- corpus 20: bp(input, delta, lrt), the inputs again, the output gradient, a step size ---------
class _FpBp:
    """yangwohenmai's FCLayer: ``fp(x)``; ``bp(input, delta, lrt)`` steps ``w`` and ``b``."""

    def __init__(self, broken=False, named="x"):
        rng = np.random.default_rng(5)
        self.w, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self.broken = broken

    def fp(self, x):
        self.x = x
        return np.tanh(x @ self.w + self.b)

    def _bp(self, x, delta, lrt):
        self.out = np.tanh(self.x @ self.w + self.b)
        d = delta * (1 - self.out ** 2)
        dx = d @ self.w.T
        db = d.mean(0) if self.broken else d.sum(0)
        self.w = self.w - lrt * x.T @ d
        self.b = self.b - lrt * db
        return dx


class _FpBpNamed(_FpBp):
    def bp(self, x, delta, lrt):
        return self._bp(x, delta, lrt)


class _FpBpOther(_FpBp):
    def bp(self, input, delta, lrt):  # noqa: A002 - the published name
        return self._bp(input, delta, lrt)


@pytest.mark.parametrize("cls", [_FpBpNamed, _FpBpOther])
@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_taking_the_input_the_gradient_and_a_step_size(cls, broken):
    res = gradcheck.check_layer(cls(broken), np.random.default_rng(103).standard_normal((5, 4)))
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["b"], res.report()
    else:
        assert res.passed, res.report()
        assert any("lrt scales the change" in n for n in res.notes), res.notes


class _ThirdScales(_FpBp):
    """A third argument that scales the input gradient: no step size."""

    def bp(self, x, delta, scale):
        self.dw = x.T @ (delta * (1 - np.tanh(self.x @ self.w + self.b) ** 2))
        return self._bp(x, delta, 0.0) * scale * (2.0 if self.broken else 1.0)


@pytest.mark.parametrize("broken", [False, True])
def test_a_third_argument_that_is_no_step_size_is_not_read_as_one(broken):
    x = np.random.default_rng(104).standard_normal((5, 4))
    res = gradcheck.check_layer(_ThirdScales(broken), x)
    assert not res.passed or not broken, res.report()
    assert not any("scales the change" in n for n in res.notes), res.notes


# -- corpus 25: backward(dHout, cache, dhn=None), the other outputs' gradients after the cache ---
def _rnn_forward(x, w, h0):
    hs, h = [], h0
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + h)
        hs.append(h)
    hout = np.stack(hs)
    return hout, hout[-1], (x, w, h0, hout)


def _rnn_backward(dhout, cache, dhn=None, broken=False):
    x, w, h0, hout = cache
    dx, dw, dh = np.zeros_like(x), np.zeros_like(w), np.zeros_like(h0)
    if dhn is not None and not broken:
        dh = dh + dhn
    for t in reversed(range(x.shape[0])):
        dz = (dhout[t] + dh) * (1 - hout[t] ** 2)
        dx[t], dw = dz @ w.T, dw + x[t].T @ dz
        dh = dz
    return dx, dw, dh


@pytest.mark.parametrize("broken", [False, True])
def test_the_other_outputs_gradients_after_the_cache(broken):
    rng = np.random.default_rng(105)
    x, w, h0 = rng.standard_normal((3, 2, 4)), 0.5 * rng.standard_normal((4, 4)), \
        rng.standard_normal((2, 4))

    def bwd(dhout, cache, dhn=None):
        return _rnn_backward(dhout, cache, dhn, broken)

    res = gradcheck.check_vjp(_rnn_forward, bwd, [x, w, h0])
    if broken:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()
        assert any("gradients (optional, None by default)" in n for n in res.notes), res.notes


def test_an_optional_argument_after_the_cache_that_is_no_gradient():
    rng = np.random.default_rng(106)
    x, w, h0 = rng.standard_normal((3, 2, 4)), 0.5 * rng.standard_normal((4, 4)), \
        rng.standard_normal((2, 4))

    def bwd(dhout, cache, clip=None):
        grads = _rnn_backward(dhout, cache)
        return grads if clip is None else tuple(np.clip(g, -clip, clip) for g in grads)

    res = gradcheck.check_vjp(_rnn_forward, bwd, [x, w, h0])
    assert not res.passed, res.report()


# -- corpus 30: a cache that is the output itself; a loss returned beside the probabilities ------
class _ReluOutCache:
    """I2DL's ``forward(x) -> (out, cache)`` with ``cache = out``; ``backward(dout, cache)``."""

    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, x):
        out = np.maximum(x, 0)
        return out, out

    def backward(self, dout, cache):
        return dout * (cache > 0) * (2.0 if self.broken else 1.0)


@pytest.mark.parametrize("broken", [False, True])
def test_a_cache_that_is_the_output_itself(broken):
    x = np.random.default_rng(107).standard_normal((4, 3)) + 0.05
    res = gradcheck.check_layer(_ReluOutCache(broken), x)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()


class _ProbsAndLoss:
    """CS7643's ``forward(x, y) -> (probs, loss)``, ``backward()`` storing ``self.dx``."""

    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, x, y):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.p, self.y = e / e.sum(axis=1, keepdims=True), y
        return self.p, -np.log(self.p[np.arange(len(y)), y]).mean()

    def backward(self):
        d = self.p.copy()
        d[np.arange(len(self.y)), self.y] -= 1
        self.dx = d if self.broken else d / len(self.y)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_returned_beside_its_probabilities(broken):
    rng = np.random.default_rng(108)
    res = gradcheck.check_layer(_ProbsAndLoss(broken), rng.standard_normal((4, 5)),
                                np.array([0, 3, 1, 4]))
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()
        assert any("part 1, is the loss" in n for n in res.notes), res.notes


# -- corpora 27-28 ------------------------------------------------------------------------------
def test_a_float32_loss_is_differenced_at_float32_s_precision():
    """word2vec returning ``np.float32(loss)``: no mismatch from float64 steps."""
    rng = np.random.default_rng(109)
    x, w = rng.standard_normal(5), rng.standard_normal(5)

    def fn(x, w, broken=False):
        z = np.float32(x @ w)
        g = -(1 / (1 + np.exp(z))) * w
        return np.float32(np.log1p(np.exp(-z))), (1.5 * g if broken else g).astype(np.float32)

    assert gradcheck.check_loss(fn, x, w).passed
    assert gradcheck.check_loss(lambda a, b: fn(a, b, True), x, w).status == "mismatch"


class _CallGradients:
    """calvinfeng's ``__call__(x, w, b)`` and ``gradients(grad_out) -> (dx, dw, db)``."""

    def __init__(self, broken=False):
        self.x = self.w = None
        self.broken = broken

    def __call__(self, x, w, b):
        self.x, self.w = x, w
        return x @ w + b

    def gradients(self, grad_out):
        dw = grad_out.T @ self.x if self.broken else self.x.T @ grad_out
        return grad_out @ self.w.T, dw, grad_out.sum(axis=0)


@pytest.mark.parametrize("broken", [False, True])
def test_the_one_other_method_linear_in_its_argument_is_the_backward(broken):
    rng = np.random.default_rng(110)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    res = gradcheck.check_layer(_CallGradients(broken), x, w, b)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x1"], res.report()
    else:
        assert res.passed, res.report()
    assert any("gradients (backward)" in n for n in res.notes), res.notes


class _CallMse:
    def __init__(self):
        self.y_true = self.y_pred = None

    def __call__(self, y_true, y_pred):
        self.y_true, self.y_pred = y_true, y_pred
        return np.mean((y_pred - y_true) ** 2)

    def gradients(self):
        return 2 * (self.y_pred - self.y_true) / self.y_true.size


def test_wrt_takes_the_argument_names_of_a_call_forward():
    rng = np.random.default_rng(111)
    t, p = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(_CallMse(), t, p, wrt=["y_pred"])
    assert res.passed and [i.name for i in res.inputs if i.status == "ok"] == ["x1"], \
        res.report()


class _PoolFlag:
    """ileocho: ``forward(x, training)``, ``backward(dout) -> (dx, None, None)``."""

    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, x, training):
        self.x = x
        return x.reshape(x.shape[0], -1, 2).max(axis=2)

    def backward(self, dout):
        blocks = self.x.reshape(self.x.shape[0], -1, 2)
        mask = blocks == blocks.max(axis=2, keepdims=True)
        if self.broken:
            mask = ~mask
        return (mask * dout[..., None]).reshape(self.x.shape), None, None


@pytest.mark.parametrize("broken", [False, True])
def test_placeholders_after_the_gradients_of_several_inputs(broken):
    x = np.random.default_rng(112).standard_normal((3, 6))
    res = gradcheck.check_layer(_PoolFlag(broken), x, True)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()


class _LrFirst(_FpBp):
    """dchandak99: ``forwardpass(X)``, ``backwardpass(lr, activation_prev, delta)``."""

    def forwardpass(self, x):
        return self.fp(x)

    def backwardpass(self, lr, activation_prev, delta):
        return self._bp(activation_prev, delta, lr)


@pytest.mark.parametrize("broken", [False, True])
def test_a_step_size_first_then_the_input_and_the_gradient(broken):
    x = np.random.default_rng(113).standard_normal((5, 4))
    res = gradcheck.check_layer(_LrFirst(broken), x)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["b"], res.report()
    else:
        assert res.passed, res.report()
        assert any("lr scales the change" in n for n in res.notes), res.notes


# -- corpus 29: recurrent layers as classes ------------------------------------------------------
class _Cell:
    def __init__(self, w):
        self.w = w  # shared by every cell of the layer
        self.dw = np.zeros_like(w)

    def forward(self, x, h):
        self.x, self.h = x, h
        self.out = np.tanh(x + h @ self.w)
        return self.out

    def backward(self, d):
        dz = d * (1 - self.out ** 2)
        self.dw = self.h.T @ dz  # this step's share of the shared weight's gradient
        return dz, dz @ self.w.T


class _Unrolled:
    """NPDL's LSTM: a cell per step, each holding its step's share in ``dW``; the layer
    holds the sum (``stale``: the layer keeps the last step's share only)."""

    def __init__(self, stale=False):
        self.w = 0.5 * np.random.default_rng(6).standard_normal((3, 3))
        self.dw = np.zeros_like(self.w)
        self.stale = stale

    def forward(self, xs):
        self.cells, h = [], np.zeros((xs.shape[1], 3))
        for x in xs:
            self.cells.append(_Cell(self.w))
            h = self.cells[-1].forward(x, h)
        return h

    def backward(self, dh):
        dxs, self.dw = [], np.zeros_like(self.w)
        for cell in reversed(self.cells):
            dx, dh = cell.backward(dh)
            self.dw = cell.dw.copy() if self.stale else self.dw + cell.dw
            dxs.append(dx)
        return np.stack(dxs[::-1])


@pytest.mark.parametrize("stale", [False, True])
def test_cells_holding_shares_of_a_shared_weight_s_gradient(stale):
    xs = np.random.default_rng(114).standard_normal((3, 2, 3))
    res = gradcheck.check_layer(_Unrolled(stale), xs)
    if stale:
        assert not res.passed and res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()


class _SeqDefault:
    """deepnp: ``forward(xs) -> (hs, h_last)``, ``backward(d_h_next=1)``."""

    def __init__(self, broken=False):
        self.w = 0.5 * np.random.default_rng(7).standard_normal((3, 3))
        self.broken = broken

    def forward(self, x):
        self.x = x
        self.y = np.tanh(x @ self.w)
        return self.y, self.y[-1]

    def backward(self, d_h_next=1):
        dz = d_h_next * (1 - self.y ** (1 if self.broken else 2))
        self.dw = self.x.T @ dz
        return dz @ self.w.T


@pytest.mark.parametrize("broken", [False, True])
def test_several_outputs_and_a_backward_whose_gradient_has_a_default(broken):
    x = np.random.default_rng(115).standard_normal((4, 3))
    res = gradcheck.check_layer(_SeqDefault(broken), x)
    if broken:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()


# -- from an eighth review ------------------------------------------------------------------------
def _ce(s, y):
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    d = p.copy()
    d[np.arange(len(y)), y] -= 1
    return -np.log(p[np.arange(len(y)), y]).mean(), d / len(y)


@pytest.mark.parametrize("scale", [1.0, 2.0, 0.0])
def test_a_loss_too_coarse_for_its_gradient_is_inconclusive(scale):
    rng = np.random.default_rng(116)
    s, y = rng.standard_normal((5, 4)), np.array([0, 3, 1, 2, 0])

    def half(s, y):
        loss, d = _ce(s, y)
        return np.float16(loss), scale * d

    def offset(s, y):
        loss, d = _ce(s, y)
        return np.float32(loss + 1e5), scale * d

    for fn in (half, offset):
        res = gradcheck.check_loss(fn, s, y)
        assert res.status == "inconclusive" and not res.passed, res.report()


class _StepScalesDx(_FpBp):
    def bp(self, x, delta, lrt):
        return lrt * self._bp(x, delta, lrt)


def test_an_input_gradient_scaled_by_the_step_size_fails():
    x = np.random.default_rng(117).standard_normal((5, 4))
    res = gradcheck.check_layer(_StepScalesDx(), x)
    assert res.status == "mismatch" and "scales with its step size lrt" in res.message, \
        res.report()


class _PReluZero:
    """``(dx, 0)``: the gradient of its float scalar ``alpha`` never filled in."""

    def __init__(self):
        self.alpha = 0.25

    def forward(self, x):
        self.x = x
        return np.where(x > 0, x, self.alpha * x)

    def backward(self, dout):
        return dout * np.where(self.x > 0, 1.0, self.alpha), 0


def test_a_zero_beside_a_float_scalar_is_no_placeholder():
    x = np.random.default_rng(118).standard_normal((4, 3)) + 0.05
    assert not gradcheck.check_layer(_PReluZero(), x).passed


def test_later_outputs_gradients_after_the_cache_in_an_unobserved_order_give_no_verdict():
    rng = np.random.default_rng(119)
    x, w = rng.standard_normal((3, 4)), 0.5 * rng.standard_normal((4, 4))

    def fwd(x, w):
        h = np.tanh(x @ w)
        return 2 * h, h, x @ w, (x, w, h)

    def bwd(d_big, cache, dc_next=None, dh_next=None):  # correct, in its own order
        x, w, h = cache
        dh = 2 * d_big + (0 if dh_next is None else dh_next)
        dz = dh * (1 - h ** 2) + (0 if dc_next is None else dc_next)
        return dz @ w.T, x.T @ dz

    assert gradcheck.check_vjp(fwd, bwd, [x, w]).status == "bad-protocol"

    def bwd_in_order(d_big, cache, dh_next=None, dc_next=None):
        return bwd(d_big, cache, dc_next, dh_next)

    assert gradcheck.check_vjp(fwd, bwd_in_order, [x, w]).passed


def test_a_numeric_setting_without_a_shared_default_is_not_passed_on():
    rng = np.random.default_rng(120)
    x, w = rng.standard_normal((3, 2)), rng.standard_normal(2)

    def sf(x, w, scale):
        return x * w * scale, (x, w, scale)

    def sb(dout, cache, scale=1.0):  # a loss-scaling divisor of its own, 1 in a plain call
        x, w, s = cache
        return dout * w * s / scale, (dout * x * s).sum(0) / scale, None

    assert gradcheck.check_vjp(sf, sb, [x, w, 3]).passed


class _OutAndPenalty:
    """``(y, 0.5 * lam * |W|^2)`` beside ``backward(dy=1.0)``: the penalty is no loss."""

    def __init__(self):
        self.w = np.random.default_rng(8).standard_normal((3, 2))

    def forward(self, x):
        self.x, self.y = x, np.tanh(x @ self.w)
        return self.y, 0.5 * 0.1 * float(np.sum(self.w ** 2))

    def backward(self, dy=1.0):
        dz = dy * (1 - self.y ** 2)
        self.dw = self.x.T @ dz
        return dz @ self.w.T


def test_a_side_scalar_beside_a_backward_taking_a_gradient_is_no_loss():
    x = np.random.default_rng(121).standard_normal((4, 3))
    assert gradcheck.check_layer(_OutAndPenalty(), x).status != "mismatch"


class _WithUpdate(_CallGradients):
    def update(self, lr):
        self.lr = lr


def test_the_one_linear_method_beside_an_update_is_the_backward():
    rng = np.random.default_rng(122)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    assert gradcheck.check_layer(_WithUpdate(), x, w, b).passed
    assert gradcheck.check_layer(_WithUpdate(True), x, w, b).status == "mismatch"


# -- corpora 32 and 34 ----------------------------------------------------------------------------
class _Propaga:
    """TdR (Catalan): ``propaga(entrada)``, ``retropropaga(delta)``; ``tanh``/``d_tanh`` too."""

    def __init__(self, broken=False):
        self.broken = broken

    def tanh(self, x):
        return np.tanh(x)

    def d_tanh(self, x):
        return 1 - np.tanh(x) ** 2

    def propaga(self, entrada):
        self.entrada = entrada
        return self.tanh(entrada)

    def retropropaga(self, delta):
        return delta * (1 - self.entrada ** 2 if self.broken else self.d_tanh(self.entrada))


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_named_as_the_forward_with_a_prefix(broken):
    res = gradcheck.check_layer(_Propaga(broken), np.random.default_rng(123).standard_normal(5))
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()
    assert any("retropropaga is propaga with a prefix" in n for n in res.notes), res.notes


class _ListLinear:
    """dlfs: ``forward(bottom)`` keeps the input list and its output list on the layer,
    ``backward(top_grad)`` stores ``bottom_grad``, named like the kept list."""

    def __init__(self, broken=False):
        self.W = np.random.default_rng(9).standard_normal((2, 3))
        self.dW = np.zeros_like(self.W)
        self.broken = broken

    def forward(self, bottom):
        self.bottom = bottom
        self.top = [bottom[0] @ self.W.T]
        return self.top

    def backward(self, top_grad):
        self.dW[...] = top_grad[0].T @ self.bottom[0] * (2.0 if self.broken else 1.0)
        self.bottom_grad = [top_grad[0] @ self.W]
        return self.bottom_grad


@pytest.mark.parametrize("broken", [False, True])
def test_a_kept_input_list_is_no_array_built_by_the_forward(broken):
    x = np.random.default_rng(124).standard_normal((4, 3))
    res = gradcheck.check_layer(_ListLinear(broken), [x])
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["W"], res.report()
    else:
        assert res.passed, res.report()


# -- corpora 31 and 33 ----------------------------------------------------------------------------
class _CallStores:
    """david's ``__call__(x)`` storing ``self.inputs`` before ``forward(x)``."""

    def __init__(self, broken=False):
        self.w = np.random.default_rng(10).standard_normal((3, 2))
        self.broken = broken

    def __call__(self, x):
        self.inputs = x
        return self.forward(x)

    def forward(self, x):
        return x @ self.w

    def backward(self, dout):
        self.dw = self.inputs.T @ dout * (2.0 if self.broken else 1.0)
        return dout @ self.w.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_call_that_keeps_what_the_backward_needs_is_the_forward(broken):
    x = np.random.default_rng(125).standard_normal((4, 3))
    res = gradcheck.check_layer(_CallStores(broken), x)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["w"], res.report()
    else:
        assert res.passed, res.report()
    assert any("__call__ checked as the forward" in n for n in res.notes), res.notes


@pytest.mark.parametrize("broken", [False, True])
def test_check_grad_at_a_point_that_is_a_list_of_arrays(broken):
    rng = np.random.default_rng(126)
    point = [rng.standard_normal((2, 2)), rng.standard_normal(3)]

    def f(p):
        return np.sum(p[0] ** 2) + np.sum(np.sin(p[1]))

    def grad(p):
        return [2 * p[0], (np.sin if broken else np.cos)(p[1])]

    res = gradcheck.check_grad(f, grad, point)
    assert res.status == ("mismatch" if broken else "ok"), res.report()


class _StepForgetsBias(_FpBp):
    def bp(self, x, delta, lrt):
        b = self.b.copy()
        dx = self._bp(x, delta, lrt)
        self.b = b  # the bias never stepped
        return dx


def test_a_step_that_leaves_a_parameter_untouched_is_no_pass():
    """A forgotten update and a frozen parameter look alike: no verdict, and no pass."""
    x = np.random.default_rng(127).standard_normal((5, 4))
    res = gradcheck.check_layer(_StepForgetsBias(), x)
    assert res.status == "bad-protocol" and "not b" in res.message, res.report()


def test_a_log_epsilon_s_error_is_told_tiny_as_a_whole():
    y = np.array([[1.0], [0.0], [1.0], [0.0]])
    p = np.array([[0.3], [0.6], [0.8], [0.2]])

    def bce(p, y):
        loss = -np.mean(y * np.log(p + 1e-5) + (1 - y) * np.log(1 - p + 1e-5))
        return loss, -(y - p) / ((p + 1e-5) * (1 - p + 1e-5)) / y.size

    res = gradcheck.check_loss(bce, p, y)
    assert res.status == "mismatch" and "tiny" in res.inputs[0].hint, res.report()


# -- from a ninth review ------------------------------------------------------------------------
class _ZeroPad:
    """``pad``/``unpad`` (an inverse, and the adjoint) beside the real, broken backward."""

    def pad(self, x):
        return np.pad(x, ((0, 0), (1, 1)))

    def unpad(self, y):
        return y[:, 1:-1]

    def gradient(self, dy):
        return dy[:, :-2]


def test_a_prefixed_inverse_beside_another_backward_is_not_taken():
    x = np.random.default_rng(128).standard_normal((3, 5))
    with pytest.raises(TypeError, match="no forward-like method"):
        gradcheck.check_layer(_ZeroPad(), x)


class _CallDoesMore:
    def __init__(self):
        self.w = np.random.default_rng(11).standard_normal((3, 2))

    def __call__(self, x):
        self.x = x
        return np.maximum(self.forward(x), 0)

    def forward(self, x):
        return x @ self.w

    def backward(self, dy):
        self.dw = self.x.T @ dy
        return dy @ self.w.T


def test_a_call_computing_more_than_forward_is_not_checked_as_it():
    x = np.random.default_rng(129).standard_normal((4, 3))
    res = gradcheck.check_layer(_CallDoesMore(), x)
    assert res.status == "error", res.report()


def test_a_fine_float32_loss_with_a_wrong_small_gradient_fails():
    rng = np.random.default_rng(130)
    s, y = rng.standard_normal((64, 10)), rng.integers(0, 10, 64)

    def fn(s, y):
        loss, d = _ce(s, y)
        return np.float32(loss), (d / len(y)).astype(np.float32)  # divided by N twice

    assert gradcheck.check_loss(fn, s, y).status == "mismatch"


class _PropagaRelu:
    """TdR's ReLU: ``relu``/``d_relu`` helpers (relu is homogeneous, not linear) beside
    ``propaga``/``retropropaga``."""

    def __init__(self, broken=False):
        self.broken = broken

    def relu(self, x):
        return np.maximum(x, 0)

    def d_relu(self, x):
        return (x > 0).astype(float)

    def propaga(self, entrada):
        self.entrada = entrada
        return self.relu(entrada)

    def retropropaga(self, delta):
        return delta * (self.relu(self.entrada) if self.broken else self.d_relu(self.entrada))


@pytest.mark.parametrize("broken", [False, True])
def test_a_homogeneous_helper_is_no_rival_backward(broken):
    x = np.random.default_rng(131).standard_normal(6) + 0.05
    res = gradcheck.check_layer(_PropagaRelu(broken), x)
    if broken:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()


# -- corpora 28 and 34: a step size the layer holds ---------------------------------------------
class _HeldRate:
    """Lab_NN: ``backward(grad)`` steps the weights by ``self.learning_rate``."""

    def __init__(self, broken=False, beta=None):
        rng = np.random.default_rng(12)
        self.w, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.learning_rate, self.broken = 0.01, broken
        if beta is not None:  # libaohang: momentum v = beta v + (1 - beta) g, then w -= lr v
            self.beta, self.vw, self.vb = beta, np.zeros((3, 2)), np.zeros(2)

    def forward(self, x):
        self.x = x
        return x @ self.w + self.b

    def backward(self, grad):
        dw, db = self.x.T @ grad, grad.sum(0) * (2.0 if self.broken else 1.0)
        dx = grad @ self.w.T
        if hasattr(self, "beta"):
            self.vw = self.beta * self.vw + (1 - self.beta) * dw
            self.vb = self.beta * self.vb + (1 - self.beta) * db
            dw, db = self.vw, self.vb
        self.w -= self.learning_rate * dw
        self.b -= self.learning_rate * db
        return dx


@pytest.mark.parametrize("broken", [False, True])
def test_a_step_size_held_on_the_layer(broken):
    x = np.random.default_rng(132).standard_normal((4, 3))
    res = gradcheck.check_layer(_HeldRate(broken), x)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["b"], res.report()
    else:
        assert res.passed, res.report()
        assert any("learning_rate is the step size" in n for n in res.notes), res.notes


def test_a_held_step_through_a_momentum_is_not_read():
    """``(1 - beta) g`` is no gradient: a momentum's scalar changing the step is refused."""
    x = np.random.default_rng(133).standard_normal((4, 3))
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_HeldRate(beta=0.9), x)


# -- from a tenth review: a held step size is read only when nothing else explains it -----------
class _HeldScalarParam(_HeldRate):
    """A float parameter ``c`` stepped too (the twin: by five times its gradient)."""

    def __init__(self, broken=False):
        super().__init__()
        self.c, self.bad = 0.5, broken

    def forward(self, x):
        return super().forward(x) + self.c

    def backward(self, grad):
        self.c -= self.learning_rate * grad.sum() * (5.0 if self.bad else 1.0)
        return super().backward(grad)


@pytest.mark.parametrize("broken", [False, True])
def test_a_held_step_beside_a_stepped_float_is_not_read(broken):
    x = np.random.default_rng(134).standard_normal((4, 3))
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_HeldScalarParam(broken), x)


class _ScaledOutput:
    """``scale * (x @ w + b)``, gradients stored; ``scale`` is in the output, no step."""

    def __init__(self, broken=False):
        rng = np.random.default_rng(13)
        self.w, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.scale, self.broken = 2.0, broken

    def forward(self, x):
        self.x = x
        return (x @ self.w + self.b) * self.scale

    def backward(self, grad):
        g = grad * self.scale
        self.dw, self.db = self.x.T @ g, g.sum(0) * (2.0 if self.broken else 1.0)
        return g @ self.w.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_float_the_output_depends_on_is_no_step_size(broken):
    x = np.random.default_rng(135).standard_normal((4, 3))
    res = gradcheck.check_layer(_ScaledOutput(broken), x)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["b"], res.report()
    else:
        assert res.passed, res.report()


def test_a_held_step_through_a_momentum_of_a_numpy_float_is_not_read():
    layer = _HeldRate(beta=0.9)
    layer.beta = np.float32(0.9)
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(layer, np.random.default_rng(136).standard_normal((4, 3)))
