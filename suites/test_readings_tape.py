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


# -- a forward with no cache, a backward taking its inputs again under other names -----------
def _pool(image, window):
    r, c = window
    h, w = image.shape
    return image.reshape(h // r, r, w // c, c).max(axis=(1, 3))


def _pool_backprop(img, size, d_L_d_out, bug=""):
    r, c = size
    up = np.kron(_pool(img, size), np.ones((r, c)))
    grad = np.kron(d_L_d_out.T if bug == "transposed" else d_L_d_out, np.ones((r, c)))
    return grad * (img == up)


def _scale(x, w):
    return np.tanh(x * w)


def _scale_grad(g, a, b, bug=""):
    t = 1 - np.tanh(a * b) ** 2
    return g * t * (a if bug == "swapped" else b), g * t * a


@pytest.mark.parametrize("bug, failing", [("", None), ("transposed", ["image"])])
def test_a_backward_taking_the_inputs_again_under_other_names_is_called_by_trial(bug, failing):
    rng = np.random.default_rng(83)
    res = gradcheck.check_vjp(_pool, lambda i, s, d: _pool_backprop(i, s, d, bug),
                              [rng.standard_normal((6, 6)), (2, 2)])
    _expect(res, failing)
    assert any("the forward's inputs again, then the output gradient" in n
               for n in res.notes), res.notes


@pytest.mark.parametrize("bug, failing", [("", None), ("swapped", ["x"])])
def test_a_backward_taking_the_gradient_first_under_other_names_is_called_by_trial(bug, failing):
    rng = np.random.default_rng(84)
    res = gradcheck.check_vjp(_scale, lambda g, a, b: _scale_grad(g, a, b, bug),
                              [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))])
    _expect(res, failing)
    assert any("the output gradient, then the forward's inputs again" in n
               for n in res.notes), res.notes


def test_a_backward_running_in_no_order_says_which_form_to_give():
    rng = np.random.default_rng(85)

    def conv_backward(X, dZ, W_shape):  # takes W's shape, not W
        return np.zeros(W_shape) + X.sum() * dZ.sum()

    res = gradcheck.check_vjp(lambda X, W: X @ W, conv_backward,
                              [rng.standard_normal((3, 4)), rng.standard_normal((4, 2))])
    assert res.status == "bad-protocol" and "in neither order" in res.message, res.report()


# -- a layer refusing a second forward, gradients stored as a tuple or appended to lists -----
class _Once:
    """``forward`` asserts its cache is empty; ``self.grad = (dW, db)`` after backward."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(86)
        self.weight, self.bias = rng.standard_normal((4, 3)), np.zeros((1, 3))
        self.inp, self.bug = None, bug

    def __call__(self, x):
        assert self.inp is None, "found a previous input: reset first"
        self.inp = x
        return x @ self.weight + self.bias

    def backward(self, grad_inp):
        dw = self.inp.T @ grad_inp
        self.grad = (dw.T if self.bug == "transposed" else dw,
                     grad_inp.sum(0) * (2.0 if self.bug == "bias" else 1.0))
        return grad_inp @ self.weight.T


@pytest.mark.parametrize("bug, failing", [("", None), ("bias", ["bias"])])
def test_a_layer_refusing_a_second_forward_with_a_stored_tuple_of_gradients(bug, failing):
    x = np.random.default_rng(87).standard_normal((5, 4))
    res = gradcheck.check_layer(_Once(bug), x)
    _expect(res, failing)
    assert any("grad[0]" in n for n in res.notes), res.notes


def test_a_misshapen_gradient_in_a_stored_tuple_is_a_shape_mismatch():
    x = np.random.default_rng(88).standard_normal((5, 4))
    res = gradcheck.check_layer(_Once("transposed"), x)
    assert res.status == "shape-mismatch" and "grad[0]" in res.message, res.report()


class _Appending:
    """Gradients appended to lists the layer keeps (``weight_gradients``)."""

    def __init__(self, bug=""):
        self.weights = np.random.default_rng(89).standard_normal((3, 2))
        self.weight_gradients, self.bug = [], bug

    def __call__(self, x):
        self.x = x
        return np.tanh(x @ self.weights)

    def backward(self, dout):
        dz = dout * (1 - np.tanh(self.x @ self.weights) ** 2)
        self.weight_gradients.append(self.x.T @ (dout if self.bug else dz))
        return dz @ self.weights.T


@pytest.mark.parametrize("bug, failing", [("", None), ("no-tanh", ["weights"])])
def test_gradients_appended_to_a_list_the_layer_keeps_are_read(bug, failing):
    x = np.random.default_rng(90).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_Appending(bug), x), failing)


# -- a loss pair whose backward takes the cache alone, gradients for the weights only --------
def _mlp_forward(X, y, W1, W2):
    h = np.tanh(X @ W1)
    z = h @ W2
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return -np.log(p[np.arange(len(y)), y]).mean(), (X, y, h, p, W2)


def _mlp_backward(cache, bug=""):
    X, y, h, p, W2 = cache
    dz = p.copy()
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dh = dz @ W2.T * (1 - (h * h if bug != "tanh" else h))
    return X.T @ dh, h.T @ dz


@pytest.mark.parametrize("bug, failing", [("", None), ("tanh", ["W1"])])
def test_a_loss_backward_taking_the_cache_alone_returning_the_weights_gradients(bug, failing):
    rng = np.random.default_rng(91)
    inputs = [rng.standard_normal((6, 2)), rng.integers(0, 3, 6),
              rng.standard_normal((2, 4)), rng.standard_normal((4, 3))]
    res = gradcheck.check_vjp(_mlp_forward, lambda c: _mlp_backward(c, bug), inputs)
    _expect(res, failing)
    assert any("the cache alone" in n for n in res.notes), res.notes
    assert any("the inputs [2, 3]" in n for n in res.notes), res.notes


# -- a stateless layer: forward(x), grad_x(x, grad_out), grad_params(x, grad_out) ------------
class _Stateless:
    def __init__(self, bug=""):
        rng = np.random.default_rng(92)
        self.W, self.b, self.bug = rng.standard_normal((4, 3)), rng.standard_normal(3), bug

    def forward(self, x):
        return x @ self.W + self.b

    def grad_x(self, x, grad_out):
        return grad_out @ self.W.T

    def grad_params(self, x, grad_out):
        db = grad_out.mean(0) if self.bug == "b" else grad_out.sum(0)
        return [x.T @ grad_out, db]


@pytest.mark.parametrize("bug, failing", [("", None), ("b", ["b"])])
def test_a_stateless_layer_whose_backward_is_found_taking_the_inputs_again(bug, failing):
    x = np.random.default_rng(93).standard_normal((5, 4))
    res = gradcheck.check_layer(_Stateless(bug), x)
    _expect(res, failing)
    assert any("grad_x" in n for n in res.notes), res.notes


def test_a_loss_returning_a_dict_of_gradients_first_is_a_bad_protocol_naming_it():
    def loss_and_grads(x, W):
        z = x @ W
        return {"W": x.T @ z}, 0.5 * np.sum(z ** 2)

    rng = np.random.default_rng(94)
    res = gradcheck.check_loss(loss_and_grads, rng.standard_normal((4, 3)),
                               rng.standard_normal((3, 2)))
    assert res.status == "bad-protocol" and "(dict, float64 ())" in res.message, res.report()


# -- a base class's forward(self) stub beside the layer's own __call__(x) --------------------
class _Base:
    def forward(self):
        pass

    def backward(self, output_gradient):
        pass


class _CalledDense(_Base):
    def __init__(self, bug=""):
        self.weights = np.random.default_rng(95).standard_normal((2, 3))
        self.bug = bug

    def __call__(self, batch):
        self.input = batch
        return batch @ self.weights.T

    def backward(self, output_gradient):
        self.dweights = output_gradient.T @ self.input * (0.5 if self.bug else 1.0)
        return output_gradient @ self.weights


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["weights"])])
def test_a_forward_stub_of_a_base_class_gives_way_to_the_layers_own_call(bug, failing):
    x = np.random.default_rng(96).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_CalledDense(bug), x), failing)


# -- the forward as the one method returning a value beside a backward and a step(lr) --------
class _Attending:
    def __init__(self, bug=""):
        self.Wv = np.random.default_rng(97).standard_normal((3, 3))
        self.dWv = np.zeros_like(self.Wv)
        self.bug = bug

    def add_attention(self, emb):
        self.emb = emb
        return np.tanh(emb @ self.Wv)

    def backward(self, d_output):
        dz = d_output * (1 - np.tanh(self.emb @ self.Wv) ** 2)
        self.dWv += self.emb.T @ (d_output if self.bug else dz)
        return dz @ self.Wv.T

    def step(self, lr):
        self.Wv -= lr * self.dWv


@pytest.mark.parametrize("bug, failing", [("", None), ("no-tanh", ["Wv"])])
def test_the_forward_is_the_one_method_returning_a_value_beside_a_step(bug, failing):
    x = np.random.default_rng(98).standard_normal((4, 3))
    res = gradcheck.check_layer(_Attending(bug), x)
    _expect(res, failing)
    assert any("add_attention (forward)" in n for n in res.notes), res.notes


# -- what these readings must not do (the review of corpora 81-85's readings) ----------------
def test_a_forgotten_last_gradient_is_not_read_as_a_constant_input():
    rng = np.random.default_rng(99)
    inputs = [rng.standard_normal((6, 2)), rng.integers(0, 3, 6),
              rng.standard_normal((2, 4)), rng.standard_normal((4, 3))]
    res = gradcheck.check_vjp(_mlp_forward, lambda c: _mlp_backward(c)[:1], inputs)
    assert not res.passed, res.report()

    def affine_backward(dout, cache):
        x, W = cache
        return dout @ W.T, x.T @ dout  # no db
    res = gradcheck.check_vjp(lambda x, W, b: (x @ W + b, (x, W)), affine_backward,
                              [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)),
                               rng.standard_normal(2)])
    assert not res.passed, res.report()


class _TwoInputs:
    def forward(self, a, b):
        return a * b

    def grad_a(self, a, b, g):
        return g * b

    def grad_b(self, a, b, g):
        return g * a / len(a)  # wrong: never called if grad_a were the whole backward


def test_one_input_taker_is_no_backward_of_a_layer_with_two_inputs():
    rng = np.random.default_rng(100)
    try:
        res = gradcheck.check_layer(_TwoInputs(), rng.standard_normal((3, 2)),
                                    rng.standard_normal((3, 2)))
    except TypeError as exc:
        assert "backward" in str(exc)
    else:
        assert not res.passed, res.report()


class _Dropout:
    def __init__(self, bug=True):
        self.p, self.bug = 0.5, bug

    def forward(self, x, train):
        self.mask = (np.random.default_rng(0).random(x.shape) < self.p) if train else 1.0
        return x * self.mask / (self.p if train else 1.0)

    def __call__(self, x, train=False):
        return self.forward(x, train)

    def backward(self, dout):
        return dout * self.mask / (1.0 if self.bug else self.p)


def test_a_forward_taking_a_mode_flag_is_not_replaced_by_call():
    x = np.random.default_rng(101).standard_normal((3, 4))
    assert not gradcheck.check_layer(_Dropout(), x).passed


class _DeltaDense:
    """Stores the output gradient (``delta``), computes ``dW`` in ``update``."""

    def __init__(self):
        self.W = np.random.default_rng(102).standard_normal((3, 2))

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        self.delta = dout
        return dout @ self.W.T


def test_a_stored_output_gradient_of_the_weights_size_is_not_their_gradient():
    x = np.random.default_rng(103).standard_normal((2, 3))
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_DeltaDense(), x)


def test_a_loss_returned_as_a_fraction_is_a_loss():
    from fractions import Fraction

    res = gradcheck.check_loss(lambda x: (Fraction(float(np.sum(x * x))), 2 * x),
                               np.random.default_rng(104).standard_normal(4))
    assert res.passed, res.report()


def test_a_backward_appending_to_a_list_in_its_cache_is_a_mutation():
    def fwd(x):
        return np.tanh(x), {"y": np.tanh(x), "history": []}

    def bwd(dout, cache):
        cache["history"].append(dout.copy())
        return dout * (1 - cache["y"] ** 2)

    res = gradcheck.check_vjp(fwd, bwd, [np.random.default_rng(105).standard_normal(4)])
    assert res.status == "mutation" and "history" in res.message, res.report()


class _LazyOnce:
    """Builds ``W`` in its first forward and refuses a second forward before a backward."""

    def __init__(self, bug=False):
        self.W, self.x, self.bug = None, None, bug

    def forward(self, x):
        assert self.x is None, "forward called twice without backward"
        if self.W is None:
            self.W = np.random.default_rng(0).standard_normal((x.shape[1], 2))
        self.x = x
        return x @ self.W

    def backward(self, dout):
        self.dW = self.x.T @ dout * (0.5 if self.bug else 1.0)
        dx, self.x = dout @ self.W.T, None
        return dx


def test_weights_built_by_a_forward_refusing_a_second_are_never_left_unchecked():
    x = np.random.default_rng(106).standard_normal((4, 3))
    assert not gradcheck.check_layer(_LazyOnce(bug=True), x).passed


# -- corpora 86-90: float16 gradients, global draws in a found backward, loss pairs ----------
@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["x0"])])
def test_a_loss_gradient_returned_in_float16_gets_float16s_tolerance(bug, failing):
    def half_loss(x):
        g = x * (0.5 if bug else 1.0)
        return 0.5 * np.sum(x ** 2), g.astype(np.float16)

    _expect(gradcheck.check_loss(half_loss, np.random.default_rng(107).standard_normal((4, 3))),
            failing)


class _GlobalDropout:
    """A mask drawn from ``np.random`` in the forward; ``compute_gradients(g)`` is the
    backward, found by what it does."""

    def __init__(self, bug=""):
        self.p, self.bug = 0.5, bug

    def forward(self, x):
        self.mask = (np.random.rand(*x.shape) > self.p) / (1 - self.p)  # noqa: NPY002
        return x * self.mask

    def compute_gradients(self, grad):
        return grad * (self.mask > 0 if self.bug else self.mask)


@pytest.mark.parametrize("bug, failing", [("", None), ("no-scale", ["x0"])])
def test_a_backward_found_by_what_it_does_sees_the_same_global_draws(bug, failing):
    np.random.seed(108)  # noqa: NPY002 - the user's global generator, as such code uses it
    x = np.random.default_rng(109).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_GlobalDropout(bug), x), failing)


class _CostCached:
    def cost(self, output, target):
        self.cached = output
        return float(np.mean((output - target) ** 2))

    def derivative(self, output, target):
        return 2 * (self.cached - target) / output.size


class _CostCachedTwin(_CostCached):
    def derivative(self, output, target):
        return 2 * (self.cached - target)


class _PerColumn:
    """One loss per sample, the samples as columns: ``E`` is ``(1, N)`` for ``y`` ``(D, N)``."""

    def __init__(self, bug=""):
        self.bug = bug

    def E(self, y, target):
        return 0.5 * np.square(y - target).sum(axis=0, keepdims=True)

    def dEdy(self, y, target):
        return (y - target) * (0.5 if self.bug else 1.0)


@pytest.mark.parametrize("layer, failing", [(_CostCached(), None), (_CostCachedTwin(), ["x0"]),
                                            (_PerColumn(), None), (_PerColumn("h"), ["x0"])])
def test_loss_pairs_found_by_what_they_return(layer, failing):
    rng = np.random.default_rng(110)
    y, t = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    _expect(gradcheck.check_layer(layer, y, t, wrt=["x0"]), failing)


# -- backward_inputs(g) beside backward_params(g) -> [[W, dW], [b, db], name] ----------------
class _SplitLayer:
    def backward_params(self, grads):
        pass


class _SplitFC(_SplitLayer):
    def __init__(self, bug=""):
        rng = np.random.default_rng(111)
        self.weights, self.bias, self.name, self.bug = (
            rng.standard_normal((3, 4)), rng.standard_normal(3), "fc", bug)

    def forward(self, x):
        self.inputs = x
        return x @ self.weights.T + self.bias

    def backward_inputs(self, grads):
        return grads @ self.weights

    def backward_params(self, grads):
        db = grads.mean(0) if self.bug else grads.sum(0)
        return [[self.weights, grads.T @ self.inputs], [self.bias, db], self.name]


class _SplitReLU(_SplitLayer):
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, x):
        self.x = x
        return np.maximum(x, 0)

    def backward_inputs(self, grads):
        return grads * ((self.x < 0) if self.bug else (self.x > 0))


@pytest.mark.parametrize("layer, failing", [(_SplitFC(), None), (_SplitFC("b"), ["bias"]),
                                            (_SplitReLU(), None), (_SplitReLU("m"), ["x0"])])
def test_a_backward_split_into_inputs_and_params_methods(layer, failing):
    x = np.random.default_rng(112).standard_normal((5, 4))
    x[np.abs(x) < 0.1] = 0.5
    res = gradcheck.check_layer(layer, x)
    _expect(res, failing)
    assert any("backward_inputs is the backward" in n for n in res.notes), res.notes


# -- a backward stepping its weights through a velocity, a forward taking a training flag ----
class _VelocityStep:
    def __init__(self, momentum=0.0, bug=""):
        rng = np.random.default_rng(113)
        self.w, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self.lr, self.momentum, self.bug = 0.1, momentum, bug
        self.m_w, self.m_b = np.zeros_like(self.w), np.zeros_like(self.b)

    def forward(self, x, training):
        return x @ self.w + self.b

    def backward(self, x, grad_y):
        gx = grad_y @ self.w.T
        db = grad_y.mean(0) if self.bug else grad_y.sum(0)
        self.m_w = self.momentum * self.m_w - self.lr * (x.T @ grad_y)
        self.m_b = self.momentum * self.m_b - self.lr * db
        self.w += self.m_w
        self.b += self.m_b
        return gx


@pytest.mark.parametrize("bug, failing", [("", None), ("b", ["b"])])
def test_a_step_through_a_velocity_from_zero_with_a_training_flag(bug, failing):
    x = np.random.default_rng(114).standard_normal((5, 4))
    res = gradcheck.check_layer(_VelocityStep(bug=bug), x, True)
    _expect(res, failing)
    assert any("step size" in n for n in res.notes), res.notes


def test_a_momentum_step_is_still_no_gradient():
    x = np.random.default_rng(115).standard_normal((5, 4))
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_VelocityStep(momentum=0.9), x, True)


# -- activate(x) beside derivative(x, error): no name reads as a forward or a backward -------
class _Activation:
    def __init__(self, bug=""):
        self.bug = bug

    def activate(self, x):
        return np.tanh(x)

    def derivative(self, x, error):
        return (1 - (np.tanh(x) if self.bug else np.tanh(x) ** 2)) * error


@pytest.mark.parametrize("bug, failing", [("", None), ("square", ["x0"])])
def test_a_pair_found_by_what_it_does_when_no_name_says_forward_or_backward(bug, failing):
    x = np.random.default_rng(116).standard_normal((3, 4))
    res = gradcheck.check_layer(_Activation(bug), x)
    _expect(res, failing)
    assert any("activate returning a value for the input" in n for n in res.notes), res.notes


# -- a loss per sample whose backward gives the gradient of their mean, no method saying so --
class _PerSampleCE:
    def __init__(self, bug=""):
        self.bug = bug

    def compute_loss(self, logits, y):
        return -logits[np.arange(len(logits)), y] + np.log(np.exp(logits).sum(axis=-1))

    def compute_grad(self, logits, y):
        p = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        p[np.arange(len(logits)), y] -= 1
        return p / logits.shape[0] * (0.5 if self.bug else 1.0)


def test_the_gradient_of_the_mean_where_no_method_says_mean_is_no_mismatch():
    rng = np.random.default_rng(117)
    logits, labels = rng.standard_normal((4, 5)), np.array([0, 3, 1, 4])
    res = gradcheck.check_layer(_PerSampleCE(), logits, labels)
    assert res.status == "bad-protocol" and "mean" in res.message, res.report()
    broken = gradcheck.check_layer(_PerSampleCE("half"), logits, labels)
    assert broken.status == "mismatch", broken.report()


# -- running statistics the forward tests for zeros: a flag, not a parameter -----------------
class _FlagNorm:
    def __init__(self, bug=""):
        self.gamma, self.beta = np.ones(4) * 1.5, np.zeros(4) + 0.1
        self.mean, self.var, self.bug = np.zeros(4), np.zeros(4), bug

    def forward(self, x):
        mean, var = x.mean(0), x.var(0)
        if self.mean.all() == 0:  # the first call: the batch's statistics
            self.mean, self.var = mean, var
        else:
            self.mean, self.var = 0.9 * self.mean + 0.1 * mean, 0.9 * self.var + 0.1 * var
        self.std = np.sqrt(self.var + 1e-5)
        self.xn = (x - mean) / self.std
        return self.gamma * self.xn + self.beta

    def backward(self, dout):
        self.dgamma = (dout * self.xn).sum(0) * (0.5 if self.bug else 1.0)
        self.dbeta = dout.sum(0)
        dxn = dout * self.gamma
        return (dxn - dxn.mean(0) - self.xn * (dxn * self.xn).mean(0)) / self.std


class _ZeroBiasBranch:
    """A zero bias added only once nonzero, its gradient forgotten: still a parameter."""

    def __init__(self):
        self.W, self.b = np.random.default_rng(118).standard_normal((3, 2)), np.zeros(2)

    def forward(self, x):
        self.x = x
        out = x @ self.W
        return out + self.b if self.b.any() else out

    def backward(self, dout):
        self.dW = self.x.T @ dout
        return dout @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["gamma"])])
def test_running_statistics_tested_for_zeros_are_a_flag(bug, failing):
    x = np.random.default_rng(119).standard_normal((6, 4))
    res = gradcheck.check_layer(_FlagNorm(bug), x)
    _expect(res, failing)
    assert any(n.startswith("mean: the output jumps") for n in res.notes), res.notes


def test_a_zero_bias_behind_a_branch_is_still_a_parameter():
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_ZeroBiasBranch(), np.random.default_rng(120).standard_normal((4, 3)))


# -- what these readings must not do (the second review) -------------------------------------
class _TwoWeights(_SplitLayer):
    """``backward_params`` lists its pairs in backprop order, W2 first."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(121)
        self.W1, self.W2, self.bug = rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), bug
        self.params = [self.W1, self.W2]

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W1)
        return self.h @ self.W2

    def backward_inputs(self, g):
        return (g @ self.W2.T * (1 - self.h ** 2)) @ self.W1.T

    def backward_params(self, g):
        dw2 = self.h.T @ g
        dw1 = self.x.T @ (g @ self.W2.T * (1 - self.h ** 2))
        if self.bug:
            return [[self.W2, dw1], [self.W1, dw2], "net"]
        return [[self.W2, dw2], [self.W1, dw1], "net"]


@pytest.mark.parametrize("bug, failing", [("", None), ("swapped", ["W2", "W1"])])
def test_paired_gradients_are_read_by_the_parameter_beside_them(bug, failing):
    x = np.random.default_rng(122).standard_normal((5, 4))
    _expect(gradcheck.check_layer(_TwoWeights(bug), x), failing)


class _CellForgettingDh:
    def __init__(self):
        rng = np.random.default_rng(123)
        self.Wx, self.Wh, self.lr = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), 0.1

    def forward(self, x, h):
        self.h = h
        return np.tanh(x @ self.Wx + h @ self.Wh)

    def backward(self, x, grad):
        dz = grad * (1 - np.tanh(x @ self.Wx + self.h @ self.Wh) ** 2)
        dx = dz @ self.Wx.T
        self.Wx -= self.lr * x.T @ dz
        self.Wh -= self.lr * self.h.T @ dz
        return dx  # no gradient for h


def test_a_stepping_backward_given_not_every_float_input_back_is_not_passed():
    rng = np.random.default_rng(124)
    try:
        res = gradcheck.check_layer(_CellForgettingDh(), rng.standard_normal((5, 4)),
                                    rng.standard_normal((5, 3)))
    except gradcheck.LayerConventionError:
        return
    assert not res.passed, res.report()


def test_forgotten_first_layer_gradients_are_no_data():
    rng = np.random.default_rng(125)
    inputs = [rng.standard_normal((6, 2)), rng.integers(0, 3, 6),
              rng.standard_normal((2, 4)), rng.standard_normal((4, 3))]
    res = gradcheck.check_vjp(_mlp_forward, lambda c: _mlp_backward(c)[1:], inputs)
    assert not res.passed, res.report()


def test_a_loss_that_is_none_is_a_bad_protocol():
    res = gradcheck.check_loss(lambda x: (None, 2 * x),
                               np.random.default_rng(126).standard_normal(4))
    assert res.status == "bad-protocol" and "(None, float64 (4,))" in res.message, res.report()


def test_a_gradient_only_rounded_to_float16_gets_its_rounding_tolerance():
    x = np.random.default_rng(127).standard_normal((128, 3))

    def mse(x, bug=False):
        n = len(x) - (1 if bug else 0)
        return float(np.sum(x ** 2) / len(x)), (2 * x / n).astype(np.float16)

    assert gradcheck.check_loss(mse, x).passed
    assert not gradcheck.check_loss(lambda v: mse(v, True), x).passed  # 0.8% everywhere


class _Misspelt:
    """``forword(x)`` and ``back(gradient)``: no name reads as a forward or a backward; the
    layer's own caches exist from ``__init__``, so ``back`` runs before any forward too."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(128)
        self.w, self.z, self.bug = rng.standard_normal((2, 2)), rng.standard_normal((4, 2)), bug
        self.x = rng.standard_normal((4, 2))

    def forword(self, x):
        self.x, self.z = x, x @ self.w
        return np.tanh(self.z)

    def back(self, gradient):
        tmp = (1 - np.tanh(self.z) ** 2) * gradient
        self.w_gradient = self.x.T @ tmp
        return tmp @ (self.w if self.bug else self.w.T)

    def update(self, lr=0.01):
        self.w -= lr * self.w_gradient


@pytest.mark.parametrize("bug, failing", [("", None), ("no-transpose", ["x0"])])
def test_a_misspelt_pair_found_by_what_it_does(bug, failing):
    x = np.random.default_rng(129).standard_normal((4, 2))
    res = gradcheck.check_layer(_Misspelt(bug), x)
    _expect(res, failing)
    assert any("forword returning a value" in n for n in res.notes), res.notes


# -- a step whose size and gradient multiply alike either way round: one reading ------------
class _RateFirst:
    def __init__(self, bug=""):
        rng = np.random.default_rng(130)
        self.weight, self.bias = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
        self.bug = bug

    def forward_propogat(self, neuron):
        return self.bias + self.weight @ neuron

    def back_propogat(self, rate, delta, neuron):
        self.weight += -rate * delta @ neuron.T
        self.bias += -rate * delta * (2.0 if self.bug else 1.0)


@pytest.mark.parametrize("bug, failing", [("", None), ("double", ["bias"])])
def test_a_step_size_and_gradient_that_multiply_alike_either_way_round(bug, failing):
    x = np.random.default_rng(131).standard_normal((4, 1))
    _expect(gradcheck.check_layer(_RateFirst(bug), x), failing)


def test_a_backward_missing_its_targets_is_not_told_to_give_the_forward_a_flag():
    class CharRNN:
        def forward(self, x):
            self.x = x
            return np.tanh(x)

        def backward(self, dout, targets):
            return dout * (1 - np.tanh(self.x) ** 2) - targets

    res = gradcheck.check_layer(CharRNN(), np.random.default_rng(132).standard_normal(3))
    assert res.status == "error" and "takes more than the output gradient" in res.message
    assert "training flag" not in res.message, res.message


# -- corpus 97-98: dicts of gradients by place, an object as the output, zero readings -------
class _SeqDict:
    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(133).standard_normal((3, 3)) * 0.5, bug

    def forward(self, xs):
        self.xs = xs
        return [np.tanh(x @ self.W) for x in xs]

    def backward(self, douts):
        pairs = list(zip(self.xs, douts, strict=True))
        self.dW = sum(x.T @ (d * (1 - np.tanh(x @ self.W) ** 2)) for x, d in pairs)
        return {t: (d * (1 - np.tanh(x @ self.W) ** 2)) @ (self.W if self.bug else self.W.T)
                for t, (x, d) in enumerate(pairs)}


@pytest.mark.parametrize("bug, failing", [("", None), ("t", ["x0[0]", "x0[1]"])])
def test_a_dict_of_gradients_keyed_by_the_places_of_a_list_input(bug, failing):
    rng = np.random.default_rng(134)
    xs = [rng.standard_normal((2, 3)) for _ in range(2)]
    _expect(gradcheck.check_layer(_SeqDict(bug), xs), failing)


class _DictLoss:
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, zs, ys):
        self.ys, self.p, loss = ys, {}, 0.0
        for t in range(len(ys)):
            e = np.exp(zs[t] - zs[t].max())
            self.p[t] = e / e.sum()
            loss += -np.log(self.p[t][ys[t], 0])
        return loss

    def backward(self):
        d = {}
        for t in range(len(self.ys)):
            d[t] = self.p[t].copy()
            d[t][self.ys[t]] -= 0.5 if self.bug else 1.0
        return d


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["x0[0]", "x0[1]", "x0[2]"])])
def test_a_loss_of_a_dict_input_returning_a_dict_of_gradients(bug, failing):
    rng = np.random.default_rng(135)
    zs = {t: rng.standard_normal((4, 1)) for t in range(3)}
    _expect(gradcheck.check_layer(_DictLoss(bug), zs, [1, 3, 0]), failing)


def test_a_forward_returning_an_object_holding_the_output_is_a_bad_protocol():
    class Box:
        def __init__(self, v):
            self.data = v

    class Boxed:
        def __init__(self):
            self.w = np.random.default_rng(136).standard_normal((3, 2))

        def forward(self, x):
            self.x = x
            return Box(x @ self.w)

        def backward(self):
            return {"w": self.x.T}

    res = gradcheck.check_layer(Boxed(), np.random.default_rng(137).standard_normal((4, 3)))
    assert res.status == "bad-protocol" and "returned Box" in res.message, res.report()


def test_an_order_giving_zeros_only_is_no_reading():
    class Sigmoid:
        def forward(self, x, train):
            return 1 / (1 + np.exp(-x))

        def backward(self, dout, input, output):  # the forward's input and output
            return dout * output * (1 - output)

    res = gradcheck.check_layer(Sigmoid(), np.random.default_rng(138).standard_normal(4), True)
    assert res.status != "mismatch", res.report()


# -- backdrop(dout, lr): no backward-like name, a method stepping by its second argument -----
class _Backdrop:
    def __init__(self, bug=""):
        self.w, self.bug = np.random.default_rng(139).standard_normal((3, 2)), bug

    def forward(self, x):
        self.x = x
        return x @ self.w

    def backdrop(self, dout, lr):
        dx = dout @ self.w.T
        self.w -= lr * (self.x.T @ dout) * (0.5 if self.bug else 1.0)
        return dx


class _PoolBackdrop:
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, x):
        self.x = x
        return x.reshape(2, 2, 2, 2).max(axis=(1, 3))

    def backdrop(self, dout, lr):
        up = np.kron(self.x.reshape(2, 2, 2, 2).max(axis=(1, 3)), np.ones((2, 2)))
        mask = (self.x == up) if not self.bug else (self.x != up)
        return np.kron(dout, np.ones((2, 2))) * mask


@pytest.mark.parametrize("layer, failing", [(_Backdrop(), None), (_Backdrop("h"), ["w"]),
                                            (_PoolBackdrop(), None), (_PoolBackdrop("m"), ["x0"])])
def test_a_backward_found_as_the_method_taking_a_gradient_and_a_step(layer, failing):
    width = 4 if isinstance(layer, _PoolBackdrop) else 3
    x = np.random.default_rng(140).standard_normal((4, width))
    res = gradcheck.check_layer(layer, x)
    _expect(res, failing)
    assert any("backdrop" in n for n in res.notes), res.notes


# -- what these readings must not do (the third review) --------------------------------------
class _BiasThenNorm:
    """Linear then BatchNorm: the norm cancels ``b``, whose gradient is zero; the broken
    backward stores ``db = dout.sum(0)`` as if the norm's backward were skipped for it."""

    def __init__(self):
        rng = np.random.default_rng(141)
        self.W, self.b = rng.standard_normal((3, 4)), rng.standard_normal(4)
        self.grads = {}

    def forward(self, x):
        self.x = x
        z = x @ self.W + self.b
        self.std = np.sqrt(z.var(0) + 1e-5)
        self.zn = (z - z.mean(0)) / self.std
        return self.zn

    def backward(self, dout):
        dz = (dout - dout.mean(0) - self.zn * (dout * self.zn).mean(0)) / self.std
        self.grads = {"W": self.x.T @ dz, "b": dout.sum(0)}
        return dz @ self.W.T


def test_a_parameter_moving_the_output_by_rounding_only_is_no_flag():
    res = gradcheck.check_layer(_BiasThenNorm(), np.random.default_rng(142).standard_normal((6, 3)))
    assert not res.passed and "b" in [i.name for i in res.inputs if not i.passed], res.report()


class _ScalarDictLoss:
    def forward(self, zs, ys):
        self.zs, self.ys = zs, ys
        return sum(0.5 * (zs[t] - ys[t]) ** 2 for t in zs)

    def backward(self):
        return {t: np.float64(self.zs[t] - self.ys[t]) for t in self.zs}


def test_a_dict_of_scalar_gradients_is_scaled_too():
    zs = {t: np.array(v) for t, v in enumerate([0.3, -1.2, 0.7])}
    res = gradcheck.check_layer(_ScalarDictLoss(), zs, {0: 1.0, 1: 0.0, 2: -1.0}, wrt=["x0"])
    assert res.passed, res.report()


def test_a_training_flag_is_never_given_where_the_output_goes():
    class ReLU:
        def forward(self, x, train):
            return np.maximum(x, 0)

        def backward(self, dout, input, output):
            return dout * (output > 0)

    x = np.random.default_rng(143).standard_normal(5)
    x[np.abs(x) < 0.1] = 0.5
    assert gradcheck.check_layer(ReLU(), x, True).status != "mismatch"


def test_a_forward_missing_its_flag_is_told_so():
    class CallFlag:
        def __call__(self, x, training):
            return 2 * x

        def backward(self, g):
            return 2 * g

    res = gradcheck.check_layer(CallFlag(), np.ones(3))
    assert "training flag" in res.message, res.message


class _CentredDelta:
    """``backward_delta(input, delta)``: zero for a uniform ``delta`` (log-softmax's
    ``delta - softmax * delta.sum()`` is, for one row of ones, not zero; its broken twin,
    ``delta - delta.mean()``, is)."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, X):
        e = np.exp(X - X.max(1, keepdims=True))
        return np.log(e / e.sum(1, keepdims=True))

    def backward_update_gradient(self, input, delta):
        pass  # no parameter

    def backward_delta(self, input, delta):
        e = np.exp(input - input.max(1, keepdims=True))
        s = e / e.sum(1, keepdims=True)
        w = 1 / s.shape[1] if self.bug else s
        return delta - w * delta.sum(1, keepdims=True)


def test_a_trial_order_zero_for_a_uniform_gradient_is_tried_with_an_uneven_one():
    x = np.random.default_rng(144).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_CentredDelta("uniform"), x), ["x0"])
    # the right one reads its input or its output alike (no order): never a mismatch
    assert gradcheck.check_layer(_CentredDelta(), x).status != "mismatch"


class _PoolWithFlag:
    """``forward(x, train)``; ``backward(dout, input, output)``: the network hands it the
    forward's input and output, never the flag."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, x, train):
        return x.reshape(2, 2, 2, 2).max(axis=(1, 3))

    def backward(self, dout, input, output):
        up = np.kron(output, np.ones((2, 2)))
        mask = (input == up) if not self.bug else (input != up)
        return np.kron(dout, np.ones((2, 2))) * mask


@pytest.mark.parametrize("bug, failing", [("", None), ("m", ["x0"])])
def test_a_backward_given_the_input_and_output_beside_a_training_flag(bug, failing):
    x = np.random.default_rng(145).standard_normal((4, 4))
    res = gradcheck.check_layer(_PoolWithFlag(bug), x, True)
    _expect(res, failing)


class _L2:
    """No input: ``forward()`` is the penalty, ``backward_params()`` returns
    ``[[weights, grad], name]``."""

    def __init__(self, bug=""):
        self.weights, self.wd, self.name = np.random.default_rng(146).standard_normal((3, 4)), \
            1e-2, "l2"
        self.bug = bug

    def forward(self):
        return 0.5 * self.wd * np.sum(self.weights ** 2)

    def backward_params(self):
        return [[self.weights, (-1 if self.bug else 1) * self.wd * self.weights], self.name]


@pytest.mark.parametrize("bug, failing", [("", None), ("sign", ["weights"])])
def test_a_penalty_whose_backward_returns_each_weight_beside_its_gradient(bug, failing):
    _expect(gradcheck.check_layer(_L2(bug)), failing)
