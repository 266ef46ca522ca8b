"""Readings of held-out code met in stop 54's batch (corpora 260-263): models checked
through their loss and gradient methods, a loss's backward stepping by an argument, a
network given its loss's gradient, a loss per sample beside its gradient, and code that
calls ``exit()``. Each with a correct subject that passes and a broken twin that fails
with a gradient verdict."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gradcheck


# -- a model's loss and gradients, both taking every input -----------------------------------
class _Ridge:
    """``predict``, ``compute_loss(X, y)`` and ``compute_gradients(X, y)`` returning
    ``(grad_w, grad_b)``, the bias a Python float (corpus 259's many-algorithm
    collection)."""

    def __init__(self, bug: bool = False) -> None:
        self.w = np.random.default_rng(3).standard_normal((4, 1))
        self.b = 0.25
        self.lam = 0.1
        self.bug = bug

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X @ self.w + self.b

    def compute_loss(self, X: np.ndarray, y: np.ndarray) -> float:
        r = self.predict(X) - y
        return float(np.mean(r ** 2) + self.lam * np.sum(self.w ** 2))

    def compute_gradients(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        r = self.predict(X) - y
        grad_w = 2 * X.T @ r / len(X) + 2 * self.lam * self.w
        grad_b = (1.0 if self.bug else 2.0) * float(np.mean(r))  # BUG: the factor 2
        return grad_w, grad_b

    def fit(self, X: np.ndarray, y: np.ndarray, lr: float = 0.1) -> None:
        grad_w, grad_b = self.compute_gradients(X, y)
        self.w -= lr * grad_w
        self.b -= lr * grad_b


@pytest.mark.parametrize("bug", [False, True])
def test_a_model_s_loss_and_gradients_taking_every_input_are_its_forward_and_backward(bug):
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 1))
    res = gradcheck.check_layer(_Ridge(bug), X, y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {i.name for i in res.inputs if i.status != "constant"} >= {"w", "b"}, res.report()
    if bug:
        assert [i.name for i in res.inputs if not i.passed] == ["b"], res.report()
    assert any("compute_gradients, the one named as a gradient" in n for n in res.notes)


class _Dense:
    def __init__(self, rng: np.random.Generator, n_in: int, n_out: int) -> None:
        self.weights = rng.standard_normal((n_out, n_in))
        self.biases = rng.standard_normal((n_out, 1))


class _ColumnNet:
    """Samples as columns; ``prediction(X)``, ``compute_loss(X, Y)`` running it, and
    ``compute_gradients_batch(X, Y)`` storing ``dweights``/``dbiases`` on each layer and
    returning nothing; ``compute_gradients_sample(x, t)`` takes one column only
    (corpus 261)."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(5)
        self.layers = [_Dense(rng, 3, 4), _Dense(rng, 4, 2)]
        self.bug = bug

    def prediction(self, X: np.ndarray) -> np.ndarray:
        self.acts = [X]
        for layer in self.layers:
            self.acts.append(np.tanh(layer.weights @ self.acts[-1] + layer.biases))
        return self.acts[-1]

    def compute_loss(self, X: np.ndarray, Y: np.ndarray) -> float:
        return float(np.mean(np.sum((self.prediction(X) - Y) ** 2, axis=0)))

    def compute_gradients_batch(self, inputs: np.ndarray, targets: np.ndarray) -> None:
        out = self.prediction(inputs)
        n = inputs.shape[1]
        delta = 2 * (out - targets) / n * (1 - out ** 2)
        for i in (1, 0):
            layer = self.layers[i]
            layer.dweights = delta @ self.acts[i].T
            layer.dbiases = delta.sum(axis=1, keepdims=True) * (n if self.bug else 1)
            delta = (layer.weights.T @ delta) * (1 - self.acts[i] ** 2)

    def compute_gradients_sample(self, x: np.ndarray, t: np.ndarray) -> None:
        if x.ndim != 2 or x.shape[1] != 1:
            raise ValueError("one column only")
        self.compute_gradients_batch(x, t)


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_a_model_stores_on_its_layers_from_its_loss_s_arguments(bug):
    rng = np.random.default_rng(6)
    X, Y = rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    res = gradcheck.check_layer(_ColumnNet(bug), X, Y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    if bug:
        assert {i.name for i in res.inputs if not i.passed} == {
            "layers[0].biases", "layers[1].biases"}, res.report()


class _StepsInstead(_Ridge):
    """Its gradient method takes the step itself: no gradient is read from it."""

    def compute_gradients(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        grad_w, grad_b = super().compute_gradients(X, y)
        self.w -= 0.1 * grad_w
        return grad_w, grad_b


def test_a_gradient_method_that_steps_the_weights_is_not_read_as_the_backward():
    rng = np.random.default_rng(7)
    with pytest.raises(TypeError, match="no forward-like method"):
        gradcheck.check_layer(_StepsInstead(), rng.standard_normal((5, 4)),
                              rng.standard_normal((5, 1)))


# -- a loss's backward stepping by its argument ----------------------------------------------
class _SoftmaxNet:
    """``forward(x)`` returning row-wise probabilities; ``backward(x, y, lr)`` averaging
    per-sample gradients and replacing its weights by the step (corpus 262), the loss
    computed in the training script."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(8)
        self.w1, self.b1 = rng.standard_normal((5, 4)), 0.1 * rng.standard_normal(4)
        self.w2, self.b2 = rng.standard_normal((4, 3)), 0.1 * rng.standard_normal(3)
        self.bug = bug

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.h = np.tanh(x @ self.w1 + self.b1)
        z = self.h @ self.w2 + self.b2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def backward(self, x: np.ndarray, y: np.ndarray, lr: float) -> None:
        p = self.forward(x)
        dz = p.copy()
        dz[np.arange(len(y)), y] -= 1.0
        dh = dz @ self.w2.T * (1 if self.bug else 1 - self.h ** 2)  # BUG: tanh' dropped
        n = len(x)
        self.w2 = self.w2 - lr * self.h.T @ dz / n
        self.b2 = self.b2 - lr * dz.mean(axis=0)
        self.w1 = self.w1 - lr * x.T @ dh / n
        self.b1 = self.b1 - lr * dh.mean(axis=0)


def _cross_entropy(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_targets_and_a_step_size_is_read_as_a_step(bug):
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((4, 5)), np.array([0, 2, 1, 2])
    res = gradcheck.check_layer(_SoftmaxNet(bug), x, y, loss=_cross_entropy)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert any("argument lr scales the change" in n for n in res.notes), res.notes
    assert not any("called as (x, y, dout)" in n for n in res.notes), res.notes


# -- a network given its loss's gradient -----------------------------------------------------
class _Layer:
    def __init__(self, rng: np.random.Generator, n_in: int, n_out: int) -> None:
        self.W = rng.standard_normal((n_in, n_out))
        self.b = rng.standard_normal((1, n_out))

    def forward(self, A: np.ndarray) -> np.ndarray:
        self.A_prev = A
        self.Z = A @ self.W + self.b
        return np.tanh(self.Z)

    def backward(self, dA: np.ndarray) -> np.ndarray:
        dZ = dA * (1 - np.tanh(self.Z) ** 2)
        self.dW = self.A_prev.T @ dZ
        self.db = dZ.sum(axis=0, keepdims=True)
        return dZ @ self.W.T


class _LossNet:
    """``forward(X)``, ``compute_loss(A, Y)``, ``compute_loss_gradient(A, Y)`` and
    ``backward(dLoss)`` handing it down the layers, which keep ``dW``/``db`` (corpus
    260); its input's gradient is the first layer's return, kept as ``dX``."""

    def __init__(self, bug: str = "") -> None:
        rng = np.random.default_rng(10)
        self.layers = [_Layer(rng, 3, 4), _Layer(rng, 4, 3)]
        self.bug = bug

    def forward(self, X: np.ndarray) -> np.ndarray:
        A = X
        for layer in self.layers:
            A = layer.forward(A)
        return A

    def backward(self, dLoss: np.ndarray) -> None:
        dA = dLoss
        for layer in reversed(self.layers):
            dA = layer.backward(dA)
        self.dX = dA

    def compute_loss(self, A: np.ndarray, Y: np.ndarray) -> float:
        return float(np.sum((A - Y) ** 2) / (2 * len(Y)))

    def compute_loss_gradient(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return (Y - A if self.bug == "sign" else A - Y) / len(Y)


@pytest.mark.parametrize("bug", ["", "sign"])
def test_a_network_s_backward_is_given_its_loss_s_gradient_method(bug):
    rng = np.random.default_rng(11)
    X, Y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(_LossNet(bug), X, Y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert any("given what compute_loss_gradient returns" in n for n in res.notes), res.notes
    assert [i.name for i in res.inputs if i.name.startswith("x")] == ["x0"], res.report()


# -- a loss per sample beside its gradient ---------------------------------------------------
def _bce(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    return np.mean(-y_true * np.log(y_pred) - (1 - y_true) * np.log(1 - y_pred), axis=-1)


def _bce_gradient(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    return -y_true / y_pred + (1 - y_true) / (1 - y_pred)


def _bce_gradient_bug(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    return -y_true / y_pred - (1 - y_true) / (1 - y_pred)  # BUG: the second term's sign


def _bce_gradient_of_mean(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    return _bce_gradient(y_true, y_pred) / len(y_true)


@pytest.mark.parametrize("bwd, status", [(_bce_gradient, "ok"), (_bce_gradient_bug, "mismatch"),
                                         (_bce_gradient_of_mean, "bad-protocol")])
def test_a_loss_per_sample_beside_its_gradient_is_read_as_their_sum(bwd, status):
    rng = np.random.default_rng(12)
    y_true = rng.integers(0, 2, (5, 1)).astype(float)
    y_pred = rng.uniform(0.1, 0.9, (5, 1))
    res = gradcheck.check_vjp(_bce, bwd, [y_true, y_pred])
    assert res.status == status, res.report()
    assert any("one loss per sample (5 values), read as their sum" in n for n in res.notes)


# -- code calling exit() ---------------------------------------------------------------------
class _Exits:
    """Every method catches what it raises and calls ``exit(1)`` through a method whose
    name says ``error`` (corpus 261)."""

    def __init__(self) -> None:
        self.W = np.random.default_rng(13).standard_normal((3, 2))

    def forward(self, x: np.ndarray) -> np.ndarray:
        try:
            return np.tanh(x @ self.W)
        except Exception as exc:  # noqa: BLE001 - the subject's own convention
            self.fatal_error("forward", exc)
            raise

    def backward(self, output: np.ndarray, y: np.ndarray) -> None:
        try:
            self.dW = output @ y  # never reached with the shapes given
        except Exception as exc:  # noqa: BLE001
            self.fatal_error("backward", exc)

    def fatal_error(self, where: object, error: object) -> None:
        print(f"Error {where}: {error}")
        sys.exit(1)


def test_exit_called_where_the_code_is_observed_is_an_error_result_not_an_exit(capsys):
    rng = np.random.default_rng(14)
    res = gradcheck.check_layer(_Exits(), rng.standard_normal((4, 3)), rng.standard_normal(
        (4, 2)))
    assert res.status == "error", res.report()
    capsys.readouterr()


def test_exit_in_a_forward_is_an_error_result_naming_it():
    class Exits:
        def forward(self, x: np.ndarray) -> np.ndarray:
            sys.exit(1)

        def backward(self, d: np.ndarray) -> np.ndarray:
            return d

    res = gradcheck.check_layer(Exits(), np.ones((2, 3)))
    assert res.status == "error" and "SystemExit" in res.message, res.report()


# -- a loss object the network holds, its backward given the output back ---------------------
class _BCE:
    def calculate(self, output: np.ndarray, y: np.ndarray) -> float:
        return float(-np.mean(y * np.log(output) + (1 - y) * np.log(1 - output)))

    def backward(self, output: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (output - y) / (output * (1 - output)) / y.size


class _HeldLossNet:
    """Samples as columns; ``self.loss`` an object with ``calculate(output, y)`` and
    ``backward(output, y)``; ``forward(inputs)`` returns ``output``, and
    ``backward(output, y)`` takes it back with the targets, storing ``dweights`` and
    ``dbiases`` (corpus 261); every method calls ``exit(1)`` on an error."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(15)
        self.weights = [rng.standard_normal((4, 3)), rng.standard_normal((2, 4))]
        self.biases = [rng.standard_normal((4, 1)), rng.standard_normal((2, 1))]
        self.loss = _BCE()
        self.bug = bug

    def forward(self, inputs: np.ndarray) -> np.ndarray:
        try:
            self.acts = [inputs]
            for w, b in zip(self.weights, self.biases, strict=True):
                self.acts.append(1 / (1 + np.exp(-(w @ self.acts[-1] + b))))
            output = self.acts[-1]
            return output
        except Exception as error:  # noqa: BLE001 - the subject's own convention
            self.fatal_error("forward", error)
            raise

    def backward(self, output: np.ndarray, y: np.ndarray) -> None:
        try:
            grad = self.loss.backward(output, y)
            self.dweights, self.dbiases = [None, None], [None, None]
            for i in (1, 0):
                a = self.acts[i + 1]
                dz = grad if self.bug and i == 0 else grad * a * (1 - a)  # BUG: sigmoid'
                self.dweights[i] = dz @ self.acts[i].T
                self.dbiases[i] = dz.sum(axis=1, keepdims=True)
                grad = self.weights[i].T @ dz
        except Exception as error:  # noqa: BLE001
            self.fatal_error("backward", error)

    def fatal_error(self, where: str, error: object) -> None:
        print(f"Error {where}: {error}")
        sys.exit(1)


@pytest.mark.parametrize("bug", [False, True])
def test_a_held_loss_object_and_a_backward_given_the_output_back(bug, capsys):
    rng = np.random.default_rng(16)
    X, Y = rng.standard_normal((3, 5)), rng.integers(0, 2, (2, 5)).astype(float)
    res = gradcheck.check_layer(_HeldLossNet(bug), X, Y)
    capsys.readouterr()
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    if bug:
        assert {i.name for i in res.inputs if not i.passed} == {"weights[0]", "biases[0]"}
    assert any("targets of loss.calculate" in n for n in res.notes), res.notes


# -- a forward and a stepping backward under names of their own ------------------------------
class _Unit:
    """One sample as a 1-d vector; ``output(x)`` and ``update_weights(deltas, eta)``
    returning the input's gradient and replacing ``W`` and ``bias`` by the step
    (corpus 267)."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(17)
        self.W, self.bias = rng.standard_normal((3, 4)), rng.standard_normal(3)
        self.bug = bug

    def output(self, x: np.ndarray) -> np.ndarray:
        self.input, self.net = x, self.W @ x + self.bias
        return np.tanh(self.net)

    def update_weights(self, deltas: np.ndarray, eta: float) -> np.ndarray:
        dl = deltas * (1 - np.tanh(self.net) ** 2)
        back = dl @ self.W
        self.W = self.W - eta * np.outer(dl, self.input)
        self.bias = self.bias - eta * (deltas if self.bug else dl)  # BUG: tanh' dropped
        return back


@pytest.mark.parametrize("bug", [False, True])
def test_a_forward_and_a_backward_taking_a_step_size_found_by_what_they_do(bug):
    res = gradcheck.check_layer(_Unit(bug), np.random.default_rng(18).standard_normal(4))
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    if bug:
        assert [i.name for i in res.inputs if not i.passed] == ["bias"], res.report()


# -- from review 104 -----------------------------------------------------------------------------
class _DictGradients(_Ridge):
    """``compute_gradients`` returning ``{"dw": ..., "db": ...}``."""

    def compute_gradients(self, X: np.ndarray, y: np.ndarray) -> dict[str, object]:
        grad_w, grad_b = super().compute_gradients(X, y)
        return {"dw": grad_w, "db": grad_b}


@pytest.mark.parametrize("bug", [False, True])
def test_gradients_returned_in_a_dict_by_name_are_no_crash(bug):
    rng = np.random.default_rng(19)
    X, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 1))
    res = gradcheck.check_layer(_DictGradients(bug), X, y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()


class _ExitsOnLargeSteps(_SoftmaxNet):
    def backward(self, x: np.ndarray, y: np.ndarray, lr: float) -> None:
        if lr > 0.5:
            sys.exit("lr too large")
        super().backward(x, y, lr)


def test_exit_under_loss_is_an_error_result_too():
    rng = np.random.default_rng(20)
    res = gradcheck.check_layer(_ExitsOnLargeSteps(), rng.standard_normal((4, 5)),
                                np.array([0, 2, 1, 2]), loss=_cross_entropy)
    assert res.status == "error" and "SystemExit" in res.message, res.report()


class _GradientInForward:
    """The forward computes the input's gradient for a fixed output gradient and keeps
    it as ``dx``; the backward computes it again (three times too large) into ``dx``."""

    def __init__(self, bug: bool = False) -> None:
        self.bug = bug

    def forward(self, x: np.ndarray) -> float:
        self.x = x
        self.dx = (3.0 if self.bug else 1.0) * 2 * x
        return float(np.sum(x ** 2))

    def backward(self) -> None:
        self.dx = (3.0 if self.bug else 1.0) * 2 * self.x


def test_a_gradient_the_backward_rebinds_to_what_the_forward_kept_is_still_read():
    """Review 104: a stored gradient is no "forward run again" when named as one."""
    x = np.random.default_rng(21).standard_normal((3, 2))
    assert gradcheck.check_layer(_GradientInForward(), x).passed
    res = gradcheck.check_layer(_GradientInForward(True), x)
    assert res.status == "mismatch", res.report()


# -- a cost and the gradients of its last arguments ----------------------------------------
def _cost(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> float:
    return float(np.sum((x @ w + b - y) ** 2) / (2 * len(x)))


def _gradient(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> tuple[np.ndarray, float]:
    r = x @ w + b - y
    dj_dw = x.T @ r / len(x)
    dj_db = float(np.sum(r) / len(x))
    return dj_dw, dj_db


def _gradient_bug(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float
                  ) -> tuple[np.ndarray, float]:
    r = x @ w + b - y
    dj_dw = x.T @ r / len(x)
    dj_db = float(np.sum(r))  # BUG: the 1/m
    return dj_dw, dj_db


def _gradient_named_otherwise(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float
                              ) -> tuple[np.ndarray, float]:
    dw, db = _gradient(x, y, w, b)
    dx, dy = dw, db
    return dx, dy


@pytest.mark.parametrize("bwd, status", [(_gradient, "ok"), (_gradient_bug, "mismatch")])
def test_a_cost_beside_the_gradients_of_its_last_arguments(bwd, status):
    """Corpus 266 (a course's compute_cost / compute_gradient(x, y, w, b) -> dw, db)."""
    rng = np.random.default_rng(22)
    x, y, w = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal(3)
    res = gradcheck.check_vjp(_cost, bwd, [x, y, w, 0.3])
    assert res.status == status, res.report()
    assert any("gradients of its last 2 arguments (w, b)" in n for n in res.notes), res.notes
    if status == "mismatch":
        assert [i.name for i in res.inputs if not i.passed] == ["b"], res.report()


def test_gradients_returned_under_other_arguments_names_are_not_the_last_ones():
    rng = np.random.default_rng(23)
    x, y, w = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal(3)
    res = gradcheck.check_vjp(_cost, _gradient_named_otherwise, [x, y, w, 0.3])
    assert not res.passed, res.report()


def test_a_row_gradient_for_a_column_says_the_update_would_widen_it():
    """Batch R (corpus 264): ``dw`` of shape (5,) for ``w`` (5, 1) is refused, and the
    message says why."""
    rng = np.random.default_rng(24)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal((5, 1))

    def fc(x, w):
        return x @ w, (x, w)

    def fc_back(dout, cache):
        x, w = cache
        return dout @ w.T, (x.T @ dout).ravel()

    res = gradcheck.check_vjp(fc, fc_back, [x, w])
    assert res.status == "shape-mismatch", res.report()
    assert "broadcasts to (5, 5), widening it" in res.message, res.message


# -- from review 105 -----------------------------------------------------------------------------
def test_gradients_of_the_last_arguments_in_an_unnamed_list_are_no_crash():
    rng = np.random.default_rng(25)
    x, y, w = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal(3)
    res = gradcheck.check_vjp(_cost, lambda x, y, w, b: list(_gradient(x, y, w, b)),
                              [x, y, w, 0.3])
    assert res.passed, res.report()  # unnamed: (3,) and () leave no choice


def _gradient_swapped(x: np.ndarray, y: np.ndarray, w: float, b: float
                      ) -> tuple[float, float]:
    r = x[:, 0] * w + b - y
    dj_dw = float(np.sum(r * x[:, 0]) / len(x))
    dj_db = float(np.sum(r) / len(x))
    return dj_db, dj_dw  # returned in the other order: its names say so


def test_scalar_gradients_named_for_the_other_argument_are_not_matched_in_order():
    rng = np.random.default_rng(26)
    x, y = rng.standard_normal((5, 1)), rng.standard_normal(5)

    def cost(x, y, w, b):
        return float(np.sum((x[:, 0] * w + b - y) ** 2) / (2 * len(x)))

    res = gradcheck.check_vjp(cost, _gradient_swapped, [x, y, 0.4, 0.3])
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()


class _HeldLossNetBeside(_HeldLossNet):
    def accuracy(self, output: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean((output > 0.5) == y))


def test_a_metric_taking_the_output_and_targets_beside_the_backward_is_not_it(capsys):
    rng = np.random.default_rng(27)
    X, Y = rng.standard_normal((3, 5)), rng.integers(0, 2, (2, 5)).astype(float)
    res = gradcheck.check_layer(_HeldLossNetBeside(), X, Y)
    capsys.readouterr()
    assert res.passed, res.report()


class _RunningBCE(_BCE):
    """``calculate`` returns the running mean of every loss it was given."""

    def __init__(self) -> None:
        self.total, self.n = 6.0, 9

    def calculate(self, output: np.ndarray, y: np.ndarray) -> float:
        self.total += super().calculate(output, y)
        self.n += 1
        return self.total / self.n


def test_a_loss_whose_second_call_gives_another_number_is_no_loss(capsys):
    rng = np.random.default_rng(28)
    X, Y = rng.standard_normal((3, 5)), rng.integers(0, 2, (2, 5)).astype(float)
    net = _HeldLossNet()
    net.loss = _RunningBCE()
    res = gradcheck.check_layer(net, X, Y)
    capsys.readouterr()
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()


# -- batch S (corpora 268-271) ------------------------------------------------------------------
class _Linear:
    def __init__(self, rng: np.random.Generator, n_in: int, n_out: int, bug: bool) -> None:
        self.weights = rng.standard_normal((n_in, n_out))
        self.bias = rng.standard_normal(n_out)
        self.bug = bug

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return x @ self.weights + self.bias

    def backward(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        db = d.mean(axis=0) if self.bug else d.sum(axis=0)  # BUG: a mean for the sum
        return d @ self.weights.T, self.x.T @ d, db


class _SoftmaxOut:
    def forward(self, x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.p = e / e.sum(axis=1, keepdims=True)
        return self.p

    def backward(self, targets: np.ndarray) -> np.ndarray:
        g = self.p.copy()
        g[np.arange(len(targets)), targets] -= 1
        return g / len(targets)


class _TargetsNet:
    """``forward(x)``, ``loss(y_pred, y)`` and ``backward(targets)`` naming the targets
    otherwise than the loss does, the layers keeping ``grad_w``/``grad_b`` (corpus 270)."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(29)
        self.layers = [_Linear(rng, 5, 4, False), _Linear(rng, 4, 3, bug)]
        self.out = _SoftmaxOut()

    def forward(self, x: np.ndarray) -> np.ndarray:
        for layer in self.layers:
            x = np.tanh(layer.forward(x)) if layer is self.layers[0] else layer.forward(x)
        return self.out.forward(x)

    def loss(self, y_pred: np.ndarray, y: np.ndarray) -> float:
        return float(-np.mean(np.log(y_pred[np.arange(len(y)), y])))

    def backward(self, targets: np.ndarray) -> None:
        g = self.out.backward(targets)
        for i in (1, 0):
            layer = self.layers[i]
            g, layer.grad_w, layer.grad_b = layer.backward(g)
            if i == 1:
                g = g * (1 - np.tanh(self.layers[0].x @ self.layers[0].weights
                                     + self.layers[0].bias) ** 2)


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_targets_under_a_name_of_its_own(bug):
    rng = np.random.default_rng(30)
    x, y = rng.standard_normal((4, 5)), np.array([0, 2, 1, 2])
    res = gradcheck.check_layer(_TargetsNet(bug), x, y)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    if bug:
        assert [i.name for i in res.inputs if not i.passed] == ["layers[1].bias"], res.report()


class _LogSoftmax:
    """``gradient(eta)`` returning ``(softmax + eta) / N``: the fused loss's gradient,
    affine in its argument, no log-softmax backward (corpus 268)."""

    def __init__(self, right: bool = False) -> None:
        self.right = right

    def forward(self, x: np.ndarray) -> np.ndarray:
        z = x - x.max(axis=1, keepdims=True)
        self.softmax = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    def gradient(self, eta: np.ndarray) -> np.ndarray:
        if self.right:
            return eta - self.softmax * eta.sum(axis=1, keepdims=True)
        return (self.softmax + eta) / len(eta)


@pytest.mark.parametrize("right", [True, False])
def test_a_single_gradient_method_affine_in_its_argument_is_checked(right):
    x = np.random.default_rng(31).standard_normal((3, 4))
    res = gradcheck.check_layer(_LogSoftmax(right), x)
    assert res.passed if right else res.status == "mismatch", res.report()


class _TwoStored:
    """A forward returning nothing that stores the pre-activation and the activation;
    the backward differentiates the activation (corpus 269)."""

    def __init__(self, bug: bool = False) -> None:
        self.W = np.random.default_rng(32).standard_normal((3, 4))
        self.bug = bug

    def forward(self, x: np.ndarray) -> None:
        self.x = x
        self.output = self.W @ x
        self.activated = np.tanh(self.output)

    def backward(self, d: np.ndarray) -> np.ndarray:
        dz = d * (1 - self.activated ** 2)
        self.dW = dz @ self.x.T
        return (2.0 if self.bug else 1.0) * self.W.T @ dz  # BUG: a factor 2


def test_two_stored_outputs_a_backward_wrong_under_each_is_a_mismatch():
    x = np.random.default_rng(33).standard_normal((4, 5))
    res = gradcheck.check_layer(_TwoStored(True), x)
    assert res.status == "mismatch", res.report()
    assert any("wrong under each" in n for n in res.notes), res.notes
    right = gradcheck.check_layer(_TwoStored(), x)
    assert right.status == "bad-protocol", right.report()
    assert "It passes with output='activated' and not with output:" in right.message


class _Pickling:
    """A network with a public ``pickle(filename='net.pkl')`` that writes a file and a
    ``train`` step (corpus 275): observing it never calls the method named for a file."""

    def __init__(self) -> None:
        rng = np.random.default_rng(34)
        self.wih, self.who, self.lr = rng.standard_normal((3, 4)), rng.standard_normal((2, 3)), 0.1

    def forward(self, inputs: np.ndarray, *, return_hidden: bool = False) -> np.ndarray:
        h = np.tanh(self.wih @ inputs)
        return (self.who @ h, h) if return_hidden else self.who @ h

    def train(self, inputs: np.ndarray, targets: np.ndarray) -> None:
        out, h = self.forward(inputs, return_hidden=True)
        err = targets - out
        self.who += self.lr * err @ h.T
        self.wih += self.lr * ((self.who.T @ err) * (1 - h ** 2)) @ inputs.T

    def pickle(self, filename: str = "net.pkl") -> None:
        with open(filename, "wb") as fh:
            fh.write(b"weights")


def test_a_method_named_for_a_file_is_never_called_to_observe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(35)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((2, 3))
    try:
        gradcheck.check_layer(_Pickling(), x, y, loss=lambda out, t: float(np.sum((out - t) ** 2)))
    except TypeError:
        pass  # no reading is fine; a file written is not
    assert list(tmp_path.iterdir()) == []
    try:
        gradcheck.check_layer(_Pickling(), x, y)
    except TypeError:
        pass
    assert list(tmp_path.iterdir()) == []


class _SoftmaxCE:
    """``forward(X)`` ending ``return Y``; ``loss(Y, T)`` takes the output under that
    name; ``backward(T)`` returns the logits' gradient (corpus 274): the loss is no
    backward given the output back by name."""

    def __init__(self, bug: bool = False) -> None:
        self.bug = bug

    def forward(self, X: np.ndarray) -> np.ndarray:
        e = np.exp(X - X.max(axis=-1, keepdims=True))
        Y = e / e.sum(axis=-1, keepdims=True)
        self.Y = Y
        return Y

    def loss(self, Y: np.ndarray, T: np.ndarray) -> float:
        return float(-np.mean(np.log(np.take_along_axis(Y, T[..., None], -1))))

    def backward(self, T: np.ndarray) -> np.ndarray:
        g = self.Y.copy()
        np.put_along_axis(g, T[..., None], np.take_along_axis(g, T[..., None], -1) - 1, -1)
        return g / (T.size if not self.bug else T.shape[0])  # BUG: the mean over one axis


@pytest.mark.parametrize("bug", [False, True])
def test_a_loss_taking_the_output_by_its_returned_name_is_no_backward(bug):
    rng = np.random.default_rng(36)
    X, T = rng.standard_normal((2, 3, 5)), rng.integers(0, 5, (2, 3))
    res = gradcheck.check_layer(_SoftmaxCE(bug), X, T)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
