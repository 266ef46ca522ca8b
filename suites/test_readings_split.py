"""Readings by observation found on held-out code (corpora 43 on): a step size held one
object away, a gradient method taking the forward's inputs again, private (mangled)
names. Each with a correct subject that passes and a broken twin that fails with a
gradient verdict."""

import dataclasses
import types

import numpy as np
import pytest

import gradcheck
from gradcheck import LayerConventionError
from suites._verdicts import expect as _expect


# -- a step size the network holds: self.nn.learning_rate ------------------------------------
class _NetStepped:
    """``backpropagate(delta)`` steps ``W`` and ``b`` by ``self.nn.learning_rate``, the
    step size of the network the layer is in; ``bug`` breaks one part."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(41)
        self.W, self.b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug
        self.nn = types.SimpleNamespace(learning_rate=0.05, training=True, name="net")

    def propagate(self, x):
        self.x = x
        return x @ self.W + self.b

    def backpropagate(self, delta):
        lr = self.nn.learning_rate
        dx = delta @ self.W.T
        self.W -= lr * (self.x.T @ delta)
        self.b -= lr * delta.sum(0) * (-1 if self.bug == "b-sign" else 1)
        return delta @ self.W.T if self.bug == "dx-after-step" else dx


@pytest.mark.parametrize("bug, failing", [("", None), ("b-sign", ["b"]),
                                          ("dx-after-step", ["x0"])])
def test_a_step_size_held_by_the_network_reads_the_step(bug, failing):
    x = np.random.default_rng(42).standard_normal((4, 3))
    res = gradcheck.check_layer(_NetStepped(bug), x)
    _expect(res, failing)
    assert any("nn.learning_rate is the step size" in n for n in res.notes), res.notes


# -- the parameters' gradients from a second method: gradient(z_down, _e) ------------------------
class _SplitGradient:
    """``backward(_e)`` returns the input's gradient only; ``gradient(z_down, _e)``,
    given the forward's input again and the output gradient, returns ``(dw, db)``;
    ``gradient_descent(_dw, _db)`` steps. 1-d samples, ``w`` of shape (units, inputs)."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(43)
        self.w, self.b, self.bug = rng.standard_normal((3, 4)), rng.standard_normal(3), bug

    def forward(self, x):
        return self.w @ x + self.b

    def backward(self, _e):
        return self.w.T @ _e

    def gradient(self, z_down, _e):
        dw = self._outer(_e, z_down)  # a helper of its own: not a numerical gradient
        return dw, (0.5 * _e if self.bug == "db-half" else _e)

    def _outer(self, a, b):
        return np.outer(a, b) if self.bug != "dw-transposed-in" else np.outer(a, b[::-1])

    def gradient_descent(self, _dw, _db):
        self.w -= _dw
        self.b -= _db


@pytest.mark.parametrize("bug, failing", [("", None), ("db-half", ["b"]),
                                          ("dw-transposed-in", ["w"])])
def test_a_gradient_method_given_the_forward_input_again(bug, failing):
    x = np.random.default_rng(44).standard_normal(4)
    res = gradcheck.check_layer(_SplitGradient(bug), x)
    _expect(res, failing)
    assert any("gradient(z_down, _e) completes the backward" in n for n in res.notes), \
        res.notes


class _NumericalGradient(_SplitGradient):
    """``gradient`` runs the forward (a numerical gradient): never the backward's."""

    def gradient(self, z_down, _e):
        w0, dw = self.w.copy(), np.zeros_like(self.w)
        for i in np.ndindex(self.w.shape):
            self.w[i] += 1e-6
            dw[i] = (_e @ self.forward(z_down) - _e @ (w0 @ z_down + self.b)) / 1e-6
            self.w[i] = w0[i]
        return dw, _e


def test_a_gradient_method_that_runs_the_forward_is_not_read():
    x = np.random.default_rng(44).standard_normal(4)
    with pytest.raises(LayerConventionError, match="gradient"):
        gradcheck.check_layer(_NumericalGradient(), x)


# -- private names: self.__w is held as _Dense__w, returned under 'w' -----------------------------
class _Dense:
    """``self.__w``, ``self.__b``; ``backward`` returns ``dx, {'w': dw, 'b': db}``."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(45)
        self.__w, self.__b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug

    def forward(self, x):
        self.x = x
        return x @ self.__w + self.__b

    def backward(self, dout):
        dw = self.x.T @ dout * (2.0 if self.bug == "dw" else 1.0)
        return dout @ self.__w.T, {"w": dw, "b": dout.sum(0)}


@pytest.mark.parametrize("bug, failing", [("", None), ("dw", ["_Dense__w"])])
def test_gradients_keyed_by_a_private_name_as_written(bug, failing):
    x = np.random.default_rng(46).standard_normal((4, 3))
    res = gradcheck.check_layer(_Dense(bug), x)
    _expect(res, failing)
    assert [i.name for i in res.inputs] == ["x0", "_Dense__w", "_Dense__b"], res.report()


# -- parameters that are array subclasses carrying flags: Param(np.ndarray).trainable ------------
class _Param(np.ndarray):
    """An array with ``.trainable`` and ``.gradient`` on it (kept by every copy)."""

    def __new__(cls, values):
        obj = np.asarray(values, dtype=np.float64).view(cls)
        obj.trainable = True
        return obj


class _FlaggedDense:
    """``backward`` reads ``self.W.trainable`` before storing ``self.dW``."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(47)
        self.W, self.bug = _Param(rng.standard_normal((3, 2))), bug

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        if self.W.trainable:
            self.dW = np.asarray(self.x.T @ dout) * (1.5 if self.bug == "dW" else 1.0)
        return np.asarray(dout @ self.W.T)


@pytest.mark.parametrize("bug, failing", [("", None), ("dW", ["W"])])
def test_parameters_that_are_array_subclasses_keep_their_attributes(bug, failing):
    x = np.random.default_rng(48).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_FlaggedDense(bug), x), failing)


# -- a function pair's backward returning a dataclass of gradients -----------------------------
@dataclasses.dataclass
class _Grads:
    dX: np.ndarray
    dW: np.ndarray | None = None
    db: np.ndarray | None = None


def _ln_forward(x, gamma, beta):
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    xh = (x - mu) / np.sqrt(var + 1e-5)
    return xh * gamma + beta, (xh, var, gamma)


def _ln_backward(bug=""):
    def backward(dout, cache):
        xh, var, gamma = cache
        d = dout.shape[1]
        dxh = dout * gamma
        dx = (d * dxh - dxh.sum(1, keepdims=True) - xh * (dxh * xh).sum(1, keepdims=True)) / (
            d * np.sqrt(var + 1e-5))
        dbeta = dout.mean(0) if bug == "dbeta-mean" else dout.sum(0)
        return _Grads(dx, (dout * xh).sum(0), dbeta)
    return backward


@pytest.mark.parametrize("bug, failing", [("", None), ("dbeta-mean", ["beta"])])
def test_a_dataclass_of_gradients_is_read_field_by_field(bug, failing):
    rng = np.random.default_rng(49)
    res = gradcheck.check_vjp(_ln_forward, _ln_backward(bug), [
        rng.standard_normal((4, 5)), rng.standard_normal(5), rng.standard_normal(5)])
    _expect(res, failing)
    assert any("returned a _Grads" in n for n in res.notes), res.notes


def _tanh_forward(x):
    y = np.tanh(x)
    return y, y


def _tanh_backward(dout, y):
    return _Grads(dout * (1 - y ** 2))  # dW, db left None: one input


def test_a_dataclass_with_fields_left_none_past_the_inputs():
    x = np.random.default_rng(50).standard_normal((3, 4))
    _expect(gradcheck.check_vjp(_tanh_forward, _tanh_backward, [x]), None)


def _mm_forward(x, w):
    return x @ w, (x, w)


def _mm_backward_reversed(dout, cache):
    x, w = cache
    return x.T @ dout, dout @ w.T  # (dw, dx) for inputs (x, w)


def test_gradients_in_another_order_than_the_inputs_are_no_verdict():
    rng = np.random.default_rng(51)
    res = gradcheck.check_vjp(_mm_forward, _mm_backward_reversed,
                              [rng.standard_normal((2, 3)), rng.standard_normal((3, 4))])
    assert res.status == "bad-protocol" and "another order" in res.message, res.report()


# -- gradients kept in a dict the layer holds, under names of their own: gradients['dLdW'] ---------
class _DictKept:
    """``self.gradients['dLdW']``, ``['dLdb']`` for ``weights``, ``bias``."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(52)
        self.weights, self.bias = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self.cache, self.gradients, self.bug = {}, {}, bug

    def forward(self, x):
        self.cache["x"] = x
        return x @ self.weights + self.bias

    def backward(self, dLdY):
        x = self.cache["x"]
        self.gradients["dLdW"] = x.T @ dLdY / (len(x) if self.bug == "dW-mean" else 1)
        self.gradients["dLdb"] = dLdY.sum(0)
        self.gradients["dLdX"] = dLdY @ self.weights.T
        return self.gradients["dLdX"]


@pytest.mark.parametrize("bug, failing", [("", None), ("dW-mean", ["weights"])])
def test_gradients_in_a_dict_the_layer_holds_are_matched_by_shape(bug, failing):
    x = np.random.default_rng(53).standard_normal((5, 4))
    res = gradcheck.check_layer(_DictKept(bug), x)
    _expect(res, failing)
    assert any("gradients['dLdW'] (the only array stored of its shape)" in n
               for n in res.notes), res.notes


# -- a backward affine in the output gradient: a stray constant is a gradient bug ----------------
class _Leaky:
    def __init__(self, bug: str = ""):
        self.alpha, self.bug = 0.1, bug

    def forward(self, x):
        self.x = x
        return np.where(x > 0, x, self.alpha * x)

    def backward(self, grad):
        return np.where(self.x > 0, grad, self.alpha if self.bug else self.alpha * grad)


@pytest.mark.parametrize("bug, failing", [("", None), ("alpha", ["x0"])])
def test_a_backward_with_a_constant_term_is_checked(bug, failing):
    x = np.random.default_rng(54).standard_normal((3, 4)) + 0.05
    _expect(gradcheck.check_layer(_Leaky(bug), x), failing)


class _L2InGradient:
    """nnfs style: the backward stores ``dinputs`` and a ``dweights`` with an L2 term the
    forward never adds (a bug: the stored gradient is affine in the output gradient)."""

    def __init__(self, l2: float = 0.0):
        rng = np.random.default_rng(55)
        self.weights, self.l2 = rng.standard_normal((3, 2)), l2

    def forward(self, inputs):
        self.inputs = inputs
        self.output = inputs @ self.weights
        return self.output

    def backward(self, dvalues):
        self.dweights = self.inputs.T @ dvalues + 2 * self.l2 * self.weights
        self.dinputs = dvalues @ self.weights.T


@pytest.mark.parametrize("l2, failing", [(0.0, None), (0.1, ["weights"])])
def test_a_stored_parameter_gradient_with_a_constant_term_is_checked(l2, failing):
    x = np.random.default_rng(56).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_L2InGradient(l2), x), failing)


# -- a loss handing its prediction back: forward(y_true, y_pred) -> (loss, y_pred) -----------------
class _HandedBack:
    def __init__(self, bug: str = ""):
        self.bug = bug

    def forward(self, y_true, y_pred):
        return np.mean((y_true - y_pred) ** 2), y_pred

    def backward(self, y_true, y_pred):
        return (1 if self.bug else 2) * (y_pred - y_true) / y_true.size


@pytest.mark.parametrize("bug, failing", [("", None), ("no-2", ["x1"])])
def test_a_loss_handing_its_prediction_back_is_read_for_it(bug, failing):
    rng = np.random.default_rng(57)
    res = gradcheck.check_layer(_HandedBack(bug), rng.standard_normal((5, 2)),
                                rng.standard_normal((5, 2)))
    _expect(res, failing)
    assert any("the one float scalar, part 0, is the loss" in n for n in res.notes), res.notes


# -- backward(prev_g, prev_h): the input, not the output, makes gradients of W's shape --
class _PrevH:
    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(58)
        self.W, self.b, self.bug = rng.standard_normal((3, 4)), rng.standard_normal((3, 1)), bug

    def __call__(self, x):
        self.z = np.einsum("ij,bjk->bik", self.W, x) + self.b
        self.h = 1 / (1 + np.exp(-self.z))
        return self.h

    def backward(self, prev_g, prev_h):
        g = prev_g if self.bug else prev_g * self.h * (1 - self.h)
        dW = np.einsum("bij,bkj->ik", g, prev_h)
        return dW, g.sum(0), np.einsum("ij,bik->bjk", self.W, g)


@pytest.mark.parametrize("bug, failing", [("", None), ("no-sigmoid'", ["x0", "W", "b"])])
def test_a_backward_taking_the_input_again_under_its_own_name(bug, failing):
    x = np.random.default_rng(59).standard_normal((2, 4, 1))
    _expect(gradcheck.check_layer(_PrevH(bug), x), failing)


# -- check_loss: one-hot labels have no gradient among what the loss returns ----------------------
def _sce(logits, y_onehot, bug=""):
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    n = len(logits)
    return -np.sum(y_onehot * np.log(p)) / n, p, (p - y_onehot) / (1 if bug else n)


@pytest.mark.parametrize("bug", ["", "no-1/n"])
def test_a_loss_returning_probabilities_beside_its_gradient_is_no_verdict(bug):
    logits = np.random.default_rng(60).standard_normal((5, 4))
    y = np.eye(4)[[0, 3, 1, 2, 2]]
    res = gradcheck.check_loss(lambda a, b: _sce(a, b, bug), logits, y)
    assert res.status == "bad-protocol" and "cannot be told" in res.message, res.report()


# -- a function pair without a cache, the output gradient first: tanh_backward(dA, Z) -------------
def _tanh_act(z):
    return np.tanh(z)


def _tanh_dA(dA, Z):
    return dA * (1 - np.tanh(Z) ** 2)


def _tanh_dA_broken(dA, Z):
    return dA * (1 - np.tanh(Z))


@pytest.mark.parametrize("bwd, failing", [(_tanh_dA, None), (_tanh_dA_broken, ["z"])])
def test_a_backward_taking_the_gradient_then_the_inputs_again(bwd, failing):
    x = np.random.default_rng(61).standard_normal((3, 4))
    res = gradcheck.check_vjp(_tanh_act, bwd, [x])
    _expect(res, failing)
    assert any("the output gradient, then the forward's inputs again" in n
               for n in res.notes), res.notes


# -- a float scalar the backward steps with its arrays: GIN's learnable eps ------------------------
class _Gin:
    """``backward(g, lr)`` steps ``W`` and the float ``eps``; ``self.decay`` shrinks the
    step size it keeps for later (a float that changes, but as no parameter)."""

    def __init__(self, bug: str = ""):
        self.W, self.eps, self.bug = np.random.default_rng(62).standard_normal((3, 2)), 0.3, bug
        self.decay = 1.0

    def forward(self, H, A):
        self.H, self.A = H, A
        self.S = (1 + self.eps) * H + A @ H
        return self.S @ self.W

    def backward(self, g, lr):
        gS = g @ self.W.T
        gW = self.S.T @ g
        gH = (1 + self.eps) * gS + self.A.T @ gS
        grad_eps = np.sum(gS * self.H) * (-1 if self.bug == "eps-sign" else 1)
        self.eps -= lr * grad_eps
        self.W -= lr * gW
        self.decay *= 0.99
        return gH


@pytest.mark.parametrize("bug, failing", [("", None), ("eps-sign", ["eps"])])
def test_a_float_scalar_stepped_with_the_arrays_is_checked(bug, failing):
    H = np.random.default_rng(63).standard_normal((3, 3))
    A = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]])
    res = gradcheck.check_layer(_Gin(bug), H, A)
    _expect(res, failing)
    assert "eps" in [i.name for i in res.inputs] and "decay" not in [
        i.name for i in res.inputs], res.report()


# -- from the review of this batch -------------------------------------------------------------
class _NumericalViaHelper:
    """``backward`` returns dx only; ``numerical_grads(dout, x)`` differences the
    forward's own helper ``_affine``: a numerical gradient, never read as the backward's."""

    def __init__(self):
        rng = np.random.default_rng(64)
        self.W, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)

    def _affine(self, x):
        return x @ self.W + self.b

    def forward(self, x):
        return self._affine(x)

    def backward(self, dout):
        return dout @ self.W.T

    def numerical_grads(self, dout, x):
        grads = []
        for a in (self.W, self.b):
            g = np.zeros_like(a)
            for i in np.ndindex(a.shape):
                a[i] += 1e-6
                up = np.sum(dout * self._affine(x))
                a[i] -= 2e-6
                g[i] = (up - np.sum(dout * self._affine(x))) / 2e-6
                a[i] += 1e-6
            grads.append(g)
        return grads


def test_a_gradient_method_running_a_helper_of_the_forward_is_not_read():
    x = np.random.default_rng(65).standard_normal((4, 3))
    with pytest.raises(LayerConventionError):
        gradcheck.check_layer(_NumericalViaHelper(), x)


@dataclasses.dataclass
class _NamedGrads:
    dw: np.ndarray
    dx: np.ndarray


def _mm_named(bug=""):
    def backward(dout, cache):
        x, w = cache
        return _NamedGrads(x.T @ dout * (2.0 if bug else 1.0), dout @ w.T)
    return backward


@pytest.mark.parametrize("bug, failing", [("", None), ("dw", ["w"])])
def test_dataclass_fields_named_for_the_inputs_are_read_by_name(bug, failing):
    rng = np.random.default_rng(66)  # square: shapes cannot say which is which
    res = gradcheck.check_vjp(_mm_forward_xw, _mm_named(bug),
                              [rng.standard_normal((3, 3)), rng.standard_normal((3, 3))])
    _expect(res, failing)


def _mm_forward_xw(x, w):
    return x @ w, (x, w)


@dataclasses.dataclass
class _GradsExtra:
    dX: np.ndarray
    dW: np.ndarray
    loss_scale: float = 1.0


def test_a_dataclass_with_a_field_set_past_the_inputs_is_no_verdict():
    rng = np.random.default_rng(67)

    def backward(dout, cache):
        x, w = cache
        return _GradsExtra(dout @ w.T, x.T @ dout)
    res = gradcheck.check_vjp(_mm_forward, backward,
                              [rng.standard_normal((2, 3)), rng.standard_normal((3, 4))])
    assert res.status == "bad-protocol" and "loss_scale" in res.message, res.report()


class _CacheSum:
    """The backward stores ``dW`` and keeps ``cache['dout_sum']`` (equal to ``db``, which
    it never computes): a cache is no gradient store."""

    def __init__(self):
        rng = np.random.default_rng(68)
        self.W, self.b, self.cache = rng.standard_normal((3, 2)), rng.standard_normal(2), {}

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        self.dW = self.x.T @ dout
        self.cache["dout_sum"] = dout.sum(0)
        return dout @ self.W.T


def test_an_array_in_a_cache_dict_is_no_gradient():
    x = np.random.default_rng(69).standard_normal((4, 3))
    with pytest.raises(LayerConventionError, match="b"):
        gradcheck.check_layer(_CacheSum(), x)


class _HandsLabelsBack:
    """A binary cross-entropy ``forward(y_pred, y_true)`` returning ``(loss, y_true)``:
    labels handed back are the targets, not the prediction."""

    def __init__(self, bug: str = ""):
        self.bug = bug

    def forward(self, y_pred, y_true):
        loss = -np.mean(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred))
        return loss, y_true

    def backward(self, y_pred, y_true):
        g = (y_pred - y_true) / (y_pred * (1 - y_pred)) / y_pred.size
        return -g if self.bug else g


@pytest.mark.parametrize("bug, failing", [("", None), ("sign", ["x0"])])
def test_labels_handed_back_are_no_prediction(bug, failing):
    rng = np.random.default_rng(70)
    p = rng.uniform(0.2, 0.8, (4, 3))
    y = (rng.random((4, 3)) > 0.5).astype(float)
    _expect(gradcheck.check_layer(_HandsLabelsBack(bug), p, y), failing)


class _Tagged(np.ndarray):
    """``__array_finalize__`` sets ``.tag`` on every view and copy; ``.trainable`` is set
    on the parameter alone."""

    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", "param")


class _TaggedLayer(_FlaggedDense):
    def __init__(self, bug: str = ""):
        super().__init__(bug)
        self.W = np.random.default_rng(71).standard_normal((3, 2)).view(_Tagged)
        self.W.trainable = True


@pytest.mark.parametrize("bug, failing", [("", None), ("dW", ["W"])])
def test_subclass_attributes_are_kept_beside_those_its_finalizer_sets(bug, failing):
    x = np.random.default_rng(72).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_TaggedLayer(bug), x), failing)


def _loss_weighted(x, w, bug=""):
    """``sum(w * x ** 2)`` with 0/1 weights of another shape than ``x``: weights, not
    labels, and their gradient is returned."""
    loss = np.sum(w * x ** 2)
    return loss, 2 * w * x * (0.5 if bug else 1.0), np.sum(x ** 2, axis=0)


@pytest.mark.parametrize("bug, failing", [("", None), ("dx", ["x0"])])
def test_zero_one_weights_of_another_shape_keep_their_gradient(bug, failing):
    x = np.random.default_rng(73).standard_normal((4, 3))
    w = np.array([1.0, 0.0, 1.0])
    _expect(gradcheck.check_loss(lambda a, b: _loss_weighted(a, b, bug), x, w), failing)


# -- from corpus 58: flags read as step sizes, parameter objects stepped in place ----------------
class _FirstLayerFlag:
    """``backward(dout, is_first_layer)`` returning None when the flag is set: a flag,
    no step size (0 makes it return the input gradient)."""

    def __init__(self, bug: str = ""):
        self.w, self.bug = np.array([1.5, -0.7, 0.3]), bug

    def forward(self, x):
        self.x = x
        return x * self.w

    def backward(self, dout, is_first_layer):
        self.dw = (dout * self.x).sum(0)
        if is_first_layer:
            return None
        return dout * self.w * (2.0 if self.bug else 1.0)


@pytest.mark.parametrize("bug", ["", "dx"])
def test_a_flag_that_skips_the_input_gradient_is_no_step_size(bug):
    x = np.random.default_rng(74).standard_normal((4, 3))
    res = gradcheck.check_layer(_FirstLayerFlag(bug), x)
    assert not res.passed, res.report()  # never read as a first layer with x0 unchecked


class _Box:
    """A parameter object: ``.data`` and ``.grad``."""

    def __init__(self, a):
        self.data, self.grad = a, None


class _BoxStepped:
    """``backward(eta, lr)`` steps ``self.w.data`` in place and keeps the input gradient
    in ``self.w.grad`` (its author's use of the field)."""

    def __init__(self, bug: str = ""):
        self.w, self.bug = _Box(np.random.default_rng(75).standard_normal((3, 2))), bug

    def forward(self, x):
        self.x = x
        return x @ self.w.data

    def backward(self, eta, lr):
        self.w.grad = eta @ self.w.data.T
        step = self.x.T @ eta / (len(self.x) if self.bug else 1)
        self.w.data -= lr * step
        return self.w.grad


@pytest.mark.parametrize("bug, failing", [("", None), ("1/N", ["w"])])
def test_a_parameter_object_stepped_in_place_is_read_by_its_step(bug, failing):
    x = np.random.default_rng(76).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_BoxStepped(bug), x), failing)


# -- a step-named backward whose change is affine in its argument stays no backward --------------
class _DecayingStep:
    """``backward(alpha=1e-5, weight_decay=4e-4)`` decays the bias by ``alpha * bias``
    (a change affine in what it is given, no input gradient); ``gradient(eta)`` is the
    backward, storing ``w_gradient`` and ``b_gradient``."""

    def __init__(self, bug: bool = False):
        rng = np.random.default_rng(77)
        self.weights, self.bias, self.bug = rng.standard_normal((6, 3)), rng.standard_normal(3), bug
        self.w_gradient, self.b_gradient = np.zeros((6, 3)), np.zeros(3)

    def forward(self, x):
        self.x = x.flatten()
        return self.x @ self.weights + self.bias

    def gradient(self, eta):
        self.w_gradient += np.outer(self.x, eta)
        self.b_gradient += eta
        return (eta @ self.weights.T * (-1.0 if self.bug else 1.0)).reshape(2, 3)

    def backward(self, alpha=0.00001, weight_decay=0.0004):
        self.weights *= 1 - weight_decay
        self.bias *= 1 - weight_decay
        self.weights -= alpha * self.w_gradient
        self.bias -= alpha * self.bias
        self.w_gradient, self.b_gradient = np.zeros((6, 3)), np.zeros(3)


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["x0"])])
def test_a_step_backward_affine_in_its_argument_is_replaced_by_the_gradient(bug, failing):
    x = np.random.default_rng(78).standard_normal((2, 3))
    _expect(gradcheck.check_layer(_DecayingStep(bug), x), failing)


# -- a parameter dict holding a setting beside its arrays: attn = {"n_heads": 2, "Wq": ...} -------
def _attn_forward(x, attn):
    h = x @ attn["Wq"]
    return h @ attn["Wo"], (x, h)


def _attn_backward(bug=""):
    def backward(dy, cache, attn):
        x, h = cache
        d_h = dy @ attn["Wo"].T
        d_wo = h.T @ dy
        return d_h @ attn["Wq"].T, {"Wq": x.T @ d_h, "Wo": d_wo.T if bug else d_wo}
    return backward


@pytest.mark.parametrize("bug, failing", [("", None), ("Wo-transposed", ["attn['Wo']"])])
def test_a_parameter_dict_with_a_setting_is_checked_where_gradients_come_back(bug, failing):
    rng = np.random.default_rng(79)
    attn = {"n_heads": 2, "Wq": rng.standard_normal((4, 4)), "Wo": rng.standard_normal((4, 4))}
    res = gradcheck.check_vjp(_attn_forward, _attn_backward(bug),
                              [rng.standard_normal((3, 4)), attn])
    _expect(res, failing)
    assert {"attn['Wq']", "attn['Wo']"} <= {i.name for i in res.inputs}, res.report()


# -- check_grad's point of several arrays: a part's gradient (4,) for (1, 4) ---------------------
def _two_layer(point, bug=""):
    W, b = point
    x = np.random.default_rng(80).standard_normal((5, 3))

    def f(p):
        return float(np.sum(np.tanh(x @ p[0] + p[1]) ** 2))

    def grad(p):
        a = np.tanh(x @ p[0] + p[1])
        dz = 2 * a * (1 - a ** 2)
        return [x.T @ dz, dz.sum(0) * (0.5 if bug else 1.0)]  # db (4,) for b (1, 4)
    return f, grad


@pytest.mark.parametrize("bug, failing", [("", None), ("db", ["p[1]"])])
def test_check_grad_parts_differing_by_size_one_axes_are_reshaped(bug, failing):
    rng = np.random.default_rng(81)
    point = [rng.standard_normal((3, 4)), rng.standard_normal((1, 4))]
    f, grad = _two_layer(point, bug)
    res = gradcheck.check_grad(f, grad, point)
    _expect(res, failing)


def _block_forward(x, block):
    return _attn_forward(x, block["attn"])


def _block_backward(bug=""):
    inner = _attn_backward(bug)

    def backward(dy, cache, block):
        dx, g = inner(dy, cache, block["attn"])
        return dx, {"attn": g}
    return backward


@pytest.mark.parametrize("bug, failing", [("", None), ("Wo-transposed", ["block['attn']['Wo']"])])
def test_a_nested_parameter_dict_with_a_setting_is_checked_too(bug, failing):
    rng = np.random.default_rng(82)
    block = {"attn": {"n_heads": 2, "Wq": rng.standard_normal((4, 4)),
                      "Wo": rng.standard_normal((4, 4))}}
    res = gradcheck.check_vjp(_block_forward, _block_backward(bug),
                              [rng.standard_normal((3, 4)), block])
    _expect(res, failing)


# -- from corpus 55: a first layer returning its kernel's gradient; a backward needing dout != 0
class _FirstConv:
    """``backward`` stores ``self.grad`` (the kernel's gradient) and returns that very
    array: no input gradient (a network's first layer)."""

    def __init__(self, bug: str = ""):
        self.kernel, self.bug = np.random.default_rng(83).standard_normal((2, 2)), bug

    def forward(self, image):
        self.image = image
        h, w = image.shape[0] - 1, image.shape[1] - 1
        return np.array([[np.sum(image[i:i + 2, j:j + 2] * self.kernel) for j in range(w)]
                         for i in range(h)])

    def backward(self, dout):
        self.grad = np.zeros_like(self.kernel)
        for i in range(dout.shape[0]):
            for j in range(dout.shape[1]):
                self.grad += dout[i, j] * self.image[i:i + 2, j:j + 2] * (
                    0.5 if self.bug and i == 0 else 1.0)
        return self.grad


@pytest.mark.parametrize("bug, failing", [("", None), ("row0", ["kernel"])])
def test_a_returned_parameter_gradient_is_no_input_gradient(bug, failing):
    x = np.random.default_rng(84).standard_normal((4, 4))
    res = gradcheck.check_layer(_FirstConv(bug), x)
    _expect(res, failing)
    assert any("x0 held constant" in n for n in res.notes), res.notes


class _NonzeroOnly:
    """A backward that sets ``self.dW`` only inside a loop over the nonzero entries of
    the output gradient (a zero one leaves it unset)."""

    def __init__(self, bug: str = ""):
        self.W, self.bug = np.random.default_rng(85).standard_normal((3, 2)), bug

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        for k in range(dout.shape[1]):
            if np.any(dout[:, k]):
                if not hasattr(self, "dW_acc"):
                    self.dW_acc = np.zeros_like(self.W)
                self.dW_acc[:, k] = self.x.T @ dout[:, k]
        self.dW = self.dW_acc * (2.0 if self.bug else 1.0)
        del self.dW_acc
        return dout @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("dW", ["W"])])
def test_a_backward_raising_for_a_zero_gradient_is_still_read(bug, failing):
    x = np.random.default_rng(86).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_NonzeroOnly(bug), x), failing)


# -- from the second review --------------------------------------------------------------------
class _LogsItsStep(_Gin):
    """Beside its step, the backward logs the step's size in a float the output never
    reads (``self.last_update``): no parameter."""

    def backward(self, g, lr):
        self.last_update = 0.0 if not hasattr(self, "last_update") else self.last_update
        gH = super().backward(g, lr)
        self.last_update += lr * float(np.abs(self.S.T @ g).sum())
        return gH


@pytest.mark.parametrize("bug, failing", [("", None), ("eps-sign", ["eps"])])
def test_a_float_logging_the_step_is_no_parameter(bug, failing):
    H = np.random.default_rng(87).standard_normal((3, 3))
    A = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]])
    layer = _LogsItsStep(bug)
    layer.last_update = 0.0
    res = gradcheck.check_layer(layer, H, A)
    _expect(res, failing)
    assert "last_update" not in [i.name for i in res.inputs], res.report()


class _ForgotDx:
    """A middle layer whose backward returns its weight's gradient, of the input's shape,
    instead of the input's (or a first layer returning its ``dw``: the same code)."""

    def __init__(self):
        self.w = np.random.default_rng(88).standard_normal((4, 3))

    def forward(self, x):
        self.x = x
        return x * self.w

    def backward(self, g):
        self.dw = g * self.x
        return self.dw


def test_a_returned_parameter_gradient_of_the_inputs_shape_is_no_verdict():
    """A forgotten dx and a first layer's dw look alike: never a pass, never a verdict on
    x0 that a correct first layer would get."""
    x = np.random.default_rng(89).standard_normal((4, 3))
    res = gradcheck.check_layer(_ForgotDx(), x)
    assert res.status == "bad-protocol" and "forgotten" in res.message, res.report()


def _attn_backward_keys(bug="", drop=""):
    def backward(dy, cache, attn):
        dx, g = _attn_backward(bug)(dy, cache, attn)
        return dx, {k: v for k, v in g.items() if k != drop}
    return backward


@pytest.mark.parametrize("bug, drop, failing", [("Wo-transposed", "", ["attn['Wo']"]),
                                                 ("", "Wo", ["attn['Wo']"])])
def test_a_settings_dict_whose_gradients_are_partly_wrong_or_missing_fails(bug, drop, failing):
    rng = np.random.default_rng(90)
    attn = {"n_heads": 2, "Wq": rng.standard_normal((4, 4)), "Wo": rng.standard_normal((4, 4))}
    res = gradcheck.check_vjp(_attn_forward, _attn_backward_keys(bug, drop),
                              [rng.standard_normal((3, 4)), attn])
    _expect(res, failing)


def test_the_settings_probe_leaves_the_global_generator_as_it_was():
    rng = np.random.default_rng(91)
    attn = {"n_heads": 2, "Wq": rng.standard_normal((4, 4)), "Wo": rng.standard_normal((4, 4))}

    def forward(x, a):  # draws from the user's global generator
        return _attn_forward(x + 0 * np.random.rand(*x.shape), a)  # noqa: NPY002
    np.random.seed(5)  # noqa: NPY002 - the user's global state
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    gradcheck.check_vjp(forward, _attn_backward(), [rng.standard_normal((3, 4)), attn])
    assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002


class _SharedActivation:
    """``gradient(z_down, _e)`` recomputes the forward's activation helper once: the
    backward's own work, no numerical gradient."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(92)
        self.w, self.b, self.bug = rng.standard_normal((3, 4)), rng.standard_normal(3), bug

    def _act(self, z):
        return 1 / (1 + np.exp(-z))

    def forward(self, x):
        self.z = self.w @ x + self.b
        return self._act(self.z)

    def backward(self, _e):
        s = self._act(self.z)
        return self.w.T @ (_e * s * (1 - s))

    def gradient(self, z_down, _e):
        s = self._act(self.z)
        dz = _e * s * (1 - s)
        return np.outer(dz, z_down) * (2.0 if self.bug else 1.0), dz


@pytest.mark.parametrize("bug, failing", [("", None), ("dw", ["w"])])
def test_a_gradient_method_recomputing_the_activation_once_is_read(bug, failing):
    x = np.random.default_rng(93).standard_normal(4)
    _expect(gradcheck.check_layer(_SharedActivation(bug), x), failing)


# -- from corpora 59-62 -------------------------------------------------------------------------
class _GivenItself:
    """``backward(X, layer, V)``: the caller hands the layer itself (it reads ``layer.A``);
    the layer also lists itself, ``self.layers = [self]``."""

    def __init__(self, bug: str = ""):
        self.W, self.bug = np.random.default_rng(94).standard_normal((3, 2)), bug
        self.layers = [self]

    def forward(self, X):
        self.A = np.tanh(X @ self.W)
        return self.A

    def backward(self, X, layer, V):
        d = V * (1 - layer.A ** 2)
        self.dW = X.T @ d * (2.0 if self.bug else 1.0)
        return d @ layer.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("dW", ["W"])])
def test_a_backward_given_the_layer_itself(bug, failing):
    x = np.random.default_rng(95).standard_normal((4, 3))
    res = gradcheck.check_layer(_GivenItself(bug), x)
    _expect(res, failing)
    assert [i.name for i in res.inputs] == ["x0", "W"], res.report()


class _WrappedLoss:
    """``compute``/``prime`` wrap ``mse``/``mse_prime`` (leogaudin's loss objects): never
    a forward ``prime`` paired with a backward ``mse_prime``."""

    def __init__(self, bug: str = ""):
        self.loss, self.loss_prime, self.bug = self.mse, self.mse_prime, bug

    def compute(self, y_pred, y_true):
        return self.loss(y_pred, y_true)

    def prime(self, y_pred, y_true):
        return self.loss_prime(y_pred, y_true)

    def mse(self, y_pred, y_true):
        return np.mean((y_true - y_pred) ** 2)

    def mse_prime(self, y_pred, y_true):
        return (1 if self.bug else 2) * (y_pred - y_true) / y_pred.size


@pytest.mark.parametrize("bug, failing", [("", None), ("no-2", ["x0"])])
def test_loss_wrappers_alike_are_one_reading(bug, failing):
    rng = np.random.default_rng(96)
    _expect(gradcheck.check_layer(_WrappedLoss(bug), rng.standard_normal((4, 3)),
                                  rng.standard_normal((4, 3))), failing)


def test_output_names_one_place():
    class Two:
        def forward(self, x):
            self.a, self.b = 2 * x, 3 * x

        def backward(self, d):
            return d
    with pytest.raises(TypeError, match="output= must be one name"):
        gradcheck.check_layer(Two(), np.ones(3), output=["a", "b"])


class _PrevLayer:
    """``backward(grad, prev_layer)`` reading ``prev_layer.output`` (its input, from the
    layer before): the layer itself is never given for it."""

    def __init__(self):
        self.W = np.random.default_rng(97).standard_normal((3, 3))

    def forward(self, x):
        self.x, self.output = x, x @ self.W
        return self.output

    def backward(self, grad, prev_layer):
        self.dW = prev_layer.output.T @ grad
        return grad @ self.W.T


def test_a_backward_taking_another_layer_gets_no_verdict():
    x = np.random.default_rng(98).standard_normal((4, 3))
    res = gradcheck.check_layer(_PrevLayer(), x)
    assert res.status in ("error", "bad-protocol"), res.report()


@pytest.mark.parametrize("wrt", [2.5, [0, 1.5], {"x0"}])
def test_wrt_of_the_wrong_kind_is_a_clear_type_error(wrt):
    with pytest.raises(TypeError, match="wrt= takes"):
        gradcheck.check_layer(_ForgotDx(), np.ones((4, 3)), wrt=wrt)


# -- from corpus 64: parameters rebuilt by the first forward --------------------------------------
class _LazyGain:
    """``forward`` rebuilds ``g`` (ones, for the input's shape) on its first call: a
    perturbation of the old ``g`` would be thrown away."""

    def __init__(self, n: int, bug: str = ""):
        self.n, self.shape, self.bug = n, None, bug
        self.g = np.ones(n)

    def forward(self, x):
        if self.shape is None:
            self.shape = x.shape[1:]
            self.g = np.ones(self.n) * 1.5
        self.x = x
        return x * self.g

    def backward(self, dout):
        self.grad_g = (dout * self.x).sum(axis=0) * (0.5 if self.bug else 1.0)
        return dout * self.g


@pytest.mark.parametrize("bug, failing", [("", None), ("g", ["g"])])
def test_parameters_rebuilt_by_the_first_forward_start_from_a_copy_that_ran(bug, failing):
    x = np.random.default_rng(99).standard_normal((4, 3))
    res = gradcheck.check_layer(_LazyGain(3, bug), x)
    _expect(res, failing)
    assert any("builds arrays on its first forward" in n for n in res.notes), res.notes


# -- from corpora 63 and 65: an input rounded to float32 inside a float64 layer -------------------
class _Float32Inside:
    """``y = float32(x) @ W + b`` with float64 ``W``, ``b``: the output moves in float32's
    steps as ``x`` moves."""

    def __init__(self, scale: float = 1.0):
        rng = np.random.default_rng(100)
        self.W, self.b, self.scale = rng.standard_normal((4, 3)), rng.standard_normal(3), scale

    def forward(self, x):
        self.x = np.asarray(x, np.float32)
        return self.x @ self.W + self.b

    def backward(self, dout):
        self.dW, self.db = self.x.T @ dout, dout.sum(axis=0)
        return dout @ self.W.T * self.scale


@pytest.mark.parametrize("representable", [False, True])
@pytest.mark.parametrize("scale, failing", [(1.0, None), (0.9, ["x0"])])
def test_an_input_rounded_to_float32_is_compared_at_float32s_steps(representable, scale,
                                                                      failing):
    x = np.random.default_rng(101).standard_normal((5, 4))
    if representable:  # data loaded as float32: exactly on float32's grid
        x = x.astype(np.float32).astype(np.float64)
    res = gradcheck.check_layer(_Float32Inside(scale), x)
    _expect(res, failing)
    assert all(i.kinks == 0 for i in res.inputs), res.report()
    if failing or not representable:  # (on float32's grid, float64's steps can pass it)
        assert any("rounds x0 to float32" in n for n in res.notes), res.notes


def test_a_float64_layer_is_not_read_as_rounding_to_float32():
    class Dense:
        def __init__(self):
            self.W = np.random.default_rng(102).standard_normal((4, 3))

        def forward(self, x):
            self.x = x
            return x @ self.W

        def backward(self, d):
            self.dW = self.x.T @ d
            return d @ self.W.T
    res = gradcheck.check_layer(Dense(), np.random.default_rng(103).standard_normal((5, 4)))
    assert res.passed and not any("float32" in n for n in res.notes), res.report()


class _ScalarDb:
    """``self.db = np.sum(dout)``: one number for a bias of three (a wrong gradient,
    found by its name: a shape-mismatch, not a missing gradient)."""

    def __init__(self, bug: bool = True):
        rng = np.random.default_rng(104)
        self.w, self.b, self.bug = rng.standard_normal((4, 3)), rng.standard_normal(3), bug

    def forward(self, x):
        self.x = x
        return x @ self.w + self.b

    def backward(self, dout):
        self.dw = self.x.T @ dout
        self.db = np.sum(dout) if self.bug else dout.sum(0)
        return dout @ self.w.T


@pytest.mark.parametrize("bug", [True, False])
def test_a_scalar_stored_as_a_bias_gradient_is_a_shape_mismatch(bug):
    x = np.random.default_rng(105).standard_normal((5, 4))
    res = gradcheck.check_layer(_ScalarDb(bug), x)
    if bug:
        assert res.status == "shape-mismatch" and "stored in db" in res.message, res.report()
    else:
        assert res.passed, res.report()


# -- from corpus 64: a base class's backward stub beside the real one -----------------------------
class _Activation:
    def forward(self, x):
        raise NotImplementedError

    def backward(self, dout):
        pass


class _LogSoftmax(_Activation):
    """``backward`` is the base class's ``pass``; ``jacobian_backward`` the real one."""

    def __init__(self, bug: str = ""):
        self.bug = bug

    def forward(self, x):
        z = x - x.max(axis=1, keepdims=True)
        self.y = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return self.y

    def jacobian_backward(self, dout):
        p = np.exp(self.y)
        return (dout - p * dout.sum(axis=1, keepdims=True)) / (len(dout) if self.bug else 1)


@pytest.mark.parametrize("bug, failing", [("", None), ("1/N", ["x0"])])
def test_a_backward_stub_gives_way_to_the_one_real_backward(bug, failing):
    x = np.random.default_rng(106).standard_normal((4, 5))
    res = gradcheck.check_layer(_LogSoftmax(bug), x)
    _expect(res, failing)
    assert any("does nothing" in n for n in res.notes), res.notes


# -- from the fourth review ----------------------------------------------------------------------
class _Float32InsideOffset(_Float32Inside):
    """The same with a float64 offset of 150 added after: float32's rounding of ``x``
    moves the output by float32's share of ``x @ W``, not of 150."""

    def forward(self, x):
        return super().forward(x) + 150.0


@pytest.mark.parametrize("scale, failing", [(1.0, None), (1.1, ["x0"])])
def test_a_float64_offset_does_not_widen_a_rounded_inputs_tolerance(scale, failing):
    x = np.random.default_rng(107).standard_normal((5, 4))
    _expect(gradcheck.check_layer(_Float32InsideOffset(scale), x), failing)


class _DecayRate:
    """A weight-decay rate ``self.dw = 1e-4`` set once, beside gradients in a dict the
    check cannot name: never read as ``w``'s (misshapen) gradient."""

    def __init__(self):
        self.w, self.dw, self.store = np.random.default_rng(108).standard_normal((3, 2)), 1e-4, {}

    def forward(self, x):
        self.x = x
        return x @ self.w

    def backward(self, d):
        self.store["weight"] = self.x.T @ d
        return d @ self.w.T


def test_a_float_setting_named_like_a_gradient_is_no_gradient():
    x = np.random.default_rng(109).standard_normal((4, 3))
    with pytest.raises(LayerConventionError, match="no gradient was found"):
        gradcheck.check_layer(_DecayRate(), x)


def test_a_float64_offset_does_not_widen_a_rounded_inputs_tolerance_in_a_function_pair():
    W = np.random.default_rng(0).standard_normal((4, 3))
    x = np.random.default_rng(2).standard_normal((2, 4))

    def fwd(x_):
        return np.asarray(x_, np.float32) @ W + 150.0, None

    for err, failing in ((0.0, None), (0.1, ["x_"])):
        res = gradcheck.check_vjp(fwd, lambda d, c, e=err: (d @ W.T * (1 + e),), [x])
        _expect(res, failing)
