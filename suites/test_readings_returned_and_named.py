"""Readings of code in conventions met on held-out repositories: a backward taking the
forward's output under the op's name (``tanh_a``), gradients stored under abbreviated
names (``w_grad`` for ``weights``), a layer returning ``(dX, [dW, db], [W, b])``, a list
input ``[x, h]``, ``backprop(dA, Z, *args)``, an element-wise loss of a difference, and a
loss per sample whose backward is the gradient of their mean beside an epsilon guard.
Each reading: a correct subject that passes and a broken twin that fails with a gradient
verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck

RNG_SEED = 7


def _rng(k: int = 0) -> np.random.Generator:
    return np.random.default_rng(RNG_SEED + k)


# -- check_vjp: the output taken under the op's name ----------------------------------------
def tanh_forward(a):
    return np.tanh(a)


def tanh_backward(grad, tanh_a):
    return grad * (1.0 - tanh_a ** 2)


def tanh_backward_wrong(grad, tanh_a):
    return grad * (1.0 + tanh_a ** 2)


def softmax_forward(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_backward(grad, softmax_a, axis):
    return softmax_a * (grad - (grad * softmax_a).sum(axis=axis, keepdims=True))


def softmax_backward_diagonal(grad, softmax_a, axis):
    return softmax_a * (1.0 - softmax_a) * grad


@pytest.mark.parametrize(("fwd", "bwd", "extra", "ok"), [
    (tanh_forward, tanh_backward, (), True),
    (tanh_forward, tanh_backward_wrong, (), False),
    (softmax_forward, softmax_backward, (1,), True),
    (softmax_forward, softmax_backward_diagonal, (1,), False),
])
def test_a_backward_taking_the_output_under_the_op_s_name_gets_the_output(fwd, bwd, extra, ok):
    x = _rng().standard_normal((3, 4))
    res = gradcheck.check_vjp(fwd, bwd, [x, *extra])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("under the op's name" in n for n in res.notes), res.notes


def test_a_name_that_is_an_input_s_own_is_not_read_as_the_output():
    # relu_backward(dout, x) of relu(x): x is the input, whatever the op is called
    def relu_forward(x):
        return np.maximum(x, 0.0)

    def relu_backward(dout, x):
        return dout * (x > 0)

    x = _rng(1).standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5
    res = gradcheck.check_vjp(relu_forward, relu_backward, [x])
    assert res.status == "ok", res.report()
    assert not any("under the op's name" in n for n in res.notes), res.notes


# -- check_vjp: *args after the names ---------------------------------------------------------
class Tanh:
    @staticmethod
    def activate(z):
        return np.tanh(z)

    @staticmethod
    def backprop(da, z, *args):
        return (1.0 - np.tanh(z) ** 2) * (da + sum(args))


class TanhWrong(Tanh):
    @staticmethod
    def backprop(da, z, *args):
        return (1.0 - np.tanh(z)) * (da + sum(args))


@pytest.mark.parametrize(("cls", "ok"), [(Tanh, True), (TanhWrong, False)])
def test_a_backward_with_star_args_after_the_names_is_called_with_none(cls, ok):
    z = _rng(2).standard_normal((3, 4))
    res = gradcheck.check_vjp(cls.activate, cls.backprop, [z])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("*args given nothing" in n for n in res.notes), res.notes


# -- check_vjp: an element-wise loss of a difference ------------------------------------------
def squared_error(y_pred, y_true):
    return (y_pred - y_true) ** 2


def squared_error_backward(grad, y_pred, y_true):
    return grad * 2.0 * (y_pred - y_true)


def squared_error_backward_halved(grad, y_pred, y_true):
    return grad * (y_pred - y_true)


@pytest.mark.parametrize(("bwd", "ok"), [(squared_error_backward, True),
                                         (squared_error_backward_halved, False)])
def test_one_array_for_an_element_wise_loss_of_a_difference_is_the_prediction_s(bwd, ok):
    rng = _rng(3)
    y_pred, y_true = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    res = gradcheck.check_vjp(squared_error, bwd, [y_pred, y_true])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("input 0, the prediction" in n for n in res.notes), res.notes


def test_one_array_for_two_inputs_that_do_not_cancel_stays_a_bad_protocol():
    def product(a, b):
        return a * b

    def product_backward(grad, a, b):
        return grad * b

    rng = _rng(4)
    res = gradcheck.check_vjp(product, product_backward,
                              [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))])
    assert res.status == "bad-protocol", res.report()


# -- check_layer: gradients stored under abbreviated names ------------------------------------
class Dense:
    def __init__(self, rng: np.random.Generator) -> None:
        self.weights = rng.standard_normal((4, 3))
        self.bias = rng.standard_normal(3)
        self.w_grad = np.zeros_like(self.weights)
        self.b_grad = np.zeros_like(self.bias)

    def forward(self, x):
        return x @ self.weights + self.bias

    def backward(self, out_grad, x):
        self.w_grad, self.b_grad = x.T @ out_grad, out_grad.sum(0)
        return out_grad @ self.weights.T


class DenseSwapped(Dense):
    def backward(self, out_grad, x):
        self.b_grad, self.w_grad = x.T @ out_grad, out_grad.sum(0)
        return out_grad @ self.weights.T


def test_abbreviated_gradient_names_pair_with_their_arrays():
    res = gradcheck.check_layer(Dense(_rng(5)), _rng(6).standard_normal((3, 4)))
    assert res.status == "ok", res.report()


def test_gradients_stored_under_each_other_s_abbreviated_names_are_a_shape_mismatch():
    res = gradcheck.check_layer(DenseSwapped(_rng(5)), _rng(6).standard_normal((3, 4)))
    assert res.status == "shape-mismatch", res.report()
    assert "w_grad" in res.message, res.message


# -- check_layer: (y, cache) beside (dX, [dW, db], [W, b]) -----------------------------------
class CachedTanhLayer:
    """forward returns (A, (Z, X)); backward(dA, cache) returns the input's gradient, the
    parameters' gradients and the parameters, in one order."""

    def __init__(self, rng: np.random.Generator, units: int = 3, fan_in: int = 5) -> None:
        self.W = rng.standard_normal((units, fan_in))
        self.b = rng.standard_normal((units, 1))

    def forward(self, X):
        Z = self.W @ X + self.b
        return np.tanh(Z), (Z, X)

    def backward(self, dA, cache):
        Z, X = cache
        dZ = dA * (1.0 - np.tanh(Z) ** 2)
        return self.W.T @ dZ, [dZ @ X.T, dZ.sum(1, keepdims=True)], [self.W, self.b]


class CachedTanhLayerNoBias(CachedTanhLayer):
    def backward(self, dA, cache):
        Z, X = cache
        dZ = dA * (1.0 - np.tanh(Z) ** 2)
        return self.W.T @ dZ, [dZ @ X.T, dA.sum(1, keepdims=True)], [self.W, self.b]


@pytest.mark.parametrize(("cls", "ok"), [(CachedTanhLayer, True),
                                         (CachedTanhLayerNoBias, False)])
def test_a_cache_tuple_beside_the_parameters_returned_after_their_gradients(cls, ok):
    res = gradcheck.check_layer(cls(_rng(7)), _rng(8).standard_normal((5, 4)))
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("(output, cache)" in n for n in res.notes), res.notes


class FourGates:
    """Four gates of one shape each: the gradients' shapes cannot say which is which, the
    parameters returned beside them in the same order can."""

    def __init__(self, rng: np.random.Generator, n: int = 3, d: int = 4) -> None:
        for g in "fico":
            setattr(self, f"W{g}", rng.standard_normal((n, d)))
            setattr(self, f"b{g}", rng.standard_normal((n, 1)))

    def _params(self):
        return [getattr(self, f"{k}{g}") for g in "fico" for k in "Wb"]

    def forward(self, X):
        pre = {g: getattr(self, f"W{g}") @ X + getattr(self, f"b{g}") for g in "fico"}
        A = np.tanh(pre["f"]) * pre["i"] + np.sin(pre["c"]) - 0.5 * pre["o"] ** 2
        return A, (X, pre)

    def backward(self, dA, cache):
        X, pre = cache
        dpre = {"f": dA * pre["i"] * (1.0 - np.tanh(pre["f"]) ** 2),
                "i": dA * np.tanh(pre["f"]), "c": dA * np.cos(pre["c"]),
                "o": -dA * pre["o"]}
        dX = sum(getattr(self, f"W{g}").T @ dpre[g] for g in "fico")
        grads = []
        for g in "fico":
            grads += [self._dW(g, dpre[g], X), dpre[g].sum(1, keepdims=True)]
        return dX, grads, self._params()

    def _dW(self, gate, dp, X):
        return dp @ X.T


class FourGatesCosineSign(FourGates):
    def _dW(self, gate, dp, X):
        return -(dp @ X.T) if gate == "c" else dp @ X.T


@pytest.mark.parametrize(("cls", "ok"), [(FourGates, True), (FourGatesCosineSign, False)])
def test_gradients_of_repeated_shapes_pair_with_the_parameters_returned_beside(cls, ok):
    res = gradcheck.check_layer(cls(_rng(9)), _rng(10).standard_normal((4, 2)))
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    if not ok:
        bad = {i.name for i in res.inputs if not i.passed}
        assert bad == {"Wc"}, res.report()


# -- check_layer: a list input [x, h] and its gradient [dx, dh] -------------------------------
class ListInputCell:
    """forward([x, h]) with h and the recurrent kernel of one shape: the returned list is
    the list input's gradient, not a flat tuple of the parameters'."""

    def __init__(self, rng: np.random.Generator, d: int = 4, units: int = 3) -> None:
        self.kernel = rng.standard_normal((d, units))
        self.recurrent_kernel = rng.standard_normal((units, units))
        self.bias = rng.standard_normal(units)

    def forward(self, inputs):
        x, h = inputs
        return np.tanh(x @ self.kernel + h @ self.recurrent_kernel + self.bias)

    def backward(self, out_grad, inputs):
        x, h = inputs
        t = out_grad * (1.0 - self.forward(inputs) ** 2)
        self.kernel_grad, self.r_kernel_grad, self.b_grad = x.T @ t, h.T @ t, t.sum(0)
        return [t @ self.kernel.T, self._dh(t)]

    def _dh(self, t):
        return t @ self.recurrent_kernel.T


class ListInputCellUntransposed(ListInputCell):
    def _dh(self, t):
        return t @ self.recurrent_kernel


@pytest.mark.parametrize(("cls", "ok"), [(ListInputCell, True),
                                         (ListInputCellUntransposed, False)])
def test_a_returned_list_laid_out_as_a_list_input_is_that_input_s_gradient(cls, ok):
    rng = _rng(11)
    x, h = rng.standard_normal((3, 4)), rng.standard_normal((3, 3))  # batch = units
    res = gradcheck.check_layer(cls(_rng(12)), [x, h])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    bad = {i.name for i in res.inputs if not i.passed}
    assert bad == (set() if ok else {"x0[1]"}), res.report()


# -- check_layer: a loss per sample, the backward the gradient of their mean -----------------
class GuardedSigmoidLoss:
    """forward(t, z) returns one loss per sample (with an epsilon guard); backward()
    returns the gradient of their mean, without the guard."""

    def forward(self, t, z):
        self.t, self.p = t, 1.0 / (1.0 + np.exp(-z))
        return -(t * np.log(self.p + 1e-7) + (1 - t) * np.log(1 - self.p + 1e-7))

    def backward(self):
        return (self.p - self.t) / self.t.shape[0]


class GuardedSigmoidLossSign(GuardedSigmoidLoss):
    def backward(self):
        return (self.t - self.p) / self.t.shape[0]


def test_the_mean_s_gradient_beside_an_epsilon_guard_is_no_verdict_saying_both():
    rng = _rng(13)
    t, z = rng.integers(0, 2, 4), rng.standard_normal(4)
    res = gradcheck.check_layer(GuardedSigmoidLoss(), t, z)
    assert res.status == "bad-protocol", res.report()
    assert "mean" in res.message and "epsilon guard" in res.message, res.message
    broken = gradcheck.check_layer(GuardedSigmoidLossSign(), t, z)
    assert broken.status == "mismatch", broken.report()


# -- review 96: what the readings above must leave alone ---------------------------------------
def test_an_op_named_argument_that_is_an_input_is_that_input():
    def scale_forward(a, scale_a):
        return a * scale_a

    def scale_backward(grad, a, scale_a):
        return grad * scale_a, grad * a

    rng = _rng(14)
    res = gradcheck.check_vjp(scale_forward, scale_backward,
                              [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))])
    assert res.status == "ok", res.report()


def mse_targets_first(y_true, y_pred):
    return (y_true - y_pred) ** 2


def mse_targets_first_backward(grad, y_true, y_pred):
    return grad * 2.0 * (y_pred - y_true)


def mse_targets_first_sign(grad, y_true, y_pred):
    return grad * 2.0 * (y_true - y_pred)


@pytest.mark.parametrize(("bwd", "ok"), [(mse_targets_first_backward, True),
                                         (mse_targets_first_sign, False)])
def test_a_difference_loss_taking_the_targets_first_reads_the_prediction_by_name(bwd, ok):
    rng = _rng(15)
    y_true, y_pred = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    res = gradcheck.check_vjp(mse_targets_first, bwd, [y_true, y_pred])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert [i.status for i in res.inputs][0] == "constant", res.report()


def test_a_difference_loss_whose_names_say_nothing_stays_a_bad_protocol():
    def sq(a, b):
        return (a - b) ** 2

    def sq_backward(grad, a, b):
        return grad * 2.0 * (b - a)  # b's gradient: the sign alone tells, names do not

    rng = _rng(16)
    res = gradcheck.check_vjp(sq, sq_backward,
                              [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))])
    assert res.status == "bad-protocol", res.report()


class FirstLayerOfAPair:
    """forward([x, c]) whose backward returns [dW, db] of the shapes of x and c: the
    parameters' gradients, not the list input's."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.W = rng.standard_normal((3, 4))
        self.b = rng.standard_normal(4)

    def forward(self, inputs):
        x, c = inputs
        self.x = x
        return x @ self.W + self.b + c.sum()

    def backward(self, dout):
        return [self.x.T @ dout, dout.sum(0)]


def test_a_returned_list_that_fits_the_parameters_too_stays_theirs():
    rng = _rng(17)
    res = gradcheck.check_layer(FirstLayerOfAPair(_rng(18)),
                                [rng.standard_normal((3, 3)), rng.standard_normal(4)])
    assert res.status == "ok", res.report()
    assert {i.name for i in res.inputs if i.status == "ok"} >= {"W", "b"}, res.report()


# -- check_layer: no method named as either, an activation's map(Z) and derivative() -------
class MapSigmoid:
    def map(self, Z):
        self._A = 1.0 / (1.0 + np.exp(-Z))
        return self._A

    def derivative(self):
        return self._A * (1.0 - self._A)


class MapSigmoidWrong(MapSigmoid):
    def derivative(self):
        return self._A * (1.0 + self._A)


@pytest.mark.parametrize(("cls", "ok"), [(MapSigmoid, True), (MapSigmoidWrong, False)])
def test_unnamed_methods_an_activation_and_its_derivative_are_found_by_what_they_do(cls, ok):
    res = gradcheck.check_layer(cls(), _rng(19).standard_normal((3, 4)))
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("derivative the one other taking no argument" in n for n in res.notes)


# -- check_layer: parameter objects a first forward builds -------------------------------------
class Param:
    def __init__(self, data):
        self.data = data.astype(np.float32)
        self.grad = np.zeros_like(self.data)


class Registering:
    """A base class keeping every Param assigned to the layer in ``self.params`` (its
    ``__setattr__``), so the layer's own attributes hold none."""

    def __init__(self) -> None:
        object.__setattr__(self, "params", {})

    def __setattr__(self, name, value):
        if isinstance(value, Param):
            self.params[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(name)


class DeferredLinear(Registering):
    def __init__(self, out_features: int) -> None:
        super().__init__()
        self.out_features, self.built = out_features, False

    def forward(self, x):
        if not self.built:
            rng = np.random.default_rng(int(x.shape[-1]))
            self.W = Param(rng.standard_normal((x.shape[-1], self.out_features)))
            self.b = Param(rng.standard_normal(self.out_features))
            self.built = True
        self.x = x
        return x @ self.W.data + self.b.data

    def backward(self, grad_output):
        self.W.grad += self._dW(grad_output)
        self.b.grad += grad_output.sum(axis=0)
        return grad_output @ self.W.data.T

    def _dW(self, grad_output):
        return self.x.T @ grad_output


class DeferredLinearDoubled(DeferredLinear):
    def _dW(self, grad_output):
        return 2.0 * self.x.T @ grad_output


@pytest.mark.parametrize(("cls", "ok"), [(DeferredLinear, True), (DeferredLinearDoubled, False)])
def test_parameter_objects_built_by_the_first_forward_are_checked(cls, ok):
    res = gradcheck.check_layer(cls(4), _rng(20).standard_normal((3, 5)))
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert {i.name for i in res.inputs} == {"x0", "params['W']", "params['b']"}, res.report()
    if not ok:
        assert {i.name for i in res.inputs if not i.passed} == {"params['W']"}, res.report()


# -- check_layer: a singular gradient name for a plural parameter, misshapen ------------------
class Fc:
    def __init__(self, rng: np.random.Generator) -> None:
        self.weights = rng.standard_normal((5, 3))
        self.bias = rng.standard_normal(3)

    def forward(self, x):
        self.x, self.weight_gradient, self.bias_gradient = x, None, None
        return x @ self.weights + self.bias

    def backward(self, dy):
        self.weight_gradient = self._dW(dy)
        self.bias_gradient = dy.sum(0)
        return dy @ self.weights.T

    def _dW(self, dy):
        return self.x.T @ dy


class FcTransposed(Fc):
    def _dW(self, dy):
        return dy.T @ self.x


@pytest.mark.parametrize(("cls", "status"), [(Fc, "ok"), (FcTransposed, "shape-mismatch")])
def test_weight_gradient_of_the_transposed_shape_is_a_shape_mismatch_of_weights(cls, status):
    res = gradcheck.check_layer(cls(_rng(21)), _rng(22).standard_normal((4, 5)))
    assert res.status == status, res.report()
    if status != "ok":
        assert "weight_gradient" in res.message and "transpose" in res.message, res.message


# -- review 97 ------------------------------------------------------------------------------
def test_a_bare_y_beside_a_name_that_is_no_prediction_is_no_target():
    def sq_err(y, y_ref):
        return (y - y_ref) ** 2

    def sq_err_backward(grad, y, y_ref):
        return grad * 2.0 * (y - y_ref)

    rng = _rng(23)
    res = gradcheck.check_vjp(sq_err, sq_err_backward,
                              [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))])
    assert res.status == "bad-protocol", res.report()


@pytest.mark.parametrize(("bwd", "ok"), [
    (lambda grad, y, y_hat: grad * 2.0 * (y_hat - y), True),
    (lambda grad, y, y_hat: grad * 2.0 * (y - y_hat), False),
])
def test_a_bare_y_beside_y_hat_is_the_target(bwd, ok):
    def sq_err(y, y_hat):
        return (y - y_hat) ** 2

    rng = _rng(24)
    res = gradcheck.check_vjp(sq_err, bwd, [rng.standard_normal((3, 4)),
                                            rng.standard_normal((3, 4))])
    assert res.status == ("ok" if ok else "mismatch"), res.report()


class MapAndClassify:
    def map(self, Z):
        self._A = 1.0 / (1.0 + np.exp(-Z))
        return self._A

    def classify(self):
        return (self._A > 0.5).astype(float)


def test_a_method_of_the_output_s_shape_not_named_as_a_derivative_is_no_backward():
    with pytest.raises(TypeError, match="no forward-like method"):
        gradcheck.check_layer(MapAndClassify(), _rng(25).standard_normal((3, 4)))


class EmptyUntilUsed:
    """A parameter object holding an empty array until the first forward fills it."""

    def __init__(self, out: int) -> None:
        self.out = out
        self.W = Param(np.empty((0, out)))
        self.b = Param(np.zeros(out))

    def forward(self, x):
        if self.W.data.size == 0:
            self.W.data = np.random.default_rng(3).standard_normal((x.shape[1], self.out))
        self.x = x
        return x @ self.W.data + self.b.data

    def backward(self, g):
        self.W.grad, self.b.grad = self._dW(g), g.sum(0)
        return g @ self.W.data.T

    def _dW(self, g):
        return self.x.T @ g


class EmptyUntilUsedHalved(EmptyUntilUsed):
    def _dW(self, g):
        return 0.5 * self.x.T @ g


@pytest.mark.parametrize(("cls", "ok"), [(EmptyUntilUsed, True), (EmptyUntilUsedHalved, False)])
def test_an_empty_parameter_the_first_forward_fills_is_checked_at_its_filled_shape(cls, ok):
    res = gradcheck.check_layer(cls(3), _rng(26).standard_normal((4, 5)))
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    if not ok:
        assert {i.name for i in res.inputs if not i.passed} == {"W"}, res.report()


# -- batch H: (out, attention weights), names that say input or output, an affine dW -----------
class TinyAttention:
    """forward(x) returns (out, weights); backward(d_out) takes the first output's gradient
    and loops over the batch (given both gradients it raises in a matmul, not on a
    tuple), storing its parameters' gradients in a dict beside them."""

    def __init__(self, rng: np.random.Generator, d: int = 4, k: int = 5) -> None:
        self.params = {"W_Q": rng.standard_normal((d, k)), "W_V": rng.standard_normal((d, k))}
        self.grads: dict[str, np.ndarray] = {}

    def forward(self, x):
        self.x = x
        self.q, self.v = x @ self.params["W_Q"], x @ self.params["W_V"]
        s = self.q @ self.q.swapaxes(1, 2)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.a = e / e.sum(-1, keepdims=True)
        return self.a @ self.v, self.a

    def backward(self, d_out):
        dx = np.zeros_like(self.x)
        dWq, dWv = np.zeros_like(self.params["W_Q"]), np.zeros_like(self.params["W_V"])
        for i in range(len(d_out)):
            a, q, v, x, dy = self.a[i], self.q[i], self.v[i], self.x[i], d_out[i]
            dv, da = a.T @ dy, dy @ v.T
            ds = a * (da - (da * a).sum(-1, keepdims=True))
            dq = self._dq(ds, q)
            dWq += x.T @ dq
            dWv += x.T @ dv
            dx[i] = dq @ self.params["W_Q"].T + dv @ self.params["W_V"].T
        self.grads = {"W_Q": dWq, "W_V": dWv}
        return dx

    def _dq(self, ds, q):
        return (ds + ds.T) @ q


class TinyAttentionOneSided(TinyAttention):
    def _dq(self, ds, q):
        return ds @ q


@pytest.mark.parametrize(("cls", "ok"), [(TinyAttention, True), (TinyAttentionOneSided, False)])
def test_an_attention_returning_its_weights_beside_its_output_differentiates_the_first(cls, ok):
    res = gradcheck.check_layer(cls(_rng(27)), _rng(28).standard_normal((2, 3, 4)))
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("differentiates the first" in n for n in res.notes), res.notes


def softmax_fn(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def softmax_backward_scores(scores, grad_out):
    p = softmax_fn(scores)
    return p * (grad_out - (grad_out * p).sum(-1, keepdims=True))


def softmax_backward_probs(probs, grad_out):
    return probs * (grad_out - (grad_out * probs).sum(-1, keepdims=True))


def softmax_backward_probs_axis0(probs, grad_out):
    return probs * (grad_out - (grad_out * probs).sum(0, keepdims=True))


@pytest.mark.parametrize(("bwd", "ok"), [(softmax_backward_scores, True),
                                         (softmax_backward_probs, True),
                                         (softmax_backward_probs_axis0, False)])
def test_a_one_input_backward_s_argument_named_as_input_or_output_is_given_that(bwd, ok):
    res = gradcheck.check_vjp(softmax_fn, bwd, [_rng(29).standard_normal((3, 4))])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert any("under names that say so" in n for n in res.notes), res.notes


class PositionalEmbedding:
    """ids -> W[ids] + a fixed encoding; backward stores dW (a new array) and returns
    nothing (the ids take no gradient)."""

    def __init__(self, rng: np.random.Generator, vocab: int = 7, d: int = 4) -> None:
        self.W = rng.standard_normal((vocab, d))
        self.pe = np.sin(np.arange(5)[:, None] / (1.0 + np.arange(d)))

    def forward(self, ids):
        self.ids = ids
        return self.W[ids] + self.pe[: ids.shape[1]]

    def backward(self, d_out):
        self.dW = np.zeros_like(self.W)
        np.add.at(self.dW, self.ids, self._carried(d_out))

    def _carried(self, d_out):
        return d_out


class PositionalEmbeddingAddsEncoding(PositionalEmbedding):
    def _carried(self, d_out):
        return d_out + self.pe[: self.ids.shape[1]]


@pytest.mark.parametrize(("cls", "status"), [(PositionalEmbedding, "ok"),
                                             (PositionalEmbeddingAddsEncoding, "bad-protocol")])
def test_a_stored_gradient_with_a_constant_term_and_no_input_gradient_is_no_verdict(cls, status):
    # an affine dW beside no input gradient reads as a loss's dW = X.T @ (p - t) taking
    # targets as well (review 98): no verdict, never a pass
    ids = _rng(30).integers(0, 7, (2, 5))
    res = gradcheck.check_layer(cls(_rng(31)), ids, wrt=["W"])
    assert res.status == status, res.report()


class SoftmaxRegression:
    """forward(X) returns the logits; backward(t) stores the mean cross-entropy's dW for
    one-hot targets t: a loss's gradient, not a vector-Jacobian product."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.W = rng.standard_normal((5, 3))

    def forward(self, X):
        self.X, self.z = X, X @ self.W
        return self.z

    def backward(self, t):
        self.dW = self.X.T @ (softmax_fn(self.z) - t) / len(self.X)


def test_a_loss_s_dw_taking_targets_is_no_verdict():
    res = gradcheck.check_layer(SoftmaxRegression(_rng(33)), _rng(34).standard_normal((4, 5)))
    assert res.status == "bad-protocol", res.report()


class HiddenAndCell:
    """forward -> (h, c) of one shape; backward takes both gradients as a tuple or h's
    alone, and its c path has a shape bug: raising on the tuple is no evidence that it
    differentiates h alone."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.Wc, self.Wo = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))

    def forward(self, x):
        self.x, self.c = x, np.tanh(x @ self.Wc)
        self.o = 1.0 / (1.0 + np.exp(-x @ self.Wo))
        return self.o * np.tanh(self.c), self.c

    def backward(self, grads):
        dh, dc = grads if isinstance(grads, tuple) else (grads, None)
        dcc = dh * self.o * (1.0 - np.tanh(self.c) ** 2)
        if dc is not None:
            dcc = dcc + dc @ self.Wc  # (N, 3) @ (4, 3): raises
        dzc = dcc * (1.0 - self.c ** 2)
        dzo = dh * np.tanh(self.c) * self.o * (1.0 - self.o)
        self.dWc, self.dWo = self.x.T @ dzc, self.x.T @ dzo
        return dzc @ self.Wc.T + dzo @ self.Wo.T


def test_states_of_one_shape_are_not_read_as_the_first_output_alone_on_any_error():
    res = gradcheck.check_layer(HiddenAndCell(_rng(35)), _rng(36).standard_normal((5, 4)))
    assert res.status == "error", res.report()


class WithAuxiliaryLoss:
    """forward -> (y, aux) with aux a (1,) array whose gradient the backward adds."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.W, self.lam = rng.standard_normal((4, 3)), 0.1

    def forward(self, x):
        self.x = x
        return x @ self.W, np.array([self.lam * (self.W ** 2).sum()])

    def backward(self, dy):
        self.dW = self.x.T @ dy + 2.0 * self.lam * self.W
        return dy @ self.W.T


def test_an_auxiliary_loss_of_size_one_beside_the_output_is_no_verdict():
    res = gradcheck.check_layer(WithAuxiliaryLoss(_rng(37)), _rng(38).standard_normal((5, 4)))
    assert res.status == "bad-protocol", res.report()


# -- check_vjp: a loss and its gradient over a list of weights with a None placeholder ------
def _layers_forward(X, weights):
    a = X
    for W in weights[1:]:
        a = np.tanh(a @ W)
    return a


def layered_error(X, Y, weights, lam):
    err = _layers_forward(X, weights)[:, 0] - Y
    return float((err ** 2).sum() / (2 * len(X)) + lam * sum(
        (W ** 2).sum() for W in weights[1:]))


def _layered_gradients(X, Y, weights, lam, decay):
    acts = [X]
    for W in weights[1:]:
        acts.append(np.tanh(acts[-1] @ W))
    delta = (acts[-1][:, :1] - Y[:, None]) / len(X)
    delta = np.concatenate([delta, np.zeros_like(acts[-1][:, 1:])], axis=1)
    G = [None] * len(weights)
    for k in range(len(weights) - 1, 0, -1):
        d = delta * (1.0 - acts[k] ** 2)
        G[k] = acts[k - 1].T @ d + decay * lam * weights[k]
        delta = d @ weights[k].T
    return G


def layered_gradients(X, Y, weights, lam):
    return _layered_gradients(X, Y, weights, lam, 2.0)


def layered_gradients_half_decay(X, Y, weights, lam):
    return _layered_gradients(X, Y, weights, lam, 1.0)


@pytest.mark.parametrize(("bwd", "ok"), [(layered_gradients, True),
                                         (layered_gradients_half_decay, False)])
def test_a_gradient_list_laid_out_as_a_weights_list_with_a_placeholder(bwd, ok):
    rng = _rng(32)
    X, Y = rng.standard_normal((4, 3)), rng.standard_normal(4)
    weights = [None, rng.standard_normal((3, 4)), rng.standard_normal((4, 2))]
    res = gradcheck.check_vjp(layered_error, bwd, [X, Y, weights, 0.1])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
    assert {i.name for i in res.inputs if i.status in ("ok", "mismatch")} == {
        "weights[1]", "weights[2]"}, res.report()


def test_a_none_input_named_in_wrt_is_still_an_error():
    def f(x, y):
        return x * 2.0, None

    def b(dy, cache):
        return dy * 2.0, None

    with pytest.raises(TypeError, match="dtype object"):
        gradcheck.check_vjp(f, b, [np.ones(3), None], wrt=[1])


# -- batch I: a loss and its gradient named apart in one argument ----------------------------
def cross_entropy(output_a, y):
    return float(-np.sum(y * np.log(output_a)) / len(y))


def cross_entropy_delta(a, y):
    return -y / a / len(y)


def cross_entropy_delta_sign(a, y):
    return y / a / len(y)


@pytest.mark.parametrize(("bwd", "ok"), [(cross_entropy_delta, True),
                                         (cross_entropy_delta_sign, False)])
def test_a_loss_and_gradient_pair_whose_names_differ_by_a_prefix_is_read(bwd, ok):
    rng = _rng(39)
    a = rng.uniform(0.2, 0.9, (4, 3))
    y = np.eye(3)[rng.integers(0, 3, 4)]
    res = gradcheck.check_vjp(cross_entropy, bwd, [a, y])
    assert res.status == ("ok" if ok else "mismatch"), res.report()
