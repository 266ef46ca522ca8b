"""Readings of users' code that must not hide a bug nor fail a correct backward: the
counter-examples an independent review of the observation rules found, each with its
correct form (a verdict that passes) and its broken one (a failure, never a pass)."""

from functools import partial

import numpy as np
import pytest

import gradcheck


def _verdict(res: gradcheck.CheckResult, broken: bool) -> None:
    if broken:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()


# -- several outputs, a backward taking fewer gradients ---------------------------------------
def _step_forward(x, h, c, W):
    z = W @ np.concatenate([x, h])
    c_next = c * np.tanh(z)
    h_next = np.tanh(c_next)
    return h_next, c_next, (x, h, c, W, z, c_next)


def _step_forgets_dc(dh, cache):  # c_next is a recurrent state: its gradient is needed
    x, h, c, W, z, c_next = cache
    dz = dh * (1 - np.tanh(c_next) ** 2) * c * (1 - np.tanh(z) ** 2)
    dxh = W.T @ dz
    return {"dx": dxh[:3], "dh": dxh[3:], "dc": dh * (1 - np.tanh(c_next) ** 2) * np.tanh(z),
            "dW": dz @ np.concatenate([x, h]).T}


def test_a_backward_leaving_out_a_recurrent_states_gradient_never_passes():
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((3, 4)), rng.standard_normal((2, 4)),
              rng.standard_normal((2, 4)), rng.standard_normal((2, 5))]
    res = gradcheck.check_vjp(_step_forward, _step_forgets_dc, inputs)
    assert not res.passed, res.report()
    assert not any("first 1 only" in n for n in res.notes)


def _two_forward(x, W):
    s = x @ W
    return np.tanh(s).sum(axis=1), s, (x, W, s)


def _optional_second(dout, cache, dscores=None):  # wrong sign on the second output's path
    x, W, s = cache
    ds = dout[:, None] * (1 - np.tanh(s) ** 2)
    if dscores is not None:
        ds = ds - dscores
    return ds @ W.T, x.T @ ds


def _second_path_raises(dout, cache):
    x, W, s = cache
    dy, dh = dout if isinstance(dout, tuple) else (dout, None)
    g = dy[:, None] * (1 - np.tanh(s) ** 2)
    if dh is not None:
        g = g + dh @ W  # a shape error: the second output's path is broken
    return g @ W.T, x.T @ g


@pytest.mark.parametrize("bwd", [_optional_second, _second_path_raises])
def test_no_first_outputs_reading_for_a_backward_that_may_take_them_all(bwd):
    rng = np.random.default_rng(4)
    res = gradcheck.check_vjp(_two_forward, bwd,
                              [rng.standard_normal((4, 3)), rng.standard_normal((3, 2))])
    assert not res.passed, res.report()
    assert not any("only:" in n for n in res.notes), res.notes


# -- a dict of gradients without a key ----------------------------------------------------------
def test_an_input_with_no_key_in_a_dict_of_gradients_is_a_constant_as_none_is():
    def fwd(x, alpha):
        return np.where(x > 0, x, alpha * x), (x, alpha)

    def bwd(dout, cache):
        x, a = cache
        return {"dx": dout * np.where(x > 0, 1.0, a)}

    res = gradcheck.check_vjp(fwd, bwd, [np.random.default_rng(5).standard_normal((3, 4)), 0.1])
    assert res.passed, res.report()
    assert res.inputs[1].status == "constant"


# -- one gradient for several inputs --------------------------------------------------------------
class _Mul:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, x, w):
        self.x, self.w = x, w
        return x * w

    def backward(self, dout):
        return dout * (self.x if self.broken else self.w)


@pytest.mark.parametrize("broken", [False, True])
def test_one_gradient_for_two_inputs_is_the_firsts_whatever_numbers_it_holds(broken):
    x = np.arange(6.0).reshape(2, 3)
    w = np.random.default_rng(6).standard_normal((2, 3))
    res = gradcheck.check_layer(_Mul(broken), x, w)
    _verdict(res, broken)
    assert res.inputs[0].status == ("mismatch" if broken else "ok")


class _MatMul:
    def forward(self, x, W):
        self.x = x
        return x @ W

    def backward(self, dout):
        return self.x.T @ dout  # W's gradient returned as x's: never read as W's


def test_an_other_inputs_gradient_returned_alone_is_not_read_by_its_shape():
    rng = np.random.default_rng(7)
    res = gradcheck.check_layer(_MatMul(), rng.standard_normal((3, 2)),
                                rng.standard_normal((2, 3)))
    assert res.status == "shape-mismatch", res.report()


class _SquaredError:
    def forward(self, pred, target):
        self.d = pred - target
        return 0.5 * float(np.sum(self.d ** 2))

    def backward(self):
        return self.d


def test_a_loss_whose_predictions_are_whole_numbers_is_checked_in_them():
    pred = np.array([[1.0, 2.0], [3.0, 0.0]])
    target = np.array([[1.5, 2.5], [2.0, 0.5]])
    res = gradcheck.check_layer(_SquaredError(), pred, target)
    assert res.passed, res.report()
    assert res.inputs[0].status == "ok"


# -- parameters in properties, gradients returned -------------------------------------------------
class _PropertyDense:
    def __init__(self, broken=False):
        rng = np.random.default_rng(8)
        self.W, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        self.broken = broken

    @property
    def params(self):
        return [self.W, self.b]

    @property
    def grads(self):
        return [self.dW, self.db]

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        db = dout.sum(axis=0) * (2.0 if self.broken else 1.0)
        return dout @ self.W.T, [self.x.T @ dout, db]


@pytest.mark.parametrize("broken", [False, True])
def test_gradients_returned_beside_a_params_property_not_its_zero_grads(broken):
    res = gradcheck.check_layer(_PropertyDense(broken),
                                np.random.default_rng(9).standard_normal((4, 3)))
    _verdict(res, broken)
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["b"]


class _Forgets:
    """A backward that should call accGradParameters itself and does not."""

    def __init__(self, broken=False):
        self.W = np.random.default_rng(10).standard_normal((2, 3))
        self.broken = broken

    def forward(self, input):
        return input @ self.W.T

    def updateGradInput(self, input, gradOutput):
        self.gradInput = gradOutput @ self.W
        return self.gradInput

    def accGradParameters(self, input, gradOutput):
        self.gradW = gradOutput.T @ input

    def backward(self, input, gradOutput):
        self.updateGradInput(input, gradOutput)
        if not self.broken:
            self.accGradParameters(input, gradOutput)
        return self.gradInput


@pytest.mark.parametrize("broken", [False, True])
def test_a_method_that_stores_gradients_is_never_called_for_the_backward(broken):
    x = np.random.default_rng(11).standard_normal((4, 3))
    try:
        res = gradcheck.check_layer(_Forgets(broken), x)
    except gradcheck.LayerConventionError:
        assert broken
        return
    _verdict(res, broken)


# -- a backward taking the input again and a step on the weights ------------------------------
class _SteppingDense:
    def __init__(self, broken=False):
        rng = np.random.default_rng(12)
        self.W, self.b, self.lr, self.broken = rng.standard_normal((3, 2)), np.zeros(2), 0.1, broken

    def forward(self, x):
        return np.tanh(x @ self.W + self.b)

    def backward(self, x, grad_output):
        z = x @ self.W + self.b
        dz = grad_output * (1 - np.tanh(z) ** (1 if self.broken else 2))
        self.dW, self.db = x.T @ dz, dz.sum(axis=0)
        dx = dz @ self.W.T
        self.W -= self.lr * self.dW
        self.b -= self.lr * self.db
        return dx


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_taking_a_step_still_reads_as_taking_the_input_again(broken):
    res = gradcheck.check_layer(_SteppingDense(broken),
                                np.random.default_rng(13).standard_normal((4, 3)))
    _verdict(res, broken)


# -- check_vjp: a bias gradient of (H,) for a bias of (1, H) ---------------------------------
def _fc_forward(X, W, b):
    return X @ W + b, (W, X)


def _fc_backward(dout, cache, broken=False, column=False):
    W, X = cache
    db = np.sum(dout, axis=0)
    return dout @ W.T, (dout.T @ X if broken else X.T @ dout), db[:, None] if column else db


@pytest.mark.parametrize("broken", [False, True])
def test_a_gradient_differing_by_a_size_one_axis_gets_a_verdict_with_a_note(broken):
    rng = np.random.default_rng(14)
    inputs = [rng.standard_normal((4, 5)), rng.standard_normal((5, 5)),
              rng.standard_normal((1, 5))]
    res = gradcheck.check_vjp(_fc_forward, partial(_fc_backward, broken=broken), inputs)
    _verdict(res, broken)
    assert any("compared after reshaping" in n for n in res.notes), res.notes
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["W"]


def test_a_gradient_that_would_widen_its_array_is_still_a_shape_mismatch():
    rng = np.random.default_rng(15)
    inputs = [rng.standard_normal((4, 5)), rng.standard_normal((5, 5)),
              rng.standard_normal((1, 5))]
    res = gradcheck.check_vjp(_fc_forward, partial(_fc_backward, column=True), inputs)
    assert res.status == "shape-mismatch", res.report()


# -- a layer returning several outputs whose backward takes the first one's gradient ----------
class _Recurrent:
    """forward(x) -> (ys, h_last); backward(dys) -> dx, weight gradients stored."""

    def __init__(self, broken=False, hidden=4):
        rng = np.random.default_rng(16)
        self.Wx = rng.standard_normal((3, hidden)) * 0.5
        self.Wh = rng.standard_normal((hidden, hidden)) * 0.5
        self.broken, self.hidden = broken, hidden

    def forward(self, x):
        h, self.hs, self.x = np.zeros(self.hidden), [np.zeros(self.hidden)], x
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ self.Wx + h @ self.Wh)
            self.hs.append(h)
        return np.stack(self.hs[1:]), h

    def backward(self, dys):
        dh, dx = np.zeros(self.hidden), np.zeros_like(self.x)
        self.dWx, self.dWh = np.zeros_like(self.Wx), np.zeros_like(self.Wh)
        for t in reversed(range(self.x.shape[0])):
            dz = (dh + dys[t]) * (1 - self.hs[t + 1] ** (1 if self.broken else 2))
            self.dWx += np.outer(self.x[t], dz)
            self.dWh += np.outer(self.hs[t], dz)
            dx[t], dh = dz @ self.Wx.T, dz @ self.Wh.T
        return dx


@pytest.mark.parametrize("broken", [False, True])
def test_a_layer_whose_backward_takes_its_first_outputs_gradient_is_checked_in_it(broken):
    res = gradcheck.check_layer(_Recurrent(broken),
                                np.random.default_rng(17).standard_normal((5, 3)))
    _verdict(res, broken)
    assert any("it differentiates the first, which is checked" in n for n in res.notes)


def test_no_first_output_reading_when_another_output_has_an_inputs_shape():
    class WithState(_Recurrent):
        def forward(self, x, h0):
            ys, h = super().forward(x)
            return ys, h + 0 * h0

    rng = np.random.default_rng(18)
    res = gradcheck.check_layer(WithState(), rng.standard_normal((5, 3)),
                                rng.standard_normal(4))
    assert not res.passed and res.status == "error", res.report()


# -- a second review: states as tuples, numerical helpers, scalars in dicts, copies ----------
_H = 3


def _sig(z):
    return 1 / (1 + np.exp(-z))


def _lstm_step(x, state, W):  # y, the next state (h, c), cache
    h, c = state
    z = np.concatenate([x, h], 1) @ W
    i, f, o, g = _sig(z[:, :_H]), _sig(z[:, _H:2 * _H]), _sig(z[:, 2 * _H:3 * _H]), np.tanh(
        z[:, 3 * _H:])
    c2 = f * c + i * g
    h2 = o * np.tanh(c2)
    return h2 @ np.ones((_H, 2)), (h2, c2), (x, h, c, W, z, c2)


def _lstm_step_ignoring_the_state(dy, cache):  # broken: the next state's gradient is needed
    x, h, c, W, z, c2 = cache
    i, f, o, g = _sig(z[:, :_H]), _sig(z[:, _H:2 * _H]), _sig(z[:, 2 * _H:3 * _H]), np.tanh(
        z[:, 3 * _H:])
    dh2 = dy @ np.ones((_H, 2)).T
    dc2 = dh2 * o * (1 - np.tanh(c2) ** 2)
    dz = np.concatenate([dc2 * g * i * (1 - i), dc2 * c * f * (1 - f),
                         dh2 * np.tanh(c2) * o * (1 - o), dc2 * i * (1 - g ** 2)], 1)
    dxh = dz @ W.T
    return dxh[:, :5], (dxh[:, 5:], dc2 * f), np.concatenate([x, h], 1).T @ dz


def test_a_state_left_out_as_a_tuple_of_arrays_still_refuses_the_first_outputs_reading():
    rng = np.random.default_rng(19)
    inputs = [rng.standard_normal((4, 5)), (rng.standard_normal((4, _H)),
                                            rng.standard_normal((4, _H))),
              rng.standard_normal((5 + _H, 4 * _H))]
    res = gradcheck.check_vjp(_lstm_step, _lstm_step_ignoring_the_state, inputs)
    assert not res.passed, res.report()


def test_an_output_that_is_a_tuple_of_arrays_of_different_shapes_is_read():
    def fwd(x, W1, W2):
        h1 = np.tanh(x @ W1)
        h2 = np.tanh(h1 @ W2)
        return h2.sum(1), (h1, h2), (x, W1, W2, h1, h2)

    def bwd(dy, dstates, cache):
        x, W1, W2, h1, h2 = cache
        dh1, dh2 = dstates
        dz2 = (dy[:, None] + dh2) * (1 - h2 ** 2)
        dz1 = (dz2 @ W2.T + dh1) * (1 - h1 ** 2)
        return dz1 @ W1.T, x.T @ dz1, h1.T @ dz2

    rng = np.random.default_rng(20)
    res = gradcheck.check_vjp(fwd, bwd, [rng.standard_normal((4, 3)),
                                         rng.standard_normal((3, 5)), rng.standard_normal((5, 2))])
    assert res.passed, res.report()


class _WithNumericalHelper:
    def __init__(self, broken=False):
        rng = np.random.default_rng(21)
        self.W, self.b, self.broken = rng.standard_normal((3, 2)), rng.standard_normal(2), broken

    def forward(self, x):
        return x @ self.W + self.b

    def backward(self, x, grad_output):
        if not self.broken:
            self.grad_W, self.grad_b = x.T @ grad_output, grad_output.sum(axis=0)
        return grad_output @ self.W.T

    def numerical_grads(self, x, grad_output, eps=1e-6):
        out = []
        for p in (self.W, self.b):
            g = np.zeros_like(p)
            for i in np.ndindex(p.shape):
                p[i] += eps
                up = np.sum(self.forward(x) * grad_output)
                p[i] -= 2 * eps
                g[i] = (up - np.sum(self.forward(x) * grad_output)) / (2 * eps)
                p[i] += eps
            out.append(g)
        return out


@pytest.mark.parametrize("broken", [False, True])
def test_a_method_that_runs_the_layer_never_completes_the_backward(broken):
    x = np.random.default_rng(22).standard_normal((4, 3))
    try:
        res = gradcheck.check_layer(_WithNumericalHelper(broken), x)
    except gradcheck.LayerConventionError:
        assert broken
        return
    _verdict(res, broken)
    assert not any("numerical_grads" in n for n in res.notes), res.notes


def test_a_float_scalar_in_a_dict_input_with_no_key_is_a_constant():
    def fwd(x, p):
        mu, var = x.mean(0), x.var(0)
        xh = (x - mu) / np.sqrt(var + p["eps"])
        return p["gamma"] * xh + p["beta"], (xh, var, p)

    def bwd(dout, cache):
        xh, var, p = cache
        n = xh.shape[0]
        dxh = dout * p["gamma"]
        dx = (n * dxh - dxh.sum(0) - xh * (dxh * xh).sum(0)) / (n * np.sqrt(var + p["eps"]))
        return {"dx": dx, "dgamma": (dout * xh).sum(0), "dbeta": dout.sum(0)}

    rng = np.random.default_rng(23)
    p = {"gamma": rng.standard_normal(3), "beta": rng.standard_normal(3), "eps": 0.5}
    res = gradcheck.check_vjp(fwd, bwd, [rng.standard_normal((5, 3)), p])
    assert res.passed, res.report()
    assert next(i for i in res.inputs if i.name == "p['eps']").status == "constant"


class _Aliased(_PropertyDense):
    """Two properties building the same list; one of them touches the layer."""

    @property
    def parameters(self):
        self.touched = True  # a side effect: never on the caller's object
        return [self.W, self.b]


def test_parameter_properties_run_on_a_copy_and_agreeing_ones_are_read():
    layer = _Aliased()
    res = gradcheck.check_layer(layer, np.random.default_rng(24).standard_normal((4, 3)))
    assert res.passed, res.report()
    assert not hasattr(layer, "touched")


def test_a_batch_of_one_keeps_the_shape_of_the_data_gradient_as_evidence():
    def fwd(x, W):
        return x @ W, (x, W)

    def bwd(dout, cache):  # dx summed over the batch: right for a batch of one only
        x, W = cache
        return (dout @ W.T).sum(axis=0), x.T @ dout

    rng = np.random.default_rng(25)
    res = gradcheck.check_vjp(fwd, bwd, [rng.standard_normal((1, 3)), rng.standard_normal((3, 2))])
    assert res.status == "shape-mismatch", res.report()


def test_a_layer_holding_a_delegating_wrapper_is_an_error_naming_it():
    class Wrap:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

    layer = _ModuleHeldLike()
    layer.holder = Wrap(np.random.default_rng(26))
    res = gradcheck.check_layer(layer, np.random.default_rng(27).standard_normal((4, 3)))
    assert res.status == "bad-protocol" and "cannot be copied" in res.message, res.report()


class _ModuleHeldLike:
    def __init__(self):
        self.W = np.random.default_rng(28).standard_normal((3, 2))

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        self.dW = self.x.T @ dout
        return dout @ self.W.T


# -- a third evaluator corpus: gradients in a dict by attribute, a loss given its labels back,
# the output gradient fed by another method ----------------------------------------------------
class _DictLinear:
    def __init__(self, broken=False):
        rng = np.random.default_rng(29)
        self.W, self.b, self.broken = rng.standard_normal((3, 4)), rng.standard_normal(4), broken

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, g):
        db = g.sum(axis=0) * (0.5 if self.broken else 1.0)
        return g @ self.W.T, {"W": self.x.T @ g, "b": db}


class _DictFeedForward:
    def __init__(self, broken=False):
        self.w1, self.w2 = _DictLinear(), _DictLinear(broken)
        self.w2.W = np.random.default_rng(30).standard_normal((4, 4))

    def forward(self, x):
        self.h = np.tanh(self.w1.forward(x))
        return self.w2.forward(self.h)

    def backward(self, g):
        gh, g2 = self.w2.backward(g)
        gx, g1 = self.w1.backward(gh * (1 - self.h ** 2))
        return gx, {**{f"w1_{k}": v for k, v in g1.items()},
                    **{f"w2_{k}": v for k, v in g2.items()}}


@pytest.mark.parametrize("layer", [_DictLinear, _DictFeedForward])
@pytest.mark.parametrize("broken", [False, True])
def test_parameter_gradients_returned_in_a_dict_keyed_by_attribute(layer, broken):
    res = gradcheck.check_layer(layer(broken), np.random.default_rng(31).standard_normal((5, 3)))
    _verdict(res, broken)
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] in (["b"], ["w2.b"])


class _CrossEntropy:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, prediction_tensor, label_tensor):
        self.p = prediction_tensor
        return -np.sum(np.log(self.p[label_tensor == 1]))

    def backward(self, label_tensor):
        return (1 if self.broken else -1) * label_tensor / self.p


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_whose_backward_takes_the_labels_back_is_given_them(broken):
    rng = np.random.default_rng(32)
    p, t = rng.uniform(0.05, 0.95, (5, 4)), np.eye(4)[rng.integers(0, 4, 5)]
    res = gradcheck.check_layer(_CrossEntropy(broken), p, t)
    _verdict(res, broken)
    assert any("takes the forward's arguments label_tensor" in n for n in res.notes)


class _FedTanh:
    """A tanh fed its output gradient by backward_update_gradient(delta) (nndiy); the
    subclasses write the backward, correct or not."""

    def forward(self, data):
        self._input = data
        self._output = np.tanh(data)

    def backward_update_gradient(self, delta):
        self._delta = delta


class _FedTanhCopy(_FedTanh):
    def backward_update_gradient(self, delta):
        self._delta = delta.copy()


class _Fed:
    """nndiy's convention: backward_update_gradient(delta) keeps delta and adds into the
    weights' gradient; backward() computes the input gradient from it."""

    def __init__(self, broken=False):
        rng = np.random.default_rng(33)
        self._W, self.broken = rng.standard_normal((3, 4)), broken
        self._grad_W = np.zeros_like(self._W)

    def forward(self, data):
        self._input = data
        self._output = data @ self._W

    def backward_update_gradient(self, delta):
        self._delta = delta
        self._grad_W += self._input.T @ delta * (2.0 if self.broken else 1.0)

    def backward(self):
        self._grad_input = self._delta @ self._W.T


class _FedActivation(_FedTanh):
    def backward(self):
        self._grad_input = (1 - np.tanh(self._input) ** 2) * self._delta


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_fed_its_output_gradient_by_another_method(broken):
    x = np.random.default_rng(34).standard_normal((4, 3))
    res = gradcheck.check_layer(_Fed(broken), x)
    _verdict(res, broken)
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["_W"]
    assert any("backward_update_gradient(dout) feeds the output gradient" in n
               for n in res.notes), res.notes
    res = gradcheck.check_layer(_FedActivation(), np.random.default_rng(35).standard_normal((4, 5)))
    assert res.passed, res.report()


# -- a third review: what a fed backward keeps, which method feeds it, whose gradient a loss
# taking back its arguments returns ---------------------------------------------------------
class _FedWrongSlot(_FedTanh):
    def __init__(self, broken=False):
        self.broken = broken

    def backward(self):  # broken: what the framework reads is delta passed through
        self._grad = (1 - np.tanh(self._input) ** 2) * self._delta
        self._grad_input = self._delta if self.broken else self._grad


@pytest.mark.parametrize("broken", [False, True])
def test_an_array_the_fed_backward_stores_equal_to_the_gradient_stays_a_candidate(broken):
    res = gradcheck.check_layer(_FedWrongSlot(broken),
                                np.random.default_rng(36).standard_normal((4, 3)))
    assert res.passed is not broken, res.report()


_LOG: list = []


class _FedAmongOthers:
    def __init__(self):
        self._cache = None

    @property
    def output(self):  # raises before a forward: never run on the caller's object
        if not hasattr(self, "_output"):
            raise RuntimeError("call forward() first")
        return self._output

    @property
    def summary(self):  # caches on first access
        if self._cache is None:
            self._cache = "tanh"
        return self._cache

    def forward(self, data):
        self._input = data
        self._output = np.tanh(data)

    def log(self, value):  # an unrelated helper: never called by the check
        _LOG.append(value)

    def set_labels(self, y):  # stores its argument, but backward() is not fed by it
        self.y = y

    def backward_update_gradient(self, delta):
        self._delta = delta

    def backward(self):
        self._grad_input = (1 - np.tanh(self._input) ** 2) * self._delta


def test_only_the_method_storing_what_the_backward_misses_is_called_to_feed_it():
    layer = _FedAmongOthers()
    res = gradcheck.check_layer(layer, np.random.default_rng(37).standard_normal((4, 3)))
    assert res.passed, res.report()
    assert _LOG == [] and layer._cache is None and not hasattr(layer, "_output")


class _LabelsSetter:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, z):
        e = np.exp(z - z.max(1, keepdims=True))
        self.p = e / e.sum(1, keepdims=True)
        return self.p

    def set_labels(self, y):
        self.y = y

    def backward(self):
        return (self.y - self.p) if self.broken else (self.p - self.y)


@pytest.mark.parametrize("broken", [False, True])
def test_a_labels_setter_is_no_gradient_feed(broken):
    res = gradcheck.check_layer(_LabelsSetter(broken),
                                np.random.default_rng(38).standard_normal((4, 3)))
    assert not res.passed and res.status not in ("mismatch", "shape-mismatch"), res.report()


class _TargetsFirst:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, y_true, y_pred):
        self.t = y_true
        return float(np.mean((y_pred - y_true) ** 2))

    def backward(self, y_pred):
        g = 2 * (y_pred - self.t) / y_pred.size
        return -g if self.broken else g


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_taking_back_a_float_argument_is_no_verdict_unless_wrt_says(broken):
    rng = np.random.default_rng(39)
    t, p = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    res = gradcheck.check_layer(_TargetsFirst(broken), t, p)
    assert res.status == "bad-protocol" and "wrt=" in res.message, res.report()
    res = gradcheck.check_layer(_TargetsFirst(broken), t, p, wrt=["x1"])
    _verdict(res, broken)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_taking_back_its_predictions_after_0_1_labels(broken):
    class BCE(_TargetsFirst):
        def forward(self, y_true, y_pred):
            self.t = y_true
            return -float(np.sum(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred)))

        def backward(self, y_pred):
            g = (y_pred - self.t) / (y_pred * (1 - y_pred))
            return -g if self.broken else g

    rng = np.random.default_rng(40)
    t, p = rng.integers(0, 2, (5, 3)).astype(float), rng.uniform(0.1, 0.9, (5, 3))
    _verdict(gradcheck.check_layer(BCE(broken), t, p), broken)


@pytest.mark.parametrize("broken", [False, True])
def test_a_zero_gradient_dict_made_ready_is_no_parameter_list(broken):
    class Ready(_DictLinear):
        def __init__(self, broken=False):
            super().__init__(broken)
            self.grads = {"W": np.zeros_like(self.W), "b": np.zeros_like(self.b)}

    _verdict(gradcheck.check_layer(Ready(broken),
                                   np.random.default_rng(41).standard_normal((5, 3))), broken)


# -- a fourth evaluator corpus: private names, a per-sample loss's derivative(), a gradient
# given as one row, one input's gradient per call ---------------------------------------------
class _Private:
    def __init__(self, broken=False):
        rng = np.random.default_rng(42)
        self._W, self._b, self.broken = rng.standard_normal((3, 2)), rng.standard_normal(2), broken

    def forward(self, x):
        self._x = x
        return x @ self._W + self._b

    def backward(self, dout):
        self._dW = self._x.T @ dout
        self._db = dout.sum(axis=1 if self.broken else 0)  # broken: the wrong axis
        return dout @ self._W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_private_gradient_of_the_wrong_shape_is_a_shape_mismatch(broken):
    res = gradcheck.check_layer(_Private(broken), np.random.default_rng(43).standard_normal((4, 3)))
    if broken:
        assert res.status == "shape-mismatch" and "_db" in res.message, res.report()
    else:
        assert res.passed, res.report()


class _PerSampleCE:
    def __init__(self, broken=False):
        self.broken = broken

    def __call__(self, x, y):
        return self.forward(x, y)

    def forward(self, x, y):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.p, self.y = e / e.sum(axis=1, keepdims=True), y
        return -np.sum(y * np.log(self.p), axis=1)

    def derivative(self):
        return (self.y - self.p) if self.broken else (self.p - self.y)


@pytest.mark.parametrize("broken", [False, True])
def test_a_per_sample_loss_with_a_derivative_taking_nothing(broken):
    rng = np.random.default_rng(44)
    x, y = rng.standard_normal((5, 4)), np.eye(4)[rng.integers(0, 4, 5)]
    res = gradcheck.check_layer(_PerSampleCE(broken), x, y)
    _verdict(res, broken)
    assert any("found by what they return: forward" in n for n in res.notes), res.notes


class _RowCell:
    """A 1-d cell whose backward expects its gradient as one row, (1, h) (course code)."""

    def __init__(self, broken=False):
        rng = np.random.default_rng(45)
        self.W, self.broken = rng.standard_normal((4, 3)), broken

    def forward(self, x):
        self.x, self.h = x, np.tanh(self.W @ x)
        return self.h

    def backward(self, delta):
        dz = delta * (1 - self.h ** (1 if self.broken else 2))  # (1, h)
        self.dW = dz.T @ self.x[None]
        return dz @ self.W  # (1, d)


@pytest.mark.parametrize("broken", [False, True])
def test_a_1d_outputs_gradient_is_given_as_a_row_when_the_backward_wants_one(broken):
    res = gradcheck.check_layer(_RowCell(broken), np.random.default_rng(46).standard_normal(3))
    _verdict(res, broken)
    assert any("given it as one row" in n for n in res.notes), res.notes


class _PerInput:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, a, b):
        return np.dot(a, b)

    def backward(self, grad, wrt, a, b):
        if wrt == 0:
            return np.dot(grad, b if self.broken else b.T)
        return np.dot(a.T, grad)


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_returning_one_inputs_gradient_per_call(broken):
    rng = np.random.default_rng(47)
    res = gradcheck.check_layer(_PerInput(broken), rng.standard_normal((3, 3)),
                                rng.standard_normal((3, 3)))
    _verdict(res, broken)
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["x0"]


# -- a fourth review: each reading only on its own evidence ----------------------------------------
def test_an_input_gradient_with_an_extra_column_axis_stays_a_shape_mismatch():
    class Act:
        def forward(self, x):
            self.h = np.tanh(x)
            return self.h

        def backward(self, dout):
            return (dout * (1 - self.h ** 2)).reshape(-1, 1)

    res = gradcheck.check_layer(Act(), np.random.default_rng(48).standard_normal(5))
    assert res.status == "shape-mismatch", res.report()


class _NamedOperands:
    def forward(self, a, b):
        return a @ b

    def backward(self, grad, wrt, a, b):  # wrt is "a" or "b", not an index
        return grad @ b.T if wrt == "a" else a.T @ grad


class _Accumulating:
    def __init__(self):
        self.W = np.random.default_rng(49).standard_normal((3, 3))
        self.dW = np.zeros_like(self.W)

    def forward(self, a, b):
        return (a + b) @ self.W

    def backward(self, grad, wrt, a, b):  # accumulates dW on every call
        self.dW += (a + b).T @ grad
        return grad @ self.W.T


@pytest.mark.parametrize("layer", [_NamedOperands, _Accumulating])
def test_no_per_input_reading_without_its_evidence(layer):
    rng = np.random.default_rng(50)
    res = gradcheck.check_layer(layer(), rng.standard_normal((3, 3)), rng.standard_normal((3, 3)))
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()


def test_a_method_whose_result_ignores_the_targets_is_no_loss_gradient():
    class SoftmaxCE:
        def forward(self, logits, y):
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            self.p = e / e.sum(axis=1, keepdims=True)
            return -np.sum(y * np.log(self.p), axis=1)

        def probs(self):
            return self.p

        def gradient(self, y):
            return self.p - y

    rng = np.random.default_rng(51)
    with pytest.raises(TypeError, match="backward="):
        gradcheck.check_layer(SoftmaxCE(), rng.standard_normal((5, 4)),
                              np.eye(4)[rng.integers(0, 4, 5)])


@pytest.mark.parametrize("broken", [False, True])
def test_a_fed_backward_may_keep_a_cache_and_its_feed_an_alias(broken):
    class Fed:
        def forward(self, data):
            self._input = data
            self._output = np.tanh(data)

        def backward_update_gradient(self, delta):
            self._delta = delta
            self.last_delta = delta  # an alias the feed makes: no gradient

        def backward(self):
            self._deriv = 1 - np.tanh(self._input) ** (1 if broken else 2)  # a cache
            self._grad_input = self._deriv * self._delta

    _verdict(gradcheck.check_layer(Fed(), np.random.default_rng(52).standard_normal((4, 3))),
             broken)


@pytest.mark.parametrize("broken", [False, True])
def test_a_list_holding_a_zero_initialised_bias_is_its_parameter_list(broken):
    class Bias:
        def __init__(self):
            self.params = [np.zeros(4)]

        def forward(self, x):
            return x + self.params[0]

        def backward(self, dout):
            return dout, [dout.sum(axis=0) * (2.0 if broken else 1.0)]

    _verdict(gradcheck.check_layer(Bias(), np.random.default_rng(53).standard_normal((5, 4))),
             broken)


class _Weighted:
    """forward(pred, target, weight), backward(target, weight): no argument holds labels,
    so whose gradient it returns is not observed: wrt= says."""

    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, pred, target, weight):
        self.p = pred
        return float(np.sum(weight * (target * np.log(pred) + (1 - target) * np.log(1 - pred))))

    def backward(self, target, weight):
        g = weight * (target / self.p - (1 - target) / (1 - self.p))
        return -g if self.broken else g


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_taking_back_float_arguments_is_no_verdict_until_wrt_names_its_input(broken):
    rng = np.random.default_rng(54)
    p, t, w = rng.uniform(0.1, 0.9, (4, 3)), rng.uniform(0, 1, (4, 3)), rng.uniform(0.5, 2, (4, 3))
    res = gradcheck.check_layer(_Weighted(broken), p, t, w)
    assert res.status == "bad-protocol" and "wrt=" in res.message, res.report()
    _verdict(gradcheck.check_layer(_Weighted(broken), p, t, w, wrt=["x0"]), broken)


@pytest.mark.parametrize("broken", [False, True])
def test_a_sample_mask_taken_back_beside_the_predictions_is_no_evidence(broken):
    class Masked:
        def forward(self, y_true, y_pred, mask):
            self.t = y_true
            return float(np.sum(mask * (y_pred - y_true) ** 2))

        def backward(self, y_pred, mask):
            g = 2 * mask * (y_pred - self.t)
            return -g if broken else g

    rng = np.random.default_rng(55)
    t, p = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(Masked(), t, p, rng.integers(0, 2, (4, 3)).astype(float))
    assert res.status == "bad-protocol", res.report()


# -- a fifth review ---------------------------------------------------------------------------
def test_a_fed_input_gradient_that_forgot_the_gradient_is_checked_and_fails():
    class Linear:
        def __init__(self):
            rng = np.random.default_rng(56)
            self.W, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)

        def forward(self, data):
            self._input = data
            return data @ self.W + self.b

        def backward_update_gradient(self, delta):
            self._delta = delta

        def backward(self):
            self.dW, self.db = self._input.T @ self._delta, self._delta.sum(axis=0)
            self._grad_input = np.ones_like(self._delta) @ self.W.T  # forgot delta

    res = gradcheck.check_layer(Linear(), np.random.default_rng(57).standard_normal((4, 3)))
    assert not res.passed and res.status in ("mismatch", "error", "bad-protocol"), res.report()
    assert not any(i.status == "constant" for i in res.inputs[:1]), res.report()


def test_a_fed_backward_that_forgot_the_gradient_is_no_bare_exception():
    class Tanh(_FedTanh):
        def backward(self):
            self._grad_input = 1 - np.tanh(self._input) ** 2  # forgot * self._delta

    res = gradcheck.check_layer(Tanh(), np.random.default_rng(58).standard_normal((4, 3)))
    assert not res.passed, res.report()


@pytest.mark.parametrize("broken", [False, True])
def test_two_zero_lists_that_fit_are_no_parameter_list_to_guess(broken):
    class ZeroInit:
        def __init__(self):
            self.grads = [np.zeros((3, 1)), np.zeros(1)]
            self.params = [np.zeros((3, 1)), np.zeros(1)]

        def forward(self, x):
            self.x = x
            return x @ self.params[0] + self.params[1]

        def backward(self, d):
            db = d.sum(axis=0) * (2.0 if broken else 1.0)
            return d @ self.params[0].T, [self.x.T @ d, db]

    x = np.random.default_rng(59).standard_normal((4, 3))
    try:
        res = gradcheck.check_layer(ZeroInit(), x)
    except gradcheck.LayerConventionError:
        return
    assert res.status != ("ok" if broken else "mismatch"), res.report()


def test_a_loss_and_its_gradient_are_found_with_class_ids_up_to_the_last_class():
    class CE:
        def loss(self, logits, y):
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            self.p = e / e.sum(axis=1, keepdims=True)
            return -float(np.log(self.p[np.arange(len(y)), y]).sum())

        def grad(self, logits, y):
            self.loss(logits, y)
            g = self.p.copy()
            g[np.arange(len(y)), y] -= 1
            return g

    rng = np.random.default_rng(60)
    res = gradcheck.check_layer(CE(), rng.standard_normal((4, 3)), np.array([0, 2, 1, 2]))
    assert res.passed, res.report()


# -- a sixth evaluator corpus (L): back_propagate, (dX, None), gradients matched by shape ------
class _Propagating:
    def __init__(self, broken=False):
        self.broken = broken

    def forward_propagate(self, Z, save_cache=False):
        if save_cache:
            self.Z = Z
        return np.where(Z >= 0, Z, np.exp(Z) - 1)

    def back_propagate(self, dA):
        return dA * np.where(self.Z >= 0, 1.0, np.exp(self.Z) * (2.0 if self.broken else 1.0))


@pytest.mark.parametrize("broken", [False, True])
def test_forward_propagate_and_back_propagate_are_a_pair(broken):
    res = gradcheck.check_layer(_Propagating(broken),
                                np.random.default_rng(61).standard_normal((3, 4)), True)
    _verdict(res, broken)


class _NoneForParameters:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, x):
        self.out = np.tanh(x)
        return self.out

    def backward(self, output_error):
        return output_error * (1 - self.out ** (1 if self.broken else 2)), None


class _ByShape:
    def __init__(self, broken=False):
        rng = np.random.default_rng(62)
        self.weights, self.bias = rng.standard_normal((5, 3)), rng.standard_normal((1, 3))
        self.broken = broken

    def forward(self, input):
        self.input = input
        return input @ self.weights + self.bias

    def backward(self, output_error):
        db = output_error.sum(axis=0, keepdims=True) * (-1.0 if self.broken else 1.0)
        return output_error @ self.weights.T, [self.input.T @ output_error, db]


@pytest.mark.parametrize("layer", [_NoneForParameters, _ByShape])
@pytest.mark.parametrize("broken", [False, True])
def test_dx_none_and_parameter_gradients_told_apart_by_shape(layer, broken):
    res = gradcheck.check_layer(layer(broken), np.random.default_rng(63).standard_normal((4, 5)))
    _verdict(res, broken)
    if broken and layer is _ByShape:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["bias"]


# -- a sixth review ----------------------------------------------------------------------------
def test_forward_beside_forward_prop_and_back_prop_is_an_ambiguity_not_a_pair():
    class Dropout:
        def __init__(self):
            self.mask = None

        def forward(self, x):  # inference
            return x

        def forward_prop(self, x):
            self.mask = (np.random.default_rng(0).random(x.shape) > 0.5) * 2.0
            return x * self.mask

        def back_prop(self, d):  # forgot the mask: paired with forward() it would pass
            return d

    with pytest.raises(TypeError, match="cannot tell its forward and backward"):
        gradcheck.check_layer(Dropout(), np.random.default_rng(64).standard_normal((3, 4)))


def test_a_fed_copy_of_the_gradient_the_backward_never_reads_is_no_loss_per_sample():
    class Tanh(_FedTanhCopy):
        def backward(self):
            self._grad_input = 1 - np.tanh(self._input) ** 2  # forgot delta

    res = gradcheck.check_layer(Tanh(), np.random.default_rng(65).standard_normal((4, 3)))
    assert res.status == "bad-protocol" and "keeps one at _delta" in res.message, res.report()


@pytest.mark.parametrize("broken", [False, True])
def test_a_per_sample_loss_with_a_setter_its_backward_reads_is_checked(broken):
    class SqErr:
        def __init__(self):
            self.scale = 1.0

        def set_scale(self, v):
            self.scale = v

        def forward(self, p, t):
            self.p, self.t = p, t
            return 0.5 * self.scale * ((p - t) ** 2).sum(axis=1)

        def backward(self):
            return self.scale * (self.p - self.t) * (-1.0 if broken else 1.0)

    rng = np.random.default_rng(66)
    _verdict(gradcheck.check_layer(SqErr(), rng.standard_normal((4, 3)),
                                   rng.standard_normal((4, 3))), broken)


@pytest.mark.parametrize("broken", [False, True])
def test_none_first_for_the_first_of_two_inputs_is_its_missing_gradient(broken):
    class Gate:
        def forward(self, g, x):
            self.g = g
            return g * x

        def backward(self, d):
            return None, d * (self.g if not broken else 2 * self.g)

    rng = np.random.default_rng(67)
    _verdict(gradcheck.check_layer(Gate(), rng.standard_normal((3, 4)),
                                   rng.standard_normal((3, 4))), broken)


def test_targets_that_cannot_be_moved_give_no_evidence_for_a_gradient_method():
    class SoftmaxCE:
        def loss(self, scores, y):
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            self.p = e / e.sum(axis=1, keepdims=True)
            return -float(np.log(self.p[np.arange(len(y)), y]).mean())

        def probs(self):
            return self.p

    with pytest.raises(TypeError, match="name it"):
        gradcheck.check_layer(SoftmaxCE(), np.random.default_rng(68).standard_normal((4, 3)),
                              np.array([2, 2, 2, 2]))


# -- a seventh evaluator corpus (M): a flat (dX, dW, db) of stored arrays, lists paired by
# place, a forward with no cache whose backward takes the inputs again ----------------------
class _DictParams:
    def __init__(self, broken=False):
        rng = np.random.default_rng(69)
        self.W = {"val": rng.standard_normal((3, 4)), "grad": 0}
        self.b = {"val": rng.standard_normal((1, 3)), "grad": 0}
        self.broken = broken

    def forward(self, fc):
        self.cache = fc
        return fc @ self.W["val"].T + self.b["val"]

    def backward(self, d):
        self.W["grad"] = d.T @ self.cache
        self.b["grad"] = d.sum(axis=0, keepdims=True) * (0.5 if self.broken else 1.0)
        return d @ self.W["val"], self.W["grad"], self.b["grad"]


@pytest.mark.parametrize("broken", [False, True])
def test_a_flat_return_of_the_input_gradient_beside_the_stored_ones(broken):
    res = gradcheck.check_layer(_DictParams(broken),
                                np.random.default_rng(70).standard_normal((5, 4)))
    _verdict(res, broken)


def test_a_gradient_list_paired_by_place_with_a_wrong_shape_is_a_shape_mismatch():
    class Linear:
        def __init__(self):
            rng = np.random.default_rng(71)
            self.weights, self.bias = rng.standard_normal((4, 3)), rng.standard_normal(3)
            self.params = [self.weights, self.bias]

        def forward(self, x):
            self.x = x
            return x @ self.weights + self.bias

        def backward(self, g):
            self.grads = [self.x.reshape(-1, 4).T @ g.reshape(-1, 3), g.sum(axis=0)]
            return g @ self.weights.T

    res = gradcheck.check_layer(Linear(), np.random.default_rng(72).standard_normal((2, 3, 4)))
    assert res.status == "shape-mismatch", res.report()


def _layer_norm(x, gamma, beta):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta


def _layer_norm_backward(x, gamma, beta, dOut, broken=False):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    xh, n = (x - mu) / np.sqrt(var + 1e-5), x.shape[-1]
    dxh = dOut * gamma
    dx = (n * dxh - dxh.sum(-1, keepdims=True)
          - (0 if broken else xh * (dxh * xh).sum(-1, keepdims=True))) / (n * np.sqrt(var + 1e-5))
    return dx, (dOut * xh).sum(0), dOut.sum(0)


@pytest.mark.parametrize("broken", [False, True])
def test_a_forward_with_no_cache_whose_backward_takes_the_inputs_again(broken):
    rng = np.random.default_rng(73)
    res = gradcheck.check_vjp(_layer_norm, partial(_layer_norm_backward, broken=broken),
                              [rng.standard_normal((4, 5)), rng.standard_normal(5),
                               rng.standard_normal(5)])
    _verdict(res, broken)
    assert any("takes the forward's inputs again" in n for n in res.notes), res.notes


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_and_its_gradient_taking_one_class_id(broken):
    class Softmax:
        def predict(self, x):
            e = np.exp(x)
            return e / e.sum()

        def loss(self, x, y):
            return -np.log(self.predict(x)[y])

        def diff(self, x, y):
            p = self.predict(x)
            p[y] -= 1.0 if not broken else 2.0
            return p

    _verdict(gradcheck.check_layer(Softmax(), np.random.default_rng(74).standard_normal(5), 2),
             broken)


# -- a seventh review --------------------------------------------------------------------------
def test_a_fed_gradient_cleared_by_the_backward_that_never_read_it_is_refused():
    class Tanh(_FedTanhCopy):
        def backward(self):
            self._grad_input = 1 - np.tanh(self._input) ** 2  # forgot delta
            self._delta = None  # "consumed": a store, no read

    res = gradcheck.check_layer(Tanh(), np.random.default_rng(75).standard_normal((4, 3)))
    assert res.status == "bad-protocol", res.report()


class _PerSampleMSE:
    def __init__(self, broken=False):
        self.broken, self.epoch = broken, 0

    def __call__(self, p, t):
        return self.forward(p, t)

    def set_epoch(self, e):  # a setter of an int: no feed
        self.epoch = int(e)

    def forward(self, p, t):
        self.p, self.t = p, t
        return ((p - t) ** 2).mean(axis=1)

    def value(self, p, t):  # the mean, through __call__
        return float(np.mean(self(p, t)))

    def backward(self):
        n, d = self.p.shape
        return 2 * (self.p - self.t) / (n * d) * (-1.0 if self.broken else 1.0)


@pytest.mark.parametrize("broken", [False, True])
def test_a_per_sample_loss_with_an_int_setter_and_a_mean_method(broken):
    rng = np.random.default_rng(76)
    _verdict(gradcheck.check_layer(_PerSampleMSE(broken), rng.standard_normal((4, 3)),
                                   rng.standard_normal((4, 3))), broken)


@pytest.mark.parametrize("label", [np.array(2), np.array([2])])
def test_a_class_id_as_a_0d_array_or_a_batch_of_one(label):
    class Softmax:
        def loss(self, x, y):
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            self.p = e / e.sum(axis=-1, keepdims=True)
            return -float(np.log(self.p[..., y]).sum())

        def diff(self, x, y):
            self.loss(x, y)
            g = self.p.copy()
            g[..., y] -= 1.0
            return g

    x = np.random.default_rng(77).standard_normal((1, 5) if label.ndim else 5)
    res = gradcheck.check_layer(Softmax(), x, label)
    assert res.passed, res.report()


def test_a_forward_returning_a_cache_beside_a_backward_taking_the_inputs_is_refused():
    def relu_forward(x):
        return np.maximum(x, 0), x

    def relu_backward(x, dout):
        return dout * (x > 0)

    res = gradcheck.check_vjp(relu_forward, relu_backward,
                              [np.random.default_rng(78).standard_normal((3, 4))])
    assert res.status == "bad-protocol" and "takes the inputs again" in res.message


@pytest.mark.parametrize("broken", [False, True])
def test_forward_pairs_with_a_backward_when_no_other_forward_pairs_by_name(broken):
    class Linear:
        def __init__(self):
            rng = np.random.default_rng(79)
            self.W, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)

        def __call__(self, x):
            return self.forward(x)

        def forward(self, x):
            self.x = x
            return x @ self.W + self.b

        def forward_batch(self, xs):
            return [self.forward(x) for x in xs]

        def backward_pass(self, d):
            self.dW = self.x.T @ d * (2.0 if broken else 1.0)
            self.db = d.sum(axis=0)
            return d @ self.W.T

    _verdict(gradcheck.check_layer(Linear(), np.random.default_rng(80).standard_normal((4, 3))),
             broken)


# -- an eighth review ---------------------------------------------------------------------------
class _FedAfterForward:
    def forward(self, X):
        self._out = np.tanh(X)
        return self._out

    def backward_update_gradient(self, delta):
        self._delta = delta.reshape(self._out.shape)  # needs the forward to have run


class _CacheFed:
    def __init__(self):
        self.cache = {}

    def forward(self, X):
        self.cache["out"] = np.tanh(X)
        return self.cache["out"]

    def set_delta(self, delta):
        self.cache["delta"] = delta


@pytest.mark.parametrize("base", [_FedAfterForward, _CacheFed])
def test_a_feed_the_backward_never_reads_blocks_the_loss_per_sample_reading(base):
    class Forgets(base):  # type: ignore[misc,valid-type]
        def backward(self):
            out = self._out if hasattr(self, "_out") else self.cache["out"]
            return 1 - out ** 2  # forgot the fed gradient

    res = gradcheck.check_layer(Forgets(), np.random.default_rng(81).standard_normal((4, 3)))
    assert res.status == "bad-protocol", res.report()


@pytest.mark.parametrize("broken", [False, True])
def test_a_metric_computing_the_mean_on_its_own_is_no_reduction(broken):
    class PerSampleMSE:
        def forward(self, p, t):
            self.p, self.t = p, t
            return ((p - t) ** 2).mean(axis=1)

        def backward(self):  # the gradient of their sum
            return 2 * (self.p - self.t) / self.p.shape[1] * (0.5 if broken else 1.0)

        def mse(self, p, t):  # a metric: it never runs the forward
            return float(np.mean((p - t) ** 2))

    rng = np.random.default_rng(82)
    _verdict(gradcheck.check_layer(PerSampleMSE(), rng.standard_normal((4, 3)),
                                   rng.standard_normal((4, 3)), wrt=["x0"]), broken)
