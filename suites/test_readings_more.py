"""More readings by observation (corpora 20-26): each with a correct subject that passes
and a broken twin that fails with a gradient verdict, and a refusal where observation
leaves a choice."""

import numpy as np
import pytest

import gradcheck


def _failing(res: gradcheck.CheckResult) -> list[str]:
    return [i.name for i in res.inputs if not i.passed]


# -- check_loss: items after (loss, gradient) that are no gradient ------------------------------
def _ce_with_extras(scores, labels, n, broken=False):
    """``(loss, delta, accuracy, predicted)``, the way a training loop wants it."""
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), labels]).sum() / n
    delta = p.copy()
    delta[np.arange(n), labels] -= 1
    delta /= 1 if broken else n
    pred = scores.argmax(axis=1)
    return loss, delta, float(np.mean(pred == labels)), pred


@pytest.mark.parametrize("broken", [False, True])
def test_check_loss_reads_extras_after_the_gradient(broken):
    rng = np.random.default_rng(90)
    res = gradcheck.check_loss(lambda s, y, n: _ce_with_extras(s, y, n, broken),
                               rng.standard_normal((4, 5)), np.array([0, 3, 1, 4]), 4)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()
    assert any("float64 scalar, int64 (4,)" in n for n in res.notes), res.notes


@pytest.mark.parametrize("broken", [False, True])
def test_check_loss_none_after_the_gradient_holds_a_float_target(broken):
    def mse(y, t, n):
        return 0.5 * np.sum((y - t) ** 2) / n, (y - t) / (1 if broken else n), None

    rng = np.random.default_rng(91)
    res = gradcheck.check_loss(mse, rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), 4)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x0"], res.report()
    else:
        assert res.passed, res.report()


def test_check_loss_float_array_after_the_gradient_is_no_extra():
    """A float array there may be a gradient (of a weight passed as a constant): no
    verdict on the first argument alone."""
    rng = np.random.default_rng(92)

    def fn(x, w):
        return float(np.sum((x @ w) ** 2)), 2 * (x @ w) @ w.T, np.zeros((2, 2))

    res = gradcheck.check_loss(fn, rng.standard_normal((4, 3)), rng.standard_normal((3, 5)))
    assert res.status == "bad-protocol", res.report()


def test_check_loss_float_scalar_extra_refused_beside_a_scalar_argument():
    rng = np.random.default_rng(93)

    def fn(x, scale):
        return float(scale * np.sum(x ** 2)), 2 * scale * x, float(np.sum(x ** 2))

    res = gradcheck.check_loss(fn, rng.standard_normal(3), 0.5)
    assert res.status == "bad-protocol", res.report()


# -- a loss's one array for inputs of one shape: labels first, or a difference --------------------
class _Hinge:
    """nano-keras: ``compute_loss(yTrue, yPred)``, ``compute_derivative(yTrue, yPred)``."""

    def __init__(self, broken=False):
        self.broken = broken

    def compute_loss(self, y_true, y_pred):
        return np.mean(np.maximum(0, 1 - y_true * y_pred))

    def compute_derivative(self, y_true, y_pred):
        d = -y_true * (1 - y_true * y_pred > 0).astype(float)
        return d if self.broken else d / y_true.size


def _signs_and_scores(seed):
    rng = np.random.default_rng(seed)
    return np.where(rng.random((4, 3)) < 0.5, -1.0, 1.0), 0.5 * rng.standard_normal((4, 3))


@pytest.mark.parametrize("broken", [False, True])
def test_a_labels_first_hinge_is_found_and_checked_at_the_prediction(broken):
    labels, scores = _signs_and_scores(94)
    res = gradcheck.check_layer(_Hinge(broken), labels, scores)
    if broken:
        assert res.status == "mismatch" and _failing(res) == ["x1"], res.report()
    else:
        assert res.passed, res.report()
    assert [i.status for i in res.inputs][0] == "constant", res.report()


class _SquaredError:
    """``compute_loss(y_true, y_pred)`` and its derivative with respect to ``y_pred``."""

    def __init__(self, sign=1.0):
        self.sign = sign

    def compute_loss(self, y_true, y_pred):
        return np.mean(np.square(y_true - y_pred))

    def compute_derivative(self, y_true, y_pred):
        return self.sign * 2 * (y_pred - y_true) / y_true.size


class _PredFirst(_SquaredError):
    def compute_loss(self, y_pred, y_true):
        return super().compute_loss(y_true, y_pred)

    def compute_derivative(self, y_pred, y_true):
        return super().compute_derivative(y_true, y_pred)


def test_a_difference_loss_of_two_float_inputs_is_read_as_the_first_s_with_a_note():
    """Which of two float inputs is the prediction cannot be observed (a sign flip of one's
    gradient is the other's): the first, as documented, and a note naming wrt=."""
    rng = np.random.default_rng(95)
    target, pred = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    res = gradcheck.check_layer(_PredFirst(), pred, target)
    assert res.passed, res.report()
    assert any("if x1 is the prediction, name it: wrt=['x1']" in n for n in res.notes)
    bad = gradcheck.check_layer(_PredFirst(-1.0), pred, target)
    assert bad.status == "mismatch" and _failing(bad) == ["x0"], bad.report()
    assert gradcheck.check_layer(_SquaredError(), target, pred, wrt=["x1"]).passed
    half = gradcheck.check_layer(_SquaredError(0.5), target, pred, wrt=["x1"])
    assert half.status == "mismatch" and _failing(half) == ["x1"], half.report()
