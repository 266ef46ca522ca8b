"""Bad input to the checks gets a clear status that says what was expected and what came
back, never a misleading ``mismatch``; the same checks of correct code still pass."""

from __future__ import annotations

import os

import numpy as np
import pytest

import gradcheck

_OWN_DIR = os.path.dirname(os.path.abspath(gradcheck.__file__))


# -- 1. check_vjp: dict inputs and the keys of the returned gradients -------------------------
def _matmul(x, W):
    return x @ W, (x, W)


def _dict_backward(keys):
    def backward(dy, cache):
        x, W = cache
        return {keys[0]: dy @ W.T, keys[1]: x.T @ dy}
    return backward


def _xw(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((4, 3)), "W": rng.standard_normal((3, 2))}


def test_dict_gradients_under_other_names_are_bad_protocol_naming_both_key_sets():
    res = gradcheck.check_vjp(_matmul, _dict_backward(("dx", "dW")), _xw())
    assert res.status == "bad-protocol", res.report()
    assert "['W', 'x']" in res.message and "['dW', 'dx']" in res.message
    assert "returned None" not in res.report()


def test_dict_gradients_under_the_input_names_pass():
    res = gradcheck.check_vjp(_matmul, _dict_backward(("x", "W")), _xw())
    assert res.passed, res.report()


def test_a_nested_dict_gradient_with_an_extra_key_is_bad_protocol():
    rng = np.random.default_rng(1)
    x, h = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))

    def fwd(x, state):
        return x * state["h"], (x, state["h"])

    def bwd(dy, cache, extra=False):
        x, h = cache
        d = {"h": dy * x, **({"hh": dy} if extra else {})}
        return dy * h, d

    res = gradcheck.check_vjp(fwd, lambda dy, c: bwd(dy, c, True), [x, {"h": h}])
    assert res.status == "bad-protocol", res.report()
    assert "['h']" in res.message and "['h', 'hh']" in res.message
    assert gradcheck.check_vjp(fwd, bwd, [x, {"h": h}]).passed


# -- 2. check_model: what loss_and_grads returns -----------------------------------------------
class _Regression:
    """A linear least-squares model; ``shape`` selects a protocol mistake."""

    def __init__(self, shape=None):
        rng = np.random.default_rng(3)
        self.params = {"W": rng.standard_normal((4, 2)), "b": rng.standard_normal(2)}
        self.shape = shape

    def loss(self, X, Y):
        r = X @ self.params["W"] + self.params["b"] - Y
        return 0.5 * float((r * r).sum())

    def loss_and_grads(self, X, Y):
        r = X @ self.params["W"] + self.params["b"] - Y
        loss = 0.5 * float((r * r).sum())
        grads = {"W": X.T @ r, "b": r.sum(axis=0)}
        if self.shape == "list":
            return loss, list(grads.values())
        if self.shape == "triple":
            return loss, grads, None
        if self.shape == "bare":
            return grads
        if self.shape == "typo":
            grads["db"] = grads.pop("b")
        if self.shape == "extra":
            grads["step"] = np.zeros(1)
        return loss, grads


def _data():
    rng = np.random.default_rng(4)
    return rng.standard_normal((5, 4)), rng.standard_normal((5, 2))


@pytest.mark.parametrize("shape, says", [
    ("list", "grads is a list"), ("triple", "a tuple of 3"), ("bare", "it returned dict"),
])
def test_loss_and_grads_of_the_wrong_shape_is_bad_protocol_up_front(shape, says):
    res = gradcheck.check_model(_Regression(shape), *_data())
    assert res.status == "bad-protocol", res.report()
    assert "(loss, grads)" in res.message and says in res.message
    assert res.evaluations <= 1 and not res.inputs  # stopped before any finite difference


def test_a_misspelt_gradient_name_is_bad_protocol_naming_both_names():
    res = gradcheck.check_model(_Regression("typo"), *_data())
    assert res.status == "bad-protocol", res.report()
    assert "'db'" in res.message and "'b'" in res.message


def test_a_gradient_for_no_parameter_is_a_note_and_the_check_still_runs():
    res = gradcheck.check_model(_Regression("extra"), *_data())
    assert res.passed, res.report()
    assert any("'step'" in n and "not parameters" in n for n in res.notes)


def test_a_correct_model_passes_without_notes():
    res = gradcheck.check_model(_Regression(), *_data())
    assert res.passed and not res.notes, res.report()


# -- 3. the frame named by an error; protocol problems of check_loss ---------------------------
def _square_loss(s, y):
    return 0.5 * float((s * s).sum()), s


def test_a_loss_returning_only_a_float_is_bad_protocol_saying_what_was_expected():
    s = np.random.default_rng(5).standard_normal((3, 2))
    res = gradcheck.check_loss(lambda s, y: _square_loss(s, y)[0], s, np.arange(3))
    assert res.status == "bad-protocol", res.report()
    assert "(loss, dx)" in res.message and "float" in res.message
    assert gradcheck.check_loss(_square_loss, s, np.arange(3)).passed


def _backward_without_dout(cache):
    return (2 * cache,)


def test_a_backward_with_the_wrong_signature_is_placed_at_its_definition():
    x = np.random.default_rng(6).standard_normal((3, 2))
    res = gradcheck.check_vjp(lambda x: (x * x, x), _backward_without_dout, [x])
    assert res.status == "error", res.report()
    where = res.error["where"]
    assert not where.startswith(_OWN_DIR) and "_backward_without_dout" in where
    assert __file__ in where


def test_an_exception_in_user_code_names_the_users_frame_not_gradchecks():
    def fwd(x):
        return x * 2, x

    def bwd(dy, cache):
        return (dy @ np.ones((7, 7)),)  # a shape error inside the user's own line

    res = gradcheck.check_vjp(fwd, bwd, [np.ones((3, 2))])
    assert res.status == "error", res.report()
    assert res.error["where"].startswith(__file__) and "in bwd" in res.error["where"]


# -- 4. an early status prints no coverage that reads like evidence ---------------------------
def test_an_error_result_prints_nothing_checked_not_a_coverage_count():
    def bwd(dy, cache):
        raise RuntimeError("boom")

    res = gradcheck.check_vjp(lambda x: (x, None), bwd, [np.ones(3)])
    assert res.status == "error"
    text = res.report()
    assert "nothing checked: error" in text and "checked 0/0" not in text
    ok = gradcheck.check_vjp(lambda x: (x, None), lambda dy, c: (dy,), [np.ones(3)])
    assert ok.passed and "checked 1/1 tensors" in ok.report()


# -- 5. check_elementwise takes array_like -----------------------------------------------------
def test_elementwise_accepts_a_list_and_still_catches_a_wrong_derivative():
    good = gradcheck.check_elementwise(np.tanh, lambda x: 1 - np.tanh(x) ** 2, [0.1, 0.2, -0.4])
    assert good.passed, good.report()
    assert good.inputs[0].shape == (3,) and good.inputs[0].dtype == "float64"
    bad = gradcheck.check_elementwise(np.tanh, lambda x: 1 - np.tanh(x), [0.1, 0.2, -0.4])
    assert bad.status == "mismatch", bad.report()


def test_elementwise_says_what_it_expected_for_a_non_numeric_point():
    with pytest.raises(TypeError, match=r"args\[0\] .* array_like of real numbers"):
        gradcheck.check_elementwise(np.tanh, np.cos, [object(), 1.0])


# -- 6. a loss backward that ignores dout --------------------------------------------------------
class _SoftmaxWithLoss:
    """The book's softmax-with-loss layer; ``ignore_dout`` drops the cotangent."""

    def __init__(self, ignore_dout=False, scale=1.0):
        self.ignore_dout, self.scale = ignore_dout, scale

    def forward(self, x, t):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.p, self.t = e / e.sum(axis=1, keepdims=True), t
        return -np.log(self.p[np.arange(len(t)), t]).mean()

    def backward(self, dout=1):
        dx = self.p.copy()
        dx[np.arange(len(self.t)), self.t] -= 1
        dx *= self.scale / len(self.t)
        return dx if self.ignore_dout else dx * dout


def _scores():
    rng = np.random.default_rng(7)
    return rng.standard_normal((5, 4)), rng.integers(0, 4, 5)


def test_a_loss_backward_that_ignores_dout_is_told_so():
    res = gradcheck.check_layer(_SoftmaxWithLoss(ignore_dout=True), *_scores())
    assert res.status == "mismatch", res.report()
    assert "ignores dout" in res.hint


def test_the_dout_hint_does_not_cry_wolf():
    assert gradcheck.check_layer(_SoftmaxWithLoss(), *_scores()).passed
    res = gradcheck.check_layer(_SoftmaxWithLoss(scale=2.0), *_scores())
    assert res.status == "mismatch" and "ignores dout" not in res.hint, res.report()
