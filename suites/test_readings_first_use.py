"""Layers built on first use (``layer(x)`` creates the weights) and backwards handed an
optimizer (``backward(dy, optimizer_)``): each with a correct subject that passes and a
broken twin that fails with a gradient verdict (corpus 197's np-modeling layers)."""

import numpy as np
import pytest

import gradcheck
from gradcheck import LayerConventionError
from suites._verdicts import expect as _expect


class _Optimizer:
    """What a training loop hands the backward: ``update(obj, name, grad)`` steps it."""

    def __init__(self, lr):
        self.lr = lr

    def update(self, obj, name, grad):
        setattr(obj, name, getattr(obj, name) - self.lr * grad)


class _Lazy:
    """Weights built from the first input's shape by ``__call__``; drawn from NumPy's
    global generator, as such code does."""

    def __init__(self, units, bug=""):
        self.units, self.bug, self.ready = units, bug, False

    def __call__(self, x):
        if not self.ready:
            self.w = np.random.standard_normal((x.shape[-1], self.units))  # noqa: NPY002
            self.b = np.random.standard_normal(self.units)  # noqa: NPY002
            self.ready = True
        return self.forward(x)

    def forward(self, x):
        self.x = x
        return np.tanh(x @ self.w + self.b)

    def backward(self, dy, optimizer_):
        dz = dy * (1 - np.tanh(self.x @ self.w + self.b) ** 2)
        dx = dz @ self.w.T  # before the step (after it: the twin "stepped-first")
        dw = self.x.T @ (dy if self.bug == "no-derivative" else dz)
        optimizer_.update(self, "w", dw)
        if self.bug != "b-dropped":
            optimizer_.update(self, "b", dz.sum(0))
        return dz @ self.w.T if self.bug == "stepped-first" else dx


class _Stepping:
    """Built in ``__init__``; the optimizer is handed the parameter array itself."""

    def __init__(self, bug=False):
        r = np.random.default_rng(731)
        self.W, self.bug = r.standard_normal((3, 2)), bug

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, grad, opt):
        dx = grad @ self.W.T
        opt.step(self.W, self.x.T @ grad * (2.0 if self.bug else 1.0))
        return dx


def _x(seed, shape=(4, 3)):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize(("bug", "failing"), [("", None), ("no-derivative", ["w"]),
                                              ("stepped-first", ["x0"])])
def test_a_layer_built_on_first_use_and_handed_an_optimizer(bug, failing):
    """The stand-in takes a step of size 1: an input gradient computed with the weights
    after the step (wrong in training) is a mismatch (review 91)."""
    layer = _Lazy(2, bug)
    np.random.seed(5)  # noqa: NPY002 - the user's global generator, as their code uses it
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    res = gradcheck.check_layer(layer, _x(732))
    _expect(res, failing)
    assert {i.name for i in res.inputs} == {"x0", "w", "b"}, res.report()
    assert any("built on first use" in n for n in res.notes), res.notes
    assert any("optimizer_" in n and "stand-in" in n for n in res.notes), res.notes
    assert not layer.ready and not hasattr(layer, "w")  # the layer given is untouched
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_a_parameter_never_handed_to_the_optimizer_is_no_pass():
    with pytest.raises(LayerConventionError, match=r"\bb\b.*stand-in|stand-in.*\bb\b"):
        gradcheck.check_layer(_Lazy(2, "b-dropped"), _x(733))


@pytest.mark.parametrize(("bug", "failing"), [(False, None), (True, ["W"])])
def test_an_optimizer_handed_the_parameter_array_itself(bug, failing):
    res = gradcheck.check_layer(_Stepping(bug), _x(734))
    _expect(res, failing)
    assert res.coverage == "checked 2/2 tensors", res.report()


def test_a_real_optimizer_is_what_the_layer_was_trained_with_not_what_is_checked():
    """The stand-in changes nothing: trained once by hand, the layer is checked where it
    is, and a forward raising on another missing attribute keeps its error."""
    layer = _Lazy(2)
    x = _x(735)
    np.random.seed(6)  # noqa: NPY002
    layer(x)
    layer.backward(np.ones((4, 2)), _Optimizer(0.1))
    _expect(gradcheck.check_layer(layer, x), None)

    class _Broken(_Lazy):
        def forward(self, x):
            return x @ self.missing

    res = gradcheck.check_layer(_Broken(2), x)
    assert res.status == "error" and "missing" in res.message, res.report()


class _Rebinding:
    """``self.weights = optimizer.update(self.weights, wg, name=...)``: the optimizer
    returns the new array; a training flag beside the input (m-J-K-b's DenseLayer)."""

    def __init__(self, bug=False):
        r = np.random.default_rng(736)
        self.weights, self.bias, self.bug = r.standard_normal((2, 3)), r.standard_normal(2), bug

    def forward(self, x, training):
        if training:
            self._x = x
        return x @ self.weights.T + self.bias

    def backward(self, grad, optimizer):
        dx = grad @ self.weights
        bg = grad.mean(0) if self.bug else grad.sum(0)
        self.weights = optimizer.update(self.weights, (self._x.T @ grad).T, name="w")
        self.bias = optimizer.update(self.bias, bg, name="b")
        return dx


@pytest.mark.parametrize(("bug", "failing"), [(False, None), (True, ["bias"])])
def test_an_optimizer_returning_the_new_parameter(bug, failing):
    res = gradcheck.check_layer(_Rebinding(bug), _x(737), True)
    _expect(res, failing)
    assert res.coverage == "checked 3/3 tensors", res.report()


class _Momentum:
    """``opt.update(self.W, self.vW, dW)``: the velocity the layer holds is handed before
    the gradient, and is no gradient (review 91)."""

    def __init__(self, bug=False):
        r = np.random.default_rng(738)
        self.W, self.vW, self.bug = r.standard_normal((3, 2)), np.zeros((3, 2)), bug

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, g, opt):
        dx = g @ self.W.T
        opt.update(self.W, self.vW, self.x.T @ g + (1.0 if self.bug else 0.0))
        return dx


@pytest.mark.parametrize(("bug", "failing"), [(False, None), (True, ["W"])])
def test_a_moment_handed_before_the_gradient_is_no_gradient(bug, failing):
    res = gradcheck.check_layer(_Momentum(bug), _x(739))
    _expect(res, failing)


class _Registering(_Lazy):
    instances = []  # the class's own list: what a first call appends is taken back

    def __call__(self, x):
        type(self).instances.append(self)
        return super().__call__(x)


def test_a_first_use_that_writes_the_class_leaves_it_as_it_was():
    np.random.seed(7)  # noqa: NPY002
    _expect(gradcheck.check_layer(_Registering(2), _x(740)), None)
    assert _Registering.instances == []
