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
