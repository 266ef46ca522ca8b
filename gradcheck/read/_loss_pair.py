"""A loss and its gradient as two methods of an object with no forward or backward by
name, found by what they return (:func:`by_returns`): the first takes the inputs and
returns a number (or one per sample), the second an array of the first input's shape,
taking the same arguments (a plural ``s`` aside) or none after the first ran."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._arg_names import same_args
from ._observe import _public, positional_names
from ._protocol import clone

__all__ = ["by_returns"]

#: A method's name that says it returns a gradient (a scalar from one is a wrong one).
_GRADIENT_WORD = re.compile(r"((calc(ulate)?|compute|get)_?)?(grad(ient)?s?|deriv(ative)?s?|"
                            r"prime|backward)", re.I)

def by_returns(layer: Any, inputs: tuple[Any, ...], forward: str | None = None
                ) -> tuple[str, str] | None:
    """The one pair of methods of which the first (``forward`` when given) takes the
    inputs and returns a scalar or one value per sample (a loss; ``__call__`` included)
    and the second returns an array of the first input's shape (its gradient), taking
    the same arguments (``loss(predicted, actual)``, ``grad(predicted, actual)``) or none,
    after the first ran (``calc_loss(x, y)``, ``calc_dloss()``, ``derivative()``)."""
    names = _public(layer) + (["__call__"] if callable(layer) else [])
    sigs = {n: positional_names(getattr(layer, n), required=True) for n in names}
    for loose in (False, True):  # a number from a gradient's name: when no array is
        found = [(f, g) for f, fa in sigs.items() if fa is not None and len(fa) == len(
            inputs) and forward in (None, f)
                 for g, ga in sigs.items() if g != f and (same_args(ga, fa) or ga == [])
                 and (not loose or _GRADIENT_WORD.fullmatch(g))
                 and _loss_and_gradient(layer, f, g, inputs, after=ga == [], loose=loose)]
        if found:  # (then the one such method: calculate_gradient, no gradient_norm)
            break
    if len({g for _, g in found}) == 1 and len(found) > 1:  # __call__ running forward,
        found = [(f, g) for f, g in found if f != "__call__" and not re.search(
            "grad|deriv", f, re.I)]  # or gradient_norm(p, t) beside calculate_loss(p, t)
    if len(found) > 1 and _pairs_alike(layer, found, inputs):  # compute/prime wrapping
        found = found[:1]  # mse/mse_prime: the same loss and gradient, one reading
    return found[0] if len(found) == 1 else None


def _pairs_alike(layer: Any, pairs: list[tuple[str, str]], inputs: tuple[Any, ...]) -> bool:
    """Whether every pair's methods, called on copies with the inputs, return the same
    loss and the same gradient."""
    try:
        got = [[np.asarray(getattr(clone(layer), n)(*clone(inputs))) for n in p]
               for p in pairs]
    except Exception:  # noqa: BLE001 - a method taking nothing after the forward: unsure
        return False
    return all(a.shape == b.shape and np.array_equal(a, b) for g in got[1:]
               for a, b in zip(g, got[0], strict=True))


def _loss_and_gradient(layer: Any, f: str, g: str, inputs: tuple[Any, ...],
                       after: bool, loose: bool = False) -> bool:
    """Whether ``f(*inputs)`` returns a scalar or one value per sample and ``g`` (given
    the inputs too, or nothing, on the object ``f`` ran on) an array of the first
    input's shape (or, ``loose``, a number: a wrong gradient, for a method named as one
    when no method returns an array)."""

    shape = np.shape(inputs[0])

    def run(args: list[Any]) -> tuple[Any, Any]:
        obj = clone(layer)
        y = getattr(obj, f)(*clone(args))
        if after:
            return y, getattr(obj, g)()
        try:
            return y, getattr(clone(layer), g)(*clone(args))
        except Exception:  # noqa: BLE001 - it reads what the first stored (self.cached)
            return y, getattr(obj, g)(*clone(args))

    try:
        y, d = run(list(inputs))
    except Exception:  # noqa: BLE001 - not this pair: the user's code raised
        return False
    moved = None
    if len(inputs) > 1:  # a loss's gradient moves with its targets (a probs() does not)
        others = [_moved(x) for x in inputs[1:]]
        if all(o is x for o, x in zip(others, inputs[1:], strict=True)):
            return False  # targets that cannot be moved: no evidence, no pair
        try:
            _, moved = run([inputs[0], *others])
        except Exception:  # noqa: BLE001 - targets it cannot take: no evidence, no pair
            return False
    from ._conventions import label_like  # noqa: PLC0415 - _conventions imports this module

    if not isinstance(d, (np.ndarray, np.generic, float)):
        return False  # a dict or a tuple of gradients (a model's): no loss's gradient
    if moved is not None and np.array_equal(d, moved) and label_like(inputs[0]):
        try:  # labels first (hinge(y_true, y_pred)): its gradient moves with them
            _, moved = run([_moved(inputs[0]), *inputs[1:]])
        except Exception:  # noqa: BLE001 - labels it cannot take: no evidence, no pair
            return False
    if not isinstance(y, (np.ndarray, np.generic, float, int)):
        return False  # a tuple (a VAE's several terms) is no loss's value
    per_sample = len(shape) >= 2 and np.shape(y) == shape[:1] or (  # samples as columns:
        len(shape) == 2 and np.shape(y) == (1, shape[1]))  # E(y, t) of (1, N) for (D, N)
    gradient_like = (isinstance(d, np.ndarray) and d.shape == shape) or (
        loose and isinstance(d, (float, np.floating, np.ndarray)) and np.ndim(d) == 0)
    return (np.size(y) == 1 or per_sample) and gradient_like and np.asarray(
        d).dtype.kind == "f" and shape != () and (moved is None or not np.array_equal(d, moved))


def _moved(x: Any) -> Any:
    """Other targets of the same kind: the samples' targets in reverse order, or rolled by
    one (every class id stays one), another class id or float for a single one; ``x``
    itself when nothing changes it."""
    if isinstance(x, (bool, np.bool_)):
        return x
    if isinstance(x, (int, np.integer)):  # one class id: another one, in range
        return x - 1 if x > 0 else x + 1
    if isinstance(x, (float, np.floating)):
        return x * 1.5 + 0.25
    if isinstance(x, (list, tuple)) and len(x) > 1:
        for y in (list(x)[::-1], list(x)[1:] + list(x)[:1]):
            if y != list(x):
                return type(x)(y)
    if isinstance(x, np.ndarray) and x.size:
        for a in ((x[::-1], np.roll(x, 1, axis=0)) if x.ndim else ()):
            if not np.array_equal(x, a):
                return a.copy()
        if x.dtype.kind in "iu":  # every class id another one, in range
            return np.where(x > 0, x - 1, x + 1).astype(x.dtype)
        if x.dtype.kind == "f" and not np.all((x == 0) | (x == 1)):
            return x * 1.5 + 0.25
    return x
