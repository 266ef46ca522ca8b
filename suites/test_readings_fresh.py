"""Readings by observation found on held-out code (corpora 177 on): each with a correct
subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- a block returning dx beside a nested dict of what its sub-layers stored ----------------
class _Norm:
    def __init__(self, n):
        self.gamma, self.beta = np.linspace(0.5, 1.5, n), np.linspace(-0.2, 0.2, n)

    def forward(self, x):
        self.x = x
        return self.gamma * x + self.beta

    def backward(self, g):
        self.grad_gamma = (g * self.x).sum(0)
        self.grad_beta = g.sum(0)
        return g * self.gamma, self.grad_gamma, self.grad_beta


class _Lin:
    def __init__(self, n, m, seed):
        self.weight = np.random.default_rng(seed).standard_normal((n, m))

    def forward(self, x):
        self.x = x
        return x @ self.weight

    def backward(self, g):
        self.grad_weight = self.x.T @ g
        return g @ self.weight.T, (self.grad_weight,)


class _Block:
    """``forward(x, mask=None)``; ``backward(g)`` returns ``dx`` and ``{"norm": (dgamma,
    dbeta), "ff": (dW,)}``, the very arrays its sub-layers store. Twin: the residual
    branch's gradient dropped."""

    def __init__(self, bug=False):
        self.ff, self.norm, self.bug = _Lin(3, 3, 600), _Norm(3), bug

    def forward(self, x, mask=None):
        return self.norm.forward(x + self.ff.forward(x))

    def backward(self, g):
        dz, dgamma, dbeta = self.norm.backward(g)
        dx_ff, ff_grads = self.ff.backward(dz)
        dx = dx_ff if self.bug else dz + dx_ff
        return dx, {"norm": (dgamma, dbeta), "ff": ff_grads}


class _TwoInputBlock(_Block):
    """``forward(x, memory)`` and ``backward(g)`` returning ``dx, dmemory, {...}``."""

    def forward(self, x, memory):
        self.memory = memory
        return super().forward(x) * memory

    def backward(self, g):
        dx, grads = super().backward(g * self.memory)
        return dx, g * self.norm.forward(self.norm.x), grads


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_a_nested_dict_of_what_sub_layers_stored_beside_dx_is_read_where_stored(bug, names):
    x = np.random.default_rng(601).standard_normal((4, 3))
    res = gradcheck.check_layer(_Block(bug), x)
    _expect(res, names)
    assert res.coverage == "checked 4/4 tensors", res.report()


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_two_input_gradients_then_a_dict_of_stored_ones(bug, names):
    r = np.random.default_rng(602)
    res = gradcheck.check_layer(_TwoInputBlock(bug), r.standard_normal((4, 3)),
                                r.standard_normal((4, 3)))
    _expect(res, names)


# -- an element-wise derivative written as the Jacobian ------------------------------------
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _sigmoid_jacobian(z, bug=False):
    y = _sigmoid(z)
    return np.diag(y if bug else y * (1 - y))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _softmax_jacobians(x, bug=False):
    s = _softmax(x)
    diag = np.einsum("bi,ij->bij", s, np.eye(s.shape[1]))
    return diag if bug else diag - np.einsum("bi,bj->bij", s, s)


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_a_derivative_returned_as_the_jacobian_of_a_vector(bug, names):
    z = np.random.default_rng(603).standard_normal(6)
    res = gradcheck.check_elementwise(_sigmoid, lambda v: _sigmoid_jacobian(v, bug), z)
    _expect(res, names)
    assert any("Jacobian (6, 6)" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_a_softmax_derivative_as_one_jacobian_per_row(bug, names):
    x = np.random.default_rng(604).standard_normal((3, 4))
    _expect(gradcheck.check_elementwise(_softmax, lambda v: _softmax_jacobians(v, bug), x),
            names)


def test_a_derivative_of_neither_shape_is_still_a_shape_mismatch():
    z = np.random.default_rng(605).standard_normal(6)
    res = gradcheck.check_elementwise(_sigmoid, lambda v: np.ones((6, 5)), z)
    assert res.status == "shape-mismatch", res.report()


# -- a model whose loss(X, y) returns (loss, grads), cs231n's TwoLayerNet ------------------
class _TwoLayerNet:
    """``params`` W1, b1, W2, b2; ``loss(X, y=None)`` returns the scores without labels,
    ``(loss, grads)`` with them; no other method. Twin: the ReLU mask dropped."""

    def __init__(self, bug=False):
        r = np.random.default_rng(606)
        self.params = {"W1": r.standard_normal((4, 5)), "b1": r.standard_normal(5),
                       "W2": r.standard_normal((5, 3)), "b2": np.zeros(3)}
        self.bug = bug

    def loss(self, X, y=None, reg=0.0):
        p = self.params
        h = np.maximum(0, X @ p["W1"] + p["b1"])
        scores = h @ p["W2"] + p["b2"]
        if y is None:
            return scores
        e = np.exp(scores - scores.max(1, keepdims=True))
        prob = e / e.sum(1, keepdims=True)
        n = X.shape[0]
        loss = -np.log(prob[np.arange(n), y]).mean()
        ds = prob.copy()
        ds[np.arange(n), y] -= 1
        ds /= n
        dh = ds @ p["W2"].T
        dh = dh if self.bug else dh * (h > 0)
        return loss, {"W1": X.T @ dh, "b1": dh.sum(0), "W2": h.T @ ds, "b2": ds.sum(0)}


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["W1", "b1"])])
def test_a_model_whose_loss_returns_the_loss_and_its_gradients(bug, names):
    r = np.random.default_rng(607)
    res = gradcheck.check_model(_TwoLayerNet(bug), r.standard_normal((6, 4)),
                                np.array([0, 1, 2, 0, 1, 2]), mode="full")
    if names is None:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch" and set(names) == {
            i.name for i in res.inputs if not i.passed}, res.report()
    assert any("cs231n" in n for n in res.notes), res.notes


# -- backward(z, grads): the input again, then the output gradient -------------------------
class _SoftmaxZG:
    """``activate(x)``; ``backward(z, grads)`` recomputes ``s = self.activate(z)``. Twin:
    the dot product summed over the batch axis."""

    def __init__(self, bug=False):
        self.bug = bug

    def activate(self, x):
        return _softmax(x)

    def backward(self, z, grads):
        s = self.activate(z)
        dot = np.sum(s * grads, axis=0 if self.bug else 1, keepdims=True)
        return s * grads - s * dot


class _SigmoidZG:
    def __init__(self, bug=False):
        self.bug = bug

    def activate(self, x):
        return _sigmoid(x)

    def backward(self, z, grads):
        s = self.activate(z)
        return grads * s * (1 - s) * (1.5 if self.bug else 1.0)


@pytest.mark.parametrize("cls", [_SoftmaxZG, _SigmoidZG])
@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_a_backward_running_the_forward_on_its_argument_takes_the_input(cls, bug, names):
    x = np.random.default_rng(608).standard_normal((4, 3))
    res = gradcheck.check_layer(cls(bug), x)
    _expect(res, names)
    assert cls is _SoftmaxZG or any("again on the input" in n for n in res.notes), res.notes


class _TanhAY:
    """``backward(a, grads)`` taking the output ``a`` (no forward call in it): which one it
    takes is not observed, and no verdict is given."""

    def activate(self, x):
        return np.tanh(x)

    def backward(self, a, grads):
        return grads * (1 - a ** 2)


def test_an_argument_the_backward_does_not_run_the_forward_on_stays_unread():
    res = gradcheck.check_layer(_TanhAY(), np.random.default_rng(609).standard_normal((4, 3)))
    assert res.status == "error", res.report()


# -- a wrong input gradient is a verdict when the parameters' cannot be read ---------------
class _FitLater:
    """The parameters' gradients are used only inside ``fit(lr, weight_decay)``, a
    sign-like step no gradient can be read from; ``backward`` keeps the output gradient
    and returns dx. Twin: dx drops a term."""

    def __init__(self, bug=False):
        self.gamma, self.beta, self.bug = np.linspace(0.5, 1.5, 3), np.zeros(3), bug

    def forward(self, x):
        self.x = x
        return np.tanh(x) * self.gamma + self.beta

    def backward(self, error):
        self.grads = error
        return error * self.gamma * (1 if self.bug else 1 - np.tanh(self.x) ** 2)

    def fit(self, lr, weight_decay):
        self.gamma -= lr * np.sign((self.grads * np.tanh(self.x)).sum(0))
        self.beta -= lr * np.sign(self.grads.sum(0))


def test_a_wrong_input_gradient_beside_unread_parameters_is_a_mismatch():
    x = np.random.default_rng(610).standard_normal((4, 3))
    res = gradcheck.check_layer(_FitLater(True), x)
    _expect(res, ["x0"])
    assert any("were not read" in n for n in res.notes), res.notes


def test_a_right_input_gradient_beside_unread_parameters_is_still_the_error():
    x = np.random.default_rng(610).standard_normal((4, 3))
    with pytest.raises(gradcheck.LayerConventionError, match="gamma"):
        gradcheck.check_layer(_FitLater(), x)


# -- gradients of one shape returned under their names, held in another order ---------------
class _BetaFirstNorm:
    """``beta`` created before ``gamma``; ``backward`` returns ``dx, dgamma, dbeta``. Twin:
    ``dgamma`` without the normalised input."""

    def __init__(self, bug=False):
        self.beta, self.gamma, self.bug = np.linspace(-0.3, 0.3, 3), np.linspace(0.5, 1.5, 3), bug

    def forward(self, x):
        self.xhat = np.tanh(x)
        self.x = x
        return self.gamma * self.xhat + self.beta

    def backward(self, dout):
        dx = dout * self.gamma * (1 - self.xhat ** 2)
        dgamma = dout.sum(0) if self.bug else (dout * self.xhat).sum(0)
        dbeta = dout.sum(0)
        return dx, dgamma, dbeta


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["gamma"])])
def test_same_shaped_gradients_are_read_by_the_names_the_code_returns(bug, names):
    x = np.random.default_rng(611).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_BetaFirstNorm(bug), x), names)


# -- a flat tuple returning a gradient for an array the forward forgot ----------------------
class _FlatLinear:
    """``backward`` returns ``dx, dW, db``; the twin's forward forgets the bias (a real
    bug: its gradient can never reach the output). With ``running``, a second array of
    the bias's shape the output does not depend on, which one ``db`` is for is not
    observed."""

    def __init__(self, forgets=False, running=False):
        r = np.random.default_rng(612)
        self.weight, self.bias = r.standard_normal((5, 3)), r.standard_normal(3)
        if running:
            self.running = np.zeros(3)
        self.forgets = forgets

    def forward(self, x):
        self.x = x
        return x @ self.weight + (0 if self.forgets else self.bias)

    def backward(self, dout):
        return dout @ self.weight.T, self.x.T @ dout, dout.sum(0)


@pytest.mark.parametrize("forgets, names", [(False, None), (True, ["bias"])])
def test_a_returned_gradient_of_an_array_the_forward_forgot_is_checked(forgets, names):
    x = np.random.default_rng(613).standard_normal((4, 5))
    res = gradcheck.check_layer(_FlatLinear(forgets), x)
    _expect(res, names)
    assert forgets == any("forward forgot" in n for n in res.notes), res.notes


def test_a_returned_gradient_fitting_two_arrays_the_output_ignores_is_not_placed():
    x = np.random.default_rng(613).standard_normal((4, 5))
    with pytest.raises(gradcheck.LayerConventionError, match="weight"):
        gradcheck.check_layer(_FlatLinear(True, running=True), x)


# -- a container returning its output wrapped in an object, its backward storing -----------
class _Tensor:
    def __init__(self, array, model=None):
        self.array, self.model = array, model


class _Params:
    def __init__(self, value):
        self.params, self.grads = value, np.zeros_like(value)


class _Dense:
    def __init__(self, n, m, seed, bug=False):
        r = np.random.default_rng(seed)
        self.W, self.b, self.bug = _Params(r.standard_normal((n, m))), _Params(np.zeros(m)), bug

    def forward(self, x):
        self.x = x
        return x @ self.W.params + self.b.params

    def _compute_gradients(self, grads):
        self.W.grads = self.x.T @ grads / (len(grads) if self.bug else 1)
        self.b.grads = grads.sum(0)
        return grads @ self.W.params.T


class _Tanh:
    def forward(self, x):
        self.out = np.tanh(x)
        return self.out

    def _compute_gradients(self, grads):
        return (1 - self.out ** 2) * grads


class _Sequential:
    """``forward`` returns ``_Tensor(out, self)``; ``compute_gradients(grads)`` runs the
    modules' backward in reverse and returns nothing. Twin: a 1/N in the first dW."""

    def __init__(self, bug=False):
        self.modules = (_Dense(3, 4, 614, bug), _Tanh(), _Dense(4, 2, 615))

    def forward(self, x):
        for m in self.modules:
            x = m.forward(x)
        return _Tensor(x, self)

    def compute_gradients(self, grads):
        for m in reversed(self.modules):
            grads = m._compute_gradients(grads)

    def zero_grad(self):
        for m in self.modules:
            for p in vars(m).values():
                if isinstance(p, _Params):
                    p.grads = np.zeros_like(p.grads)


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["modules[0].W.params"])])
def test_a_wrapped_output_and_a_backward_that_only_stores(bug, names):
    x = np.random.default_rng(616).standard_normal((3, 3))
    res = gradcheck.check_layer(_Sequential(bug), x)
    _expect(res, names)
    assert any("holding one float array, .array" in n for n in res.notes), res.notes


class _SetGrad:
    """``set_grad(g)`` keeps its argument: no backward (nothing computed)."""

    def forward(self, x):
        return 2 * x

    def set_grad(self, g):
        self.g = g


def test_a_method_keeping_its_argument_is_no_backward():
    with pytest.raises(TypeError, match="no backward-like method"):
        gradcheck.check_layer(_SetGrad(), np.ones((2, 3)))


# -- a list of float biases; a further required argument is not given None -----------------
class _L2:
    def __init__(self, lam):
        self.lam = lam

    def gradient(self, W):
        return self.lam * W


class _ScalarBiasNet:
    """``bias`` a list of floats, one per layer, ``bias_grad`` an array of their
    gradients; ``backward(op_gradient, regularizer=None)`` adds ``regularizer.gradient(W)``
    unless it is None. Twin: the bias gradient a mean, not a sum."""

    def __init__(self, bug=False):
        r = np.random.default_rng(617)
        self.W = [r.standard_normal((3, 4)), r.standard_normal((2, 3))]
        self.bias = [0.3, -0.2]
        self.Wgrad = [np.zeros((3, 4)), np.zeros((2, 3))]
        self.bias_grad = np.zeros(2)
        self.bug = bug

    def forward(self, x):
        self.ins, z = [], x
        for W, b in zip(self.W, self.bias, strict=True):
            self.ins.append(z)
            z = np.tanh(W @ z + b)
        self.outs = z
        return z

    def backward(self, op_gradient, regularizer=None):
        g = op_gradient
        for k in (1, 0):
            y = np.tanh(self.W[k] @ self.ins[k] + self.bias[k])
            dz = g * (1 - y ** 2)
            self.bias_grad[k] = np.mean(dz) if self.bug else np.sum(dz)
            self.Wgrad[k] = np.outer(dz, self.ins[k])
            if regularizer is not None:
                self.Wgrad[k] += regularizer.gradient(self.W[k])
            g = self.W[k].T @ dz


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["bias[0]", "bias[1]"])])
def test_a_list_of_float_biases_checked_item_by_item(bug, names):
    x = np.random.default_rng(618).standard_normal(4)
    _expect(gradcheck.check_layer(_ScalarBiasNet(bug), x), names)


class _NextLayerDense:
    """``backward(delta, next_layer)``: None marks the output layer, else delta goes
    through ``next_layer.W`` first. Which the training loop passes is not observed: the
    argument is not given None (that would check one branch only)."""

    def __init__(self):
        r = np.random.default_rng(624)
        self.W, self.b = r.standard_normal((3, 2)), r.standard_normal(2)

    def forward(self, x):
        self.x, self.a = x, np.tanh(x @ self.W + self.b)
        return self.a

    def backward(self, delta, next_layer):
        da = delta if next_layer is None else delta @ next_layer.W
        dz = da * (1 - self.a ** 2)
        self.dW, self.db = self.x.T @ dz, dz.sum(0)
        return dz @ self.W.T


def test_a_further_required_argument_is_not_given_none():
    x = np.random.default_rng(625).standard_normal((4, 3))
    res = gradcheck.check_layer(_NextLayerDense(), x)
    assert res.status == "error", res.report()


# -- a loss returned beside another output and the cache, its backward taking the cache ----
def _tanh_loss_forward(x, W, V, y):
    h = np.tanh(x @ W)
    s = h @ V
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    n = len(y)
    loss = -np.log(p[np.arange(n), y]).mean()
    return loss, h, {"x": x, "W": W, "V": V, "h": h, "p": p, "y": y}


def _tanh_loss_backward(caches, bug=False):
    c = caches
    n = len(c["y"])
    ds = c["p"].copy()
    ds[np.arange(n), c["y"]] -= 1
    ds /= n
    dV = c["h"].T @ ds
    dh = ds @ c["V"].T
    dz = dh if bug else dh * (1 - c["h"] ** 2)
    return dz @ c["W"].T, c["x"].T @ dz, dV


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x", "W"])])
def test_a_loss_beside_another_output_and_the_cache_taken_alone(bug, names):
    r = np.random.default_rng(619)
    args = [r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal((5, 3)),
            np.array([0, 2, 1])]
    res = gradcheck.check_vjp(_tanh_loss_forward, lambda c: _tanh_loss_backward(c, bug), args)
    _expect(res, names)


# -- loss, probs = f(logits, targets, mask); f_backward(probs, targets, mask) ----------------
def _masked_ce(logits, targets, mask):
    p = _softmax(logits)
    n = np.arange(len(targets))
    return float(-(np.log(p[n, targets]) * mask).sum() / mask.sum()), p


def _masked_ce_backward(probs, targets, mask, bug=False):
    g = probs.copy()
    g[np.arange(len(targets)), targets] -= 1
    g = g * mask[:, None]
    return g if bug else g / mask.sum()


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["logits"])])
def test_a_loss_backward_taking_the_cache_then_inputs_by_name_and_no_gradient(bug, names):
    r = np.random.default_rng(620)
    args = [r.standard_normal((5, 4)), np.array([0, 3, 1, 2, 0]),
            np.array([True, True, False, True, True])]
    res = gradcheck.check_vjp(_masked_ce, lambda probs, targets, mask: _masked_ce_backward(
        probs, targets, mask, bug), args)
    _expect(res, names)


# -- parameters' gradients computed only inside the step: fit(lr, weight_decay) ------------
class _FitNorm:
    """``backward`` keeps the output gradient and returns dx; ``fit(lr, weight_decay)``
    computes the parameters' gradients from it and steps them. Twin: ``fit`` leaves out
    the normalised input in gamma's gradient."""

    def __init__(self, bug=False):
        self.gamma, self.beta, self.bug = np.linspace(0.5, 1.5, 3), np.zeros(3), bug

    def forward(self, x):
        self.xn = np.tanh(x)
        return self.xn * self.gamma + self.beta

    def backward(self, error):
        self.grads = error
        return error * self.gamma * (1 - self.xn ** 2)

    def set_name(self, name):
        self.name = name

    def fit(self, lr, weight_decay):
        dgamma = self.grads.sum(0) if self.bug else (self.grads * self.xn).sum(0)
        self.gamma -= lr * (dgamma + weight_decay * self.gamma)
        self.beta -= lr * self.grads.sum(0)


class _AdamFit(_FitNorm):
    """The step is Adam's first, sign-like: not linear in the gradient, no reading."""

    def fit(self, lr, weight_decay):
        g = (self.grads * self.xn).sum(0)
        self.gamma -= lr * g / (np.abs(g) + 1e-8)
        self.beta -= lr * self.grads.sum(0) / (np.abs(self.grads.sum(0)) + 1e-8)


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["gamma"])])
def test_gradients_computed_only_inside_a_step_are_read_from_it(bug, names):
    x = np.random.default_rng(621).standard_normal((4, 3))
    res = gradcheck.check_layer(_FitNorm(bug), x)
    _expect(res, names)
    assert any("fit(1.0,0.0)" in n for n in res.notes), res.notes


def test_a_step_not_linear_in_the_gradient_is_no_reading():
    x = np.random.default_rng(621).standard_normal((4, 3))
    with pytest.raises(gradcheck.LayerConventionError, match="gamma"):
        gradcheck.check_layer(_AdamFit(), x)


# -- a flat tuple in the order of a list the layer holds of its own arrays ------------------
class _ListedBlock:
    """``self.params_ref = [w1, b1, w2, b2]`` (the very arrays, shapes repeating);
    ``backward`` returns ``dx, dw1, db1, dw2, db2``. Twin: db2 a mean over the batch."""

    def __init__(self, bug=False):
        r = np.random.default_rng(622)
        self.w1, self.w2 = r.standard_normal((3, 3)), r.standard_normal((3, 3))
        self.b1, self.b2 = r.standard_normal(3), r.standard_normal(3)
        self.params_ref = [self.w1, self.b1, self.w2, self.b2]
        self.bug = bug

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.w1 + self.b1)
        return self.h @ self.w2 + self.b2

    def backward(self, g):
        dw2, db2 = self.h.T @ g, g.mean(0) if self.bug else g.sum(0)
        dz = (g @ self.w2.T) * (1 - self.h ** 2)
        return dz @ self.w1.T, self.x.T @ dz, dz.sum(0), dw2, db2


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["b2"])])
def test_a_flat_tuple_in_the_order_of_the_layers_own_list(bug, names):
    x = np.random.default_rng(623).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_ListedBlock(bug), x), names)


# -- review 86: no reading where the evidence does not hold ----------------------------------
def _ce_forward(scores, y):
    p = _softmax(scores)
    return float(-np.log(p[np.arange(len(y)), y]).mean()), p


def _ce_backward(dloss, scores, y):
    """The output gradient first under a name of its own, then the inputs again."""
    g = _softmax(scores)
    g[np.arange(len(y)), y] -= 1
    return dloss * g / len(y)


def test_an_output_gradient_first_under_its_own_name_is_no_cache():
    r = np.random.default_rng(626)
    res = gradcheck.check_vjp(_ce_forward, _ce_backward,
                              [r.standard_normal((5, 4)), np.array([0, 3, 1, 2, 0])])
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()


def _two_losses_forward(X, y, W, reg=0.1):
    s = X @ W
    p = _softmax(s)
    data = -np.log(p[np.arange(len(y)), y]).mean()
    return data, 0.5 * reg * (W ** 2).sum(), (X, y, W, p, reg)


def _two_losses_backward(cache):
    """The gradient of both losses' sum."""
    X, y, W, p, reg = cache
    ds = p.copy()
    ds[np.arange(len(y)), y] -= 1
    return None, None, X.T @ (ds / len(y)) + reg * W


def test_a_second_loss_beside_the_first_and_the_cache_is_not_read_as_an_output():
    r = np.random.default_rng(627)
    res = gradcheck.check_vjp(_two_losses_forward, _two_losses_backward, [
        r.standard_normal((5, 4)), np.array([0, 2, 1, 2, 0]), r.standard_normal((4, 3))])
    assert res.status not in ("mismatch", "shape-mismatch"), res.report()


class _RefreshingTanh:
    """``backward(y, grads)`` takes the output and refreshes its cache with
    ``self.activate(self.x)``: no evidence that ``y`` is the input."""

    def __init__(self, bug=False):
        self.bug = bug

    def activate(self, x):
        self.x = x
        return np.tanh(x)

    def backward(self, y, grads):
        self.activate(self.x)
        return grads * (1 - (np.tanh(y) if self.bug else y) ** 2)


@pytest.mark.parametrize("bug", [False, True])
def test_a_forward_run_on_a_cached_input_says_nothing_of_the_argument(bug):
    res = gradcheck.check_layer(_RefreshingTanh(bug), np.random.default_rng(628).standard_normal(
        (4, 3)))
    assert res.status not in ("ok", "mismatch"), res.report()


class _PartlyNamedNorm(_BetaFirstNorm):
    """``return dx, dg, dbeta``: ``dbeta`` is named, ``dg`` takes the array left."""

    def backward(self, dout):
        dx = dout * self.gamma * (1 - self.xhat ** 2)
        dg = dout.sum(0) if self.bug else (dout * self.xhat).sum(0)
        dbeta = dout.sum(0)
        return dx, dg, dbeta


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["gamma"])])
def test_an_unnamed_item_takes_the_array_a_named_one_leaves(bug, names):
    x = np.random.default_rng(629).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_PartlyNamedNorm(bug), x), names)


class _ForgottenFloat(_ScalarBiasNet):
    """The forward forgets ``bias[1]``, the backward still computes its gradient."""

    def forward(self, x):
        self.ins, z = [], x
        for k, W in enumerate(self.W):
            self.ins.append(z)
            z = np.tanh(W @ z + (0.0 if k == 1 else self.bias[k]))
        return z

    def backward(self, op_gradient, regularizer=None):
        g = op_gradient
        for k in (1, 0):
            y = np.tanh(self.W[k] @ self.ins[k] + (0.0 if k == 1 else self.bias[k]))
            dz = g * (1 - y ** 2)
            self.bias_grad[k] = np.sum(dz)
            self.Wgrad[k] = np.outer(dz, self.ins[k])
            g = self.W[k].T @ dz


def test_a_float_the_forward_forgot_with_a_gradient_is_checked():
    res = gradcheck.check_layer(_ForgottenFloat(), np.random.default_rng(630).standard_normal(4))
    _expect(res, ["bias[1]"])


# -- arrays of names and None among the inputs are constants --------------------------------
def _act_forward(x, names, start):
    y = np.tanh(x) if names[0] == "tanh" else x
    return y, (x, names, start)


def _act_backward(dy, cache, bug=False):
    x, names, _ = cache
    d = (1 - np.tanh(x) ** 2) if names[0] == "tanh" else np.ones_like(x)
    return dy * d * (2.0 if bug else 1.0), None, None


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x"])])
def test_an_array_of_names_and_none_are_constants(bug, names):
    x = np.random.default_rng(631).standard_normal((3, 2))
    res = gradcheck.check_vjp(_act_forward, lambda dy, c: _act_backward(dy, c, bug),
                              [x, np.array(["tanh", "x"]), [None, 3, 5]])
    _expect(res, names)


# -- a dict of gradients named dW1 for W1, one of another shape ----------------------------
def _dict_model(params, X, y, bug=False):
    W, b = params["W1"], params["b1"]
    s = X @ W + b
    p = _softmax(s)
    n = len(y)
    loss = -np.log(p[np.arange(n), y]).mean()
    ds = p.copy()
    ds[np.arange(n), y] -= 1
    ds /= n
    db = ds.sum(1, keepdims=True) if bug else ds.sum(0, keepdims=True)
    return loss, {"dW1": X.T @ ds, "db1": db}


@pytest.mark.parametrize("bug", [False, True])
def test_a_gradient_named_for_its_array_in_another_shape_is_a_shape_mismatch(bug):
    r = np.random.default_rng(632)
    params = {"W1": r.standard_normal((4, 3)), "b1": r.standard_normal((1, 3))}
    res = gradcheck.check_loss(lambda p, X, y: _dict_model(p, X, y, bug), params,
                               r.standard_normal((5, 4)), np.array([0, 2, 1, 2, 0]))
    assert res.status == ("shape-mismatch" if bug else "ok"), res.report()


# -- a stepping backward returning the parameters themselves after its step -----------------
class _ReturnsItsWeights:
    """``backprop(dA)`` steps ``W``/``b`` by ``self.lr`` and returns ``dA_prev, self.W,
    self.b``: the parameters, no gradients. Twin: db a mean."""

    def __init__(self, bug=False):
        r = np.random.default_rng(633)
        self.W, self.b, self.lr, self.bug = r.standard_normal((2, 3)), r.standard_normal(
            (2, 1)), 0.01, bug

    def forward(self, x):
        self.input, self.Z = x, self.W @ x + self.b
        return np.tanh(self.Z)

    def backprop(self, dA):
        dZ = dA * (1 - np.tanh(self.Z) ** 2)
        dW = dZ @ self.input.T
        db = dZ.mean(1, keepdims=True) if self.bug else dZ.sum(1, keepdims=True)
        dA_prev = self.W.T @ dZ
        self.W -= self.lr * dW
        self.b -= self.lr * db
        return dA_prev, self.W, self.b


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["b"])])
def test_parameters_returned_after_a_step_are_no_gradients(bug, names):
    x = np.random.default_rng(634).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_ReturnsItsWeights(bug), x), names)


# -- a backward that does nothing beside the real one under another name --------------------
class _NoOpBackward:
    """``backward(self): pass`` (a layer API's step, nothing to step); ``SGD(error)`` is
    the real backward; ``im2col(image)``, linear too, returns another shape. Twin: the
    mask flipped."""

    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, x):
        self.x = x
        return np.maximum(x, 0) + 0.1 * x

    def backward(self):
        pass

    def im2col(self, image):
        return image.reshape(-1, 1)

    def SGD(self, error):
        mask = (self.x <= 0) if self.bug else (self.x > 0)
        return error * (mask + 0.1)


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_a_no_op_backward_gives_way_to_the_one_linear_method_of_the_inputs_shape(bug, names):
    x = np.random.default_rng(635).standard_normal((4, 3))
    res = gradcheck.check_layer(_NoOpBackward(bug), x)
    _expect(res, names)


# -- a loss whose forward returns None and stores the loss beside the probabilities --------
class _StoredLoss:
    """``forward(x, t)`` stores ``self.y`` (probabilities) and the float ``self.loss``;
    ``backward(dout=1)``. Twin: no 1/N."""

    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, x, t):
        self.t, self.y = t, _softmax(x)
        self.loss = float(-np.log(self.y[np.arange(len(t)), t]).mean())

    def backward(self, dout=1):
        g = self.y.copy()
        g[np.arange(len(self.t)), self.t] -= 1
        return g * dout / (1 if self.bug else len(self.t))


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_a_loss_stored_as_a_float_beside_the_probabilities_is_the_output(bug, names):
    x = np.random.default_rng(636).standard_normal((4, 3))
    res = gradcheck.check_layer(_StoredLoss(bug), x, np.array([0, 2, 1, 1]))
    _expect(res, names)
    assert any("float it stores in loss" in n for n in res.notes), res.notes


# -- review 87 ------------------------------------------------------------------------------
class _ColLinear:
    """A column input whose backward returns its gradient as a row: the forward does not
    take a row, so the row is no gradient the layer below can use."""

    def __init__(self):
        r = np.random.default_rng(637)
        self.W, self.b = r.standard_normal((2, 3)), r.standard_normal((2, 1))

    def forward(self, x):
        self.x = x
        return self.W @ x + self.b

    def backward(self, dy):
        self.dW, self.db = dy @ self.x.T, dy.copy()
        return dy.T @ self.W


def test_a_row_for_a_column_the_forward_does_not_take_stays_a_shape_mismatch():
    res = gradcheck.check_layer(_ColLinear(), np.random.default_rng(638).standard_normal((3, 1)))
    assert res.status == "shape-mismatch", res.report()


class _ReshapingColumn(_ColLinear):
    """The forward lays its input out itself (``x.reshape(-1, 1)``): a row is as good."""

    def forward(self, x):
        return super().forward(np.asarray(x).reshape(-1, 1))


def test_a_row_for_a_column_the_forward_reshapes_itself_is_compared():
    res = gradcheck.check_layer(_ReshapingColumn(), np.random.default_rng(638).standard_normal(
        (3, 1)))
    assert res.passed, res.report()


class _ZeroAfterStep:
    """``update(lr)`` steps gamma and beta, whose gradients it alone computes, and W
    with the stored dW, then zeroes dW: no step reading beside gradients read stored."""

    def __init__(self):
        r = np.random.default_rng(639)
        self.W, self.gamma, self.beta = r.standard_normal((3, 3)), np.ones(3), np.zeros(3)
        self.dW = np.zeros((3, 3))

    def forward(self, x):
        self.x, self.h = x, np.tanh(x @ self.W)
        return self.h * self.gamma + self.beta

    def backward(self, error):
        self.grads = error
        dz = error * self.gamma * (1 - self.h ** 2)
        self.dW[...] = self.x.T @ dz
        return dz @ self.W.T

    def update(self, lr):
        self.gamma -= lr * (self.grads * self.h).sum(0)
        self.beta -= lr * self.grads.sum(0)
        self.W -= lr * self.dW
        self.dW[...] = 0


def test_a_step_zeroing_the_gradients_read_is_no_step_reading():
    with pytest.raises(gradcheck.LayerConventionError, match="gamma"):
        gradcheck.check_layer(_ZeroAfterStep(), np.random.default_rng(640).standard_normal((4, 3)))


class _ReturnsWeightsUntouched:
    """``return dx, self.W, self.b`` with no step (a typo for ``self.dW, self.db``): the
    weights are not left out; they are read as the gradients they stand for."""

    def __init__(self):
        r = np.random.default_rng(641)
        self.W, self.b = r.standard_normal((3, 2)), r.standard_normal(2)

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, g):
        self.dW, self.db = self.x.T @ g, g.sum(0)
        return g @ self.W.T, self.W, self.b


def test_weights_returned_untouched_are_not_left_out():
    res = gradcheck.check_layer(_ReturnsWeightsUntouched(), np.random.default_rng(642)
                                .standard_normal((4, 3)))
    assert not res.passed, res.report()


def test_an_object_array_of_weights_is_no_constant():
    r = np.random.default_rng(643)
    weights = np.empty(2, dtype=object)
    weights[0], weights[1] = r.standard_normal((3, 3)), r.standard_normal((3, 3))
    with pytest.raises(TypeError, match="dtype object"):
        gradcheck.check_vjp(lambda x, w: (x @ w[0], (x, w)), lambda dy, c: (dy @ c[1][0].T, None),
                            [r.standard_normal((2, 3)), weights])


# -- float parameters held as objects of two numbers: value and derivative -------------------
class _Weight:
    def __init__(self, v):
        self.value, self.derivative = v, 0

    def update_derivatives(self, d):
        self.derivative += d


class _Neuron:
    """One neuron over a list of numbers, each weight a ``_Weight``; ``backwards(g)``
    returns the input gradient as a list. Twin: the weights' gradient without the input."""

    def __init__(self, bug=False):
        self.weights = [_Weight(w) for w in (0.5, -1.2, 0.8)]
        self.bias, self.bug = _Weight(0.1), bug

    def forwards(self, inputs):
        self.inputs = inputs
        self.pre = sum(i * w.value for i, w in zip(inputs, self.weights, strict=True))
        self.pre += self.bias.value
        return np.tanh(self.pre)

    def backwards(self, derivative):
        d = derivative * (1 - np.tanh(self.pre) ** 2)
        self.bias.update_derivatives(d)
        for i, w in zip(self.inputs, self.weights, strict=True):
            w.update_derivatives(d * (1.0 if self.bug else i))
        return [w.value * d for w in self.weights]


@pytest.mark.parametrize("bug, names", [
    (False, None), (True, ["weights[0].value", "weights[1].value", "weights[2].value"])])
def test_a_float_beside_the_derivative_its_object_holds_is_a_parameter(bug, names):
    res = gradcheck.check_layer(_Neuron(bug), np.array([0.3, -0.7, 1.1]))
    _expect(res, names)


# -- check_model: a gradient of a size-1-axis shape difference is compared -----------------
class _GainNet:
    """``params`` W (4, 3) and a gain g (3,); ``loss`` returns ``(loss, grads)`` with
    ``grads['g']`` of shape (1, 3) (``keepdims=True``). Twin: g's gradient halved."""

    def __init__(self, bug=False):
        r = np.random.default_rng(644)
        self.params = {"W": r.standard_normal((4, 3)), "g": np.linspace(0.5, 1.5, 3)}
        self.bug = bug

    def loss(self, X, y=None):
        h = (X @ self.params["W"]) * self.params["g"]
        if y is None:
            return h
        p = _softmax(h)
        n = len(y)
        ds = p.copy()
        ds[np.arange(n), y] -= 1
        ds /= n
        dg = (ds * (X @ self.params["W"])).sum(0, keepdims=True) * (0.5 if self.bug else 1)
        return -np.log(p[np.arange(n), y]).mean(), {
            "W": X.T @ (ds * self.params["g"]), "g": dg}


@pytest.mark.parametrize("bug", [False, True])
def test_a_model_gradient_with_a_leading_unit_axis_is_compared(bug):
    r = np.random.default_rng(645)
    res = gradcheck.check_model(_GainNet(bug), r.standard_normal((5, 4)),
                                np.array([0, 2, 1, 2, 0]), mode="full")
    assert res.status == ("mismatch" if bug else "ok"), res.report()
    assert any("compared after reshaping" in n for n in res.notes), res.notes


# -- derivative(): an activation's element-wise derivative after its forward ---------------
class _DerivSigmoid:
    """mytorch's activations: ``forward(x)`` stores ``state``; ``derivative()`` returns
    the element-wise derivative, the caller multiplying. ``output()`` returns the state
    itself: no derivative. Twin: ``state * state``."""

    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, x):
        self.state = 1 / (1 + np.exp(-x))
        return self.state

    def output(self):
        return self.state

    def derivative(self):
        return self.state * (self.state if self.bug else 1 - self.state)


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_an_element_wise_derivative_method_taking_nothing_is_the_backward(bug, names):
    x = np.random.default_rng(646).standard_normal((3, 4))
    res = gradcheck.check_layer(_DerivSigmoid(bug), x)
    _expect(res, names)
    assert any("derivative()" in n for n in res.notes), res.notes


# -- review 88 -------------------------------------------------------------------------------
class _ForgetsBiasDerivative(_Neuron):
    """The backward sets every weight's derivative and forgets the bias's (left at 0)."""

    def backwards(self, derivative):
        d = derivative * (1 - np.tanh(self.pre) ** 2)
        for i, w in zip(self.inputs, self.weights, strict=True):
            w.update_derivatives(d * i)
        return [w.value * d for w in self.weights]


def test_an_object_of_the_same_class_whose_derivative_is_left_is_checked():
    res = gradcheck.check_layer(_ForgetsBiasDerivative(), np.array([0.3, -0.7, 1.1]))
    _expect(res, ["bias.value"])


class _GradFromNone:
    __slots__ = ("value", "grad")

    def __init__(self, v):
        self.value, self.grad = v, None


class _SlotNeuron(_Neuron):
    """Weights held in ``__slots__`` objects whose ``grad`` starts as None. Twin:
    gradients doubled."""

    def __init__(self, bug=False):
        self.weights = [_GradFromNone(w) for w in (0.5, -1.2, 0.8)]
        self.bias, self.bug = _GradFromNone(0.1), bug

    def backwards(self, derivative):
        d = derivative * (1 - np.tanh(self.pre) ** 2)
        self.bias.grad = d
        for i, w in zip(self.inputs, self.weights, strict=True):
            w.grad = d * i * (2.0 if self.bug else 1.0)
        return [w.value * d for w in self.weights]


@pytest.mark.parametrize("bug, names", [
    (False, None), (True, ["weights[0].value", "weights[1].value", "weights[2].value"])])
def test_slotted_weights_whose_gradient_starts_as_none(bug, names):
    _expect(gradcheck.check_layer(_SlotNeuron(bug), np.array([0.3, -0.7, 1.1])), names)


class _PreOnly:
    """A forward and ``pre()`` returning the pre-activation it keeps: no derivative."""

    def forward(self, x):
        self.z = 2 * x
        return np.tanh(self.z)

    def pre(self):
        return self.z


def test_a_method_returning_a_kept_array_is_no_derivative():
    with pytest.raises(TypeError, match="no backward-like method"):
        gradcheck.check_layer(_PreOnly(), np.random.default_rng(647).standard_normal((3, 4)))


# -- the input's gradient stored beside the input the forward kept --------------------------
class _P:
    def __init__(self, value):
        self.value, self.dvalue = value, np.zeros_like(value)


class _KeptInput:
    """Everything in ``self.parameters = {name: _P(value)}``: the forward keeps its input
    as ``parameters['input']``; ``backward(doutput)`` returns None and stores every
    gradient as ``.dvalue``. Twin: the input's gradient without the weight."""

    def __init__(self, bug=False):
        r = np.random.default_rng(648)
        self.parameters = {"weights": _P(r.standard_normal((3, 2)))}
        self.bug = bug

    def forward(self, input):
        self.parameters["input"] = _P(input)
        self.z = input @ self.parameters["weights"].value
        return np.tanh(self.z)

    def backward(self, doutput):
        dz = doutput * (1 - np.tanh(self.z) ** 2)
        w, x = self.parameters["weights"], self.parameters["input"]
        w.dvalue = x.value.T @ dz
        x.dvalue = dz @ (np.ones_like(w.value) if self.bug else w.value).T


@pytest.mark.parametrize("bug, names", [(False, None), (True, ["x0"])])
def test_an_input_gradient_stored_beside_the_input_kept(bug, names):
    x = np.random.default_rng(649).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_KeptInput(bug), x), names)


# -- a loss per sample whose reduction cannot be observed: each reading tried --------------
class _NeedsNewPass:
    """nnfs: ``calculate`` takes the mean, then raises until ``new_pass()`` ran;
    ``backward(dvalues, y_true)`` stores the mean's gradient. Twin: the sign flipped."""

    def __init__(self, bug=False):
        self.bug = bug

    def forward(self, y_pred, y_true):
        return np.mean((y_true - y_pred) ** 2, axis=-1)

    def calculate(self, output, y):
        losses = self.forward(output, y)
        self.accumulated_sum += np.sum(losses)
        return np.mean(losses)

    def new_pass(self):
        self.accumulated_sum = 0.0

    def backward(self, dvalues, y_true):
        g = -2 * (y_true - dvalues) / dvalues.shape[1] / len(dvalues)
        self.dinputs = -g if self.bug else g


def test_a_reduction_not_observed_is_tried_both_ways():
    r = np.random.default_rng(650)
    pred, y = r.standard_normal((3, 2)), r.standard_normal((3, 2))
    res = gradcheck.check_layer(_NeedsNewPass(True), pred, y, wrt=["x0"])
    assert res.status == "mismatch", res.report()
    assert any("their mean, their sum" in n for n in res.notes), res.notes
    ok = gradcheck.check_layer(_NeedsNewPass(), pred, y, wrt=["x0"])
    assert ok.status == "bad-protocol" and "their mean" in ok.message, ok.report()
