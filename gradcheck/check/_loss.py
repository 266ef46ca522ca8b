"""Losses written ``loss, dx = fn(x, *constants)`` (the cs231n style), whatever the order
of their arguments.

``check_loss`` checks the gradient ``fn`` returns as the first argument's. A loss written
labels first, ``fn(labels, predictions)``, is observed: the first argument holds whole
numbers (class ids, one-hot rows, 0/1 targets) and exactly one other float argument does
not. Its gradient is then checked as that argument's, unless the loss depends on their
difference only (a squared error): then which one is the prediction cannot be observed,
and a gradient that matches either is no verdict (whole-number predictions read the same
as labels); one that matches neither is a mismatch.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ..read._conventions import label_like as _label_like
from ..read._conventions import zero_one
from ..read._protocol import GlobalDraws, ProtocolError, map_arrays
from ._core import raise_unless_passed, run_protocol_check
from ._layer import _noted
from ._layer_errors import error_result as _error_result
from ._loss_items import Items, copies, items_read
from ._options import Options, validate_options
from ._recording import record
from ._result import CheckResult

__all__ = ["assert_loss", "check_loss"]


def check_loss(fn: Callable[..., Any], x: Any, *constants: Any, **options: Any) -> CheckResult:
    """Check a loss written as ``loss, dx = fn(x, *constants)`` (the cs231n style).

    Parameters
    ----------
    fn : callable
        Returns the scalar loss and its gradient with respect to ``x``.
    x : array_like
        The point (scores, predictions).
    *constants
        Further arguments of any type (labels, float targets), held constant.
    **options
        The option set of every check (:class:`gradcheck.Options`).

    Returns
    -------
    CheckResult
    """
    opts = validate_options("check_loss", **options)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    args, draws = [x, *constants], GlobalDraws()  # (the probes' draws are put back)
    try:
        if (later := _after_text(fn, args)) is not None:
            return _later_arrays(fn, args, later, opts)
        _differentiable_first(x)
        res = _each_reduction(fn, args, opts) if _per_sample(fn, args) else _checked(
            fn, args, opts)
    finally:
        draws.restore()
    record(res)
    return res


def _checked(fn: Callable[..., Any], args: list[Any], opts: Options) -> CheckResult:
    """:func:`check_loss`'s result, not recorded."""
    with np.errstate(all="ignore"):
        if swapped := _gradient_first(fn, args):
            fn = _swapped(fn)
        fn, items, extras = _items_of(fn, args)
        coarse = _unresolved(fn, args)
        if coarse:
            return _error_result(ProtocolError("inconclusive", coarse), opts.seed, opts.name,
                                 "loss")
        k = _prediction_after_labels(args)
        if k and _difference_only(fn, args, k):
            res = _either_argument(fn, args, k, opts)
        elif k:
            res = _labels_first(fn, args, k, opts)
        elif items:
            first, rest = (items.more[0], items.more[1:]) if items.held else (0, items.more)
            res = _loss_check(fn, args, first, opts, more=rest)
            res.notes.append(items.note)
        elif (more := _more_gradients(fn, args)) is not None:
            res = _loss_check(fn, args, 0, opts, more=more)
        else:
            res = _loss_check(fn, args, 0, opts)
            if res.status == "mismatch":
                res = _for_another_argument(fn, args, opts, res)
    if swapped:
        res.notes.append("fn returns (gradient, loss): the scalar second item is the loss, "
                         "the first, of x's shape, its gradient")
    if extras:
        res.notes.append(f"fn returned {extras} after (loss, gradient): no argument's "
                         "gradient (None, whole numbers or a float scalar, no float "
                         "argument being one), so not checked")
    return res


def _per_sample(fn: Callable[..., Any], args: list[Any]) -> bool:
    """Whether ``fn`` returns one loss per sample (a float vector as long as the first
    argument's first axis, two or more, of an argument of two axes or more) beside its
    gradients."""
    try:
        out = _on_copies(fn, args)
    except Exception:  # noqa: BLE001 - the check itself reports it
        return False
    n = np.shape(args[0])[:1] if isinstance(args[0], np.ndarray) and args[0].ndim > 1 else ()
    return isinstance(out, tuple) and len(out) >= 2 and isinstance(out[0], np.ndarray) and \
        out[0].dtype.kind == "f" and bool(n) and out[0].shape == n and n[0] > 1 and \
        np.size(out[1]) != 1  # ((gradient, loss) of a vector x: no losses per sample)


def _each_reduction(fn: Callable[..., Any], args: list[Any], opts: Options) -> CheckResult:
    """A loss per sample whose reduction cannot be observed, checked as their sum and as
    their mean: failing under both is that failure (the sum's shown); passing under one
    only is no verdict (``bad-protocol`` naming it)."""
    def reduced(how: str) -> Callable[..., Any]:
        def fn_reduced(*a: Any) -> Any:
            out = fn(*a)
            return (float(getattr(np, how)(out[0])), *out[1:]) if isinstance(out, tuple) \
                else out
        return fn_reduced
    got = {how: _checked(reduced(how), args, opts) for how in ("sum", "mean")}
    passed = [how for how, r in got.items() if r.passed]
    say = ("fn returns one loss per sample (shape "
           f"{np.shape(args[0])[:1]}): checked as their sum and as their mean")
    if not passed:
        return _noted(got["sum"], f"{say}; failing under both (the sum's result shown)")
    res = got[passed[0]]
    if len(passed) == 2:
        return _noted(res, f"{say}; passing under both")
    res.passed, res.status = False, "bad-protocol"
    res.message = (f"{say}: it passes as their {passed[0]} and not as their "
                   f"{'sum' if passed[0] == 'mean' else 'mean'}; which one your code "
                   f"minimises cannot be observed: return the {passed[0]} (a scalar loss)")
    return res


def _items_of(fn: Callable[..., Any], args: list[Any]
              ) -> tuple[Callable[..., Any], Items | None, str]:
    """``fn`` read as ``(loss, gradients...)`` with the reading of its items (see
    :mod:`._loss_items`), or with the items after the first two left unread, named."""
    extras = "" if isinstance(args[0], dict) else _extra_items(fn, args)  # (by items_read)
    if extras and (held := items_read(fn, args)) is not None and held.held:
        return held.fn, held, ""  # (cost, dweights, pred): the data first, constant
    if extras:
        return _first_two(fn), None, extras
    if _more_gradients(fn, args) is None and (items := items_read(fn, args)):
        return items.fn, items, ""
    return fn, None, ""


def _loss_check(fn: Callable[..., Any], args: list[Any], k: int, opts: Options,
                sign: float = 1.0, more: list[int] | None = None) -> CheckResult:
    """``fn``'s returned gradient (times ``sign``) checked as the gradient with respect
    to its argument ``k``, the others held constant; with ``more``, ``fn`` returns
    ``(loss, d0, d1, ...)``, one gradient per argument ``k, *more``, all checked."""
    wanted = [k, *(more or [])]

    def fwd(*a: Any) -> tuple[Any, Any]:
        out = fn(*a)
        if not isinstance(out, tuple) or len(out) != 1 + len(wanted):
            raise ProtocolError("bad-protocol", "forward: the loss function must return "
                                f"(loss, dx); it returned {type(out).__name__}"
                                + (f" of {len(out)} ({_kinds(out)}): which item is the "
                                   "gradient cannot be told; return (loss, dx)" + (
                                       ", or, for several parameters, take them as one dict"
                                       " and return (loss, {name: gradient})" if len(out) > 2
                                       else "") if isinstance(out, tuple) else "")
                                + _flag_advice(fn))
        loss = out[0]
        if not _a_number(loss):  # (a Fraction, a Decimal, a 0-d array are losses)
            raise ProtocolError("bad-protocol", "forward: the loss function must return "
                                f"(loss, dx), the loss a real scalar; it returned ({_kinds(out)}"
                                "): give check_loss a function returning (loss, dx), or "
                                "check a dict of gradients with check_vjp")
        if np.size(loss) != 1:
            raise ProtocolError("bad-protocol", "forward: the loss must be a scalar, got "
                                f"shape {np.shape(loss)}")
        loss = np.asarray(loss)  # a float32 loss keeps its dtype: its steps and tolerance
        return (loss if loss.dtype.kind == "f" else loss.astype(np.float64)).reshape(()), [
            map_arrays(d, np.copy) if _ragged(d) else np.array(d, copy=True) for d in out[1:]]
    fwd.loss_of_point = True  # type: ignore[attr-defined]  # (writes_elsewhere)

    def bwd(dy: Any, ds: Any) -> list[Any]:
        grads: list[Any] = [None] * len(args)
        for j, d in zip(wanted, ds, strict=True):  # (a dict or list of them: each array)
            grads[j] = _scaled_all(d, sign * dy)  # (fwd made every other one an array)
        return grads

    return run_protocol_check(fwd, bwd, args, wanted, opts, kind="loss")


def _scaled_all(d: Any, by: Any) -> Any:
    """Every number of a dict, list or tuple of gradients times ``by`` (a NumPy scalar's
    too: ``np.sum(z ** 2)`` for a 0-d parameter)."""
    if isinstance(d, dict):
        return {k: _scaled_all(v, by) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return type(d)(_scaled_all(v, by) for v in d)
    if isinstance(d, (np.generic, float, int)) and not isinstance(d, bool):
        return _scaled(np.asarray(d), by)
    return _scaled(d, by)


def _ragged(d: Any) -> bool:
    """A dict, or a list or tuple that is no one array (arrays of several shapes, one per
    layer): kept as it is, each array its gradient; a list of numbers is one array."""
    if isinstance(d, dict):
        return True
    if not isinstance(d, (list, tuple)):
        return False
    try:
        return np.asarray(d).dtype.kind not in "biuf"
    except ValueError:
        return True


def _scaled(d: Any, by: Any) -> Any:
    """``d * by`` in the dtype the loss function computed ``d`` in (float16)."""
    if d is None:
        return None
    g = d * by
    return g.astype(d.dtype) if isinstance(d, np.ndarray) and d.dtype.kind == "f" else g


def _a_number(x: Any) -> bool:
    """Whether ``x`` is a real number: Python's, NumPy's, a Fraction, a Decimal, or an
    array of one (not None, a dict, a set)."""
    if isinstance(x, numbers.Number) and not isinstance(x, complex):
        return True
    a = np.asarray(x) if isinstance(x, np.ndarray | np.generic) else None
    return a is not None and (a.dtype.kind in "fiub" or (
        a.dtype.kind == "O" and a.size == 1 and _a_number(a.reshape(-1)[0])))


def _kinds(out: tuple[Any, ...]) -> str:
    """The items of a returned tuple, briefly: ``float64 (8, 4)``, ``None``."""
    return ", ".join("None" if o is None else f"{np.asarray(o).dtype} {np.shape(o)}"
                     if isinstance(o, (np.ndarray, np.generic, float, int)) else
                     type(o).__name__ for o in out)


def _more_gradients(fn: Callable[..., Any], args: list[Any]) -> list[int] | None:
    """The further arguments whose gradients ``fn`` returns after the first's, ``(loss,
    dx, dW)``: one per float array argument after the first, in order, each of its
    shape (word2vec's ``(loss, gradCenterVec, gradOutsideVecs)``), labels (0 and 1 only:
    one-hot rows) being none. None otherwise (a float argument left without one may be a
    forgotten gradient as well as data)."""
    try:
        out = _on_copies(fn, args)
    except Exception:  # noqa: BLE001 - the check itself reports it
        return None
    floats = [j for j, a in enumerate(args) if j and isinstance(a, np.ndarray)
              and a.dtype.kind == "f" and not (zero_one(a) and a.shape == np.shape(
                  args[0]))]  # one-hot rows of the scores' shape are labels
    if not isinstance(out, tuple) or len(out) < 3 or len(out) - 2 != len(floats) or any(
            np.shape(d) != args[j].shape for d, j in zip(out[2:], floats, strict=True)) or \
            np.shape(out[1]) != np.shape(args[0]):
        return None
    return floats


def _extra_items(fn: Callable[..., Any], args: list[Any]) -> str:
    """What ``fn`` returns after ``(loss, dx)`` when none of it can be an argument's
    gradient (``(loss, delta, None)``, ``(loss, delta, accuracy, predicted_classes)``):
    None, whole numbers, strings, or a float scalar when no float argument is a scalar.
    A float array there may be a gradient, so it is no extra. Empty otherwise."""
    try:
        out = _on_copies(fn, args)
    except Exception:  # noqa: BLE001 - the check itself reports it
        return ""
    shapes = [_shape(a) for a in args]
    if not isinstance(out, tuple) or len(out) < 3 or not _a_number(out[0]) or np.size(
            out[0]) != 1 or _shape(out[1]) is None or _shape(out[1]) not in shapes:
        return ""
    ints = [k for k, a in enumerate(args) if k and type(a) is int]
    scalar_arg = any(isinstance(a, (float, np.floating)) or (
        isinstance(a, np.ndarray) and a.dtype.kind in "fc" and a.size == 1) for a in args[1:])
    kinds = []
    for item in out[2:]:
        if item is None:
            kinds.append("None")
            continue
        try:
            a = np.asarray(item)
        except Exception:  # noqa: BLE001 - no array: no gradient either, but unread
            return ""
        if a.dtype.kind in "fc" and (a.ndim or scalar_arg) or a.dtype.kind not in "fcbiuUS":
            return ""
        kinds.append(f"{a.dtype} {a.shape}" if a.ndim else f"a {a.dtype} scalar")
    held = f" (whole-number argument(s) {', '.join(f'x{k}' for k in ints)} held constant: " \
        "pass a float to have its gradient checked)" if ints and any(
            k.startswith("a float") for k in kinds) else ""
    return ", ".join(kinds) + held


def _unresolved(fn: Callable[..., Any], args: list[Any]) -> str:
    """Why a loss returned in float16 or float32 cannot resolve its gradient: moved by a
    hundredth of its point along a random direction, each way, it changes by less than
    100 of its rounding units (a large constant term, a float16 loss). Measured on the
    loss itself, whatever gradient is returned. Empty when it can, or for float64."""
    try:
        out = _on_copies(fn, args)
        loss, g = np.asarray(out[0]), np.asarray(out[1])
        if loss.dtype not in (np.float16, np.float32) or loss.size != 1:
            return ""
        k = next(j for j, a in enumerate(args) if isinstance(a, np.ndarray)
                 and a.dtype.kind == "f" and a.shape == g.shape)
        x = np.asarray(args[k], dtype=np.float64)
        u = np.random.default_rng(0).standard_normal(x.shape)
        step = 1e-2 * (1.0 + float(np.sqrt(np.mean(x ** 2))))
        moved = [(x + s * step * u / np.linalg.norm(u)).astype(args[k].dtype)
                 for s in (1.0, -1.0)]
        ends = [float(np.asarray(_on_copies(fn, args[:k] + [m] + args[k + 1:])[0]))
                for m in moved]
    except Exception:  # noqa: BLE001 - the check itself reports it
        return ""
    change, ulp = abs(ends[0] - ends[1]), float(np.spacing(np.abs(loss)))
    if change >= 100 * ulp:
        return ""
    return (f"the loss is {loss.dtype} ({float(loss):.6g}): its rounding unit {ulp:.1e} is "
            f"too coarse for its gradient (moved by {step:.1e} each way along a random "
            f"direction it changes by {change:.1e}); nothing can be compared: compute the "
            "loss in float64")


def _on_copies(fn: Callable[..., Any], args: list[Any]) -> Any:
    """``fn`` called with copies of its arguments (it may write into them, or into the
    objects and containers among them)."""
    return fn(*copies(args))


def _shape(x: Any) -> tuple[int, ...] | None:
    """``np.shape(x)``, None for a ragged list (no array, nor any array's gradient)."""
    try:
        return np.shape(x)
    except ValueError:
        return None


def _gradient_first(fn: Callable[..., Any], args: list[Any]) -> bool:
    """Whether ``fn`` returns ``(gradient, loss)``: two items, the first of the first
    argument's shape, the second a float scalar of another shape."""
    try:
        out = _on_copies(fn, args)
    except Exception:  # noqa: BLE001 - the check itself reports it
        return False
    return isinstance(out, tuple) and len(out) == 2 and _shape(out[0]) == _shape(
        args[0]) != _shape(out[1]) and _shape(out[1]) is not None and np.size(
            out[1]) == 1 and np.asarray(out[1]).dtype.kind == "f"


def _swapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` returning ``(loss, gradient)`` for its ``(gradient, loss)``."""
    def swapped(*a: Any) -> Any:
        out = fn(*a)
        return (out[1], out[0]) if isinstance(out, tuple) and len(out) == 2 else out
    return swapped


def _first_two(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` returning its first two items only."""
    def first_two(*a: Any) -> Any:
        out = fn(*a)
        return out[:2] if isinstance(out, tuple) else out
    return first_two


def _flag_advice(fn: Callable[..., Any]) -> str:
    """For a loss that returns one array: when it takes a flag that defaults to False
    (``deriv=False``), how to check it (its derivative is what the flag returns)."""
    try:
        flags = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.default is False]
    except (TypeError, ValueError):
        return ""
    if len(flags) != 1:
        return ""
    f = flags[0]
    return (f"; it takes {f}=False, so {f}=True presumably returns the gradient: check it "
            f"as check_loss(lambda *a: (fn(*a).sum(), fn(*a, {f}=True)), <the same "
            "arguments>)")


def _for_another_argument(fn: Callable[..., Any], args: list[Any], opts: Options,
                          res: CheckResult) -> CheckResult:
    """A gradient that is not the first argument's may be another's: a loss written
    ``fn(labels, predictions)`` returns the predictions' gradient. Observed: it passes
    as the gradient of a float argument of its shape, and is the check of that argument
    (with a note). When minus it passes as the first argument's too (the loss depends
    on their difference only, as a squared error does), which one is meant cannot be
    observed: the mismatch stays, and the hint says so."""
    shape = _shape(args[0])
    if shape is None:  # arrays of several shapes (a list of parameters): no other's
        return res
    labels = _label_like(args[0])
    for k in range(1, len(args)):
        a = args[k]
        if not (isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.shape == shape):
            continue
        other = _loss_check(fn, args, k, opts)
        if not other.passed:
            continue
        if _loss_check(fn, args, 0, opts, sign=-1.0).passed:
            why = (f"the gradient returned is argument {k + 1}'s (x{k}) and minus it is "
                   "x0's: the loss depends on their difference only, so which one it is "
                   "for cannot be observed; pass the predictions first")
            first = res.inputs[0]
            first.hint = f"{first.hint}; {why}" if first.hint else why
            return res
        if not labels:  # a prediction first and the gradient of another argument: a bug
            why = (f"the gradient returned is argument {k + 1}'s (x{k}), not x0's; x0 holds "
                   "no labels (values not all whole numbers), so it is the one differentiated")
            first = res.inputs[0]
            first.hint = f"{first.hint}; {why}" if first.hint else why
            return res
        other.notes.append(f"fn returned the gradient with respect to its argument "
                           f"{k + 1} (x{k}), not the first, which holds labels (whole "
                           f"numbers): checked as x{k}'s, every other argument held constant")
        return other
    return res


def _prediction_after_labels(args: list[Any]) -> int:
    """The argument a loss called ``fn(labels, predictions)`` differentiates: when the
    first holds labels (whole numbers) and exactly one other is a float array that does
    not, its position; else 0."""
    if not _label_like(args[0]):
        return 0
    found = [k for k, a in enumerate(args) if k and isinstance(a, np.ndarray)
             and a.dtype.kind == "f" and not _label_like(a)]
    return found[0] if len(found) == 1 else 0


def _labels_first(fn: Callable[..., Any], args: list[Any], k: int,
                  opts: Options) -> CheckResult:
    """``fn(labels, predictions)``: the gradient checked as argument ``k``'s; when it is
    not but is the first argument's (whole-number scores before soft targets), so."""
    res = _loss_check(fn, args, k, opts)
    if res.passed:
        res.notes.append(f"fn returned the gradient with respect to its argument {k + 1} "
                         f"(x{k}), not the first, which holds labels (whole numbers) while "
                         f"x{k} does not: checked as x{k}'s, every other argument held "
                         "constant")
        return res
    first = _loss_check(fn, args, 0, opts)
    if not first.passed:
        res.notes.append(f"x0 holds labels (whole numbers) and x{k} does not: the gradient "
                         f"was checked as x{k}'s (and fails as x0's too)")
        return res
    first.notes.append(f"the gradient returned is x0's, though x0 holds whole numbers "
                       f"only and x{k} does not: checked as x0's")
    return first


def _difference_only(fn: Callable[..., Any], args: list[Any], k: int) -> bool:
    """Whether the loss depends on ``x0 - xk`` only (a squared error): moving both by the
    same amount leaves it unchanged, moving ``x0`` alone does not."""
    if np.shape(args[k]) != np.shape(args[0]):
        return False
    x0 = np.asarray(args[0], dtype=np.float64)
    step = 1e-2 * (1.0 + np.abs(x0)) * np.random.default_rng(0).choice([-1.0, 1.0], x0.shape)

    def loss(a0: Any, ak: Any) -> float:
        a = list(args)
        a[0], a[k] = a0, ak
        return float(np.asarray(fn(*a)[0], dtype=np.float64).reshape(()))

    try:
        here = loss(x0, args[k])
        both = loss(x0 + step, args[k] + step)
        alone = loss(x0 + step, args[k])
    except Exception:  # noqa: BLE001 - the check itself reports what the loss does wrong
        return False
    size = max(1.0, abs(here))
    return abs(both - here) <= 1e-9 * size < abs(alone - here)


def _either_argument(fn: Callable[..., Any], args: list[Any], k: int,
                     opts: Options) -> CheckResult:
    """A loss of ``x0 - xk`` only, ``x0`` holding whole numbers: a gradient that passes as
    either argument's cannot be told right or wrong; one that passes as neither fails."""
    mine, first = _loss_check(fn, args, k, opts), _loss_check(fn, args, 0, opts)
    if not (mine.passed or first.passed):
        mine.notes.append(f"the loss depends on x0 - x{k} only and fails as either one's "
                          f"gradient (shown: x{k}'s, x0 holding whole numbers)")
        return mine
    which = f"x{k}'s" if mine.passed else "x0's"
    return _error_result(ProtocolError("bad-protocol", (
        f"the loss depends on x0 - x{k} only, x0 holds whole numbers and x{k} does not, "
        f"and the gradient fn returns is {which}: right if x{k if mine.passed else 0} is "
        f"the prediction, of the wrong sign if it is the other. Which one is cannot be "
        f"observed (whole-number predictions read as labels): pass the predictions first, "
        f"check_loss(lambda p, y: fn(y, p), x{k}, x0), or predictions that are not whole "
        "numbers")), opts.seed, opts.name, "loss")


def assert_loss(fn: Callable[..., Any], x: Any, *constants: Any, **options: Any) -> CheckResult:
    """Like :func:`check_loss`, but raise :class:`~gradcheck.GradientMismatch` unless it
    passed."""
    __tracebackhide__ = True
    return raise_unless_passed(check_loss(fn, x, *constants, **options))


def _later_arrays(fn: Callable[..., Any], args: list[Any], later: list[int],
                  opts: Options) -> CheckResult:
    """The check of :func:`_after_text`'s reading: ``skipgram(word, C, context, tokens,
    inVecs, outVecs, dataset)`` with ``inVecs`` and ``outVecs`` checked."""
    with np.errstate(all="ignore"):
        res = _loss_check(fn, args, later[0], opts, more=later[1:])
    res.notes.append(f"x0 is {type(args[0]).__name__}, with no gradient: fn returns the loss "
                     "and one gradient per later float array, in order: "
                     f"{', '.join(f'x{j}' for j in later)} checked, the rest constant")
    record(res)
    return res


def _after_text(fn: Callable[..., Any], args: list[Any]) -> list[int] | None:
    """For a first argument of text (a word, a list of words, None), the later float
    arrays, two or more, when ``fn`` returns the loss and then exactly one float array of
    each one's shape, in their order (word2vec's ``(cost, gradIn, gradOut)``); None
    otherwise (for one, the error's advice: a lambda taking it first)."""
    try:
        if np.asarray(args[0]).dtype.kind not in "OSUV":
            return None
        out = _on_copies(fn, args)
    except Exception:  # noqa: BLE001 - no such reading: the first argument's error stands
        return None
    floats = [j for j, a in enumerate(args) if j and isinstance(a, np.ndarray) and
              a.dtype.kind == "f" and a.ndim and not zero_one(a)]
    if len(floats) < 2 or not isinstance(out, tuple) or len(out) != 1 + len(floats) or np.size(
            out[0]) != 1 or any(np.shape(g) != args[j].shape for g, j in zip(
                out[1:], floats, strict=True)):
        return None
    return floats


def _differentiable_first(x: Any) -> None:
    """A ``TypeError`` saying what to do when ``x``, the argument check_loss
    differentiates, is text (a word of a word2vec ``skipgram(word, ..., W)``)."""
    if isinstance(x, dict):  # a model's parameters by name
        return
    try:
        kind = np.asarray(x).dtype.kind
    except Exception:  # noqa: BLE001 - a ragged list: the check itself says what it got
        return
    if kind in "OSUV":
        what = f" of dtype {x.dtype}" if isinstance(x, np.ndarray) else f" {x!r:.40}"
        raise TypeError(
            f"check_loss: x is {type(x).__name__}{what}, which has no gradient; check_loss "
            "differentiates its first argument and holds the others constant: give a "
            "function taking the float array first, e.g. check_loss(lambda W, *c: "
            "fn(word, *c, W), W, *others) for fn(word, ..., W)")
