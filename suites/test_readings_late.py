"""Readings by observation found on held-out code (corpora 67 on), and the policies that
the earlier corpora showed too strict. Each with a correct subject that passes and a
broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- a gradient with leading axes of length 1: (1, D) for a (D,) parameter -------------------
def _rms_forward(x, gamma, eps=1e-6):
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return x / rms * gamma, (x, gamma, rms)


def _rms_backward(dout, cache, bug=""):
    """``dgamma`` summed with ``keepdims=True``: shape ``(1, D)`` for ``gamma`` of ``(D,)``."""
    x, gamma, rms = cache
    d = x.shape[-1]
    dgamma = np.sum(dout * x / rms, axis=0, keepdims=True)
    dxn = dout * gamma
    dx = dxn / rms - x * np.sum(dxn * x, axis=-1, keepdims=True) / (
        d * (rms if bug == "rms" else rms ** 3))
    return dx, dgamma * (0.5 if bug == "gamma" else 1.0)


@pytest.mark.parametrize("bug, failing", [("", None), ("rms", ["x"]), ("gamma", ["gamma"])])
def test_a_gradient_with_leading_unit_axes_gets_a_verdict_with_a_note(bug, failing):
    rng = np.random.default_rng(67)
    x, gamma = rng.standard_normal((5, 6)), rng.standard_normal(6)
    res = gradcheck.check_vjp(_rms_forward,
                              lambda dy, c: _rms_backward(dy, c, bug), [x, gamma])
    _expect(res, failing)
    note = [n for n in res.notes if "gradient of gamma has shape (1, 6), gamma has (6,)" in n]
    assert note and "an in-place update of gamma by it raises" in note[0], res.notes


class _StoredNorm:
    """A layer storing ``self.dgamma`` of shape ``(1, D)`` for ``self.gamma`` of ``(D,)``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(68)
        self.gamma, self.beta, self.bug = rng.standard_normal(4), rng.standard_normal(4), bug

    def forward(self, x):
        self.x = x
        return x * self.gamma + self.beta

    def backward(self, dout):
        self.dgamma = np.sum(dout * self.x, axis=0, keepdims=True)
        self.dbeta = np.sum(dout, axis=0, keepdims=True) * (2.0 if self.bug == "beta" else 1.0)
        return dout * self.gamma


@pytest.mark.parametrize("bug, failing", [("", None), ("beta", ["beta"])])
def test_a_stored_gradient_with_leading_unit_axes_gets_a_verdict(bug, failing):
    x = np.random.default_rng(69).standard_normal((3, 4))
    res = gradcheck.check_layer(_StoredNorm(bug), x)
    _expect(res, failing)
    assert any("gradient of beta has shape (1, 4), beta has (4,)" in n for n in res.notes)


def test_a_gradient_whose_update_would_change_the_values_stays_a_shape_mismatch():
    """``(6, 1)`` for ``(6,)`` broadcasts to ``(6, 6)`` in an update: no reading of it."""
    rng = np.random.default_rng(70)
    x, gamma = rng.standard_normal((5, 6)), rng.standard_normal(6)
    res = gradcheck.check_vjp(
        _rms_forward, lambda dy, c: (_rms_backward(dy, c)[0], _rms_backward(dy, c)[1].T),
        [x, gamma])
    assert res.status == "shape-mismatch", res.report()


# -- a loss returning more than (loss, dx): each item read by what it does -------------------
def _masked_ce(logits, targets, mask, alpha, bug=""):
    """``(loss_sum, num_real, d_logits, d_alpha)``: a token count between the loss and
    the gradients, and ``alpha`` (a float argument) scaling the scores."""
    z = logits * alpha
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(len(targets))
    loss = -np.sum(mask * np.log(p[rows, targets]))
    dz = p.copy()
    dz[rows, targets] -= 1
    dz *= mask[:, None] if bug != "mask" else 1.0
    d_alpha = np.sum(dz * logits, axis=1, keepdims=True) * (-1 if bug == "alpha" else 1)
    return loss, float(mask.sum()), dz * alpha, d_alpha


def _ce_args():
    rng = np.random.default_rng(71)
    return [rng.standard_normal((4, 5)), np.array([0, 3, 1, 4]), np.array([1.0, 1.0, 0.0, 1.0]),
            rng.uniform(0.5, 1.5, (4, 1))]


@pytest.mark.parametrize("bug, failing", [("", None), ("mask", ["x0", "x3"]),
                                          ("alpha", ["x3"])])
def test_a_loss_returning_a_count_between_loss_and_gradients(bug, failing):
    res = gradcheck.check_loss(lambda *a: _masked_ce(*a, bug=bug), *_ce_args())
    _expect(res, failing)
    assert any("item 0 is the loss" in n and "item 2 x0's gradient" in n
               and "item 3 x3's gradient" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug", ["", "n"])
def test_a_loss_returning_probabilities_beside_its_gradient_is_no_verdict(bug):
    """``(y_pred, loss, dz)``: two arrays of the scores' shape; taking the one that passes
    could pass a wrong gradient beside another's right one ((loss, dlogits, delta), found
    by a review), so which is the gradient is not guessed."""
    def probs_loss_grad(logits, targets, mask, alpha):
        loss, _, dz, _ = _masked_ce(logits, targets, mask, alpha)
        p = np.exp(logits * alpha)
        return p / p.sum(1, keepdims=True), loss, dz * (4.0 if bug else 1.0)

    res = gradcheck.check_loss(probs_loss_grad, *_ce_args())
    assert res.status == "bad-protocol" and "cannot be told" in res.message, res.report()


# -- the backward as a private method: _compute_gradients(grads), no public one -------------
class _Param:
    """A parameter object: its value in ``.params``, its gradient in ``.grads``."""

    def __init__(self, value):
        self.params, self.grads = value, np.zeros_like(value)


class _PrivateBackward:
    def __init__(self, bug=""):
        rng = np.random.default_rng(72)
        self.W, self.b, self.bug = _Param(rng.standard_normal((4, 3))), _Param(np.zeros(3)), bug

    def forward(self, x):
        self.x = x
        return x @ self.W.params + self.b.params

    def parameters(self):
        return self.W, self.b

    def _zero_grad(self):
        self.W.grads, self.b.grads = np.zeros_like(self.W.params), np.zeros_like(self.b.params)

    def _compute_gradients(self, grads):
        self.W.grads = self.x.T @ grads
        self.b.grads = np.sum(grads, axis=0) / (len(grads) if self.bug == "b" else 1)
        if self.bug == "shape":
            self.b.grads = grads  # not summed over the batch
        return grads @ self.W.params.T


@pytest.mark.parametrize("bug, failing", [("", None), ("b", ["b.params"])])
def test_a_private_backward_found_by_what_it_does(bug, failing):
    x = np.random.default_rng(73).standard_normal((5, 4))
    res = gradcheck.check_layer(_PrivateBackward(bug), x)
    _expect(res, failing)
    assert any("_compute_gradients (backward)" in n for n in res.notes), res.notes


def test_a_misshapen_gradient_in_a_parameter_objects_own_slot_is_a_shape_mismatch():
    x = np.random.default_rng(73).standard_normal((5, 4))
    res = gradcheck.check_layer(_PrivateBackward("shape"), x)
    assert res.status == "shape-mismatch", res.report()
    assert "gradient of b.params (stored in b.grads) has shape (5, 3), expected (3,)" \
        in res.message


# -- backward(input, grad_output) stepping by the learning rate the layer holds --------------
class _InputsAndHeldStep:
    def __init__(self, bug=""):
        rng = np.random.default_rng(74)
        self.learning_rate, self.bug = 0.1, bug
        self.weights, self.biases = rng.standard_normal((4, 3)), np.zeros(3)

    def forward(self, input):
        return input @ self.weights + self.biases

    def backward(self, input, grad_output):
        grad_input = grad_output @ self.weights.T
        self.weights = self.weights - self.learning_rate * input.T @ grad_output
        db = grad_output.mean(axis=0) * (1 if self.bug else len(input))
        self.biases = self.biases - self.learning_rate * db
        return grad_input


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["biases"])])
def test_a_backward_taking_the_inputs_again_and_stepping_by_a_held_rate(bug, failing):
    x = np.random.default_rng(75).standard_normal((5, 4))
    res = gradcheck.check_layer(_InputsAndHeldStep(bug), x)
    _expect(res, failing)
    assert any("learning_rate is the step size" in n for n in res.notes), res.notes


# -- a forward returning (output, penalty): the backward takes the output's gradient alone ----
class _WithPenalty:
    """``forward`` returns ``(out, sum(W ** 2))`` (an L2 term the training loop adds to
    the loss) or ``(out, 0)``; ``backward(delta)`` raises on a tuple."""

    def __init__(self, bug="", zero=False):
        self.W, self.bug, self.zero = np.random.default_rng(76).standard_normal((4, 3)), bug, zero

    def forward(self, X):
        self.X = X
        return X @ self.W, 0 if self.zero else np.sum(np.square(self.W))

    def backward(self, delta):
        self.dW = self.X.T @ delta * (0.5 if self.bug == "W" else 1.0)
        return delta[:, ::-1] @ self.W.T if self.bug == "x" else delta @ self.W.T


@pytest.mark.parametrize("zero", [False, True])
@pytest.mark.parametrize("bug, failing", [("", None), ("W", ["W"]), ("x", ["x0"])])
def test_a_forward_returning_its_output_and_a_penalty(bug, failing, zero):
    x = np.random.default_rng(77).standard_normal((5, 4))
    res = gradcheck.check_layer(_WithPenalty(bug, zero), x)
    _expect(res, failing)
    assert any("returned 2 values and its backward takes one output gradient" in n
               for n in res.notes), res.notes


# -- check_elementwise: a function or derivative that writes into its argument ---------------
def _relu_in_place(x, dx=False):
    if dx:
        x[x > 0] = 1
    x[x <= 0] = 0
    return x


def _relu_derivative(x, bug=""):
    d = (x > 0).astype(float)
    return np.where(d > 0, 1.0, x) if bug else d  # the bug keeps the negatives


_POINT = np.array([[-1.2, 0.5, 2.0], [0.3, -0.7, 1.1]])


@pytest.mark.parametrize("bug", ["", "negatives kept"])
def test_a_function_writing_into_its_argument_has_its_derivative_checked_at_the_point(bug):
    """The derivative is given the point, not what the in-place function left of it (the
    broken derivative passed as right when given the overwritten array)."""
    res = gradcheck.check_elementwise(_relu_in_place, lambda v: _relu_derivative(v, bug),
                                      _POINT.copy())
    if bug:
        _expect(res, ["x0"])
    else:
        assert res.status == "mutation" and "the gradients are right" in res.message


@pytest.mark.parametrize("bug", ["", "negatives kept"])
def test_a_derivative_writing_into_its_argument_is_a_mutation_when_right(bug):
    def df(v):
        d = _relu_derivative(v, bug)
        v[...] = 0.0  # writes into the caller's array
        return d

    res = gradcheck.check_elementwise(lambda v: np.maximum(v, 0), df, _POINT.copy())
    if bug:
        _expect(res, ["x0"])
        assert "df modified its argument x0 in place (each call was given a fresh copy)" \
            in res.notes
    else:
        assert res.status == "mutation", res.report()
        assert res.message.startswith("df modified its argument x0 in place: the derivative "
                                      "is right"), res.message


# -- a stored output beside a part's and a list's; a part's stored input gradient ------------
class _Tanh:
    def forward(self, z):
        self.output = np.tanh(z)

    def backward(self, d):
        self.dinputs = (1 - self.output ** 2) * d


class _Cell:
    """``y_t = tanh(W x_t + b)`` over steps, a first layer (no input gradient): the
    output is ``self.Y``, beside ``act.output`` (the part's) and ``Z[t]`` (a list's); the
    part's ``act.dinputs`` is no input gradient of this layer."""

    def __init__(self, bug=""):
        r = np.random.default_rng(78)
        self.W, self.b, self.act, self.bug = r.standard_normal((4, 1)), r.standard_normal(
            (4, 1)), _Tanh(), bug

    def forward(self, X):
        self.X = X
        self.Z = [self.W * xt + self.b for xt in X]
        steps = []
        for z in self.Z:
            self.act.forward(z)
            steps.append(self.act.output.copy())
        self.Y = np.hstack(steps).T

    def backward(self, dY):
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        for t, xt in enumerate(self.X):
            self.act.output = np.tanh(self.Z[t])
            self.act.backward(dY[t].reshape(-1, 1))
            self.dW += self.act.dinputs * (1.0 if self.bug else xt)
            self.db += self.act.dinputs


@pytest.mark.parametrize("bug, failing", [("", None), ("W", ["W"])])
def test_an_output_stored_beside_parts_and_lists_is_named_and_a_parts_gradient_ignored(
        bug, failing):
    """Which stored array is the output is not observed (``Y``, or the part's
    ``act.output``, or the list ``Z``: a review showed a pre-activation on the layer
    beside list outputs); named, the layer is a first layer despite ``act.dinputs``."""
    x = np.random.default_rng(79).standard_normal((5, 1))
    res = gradcheck.check_layer(_Cell(bug), x)
    assert res.status == "bad-protocol" and "output='...'" in res.message, res.report()
    res = gradcheck.check_layer(_Cell(bug), x, output="Y")
    _expect(res, failing)
    assert res.inputs[0].status == "constant", res.report()


# -- the review of these readings: what each must not read --------------------------------------
class _Sigmoid:
    def forward(self, z):
        self.output = 1 / (1 + np.exp(-z))


class _DenseSigmoid:
    """Returns nothing; its output is the part's ``act.output``, beside its own ``z`` of
    the same size: which is the output is not observed (the own-array reading is for
    an output larger than the parts' per-step pieces)."""

    def __init__(self):
        self.W, self.b, self.act = np.ones((3, 2)), np.zeros(2), _Sigmoid()

    def forward(self, x):
        self.x, self.z = x, x @ self.W + self.b
        self.act.forward(self.z)

    def backward(self, dvalues):
        dz = dvalues * self.act.output * (1 - self.act.output)
        self.dW, self.db, self.dinputs = self.x.T @ dz, dz.sum(0), dz @ self.W.T


def test_an_own_array_beside_a_parts_of_its_size_is_not_taken_as_the_output():
    res = gradcheck.check_layer(_DenseSigmoid(), np.random.default_rng(80).standard_normal((4, 3)))
    assert res.status == "bad-protocol" and "output=" in res.message, res.report()


class _BiasTrick:
    def __init__(self, crop):
        self.W, self.crop = np.random.default_rng(81).standard_normal((4, 2)), crop

    def forward(self, x):
        self.xa = np.hstack([x, np.ones((len(x), 1))])
        self.output = self.xa @ self.W

    def backward(self, dvalues):
        self.dweights = self.xa.T @ dvalues
        d = dvalues @ self.W.T
        self.dinputs = d[:, :-1] if self.crop else d  # the bug keeps the bias column


class _Block:
    """A part holds the block's input gradient, ``fc.dinputs``, of the input's length."""

    def __init__(self, crop):
        self.fc, self.act = _BiasTrick(crop), _Tanh()

    def forward(self, x):
        self.fc.forward(x)
        self.act.forward(self.fc.output)
        return self.act.output

    def backward(self, dvalues):
        self.act.backward(dvalues)
        self.fc.backward(self.act.dinputs)


def test_a_parts_uncropped_input_gradient_is_no_first_layer():
    x = np.random.default_rng(82).standard_normal((5, 3))
    res = gradcheck.check_layer(_Block(crop=False), x)
    assert res.status == "shape-mismatch" and "fc.dinputs" in res.message, res.report()


def test_a_loss_with_targets_of_the_predictions_shape_is_not_read_by_passing():
    """``(loss, d_pred, d_target)`` with 0/1 targets: ``d_target`` (minus a wrong-signed
    ``d_pred``) is the right gradient of the predictions; taking it would pass a bug."""
    def mse(pred, target):
        d_pred = (target - pred) / len(pred)  # the sign is wrong
        return 0.5 * np.sum((pred - target) ** 2) / len(pred), d_pred, -d_pred

    rng = np.random.default_rng(83)
    res = gradcheck.check_loss(mse, rng.standard_normal((4, 3)),
                               rng.integers(0, 2, (4, 3)).astype(float))
    assert not res.passed and res.status == "bad-protocol", res.report()


class _HelperBeside:
    """A public ``compute_gradients(dout)`` storing its result beside a private helper
    linear in its argument: the helper is no backward."""

    def forward(self, x):
        self.out = np.tanh(x)
        return self.out

    def _chain(self, dout):
        return dout * (1 - self.out ** 2)

    def compute_gradients(self, dout):
        self.dinputs = self._chain(dout) / len(dout)  # a spurious 1/N


def test_a_private_helper_beside_a_public_one_argument_method_is_no_backward():
    with pytest.raises(TypeError, match="no backward-like method"):
        gradcheck.check_layer(_HelperBeside(), np.random.default_rng(84).standard_normal((4, 3)))


class _PenaltyInBackward:
    def __init__(self, lam):
        self.W, self.lam = np.random.default_rng(85).standard_normal((3, 2)), lam

    def forward(self, x):
        self.x = x
        return x @ self.W, self.lam * np.sum(self.W ** 2)

    def backward(self, dout):
        self.dW = self.x.T @ dout + 2 * self.lam * self.W  # the penalty's gradient too
        return dout @ self.W.T


def test_a_backward_adding_the_second_outputs_gradient_gets_no_verdict():
    x = np.random.default_rng(86).standard_normal((4, 3))
    res = gradcheck.check_layer(_PenaltyInBackward(0.1), x)
    assert res.status == "bad-protocol" and "cannot be told" in res.message, res.report()


class _Holder:
    def __init__(self, W, b):
        self.W, self.b = W, b


class _MomentumInHolder:
    """``self.p.W``/``self.p.b`` stepped with momentum: ``p.b`` is no gradient of
    ``p.W`` (a momentum's step is no gradient either: no verdict, but no false one)."""

    def __init__(self):
        rng = np.random.default_rng(87)
        self.p, self.lr = _Holder(rng.standard_normal((3, 2)), rng.standard_normal(2)), 0.01
        self.vW, self.vb = np.zeros((3, 2)), np.zeros(2)

    def forward(self, x):
        self.x = x
        return x @ self.p.W + self.p.b

    def backward(self, dout):
        self.vW = 0.9 * self.vW - self.lr * self.x.T @ dout
        self.vb = 0.9 * self.vb - self.lr * dout.sum(0)
        self.p.W += self.vW
        self.p.b += self.vb
        return dout @ self.p.W.T


def test_another_parameter_in_the_same_object_is_no_misshapen_gradient():
    x = np.random.default_rng(88).standard_normal((4, 3))
    with pytest.raises(gradcheck.LayerConventionError, match="no gradient was found"):
        gradcheck.check_layer(_MomentumInHolder(), x)


def test_a_derivative_writing_into_its_argument_does_not_pass():
    def df(v):
        d = (v > 0).astype(float)
        v[...] = 0.0
        return d

    res = gradcheck.check_elementwise(lambda v: np.maximum(v, 0), df, _POINT.copy())
    assert not res.passed and "FAILED [mutation]" in str(res), str(res)
    with pytest.raises(gradcheck.GradientMismatch):
        gradcheck.assert_elementwise(lambda v: np.maximum(v, 0), df, _POINT.copy())


def test_an_elementwise_pair_with_a_string_argument():
    def act(x, kind):
        return np.tanh(x) if kind[0] == "tanh" else x

    def dact(x, kind):
        return 1 - np.tanh(x) ** 2 if kind[0] == "tanh" else np.ones_like(x)

    assert gradcheck.check_elementwise(act, dact, _POINT.copy(), np.array(["tanh"])).passed


# -- a function pair's backward taking an input by name before the cache ----------------------
def _ln_forward(x, gamma, beta):
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    xn = (x - mu) / np.sqrt(var + 1e-5)
    return xn * gamma + beta, {"xn": xn, "ivar": 1 / np.sqrt(var + 1e-5)}


def _ln_backward(dy, gamma, cache, bug="", order=("x", "gamma", "beta")):
    """``layer_norm_grad(dy, gamma, cache)``: gamma by its name, then the cache."""
    xn, ivar = cache["xn"], cache["ivar"]
    dxn = dy * gamma
    dx = ivar * (dxn - dxn.mean(1, keepdims=True) - xn * (dxn * xn).mean(1, keepdims=True))
    got = {"x": dx if bug != "x" else ivar * dxn, "gamma": np.sum(dy * xn, axis=0),
           "beta": np.sum(dy, axis=0)}
    return tuple(got[k] for k in order)


@pytest.mark.parametrize("bug, failing", [("", None), ("x", ["x"])])
def test_a_backward_taking_an_input_by_name_before_the_cache(bug, failing):
    rng = np.random.default_rng(89)
    inputs = [rng.standard_normal((4, 5)), rng.standard_normal(5), rng.standard_normal(5)]
    res = gradcheck.check_vjp(_ln_forward, lambda dy, gamma, cache: _ln_backward(
        dy, gamma, cache, bug), inputs)
    _expect(res, failing)
    assert any("takes the cache after the forward's inputs 1 again" in n for n in res.notes)


def test_wrt_gradients_in_another_order_are_no_verdict():
    """``(dgamma, dbeta, dx)`` for ``wrt=[0, 1, 2]``: another order or each computed
    wrongly, shapes cannot tell (as for gradients of every input)."""
    rng = np.random.default_rng(90)
    inputs = [rng.standard_normal((4, 5)), rng.standard_normal(5), rng.standard_normal(5), 1e-5]
    def fwd(x, g, b, eps):
        y, cache = _ln_forward(x, g, b)
        return y, (cache, g)

    res = gradcheck.check_vjp(fwd, lambda dy, c: _ln_backward(
        dy, c[1], c[0], order=("gamma", "beta", "x")), inputs, wrt=[0, 1, 2])
    assert res.status == "bad-protocol" and "another order" in res.message, res.report()


# -- a loss forward returning (loss, probs) whose backward takes its inputs again ------------
class _LossAndProbs:
    """``forward(input, labels) -> (loss, probs)``, ``backward(input, labels)`` (no dout)."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, input, labels):
        s = input - input.max(axis=1, keepdims=True)
        logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
        return -logp[np.arange(len(labels)), labels].mean(), np.exp(logp)

    def backward(self, input, labels):
        g = self.forward(input, labels)[1]
        g[np.arange(len(labels)), labels] -= 1
        return g if self.bug else g / len(labels)


@pytest.mark.parametrize("bug, failing", [("", None), ("no 1/N", ["x0"])])
def test_a_loss_and_probabilities_beside_a_backward_taking_the_inputs_again(bug, failing):
    x = np.random.default_rng(91).standard_normal((4, 5))
    res = gradcheck.check_layer(_LossAndProbs(bug), x, np.array([0, 3, 1, 4]))
    _expect(res, failing)
    assert any("the one float scalar, part 0, is the loss" in n for n in res.notes), res.notes


# -- a list of maps out, backprop(d_maps, learning_rate) stepping its weights ------------------
class _MapsStep:
    def __init__(self, bug=""):
        self.w, self.bug = np.array([1.5, -0.7]), bug

    def __call__(self, x):
        self.x = x
        return [x[0] * self.w[0], x[1] * self.w[1]]

    def backprop(self, d, learning_rate):
        g = np.array([np.sum(d[0] * self.x[0]), np.sum(d[1] * self.x[1])])
        g[1] *= 0.5 if self.bug else 1.0
        self.w = self.w - learning_rate * g
        return np.stack([d[0] * self.w[0], d[1] * self.w[1]]) if self.bug == "late" else \
            np.stack([d[0] * (self.w[0] + learning_rate * g[0]),
                      d[1] * (self.w[1] + learning_rate * g[1])])


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["w"])])
def test_a_list_of_maps_whose_backward_takes_their_gradients_as_one_and_steps(bug, failing):
    x = np.random.default_rng(92).standard_normal((2, 3, 3))
    res = gradcheck.check_layer(_MapsStep(bug), x)
    _expect(res, failing)
    assert any("given them as one list" in n for n in res.notes), res.notes


# -- parameters in a dict of the class, filled in __init__ -------------------------------------
def _class_dict_layer(bug):
    class Linear:
        params: dict = {}  # shared by every instance: each check runs on its own copy
        grads: dict = {}

        def __init__(self):
            self.params["weight"] = np.random.default_rng(93).standard_normal((3, 4))

        def forward(self, x):
            self.last = x
            return x @ self.params["weight"].T

        def backward(self, dout):
            self.grads["weight"] = dout.T @ self.last * (5.0 if bug else 1.0)
            return dout @ self.params["weight"]
    return Linear()


@pytest.mark.parametrize("bug, failing", [("", None), ("x5", ["params['weight']"])])
def test_parameters_in_a_dict_of_the_class(bug, failing):
    layer = _class_dict_layer(bug)
    before = type(layer).params["weight"].copy()
    res = gradcheck.check_layer(layer, np.random.default_rng(94).standard_normal((5, 4)))
    _expect(res, failing)
    assert any("Linear.params: a dict or list of the class" in n for n in res.notes)
    assert np.array_equal(type(layer).params["weight"], before)  # the user's left as it was
    assert type(layer).grads == {}


# -- a function pair given a setting with a default, or a function, after its arrays -----------
def _pool(A, k=2):
    return A.reshape(A.shape[0], -1, k).max(axis=2)


def _pool_backward(dA, A, k=2, bug=""):
    win = A.reshape(A.shape[0], -1, k)
    mask = win == win.max(axis=2, keepdims=True)
    return (mask * (dA[..., None] if not bug else 1.0)).reshape(A.shape)


@pytest.mark.parametrize("bug, failing", [("", None), ("no dA", ["A"])])
def test_a_setting_with_a_default_given_to_both_functions(bug, failing):
    A = np.random.default_rng(95).permutation(24).reshape(2, 12) / 7.0
    res = gradcheck.check_vjp(_pool, lambda dA, A, k: _pool_backward(dA, A, k, bug), [A, 3])
    _expect(res, failing)


def _act_forward(A, W, activation):
    return activation(A @ W)


@pytest.mark.parametrize("bug, failing", [("", None), ("W.T", ["W"])])
def test_a_function_given_to_the_forward_is_a_setting(bug, failing):
    rng = np.random.default_rng(96)
    A, W = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))

    def backward(dZ, A, W):
        return dZ @ W.T, (A.T @ dZ) * (0.5 if bug else 1.0)

    res = gradcheck.check_vjp(_act_forward, backward, [A, W, lambda z: z])
    _expect(res, failing)
    assert any("settings" in n for n in res.notes), res.notes


# -- wrt= naming parameters holds the others constant, gradient or not -------------------------
class _WithInitialState:
    """``h0`` moves the output and the backward gives it no gradient; ``b_grad`` is the
    only stored array of ``bias``'s (and ``h0``'s) shape."""

    def __init__(self, bug=""):
        r = np.random.default_rng(97)
        self.kernel, self.bias = r.standard_normal((3, 4)) * 0.5, r.standard_normal(4) * 0.3
        self.h0, self.bug = r.standard_normal(4) * 0.1, bug
        self.kernel_grad, self.b_grad = np.zeros((3, 4)), np.zeros(4)

    def forward(self, x):
        self._x = x
        self.out = np.tanh(x @ self.kernel + self.h0 + self.bias)
        return self.out

    def backward(self, out_grad):
        d = out_grad * (1 - self.out ** 2)
        self.kernel_grad[:] = self._x.T @ d
        self.b_grad[:] = d.sum(0) * (2.0 if self.bug else 1.0)
        return d @ self.kernel.T


def test_an_array_with_no_gradient_is_an_error_without_wrt():
    x = np.random.default_rng(98).standard_normal((2, 3))
    with pytest.raises(gradcheck.LayerConventionError, match="h0"):
        gradcheck.check_layer(_WithInitialState(), x)


@pytest.mark.parametrize("bug, failing", [("", None), ("2x", ["bias"])])
def test_wrt_naming_parameters_holds_the_others_constant(bug, failing):
    x = np.random.default_rng(98).standard_normal((2, 3))
    res = gradcheck.check_layer(_WithInitialState(bug), x, wrt=["x0", "kernel", "bias"])
    _expect(res, failing)
    assert any(n.startswith("h0: no gradient found, and not named in wrt=") for n in res.notes)


# -- corpus 76: targets held by a loss, gradient keys with the layer's prefix, a pair by place --
class _HeldTargets:
    def __init__(self, target, bug=""):
        self.target, self.bug = target, bug

    def forward(self, logits):
        self.logits = logits
        z = logits - logits.max(1, keepdims=True)
        return -np.mean(np.sum(self.target * (z - np.log(np.exp(z).sum(1, keepdims=True))), 1))

    def backward(self, loss=0):
        e = np.exp(self.logits - self.logits.max(1, keepdims=True))
        self.grad_input = (e / e.sum(1, keepdims=True) - self.target) / (
            1 if self.bug else len(self.logits))
        return self.grad_input


@pytest.mark.parametrize("bug, failing", [("", None), ("no 1/N", ["x0"])])
def test_one_hot_targets_a_loss_holds_are_constants(bug, failing):
    rng = np.random.default_rng(99)
    res = gradcheck.check_layer(_HeldTargets(np.eye(5)[[0, 3, 1, 4]], bug),
                                rng.standard_normal((4, 5)))
    _expect(res, failing)
    assert any(n.startswith("target: 0/1 values a loss holds") for n in res.notes)


def test_a_parameter_of_ones_in_a_scalar_output_layer_is_no_target():
    """A ``gamma`` of ones whose gradient the backward forgets: no 0/1 targets (review)."""
    class Scaled:
        def __init__(self):
            self.gamma = np.ones(4)

        def forward(self, x):
            self.x = x
            return np.sum((x * self.gamma) ** 2)

        def backward(self, dout=1.0):
            return dout * 2 * self.x * self.gamma ** 2

    x = np.random.default_rng(123).standard_normal((3, 4))
    with pytest.raises(gradcheck.LayerConventionError, match="gamma"):
        gradcheck.check_layer(Scaled(), x)


class _PrefixedKeys:
    def __init__(self, bug=""):
        rng = np.random.default_rng(100)
        self.gamma, self.beta = 1 + 0.3 * rng.standard_normal(4), rng.standard_normal(4)
        self.ids = {"gamma": "layer7_gamma", "beta": "layer7_beta"}
        self.gradients, self.bug = {}, bug

    def forward(self, x):
        self.std = x.std(0)
        self.xn = (x - x.mean(0)) / self.std
        return self.gamma * self.xn + self.beta

    def backward(self, g):
        self.gradients[self.ids["beta"]] = g.sum(0) * (2.0 if self.bug else 1.0)
        self.gradients[self.ids["gamma"]] = (g * self.xn).sum(0)
        gx = g * self.gamma
        return (gx - gx.mean(0) - self.xn * (gx * self.xn).mean(0)) / self.std


@pytest.mark.parametrize("bug, failing", [("", None), ("2x", ["beta"])])
def test_gradient_keys_with_one_prefix_in_a_dict_beside(bug, failing):
    x = np.random.default_rng(101).standard_normal((6, 4))
    res = gradcheck.check_layer(_PrefixedKeys(bug), x)
    _expect(res, failing)


# -- the second review: each reading's limits -----------------------------------------------
@pytest.mark.parametrize("bug, failing", [("", None), ("p-1", ["x"])])
def test_a_setting_with_a_default_is_given_back_its_value(bug, failing):
    def power_backward(dy, x, p=2):
        return dy * p * x ** (p - (2 if bug else 1))

    x = np.random.default_rng(103).uniform(0.5, 1.5, (3, 4))
    _expect(gradcheck.check_vjp(lambda x, p=2: x ** p, power_backward, [x, 3]), failing)


class _TimeDistributed:
    """A part run per step; the broken twin forgets its own ``dinputs``: the part's
    per-step ``dense.dinputs`` is no reason to read it as a first layer."""

    def __init__(self, bug=""):
        self.dense, self.bug = _BiasTrick(crop=True), bug
        self.dense.weights = self.dense.W
        del self.dense.W

    def forward(self, x):
        self.x = x
        return np.stack([self._step(x[t]) for t in range(len(x))])

    def _step(self, xt):
        self.dense.W = self.dense.weights
        self.dense.forward(xt)
        del self.dense.W
        return self.dense.output

    def backward(self, dout):
        dW, dx = 0, np.zeros_like(self.x)
        for t in range(len(self.x)):
            self._step(self.x[t])
            self.dense.W = self.dense.weights
            self.dense.backward(dout[t])
            del self.dense.W
            dW, dx[t] = dW + self.dense.dweights, self.dense.dinputs
        self.dense.dweights = dW
        if not self.bug:
            self.dinputs = dx


def test_a_forgotten_input_gradient_beside_a_per_step_part_does_not_pass():
    x = np.random.default_rng(104).standard_normal((3, 4, 3))
    assert gradcheck.check_layer(_TimeDistributed(), x).passed
    assert not gradcheck.check_layer(_TimeDistributed("forgot"), x).passed


class _ParamsDict:
    def __init__(self, bug=""):
        r = np.random.default_rng(105)
        self.params, self.bug = {"W": r.standard_normal((3, 4)), "b": r.standard_normal(4)}, bug

    def forward(self, x):
        self.x = x
        self.out = np.tanh(x @ self.params["W"] + self.params["b"])
        return self.out

    def backward(self, dout):
        dz = dout * (1 - self.out ** 2)
        return dz @ self.params["W"].T, self.x.T @ dz * (2.0 if self.bug else 1.0), dz.sum(0)


@pytest.mark.parametrize("bug, failing", [("", None), ("2x", ["params['W']"])])
def test_wrt_naming_some_parameters_of_a_flat_return(bug, failing):
    x = np.random.default_rng(106).standard_normal((5, 3))
    _expect(gradcheck.check_layer(_ParamsDict(bug), x, wrt=["x0", "params['W']"]), failing)


def test_a_gradient_beside_another_array_of_its_shape_is_not_guessed():
    """``(loss, dlogits, delta)`` with integer one-hot labels: ``dlogits`` has an extra
    1/N, ``delta`` is the summed loss's gradient; taking the one that passes passed it."""
    def ce(z, y):
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        return -np.sum(y * np.log(p)), (p - y) / len(z), p - y

    rng = np.random.default_rng(107)
    labels = np.eye(3, dtype=int)[[0, 2, 1, 1, 0]]
    res = gradcheck.check_loss(ce, rng.standard_normal((5, 3)), labels)
    assert not res.passed and res.status == "bad-protocol", res.report()


class _PrivateBesideUpdate:
    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(108).standard_normal((3, 4)), bug

    def __call__(self, x):
        self.x, self.out = x, np.tanh(x @ self.W)
        return self.out

    def _compute_gradients(self, grads):
        dz = grads * (1 - self.out ** 2)
        self.dW = self.x.T @ dz * (0.5 if self.bug else 1.0)
        return dz @ self.W.T

    def update(self, lr):
        self.W -= lr * self.dW


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["W"])])
def test_a_private_backward_beside_a_public_step(bug, failing):
    x = np.random.default_rng(109).standard_normal((5, 3))
    _expect(gradcheck.check_layer(_PrivateBesideUpdate(bug), x), failing)


class _PenaltyOneInput:
    """``forward(inputs) -> (out, penalty)``; the backward's output gradient is also
    named ``inputs``: no loss taking its inputs again."""

    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(110).standard_normal((3, 2)), bug

    def forward(self, inputs):
        self.inputs = inputs
        return inputs @ self.W, 1e-2 * np.sum(self.W ** 2)

    def backward(self, inputs):
        self.dW = self.inputs.T @ inputs * (2.0 if self.bug else 1.0)
        return inputs @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("2x", ["W"])])
def test_an_output_gradient_named_as_the_forwards_input(bug, failing):
    x = np.random.default_rng(111).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_PenaltyOneInput(bug), x), failing)


def test_a_derivative_writing_into_a_later_argument_is_named():
    def df(p, t):
        t -= p  # writes into the target
        return np.ones_like(p)

    rng = np.random.default_rng(112)
    res = gradcheck.check_elementwise(lambda p, t: p - t, df, rng.standard_normal(4),
                                      rng.standard_normal(4))
    assert res.status == "mutation" and res.message.startswith("df modified its argument x1")


def test_a_class_list_of_layers_is_the_users_after_the_check():
    class Model:
        layers: list = []

        def __init__(self):
            self.layers.append(_PrivateBesideUpdate())

        def forward(self, x):
            return self.layers[0](x)

        def backward(self, d):
            return self.layers[0]._compute_gradients(d)

    model = Model()
    held, first = Model.layers, Model.layers[0]
    before = first.W.copy()
    gradcheck.check_layer(model, np.random.default_rng(113).standard_normal((5, 3)))
    assert Model.layers is held and Model.layers[0] is first
    assert np.array_equal(first.W, before)


def test_a_class_dict_beside_a_module_the_layer_holds():
    class Linear:
        params: dict = {}

        def __init__(self):
            self.xp = np
            self.params["W"] = np.random.default_rng(114).standard_normal((3, 4))

        def forward(self, x):
            self.x = x
            return self.xp.tanh(x @ self.params["W"])

        def backward(self, dout):
            d = dout * (1 - np.tanh(self.x @ self.params["W"]) ** 2)
            self.dW = self.x.T @ d
            return d @ self.params["W"].T

    x = np.random.default_rng(115).standard_normal((5, 3))
    assert gradcheck.check_layer(Linear(), x).passed


@pytest.mark.parametrize("bug, failing", [("", None), ("scale", ["A"])])
def test_settings_after_a_function_are_given_back_by_name(bug, failing):
    """``conv_backward(dZ, A, W, mode="single")`` of ``conv(A, W, act, mode="single")``,
    checked with ``mode="double"``: the backward gets the forward's value."""
    def forward(A, W, activation, mode="single"):
        return activation(A @ W) * (2.0 if mode == "double" else 1.0)

    def backward(dZ, A, W, mode="single"):
        k = 2.0 if mode == "double" else 1.0
        return dZ * (1.0 if bug else k) @ W.T, A.T @ dZ * k

    rng = np.random.default_rng(116)
    inputs = [rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), lambda z: z, "double"]
    _expect(gradcheck.check_vjp(forward, backward, inputs), failing)


# -- corpus 75: a rounding of a zero is no affine term; a test helper is no forward ------------
class _RowNorm:
    """A batch norm over ``N * T`` rows whose backward adds ``(2 / M) * sum(z - mean)``,
    zero but for rounding (1e-16); the bug divides by ``N``, not ``N * T``."""

    def __init__(self, bug=""):
        r = np.random.default_rng(117)
        self.gamma, self.beta, self.bug = 1 + 0.3 * r.standard_normal(4), r.standard_normal(4), bug

    def forward(self, z):
        n, t, h = z.shape
        self.z = z.reshape(n * t, h)
        self.mean, self.std = self.z.mean(0), np.sqrt(self.z.var(0) + 1e-5)
        self.xn = (self.z - self.mean) / self.std
        return (self.gamma * self.xn + self.beta).reshape(n, t, h)

    def backward(self, da):
        n, t, h = da.shape
        da, m = da.reshape(n * t, h), (n if self.bug else n * t)
        self.dbeta, self.dgamma = da.sum(0), (da * self.xn).sum(0)
        dxn = self.gamma * da
        dxc = dxn / self.std
        dvar = np.sum(dxn * (self.z - self.mean) * (-self.std ** -2), 0) / 2 / self.std
        dmean = -(np.sum(dxc, 0) + (2 / m) * np.sum(self.z - self.mean, 0))
        return (dxc + (dmean + 2 * dvar * (self.z - self.mean)) / m).reshape(n, t, h)


@pytest.mark.parametrize("bug, failing", [("", None), ("N", ["x0"])])
def test_a_rounding_of_zero_in_a_backward_is_no_constant_term(bug, failing):
    z = np.random.default_rng(118).standard_normal((2, 3, 4))
    _expect(gradcheck.check_layer(_RowNorm(bug), z), failing)


class _PoolWithTestHelper:
    def apply(self, x):
        self.x = x
        return x.reshape(x.shape[0] // 2, 2, -1).max(1)

    def test_pool_forward(self, x):
        raise AssertionError("a test helper is never run by the check")

    def backprop(self, d):
        xr = self.x.reshape(self.x.shape[0] // 2, 2, -1)
        return ((xr == xr.max(1, keepdims=True)) * d[:, None, :]).reshape(self.x.shape)


def test_a_test_helper_is_no_forward():
    x = np.random.default_rng(119).permutation(12).reshape(4, 3) / 3.0
    _expect(gradcheck.check_layer(_PoolWithTestHelper(), x), None)


# -- a flat return whose arrays share a shape: in the order the layer holds them ---------------
class _ScaleShift:
    """``y = (x @ W) * a + c``, ``a`` and ``c`` both ``(2,)``; backward ``(dx, dW, da, dc)``."""

    def __init__(self, bug=""):
        r = np.random.default_rng(120)
        self.W, self.a = r.standard_normal((3, 2)), r.standard_normal(2)
        self.c, self.bug = r.standard_normal(2), bug

    def forward(self, x):
        self.x, self.z = x, x @ self.W
        return self.z * self.a + self.c

    def backward(self, d):
        da, dc = (d * self.z).sum(0), d.sum(0)
        if self.bug == "swap":
            da, dc = dc, da
        return (d * self.a) @ self.W.T, self.x.T @ (d * self.a), da * (
            0.5 if self.bug == "a" else 1.0), dc


@pytest.mark.parametrize("bug, failing", [("", None), ("a", ["a"]), ("swap", ["a", "c"])])
def test_a_flat_return_of_arrays_of_one_shape_in_the_order_held(bug, failing):
    x = np.random.default_rng(121).standard_normal((4, 3))
    res = gradcheck.check_layer(_ScaleShift(bug), x)
    _expect(res, failing)
    assert any("in the order the layer holds the arrays" in n for n in res.notes), res.notes


def test_an_input_of_the_arrays_shape_keeps_a_flat_return_unread():
    """``forward(x, g)`` with ``g`` of ``a``'s and ``c``'s shape, ``(dx, dg, dW, da, dc)``
    with ``dg`` and ``dc`` swapped: which item is whose, shapes cannot tell: no pass."""
    class Gate(_ScaleShift):
        def forward(self, x, g):
            self.g, self.pre = g, super().forward(x)
            return self.pre * g

        def backward(self, d):
            dx, dW, da, dc = super().backward(d * self.g)
            return dx, dc, dW, da, (d * self.pre).sum(0)

    rng = np.random.default_rng(122)
    try:
        res = gradcheck.check_layer(Gate(), rng.standard_normal((4, 3)), rng.standard_normal(2))
    except gradcheck.LayerConventionError:
        return
    assert not res.passed, res.report()


# -- a dict of gradients keyed by the model dict's own keys (neuraltalk) -----------------------
def _gen_forward(Xi, model):
    h = np.tanh(Xi @ model["W"] + model["b"])
    return h, (Xi, h, model)


def _gen_backward(dh, cache, bug=""):
    Xi, h, model = cache
    dz = dh * (1 - h ** 2)
    return {"dXi": dz @ model["W"].T, "W": Xi.T @ dz * (2.0 if bug else 1.0), "b": dz.sum(0)}


@pytest.mark.parametrize("bug, failing", [("", None), ("2x", ["model['W']"])])
def test_gradients_keyed_by_a_dict_inputs_own_keys(bug, failing):
    rng = np.random.default_rng(124)
    model = {"W": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)}
    res = gradcheck.check_vjp(_gen_forward, lambda dh, c: _gen_backward(dh, c, bug),
                              [rng.standard_normal((5, 3)), model])
    _expect(res, failing)
