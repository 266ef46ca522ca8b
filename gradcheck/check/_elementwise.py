"""``check_elementwise``: a function and its element-wise derivative, ``f(x)``, ``f'(x)``.

Activation and loss objects of from-scratch libraries are written as ``f(x)`` and
``f.gradient(x)``: the derivative of each output element with respect to the same
element of the input (the diagonal of the Jacobian), not a vector-Jacobian product.
The check reads them as the layer ``y = f(x)`` with the backward ``dy * f'(x)`` and
compares that with finite differences of ``f`` itself, so a function that is not
element-wise at all (a softmax whose ``gradient`` is ``p * (1 - p)``) fails too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..read._conventions import label_like, zero_one
from ..read._observe import positional_names
from ..read._protocol import ProtocolError
from ._core import raise_unless_passed, run_protocol_check
from ._options import validate_options
from ._recording import record
from ._result import CheckResult

__all__ = ["assert_elementwise", "check_elementwise"]


def _validate(f: Any, df: Any, args: tuple[Any, ...], wrt: Any) -> int:
    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    if not callable(df):
        raise TypeError(f"df must be callable (the element-wise derivative, such as "
                        f"f.gradient), got {type(df).__name__}")
    if not args:
        raise TypeError("check_elementwise needs the point: check_elementwise(f, df, x)")
    if isinstance(wrt, bool) or not isinstance(wrt, int) or not -len(args) <= wrt < len(args):
        raise ValueError(f"wrt must be the index of one argument (0 to {len(args) - 1}), got "
                         f"{wrt!r}")
    return wrt % len(args)


def _as_arrays(args: tuple[Any, ...], k: int) -> list[Any]:
    """The point as arrays: ``args[k]`` as a float array (a list, a scalar, integers
    accepted), the other lists and tuples as arrays; other constants passed as given."""
    out = list(args)
    try:
        x = np.asarray(args[k])
        out[k] = x if x.dtype.kind == "f" else x.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"args[{k}] (the argument to differentiate) must be array_like of real "
                        f"numbers, got {type(args[k]).__name__}: {exc}") from None
    for i, a in enumerate(args):
        if i != k and isinstance(a, (list, tuple)):
            out[i] = np.asarray(a)
    return out


def check_elementwise(
    f: Callable[..., Any], df: Callable[..., Any], *args: Any, wrt: int | None = None,
    **options: Any,
) -> CheckResult:
    """Check an element-wise derivative ``df`` of ``f`` (``f.gradient``, ``f.grad``).

    Parameters
    ----------
    f : callable
        ``y = f(*args)``, an array of the shape of ``args[wrt]`` whose element ``i``
        depends on element ``i`` of ``args[wrt]`` only (an activation; a loss written
        per element, such as ``0.5 * (y - p) ** 2``).
    df : callable
        ``df(*args)``: ``d y[i] / d args[wrt][i]``, same shape (not multiplied by any
        output gradient); or the Jacobian, ``(n, n)`` for ``(n,)``, one ``(n, n)`` per
        row for ``(m, n)`` (a softmax's derivative), with a note.
    *args : array_like
        The point; the arguments other than ``args[wrt]`` (targets) are held constant.
        ``args[wrt]`` is converted with ``np.asarray`` (integers to float64); lists and
        tuples among the others become arrays.
    wrt : int, optional
        The argument to differentiate (``wrt=1`` for ``loss(y, y_pred)``). Without it,
        the first, or, when the first holds labels (0 and 1, both) and one other argument
        of its shape holds floats that are not, that one (with a note); a first argument
        of other whole numbers, or labels beside several such floats, is a ``ValueError``
        asking for it.
    **options
        The option set of every check (:class:`gradcheck.Options`).

    Returns
    -------
    CheckResult
        One input result per argument (the constants with status ``constant``); kind
        ``"elementwise"``.
    """
    opts = validate_options(**options)
    k = _validate(f, df, args, 0 if wrt is None else wrt)
    if wrt is None and (j := _prediction_after_labels(args)) is not None:
        k, note = j, (f"args[0] holds labels and args[{j}] does not: args[{j}], the "
                      "prediction, is differentiated (wrt=0 for the first)")
    else:
        note = ""
    wrote: list[str] = []
    said: list[str] = []
    fwd, bwd = _as_layer(f, df, k, wrote, said)
    with np.errstate(all="ignore"):
        res = run_protocol_check(fwd, bwd, _as_arrays(args, k), [k], opts, kind="elementwise",
                                 origins={"forward": f, "backward": df})
    res.notes += [note] if note else []
    res.notes += said[:1]
    _of_the_output(res, f, df, args, k, opts)
    if wrote and res.status == "ok":
        res.passed, res.status, res.message = False, "mutation", (
            f"{wrote[0]}: the derivative is right (checked on a fresh copy per call), but "
            "a caller that uses that argument after calling it reads the overwritten values; "
            "compute into a new array instead")
    elif wrote:
        res.notes.append(f"{wrote[0]} (each call was given a fresh copy)")
    record(res)
    return res


def _of_the_output(res: CheckResult, f: Callable[..., Any], df: Callable[..., Any],
                   args: tuple[Any, ...], k: int, opts: Any) -> None:
    """A mismatch made ``bad-protocol`` when ``df`` names its argument as an output
    (``dsigmoid(a)``, ``sigmoid_grad(s)``; not ``grad(x)``) and, given ``f``'s output in
    place of argument ``k``, passes (``s * (1 - s)``), ``f(x)`` differing from ``x`` at
    every element (a relu's output is its input where positive: ``np.sign`` as its
    derivative stays a mismatch)."""
    if res.status == "mismatch" and _named_as_output(df, k) and _moves_every_element(
            f, args, k) and _passes_on_output(f, df, args, k, opts):
        res.status, res.message = "bad-protocol", (
            f"df(x{k}) is not f's derivative at x{k}, but df(f(x{k})) is, at every element: "
            "written in f's output (sigmoid's s * (1 - s) of s = f(x)), or applied to the "
            "wrong tensor: not observed. If df takes the output: "
            "check_elementwise(f, lambda x: df(f(x)), x)")
        for inp in res.inputs:  # (no hint calling it a bug: which one holds is not seen)
            if inp.hint and not inp.passed:
                inp.hint = (f"right as the derivative of f's output (df(f(x{k})) matches at "
                            "every element), wrong if its callers hand it the input")


#: An argument named as an activation's output (``a``, ``s``, ``out``, ``y_hat``...).
_OUTPUT_NAME = re.compile(r"^(a|s|t|h|o|y|f|out(put)?s?|act(ivation)?s?|sig(moid)?(_?out)?|"
                          r"tanh(_?out)?|f_?x|y_?hat|fx_?out)$", re.I)


def _named_as_output(df: Callable[..., Any], k: int) -> bool:
    names = positional_names(df) or []
    return len(names) > k and bool(_OUTPUT_NAME.match(names[k]))


def _moves_every_element(f: Callable[..., Any], args: tuple[Any, ...], k: int) -> bool:
    try:
        xs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        x = np.asarray(xs[k], dtype=np.float64)
        xs[k] = x.copy()
        return bool(np.all(np.asarray(f(*xs), dtype=np.float64) != x))
    except Exception:  # noqa: BLE001 - no evidence: the mismatch stands
        return False


def _passes_on_output(f: Callable[..., Any], df: Callable[..., Any], args: tuple[Any, ...],
                      k: int, opts: Any) -> bool:
    def df_out(*xs: Any) -> Any:
        y = f(*[np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in xs])
        return df(*[np.asarray(y) if j == k else x for j, x in enumerate(xs)])

    fwd, bwd = _as_layer(f, df_out, k, [], [])
    try:
        with np.errstate(all="ignore"):
            alt = run_protocol_check(fwd, bwd, _as_arrays(args, k), [k], opts,
                                     kind="elementwise", origins={"forward": f, "backward": df})
    except Exception:  # noqa: BLE001 - no evidence for that reading: the mismatch stands
        return False
    return alt.status == "ok"


def _prediction_after_labels(args: tuple[Any, ...]) -> int | None:
    """The one argument after a first one holding labels (0 and 1, both) that holds floats
    of the first's shape and no labels (``loss(y, y_pred)``); None when the first holds
    no labels nor whole numbers or no such argument is there. A ``ValueError`` asking for
    ``wrt=`` when the first holds whole numbers of no sign (class ids, counts, or a point
    given so) or labels beside several such arguments (a prediction and weights)."""
    try:
        arrays = [np.asarray(a) for a in args]
    except (TypeError, ValueError):
        return None
    first = arrays[0] if arrays else np.zeros(0)
    if len(arrays) < 2 or first.size < 2 or first.dtype.kind not in "biuf":
        return None
    fits = [j for j, a in enumerate(arrays[1:], 1) if a.shape == first.shape and
            a.dtype.kind == "f" and not label_like(a)]
    labels = zero_one(first) and not np.all(first)  # (0 and 1 both)
    if labels and len(fits) == 1:
        return fits[0]
    if fits and (labels or label_like(first) and bool(np.all(first >= 0))):  # (ids, counts:
        # not a point of whole values below zero, np.linspace(-2, 2, 5))
        raise ValueError(
            f"check_elementwise: args[0] holds whole numbers and args{fits} floats of its "
            "shape: targets and a prediction (loss(y, y_pred)), or a point and settings? "
            f"Name the argument to differentiate: wrt={fits[0]} or wrt=0")
    return None


def _as_layer(f: Callable[..., Any], df: Callable[..., Any], k: int, wrote: list[str],
              said: list[str]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The layer ``y = f(x)`` and its backward ``dy * df(x)``, ``df`` given the point as
    it was before ``f`` ran, on a copy (what it writes into it is put in ``wrote``); a
    ``df`` returning the Jacobian (:func:`_jacobian`) gives ``dy`` times it (said so)."""
    def fwd(*xs: Any) -> tuple[Any, Any]:
        point = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in xs]
        y = np.asarray(f(*xs))  # (f may write into its argument: df is given the point)
        if y.shape != np.shape(xs[k]):
            raise ProtocolError("bad-protocol", f"f returned shape {y.shape} for an argument of "
                                f"shape {np.shape(xs[k])}: not an element-wise function; "
                                "check it with check_vjp" + (
                                    " (a loss returning a scalar, with its gradient: "
                                    "check_grad(f, df, point, *constants), the point first: "
                                    "for loss(y, y_pred), check_grad(lambda p, y: loss(y, p), "
                                    "lambda p, y: df(y, p), y_pred, y))" if y.shape == () else ""))
        return y, point

    def bwd(dy: Any, xs: list[Any]) -> list[Any]:
        given = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in xs]
        d = np.asarray(df(*given))  # relu(x, dx=True) writing into x: the point kept
        hit = [j for j, (x, g) in enumerate(zip(xs, given, strict=True)) if isinstance(
            x, np.ndarray) and not np.array_equal(x, g, equal_nan=x.dtype.kind in "fc")]
        if hit and not wrote:
            wrote.append(f"df modified its argument x{hit[0]} in place")
        if d.size == 1 and d.shape != dy.shape and d.dtype.kind in "fiu":  # a linear
            d = np.broadcast_to(d.reshape(()), dy.shape)  # function's derivative: 1, [1]
        vjp = _jacobian(d, dy) if d.shape != dy.shape else None
        if vjp is not None and not said:
            said.append(f"df returned the Jacobian {d.shape} (not one derivative per "
                        "element): the output gradient times it is checked")
        if d.shape != dy.shape and vjp is None:
            raise ProtocolError("shape-mismatch", f"df returned shape {d.shape}, expected "
                                f"{dy.shape} (the derivative of each element)")
        grads: list[Any] = [None] * len(xs)
        grads[k] = d * dy if vjp is None else vjp
        return grads

    return fwd, bwd


def _jacobian(d: np.ndarray, dy: np.ndarray) -> np.ndarray | None:
    """``dy`` times ``d`` when ``d`` is the Jacobian of a function of a vector, ``(n, n)``
    for ``(n,)`` (``np.diag(s * (1 - s))``, a softmax's ``diag(s) - s s^T``), or one such
    per row, ``(m, n, n)`` for ``(m, n)``, or for ``(m, n, 1)`` and ``(n, 1)``, a batch
    laid out as column vectors: ``d[..., i, j]`` the derivative of output ``i`` in input
    ``j``; None for any other shape."""
    if dy.ndim in (2, 3) and dy.shape[-1] == 1 and dy.shape[-2] > 1 and d.shape == (
            *dy.shape[:-1], dy.shape[-2]):  # columns: (m, n, 1) with (m, n, n)
        got = _jacobian(d, dy[..., 0])
        return None if got is None else got[..., None]
    if dy.ndim == 1 and d.shape == (dy.size, dy.size):
        return dy @ d
    if dy.ndim == 2 and d.shape == (*dy.shape, dy.shape[1]):
        return np.einsum("bi,bij->bj", dy, d)
    return None


def assert_elementwise(f: Callable[..., Any], df: Callable[..., Any], *args: Any,
                       **options: Any) -> CheckResult:
    """Like :func:`check_elementwise`, but raise :class:`~gradcheck.GradientMismatch`
    unless it passed."""
    __tracebackhide__ = True
    return raise_unless_passed(check_elementwise(f, df, *args, **options))
