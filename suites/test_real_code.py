"""Backward passes written the way public NumPy code bases write them, each checked with
the plainest call the README documents, correct and with one classic bug.

Styles: course solutions (cs231n ``layers.py``: ``out, cache = f_forward(...)``,
``f_backward(dout, cache)``), a book's layers (``self.params = [W, b]``, ``self.grads``
lists filled with ``[...] =``), numpy-ml objects (``parameters``/``gradients`` dicts,
``fn``/``grad`` activations), ML-From-Scratch (``__call__``/``gradient`` activations and
element-wise losses), and small from-scratch libraries (parameter objects in sub-layers,
``Add([a, b])``, ``backward(dh, dc)``, weights built on the first forward).

A correct case must pass; a broken one must end ``mismatch`` (a wrong gradient found,
not a protocol complaint). The share of right verdicts is the issue's benchmark figure.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import gradcheck
from gradcheck import CheckResult

RNG = np.random.default_rng(19)


def _sig(z):
    return 1 / (1 + np.exp(-z))


# == cs231n-style functions ==================================================================
def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1) @ w + b
    return out, (x, w, b)


def affine_backward(dout, cache, broken=False):
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout
    db = dout.mean(axis=0) if broken else dout.sum(axis=0)
    return dx, dw, db


def relu_forward(x):
    return np.maximum(0, x), x


def relu_backward(dout, cache, broken=False):
    x = cache
    return dout.copy() if broken else dout * (x > 0)


def batchnorm_forward(x, gamma, beta, bn_param):
    eps = bn_param.get("eps", 1e-5)
    mu = x.mean(axis=0)
    xc = x - mu
    std = np.sqrt((xc ** 2).mean(axis=0) + eps)
    xn = xc / std
    return gamma * xn + beta, (xn, gamma, std)


def batchnorm_backward(dout, cache, broken=False):
    xn, gamma, std = cache
    dbeta = dout.sum(axis=0)
    dgamma = (dout * xn).sum(axis=0)
    dxn = dout * gamma
    mean_term = 0.0 if broken else dxn.mean(axis=0)
    dx = (dxn - mean_term - xn * (dxn * xn).mean(axis=0)) / std
    return dx, dgamma, dbeta


def dropout_forward(x, dropout_param):
    p = dropout_param["p"]
    rng = np.random.default_rng(dropout_param["seed"])
    mask = (rng.random(x.shape) < p) / p
    return x * mask, (dropout_param, mask)


def dropout_backward(dout, cache, broken=False):
    _, mask = cache
    return dout * (mask > 0) if broken else dout * mask


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    H = prev_h.shape[1]
    a = x @ Wx + prev_h @ Wh + b
    i, f, o = _sig(a[:, :H]), _sig(a[:, H:2 * H]), _sig(a[:, 2 * H:3 * H])
    g = np.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    return next_h, next_c, (x, prev_h, prev_c, Wx, Wh, i, f, o, g, next_c)


def lstm_step_backward(dnext_h, dnext_c, cache, broken=False):
    x, prev_h, prev_c, Wx, Wh, i, f, o, g, next_c = cache
    tc = np.tanh(next_c)
    do = dnext_h * tc
    dc = dnext_c + dnext_h * o * (1 - tc * tc)
    di, df, dg = dc * g, dc * prev_c, dc * i
    dprev_c = dc if broken else dc * f
    da = np.hstack([di * i * (1 - i), df * f * (1 - f), do * o * (1 - o), dg * (1 - g * g)])
    return da @ Wx.T, da @ Wh.T, dprev_c, x.T @ da, prev_h.T @ da, da.sum(axis=0)


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x @ Wx + prev_h @ Wh + b)
    return next_h, (x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache, broken=False):
    x, prev_h, Wx, Wh, next_h = cache
    da = dnext_h * (1 - next_h ** 2)
    dWh = prev_h.T @ (dnext_h if broken else da)
    return da @ Wx.T, da @ Wh.T, x.T @ da, dWh, da.sum(axis=0)


def word_embedding_forward(x, W):
    return W[x], (x, W)


def word_embedding_backward(dout, cache, broken=False):
    x, W = cache
    dW = np.zeros_like(W)
    if broken:
        dW[x] = dout  # repeated words overwrite instead of adding up
    else:
        np.add.at(dW, x, dout)
    return dW


def svm_loss(x, y, broken=False):
    N = x.shape[0]
    correct = x[np.arange(N), y][:, None]
    margins = np.maximum(0, x - correct + 1.0)
    margins[np.arange(N), y] = 0
    loss = margins.sum() / N
    dx = (margins > 0).astype(float)
    if not broken:
        dx[np.arange(N), y] -= dx.sum(axis=1)
    return loss, dx / N


def softmax_loss(x, y, broken=False):
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    N = x.shape[0]
    loss = -np.log(p[np.arange(N), y]).sum() / N
    dx = p.copy()
    dx[np.arange(N), y] -= 1
    return loss, dx if broken else dx / N


def _cs231n_cases() -> dict[str, Callable[[bool], CheckResult]]:
    r = np.random.default_rng(1)
    x3, w, b = r.standard_normal((4, 2, 3)), r.standard_normal((6, 5)), r.standard_normal(5)
    x, gamma, beta = r.standard_normal((8, 5)), r.standard_normal(5), r.standard_normal(5)
    H, D = 3, 4
    lstm_in = [r.standard_normal((2, D)), r.standard_normal((2, H)), r.standard_normal((2, H)),
               r.standard_normal((D, 4 * H)) * 0.5, r.standard_normal((H, 4 * H)) * 0.5,
               r.standard_normal(4 * H)]
    rnn_in = [r.standard_normal((2, D)), r.standard_normal((2, H)),
              r.standard_normal((D, H)) * 0.5, r.standard_normal((H, H)) * 0.5,
              r.standard_normal(H)]
    words, W = np.array([[0, 3, 1], [3, 3, 2]]), r.standard_normal((5, 4))
    labels = np.array([0, 2, 1, 4, 4, 3, 0, 1])
    return {
        "cs231n affine": lambda k: gradcheck.check_vjp(
            affine_forward, lambda d, c: affine_backward(d, c, k), [x3, w, b]),
        "cs231n relu (bare array)": lambda k: gradcheck.check_vjp(
            relu_forward, lambda d, c: relu_backward(d, c, k), [x]),
        "cs231n batchnorm (3 grads, wrt)": lambda k: gradcheck.check_vjp(
            batchnorm_forward, lambda d, c: batchnorm_backward(d, c, k),
            [x, gamma, beta, {"mode": "train"}], wrt=[0, 1, 2]),
        "cs231n dropout (bare array, wrt)": lambda k: gradcheck.check_vjp(
            dropout_forward, lambda d, c: dropout_backward(d, c, k),
            [x, {"p": 0.6, "mode": "train", "seed": 3}], wrt=[0]),
        "cs231n lstm step (h, c, cache)": lambda k: gradcheck.check_vjp(
            lstm_step_forward, lambda dh, dc, c: lstm_step_backward(dh, dc, c, k), lstm_in),
        "cs231n rnn step": lambda k: gradcheck.check_vjp(
            rnn_step_forward, lambda d, c: rnn_step_backward(d, c, k), rnn_in),
        "cs231n word embedding (dW only)": lambda k: gradcheck.check_vjp(
            word_embedding_forward, lambda d, c: word_embedding_backward(d, c, k),
            [words, W], wrt=[1]),
        "cs231n svm loss": lambda k: gradcheck.check_loss(
            lambda s, y: svm_loss(s, y, k), x + 0.37, labels),
        "cs231n softmax loss": lambda k: gradcheck.check_loss(
            lambda s, y: softmax_loss(s, y, k), x, labels),
    }


# == a book's layers: params / grads lists ===================================================
class MatMul:
    def __init__(self, W, broken=False):
        self.params = [W]
        self.grads = [np.zeros_like(W)]
        self.x = None
        self.broken = broken

    def forward(self, x):
        W, = self.params
        self.x = x
        return x @ W

    def backward(self, dout):
        W, = self.params
        dx = dout @ W.T
        dW = (self.x.T @ dout).T if self.broken else self.x.T @ dout
        self.grads[0][...] = dW
        return dx


class BookAffine:
    def __init__(self, W, b, broken=False):
        self.params = [W, b]
        self.grads = [np.zeros_like(W), np.zeros_like(b)]
        self.x = None
        self.broken = broken

    def forward(self, x):
        W, b = self.params
        self.x = x
        return x @ W + b

    def backward(self, dout):
        W, b = self.params
        self.grads[0][...] = self.x.T @ dout
        if not self.broken:  # broken: db left at zero
            self.grads[1][...] = dout.sum(axis=0)
        return dout @ W.T


class BookSigmoid:
    def __init__(self, broken=False):
        self.params, self.grads = [], []
        self.out = None
        self.broken = broken

    def forward(self, x):
        self.out = 1 / (1 + np.exp(-x))
        return self.out

    def backward(self, dout):
        return dout * (1.0 - self.out) * (1.0 if self.broken else self.out)


class BookEmbedding:
    def __init__(self, W, broken=False):
        self.params = [W]
        self.grads = [np.zeros_like(W)]
        self.idx = None
        self.broken = broken

    def forward(self, idx):
        W, = self.params
        self.idx = idx
        return W[idx]

    def backward(self, dout):
        dW, = self.grads
        dW[...] = 0
        if self.broken:
            dW[self.idx] = dout
        else:
            np.add.at(dW, self.idx, dout)


class SoftmaxWithLoss:
    def __init__(self, broken=False):
        self.params, self.grads = [], []
        self.y = self.t = None
        self.broken = broken

    def forward(self, x, t):
        self.t = t
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.y = e / e.sum(axis=1, keepdims=True)
        n = x.shape[0]
        return -np.sum(np.log(self.y[np.arange(n), t])) / n  # the book adds 1e-7 here

    def backward(self, dout=1):
        n = self.t.shape[0]
        dx = self.y.copy()
        dx[np.arange(n), self.t] -= 1
        if not self.broken:  # broken: dout ignored
            dx *= dout
        return dx / n


class TwoLayerNet:
    """The book's composite: the layers' params/grads concatenated into its own lists."""

    def __init__(self, broken=False):
        r = np.random.default_rng(2)
        self.layers = [BookAffine(r.standard_normal((4, 5)), r.standard_normal(5)),
                       BookSigmoid(broken), BookAffine(r.standard_normal((5, 3)),
                                                       r.standard_normal(3))]
        self.params, self.grads = [], []
        for layer in self.layers:
            self.params += layer.params
            self.grads += layer.grads

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, dout=1):
        for layer in reversed(self.layers):
            dout = layer.backward(dout)
        return dout


def _book_cases() -> dict[str, Callable[[bool], CheckResult]]:
    r = np.random.default_rng(3)
    x, sq = r.standard_normal((3, 4)), r.standard_normal((4, 4))
    idx = np.array([0, 2, 2, 5, 0])
    t = np.array([1, 0, 3])
    return {
        "book MatMul (params list)": lambda k: gradcheck.check_layer(MatMul(sq.copy(), k), x),
        "book Affine (params list)": lambda k: gradcheck.check_layer(
            BookAffine(sq.copy(), r.standard_normal(4), k), x),
        "book Sigmoid": lambda k: gradcheck.check_layer(BookSigmoid(k), x),
        "book Embedding": lambda k: gradcheck.check_layer(
            BookEmbedding(r.standard_normal((6, 3)), k), idx),
        "book SoftmaxWithLoss (dout=1)": lambda k: gradcheck.check_layer(
            SoftmaxWithLoss(k), x, t),
        "book TwoLayerNet (nested lists)": lambda k: gradcheck.check_layer(TwoLayerNet(k), x),
    }


# == numpy-ml style ==========================================================================
class FullyConnected:
    def __init__(self, n_in, n_out, broken=False):
        r = np.random.default_rng(4)
        self.parameters = {"W": r.standard_normal((n_in, n_out)), "b": r.standard_normal(n_out)}
        self.gradients = {"W": np.zeros((n_in, n_out)), "b": np.zeros(n_out)}
        self.derived_variables = {"Z": []}
        self.X = []
        self.broken = broken

    def forward(self, X):
        Z = X @ self.parameters["W"] + self.parameters["b"]
        self.X.append(X)
        self.derived_variables["Z"].append(Z)
        return np.tanh(Z)

    def backward(self, dLdy):
        X, Z = self.X[-1], self.derived_variables["Z"][-1]
        dZ = dLdy * (1 - np.tanh(Z) ** 2)
        self.gradients["W"] += X.T @ (dLdy if self.broken else dZ)  # broken: tanh' left out
        self.gradients["b"] += dZ.sum(axis=0)
        return dZ @ self.parameters["W"].T


class NmlTanh:
    def __init__(self, broken=False):
        self.broken = broken

    def fn(self, z):
        return np.tanh(z)

    def grad(self, x):
        return 1 - x ** 2 if self.broken else 1 - np.tanh(x) ** 2


# == ML-From-Scratch style ===================================================================
class MlfsSigmoid:
    def __init__(self, broken=False):
        self.broken = broken

    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        s = self.__call__(x)
        return s if self.broken else s * (1 - s)


class MlfsELU:
    def __init__(self, alpha=1.0, broken=False):
        self.alpha, self.broken = alpha, broken

    def __call__(self, x):
        return np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        neg = self.__call__(x) if self.broken else self.__call__(x) + self.alpha
        return np.where(x >= 0.0, 1, neg)


class SquareLoss:
    def __init__(self, broken=False):
        self.broken = broken

    def loss(self, y, y_pred):
        return 0.5 * np.power((y - y_pred), 2)

    def gradient(self, y, y_pred):
        return (y - y_pred) if self.broken else -(y - y_pred)


class CrossEntropy:
    def __init__(self, broken=False):
        self.broken = broken

    def loss(self, y, p):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - y * np.log(p) - (1 - y) * np.log(1 - p)

    def gradient(self, y, p):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        sign = -1 if self.broken else 1
        return - (y / p) + sign * (1 - y) / (1 - p)


def _library_object_cases() -> dict[str, Callable[[bool], CheckResult]]:
    r = np.random.default_rng(5)
    x = r.standard_normal((4, 3))
    z = r.uniform(0.2, 2.0, (3, 4)) * np.sign(r.standard_normal((3, 4)))
    y = r.integers(0, 2, (5, 2)).astype(float)
    p = r.uniform(0.1, 0.9, (5, 2))
    return {
        "numpy-ml FullyConnected (parameters/gradients)": lambda k: gradcheck.check_layer(
            FullyConnected(3, 2, k), x),
        "numpy-ml Tanh fn/grad": lambda k: gradcheck.check_elementwise(
            NmlTanh(k).fn, NmlTanh(k).grad, z),
        "ML-From-Scratch Sigmoid": lambda k: gradcheck.check_elementwise(
            MlfsSigmoid(k), MlfsSigmoid(k).gradient, z),
        "ML-From-Scratch ELU": lambda k: gradcheck.check_elementwise(
            MlfsELU(broken=k), MlfsELU(broken=k).gradient, z),
        "ML-From-Scratch SquareLoss": lambda k: gradcheck.check_elementwise(
            SquareLoss(k).loss, SquareLoss(k).gradient, y, p, wrt=1),
        "ML-From-Scratch CrossEntropy": lambda k: gradcheck.check_elementwise(
            CrossEntropy(k).loss, CrossEntropy(k).gradient, y, p, wrt=1),
    }


# == from-scratch libraries ==================================================================
class Parameter:
    def __init__(self, data):
        self.data = data
        self.grad = np.zeros_like(data)


class Linear:
    def __init__(self, n_in, n_out, seed, broken=False):
        r = np.random.default_rng(seed)
        self.weight = Parameter(r.standard_normal((n_in, n_out)) / np.sqrt(n_in))
        self.bias = Parameter(r.standard_normal(n_out))
        self.broken = broken

    def forward(self, x):
        self.x = x
        return x @ self.weight.data + self.bias.data

    def backward(self, grad):
        self.weight.grad += self.x.T @ grad
        self.bias.grad += grad.mean(axis=0) if self.broken else grad.sum(axis=0)
        return grad @ self.weight.data.T


class Tanh:
    def forward(self, x):
        self.out = np.tanh(x)
        return self.out

    def backward(self, grad):
        return grad * (1 - self.out ** 2)


class Sequential:
    def __init__(self, *layers):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, grad):
        for layer in reversed(self.layers):
            grad = layer.backward(grad)
        return grad


class LayerNorm:
    def __init__(self, d):
        self.gamma, self.beta = np.linspace(0.5, 1.5, d), np.linspace(-0.2, 0.2, d)
        self.dgamma, self.dbeta = np.zeros(d), np.zeros(d)

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        self.rstd = 1 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
        self.xn = (x - mu) * self.rstd
        return self.xn * self.gamma + self.beta

    def backward(self, dout):
        self.dgamma += (dout * self.xn).sum(axis=0)
        self.dbeta += dout.sum(axis=0)
        dxn = dout * self.gamma
        return self.rstd * (dxn - dxn.mean(axis=-1, keepdims=True)
                            - self.xn * (dxn * self.xn).mean(axis=-1, keepdims=True))


class Block:
    """x + fc2(tanh(fc1(ln(x)))): sub-layers held in attributes."""

    def __init__(self, d, broken=False):
        self.ln = LayerNorm(d)
        self.mlp = Sequential(Linear(d, 2 * d, 6), Tanh(), Linear(2 * d, d, 7))
        self.broken = broken

    def forward(self, x):
        return x + self.mlp.forward(self.ln.forward(x))

    def backward(self, dout):
        dx = self.ln.backward(self.mlp.backward(dout))
        return dx if self.broken else dx + dout  # broken: the residual path forgotten


class Mul:
    def forward(self, xs):
        self.a, self.b = xs
        return self.a * self.b

    def backward(self, dout, broken=False):
        return [dout * self.a, dout * self.b] if broken else [dout * self.b, dout * self.a]


class BrokenMul(Mul):
    def backward(self, dout, broken=True):
        return super().backward(dout, broken)


class LSTMCell:
    def __init__(self, d, h, broken=False):
        r = np.random.default_rng(8)
        self.W = r.standard_normal((d + h, 4 * h)) * 0.5
        self.b = r.standard_normal(4 * h) * 0.1
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        self.broken = broken

    def forward(self, x, h, c):
        next_h, next_c, self.cache = lstm_step_forward(
            x, h, c, self.W[:x.shape[1]], self.W[x.shape[1]:], self.b)
        return next_h, next_c

    def backward(self, dh_next, dc_next):
        dx, dh, dc, dWx, dWh, db = lstm_step_backward(dh_next, dc_next, self.cache,
                                                      self.broken)
        self.dW += np.vstack([dWx, dWh])
        self.db += db
        return dx, dh, dc


class MSE:
    def calculate(self, target, predicted):
        self.diff = predicted - target
        return np.mean(self.diff ** 2)

    def backward(self):
        return 2 * self.diff / self.diff.size


class BrokenMSE(MSE):
    def backward(self):
        return self.diff / self.diff.size


_SHARED = np.random.default_rng(11)  # stands for np.random's global state: not deep-copied


class LazyDense:
    """Weights drawn on the first forward, from a generator shared by every copy."""

    def __init__(self, units, broken=False):
        self.units, self.broken = units, broken
        self.W = None

    def forward(self, x):
        if self.W is None:
            self.W = _SHARED.standard_normal((x.shape[1], self.units)) * 0.5
            self.b = np.zeros(self.units)
            self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)
        self.x = x
        return np.tanh(x @ self.W + self.b)

    def backward(self, dout):
        out = np.tanh(self.x @ self.W + self.b)
        dz = dout * (1 - out ** 2)
        self.dW += self.x.T @ (dout if self.broken else dz)
        self.db += dz.sum(axis=0)
        return dz @ self.W.T


def _from_scratch_cases() -> dict[str, Callable[[bool], CheckResult]]:
    r = np.random.default_rng(9)
    x, a, b = r.standard_normal((4, 3)), r.standard_normal((3, 2)), r.standard_normal((3, 2))
    h, c = r.standard_normal((4, 2)), r.standard_normal((4, 2))
    target, pred = r.standard_normal((4, 3)), r.standard_normal((4, 3))
    return {
        "scratch Sequential of Linear (Parameter objects)": lambda k: gradcheck.check_layer(
            Sequential(Linear(3, 4, 0), Tanh(), Linear(4, 2, 1, k)), x),
        "scratch residual block (sub-layers)": lambda k: gradcheck.check_layer(Block(3, k), x),
        "scratch Mul([a, b]) (a list input)": lambda k: gradcheck.check_layer(
            BrokenMul() if k else Mul(), [a, b]),
        "scratch LSTM cell backward(dh, dc)": lambda k: gradcheck.check_layer(
            LSTMCell(3, 2, k), x, h, c),
        "scratch MSE calculate(target, predicted)": lambda k: gradcheck.check_layer(
            BrokenMSE() if k else MSE(), target, pred, forward="calculate", wrt=["x1"]),
        "scratch lazily built Dense": lambda k: gradcheck.check_layer(LazyDense(2, k), x),
    }


CASES = {**_cs231n_cases(), **_book_cases(), **_library_object_cases(),
         **_from_scratch_cases()}


@pytest.mark.parametrize("broken", [False, True], ids=["correct", "broken"])
@pytest.mark.parametrize("name", list(CASES))
def test_real_code_verdict(name, broken):
    res = CASES[name](broken)
    if broken:
        assert res.status == "mismatch", f"{name}: a wrong gradient not found\n{res.report()}"
    else:
        assert res.passed, f"{name}: correct code not passed\n{res.report()}"
        # evidence: every input that is not a constant or an integer was compared
        assert all(i.checked > 0 for i in res.inputs if i.status not in ("constant", "skipped"))
