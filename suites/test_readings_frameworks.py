"""Readings of held-out code met in stop 53's batch (corpora 244-247, small frameworks):
each with a correct subject that passes and a broken twin that fails with a gradient
verdict."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import gradcheck


class _Op:
    """A base whose ``__call__`` runs ``forward`` and then fills ``self.local`` with the
    local derivatives that ``backward`` multiplies by."""

    def __init__(self) -> None:
        self.local: dict[str, np.ndarray] = {}

    def forward(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def derivatives(self, x: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = self.forward(x)
        self.local = self.derivatives(x)
        return y

    def backward(self, dy: np.ndarray) -> np.ndarray:
        return dy * self.local["x"]


class _Softplus(_Op):
    def __init__(self, bug: bool = False) -> None:
        super().__init__()
        self.bug = bug

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.log1p(np.exp(x))

    def derivatives(self, x: np.ndarray) -> dict[str, np.ndarray]:
        s = 1.0 / (1.0 + np.exp(-x))
        return {"x": s * (1.0 - s) if self.bug else s}


@pytest.mark.parametrize("bug", [False, True])
def test_a_dict_that_call_fills_after_the_forward_is_read_through_call(bug):
    """``__call__`` runs ``forward`` then fills ``self.local``, which ``backward`` reads
    (corpus 247): called on ``forward`` alone, the backward raised ``KeyError``; now
    ``__call__`` is the forward, with a note."""
    x = np.random.default_rng(1).standard_normal((3, 4))
    res = gradcheck.check_layer(_Softplus(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert any("__call__ checked as the forward" in n for n in res.notes), res.notes


class _SquaredLoss:
    """``calculate_loss(predictions, targets)`` and ``calculate_gradient(prediction,
    target)``: the same arguments but for a plural, no forward or backward by name."""

    def __init__(self, bug: str = "") -> None:
        self.bug = bug

    def calculate_loss(self, predictions: np.ndarray, targets: np.ndarray) -> float:
        return float(np.mean((predictions - targets) ** 2))

    def calculate_gradient(self, prediction: np.ndarray, target: np.ndarray) -> np.ndarray:
        if self.bug == "scalar":
            return 2 * np.mean(prediction - target)  # type: ignore[return-value]
        scale = 1.0 if self.bug == "no-mean" else 1.0 / prediction.size
        return 2 * (prediction - target) * scale


@pytest.mark.parametrize("bug", ["", "no-mean", "scalar"])
def test_a_loss_pair_whose_arguments_differ_by_a_plural_is_read(bug):
    rng = np.random.default_rng(2)
    p, t = rng.standard_normal(5), rng.standard_normal(5)
    res = gradcheck.check_layer(_SquaredLoss(bug), p, t, wrt=["x0"])
    expected = {"": "ok", "no-mean": "mismatch", "scalar": "shape-mismatch"}[bug]
    assert res.status == expected, res.report()
    assert any("calculate_loss" in n and "calculate_gradient" in n for n in res.notes)


class _Dense:
    def __init__(self) -> None:
        rng = np.random.default_rng(3)
        self.W, self.b = rng.standard_normal((4, 3)), np.zeros(3)
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return x @ self.W + self.b

    def backward(self, dy: np.ndarray) -> np.ndarray:
        self.dW, self.db = self.x.T @ dy, dy.sum(0)
        return dy @ self.W.T


class _SoftmaxLoss:
    """A loss holding the model it hands its gradient to: ``backward()`` calls
    ``self.model.backward(grad)``, which fills the model's gradients."""

    def __init__(self, model: _Dense, bug: bool = False) -> None:
        self.model, self.bug = model, bug

    def forward(self, logits: np.ndarray, labels: np.ndarray) -> float:
        z = logits - logits.max(1, keepdims=True)
        self.p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        self.labels = labels
        return float(-np.mean(np.log(self.p[np.arange(len(labels)), labels])))

    def backward(self) -> np.ndarray:
        g = self.p.copy()
        g[np.arange(len(self.labels)), self.labels] -= 1.0
        g /= 1 if self.bug else len(self.labels)
        self.model.backward(g)
        return g


@pytest.mark.parametrize("bug", [False, True])
def test_a_model_the_loss_hands_its_gradient_to_is_no_parameter_of_the_loss(bug):
    """Corpus 245's loss: the model's gradients, filled by the loss's backward, are not
    the loss's; the output depends on none of its arrays (noted, not checked)."""
    rng = np.random.default_rng(4)
    model = _Dense()
    model.forward(rng.standard_normal((5, 4)))
    logits, labels = rng.standard_normal((5, 3)), np.array([0, 2, 1, 1, 0])
    res = gradcheck.check_layer(_SoftmaxLoss(model, bug), logits, labels)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert [r.name for r in res.inputs if r.status != "skipped"] == ["x0"], res.report()
    assert any("handed on" in n and "model" in n for n in res.notes), res.notes


class _Gated:
    """``x + alpha * sub(x)`` with a gate at zero; the backward hands the gradient to the
    sub-layer, without the gate when ``bug``."""

    def __init__(self, bug: bool = False) -> None:
        self.sub, self.alpha, self.bug = _Dense(), 0.0, bug
        self.sub.W = np.random.default_rng(8).standard_normal((4, 4))
        self.sub.b = np.zeros(4)

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.s = self.sub.forward(x)
        return x + self.alpha * self.s

    def backward(self, dy: np.ndarray) -> np.ndarray:
        self.dalpha = np.sum(dy * self.s)
        return dy + self.sub.backward(dy if self.bug else self.alpha * dy)


@pytest.mark.parametrize("bug", [False, True])
def test_a_sub_layer_the_forward_runs_is_checked_even_when_the_output_stands_still(bug):
    """Review 101: a gate at zero holds the output still as the sub-layer moves, but the
    forward runs it: its gradients are the layer's, and a forgotten gate is a mismatch."""
    x = np.random.default_rng(9).standard_normal((3, 4))
    res = gradcheck.check_layer(_Gated(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    checked = {r.name for r in res.inputs}
    assert {"sub.W", "sub.b"} <= checked, res.report()
    assert not any("handed on" in n for n in res.notes), res.notes


class _MetricBeside:
    """A loss and a metric taking the same arguments; no gradient method at all."""

    def loss(self, xs: np.ndarray, ys: np.ndarray) -> float:
        return float(np.sum((xs - ys) ** 2))

    def accuracy_delta(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(np.abs(x - y) < 0.5)) - 0.5


class _NormBeside(_SquaredLoss):
    """The pair, and a method under a gradient's name returning a number."""

    def gradient_norm(self, prediction: np.ndarray, target: np.ndarray) -> float:
        return float(np.linalg.norm(self.calculate_gradient(prediction, target)))


def test_a_number_from_a_metric_is_no_gradient():
    """Review 101: a number is read as a (wrong) gradient only from a method named as a
    gradient alone, and only when no method returns an array of the input's shape."""
    rng = np.random.default_rng(10)
    p, t = rng.standard_normal(5), rng.standard_normal(5)
    with pytest.raises(TypeError, match="no forward-like method"):
        gradcheck.check_layer(_MetricBeside(), p, t, wrt=["x0"])
    res = gradcheck.check_layer(_NormBeside(), p, t, wrt=["x0"])
    assert res.passed, res.report()


class _TwoLayer:
    """``forward(X)`` returns ``(probs, cache)``; ``backward(probs, y_true, cache)``
    returns a dict keyed as ``self.params``; the loss lives in a training script."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(11)
        self.params = {"W1": rng.standard_normal((4, 5)), "b1": np.zeros(5),
                       "W2": rng.standard_normal((5, 3)), "b2": np.zeros(3)}
        self.bug = bug

    def forward(self, X: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        h = np.tanh(X @ self.params["W1"] + self.params["b1"])
        z = h @ self.params["W2"] + self.params["b2"]
        e = np.exp(z - z.max(1, keepdims=True))
        probs = e / e.sum(1, keepdims=True)
        cache = (X, h)
        return probs, cache

    def backward(self, probs: np.ndarray, y_true: np.ndarray, cache: tuple[np.ndarray, ...]
                 ) -> dict[str, np.ndarray]:
        X, h = cache
        dz = (probs - y_true) / len(X)
        dh = dz @ self.params["W2"].T * (1.0 if self.bug else 1.0 - h**2)
        return {"W2": h.T @ dz, "b2": dz.sum(0), "W1": X.T @ dh, "b1": dh.sum(0)}


def _cross_entropy(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.sum(y * np.log(probs)) / len(y))


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_outputs_by_the_names_the_forward_returns(bug):
    """Corpus 250: with ``loss=``, a backward whose arguments are the forward's returned
    names and the target (``backward(probs, y_true, cache)``) is called so, and a dict of
    gradients keyed as ``self.params`` is read as its grads."""
    rng = np.random.default_rng(12)
    X, y = rng.standard_normal((6, 4)), np.eye(3)[rng.integers(0, 3, 6)]
    res = gradcheck.check_layer(_TwoLayer(bug), X, y, loss=_cross_entropy)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name for r in res.inputs if r.status in ("ok", "mismatch")} == {
        "params['W1']", "params['b1']", "params['W2']", "params['b2']"}, res.report()


@dataclass
class _Grads:
    dx: np.ndarray
    dw: np.ndarray
    db: np.ndarray


class _SigmoidDense:
    """``backward(dout)`` returns its gradients in a dataclass, fields ``d`` + names."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(13)
        self.w, self.b, self.bug = rng.standard_normal((4, 3)), rng.standard_normal(3), bug

    def forward(self, x: np.ndarray) -> np.ndarray:
        self._x = x
        self._y = 1.0 / (1.0 + np.exp(-(x @ self.w + self.b)))
        return self._y

    def backward(self, dout: np.ndarray) -> _Grads:
        dz = dout * self._y * (1.0 - self._y)
        dw = self._x.T @ (dout if self.bug else dz)
        return _Grads(dx=dz @ self.w.T, dw=dw, db=dz.sum(0))


@pytest.mark.parametrize("bug", [False, True])
def test_a_dataclass_of_gradients_returned_by_a_layer_is_read_by_its_fields(bug):
    """Corpus 248: ``LayerDifferencial(dx, dw, db)`` read as ``{'dx', 'dw', 'db'}``."""
    x = np.random.default_rng(14).standard_normal((2, 4))
    res = gradcheck.check_layer(_SigmoidDense(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name: r.status for r in res.inputs} == {
        "x0": "ok", "w": "mismatch" if bug else "ok", "b": "ok"}, res.report()


class _Cell:
    """``forward(x, h_prev)`` returns ``tanh(x W_x^T + h_prev W_h^T + b)``;
    ``backward(delta, y, x_in, h_prev)``: the output gradient, the output, the input under
    a name of its own and the state under the forward's name. The gradients are added
    into ``dW_x``, ``dW_h``, ``db``. ``width`` is the output's."""

    def __init__(self, bug: bool = False, width: int = 2) -> None:
        rng = np.random.default_rng(15)
        self.W_x, self.W_h = rng.standard_normal((width, 3)), rng.standard_normal((width, 4))
        self.b = rng.standard_normal(width)
        self.dW_x, self.dW_h, self.db = (np.zeros_like(a) for a in (self.W_x, self.W_h, self.b))
        self.bug = bug

    def forward(self, x: np.ndarray, h_prev: np.ndarray) -> np.ndarray:
        return np.tanh(x @ self.W_x.T + h_prev @ self.W_h.T + self.b)

    def backward(self, delta: np.ndarray, y: np.ndarray, x_in: np.ndarray,
                 h_prev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dz = (1 - y if self.bug else 1 - y**2) * delta
        self.dW_x += dz.T @ x_in
        self.dW_h += dz.T @ h_prev
        self.db += dz.sum(0)
        return dz @ self.W_x, dz @ self.W_h


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_output_and_inputs_under_names_of_its_own(bug):
    """Corpus 251: the one order of the output gradient, the output and the inputs that
    runs and doubles with the gradient (here the shapes leave one)."""
    rng = np.random.default_rng(16)
    x, h = rng.standard_normal((3, 3)), rng.standard_normal((3, 4))
    res = gradcheck.check_layer(_Cell(bug), x, h)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name for r in res.inputs} == {"x0", "x1", "W_x", "W_h", "b"}, res.report()


def test_orders_that_all_run_and_double_are_no_reading():
    """Review 103: with the output of the state's shape, two orders run and double;
    names cannot say which argument is the new state: no gradient verdict."""
    rng = np.random.default_rng(16)
    x, h = rng.standard_normal((3, 3)), rng.standard_normal((3, 4))
    res = gradcheck.check_layer(_Cell(width=4), x, h)
    assert res.status not in ("ok", "mismatch", "shape-mismatch"), res.report()


class _TwoLayerKept(_TwoLayer):
    """The same network, its gradients also kept in ``self.grads`` (made empty first)."""

    def __init__(self, bug: bool = False) -> None:
        super().__init__(bug)
        self.grads: dict[str, np.ndarray] = {}

    def backward(self, probs: np.ndarray, y_true: np.ndarray, cache: tuple[np.ndarray, ...]
                 ) -> dict[str, np.ndarray]:
        self.grads = super().backward(probs, y_true, cache)
        return self.grads


@pytest.mark.parametrize("bug", [False, True])
def test_a_returned_dict_also_kept_as_grads_is_read_once(bug):
    """Review 102: ``self.grads = grads; return grads`` (and a ``grads = {}`` made by
    ``__init__``) is read as the params' gradients, never as an input's."""
    rng = np.random.default_rng(17)
    X, y = rng.standard_normal((6, 4)), np.eye(3)[rng.integers(0, 3, 6)]
    res = gradcheck.check_layer(_TwoLayerKept(bug), X, y, loss=_cross_entropy)
    assert (res.status == "mismatch") if bug else res.passed, res.report()


class _TwoOutputs:
    """``forward(X)`` returns ``(A, Z)``, both of the targets' shape; ``backward(A, Y, Z)``
    is the gradient of a loss on ``A``: a loss given for either cannot say which."""

    def __init__(self) -> None:
        self.params = {"W": np.random.default_rng(18).standard_normal((3, 2))}

    def forward(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Z = X @ self.params["W"]
        A = np.tanh(Z)
        return A, Z

    def backward(self, A: np.ndarray, Y: np.ndarray, Z: np.ndarray) -> dict[str, np.ndarray]:
        return {"W": self.X.T @ ((A - Y) * (1 - A**2)) if hasattr(self, "X") else Z}


def test_a_loss_that_fits_two_outputs_gives_no_backward_by_names():
    """Review 102: the loss given fits both outputs of the targets' shape; which one the
    backward differentiates is not observed: no gradient verdict."""
    rng = np.random.default_rng(19)
    X, Y = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    try:
        res = gradcheck.check_layer(_TwoOutputs(), X, Y,
                                    loss=lambda a, y: float(np.mean((a - y) ** 2)))
    except (TypeError, gradcheck.LayerConventionError):
        return
    assert res.status not in ("ok", "mismatch", "shape-mismatch"), res.report()


class _Chained:
    """``backward(dout)`` stores ``dx``, ``dw``, ``db`` and returns ``self``."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(20)
        self.w, self.b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return x @ self.w + self.b

    def backward(self, dout: np.ndarray) -> _Chained:
        self.dw = self.x.T @ dout
        self.db = dout.mean(0) if self.bug else dout.sum(0)
        self.dx = dout @ self.w.T
        return self


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_returning_itself_returns_nothing(bug):
    """Review 102: ``return self`` (for chaining) is no input gradient; what it stored is
    read."""
    x = np.random.default_rng(21).standard_normal((4, 3))
    res = gradcheck.check_layer(_Chained(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name for r in res.inputs} == {"x0", "w", "b"}, res.report()


class _Box:
    """An array with room for its gradient, as a small framework hands data around."""

    def __init__(self, data: np.ndarray, requires_grad: bool = False) -> None:
        self.data, self.grad, self.requires_grad = data, None, requires_grad


class _BoxedDense:
    """``forward(x: _Box) -> _Box``; ``backward(grad)`` returns the input's gradient and
    sets its parameters' ``.grad``."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(22)
        self.weights = _Box(rng.standard_normal((4, 3)), True)
        self.bias = _Box(rng.standard_normal(3), True)
        self.bug = bug

    def forward(self, x: _Box) -> _Box:
        self.last = x.data
        return _Box(np.tanh(x.data @ self.weights.data + self.bias.data))

    def backward(self, grad: np.ndarray) -> np.ndarray:
        y = np.tanh(self.last @ self.weights.data + self.bias.data)
        dz = grad * (1 - y**2)
        self.weights.grad, self.bias.grad = self.last.T @ dz, dz.sum(0)
        return (grad if self.bug else dz) @ self.weights.data.T


@pytest.mark.parametrize("bug", [False, True])
def test_an_input_in_a_box_of_its_own_is_checked_through_its_array(bug):
    """Corpus 253's silent pass: an input handed as ``Tensor(x)`` was held constant as
    settings, so a wrong input gradient passed; its one float array is now the input
    checked."""
    x = _Box(np.random.default_rng(23).standard_normal((2, 4)))
    res = gradcheck.check_layer(_BoxedDense(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name: r.status for r in res.inputs}["x0"] == ("mismatch" if bug else "ok")
    assert any(".data: that array is the input checked" in n for n in res.notes), res.notes


def _log_back(grad_out: np.ndarray, out: np.ndarray, x: np.ndarray) -> np.ndarray:
    return grad_out / x


def _log_back_bug(grad_out: np.ndarray, out: np.ndarray, x: np.ndarray) -> np.ndarray:
    return grad_out / out


def _multiply_back1(grad_out: np.ndarray, out: np.ndarray, x: np.ndarray, y: np.ndarray
                    ) -> np.ndarray:
    return (grad_out * x).sum(0)


def _multiply_back1_bug(grad_out: np.ndarray, out: np.ndarray, x: np.ndarray, y: np.ndarray
                        ) -> np.ndarray:
    return (grad_out * y).sum(0)


def _total(x: np.ndarray, dim: int | None = None) -> np.ndarray:
    return np.sum(x, axis=dim)


def _total_back(grad_out: np.ndarray, out: np.ndarray, x: np.ndarray, dim: int | None = None
                ) -> np.ndarray:
    return np.broadcast_to(grad_out if dim is None else np.expand_dims(grad_out, dim), x.shape)


def _total_back_bug(grad_out: np.ndarray, out: np.ndarray, x: np.ndarray,
                    dim: int | None = None) -> np.ndarray:
    return _total_back(grad_out, out, x, dim) / x.shape[dim or 0]


@pytest.mark.parametrize("bug", [False, True])
def test_a_backward_taking_the_gradient_the_output_then_the_inputs(bug):
    """Corpus 252 (a blog's autograd): ``back(grad_out, out, x, ...)`` of a function
    returning its output alone, the forward's output under ``out``; a ufunc's
    positional-only ``x1, x2`` named by the backward; a setting passed on by name."""
    rng = np.random.default_rng(24)
    x, y = rng.uniform(0.5, 2.0, (3, 4)), rng.standard_normal(4)
    calls = [(np.log, _log_back_bug if bug else _log_back, [x]),
             (np.multiply, _multiply_back1_bug if bug else _multiply_back1, [x, y]),
             (_total, _total_back_bug if bug else _total_back, [x, 1])]
    for fwd, bwd, xs in calls:
        res = gradcheck.check_vjp(fwd, bwd, xs)
        assert (res.status == "mismatch") if bug else res.passed, res.report()


class _Net:
    def __init__(self) -> None:
        rng = np.random.default_rng(25)
        self.sizes = {"in": 5, "hidden": [4], "out": 3}
        self.vals = [{"W": rng.standard_normal((5, 4)), "b": rng.standard_normal((1, 4))},
                     {"W": rng.standard_normal((4, 3)), "b": rng.standard_normal((1, 3))}]

    def predict(self, s: np.ndarray) -> np.ndarray:
        for layer in self.vals:
            s = s @ layer["W"] + layer["b"]
        return s


def _layer_updates(net: _Net, s: np.ndarray, delta: np.ndarray) -> list[dict[str, np.ndarray]]:
    """The correct gradients of the two layers' ``W`` and ``b``, a dict per layer."""
    h = s @ net.vals[0]["W"] + net.vals[0]["b"]
    dh = delta @ net.vals[1]["W"].T
    return [{"W": s.T @ dh, "b": dh.sum(0, keepdims=True)},
            {"W": h.T @ delta, "b": delta.sum(0, keepdims=True)}]


def test_a_list_of_layer_dicts_matched_to_the_inputs_is_no_shape_mismatch():
    """Corpus 254: check_vjp(Net.predict, updates, [net, s]) returns one dict per layer,
    two items for two inputs by chance; a dict is no input's gradient of a wrong shape
    (correct code got shape-mismatch): no gradient verdict."""
    net, s = _Net(), np.random.default_rng(26).standard_normal((3, 5))
    res = gradcheck.check_vjp(_Net.predict, _layer_updates, [net, s])
    assert res.status not in ("ok", "mismatch", "shape-mismatch"), res.report()


class _TupleGradients:
    """``compute_loss(X, y)`` runs the model; ``compute_gradients(X, y)`` returns the
    parameters' gradients as ``(array, float)``, of no input's shape."""

    def __init__(self) -> None:
        self.w, self.b = np.random.default_rng(27).standard_normal((4, 1)), 0.5

    def compute_loss(self, X: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean((X @ self.w + self.b - y) ** 2))

    def compute_gradients(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        r = 2 * (X @ self.w + self.b - y) / len(X)
        return X.T @ r, float(r.sum())


def test_a_gradient_method_returning_a_tuple_of_an_array_and_a_float_is_no_crash():
    """Corpus 259: the loss pair reader met ``(grad_w, grad_b)`` with a float inside and
    raised NumPy's ValueError; now it is no pair (a clear TypeError naming forward=)."""
    rng = np.random.default_rng(28)
    X, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 1))
    with pytest.raises(TypeError, match="forward="):
        gradcheck.check_layer(_TupleGradients(), X, y)


class _Scale:
    """``gamma * x + beta`` whose framework names ``gamma`` and ``beta`` through the
    properties ``weights`` and ``bias``; the gradients follow those names."""

    def __init__(self, bug: bool = False) -> None:
        rng = np.random.default_rng(29)
        self.gamma, self.beta = rng.standard_normal((1, 4)), rng.standard_normal((1, 4))
        self.bug = bug

    @property
    def weights(self) -> np.ndarray:
        return self.gamma

    @property
    def bias(self) -> np.ndarray:
        return self.beta

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return self.gamma * x + self.beta

    def backward(self, error: np.ndarray) -> np.ndarray:
        self._gradient_weights = np.sum(error * (1.0 if self.bug else self.x), 0, keepdims=True)
        self._gradient_bias = np.sum(error, 0, keepdims=True)
        return error * self.gamma


@pytest.mark.parametrize("bug", [False, True])
def test_a_parameter_named_by_a_property_has_its_gradient_under_that_name(bug):
    """Corpus 257 (a course framework's BatchNormalization): ``weights`` returns
    ``self.gamma``, its gradient is ``_gradient_weights``; the shapes alone cannot say
    which of two (1, C) arrays is whose."""
    x = np.random.default_rng(30).standard_normal((5, 4))
    res = gradcheck.check_layer(_Scale(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name: r.status for r in res.inputs} == {
        "x0": "ok", "gamma": "mismatch" if bug else "ok", "beta": "ok"}, res.report()


class _StepFC:
    """``x @ weights``; ``backward`` overwrites ``gradient`` (this call's alone)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.weights = rng.standard_normal((3, 2))

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.x = x
        return x @ self.weights

    def backward(self, e: np.ndarray) -> np.ndarray:
        self.gradient = self.x.T @ e
        return e @ self.weights.T


class _Steps:
    """A sub-layer run on each row in turn; the backward sums its per-row gradients into
    ``fc_gradient_weights`` (the sub-layer's ``gradient`` keeps the last row's)."""

    def __init__(self, bug: bool = False) -> None:
        self.fc = _StepFC(np.random.default_rng(31))
        self.fc_gradient_weights = np.zeros((3, 2))
        self.bug = bug

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.xs = x
        return np.stack([np.tanh(self.fc.forward(x[t:t + 1]))[0] for t in range(len(x))])

    def backward(self, e: np.ndarray) -> np.ndarray:
        self.fc_gradient_weights = np.zeros((3, 2))
        dx = np.zeros_like(self.xs)
        for t in reversed(range(len(e))):
            y = np.tanh(self.fc.forward(self.xs[t:t + 1]))
            dx[t] = self.fc.backward(e[t:t + 1] * (1 - y**2))[0]
            if not (self.bug and t == 0):
                self.fc_gradient_weights += self.fc.gradient
        return dx


@pytest.mark.parametrize("bug", [False, True])
def test_a_sub_layer_s_gradient_summed_under_its_name_spelt_out(bug):
    """Corpus 256: ``fc_gradient_weights`` held by the layer sums the steps that the
    sub-layer's own ``gradient`` holds one at a time; it is ``fc.weights``' gradient."""
    x = np.random.default_rng(32).standard_normal((4, 3))
    res = gradcheck.check_layer(_Steps(bug), x)
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    assert {r.name: r.status for r in res.inputs} == {
        "x0": "ok", "fc.weights": "mismatch" if bug else "ok"}, res.report()


class _BoxWithGrad(_Box):
    """A box whose gradient slot starts as zeros of the data's shape."""

    def __init__(self, data: np.ndarray) -> None:
        super().__init__(data)
        self.grad = np.zeros_like(data)


class _WritesIntoTheBox(_BoxedDense):
    """Returns nothing: writes the input's gradient into the box it was given."""

    def forward(self, x: _Box) -> _Box:
        self.given = x
        return super().forward(x)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        self.given.grad = super().backward(grad)
        return None  # type: ignore[return-value]


@pytest.mark.parametrize("bug", [False, True])
def test_a_box_with_a_gradient_slot_is_still_read_and_never_passes_unread(bug):
    """Review 103: a box holding ``.grad = zeros_like(data)`` is still a box of one input
    (a wrong dx fails); a backward writing the input's gradient into the box it was
    given, returning nothing, gets no verdict rather than a pass with x0 constant."""
    x = np.random.default_rng(33).standard_normal((2, 4))
    res = gradcheck.check_layer(_BoxedDense(bug), _BoxWithGrad(x))
    assert (res.status == "mismatch") if bug else res.passed, res.report()
    res = gradcheck.check_layer(_WritesIntoTheBox(bug), _Box(x))
    assert res.status not in ("ok", "passed"), res.report()
