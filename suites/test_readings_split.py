"""Readings by observation found on held-out code (corpora 43 on): a step size held one
object away, a gradient method taking the forward's inputs again, private (mangled)
names. Each with a correct subject that passes and a broken twin that fails with a
gradient verdict."""

import types

import numpy as np
import pytest

import gradcheck
from gradcheck import LayerConventionError


def _failing(res: gradcheck.CheckResult) -> list[str]:
    return [i.name for i in res.inputs if not i.passed]


def _expect(res: gradcheck.CheckResult, failing: list[str] | None) -> None:
    """A pass (``failing`` None), or a mismatch in exactly ``failing``."""
    if failing is None:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch" and _failing(res) == failing, res.report()


# -- a step size the network holds: self.nn.learning_rate ------------------------------------
class _NetStepped:
    """``backpropagate(delta)`` steps ``W`` and ``b`` by ``self.nn.learning_rate``, the
    step size of the network the layer is in; ``bug`` breaks one part."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(41)
        self.W, self.b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug
        self.nn = types.SimpleNamespace(learning_rate=0.05, training=True, name="net")

    def propagate(self, x):
        self.x = x
        return x @ self.W + self.b

    def backpropagate(self, delta):
        lr = self.nn.learning_rate
        dx = delta @ self.W.T
        self.W -= lr * (self.x.T @ delta)
        self.b -= lr * delta.sum(0) * (-1 if self.bug == "b-sign" else 1)
        return delta @ self.W.T if self.bug == "dx-after-step" else dx


@pytest.mark.parametrize("bug, failing", [("", None), ("b-sign", ["b"]),
                                          ("dx-after-step", ["x0"])])
def test_a_step_size_held_by_the_network_reads_the_step(bug, failing):
    x = np.random.default_rng(42).standard_normal((4, 3))
    res = gradcheck.check_layer(_NetStepped(bug), x)
    _expect(res, failing)
    assert any("nn.learning_rate is the step size" in n for n in res.notes), res.notes


# -- the parameters' gradients from a second method: gradient(z_down, _e) ------------------------
class _SplitGradient:
    """``backward(_e)`` returns the input's gradient only; ``gradient(z_down, _e)``,
    given the forward's input again and the output gradient, returns ``(dw, db)``;
    ``gradient_descent(_dw, _db)`` steps. 1-d samples, ``w`` of shape (units, inputs)."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(43)
        self.w, self.b, self.bug = rng.standard_normal((3, 4)), rng.standard_normal(3), bug

    def forward(self, x):
        return self.w @ x + self.b

    def backward(self, _e):
        return self.w.T @ _e

    def gradient(self, z_down, _e):
        dw = self._outer(_e, z_down)  # a helper of its own: not a numerical gradient
        return dw, (0.5 * _e if self.bug == "db-half" else _e)

    def _outer(self, a, b):
        return np.outer(a, b) if self.bug != "dw-transposed-in" else np.outer(a, b[::-1])

    def gradient_descent(self, _dw, _db):
        self.w -= _dw
        self.b -= _db


@pytest.mark.parametrize("bug, failing", [("", None), ("db-half", ["b"]),
                                          ("dw-transposed-in", ["w"])])
def test_a_gradient_method_given_the_forward_input_again(bug, failing):
    x = np.random.default_rng(44).standard_normal(4)
    res = gradcheck.check_layer(_SplitGradient(bug), x)
    _expect(res, failing)
    assert any("gradient(z_down, _e) completes the backward" in n for n in res.notes), \
        res.notes


class _NumericalGradient(_SplitGradient):
    """``gradient`` runs the forward (a numerical gradient): never the backward's."""

    def gradient(self, z_down, _e):
        w0, dw = self.w.copy(), np.zeros_like(self.w)
        for i in np.ndindex(self.w.shape):
            self.w[i] += 1e-6
            dw[i] = (_e @ self.forward(z_down) - _e @ (w0 @ z_down + self.b)) / 1e-6
            self.w[i] = w0[i]
        return dw, _e


def test_a_gradient_method_that_runs_the_forward_is_not_read():
    x = np.random.default_rng(44).standard_normal(4)
    with pytest.raises(LayerConventionError, match="gradient"):
        gradcheck.check_layer(_NumericalGradient(), x)


# -- private names: self.__w is held as _Dense__w, returned under 'w' -----------------------------
class _Dense:
    """``self.__w``, ``self.__b``; ``backward`` returns ``dx, {'w': dw, 'b': db}``."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(45)
        self.__w, self.__b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug

    def forward(self, x):
        self.x = x
        return x @ self.__w + self.__b

    def backward(self, dout):
        dw = self.x.T @ dout * (2.0 if self.bug == "dw" else 1.0)
        return dout @ self.__w.T, {"w": dw, "b": dout.sum(0)}


@pytest.mark.parametrize("bug, failing", [("", None), ("dw", ["_Dense__w"])])
def test_gradients_keyed_by_a_private_name_as_written(bug, failing):
    x = np.random.default_rng(46).standard_normal((4, 3))
    res = gradcheck.check_layer(_Dense(bug), x)
    _expect(res, failing)
    assert [i.name for i in res.inputs] == ["x0", "_Dense__w", "_Dense__b"], res.report()


# -- parameters that are array subclasses carrying flags: Param(np.ndarray).trainable ------------
class _Param(np.ndarray):
    """An array with ``.trainable`` and ``.gradient`` on it (kept by every copy)."""

    def __new__(cls, values):
        obj = np.asarray(values, dtype=np.float64).view(cls)
        obj.trainable = True
        return obj


class _FlaggedDense:
    """``backward`` reads ``self.W.trainable`` before storing ``self.dW``."""

    def __init__(self, bug: str = ""):
        rng = np.random.default_rng(47)
        self.W, self.bug = _Param(rng.standard_normal((3, 2))), bug

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        if self.W.trainable:
            self.dW = np.asarray(self.x.T @ dout) * (1.5 if self.bug == "dW" else 1.0)
        return np.asarray(dout @ self.W.T)


@pytest.mark.parametrize("bug, failing", [("", None), ("dW", ["W"])])
def test_parameters_that_are_array_subclasses_keep_their_attributes(bug, failing):
    x = np.random.default_rng(48).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_FlaggedDense(bug), x), failing)
