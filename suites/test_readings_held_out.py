"""Readings by observation found on held-out code (corpora 119 on, and what corpora 99-118
left unread): each with a correct subject that passes and a broken twin that fails with a
gradient verdict."""

import numpy as np
import pytest

import gradcheck
from suites._verdicts import expect as _expect


# -- a column-vector layer taking its output gradient as a row, storing diff_* gradients ----
class _ColumnDense:
    """``forward(x)`` of one column ``(n, 1)`` returns ``W @ x + b``; ``backward(dout)``
    takes the output's gradient as a row ``(1, m)``, returns the input's as a row and
    stores ``diff_Weights`` and ``diff_bias`` (a row for the column ``b``), and a copy of
    the weights under another name."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(300)
        self.Weights, self.bias = rng.standard_normal((4, 3)), rng.standard_normal((4, 1))
        self.bug = bug

    def forward(self, other):
        self.other = other
        return self.Weights @ other + self.bias

    def backward(self, dout):
        self.diff_out = np.copy(self.Weights)
        self.diff_bias = 2 * dout if self.bug == "bias" else dout
        self.diff_Weights = dout.T @ self.other.T
        return dout @ self.diff_out


@pytest.mark.parametrize("bug, failing", [("", None), ("bias", ["bias"])])
def test_a_row_gradient_layer_stores_its_column_bias_gradient_as_a_row(bug, failing):
    x = np.random.default_rng(301).standard_normal((3, 1))
    res = gradcheck.check_layer(_ColumnDense(bug), x)
    _expect(res, failing)
    assert any("a row for a column" in n and "bias" in n for n in res.notes), res.notes


def test_a_row_stored_for_a_column_is_still_a_shape_mismatch_outside_the_row_reading():
    class Dense(_ColumnDense):
        def backward(self, dout):  # takes the column gradient as given, stores a row
            self.diff_bias = dout.T
            self.diff_Weights = dout @ self.other.T
            return self.Weights.T @ dout

    res = gradcheck.check_layer(Dense(), np.random.default_rng(302).standard_normal((3, 1)))
    assert res.status == "shape-mismatch" and "diff_bias" in res.message, res.report()


# -- a misspelt "backpro" stepping np.matrix weights ------------------------------------------
class _MatrixLinear:
    """``forward`` computes with ``np.matrix``; ``backpro(delta, lr=0.1)`` steps the
    weights and returns the input's gradient."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(303)
        self.weight, self.bias = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.bug = bug

    def forward(self, input_data):
        self.reg = np.asmatrix(input_data)
        return np.asarray(self.reg * np.asmatrix(self.weight)) + self.bias

    def backpro(self, delta_loss, lr=0.1):
        delta_w = self.reg.T * np.asmatrix(delta_loss)
        dx = np.asarray(np.asmatrix(delta_loss) * np.asmatrix(self.weight).T)
        self.weight -= lr * np.asarray(delta_w) * (-1 if self.bug == "uphill" else 1)
        self.bias -= lr * np.asarray(delta_loss).sum(axis=0)
        return dx


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("bug, failing", [("", None), ("uphill", ["weight"])])
def test_a_backpro_method_stepping_matrix_weights(bug, failing):
    x = np.random.default_rng(304).standard_normal((4, 3))
    res = gradcheck.check_layer(_MatrixLinear(bug), x)
    _expect(res, failing)
    assert any("backpro" in n for n in res.notes), res.notes


# -- a forward storing a zero-padded copy of its input per filter beside its output ----------
class _TiledConv:
    """``forward`` returns None and stores ``impad``: the input zero-padded, once per
    filter on a new axis, and ``output``; the copy is no second output."""

    def __init__(self, bug=""):
        self.k = np.random.default_rng(305).standard_normal((2, 3))
        self.bug = bug

    def forward(self, x):
        n = x.shape[1]
        self.impad = np.zeros((x.shape[0], n + 2, 2))
        for f in range(2):
            self.impad[:, 1:-1, f] = x
        self.output = np.stack([sum(self.k[f, j] * self.impad[:, j:j + n, f] for j in range(3))
                                for f in range(2)], axis=-1)

    def backward(self, d):
        n = d.shape[1]
        self.dk = np.array([[(d[..., f] * self.impad[:, j:j + n, f]).sum() for j in range(3)]
                            for f in range(2)])
        dpad = np.zeros(self.impad.shape[:2])
        for f in range(2 if self.bug != "one" else 1):
            for j in range(3):
                dpad[:, j:j + n] += self.k[f, j] * d[..., f]
        self.dinputs = dpad[:, 1:-1]


@pytest.mark.parametrize("bug, failing", [("", None), ("one", ["x0"])])
def test_a_padded_copy_of_the_input_per_filter_is_no_second_output(bug, failing):
    x = np.random.default_rng(306).standard_normal((2, 5))
    res = gradcheck.check_layer(_TiledConv(bug), x)
    _expect(res, failing)
    assert any("stores in output" in n for n in res.notes), res.notes


def test_only_an_arrangement_of_every_input_value_and_zeros_is_a_copy():
    """A ReLU of the padded input drops the negative values: it is no copy."""
    from gradcheck.read._discovery import padded

    x = np.random.default_rng(307).standard_normal((2, 4))
    pad = np.pad(x, 1)
    assert padded(pad, x) and padded(np.stack([pad, pad]), x)
    assert not padded(np.maximum(pad, 0), x) and not padded(2 * pad, x)
    assert not padded(x.copy(), x) and not padded(np.zeros((4, 6)), np.zeros((2, 4)))


# -- check_vjp: gradients in dicts named for the dict inputs, with the activations' beside ---
def _block(x, fc1, fc2):
    h = np.maximum(x @ fc1["W"] + fc1["b"], 0)
    return h @ fc2["W"] + fc2["b"], (x, h, fc1, fc2)


def _block_back(bug=""):
    def backward_block(dy, cache):
        x, h, fc1, fc2 = cache
        dh = (dy @ fc2["W"].T) * (h > 0)
        return {"dx": dh @ fc1["W"].T,
                "fc1": {"dW": x.T @ dh, "db": dh.sum(0)},
                "fc2": {"dW": h.T @ dy, "db": dy.mean(0) if bug else dy.sum(0)}}
    return backward_block


def _block_inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 3)),
            {"W": rng.standard_normal((3, 5)), "b": rng.standard_normal(5) + 0.5},
            {"W": rng.standard_normal((5, 2)), "b": rng.standard_normal(2)}]


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["fc2['b']"])])
def test_a_dict_input_s_gradients_in_a_dict_under_its_own_name(bug, failing):
    _expect(gradcheck.check_vjp(_block, _block_back(bug), _block_inputs(310)), failing)


def _model(X, parameters):
    a1 = np.tanh(parameters["W1"] @ X + parameters["b1"])
    return float(np.sum(parameters["W2"] @ a1 + parameters["b2"]) ** 2), (X, a1, parameters)


def _model_back(bug=""):
    def model_backward(cache):  # a loss's backward: its activations' gradients beside
        X, a1, p = cache
        s = float(np.sum(p["W2"] @ a1 + p["b2"]))
        dz2 = np.full((1, X.shape[1]), 2 * s)
        dA1 = p["W2"].T @ dz2
        dz1 = dA1 * (1 - a1 ** 2) * (0.5 if bug else 1.0)
        return {"dA1": dA1, "dA0": p["W1"].T @ dz1, "dW2": dz2 @ a1.T,
                "db2": dz2.sum(1, keepdims=True), "dW1": dz1 @ X.T,
                "db1": dz1.sum(1, keepdims=True)}
    return model_backward


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["parameters['W1']",
                                                                 "parameters['b1']"])])
def test_activation_gradients_beside_every_parameter_s_are_left_unread(bug, failing):
    rng = np.random.default_rng(311)
    p = {"W1": rng.standard_normal((3, 2)), "b1": rng.standard_normal((3, 1)),
         "W2": rng.standard_normal((1, 3)), "b2": rng.standard_normal((1, 1))}
    x = rng.standard_normal((2, 4))
    res = gradcheck.check_vjp(_model, _model_back(bug), [x, p])  # dA0 has X's shape: X's
    assert res.status == "bad-protocol" and "wrt=[1]" in res.message, res.report()  # misnamed?
    res = gradcheck.check_vjp(_model, _model_back(bug), [x, p], wrt=[1])
    _expect(res, failing)
    assert any("dA0, dA1 beside" in n for n in res.notes), res.notes


def test_activation_gradients_of_no_input_s_shape_are_left_unread():
    def model_backward(cache):
        g = _model_back()(cache)
        g.pop("dA0")  # dA1 alone: of no input's shape
        return g

    rng = np.random.default_rng(344)
    p = {"W1": rng.standard_normal((3, 2)), "b1": rng.standard_normal((3, 1)),
         "W2": rng.standard_normal((1, 3)), "b2": rng.standard_normal((1, 1))}
    res = gradcheck.check_vjp(_model, model_backward, [rng.standard_normal((2, 4)), p])
    assert res.passed and any("dA1 beside" in n for n in res.notes), res.report()


def test_a_key_naming_no_input_stays_an_error_while_a_part_has_none():
    def forgetful(cache):
        g = _model_back()(cache)
        g["dw1"] = g.pop("dW1")  # misnamed: W1 would have none
        return g

    rng = np.random.default_rng(312)
    p = {"W1": rng.standard_normal((3, 2)), "b1": rng.standard_normal((3, 1)),
         "W2": rng.standard_normal((1, 3)), "b2": rng.standard_normal((1, 1))}
    res = gradcheck.check_vjp(_model, forgetful, [rng.standard_normal((2, 4)), p])
    assert res.status == "bad-protocol" and "name no input" in res.message, res.report()


# -- check_vjp: one array returned for a loss of logits and float one-hot targets ------------
def _ce(logits, onehot):
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return -np.sum(onehot * np.log(p)) / len(p), (p, onehot)


def _ce_back(bug=""):
    def ce_backward(dout, cache):
        p, onehot = cache
        return dout * (p - onehot) / (1 if bug else len(p))
    return ce_backward


@pytest.mark.parametrize("bug, failing", [("", None), ("no-mean", ["logits"])])
def test_one_array_for_logits_and_one_hot_targets_is_the_logits_gradient(bug, failing):
    rng = np.random.default_rng(313)
    onehot = np.eye(3)[rng.integers(0, 3, 5)]
    res = gradcheck.check_vjp(_ce, _ce_back(bug), [rng.standard_normal((5, 3)), onehot])
    _expect(res, failing)
    assert any("not holding whole numbers" in n for n in res.notes), res.notes


# -- check_layer: one dict returned, named d + each input and each array ---------------------
class _KeyedCell:
    """``forward(x, h_prev)`` returns ``(h, cache)``; ``backward(dh, cache)`` returns one
    dict: ``dx``, ``dh_prev`` and ``dW``, ``dU``, ``db``."""

    def __init__(self, bug=""):
        rng = np.random.default_rng(314)
        self.W, self.U = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
        self.b, self.bug = rng.standard_normal(4), bug

    def forward(self, x, h_prev):
        h = np.tanh(x @ self.W + h_prev @ self.U + self.b)
        return h, (x, h_prev, h)

    def backward(self, dh, cache):
        x, h_prev, h = cache
        da = dh * (1 - h * h)
        return {"dW": x.T @ da, "dU": (h.T if self.bug == "U" else h_prev.T) @ da,
                "db": da.sum() if self.bug == "scalar" else da.sum(0),
                "dx": da @ self.W.T, "dh_prev": da @ self.U.T}


@pytest.mark.parametrize("bug, failing", [("", None), ("U", ["U"])])
def test_a_dict_of_gradients_named_for_the_inputs_and_arrays(bug, failing):
    rng = np.random.default_rng(315)
    _expect(gradcheck.check_layer(_KeyedCell(bug), rng.standard_normal((2, 3)),
                                  rng.standard_normal((2, 4))), failing)


def test_a_keyed_gradient_of_the_wrong_shape_is_a_shape_mismatch():
    rng = np.random.default_rng(316)
    res = gradcheck.check_layer(_KeyedCell("scalar"), rng.standard_normal((2, 3)),
                                rng.standard_normal((2, 4)))
    assert res.status == "shape-mismatch" and "gradient of b" in res.message, res.report()


# -- check_layer: (dX, [(W, dW), (b, db)]), each array beside its gradient -------------------
class _PairedDense:
    def __init__(self, bug=""):
        rng = np.random.default_rng(317)
        self.W, self.b, self.bug = rng.standard_normal((3, 2)), rng.standard_normal(2), bug

    def forward(self, X):
        self.X = X
        return X @ self.W + self.b

    def backward(self, dY):
        dW = self.X.T @ dY * (2 if self.bug else 1)
        return dY @ self.W.T, [(self.W, dW), (self.b, dY.sum(0))]


@pytest.mark.parametrize("bug, failing", [("", None), ("double", ["W"])])
def test_gradients_returned_beside_their_arrays_after_the_input_s(bug, failing):
    x = np.random.default_rng(318).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_PairedDense(bug), x), failing)


# -- check_layer: a loss returning {'loss': ..., 'accuracy': ...} to a backward() ----------
class _ScoredLoss:
    def __init__(self, bug=""):
        self.bug = bug

    def forward(self, logits, labels):
        p = np.exp(logits - logits.max(1, keepdims=True))
        self.p, self.labels = p / p.sum(1, keepdims=True), labels
        n = len(labels)
        return {"loss": -np.log(self.p[np.arange(n), labels]).mean(),
                "accuracy": float(np.mean(self.p.argmax(1) == labels))}

    def backward(self):
        g = self.p.copy()
        g[np.arange(len(self.labels)), self.labels] -= 1
        return g if self.bug else g / len(self.labels)


@pytest.mark.parametrize("bug, failing", [("", None), ("no-mean", ["x0"])])
def test_a_loss_returning_its_metrics_beside_it_is_read_by_what_moves(bug, failing):
    rng = np.random.default_rng(319)
    res = gradcheck.check_layer(_ScoredLoss(bug), rng.standard_normal((5, 3)),
                                rng.integers(0, 3, 5))
    _expect(res, failing)
    assert any("its output is 'loss'" in n for n in res.notes), res.notes


# -- check_grad: a flat gradient for a column point (as scipy.optimize takes it) -------------
def _lr_data():
    rng = np.random.default_rng(320)
    return rng.standard_normal((6, 4)), rng.integers(0, 2, (6, 1)), rng.standard_normal((4, 1))


def _lr_cost(X, y):
    def cost(theta):
        h = 1 / (1 + np.exp(-X @ theta))
        return float(-np.mean(y * np.log(h) + (1 - y) * np.log(1 - h)))
    return cost


def _lr_grad(X, y, bug=""):
    def grad(theta):
        h = 1 / (1 + np.exp(-X @ theta))
        return (X.T @ (h - y) / (1 if bug else len(y))).ravel()
    return grad


@pytest.mark.parametrize("bug, failing", [("", None), ("no-mean", ["theta"])])
def test_check_grad_takes_a_flat_gradient_for_a_column_point(bug, failing):
    X, y, theta = _lr_data()
    res = gradcheck.check_grad(_lr_cost(X, y), _lr_grad(X, y, bug), theta)
    _expect(res, failing)
    assert any("compared after reshaping" in n for n in res.notes), res.notes


# -- __forward__ / __backward__ stepping by a step size held on the class ---------------------
class _DunderDense:
    lr = 0.001  # on the class, not the instance

    def __init__(self, bug=""):
        rng = np.random.default_rng(321)
        self.weights = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal((2, 1))}
        self.bug = bug

    def __forward__(self, x):
        self.x = x
        return self.weights["w"] @ x + self.weights["b"]

    def __backward__(self, error):
        dx = self.weights["w"].T @ error
        self.weights["w"] -= self.lr * (error @ self.x.T) * (-1 if self.bug else 1)
        self.weights["b"] -= self.lr * error.sum(1, keepdims=True)
        return dx


@pytest.mark.parametrize("bug, failing", [("", None), ("uphill", ["weights['w']"])])
def test_own_dunder_methods_stepping_by_a_class_step_size(bug, failing):
    x = np.random.default_rng(322).standard_normal((3, 4))
    res = gradcheck.check_layer(_DunderDense(bug), x)
    _expect(res, failing)
    assert any("lr is the step size" in n for n in res.notes), res.notes


# -- check_model: a model whose grads(x, t) returns (grads, loss) ----------------------------
class _TinyModel:
    def __init__(self, bug=""):
        rng = np.random.default_rng(323)
        self.params = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
        self.bug = bug

    def loss(self, x, t):
        return float(np.mean((np.tanh(x @ self.params["W"] + self.params["b"]) - t) ** 2))

    def grads(self, x, t):
        loss = self.loss(x, t)
        h = np.tanh(x @ self.params["W"] + self.params["b"])
        dz = 2 * (h - t) / t.size * (1 - h * h)
        return {"W": x.T @ dz, "b": dz.sum(0) * (0.5 if self.bug else 1.0)}, loss

    def numerical_gradient(self, x, t):  # runs the loss for every element: no backward
        out = {}
        for k, p in self.params.items():
            g = np.zeros_like(p)
            for i in np.ndindex(p.shape):
                keep = p[i]
                p[i] = keep + 1e-6
                up = self.loss(x, t)
                p[i] = keep - 1e-6
                g[i] = (up - self.loss(x, t)) / 2e-6
                p[i] = keep
            out[k] = g
        return out


@pytest.mark.parametrize("bug, failing", [("", None), ("half", ["b"])])
def test_check_model_reads_a_method_returning_grads_and_loss(bug, failing):
    rng = np.random.default_rng(324)
    res = gradcheck.check_model(_TinyModel(bug), rng.standard_normal((5, 3)),
                                rng.standard_normal((5, 2)))
    _expect(res, failing)
    assert any("grads() returns (grads, loss)" in n for n in res.notes), res.notes


def test_check_model_takes_no_numerical_gradient_for_a_backward():
    class Numerical(_TinyModel):
        grads = None  # type: ignore[assignment]

    rng = np.random.default_rng(325)
    with pytest.raises(TypeError, match="loss_and_grads"):
        gradcheck.check_model(Numerical(), rng.standard_normal((5, 3)),
                              rng.standard_normal((5, 2)))


# -- a binary cross-entropy guarded by log(p + 1e-7): named as the guard, not a scaling ------
def test_an_epsilon_guard_is_not_called_a_constant_scaling():
    def bce(z, t):
        p = 1 / (1 + np.exp(-z))
        return -float(np.mean(t * np.log(p + 1e-7) + (1 - t) * np.log(1 - p + 1e-7)))

    def bce_grad(z, t):
        return (1 / (1 + np.exp(-z)) - t) / t.size

    z = np.random.default_rng(326).standard_normal((6, 1))
    t = np.array([[1.0], [0.0], [0.0], [1.0], [1.0], [0.0]])
    res = gradcheck.check_grad(bce, bce_grad, z, t)
    assert res.status == "mismatch", res.report()
    assert "epsilon guard" in res.inputs[0].hint and "constant scaling" not in \
        res.inputs[0].hint, res.inputs[0].hint


# -- forward(x, h_prev) one step beside forward_sequence(xs), the backward's pair ------------
class _SequenceRNN:
    def __init__(self, bug=""):
        rng = np.random.default_rng(327)
        self.W, self.U = rng.standard_normal((3, 2)), rng.standard_normal((2, 2)) * 0.5
        self.bug = bug

    def forward(self, x, h_prev):
        return np.tanh(x @ self.W + h_prev @ self.U)

    def forward_sequence(self, xs):
        h, self.caches, hs = np.zeros(2), [], []
        for x in xs:
            self.caches.append((x, h))
            h = self.forward(x, h)
            hs.append(h)
        self.hs = hs
        return np.stack(hs)

    def backward(self, d_outputs):
        self.dW, self.dU = np.zeros_like(self.W), np.zeros_like(self.U)
        dh = np.zeros(2)
        for t in reversed(range(len(self.caches))):
            x, h_prev = self.caches[t]
            da = (d_outputs[t] + dh) * (1 - self.hs[t] ** 2)
            self.dW += np.outer(x, da)
            self.dU += np.outer(self.hs[t] if self.bug else h_prev, da)
            dh = da @ self.U.T


@pytest.mark.parametrize("bug, failing", [("", None), ("h_t", ["U"])])
def test_the_forward_taking_the_inputs_given_pairs_with_the_backward(bug, failing):
    xs = np.random.default_rng(328).standard_normal((4, 3))
    res = gradcheck.check_layer(_SequenceRNN(bug), xs)
    _expect(res, failing)
    assert any("forward_sequence(), which can" in n for n in res.notes), res.notes


# -- (dx, {'W': {'f': dWf, 'i': dWi}, ...}): per-gate gradients of a cell's dicts --------------
class _GateCell:
    def __init__(self):
        rng = np.random.default_rng(329)
        self.W = {g: rng.standard_normal((3, 2)) for g in "fi"}
        self.b = {g: rng.standard_normal(2) for g in "fi"}


class _GatedLayer:
    """Two gates of a cell object: ``y = sigmoid(x W_f + b_f) * tanh(x W_i + b_i)``; the
    backward returns ``(dx, {'W': {gate: ...}, 'b': {gate: ...}})``."""

    def __init__(self, bug=""):
        self.cell, self.bug = _GateCell(), bug

    def forward(self, x):
        c = self.cell
        f = 1 / (1 + np.exp(-(x @ c.W["f"] + c.b["f"])))
        i = np.tanh(x @ c.W["i"] + c.b["i"])
        self.cache = (x, f, i)
        return f * i

    def backward(self, dy):
        x, f, i = self.cache
        df, di = dy * i * f * (1 - f), dy * f * (1 - i * i)
        c = self.cell
        return df @ c.W["f"].T + di @ c.W["i"].T, {
            "W": {"f": x.T @ df, "i": x.T @ di},
            "b": {"f": df.sum(0), "i": di.mean(0) if self.bug else di.sum(0)}}


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["cell.b['i']"])])
def test_per_gate_gradients_in_dicts_of_dicts_past_the_cell_holding_them(bug, failing):
    x = np.random.default_rng(330).standard_normal((4, 3))
    _expect(gradcheck.check_layer(_GatedLayer(bug), x), failing)


# -- a stepping backward that steps a bias the forward forgot -------------------------------
class _SteppingDense:
    def __init__(self, bug="", momentum=False):
        rng = np.random.default_rng(331)
        self.weights, self.bias = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
        self.bug, self.momentum = bug, momentum
        self.velocity = np.zeros_like(self.weights)

    def forward(self, input):
        self.input = input
        y = self.weights @ input
        return y if self.bug == "forgot" else y + self.bias

    def backward(self, output_gradient, learning_rate):
        dw = output_gradient @ self.input.T
        dx = self.weights.T @ output_gradient
        if self.momentum:  # a velocity from zeros: no parameter, mirrors the weights' step
            self.velocity = 0.9 * self.velocity - learning_rate * dw
            self.weights += self.velocity
        else:
            self.weights -= learning_rate * dw
        self.bias -= learning_rate * output_gradient.sum(1, keepdims=True)
        return dx


@pytest.mark.parametrize("bug, failing", [("", None), ("forgot", ["bias"])])
def test_a_step_on_a_bias_the_forward_forgot_is_checked(bug, failing):
    x = np.random.default_rng(332).standard_normal((4, 2))
    _expect(gradcheck.check_layer(_SteppingDense(bug), x), failing)


def test_a_velocity_mirroring_the_weights_step_is_no_parameter():
    x = np.random.default_rng(333).standard_normal((4, 2))
    res = gradcheck.check_layer(_SteppingDense(momentum=True), x)
    assert res.passed, res.report()
    assert "velocity" not in {i.name for i in res.inputs}, res.report()


# -- check_elementwise: a derivative written as a one-element array --------------------------
def test_a_one_element_derivative_is_taken_for_each_element():
    x = np.random.default_rng(334).standard_normal((3, 4))
    assert gradcheck.check_elementwise(lambda v: v, lambda v: np.array([1]), x).passed
    res = gradcheck.check_elementwise(lambda v: 2 * v, lambda v: np.array([1.0]), x)
    assert res.status == "mismatch", res.report()


# -- check_vjp: (dX, {'dW': dW, 'db': db}) and (dx, dk, db) for f(x, k) -----------------------
def _dense(X, W, b):
    return X @ W + b, (X, W, b)


def _dense_back(bug=""):
    def dense_backward(dZ, cache):
        X, W, b = cache
        return dZ @ W.T, {"dW": X.T @ dZ, "db": dZ.mean(0) if bug else dZ.sum(0)}
    return dense_backward


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["b"])])
def test_the_first_gradient_in_order_and_the_rest_in_a_dict_by_name(bug, failing):
    rng = np.random.default_rng(335)
    xs = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)]
    _expect(gradcheck.check_vjp(_dense, _dense_back(bug), xs), failing)


def _conv_back(bug=""):
    def conv_backward(dy, cache):  # a bias gradient for a layer with none
        x, k = cache
        return dy @ k.T, x.T @ dy * (2 if bug else 1), dy.sum(0)
    return conv_backward


@pytest.mark.parametrize("bug, failing", [("", None), ("double", ["k"])])
def test_a_gradient_past_the_inputs_is_left_unread(bug, failing):
    def conv(x, k):
        return x @ k, (x, k)

    rng = np.random.default_rng(336)
    res = gradcheck.check_vjp(conv, _conv_back(bug), [rng.standard_normal((4, 3)),
                                                      rng.standard_normal((3, 2))])
    _expect(res, failing)
    assert any("the rest naming no input" in n for n in res.notes), res.notes


# -- a forward rounding X to float32: the other gradients take its rounded values ------------
def _rounding_dense(X, W, b):
    return np.asarray(X, np.float32).astype(np.float64) @ W + b, (X, W, b)


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["b"])])
def test_gradients_taking_an_input_the_forward_rounds_are_judged_at_its_precision(bug, failing):
    rng = np.random.default_rng(337)
    xs = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)]
    res = gradcheck.check_vjp(_rounding_dense, _dense_back(bug), xs)
    _expect(res, failing)


# -- check_model: an epsilon guard's tiny errors near the output point at no layer -----------
class _TwoLayer:
    def __init__(self, scale=1.0):
        rng = np.random.default_rng(338)
        self.params = {"fc1.W": rng.standard_normal((3, 4)), "fc2.W": rng.standard_normal((4, 2))}
        self.x, self.t, self.scale = rng.standard_normal((5, 3)), np.eye(2)[[0, 1, 1, 0, 1]], scale

    def _parts(self):
        h = np.tanh(self.x @ self.params["fc1.W"])
        z = h @ self.params["fc2.W"]
        p = np.exp(z - z.max(1, keepdims=True))
        return h, p / p.sum(1, keepdims=True)

    def loss(self):
        _, p = self._parts()
        return float(-np.mean(np.sum(self.t * np.log(p + 1e-6), 1)))

    def loss_and_grads(self):
        h, p = self._parts()
        dz = (p - self.t) / len(p)
        dh = dz @ self.params["fc2.W"].T * (1 - h * h) * self.scale
        return self.loss(), {"fc2.W": h.T @ dz, "fc1.W": self.x.T @ dh}


def test_a_model_failure_points_past_a_guard_s_tiny_errors():
    res = gradcheck.check_model(_TwoLayer(scale=1.5))
    fc1 = next(i for i in res.inputs if i.name == "fc1.W")
    assert not fc1.passed and "fc1 is the failing layer nearest" in fc1.hint, fc1.hint


# -- a first layer whose backward returns (dW, db) only, none of the input's shape -----------
class _FirstLayer:
    def __init__(self, bug=""):
        rng = np.random.default_rng(339)
        self.W, self.b, self.bug = rng.standard_normal((2, 3)), rng.standard_normal(3), bug

    def forward_pass(self, X):
        return X @ self.W + self.b, (X,)

    def backprop(self, out, cache, dout):  # the forward's output first, as the code has it
        (X,) = cache
        return X.T @ dout, dout.mean(0) if self.bug else dout.sum(0)


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["b"])])
def test_a_first_layer_returning_its_parameters_gradients_alone(bug, failing):
    """(dW, db) alone: a first layer, or a forgotten dX? The plain call refuses and names
    the wrt= that checks them; with it, the input is held constant."""
    x = np.random.default_rng(340).standard_normal((4, 2))
    with pytest.raises(gradcheck.LayerConventionError, match=r"wrt=\['W', 'b'\]"):
        gradcheck.check_layer(_FirstLayer(bug), x)
    res = gradcheck.check_layer(_FirstLayer(bug), x, wrt=["W", "b"])
    _expect(res, failing)
    assert next(i for i in res.inputs if i.name == "x0").status == "constant", res.report()


def test_an_output_of_an_input_s_shape_beside_another_is_explained():
    class Square:
        def __init__(self):
            self.w = np.random.default_rng(341).standard_normal((4, 4))

        def forward(self, inputs):
            z = inputs @ self.w
            return z, 1 / (1 + np.exp(-z))

        def backward(self, layer_err):
            return layer_err.dot(self.w.T)

    res = gradcheck.check_layer(Square(), np.random.default_rng(342).standard_normal((5, 4)))
    assert res.status == "error" and "check_vjp" in res.message, res.report()


# -- backprop(pooled, cache, dout): the forward's first value, its cache, then dout ----------
class _Pool:
    """A max over pairs of columns; ``forward_pass(X)`` returns ``(Z, X)`` and
    ``backprop(pooled, cache, dL_dx)`` finds the winners by comparing with ``pooled``."""

    def __init__(self, bug=""):
        self.bug = bug

    def forward_pass(self, X):
        return np.maximum(X[:, 0::2], X[:, 1::2]), X

    def backprop(self, pooled, cache, dL_dx):
        dx = np.zeros_like(cache)
        dx[:, 0::2] = dL_dx * (cache[:, 0::2] == pooled)
        dx[:, 1::2] = dL_dx * (cache[:, 1::2] == pooled)
        return dx / (2 if self.bug else 1)


@pytest.mark.parametrize("bug, failing", [("", None), ("avg", ["x0"])])
def test_a_backward_taking_the_forward_s_first_value_then_its_cache(bug, failing):
    x = np.random.default_rng(343).standard_normal((3, 6))
    res = gradcheck.check_layer(_Pool(bug), x)
    _expect(res, failing)
    assert any("the forward's first value" in n for n in res.notes), res.notes


# -- what the review of this stop found: each reading refuses what it cannot tell ---------
class _DictCell:
    """``backward(dh, cache)`` returns one dict; ``forgot`` leaves ``dh_prev`` out."""

    def __init__(self, forgot=False):
        rng = np.random.default_rng(345)
        self.Wx, self.Wh, self.b = (rng.standard_normal((3, 4)), rng.standard_normal((4, 4)),
                                    rng.standard_normal(4))
        self.forgot = forgot

    def forward(self, x, h_prev):
        h = np.tanh(x @ self.Wx + h_prev @ self.Wh + self.b)
        return h, (x, h_prev, h)

    def backward(self, dh, cache):
        x, h_prev, h = cache
        da = dh * (1 - h * h)
        g = {"dx": da @ self.Wx.T, "dWx": x.T @ da, "dWh": h_prev.T @ da, "db": da.sum(0)}
        return g if self.forgot else g | {"dh_prev": da @ self.Wh.T}


def test_a_dict_of_gradients_missing_an_input_s_is_not_read_as_a_constant():
    rng = np.random.default_rng(346)
    x, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    assert gradcheck.check_layer(_DictCell(), x, h).passed
    with pytest.raises(gradcheck.LayerConventionError, match="dict with keys dx, dWx"):
        gradcheck.check_layer(_DictCell(forgot=True), x, h)


def test_an_unread_key_of_an_unkeyed_input_s_shape_is_refused():
    def block(inputs, parameters):
        return np.tanh(inputs @ parameters["W1"]) @ parameters["W2"], (inputs, parameters)

    def block_backward(dy, cache):  # dX is the input's gradient under another name
        inputs, p = cache
        h = np.tanh(inputs @ p["W1"])
        dz = dy @ p["W2"].T * (1 - h * h)
        return {"dX": 0.5 * dz @ p["W1"].T, "dW1": inputs.T @ dz, "dW2": h.T @ dy}

    rng = np.random.default_rng(347)
    p = {"W1": rng.standard_normal((3, 4)), "W2": rng.standard_normal((4, 2))}
    res = gradcheck.check_vjp(block, block_backward, [rng.standard_normal((5, 3)), p])
    assert res.status == "bad-protocol", res.report()


def test_a_trailing_dict_missing_an_input_s_gradient_is_not_read():
    def forgetful(dZ, cache):
        dX, g = _dense_back()(dZ, cache)
        return dX, {"dW": g["dW"]}  # db forgotten

    rng = np.random.default_rng(348)
    xs = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)]
    assert not gradcheck.check_vjp(_dense, forgetful, xs).passed


class _TwoBiases:
    """``b_ih + b_hh`` stepped alike; ``forgot`` leaves ``b_hh`` out of the forward."""

    def __init__(self, forgot=False, velocity=False):
        rng = np.random.default_rng(349)
        self.W, self.forgot = rng.standard_normal((3, 5)), forgot
        self.b_ih, self.b_hh = rng.standard_normal((1, 5)), rng.standard_normal(5)
        self.vb = np.zeros((1, 5)) if velocity else None

    def forward(self, x):
        self.x = x
        y = x @ self.W + self.b_ih
        return y if self.forgot or self.vb is not None else y + self.b_hh

    def backward(self, dout, learning_rate):
        db, dx = dout.sum(0), dout @ self.W.T
        self.W -= learning_rate * (self.x.T @ dout)
        if self.vb is not None:  # a velocity of the bias's shape
            self.vb = 0.0 * self.vb - learning_rate * db
            self.b_ih += self.vb
        else:
            self.b_ih -= learning_rate * db
            self.b_hh -= learning_rate * db
        return dx


def test_a_forgotten_bias_stepped_as_its_sibling_is_checked_a_velocity_is_not():
    x = np.random.default_rng(350).standard_normal((4, 3))
    assert gradcheck.check_layer(_TwoBiases(), x).passed
    _expect(gradcheck.check_layer(_TwoBiases(forgot=True), x), ["b_hh"])
    res = gradcheck.check_layer(_TwoBiases(velocity=True), x)
    assert res.passed and "vb" not in {i.name for i in res.inputs}, res.report()


def test_check_model_takes_no_step_nor_numerical_gradient_for_a_backward():
    class Stepping(_TinyModel):
        grads = None  # type: ignore[assignment]

        def gradient_step(self, x, t, lr=0.1):  # new weights, not gradients
            g, loss = _TinyModel.grads(self, x, t)
            return {k: v - lr * g[k] for k, v in self.params.items()}, loss

    class Numerical(_TinyModel):
        grads = None  # type: ignore[assignment]

        def _loss(self, x, t):
            return _TinyModel.loss(self, x, t)

        def loss(self, x, t):
            return self._loss(x, t)

        def numerical_gradient(self, x, t):  # through a private loss: still numerical
            out = {}
            for k, p in self.params.items():
                out[k] = np.zeros_like(p)
                for i in np.ndindex(p.shape):
                    keep = p[i]
                    p[i] = keep + 1e-6
                    up = self._loss(x, t)
                    p[i] = keep - 1e-6
                    out[k][i] = (up - self._loss(x, t)) / 2e-6
                    p[i] = keep
            return out

    rng = np.random.default_rng(351)
    x, t = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    for model in (Stepping(), Numerical()):
        with pytest.raises(TypeError, match="loss_and_grads"):
            gradcheck.check_model(model, x, t)


def test_a_dict_of_gradients_beside_optimizer_moments_of_the_same_names():
    class WithMoments(_KeyedCell):
        def __init__(self):
            super().__init__()
            self.m = {"W": np.zeros((3, 4)), "U": np.zeros((4, 4)), "b": np.zeros(4)}

    rng = np.random.default_rng(352)
    res = gradcheck.check_layer(WithMoments(), rng.standard_normal((2, 3)),
                                rng.standard_normal((2, 4)))
    assert res.passed and {"W", "U", "b"} <= {i.name for i in res.inputs}, res.report()


# -- an abstract backward (raise NotImplementedError) beside the real one --------------------
class _Module:
    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        raise NotImplementedError

    def backward(self, dout):
        raise NotImplementedError("subclasses compute it")


class _AbstractBase(_Module):
    def __init__(self, bug=""):
        rng = np.random.default_rng(353)
        self.weight, self.bias, self.bug = rng.standard_normal((2, 3)), rng.standard_normal(2), bug

    def forward(self, x):
        self.x = x
        return x @ self.weight.T + self.bias

    def compute_backward_gradient(self, dout):
        self.weight_grad = dout.T @ self.x
        self.bias_grad = dout.mean(0) if self.bug else dout.sum(0)
        return dout @ self.weight


@pytest.mark.parametrize("bug, failing", [("", None), ("mean", ["bias"])])
def test_an_abstract_backward_gives_way_to_the_method_that_computes_it(bug, failing):
    x = np.random.default_rng(354).standard_normal((4, 3))
    res = gradcheck.check_layer(_AbstractBase(bug), x)
    _expect(res, failing)
    assert any("compute_backward_gradient" in n for n in res.notes), res.notes


def test_a_buffer_the_output_reads_is_refused_with_the_wrt_that_holds_it():
    class EvalNorm:  # eval mode: normalised by running statistics, no gradient for them
        def __init__(self):
            rng = np.random.default_rng(355)
            self.gamma, self.beta = rng.standard_normal(3), rng.standard_normal(3)
            self.running_mean, self.running_var = rng.standard_normal(3), rng.uniform(1, 2, 3)

        def forward(self, x):
            self.xh = (x - self.running_mean) / np.sqrt(self.running_var)
            return self.gamma * self.xh + self.beta

        def backward(self, dout):
            self.dgamma, self.dbeta = (dout * self.xh).sum(0), dout.sum(0)
            return dout * self.gamma / np.sqrt(self.running_var)

    x = np.random.default_rng(356).standard_normal((5, 3))
    with pytest.raises(gradcheck.LayerConventionError, match=r"wrt=\['x0', 'gamma', 'beta'\]"):
        gradcheck.check_layer(EvalNorm(), x)
    assert gradcheck.check_layer(EvalNorm(), x, wrt=["x0", "gamma", "beta"]).passed


# -- what the second review found ------------------------------------------------------------
def test_a_term_not_scaling_with_dout_is_no_float32_rounding():
    class Decayed(_PairedDense):
        def backward(self, dY):  # weight decay the forward never adds: a tiny real error
            dX, [(w, dW), (b, db)] = super().backward(dY)
            return dX, [(w, dW + 1e-6 * self.W), (b, db)]

    res = gradcheck.check_layer(Decayed(), np.random.default_rng(360).standard_normal((4, 3)))
    assert res.status == "mismatch" and not any("float32" in n for n in res.notes), res.report()


def test_a_backward_taking_its_input_again_is_not_given_the_output():
    class TwoInputs:
        def forward_pass(self, X, b):
            return 1 / (1 + np.exp(-(X + b))), (X, b)

        def backprop(self, X_in, cache, dout):  # the input again, under another name
            s = X_in  # BUG: forgets the sigmoid
            return dout * s * (1 - s), (dout * s * (1 - s)).sum(0)

    rng = np.random.default_rng(361)
    res = gradcheck.check_layer(TwoInputs(), rng.standard_normal((3, 4)), rng.standard_normal(4))
    assert not res.passed, res.report()


class _MasterCopy:
    def __init__(self):
        rng = np.random.default_rng(362)
        self.W, self.b = rng.standard_normal((3, 2)), rng.standard_normal(2)
        self.W_master = self.W.copy()

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout, learning_rate):
        dx = dout @ self.W.T
        self.W_master -= learning_rate * (self.x.T @ dout)
        self.W = self.W_master.copy()
        self.b -= learning_rate * dout.sum(0)
        return dx


def test_a_master_copy_the_step_reads_is_no_forgotten_parameter():
    x = np.random.default_rng(363).standard_normal((4, 3))
    res = gradcheck.check_layer(_MasterCopy(), x)
    assert res.passed and "W_master" not in {i.name for i in res.inputs}, res.report()


class _LastValues(_MasterCopy):
    """Keeps ``W_last``/``b_last``, copies of every array it steps (no momentum read)."""

    def __init__(self):
        super().__init__()
        self.W_last, self.b_last = self.W.copy(), self.b.copy()

    def backward(self, dout, learning_rate):
        dx = dout @ self.W.T
        self.W = self.W - learning_rate * (self.x.T @ dout)
        self.b = self.b - learning_rate * dout.sum(0)
        self.W_last, self.b_last = self.W.copy(), self.b.copy()
        return dx


def test_copies_of_every_array_stepped_are_last_values_not_parameters():
    x = np.random.default_rng(370).standard_normal((4, 3))
    res = gradcheck.check_layer(_LastValues(), x)
    assert res.passed and not {"W_last", "b_last"} & {i.name for i in res.inputs}, res.report()


def test_a_bias_forgotten_beside_a_sibling_it_started_equal_to_is_refused():
    class Equal(_TwoBiases):
        def __init__(self):
            super().__init__(forgot=True)
            self.b_ih, self.b_hh = np.ones((1, 5)), np.ones((1, 5))

    x = np.random.default_rng(371).standard_normal((4, 3))
    res = gradcheck.check_layer(Equal(), x)
    assert res.status == "bad-protocol" and "b_hh" in res.message, res.report()


def test_a_base_class_s_abstract_backward_never_gives_way_to_a_numerical_one():
    class Tanh(_Module):
        def forward(self, x):
            self.x = x
            return np.tanh(x)

        def numerical_backward(self, dout, h=1e-5):  # a reference, not a backward
            g = np.zeros_like(self.x)
            for i in np.ndindex(self.x.shape):
                p, m = self.x.copy(), self.x.copy()
                p[i] += h
                m[i] -= h
                g[i] = np.sum((np.tanh(p) - np.tanh(m)) * dout) / (2 * h)
            return g

    res = gradcheck.check_layer(Tanh(), np.random.default_rng(368).standard_normal((3, 4)))
    assert not res.passed and res.status == "error", res.report()


def test_a_bias_of_zeros_or_ones_is_no_mask():
    def forgetful(dZ, cache):
        dX, g = _dense_back()(dZ, cache)
        return dX, {"dW": g["dW"]}  # db forgotten

    rng = np.random.default_rng(369)
    for b in (np.zeros(3), np.ones(3)):
        xs = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), b]
        assert not gradcheck.check_vjp(_dense, forgetful, xs).passed


def test_a_model_helper_run_once_per_layer_is_no_numerical_gradient():
    class Deep(_TinyModel):
        def grads(self, x, t):
            g, loss = _TinyModel.grads(self, x, t)
            for _ in range(3):
                self.tanh_grad(x)
            return g, loss

        def tanh_grad(self, h):
            return 1 - np.tanh(h) ** 2

    rng = np.random.default_rng(364)
    res = gradcheck.check_model(Deep(), rng.standard_normal((5, 3)), rng.standard_normal((5, 2)))
    assert res.passed, res.report()


def test_a_zero_one_mask_input_needs_no_key_of_its_own():
    class Masked(_DictCell):
        def forward(self, x, h_prev, mask):
            h, cache = _DictCell.forward(self, x, h_prev)
            return h * mask, (*cache, mask)

        def backward(self, dh, cache):
            *rest, mask = cache
            return _DictCell.backward(self, dh * mask, tuple(rest))

    rng = np.random.default_rng(365)
    x, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    mask = np.array([[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 1.0]])
    assert gradcheck.check_layer(Masked(), x, h, mask).passed


def test_a_backward_of_its_own_left_to_do_stays_the_backward():
    class Todo:
        def __init__(self):
            self.W = np.random.default_rng(366).standard_normal((3, 2))

        def forward(self, x):
            self.x = x
            return x @ self.W

        def backward(self, dout):
            raise NotImplementedError("TODO: write the backward")

        def numerical_backward(self, dout):  # a reference helper, not the backward
            return dout @ self.W.T

    res = gradcheck.check_layer(Todo(), np.random.default_rng(367).standard_normal((4, 3)))
    assert res.status == "error" and "NotImplementedError" in res.message, res.report()


def test_a_layer_with_no_method_named_backward_is_read_by_its_names():
    class Elu:  # forward_propagate / back_propagate, no backward at all
        def forward_propagate(self, Z):
            self.Z = Z
            return np.where(Z > 0, Z, 1.2 * (np.exp(Z) - 1))

        def back_propagate(self, dA):
            return dA * np.where(self.Z > 0, 1.0, 1.2 * np.exp(self.Z))

    x = np.random.default_rng(372).standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5
    assert gradcheck.check_layer(Elu(), x).passed
