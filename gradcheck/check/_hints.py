"""Name the kind of mistake from the structure of a gradient's error.

:func:`diagnose` gets, for one input checked element by element, the analytic and
numerical gradients, which elements failed, the input itself, the other inputs and the
output cotangent ``dy``; it tries the classes below in order and states the first one
whose evidence is clear. Clear means: the pattern explains the error to within the
precision of the arrays compared (the analytic side to a few hundred ulps of its dtype,
the numerical side to its own tolerance), never a best guess; no hint is better than a
wrong one.

0. the negative side only: wrong exactly where the input is negative, by one factor
   (a leaky ReLU's slope);
1. zero or missing: everywhere, along one row / column / slice;
2. a constant factor (2, 1/2, 1/N with N a dimension; a relative deviation near 1; 1/dout
   for a scalar output, a backward that ignores ``dout``) or a sign flip, everywhere or
   at some elements;
3. transposed or un-transposed operands: the analytic gradient equals ``a.T`` of the
   numerical one, the numerical one reversed along an axis (a kernel not flipped) or
   shifted by one index (off by one), or a product of ``dy`` with another input where
   the numerical one is the product with its transpose; a sum over the wrong axis of
   ``dy``;
4. a dropped skip branch: the error equals ``-dy``;
5. a softmax (or log-softmax) backward, when the output is a distribution along an axis:
   its sum over the wrong axis, missing, replaced by the Jacobian's diagonal, or taken at
   the logits; an element-wise activation's derivative taken of the wrong tensor (input
   for output or the reverse), written with a wrong formula or of another approximation
   (a table of ways to write sigmoid's, tanh's, softplus's and GELU's);
6. repeated indices: the wrong rows are exactly those an integer input indexes twice; a
   one-hot term missing or of the wrong sign: one constant at one element of every row;
7. a mask: the error lives exactly where the input is negative / positive, where the
   true gradient is zero (a mask missing), everywhere with the supports swapped (a mask
   inverted), or where the numerical gradient exceeds the value the analytic one is
   clipped to;
8. a missing term constant along any axis (softmax's sum and LayerNorm's mean along the
   last, BatchNorm's along the batch), or proportional, slice by slice along an axis, to
   the output or the centred input, or to the input itself (softmax's ``sum(dy y)``, a
   normalisation's variance term, a weight-decay term);
9. a tiny error, at most a relative 1e-5 in float64: an epsilon guard's size, stated
   with the tolerance that would accept it (the verdict stays).

:func:`unreduced_hint` serves a shape mismatch: a gradient not reduced over the batch
(summing its leading axes gives the expected shape) or transposed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ._hint_context import F64, HintContext, _near
from ._hints_activation import derivative_hint, normalised_axis, softmax_hint

__all__ = ["HintContext", "diagnose", "reduction_hint", "unreduced_hint"]

_FACTORS = ((2.0, "2"), (0.5, "1/2"), (-2.0, "-2"))


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
    arrays = [("this input", c.x), *c.others]
    for name, arr in arrays:  # a batch axis first: a weight's 1/N is the batch's
        if np.ndim(arr):
            dims.setdefault(int(np.shape(arr)[0]), f"axis 0 of {name}")
    for name, arr in arrays:
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
    if abs(r - 1) < 1e-5 and c.dtype == "float64":  # an epsilon guard's size (_tiny says)
        return ""
    ignored = _ignores_dout(c, r)
    if ignored:
        return ignored
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


def _ignores_dout(c: HintContext, r: float) -> str:
    """A scalar output (a loss) whose backward leaves out its cotangent: the factor
    ``r`` is exactly ``1 / dout``."""
    if len(c.dy) != 1 or c.dy[0].size != 1:
        return ""
    d = float(c.dy[0].reshape(-1)[0])
    if d == 0 or abs(d - 1) < 1e-3 or abs(r * d - 1) >= 1e-3:
        return ""
    return (f"the analytic gradient is the numerical one divided by dout = {d:.6g}: the "
            "backward ignores dout (a loss's backward(dout=1) must multiply its result by "
            "dout)")


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
    return _flipped(c)


def _flipped(c: HintContext) -> str:
    """The analytic gradient is the numerical one reversed along some axes (a kernel used
    unflipped: a correlation where a convolution is needed, or the reverse)."""
    long = [k for k in range(c.x.ndim) if c.x.shape[k] > 1]
    for k in long:
        if _near(np.flip(c.analytic, axis=k), c.numeric, c.n_tol):
            return f"the analytic gradient is the numerical one reversed along axis {k}: " \
                   "a missing or extra flip (a convolution kernel not flipped)"
    if len(long) >= 2 and _near(np.flip(c.analytic, axis=(long[-2], long[-1])), c.numeric,
                                c.n_tol):
        return f"the analytic gradient is the numerical one reversed along axes " \
               f"{long[-2]} and {long[-1]}: a missing or extra flip (a convolution kernel " \
               "not flipped)"
    return _shifted(c)


def _shifted(c: HintContext) -> str:
    """The analytic gradient is the numerical one moved by one index along an axis, the
    vacated edge zero (or wrapped round): an off-by-one index (a padding offset)."""
    for k in range(c.x.ndim):
        if c.x.shape[k] < 4:
            continue
        for s in (1, -1):
            rolled = np.roll(c.numeric, s, axis=k)
            edge = [slice(None)] * c.x.ndim
            edge[k] = slice(0, 1) if s > 0 else slice(-1, None)
            zero_fill = rolled.copy()
            zero_fill[tuple(edge)] = 0.0
            if _near(c.analytic, rolled, c.n_tol) or _near(c.analytic, zero_fill, c.n_tol):
                way = "up" if s > 0 else "down"
                return f"the analytic gradient is the numerical one shifted {way} by one " \
                       f"index along axis {k}: an off-by-one index (a padding or window " \
                       "offset)"
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


def _axis_word(c: HintContext, axis: int) -> str:
    return "the last axis" if axis == c.x.ndim - 1 else f"axis {axis}"


def _constant_along(c: HintContext, axes: list[int]) -> str:
    """The message for an error constant along ``axes`` (each of them)."""
    last = c.x.ndim - 1
    if axes == [last]:
        return "the error is constant along the last axis: a missing (or wrong) term such " \
               "as the mean term of a LayerNorm backward (or the sum term of a softmax " \
               "backward)"
    where = _axis_word(c, axes[0]) if len(axes) == 1 else \
        "axes " + ", ".join(str(k) for k in axes)
    if 0 in axes:
        return f"the error is constant along {where} (the same for every example of the " \
               "batch): a missing (or wrong) term such as the mean term of a BatchNorm " \
               "backward"
    return f"the error is constant along {where}: a missing (or wrong) term such as the " \
           "mean term of a normalisation over that axis"


def _proportional(c: HintContext, axes: list[int]) -> str:
    """A missing term proportional, slice by slice along an axis, to the output or to the
    input centred along that axis (softmax's sum term, a normalisation's variance term)."""
    e = c.error
    for axis in axes:
        candidates = [("the output", y) for y in c.y if y.shape == c.x.shape]
        candidates.append(("the centred input", c.x - c.x.mean(axis=axis, keepdims=True)))
        fits = [(float(np.max(np.abs(rest))), label) for label, z in candidates
                if (rest := _per_row_fit(e, z, axis)) is not None and c.explains(rest)]
        if not fits:
            continue
        label = min(fits)[1]
        where = _axis_word(c, axis)
        if label == "the output":
            y = next(y for y in c.y if y.shape == c.x.shape)
            if normalised_axis(y, 1e-9 if c.dtype == "float64" else 1e-5) != axis:
                return f"the error is proportional to the output along {where}: a missing " \
                       "or extra term proportional to the output"
            which = "the sum(dy * y) term of a softmax backward"
        elif axis == c.x.ndim - 1:
            which = "the variance term of a LayerNorm backward"
        elif axis == 0:
            which = "the variance term of a BatchNorm backward"
        else:
            which = "the variance term of a normalisation over that axis"
        return f"the error is proportional to {label} along {where}: a missing term " \
               f"such as {which}"
    return ""


def _missing_term(c: HintContext) -> str:
    e = c.error
    if not np.any(np.abs(e) > c.n_tol) or c.x.ndim == 0:
        return ""
    if c.explains(e - float(np.mean(e))):
        return f"off by a constant offset of {float(np.mean(e)):.4g} everywhere: a term " \
               "added to every element"
    # the last axis first (a LayerNorm's or a softmax's), then the others (a BatchNorm's)
    axes = [k for k in (c.x.ndim - 1, *range(c.x.ndim - 1)) if c.x.shape[k] > 2]
    constant = sorted(k for k in axes if c.explains(e - e.mean(axis=k, keepdims=True)))
    if constant:
        return _constant_along(c, constant)
    xx = float(np.sum(c.x * c.x))
    if xx > 0:
        lam = float(np.sum(e * c.x)) / xx
        if c.explains(e - lam * c.x):
            return f"the error is the input itself times {lam:.3g}: a term proportional to " \
                   "the parameter leaks into its gradient (weight decay?)"
    return _proportional(c, axes)


# -- 6. and 7. masks and indices ------------------------------------------------------------------
def _mask(c: HintContext) -> str:
    f = c.failed
    if not f.any():
        return ""
    inverted = _inverted_mask(c) if f.sum() >= 0.9 * f.size else ""
    if inverted or f.all():
        return inverted
    wrong = np.abs(c.error) > c.n_tol
    zero = (np.abs(c.numeric) <= c.n_tol) | _near_kink(c)  # the true gradient is zero
    for label, where in (("negative", c.x < 0), ("positive", c.x > 0)):
        # every failure where the input has that sign, the true gradient zero wherever it
        # has that sign (a stencil across the kink at 0 aside), and nearly every wrong
        # element there failed (one at the kink may pass with its wide tolerance)
        if np.array_equal(f & where, f) and np.all(zero[where]) and \
                f.sum() >= 0.9 * np.sum(where & wrong):
            return f"the error lives exactly where the input is {label}, where the true " \
                   "gradient is zero: a mask (ReLU's) is missing in the backward"
    cap = np.abs(c.analytic[f])  # one value is no clipping level: two at least
    if cap.size >= 2 and np.ptp(cap) <= c.a_tol * 10 and np.all(np.abs(c.numeric[f]) > cap.min()):
        return f"the analytic gradient is clipped to +-{cap.min():.3g} exactly where the " \
               "numerical one is larger: clipping inside the backward"
    if f.sum() >= 2 and np.all(np.abs(c.numeric[f]) <= c.n_tol * 1e-2):  # (the analytic
        # is not zero there: those elements failed)
        return f"the analytic gradient is non-zero at {int(f.sum())} of {f.size} elements " \
               "where the true gradient is zero, and right elsewhere: a mask (dropout's, " \
               "ReLU's, a causal or padding one) is missing in the backward"
    return ""


def _negative_side(c: HintContext) -> str:
    """Wrong exactly where the input is negative, by one factor there (zero included):
    the negative-side slope of a leaky ReLU (or the like) is wrong or missing."""
    f, neg = c.failed, c.x < 0
    wrong = np.abs(c.error) > c.n_tol
    # every failure where the input is negative, every negative element away from the kink
    # whose true gradient is not zero failed, and nearly every wrong element there failed
    # (one whose stencil straddles the kink may pass with its wide tolerance)
    live = neg & (np.abs(c.numeric) > c.n_tol) & ~_near_kink(c)  # a true gradient there
    right = ~neg & ~f & (np.abs(c.numeric) > c.n_tol) & ~_near_kink(c)  # seen right there
    if f.sum() < 3 or f.all() or not np.array_equal(f & neg, f) or not right.any() or \
            f.sum() < 0.9 * np.sum(neg & wrong) or np.any(live & ~f):
        return ""
    a, n = c.analytic[f], c.numeric[f]
    nn = float(n @ n)
    if nn == 0:  # the true gradient is zero there: a mask, not a slope
        return ""
    r = float(a @ n) / nn
    if not c.explains(np.where(f, c.analytic - r * c.numeric, 0.0)):
        return ""
    what = "missing (zero)" if abs(r) <= 1e-3 else f"off by a factor of {r:.4g}"
    return "wrong exactly where the input is negative, right where it is positive: the " \
           f"gradient of the negative side is {what}, a wrong slope of a leaky ReLU (or " \
           "of another piecewise activation)"


def _near_kink(c: HintContext) -> NDArray[np.bool_]:
    """Elements close enough to 0 that a stencil may straddle a kink at 0 (ReLU's)."""
    return np.abs(c.x) <= 0.05 * float(np.max(np.abs(c.x)))


def _inverted_mask(c: HintContext) -> str:
    """(Nearly) every element wrong, the gradient flowing exactly where the true one is
    zero and nowhere else: a mask inverted (``x < 0`` for ``x > 0``, ``1 - m`` for ``m``)."""
    f = c.failed & ~_near_kink(c)  # at a kink the numerical side may lie in between
    a, n = c.analytic[f], c.numeric[f]
    a_on, n_on = np.abs(a) > c.n_tol, np.abs(n) > c.n_tol
    a_off, n_off = np.abs(a) <= c.a_tol * 10, np.abs(n) <= c.n_tol * 1e-2
    if not (np.all(a_on ^ n_on) and np.all(a_on | a_off) and np.all(n_on | n_off)) or \
            not a_on.any() or not n_on.any():
        return ""
    return "the analytic gradient is non-zero exactly where the true gradient is zero, " \
           "and zero where it is not: an inverted mask (x < 0 for x > 0, 1 - m for m)"


def _one_hot(c: HintContext) -> str:
    """The error is one constant at exactly one element of every row (along the last
    axis) and zero elsewhere: the ``- onehot`` of a cross-entropy gradient is missing."""
    f = c.failed
    if c.x.ndim < 2 or c.x.shape[-1] < 3 or c.x.size // c.x.shape[-1] < 3 or \
            not np.all(f.sum(axis=-1) == 1):  # one element of one row is no pattern
        return ""
    v = float(np.mean(c.error[f]))
    if not c.explains(np.where(f, c.error - v, 0.0)):  # the others passed: no error there
        return ""
    where = "exactly one element of each row"
    for name, t in c.others:
        t = np.asarray(t)
        if t.dtype.kind in "iu" and t.shape == c.x.shape[:-1] and np.array_equal(
                np.argmax(f, axis=-1), t):
            where = f"exactly the element of each row that {name} names"
    return f"the error is {v:.4g} at {where} and zero elsewhere: a one-hot term missing " \
           "or of the wrong sign (the - onehot(target) of a softmax cross-entropy " \
           "gradient p - onehot)"


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
    if nf < c.failed.size and nf <= max(3, c.failed.size // 100):
        return f"wrong at {nf} of {c.failed.size} element(s), correct elsewhere"
    return ""


def _tiny(c: HintContext) -> str:
    """Every error at most a relative 1e-5 in float64, or the error's norm 1e-4 of the
    gradient's: the size a small constant in the forward (an epsilon guard) leaves when
    the backward omits it. Stated, not excused."""
    if c.dtype != "float64":
        return ""
    f = c.failed
    rel = np.abs(c.error[f]) / np.maximum(np.abs(c.numeric[f]), 1e-3 * c.scale)
    worst = float(np.max(rel))
    whole = float(np.linalg.norm(c.error) / max(float(np.linalg.norm(c.numeric)), 1e-300))
    if not worst <= 1e-5 and whole <= 1e-4:  # (log(p + 1e-5): 1e-5 / p of each element)
        return (f"the error is tiny as a whole, a relative {whole:.1e} of the gradient's norm "
                f"(up to {worst:.1e} at single elements): the size a small constant in the "
                "forward leaves when the backward omits it (an epsilon guard such as "
                "std + 1e-6 or log(p + 1e-5)); if that is the cause, the backward is the "
                "gradient of a slightly different function")
    if not worst <= 1e-5:
        return ""
    accepts = bool(np.all(np.abs(c.error[f]) <= 1e-5 * np.abs(c.numeric[f])))
    return (f"every error is tiny, at most a relative {worst:.1e}: the size a small constant "
            "in the forward leaves when the backward omits it (an epsilon guard such as "
            "log(y + 1e-7)), or constants rounded in one of the two (0.797885 for "
            "sqrt(2/pi)); if that is the cause, the backward is the gradient of a slightly "
            "different function" + (", and rtol=1e-5 accepts it" if accepts else ""))


_RULES = (_negative_side, _zero, _factor, _sign, _transposed, _operands, _axis, _skip,
          softmax_hint, derivative_hint, _indices, _one_hot, _mask, _missing_term, _tiny,
          _locality)


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


def unreduced_hint(got: Sequence[int], expected: Sequence[int]) -> str:
    """For a shape mismatch: whether summing over the batch axes gives the expected shape
    (or, for a matrix, whether its transpose has it).

    The batch axes are the leading axes ``got`` has beyond ``expected`` and the axes of
    length 1 in ``expected`` (a ``(1, D)`` parameter broadcast over rows). Returns ``""``
    when no such sum fixes the shape, and a reshape hint when those axes all have length 1.
    """
    got, expected = tuple(got), tuple(expected)
    k = len(got) - len(expected)
    if len(got) == 2 and got[::-1] == expected:
        return "its transpose has the expected shape: a missing or extra transpose"
    if k < 0:
        return ""
    keep = [k + i for i, (e, g) in enumerate(zip(expected, got[k:], strict=True))
            if e == 1 and g > 1]
    if any(e not in (1, g) for e, g in zip(expected, got[k:], strict=True)) or \
            not (k or keep):
        return ""
    axes = (*range(k), *keep)
    if all(got[a] == 1 for a in axes):
        return "it has extra axes of length 1: reshape it to the parameter's shape"
    def arg(t: Sequence[int]) -> str:
        return str(t[0]) if len(t) == 1 else str(tuple(t))

    call = f".sum(axis={arg(axes)})" if not keep else f".sum(axis={arg(axes)}, keepdims=True)"
    if keep and k:
        call = f".sum(axis={arg(range(k))}).sum(axis={arg([a - k for a in keep])}, " \
               "keepdims=True)"
    where = "the leading axes" if not keep else "the batch axes"
    return f"summing it over {where} ({call}) gives the expected shape: a gain or bias " \
           "gradient not reduced over the batch"


def reduction_hint(got: Sequence[int], expected: Sequence[int]) -> str:
    """:func:`unreduced_hint` as a clause to append to a shape-mismatch message."""
    hint = unreduced_hint(got, expected)
    return f"; {hint}" if hint else ""
