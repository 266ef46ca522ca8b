"""Readings by observation found on held-out code (corpora 98 on): method names spelt
otherwise, and which of several runnable call orders a backward means. Each with a
correct subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- misspelt method names: foward / backword -------------------------------------------------
class _Affine:
    """``foward(x, train)`` returns ``x @ W + B``; ``backword(out, input, output)`` (the
    network hands it the forward's input and output again) stores ``dw``/``db``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(150)
        self.W, self.B = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.bug = bug

    def foward(self, x, train):
        return x @ self.W + self.B

    def backword(self, out, input, output):
        self.db = out.sum(0) if self.bug != "db" else out.mean(0)
        self.dw = input.T @ out
        return out @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("db", ["B"])])
def test_misspelt_forward_and_backward_are_found(bug, failing):
    x = np.random.default_rng(151).standard_normal((4, 3))
    res = gradcheck.check_layer(_Affine(bug), x, True)
    _expect(res, failing)
    assert any("foward" in n for n in res.notes), res.notes


def test_a_misspelling_is_no_method_of_another_kind():
    class Words:
        def fold(self, x):
            return x

        def flowed(self, x):
            return x

        def backup(self, g):
            return g

    with pytest.raises(TypeError, match="no forward-like method"):
        gradcheck.check_layer(Words(), np.ones(3))


# -- several call orders run: what they store, then the arguments' names, settle it ----------
def test_an_order_storing_a_weight_gradient_of_no_weights_shape_is_not_taken():
    """``backword(out, input, output)``: given the output for the input, ``input.T @ out``
    is (2, 2), no array's shape; the return is the same either way."""
    x = np.random.default_rng(152).standard_normal((4, 3))
    layer = _Affine()
    res = gradcheck.check_layer(layer, x, True)
    assert res.passed and {"W", "B"} <= {i.name for i in res.inputs}, res.report()


class _Relu:
    """``backward(dout, input, output)``: masks on the input; its twin masks on the
    output, which is never below zero (no mask at all)."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, x, train):
        return np.maximum(x, 0)

    def backward(self, dout, input, output):
        return dout * (input >= 0) if not self.bug else dout * (output >= 0)


@pytest.mark.parametrize("bug, failing", [("", None), ("mask", ["x0"])])
def test_arguments_named_input_and_output_settle_the_order(bug, failing):
    x = np.random.default_rng(153).standard_normal((4, 5))
    x[np.abs(x) < 0.1] = 0.5
    _expect(gradcheck.check_layer(_Relu(bug), x, True), failing)


def test_names_that_do_not_settle_it_give_no_reading():
    """``backward(a, b, c)``, or ``backward(a, x, output)`` naming the output alone, of a
    ReLU masking on either: which argument is the input is not said, so no order is
    taken (``backward(grad, output)`` of one input is the same, test_readings_returns)."""
    class Relu:
        def forward(self, x, train):
            return np.maximum(x, 0)

        def backward(self, a, b, c):
            return a * (b >= 0)

    class Named(Relu):
        def backward(self, a, b, output):
            return a * (b >= 0)

    x = np.random.default_rng(155).standard_normal((4, 5))
    x[np.abs(x) < 0.1] = 0.5
    for layer in (Relu(), Named()):
        res = gradcheck.check_layer(layer, x, True)
        assert not res.passed and res.status not in ("mismatch", "shape-mismatch"), res.report()


# -- a gradient of the wrong shape is listed in the result, under its array's name ----------
class _Bias:
    """Stores ``db`` of shape (1, 1, 3) for a bias of (3, 1): more than a size-1 axis off."""

    def __init__(self, bug=""):
        self.W, self.b = np.ones((3, 2)), np.zeros((3, 1))
        self.bug = bug

    def forward(self, x):
        self.x = x
        return x @ self.W.T + self.b.T

    def backward(self, g):
        self.dW = g.T @ self.x
        self.db = g.sum(0)[:, None] if not self.bug else g.sum(0)[None, None, :]
        return g @ self.W


@pytest.mark.parametrize("bug", ["", "shape"])
def test_a_misshapen_stored_gradient_is_listed_under_its_array(bug):
    x = np.random.default_rng(156).standard_normal((4, 2))
    res = gradcheck.check_layer(_Bias(bug), x)
    if not bug:
        assert res.passed, res.report()
        return
    assert res.status == "shape-mismatch", res.report()
    assert [(i.name, i.status, i.shape) for i in res.inputs] == [
        ("b", "shape-mismatch", (3, 1))], res.report()


# -- a flag is handed to the forward as given --------------------------------------------------
class _Dropout:
    """``forward(x, training)`` testing ``training is True``: a 0-d array would take the
    inference branch and leave the mask of an earlier call."""

    def __init__(self, bug=""):
        self.mask, self.bug = 0, bug

    def forward(self, x, training):
        if training is True:
            self.mask = (np.random.default_rng(158).random(x.shape) < 0.5) / 0.5
            return x * self.mask
        return x

    def backward(self, g):
        return self.mask * g if not self.bug else g


@pytest.mark.parametrize("bug, failing", [("", None), ("no-mask", ["x0"])])
def test_a_training_flag_reaches_the_forward_as_given(bug, failing):
    x = np.random.default_rng(159).standard_normal((3, 4))
    res = gradcheck.check_layer(_Dropout(bug), x, True)
    _expect(res, failing)
    assert res.inputs[1].status == "skipped", res.report()


# -- a base class's stubs give way to methods of other names ----------------------------------
class _Module:
    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        pass

    def backward(self, g):
        pass


class _SoftmaxLoss(_Module):
    """``forloss(x, y)`` and ``backloss()`` beside the base class's do-nothing pair."""

    def __init__(self, bug=""):
        self.bug = bug

    def forloss(self, x, y):
        e = np.exp(x - x.max())
        self.s, self.y = e / e.sum(), y
        return float(-(np.log(self.s) * y).sum())

    def backloss(self):
        return (self.s - self.y) * (len(self.y) if self.bug else 1)


class _DropFor(_Module):
    """``fordrop(x, training)`` beside its own ``backward`` and the base class's stub."""

    def __init__(self, bug=""):
        self.bug = bug

    def fordrop(self, x, training):
        self.mask = np.random.default_rng(160).random(x.shape) < 0.5 if training else 1
        return x * self.mask

    def backward(self, g):
        return g * self.mask if not self.bug else g


@pytest.mark.parametrize("bug, failing", [("", None), ("times-n", ["x0"])])
def test_a_loss_pair_of_other_names_beside_base_stubs(bug, failing):
    rng = np.random.default_rng(161)
    x, y = rng.standard_normal(5), np.eye(5)[2]
    res = gradcheck.check_layer(_SoftmaxLoss(bug), x, y, wrt=["x0"])
    _expect(res, failing)


@pytest.mark.parametrize("bug, failing", [("", None), ("no-mask", ["x0"])])
def test_a_forward_of_another_name_beside_a_base_stub(bug, failing):
    x = np.random.default_rng(162).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_DropFor(bug), x, True), failing)


# -- parameters a torch-like module serves by name are named as the user reads them -----------
class _Parameter:
    def __init__(self, data):
        self.data, self.grad = data, np.zeros_like(data)


class _TorchLike:
    """``__setattr__`` files parameters in ``self._parameters``; ``__getattr__`` serves
    them back as ``layer.W``."""

    def __init__(self, bug=""):
        object.__setattr__(self, "_parameters", {})
        self.W = _Parameter(np.random.default_rng(163).standard_normal((3, 2)))
        self.bug = bug

    def __setattr__(self, name, value):
        if isinstance(value, _Parameter):
            self._parameters[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        params = self.__dict__.get("_parameters", {})
        if name in params:
            return params[name]
        raise AttributeError(name)

    def forward(self, x):
        self.x = x
        return x @ self.W.data

    def backward(self, d):
        self.W.grad += self.x.T @ d / (len(d) if self.bug else 1)
        return d @ self.W.data.T


@pytest.mark.parametrize("bug, failing", [("", None), ("1/N", ["W"])])
def test_parameters_served_by_getattr_are_named_as_read(bug, failing):
    x = np.random.default_rng(164).standard_normal((5, 3))
    res = gradcheck.check_layer(_TorchLike(bug), x)
    _expect(res, failing)
    assert [i.name for i in res.inputs] == ["x0", "W"], res.report()
    assert gradcheck.check_layer(_TorchLike(bug), x, wrt=["W"]).passed == (not bug)


# -- cells built anew by every forward, sharing the layer's parameters ------------------------
class _Cell:
    def __init__(self, W):
        self.params, self.grads = [W], [np.zeros_like(W)]

    def forward(self, x):
        self.x, self.y = x, np.tanh(x @ self.params[0])
        return self.y

    def backward(self, dy):
        dz = dy * (1 - self.y ** 2)
        self.grads[0][...] = self.x.T @ dz
        return dz @ self.params[0].T


class _TimeCell:
    """A new ``_Cell(*self.params)`` per step and per forward (a recurrent layer's
    ``TimeRNN``): the cells' zero ``grads`` buffers are no weights drawn in the forward."""

    def __init__(self, bug=""):
        W = np.random.default_rng(165).standard_normal((3, 3))
        self.params, self.grads, self.layers, self.bug = [W], [np.zeros_like(W)], None, bug

    def forward(self, xs):
        self.layers, out = [], np.empty(xs.shape[:2] + (self.params[0].shape[1],))
        for t in range(xs.shape[1]):
            cell = _Cell(*self.params)
            out[:, t] = cell.forward(xs[:, t])
            self.layers.append(cell)
        return out

    def backward(self, dout):
        g, dxs = 0, np.empty(dout.shape[:2] + (self.params[0].shape[0],))
        for t, cell in enumerate(self.layers):
            dxs[:, t] = cell.backward(dout[:, t])
            g = g + cell.grads[0] if not (self.bug and t == 0) else g  # first step lost
        self.grads[0][...] = g
        return dxs


@pytest.mark.parametrize("bug, failing", [("", None), ("lost", ["params[0]"])])
def test_cells_built_by_every_forward_sharing_the_parameters(bug, failing):
    xs = np.random.default_rng(166).standard_normal((2, 3, 3))
    _expect(gradcheck.check_layer(_TimeCell(bug), xs), failing)


# -- backward(output_error, batch_size): given the batch size ----------------------------------
class _MeanDense:
    """Stores the gradients of the batch's mean loss (``/ batch_size``) and returns the
    input's of the sum: its parameters' gradients fail by an extra 1/N; its twin, with
    every gradient of the sum, passes but for the planted bug."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(167)
        self.weights, self.biases, self.bug = rng.standard_normal((3, 2)), np.zeros(2), bug

    def forward(self, x):
        self.last_input = x
        return x @ self.weights + self.biases

    def backward(self, output_error, batch_size):
        n = 1 if self.bug else batch_size
        self.w_grad = self.last_input.T @ output_error / n
        self.b_grad = output_error.sum(0) / n * (2 if self.bug == "b" else 1)
        return output_error @ self.weights.T


@pytest.mark.parametrize("bug, failing", [("", ["weights", "biases"]), ("b", ["biases"])])
def test_a_batch_size_argument_is_given_the_batch_size(bug, failing):
    x = np.random.default_rng(168).standard_normal((4, 3))
    res = gradcheck.check_layer(_MeanDense(bug), x)
    _expect(res, failing)
    if not bug:  # (the twin's ignores it: called with 1.0)
        assert any("batch size, 4" in n for n in res.notes), res.notes
        assert "1/4" in res.inputs[1].hint, res.report()


# -- stored names that abbreviate their arrays' ------------------------------------------------
class _Shortcut:
    """``b_grad`` for ``biases`` and ``projection_b_grad`` for ``projection_biases``, of
    one shape: only the names, word by word, pair them."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(169)
        self.biases, self.projection_biases = rng.standard_normal(3), rng.standard_normal(3)
        self.bug = bug

    def forward(self, x):
        self.t = np.tanh(x + self.biases)
        return self.t + 2 * (x + self.projection_biases)

    def backward(self, g):
        dt = g * (1 - self.t ** 2)
        self.b_grad = dt.sum(0)
        self.projection_b_grad = 2 * g.sum(0) * (0.5 if self.bug else 1)
        return dt + 2 * g


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["projection_biases"])])
def test_stored_names_abbreviating_their_arrays_pair_with_them(bug, failing):
    x = np.random.default_rng(170).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_Shortcut(bug), x), failing)


def test_an_abbreviation_of_two_arrays_pairs_with_neither():
    class Two:
        def __init__(self):
            rng = np.random.default_rng(171)
            self.wq, self.wk = rng.standard_normal(3), rng.standard_normal(3)

        def forward(self, x):
            return x * self.wq + x * self.wk

        def backward(self, g):
            self.dw = g.sum(0)  # whose? no name says
            return g * (self.wq + self.wk)

    with pytest.raises(gradcheck.LayerConventionError):
        gradcheck.check_layer(Two(), np.random.default_rng(172).standard_normal((4, 3)))


# -- check_elementwise of a loss: f returns a scalar; told to use check_grad ------------------
def test_check_elementwise_of_a_scalar_loss_points_to_check_grad():
    def mse(y, p):
        return np.mean((y - p) ** 2)

    def mse_prime(y, p):
        return 2 * (p - y) / len(y)

    rng = np.random.default_rng(173)
    y, p = rng.standard_normal(5), rng.standard_normal(5)
    res = gradcheck.check_elementwise(mse, mse_prime, y, p, wrt=1)
    assert res.status == "bad-protocol" and "check_grad(f, df" in res.message, res.report()
    assert gradcheck.check_grad(lambda q: mse(y, q), lambda q: mse_prime(y, q), p).passed


# -- an abbreviated stored gradient of the wrong shape; the error names every parameter -------
class _Linear2D:
    def __init__(self, bug=""):
        rng = np.random.default_rng(174)
        self.weights, self.bias, self.bug = rng.standard_normal((3, 2)), np.zeros(2), bug

    def forward(self, x):
        self.x = x
        return x @ self.weights + self.bias

    def backward(self, g):
        self.w_grad = self.x.T @ g
        self.b_grad = g if self.bug else g.sum(0)  # the twin sums over no axis
        return g @ self.weights.T


@pytest.mark.parametrize("bug", ["", "unsummed"])
def test_an_abbreviated_gradient_of_the_wrong_shape_is_a_shape_mismatch(bug):
    x = np.random.default_rng(175).standard_normal((5, 3))
    res = gradcheck.check_layer(_Linear2D(bug), x)
    if not bug:
        assert res.passed, res.report()
        return
    assert res.status == "shape-mismatch" and "b_grad" in res.message, res.report()
    assert [(i.name, i.status) for i in res.inputs] == [("bias", "shape-mismatch")]


def test_the_error_for_a_gradient_not_found_names_every_parameter():
    class Unnamed(_Linear2D):
        def backward(self, g):
            self.w_grad = self.x.T @ g
            self.mystery = g.sum(0) * 1.0  # of bias's shape beside w_grad: no name says
            self.other = g.sum(0) * 2.0
            return g @ self.weights.T

    with pytest.raises(gradcheck.LayerConventionError) as err:
        gradcheck.check_layer(Unnamed(), np.random.default_rng(176).standard_normal((5, 3)))
    text = str(err.value)
    assert "params={'weights': 'weights', 'bias': 'bias'}" in text, text
    assert "grads={'weights': 'w_grad', 'bias': '...'}" in text, text


# -- forward with backprop beside timestep_forward with timestep_backprop ----------------------
class _TwoModes:
    """The plain pair (``forward``, ``backprop``) beside a per-step pair."""

    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(177).standard_normal(4), bug

    def forward(self, x):
        self.x = x
        return np.tanh(x) * self.W

    def backprop(self, d):
        self.dW = (d * np.tanh(self.x)).sum(0)
        return d * self.W * (1 - np.tanh(self.x) ** (1 if self.bug else 2))

    def timestep_forward(self, x):
        return self.forward(x)

    def timestep_backprop(self, d):
        return self.backprop(d)


@pytest.mark.parametrize("bug, failing", [("", None), ("tanh", ["x0"])])
def test_the_plain_pair_is_taken_beside_a_per_step_pair(bug, failing):
    x = np.random.default_rng(178).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_TwoModes(bug), x), failing)


# -- an embedding whose backward returns dW: token ids are no input to differentiate ---------
class _Embedding:
    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(179).standard_normal((7, 4)), bug

    def forward(self, idx):
        self.idx = idx
        return self.W[idx]

    def backward(self, d_out):
        dW = np.zeros_like(self.W)
        if self.bug:
            dW[self.idx] = d_out  # repeated ids: only the last one counts
        else:
            np.add.at(dW, self.idx, d_out)
        return dW


@pytest.mark.parametrize("bug, failing", [("", None), ("assign", ["W"])])
def test_an_embedding_backward_returning_its_weights_gradient(bug, failing):
    res = gradcheck.check_layer(_Embedding(bug), np.array([1, 3, 1, 5, 0]))
    _expect(res, failing)
    assert any("read as W's gradient" in n for n in res.notes), res.notes


def test_a_plural_is_no_abbreviation():
    """``dh`` (4,) beside a state ``hs`` (6, 4) the output depends on: not its gradient of
    the wrong shape (a ``shape-mismatch`` blaming a correct layer)."""
    class Rnn:
        def __init__(self):
            self.w, self.hs = np.random.default_rng(180).standard_normal((3, 4)), np.ones((6, 4))

        def forward(self, x):
            self.x = x
            return np.tanh(x @ self.w) + self.hs[0]

        def backward(self, g):
            t = np.tanh(self.x @ self.w)
            self.dw = self.x.T @ (g * (1 - t ** 2))
            self.dh = g.sum(0)
            return (g * (1 - t ** 2)) @ self.w.T

    try:
        res = gradcheck.check_layer(Rnn(), np.random.default_rng(181).standard_normal((5, 3)))
    except gradcheck.LayerConventionError:
        return
    assert res.status != "shape-mismatch", res.report()


# -- a step size held in a dict: self.config['learning_rate'] ---------------------------------
class _ConfigStep:
    def __init__(self, bug=""):
        rng = np.random.default_rng(182)
        self.gamma, self.beta = 1 + 0.3 * rng.standard_normal(4), rng.standard_normal(4)
        self.config, self.bug = {"learning_rate": 0.01, "momentum": 0.9}, bug

    def forward(self, z):
        self.z = z
        return self.gamma * np.tanh(z) + self.beta

    def backward(self, da):
        dgamma = np.sum(da * np.tanh(self.z), axis=0)
        dbeta = np.sum(da, axis=0) / (len(da) if self.bug else 1)
        dz = da * self.gamma * (1 - np.tanh(self.z) ** 2)
        self.gamma -= self.config["learning_rate"] * dgamma
        self.beta -= self.config["learning_rate"] * dbeta
        return dz


@pytest.mark.parametrize("bug, failing", [("", None), ("1/n", ["beta"])])
def test_a_step_size_held_in_a_dict(bug, failing):
    z = np.random.default_rng(183).standard_normal((6, 4))
    res = gradcheck.check_layer(_ConfigStep(bug), z)
    _expect(res, failing)
    assert any("config['learning_rate'] is the step size" in n for n in res.notes), res.notes


# -- backward(dZ, x): a stored gradient not linear in dZ is a bug, not a loss reading --------
class _AffineAgain:
    def __init__(self, bug=""):
        rng = np.random.default_rng(184)
        self.W, self.b, self.bug = rng.standard_normal((3, 3)), rng.standard_normal(3), bug

    def forward(self, x):
        return x @ self.W + self.b

    def backward(self, dZ, x):
        self.db = dZ.sum(axis=0)
        self.dW = x.T @ (dZ * dZ if self.bug else dZ)  # the twin's is quadratic in dZ
        return dZ @ self.W.T


@pytest.mark.parametrize("bug, failing", [("", None), ("square", ["W"])])
def test_a_stored_gradient_not_linear_in_the_output_gradient_is_blamed_alone(bug, failing):
    x = np.random.default_rng(185).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_AffineAgain(bug), x), failing)


# -- a forward storing a zero-padded copy of its input beside its output ----------------------
class _PaddedConv:
    """``forward`` returns None and stores ``x_pad`` (the input, zero-padded) and
    ``output``: the padded copy is the input kept, not a second output."""

    def __init__(self, bug=""):
        self.k, self.bug = np.random.default_rng(186).standard_normal(3), bug

    def forward(self, x):
        self.x_pad = np.pad(x, ((0, 0), (1, 1)))
        n = x.shape[1]
        self.output = sum(self.k[j] * self.x_pad[:, j:j + n] for j in range(3))

    def backward(self, d):
        n = d.shape[1]
        self.dk = np.array([(d * self.x_pad[:, j:j + n]).sum() for j in range(3)])
        dpad = np.zeros_like(self.x_pad)
        for j in range(3):
            dpad[:, j:j + n] += self.k[2 - j if self.bug else j] * d
        self.dinputs = dpad[:, 1:-1]


@pytest.mark.parametrize("bug, failing", [("", None), ("flip", ["x0"])])
def test_a_padded_copy_of_the_input_is_no_second_output(bug, failing):
    x = np.random.default_rng(187).standard_normal((2, 5))
    res = gradcheck.check_layer(_PaddedConv(bug), x)
    _expect(res, failing)
    assert any("stores in output" in n for n in res.notes), res.notes


# -- check_vjp: a backward taking some of the forward's inputs by their names and dy ---------
def _affine(X, W, b):
    return X @ W + b


def _affine_back(bug=""):
    def affine_back(X, dy, W):  # no b: it needs none
        db = dy.mean(0) if bug else dy.sum(0)
        return dy @ W.T, X.T @ dy, db
    return affine_back


def _weights_back(bug=""):
    def linear_backward_weights(X, W, dy, b=None):  # the data's gradient elsewhere
        return X.T @ dy * (0.5 if bug else 1.0), (None if b is None else dy.sum(0))
    return linear_backward_weights


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["b"])])
def test_a_backward_taking_some_inputs_by_name_and_the_gradient(bug, failing):
    rng = np.random.default_rng(188)
    xs = [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)]
    res = gradcheck.check_vjp(_affine, _affine_back(bug), xs)
    _expect(res, failing)
    assert any("inputs X, W again by their names and dy" in n for n in res.notes), res.notes


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["W"])])
def test_a_weights_only_backward_given_its_optional_input_by_name(bug, failing):
    """``(dW, db)`` for ``(X, W, b)``: left out by design or forgotten? Without ``wrt=``
    no reading; with it, a verdict."""
    rng = np.random.default_rng(189)
    xs = [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)]
    assert gradcheck.check_vjp(_affine, _weights_back(bug), xs).status == "bad-protocol"
    _expect(gradcheck.check_vjp(_affine, _weights_back(bug), xs, wrt=[1, 2]), failing)


# -- from the review of this stop ---------------------------------------------------------------
def test_one_array_for_three_inputs_is_no_reading_of_the_first():
    """``dx`` alone for ``(x, W, b)``: a forgotten ``dW`` and ``db``, not two constants."""
    def f(x, W, b):
        return np.tanh(x @ W + b)

    def f_back(dy, x, W, b):
        return (dy * (1 - f(x, W, b) ** 2)) @ W.T

    rng = np.random.default_rng(190)
    xs = [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)]
    assert not gradcheck.check_vjp(f, f_back, xs).passed


def test_a_bias_rebuilt_as_zeros_by_every_forward_is_checked():
    """``self.b = np.zeros(...)`` in the forward: the ``db`` it computes reaches nothing."""
    class Rebuilt:
        def __init__(self):
            self.W = np.random.default_rng(191).standard_normal((3, 2))

        def forward(self, x):
            self.x, self.b = x, np.zeros(2)
            return x @ self.W + self.b

        def backward(self, g):
            self.dW, self.db = self.x.T @ g, g.sum(0)
            return g @ self.W.T

    res = gradcheck.check_layer(Rebuilt(), np.random.default_rng(192).standard_normal((4, 3)))
    assert not res.passed and "b" in [i.name for i in res.inputs if not i.passed], res.report()


def test_a_loss_backward_refreshing_its_cache_is_no_output_gradient():
    """``backward(pred, y_true)`` of an MSE with zero targets is linear in ``pred``; the
    loss it stores again by calling the forward is not: ``pred`` is no output gradient."""
    class MSE:
        def forward(self, pred, y_true):
            self.losses = (pred - y_true) ** 2
            return self.losses.mean()

        def backward(self, pred, y_true):
            self.forward(pred, y_true)
            return 2 * (pred - y_true) / pred.size

    pred = np.random.default_rng(193).standard_normal(6)
    res = gradcheck.check_layer(MSE(), pred, np.zeros(6))
    assert res.status != "mismatch", res.report()


def test_a_lone_output_with_an_unread_backward_is_told_the_form():
    def sigmoid(Z):
        return 1 / (1 + np.exp(-Z))

    def sigmoid_back(delta, A):  # A: the forward's output, which no name says
        return delta * A * (1 - A)

    z = np.random.default_rng(194).standard_normal(4)
    res = gradcheck.check_vjp(sigmoid, sigmoid_back, [z])
    assert res.status == "bad-protocol", res.report()
    assert "takes (delta, A)" in res.message and "fwd = lambda *a: (f(*a), a)" in res.message
    fixed = gradcheck.check_vjp(lambda Z: (sigmoid(Z), sigmoid(Z)),
                                lambda dy, a: (sigmoid_back(dy, a),), [z])
    assert fixed.passed, fixed.report()


def test_a_loss_pair_whose_prediction_is_named_otherwise_is_no_gradient_reading():
    def mse(y_hat, y):
        d = y_hat - y
        return d.T @ d / len(d)

    def mse_grad(y_pred, y):  # y_pred: the prediction, not an output gradient
        return 2 * (y_pred - y) / len(y_pred)

    rng = np.random.default_rng(195)
    res = gradcheck.check_vjp(mse, mse_grad, [rng.standard_normal((5, 1)),
                                              rng.integers(0, 2, (5, 1)).astype(float)])
    assert res.status != "mismatch", res.report()


def test_optimizer_moments_stored_by_a_backward_keep_the_dout_reading():
    """``backward(dout, x)`` returning ``dout * gamma`` and updating Adam's moments, which
    are not linear in ``dout``: still a layer's backward, not a loss's."""
    class Scale:
        def __init__(self):
            self.gamma, self.beta = np.random.default_rng(196).standard_normal((2, 4))
            self.m_gamma, self.v_gamma = np.zeros(4), np.zeros(4)

        def forward(self, x):
            return x * self.gamma + self.beta

        def backward(self, dout, x):
            self.dgamma, self.dbeta = (dout * x).sum(0), dout.sum(0)
            self.m_gamma = 0.9 * self.m_gamma + 0.1 * self.dgamma
            self.v_gamma = 0.999 * self.v_gamma + 0.001 * self.dgamma ** 2
            return dout * self.gamma

    res = gradcheck.check_layer(Scale(), np.random.default_rng(197).standard_normal((3, 4)))
    assert res.passed, res.report()


def test_a_bias_rebuilt_as_zeros_under_a_d_name_is_checked():
    class Rebuilt:
        def __init__(self):
            self.W = np.random.default_rng(198).standard_normal((3, 2))

        def forward(self, x):
            self.x, self.dense_b = x, np.zeros(2)
            return x @ self.W + self.dense_b

        def backward(self, g):
            self.dW, self.d_dense_b = self.x.T @ g, g.sum(0)
            return g @ self.W.T

    res = gradcheck.check_layer(Rebuilt(), np.random.default_rng(199).standard_normal((4, 3)))
    assert not res.passed and "dense_b" in [i.name for i in res.inputs if not i.passed]


@pytest.mark.parametrize("bug, failing", [("", None), ("T", ["x0"])])
def test_a_padded_output_beside_a_copy_of_the_input(bug, failing):
    class ZeroPad:
        def forward(self, x):
            self.x, self.out = x.copy(), np.pad(x, ((0, 0), (1, 1), (1, 1)))

        def backward(self, d):
            inner = d[:, 1:-1, 1:-1]
            self.dinputs = inner.transpose(0, 2, 1) if bug else inner

    x = np.random.default_rng(200).standard_normal((2, 3, 3))
    _expect(gradcheck.check_layer(ZeroPad(), x), failing)


# -- (h, c, cache) whose backward takes the cache second: backward(dys, caches, dc=None) -------
class _SeqCacheSecond:
    def __init__(self, bug=""):
        self.W, self.bug = np.random.default_rng(201).standard_normal((3, 3)) * 0.5, bug

    def forward(self, x, c0):
        c, ys, caches = c0, [], []
        for t in range(x.shape[1]):
            y = np.tanh(x[:, t] @ self.W + c[:, None])
            caches.append((x[:, t], y))
            ys.append(y)
            c = y.sum(axis=1)
        return np.stack(ys, 1), c, caches

    def backward(self, dys, caches, dc_final=None):
        dW, dx = np.zeros_like(self.W), np.zeros(dys.shape[:2] + (3,))
        dc = np.zeros(dys.shape[0]) if dc_final is None else dc_final
        for t in reversed(range(dys.shape[1])):
            xt, y = caches[t]
            dz = (dys[:, t] + dc[:, None]) * (1 - y ** 2)
            dW += xt.T @ dz
            dx[:, t] = dz @ self.W.T
            dc = dz.sum(axis=1) * (0.5 if self.bug else 1.0)
        return dx, dc, {"W": dW}


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["x0", "x1", "W"])])
def test_outputs_and_a_cache_whose_backward_takes_the_cache_second(bug, failing):
    rng = np.random.default_rng(202)
    res = gradcheck.check_layer(_SeqCacheSecond(bug), rng.standard_normal((2, 4, 3)),
                                rng.standard_normal(2))
    _expect(res, failing)
    assert any("the cache second" in n for n in res.notes), res.notes


def test_a_stepping_backward_not_linear_in_the_gradient_is_told_why():
    class SignStep:
        def __init__(self):
            self.W = np.random.default_rng(203).standard_normal((4, 3))

        def forward(self, x):
            self.x = x
            return x @ self.W

        def backprop(self, d, learning_rate):
            s = np.sign(d)  # ignores the gradient's size: no gradient step
            self.W -= learning_rate * self.x.T @ s
            return s @ self.W.T

    res = gradcheck.check_layer(SignStep(), np.random.default_rng(204).standard_normal((2, 4)))
    assert res.status == "error" and "takes a step size" in res.message, res.report()


# -- check_grad with constants; check_elementwise of a derivative written as one number ------
@pytest.mark.parametrize("bug, failing", [("", None), ("logits", ["p"])])
def test_check_grad_takes_constants_after_the_point(bug, failing):
    def ce(p, t):
        return -np.sum(t * np.log(p))

    def ce_grad(p, t):
        return p - t if bug else -t / p  # the twin: the logits' gradient

    p, t = np.array([0.2, 0.5, 0.3]), np.array([0.0, 1.0, 0.0])
    _expect(gradcheck.check_grad(ce, ce_grad, p, t), failing)


@pytest.mark.parametrize("bug, failing", [("", None), ("zero", ["x0"])])
def test_a_derivative_written_as_one_number(bug, failing):
    x = np.random.default_rng(205).standard_normal((4, 5))
    _expect(gradcheck.check_elementwise(lambda z: z, lambda z: 0 if bug else 1, x), failing)


# -- a column output (m, 1) whose backward takes its gradient as one row (1, m) --------------
class _ColLinear:
    def __init__(self, bug=""):
        rng = np.random.default_rng(206)
        self.W, self.b, self.bug = rng.standard_normal((4, 3)), rng.standard_normal((4, 1)), bug
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)

    def forward(self, x):  # x (n, 1) -> (m, 1)
        self.x = x
        return self.W @ x + self.b

    def backward(self, g):  # g (1, m) -> (1, n)
        assert g.shape == (1, self.W.shape[0])
        self.dW += g.T @ self.x.T
        self.db += g.T * (2 if self.bug else 1)
        return g @ self.W


@pytest.mark.parametrize("bug, failing", [("", None), ("2db", ["b"])])
def test_a_column_output_whose_gradient_is_taken_as_a_row(bug, failing):
    res = gradcheck.check_layer(_ColLinear(bug), np.random.default_rng(207).standard_normal((3, 1)))
    _expect(res, failing)
    assert any("column output's gradient" in n for n in res.notes), res.notes


class _TanhDelta:
    """``backward_delta(input, delta)``: the input by name; the output would run too."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, X):
        return np.tanh(X)

    def backward_update_gradient(self, input, delta):
        pass

    def backward_delta(self, input, delta):
        t = input if self.bug else np.tanh(input)  # the twin treats its input as the output
        return (1 - t ** 2) * delta


@pytest.mark.parametrize("bug, failing", [("", None), ("as-output", ["x0"])])
def test_an_argument_named_input_is_given_the_input(bug, failing):
    x = np.random.default_rng(208).standard_normal((3, 4))
    _expect(gradcheck.check_layer(_TanhDelta(bug), x), failing)


class _Accumulating:
    """``backward_update_gradient(input, delta)`` rebinding ``self._gradient = self.
    _gradient + ...`` (not ``+=``) beside ``backward_delta(input, delta)``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(209)
        self._parameters, self._biais = rng.random((3, 2)) - 0.5, rng.random((1, 2)) - 0.5
        self._gradient, self._gradient_b = np.zeros((3, 2)), np.zeros((1, 2))
        self.bug = bug

    def forward(self, X):
        return X @ self._parameters + self._biais

    def backward_update_gradient(self, input, delta):
        self._gradient = self._gradient + input.T @ delta
        n = len(delta) if self.bug else 1
        self._gradient_b = self._gradient_b + np.sum(delta, axis=0) / n

    def backward_delta(self, input, delta):
        return delta @ self._parameters.T


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["_biais"])])
def test_gradients_accumulated_by_rebinding_in_a_completing_method(bug, failing):
    x = np.random.default_rng(210).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_Accumulating(bug), x), failing)


# -- check_vjp: fwd(x) -> (y, rms), bwd(dout, x, rms): an array cache after the input --------
def _rms_fwd(x):
    rms = np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5)
    return x / rms, rms


def _rms_bwd(bug=""):
    def rmsnorm_bwd(dout, x, rms):
        y = x / rms
        n = x.shape[-1]
        inner = (dout * y).sum(-1, keepdims=True) / n
        return (dout - (y * inner if not bug else 0)) / rms
    return rmsnorm_bwd


@pytest.mark.parametrize("bug, failing", [("", None), ("no-inner", ["x"])])
def test_an_array_cache_taken_after_the_input_by_name(bug, failing):
    x = np.random.default_rng(211).standard_normal((3, 4))
    _expect(gradcheck.check_vjp(_rms_fwd, _rms_bwd(bug), [x]), failing)


# -- from the third review of this stop --------------------------------------------------------
def test_a_second_output_is_no_array_cache():
    """``fwd(x) -> (y, z)`` two outputs, ``bwd(dy, x, dz)`` forgetting ``dz``: ``z`` is no
    cache to hand it in ``dz``'s place."""
    def fwd(x):
        return np.maximum(x, 0), np.maximum(-x, 0)

    def bwd(dy, x, dz):
        return dy * (x > 0)  # forgot - dz * (x < 0)

    x = np.random.default_rng(212).standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5
    assert not gradcheck.check_vjp(fwd, bwd, [x]).passed


def test_a_batch_of_one_column_outputs_is_no_column():
    """A regression head ``(N, d) -> (N, 1)`` whose backward is written for ``(1, N)``
    raises on its own output's gradient: no row reading (the batch laid out as a row)."""
    class Head:
        def __init__(self):
            self.w = np.random.default_rng(213).standard_normal((3, 1))

        def forward(self, x):
            self.x = x
            return x @ self.w

        def backward(self, dout):  # written for dout (1, N): a transpose bug
            self.dw = (dout @ self.x).T
            return (self.w @ dout).T

    res = gradcheck.check_layer(Head(), np.random.default_rng(214).standard_normal((5, 3)))
    assert not res.passed, res.report()
