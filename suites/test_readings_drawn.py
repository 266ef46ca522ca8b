"""Readings of held-out code met in stop 52's batches (corpora 232-235): each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck


class _Dropout:
    """A mask drawn from the global generator in forward; backward(input, grad)."""

    def __init__(self, p: float = 0.5, fresh: bool = False) -> None:
        self.p, self.fresh, self.mask = p, fresh, None

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.mask = np.random.binomial(1, 1 - self.p, size=x.shape)  # noqa: NPY002
        return self.mask * x

    def backward(self, x: np.ndarray, grad: np.ndarray) -> np.ndarray:
        mask = np.random.binomial(1, self.p, size=x.shape) if self.fresh else self.mask  # noqa: NPY002
        return mask * grad


@pytest.mark.parametrize("fresh", [False, True])
def test_a_backward_drawing_its_own_mask_is_a_mismatch_not_a_nondeterministic(fresh):
    """A backward that draws a fresh mask from the global generator (corpus 235) starts
    every call from where its forward left the generator: the same wrong mask each time,
    so a gradient verdict; the mask the forward stored passes."""
    x = np.random.default_rng(0).standard_normal((4, 6))
    state = np.random.get_state()  # noqa: NPY002
    res = gradcheck.check_layer(_Dropout(fresh=fresh), x)
    assert (res.status == "mismatch") if fresh else res.passed, res.report()
    after = np.random.get_state()  # noqa: NPY002
    assert after[2] == state[2] and np.array_equal(after[1], state[1])  # the user's, back


class _PerSampleLinear:
    """``x @ W.T + b`` with ``b`` a column; backward stores one gradient per sample,
    ``(N, out, in)`` and ``(N, out, 1)``, which its update sums."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(5)
        self.weights, self.biases = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
        self.bug = bug

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return x @ self.weights.T + self.biases.reshape(1, -1)

    def backward(self, dout: np.ndarray) -> np.ndarray:
        n = len(dout)
        self.w_grad = dout.reshape(n, -1, 1) @ self.x.reshape(n, 1, -1)
        self.b_grad = dout.reshape(n, -1, 1) / (n if self.bug else 1)
        return dout @ self.weights


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_stored_per_sample_are_checked_as_their_sum(bug):
    """Corpus 234: a per-sample stack ``(N, *W.shape)`` is the gradient summed over the
    batch (noted); a spurious 1/N on the bias is a mismatch of the bias alone."""
    x = np.random.default_rng(6).standard_normal((5, 4))
    res = gradcheck.check_layer(_PerSampleLinear(bug), x)
    if bug:
        assert res.status == "mismatch" and [t.name for t in res.inputs if not t.passed] == [
            "biases"], res.report()
    else:
        assert res.passed and len(res.inputs) == 3, res.report()
        assert any("per sample, shape (5, 3, 4)" in n for n in res.notes), res.notes


# -- a network whose loss is a method and whose backward takes the targets -----------------
class _Net:
    """``_forward(X)``, ``_compute_loss(y, y_hat)`` (mean binary cross-entropy) and
    ``_backward(X, y)`` stepping the weights by ``self.lr``; ``fit`` trains (corpus 233)."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(7)
        self.W1, self.b1 = rng.standard_normal((4, 5)) * 0.7, rng.standard_normal((1, 5)) * 0.1
        self.W2, self.b2 = rng.standard_normal((5, 1)) * 0.7, np.zeros((1, 1))
        self.lr, self.bug = 0.05, bug

    def _forward(self, X):
        self.A1 = np.tanh(X @ self.W1 + self.b1)
        self.A2 = 1 / (1 + np.exp(-(self.A1 @ self.W2 + self.b2)))
        return self.A2

    def _compute_loss(self, y, y_hat):
        return float(-np.mean(y * np.log(y_hat) + (1 - y) * np.log(1 - y_hat)))

    def _backward(self, X, y):
        for name, g in self._grads(X, y).items():
            setattr(self, name, getattr(self, name) - self.lr * g)

    def _grads(self, X, y):
        m = len(X)
        dZ2 = (self.A2 - y) / m
        dW2, db2 = self.A1.T @ dZ2, dZ2.sum(0, keepdims=True)
        dZ1 = dZ2 @ self.W2.T * (1 if self.bug else 1 - self.A1 ** 2)
        return {"W1": X.T @ dZ1, "b1": dZ1.sum(0, keepdims=True), "W2": dW2, "b2": db2}

    def fit(self, X, y):
        loss = self._compute_loss(y, self._forward(X))
        self._backward(X, y)
        return loss


class _Recurrent:
    """``forward(X)`` logits of a tiny recurrence, ``compute_loss(logits, y)`` storing the
    probabilities, ``backward(y)`` storing the gradients (no step)."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(8)
        self.Wx, self.Wh = rng.standard_normal((2, 4)) * 0.6, rng.standard_normal((4, 4)) * 0.6
        self.Wy, self.bug = rng.standard_normal((4, 3)) * 0.6, bug

    def forward(self, X):
        self.X, self.h = X, [np.zeros((len(X), 4))]
        for t in range(X.shape[1]):
            self.h.append(np.tanh(X[:, t] @ self.Wx + self.h[-1] @ self.Wh))
        return self.h[-1] @ self.Wy

    def compute_loss(self, logits, y):
        e = np.exp(logits - logits.max(1, keepdims=True))
        self.probs = e / e.sum(1, keepdims=True)
        return float(-np.mean(np.log(self.probs[np.arange(len(y)), y])))

    def backward(self, y):
        d = self.probs.copy()
        d[np.arange(len(y)), y] -= 1
        d /= len(y)
        self.dWy = self.h[-1].T @ d
        dh = d @ self.Wy.T
        self.dWx, self.dWh = np.zeros_like(self.Wx), np.zeros_like(self.Wh)
        for t in reversed(range(self.X.shape[1])):
            dz = dh * (1 - self.h[t + 1] ** 2)
            self.dWx += self.X[:, t].T @ dz
            self.dWh += (self.h[t + 1] if self.bug else self.h[t]).T @ dz
            dh = dz @ self.Wh.T


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("cls, failing", [(_Net, ["W1", "b1"]), (_Recurrent, ["Wh"])])
def test_a_loss_method_between_a_forward_and_a_backward_taking_the_targets(cls, failing, bug):
    """``check_layer(net, X, y)`` where the forward takes X alone: the targets go to the
    one method turning the output into a number, the backward is that loss's gradient
    (stepped or stored); ``fit``, which trains, is no loss."""
    rng = np.random.default_rng(9)
    if cls is _Net:
        x, y = rng.standard_normal((6, 4)), rng.integers(0, 2, (6, 1)).astype(float)
    else:
        x, y = rng.standard_normal((3, 4, 2)), np.array([0, 2, 1])
    res = gradcheck.check_layer(cls(bug), x, y)
    if bug:
        assert res.status == "mismatch" and sorted(
            t.name for t in res.inputs if not t.passed) == sorted(failing), res.report()
    else:
        assert res.passed, res.report()
    assert any("the one method that turns its output into a number" in n
               for n in res.notes), res.notes


class _TwoLosses(_Recurrent):
    def hinge(self, logits, y):
        return float(np.mean(np.maximum(0, 1 - logits[np.arange(len(y)), y])))


def test_two_methods_that_could_be_the_loss_give_no_reading():
    rng = np.random.default_rng(9)
    res = gradcheck.check_layer(_TwoLosses(), rng.standard_normal((3, 4, 2)), np.array([0, 2, 1]))
    assert res.status == "error" and "were given" in res.message, res.report()


# -- a stateless layer storing two outputs, its backward taking both gradients by name ----
class _TwoStored:
    """``forward(x, h, U, W, V)`` stores ``s`` and ``out``; ``backward`` takes the same
    arguments, then ``ds`` and ``dout``, and returns ``(dh, dU, dW, dV)`` (no dx)."""

    def __init__(self, bug: bool = False) -> None:
        self.bug = bug

    def forward(self, x, h, U, W, V):
        self.a = U @ x + W @ h
        self.s = np.tanh(self.a)
        self.out = V @ self.s

    def backward(self, x, h, U, W, V, ds, dout):
        self.forward(x, h, U, W, V)
        dV = np.outer(dout, self.s)
        da = (V.T @ dout + (0 if self.bug else ds)) * (1 - self.s ** 2)
        dU, dW, dh = np.outer(da, x), np.outer(da, h), W.T @ da
        return (dh, dU, dW, dV)


class _TwoStoredHolding(_TwoStored):
    def __init__(self, bug: bool = False) -> None:
        super().__init__(bug)
        self.scale = np.ones(3)  # an array of its own: its gradient would go unread


def _two_stored_inputs():
    rng = np.random.default_rng(10)
    return (np.eye(4)[1], rng.standard_normal(3), rng.standard_normal((3, 4)),
            rng.standard_normal((3, 3)), rng.standard_normal((2, 3)))


@pytest.mark.parametrize("bug", [False, True])
def test_outputs_named_by_the_backward_s_extra_arguments(bug):
    """Corpus 232's rnnlm: the arguments after the forward's are the gradients of the
    arrays they are named for; the returned gradients are placed by their names, and
    the one-hot x, given none, is a constant."""
    res = gradcheck.check_layer(_TwoStored(bug), *_two_stored_inputs())
    if bug:
        assert res.status == "mismatch", res.report()
        assert {t.name for t in res.inputs if not t.passed} >= {"h", "U", "W"}, res.report()
    else:
        assert res.passed, res.report()
        assert any("stores s, out: its outputs" in n and "no gradient for x" in n
                   for n in res.notes), res.notes


def test_a_layer_holding_arrays_is_not_read_through_its_stored_outputs():
    res = gradcheck.check_layer(_TwoStoredHolding(), *_two_stored_inputs())
    assert res.status == "bad-protocol" and "stored several arrays" in res.message, res.report()


# -- review 99 ------------------------------------------------------------------------------
class _ForgetsDV(_TwoStored):
    def backward(self, x, h, U, W, V, ds, dout):
        dh, dU, dW, _ = super().backward(x, h, U, W, V, ds, dout)
        return (dh, dU, dW)  # dV forgotten


def test_a_float_input_given_no_gradient_is_no_stored_outputs_reading():
    """Review 99: with a dense x, the forgotten dV would have read as a constant."""
    xs = list(_two_stored_inputs())
    xs[0] = np.random.default_rng(11).standard_normal(4)
    res = gradcheck.check_layer(_ForgetsDV(), *xs)
    assert res.status == "bad-protocol" and not res.passed, res.report()


class _MetricOnly(_Net):
    """The only (output, y) -> number method is a metric: the loss is elsewhere."""

    _compute_loss = None  # type: ignore[assignment]

    def mae(self, y_hat, y):
        return float(np.mean(np.abs(y - y_hat)))


class _AdamStep(_Net):
    """A loss's backward(X, y) taking an Adam step: lr * sign(g) on its first call."""

    def _backward(self, X, y):
        for k, g in self._grads(X, y).items():
            setattr(self, k, getattr(self, k) - self.lr * g / (np.abs(g) + 1e-8))


@pytest.mark.parametrize("cls", [_MetricOnly, _AdamStep])
def test_a_metric_or_a_sign_like_step_gives_no_loss_method_reading(cls):
    """Review 99: a metric named as one is no loss; Adam's first step, the same size in
    every element, is no gradient."""
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 2, (6, 1)).astype(float)
    res = gradcheck.check_layer(cls(), x, y)
    assert res.status == "error" and not res.passed, res.report()


class _StackApplied:
    """A per-sample dW its own update() applies as it is (W becomes a stack)."""

    def __init__(self) -> None:
        self.W, self.lr = np.random.default_rng(5).standard_normal((3, 4)), 0.1

    def forward(self, x):
        self.x = x
        return x @ self.W.T

    def backward(self, dout):
        self.dW = dout[:, :, None] * self.x[:, None, :]
        return dout @ self.W

    def update(self):
        self.W = self.W - self.lr * self.dW


def test_a_per_sample_stack_its_own_update_applies_unsummed_is_a_shape_mismatch():
    x = np.random.default_rng(6).standard_normal((5, 4))
    res = gradcheck.check_layer(_StackApplied(), x)
    assert res.status == "shape-mismatch", res.report()


# -- check_vjp: a dict key that is 'd' + an input's name but for underscores ---------------
def _step_fwd(x, a_0, W):
    a = np.tanh(x @ W + a_0)
    return a, (x, a_0, W, a)


def _step_bwd(bug):
    def bwd(da, cache):
        x, a_0, W, a = cache
        dz = da * (1 - a * a) * (2.0 if bug else 1.0)
        return {"dx": dz @ W.T, "da0": dz, "dW": x.T @ dz}
    return bwd


@pytest.mark.parametrize("bug", [False, True])
def test_a_gradient_key_named_but_for_underscores_is_that_input_s(bug):
    """Corpus 236: the input renamed a_0, the key kept as da0."""
    rng = np.random.default_rng(12)
    xs = [rng.standard_normal((3, 4)), rng.standard_normal((3, 5)), rng.standard_normal((4, 5))]
    res = gradcheck.check_vjp(_step_fwd, _step_bwd(bug), xs)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert any("da0 for a_0" in n for n in res.notes), res.notes


# -- a forward returning its values, a loss of the last, a backward given them all --------
class _TupleNet:
    """``_forward(X)`` returns ``(z1, a1, z2, a2)``; ``_bce(y, y_pred)``;
    ``_backward(X, y, z1, a1, z2, a2)`` returns the gradients keyed by attribute name
    (``flat``: as a tuple ``d_W1, d_b1, d_W2, d_b2``) (corpora 226 and 238)."""

    def __init__(self, bug: bool = False, flat: bool = False) -> None:
        rng = np.random.default_rng(13)
        self.W1, self.b1 = rng.standard_normal((4, 5)) * 0.7, rng.standard_normal((1, 5)) * 0.1
        self.W2, self.b2 = rng.standard_normal((5, 1)) * 0.7, np.zeros((1, 1))
        self.bug, self.flat = bug, flat

    def _forward(self, X):
        z1 = X @ self.W1 + self.b1
        a1 = np.tanh(z1)
        z2 = a1 @ self.W2 + self.b2
        return z1, a1, z2, 1 / (1 + np.exp(-z2))

    def _bce(self, y, y_pred):
        return float(-np.mean(y * np.log(y_pred) + (1 - y) * np.log(1 - y_pred)))

    def _backward(self, X, y, z1, a1, z2, a2):
        dz2 = (a2 - y) / len(X)
        dz1 = dz2 @ self.W2.T * (1 if self.bug else 1 - a1 ** 2)
        d_W1, d_b1 = X.T @ dz1, dz1.sum(0, keepdims=True)
        d_W2, d_b2 = a1.T @ dz2, dz2.sum(0, keepdims=True)
        if self.flat:
            return d_W1, d_b1, d_W2, d_b2
        return {"W1": d_W1, "b1": d_b1, "W2": d_W2, "b2": d_b2}


class _LossOfAll:
    """``forward(X)`` logits, ``compute_loss(X, Y)`` running it and a softmax
    cross-entropy, ``backward()`` starting from that loss and storing ``dW``, ``db``."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(14)
        self.W, self.b, self.bug = rng.standard_normal((4, 3)), np.zeros(3), bug

    def forward(self, X):
        self.X = X
        return X @ self.W + self.b

    def compute_loss(self, X, Y):
        z = self.forward(X)
        e = np.exp(z - z.max(1, keepdims=True))
        self.p, self.Y = e / e.sum(1, keepdims=True), Y
        return float(-np.mean(np.sum(Y * np.log(self.p), axis=1)))

    def backward(self):
        d = (self.p - self.Y) / (1 if self.bug else len(self.Y))
        self.dW, self.db = self.X.T @ d, d.sum(0)


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("flat", [False, True])
def test_a_loss_of_the_last_output_and_a_backward_given_every_output(flat, bug):
    rng = np.random.default_rng(15)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 2, (6, 1)).astype(float)
    res = gradcheck.check_layer(_TupleNet(bug, flat), x, y)
    if bug:
        assert res.status == "mismatch" and sorted(
            t.name for t in res.inputs if not t.passed) == ["W1", "b1"], res.report()
    else:
        assert res.passed, res.report()
    assert any("(its output 3 of 4)" in n and "given the forward's 4 outputs" in n
               for n in res.notes), res.notes


@pytest.mark.parametrize("bug", [False, True])
def test_a_loss_method_taking_every_input_is_the_forward(bug):
    """Corpus 238: forward(X) refuses the targets; compute_loss(X, Y) takes both."""
    rng = np.random.default_rng(16)
    x, y = rng.standard_normal((5, 4)), np.eye(3)[rng.integers(0, 3, 5)]
    res = gradcheck.check_layer(_LossOfAll(bug), x, y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert any("compute_loss, the one method named as a loss" in n for n in res.notes)


# -- loss=: a network whose backward takes the targets of a loss it never computes -------
class _NoLoss:
    """``forward(X)`` softmax probabilities; ``backward(y_onehot)`` stores the mean
    cross-entropy's gradients in lists beside ``self.weights`` and ``self.biases``."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(17)
        self.weights = [rng.standard_normal((4, 5)) * 0.6, rng.standard_normal((5, 3)) * 0.6]
        self.biases = [rng.standard_normal((1, 5)) * 0.1, rng.standard_normal((1, 3)) * 0.1]
        self.bug = bug

    def forward(self, X):
        self.h = [X, np.tanh(X @ self.weights[0] + self.biases[0])]
        z = self.h[1] @ self.weights[1] + self.biases[1]
        e = np.exp(z - z.max(1, keepdims=True))
        self.p = e / e.sum(1, keepdims=True)
        return self.p

    def backward(self, y_onehot):
        m = len(y_onehot)
        d1 = (self.p - y_onehot) / m
        d0 = d1 @ self.weights[1].T * (1 if self.bug else 1 - self.h[1] ** 2)
        self.dW = [self.h[0].T @ d0, self.h[1].T @ d1]
        self.db = [d0.sum(0, keepdims=True), d1.sum(0, keepdims=True)]


def _mean_ce(p, y):
    return float(-np.mean(np.sum(y * np.log(p), axis=1)))


def _no_loss_inputs():
    rng = np.random.default_rng(18)
    return rng.standard_normal((6, 4)), np.eye(3)[rng.integers(0, 3, 6)]


@pytest.mark.parametrize("bug", [False, True])
def test_loss_keyword_checks_a_network_whose_backward_takes_the_targets(bug):
    x, y = _no_loss_inputs()
    plain = gradcheck.check_layer(_NoLoss(bug), x, y)
    assert plain.status == "error" and "loss=lambda output, y" in plain.message, plain.report()
    res = gradcheck.check_layer(_NoLoss(bug), x, y, loss=_mean_ce)
    if bug:
        assert res.status == "mismatch" and sorted(
            t.name for t in res.inputs if not t.passed) == ["biases[0]", "weights[0]"]
    else:
        assert res.passed and len(res.inputs) == 6, res.report()
    assert any("the loss given (loss=)" in n for n in res.notes), res.notes


def test_loss_keyword_refuses_what_it_cannot_use():
    x, y = _no_loss_inputs()
    with pytest.raises(TypeError, match="loss= must be callable"):
        gradcheck.check_layer(_NoLoss(), x, y, loss="ce")
    with pytest.raises(TypeError, match="takes them all"):
        gradcheck.check_layer(_Dropout(), x, loss=_mean_ce)
    with pytest.raises(TypeError, match="gave no number"):
        gradcheck.check_layer(_NoLoss(), x, y, loss=lambda p, t: p - t)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("bug", [False, True])
def test_zero_biases_under_a_softmax_are_parameters_whatever_the_seed(bug, seed):
    """A shift of every logit alike leaves a softmax's loss as it is: a zero bias is
    seen to reach the output only through perturbations of unequal steps."""
    x, y = _no_loss_inputs()
    net = _NoLoss(bug)
    net.biases = [np.zeros((1, 5)), np.zeros((1, 3))]
    res = gradcheck.check_layer(net, x, y, loss=_mean_ce, seed=seed)
    assert len(res.inputs) == 6, res.report()
    if bug:
        assert res.status == "mismatch" and sorted(
            t.name for t in res.inputs if not t.passed) == ["biases[0]", "weights[0]"]
    else:
        assert res.passed, res.report()


# -- check_vjp: a hinge loss and its gradient as two functions, targets of -1 and +1 -------
def _hinge(expected, predicted):
    return float(np.mean(np.maximum(0.0, 1.0 - expected * predicted)))


def _hinge_grad(bug):
    def grad(expected, predicted):
        g = np.where(expected * predicted < 1, -expected, 0.0) / expected.size
        return -g if bug else g
    return grad


@pytest.mark.parametrize("bug", [False, True])
def test_targets_of_minus_one_and_one_are_labels_beside_the_predictions(bug):
    """Corpus 241: the gradient is the predictions', the -1/+1 targets are labels."""
    rng = np.random.default_rng(21)
    y, p = rng.choice([-1.0, 1.0], 8), rng.uniform(-2, 2, 8)
    p[np.abs(1 - y * p) < 0.05] += 0.2  # (no element at the hinge's kink)
    res = gradcheck.check_vjp(_hinge, _hinge_grad(bug), [y, p])
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert [t.name for t in res.inputs if t.checked] == ["predicted"], res.report()


# -- review 100 -----------------------------------------------------------------------------
class _Logistic:
    """A logistic regression: ``forward(X)``, ``bce_loss(y_hat, y)`` (clipped),
    ``backward(X, y)`` storing ``dW``, ``db``; ``pair``: the forward returns ``(y_hat,
    z)``, the clipped loss taking either."""

    def __init__(self, bug: bool = False, pair: bool = False) -> None:
        self.W = np.random.default_rng(22).standard_normal((4, 1)) * 0.5
        self.b, self.bug, self.pair = np.zeros(1), bug, pair

    def forward(self, X):
        z = X @ self.W + self.b
        p = 1 / (1 + np.exp(-z))
        return (p, z) if self.pair else p

    def bce_loss(self, y_hat, y):
        p = np.clip(y_hat, 1e-12, 1 - 1e-12)
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))

    def backward(self, X, y):
        p = self.forward(X)[0] if self.pair else self.forward(X)
        d = (p - y) / (1 if self.bug else len(X))
        self.dW, self.db = X.T @ d, d.sum(0)


@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("bug", [False, True])
def test_a_loss_of_the_prediction_is_not_taken_as_the_forward(bug, pair):
    """Review 100: bce_loss(y_hat, y) also runs given (X, y), X broadcasting against y,
    but is no forward; of (y_hat, z), the clip leaves the loss still in some elements
    of z."""
    rng = np.random.default_rng(23)
    x, y = rng.standard_normal((6, 4)) * 2, rng.integers(0, 2, (6, 1)).astype(float)
    res = gradcheck.check_layer(_Logistic(bug, pair), x, y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert not any("checked as the forward" in n for n in res.notes), res.notes


class _SlotKept(_TupleNet):
    """Gradient slots made in __init__ beside the dict its backward returns."""

    def __init__(self, bug: bool = False) -> None:
        super().__init__(bug)
        self.W1_grad, self.b1_grad = np.zeros_like(self.W1), np.zeros_like(self.b1)
        self.W2_grad, self.b2_grad = np.zeros_like(self.W2), np.zeros_like(self.b2)


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_returned_by_name_beside_slots_of_that_name(bug):
    rng = np.random.default_rng(15)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 2, (6, 1)).astype(float)
    res = gradcheck.check_layer(_SlotKept(bug), x, y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()


# -- one array held by several sub-layers, each with its own gradient array --------------
class _Embed:
    def __init__(self, W: np.ndarray, bug: bool = False) -> None:
        self.params, self.grads, self.bug = [W], [np.zeros_like(W)], bug

    def forward(self, idx):
        self.idx = idx
        return self.params[0][idx]

    def backward(self, dout):
        dW = self.grads[0]
        dW[...] = 0
        np.add.at(dW, self.idx, dout * (2.0 if self.bug else 1.0))


class _SharedEmbedding:
    """DLFromScratch2's negative sampling: one embedding ``W`` in three sub-layers'
    ``params``, each filling a gradient array of its own in place, the model's
    ``params``/``grads`` lists the concatenation (its trainer sums the duplicates)."""

    def __init__(self, bug: bool = False) -> None:
        W = np.random.default_rng(24).standard_normal((6, 3))
        self.layers = [_Embed(W, bug and k == 2) for k in range(3)]
        self.params = [p for layer in self.layers for p in layer.params]
        self.grads = [g for layer in self.layers for g in layer.grads]

    def forward(self, h, idx):
        self.h = h
        self.rows = [layer.forward(idx[k]) for k, layer in enumerate(self.layers)]
        return np.stack([np.sum(r * h, axis=1) for r in self.rows])

    def backward(self, dout):
        dh = np.zeros_like(self.h)
        for k, layer in enumerate(self.layers):
            dh += dout[k][:, None] * self.rows[k]
            layer.backward(dout[k][:, None] * self.h)
        return dh


@pytest.mark.parametrize("bug", [False, True])
def test_an_array_shared_by_sub_layers_has_the_sum_of_their_gradients(bug):
    """Corpus 239: distinct gradient arrays, each changed, none a copy of another, are
    each use's share (a copy of one is a stale gradient: test_readings_more's cells)."""
    rng = np.random.default_rng(25)
    h, idx = rng.standard_normal((4, 3)), rng.integers(0, 6, (3, 4))
    res = gradcheck.check_layer(_SharedEmbedding(bug), h, idx)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    if not bug:
        assert any("checked as their sum" in n for n in res.notes), res.notes


# -- check_model: params and one method returning (loss, grads), under any name ----------
class _FwdBwd:
    """``params`` and ``forward_backward(X, y)`` -> ``(loss, grads)`` with an L2 term
    (cs231n's ``loss`` under another name); ``train`` steps (corpus 240)."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(26)
        self.params = {"W1": rng.standard_normal((4, 5)) * 0.5, "b1": np.zeros(5),
                       "W2": rng.standard_normal((5, 3)) * 0.5, "b2": np.zeros(3)}
        self.reg, self.bug = 0.1, bug

    def forward_backward(self, X, y):
        p = self.params
        h = np.maximum(0, X @ p["W1"] + p["b1"])
        z = h @ p["W2"] + p["b2"]
        e = np.exp(z - z.max(1, keepdims=True))
        q = e / e.sum(1, keepdims=True)
        n = len(y)
        loss = -np.mean(np.log(q[np.arange(n), y])) + 0.5 * self.reg * (
            np.sum(p["W1"] ** 2) + np.sum(p["W2"] ** 2))
        dz = q.copy()
        dz[np.arange(n), y] -= 1
        dz /= n
        dh = dz @ p["W2"].T * (h > 0)
        grads = {"W1": X.T @ dh + (0 if self.bug else self.reg * p["W1"]), "b1": dh.sum(0),
                 "W2": h.T @ dz + self.reg * p["W2"], "b2": dz.sum(0)}
        return float(loss), grads

    def train(self, X, y):
        loss, grads = self.forward_backward(X, y)
        for k, g in grads.items():
            self.params[k] -= 0.1 * g
        return loss, grads


@pytest.mark.parametrize("bug", [False, True])
def test_a_model_method_returning_the_loss_and_the_gradients_by_any_name(bug):
    rng = np.random.default_rng(27)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 3, 6)
    res = gradcheck.check_model(_FwdBwd(bug), x, y, mode="full")
    if bug:
        assert res.status == "mismatch" and [t.name for t in res.inputs if not t.passed] == [
            "W1"], res.report()
    else:
        assert res.passed, res.report()
    assert any("forward_backward" in n for n in res.notes), res.notes


class _TargetsFirst(_TupleNet):
    """The loss named (y, y_pred), its guards finite for either order: called the other
    way round on the pre-activation it also moves in every element (corpus 226's sre)."""

    _bce = None  # type: ignore[assignment]

    def cross_entropy(self, y, y_pred):
        return float(-np.mean(y * np.log(y_pred + 1e-300) + (1 - y) * np.log(
            1 - y_pred + 1e-300)))


@pytest.mark.parametrize("bug", [False, True])
def test_the_loss_s_argument_names_place_the_targets(bug):
    rng = np.random.default_rng(15)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 2, (6, 1)).astype(float)
    res = gradcheck.check_layer(_TargetsFirst(bug), x, y)
    if bug:
        assert res.status == "mismatch" and sorted(
            t.name for t in res.inputs if not t.passed) == ["W1", "b1"], res.report()
    else:
        assert res.passed, res.report()
    assert any("cross_entropy(targets, output) (its output 3 of 4)" in n for n in res.notes)
