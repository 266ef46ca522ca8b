"""Readings by observation found on held-out code (corpora 35 on): each with a correct
subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect
from suites._verdicts import failing as _failing


# -- a gradient both stored and returned: the two must agree ----------------------------------
class _StoresAndReturns:
    """``self.dW = ...`` and ``return dX, {"W": ..., "b": ...}``; ``wrong`` says which of
    the two copies of W's gradient is doubled."""

    def __init__(self, wrong: str = ""):
        rng = np.random.default_rng(3)
        self.W, self.b, self.wrong = rng.standard_normal((3, 2)), rng.standard_normal(2), wrong

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        dw = self.x.T @ dout
        self.dW, self.db = dw * (2 if self.wrong == "stored" else 1), dout.sum(0)
        return dout @ self.W.T, {"W": dw * (2 if self.wrong == "returned" else 1),
                                 "b": dout.sum(0)}


@pytest.mark.parametrize("wrong", ["", "stored", "returned"])
def test_a_gradient_stored_and_returned_is_checked_in_both_places(wrong):
    x = np.random.default_rng(4).standard_normal((4, 3))
    res = gradcheck.check_layer(_StoresAndReturns(wrong), x)
    if wrong:
        want = ["W"] if wrong == "stored" else ["W (returned 'W')"]
        assert res.status == "mismatch" and _failing(res) == want, res.report()
        assert any("in two places that differ" in n for n in res.notes), res.notes
    else:
        assert res.passed, res.report()
        assert [i.name for i in res.inputs] == ["x0", "W", "b"], res.report()


class _StoresAndReturnsList(_StoresAndReturns):
    """``self.params = [W, b]`` and ``return dX, [dW, db]`` beside ``self.dW``; a wide W
    (checked along random directions, every tensor at once)."""

    def __init__(self, wrong: str = ""):
        rng = np.random.default_rng(22)
        self.W, self.b, self.wrong = rng.standard_normal((40, 30)), rng.standard_normal(30), wrong
        self.params = [self.W, self.b]

    def backward(self, dout):
        dx, got = super().backward(dout)
        return dx, [got["W"], got["b"]]


@pytest.mark.parametrize("wrong", ["", "stored", "returned"])
def test_a_gradient_stored_and_returned_in_a_list_along_directions(wrong):
    x = np.random.default_rng(23).standard_normal((5, 40))
    res = gradcheck.check_layer(_StoresAndReturnsList(wrong), x)
    if wrong:
        want = ["W"] if wrong == "stored" else ["W (returned 0)"]
        assert res.status == "mismatch" and _failing(res) == want, res.report()
    else:
        assert res.passed, res.report()


# -- a gradient handed to an optimizer beside the moments the layer keeps ---------------------
class _Sgd:
    def optimize(self, w, dw, m1, m2, param):
        return w - param.get("lr", 1e-3) * dw, m1, m2


class _SteppedScale:
    """``forward(X, param)``, ``backward(dout, param)`` stepping its own ``gamma`` through
    ``self.optimizer.optimize(gamma, dgamma, m1, m2, param)``; ``bug`` halves dgamma."""

    def __init__(self, bug: bool = False):
        self.gamma = np.random.default_rng(5).uniform(0.5, 1.5, (1, 3))
        self.g1 = self.g2 = np.zeros((1, 3))
        self.optimizer, self.bug = _Sgd(), bug

    def forward(self, X, param):
        self.x = X
        return X * self.gamma

    def backward(self, dout, param):
        dx = dout * self.gamma
        dgamma = np.sum(dout * self.x, axis=0) * (0.5 if self.bug else 1.0)
        self.gamma, self.g1, self.g2 = self.optimizer.optimize(self.gamma, dgamma, self.g1,
                                                               self.g2, param)
        return dx


@pytest.mark.parametrize("bug", [False, True])
def test_a_gradient_handed_beside_held_moments(bug):
    x = np.random.default_rng(6).standard_normal((4, 3))
    res = gradcheck.check_layer(_SteppedScale(bug), x, {"mode": "train", "lr": 0.01})
    _expect(res, ["gamma"] if bug else None)
    assert any("hands to optimizer.optimize" in n for n in res.notes), res.notes


# -- backwardpass(lr, activation_prev, delta) of a layer with nothing to step -----------------
class _HalfPool:
    """Average pooling of pairs along the last axis; its backward takes a step size, the
    input again (read for its batch size only) and the output gradient, in that order."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def forwardpass(self, X):
        return 0.5 * (X[..., 0::2] + X[..., 1::2])

    def backwardpass(self, alpha, activation_prev, delta):
        n = activation_prev.shape[0]
        out = np.zeros((n, delta.shape[1], 2 * delta.shape[2]))
        out[..., 0::2] = out[..., 1::2] = delta * (1.0 if self.bug else 0.5)
        return out


@pytest.mark.parametrize("bug", [False, True])
def test_a_step_size_first_on_a_layer_with_nothing_to_step(bug):
    x = np.random.default_rng(7).standard_normal((2, 3, 4))
    res = gradcheck.check_layer(_HalfPool(bug), x)
    _expect(res, ["x0"] if bug else None)


# -- forward(A_prev, W, b) -> (A, Z); backward(dA, A_prev, W, b, Z) ---------------------------
class _StatelessDense:
    """Columns are samples; tanh activation; the backward takes the output gradient, the
    inputs again and the forward's second value ``Z``; ``bug`` takes tanh' at A."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def forward(self, A_prev, W, b):
        Z = W @ A_prev + b
        return np.tanh(Z), Z

    def backward(self, dA, A_prev, W, b, Z):
        dZ = dA * (1 - np.tanh(np.tanh(Z) if self.bug else Z) ** 2)
        return W.T @ dZ, dZ @ A_prev.T, dZ.sum(axis=1, keepdims=True)


class _StatelessDropout:
    """``forward(A, W, b) -> (A * mask, None)``, ``backward(dA, A_prev, W, b, Z)``."""

    def __init__(self, bug: bool = False):
        self.bug, self.mask, self.rng = bug, None, np.random.default_rng(10)

    def forward(self, A, W, b):
        self.mask = (self.rng.random(A.shape) > 0.4).astype(float)
        return A * self.mask, None

    def backward(self, dA, A_prev, W, b, Z):
        return dA * (1 - self.mask if self.bug else self.mask), None, None


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_inputs_again_and_the_forwards_second_value(bug):
    rng = np.random.default_rng(8)
    a, w, b = rng.standard_normal((4, 5)), rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
    res = gradcheck.check_layer(_StatelessDense(bug), a, w, b)
    if bug:
        assert res.status == "mismatch" and set(_failing(res)) == {"x0", "x1", "x2"}, res.report()
    else:
        assert res.passed, res.report()
    assert any("the forward's last value" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug", [False, True])
def test_a_parameter_free_layer_returning_its_output_and_none(bug):
    x = np.random.default_rng(9).standard_normal((4, 5))
    res = gradcheck.check_layer(_StatelessDropout(bug), x, None, None)
    _expect(res, ["x0"] if bug else None)


# -- backward(x, cache, dout, gradients): a dict the caller passes, filled by the backward -----
class _FillsGradients:
    """Parameters in ``self._parameters['Dense/W']``; ``forward(x) -> (y, {})``; the
    backward writes ``gradients['Dense/W']``; ``bug`` averages the bias gradient."""

    def __init__(self, bug: bool = False):
        rng = np.random.default_rng(11)
        self._parameters = {"Dense/W": rng.standard_normal((4, 3)),
                            "Dense/b": rng.standard_normal(3)}
        self.bug = bug

    def forward(self, x):
        return x @ self._parameters["Dense/W"] + self._parameters["Dense/b"], {}

    def backward(self, x, cache, backwards_gradient, gradients):
        del cache
        gradients["Dense/W"] = x.T @ backwards_gradient
        db = backwards_gradient.mean(0) if self.bug else backwards_gradient.sum(0)
        gradients["Dense/b"] = db
        return backwards_gradient @ self._parameters["Dense/W"].T


class _AddsToGradients:
    """``forward(x) -> (y, (x,))``; ``backward(dout, cache, grads)`` adds into
    ``grads['W']``; ``bug`` transposes nothing but doubles it."""

    def __init__(self, bug: bool = False):
        self.W, self.bug = np.random.default_rng(12).standard_normal((4, 3)), bug

    def forward(self, x):
        return x @ self.W, (x,)

    def backward(self, dout, cache, grads):
        (x,) = cache
        grads["W"] += x.T @ dout * (2 if self.bug else 1)
        return dout @ self.W.T


class _StoresAndFills(_AddsToGradients):
    """Stores ``self.dW`` and writes ``grads['W']`` (what the caller's optimizer reads);
    ``bug`` doubles the dict's copy only."""

    def backward(self, dout, cache, grads):
        (x,) = cache
        self.dW = x.T @ dout
        grads["W"] = self.dW * (2 if self.bug else 1)
        return dout @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_a_gradient_stored_and_written_in_the_given_dict(bug):
    x = np.random.default_rng(24).standard_normal((5, 4))
    res = gradcheck.check_layer(_StoresAndFills(bug), x)
    if bug:
        assert res.status == "mismatch" and _failing(res) == ["W (at grads['W'])"], \
            res.report()
    else:
        assert res.passed, res.report()


@pytest.mark.parametrize("layer", [_FillsGradients, _AddsToGradients])
@pytest.mark.parametrize("bug", [False, True])
def test_a_gradient_dict_the_backward_is_given_and_fills(layer, bug):
    x = np.random.default_rng(13).standard_normal((5, 4))
    res = gradcheck.check_layer(layer(bug), x)
    if bug:
        assert res.status == "mismatch", res.report()
        assert _failing(res) in (["_parameters['Dense/b']"], ["W"]), res.report()
    else:
        assert res.passed, res.report()
    assert any("a gradient dict it fills" in n for n in res.notes), res.notes
    assert not any("separate arguments" in n for n in res.notes), res.notes


class _TanhGivenGradients:
    """An activation of the same framework: nothing to write in the dict it is given."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def forward(self, x):
        return np.tanh(x), {}

    def backward(self, x, cache, backwards_gradient, gradients):
        t = np.tanh(x)
        return backwards_gradient * (1 - (t if self.bug else t ** 2))


@pytest.mark.parametrize("bug", [False, True])
def test_an_activation_given_a_gradient_dict_it_leaves_empty(bug):
    x = np.random.default_rng(14).standard_normal((3, 4))
    res = gradcheck.check_layer(_TanhGivenGradients(bug), x)
    _expect(res, ["x0"] if bug else None)


# -- a one-hot the forward builds from token ids is a cache, not a weight drawn anew ------------
class _OneHotEmbedding:
    def __init__(self, bug: bool = False):
        self.weights, self.bug = np.random.default_rng(15).standard_normal((6, 3)), bug

    def forward(self, ids):
        self.inputs = np.eye(6)[ids]  # (B, T, 6), float, rebuilt from the ids every call
        return self.inputs @ self.weights

    def backward(self, dvalues):
        flat = self.inputs.reshape(-1, 6)
        self.dweights = flat.T @ dvalues.reshape(-1, 3) * (0.5 if self.bug else 1.0)
        self.dinputs = dvalues @ self.weights.T
        return self.dinputs


@pytest.mark.parametrize("bug", [False, True])
def test_a_one_hot_of_token_ids_is_no_weight_drawn_in_the_forward(bug):
    ids = np.array([[1, 4, 1], [2, 4, 0]])
    res = gradcheck.check_layer(_OneHotEmbedding(bug), ids)
    _expect(res, ["weights"] if bug else None)


# -- check_loss: a loss returning (gradient, loss) --------------------------------------------
def _mse_gradient_first(preds, labels, bug=False):
    diff = preds - labels
    return (1.0 if bug else 2.0) * diff / diff.size, float(np.mean(diff ** 2))


@pytest.mark.parametrize("bug", [False, True])
def test_check_loss_reads_a_gradient_returned_before_the_loss(bug):
    rng = np.random.default_rng(16)
    res = gradcheck.check_loss(lambda p, t: _mse_gradient_first(p, t, bug),
                               rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))
    _expect(res, ["x0"] if bug else None)
    assert any("(gradient, loss)" in n for n in res.notes), res.notes


class _MaskFirst:
    """``forward`` returns ``(mask, output)``, the boolean cache first."""

    def forward(self, batch):
        positive = batch > 0
        return positive, batch * positive

    def backward(self, grad, positive, lr=None):
        return grad * positive


def test_a_boolean_first_value_is_no_output_read_beside_a_cache():
    x = np.random.default_rng(17).standard_normal((3, 4))
    res = gradcheck.check_layer(_MaskFirst(), x)
    assert res.status not in ("mismatch", "shape-mismatch") and not res.passed, res.report()


# -- a loss whose backward(*args) hands the forward's inputs to another method ----------------
class _PassOnLoss:
    """``forward(x, y)`` per sample, ``__call__`` their mean, ``backward(*args)`` calling
    ``backward_impl(x, y)`` and dividing by the batch; ``bug`` drops the division."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def __call__(self, *args):
        return self.forward(*args).mean()

    def forward(self, x, y):
        p = np.exp(x - x.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return -(y * np.log(p)).sum(-1)

    def backward(self, *args):
        g = self.backward_impl(*args)
        return g if self.bug else g / g.shape[0]

    def backward_impl(self, x, y):
        p = np.exp(x - x.max(-1, keepdims=True))
        return p / p.sum(-1, keepdims=True) - y


@pytest.mark.parametrize("bug", [False, True])
def test_a_loss_backward_handing_on_its_arguments(bug):
    rng = np.random.default_rng(18)
    res = gradcheck.check_layer(_PassOnLoss(bug), rng.standard_normal((5, 4)),
                                np.eye(4)[[0, 3, 1, 1, 2]])
    _expect(res, ["x0"] if bug else None)
    assert any("(*args) raised given the output gradient alone" in n for n in res.notes)


# -- a loss's backward(y_pred, y_true) storing its gradient: the labels are its targets --------
class _StoredBce:
    def __init__(self, bug: bool = False):
        self.bug = bug

    def calculate(self, y_pred, y_true):
        return float(np.mean(-(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred))))

    def backward(self, y_pred, y_true):
        g = (y_pred - y_true) / (y_pred * (1 - y_pred))
        self.dinputs = g if self.bug else g / y_pred.size


@pytest.mark.parametrize("bug", [False, True])
def test_a_stored_loss_gradient_beside_label_targets(bug):
    rng = np.random.default_rng(19)
    p = 1 / (1 + np.exp(-rng.standard_normal((6, 1))))
    t = np.array([[1.0], [0.0], [1.0], [1.0], [0.0], [0.0]])
    res = gradcheck.check_layer(_StoredBce(bug), p, t)
    _expect(res, ["x0"] if bug else None)
    assert any("x1: the loss's target(s), holding labels" in n for n in res.notes), res.notes


# -- a layer read by trial after it ran once (its gradient buffers hold the last ones) --------
class _TrialDense:
    def __init__(self, bug: bool = False):
        r = np.random.default_rng(20)
        self.W, self.b = r.standard_normal((3, 2)), r.standard_normal(2)
        self.dW, self.db, self.bug = np.zeros_like(self.W), np.zeros_like(self.b), bug

    def forward(self, inp):
        return inp @ self.W + self.b

    def backward(self, inputs, grad):  # overwrites its gradients
        self.dW = inputs.T @ grad * (0.5 if self.bug else 1.0)
        self.db = grad.sum(0)
        return grad @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_a_layer_read_by_trial_after_it_ran_once(bug):
    rng = np.random.default_rng(21)
    layer = _TrialDense(bug)
    layer.backward(rng.standard_normal((4, 3)), rng.standard_normal((4, 2)))
    res = gradcheck.check_layer(layer, rng.standard_normal((4, 3)))
    _expect(res, ["W"] if bug else None)


@pytest.mark.parametrize("ids", [[[3, 3, 3]], [2], [[0, 0], [0, 0]]])
@pytest.mark.parametrize("bug", [False, True])
def test_a_one_hot_of_ids_all_alike_is_no_weight_either(ids, bug):
    res = gradcheck.check_layer(_OneHotEmbedding(bug), np.array(ids))
    _expect(res, ["weights"] if bug else None)


@pytest.mark.parametrize("bug", [False, True])
def test_check_loss_reads_gradient_first_for_a_one_element_point(bug):
    x, t = np.array([0.3]), np.array([1.1])
    res = gradcheck.check_loss(lambda p, y: _mse_gradient_first(p, y, bug), x, t)
    _expect(res, ["x0"] if bug else None)


class _StepFirstSigmoid:
    """``backwardpass(alpha, activation_prev, delta)``: the input and the output gradient
    have one shape, only one order doubles with the gradient; ``bug`` drops (1 - s)."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def forwardpass(self, X):
        return 1 / (1 + np.exp(-X))

    def backwardpass(self, alpha, activation_prev, delta):
        s = 1 / (1 + np.exp(-activation_prev))
        return delta * s if self.bug else delta * s * (1 - s)


class _StepFirstIdentityBug:
    """A ReLU whose broken backward ignores both the step and the input: the orders left
    give the same results, one reading."""

    def forwardpass(self, X):
        return np.maximum(X, 0)

    def backwardpass(self, alpha, activation_prev, delta):
        return delta * 1.0


@pytest.mark.parametrize("bug", [False, True])
def test_a_step_first_activation_is_read_in_the_order_that_doubles(bug):
    x = np.random.default_rng(25).standard_normal((3, 4))
    x[np.abs(x) < 0.05] = 0.3
    res = gradcheck.check_layer(_StepFirstSigmoid(bug), x)
    _expect(res, ["x0"] if bug else None)
    res = gradcheck.check_layer(_StepFirstIdentityBug(), x)
    assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()


# -- (dx, np.array([]), np.array([])): empty arrays as placeholders ---------------------------
class _PoolEmptyPlaceholders:
    def __init__(self, bug: bool = False):
        self.bug = bug

    def forward(self, x):
        self.x = x
        return np.maximum(x[:, 0::2], x[:, 1::2])

    def backward(self, dout):
        a, b = self.x[:, 0::2], self.x[:, 1::2]
        dx = np.zeros_like(self.x)
        dx[:, 0::2] = dout * (a >= b if not self.bug else 1.0)
        dx[:, 1::2] = dout * (b > a)
        return dx, np.array([]), np.array([])


@pytest.mark.parametrize("bug", [False, True])
def test_empty_arrays_beside_the_input_gradient_are_placeholders(bug):
    x = np.random.default_rng(26).standard_normal((3, 6))
    res = gradcheck.check_layer(_PoolEmptyPlaceholders(bug), x)
    _expect(res, ["x0"] if bug else None)


# -- forward -> (h, c, cache); backward(dh, dc, cache) ----------------------------------------
class _TwoOutputsThenCache:
    """``h = tanh(x @ W)``, ``c = x * s``; the cache comes last, the backward takes the
    two outputs' gradients and the cache; ``bug`` drops tanh' in dW."""

    def __init__(self, bug: bool = False):
        rng = np.random.default_rng(27)
        self.W, self.s, self.bug = rng.standard_normal((3, 3)), rng.standard_normal(3), bug

    def forward(self, x):
        h = np.tanh(x @ self.W)
        return h, x * self.s, (x, h)

    def backward(self, dh, dc, cache):
        x, h = cache
        dz = dh * (1 - h ** 2)
        self.dW = x.T @ (dh if self.bug else dz)
        self.ds = (dc * x).sum(0)
        return dz @ self.W.T + dc * self.s


class _ThreeOutputs:
    """Three outputs and a backward taking their three gradients (no cache)."""

    def forward(self, x):
        self.x = x
        return 2 * x, x ** 2, np.sin(x)

    def backward(self, d1, d2, d3):
        return 2 * d1 + 2 * d2 * self.x + d3 * np.cos(self.x)


@pytest.mark.parametrize("bug", [False, True])
def test_outputs_then_a_cache_beside_a_backward_taking_their_gradients(bug):
    x = np.random.default_rng(28).standard_normal((4, 3))
    res = gradcheck.check_layer(_TwoOutputsThenCache(bug), x)
    _expect(res, ["W"] if bug else None)
    assert any("outputs and then a cache" in n for n in res.notes), res.notes
    res = gradcheck.check_layer(_ThreeOutputs(), x)
    assert res.passed and not any("then a cache" in n for n in res.notes), res.report()


class _MomentumDicts:
    """Stores ``self.dW`` and updates ``self.v = {'dW': ..., 'db': ...}`` (a momentum
    named like gradients, not a second place of them); ``bug`` halves dW."""

    def __init__(self, bug: bool = False):
        rng = np.random.default_rng(29)
        self.W, self.b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug
        self.v = {"dW": np.zeros((3, 2)), "db": np.zeros(2)}

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        self.dW = self.x.T @ dout * (0.5 if self.bug else 1.0)
        self.db = dout.sum(0)
        self.v["dW"] = 0.9 * self.v["dW"] + 0.1 * self.dW
        self.v["db"] = 0.9 * self.v["db"] + 0.1 * self.db
        return dout @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_a_momentum_keyed_like_gradients_is_no_second_place(bug):
    x = np.random.default_rng(30).standard_normal((4, 3))
    res = gradcheck.check_layer(_MomentumDicts(bug), x)
    _expect(res, ["W"] if bug else None)
    assert not any("two places" in n for n in res.notes), res.notes


def test_wrt_naming_a_parameter_checks_its_second_place_too():
    x = np.random.default_rng(31).standard_normal((4, 3))
    res = gradcheck.check_layer(_StoresAndReturns("returned"), x, wrt=["W"])
    assert res.status == "mismatch" and _failing(res) == ["W (returned 'W')"], res.report()


# -- method names: a core pair beside its wrappers, and private names -------------------------
class _WrappedPropagate:
    """``propagate``/``backpropagate`` and the wrappers ``*_with_validation`` calling
    them; ``bug`` drops tanh' in the backward."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def propagate_with_validation(self, x):
        return self.propagate(x)

    def backpropagate_with_validation(self, delta):
        return self.backpropagate(delta)

    def propagate(self, x):
        self.y = np.tanh(x)
        return self.y

    def backpropagate(self, delta):
        return delta if self.bug else delta * (1 - self.y ** 2)


class _PrivateNames:
    def __init__(self, bug: bool = False):
        self.W, self.bug = np.random.default_rng(32).standard_normal((3, 2)), bug

    def count_params(self):
        return self.W.size

    def _forwards(self, x):
        self.x = x
        return x @ self.W

    def _backwards(self, dout):
        self.dW = self.x.T @ dout * (2 if self.bug else 1)
        return dout @ self.W.T


@pytest.mark.parametrize("layer", [_WrappedPropagate, _PrivateNames])
@pytest.mark.parametrize("bug", [False, True])
def test_method_pairs_beside_wrappers_and_private_ones(layer, bug):
    x = np.random.default_rng(33).standard_normal((4, 3))
    res = gradcheck.check_layer(layer(bug), x)
    if bug:
        assert res.status == "mismatch" and _failing(res) in (["x0"], ["W"]), res.report()
    else:
        assert res.passed, res.report()


class _PropagateWithHelper:
    """Public ``propagate``/``backpropagate`` beside a private ``_forward_linear`` helper
    (no forward); ``bug`` forgets the ReLU mask."""

    def __init__(self, bug: bool = False):
        rng = np.random.default_rng(34)
        self.W, self.b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug

    def _forward_linear(self, x):
        return x @ self.W + self.b

    def propagate(self, x):
        self.x, self.z = x, self._forward_linear(x)
        return np.maximum(self.z, 0)

    def backpropagate(self, delta):
        dz = delta if self.bug else delta * (self.z > 0)
        self.dW, self.db = self.x.T @ dz, dz.sum(0)
        return dz @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_a_private_helper_is_no_forward_beside_public_methods(bug):
    x = np.random.default_rng(35).standard_normal((4, 3))
    res = gradcheck.check_layer(_PropagateWithHelper(bug), x)
    if bug:
        assert res.status == "mismatch" and "x0" in _failing(res), res.report()
    else:
        assert res.passed, res.report()


class _GradsDictOnTheLayer(_StoresAndReturns):
    """Stores ``self.dW`` and ``self.grads['W']`` (what its optimizer reads); ``wrong``
    doubles the dict's copy."""

    def backward(self, dout):
        dw = self.x.T @ dout
        self.dW, self.db = dw, dout.sum(0)
        self.grads = {"W": dw * (2 if self.wrong else 1), "b": dout.sum(0)}
        return dout @ self.W.T


@pytest.mark.parametrize("wrong", ["", "dict"])
def test_a_gradient_also_kept_in_the_layers_grads_dict(wrong):
    x = np.random.default_rng(36).standard_normal((4, 3))
    res = gradcheck.check_layer(_GradsDictOnTheLayer(wrong), x)
    if wrong:
        assert res.status == "mismatch" and _failing(res) == ["W (at grads['W'])"], \
            res.report()
    else:
        assert res.passed, res.report()


class _CacheWithShape(_TwoOutputsThenCache):
    """``(h, c, (x, h, shape))``: the backward raises given a gradient in the cache's place."""

    def forward(self, x):
        h, c, (x, hh) = super().forward(x)
        return h, c, (x, hh, x.shape)

    def backward(self, dh, dc, cache):
        x, h, shape = cache
        return super().backward(dh, dc, (x.reshape(shape), h))


@pytest.mark.parametrize("bug", [False, True])
def test_outputs_then_a_cache_the_plain_reading_cannot_call(bug):
    x = np.random.default_rng(37).standard_normal((4, 3))
    res = gradcheck.check_layer(_CacheWithShape(bug), x)
    _expect(res, ["W"] if bug else None)


# -- parameters nested deep (a Sequential of Residual blocks of Linear layers) ----------------
class _Param:
    def __init__(self, a):
        self.data, self.grad = a, np.zeros_like(a)


class _DeepDense:
    def __init__(self, bug: bool = False):
        self._parameters = {"weight": _Param(np.random.default_rng(38).standard_normal((3, 3)))}
        self.bug = bug

    def forward(self, x):
        self.x = x
        return x @ self._parameters["weight"].data

    def backward(self, dout):
        w = self._parameters["weight"]
        w.grad += self.x.T @ dout / (len(dout) if self.bug else 1)
        return dout @ w.data.T


class _Holder:
    def __init__(self, inner):
        self._modules = {"0": inner}

    def forward(self, x):
        return self._modules["0"].forward(x)

    def backward(self, dout):
        return self._modules["0"].backward(dout)


@pytest.mark.parametrize("bug", [False, True])
def test_a_parameter_nested_twelve_containers_deep_is_checked(bug):
    layer = _DeepDense(bug)
    for _ in range(12):
        layer = _Holder(layer)
    res = gradcheck.check_layer(layer, np.random.default_rng(39).standard_normal((4, 3)))
    deep = [i.name for i in res.inputs if i.name.endswith("_parameters['weight']")]
    assert len(deep) == 1, res.report()
    if bug:
        assert res.status == "mismatch" and _failing(res) == deep, res.report()
    else:
        assert res.passed, res.report()


# -- backward(alpha=..., weight_decay=...) is the step; gradient(eta) the backward -----------
class _StepNamedBackward:
    def __init__(self, bug: bool = False):
        rng = np.random.default_rng(40)
        self.weights, self.bias, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug
        self.w_gradient, self.b_gradient = np.zeros((3, 2)), np.zeros(2)

    def forward(self, x):
        self.x = x
        return x @ self.weights + self.bias

    def gradient(self, eta):
        self.w_gradient += self.x.T @ eta * (0.5 if self.bug else 1.0)
        self.b_gradient += eta.sum(0)
        return eta @ self.weights.T

    def backward(self, alpha=0.00001, weight_decay=0.0004):
        self.weights *= 1 - weight_decay
        self.weights -= alpha * self.w_gradient
        self.bias -= alpha * self.b_gradient
        self.w_gradient, self.b_gradient = np.zeros((3, 2)), np.zeros(2)


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_only_step_settings_is_no_backward(bug):
    x = np.random.default_rng(41).standard_normal((4, 3))
    res = gradcheck.check_layer(_StepNamedBackward(bug), x)
    _expect(res, ["weights"] if bug else None)
    assert any("gradient(), linear in its argument" in n for n in res.notes), res.notes


# -- backward_delta(input, delta) beside backward_update_gradient(input, delta) ---------------
class _SplitBackward:
    """The course template: ``backward_update_gradient`` adds the parameters' gradients
    into ``self._gradient``, ``backward_delta`` returns the input's; ``bug`` says which
    is wrong."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(42)
        self._parameters = {"weight": rng.standard_normal((3, 2)), "bias": rng.standard_normal(2)}
        self._gradient = {"weight": np.zeros((3, 2)), "bias": np.zeros(2)}
        self.bug = bug

    def zero_grad(self):
        self._gradient = {"weight": np.zeros((3, 2)), "bias": np.zeros(2)}

    def forward(self, X):
        return X @ self._parameters["weight"] + self._parameters["bias"]

    def backward_update_gradient(self, input, delta):
        self._gradient["weight"] += input.T @ delta * (2 if self.bug == "dW" else 1)
        self._gradient["bias"] += delta.sum(0)

    def backward_delta(self, input, delta):
        return delta @ self._parameters["weight"].T * (-1 if self.bug == "dX" else 1)

    def update_parameters(self, learning_rate=1e-3):
        self._parameters["weight"] -= learning_rate * self._gradient["weight"]


@pytest.mark.parametrize("bug", ["", "dW", "dX"])
def test_a_backward_split_into_delta_and_update_gradient(bug):
    x = np.random.default_rng(43).standard_normal((4, 3))
    res = gradcheck.check_layer(_SplitBackward(bug), x)
    want = {"dW": ["_parameters['weight']"], "dX": ["x0"]}.get(bug)
    if want:
        assert res.status == "mismatch" and _failing(res) == want, res.report()
    else:
        assert res.passed, res.report()


class _ForgetsItsHelper:
    """``backward(x, dout)`` meant to call ``backward_grad(x, dout)`` (which creates
    ``self.dW``); the broken one forgets: no check may pass it by calling the helper."""

    def __init__(self, bug: bool = False):
        self.W, self.bug = np.random.default_rng(44).standard_normal((3, 2)), bug

    def forward(self, x):
        return x @ self.W

    def backward_grad(self, x, dout):
        self.dW = x.T @ dout

    def backward(self, x, dout):
        if not self.bug:
            self.backward_grad(x, dout)
        return dout @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_that_forgets_its_gradient_helper_never_passes(bug):
    x = np.random.default_rng(45).standard_normal((4, 3))
    if not bug:
        assert gradcheck.check_layer(_ForgetsItsHelper(), x).passed
        return
    try:
        res = gradcheck.check_layer(_ForgetsItsHelper(True), x)
    except gradcheck.LayerConventionError:
        return
    assert not res.passed, res.report()


class _DefaultUnitGradient:
    """``backward(dout=1.0)`` beside a ``local_grad(dout)``: the backward is a backward,
    not a step, even though its one argument has a default; ``bug`` makes it raise."""

    def __init__(self, bug: bool = False):
        self.bug = bug

    def forward(self, x):
        self.x = x
        return np.tanh(x)

    def local_grad(self, dout):
        return dout * (1 - np.tanh(self.x) ** 2)

    def backward(self, dout=1.0):
        if self.bug:
            raise ValueError("shapes")
        return self.local_grad(dout)


def test_a_backward_with_a_unit_default_is_not_swapped_for_another_method():
    x = np.random.default_rng(46).standard_normal((3, 4))
    assert gradcheck.check_layer(_DefaultUnitGradient(), x).passed
    res = gradcheck.check_layer(_DefaultUnitGradient(True), x)
    assert res.status == "error" and not res.passed, res.report()
