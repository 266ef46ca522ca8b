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


def _failing(res: gradcheck.CheckResult) -> list[str]:
    return [i.name for i in res.inputs if not i.passed]


def _expect(res: gradcheck.CheckResult, failing: list[str] | None) -> None:
    """A pass (``failing`` None), or a mismatch in exactly ``failing``."""
    if failing is None:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch" and _failing(res) == failing, res.report()


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
