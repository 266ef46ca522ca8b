"""Hints for softmax backwards and element-wise activations (class 5 of
:mod:`gradcheck.check._hints`): a softmax's sum over the wrong axis, missing, replaced
by the Jacobian's diagonal or taken at the logits; an activation's derivative of the
wrong tensor, with a wrong formula or of another approximation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._hint_context import F64, HintContext, _near

__all__ = ["derivative_hint", "normalised_axis", "softmax_hint"]


# -- 5b. softmax backwards and element-wise derivatives --------------------------------------
def normalised_axis(p: F64, tol: float) -> int | None:
    """The axis along which ``p`` is a probability distribution (sums to 1), if one is."""
    if p.ndim == 0 or np.any(p < -tol):
        return None
    for k in (p.ndim - 1, *range(p.ndim - 1)):
        if p.shape[k] > 1 and np.all(np.abs(p.sum(axis=k) - 1) <= tol * p.shape[k]):
            return k
    return None


def _softmax_forms(d: F64, p: F64, log: bool) -> dict[str, F64]:
    """The backward of a softmax (or log-softmax) with its sum over each axis, without its
    sum, and with the Jacobian's diagonal alone."""
    if log:
        forms = {f"axis {k}": d - p * d.sum(axis=k, keepdims=True) for k in range(d.ndim)}
        forms["none"] = d
        forms["diag"] = d * (1 - p)
    else:
        forms = {f"axis {k}": p * (d - (d * p).sum(axis=k, keepdims=True))
                 for k in range(d.ndim)}
        forms["none"] = p * d
        forms["diag"] = d * p * (1 - p)
    return forms


def softmax_hint(c: HintContext) -> str:
    """A softmax backward whose sum runs over the wrong axis, is missing, or is replaced by
    the Jacobian's diagonal ``p (1 - p)``: the output must be a softmax of this input."""
    for d, y in zip(c.dy, c.y, strict=False):
        if d.shape != c.x.shape or y.shape != c.x.shape or c.x.ndim == 0:
            continue
        tol = 1e-9 if c.dtype == "float64" else 1e-5
        for log, p in ((False, y), (True, np.exp(np.minimum(y, 0.0)))):
            m = normalised_axis(p, tol)
            if m is None or (log and np.any(y > tol)):
                continue
            forms = _softmax_forms(d, p, log)
            if not _near(c.numeric, forms[f"axis {m}"], c.n_tol):
                continue
            at_x = _softmax_forms(d, c.x, log)[f"axis {m}"]
            if _near(c.analytic, at_x, c.a_tol * 10) and c.explains(
                    c.error - (at_x - forms[f"axis {m}"])):
                return f"a {'log-softmax' if log else 'softmax'} backward evaluated at the " \
                       "input (the logits) instead of the probabilities: the derivative of " \
                       "the wrong tensor"
            wrong = [k for k, v in forms.items() if k != f"axis {m}"
                     and _near(c.analytic, v, c.a_tol * 10) and c.explains(
                         c.error - (v - forms[f"axis {m}"]))]
            if not wrong:
                continue
            name = "log-softmax" if log else "softmax"
            if wrong[0] == "none":
                return f"a {name} backward without its sum term: the analytic gradient " \
                       f"matches the {name} backward with the sum over axis {m} left out"
            if wrong[0] == "diag":
                return f"only the diagonal of the {name} Jacobian: the analytic gradient " \
                       "is dy times the element-wise derivative, the sum term over " \
                       f"axis {m} is missing"
            return f"a {name} backward whose sum runs over {wrong[0]} instead of axis " \
                   f"{m} (the axis the {name} normalises): a sum over the wrong axis"
    return ""


def _sig(u: F64) -> F64:
    return 0.5 * (1.0 + np.tanh(0.5 * u))


def _gelu_exact(u: F64) -> F64:
    from scipy.special import erf

    return 0.5 * (1 + erf(u / np.sqrt(2.0))) + u * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)


def _gelu_tanh(u: F64) -> F64:
    k = np.sqrt(2 / np.pi)
    t = np.tanh(k * (u + 0.044715 * u * u * u))
    return 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * k * (1 + 3 * 0.044715 * u * u)


def _gelu_sigmoid(u: F64) -> F64:
    s = _sig(1.702 * u)
    return s + 1.702 * u * s * (1 - s)


@dataclass(frozen=True)
class _Derivative:
    """One way to write an activation's derivative from its input ``x`` and output ``y``.

    ``family`` groups the ways of one activation; ``flaw`` says what is wrong with this
    way when the numerical gradient shows another of the family ("" for a right way,
    a variant name for approximations, which are right under their own forward).
    """

    family: str
    formula: str
    fn: Callable[[F64, F64], F64]
    flaw: str = ""


_TENSOR = "the derivative of the wrong tensor: "
_DERIVATIVES: tuple[_Derivative, ...] = (
    _Derivative("sigmoid", "y (1 - y)", lambda x, y: y * (1 - y)),
    _Derivative("sigmoid", "sigmoid(x) (1 - sigmoid(x))", lambda x, y: _sig(x) * (1 - _sig(x))),
    _Derivative("sigmoid", "x (1 - x)", lambda x, y: x * (1 - x),
                _TENSOR + "sigmoid's s (1 - s) evaluated at the input (the pre-activation) "
                "instead of the output"),
    _Derivative("sigmoid", "sigmoid(y) (1 - sigmoid(y))", lambda x, y: _sig(y) * (1 - _sig(y)),
                _TENSOR + "sigmoid's derivative taken of the output instead of the input "
                "(the output passed through sigmoid again)"),
    _Derivative("tanh", "(1 - y^2)", lambda x, y: 1 - y * y),
    _Derivative("tanh", "(1 - tanh(x)^2)", lambda x, y: 1 - np.tanh(x) ** 2),
    _Derivative("tanh", "(1 - x^2)", lambda x, y: 1 - x * x,
                _TENSOR + "tanh's 1 - t^2 evaluated at the input (the pre-activation) "
                "instead of the output"),
    _Derivative("tanh", "(1 - tanh(y)^2)", lambda x, y: 1 - np.tanh(y) ** 2,
                _TENSOR + "tanh's derivative taken of the output instead of the input "
                "(the output passed through tanh again)"),
    _Derivative("tanh", "(1 - y)", lambda x, y: 1 - y,
                "a wrong derivative formula: tanh's derivative written 1 - t instead of "
                "1 - t^2"),
    _Derivative("softplus", "sigmoid(x)", lambda x, y: _sig(x)),
    _Derivative("softplus", "sigmoid(y)", lambda x, y: _sig(y),
                _TENSOR + "softplus's derivative sigmoid taken of the output instead of the "
                "input"),
    _Derivative("GELU", "(Phi(x) + x phi(x))", lambda x, y: _gelu_exact(x), "exact GELU"),
    _Derivative("GELU", "GELU-tanh'(x)", lambda x, y: _gelu_tanh(x),
                "tanh approximation of GELU"),
    _Derivative("GELU", "GELU-sigmoid'(x)", lambda x, y: _gelu_sigmoid(x),
                "sigmoid approximation of GELU"),
)


def derivative_hint(c: HintContext) -> str:
    """An element-wise activation whose derivative is taken of the wrong tensor (input for
    output or the reverse), written with a wrong formula, or of another approximation."""
    for d, y in zip(c.dy, c.y, strict=False):
        if d.shape != c.x.shape or y.shape != c.x.shape:
            continue
        forms = [(w, d * w.fn(c.x, y)) for w in _DERIVATIVES]
        for wa, va in forms:
            if not _near(c.analytic, va, c.a_tol * 10):
                continue
            for wn, vn in forms:
                if wn.family != wa.family or wn.formula == wa.formula or not (
                        _near(c.numeric, vn, c.n_tol) and c.explains(c.error - (va - vn))):
                    continue
                head = f"the analytic gradient is dy * {wa.formula} where the numerical " \
                       f"one is dy * {wn.formula}: "
                if wa.family == "GELU":
                    return head + f"the derivative of the {wa.flaw} under the {wn.flaw} " \
                                  "forward: a GELU approximation mismatch"
                if wa.flaw and not wn.flaw:
                    return head + wa.flaw
    return ""
