"""Readings of held-out code met in stop 56's batch Z (corpora 296-299). Each with a
correct subject that passes and a broken twin that never passes."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


# -- a loss's backward(_=None): Python's name for an unused argument (corpus 296) -------------
def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


class _CrossEntropy:
    def forward(self, preds, labels):
        p = _softmax(preds)
        self.cache = p, labels
        return -np.sum(np.log(p[labels == 1])) / len(p)

    def backward(self, _=None):  # "unused gradient, for a unified interface"
        p, y = self.cache
        return (p - y) / len(p)


class _CrossEntropyNoMean(_CrossEntropy):
    def backward(self, _=None):
        p, y = self.cache
        return p - y  # BUG: the 1/N of the mean is missing


class _CrossEntropyUsing(_CrossEntropy):
    def backward(self, _=1.0):  # it does scale by its argument: read as the output gradient
        p, y = self.cache
        return (p - y) / len(p) * _


@pytest.mark.parametrize(("cls", "ok"), [(_CrossEntropy, True), (_CrossEntropyNoMean, False),
                                         (_CrossEntropyUsing, True)])
def test_a_loss_backward_whose_one_argument_is_named_underscore_is_called_bare(cls, ok):
    rng = np.random.default_rng(30)
    x, y = rng.standard_normal((4, 3)), np.eye(3)[[0, 2, 1, 1]]
    res = gradcheck.check_layer(cls(), x, y)
    assert res.passed is ok, res.report()
    if not ok:
        assert res.status == "mismatch" and res.inputs[0].status == "mismatch", res.report()
    named = any("named '_'" in n for n in res.notes)
    assert named is (cls is not _CrossEntropyUsing), res.notes


# -- a ones vector the forward builds for the batch, spreading the bias (corpus 297) ----------
class _OnesLinear:
    """CMU 11-785's ``Linear``: ``self.ones = np.ones((N, 1))`` built when the batch size
    changes, ``Z = A @ W.T + ones @ b.T``; ``dLdb = dLdZ.T @ ones``."""

    def __init__(self, extra_mean=False):
        rng = np.random.default_rng(31)
        self.W, self.b = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
        self.batch_size, self.ones, self.extra_mean = None, None, extra_mean

    def forward(self, A):
        self.A = A
        if self.batch_size != A.shape[0]:
            self.batch_size = A.shape[0]
            self.ones = np.ones((self.batch_size, 1))
        return A @ self.W.T + self.ones @ self.b.T

    def backward(self, dLdZ):
        self.dLdW = dLdZ.T @ self.A
        self.dLdb = dLdZ.T @ self.ones / (self.batch_size if self.extra_mean else 1)  # BUG
        return dLdZ @ self.W


@pytest.mark.parametrize("extra_mean", [False, True])
def test_a_ones_vector_built_for_the_batch_is_state_and_the_bias_is_checked(extra_mean):
    x = np.random.default_rng(32).standard_normal((2, 4))
    res = gradcheck.check_layer(_OnesLinear(extra_mean), x)
    assert [i.name for i in res.inputs] == ["x0", "W", "b"], res.report()
    assert any(n.startswith("ones: built by the forward for the batch") for n in res.notes)
    assert res.passed is not extra_mean, res.report()
    if extra_mean:
        assert res.status == "mismatch" and res.inputs[2].status == "mismatch", res.report()


class _NoGradLinear(_OnesLinear):
    """A bias spread by a ones vector of one row, built once (no batch shape): a
    parameter the backward gives no gradient for stays an error, never state."""

    def forward(self, A):
        self.A = A
        if self.ones is None:
            self.ones = np.full((1, 1), 2.0)
        return A @ self.W.T + self.ones * self.b.T

    def backward(self, dLdZ):
        self.dLdW = dLdZ.T @ self.A
        return dLdZ @ self.W


def test_a_one_valued_array_not_following_the_batch_is_no_state():
    x = np.random.default_rng(33).standard_normal((2, 4))
    with pytest.raises(gradcheck.LayerConventionError, match="ones"):
        gradcheck.check_layer(_NoGradLinear(), x)


# -- weight gradients beside intermediates of their shape only as the batch is (297) ---------
def _sig(z):
    return 1 / (1 + np.exp(-z))


class _TwoLayer:
    """``fw0``/``fw1`` the weight gradients of ``w0``/``w1``; ``bw0``/``bw1`` the
    back-propagated errors of shape ``(N, H)``, stored beside them."""

    def __init__(self, hidden, bug=False):
        rng = np.random.default_rng(34)
        self.w0, self.w1 = rng.standard_normal((2, hidden)), rng.standard_normal((hidden, hidden))
        self.bug = bug

    def forward(self, x):
        self.x = x
        self.a1 = _sig(x @ self.w0)
        self.yhat = _sig(self.a1 @ self.w1)
        return self.yhat

    def backward(self, dy):
        self.bw1 = dy * self.yhat * (1 - self.yhat)
        self.fw1 = self.a1.T @ self.bw1
        self.bw0 = (self.bw1 @ self.w1.T) * (1 if self.bug else self.a1 * (1 - self.a1))  # BUG
        self.fw0 = self.x.T @ self.bw0
        return self.bw0 @ self.w0.T


@pytest.mark.parametrize("hidden", [3, 4])  # a batch of 4: as long as the hidden width, or not
@pytest.mark.parametrize("bug", [False, True])
def test_intermediates_shaped_by_the_batch_are_no_weight_gradients(hidden, bug):
    x = np.random.default_rng(35).standard_normal((4, 2))
    res = gradcheck.check_layer(_TwoLayer(hidden, bug), x)
    assert res.passed is not bug, res.report()
    assert {i.name for i in res.inputs} >= {"w0", "w1"}, res.report()
    assert any("stored in fw0" in n for n in res.notes), res.notes
    if bug:
        assert res.status == "mismatch" and "w0" in res.message, res.report()
    if hidden == 4:  # bw1 (4, 4) has w1's shape: set aside by one sample more
        assert any("bw1" in n and "follows the batch" in n for n in res.notes), res.notes


# -- backward(delta, eta, reg_lambda): a step with a weight decay beside its size (299) ------
class _DecayLinear:
    """``w`` of shape ``(out, in + 1)``, column 0 the bias; the backward steps it with an
    L2 decay and returns the input gradient."""

    def __init__(self, drop_bias_step=False, third="reg_lambda"):
        self.w = np.random.default_rng(36).standard_normal((3, 5))
        self.drop = drop_bias_step

    def forward(self, x):
        self.x = x
        return x @ self.w[:, 1:].T + self.w[:, 0]

    def backward(self, delta, eta, reg_lambda):
        delta_ = delta @ self.w[:, 1:]
        self.w[:, 1:] *= 1 - eta * reg_lambda
        self.w[:, 1:] -= eta * delta.T @ self.x
        if not self.drop:  # BUG when dropped: the bias column never steps
            self.w[:, 0] -= eta * delta.sum(0)
        return delta_


class _BatchLinear(_DecayLinear):
    def backward(self, delta, eta, batch_size):  # a third argument no step can do without
        delta_ = delta @ self.w[:, 1:]
        self.w[:, 1:] -= eta * delta.T @ self.x / batch_size * len(self.x)
        self.w[:, 0] -= eta * delta.sum(0) / batch_size * len(self.x)
        return delta_


@pytest.mark.parametrize("drop", [False, True])
def test_a_step_s_settings_beside_its_size_are_given_zero(drop):
    x = np.random.default_rng(37).standard_normal((4, 4))
    res = gradcheck.check_layer(_DecayLinear(drop), x)
    assert res.passed is not drop, res.report()
    assert [i.name for i in res.inputs] == ["x0", "w"], res.report()
    assert any("reg_lambda given 0.0" in n for n in res.notes), res.notes
    if drop:
        assert res.status == "mismatch" and res.inputs[1].status == "mismatch", res.report()


def test_a_setting_that_cannot_be_zero_is_no_such_reading():
    x = np.random.default_rng(38).standard_normal((4, 4))
    res = gradcheck.check_layer(_BatchLinear(), x)
    assert res.status not in ("mismatch", "shape-mismatch", "non-finite"), res.report()
    assert not any("given 0.0" in n for n in res.notes), res.notes


# -- backward(z, a, delta) returning (da, dz): the derivative beside the gradient (303) -------
class _Softplus:
    def forward(self, z):
        return np.log1p(np.exp(z))

    def backward(self, z, a, delta):
        p = np.exp(z)
        da = p / (1 + p)
        dz = delta * da
        return da, dz


class _SoftplusBroken(_Softplus):
    def backward(self, z, a, delta):
        da = np.exp(z)  # BUG: the 1 / (1 + p) factor dropped
        return da, delta * da


class _SoftplusTwoMoving(_Softplus):
    def backward(self, z, a, delta):  # both move with delta: which one is dz, no motion says
        da = np.exp(z) / (1 + np.exp(z))
        return delta * da, 2 * delta * da


@pytest.mark.parametrize(("cls", "ok"), [(_Softplus, True), (_SoftplusBroken, False)])
def test_the_one_returned_item_moving_with_dout_is_the_gradient(cls, ok):
    z = np.random.default_rng(39).standard_normal((3, 4))
    res = gradcheck.check_layer(cls(), z)
    assert res.passed is ok, res.report()
    assert any("item 1 doubles with the output gradient" in n for n in res.notes), res.notes
    if not ok:
        assert res.status == "mismatch", res.report()


def test_two_returned_items_moving_with_dout_are_not_picked():
    z = np.random.default_rng(40).standard_normal((3, 4))
    res = gradcheck.check_layer(_SoftplusTwoMoving(), z)
    assert not res.passed and not any("doubles with the output" in n for n in res.notes)


class _LeakyZero:
    def forward(self, z):
        return np.where(z > 0, z, 0.1 * z)

    def backward(self, z, a, delta):
        da = np.where(z > 0, 1.0, 0.1)
        dz = 0  # the repository's bug: the gradient returned is the number 0
        return da, dz


def test_a_number_returned_under_the_input_s_gradient_name_is_read_as_its_gradient():
    z = np.random.default_rng(41).standard_normal(6) + 0.5
    res = gradcheck.check_layer(_LeakyZero(), z)
    assert res.status == "shape-mismatch", res.report()
    assert any("read as the gradient of z (by its name)" in n for n in res.notes), res.notes


# -- layers wired by boxes, Caffe's blobs: forward() and backward() take nothing (301) --------
class _Box:
    def __init__(self, value):
        self.value = value
        self.grad = np.zeros_like(value)


class _Source:
    def __init__(self, value):
        self.top = _Box(value)


class _Dense:
    """``self.bottom`` is the previous layer's ``top``; the caller writes the output
    gradient into ``self.top.grad``; the backward adds into the boxes' ``.grad``."""

    def __init__(self, prev, n_out, forget_bias=False):
        rng = np.random.default_rng(42)
        self.bottom = prev.top
        self.weights = _Box(rng.standard_normal((prev.top.value.shape[1], n_out)))
        self.bias = _Box(rng.standard_normal(n_out))
        self.top = _Box(np.zeros((prev.top.value.shape[0], n_out)))
        self.forget_bias = forget_bias

    def forward(self):
        self.top.value = np.tanh(self.bottom.value @ self.weights.value + self.bias.value)

    def backward(self):
        dz = self.top.grad * (1 - self.top.value ** 2)
        self.bottom.grad += dz @ self.weights.value.T
        self.weights.grad += self.bottom.value.T @ dz
        if not self.forget_bias:  # BUG when forgotten: the bias's .grad is never written
            self.bias.grad += dz.sum(axis=0)


class _SquaredError:
    def __init__(self, prev, labels, halve=False):
        self.bottom, self.labels, self.halve = prev.top, labels.top, halve
        self.loss = _Box(np.zeros(1))

    def forward(self):
        self.loss.value = np.mean((self.bottom.value - self.labels.value) ** 2)

    def backward(self):
        n = self.bottom.value.size * (2 if self.halve else 1)  # BUG when halved
        self.bottom.grad += 2 * (self.bottom.value - self.labels.value) / n * self.loss.grad


@pytest.mark.parametrize("forget_bias", [False, True])
def test_a_layer_wired_by_boxes_is_read_through_them(forget_bias):
    x = _Source(np.random.default_rng(43).standard_normal((3, 4)))
    res = gradcheck.check_layer(_Dense(x, 2, forget_bias))
    assert [i.name for i in res.inputs] == ["bottom", "weights", "bias"], res.report()
    assert any("output gradient written into top.grad" in n for n in res.notes), res.notes
    assert res.passed is not forget_bias, res.report()
    if forget_bias:  # a .grad never written is no constant: its zero gradient is wrong
        assert res.status == "mismatch" and res.inputs[2].status == "mismatch", res.report()


@pytest.mark.parametrize("halve", [False, True])
def test_a_loss_wired_by_boxes_holds_its_labels_constant(halve):
    rng = np.random.default_rng(44)
    pred, labels = _Source(rng.standard_normal((3, 2))), _Source(rng.standard_normal((3, 2)))
    res = gradcheck.check_layer(_SquaredError(pred, labels, halve))
    by = {i.name: i for i in res.inputs}
    assert by["labels"].status == "constant" and by["bottom"].checked, res.report()
    assert res.passed is not halve, res.report()
    if halve:
        assert res.status == "mismatch" and by["bottom"].status == "mismatch", res.report()


class _BoxNet:
    """Two boxed layers in a list: the first one's ``top`` is rebound by the forward, an
    inner output, not a parameter."""

    def __init__(self, x, skip_first=False):
        self.layers = [_Dense(x, 3)]
        self.layers.append(_Dense(self.layers[0], 2))
        self.top, self.skip_first = self.layers[-1].top, skip_first

    def forward(self):
        for layer in self.layers:
            layer.forward()

    def backward(self):
        for layer in reversed(self.layers[1:] if self.skip_first else self.layers):  # BUG
            layer.backward()


@pytest.mark.parametrize("skip_first", [False, True])
def test_a_container_of_boxed_layers_leaves_inner_outputs_unchecked(skip_first):
    x = _Source(np.random.default_rng(45).standard_normal((3, 4)))
    res = gradcheck.check_layer(_BoxNet(x, skip_first))
    names = [i.name for i in res.inputs]
    assert "layers[0].top" not in names and "layers[0].weights" in names, res.report()
    assert res.passed is not skip_first, res.report()
    if skip_first:
        assert res.status == "mismatch", res.report()


# -- review 107: where these readings must not reach -------------------------------------------
class _LoneScale:
    """A learnable scale built as ones on the first forward, its gradient forgotten: no
    ones vector of the batch (no parameter beside it has a gradient)."""

    def __init__(self):
        self.gamma = None

    def forward(self, x):
        if self.gamma is None or self.gamma.shape[0] != x.shape[0]:
            self.gamma = np.ones((x.shape[0], 1))
        return self.gamma * x

    def backward(self, dout):
        return self.gamma * dout


def test_a_lone_scale_built_as_ones_is_no_batch_state():
    x = np.random.default_rng(46).standard_normal((3, 5))
    with pytest.raises(gradcheck.LayerConventionError, match="gamma"):
        gradcheck.check_layer(_LoneScale(), x)


class _BareOff(_CrossEntropy):
    def backward(self, _=None):  # given a gradient it scales; bare, the 1/N is missing
        p, y = self.cache
        return (p - y) if _ is None else (p - y) / len(p) * _


def test_a_backward_whose_bare_call_differs_from_a_unit_gradient_is_a_mismatch():
    rng = np.random.default_rng(47)
    x, y = rng.standard_normal((4, 3)), np.eye(3)[[0, 2, 1, 1]]
    res = gradcheck.check_layer(_BareOff(), x, y)
    assert res.status == "mismatch" and "called with no argument" in res.message, res.report()


class _Tempered:
    """A boxed softmax with a learnable temperature box ``T``, named like a target."""

    def __init__(self, prev, forget=False):
        self.bottom, self.forget = prev.top, forget
        self.T = _Box(np.array([1.5]))
        self.top = _Box(np.zeros_like(prev.top.value))

    def forward(self):
        z = self.bottom.value / self.T.value
        e = np.exp(z - z.max(1, keepdims=True))
        self.top.value = e / e.sum(1, keepdims=True)

    def backward(self):
        s, g = self.top.value, self.top.grad
        dz = s * (g - (g * s).sum(1, keepdims=True))
        self.bottom.grad += dz / self.T.value
        if not self.forget:  # BUG when forgotten: T's .grad never written
            self.T.grad += np.array([-(dz * self.bottom.value).sum() / self.T.value[0] ** 2])


@pytest.mark.parametrize("forget", [False, True])
def test_a_box_named_like_targets_outside_a_loss_is_checked(forget):
    x = _Source(np.random.default_rng(48).standard_normal((3, 4)))
    res = gradcheck.check_layer(_Tempered(x, forget))
    by = {i.name: i for i in res.inputs}
    assert by["T"].checked, res.report()
    assert res.passed is not forget, res.report()


class _TwoOutputs:
    def __init__(self, prev, ignore_aux=False):
        self.bottom, self.ignore = prev.top, ignore_aux
        self.W = _Box(np.random.default_rng(49).standard_normal((4, 2)))
        self.top, self.aux = _Box(np.zeros((3, 2))), _Box(np.zeros((3, 2)))

    def forward(self):
        self.z = self.bottom.value @ self.W.value
        self.top.value, self.aux.value = np.tanh(self.z), self.z ** 2

    def backward(self):
        dz = self.top.grad * (1 - self.top.value ** 2)
        if not self.ignore:
            dz = dz + self.aux.grad * 2 * self.z
        self.bottom.grad += dz @ self.W.value.T
        self.W.grad += self.bottom.value.T @ dz


@pytest.mark.parametrize("ignore_aux", [False, True])
def test_two_output_boxes_are_no_reading(ignore_aux):
    x = _Source(np.random.default_rng(50).standard_normal((3, 4)))
    res = gradcheck.check_layer(_TwoOutputs(x, ignore_aux))
    assert res.status == "bad-protocol" and "several boxes" in res.message, res.report()


# -- a gradient handed to an optimizer that hands the stepped weights on (corpus 305) -------
class _Sgd:
    lr = 0.5

    def calculate_update(self, weights, gradient):
        return self.apply_regularization(weights - self.lr * gradient, weights)

    def apply_regularization(self, stepped, weights):  # called inside: stepped weights first
        return stepped


class _SelfStepping:
    def __init__(self, bug=False):
        self.weights = np.random.default_rng(51).standard_normal((4, 3))
        self.opt, self.bug = _Sgd(), bug

    def forward(self, x):
        self.x = x
        return np.tanh(x @ self.weights)

    def backward(self, dy):
        dz = dy * (1 - np.tanh(self.x @ self.weights) ** 2)
        dx = dz @ self.weights.T
        grad = self.x.T @ (dy if self.bug else dz)  # BUG: the tanh derivative dropped
        self.weights = self.opt.calculate_update(self.weights, grad)
        return dx


@pytest.mark.parametrize("bug", [False, True])
def test_only_the_calls_the_layer_makes_hand_it_a_gradient(bug):
    x = np.random.default_rng(52).standard_normal((2, 4))
    res = gradcheck.check_layer(_SelfStepping(bug), x)
    assert [i.name for i in res.inputs] == ["x0", "weights"], res.report()
    assert res.passed is not bug, res.report()
    if bug:
        assert res.inputs[1].status == "mismatch", res.report()


# -- a forward's second value handed back by its name, never read (corpus 304) --------------
class _Recurrent:
    def __init__(self, bug=False):
        rng = np.random.default_rng(53)
        self.W, self.U, self.bug = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(
            (4, 4)) * 0.5, bug

    def forward(self, xs):
        self.xs, h, outputs, hidden_states = xs, np.zeros((xs.shape[0], 4)), [], []
        for t in range(xs.shape[1]):
            h = np.tanh(xs[:, t] @ self.W + h @ self.U)
            hidden_states.append(h)
        self.hs = hidden_states
        outputs = np.stack(hidden_states, axis=1)
        return outputs, hidden_states

    def backward(self, d_outputs, hidden_states):  # handed back; the layer reads its own
        dxs, dh = np.zeros_like(self.xs), np.zeros((self.xs.shape[0], 4))
        self.dW, self.dU = np.zeros_like(self.W), np.zeros_like(self.U)
        for t in reversed(range(self.xs.shape[1])):
            dz = (d_outputs[:, t] + (0 if self.bug else dh)) * (1 - self.hs[t] ** 2)  # BUG
            prev = self.hs[t - 1] if t else np.zeros_like(dh)
            self.dW += self.xs[:, t].T @ dz
            self.dU += prev.T @ dz
            dxs[:, t] = dz @ self.W.T
            dh = dz @ self.U.T
        return dxs


@pytest.mark.parametrize("bug", [False, True])
def test_a_second_value_handed_back_by_its_name_is_no_output(bug):
    xs = np.random.default_rng(54).standard_normal((2, 3, 3))
    res = gradcheck.check_layer(_Recurrent(bug), xs)
    assert res.passed is not bug, res.report()
    assert [i.name for i in res.inputs] == ["x0", "W", "U"], res.report()


# -- gradients of a list's items found in different items by shape (corpus 305) -------------
class _ListNet:
    """``params[i] = {'W', 'b'}``; ``gradients`` appended last layer first with ``dW``
    transposed (``reverse``), or in the layers' order as the params (not)."""

    def __init__(self, reverse, bug=False):
        rng = np.random.default_rng(55)
        self.params = [{"W": rng.standard_normal((5, 3)), "b": rng.standard_normal((1, 5))},
                       {"W": rng.standard_normal((3, 5)), "b": rng.standard_normal((1, 3))}]
        self.reverse, self.bug = reverse, bug

    def forward(self, x):
        self.a0 = x
        self.z1 = x @ self.params[0]["W"].T + self.params[0]["b"]
        self.a1 = np.tanh(self.z1)
        return self.a1 @ self.params[1]["W"].T + self.params[1]["b"]

    def backward(self, dy):
        dz1 = (dy @ self.params[1]["W"]) * (1 - (1 if self.bug else self.a1 ** 2))  # BUG
        grads = [{"dW": dz1.T @ self.a0, "db": dz1.sum(0, keepdims=True)},
                 {"dW": dy.T @ self.a1, "db": dy.sum(0, keepdims=True)}]
        if self.reverse:
            grads = [{"dW": g["dW"].T, "db": g["db"]} for g in grads[::-1]]
        self.gradients = grads
        return dz1 @ self.params[0]["W"]


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_of_one_item_found_in_different_items_are_no_reading(bug):
    x = np.random.default_rng(56).standard_normal((4, 3))
    res = gradcheck.check_layer(_ListNet(True, bug), x)
    assert res.status == "bad-protocol" and "different items" in res.message, res.report()


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_of_one_item_in_one_item_are_read(bug):
    x = np.random.default_rng(57).standard_normal((4, 3))
    res = gradcheck.check_layer(_ListNet(False, bug), x)
    assert res.passed is not bug, res.report()
    assert {i.name for i in res.inputs} >= {"params[0]['W']", "params[1]['b']"}, res.report()


# -- a forward keeping its caches only in training mode (corpus 304) -------------------------
class _TrainingCaches:
    def __init__(self, bug=False):
        self.W = np.random.default_rng(58).standard_normal((3, 2))
        self.cache, self.bug = None, bug

    def forward(self, x, training=False):
        z = x @ self.W
        if training:  # what the backward needs, kept only when a training loop calls it
            self.cache = (x, z)
        return np.tanh(z)

    def backward(self, dy):
        x, z = self.cache
        dz = dy * (1 - np.tanh(z) ** 2)
        self.dW = x.T @ (dy if self.bug else dz)  # BUG: the tanh derivative dropped
        return dz @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_a_forward_caching_only_in_training_mode_is_run_so(bug):
    x = np.random.default_rng(59).standard_normal((4, 3))
    res = gradcheck.check_layer(_TrainingCaches(bug), x)
    assert res.passed is not bug, res.report()
    assert any("training=True" in n for n in res.notes), res.notes
    if bug:
        assert res.inputs[1].status == "mismatch", res.report()


# -- operation objects of a small autograd engine, on boxes (corpus 308) ---------------------
class _T:
    def __init__(self, v):
        self.v, self.fn = np.asarray(v), None


class _Op:
    def __call__(self, *args):
        out = self.forward(*args)
        self.needs_grad = [isinstance(a, _T) for a in args]  # set after the forward
        out.fn = self
        return out


class _Mul(_Op):
    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, x, y):
        return _T(x.v * y.v)

    def backward(self, grad, x, y):
        return [_T(grad.v * y.v) if self.needs_grad[0] else None,
                _T(grad.v * (y.v if self.bug else x.v)) if self.needs_grad[1] else None]  # BUG


@pytest.mark.parametrize("bug", [False, True])
def test_an_operation_object_on_boxes_is_called_and_boxed_as_its_engine_does(bug):
    rng = np.random.default_rng(60)
    x, y = _T(rng.standard_normal((3, 4))), _T(rng.standard_normal((3, 4)))
    res = gradcheck.check_layer(_Mul(bug), x, y)
    assert [i.name for i in res.inputs] == ["x0", "x1"], res.report()
    assert res.passed is not bug, res.report()
    assert any("an operation on boxes" in n for n in res.notes), res.notes
    if bug:
        assert res.inputs[1].status == "mismatch" and res.inputs[0].passed, res.report()


# -- a loss pair whose gradient is told as one number (corpus 311) ---------------------------
def _xent(y, y_hat):
    return -float(y @ np.log(y_hat))


def _xent_number(y, y_hat):
    return 1  # "in the case of the softmax being used": no gradient of y_hat


def _xent_grad(y, y_hat):
    return -y / y_hat


@pytest.mark.parametrize(("grad", "status"), [(_xent_number, "shape-mismatch"),
                                               (_xent_grad, "ok")])
def test_a_loss_gradient_told_as_a_number_is_read_for_the_prediction(grad, status):
    y = np.eye(5)[2]
    y_hat = np.random.default_rng(61).uniform(0.1, 0.9, 5)
    res = gradcheck.check_vjp(_xent, grad, [y, y_hat])
    assert res.status == status, res.report()
    assert "gradient of y_hat" in " ".join(res.notes), res.notes


class _Sub:
    def __init__(self, opt, seed, bug=False):
        self.W, self.opt, self.bug = np.random.default_rng(seed).standard_normal((3, 3)), opt, bug

    def forward(self, x):
        self.x = x
        return np.tanh(x @ self.W)

    def backward(self, dy):
        dz = dy * (1 - np.tanh(self.x @ self.W) ** 2)
        dx = dz @ self.W.T
        self.W = self.opt.calculate_update(self.W, self.x.T @ (dy if self.bug else dz))  # BUG
        return dx


class _Block:
    """Sub-layers whose backwards hand their gradients to one optimizer: calls a sub-layer
    makes are the layer's (only the optimizer's calls inside its own are not)."""

    def __init__(self, bug=False):
        opt = _Sgd()
        self.a, self.b = _Sub(opt, 62), _Sub(opt, 63, bug)

    def forward(self, x):
        return self.b.forward(self.a.forward(x))

    def backward(self, dy):
        return self.a.backward(self.b.backward(dy))


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_sub_layers_hand_an_optimizer_are_read(bug):
    x = np.random.default_rng(64).standard_normal((2, 3))
    res = gradcheck.check_layer(_Block(bug), x)
    assert {i.name for i in res.inputs} == {"x0", "a.W", "b.W"}, res.report()
    assert res.passed is not bug, res.report()
