"""Name the kind of mistake from the structure of a gradient's error.

:func:`diagnose` gets, for one input checked element by element, the analytic and
numerical gradients, which elements failed, the input itself, the other inputs and the
output cotangent ``dy``; it tries the classes below in order and states the first one
whose evidence is clear. Clear means: the pattern explains the error to within the
precision of the arrays compared (the analytic side to a few hundred ulps of its dtype,
the numerical side to its own tolerance), never a best guess; no hint is better than a
wrong one.

1. zero or missing: everywhere, along one row / column / slice;
2. a constant factor (2, 1/2, 1/N with N a dimension; a relative deviation near 1) or a
   sign flip, everywhere or at some elements;
3. transposed or un-transposed operands: the analytic gradient equals ``a.T`` of the
   numerical one, or a product of ``dy`` with another input where the numerical one is
   the product with its transpose; a sum over the wrong axis of ``dy``;
4. a dropped skip branch: the error equals ``-dy``;
5. a missing term constant along an axis (softmax's sum, LayerNorm's mean), or
   proportional to the output, the centred input or the input itself (softmax's
   ``sum(dy y)``, LayerNorm's variance term, a weight-decay term);
6. a mask: the error lives exactly where the input is negative / positive, or where the
   numerical gradient exceeds the value the analytic one is clipped to;
7. repeated indices: the wrong rows are exactly those an integer input indexes twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = ["HintContext", "diagnose", "reduction_hint"]

F64 = NDArray[np.float64]
_FACTORS = ((2.0, "2"), (0.5, "1/2"), (-2.0, "-2"))


@dataclass
class HintContext:
    """What the checker knows about one input when it has checked every element.

    Attributes
    ----------
    analytic, numeric : ndarray, shape of the input
    failed : ndarray of bool, shape of the input
    x : ndarray
        The input (float64).
    others : list of (name, ndarray)
        The other inputs (integer ones included).
    dy : list of ndarray
        The cotangent of each floating output, shaped.
    y : list of ndarray
        The outputs, shaped.
    dtype : str
        The input's dtype (sets the precision of the analytic side).
    """

    analytic: F64
    numeric: F64
    failed: NDArray[np.bool_]
    x: F64
    others: list[tuple[str, np.ndarray]] = field(default_factory=list)
    dy: list[F64] = field(default_factory=list)
    y: list[F64] = field(default_factory=list)
    dtype: str = "float64"

    @property
    def error(self) -> F64:
        return self.analytic - self.numeric

    @property
    def scale(self) -> float:
        return float(np.max(np.abs(self.numeric))) or float(np.max(np.abs(self.analytic))) or 1.0

    @property
    def a_tol(self) -> float:
        """How closely the analytic side can match an exact pattern."""
        return (1e-4 if self.dtype != "float64" else 1e-9) * self.scale

    @property
    def n_tol(self) -> float:
        """How closely the numerical side can match an exact pattern."""
        return (3e-3 if self.dtype != "float64" else 1e-5) * self.scale

    def explains(self, residual: F64) -> bool:
        """Whether a pattern leaves, at every element, at most 2% of the error there
        unexplained (or less than the numerical side's precision)."""
        bound = 0.02 * np.abs(self.error) + self.n_tol * 1e-2
        return bool(np.all(np.abs(residual) <= bound))


def _near(u: F64, v: F64, tol: float) -> bool:
    return u.shape == v.shape and bool(np.all(np.abs(u - v) <= tol))


# -- 1. zero or missing ---------------------------------------------------------------------
def _zero(c: HintContext) -> str:
    f = c.failed
    if not np.all(np.abs(c.analytic[f]) <= c.a_tol * 1e-3) or not np.any(c.numeric[f]):
        return ""
    if f.all():
        return "gradient is zero everywhere while the numerical one is not: a branch is " \
               "dropped (no gradient reaches this input)"
    if c.x.ndim >= 2:
        for axis in range(c.x.ndim):
            other = tuple(k for k in range(c.x.ndim) if k != axis)
            bad = np.unique(np.nonzero(f)[axis])
            if bad.size == 1 and np.all(f.take(bad[0], axis=axis) | (c.numeric.take(
                    bad[0], axis=axis) == 0)) and other:
                kind = {0: "row", 1: "column"}.get(axis, f"slice {axis}")
                return f"gradient is zero along {kind} {int(bad[0])}: a slice is dropped"
    return f"gradient is zero at {int(f.sum())} of {f.size} elements: a branch may be dropped"


# -- 2. factors and signs ------------------------------------------------------------------
def _dims(c: HintContext) -> dict[int, str]:
    dims: dict[int, str] = {}
    for name, arr in [("this input", c.x), *c.others]:
        for k, d in enumerate(np.shape(arr)):
            dims.setdefault(int(d), f"axis {k} of {name}")
        if np.ndim(arr) >= 2:
            dims.setdefault(int(np.size(arr) // np.shape(arr)[-1]),
                            f"the rows of {name}")
    return {d: w for d, w in dims.items() if d > 1}


def _factor(c: HintContext) -> str:
    a, n = c.analytic.ravel(), c.numeric.ravel()
    nn = float(n @ n)
    if nn == 0:
        return ""
    r = float(a @ n) / nn
    if abs(r - 1) < 1e-12 or not c.explains((a - r * n).reshape(c.x.shape)):
        return ""
    if abs(r - 1) < 0.05:
        word = "large" if r > 1 else "small"
        return f"too {word} by a relative {abs(r - 1):.1e} everywhere: a constant scaling " \
               "of the whole gradient"
    if abs(r + 1) < 1e-3:
        return "sign flipped everywhere (off by a factor of -1)"
    for value, label in _FACTORS:
        if abs(r - value) <= 1e-3 * abs(value):
            return f"off by a constant factor of {label} everywhere"
    dims = _dims(c)
    for k, where in sorted(dims.items()):
        if abs(r * k - 1) < 1e-3:
            return f"off by a constant factor of 1/{k} everywhere (N = {k}, {where}): an " \
                   "extra 1/N"
        if abs(r - k) < 1e-3 * k:
            return f"off by a constant factor of {k} everywhere (N = {k}, {where}): a " \
                   "missing 1/N"
        if abs(r * r * k - 1) < 1e-3 or abs(r * r - k) < 1e-3 * k:
            root = f"sqrt({k})" if r * r > 1 else f"1/sqrt({k})"
            return f"off by a constant factor of {root} everywhere: a missing or extra " \
                   "scale"
    return f"off by a constant factor of {r:.6g} everywhere"


def _sign(c: HintContext) -> str:
    f = c.failed
    if f.all() or not _near(c.analytic[f], -c.numeric[f], c.n_tol):
        return ""
    return f"sign flipped at {int(f.sum())} of {f.size} element(s), correct elsewhere"


# -- 3. transposes, products, axes --------------------------------------------------------------
def _transposed(c: HintContext) -> str:
    if c.x.ndim == 2 and c.x.shape[0] == c.x.shape[1] and \
            _near(c.analytic.T, c.numeric, c.n_tol):
        return "the analytic gradient is the transpose of the numerical one: a missing or " \
               "extra transpose"
    return ""


_FORMS: tuple[tuple[str, Callable[[F64, F64], F64]], ...] = (
    ("dy @ {w}", lambda d, w: d @ w), ("dy @ {w}.T", lambda d, w: d @ w.T),
    ("{w} @ dy", lambda d, w: w @ d), ("{w}.T @ dy", lambda d, w: w.T @ d),
    ("dy.T @ {w}", lambda d, w: d.T @ w), ("{w}.T @ dy.T", lambda d, w: w.T @ d.T),
)


def _products(c: HintContext) -> list[tuple[str, F64]]:
    """Products of ``dy`` with every other 2-D input, in every arrangement."""
    out: list[tuple[str, F64]] = []
    for d in c.dy:
        if d.ndim < 2:
            continue
        d2 = d.reshape(-1, d.shape[-1])
        for name, w in c.others:
            if np.ndim(w) != 2 or np.asarray(w).dtype.kind != "f":
                continue
            w64 = np.asarray(w, dtype=np.float64)
            for label, form in _FORMS:
                try:
                    value = form(d2, w64)
                except ValueError:
                    continue
                if value.size == c.x.size:
                    out.append((label.format(w=name), value.reshape(c.x.shape)))
    return out


def _operands(c: HintContext) -> str:
    cands = _products(c)
    a_is = [lab for lab, v in cands if _near(c.analytic, v, c.a_tol * 10)]
    n_is = [lab for lab, v in cands if _near(c.numeric, v, c.n_tol)]
    if a_is and n_is and not set(a_is) & set(n_is):
        return f"the analytic gradient is {a_is[0]} where the numerical one is {n_is[0]}: " \
               "a missing or extra transpose of an operand"
    return ""


def _axis(c: HintContext) -> str:
    for d in c.dy:
        if d.ndim < 2:
            continue
        sums = {k: d.sum(axis=k) for k in range(d.ndim)}
        a_k = [k for k, v in sums.items() if v.shape == c.x.shape
               and _near(c.analytic, v, c.a_tol * 10)]
        n_k = [k for k, v in sums.items() if v.shape == c.x.shape
               and _near(c.numeric, v, c.n_tol)]
        if a_k and n_k and a_k[0] != n_k[0]:
            return f"dy summed over axis {a_k[0]} instead of axis {n_k[0]}: a sum over the " \
                   "wrong axis"
    return ""


# -- 4. and 5. branches and missing terms ----------------------------------------------------------
def _skip(c: HintContext) -> str:
    for d in c.dy:
        if d.shape == c.x.shape and np.any(d):
            for sign, word in ((-1.0, "dropped"), (1.0, "counted twice")):
                if _near(c.error, sign * d, c.n_tol):
                    return f"the error equals {'-' if sign < 0 else '+'}dy: the gradient of a " \
                           f"skip (residual) branch is {word}"
    return ""


def _per_row_fit(e: F64, z: F64, axis: int) -> F64 | None:
    """``e - c z`` with one ``c`` per slice along ``axis`` (least squares), or None."""
    zz = np.sum(z * z, axis=axis, keepdims=True)
    if np.any(zz == 0):
        return None
    coef = np.sum(e * z, axis=axis, keepdims=True) / zz
    return e - coef * z


def _missing_term(c: HintContext) -> str:
    e = c.error
    if not np.any(np.abs(e) > c.n_tol) or c.x.ndim == 0:
        return ""
    axis = -1
    if c.explains(e - float(np.mean(e))):
        return f"off by a constant offset of {float(np.mean(e)):.4g} everywhere: a term " \
               "added to every element"
    if c.x.ndim >= 1 and c.x.shape[axis] > 2 and \
            c.explains(e - e.mean(axis=axis, keepdims=True)):
        return "the error is constant along the last axis: a missing term such as the " \
               "mean term of a LayerNorm backward (or the sum term of a softmax backward)"
    xx = float(np.sum(c.x * c.x))
    if xx > 0:
        lam = float(np.sum(e * c.x)) / xx
        if c.explains(e - lam * c.x):
            return f"the error is the input itself times {lam:.3g}: a term proportional to " \
                   "the parameter leaks into its gradient (weight decay?)"
    candidates = [("the output", y) for y in c.y if y.shape == c.x.shape]
    if c.x.shape[axis] > 2:
        candidates.append(("the centred input", c.x - c.x.mean(axis=axis, keepdims=True)))
    fits = [(float(np.max(np.abs(rest))), label) for label, z in candidates
            if (rest := _per_row_fit(e, z, axis)) is not None and c.explains(rest)]
    if fits:
        label = min(fits)[1]
        which = "the sum(dy * y) term of a softmax backward" if label == "the output" \
            else "the variance term of a LayerNorm backward"
        return f"the error is proportional to {label} along the last axis: a missing " \
               f"term such as {which}"
    return ""


# -- 6. and 7. masks and indices ------------------------------------------------------------------
def _mask(c: HintContext) -> str:
    f = c.failed
    if f.all() or not f.any():
        return ""
    for label, where in (("negative", c.x < 0), ("positive", c.x > 0)):
        if np.array_equal(f, where & (c.numeric != c.analytic)) and np.array_equal(
                f & where, f) and np.all(np.abs(c.numeric[f]) <= c.n_tol):
            return f"the error lives exactly where the input is {label}, where the true " \
                   "gradient is zero: a mask (ReLU's) is missing in the backward"
    cap = np.abs(c.analytic[f])
    if cap.size and np.ptp(cap) <= c.a_tol * 10 and np.all(np.abs(c.numeric[f]) > cap.min()):
        return f"the analytic gradient is clipped to +-{cap.min():.3g} exactly where the " \
               "numerical one is larger: clipping inside the backward"
    return ""


def _indices(c: HintContext) -> str:
    if c.x.ndim != 2:
        return ""
    bad_rows = np.unique(np.nonzero(c.failed)[0])
    for name, t in c.others:
        t = np.asarray(t)
        if t.dtype.kind not in "iu" or t.size == 0 or t.max() >= c.x.shape[0] or t.min() < 0:
            continue
        counts = np.bincount(t.reshape(-1), minlength=c.x.shape[0])
        if bad_rows.size and np.array_equal(bad_rows, np.nonzero(counts > 1)[0]):
            return f"wrong exactly at the rows that {name} indexes more than once: repeated " \
                   "indices assigned instead of accumulated (use np.add.at)"
    return ""


def _locality(c: HintContext) -> str:
    nf = int(c.failed.sum())
    if nf <= max(3, c.failed.size // 100):
        return f"wrong at {nf} of {c.failed.size} element(s), correct elsewhere"
    return ""


_RULES = (_zero, _factor, _sign, _transposed, _operands, _axis, _skip, _indices, _mask,
          _missing_term, _locality)


def diagnose(c: HintContext) -> str:
    """The class of the error in words, or ``""`` when no class is clearly shown."""
    if c.analytic.size == 0 or not c.failed.any():
        return ""
    with np.errstate(all="ignore"):
        for rule in _RULES:
            hint = rule(c)
            if hint:
                return hint
    return ""


def reduction_hint(got: Sequence[int], expected: Sequence[int]) -> str:
    """For a shape mismatch: whether summing the leading axes gives the expected shape."""
    got, expected = tuple(got), tuple(expected)
    k = len(got) - len(expected)
    if k > 0 and got[k:] == expected:
        axes = tuple(range(k))
        return f"; summing it over the leading axes (.sum(axis={axes if k > 1 else 0})) " \
               "gives the expected shape: a gain or bias gradient left unreduced over the batch"
    return ""
