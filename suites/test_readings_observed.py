"""Readings by observation found on held-out code (corpora 137 on, and what corpora
119-136 left unread): each with a correct subject that passes and a broken twin that
fails with a gradient verdict."""

import types
from functools import partial

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- a layer stepping by self.lr that keeps a record of its step (delta_w = lr * grad_w) ----
class _RecordedStep:
    """``forward_pass(x)`` returns ``sigmoid(x @ W + b)``; ``backward_prop(g)`` stores
    ``delta_w = lr * grad_w`` and ``delta_b = lr * grad_b`` and steps ``W -= delta_w``,
    ``b -= delta_b``. ``momentum`` carries the last step into the next one."""

    def __init__(self, bug="", momentum=0.0):
        rng = np.random.default_rng(400)
        self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self.lr, self.mu, self.bug = 0.1, momentum, bug
        self.delta_w, self.delta_b = np.zeros((4, 3)), np.zeros(3)

    def forward_pass(self, x):
        self.input = x
        self.output = 1.0 / (1.0 + np.exp(-(x @ self.W + self.b)))
        return self.output

    def backward_prop(self, g):
        grad_a = g * self.output * (1.0 - self.output)
        grad_b = grad_a.mean(0) if self.bug == "b" else grad_a.sum(0)
        grad_x = grad_a @ self.W.T
        self.delta_w = self.mu * self.delta_w + self.lr * self.input.T @ grad_a
        self.delta_b = self.mu * self.delta_b + self.lr * grad_b
        self.W -= self.delta_w
        self.b -= self.delta_b
        return grad_x


@pytest.mark.parametrize("bug, failing", [("", None), ("b", ["b"])])
def test_a_step_recorded_beside_the_weights_is_read_as_a_step(bug, failing):
    x = np.random.default_rng(401).standard_normal((4, 4))
    res = gradcheck.check_layer(_RecordedStep(bug), x)
    _expect(res, failing)
    assert any("lr is the step size" in n for n in res.notes), res.notes
    assert any("state:" in n and "delta_w" in n for n in res.notes), res.notes


def test_a_recorded_step_with_momentum_is_still_no_step_reading():
    x = np.random.default_rng(402).standard_normal((4, 4))
    with pytest.raises(gradcheck.LayerConventionError, match="no gradient was found"):
        gradcheck.check_layer(_RecordedStep(momentum=0.9), x)


# -- a per-sample loss whose calculate() returns (mean, regularisation), nnfs-style ---------
class _PerSampleCCE:
    """``forward(y_pred, y_true)`` returns one loss per sample; ``calculate`` returns
    their mean beside a regularisation loss; ``backward(dvalues, y_true)`` stores
    ``dinputs``, the mean's gradient (the twin forgets the 1/N)."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, y_pred, y_true):
        return -np.log(np.sum(y_pred * y_true, axis=1))

    def calculate(self, y_pred, y_true):
        return np.mean(self.forward(y_pred, y_true)), 0.0

    def backward(self, dvalues, y_true):
        self.dinputs = -y_true / dvalues
        if self.bug != "n":
            self.dinputs = self.dinputs / len(dvalues)


@pytest.mark.parametrize("bug, failing", [("", None), ("n", ["x0"])])
def test_a_loss_whose_calculate_returns_the_mean_beside_a_penalty_is_a_mean(bug, failing):
    rng = np.random.default_rng(403)
    p = rng.uniform(0.2, 0.9, (4, 3))
    onehot = np.eye(3)[rng.integers(0, 3, 4)]
    res = gradcheck.check_layer(_PerSampleCCE(bug), p, onehot)
    _expect(res, failing)
    assert any("calculate returns their mean" in n for n in res.notes), res.notes


# -- a forward returning None that stores its output beside statistics and a cache ---------
class _StoringNorm:
    """``forward(inputs, training)`` stores ``mean``, ``var``, ``inputs_norm`` and
    ``output = inputs_norm * weights + biases``, returns nothing; ``backward(dvalues)``
    stores ``dweights``, ``dbiases``, ``dinputs``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(404)
        self.weights, self.biases = rng.uniform(0.5, 1.5, (1, 3)), rng.standard_normal((1, 3))
        self.bug = bug

    def forward(self, inputs, training):
        self.mean = inputs.mean(0, keepdims=True)
        self.var = inputs.var(0, keepdims=True)
        self.inputs_norm = (inputs - self.mean) / np.sqrt(self.var + 1e-5)
        self.output = self.inputs_norm * self.weights + self.biases

    def backward(self, dvalues):
        n = len(dvalues)
        self.dweights = np.sum(dvalues * self.inputs_norm, axis=0, keepdims=True)
        self.dbiases = np.sum(dvalues, axis=0, keepdims=True)
        g = dvalues * self.weights
        term = self.inputs_norm * np.sum(g * self.inputs_norm, 0) if self.bug != "x" else 0.0
        self.dinputs = (n * g - g.sum(0) - term) / (n * np.sqrt(self.var + 1e-5))


@pytest.mark.parametrize("bug, failing", [("", None), ("x", ["x0"])])
def test_the_stored_output_is_the_array_the_weights_reach(bug, failing):
    x = np.random.default_rng(405).standard_normal((5, 3))
    res = gradcheck.check_layer(_StoringNorm(bug), x, True)
    _expect(res, failing)
    assert any("stores in output" in n and "biases, weights reach it and none of the others" in n
               for n in res.notes), res.notes


def test_two_stored_arrays_the_weights_both_reach_still_need_output():
    class Dense:
        def __init__(self):
            self.W = np.random.default_rng(406).standard_normal((3, 2))

        def forward(self, x):
            self.x, self.z = x, x @ self.W
            self.a = np.tanh(self.z)

        def backward(self, da):
            self.dW = self.x.T @ (da * (1 - self.a ** 2))

    with pytest.raises(Exception, match="several arrays that depend on the inputs: z"):
        res = gradcheck.check_layer(Dense(), np.ones((4, 3)))
        raise AssertionError(res.report())


# -- a forward returning None that stores its output and its derivative (h, diff_h) --------
class _TanhCell:
    """``cell_forward(h_input, x_input)`` stores ``h_output`` and its derivative
    ``diff_h_output``; ``cell_backward(dh)`` returns ``(dh_input, dx_input)`` and stores
    ``dW``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(407)
        self.W, self.U = rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((3, 2)) * 0.5
        self.bug = bug

    def cell_forward(self, h_input, x_input):
        self.h_input, self.x_input = h_input, x_input
        self.h_output = np.tanh(self.W @ h_input + self.U @ x_input)
        self.diff_h_output = 1.0 - self.h_output ** 2

    def cell_backward(self, dh):
        g = dh * self.diff_h_output
        self.dW, self.dU = g @ self.h_input.T, g @ self.x_input.T
        return (self.W if self.bug == "T" else self.W.T) @ g, self.U.T @ g


@pytest.mark.parametrize("bug, failing", [("", None), ("T", ["x0"])])
def test_a_derivative_stored_beside_the_output_is_no_output(bug, failing):
    rng = np.random.default_rng(408)
    res = gradcheck.check_layer(_TanhCell(bug), rng.standard_normal((3, 1)),
                                rng.standard_normal((2, 1)))
    _expect(res, failing)
    assert any("stores in h_output" in n and "diff_h_output" in n for n in res.notes), res.notes


# -- backward(delta_in, flag): an argument whose -1 or 0 returns more or less ------------------
class _FlaggedDense:
    """``backward(delta_in, layer_idx)`` stores ``dW``, ``db`` and returns the input's
    gradient, but for ``layer_idx == 0`` (a first layer: None) and ``-1`` (``(dx, dW,
    db)``)."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(409)
        self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal((1, 3))
        self.bug = bug

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, delta_in, layer_idx):
        self.dW = self.x.T @ delta_in
        self.db = delta_in.sum(0, keepdims=True) * (2.0 if self.bug == "b" else 1.0)
        if layer_idx == 0:
            return None
        dx = delta_in @ self.W.T
        return (dx, self.dW, self.db) if layer_idx == -1 else dx


@pytest.mark.parametrize("bug, failing", [("", None), ("b", ["b"])])
def test_an_index_argument_whose_0_and_minus_1_change_the_return_is_given_1(bug, failing):
    x = np.random.default_rng(410).standard_normal((5, 4))
    res = gradcheck.check_layer(_FlaggedDense(bug), x)
    _expect(res, failing)
    assert any("layer_idx changes nothing it returns or holds" in n for n in res.notes), \
        res.notes


def test_a_first_layer_flag_that_drops_the_input_gradient_when_true_is_no_such_argument():
    class FirstFlag(_FlaggedDense):
        def backward(self, delta_in, is_first):
            self.dW = self.x.T @ delta_in
            self.db = delta_in.sum(0, keepdims=True)
            return None if is_first else delta_in @ self.W.T

    res = gradcheck.check_layer(FirstFlag(), np.ones((5, 4)))
    assert res.status == "error" and "is_first" in res.message, res.report()


# -- a backward named back ---------------------------------------------------------------------
class _BackTanh:
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, x):
        self.y = np.tanh(x)
        return self.y

    def back(self, delta):
        return delta * (1.0 - self.y if self.bug else 1.0 - self.y ** 2)


@pytest.mark.parametrize("bug, failing", [("", None), ("d", ["x0"])])
def test_a_method_named_back_beside_forward_is_the_backward(bug, failing):
    res = gradcheck.check_layer(_BackTanh(bug), np.random.default_rng(411).standard_normal(5))
    _expect(res, failing)


# -- a whole model as a function of a parameter dict: (grads, loss, accuracy) ------------------
def _mlp_loss(bug=""):
    """``fn(params, X, y)`` returns ``({'dW1': ..., 'db1': ..., 'dW2': ..., 'db2': ...},
    mean cross-entropy, accuracy in percent)`` of a tanh MLP."""

    def fn(params, X, y):
        h = np.tanh(X @ params["W1"] + params["b1"])
        z = h @ params["W2"] + params["b2"]
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        n = len(y)
        loss = -np.mean(np.log(p[np.arange(n), y]))
        dz = p.copy()
        dz[np.arange(n), y] -= 1.0
        dz /= n
        dh = dz @ params["W2"].T * (1.0 - h ** 2)
        grads = {"dW1": X.T @ dh, "db1": dh.sum(0) * (n if bug == "b1" else 1.0),
                 "dW2": h.T @ dz, "db2": dz.sum(0)}
        return grads, loss, 100.0 * np.mean(p.argmax(1) == y)
    return fn


def _mlp_point():
    rng = np.random.default_rng(412)
    params = {"W1": rng.standard_normal((4, 5)), "b1": rng.standard_normal(5),
              "W2": rng.standard_normal((5, 3)), "b2": rng.standard_normal(3)}
    return params, rng.standard_normal((6, 4)), rng.integers(0, 3, 6)


@pytest.mark.parametrize("bug, failing", [("", None), ("b1", ["x0['b1']"])])
def test_a_model_function_returning_grads_loss_and_accuracy_is_read_by_what_they_do(
        bug, failing):
    params, X, y = _mlp_point()
    res = gradcheck.check_loss(_mlp_loss(bug), params, X, y)
    _expect(res, failing)
    assert any("item 1 is the loss" in n and "dW1 for W1" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug, failing", [("", None), ("b1", ["x0['b1']"])])
def test_a_model_function_returning_loss_and_grads_by_the_params_names(bug, failing):
    def fn(params, X, y):
        grads, loss, _ = _mlp_loss(bug)(params, X, y)
        return loss, {k[1:]: v for k, v in grads.items()}

    params, X, y = _mlp_point()
    res = gradcheck.check_loss(fn, params, X, y)
    _expect(res, failing)


def test_a_gradient_dict_missing_a_parameter_is_no_reading():
    def fn(params, X, y):
        grads, loss, acc = _mlp_loss()(params, X, y)
        del grads["db2"]
        return grads, loss, acc

    params, X, y = _mlp_point()
    res = gradcheck.check_loss(fn, params, X, y)
    assert res.status == "bad-protocol", res.report()


# -- a layer taking and returning 1-tuples, stepping its weights by self.lr ---------------------
class _TupleFC:
    """``__call__(entry, memorize)`` takes a tuple of one array and a flag, returns
    ``(W @ x,)``; ``backprop((g,))`` steps ``W`` by ``self.lr`` and returns ``(dx,)``.
    The input's last row is tiny, so are the changes of W's last column: the reading of
    the step must not need them exact."""

    def __init__(self, bug=""):
        self.lr, self.bug = 0.05, bug
        self.W = np.random.default_rng(413).standard_normal((3, 4))

    def __call__(self, entry, memorize):
        if memorize:
            self.input = entry
        return (self.W @ entry[0],)

    def backprop(self, gradient):
        g = gradient[0]
        dx = self.W.T @ g
        dW = g @ self.input[0].T
        self.W -= self.lr * (dW / len(g.T) if self.bug == "W" else dW)
        return (dx,)


@pytest.mark.parametrize("bug, failing", [("", None), ("W", ["W"])])
def test_a_sequence_input_whose_gradient_comes_as_a_sequence_like_it(bug, failing):
    x = np.random.default_rng(414).standard_normal((4, 5))
    x[-1] *= 1e-9
    res = gradcheck.check_layer(_TupleFC(bug), (x,), True)
    _expect(res, failing)
    assert any("lr is the step size" in n for n in res.notes), res.notes


# -- backward(dZ, lr) whose step adds an L2 term the forward never adds -------------------------
class _DenseStep:
    """``forward(x)`` returns ``x @ W + b``; ``backward(dZ, lr)`` steps ``W`` and ``b``
    (with an L2 term ``lam * W`` in the twin, or Adam's first step) and returns dX."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(415)
        self.W, self.b, self.bug = rng.standard_normal((4, 3)), rng.standard_normal(3), bug

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dZ, lr):
        dW, db = self.x.T @ dZ, dZ.sum(0)
        dx = dZ @ self.W.T
        if self.bug == "l2":
            dW = dW + 0.01 * self.W
        if self.bug == "adam":  # first step from zero moments: lr * sign(g), about
            dW, db = dW / (np.abs(dW) + 1e-8), db / (np.abs(db) + 1e-8)
        self.W -= lr * dW
        self.b -= lr * db
        return dx


@pytest.mark.parametrize("bug, failing", [("", None), ("l2", ["W"])])
def test_a_step_with_an_l2_term_the_forward_never_adds_is_a_mismatch(bug, failing):
    x = np.random.default_rng(416).standard_normal((5, 4))
    res = gradcheck.check_layer(_DenseStep(bug), x)
    _expect(res, failing)
    assert any("lr scales the change" in n for n in res.notes), res.notes


class _NetStep:
    """A layer stepping ``W`` and ``b`` itself by the learning rate of the network it is
    in (``self.nn.learning_rate``), with an L2 term the forward never adds in a twin."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(418)
        self.W, self.b, self.bug = rng.standard_normal((3, 2)), np.zeros(2), bug
        self.nn = types.SimpleNamespace(learning_rate=0.05)

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        dW, dx = self.x.T @ dout * (0.5 if self.bug == "half" else 1.0), dout @ self.W.T
        if self.bug == "l2":
            dW = dW + 0.01 * self.W
        self.W = self.W - self.nn.learning_rate * dW
        self.b = self.b - self.nn.learning_rate * dout.sum(0)
        return dx


@pytest.mark.parametrize("bug, failing", [("", None), ("l2", ["W"]), ("half", ["W"])])
def test_a_layers_own_step_by_its_networks_learning_rate_is_read_with_its_decay(bug, failing):
    """Review 79: a step size one object away was taken for an optimizer object's, and
    the step with a decay gave no verdict; only a method of that object doing the step
    makes it the optimizer's (test_an_optimizers_decay_leaves_the_gradient_handed_to_it_read)."""
    res = gradcheck.check_layer(_NetStep(bug), np.random.default_rng(419).standard_normal((4, 3)))
    _expect(res, failing)
    assert any("nn.learning_rate" in n for n in res.notes), res.notes


def test_an_adam_like_step_is_still_no_gradient_step():
    x = np.random.default_rng(417).standard_normal((5, 4))
    res = gradcheck.check_layer(_DenseStep("adam"), x)
    assert not res.passed and res.status not in ("ok", "mismatch"), res.report()


# -- check_vjp(loss, loss_gradient, [y_true, y_pred]): a pair of functions of the same args ----
def _ce(y_true, y_pred):
    return -np.sum(y_true * np.log(y_pred)) / len(y_true)


def _ce_grad(y_true, y_pred):
    return -y_true / y_pred / len(y_true)


def _ce_grad_bug(y_true, y_pred):
    return -y_true / y_pred


def _mse(y_true, y_pred):
    return np.mean((y_true - y_pred) ** 2)


def _mse_grad(y_true, y_pred):
    return 2 * (y_pred - y_true) / y_true.size


@pytest.mark.parametrize("grad, failing", [(_ce_grad, None), (_ce_grad_bug, ["y_pred"])])
def test_a_loss_and_its_gradient_as_two_functions_of_labels_and_predictions(grad, failing):
    rng = np.random.default_rng(418)
    y_pred = rng.uniform(0.1, 0.9, (4, 3))
    y_true = np.eye(3)[[0, 2, 1, 2]]
    res = gradcheck.check_vjp(_ce, grad, [y_true, y_pred])
    _expect(res, failing)
    assert any("gradient of y_pred" in n for n in res.notes), res.notes


def test_a_loss_pair_of_two_float_arguments_needs_wrt_and_is_read_with_it():
    rng = np.random.default_rng(419)
    y_true, y_pred = rng.standard_normal((5, 1)), rng.standard_normal((5, 1))
    alone = gradcheck.check_vjp(_mse, _mse_grad, [y_true, y_pred])
    assert alone.status == "bad-protocol" and "wrt=" in alone.message, alone.report()
    res = gradcheck.check_vjp(_mse, _mse_grad, [y_true, y_pred], wrt=[1])
    assert res.passed, res.report()
    def no_two(y_true, y_pred):
        return (y_pred - y_true) / y_true.size

    bad = gradcheck.check_vjp(_mse, no_two, [y_true, y_pred], wrt=[1])
    _expect(bad, ["y_pred"])


# -- one function per op with a deriv flag; a backward stepping the weight it is given ----------
class _Ops:
    """``fully_connect(x, kernel, front_delta=None, deriv=False)``: the forward, or with
    ``deriv=True`` the input's gradient and the kernel's (the twin transposes nothing);
    ``stepping`` also steps ``kernel`` in place, as a training loop's update."""

    def __init__(self, bug="", stepping=False):
        self.bug, self.stepping = bug, stepping

    def fully_connect(self, input_data, kernel, front_delta=None, deriv=False):
        if not deriv:
            return input_data @ kernel
        back = front_delta @ (kernel if self.bug == "T" else kernel.T)
        dk = input_data.T @ front_delta
        if self.stepping:
            kernel -= 0.1 * dk
        return back, dk


@pytest.mark.parametrize("bug, failing", [("", None), ("T", ["input_data"])])
def test_a_deriv_flag_function_is_checked_as_its_own_backward(bug, failing):
    import functools

    rng = np.random.default_rng(420)
    ops = _Ops(bug)
    res = gradcheck.check_vjp(ops.fully_connect, functools.partial(ops.fully_connect,
                                                                   deriv=True),
                              [rng.standard_normal((4, 3)), rng.standard_normal((3, 3))])
    _expect(res, failing)


def test_a_backward_writing_into_its_cache_still_gets_a_gradient_verdict():
    import functools

    rng = np.random.default_rng(421)
    point = [rng.standard_normal((4, 3)), rng.standard_normal((3, 3))]
    right, wrong = _Ops(stepping=True), _Ops("T", stepping=True)
    res = gradcheck.check_vjp(right.fully_connect, functools.partial(
        right.fully_connect, deriv=True), point)
    assert res.status == "mutation" and "the gradients are right" in res.message, res.report()
    res = gradcheck.check_vjp(wrong.fully_connect, functools.partial(
        wrong.fully_connect, deriv=True), point)
    _expect(res, ["input_data"])


# -- what the review found: no reading where the stored output cannot be told --------------------
class _DenseDropout:
    """Stores ``out = tanh(x W + b)`` and the output ``dout = out * mask`` (a name that
    reads as a gradient's); the twin's backward forgets the mask."""

    def __init__(self, bug=False):
        rng = np.random.default_rng(422)
        self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
        self.mask, self.bug = (rng.random((6, 3)) < 0.8) / 0.8, bug

    def forward(self, x):
        self.x = x
        self.out = np.tanh(x @ self.W + self.b)
        self.dout = self.out * self.mask

    def backward(self, g):
        dz = (g if self.bug else g * self.mask) * (1.0 - self.out ** 2)
        self.dW, self.db, self.dx = self.x.T @ dz, dz.sum(0), dz @ self.W.T


@pytest.mark.parametrize("bug", [False, True])
def test_an_output_named_like_a_gradient_is_no_derivative_of_another(bug):
    x = np.random.default_rng(423).standard_normal((6, 4))
    res = gradcheck.check_layer(_DenseDropout(bug), x)
    assert not res.passed and res.status == "bad-protocol" and "output=" in res.message, \
        res.report()


def test_an_output_beside_a_head_computed_from_it_is_no_reading():
    class Supervised:
        def __init__(self):
            rng = np.random.default_rng(424)
            self.W, self.W_aux = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))

        def forward(self, x):
            self.x = x
            self.h = np.tanh(x @ self.W)
            self.aux = self.h @ self.W_aux

        def backward(self, dh):
            dz = dh * (1.0 - self.h ** 2)
            self.dW, self.dx = self.x.T @ dz, dz @ self.W.T

    res = gradcheck.check_layer(Supervised(), np.ones((5, 4)))
    assert res.status == "bad-protocol" and "h (5, 3)" in res.message, res.report()


def test_a_flag_that_fills_a_held_gradient_for_0_only_is_not_given_1():
    class Frozen:
        def __init__(self):
            rng = np.random.default_rng(425)
            self.W, self.b = rng.standard_normal((4, 3)), rng.standard_normal(3)
            self.dW, self.db = np.zeros((4, 3)), np.zeros(3)

        def forward(self, x):
            self.x = x
            return x @ self.W + self.b

        def backward(self, dout, freeze_bias):
            self.dW = self.x.T @ dout
            if not freeze_bias:
                self.db = dout.sum(0)
            return dout @ self.W.T

    res = gradcheck.check_layer(Frozen(), np.ones((5, 4)))
    assert not res.passed and res.status not in ("ok", "mismatch"), res.report()


@pytest.mark.parametrize("bug, failing", [("", None), ("b1", ["x0['b1']"])])
def test_a_model_function_returning_loss_grads_and_accuracy(bug, failing):
    def fn(params, X, y):
        grads, loss, acc = _mlp_loss(bug)(params, X, y)
        return loss, grads, acc

    params, X, y = _mlp_point()
    _expect(gradcheck.check_loss(fn, params, X, y), failing)


@pytest.mark.parametrize("bug, failing", [("", None), ("W", ["W"])])
def test_a_two_item_sequence_input_beside_a_flag_gets_its_gradient_as_a_sequence(bug, failing):
    class Pair(_TupleFC):
        def __call__(self, entry, memorize):
            if memorize:
                self.input = entry
            return (self.W @ entry[0] + entry[1],)

        def backprop(self, gradient):
            (dx,) = super().backprop(gradient)
            return dx, gradient[0]

    rng = np.random.default_rng(426)
    x = (rng.standard_normal((4, 5)), rng.standard_normal((3, 5)))
    _expect(gradcheck.check_layer(Pair(bug), x, True), failing)


# -- a recurrent layer building its initial state as zeros, or given it -------------------------
class _TinyRNN:
    """``forward(x, h0=None)``: ``h_t = tanh(x_t W + h_{t-1} U)``, ``h0`` zeros of shape
    ``(N, H)`` when not given; ``backward(dout)`` returns dx and stores ``dW``, ``dU`` and
    ``d_h0`` (twice too large in the twin)."""

    def __init__(self, bug=""):
        r = np.random.default_rng(427)
        self.W, self.U = r.standard_normal((2, 4)) * 0.5, r.standard_normal((4, 4)) * 0.5
        self.bug = bug

    def forward(self, x, h0=None):
        self.x = x
        self.h0 = np.zeros((len(x), 4)) if h0 is None else h0
        hs, h = [], self.h0
        for t in range(x.shape[1]):
            h = np.tanh(x[:, t] @ self.W + h @ self.U)
            hs.append(h)
        self.hs = np.stack(hs, axis=1)
        return self.hs

    def backward(self, dout):
        dx, dh = np.zeros_like(self.x), np.zeros_like(self.h0)
        self.dW, self.dU = np.zeros_like(self.W), np.zeros_like(self.U)
        for t in reversed(range(self.x.shape[1])):
            hprev = self.hs[:, t - 1] if t else self.h0
            da = (dout[:, t] + dh) * (1 - self.hs[:, t] ** 2)
            self.dW += self.x[:, t].T @ da
            self.dU += hprev.T @ da
            dx[:, t] = da @ self.W.T
            dh = da @ self.U.T
        self.d_h0 = 2 * dh if self.bug == "h0" else dh
        return dx


@pytest.mark.parametrize("bug, failing", [("", None), ("h0", ["x1"])])
def test_an_initial_state_given_as_input_is_checked_by_its_stored_gradient(bug, failing):
    rng = np.random.default_rng(428)
    x, h0 = rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 4)) * 0.5
    res = gradcheck.check_layer(_TinyRNN(bug), x, h0)
    _expect(res, failing)
    assert any("x1's is what it stored in d_h0" in n for n in res.notes), res.notes


def test_an_initial_state_built_as_zeros_for_the_batch_is_state():
    x = np.random.default_rng(429).standard_normal((2, 3, 2))
    res = gradcheck.check_layer(_TinyRNN("h0"), x)  # d_h0 is nothing the output depends on
    assert res.passed, res.report()
    assert any("h0: built by every forward for the batch" in n for n in res.notes), res.notes


def test_a_bias_rebuilt_as_zeros_by_every_forward_is_still_checked():
    class Rebuilt:
        def __init__(self):
            self.W = np.random.default_rng(430).standard_normal((3, 2))

        def forward(self, x):
            self.x, self.b = x, np.zeros(2)  # a bias that never learns: a bug
            return x @ self.W + self.b

        def backward(self, dout):
            self.dW, self.db = self.x.T @ dout, dout.sum(0)
            return dout @ self.W.T

    res = gradcheck.check_layer(Rebuilt(), np.random.default_rng(431).standard_normal((4, 3)))
    assert res.status == "mismatch" and "b" in [i.name for i in res.inputs
                                                if i.status == "mismatch"], res.report()


# -- forward(z, y) -> (y_hat, loss); backward(y, y_hat): the loss's backward, given y_hat -------
class _SoftmaxXent:
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, z, y):
        e = np.exp(z - z.max())
        y_hat = e / e.sum()
        return y_hat, -np.log(y_hat[y])

    def backward(self, y, y_hat):
        onehot = np.zeros_like(y_hat)
        onehot[y] = 1.0
        return onehot - y_hat if self.bug == "sign" else y_hat - onehot


class _TinyNet:
    """``forward(x, y) -> (y_hat, loss)`` of a linear layer and the loss above;
    ``backward(y, y_hat)`` stores ``dW`` and returns nothing."""

    def __init__(self, bug=""):
        self.W = np.random.default_rng(432).standard_normal((3, 4))
        self.loss, self.bug = _SoftmaxXent(), bug

    def forward(self, x, y):
        self.x = x
        return self.loss.forward(self.W @ x, y)

    def backward(self, y, y_hat):
        dz = self.loss.backward(y, y_hat)
        self.dW = np.outer(dz, self.x) * (0.5 if self.bug == "half" else 1.0)


@pytest.mark.parametrize("bug, failing", [("", None), ("sign", ["x0"])])
def test_a_loss_backward_given_the_prediction_its_forward_returned(bug, failing):
    z = np.random.default_rng(433).standard_normal(5)
    res = gradcheck.check_layer(_SoftmaxXent(bug), z, 2)
    _expect(res, failing)
    assert any("backward raised given the output gradient alone: called with the "
               "forward's inputs again (x1, the forward's first value)" in n
               for n in res.notes), res.notes


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["W"])])
def test_a_network_backward_given_the_prediction_storing_its_gradients(bug, failing):
    x = np.random.default_rng(434).standard_normal(4)
    _expect(gradcheck.check_layer(_TinyNet(bug), x, 1), failing)


# -- one array given as queries, keys and values: tied places ----------------------------------
class _SelfAttention:
    """``forward(xq, xk, xv)``; ``backward(d)`` stores ``dWq``, ``dWk``, ``dWv`` and returns
    ``dq + dk + dv`` when the three are one array (``summed``), else the three."""

    def __init__(self, bug="", summed=True):
        r = np.random.default_rng(435)
        self.Wq, self.Wk, self.Wv = (r.standard_normal((4, 4)) * 0.5 for _ in range(3))
        self.bug, self.summed = bug, summed

    def forward(self, xq, xk, xv):
        self.xq, self.xk, self.xv = xq, xk, xv
        self.q, self.k, self.v = xq @ self.Wq, xk @ self.Wk, xv @ self.Wv
        s = self.q @ self.k.T
        w = np.exp(s - s.max(-1, keepdims=True))
        self.a = w / w.sum(-1, keepdims=True)
        return self.a @ self.v

    def backward(self, d):
        dv = self.a.T @ d
        da = d @ self.v.T
        ds = self.a * (da - (da * self.a).sum(-1, keepdims=True))
        dq, dk = ds @ self.k, ds.T @ self.q
        self.dWq, self.dWk, self.dWv = self.xq.T @ dq, self.xk.T @ dk, self.xv.T @ dv
        gx = dq @ self.Wq.T, (-1 if self.bug == "k" else 1) * dk @ self.Wk.T, dv @ self.Wv.T
        return gx[0] + gx[1] + gx[2] if self.summed else gx


@pytest.mark.parametrize("bug, failing", [("", None), ("k", ["x0"])])
def test_one_array_given_as_queries_keys_and_values_is_checked_tied(bug, failing):
    x = np.random.default_rng(436).standard_normal((3, 4))
    res = gradcheck.check_layer(_SelfAttention(bug), x, x, x)  # dq + dk + dv returned
    _expect(res, failing)
    assert any("x1, x2: the same array as x0" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug, failing", [("", None), ("k", ["x1"])])
def test_one_array_given_thrice_with_a_gradient_each_is_checked_untied(bug, failing):
    x = np.random.default_rng(436).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_SelfAttention(bug, summed=False), x, x, x), failing)


def test_equal_arrays_of_zeros_are_not_tied():
    class Cell:
        def __init__(self):
            self.W = np.random.default_rng(437).standard_normal((3, 3))

        def forward(self, x, h, c):
            self.t = np.tanh(x @ self.W + h)
            return self.t + c

        def backward(self, d):
            g = d * (1 - self.t ** 2)
            return g @ self.W.T, g, d

    res = gradcheck.check_layer(Cell(), np.ones((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)),
                                params={})
    assert res.passed and not any("the same array" in n for n in res.notes), res.report()


# -- a model with params and loss_and_grads and no loss ---------------------------------------
class _LossAndGradsOnly:
    def __init__(self, bug=""):
        self.params = {"W": np.random.default_rng(440).standard_normal((4, 3))}
        self.bug = bug

    def loss_and_grads(self, x, t):
        y = np.tanh(x @ self.params["W"])
        loss = 0.5 * np.sum((y - t) ** 2)
        g = x.T @ ((y - t) * (1 - y ** 2 if self.bug == "" else 1.0))
        return loss, {"W": g}


@pytest.mark.parametrize("bug, failing", [("", None), ("act", ["W"])])
def test_a_model_without_loss_is_differenced_through_loss_and_grads(bug, failing):
    rng = np.random.default_rng(441)
    res = gradcheck.check_model(_LossAndGradsOnly(bug), rng.standard_normal((5, 4)),
                                rng.standard_normal((5, 3)))
    _expect(res, failing)
    assert any("has no loss" in n for n in res.notes), res.notes


# -- what the second review found --------------------------------------------------------------
class _TwoStream:
    """``tanh(a Wa + b Wb)``; the twin's backward swaps the two input gradients."""

    def __init__(self, bug=""):
        r = np.random.default_rng(442)
        self.Wa, self.Wb, self.bug = r.standard_normal((4, 3)), r.standard_normal((4, 3)), bug

    def forward(self, a, b):
        self.a, self.b = a, b
        self.h = np.tanh(a @ self.Wa + b @ self.Wb)
        return self.h

    def backward(self, dout):
        dz = dout * (1 - self.h ** 2)
        self.dWa, self.dWb = self.a.T @ dz, self.b.T @ dz
        da, db = dz @ self.Wa.T, dz @ self.Wb.T
        return (db, da) if self.bug else (da, db)


@pytest.mark.parametrize("bug, failing", [("", None), ("swap", ["x0", "x1"])])
def test_one_array_given_twice_with_a_gradient_each_is_checked_place_by_place(bug, failing):
    x = np.random.default_rng(443).standard_normal((5, 4))
    res = gradcheck.check_layer(_TwoStream(bug), x, x)
    _expect(res, failing)
    assert not any("the same array" in n for n in res.notes), res.notes


def test_an_equal_copy_held_constant_beside_its_twin_is_no_tie():
    class TDError:
        def forward(self, q, q_next):
            return q - (0.5 + 0.9 * q_next)

        def backward(self, dout):
            return dout, None

    q = np.random.default_rng(444).standard_normal((3, 1))
    res = gradcheck.check_layer(TDError(), q, q.copy(), params={})
    assert res.passed, res.report()


def test_the_gradient_a_loss_returns_and_keeps_is_no_other_inputs():
    class MSE:
        def forward(self, y_hat, y):
            self.y_hat, self.y = y_hat, y
            return np.mean((y_hat - y) ** 2)

        def backward(self):
            self.dy = 2 * (self.y_hat - self.y) / self.y.size
            return self.dy

    r = np.random.default_rng(445)
    res = gradcheck.check_layer(MSE(), r.standard_normal((4, 3)), r.standard_normal((4, 3)))
    assert res.passed, res.report()


def test_an_output_gradient_beside_the_inputs_is_no_prediction():
    class LinearWithLoss:  # backward(x, dscores): an output gradient, linear
        def __init__(self):
            self.W = np.random.default_rng(446).standard_normal((4, 3))

        def forward(self, x, y):
            s = x @ self.W
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            return s, -np.mean(np.log(p[np.arange(len(y)), y]))

        def backward(self, x, dscores):
            self.dW = x.T @ dscores
            return dscores @ self.W.T

    r = np.random.default_rng(447)
    res = gradcheck.check_layer(LinearWithLoss(), r.standard_normal((5, 4)),
                                np.array([0, 2, 1, 1, 0]))
    assert res.status not in ("ok", "mismatch"), res.report()


def test_a_loss_pair_with_a_whole_valued_prediction_needs_wrt():
    y_true = np.array([[0.3], [1.7], [-0.4], [2.2]])
    y_pred = np.array([[1.0], [2.0], [0.0], [3.0]])
    assert gradcheck.check_vjp(_mse, _mse_grad, [y_true, y_pred]).status == "bad-protocol"


def test_a_momentum_step_on_a_warm_velocity_is_no_gradient_step():
    class Momentum(_DenseStep):
        def __init__(self):
            super().__init__()
            r = np.random.default_rng(448)
            self.vW, self.vb = 0.1 * r.standard_normal((4, 3)), 0.1 * r.standard_normal(3)

        def backward(self, dZ, lr):
            dx = dZ @ self.W.T
            self.vW = 0.9 * self.vW + self.x.T @ dZ
            self.vb = 0.9 * self.vb + dZ.sum(0)
            self.W -= lr * self.vW
            self.b -= lr * self.vb
            return dx

    res = gradcheck.check_layer(Momentum(), np.random.default_rng(449).standard_normal((5, 4)))
    assert res.status not in ("ok", "mismatch"), res.report()


def test_weights_drawn_by_every_forward_of_one_sample_are_still_checked():
    class Drawn:
        def forward(self, x):
            self.x = x
            self.W = np.random.default_rng(450).standard_normal((len(x), 3))
            return x @ self.W

        def backward(self, dout):
            self.dW = 0.5 * np.outer(self.x, dout)
            return self.W @ dout

    res = gradcheck.check_layer(Drawn(), np.random.default_rng(451).standard_normal(4))
    assert not res.passed and "W" in [i.name for i in res.inputs if not i.passed], res.report()


def test_a_model_without_loss_whose_loss_is_a_one_element_array():
    class Model(_LossAndGradsOnly):
        def loss_and_grads(self, x, t):
            loss, grads = super().loss_and_grads(x, t)
            return np.array([loss]), grads

    rng = np.random.default_rng(452)
    res = gradcheck.check_model(Model(), rng.standard_normal((5, 4)), rng.standard_normal((5, 3)))
    assert res.passed, res.report()


# -- a second method taking the backward's arguments returns the parameters' gradients --------
class _Derived:
    """``feedforward(x)`` returns ``W @ x + b`` of a column; ``backpropagate(x, delta)``
    returns the input's gradient; ``derived_params(x, delta)`` returns ``(db, dW)``."""

    def __init__(self, bug=""):
        r = np.random.default_rng(453)
        self.W, self.b, self.bug = r.standard_normal((3, 4)), r.standard_normal((3, 1)), bug

    def feedforward(self, x):
        return self.W @ x + self.b

    def backpropagate(self, x, delta):
        return self.W.T @ delta

    def derived_params(self, x, delta):
        return np.copy(delta), (delta @ x.T) * (0.5 if self.bug else 1.0)


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["W"])])
def test_a_method_taking_the_backwards_arguments_completes_it_whatever_its_name(bug, failing):
    x = np.random.default_rng(454).standard_normal((4, 1))
    res = gradcheck.check_layer(_Derived(bug), x)
    _expect(res, failing)
    assert any("derived_params(x, delta) completes the backward" in n for n in res.notes), \
        res.notes


# -- a network returning its parameters' gradients alone, by their own names -------------------
class _ByName:
    def __init__(self, bug=""):
        r = np.random.default_rng(455)
        self.W, self.b, self.bug = r.standard_normal((1, 4)), r.standard_normal(1), bug

    def forward(self, x):
        self.x = x
        return (self.W @ x + self.b)[0]

    def backward(self, dout):
        return {"W": dout * self.x[None, :] * (2.0 if self.bug else 1.0), "b": np.array([dout])}


def test_a_dict_of_the_parameters_gradients_alone_is_no_reading():
    """A first layer's ``{'W': dW, 'b': db}`` and a middle layer's that forgot ``dx`` look
    alike: refused (the tuple ``(dW, db)`` is too)."""
    with pytest.raises(gradcheck.LayerConventionError, match="no gradient was found"):
        gradcheck.check_layer(_ByName(), np.random.default_rng(456).standard_normal(4))


# -- check_loss on parameters held as a dict of lists, one array per layer ---------------------
def _nested_loss(bug=""):
    def fn(params, X, Y):
        W, b = params["W"], params["b"]
        H = np.tanh(X @ W[0].T + b[0])
        F = H @ W[1].T + b[1]
        dF = 2 * (F - Y)
        dZ = (dF @ W[1]) * (1 - H ** 2)
        db0 = dZ.mean(0) if bug else dZ.sum(0)
        return np.sum((F - Y) ** 2), {"W": [dZ.T @ X, dF.T @ H], "b": [db0, dF.sum(0)]}
    return fn


@pytest.mark.parametrize("bug, failing", [("", None), ("b0", ["x0['b'][0]"])])
def test_a_loss_of_a_dict_of_lists_of_arrays_returning_grads_like_it(bug, failing):
    r = np.random.default_rng(457)
    params = {"W": [r.standard_normal((4, 3)), r.standard_normal((2, 4))],
              "b": [r.standard_normal(4), r.standard_normal(2)]}
    X, Y = r.standard_normal((5, 3)), r.standard_normal((5, 2))
    _expect(gradcheck.check_loss(_nested_loss(bug), params, X, Y), failing)


# -- check_vjp(loss, grads) of two functions, the gradient one per argument --------------------
def _kl(mu, log_var):
    return -0.5 * np.sum(1 + log_var - mu ** 2 - np.exp(log_var))


def _kl_grads(mu, log_var):
    return mu, -0.5 * (1 - np.exp(log_var))


def _kl_grads_bug(mu, log_var):
    return mu, 0.5 * (1 - np.exp(log_var))


@pytest.mark.parametrize("grads, failing", [(_kl_grads, None), (_kl_grads_bug, ["log_var"])])
def test_a_loss_pair_whose_gradient_returns_one_array_per_argument(grads, failing):
    r = np.random.default_rng(458)
    res = gradcheck.check_vjp(_kl, grads, [r.standard_normal((4, 2)), r.standard_normal((4, 2))])
    _expect(res, failing)
    assert any("one gradient per argument" in n for n in res.notes), res.notes


# -- a property returning a function is no method ----------------------------------------------
class _Predicting:
    """``predict(x)`` is the forward, ``backprop(dout)`` the backward; the property
    ``activation_function_`` returns a function."""

    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(459).standard_normal((3, 2)), bug

    @property
    def activation_function_(self):
        return lambda v, grad=False: 1 - np.tanh(v) ** 2 if grad else np.tanh(v)

    def predict(self, x, output_only=True):
        self.x = x
        self.y = self.activation_function_(x @ self.W)
        return self.y

    def backprop(self, dout):
        d = dout * (1 - self.y ** 2) if self.bug == "" else dout
        self.dW = self.x.T @ d
        return d @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("act", ["x0", "W"])])
def test_a_property_returning_a_function_is_no_method(bug, failing):
    x = np.random.default_rng(460).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_Predicting(bug), x), failing)


# -- an optimizer object adding weight decay in its own step: the gradient handed is read ------
class _Decaying:
    def __init__(self, lr=0.1, reg=0.01):
        self.lr, self.reg = lr, reg

    def optim(self, w, dw, add_reg=False):
        return w - self.lr * (dw + w * self.reg) if add_reg else w - self.lr * dw


class _HandingLinear:
    def __init__(self, bug=""):
        self.weight = np.random.default_rng(461).standard_normal((3, 2))
        self.b, self.optimizer, self.bug = np.zeros(2), _Decaying(), bug

    def forward(self, x):
        self.cache = x
        return x @ self.weight + self.b

    def backward(self, dout):
        x = self.cache
        db, dw, dx = dout.sum(0), x.T @ dout / (len(x) if self.bug else 1), dout @ self.weight.T
        self.b = self.optimizer.optim(self.b, db)
        self.weight = self.optimizer.optim(self.weight, dw, add_reg=True)
        return dx


@pytest.mark.parametrize("bug, failing", [("", None), ("N", ["weight"])])
def test_an_optimizers_decay_leaves_the_gradient_handed_to_it_read(bug, failing):
    x = np.random.default_rng(462).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_HandingLinear(bug), x), failing)


# -- what the third review found -----------------------------------------------------------
def test_a_method_returning_a_step_is_no_completing_gradient():
    class Stepper(_Derived):
        lr = 0.1

        def derived_params(self, x, delta):  # lr * (db, dW): a step
            return self.lr * np.copy(delta), self.lr * (delta @ x.T)

    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(Stepper(), np.random.default_rng(463).standard_normal((4, 1)))


_STEP = 0.1  # a module constant a step method scales by


class _DefaultStep(_Derived):
    def derived_params(self, x, delta, lr=0.1):  # lr * (db, dW): a step
        return lr * np.copy(delta), lr * (delta @ x.T)


class _ConstantStep(_Derived):
    def derived_params(self, x, delta):
        return _STEP * np.copy(delta), _STEP * (delta @ x.T)


class _FarStep(_Derived):
    def __init__(self):
        super().__init__()
        self.net = types.SimpleNamespace(opt=types.SimpleNamespace(lr=0.1))

    def derived_params(self, x, delta):
        return self.net.opt.lr * np.copy(delta), self.net.opt.lr * (delta @ x.T)


@pytest.mark.parametrize("cls, lr", [(_DefaultStep, "lr"), (_ConstantStep, "_STEP"),
                                     (_FarStep, "net.opt.lr")])
def test_a_step_scaled_by_a_float_from_outside_the_layer_is_no_completing_gradient(cls, lr):
    """Review 79: a step size as a default argument, a module constant or two objects
    away was missed, and the step read as gradients (a correct layer failed)."""
    with pytest.raises(gradcheck.LayerConventionError, match=rf"returns a step.*double with {lr}"):
        gradcheck.check_layer(cls(), np.random.default_rng(466).standard_normal((4, 1)))


class _DefaultReg(_Derived):
    def derived_params(self, x, delta, reg=0.0, eps=1e-12):  # floats that scale no step
        return np.copy(delta), (delta @ x.T + reg * self.W) * (0.5 if self.bug else 1.0) + eps


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["W"])])
def test_a_completing_method_with_float_defaults_scaling_nothing_is_read(bug, failing):
    _expect(gradcheck.check_layer(_DefaultReg(bug), np.random.default_rng(467).standard_normal(
        (4, 1))), failing)


def test_a_loss_keeping_its_gradient_unscaled_is_no_other_inputs():
    class MSE:
        def forward(self, y_hat, y):
            self.y_hat, self.y = y_hat, y
            return np.mean((y_hat - y) ** 2)

        def backward(self):
            self.dy = 2 * (self.y_hat - self.y)
            return self.dy / self.y.size

    r = np.random.default_rng(464)
    res = gradcheck.check_layer(MSE(), r.standard_normal((4, 3)), r.standard_normal((4, 3)))
    assert res.passed, res.report()


def test_a_list_of_parameters_of_several_shapes_in_check_loss():
    r = np.random.default_rng(465)
    X, W, b = r.standard_normal((5, 3)), r.standard_normal((3, 2)), r.standard_normal(2)

    def loss(p, X, bug=False):
        z = X @ p[0] + p[1]
        return np.sum(z ** 2), [2 * X.T @ z, (1.0 if bug else 2.0) * z.sum(0)]

    assert gradcheck.check_loss(loss, [W, b], X).passed
    _expect(gradcheck.check_loss(lambda p, X: loss(p, X, True), [W, b], X), ["x0[1]"])


def test_a_swap_in_a_dict_of_gradients_of_one_array_given_twice_is_caught():
    class Keyed(_TwoStream):
        def backward(self, dout):
            dz = dout * (1 - self.h ** 2)
            da, db = dz @ self.Wa.T, dz @ self.Wb.T
            da, db = (db, da) if self.bug else (da, db)
            return {"da": da, "db": db, "dWa": self.a.T @ dz, "dWb": self.b.T @ dz}

    x = np.random.default_rng(466).standard_normal((5, 4))
    assert gradcheck.check_layer(Keyed(), x, x).passed
    _expect(gradcheck.check_layer(Keyed("swap"), x, x), ["x0", "x1"])


def test_an_output_gradient_with_an_l2_term_beside_it_is_no_prediction():
    class WithL2:
        def __init__(self):
            self.W, self.reg = np.random.default_rng(467).standard_normal((4, 3)), 0.1

        def forward(self, x, y):
            s = x @ self.W
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            loss = -np.mean(np.log(p[np.arange(len(y)), y])) + 0.5 * self.reg * np.sum(
                self.W ** 2)
            return s, loss

        def backward(self, x, dscores):
            self.dW = x.T @ dscores + self.reg * self.W
            return dscores @ self.W.T

    r = np.random.default_rng(468)
    res = gradcheck.check_layer(WithL2(), r.standard_normal((5, 4)), np.array([0, 2, 1, 1, 0]))
    assert res.status not in ("ok", "mismatch"), res.report()


# -- what the fourth review found ----------------------------------------------------------
class _Mix:
    """``a * x + (1 - a) * h``; backward returns dx and stores ``dh`` (a multiple of it);
    the twin forgets the ``(1 - a)``."""

    def __init__(self, bug=""):
        self.a, self.bug = 0.3, bug

    def forward(self, x, h):
        return self.a * x + (1 - self.a) * h

    def backward(self, dout):
        self.dh = dout if self.bug else (1 - self.a) * dout
        return self.a * dout


@pytest.mark.parametrize("bug, failing", [("", None), ("mix", ["x1"])])
def test_a_stored_gradient_that_is_a_multiple_of_the_returned_one_is_still_checked(bug, failing):
    r = np.random.default_rng(469)
    _expect(gradcheck.check_layer(_Mix(bug), r.standard_normal((3, 2)),
                                  r.standard_normal((3, 2))), failing)


def test_a_swap_of_a_list_of_gradients_beside_a_dict_of_one_array_given_twice():
    class Listed(_TwoStream):
        def backward(self, dout):
            dz = dout * (1 - self.h ** 2)
            da, db = dz @ self.Wa.T, dz @ self.Wb.T
            da, db = (db, da) if self.bug else (da, db)
            return [da, db], {"Wa": self.a.T @ dz, "Wb": self.b.T @ dz}

    x = np.random.default_rng(470).standard_normal((5, 4))
    assert gradcheck.check_layer(Listed(), x, x).passed
    assert not gradcheck.check_layer(Listed("swap"), x, x).passed


def test_a_completing_method_with_a_gradient_only_term_switched_off_is_read():
    class Reg(_Derived):
        reg = 0.0

        def derived_params(self, x, delta):
            return np.copy(delta), delta @ x.T + self.reg * self.W

    res = gradcheck.check_layer(Reg(), np.random.default_rng(471).standard_normal((4, 1)))
    assert res.passed, res.report()


def test_a_numpy_scalar_gradient_in_a_list_is_scaled_by_the_output_gradient():
    r = np.random.default_rng(472)
    X, W, b, s = r.standard_normal((5, 3)), r.standard_normal((3, 2)), r.standard_normal(2), \
        np.array(0.7)

    def loss(p, X):
        z = X @ p[0] + p[1]
        return p[2] * np.sum(z ** 2), [2 * p[2] * X.T @ z, 2 * p[2] * z.sum(0), np.sum(z ** 2)]

    res = gradcheck.check_loss(loss, [W, b, s], X)
    assert res.passed, res.report()


# -- corpus 158: losses storing per-sample values, a base class's calculate() ---------------
class _StoredLoss:
    """nnfs-like base: ``calculate()`` returns the mean of what the forward stored."""

    def calculate(self):
        return np.mean(self.output)


class _StoredMSE(_StoredLoss):
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, y_pred, y_true):
        self.y_pred, self.y_true = y_pred, y_true
        self.output = (y_true - y_pred) ** 2

    def backward(self):
        n = 1 if self.bug == "sum" else self.y_true.size
        self.input_error = 2 * (self.y_pred - self.y_true) / n


@pytest.mark.parametrize("bug, failing", [("", None), ("sum", ["x0"])])
def test_a_method_reading_the_stored_losses_after_the_forward_says_their_mean(bug, failing):
    """``calculate()`` takes no argument and reads ``self.output``: after the forward it
    returns the losses' mean, so the backward is checked as the mean's gradient."""
    r = np.random.default_rng(470)
    res = gradcheck.check_layer(_StoredMSE(bug), r.standard_normal((4, 3)),
                                r.standard_normal((4, 3)), wrt=["x0"])
    _expect(res, failing)
    assert any("calculate(), after the forward, returns their mean" in n for n in res.notes)


class _StoredCE:
    """Per-sample cross-entropy of probabilities against one-hot float targets; the
    backward takes nothing and stores the prediction's gradient as ``input_error``."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, y_pred, y_true):
        self.y_pred, self.y_true = y_pred, y_true
        self.output = -np.log(np.sum(y_pred * y_true, axis=1))

    def backward(self):
        self.input_error = (self.y_pred - self.y_true) if self.bug else \
            -self.y_true / self.y_pred


@pytest.mark.parametrize("bug, failing", [("", None), ("p-t", ["x0"])])
def test_a_loss_storing_its_gradient_beside_one_hot_float_targets(bug, failing):
    r = np.random.default_rng(471)
    p = r.random((4, 5)) + 0.1
    p /= p.sum(1, keepdims=True)
    res = gradcheck.check_layer(_StoredCE(bug), p, np.eye(5)[[0, 3, 1, 4]])
    _expect(res, failing)
    assert any("x1: the loss's target(s)" in n for n in res.notes), res.notes


class _StepRaising:
    def __init__(self):
        r = np.random.default_rng(472)
        self.W, self.b = r.standard_normal((4, 3)), r.standard_normal((1, 3))

    def forward(self, x):
        self.x = x
        self.output = x @ self.W + self.b

    def backward(self, err, learning_rate):
        self.input_error = err @ self.W.T
        self.W -= learning_rate * (self.x.T @ err)
        self.b -= learning_rate * err  # (1, 3) -= (3, 3): raises for a batch of 3


def test_a_step_that_raises_is_reported_with_the_users_error():
    res = gradcheck.check_layer(_StepRaising(), np.random.default_rng(473).standard_normal(
        (3, 4)))
    assert res.status == "error"
    assert "given 1.0 for it, it raised ValueError: non-broadcastable" in res.message, \
        res.message


# -- corpus 162: float scalar gains beside their stored gradients; a received gradient kept --
class _ScalarGain:
    """``y = a * x + c`` with float scalars ``a`` and ``c`` held in a dict; the backward
    stores their gradients beside them (per feature, never summed, in the ``cols`` twin)."""

    def __init__(self, bug=""):
        self.cache, self.bug = {"a": 1.7, "c": 0.2}, bug

    def forward(self, x):
        self.x = x
        return self.cache["a"] * x + self.cache["c"]

    def backward(self, dout):
        da = (dout * self.x).sum(0)
        self.cache["da"] = da if self.bug == "cols" else float(da.sum()) * (
            0.5 if self.bug == "half" else 1.0)
        self.cache["dc"] = float(dout.sum())
        return self.cache["a"] * dout


@pytest.mark.parametrize("bug, status", [("", "ok"), ("half", "mismatch"),
                                         ("cols", "shape-mismatch")])
def test_a_float_scalar_is_checked_by_the_gradient_stored_under_its_name(bug, status):
    """Review of corpus 162: a scalar gamma beside a (D,) dgamma was held constant and a
    wrong layer passed."""
    res = gradcheck.check_layer(_ScalarGain(bug), np.random.default_rng(474).standard_normal(
        (6, 4)))
    assert res.status == status, res.report()
    assert [i.name for i in res.inputs if not i.passed] == (["cache['a']"] if bug else []), \
        res.report()


class _Received:
    """A dense layer keeping the gradient it receives as ``d_input`` and returning its
    input's."""

    def __init__(self, n_in, n_out, seed, bug=""):
        r = np.random.default_rng(seed)
        self.W, self.b, self.bug = r.standard_normal((n_in, n_out)), r.standard_normal(n_out), bug

    def forward(self, input):
        self.input = input
        return input @ self.W + self.b

    def backward(self, d_input):
        self.d_input = d_input
        self.dW = self.input.T @ d_input * (0.5 if self.bug else 1.0)
        self.db = d_input.sum(0)
        return d_input @ self.W.T


class _Chain:
    def __init__(self, *layers):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, d):
        for layer in reversed(self.layers):
            d = layer.backward(d)


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["layers[0].W"])])
def test_a_gradient_a_sub_layer_received_and_kept_is_no_input_gradient(bug, failing):
    """Corpus 162: ``layers[0].d_input`` is what the first layer was given, not the
    container's input gradient; read so, a correct container failed in x0."""
    res = gradcheck.check_layer(_Chain(_Received(3, 3, 475, bug), _Received(3, 3, 476)),
                                np.random.default_rng(477).standard_normal((4, 3)))
    _expect(res, failing)
    assert [i.status for i in res.inputs if i.name == "x0"] == ["constant"], res.report()


# -- corpus 157: a function normalising its argument in place --------------------------------
def _cube_normalised(x):
    x /= x.sum()  # in place
    return np.sum(x ** 3)


def _cube_normalised_grad(x, bug=False):
    s = x.sum()
    u = x / s
    gu = 3 * u ** 2
    return (gu - (0.0 if bug else (gu * u).sum())) / s


@pytest.mark.parametrize("bug, status", [(False, "mutation"), (True, "mismatch")])
def test_check_grad_of_a_function_writing_into_its_point(bug, status):
    """The point written in place was taken as the backward's: a right gradient failed."""
    x = np.random.default_rng(478).uniform(0.5, 1.5, 5)
    res = gradcheck.check_grad(_cube_normalised, partial(_cube_normalised_grad, bug=bug), x)
    assert res.status == status, res.report()
    assert [i.status for i in res.inputs] == ["mismatch" if bug else "ok"], res.report()


def _cce_in_place(labels, predictions):
    predictions /= np.sum(predictions, axis=0, keepdims=True)
    return -np.sum(labels * np.log(predictions))


def _cce_in_place_grad(labels, predictions):
    return -labels / predictions + labels.sum(0, keepdims=True) / predictions.sum(
        0, keepdims=True)


def _cce_in_place_twin(labels, predictions):  # the softmax-and-CE gradient, for no softmax
    return predictions - labels


@pytest.mark.parametrize("bug, status", [(False, "mutation"), (True, "mismatch")])
def test_a_loss_normalising_a_normal_point_in_place_is_seen_writing(bug, status):
    """Normalising in place a point already normal writes nothing there, only at the
    finite differences' moved points: every element read as a kink (inconclusive)."""
    y = np.eye(4, 3)
    p = np.random.default_rng(479).uniform(0.1, 1.0, (4, 3))
    p /= p.sum(0, keepdims=True)
    res = gradcheck.check_vjp(_cce_in_place, _cce_in_place_twin if bug else _cce_in_place_grad,
                              [y, p])
    assert res.status == status, res.report()


# -- corpus 160: gradient slots that start as empty lists -----------------------------------
class _ListSlots:
    def __init__(self, bug=False):
        self.W, self.bug = np.random.default_rng(480).standard_normal((3, 2)), bug
        self.grads = {"W": []}  # a placeholder, rebound by the backward

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, d):
        self.grads["W"] = self.x.T @ d * (0.5 if self.bug else 1.0)
        return d @ self.W.T


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["W"])])
def test_a_gradient_slot_starting_as_an_empty_list(bug, failing):
    """The slot's [] was subtracted from the gradient: gradcheck's own error, blamed on
    the backward."""
    _expect(gradcheck.check_layer(_ListSlots(bug), np.random.default_rng(481).standard_normal(
        (4, 3))), failing)


# -- corpus 157: an input gradient returned as a list of numbers ------------------------------
class _ListDx:
    def __init__(self, bug=""):
        r = np.random.default_rng(482)
        self.weights, self.biases, self.bug = r.standard_normal((4, 3)), r.standard_normal(3), bug

    def forward_pass(self, inp):
        self._inputs = inp
        self._out = np.tanh(inp @ self.weights + self.biases)
        return self._out

    def backward_pass(self, delta):
        err = delta * (1 - self._out ** 2)
        self._gradient_b, self._gradient_w = err, np.outer(self._inputs, err)
        w = self.weights * (0.5 if self.bug else 1.0)
        new_delta = [float(np.dot(err, w[i])) for i in range(len(self._inputs))]
        return new_delta, self._gradient_w, self._gradient_b


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["x0"])])
def test_an_input_gradient_returned_as_a_list_of_numbers(bug, failing):
    _expect(gradcheck.check_layer(_ListDx(bug), np.random.default_rng(483).standard_normal(4)),
            failing)


# -- corpus 157: arrays named with a prefix their gradients drop (bn_gamma, d_gamma) ----------
class _PrefixedNorm:
    def __init__(self, bug=""):
        r = np.random.default_rng(484)
        self.bn_gamma, self.bn_beta = 1 + 0.3 * r.standard_normal((1, 3)), r.standard_normal((1, 3))
        self.bug = bug

    def forward(self, x):
        self.var = x.var(0, keepdims=True)
        self.xh = (x - x.mean(0, keepdims=True)) / np.sqrt(self.var + 1e-5)
        return self.bn_gamma * self.xh + self.bn_beta

    def backward(self, d):
        self.d_gamma = (d * self.xh).sum(0, keepdims=True) * (0.5 if self.bug else 1.0)
        self.d_beta = d.sum(0, keepdims=True)
        dxh = d * self.bn_gamma
        return (dxh - dxh.mean(0) - self.xh * (dxh * self.xh).mean(0)) / np.sqrt(self.var + 1e-5)


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["bn_gamma"])])
def test_a_prefixed_array_is_paired_with_the_gradient_named_for_its_last_part(bug, failing):
    res = gradcheck.check_layer(_PrefixedNorm(bug), np.random.default_rng(485).standard_normal(
        (5, 3)))
    _expect(res, failing)
    assert [i.name for i in res.inputs] == ["x0", "bn_gamma", "bn_beta"], res.report()


# -- corpus 161: (probs, loss) = forward(ids, labels); backward(labels) ------------------------
class _Tagger:
    def __init__(self, bug=""):
        r = np.random.default_rng(486)
        self.E, self.b, self.bug = r.standard_normal((6, 4)), r.standard_normal(4), bug

    def forward(self, ids, labels=None):
        self.ids = ids
        z = self.E[ids] + self.b
        e = np.exp(z - z.max(-1, keepdims=True))
        self.probs = e / e.sum(-1, keepdims=True)
        loss = None if labels is None else -np.mean(np.log(
            self.probs[np.arange(len(ids)), labels]))
        return self.probs, loss

    def backward(self, labels):
        d = self.probs.copy()
        d[np.arange(len(labels)), labels] -= 1
        d /= len(labels) * (2 if self.bug else 1)
        self.dE = np.zeros_like(self.E)
        np.add.at(self.dE, self.ids, d)
        self.db = d.sum(axis=0)


@pytest.mark.parametrize("bug, failing", [("", None), ("twice", ["E", "b"])])
def test_a_model_returning_probabilities_and_loss_whose_backward_takes_the_labels(bug, failing):
    res = gradcheck.check_layer(_Tagger(bug), np.array([0, 3, 3, 5]), np.array([1, 0, 2, 3]))
    _expect(res, failing)
    assert any("the one float scalar, part 1, is the loss" in n for n in res.notes), res.notes


# -- corpus 162: a model's __call__ handing its arguments to forward_propagation -------------
class _CallingModel:
    def __init__(self, bug=""):
        self.layer = _Received(3, 3, 487, bug)

    def __call__(self, inputs, is_optimizing=True):
        return self.forward_propagation(inputs, is_optimizing)

    def forward_propagation(self, inputs, is_optimizing=True):
        return self.layer.forward(inputs)

    def backward_propagation(self, doutputs):
        return self.layer.backward(doutputs)


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["layer.W"])])
def test_a_call_wrapping_a_named_forward_is_no_rival_forward(bug, failing):
    res = gradcheck.check_layer(_CallingModel(bug), np.random.default_rng(488).standard_normal(
        (4, 3)))
    _expect(res, failing)
    assert any("forward_propagation (forward) and backward_propagation" in n for n in res.notes)


# -- review 80 -----------------------------------------------------------------------------
class _IdentityFirst:
    def forward(self, inputs):
        return inputs

    def backward(self, dvalues):
        self.dinputs = dvalues  # the very array it was given: its own input gradient


class _DenseStored:
    def __init__(self, n_in, n_out, seed, bug=False):
        r = np.random.default_rng(seed)
        self.weights, self.biases = r.standard_normal((n_in, n_out)), r.standard_normal(n_out)
        self.bug = bug

    def forward(self, inputs):
        self.inputs = inputs
        return inputs @ self.weights + self.biases

    def backward(self, dvalues):
        self.dweights, self.dbiases = self.inputs.T @ dvalues, dvalues.sum(0)
        self.dinputs = dvalues @ (self.weights if self.bug else self.weights.T)


class _StoredChain:
    def __init__(self, bug=False):
        self.layers = [_IdentityFirst(), _DenseStored(3, 3, 489, bug), _DenseStored(3, 2, 490)]

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, d):
        for layer in reversed(self.layers):
            layer.backward(d)
            d = layer.dinputs


def test_an_identity_keeping_the_array_it_was_given_keeps_its_input_gradient():
    """Review 80, 01: an identity first layer's ``self.dinputs = dvalues`` was dropped as
    a received gradient, x0 held constant, and a missing transpose passed."""
    res = gradcheck.check_layer(_StoredChain(True), np.random.default_rng(491).standard_normal(
        (4, 3)))
    assert not res.passed, res.report()


GAIN = float(np.sqrt(2.0))  # a module constant both the forward and the gradients apply


class _Gained(_Derived):
    def feedforward(self, x, scale=0.5):
        return GAIN * scale * (self.W @ x + self.b)

    def backpropagate(self, x, delta, scale=0.5):
        return GAIN * scale * (self.W.T @ delta)

    def derived_params(self, x, delta, scale=0.5):
        g = GAIN * scale * delta
        return np.copy(g), (g @ x.T) * (0.5 if self.bug else 1.0)


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["W"])])
def test_a_constant_the_forward_applies_too_is_no_step_size(bug, failing):
    """Review 80, 02: GAIN doubled in the completing method alone read it as a step."""
    _expect(gradcheck.check_layer(_Gained(bug), np.random.default_rng(492).standard_normal(
        (4, 1))), failing)


class _WholeNorm:
    """One mean and variance over the whole input, kept as float scalars beside the
    gradients of those intermediates (``dmean``, ``dvar``)."""

    def __init__(self, in_dict, bug=False):
        self.gamma, self.eps, self.in_dict, self.bug = np.linspace(0.5, 1.5, 3), 1e-5, in_dict, bug
        self.cache = {"mean": 0.0, "var": 1.0}
        self.mean, self.var = 0.0, 1.0

    def _put(self, **kw):
        for k, v in kw.items():
            if self.in_dict:
                self.cache[k] = v
            else:
                setattr(self, k, v)

    def _get(self, k):
        return self.cache[k] if self.in_dict else getattr(self, k)

    def forward(self, x):
        self.x = x
        self._put(mean=float(x.mean()), var=float(x.var()))
        self.xhat = (x - self._get("mean")) / np.sqrt(self._get("var") + self.eps)
        return self.gamma * self.xhat

    def backward(self, dout):
        n, m, inv = self.x.size, self._get("mean"), 1.0 / np.sqrt(self._get("var") + self.eps)
        self.dgamma = (dout * self.xhat).sum(0)
        dxhat = dout * self.gamma
        dvar = float(np.sum(dxhat * (self.x - m)) * -0.5 * inv ** 3)
        dmean = float(np.sum(-dxhat * inv) + dvar * np.mean(-2 * (self.x - m)))
        self._put(dvar=dvar, dmean=dmean)
        return dxhat * inv + dvar * 2 * (self.x - m) / n + dmean / n * (0.0 if self.bug else 1.0)


@pytest.mark.parametrize("in_dict", [True, False])
@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["x0"])])
def test_a_scalar_the_forward_computes_is_no_parameter_beside_its_gradient(in_dict, bug, failing):
    """Review 80, 03: cache['mean'] beside cache['dmean'] was checked as a parameter and
    a correct layer failed (as self.mean beside self.dmean already did)."""
    res = gradcheck.check_layer(_WholeNorm(in_dict, bug), np.random.default_rng(493).normal(
        size=(4, 3)))
    _expect(res, failing)


# -- corpus 163: a backward rebinding an entry of the cache the forward returned ------------
def _scaled_fwd(x, w):
    return x * w, dict(x=x, w=w, mu=x.mean(axis=0))


def _typo_bwd(dout, cache):  # teasherm's `x_mu = cache["X"] = cache["mu"]` for `- cache["mu"]`
    cache["x"] = cache["mu"]
    return dout * cache["w"], (dout * cache["x"]).sum(axis=0)


def _freeing_bwd(dout, cache):  # right gradients, then the cache entry released
    x = cache["x"]
    cache["x"] = None
    return dout * cache["w"], (dout * x).sum(axis=0)


@pytest.mark.parametrize("bwd, wrong", [(_typo_bwd, ["w"]), (_freeing_bwd, [])])
def test_a_backward_writing_into_the_forwards_cache_still_gets_its_gradients_compared(
        bwd, wrong):
    r = np.random.default_rng(494)
    res = gradcheck.check_vjp(_scaled_fwd, bwd, [r.standard_normal((4, 3)),
                                                 r.standard_normal(3)])
    assert res.status == "mutation" and "cache['x']" in res.message, res.report()
    assert [i.name for i in res.inputs if i.status == "mismatch"] == wrong, res.report()
    assert ("gradient mismatch in w" in res.message) == bool(wrong), res.message


def _output_cached_fwd(x):
    y = np.tanh(x)
    return y, y  # the output itself is the cache


def _output_writing_bwd(dy, y, bug=False):
    g = dy * (1 - y ** 2) * (2.0 if bug else 1.0)
    y *= 0  # overwrites the output the caller holds
    return (g,)


@pytest.mark.parametrize("bug, wrong", [(False, []), (True, ["x"])])
def test_a_backward_writing_into_the_output_it_cached_stays_a_mutation(bug, wrong):
    res = gradcheck.check_vjp(_output_cached_fwd, partial(_output_writing_bwd, bug=bug),
                              [np.random.default_rng(509).standard_normal(5)])
    assert res.status == "mutation", res.report()
    assert [i.name for i in res.inputs if i.status == "mismatch"] == wrong, res.report()


# -- corpus 167: a dict of gradients keyed by the bare names ----------------------------------
class _BareKeys:
    def __init__(self, bug=""):
        r = np.random.default_rng(495)
        self.weights, self.biases = r.standard_normal((4, 3)), r.standard_normal((1, 3))
        self.bug = bug

    def forward(self, inputs):
        self.inputs = inputs
        return inputs @ self.weights + self.biases

    def backward(self, gradients):
        return {"inputs": gradients @ (self.weights.T if self.bug != "T" else self.weights.T * 2),
                "weights": self.inputs.T @ gradients,
                "biases": gradients.mean(axis=0, keepdims=True) if self.bug == "mean" else
                gradients.sum(axis=0, keepdims=True)}


class _BareRelu:
    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, input):
        self.input = input
        return np.maximum(input, 0)

    def backward(self, gradients):
        return {"inputs": np.where(self.input <= 0, 0, gradients * (2 if self.bug else 1))}


@pytest.mark.parametrize("layer, failing", [(_BareKeys(), None), (_BareKeys("mean"), ["biases"]),
                                            (_BareKeys("T"), ["x0"]), (_BareRelu(), None),
                                            (_BareRelu(True), ["x0"])])
def test_a_dict_of_gradients_keyed_by_the_names_themselves(layer, failing):
    x = np.random.default_rng(496).standard_normal((5, 4 if isinstance(layer, _BareKeys) else 3))
    _expect(gradcheck.check_layer(layer, np.sign(x) * (0.2 + np.abs(x))), failing)


class _BCEBack:
    """forward(y_true, y_pred) of per-element losses; backward(y_true) takes the labels."""

    def __init__(self, sign=-1.0):
        self.sign = sign

    def forward(self, y_true, y_pred):
        self.y_pred = y_pred
        return -(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred))

    def backward(self, y_true):
        return self.sign * (y_true / self.y_pred - (1 - y_true) / (1 - self.y_pred))


@pytest.mark.parametrize("sign, failing", [(-1.0, None), (1.0, ["x1"])])
def test_a_loss_backward_taking_back_the_labels_given_first(sign, failing):
    r = np.random.default_rng(497)
    res = gradcheck.check_layer(_BCEBack(sign), r.integers(0, 2, (4, 3)).astype(float),
                                r.uniform(0.1, 0.9, (4, 3)))
    _expect(res, failing)


# -- corpus 164: attention given one array three times beside a mask --------------------------
class _MaskedAttention:
    def __init__(self, bug=False):
        r = np.random.default_rng(498)
        self.Wq, self.Wk, self.Wv = (r.standard_normal((4, 4)) for _ in range(3))
        self.bug = bug

    def forward(self, q, k, v, mask=None):
        self.q, self.k, self.v = q, k, v
        self.Q, self.K, self.V = q @ self.Wq, k @ self.Wk, v @ self.Wv
        s = self.Q @ self.K.swapaxes(-1, -2) / 2.0
        if mask is not None:
            s = np.where(mask == 0, -1e9, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.a = e / e.sum(-1, keepdims=True)
        return self.a @ self.V

    def backward(self, dy):
        dV = self.a.swapaxes(-1, -2) @ dy
        da = dy @ self.V.swapaxes(-1, -2)
        ds = self.a * (da - (da * self.a).sum(-1, keepdims=True)) / 2.0
        dQ, dK = ds @ self.K, ds.swapaxes(-1, -2) @ self.Q
        f = lambda t: t.reshape(-1, t.shape[-1])  # noqa: E731
        self.dWq, self.dWk, self.dWv = f(self.q).T @ f(dQ), f(self.k).T @ f(dK), f(self.v).T @ f(dV)
        return dQ @ self.Wq.T, dK @ (self.Wk if self.bug else self.Wk.T), dV @ self.Wv.T


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["x1"])])
def test_one_array_given_thrice_beside_a_mask_is_checked_place_by_place(bug, failing):
    x = np.random.default_rng(499).standard_normal((2, 3, 4))
    _expect(gradcheck.check_layer(_MaskedAttention(bug), x, x, x, np.tril(np.ones((3, 3), bool))),
            failing)


# -- corpus 164: one input, backward(grad_A, A) under other names -----------------------------
def _pool(X, pool_size=2):
    return X.reshape(X.shape[0] // 2, 2, X.shape[1] // 2, 2).max(axis=(1, 3))


def _pool_back(grad_A, A, pool_size=2):
    w = A.reshape(A.shape[0] // 2, 2, A.shape[1] // 2, 2)
    return ((w == w.max(axis=(1, 3), keepdims=True)) * grad_A[:, None, :, None]).reshape(A.shape)


def _pool_back_bug(grad_A, A, pool_size=2):  # the gradient sent to each window's minimum
    w = A.reshape(A.shape[0] // 2, 2, A.shape[1] // 2, 2)
    return ((w == w.min(axis=(1, 3), keepdims=True)) * grad_A[:, None, :, None]).reshape(A.shape)


@pytest.mark.parametrize("bwd, status", [(_pool_back, "ok"), (_pool_back_bug, "mismatch")])
def test_one_input_and_its_gradient_under_other_names_found_by_trial(bwd, status):
    """Only the input in its place runs (the pooled output cannot be unpooled)."""
    res = gradcheck.check_vjp(_pool, bwd, [np.random.default_rng(500).standard_normal((4, 6))])
    assert res.status == status, res.report()


# -- corpus 168: a loss pair whose gradient for a 0-d bias is a NumPy float ------------------
_XD = np.random.default_rng(501).random(5)


def _d_loss(w, b):
    return float(-np.log(1 / (1 + np.exp(-(_XD @ w + b)))))


def _d_grad(w, b):
    d = 1 / (1 + np.exp(-(_XD @ w + b)))
    return -_XD * (1 - d), -(1 - d)  # the second a np.float64


def _d_grad_bug(w, b):
    d = 1 / (1 + np.exp(-(_XD @ w + b)))
    return -_XD * (1 - d), (1 - d)


@pytest.mark.parametrize("grad, status", [(_d_grad, "ok"), (_d_grad_bug, "mismatch")])
def test_a_numpy_float_gradient_of_a_0d_argument_in_a_loss_pair(grad, status):
    res = gradcheck.check_vjp(_d_loss, grad, [np.random.default_rng(502).normal(size=5) * 0.3,
                                              np.array(0.2)])
    assert res.status == status, res.report()
    assert [i.name for i in res.inputs if not i.passed] == ([] if status == "ok" else ["b"])


# -- corpus 165: wrt= by the names the results use ---------------------------------------------
def test_wrt_takes_the_forwards_argument_names():
    def fwd(y_true, y_pred):
        return np.mean((y_pred - y_true) ** 2), (y_true, y_pred)

    def bwd(dy, cache, bug=False):
        t, p = cache
        return None, dy * 2 * (p - t) / (1 if bug else p.size)

    r = np.random.default_rng(503)
    args = [r.standard_normal(5), r.standard_normal(5)]
    for bug, status in ((False, "ok"), (True, "mismatch")):
        res = gradcheck.check_vjp(fwd, partial(bwd, bug=bug), args, wrt=["y_pred"])
        assert res.status == status and [i.status for i in res.inputs][0] == "constant"
    with pytest.raises(ValueError, match=r"or the names \['y_true', 'y_pred'\]"):
        gradcheck.check_vjp(fwd, bwd, args, wrt=["pred"])


# -- a __call__ that is the forward, calling an inner method of other arguments --------------
class _TupleCall:
    """``__call__(entry, memorize)`` returns ``(W @ entry[0],)`` through ``feed_forward``;
    ``backprop((g,))`` steps ``W`` by ``self.lr`` and returns ``(W.T @ g,)``."""

    def __init__(self, bug=False):
        self.W, self.lr, self.input, self.bug = np.random.default_rng(504).normal(
            size=(3, 4)), 0.05, None, bug

    def feed_forward(self, entry):
        return self.W @ entry

    def __call__(self, entry, memorize):
        if memorize:
            self.input = entry
        return (self.feed_forward(entry[0]),)

    def backprop(self, gradient):
        g = gradient[0]
        new = self.W.T @ g
        self.W -= self.lr * (g @ self.input[0].T) * (0.5 if self.bug else 1.0)
        return (new,)


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["W"])])
def test_a_call_calling_an_inner_forward_of_other_arguments_is_the_forward(bug, failing):
    """Regression (corpus 137): __call__(entry, memorize) names feed_forward(entry), which
    takes other arguments: __call__ stays the forward."""
    x = np.random.default_rng(505).standard_normal((4, 5))
    _expect(gradcheck.check_layer(_TupleCall(bug), (x,), True), failing)


# -- corpus 170: a bare array cache, then the forward's inputs by name -------------------------
def _drop_fwd(A, keep_prob, seed=None):
    D = np.random.default_rng(seed).random(A.shape) < keep_prob
    return A * D / keep_prob, D


def _drop_bwd(dA, D, keep_prob):
    return dA * D / keep_prob


def _drop_bwd_bug(dA, D, keep_prob):  # the 1/keep_prob forgotten
    return dA * D


def _mul_fwd(A, S):
    return A * S, A


def _mul_bwd(dy, A, S, bug=False):
    return dy * S, dy * (S if bug else A)


@pytest.mark.parametrize("fwd, bwd, args, failing", [
    (_drop_fwd, _drop_bwd, ("X", 0.8, 3), []), (_drop_fwd, _drop_bwd_bug, ("X", 0.8, 3), ["A"]),
    (_mul_fwd, _mul_bwd, ("X", "S"), []), (_mul_fwd, partial(_mul_bwd, bug=True), ("X", "S"),
                                           ["S"])])
def test_a_mask_or_an_input_as_the_cache_before_inputs_by_name(fwd, bwd, args, failing):
    r = np.random.default_rng(506)
    arrays = {"X": r.standard_normal((3, 5)), "S": r.standard_normal((3, 5))}
    res = gradcheck.check_vjp(fwd, bwd, [arrays.get(a, a) if isinstance(a, str) else a
                                         for a in args])
    assert res.status == ("mismatch" if failing else "ok"), res.report()
    assert [i.name for i in res.inputs if not i.passed] == failing, res.report()


# -- corpus 165: get_grads() keyed as get_params() --------------------------------------------
class _Gate:
    def __init__(self):
        self.w = np.random.default_rng(507).standard_normal((3, 2))


class _KeyedGrads:
    def __init__(self, bug=False):
        self.gate, self.bug = _Gate(), bug

    def forward(self, x):
        self.x = x
        return np.tanh(x @ self.gate.w)

    def backward(self, dout):
        dz = dout * (1 - np.tanh(self.x @ self.gate.w) ** 2)
        self.dw_g = self.x.T @ dz * (0.5 if self.bug else 1.0)
        return dz @ self.gate.w.T

    def get_params(self):
        return {"w_g": self.gate.w}

    def get_grads(self):
        return {"w_g": self.dw_g}


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["gate.w"])])
def test_gradients_returned_keyed_as_a_method_listing_the_arrays(bug, failing):
    _expect(gradcheck.check_layer(_KeyedGrads(bug), np.random.default_rng(508).standard_normal(
        (4, 3))), failing)


# -- review 81 and corpora 171-176 -------------------------------------------------------------
class _ForgetfulAttention(_MaskedAttention):
    def backward(self, dy):
        dq, _, dv = super().backward(dy)
        return dq, None, dv  # the keys' gradient forgotten


def test_a_place_left_without_a_gradient_beside_a_mask_is_no_stop_gradient():
    """Review 81, 01: (dq, None, dv) for (x, x, x, mask) held the keys constant and passed."""
    x = np.random.default_rng(510).standard_normal((2, 3, 4))
    res = gradcheck.check_layer(_ForgetfulAttention(), x, x, x, np.tril(np.ones((3, 3), bool)))
    assert not res.passed, res.report()


def _sq_loss(y_true, y_pred):
    return float(np.mean((y_pred - y_true) ** 2))


def _sq_grad(y_true, y_pred, bug=False):
    return 2 * (y_pred - y_true) / (1 if bug else y_pred.size)


@pytest.mark.parametrize("bug, status", [(False, "ok"), (True, "mismatch")])
def test_a_loss_pair_takes_wrt_by_the_argument_name(bug, status):
    """Review 81, 02 (corpora 173, 176): wrt=['y_pred'] lost the loss-pair reading."""
    r = np.random.default_rng(511)
    res = gradcheck.check_vjp(_sq_loss, partial(_sq_grad, bug=bug),
                              [r.standard_normal(6), r.standard_normal(6)], wrt=["y_pred"])
    assert res.status == status, res.report()


class _MomentsToo(_KeyedGrads):
    def get_moments(self):
        return {"w_g": self.m}

    def forward(self, x):
        self.m = getattr(self, "m", np.ones((3, 2)))
        return super().forward(x)


def test_gradients_keyed_as_two_listing_methods_are_not_paired():
    """Review 81, 03: get_moments() keyed as get_params() took the gradients."""
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_MomentsToo(), np.random.default_rng(512).standard_normal((4, 3)))


def _relu(inputs):
    return np.maximum(inputs, 0)


def _relu_prime(dA, Z, bug=False):
    return dA * (Z > 0) * (2.0 if bug else 1.0)


@pytest.mark.parametrize("bug, status", [(False, "ok"), (True, "mismatch")])
def test_one_input_under_another_name_whose_output_in_its_place_gives_the_same(bug, status):
    """Corpus 176: relu_prime(dA, Z) of relu(inputs): the output in Z's place gives the
    same gradient, so the reading is the same either way."""
    x = np.random.default_rng(513).standard_normal(6)
    res = gradcheck.check_vjp(_relu, partial(_relu_prime, bug=bug), [np.sign(x) * (
        0.2 + np.abs(x))])
    assert res.status == status, res.report()


def _tanh_rows(Z):
    return [[float(np.tanh(v)) for v in row] for row in Z]


def _tanh_rows_back(dA, Z, bug=False):
    return [[dA[i][j] * (1 - np.tanh(Z[i][j]) ** (1 if bug else 2)) for j in range(len(Z[0]))]
            for i in range(len(Z))]


@pytest.mark.parametrize("bug, status", [(False, "ok"), (True, "mismatch")])
def test_a_gradient_as_nested_lists_of_one_input(bug, status):
    """Corpus 176: a 3-row list of lists read as three gradients for one input."""
    res = gradcheck.check_vjp(_tanh_rows, partial(_tanh_rows_back, bug=bug),
                              [np.random.default_rng(514).standard_normal((3, 4))])
    assert res.status == status, res.report()


def _bce(y, p):
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def _bce_grad(y, p, bug=False):
    return (p - y) / (p * (1 - p)) * (-1 if bug else 1)


@pytest.mark.parametrize("bug, failing", [(False, []), (True, ["x1"])])
def test_check_elementwise_differentiates_the_prediction_after_labels(bug, failing):
    """Corpus 172: loss(y, y_pred) differentiated in the labels."""
    r = np.random.default_rng(515)
    res = gradcheck.check_elementwise(_bce, partial(_bce_grad, bug=bug),
                                      r.integers(0, 2, 6).astype(float), r.uniform(0.1, 0.9, 6))
    assert [i.name for i in res.inputs if not i.passed] == failing, res.report()
    assert res.passed == (not bug)
    assert [i.status for i in res.inputs][0] == "constant"


class _Accumulating:
    """Stores learning_rate * gradient in d_w; update() adds it to the weights."""

    def __init__(self, bug=False):
        self.weights = np.random.default_rng(516).uniform(-1, 1, (3, 5))
        self.d_w, self.learning_rate, self.bug = np.zeros((3, 5)), 0.01, bug

    def activate(self, a_in):
        self.a_in = np.concatenate([[1], a_in])
        self.z = self.weights @ self.a_in
        return np.tanh(self.z)

    def backpropagate(self, d_a):
        deltas = (1 - np.tanh(self.z) ** 2) * d_a
        self.d_w += self.learning_rate * np.outer(deltas, self.a_in) * (0.5 if self.bug else 1)
        return (self.weights.T @ deltas)[1:]

    def update(self):
        self.weights += self.d_w
        self.d_w = np.zeros(self.weights.shape)


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["weights"])])
def test_a_step_size_folded_into_a_stored_buffer_that_update_applies(bug, failing):
    """Corpus 172: d_w += learning_rate * grad, applied by update(): learning_rate is set to
    1.0 (a factor no method applies is a bug: test_observation's skew)."""
    res = gradcheck.check_layer(_Accumulating(bug), np.random.default_rng(517).normal(size=4))
    _expect(res, failing)
    assert any("learning_rate scales every gradient" in n for n in res.notes), res.notes


class _Flatten:
    def init(self, in_dim):
        self.in_dim = in_dim.copy()
        return np.prod(self.in_dim)

    def activate(self, a_in):
        self.shape = a_in.shape
        return a_in.flatten()

    def backpropagate(self, d_in, bug=False):
        return d_in.reshape(self.shape)[::-1] if bug else d_in.reshape(self.shape)


class _FlattenBug(_Flatten):
    def backpropagate(self, d_in):
        return super().backpropagate(d_in, bug=True)


@pytest.mark.parametrize("cls, failing", [(_Flatten, None), (_FlattenBug, ["x0"])])
def test_the_forward_is_the_method_the_backward_follows(cls, failing):
    """Corpus 172: init(in_dim) beside activate(a_in), both returning a value."""
    _expect(gradcheck.check_layer(cls(), np.random.default_rng(518).standard_normal((2, 3, 4))),
            failing)


class _BareX(_BareRelu):
    def forward(self, x):
        return super().forward(x)


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["x0"])])
def test_the_one_inputs_gradient_keyed_inputs_whatever_its_name(bug, failing):
    """Corpus 167: forward(self, x) whose backward returns {'inputs': dx}."""
    x = np.random.default_rng(519).standard_normal((5, 3))
    _expect(gradcheck.check_layer(_BareX(bug), np.sign(x) * (0.2 + np.abs(x))), failing)


# -- review 82 ------------------------------------------------------------------------------
class _MomentumScaled:
    """A real bug: the stored gradients carry a held factor; zero_grad() only resets them,
    and update() in the twin applies them scaled again."""

    def __init__(self, twice=False):
        r = np.random.default_rng(520)
        self.W, self.b, self.momentum, self.twice = r.standard_normal((3, 2)), np.zeros(2), 0.9, \
            twice
        self.dW, self.db = np.zeros((3, 2)), np.zeros(2)

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        self.dW = self.momentum * (self.x.T @ dout)
        self.db = self.momentum * dout.sum(0)
        return dout @ self.W.T

    def zero_grad(self):
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)

    def update(self):
        if self.twice:
            self.W -= self.momentum * self.dW
            self.b -= self.momentum * self.db


@pytest.mark.parametrize("twice", [False, True])
def test_a_held_factor_is_a_step_size_only_when_a_method_applies_the_stored_step(twice):
    res = gradcheck.check_layer(_MomentumScaled(twice), np.random.default_rng(521).normal(
        size=(4, 3)))
    assert res.status == "mismatch", res.report()


def _cubic(x, s):
    return s * x ** 3


def _cubic_dx(x, s):
    return 3 * s * x ** 2


def test_check_elementwise_asks_which_when_integers_come_first_beside_floats():
    """Reviews 82 and 83: integers first are a point (np.arange) or targets (class ids):
    switching either way made a wrong derivative pass; wrt= says which."""
    s = np.random.default_rng(522).uniform(1, 2, 5)
    with pytest.raises(ValueError, match=r"wrt=1 or wrt=0"):
        gradcheck.check_elementwise(_cubic, _cubic_dx, np.arange(1, 6), s)
    assert gradcheck.check_elementwise(_cubic, _cubic_dx, np.arange(1, 6), s, wrt=0).passed
    wrong = gradcheck.check_elementwise(_cubic, lambda x, s: 3 * x ** 2, np.arange(1, 6), s,
                                        wrt=0)
    assert wrong.status == "mismatch", wrong.report()


class _DecayUpdate(_Accumulating):
    """update() adds a weight decay beside the stored step."""

    def update(self):
        self.weights += self.d_w - self.learning_rate * 1e-2 * self.weights
        self.d_w = np.zeros(self.weights.shape)


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["weights"])])
def test_a_folded_step_size_beside_an_update_with_weight_decay(bug, failing):
    res = gradcheck.check_layer(_DecayUpdate(bug), np.random.default_rng(525).normal(size=4))
    _expect(res, failing)


def test_a_one_row_nested_list_gradient_of_one_input():
    res = gradcheck.check_vjp(_tanh_rows, _tanh_rows_back,
                              [np.random.default_rng(523).standard_normal((1, 4))])
    assert res.passed, res.report()


class _KeyedTwice(_KeyedGrads):
    def state_dict(self):
        return {"w_g": self.gate.w}


@pytest.mark.parametrize("bug, failing", [(False, None), (True, ["gate.w"])])
def test_two_listings_of_the_same_arrays_are_one(bug, failing):
    _expect(gradcheck.check_layer(_KeyedTwice(bug), np.random.default_rng(524).normal(
        size=(4, 3))), failing)


# -- review 84 ------------------------------------------------------------------------------
class _ScalarTwiceStep:
    """Float scalars w, b; the backward stores lr * grad, and step() scales it again."""

    def __init__(self):
        self.w, self.b, self.lr = 0.7, -0.2, 0.1

    def forward(self, x):
        self.x = x
        return np.tanh(self.w * x + self.b)

    def backward(self, dout):
        d = dout * (1 - np.tanh(self.w * self.x + self.b) ** 2)
        self.dw, self.db = self.lr * float(np.sum(d * self.x)), self.lr * float(np.sum(d))
        return d * self.w

    def step(self):
        self.w -= self.lr * self.dw
        self.b -= self.lr * self.db


def test_a_one_number_parameter_is_no_evidence_of_a_decay_beside_its_step():
    """Review 84: for one number, any move is a multiple of it: lr was folded and the
    twice-scaled gradients passed."""
    res = gradcheck.check_layer(_ScalarTwiceStep(), np.random.default_rng(526).normal(size=5))
    assert res.status == "mismatch", res.report()


def _weighted(y, p, w):
    return 0.5 * w * (y - p) ** 2


@pytest.mark.parametrize("y", [np.array([1.0, 0.0, 1.0, 1.0, 0.0]), [3, 1, 4, 1, 5],
                               np.array([3.0, 1.0, 4.0, 1.0, 5.0])])
def test_check_elementwise_asks_which_beside_several_floats_or_whole_numbers(y):
    """Review 84: labels beside a prediction and weights, or class ids as a list or as
    floats, were differentiated silently (a wrong-sign derivative passed)."""
    r = np.random.default_rng(527)
    with pytest.raises(ValueError, match="wrt="):
        gradcheck.check_elementwise(_weighted, lambda y, p, w: w * (y - p), y,
                                    r.uniform(0.1, 0.9, 5), r.uniform(0.5, 1.5, 5))
    res = gradcheck.check_elementwise(_weighted, lambda y, p, w: w * (y - p), y,
                                      r.uniform(0.1, 0.9, 5), r.uniform(0.5, 1.5, 5), wrt=1)
    assert res.status == "mismatch", res.report()


def _identity_rows(Z):
    return [list(row) for row in Z]


def _identity_rows_back(dA, Z, bug=False):
    return [np.asarray(r) * (2.0 if bug else 1.0) for r in dA]  # rows of arrays


@pytest.mark.parametrize("bug, status", [(False, "ok"), (True, "mismatch")])
def test_a_gradient_as_a_list_of_row_arrays_of_one_input(bug, status):
    """Regression (corpus 176, linear_backward returning dA): rows as arrays."""
    res = gradcheck.check_vjp(_identity_rows, partial(_identity_rows_back, bug=bug),
                              [np.random.default_rng(528).standard_normal((3, 4))])
    assert res.status == status, res.report()


# -- review 85 ------------------------------------------------------------------------------
def _normalising_loss(p):
    p /= p.sum(1, keepdims=True)  # in place
    return float(np.sum(p ** 2))


def _normalising_grad(p):
    s = p.sum(1, keepdims=True)
    u = p / s
    g = 2 * u
    return (g - (g * u).sum(1, keepdims=True)) / s


def test_check_grad_and_check_loss_see_a_loss_writing_into_a_normal_point():
    p = np.random.default_rng(529).uniform(0.1, 1.0, (3, 4))
    p /= p.sum(1, keepdims=True)
    assert gradcheck.check_grad(_normalising_loss, _normalising_grad, p).status == "mutation"
    res = gradcheck.check_loss(lambda q: (_normalising_loss(q), _normalising_grad(q)), p)
    assert res.status in ("mutation", "mismatch"), res.report()  # (the gradient taken after
    # the write, at the normalised point, may differ: either way no pass, no kink read)


class _DecayAll:
    """lr folded into the stored steps; update() adds a weight decay to every parameter,
    one of them a single number; the twin's update scales a constant bias's step again."""

    def __init__(self, twice=False):
        r = np.random.default_rng(530)
        self.W, self.s, self.b = r.standard_normal((3, 2)), np.array([1.3]), np.full(2, 0.1)
        self.lr, self.twice = 0.1, twice

    def forward(self, x):
        self.x = x
        return self.s * (x @ self.W) + self.b

    def backward(self, dout):
        z = self.x @ self.W
        self.dW = self.lr * self.s * (self.x.T @ dout)
        self.ds = self.lr * np.array([np.sum(dout * z)])
        self.db = self.lr * dout.sum(0)
        return self.s * (dout @ self.W.T)

    def update(self):
        self.W -= self.dW + self.lr * 1e-2 * self.W
        self.s -= self.ds + self.lr * 1e-2 * self.s
        self.b -= (self.lr if self.twice else 1.0) * self.db + self.lr * 1e-2 * self.b


@pytest.mark.parametrize("twice, status", [(False, "ok"), (True, "mismatch")])
def test_one_weight_decay_shared_by_all_parameters_beside_a_folded_step(twice, status):
    res = gradcheck.check_layer(_DecayAll(twice), np.random.default_rng(531).normal(size=(4, 3)))
    assert res.status == status, res.report()


def _prelu(x, a):
    return np.where(x > 0, x, a * x)


def test_check_elementwise_takes_a_whole_valued_point_with_negatives():
    res = gradcheck.check_elementwise(_prelu, lambda x, a: np.where(x > 0, 1.0, a),
                                      np.array([-2.0, -1.0, 1.0, 2.0, 3.0]), np.full(5, 0.25))
    assert res.passed, res.report()
