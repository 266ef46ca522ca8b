"""Code read by observing what it does (issue 30): layers in conventions no list of names
covers, each checked with the plainest call, ``check_layer(layer, *inputs)``.

Every observation has a correct layer that passes and a broken twin that fails with a
gradient verdict (``mismatch``), not a protocol complaint. The layers are written here in
the styles of from-scratch code bases: a forward that returns nothing and stores its
output, a backward that stores ``self.dweights``, ``self.params = [W, b]`` with
``dX, [dW, db]`` returned, stateless gates taking the inputs again, ``forward_pass``
method names, losses whose backward takes the prediction instead of an output gradient.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import gradcheck

RNG = np.random.default_rng(30)
X = RNG.standard_normal((4, 3)) + 0.05
P = RNG.random((4, 3)) * 0.8 + 0.1  # probabilities, away from 0 and 1
LABELS = np.array([0, 2, 1, 1])


# -- a forward that stores its output, a backward that stores its gradients --------------------
class StoredDense:
    def __init__(self, broken: bool = False, bias_shape: tuple[int, ...] = (1, 2)):
        r = np.random.default_rng(1)
        self.weights = 0.5 * r.standard_normal((3, 2))
        self.biases = r.standard_normal(bias_shape)
        self.broken = broken

    def forward(self, inputs, training):
        self.inputs = inputs
        self.output = inputs @ self.weights + self.biases

    def backward(self, dvalues):
        self.dweights = self.inputs.T @ dvalues
        self.dbiases = dvalues.sum(axis=0, keepdims=True) * (2.0 if self.broken else 1.0)
        self.dinputs = dvalues @ self.weights.T


def _verdict(res: gradcheck.CheckResult, broken: bool) -> None:
    if broken:
        assert res.status == "mismatch", res.report()
    else:
        assert res.passed, res.report()
        assert all(i.checked > 0 for i in res.inputs
                   if i.status not in ("constant", "skipped"))


@pytest.mark.parametrize("broken", [False, True])
def test_stored_output_and_stored_gradients(broken):
    res = gradcheck.check_layer(StoredDense(broken), X, True)
    _verdict(res, broken)
    assert [i.name for i in res.inputs] == ["x0", "x1", "weights", "biases"]
    assert "StoredDense.forward returns nothing: its output is what it stores in output" \
        in res.notes
    assert res.inputs[1].status == "skipped"  # the training flag


@pytest.mark.parametrize("broken", [False, True])
def test_a_gradient_with_a_size_one_axis_less_gets_a_verdict_and_a_note(broken):
    class Flat(StoredDense):
        def backward(self, dvalues):
            super().backward(dvalues)
            self.dbiases = self.dbiases.reshape(-1)  # (2,) for biases (1, 2)

    res = gradcheck.check_layer(Flat(broken), X, True)
    _verdict(res, broken)
    assert any("gradient of biases has shape (2,), biases has (1, 2)" in n for n in res.notes)


def test_a_gradient_whose_shape_differs_otherwise_is_still_a_shape_mismatch():
    class Wrong(StoredDense):
        def backward(self, dvalues):
            super().backward(dvalues)
            self.dweights = self.dweights.T

    res = gradcheck.check_layer(Wrong(), X, True)
    assert res.status == "shape-mismatch"
    assert "gradient of weights (stored in dweights) has shape (2, 3), expected (3, 2)" \
        in res.message


class Identity:
    def forward(self, inputs, training):
        self.inputs = inputs
        self.output = inputs  # the input itself, under another name

    def backward(self, dvalues):
        self.dinputs = dvalues.copy()


def test_an_identity_forward_that_keeps_its_input_as_the_output():
    res = gradcheck.check_layer(Identity(), X, True)
    assert res.passed, res.report()

    class Halved(Identity):
        def backward(self, dvalues):
            self.dinputs = dvalues / 2

    assert gradcheck.check_layer(Halved(), X, True).status == "mismatch"


class GlobalDropout:
    """A mask drawn from the global np.random on every training forward."""

    def __init__(self, rate: float, broken: bool = False):
        self.keep, self.broken = 1 - rate, broken

    def forward(self, inputs, training):
        self.inputs, self.training = inputs, training
        if not training:
            self.output = inputs.copy()
            return
        self.mask = np.random.binomial(1, self.keep, size=inputs.shape) / self.keep  # noqa: NPY002
        self.output = inputs * self.mask

    def backward(self, dvalues):
        mask = self.mask if self.training else 1.0
        self.dinputs = dvalues * (mask > 0 if self.broken else mask)


@pytest.mark.parametrize("broken", [False, True])
def test_a_mask_from_the_global_generator_is_the_same_in_every_evaluation(broken):
    np.random.seed(5)  # noqa: NPY002 - the user's global state
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    res = gradcheck.check_layer(GlobalDropout(0.4, broken), X, True)
    _verdict(res, broken)
    assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002 - put back


def test_a_mask_left_by_an_earlier_call_is_state_in_eval_mode():
    layer = GlobalDropout(0.4)
    layer.forward(X, True)  # an earlier training step left layer.mask
    layer.backward(np.ones_like(X))
    res = gradcheck.check_layer(layer, X, False)
    assert res.passed, res.report()
    assert any(n.startswith("state: the output does not depend on") and "mask" in n
               for n in res.notes), res.notes

    class Scaled(GlobalDropout):
        def backward(self, dvalues):
            super().backward(dvalues)
            self.dinputs = self.dinputs * 1.01

    old = Scaled(0.4)
    old.forward(X, True)
    assert gradcheck.check_layer(old, X, False).status == "mismatch"


class TwoStored:
    def forward(self, x):
        self.z = x * 2.0
        self.a = np.tanh(self.z)

    def backward(self, d):
        self.dx = d * (1 - self.a ** 2) * 2.0


def test_several_stored_outputs_are_an_error_that_names_them_and_the_keyword():
    res = gradcheck.check_layer(TwoStored(), X)
    assert res.status == "bad-protocol"
    assert "z (4, 3) float64, a (4, 3) float64" in res.message and "output='...'" in res.message
    assert gradcheck.check_layer(TwoStored(), X, output="a").passed

    class Broken(TwoStored):
        def backward(self, d):
            self.dx = d * (1 - self.a ** 2)

    assert gradcheck.check_layer(Broken(), X, output="a").status == "mismatch"


# -- returned gradients: dX, [dW, db] ----------------------------------------------------------
class ListDense:
    def __init__(self, broken: bool = False):
        r = np.random.default_rng(2)
        self.params = [r.standard_normal((3, 2)), r.standard_normal(2)]
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.params[0] + self.params[1]

    def backward(self, d):
        db = d.mean(axis=0) if self.broken else d.sum(axis=0)
        return d @ self.params[0].T, [self.x.T @ d, db]


class ListTanh:
    params: list[np.ndarray] = []

    def __init__(self, broken: bool = False):
        self.broken = broken

    def forward(self, x):
        self.y = np.tanh(x)
        return self.y

    def backward(self, d):
        return d * (1 - self.y ** (1 if self.broken else 2)), []


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("kind", [ListDense, ListTanh])
def test_parameter_gradients_returned_beside_the_input_gradient(kind, broken):
    res = gradcheck.check_layer(kind(broken), X)
    _verdict(res, broken)
    if kind is ListDense:
        assert [i.name for i in res.inputs] == ["x0", "params[0]", "params[1]"]


# -- stateless gates: backward takes the inputs again ------------------------------------------
class MultiplyGate:
    def forward(self, W, x):
        return W @ x

    def backward(self, W, x, dz):
        return dz @ x.T, W.T @ dz


class DoutFirstGate(MultiplyGate):
    def backward(self, dz, x, W):  # the signature's names say which is which
        return dz @ x.T, W.T @ dz


class BrokenMultiplyGate(MultiplyGate):
    def backward(self, W, x, dz):
        return dz @ x.T, 0.5 * W.T @ dz


class BrokenDoutFirstGate(MultiplyGate):
    def backward(self, dz, x, W):
        return (dz @ x.T).T.reshape(W.shape), W.T @ dz


@pytest.mark.parametrize(("kind", "broken"), [
    (MultiplyGate, False), (DoutFirstGate, False), (BrokenMultiplyGate, True),
    (BrokenDoutFirstGate, True)])
def test_a_backward_that_takes_the_inputs_again(kind, broken):
    W, x = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))
    res = gradcheck.check_layer(kind(), W, x)
    _verdict(res, broken)
    assert any("backward takes the forward's inputs again" in n for n in res.notes)


# -- methods found by their names --------------------------------------------------------------
class PassLayer:
    def __init__(self, broken: bool = False):
        self.W = np.random.default_rng(3).standard_normal((3, 2))
        self.broken = broken

    def forward_pass(self, X, training=True):
        self.X = X
        return X @ self.W

    def backward_pass(self, accum_grad):
        self.grad_W = self.X.T @ accum_grad * (1.5 if self.broken else 1.0)
        return accum_grad @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_forward_pass_and_backward_pass_are_found(broken):
    res = gradcheck.check_layer(PassLayer(broken), X)
    _verdict(res, broken)
    assert "methods found by their names: forward_pass (forward) and backward_pass " \
        "(backward)" in res.notes


def test_fprop_and_bprop_are_found_and_ambiguity_is_an_error_that_lists_them():
    class Prop:
        def fprop(self, x):
            self.x = x
            return x * 3.0

        def bprop(self, d):
            return d * 3.0

    assert gradcheck.check_layer(Prop(), X).passed

    class Both(Prop):
        def forward_pass(self, x):
            return x

        def backward_pass(self, d):
            return d

    with pytest.raises(TypeError, match="forward-like forward_pass, fprop; "
                       "backward-like backward_pass, bprop.*forward="):
        gradcheck.check_layer(Both(), X)


# -- settings dicts and forward flags are constants --------------------------------------------
def bn_forward(x, gamma, beta, bn_param):
    eps = bn_param.get("eps", 1e-5)
    mu = x.mean(axis=0)
    std = np.sqrt(x.var(axis=0) + eps)
    xn = (x - mu) / std
    if bn_param["mode"] == "train":
        bn_param["running_mean"] = bn_param["momentum"] * bn_param["running_mean"] + (
            1 - bn_param["momentum"]) * mu
    return gamma * xn + beta, (xn, gamma, std)


def bn_backward(dout, cache, broken=False):
    xn, gamma, std = cache
    dxn = dout * gamma
    mean = 0.0 if broken else dxn.mean(axis=0)
    return (dxn - mean - xn * (dxn * xn).mean(axis=0)) / std, (dout * xn).sum(0), dout.sum(0)


@pytest.mark.parametrize("broken", [False, True])
def test_a_settings_dict_holding_strings_is_a_constant(broken):
    bn_param = {"mode": "train", "eps": 1e-5, "momentum": 0.9,
                "running_mean": np.zeros(3), "running_var": np.ones(3)}
    res = gradcheck.check_vjp(bn_forward, lambda d, c: bn_backward(d, c, broken),
                              [X, np.ones(3) * 1.1, np.zeros(3), bn_param])
    _verdict(res, broken)
    assert res.inputs[-1].status == "constant" or res.inputs[-1].name.startswith("x3")
    assert any("settings" in n for n in res.notes), res.notes
    assert bn_param["mode"] == "train" and not np.any(bn_param["running_mean"])  # untouched


# -- losses whose backward takes the prediction, not an output gradient ------------------------
class CrossEntropy:
    def __init__(self, broken: bool = False):
        self.broken = broken

    def calculate(self, output, y):  # the mean the training loop reports
        return np.mean(self.forward(output, y))

    def forward(self, y_pred, y_true):
        return -np.log(y_pred[range(len(y_pred)), y_true])  # one loss per sample

    def backward(self, dvalues, y_true):
        samples, labels = len(dvalues), len(dvalues[0])
        self.dinputs = -np.eye(labels)[y_true] / dvalues
        if not self.broken:
            self.dinputs = self.dinputs / samples


class SquaredError(CrossEntropy):
    def forward(self, y_pred, y_true):
        return np.mean((y_true - y_pred) ** 2, axis=-1)

    def backward(self, dvalues, y_true):
        samples, outputs = len(dvalues), len(dvalues[0])
        self.dinputs = -2 * (y_true - dvalues) / outputs / (1 if self.broken else samples)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_whose_backward_takes_the_prediction(broken):
    res = gradcheck.check_layer(CrossEntropy(broken), P, LABELS)
    _verdict(res, broken)
    assert any("checked as the gradient of their mean (calculate returns their mean)" in n
               for n in res.notes), res.notes
    res = gradcheck.check_layer(SquaredError(broken), P, RNG.random((4, 3)))
    _verdict(res, broken)
    assert res.inputs[1].status == "constant"  # the float target


class _SoftmaxCE:
    """nnfs's combined softmax and cross-entropy: backward(dvalues, y_true) takes the
    softmax output the forward stored (or its input, which has the same shape)."""

    def __init__(self, broken=False, raises=False):
        self.broken, self.raises = broken, raises

    def forward(self, inputs, y_true):
        e = np.exp(inputs - inputs.max(axis=1, keepdims=True))
        self.output = e / e.sum(axis=1, keepdims=True)
        return np.mean(-np.log(self.output[range(len(inputs)), y_true]))

    def backward(self, dvalues, y_true):
        if self.raises:
            raise RuntimeError("no gradient today")
        self.dinputs = dvalues.copy()
        self.dinputs[range(len(dvalues)), y_true] -= 0.5 if self.broken else 1
        self.dinputs = self.dinputs / len(dvalues)


def test_a_loss_backward_that_passes_under_one_reading_only_is_no_verdict():
    res = gradcheck.check_layer(_SoftmaxCE(), X, LABELS)
    assert res.status == "bad-protocol" and not res.passed, res.report()
    assert "cannot tell which" in res.message and "check_loss" in res.message
    assert "It passes when given output and not when given x0" in res.message


def test_a_loss_backward_wrong_under_every_reading_is_a_mismatch():
    res = gradcheck.check_layer(_SoftmaxCE(broken=True), X, LABELS)
    assert res.status == "mismatch", res.report()
    assert any("the gradient is wrong under each reading (shown: output, the nearest)"
               in n for n in res.notes), res.notes


def test_a_loss_backward_no_reading_of_which_gives_a_verdict_stays_an_error():
    res = gradcheck.check_layer(_SoftmaxCE(raises=True), X, LABELS)
    assert res.status in ("bad-protocol", "error"), res.report()
    assert not res.passed


# -- gradients handed to an optimizer, or attached to the parameter -----------------------------
class Momentum:
    def __init__(self, lr: float = 0.01):
        self.lr, self.velocity = lr, None

    def update(self, w, grad_wrt_w):
        self.velocity = grad_wrt_w if self.velocity is None else 0.9 * self.velocity + grad_wrt_w
        return w - self.lr * self.velocity


class SelfUpdating:
    """A backward that updates its own weights through optimizers it holds."""

    def __init__(self, broken: bool = False):
        r = np.random.default_rng(6)
        self.W, self.w0 = r.standard_normal((3, 2)), r.standard_normal((1, 2))
        self.W_opt, self.w0_opt = Momentum(), Momentum()
        self.trainable, self.broken = True, broken

    def forward_pass(self, X, training=True):
        self.layer_input = X
        return X @ self.W + self.w0

    def backward_pass(self, accum_grad):
        W = self.W
        grad_w = self.layer_input.T @ accum_grad
        grad_w0 = accum_grad.sum(axis=0, keepdims=True) * (-1.0 if self.broken else 1.0)
        self.W = self.W_opt.update(self.W, grad_w)
        self.w0 = self.w0_opt.update(self.w0, grad_w0)
        return accum_grad @ W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_gradient_handed_to_an_optimizer_the_layer_holds(broken):
    res = gradcheck.check_layer(SelfUpdating(broken), X)
    _verdict(res, broken)
    assert [i.name for i in res.inputs] == ["x0", "W", "w0"]
    assert any("what the backward hands to W_opt.update beside it" in n for n in res.notes)
    if broken:
        assert [i.name for i in res.inputs if not i.passed] == ["w0"]


class GradArray(np.ndarray):
    """A parameter that carries its gradient: an ndarray subclass with .grad."""

    def __new__(cls, data):
        self = np.asarray(data, dtype=float).copy().view(cls)
        self.grad = None
        return self


class CarriesGrad:
    def __init__(self, broken: bool = False):
        r = np.random.default_rng(7)
        self.params = [GradArray(r.standard_normal((3, 2))), GradArray(np.zeros(2))]
        self.W, self.b = self.params
        self.broken = broken

    def forward(self, X):
        self.X = X
        return X @ self.W + self.b

    def backward(self, d):
        self.W.grad = np.asarray(self.X.T @ d) * (0.5 if self.broken else 1.0)
        self.b.grad = np.asarray(d.sum(axis=0))
        return np.asarray(d @ self.W.T)


@pytest.mark.parametrize("broken", [False, True])
def test_a_gradient_attached_to_the_parameter_array(broken):
    res = gradcheck.check_layer(CarriesGrad(broken), X)
    _verdict(res, broken)
    assert len(res.inputs) == 3
    assert any("what the backward attached to it" in n for n in res.notes), res.notes


def test_a_layer_with_no_backward_like_method_says_which_methods_it_has():
    class NoBackward:  # two methods taking one argument: observation cannot pick one
        def forward(self, x):
            return x

        def grad_fn(self, d):
            return d

        def scale(self, d):
            return 2 * d

    with pytest.raises(TypeError, match=r"no backward-like method \(its methods: forward, "
                                        r"grad_fn, scale\); name it: .*backward='...'"):
        gradcheck.check_layer(NoBackward(), X)


def test_a_forward_flag_left_out_is_an_error_that_says_how_to_pass_it():
    res = gradcheck.check_layer(StoredDense(), X)
    assert res.status == "error" and "missing 1 required positional argument" in res.message
    assert "check_layer(layer, x, True)" in res.message


# -- a gradient computed in float32 for a float64 input ----------------------------------------
class Float32Buffers:
    """float64 inputs, the gradient computed in float32 with a cancellation that costs it
    about 1e-6 of relative accuracy (over float64's tolerance, under float32's)."""

    def __init__(self, scale: float = 1.0):
        self.c = np.random.default_rng(8).uniform(0.5, 1.5, (4, 3))
        self.scale = scale

    def forward(self, x):
        return x * self.c

    def backward(self, d):
        c32 = (np.float32(16) + self.c.astype("f")) - np.float32(16)
        return c32 * d.astype("f") * np.float32(self.scale)


@pytest.mark.parametrize("broken", [False, True])
def test_a_gradient_computed_in_float32_gets_float32_tolerance(broken):
    res = gradcheck.check_layer(Float32Buffers(1.001 if broken else 1.0), X, params={})
    _verdict(res, broken)
    assert any("is float32, input is float64" in n for n in res.notes)
    # the same gradient judged at float64's tolerance fails: the dtype decided it
    assert gradcheck.check_layer(Float32Buffers(), X, params={}, rtol=1e-7).status == "mismatch"


# -- functions: global draws, float scalars, a cache returned before running statistics -------
def global_dropout_forward(X, p_keep):
    u = np.random.binomial(1, p_keep, size=X.shape) / p_keep  # noqa: NPY002
    return X * u, u


@pytest.mark.parametrize("broken", [False, True])
def test_check_vjp_holds_the_global_generator_and_reads_a_float_scalar_as_a_constant(broken):
    res = gradcheck.check_vjp(global_dropout_forward,
                              lambda d, u: d * (u > 0) if broken else d * u, [X, 0.6])
    _verdict(res, broken)
    assert any("the float scalars are constants" in n for n in res.notes), res.notes


def bn_forward_with_stats(X, gamma, beta, stats, momentum=0.9):
    running_mean, running_var = stats
    mu, var = X.mean(axis=0), X.var(axis=0)
    xn = (X - mu) / np.sqrt(var + 1e-8)
    return (gamma * xn + beta, (X, xn, var, gamma), momentum * running_mean + 0.1 * mu,
            momentum * running_var + 0.1 * var)


def bn_backward_with_stats(dout, cache, broken=False):
    X, xn, var, gamma = cache
    dxn = dout * gamma
    mean = 0.0 if broken else dxn.mean(axis=0)
    dX = (dxn - mean - xn * (dxn * xn).mean(axis=0)) / np.sqrt(var + 1e-8)
    return dX, (dout * xn).sum(axis=0), dout.sum(axis=0)


@pytest.mark.parametrize("broken", [False, True])
def test_a_cache_returned_before_the_running_statistics(broken):
    res = gradcheck.check_vjp(bn_forward_with_stats,
                              lambda d, c: bn_backward_with_stats(d, c, broken),
                              [X, np.ones(3) * 1.2, np.zeros(3) + 0.1, (np.zeros(3), np.ones(3))])
    _verdict(res, broken)
    assert [i.status for i in res.inputs[3:]] == ["constant", "constant"]
    assert any("the cache (the one container)" in n for n in res.notes), res.notes


class LearningRateLayer:
    """backward(output_error, learning_rate): two arguments, not the forward's inputs."""

    def __init__(self):
        self.W = np.random.default_rng(10).standard_normal((3, 2))

    def forward(self, input_data):
        self.input = input_data
        return input_data @ self.W

    def backward(self, output_error, learning_rate):
        input_error = output_error @ self.W.T
        self.W = self.W - learning_rate * (self.input.T @ output_error)
        return input_error


class BrokenLearningRateLayer(LearningRateLayer):
    def backward(self, output_error, learning_rate):
        input_error = output_error @ self.W.T
        self.W = self.W - learning_rate * (self.input.T @ output_error) * 0.5
        return input_error


class UnusedSecondArgument:
    def forward(self, input_data):
        self.input = input_data
        return np.tanh(input_data)

    def backward(self, output_error, learning_rate):
        return (1 - np.tanh(self.input) ** 2) * output_error


@pytest.mark.parametrize(("kind", "broken"), [
    (LearningRateLayer, False), (BrokenLearningRateLayer, True), (UnusedSecondArgument, False)])
def test_a_backward_that_takes_a_step_size_and_updates_its_weights(kind, broken):
    """backward(output_error, learning_rate) is not (input, dout): the second argument is
    observed to scale the change made to the weights (or to change nothing)."""
    res = gradcheck.check_layer(kind(), X)
    _verdict(res, broken)
    assert any("backward's argument learning_rate" in n for n in res.notes), res.notes
    if kind is not UnusedSecondArgument:
        assert [i.name for i in res.inputs] == ["x0", "W"]


class Float32Inside:
    """float64 parameters and inputs, the arithmetic done in float32 buffers."""

    def __init__(self, broken: bool = False):
        r = np.random.default_rng(11)
        self.params = [r.standard_normal((3, 8))]
        self.grads = [np.zeros((3, 8))]
        self.broken = broken

    def forward(self, x):
        self.x = x.astype("f")
        self.h = np.tanh(self.x @ self.params[0].astype("f"))
        return self.h

    def backward(self, dh):
        dz = dh * (1 - self.h ** 2) * (np.float32(1.01) if self.broken else 1)
        self.grads[0][...] = self.x.T @ dz
        return dz @ self.params[0].T.astype("f")


@pytest.mark.parametrize("broken", [False, True])
def test_an_output_computed_in_float32_sets_the_steps_and_the_tolerance(broken):
    x = np.random.default_rng(12).standard_normal((5, 3))
    res = gradcheck.check_layer(Float32Inside(broken), x)
    _verdict(res, broken)
    assert any("the forward's output is float32" in n for n in res.notes), res.notes


class TokenLoss:
    """A loss per token, a backward with no argument: the gradient of their sum."""

    def __init__(self, broken: bool = False):
        self.ctx: dict[str, np.ndarray] = {}
        self.broken = broken

    def forward(self, logits, labels):
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        self.ctx["p"], self.ctx["labels"] = p, labels
        return -np.log(np.take_along_axis(p, labels[..., None], axis=-1))[..., 0]

    def backward(self):
        g = self.ctx["p"].copy()
        np.put_along_axis(g, self.ctx["labels"][..., None], np.take_along_axis(
            g, self.ctx["labels"][..., None], axis=-1) - 1, axis=-1)
        return g / (g.shape[0] if self.broken else 1)


class SharedContext(TokenLoss):
    ctx: dict[str, np.ndarray] = {}  # a class-level dict every instance writes

    def __init__(self, broken: bool = False):
        self.broken = broken


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("kind", [TokenLoss, SharedContext])
def test_a_loss_per_token_with_a_backward_taking_nothing(kind, broken):
    logits = RNG.standard_normal((2, 3, 4))
    labels = np.array([[0, 3, 1], [2, 2, 0]])
    before = dict(SharedContext.ctx)
    res = gradcheck.check_layer(kind(broken), logits, labels)
    _verdict(res, broken)
    assert any("gradient of their sum (each one's upstream gradient is one" in n
               for n in res.notes), res.notes
    assert SharedContext.ctx == before  # the class's own dict is put back


class GradsByName:
    """self.weight with its gradient in self.grads['weight'] (a dict keyed by name)."""

    def __init__(self, broken: bool = False):
        r = np.random.default_rng(13)
        self.weight, self.bias = r.standard_normal((3, 2)), r.standard_normal(2)
        self.grads: dict[str, np.ndarray] = {}
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.weight + self.bias

    def backward(self, d):
        self.grads["weight"] = self.x.T @ d
        self.grads["bias"] = d.mean(axis=0) if self.broken else d.sum(axis=0)
        return d @ self.weight.T


@pytest.mark.parametrize("broken", [False, True])
def test_gradients_in_a_dict_keyed_by_the_parameters_names(broken):
    res = gradcheck.check_layer(GradsByName(broken), X)
    _verdict(res, broken)
    assert [i.name for i in res.inputs] == ["x0", "weight", "bias"]


def test_a_gradient_found_by_its_name_with_a_wrong_shape_is_a_shape_mismatch():
    class Summed(GradsByName):
        def backward(self, d):
            super().backward(d)
            self.grads["weight"] = self.grads["weight"].sum(axis=0)  # (2,) for (3, 2)
            return d @ self.weight.T

    res = gradcheck.check_layer(Summed(), X)
    assert res.status == "shape-mismatch", res.report()
    assert "gradient of weight (stored in grads['weight']) has shape (2,), expected (3, 2)" \
        in res.message


class LossAndGrad:
    """A loss object with loss(predicted, actual) and grad(predicted, actual)."""

    def __init__(self, broken: bool = False):
        self.broken = broken

    def loss(self, predicted, actual):
        return np.sum((predicted - actual) ** 2)

    def grad(self, predicted, actual):
        return (1 if self.broken else 2) * (predicted - actual)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_and_its_gradient_found_by_what_they_return(broken):
    res = gradcheck.check_layer(LossAndGrad(broken), X, RNG.standard_normal((4, 3)))
    _verdict(res, broken)
    assert any("methods found by what they return: loss a scalar" in n for n in res.notes)


class FirstLayer:
    """backprop(d, learn_rate) updates its filters and returns None (no input gradient)."""

    def __init__(self, broken: bool = False):
        self.filters = np.random.default_rng(14).standard_normal((3, 2))
        self.broken = broken

    def forward(self, x):
        self.last_input = x
        return x @ self.filters

    def backprop(self, d_out, learn_rate):
        d_filters = self.last_input.T @ d_out * (1.1 if self.broken else 1.0)
        self.filters -= learn_rate * d_filters


@pytest.mark.parametrize("broken", [False, True])
def test_a_first_layer_whose_backward_computes_no_input_gradient(broken):
    res = gradcheck.check_layer(FirstLayer(broken), X)
    _verdict(res, broken)
    assert res.inputs[0].status == "constant" and res.inputs[1].name == "filters"
    assert any("held constant, not checked (a first layer" in n for n in res.notes)


# -- a loss that returns the gradient of another argument ---------------------------------
def _bce(Y, P):  # labels first, as some course code writes it
    m = Y.shape[1]
    return (-np.sum(Y * np.log(P) + (1 - Y) * np.log(1 - P)) / m,
            (-(Y / P) + (1 - Y) / (1 - P)) / m)


def _mse(P, T):  # predictions first
    d = P - T
    return 0.5 * float(np.sum(d * d)), d


def _loss_points():
    rng = np.random.default_rng(3)
    return ((rng.random((1, 6)) > 0.5).astype(float), rng.uniform(0.1, 0.9, (1, 6)),
            rng.standard_normal((2, 3)), rng.standard_normal((2, 3)))


def test_a_loss_gradient_for_the_second_argument_is_checked_as_its():
    Y, P, _, _ = _loss_points()
    res = gradcheck.check_loss(_bce, Y, P)
    assert res.passed, res.report()
    assert any("gradient with respect to its argument 2 (x1), not the first" in n
               for n in res.notes), res.notes


def test_a_wrong_loss_gradient_for_the_second_argument_still_fails():
    Y, P, _, _ = _loss_points()
    res = gradcheck.check_loss(lambda y, p: (_bce(y, p)[0], 0.5 * _bce(y, p)[1]), Y, P)
    assert res.status == "mismatch", res.report()


@pytest.mark.parametrize("fn", [
    lambda p, t: (-np.sum(t * np.log(p)), -np.log(p)),  # the targets' gradient returned
    lambda x, w: (float(np.sum(w * x)), x.copy()),       # the weights' gradient returned
])
def test_the_gradient_of_another_argument_is_no_pass_when_the_first_holds_no_labels(fn):
    rng = np.random.default_rng(5)
    p, t = rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0.1, 0.9, (3, 4))
    res = gradcheck.check_loss(fn, p, t)
    assert res.status == "mismatch", res.report()
    assert "x0 holds no labels" in res.hint


def test_a_sign_flipped_squared_error_is_never_passed_as_the_targets_gradient():
    _, _, Pr, T = _loss_points()
    assert gradcheck.check_loss(_mse, Pr, T).passed
    res = gradcheck.check_loss(lambda p, t: (_mse(p, t)[0], -_mse(p, t)[1]), Pr, T)
    assert res.status == "mismatch", res.report()
    assert "which one it is for cannot be observed; pass the predictions first" in res.hint


def _mse_labels_first(Y, P):  # (cost, dP): labels first, a squared error
    return 0.5 * float(np.sum((Y - P) ** 2)), -(Y - P)


def test_a_squared_error_of_whole_numbers_and_floats_is_no_verdict_either_way():
    """A loss of the difference only cannot say which argument is the prediction when
    one holds whole numbers: labels first (0/1) or whole-number predictions first read
    the same, so a gradient that matches either is no verdict, never a pass."""
    Y, P, _, _ = _loss_points()
    flipped = lambda y, p: (_mse_labels_first(y, p)[0], -_mse_labels_first(y, p)[1])  # noqa: E731
    whole = np.arange(6.0).reshape(1, 6)
    for fn, args in ((_mse_labels_first, (Y, P)), (flipped, (Y, P)), (_mse, (whole, P))):
        res = gradcheck.check_loss(fn, *args)
        assert res.status == "bad-protocol" and not res.passed, res.report()
        assert "cannot be observed" in res.message and "fn(y, p)" in res.message


def test_a_squared_error_of_whole_numbers_wrong_either_way_is_a_mismatch():
    Y, P, _, _ = _loss_points()
    res = gradcheck.check_loss(lambda y, p: (_mse_labels_first(y, p)[0],
                                             2 * _mse_labels_first(y, p)[1]), Y, P)
    assert res.status == "mismatch", res.report()
    assert any("fails as either one's gradient" in n for n in res.notes), res.notes


def test_whole_number_scores_before_soft_targets_are_still_the_point_checked():
    rng = np.random.default_rng(7)
    scores = rng.integers(-3, 4, (3, 4)).astype(float)
    targets = rng.dirichlet(np.ones(4), 3)

    def ce(s, t, scale=1.0):
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        return -float(np.sum(t * np.log(p))), scale * (p - t)

    res = gradcheck.check_loss(ce, scores, targets)
    assert res.passed and res.inputs[0].checked == scores.size, res.report()
    assert any("checked as x0's" in n for n in res.notes), res.notes
    bad = gradcheck.check_loss(lambda s, t: ce(s, t, 0.5), scores, targets)
    assert bad.status == "mismatch", bad.report()


# -- darknet: dout written into the layer's zeroed delta, dx added into a buffer ----------
class _DarkDense:
    """The darknet convention: the forward leaves ``self.delta`` zero; the caller adds
    the output gradient into it and calls ``backward(inpt, delta=buf)``, which adds the
    input gradient into ``buf``; the parameters' gradients accumulate in ``*_update``."""

    def __init__(self, rng, skew=1.0, fill=True):
        self.weights = rng.standard_normal((4, 3))
        self.bias = rng.standard_normal(3)
        self.weights_update = np.zeros_like(self.weights)
        self.bias_update = np.zeros_like(self.bias)
        self.skew, self.fill = skew, fill

    def forward(self, inpt):
        self.output = np.tanh(inpt @ self.weights + self.bias)
        self.delta = np.zeros_like(self.output)

    def backward(self, inpt, delta=None):
        self.delta *= 1 - self.output ** 2
        self.bias_update += self.skew * self.delta.sum(axis=0)
        self.weights_update += inpt.T @ self.delta
        if delta is not None and self.fill:
            delta += self.delta @ self.weights.T


def test_darknet_delta_slot_is_read():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4))
    res = gradcheck.check_layer(_DarkDense(np.random.default_rng(1)), x)
    assert res.passed, res.report()
    assert {i.name for i in res.inputs} >= {"x0", "weights", "bias"}
    assert any("reads the output gradient from delta" in n for n in res.notes), res.notes


@pytest.mark.parametrize(("kw", "bad"), [({"skew": 1.5}, "bias"), ({"fill": False}, "x0")])
def test_darknet_delta_slot_broken_twins_fail(kw, bad):
    x = np.random.default_rng(4).standard_normal((5, 4))
    res = gradcheck.check_layer(_DarkDense(np.random.default_rng(1), **kw), x)
    assert res.status == "mismatch", res.report()
    assert [i.name for i in res.inputs if not i.passed] == [bad], res.report()


# -- a step size with a default; a cached copy of the input; an optimizer built on use ----
class _StepDefault:
    """``backward(grad, lr=0.01)`` updating its weights in place (bias folded in W)."""

    def __init__(self, rng, skew=1.0):
        self.W = rng.standard_normal((4, 3))
        self.skew = skew

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, grad, lr=0.01):
        dx = grad @ self.W.T
        self.W -= lr * self.skew * (self.x.T @ grad)
        return dx


class _CachedCopy:
    """Keeps ``self.x`` (zeros at first) overwritten with a flat copy of the input, and
    stores ``grad_x`` beside ``grad_W``: ``x`` is a cache, not a parameter."""

    def __init__(self, rng, skew=1.0):
        self.W = rng.standard_normal((4, 3))
        self.x = np.zeros(4)
        self.skew = skew

    def forward(self, x):
        self.x = x.ravel().copy()
        return self.x @ self.W

    def backward(self, dy):
        self.grad_W = self.skew * np.outer(self.x, dy)
        self.grad_x = self.W @ dy
        return self.grad_x


class _Adamish:
    def __init__(self):
        self.t = 0

    def update(self, params, grads):
        self.t += 1
        for p, g in zip(params, grads, strict=True):
            p -= 0.01 * g


class _LazyOptimizer:
    """Hands ``[W, b]`` and ``[dW, db]`` to an optimizer it builds on first use."""

    def __init__(self, rng, skew=1.0):
        self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self._opt = None
        self.skew = skew

    @property
    def optimizer(self):
        if self._opt is None:
            self._opt = _Adamish()
        return self._opt

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dy):
        dx = dy @ self.W.T
        self.optimizer.update([self.W, self.b], [self.x.T @ dy, self.skew * dy.sum(0)])
        return dx


@pytest.mark.parametrize(("cls", "x_shape", "bad"), [
    (_StepDefault, (5, 4), "W"), (_CachedCopy, (4,), "W"), (_LazyOptimizer, (5, 4), "b")])
def test_more_conventions_read_by_observation(cls, x_shape, bad):
    x = np.random.default_rng(6).standard_normal(x_shape)
    res = gradcheck.check_layer(cls(np.random.default_rng(2)), x)
    assert res.passed, res.report()
    assert {i.name for i in res.inputs} >= {"x0", bad}
    broken = gradcheck.check_layer(cls(np.random.default_rng(2), skew=1.5), x)
    assert broken.status == "mismatch", broken.report()
    assert [i.name for i in broken.inputs if not i.passed] == [bad], broken.report()


class _StepRebinds:
    """``backward(dz, learning_rate)`` rebinding its weights to new arrays; the broken
    twin sums the bias gradient over the wrong axis, which widens ``b`` in the update."""

    def __init__(self, rng, axis=0):
        self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal((1, 3))
        self.axis = axis

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dz, learning_rate):
        dx = dz @ self.W.T
        db = dz.sum(axis=self.axis, keepdims=True)
        self.W, self.b = self.W - learning_rate * self.x.T @ dz, self.b - learning_rate * db
        return dx


def test_a_step_that_widens_a_parameter_is_a_shape_mismatch():
    x = np.random.default_rng(7).standard_normal((5, 4))
    assert gradcheck.check_layer(_StepRebinds(np.random.default_rng(2)), x).passed
    res = gradcheck.check_layer(_StepRebinds(np.random.default_rng(2), axis=1), x)
    assert res.status == "shape-mismatch", res.report()
    assert "b" in res.message, res.message


# -- a loss layer whose forward hands its input back and adds the loss into an attribute --
class _PassThroughLoss:
    """forward(x, t) returns x itself and adds the loss per element into ``self.loss``;
    backward() takes no output gradient (maideas/numpy-neural-network's LossLayerV2)."""

    def __init__(self, n, scale=1.0):
        self.loss = np.zeros(n)
        self.scale = scale

    def forward(self, x, t):
        self.x, self.t = x, t
        self.loss += 0.5 * np.square(x - t)
        return x

    def backward(self):
        return self.scale * (self.x - self.t)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_that_returns_its_input_is_checked_on_the_loss_it_stores(broken):
    rng = np.random.default_rng(11)
    x, t = rng.standard_normal(5), rng.standard_normal(5)
    layer = _PassThroughLoss(5, 0.5 if broken else 1.0)
    res = gradcheck.check_layer(layer, x, t)
    _verdict(res, broken)
    assert any("returns its input x0 unchanged" in n and "stores in loss" in n
               for n in res.notes), res.notes
    assert np.all(layer.loss == 0), "the user's layer was modified"


class _Identity:
    def forward(self, x):
        self.doubled = 2 * x  # stored, but the output is x itself
        return x

    def backward(self, dout):
        return dout


def test_an_identity_layer_keeps_its_returned_input_as_the_output():
    x = np.random.default_rng(12).standard_normal((2, 3))
    res = gradcheck.check_layer(_Identity(), x)
    assert res.passed, res.report()
    assert not any("unchanged" in n for n in res.notes), res.notes


# -- an output layer whose backward needs the targets the forward never saw ---------------
def _logged(method):  # a decorator without functools.wraps hides the signature
    def inner(*args, **kwargs):
        return method(*args, **kwargs)
    return inner


class _SoftmaxOutput:
    def forward(self, x):
        e = np.exp(x - x.max(1, keepdims=True))
        self.p = e / e.sum(1, keepdims=True)
        return self.p

    @_logged
    def backward(self, upstream, y_true=None):
        return self.p - y_true


def test_a_backward_that_needs_targets_gets_an_error_that_says_what_to_check_instead():
    x = np.random.default_rng(13).standard_normal((3, 4))
    res = gradcheck.check_layer(_SoftmaxOutput(), x)
    assert res.status == "error", res.report()
    assert "its argument(s) y_true were None" in res.message
    assert "check_loss(lambda x: (loss(x), gradient(x)), x)" in res.message


def test_the_call_an_unread_parameter_error_suggests_is_valid_python():
    import ast
    import re

    class DictHeld:
        def __init__(self):
            self.p = {"W": np.random.default_rng(14).standard_normal((3, 2))}

        def forward(self, x):
            return x @ self.p["W"]

        def backward(self, dout):  # the weight's gradient is kept nowhere
            return dout @ self.p["W"].T

    with pytest.raises(gradcheck.LayerConventionError) as err:
        gradcheck.check_layer(DictHeld(), np.ones((2, 3)))
    call = re.search(r"check_layer\(layer, x, params=.*?\}\)", str(err.value))
    assert call is not None, str(err.value)
    ast.parse(call.group(0))


# -- the gradient of a list input returned stacked in one array ---------------------------
class _SumOfProducts:
    """forward([a, b, c]) = (a * b * c) @ W; the backward returns the three input
    gradients stacked by ``np.sum(list_of_tuples, axis=0)`` (rziga/numpy-is-all-you-need)."""

    def __init__(self, broken=False):
        self.W = np.random.default_rng(15).standard_normal((4, 2))
        self.broken = broken

    def forward(self, xs):
        self.xs = xs
        a, b, c = xs
        return (a * b * c) @ self.W

    def backward(self, dout):
        a, b, c = self.xs
        g = dout @ self.W.T
        self.dW = (a * b * c).T @ dout
        per_input = [(g * b * c,), (g * a * c * (0.5 if self.broken else 1),), (g * a * b,)]
        return np.sum([per_input], axis=(0, 2))  # one array (3, 3, 4), as np.sum stacks


@pytest.mark.parametrize("broken", [False, True])
def test_a_list_input_whose_gradient_comes_stacked_is_split(broken):
    rng = np.random.default_rng(16)
    xs = [rng.standard_normal((3, 4)) for _ in range(3)]
    res = gradcheck.check_layer(_SumOfProducts(broken), xs)
    _verdict(res, broken)
    assert any("the gradient of the sequence input x0 came as one array stacked" in n
               for n in res.notes), res.notes


# -- a backward completed by a second call that stores the parameters' gradients ----------
class _TwoStepDense:
    """EpyNN's convention: backward(dX) returns the input gradient and caches dZ; the
    network then calls compute_gradients(), which fills ``self.g``."""

    def __init__(self, broken=False):
        rng = np.random.default_rng(17)
        self.p = {"W": rng.standard_normal((4, 3)), "b": rng.standard_normal((1, 3))}
        self.g, self.fc, self.bc, self.broken = {}, {}, {}, broken

    def forward(self, A):
        self.fc["X"] = A
        self.fc["Z"] = A @ self.p["W"] + self.p["b"]
        return np.tanh(self.fc["Z"])

    def backward(self, dX):
        self.bc["dZ"] = dX * (1 - np.tanh(self.fc["Z"]) ** 2)
        return self.bc["dZ"] @ self.p["W"].T

    def compute_gradients(self):
        self.g["dW"] = self.fc["X"].T @ self.bc["dZ"]
        self.g["db"] = self.bc["dZ"].sum(axis=0) * (2 if self.broken else 1)

    def update_parameters(self):  # never called by the check
        raise AssertionError("the check must not update the parameters")


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_completed_by_a_method_that_stores_the_gradients(broken):
    x = np.random.default_rng(18).standard_normal((5, 4))
    res = gradcheck.check_layer(_TwoStepDense(broken), x)
    _verdict(res, broken)
    assert any("compute_gradients() completes the backward" in n for n in res.notes)
    assert {i.name for i in res.inputs} >= {"p['W']", "p['b']"}


def test_a_layer_whose_gradients_no_method_stores_names_what_it_tried():
    class NoGrad(_TwoStepDense):
        def compute_gradients(self):
            return None

    with pytest.raises(gradcheck.LayerConventionError, match=r"tried compute_gradients\(\)"):
        gradcheck.check_layer(NoGrad(), np.ones((5, 4)))


# -- a loss whose forward has a name of its own: the one other method --------------------
class _Crossentropy:
    """rziga's loss object: calculate(true, predicted) and backward()."""

    def __init__(self, broken=False):
        self.broken = broken

    def calculate(self, true, predicted):
        self.true, self.pred = true, predicted
        return -np.log(predicted[range(len(true)), true]).mean()

    def backward(self):
        D = np.zeros_like(self.pred)
        D[range(len(self.true)), self.true] = -1 / self.pred[range(len(self.true)), self.true]
        return D / (1 if self.broken else len(self.true))


@pytest.mark.parametrize("broken", [False, True])
def test_the_one_method_taking_the_inputs_beside_the_backward_is_the_forward(broken):
    rng = np.random.default_rng(19)
    p = rng.dirichlet(np.ones(4), 5)
    res = gradcheck.check_layer(_Crossentropy(broken), np.array([0, 3, 1, 1, 2]), p)
    _verdict(res, broken)
    assert any("forward found as the one method taking 2 argument(s)" in n for n in res.notes)


# -- a loss that returns its derivative when a flag is set --------------------------------
def _mse_flag(A, Y, deriv=False, scale=2.0):
    if not deriv:
        return np.sum((Y - A) ** 2, axis=1) / A.shape[1]
    return -scale / A.shape[1] * (Y - A)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_with_a_derivative_flag_is_refused_with_the_call_that_checks_it(broken):
    rng = np.random.default_rng(20)
    A, Y = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    res = gradcheck.check_loss(_mse_flag, A, Y)
    assert res.status == "bad-protocol" and "it takes deriv=False" in res.message
    assert "lambda *a: (fn(*a).sum(), fn(*a, deriv=True))" in res.message
    fn = partial(_mse_flag, scale=1.0 if broken else 2.0)
    _verdict(gradcheck.check_loss(lambda *a: (fn(*a).sum(), fn(*a, deriv=True)), A, Y), broken)


def test_a_gradient_named_method_that_raises_leaves_the_reading_error_as_it_was():
    class Clipping(_TwoStepDense):
        def compute_gradients(self):
            return None

        def calc_grads(self, scale=1.0):
            raise RuntimeError("nothing to compute")

    with pytest.raises(gradcheck.LayerConventionError, match="calc_grads, compute_gradients"):
        gradcheck.check_layer(Clipping(), np.ones((5, 4)))


def test_a_zero_grad_method_is_never_read_as_completing_the_backward():
    class Momentum:
        def __init__(self):
            self.W = np.random.default_rng(21).standard_normal((3, 2))
            self.velocity = np.zeros_like(self.W)

        def forward(self, x):
            self.x = x
            return x @ self.W

        def backward(self, dy):  # right, but stored under a name no rule reads
            self.weight_delta = self.x.T @ dy
            self.velocity = 0.9 * self.velocity + self.weight_delta
            return dy @ self.W.T

        def zero_grad(self):
            self.dW = np.zeros_like(self.W)

        def compute_grads(self):  # a gradient-computing name that leaves zeros
            self.dW = np.zeros_like(self.W)

    with pytest.raises(gradcheck.LayerConventionError, match="weight_delta"):
        gradcheck.check_layer(Momentum(), np.ones((4, 3)))


class _ScalarPassThroughLoss:
    """forward(x, t) keeps x - t for its backward, stores the scalar loss, returns x."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def forward(self, x, t):
        self.diff = x - t
        self.loss = 0.5 * np.sum(self.diff * self.diff)
        return x

    def backward(self):
        return self.scale * self.diff


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_that_returns_its_input_and_stores_a_scalar_loss(broken):
    rng = np.random.default_rng(22)
    x, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(_ScalarPassThroughLoss(2.0 if broken else 1.0), x, t)
    _verdict(res, broken)
    assert any("its output is the loss it stores in loss" in n for n in res.notes), res.notes


def test_a_pass_through_loss_whose_loss_cannot_be_told_asks_for_output():
    class TwoLosses(_ScalarPassThroughLoss):
        def forward(self, x, t):
            self.l1, self.l2 = float(np.sum(np.abs(x - t))), float(np.sum((x - t) ** 2))
            self.diff = x - t
            return x

    rng = np.random.default_rng(23)
    res = gradcheck.check_layer(TwoLosses(), rng.standard_normal(3), rng.standard_normal(3))
    assert res.status == "bad-protocol" and "output='...'" in res.message, res.report()


# -- losses whose methods have names of their own: read by what they return ---------------
class _CallGradCost:
    """mlpractical's cost: __call__(y, t) returns the loss, grad(y, t) its gradient."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def __call__(self, y, t):
        return 0.5 * float(np.sum((y - t) ** 2))

    def grad(self, y, t):
        return self.scale * (y - t)


class _CalcLoss:
    """naive-net's loss: calc_loss(x, y) returns the loss, calc_dloss() its gradient."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def calc_loss(self, x, y):
        self.x, self.y = x, y
        return 0.5 * float(np.sum((x - y) ** 2)) / len(x)

    def calc_dloss(self):
        return self.scale * (self.x - self.y) / len(self.x)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("cls", [_CallGradCost, _CalcLoss])
def test_a_loss_found_by_what_its_methods_return(cls, broken):
    rng = np.random.default_rng(24)
    y, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(cls(0.5 if broken else 1.0), y, t)
    _verdict(res, broken)
    assert any("methods found by what they return" in n for n in res.notes), res.notes


# -- parameters as objects holding .value and .gradient ------------------------------------
class _Param:
    def __init__(self, value):
        self.value, self.gradient = value, np.zeros_like(value)


class _ScaleShift:
    def __init__(self, broken=False):
        rng = np.random.default_rng(25)
        self.gamma, self.beta = _Param(rng.standard_normal(3)), _Param(rng.standard_normal(3))
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x * self.gamma.value + self.beta.value

    def backward(self, dout):
        self.gamma.gradient = (dout * self.x).sum(0) * (2 if self.broken else 1)
        self.beta.gradient = dout.sum(0)
        return dout * self.gamma.value


@pytest.mark.parametrize("broken", [False, True])
def test_parameter_objects_of_one_shape_each_pair_with_their_own_gradient(broken):
    x = np.random.default_rng(26).standard_normal((5, 3))
    res = gradcheck.check_layer(_ScaleShift(broken), x)
    _verdict(res, broken)
    assert {i.name for i in res.inputs} >= {"gamma.value", "beta.value"}


def test_a_class_given_instead_of_an_object_says_so():
    class Cost:
        @staticmethod
        def fn(a, y):
            return 0.5 * float(np.sum((a - y) ** 2))

    with pytest.raises(TypeError, match=r"given the class Cost, not an object of it.*\(fn\)"):
        gradcheck.check_layer(Cost, np.ones(3), np.zeros(3))


def test_a_backward_taking_more_than_dout_gets_advice_for_it_not_for_a_forward_flag():
    class Bprop:
        def fprop(self, x):
            return 2 * x

        def bprop(self, h, igrads):
            return 2 * igrads

    res = gradcheck.check_layer(Bprop(), np.ones(3))
    assert res.status == "error" and "takes more than the output gradient" in res.message
    assert "training flag" not in res.message


def test_too_many_inputs_for_the_forward_says_to_pass_only_its_arguments():
    class Net:
        def forward(self, x):
            return 2 * x

        def backward(self, d):
            return 2 * d

    res = gradcheck.check_layer(Net(), np.ones(3), np.ones(3))
    assert res.status == "error" and "pass only the forward's own arguments" in res.message


# -- function pairs returning a dict of 'd'-named gradients (the Coursera style) -----------
def _cell_forward(xt, a_prev, parameters):
    z = parameters["Wax"] @ xt + parameters["Waa"] @ a_prev + parameters["ba"]
    a_next = np.tanh(z)
    yt = parameters["Wya"] @ a_next
    return a_next, yt, (a_next, xt, a_prev, parameters)


def _cell_backward(da_next, cache, broken=False):
    a_next, xt, a_prev, p = cache
    dz = da_next * (1 - (a_next if broken else a_next ** 2))
    return {"dxt": p["Wax"].T @ dz, "da_prev": p["Waa"].T @ dz, "dWax": dz @ xt.T,
            "dWaa": dz @ a_prev.T, "dba": dz.sum(axis=1, keepdims=True)}


def _cell_inputs():
    rng = np.random.default_rng(27)
    p = {"Wax": rng.standard_normal((5, 3)), "Waa": rng.standard_normal((5, 5)),
         "Wya": rng.standard_normal((2, 5)), "ba": rng.standard_normal((5, 1))}
    return [rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), p]


@pytest.mark.parametrize("broken", [False, True])
def test_a_dict_of_d_named_gradients_is_read_by_name(broken):
    def first_output(xt, a_prev, parameters):
        y = _cell_forward(xt, a_prev, parameters)
        return y[0], y[-1]

    res = gradcheck.check_vjp(first_output, partial(_cell_backward, broken=broken),
                              _cell_inputs())
    _verdict(res, broken)
    assert any("read by name, 'd' + each input's name" in n for n in res.notes), res.notes
    assert {i.name for i in res.inputs if i.checked} >= {"xt", "a_prev", "parameters['Wax']"}


def test_a_dict_gradient_naming_no_input_is_an_error_that_lists_the_names_read():
    def first_output(xt, a_prev, parameters):
        y = _cell_forward(xt, a_prev, parameters)
        return y[0], y[-1]

    def renamed(da, cache):
        g = _cell_backward(da, cache)
        g["dx"] = g.pop("dxt")
        return g

    res = gradcheck.check_vjp(first_output, renamed, _cell_inputs())
    assert res.status == "bad-protocol" and "['dx'] name no input" in res.message
    assert "dxt, da_prev, dWax, dWaa, dWya, dba" in res.message


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_taking_the_first_outputs_gradient_only_is_read_so(broken):
    res = gradcheck.check_vjp(_cell_forward, partial(_cell_backward, broken=broken),
                              _cell_inputs())
    _verdict(res, broken)
    assert any("takes the gradient of the first 1 only" in n for n in res.notes), res.notes
    wya = next(i for i in res.inputs if i.name == "parameters['Wya']")
    assert wya.status == "constant" and "does not depend on it" in wya.message


def test_a_dict_of_gradients_missing_a_key_the_output_depends_on_fails_in_that_input():
    def no_dba(da, cache):
        g = _cell_backward(da, cache)
        del g["dba"]
        return g

    res = gradcheck.check_vjp(_cell_forward, no_dba, _cell_inputs())
    assert res.status == "mismatch", res.report()
    ba = next(i for i in res.inputs if i.name == "parameters['ba']")
    assert ba.status == "mismatch" and "no key for it" in ba.message


def _two_state_forward(x, h, c, W):
    z = W @ np.concatenate([x, h])
    c_next = c * np.tanh(z)
    h_next = np.tanh(c_next)
    return h_next, c_next, 2.0 * h_next.sum(axis=0), (x, h, c, W, z, c_next)


def _two_state_backward(dh, dc, cache, broken=False):
    x, h, c, W, z, c_next = cache
    dc = dc + dh * (1 - np.tanh(c_next) ** 2)
    dz = dc * c * (1 - np.tanh(z) ** 2)
    dxh = W.T @ dz
    n = x.shape[0]
    return {"dx": dxh[:n], "dh": dxh[n:], "dc": dc * (1 if broken else np.tanh(z)),
            "dW": dz @ np.concatenate([x, h]).T}


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_taking_two_of_three_outputs_gradients_gets_them_as_arguments(broken):
    rng = np.random.default_rng(31)
    inputs = [rng.standard_normal((3, 4)), rng.standard_normal((2, 4)),
              rng.standard_normal((2, 4)), rng.standard_normal((2, 5))]
    res = gradcheck.check_vjp(_two_state_forward, partial(_two_state_backward, broken=broken),
                              inputs)
    _verdict(res, broken)
    assert any("first 2 only" in n for n in res.notes), res.notes
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["c"]


def test_a_backward_raising_under_every_reading_says_to_check_the_outputs_it_takes():
    def raises(da_next, cache):
        raise ValueError("not this way")

    res = gradcheck.check_vjp(_cell_forward, raises, _cell_inputs())
    assert res.status == "error", res.report()
    assert "given the gradients of the forward's 2 outputs as one tuple" in res.message


# -- the mlpractical convention: bprop(inputs, outputs, grads_wrt_outputs), and the
# parameters' gradients returned by grads_wrt_params(inputs, grads_wrt_outputs) ------------
class _Affine:
    def __init__(self, broken=False):
        rng = np.random.default_rng(41)
        self.weights, self.biases = rng.standard_normal((2, 3)), rng.standard_normal(2)
        self.broken = broken

    def fprop(self, inputs):
        return inputs @ self.weights.T + self.biases

    def bprop(self, inputs, outputs, grads_wrt_outputs):
        return grads_wrt_outputs @ self.weights

    def grads_wrt_params(self, inputs, grads_wrt_outputs):
        db = grads_wrt_outputs.sum(axis=0)
        return [grads_wrt_outputs.T @ inputs, db * (0.5 if self.broken else 1.0)]

    @property
    def params(self):
        return [self.weights, self.biases]


class _Sigmoid:
    def __init__(self, broken=False):
        self.broken = broken

    def fprop(self, inputs):
        return 1.0 / (1.0 + np.exp(-inputs))

    def bprop(self, inputs, outputs, grads_wrt_outputs):
        return grads_wrt_outputs * outputs * (1.0 if self.broken else 1.0 - outputs)


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_given_the_inputs_the_output_and_dout_is_called_so(broken):
    res = gradcheck.check_layer(_Sigmoid(broken), X)
    _verdict(res, broken)
    assert any("called as (inputs, the output, dout)" in n for n in res.notes), res.notes


@pytest.mark.parametrize("broken", [False, True])
def test_parameter_gradients_returned_by_a_method_taking_the_backwards_arguments(broken):
    res = gradcheck.check_layer(_Affine(broken), X)
    _verdict(res, broken)
    assert any("grads_wrt_params(inputs, grads_wrt_outputs) completes the backward" in n
               for n in res.notes), res.notes
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["biases"]


# -- a layer holding the array module (self.xp = np), and one holding what cannot be copied --
class _ModuleHeld:
    def __init__(self, broken=False):
        self.xp, self.broken = np, broken
        self.W = np.random.default_rng(43).standard_normal((3, 2))

    def forward(self, x):
        self.x = x
        return self.xp.tanh(x @ self.W)

    def backward(self, dout):
        dz = dout * (1 - self.xp.tanh(self.x @ self.W) ** (1 if self.broken else 2))
        self.dW = self.x.T @ dz
        return dz @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_layer_holding_its_array_module_is_copied_with_the_module_shared(broken):
    res = gradcheck.check_layer(_ModuleHeld(broken), X)
    _verdict(res, broken)


def test_a_layer_holding_what_cannot_be_copied_is_an_error_naming_it():
    import threading

    layer = _ModuleHeld()
    layer.lock = threading.Lock()
    res = gradcheck.check_layer(layer, X)
    assert res.status == "bad-protocol", res.report()
    assert "cannot be copied" in res.message and "lock" in res.message


# -- backward(input, learning_rate) whose first argument, named as the forward's input, is
# the output gradient: a reading by names that is not linear in its last argument is dropped
class _NamedLikeInput:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, input):
        e = np.exp(input - input.max())
        self.output = e / e.sum()
        return self.output

    def backward(self, input, learning_rate):
        p = self.output
        jac = np.diag(p) - (0 if self.broken else np.outer(p, p))
        return jac @ input


@pytest.mark.parametrize("broken", [False, True])
def test_a_last_argument_the_result_is_not_linear_in_is_no_output_gradient(broken):
    x = np.random.default_rng(19).standard_normal(5)
    res = gradcheck.check_layer(_NamedLikeInput(broken), x)
    _verdict(res, broken)
    assert not any("called as (input, dout)" in n for n in res.notes), res.notes


# -- a loss layer written labels first: forward(y_true, y_pred), backward(y_true, y_pred) ----
class _LabelsFirst:
    def __init__(self, broken=False):
        self.broken = broken

    def forward(self, y_true, y_pred):
        return -np.sum(y_true * np.log(y_pred))

    def backward(self, y_true, y_pred):
        return -y_true / (y_pred if not self.broken else y_pred ** 2)


@pytest.mark.parametrize("broken", [False, True])
def test_a_loss_layer_written_labels_first_is_checked_in_its_predictions(broken):
    t = np.eye(5)[2]
    p = np.random.default_rng(22).uniform(0.1, 0.9, 5)
    res = gradcheck.check_layer(_LabelsFirst(broken), t, p)
    _verdict(res, broken)
    assert any("x0 holds labels (0 and 1 only) and x1 does not" in n for n in res.notes)
    if broken:
        assert [i.name for i in res.inputs if i.status == "mismatch"] == ["x1"]
