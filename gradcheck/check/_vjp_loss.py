"""``check_vjp(loss, loss_gradient, inputs)`` for a loss and its gradient written as a
pair of functions of the same arguments (``mse_loss(y_true, y_pred)`` and
``mse_gradient(y_true, y_pred)``): the forward returns a scalar (or one loss per sample,
read as their sum; when only their mean agrees, which one the training loop takes is not
observed: a ``bad-protocol``) and the backward, taking
no output gradient, one array, the gradient of the one input it is for: the one of its
shape (``wrt=`` names it), or of several, the one holding values no whole numbers
beside labels of 0 and 1 only (one-hot rows, binary targets) or of -1 and +1 (a hinge
loss's)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..read._conventions import label_like, zero_one
from ..read._flat import returned_names
from ..read._observe import grad_stem, positional_names
from ..read._protocol import ProtocolError

__all__ = ["gradient_pair", "of_the_mean"]


def gradient_pair(fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Any, wrt: Any,
                  reduce: str = "sum"
                  ) -> tuple[Callable[..., Any], Callable[..., Any], list[int], str, bool] | None:
    """``(fwd, bwd, wrt, note, per sample)`` in the protocol's form for such a pair; None
    when the functions do not read so (or the input the gradient is for cannot be told).
    A forward returning one loss per sample (a vector as long as an input's first axis)
    is read as their sum, or, with ``reduce="mean"``, their mean."""
    if isinstance(inputs, (dict, str, np.ndarray)) or not isinstance(inputs, Sequence) or \
            not inputs:
        return None
    b_names = _same_arguments(fwd, bwd, len(inputs))
    if b_names is None:
        return None
    named = [wrt] if isinstance(wrt, str) else wrt if isinstance(wrt, (list, tuple)) else []
    if named and all(isinstance(k, str) for k in named):  # wrt=['y_pred']: by the names
        wrt = [b_names.index(k) if k in b_names else k for k in named]
    try:
        with np.errstate(all="ignore"):
            loss = fwd(*copy.deepcopy(list(inputs)))
            grad = bwd(*copy.deepcopy(list(inputs)))
    except Exception:  # noqa: BLE001 - not this reading: the check reports what raises
        return None
    each = _per_sample(loss, inputs)
    if not each and (np.size(loss) != 1 or np.asarray(loss).dtype.kind != "f"):
        return None

    def forward(*a: Any) -> tuple[Any, Any]:  # the arguments as given: fwd may write
        given = copy.deepcopy(a)  # into them
        value = fwd(*a)
        return (getattr(np, reduce)(value) if each else value), given
    forward.loss_of_point = True  # type: ignore[attr-defined]  # (writes_elsewhere)

    head = ((f"fwd returns one loss per sample ({np.size(loss)} values), read as their "
             f"{reduce}, " if each else "fwd returns a scalar (a loss) ")
            + "and bwd takes its arguments again and no output gradient: ")
    if (several := _several(bwd, grad, inputs, b_names, wrt)) is not None:
        return forward, several[0], several[1], head + several[2], each
    number = isinstance(grad, (int, float, np.integer, np.floating)) and not isinstance(
        grad, bool)  # (return 1: a gradient told as a number, a shape-mismatch)
    if not number and (not isinstance(grad, np.ndarray) or grad.dtype.kind != "f"):
        return None
    k = _which(inputs, _number_for(inputs) if number else grad.shape, wrt)
    alike = [n for n, x in zip(b_names, inputs, strict=True) if np.shape(x) == np.shape(grad)]
    if k is None and wrt is None and len(alike) > 1:
        raise ProtocolError("bad-protocol", (
            f"fwd returns a loss and bwd, taking its arguments again, one array "
            f"of the shape of {', '.join(alike)}: whose gradient it is cannot be observed "
            "(no one of them holds labels, 0 and 1 or -1 and +1 only, beside the other); "
            "name it with "
            "wrt= (wrt=[1] for the second)"))
    if k is None:
        return None

    def backward(dy: Any, a: Any) -> list[Any]:
        return [np.asarray(bwd(*a)) * dy if j == k else None for j in range(len(a))]

    return forward, backward, [k], head + _read_as(grad, b_names, k, inputs, wrt), each


def _read_as(grad: Any, b_names: list[str], k: int, inputs: Sequence[Any], wrt: Any) -> str:
    """The note's end: whose gradient bwd's one result is read as, and why."""
    said = (f"bwd's number {grad!r} is read as the gradient of {b_names[k]}, whose shape it "
            "lacks" if not isinstance(grad, np.ndarray) else
            f"bwd's array is read as the gradient of {b_names[k]}")
    return said + ("" if wrt is not None else ", the one input of its shape" + (
        " not holding labels" if sum(np.shape(x) == np.shape(inputs[k]) for x in inputs) > 1
        else ""))


def _per_sample(loss: Any, inputs: Sequence[Any]) -> bool:
    """Whether ``loss`` is one float per sample: a vector of more than one value, as long
    as the first axis of an input of two or more axes."""
    a = np.asarray(loss)
    return a.ndim == 1 and a.size > 1 and a.dtype.kind == "f" and any(
        isinstance(x, np.ndarray) and x.ndim >= 2 and x.shape[0] == a.size for x in inputs)


def of_the_mean(res: Any, fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Any,
                wrt: Any, run: Callable[[Any], Any]) -> None:
    """``res`` (the sum's ``mismatch``) made a ``bad-protocol`` when the pair, read as
    the mean of the losses per sample, passes (``run`` checks a pair): which of the two
    the training loop takes is not observed."""
    mean = gradient_pair(fwd, bwd, inputs, wrt, "mean")
    if mean is not None and run(mean).passed:
        res.status, res.passed = "bad-protocol", False
        res.message = ("fwd returns one loss per sample and bwd the gradient of their mean, "
                       "not of their sum: which of the two the training loop takes is not "
                       "observed; check fwd returning the mean (lambda *a: fwd(*a).mean()) "
                       "with bwd")


def _several(bwd: Callable[..., Any], grad: Any, inputs: Sequence[Any], b_names: list[str],
             wrt: Any) -> tuple[Callable[..., Any], list[int], str] | None:
    """The protocol's backward, the inputs it differentiates and a note, for a gradient
    function returning one gradient per argument in order (``(dmu, dlog_var)``) or a list
    laid out as one list argument (``[None, dW1, dW2]``); else None."""
    if _each(grad, inputs):
        def each(dy: Any, a: Any) -> list[Any]:
            return [None if g is None else np.asarray(g) * dy for g in bwd(*a)]
        return each, [j for j, g in enumerate(grad) if g is not None], (
            "it returns one gradient per argument, in order")
    if (m := _trailing(bwd, grad, inputs, b_names)) is not None:
        def last(dy: Any, a: Any) -> list[Any]:
            return [None] * (len(a) - m) + [np.asarray(g) * dy for g in bwd(*a)]
        return last, list(range(len(inputs) - m, len(inputs))), (
            f"it returns the gradients of its last {m} arguments "
            f"({', '.join(b_names[len(inputs) - m:])}), in order; the others are data, "
            "constants")
    if wrt is None and (k := _laid_out(grad, inputs)) is not None:
        def listed(dy: Any, a: Any) -> list[Any]:
            return [[None if g is None else np.asarray(g) * dy for g in bwd(*a)]
                    if j == k else None for j in range(len(a))]
        return listed, [k], (f"it returns a list laid out as {b_names[k]}, read as its "
                             "gradient (the other arguments constants)")
    return None


def _trailing(bwd: Callable[..., Any], grad: Any, inputs: Sequence[Any],
              b_names: list[str]) -> int | None:
    """``m`` when ``grad`` is a tuple or list of ``m`` float arrays or numbers, fewer than
    the inputs, each of the shape (but for size-1 axes) of one of the last ``m`` inputs
    in order (``compute_gradient(x, y, w, b) -> (dw, db)``): when its code returns them
    under names, each named for its argument; when not, of shapes that leave no choice;
    else None."""
    if not isinstance(grad, (tuple, list)) or not 0 < len(grad) < len(inputs):
        return None
    m = len(grad)
    last, names = list(inputs)[-m:], b_names[-m:]
    if not all(g is not None and np.asarray(g).dtype.kind == "f" and isinstance(
            x, (np.ndarray, np.floating, float)) and np.asarray(x).dtype.kind == "f"
            and _unit(np.shape(g)) == _unit(np.shape(x)) for g, x in zip(
                grad, last, strict=True)):
        return None
    said = returned_names(bwd, m)
    if said and len(said) == m:  # named: each for the argument it lands on (dj_db: b)
        return m if all(_names(s, n) for s, n in zip(said, names, strict=True)) else None
    shapes = [_unit(np.shape(x)) for x in last]  # unnamed: only shapes that leave no
    return m if len(set(shapes)) == m else None  # choice (not w, b both scalars)


def _names(said: str, arg: str) -> bool:
    """Whether the returned name ``said`` names the gradient of the argument ``arg``
    (``dw``, ``grad_w``, ``dj_dw``, ``dL_dw`` for ``w``; ``dw`` for ``w_init``, ``db``
    for ``bias``)."""
    a = arg.lower()
    stems = {grad_stem(said), grad_stem(said.split("_")[-1])}
    return any(t and t != said.lower() and a.startswith(t) for t in stems)  # (db: bias)


def _each(grad: Any, inputs: Sequence[Any]) -> bool:
    """A tuple or list with a float array (or None) per input, each of its input's shape
    but for size-1 axes, not all None."""
    return isinstance(grad, (tuple, list)) and len(grad) == len(inputs) and any(
        g is not None for g in grad) and all(g is None or (
            isinstance(g, (np.ndarray, np.floating, float)) and np.asarray(g).dtype.kind == "f"
            and _unit(np.shape(g)) == _unit(np.shape(x))) for g, x in zip(
                grad, inputs, strict=True))  # (a NumPy float for a 0-d bias: -(1 - d))


def _same_arguments(fwd: Callable[..., Any], bwd: Callable[..., Any], n: int
                    ) -> list[str] | None:
    """The backward's names of its ``n`` required arguments when they are the forward's
    first ``n``, each the same name or one ending the other after ``_``
    (``cross_entropy(output_a, y)`` beside ``cross_entropy_delta(a, y)``); else None."""
    f_names, b_names = positional_names(fwd), positional_names(bwd, required=True)
    if not f_names or b_names is None or len(b_names) != n or len(f_names) < n:
        return None
    pairs = list(zip(f_names[:n], b_names, strict=True))
    same = all(f == b or f.endswith("_" + b) or b.endswith("_" + f) for f, b in pairs)
    return b_names if same and sum(f == b for f, b in pairs) >= n - 1 else None  # one apart


def _laid_out(grad: Any, inputs: Sequence[Any]) -> int | None:
    """The one input that is a list of float arrays (None in places: ``[None, W1, W2]``)
    laid out as the returned list: as long, None where it holds None, each array of its
    array's shape; None when none or several are."""
    if not isinstance(grad, (list, tuple)) or not any(g is not None for g in grad):
        return None
    fits = [j for j, x in enumerate(inputs) if isinstance(x, (list, tuple)) and len(x) == len(
        grad) and any(v is not None for v in x) and all(
            (v is None) == (g is None) and (v is None or (
                isinstance(v, np.ndarray) and v.dtype.kind == "f" and isinstance(
                    g, np.ndarray) and g.shape == v.shape)) for v, g in zip(x, grad, strict=True))]
    return fits[0] if len(fits) == 1 else None


def _unit(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape less its axes of size 1 (a column ``(d, 1)`` read for ``(d,)``; the check
    says what its shape is)."""
    return tuple(d for d in shape if d != 1)


def _which(inputs: Sequence[Any], shape: tuple[int, ...], wrt: Any) -> int | None:
    """The input the one gradient array is for: ``wrt``'s one index, else the one input
    of its shape, else the one of them not holding labels."""
    if wrt is not None:
        ks = [wrt] if isinstance(wrt, int) else list(wrt) if isinstance(
            wrt, (list, tuple)) else []
        ok = len(ks) == 1 and isinstance(ks[0], int) and 0 <= ks[0] < len(inputs)
        return ks[0] if ok and _unit(shape) == _unit(np.shape(inputs[ks[0]])) else None
    fits = [j for j, x in enumerate(inputs) if isinstance(x, np.ndarray) and x.dtype.kind ==
            "f" and x.shape == shape]
    fits = fits or [j for j, x in enumerate(inputs) if isinstance(x, np.ndarray) and
                    x.dtype.kind == "f" and _unit(shape) == _unit(x.shape)]  # (d, 1) for (d,)
    if len(fits) > 1:  # labels: 0/1 only (one-hot rows, binary targets) beside an input
        labels = [j for j in fits if zero_one(inputs[j]) or _signs(inputs[j])]  # of values
        soft = [j for j in fits if not label_like(inputs[j])]  # no whole numbers say (a
        fits = soft if len(soft) == 1 and len(labels) == len(fits) - 1 else []  # whole-
    return fits[0] if len(fits) == 1 else None  # valued prediction; -1/+1: a hinge's)


def _number_for(inputs: Sequence[Any]) -> tuple[int, ...]:
    """The shape a gradient returned as one number is read for: that of the float array
    inputs when they share one (the one not holding labels is then its input)."""
    shapes = {x.shape for x in inputs if isinstance(x, np.ndarray) and x.dtype.kind == "f"}
    return shapes.pop() if len(shapes) == 1 else (-1,)


def _signs(x: Any) -> bool:
    """Labels of -1 and +1 only (a hinge loss's targets)."""
    return isinstance(x, np.ndarray) and x.size > 0 and bool(np.all(np.abs(x) == 1))
