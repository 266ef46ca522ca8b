"""Where users' backwards leave their gradients, read by observation: each reading with
a correct layer that passes and a broken twin that fails with a gradient verdict at the
broken array (never a pass), and a refusal where the observation leaves a choice."""

from dataclasses import dataclass

import numpy as np
import pytest

import gradcheck


def _verdict(res: gradcheck.CheckResult, broken: str | None) -> None:
    if broken:
        assert res.status == "mismatch", res.report()
        assert [i.name for i in res.inputs if not i.passed] == [broken], res.report()
    else:
        assert res.passed, res.report()


# -- a flat tuple of gradients in an order of its own ----------------------------------------
class _FlatDense:
    """``backward(inputs, dout)`` returning ``(dW, dX, db)`` (v0lta's NumPy-backprop)."""

    def __init__(self, order: str, broken: bool):
        rng = np.random.default_rng(0)
        self.weight, self.bias = rng.standard_normal((3, 2)), rng.standard_normal((1, 2))
        self.order, self.broken = order, broken

    def forward(self, x):
        self.x = x
        return x @ self.weight + self.bias

    def backward(self, dout):
        g = {"W": self.x.T @ dout, "X": dout @ self.weight.T,
             "b": dout.mean(axis=0) if self.broken else dout.sum(axis=0)}
        return tuple(g[k] for k in self.order)


@pytest.mark.parametrize("order", ["WXb", "XWb", "bXW"])
@pytest.mark.parametrize("broken", [False, True])
def test_a_flat_tuple_of_gradients_is_read_by_the_shapes_of_its_items(order, broken):
    res = gradcheck.check_layer(_FlatDense(order, broken),
                                np.random.default_rng(1).standard_normal((4, 3)))
    _verdict(res, "bias" if broken else None)
    assert any("flat tuple" in n for n in res.notes), res.notes


def test_a_flat_tuple_whose_shapes_leave_a_choice_is_refused():
    layer = _FlatDense("XWb", False)
    layer.weight = np.random.default_rng(2).standard_normal((3, 3))  # dX and dW alike
    layer.bias = np.zeros((1, 3))
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(layer, np.random.default_rng(1).standard_normal((3, 3)))


# -- gradients stored under names of their own -----------------------------------------------
class _Heads:
    """Per-head weights in lists, ``self.Wq[h]``, their gradients in ``self.dWq[h]``."""

    def __init__(self, broken: bool):
        rng = np.random.default_rng(3)
        self.Wq = [rng.standard_normal((3, 2)) for _ in range(2)]
        self.Wo = rng.standard_normal((4, 3))
        self.broken = broken

    def forward(self, x):
        self.x = x
        self.h = [np.tanh(x @ w) for w in self.Wq]
        return np.concatenate(self.h, axis=1) @ self.Wo

    def backward(self, dout):
        dcat = dout @ self.Wo.T
        self.dWo = np.concatenate(self.h, axis=1).T @ dout
        self.dWq, dx = [], 0
        for k, (w, h) in enumerate(zip(self.Wq, self.h, strict=True)):
            dz = dcat[:, 2 * k:2 * k + 2] * (1 - h ** 2)
            self.dWq.append(self.x.T @ (dz * (1.5 if self.broken and k == 1 else 1)))
            dx = dx + dz @ w.T
        return dx


@pytest.mark.parametrize("broken", [False, True])
def test_list_items_pair_with_the_same_items_of_a_gradient_list(broken):
    res = gradcheck.check_layer(_Heads(broken), np.random.default_rng(4).standard_normal((5, 3)))
    _verdict(res, "Wq[1]" if broken else None)


class _Norm:
    """``self.gamma`` with ``self.gamma_grads`` (plural), stored by the backward."""

    def __init__(self, broken: bool):
        self.gamma, self.beta = np.linspace(0.5, 1.5, 4), np.linspace(-1, 1, 4)
        self.broken = broken

    def forward(self, x):
        self.xhat = np.tanh(x)
        return self.gamma * self.xhat + self.beta

    def backward(self, dout):
        self.gamma_grads = (dout if self.broken else dout * self.xhat).sum(0)
        self.beta_grads = dout.sum(0)
        return dout * self.gamma * (1 - self.xhat ** 2)


@pytest.mark.parametrize("broken", [False, True])
def test_gradients_named_with_a_plural_suffix(broken):
    res = gradcheck.check_layer(_Norm(broken), np.random.default_rng(5).standard_normal((3, 4)))
    _verdict(res, "gamma" if broken else None)


# -- gradients that can never reach the output ------------------------------------------------
class _Drawn:
    """Weights drawn in the forward (neuron-whisperer's cnn-numpy, broken) or once in
    ``__init__`` (correct); the backward stores ``dW`` or takes a step of ``lr``."""

    def __init__(self, in_forward: bool, step: bool):
        self.in_forward, self.step = in_forward, step
        if not in_forward:
            self.W = np.random.default_rng(6).random((3, 2))

    def forward(self, x):
        if self.in_forward:
            self.W = np.random.random((3, 2))  # noqa: NPY002 - the bug: drawn per call
        self.x, self.h = x, np.tanh(x @ self.W)
        return self.h

    def backward(self, dout, lr=0.1):
        self.dh = dout * (1 - self.h ** 2)  # an intermediate's gradient: not a parameter's
        dW = self.x.T @ self.dh
        dx = self.dh @ self.W.T
        if self.step:
            self.W -= lr * dW
        else:
            self.dW = dW
        return dx


@pytest.mark.parametrize("step", [False, True])
@pytest.mark.parametrize("in_forward", [False, True])
def test_weights_drawn_anew_by_every_forward_fail_where_their_gradient_is_lost(step, in_forward):
    res = gradcheck.check_layer(_Drawn(in_forward, step),
                                np.random.default_rng(7).standard_normal((4, 3)))
    _verdict(res, "W" if in_forward else None)


class _Momentum:
    """A step through a velocity the output does not depend on: the velocity is state."""

    def __init__(self, broken: bool):
        self.W = np.random.default_rng(8).standard_normal((3, 2))
        self.v = np.zeros((3, 2))
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout, lr=0.1):
        dx = dout @ self.W.T
        self.v = 0.9 * self.v - lr * (self.x.T @ dout) * (2.0 if self.broken else 1.0)
        self.W += self.v
        return dx


@pytest.mark.parametrize("broken", [False, True])
def test_a_step_through_a_velocity_is_read_on_the_weights(broken):
    res = gradcheck.check_layer(_Momentum(broken), np.random.default_rng(9).standard_normal((4, 3)))
    if broken:
        assert not res.passed and "W" in [i.name for i in res.inputs if not i.passed], res.report()
    else:
        assert res.passed, res.report()
        assert "W" in [i.name for i in res.inputs], res.report()


# -- a forward writing into its input ---------------------------------------------------------
def _relu_in_place(x):
    x[x < 0] = 0.0  # the caller's array is overwritten
    return x, x > 0


@pytest.mark.parametrize("broken", [False, True])
def test_a_forward_writing_into_its_input_still_gets_a_gradient_verdict(broken):
    def backward(dout, mask):
        return dout * (mask if not broken else 1.0)

    x = np.random.default_rng(10).standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5  # no kinks
    given = x.copy()
    res = gradcheck.check_vjp(_relu_in_place, backward, [x])
    np.testing.assert_array_equal(x, given)  # the user's array is left alone
    if broken:
        assert res.status == "mismatch", res.report()
        assert any("forward modified its input x" in n for n in res.notes), res.notes
    else:
        assert res.status == "mutation" and not res.passed, res.report()
        assert "gradients are right" in res.message, res.message


# -- from an independent review: silent passes, wrong verdicts, bare exceptions ---------------
class _NormNoReturn:
    """The backward returns nothing and stores ``self.dinputs`` beside ``self.dx_hat`` of
    the same shape (nnfs style, the forward's argument named ``x``)."""

    def __init__(self, broken: bool, name: str = "dinputs"):
        self.gamma, self.beta = np.linspace(0.5, 1.5, 5), np.zeros(5)
        self.broken, self.name = broken, name

    def forward(self, x):
        self.mu, self.var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        self.x_hat = (x - self.mu) / np.sqrt(self.var + 1e-5)
        return self.gamma * self.x_hat + self.beta

    def backward(self, dout):
        self.dgamma, self.dbeta = (dout * self.x_hat).sum(0), dout.sum(0)
        self.dx_hat = dout * self.gamma
        inv = 1 / np.sqrt(self.var + 1e-5)
        dx = inv * (self.dx_hat - self.dx_hat.mean(-1, keepdims=True)
                    - self.x_hat * (self.dx_hat * self.x_hat).mean(-1, keepdims=True))
        setattr(self, self.name, self.dx_hat * inv if self.broken else dx)


@pytest.mark.parametrize("broken", [False, True])
def test_an_input_gradient_stored_as_dinputs_is_read(broken):
    res = gradcheck.check_layer(_NormNoReturn(broken),
                                np.random.default_rng(11).standard_normal((4, 5)))
    _verdict(res, "x0" if broken else None)


def test_arrays_of_the_inputs_shape_left_unread_are_no_first_layer():
    res = gradcheck.check_layer(_NormNoReturn(True, name="delta_in"),
                                np.random.default_rng(11).standard_normal((4, 5)))
    assert res.status == "bad-protocol" and "delta_in" in res.message, res.report()


class _PReLU:
    """A float scalar slope whose gradient is ``self.dAlpha`` or ``self.grads['alpha']``."""

    def __init__(self, broken: bool, boxed: bool):
        self.alpha, self.broken, self.boxed, self.grads = 0.25, broken, boxed, {}

    def forward(self, x):
        self.x = x
        return np.where(x > 0, x, self.alpha * x)

    def backward(self, dout):
        g = float(np.sum(dout * np.minimum(self.x, 0))) * (3.0 if self.broken else 1.0)
        if self.boxed:
            self.grads["alpha"] = g
        else:
            self.dAlpha = g
        return dout * np.where(self.x > 0, 1, self.alpha)


@pytest.mark.parametrize("boxed", [False, True])
@pytest.mark.parametrize("broken", [False, True])
def test_a_float_scalars_gradient_in_another_spelling(broken, boxed):
    x = np.random.default_rng(12).standard_normal((4, 3))
    x[np.abs(x) < 0.05] = 0.3
    _verdict(gradcheck.check_layer(_PReLU(broken, boxed), x), "alpha" if broken else None)


class _Slotted:
    __slots__ = ("W", "b", "dW", "db", "x", "broken")

    def __init__(self, broken: bool):
        rng = np.random.default_rng(13)
        self.W, self.b, self.broken = rng.standard_normal((3, 2)), np.zeros(2), broken

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        self.dW = self.x.T @ dout
        self.db = np.zeros(2) if self.broken else dout.sum(0)
        return dout @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_layer_with_slots_has_its_arrays_seen(broken):
    res = gradcheck.check_layer(_Slotted(broken), np.random.default_rng(14).standard_normal((4, 3)))
    _verdict(res, "b" if broken else None)


class _Nielsen:
    """Weights in an object array beside a list of gradients of the same shapes."""

    def __init__(self, broken: bool):
        rng = np.random.default_rng(15)
        self.weights = np.empty(2, dtype=object)
        self.weights[0], self.weights[1] = rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
        self.nabla_w = [np.zeros((3, 5)), np.zeros((5, 2))]
        self.broken = broken

    def forward(self, x):
        self.acts = [x, np.tanh(x @ self.weights[0])]
        return self.acts[1] @ self.weights[1]

    def backward(self, dout):
        self.nabla_w[1] = self.acts[1].T @ dout
        d = (dout @ self.weights[1].T) * (1 - self.acts[1] ** 2)
        self.nabla_w[0] = self.acts[0].T @ d * (1.5 if self.broken else 1.0)
        return d @ self.weights[0].T


@pytest.mark.parametrize("broken", [False, True])
def test_weights_in_an_object_array_pair_by_place_with_a_gradient_list(broken):
    res = gradcheck.check_layer(_Nielsen(broken), np.random.default_rng(16).standard_normal((4, 3)))
    _verdict(res, "weights[0]" if broken else None)


def test_a_layer_that_ran_before_overwriting_its_gradients_passes():
    layer = _Slotted(False)
    rng = np.random.default_rng(17)
    layer.forward(rng.standard_normal((4, 3)))
    layer.backward(rng.standard_normal((4, 2)))  # dW, db hold an earlier step's values
    assert gradcheck.check_layer(layer, rng.standard_normal((4, 3))).passed


class _Velocity:
    """A step through velocities and no gradient array: velocities are no gradients."""

    def __init__(self):
        self.W = np.random.default_rng(18).standard_normal((3, 2))
        self.vW = np.zeros((3, 2))

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        dx = dout @ self.W.T
        self.vW = 0.9 * self.vW - 0.1 * (self.x.T @ dout)
        self.W += self.vW
        return dx


def test_a_velocity_is_not_read_as_a_gradient():
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(_Velocity(), np.random.default_rng(19).standard_normal((4, 3)))


class _TwoShapes:
    def __init__(self):
        self.W = np.random.default_rng(20).standard_normal((3, 2))

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W)
        return self.h, self.h.sum(1)

    def backward(self, dh, ds):
        dz = (dh + ds[:, None]) * (1 - self.h ** 2)
        self.dW = self.x.T @ dz
        return dz @ self.W.T


def test_two_outputs_of_different_shapes():
    assert gradcheck.check_layer(_TwoShapes(),
                                 np.random.default_rng(21).standard_normal((4, 3))).passed


def test_tuple_keys_in_a_params_dict_are_read():
    class Keyed:
        def __init__(self):
            self.params = {("fc", "W"): np.random.default_rng(22).standard_normal((3, 2))}
            self.grads = {("fc", "W"): np.zeros((3, 2))}

        def forward(self, x):
            self.x = x
            return x @ self.params[("fc", "W")]

        def backward(self, dout):
            self.grads[("fc", "W")] = self.x.T @ dout
            return dout @ self.params[("fc", "W")].T

    res = gradcheck.check_layer(Keyed(), np.random.default_rng(23).standard_normal((4, 3)))
    assert res.passed and "params[('fc', 'W')]" in [i.name for i in res.inputs], res.report()


# -- check_vjp: a backward taking the cache, then some of the forward's inputs again ----------
def _head_forward(X, WQ, WK):
    S = (X @ WQ) @ (X @ WK).T
    return np.tanh(S), (X, S)


def _head_backward(GO, cache, WQ, WK, broken=False):
    X, S = cache
    GS = GO * (1 - np.tanh(S) ** 2)
    Q, K = X @ WQ, X @ WK
    GQ, GK = GS @ K, (GS.T @ Q if not broken else GS @ Q)
    return GQ @ WQ.T + GK @ WK.T, X.T @ GQ, X.T @ GK


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_taking_inputs_again_after_the_cache_by_their_names(broken):
    rng = np.random.default_rng(24)
    X, WQ, WK = (rng.standard_normal(s) for s in ((4, 3), (3, 2), (3, 2)))

    def backward(GO, cache, WQ, WK):
        return _head_backward(GO, cache, WQ, WK, broken)

    res = gradcheck.check_vjp(_head_forward, backward, [X, WQ, WK])
    if broken:
        assert res.status == "mismatch", res.report()
        assert {i.name for i in res.inputs if not i.passed} == {"X", "WK"}, res.report()
    else:
        assert res.passed, res.report()
    assert any("again by their names" in n for n in res.notes), res.notes


# -- darknet: the output gradient in a slot the forward left zero ----------------------------
class _Darknet:
    """``forward(inpt)`` returns nothing, stores ``output`` beside another array (``mean``)
    and a zero ``delta``; ``backward(delta=None)`` reads ``self.delta`` and writes the input
    gradient into its argument (NumPyNet)."""

    def __init__(self, broken: str = ""):
        self.scales, self.broken = np.random.default_rng(25).standard_normal(3), broken

    def forward(self, inpt):
        self.x, self.mean = inpt, inpt.mean(axis=0)
        self.output = np.tanh(inpt) * self.scales
        self.delta = np.zeros(self.output.shape)

    def backward(self, delta=None):
        x = self.x if self.broken != "scales" else np.ones_like(self.x)
        self.scales_updates = (self.delta * np.tanh(x)).sum(axis=0)
        if delta is not None:
            d = self.delta * self.scales * (1 - np.tanh(self.x) ** 2)
            delta[:] = d * (1.5 if self.broken == "x0" else 1.0)


@pytest.mark.parametrize("broken", ["", "x0", "scales"])
def test_a_darknet_backward_writing_into_its_argument(broken):
    res = gradcheck.check_layer(_Darknet(broken), np.random.default_rng(26).standard_normal((4, 3)))
    _verdict(res, broken or None)
    assert any("reads the output gradient from delta" in n for n in res.notes), res.notes


# -- a layer used as a pair of functions: (y, cache) = forward(x); backward(dout, cache) -----
class _Paired:
    """Two weights of one shape listed by ``get_params()``; the backward returns
    ``(dx, (dW, dU), state)`` (younesslanda's LSTM-Numpy)."""

    def __init__(self, broken: bool, cache_is_input: bool = False):
        rng = np.random.default_rng(27)
        self.W, self.U = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
        self.broken, self.cache_is_input = broken, cache_is_input

    def get_params(self):
        return (self.W, self.U)

    def forward(self, x):
        y = np.tanh(x @ self.W) @ self.U
        return y, (x if self.cache_is_input else (x, np.tanh(x @ self.W)))

    def backward(self, deltas, cache):
        x = cache if self.cache_is_input else cache[0]
        h = np.tanh(x @ self.W)
        dU = h.T @ deltas
        dz = (deltas @ self.U.T) * (1 - h ** 2)
        dW = x.T @ dz * (1.5 if self.broken else 1.0)
        return dz @ self.W.T, (dW, dU), (dz, h)


@pytest.mark.parametrize("cache_is_input", [False, True])
@pytest.mark.parametrize("broken", [False, True])
def test_a_layer_used_as_a_pair_of_functions(broken, cache_is_input):
    res = gradcheck.check_layer(_Paired(broken, cache_is_input),
                                np.random.default_rng(28).standard_normal((4, 3)))
    _verdict(res, "W" if broken else None)
    assert any("takes (dout, cache)" in n for n in res.notes), res.notes


# -- the inputs again under other names, the order found by trial ----------------------------
class _Renamed:
    """``forward(img)``, ``backward(inputs, prev_grad)`` returning ``(dx, dk, db)``
    (v0lta's ConvLayer); ``per_position``: a bias gradient left unsummed."""

    def __init__(self, broken: str = ""):
        rng = np.random.default_rng(29)
        self.kernel, self.bias = rng.standard_normal((3, 2)), rng.standard_normal((1, 2))
        self.broken = broken

    def forward(self, img):
        return np.tanh(img @ self.kernel) + self.bias

    def backward(self, inputs, prev_grad):
        dz = prev_grad * (1 - np.tanh(inputs @ self.kernel) ** 2)
        db = prev_grad if self.broken == "bias" else prev_grad.sum(0, keepdims=True)
        dk = inputs.T @ dz * (1.5 if self.broken == "kernel" else 1.0)
        return dz @ self.kernel.T, dk, db


@pytest.mark.parametrize("broken", ["", "kernel"])
def test_a_backward_taking_the_inputs_again_under_other_names(broken):
    res = gradcheck.check_layer(_Renamed(broken), np.random.default_rng(30).standard_normal((4, 3)))
    _verdict(res, broken or None)
    assert any("called as (x0, dout)" in n for n in res.notes), res.notes


def test_a_flat_item_fitting_no_array_is_the_last_arrays_wrong_gradient():
    res = gradcheck.check_layer(_Renamed("bias"), np.random.default_rng(30).standard_normal((4, 3)))
    assert res.status == "shape-mismatch" and "bias" in res.message, res.report()


# -- from a second review and a fourth corpus --------------------------------------------------
class _Dense:
    def __init__(self, n: int = 3, m: int = 2, seed: int = 31):
        rng = np.random.default_rng(seed)
        self.W, self.b = rng.standard_normal((n, m)), np.zeros(m)
        self.dW, self.db = np.zeros((n, m)), np.zeros(m)

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b


class _TypoDw(_Dense):
    def backward(self, dout):  # dW never written: an optimizer reading it moves nothing
        self.dw, self.db = self.x.T @ dout, dout.sum(0)
        return dout @ self.W.T


def test_a_gradient_spelled_in_another_case_beside_the_stale_one_is_not_read():
    res = gradcheck.check_layer(_TypoDw(), np.random.default_rng(32).standard_normal((4, 3)))
    assert not res.passed and res.status == "mismatch", res.report()


class _Cell:
    """``(h, (h, c))``: a second output, not a cache; the backward takes its gradient."""

    def __init__(self, broken: bool):
        self.W, self.broken = np.random.default_rng(33).standard_normal((3, 3)), broken

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W)
        return self.h * 2.0, (self.h, 0.5 * self.h)

    def backward(self, dy, dstate):
        dh, dc = dstate
        extra = 0 if self.broken else dh + 0.5 * dc
        dz = (dy * 2.0 + extra) * (1 - self.h ** 2)
        self.dW = self.x.T @ dz
        return dz @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_second_output_held_in_a_tuple_is_no_cache(broken):
    res = gradcheck.check_layer(_Cell(broken), np.random.default_rng(34).standard_normal((4, 3)))
    assert res.passed != broken, res.report()
    assert not any("takes (dout, cache)" in n for n in res.notes), res.notes


class _IntKeyed:
    def __init__(self, broken: bool):
        rng = np.random.default_rng(35)
        self.params = {np.int64(0): rng.standard_normal((3, 2)), np.int64(1): np.zeros(2)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.params[0] + self.params[1]

    def backward(self, dout):
        self.grads[np.int64(0)][...] = self.x.T @ dout
        self.grads[np.int64(1)][...] = dout.sum(0) * (2.0 if self.broken else 1.0)
        return dout @ self.params[0].T


@pytest.mark.parametrize("broken", [False, True])
def test_numpy_integer_dict_keys_are_paths(broken):
    res = gradcheck.check_layer(_IntKeyed(broken),
                                np.random.default_rng(36).standard_normal((4, 3)))
    _verdict(res, "params[1]" if broken else None)


class _ObjectKeyed:
    def __init__(self):
        self.key = object()
        self.params = {self.key: np.random.default_rng(35).standard_normal((3, 2))}

    def forward(self, x):
        self.x = x
        return x @ self.params[self.key]

    def backward(self, dout):
        self.grads = {self.key: self.x.T @ dout}
        return dout @ self.params[self.key].T


def test_float_arrays_under_keys_no_path_can_name_are_refused():
    layer = _ObjectKeyed()
    with pytest.raises(gradcheck.LayerConventionError, match="keys a path cannot name"):
        gradcheck.check_layer(layer, np.random.default_rng(36).standard_normal((4, 3)))


class _Masked(_Dense):
    """MADE-style: the forward builds ``W * mask``; correct."""

    def forward(self, x):
        self.mask = np.tril(np.ones_like(self.W))
        self.W_masked, self.x = self.W * self.mask, x
        return x @ self.W_masked + self.b

    def backward(self, dout):
        self.dW_masked = self.x.T @ dout
        self.dW, self.db = self.dW_masked * self.mask, dout.sum(0)
        return dout @ self.W_masked.T


def test_an_array_built_from_the_weights_is_not_drawn_anew():
    x = np.random.default_rng(37).standard_normal((4, 3))
    assert gradcheck.check_layer(_Masked(), x).passed


class _FirstSquare(_Dense):
    def backward(self, dout):  # a first layer: no input gradient
        self.dW, self.db = self.x.T @ dout, dout.sum(0)


def test_a_first_layer_whose_weight_has_the_inputs_shape():
    x = np.random.default_rng(38).standard_normal((3, 3))
    res = gradcheck.check_layer(_FirstSquare(3, 3), x)
    assert res.passed and res.inputs[0].status == "constant", res.report()


class _StoredDx(_Dense):
    def __init__(self, transposed: bool):
        super().__init__()
        self.transposed = transposed

    def backward(self, dout):
        self.dW, self.db = self.x.T @ dout, dout.sum(0)
        self.dx = (dout @ self.W.T).T if self.transposed else dout @ self.W.T


@pytest.mark.parametrize("transposed", [False, True])
def test_a_stored_input_gradient_of_another_shape_is_a_shape_mismatch(transposed):
    res = gradcheck.check_layer(_StoredDx(transposed),
                                np.random.default_rng(39).standard_normal((4, 3)))
    if transposed:
        assert res.status == "shape-mismatch" and "x0" in res.message, res.report()
    else:
        assert res.passed and res.inputs[0].status == "ok", res.report()


class _StepThenDx(_Dense):
    def __init__(self, after: bool):
        super().__init__()
        self.after = after

    def backward(self, dout, lr):
        dx = dout @ self.W.T
        self.W -= lr * (self.x.T @ dout)
        self.b -= lr * dout.sum(0)
        return dout @ self.W.T if self.after else dx


@pytest.mark.parametrize("after", [False, True])
def test_an_input_gradient_computed_after_the_step(after):
    x = np.random.default_rng(40).standard_normal((4, 3))
    res = gradcheck.check_layer(_StepThenDx(after), x)
    _verdict(res, "x0" if after else None)


class _Bilinear:
    """``forward(x, y)`` whose backward returns ``(dW, dy, dx)``."""

    def __init__(self, broken: bool):
        self.W, self.broken = np.random.default_rng(41).standard_normal((3, 2)), broken

    def forward(self, x, y):
        self.x, self.y = x, y
        return (x @ self.W) * y

    def backward(self, dout):
        g = dout * self.y
        dy = (self.x @ self.W) * dout * (1.5 if self.broken else 1.0)
        return self.x.T @ g, dy, g @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_flat_tuple_with_the_inputs_out_of_order(broken):
    # (dW, dy, dx): the weight's item is read by shape, the inputs' order is no evidence
    rng = np.random.default_rng(42)
    res = gradcheck.check_layer(_Bilinear(broken), rng.standard_normal((4, 3)),
                                rng.standard_normal((4, 2)))
    assert res.status == "bad-protocol" and "another order" in res.message, res.report()


def test_a_list_of_alike_weights_does_not_pair_by_place():
    layer = _Nielsen(False)
    layer.weights[1] = np.random.default_rng(43).standard_normal((5, 5))
    layer.weights[0] = np.random.default_rng(44).standard_normal((5, 5))
    layer.nabla_w = [np.zeros((5, 5)), np.zeros((5, 5))]
    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(layer, np.random.default_rng(45).standard_normal((4, 5)))


# -- from a fifth corpus ------------------------------------------------------------------------
class _NeedsSetup:
    """A per-sample loss whose ``calculate()`` (its mean) raises until ``new_pass()``."""

    def __init__(self, mean: bool):
        self.mean = mean

    def calculate(self, output, y):
        losses = self.forward_pass(output, y)
        self.total += np.sum(losses)  # AttributeError before new_pass()
        return np.mean(losses)

    def new_pass(self):
        self.total = 0.0

    def forward_pass(self, y_pred, y_true):
        return -np.log(y_pred[range(len(y_pred)), y_true])

    def backward_pass(self, dvalues, y_true):
        n = len(dvalues) if self.mean else 1
        self.dinputs = -np.eye(dvalues.shape[1])[y_true] / dvalues / n


@pytest.mark.parametrize("mean", [True, False])
def test_a_reduction_that_cannot_be_observed_gives_no_verdict(mean):
    e = np.exp(np.random.default_rng(46).standard_normal((4, 5)))
    p, labels = e / e.sum(1, keepdims=True), np.array([0, 3, 1, 4])
    res = gradcheck.check_layer(_NeedsSetup(mean), p, labels)
    assert res.status == "bad-protocol", res.report()
    assert "calculate() runs the forward, then raised" in res.message, res.message
    ready = _NeedsSetup(mean)
    ready.new_pass()
    _verdict(gradcheck.check_layer(ready, p, labels), None if mean else "x0")


class _Pool:
    """``backward`` returning ``(dx, 0, 0)``: placeholders for parameters it has none of."""

    def __init__(self, broken: bool, placeholder=0):
        self.broken, self.placeholder = broken, placeholder

    def forward(self, x):
        self.x = x
        return x.reshape(x.shape[0], -1, 2).max(axis=2)

    def backward(self, dA):
        r = self.x.reshape(self.x.shape[0], -1, 2)
        mask = r == r.max(axis=2, keepdims=True)
        dx = (mask * dA[:, :, None]).reshape(self.x.shape) * (0.5 if self.broken else 1.0)
        return dx, self.placeholder, self.placeholder


@pytest.mark.parametrize("placeholder", [0, None])
@pytest.mark.parametrize("broken", [False, True])
def test_placeholders_beside_the_input_gradient(broken, placeholder):
    res = gradcheck.check_layer(_Pool(broken, placeholder),
                                np.random.default_rng(47).standard_normal((3, 4)))
    _verdict(res, "x0" if broken else None)


class _NormStep:
    """A batch-norm taking its own step on float32 ``gamma``/``beta`` (Mrk113): a uniform
    output gradient moves ``gamma`` by nothing, so the step is read from an uneven one."""

    def __init__(self, dtype, broken: bool):
        self.gamma, self.beta = np.ones((1, 4), dtype), np.zeros((1, 4), dtype)
        self.broken = broken

    def forward(self, x):
        xc = x - x.mean(0, keepdims=True)
        self.inv = 1 / np.sqrt((xc * xc).mean(0, keepdims=True) + 1e-5)
        self.xn = xc * self.inv
        return self.xn * self.gamma + self.beta

    def backward(self, d, learning_rate):
        n, dxn = d.shape[0], d * self.gamma
        dx = self.inv / n * (n * dxn - dxn.sum(0, keepdims=True)
                             - self.xn * (dxn * self.xn).sum(0, keepdims=True))
        g = (d * (self.xn if not self.broken else 1.0)).sum(0, keepdims=True)
        self.gamma -= learning_rate * g
        self.beta -= learning_rate * d.sum(0, keepdims=True)
        return dx


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("broken", [False, True])
def test_a_step_on_float32_weights_is_read(dtype, broken):
    res = gradcheck.check_layer(_NormStep(dtype, broken),
                                np.random.default_rng(48).standard_normal((6, 4)))
    _verdict(res, "gamma" if broken else None)


@dataclass
class _Cache:
    A_prev: np.ndarray
    W: np.ndarray
    Z: np.ndarray


def _lin_act_forward(A_prev, W, activation):
    Z = W @ A_prev
    return (np.tanh(Z) if activation == "tanh" else Z), _Cache(A_prev, W, Z)


@pytest.mark.parametrize("broken", [False, True])
def test_check_vjp_a_dataclass_cache_then_an_input_by_name(broken):
    def backward(dA, cache, activation):
        dZ = dA * (1 - np.tanh(cache.Z) ** 2) if activation == "tanh" else dA
        dW = dZ @ cache.A_prev.T / (cache.A_prev.shape[1] if broken else 1)
        return cache.W.T @ dZ, dW, None

    rng = np.random.default_rng(49)
    res = gradcheck.check_vjp(_lin_act_forward, backward,
                              [rng.standard_normal((3, 4)), rng.standard_normal((2, 3)), "tanh"])
    if broken:
        assert res.status == "mismatch" and not res.inputs[1].passed, res.report()
    else:
        assert res.passed, res.report()


class _ConvNoBias:
    """``return dA_prev, dW, 0`` with ``self.dW = dW`` stored: placeholders and stored
    gradients beside the input gradient (LennartBra's Convolutional)."""

    def __init__(self, broken: bool):
        self.W, self.broken = np.random.default_rng(50).standard_normal((3, 2)), broken

    def forward(self, x):
        self.x = x
        return np.tanh(x @ self.W)

    def backward(self, dA):
        dz = dA * (1 - np.tanh(self.x @ self.W) ** 2)
        self.dW = self.x.T @ (dz if not self.broken else dA)
        return dz @ self.W.T, self.dW, 0


@pytest.mark.parametrize("broken", [False, True])
def test_a_placeholder_beside_a_stored_gradient(broken):
    res = gradcheck.check_layer(_ConvNoBias(broken),
                                np.random.default_rng(51).standard_normal((4, 3)))
    _verdict(res, "W" if broken else None)


# -- from a third review ------------------------------------------------------------------------
class _Carry:
    """``backward(dh)`` adding a carry the forward left zero into its argument, then
    storing ``dW`` and ``dinputs`` from it: an ordinary backward, no darknet slot."""

    def __init__(self, broken: bool):
        self.W, self.broken = np.random.default_rng(52).standard_normal((3, 3)), broken

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W)
        self.dh_next = np.zeros_like(self.h)
        return self.h

    def backward(self, dh):
        dh += self.dh_next
        dz = dh * (1 - self.h ** 2)
        self.dW = self.x.T @ dz
        self.dinputs = (dz if not self.broken else dh) @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_backward_reading_its_argument_is_no_darknet_slot(broken):
    res = gradcheck.check_layer(_Carry(broken), np.random.default_rng(53).standard_normal((4, 3)))
    if broken:
        assert not res.passed, res.report()
    else:
        assert res.passed, res.report()
    assert not any("writes the input gradient into its argument" in n for n in res.notes)


class _ReluPair:
    """cs231n-style methods: ``forward`` returns ``(out, x)``, ``backward(dout, cache)``
    uses the cache as a mask only (its result does not scale with it)."""

    def __init__(self, broken: bool):
        self.broken = broken

    def forward(self, x):
        return np.maximum(x, 0), x

    def backward(self, dout, cache):
        return dout * ((cache > 0) if not self.broken else (cache < 0))


@pytest.mark.parametrize("broken", [False, True])
def test_a_cache_used_as_a_mask_only(broken):
    x = np.random.default_rng(54).standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5
    _verdict(gradcheck.check_layer(_ReluPair(broken), x), "x0" if broken else None)


class _Skip:
    """``forward`` returns ``(out, x)``, a skip; ``backward(dvalues, dskip)`` returns
    None and stores its gradients (the skip's gradient must be added)."""

    def __init__(self, broken: bool):
        self.W, self.broken = np.random.default_rng(55).standard_normal((3, 3)), broken

    def forward(self, x):
        self.x = x
        return np.tanh(x @ self.W), x

    def backward(self, dvalues, dskip):
        dz = dvalues * (1 - np.tanh(self.x @ self.W) ** 2)
        self.dW = self.x.T @ dz
        self.dinputs = dz @ self.W.T + (0 if self.broken else dskip)


@pytest.mark.parametrize("broken", [False, True])
def test_a_skip_output_is_no_cache(broken):
    res = gradcheck.check_layer(_Skip(broken), np.random.default_rng(56).standard_normal((4, 3)))
    _verdict(res, "x0" if broken else None)


class _Leaky:
    """``backward(dout, inp)``: the input again under another name, read as a mask."""

    def __init__(self, broken: bool):
        self.broken = broken

    def forward(self, x):
        return np.where(x > 0, x, 0.1 * x)

    def backward(self, dout, inp):
        return dout * np.where(inp > 0, 1.0, 0.1 if not self.broken else 0.2)


@pytest.mark.parametrize("broken", [False, True])
def test_a_mask_argument_is_no_step_size(broken):
    x = np.random.default_rng(57).standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5
    _verdict(gradcheck.check_layer(_Leaky(broken), x), "x0" if broken else None)


def test_check_vjp_a_cache_used_as_a_mask_then_inputs_by_name():
    def fwd(x, W):
        z = x @ W
        return np.maximum(z, 0), (z > 0, z)

    def bwd(dout, cache, x, W):
        mask, _ = cache
        dz = dout * mask
        return dz @ W.T, x.T @ dz

    rng = np.random.default_rng(58)
    res = gradcheck.check_vjp(fwd, bwd, [rng.standard_normal((4, 3)), rng.standard_normal((3, 2))])
    assert res.passed, res.report()


class _MSEByName:
    def forward(self, y_pred, y_true):
        self.d = y_pred - y_true
        return np.mean(self.d ** 2)

    def backward(self):
        return 2 * self.d / self.d.size


@pytest.mark.parametrize("wrt", [["y_pred"], "y_pred", ["x0"], [0]])
def test_wrt_takes_the_forwards_argument_names(wrt):
    rng = np.random.default_rng(59)
    res = gradcheck.check_layer(_MSEByName(), rng.standard_normal((3, 2)),
                                rng.standard_normal((3, 2)), wrt=wrt)
    assert res.passed and [i.status for i in res.inputs] == ["ok", "constant"], res.report()


# -- from a fourth review -----------------------------------------------------------------------
class _FinalState:
    """``forward`` returns ``(hs, (h, c))`` like torch's LSTM; ``backward(dhs, final)``
    must take the final state's gradient (``ignore``: it drops it, a bug)."""

    def __init__(self, ignore: bool, grads_first: bool = False):
        rng = np.random.default_rng(60)
        self.W, self.V = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
        self.ignore, self.grads_first = ignore, grads_first

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W)
        return self.h, (self.h @ self.V, self.h)

    def backward(self, dhs, final):
        dc, dh2 = final
        dV = self.h.T @ dc
        dh = dhs + (0 if self.ignore else dc @ self.V.T + dh2)
        dz = dh * (1 - self.h ** 2)
        dx, dW = dz @ self.W.T, self.x.T @ dz
        return ([dW, dV], dx) if self.grads_first else (dx, [dW, dV])


@pytest.mark.parametrize("grads_first", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
def test_a_final_state_is_no_cache(ignore, grads_first):
    res = gradcheck.check_layer(_FinalState(ignore, grads_first),
                                np.random.default_rng(61).standard_normal((4, 3)))
    assert res.passed != ignore, res.report()
    assert not any("takes (dout, cache)" in n for n in res.notes), res.notes


class _KeepsCache:
    """A pair whose backward keeps what it unpacks from the cache (``self.x``)."""

    def __init__(self, broken: bool):
        self.W, self.broken = np.random.default_rng(62).standard_normal((3, 2)), broken

    def forward(self, x):
        return np.tanh(x @ self.W), (x, self.W)

    def backward(self, dout, cache):
        self.x, W = cache
        dz = dout * (1 - np.tanh(self.x @ W) ** 2)
        self.dW = self.x.T @ (dz if not self.broken else dout)
        return dz @ W.T


@pytest.mark.parametrize("broken", [False, True])
def test_a_pair_whose_backward_keeps_the_cache(broken):
    res = gradcheck.check_layer(_KeepsCache(broken),
                                np.random.default_rng(63).standard_normal((4, 3)))
    _verdict(res, "W" if broken else None)


class _FlatDelta(_Dense):
    """Stores the input gradient flat, ``self.delta`` (N, C*H*W) for a 4-d input."""

    def forward(self, x):
        self.x = x
        return x.reshape(len(x), -1) @ self.W + self.b

    def backward(self, dout):
        self.dW, self.db = self.x.reshape(len(self.x), -1).T @ dout, dout.sum(0)
        self.delta = dout @ self.W.T


def test_an_input_gradient_stored_flat_under_another_name_is_no_first_layer():
    x = np.random.default_rng(64).standard_normal((2, 1, 3, 3))
    res = gradcheck.check_layer(_FlatDelta(9, 2), x)
    assert not res.passed and "delta" in res.message, res.report()


class _CallMean:
    """A per-sample loss whose ``__call__`` runs the forward and returns the mean."""

    def __init__(self, mean: bool):
        self.mean = mean

    def __call__(self, y_pred, y_true):
        return np.mean(self.forward(y_pred, y_true))

    def forward(self, y_pred, y_true):
        self.d = y_pred - y_true
        return (self.d ** 2).sum(1)

    def backward(self):
        return 2 * self.d / (len(self.d) if self.mean else 1)


@pytest.mark.parametrize("mean", [True, False])
def test_a_mean_returned_by_call(mean):
    rng = np.random.default_rng(65)
    res = gradcheck.check_layer(_CallMean(mean), rng.standard_normal((4, 3)),
                                rng.standard_normal((4, 3)), wrt=["x0"])
    _verdict(res, None if mean else "x0")


class _AdamStep(_Dense):
    """Takes an Adam step itself: minus the change is no gradient (the first step's
    size does not double with the gradient)."""

    def backward(self, dout, learning_rate):
        dx, g = dout @ self.W.T, self.x.T @ dout
        self.W -= learning_rate * g / (np.abs(g) + 1e-8)
        self.b -= learning_rate * np.sign(dout.sum(0))
        return dx


def test_an_adam_step_is_not_read_as_minus_the_gradient():
    res = gradcheck.check_layer(_AdamStep(), np.random.default_rng(66).standard_normal((4, 3)))
    assert not res.passed and res.status not in ("mismatch", "shape-mismatch"), res.report()


# -- from a sixth corpus ------------------------------------------------------------------------
class _TanhByOutput:
    """``backward(grad, output)``: the forward's output again, which a trial cannot tell
    from its input (both orders are linear in the gradient, with different results)."""

    def forward(self, x):
        self.y = np.tanh(x)
        return self.y

    def backward(self, grad, output):
        return grad * (1 - output ** 2)


def test_an_argument_that_could_be_the_input_or_the_output_gives_no_verdict():
    res = gradcheck.check_layer(_TanhByOutput(), np.random.default_rng(67).standard_normal((3, 4)))
    assert not res.passed and res.status not in ("mismatch", "shape-mismatch"), res.report()


class _TargetsBackward:
    """``backward(y_target)`` of a sigmoid output trained with BCE: ``A - y``, affine in
    its argument, is a loss's gradient, not a vector-Jacobian product."""

    def __init__(self):
        self.W = np.random.default_rng(68).standard_normal((3, 1))

    def forward(self, x):
        self.x, self.A = x, 1 / (1 + np.exp(-(x @ self.W)))
        return self.A

    def backward(self, y_target):
        dz = self.A - y_target
        self.dW = self.x.T @ dz
        return dz @ self.W.T


def test_a_backward_affine_in_its_argument_takes_no_output_gradient():
    res = gradcheck.check_layer(_TargetsBackward(),
                                np.random.default_rng(69).standard_normal((4, 3)))
    assert res.status == "bad-protocol" and "not linear" in res.message, res.report()


# -- from a seventh and eighth corpus -----------------------------------------------------------
class _Reversed:
    """``forward(x, h)`` whose backward returns ``(dh, dx)``."""

    def __init__(self, broken: bool, same: bool = False):
        rng = np.random.default_rng(70)
        self.W = rng.standard_normal((3, 2 if same else 4))
        self.broken = broken

    def forward(self, x, h):
        self.x, self.h = x, h
        return np.tanh(x @ self.W + h)

    def backward(self, dout):
        dz = dout * (1 - np.tanh(self.x @ self.W + self.h) ** 2)
        self.dW = self.x.T @ dz
        return dz * (2.0 if self.broken else 1.0), dz @ self.W.T


@pytest.mark.parametrize("broken", [False, True])
def test_input_gradients_with_the_inputs_shapes_in_another_order(broken):
    # a reversed return and each gradient computed with the other's weights look alike
    rng = np.random.default_rng(71)
    res = gradcheck.check_layer(_Reversed(broken), rng.standard_normal((2, 3)),
                                rng.standard_normal((2, 4)))
    assert res.status == "bad-protocol" and "another order" in res.message, res.report()


class _Mul:
    """``forward(x1, x2)``: 1-based argument names; x1 in wrt= is still the second input."""

    def forward(self, x1, x2):
        self.a, self.b = x1, x2
        return x1 * x2

    def backward(self, dout):
        return dout * self.b, 2 * dout * self.a  # the second is wrong


def test_wrt_names_of_the_inputs_win_over_argument_names_alike():
    rng = np.random.default_rng(75)
    res = gradcheck.check_layer(_Mul(), rng.standard_normal((2, 3)), rng.standard_normal((2, 3)),
                                wrt=["x0", "x1"])
    assert res.status == "mismatch" and not res.inputs[1].passed, res.report()


def test_input_gradients_in_an_order_the_shapes_cannot_tell():
    rng = np.random.default_rng(72)
    layer = _Reversed(False, same=True)
    res = gradcheck.check_layer(layer, rng.standard_normal((2, 3)), rng.standard_normal((2, 2)))
    assert res.passed or res.status == "bad-protocol", res.report()
    x = rng.standard_normal((3, 3))
    layer.W = rng.standard_normal((3, 3))
    res = gradcheck.check_layer(layer, x, rng.standard_normal((3, 3)))
    assert not res.passed, res.report()


class _L2Arg(_Dense):
    """``backward(inp_grad, reg_lambda=0)``: an L2 coefficient, not a step size."""

    def backward(self, inp_grad, reg_lambda=0):
        self.dW = self.x.T @ inp_grad + reg_lambda * self.W
        self.db = inp_grad.sum(0)
        return inp_grad @ self.W.T


def test_a_regularisation_argument_is_no_step_size():
    res = gradcheck.check_layer(_L2Arg(), np.random.default_rng(73).standard_normal((4, 3)))
    assert res.passed, res.report()


# -- check_loss: a loss returning one gradient per float argument -------------------------------
def _softmax_loss(center, outside_idx, outside, broken=False):
    scores = outside @ center
    p = np.exp(scores - scores.max())
    p /= p.sum()
    loss = -np.log(p[outside_idx])
    d = p.copy()
    d[outside_idx] -= 1
    return loss, outside.T @ d, np.outer(d, center) * (1.5 if broken else 1.0)


@pytest.mark.parametrize("broken", [False, True])
def test_check_loss_a_gradient_per_float_argument(broken):
    rng = np.random.default_rng(74)

    def fn(center, idx, outside):
        return _softmax_loss(center, idx, outside, broken)

    res = gradcheck.check_loss(fn, rng.standard_normal(3), 2, rng.standard_normal((5, 3)))
    _verdict(res, "x2" if broken else None)
    assert [i.name for i in res.inputs if i.status in ("ok", "mismatch")] == ["x0", "x2"]


# -- from a sixth review ------------------------------------------------------------------------
class _ReturnsWeights(_Dense):
    """Stores correct gradients but returns ``(dx, self.W, self.b)``: a caller unpacking
    the return steps along the weights themselves."""

    def backward(self, dout):
        self.dW, self.db = self.x.T @ dout, dout.sum(0)
        return dout @ self.W.T, self.W, self.b


def test_returned_weights_are_no_stored_gradients():
    x = np.random.default_rng(76).standard_normal((4, 3))
    res = gradcheck.check_layer(_ReturnsWeights(), x)
    assert not res.passed, res.report()


class _ForgetsDh:
    """``forward(x, h)`` storing ``self.dx`` and the weights' gradients, no ``dh``."""

    def __init__(self):
        rng = np.random.default_rng(77)
        self.Wx, self.Wh = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))

    def forward(self, x, h):
        self.x, self.h = x, h
        self.a = np.tanh(x @ self.Wx + h @ self.Wh)
        return self.a

    def backward(self, dout):
        dz = dout * (1 - self.a ** 2)
        self.dWx, self.dWh = self.x.T @ dz, self.h.T @ dz
        self.dx = dz @ self.Wx.T


def test_an_input_gradient_computed_and_another_forgotten_is_no_first_layer():
    rng = np.random.default_rng(78)
    res = gradcheck.check_layer(_ForgetsDh(), rng.standard_normal((4, 3)),
                                rng.standard_normal((4, 2)))
    assert not res.passed, res.report()


class _GradsBox(_Dense):
    """``self.grads = {'W': ..., 'b': ...}`` buffers an optimizer reads; ``key``: where the
    backward writes the bias gradient (``'b'``, correct; ``'db'``, a stale buffer)."""

    def __init__(self, key: str):
        super().__init__()
        del self.dW, self.db  # no other buffers
        self.grads, self.key = {"W": np.zeros_like(self.W), "b": np.zeros_like(self.b)}, key

    def backward(self, dout):
        self.grads["W"] = self.x.T @ dout
        self.grads[self.key] = dout.sum(0)
        return dout @ self.W.T


@pytest.mark.parametrize("key", ["b", "db"])
def test_a_gradient_written_beside_its_stale_buffer(key):
    res = gradcheck.check_layer(_GradsBox(key), np.random.default_rng(79).standard_normal((4, 3)))
    _verdict(res, "b" if key == "db" else None)


class _PaddedConv:
    """A 1-d convolution whose backward stores the padded input gradient (``dx_pad``),
    uncropped, under a name of its own (``alias``: also as ``self.dx``)."""

    def __init__(self, alias: bool):
        self.w, self.alias = np.array([0.5, -1.0, 0.25]), alias

    def forward(self, x):
        self.xp = np.pad(x, ((0, 0), (1, 1)))
        return np.stack([self.xp[:, i:i + 3] @ self.w for i in range(x.shape[1])], axis=1)

    def backward(self, dout):
        self.dw = sum(self.xp[:, i:i + 3].T @ dout[:, i] for i in range(dout.shape[1]))
        self.dx_pad = np.zeros_like(self.xp)
        for i in range(dout.shape[1]):
            self.dx_pad[:, i:i + 3] += np.outer(dout[:, i], self.w)
        if self.alias:
            self.dx = self.dx_pad  # never cropped: no input's gradient


@pytest.mark.parametrize("alias", [False, True])
def test_an_unclaimed_array_moving_with_dout_is_no_first_layer(alias):
    x = np.random.default_rng(80).standard_normal((2, 6))
    res = gradcheck.check_layer(_PaddedConv(alias), x)
    assert not res.passed, res.report()
