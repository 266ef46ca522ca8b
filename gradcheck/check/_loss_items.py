"""A loss function returning more than ``(loss, dx)``, read by what each item does.

``softmax_ce_loss(logits, targets, mask) -> (loss_sum, num_real, d_logits)``: which item
is the loss and which are gradients is observed, not assumed from the order. The loss is
the one float scalar that moves when the first argument moves (a token count does not);
an argument's gradient is the one float array of its shape; one-hot labels of the
scores' shape have none. Every float array returned must be one of these. Any doubt (two
scalars moving, two arrays of one argument's shape: the one that would pass may be
another function's gradient beside a wrong one) leaves the order reading, and its
error, in place.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..read._conventions import zero_one
from ..read._observe import grad_stem

__all__ = ["Items", "copies", "items_read"]


class Items(NamedTuple):
    """The loss function reordered to return ``(loss, d_first, *d_more)``, the further
    arguments whose gradients it returns, and the note saying how it was read."""

    fn: Callable[..., Any]
    more: list[int]
    note: str
    held: bool = False  # no item of x0's shape: x0 held constant


def _copy(a: Any) -> Any:
    if isinstance(a, dict):
        return {k: _copy(v) for k, v in a.items()}
    if isinstance(a, np.ndarray):
        return np.array(a, copy=True)
    try:  # objects and containers it may write into (a network given as a constant)
        return copy.deepcopy(a)
    except Exception:  # noqa: BLE001 - what cannot be copied (a lock) is passed as it is
        return a


def copies(args: list[Any]) -> list[Any]:
    return [_copy(a) for a in args]


def _arrays_dict(o: Any) -> bool:
    """A non-empty dict of float arrays."""
    return isinstance(o, dict) and bool(o) and all(_float_array(v) for v in o.values())


def _float_dict(o: Any) -> bool:
    """A dict of float arrays (a model's parameters by name), or of such dicts (by kind,
    then layer: ``{'W': {1: W1, 2: W2}, 'b': {...}}``)."""
    return isinstance(o, dict) and bool(o) and all(
        _float_array(v) or _arrays_dict(v) for v in o.values())


def _leaves(x: Any) -> list[Any]:
    return [a for v in x.values() for a in _leaves(v)] if isinstance(x, dict) else [x]


def _keys_of(d: Any, x: dict[Any, np.ndarray]) -> dict[Any, Any] | None:
    """``x``'s key -> the key of ``d`` holding its gradient: the same key, or one named
    as its gradient (``dW1`` for ``W1``; of another shape too: that is its verdict, a
    ``shape-mismatch``), every float array of ``d`` one; None on any doubt."""
    if not isinstance(d, dict) or not all(isinstance(k, str) for k in [*d, *x]):
        return None
    out = {}
    for k in x:
        fits = [c for c in d if (c == k or grad_stem(c) == k.lower().lstrip("_")) and (
            _float_array(d[c]) or _float_scalar(d[c]) or  # (a scalar db: mismatched)
            _arrays_dict(d[c]) and isinstance(x[k], dict))]
        if len(fits) != 1:
            return None
        out[k] = fits[0]
    used = set(out.values())
    return out if len(used) == len(out) and not any(
        _float_array(v) or _arrays_dict(v) for c, v in d.items() if c not in used and c not
        in _beside(d, x)
    ) else None


def _beside(d: dict[Any, Any], x: dict[Any, np.ndarray]) -> list[Any]:
    """The keys of ``d`` named as the gradients of what is no key of ``x`` (``dA1``,
    ``dZ1`` of a layer's activations beside ``dW1``): left unread."""
    return [c for c in d if isinstance(c, str) and grad_stem(c) != c.lower().lstrip("_")
            and grad_stem(c) not in {k.lower().lstrip("_") for k in x}]


def _moved(x: Any, step: float) -> Any:
    """``x`` (an array, or a dict of them) moved along a seeded random direction."""
    rng = np.random.default_rng(0)

    def move(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: move(a) for k, a in v.items()}
        return (v + step * rng.standard_normal(np.shape(v))).astype(v.dtype)
    return move(x)


def _float_array(o: Any) -> bool:
    return isinstance(o, np.ndarray) and o.dtype.kind == "f" and o.ndim > 0


def _float_scalar(o: Any) -> bool:
    return isinstance(o, float | np.floating) or (
        isinstance(o, np.ndarray) and o.dtype.kind == "f" and o.ndim == 0)


def _the_loss(fn: Callable[..., Any], args: list[Any], out: tuple[Any, ...]) -> int | None:
    """The one float scalar item that changes when the first argument moves."""
    scalars = [i for i, o in enumerate(out) if _float_scalar(o)]
    if not scalars:
        return None
    leaves = _leaves(args[0])
    size = sum(np.size(v) for v in leaves)
    step = 1e-3 * (1.0 + float(np.sqrt(sum(np.sum(np.asarray(v, dtype=np.float64) ** 2)
                                            for v in leaves) / size)))
    moved = fn(*copies([_moved(args[0], step), *args[1:]]))
    if not isinstance(moved, tuple) or len(moved) != len(out):
        return None
    changed = [i for i in scalars if _float_scalar(moved[i]) and float(moved[i]) != float(out[i])]
    return changed[0] if len(changed) == 1 else None


def _slots(args: list[Any], out: tuple[Any, ...], loss: int) -> dict[int, int] | None:
    """Argument -> the one returned float array of its shape; None on any doubt."""
    floats = [j for j, a in enumerate(args) if _float_array(a) and not (
        j and zero_one(a) and a.shape == np.shape(args[0]))]
    slots: dict[int, int] = {}
    for j in floats:
        fits = [i for i, o in enumerate(out) if i != loss and _float_array(o)
                and o.shape == args[j].shape]
        if len(fits) == 1:  # several of one shape: which is the gradient is not observed
            # (the one that passes may be another's: (loss, dlogits, delta))
            slots[j] = fits[0]
        elif fits:
            return None
    if len(set(slots.values())) != len(slots) or (0 not in slots and (
            len(slots) != 1 or any(_float_array(o) and o.shape == args[0].shape
                                   for i, o in enumerate(out) if i != loss))):
        return None
    return slots


def _held(fn: Callable[..., Any], args: list[Any], out: tuple[Any, ...], loss: int,
          slots: dict[int, int]) -> bool:
    """Whether x0, with no item of its shape, is read as data held constant beside the
    one later argument ``j`` whose gradient is returned (the data of
    ``softmaxRegression(features, labels, weights)``): ``j`` holds no 0/1 labels, its
    gradient's shape is none x0's could take by a bug (x0's size, its axes reversed;
    some of them summed out only when the item is no such sum of x0's gradient: measured
    along directions spread over the summed axes) and the loss moves when ``j`` moves."""
    ((j, i),) = slots.items()
    x0, shape = np.shape(args[0]), np.shape(out[i])
    labels = zero_one(args[j]) and not np.all(args[j])  # (0 and 1 both: a theta of ones
    if labels or int(np.prod(shape)) == int(np.prod(x0)) or shape == x0[::-1] or (  # is none)
            _sub_shape(shape, x0) and _summed_dx(fn, args, out, loss, i)):
        return False
    moved = list(args)
    moved[j] = _moved(args[j], 1e-3 * (1.0 + float(np.abs(args[j]).mean())))
    try:
        again = fn(*copies(moved))
    except Exception:  # noqa: BLE001 - no evidence: no such reading
        return False
    return isinstance(again, tuple) and len(again) == len(out) and _float_scalar(
        again[loss]) and float(again[loss]) != float(out[loss])


def _summed_dx(fn: Callable[..., Any], args: list[Any], out: tuple[Any, ...], loss: int,
               i: int) -> bool:
    """Whether item ``i`` may be x0's gradient summed over some axes (a bug's ``dx.sum(0)``,
    equal to a bias's gradient): along two seeded directions ``u`` of its shape, spread
    over x0's summed axes, the loss's central differences are ``<item, u>``; True on
    any doubt (an embedding of its axes that fits, a call that raised)."""
    g = np.asarray(out[i], dtype=np.float64).reshape([d for d in np.shape(out[i]) if d != 1])
    x0 = np.asarray(args[0], dtype=np.float64)
    for axes in _embeddings(g.shape, x0.shape):
        fits = True
        for seed in (0, 1):
            u = np.random.default_rng(seed).standard_normal(g.shape)
            spread = np.broadcast_to(np.expand_dims(u, tuple(
                a for a in range(x0.ndim) if a not in axes)), x0.shape)
            h = 1e-5 * (1.0 + float(np.abs(x0).mean()))
            try:
                ends = [fn(*copies([(x0 + s * h * spread).astype(np.asarray(args[0]).dtype),
                                    *args[1:]]))[loss] for s in (1, -1)]
            except Exception:  # noqa: BLE001 - no evidence against it
                return True
            fd, dot = (float(ends[0]) - float(ends[1])) / (2 * h), float(np.sum(g * u))
            fits = fits and abs(fd - dot) <= 1e-4 * (abs(fd) + abs(dot)) + 1e-8
        if fits:
            return True
    return False


def _embeddings(kept: tuple[int, ...], x0: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every way ``kept``'s axes are axes of ``x0`` in order, of the same lengths."""
    if not kept:
        return [()]
    out = []
    for a in range(len(x0)):
        if x0[a] == kept[0]:
            out += [(a, *(b + a + 1 for b in rest)) for rest in _embeddings(kept[1:], x0[a + 1:])]
    return out


def _sub_shape(shape: tuple[int, ...], x0: tuple[int, ...]) -> bool:
    """Whether ``shape`` is ``x0`` with some axes summed out (dropped or kept as 1)."""
    kept = [d for d in shape if d != 1]
    it = iter(x0)
    return all(any(d == e for e in it) for d in kept)


def _reordered(fn: Callable[..., Any], picks: list[int], n: int,
               keys: dict[Any, Any] | None = None) -> Callable[..., Any]:
    def reordered(*a: Any) -> Any:
        got = fn(*a)
        if not isinstance(got, tuple) or len(got) != n:
            return got
        out = [got[i] for i in picks]
        if keys is not None and isinstance(out[1], dict):  # dW1 for W1: by the input's keys
            out[1] = {k: out[1].get(c) for k, c in keys.items()}
        return tuple(out)
    return reordered


def _ran(fn: Callable[..., Any], args: list[Any], least: int
         ) -> tuple[tuple[Any, ...] | None, int | None]:
    """What ``fn`` returned on copies, a tuple of ``least`` items or more, and the place
    of its loss (:func:`_the_loss`); ``(None, None)`` when it raised or returned less."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*copies(args))
            if not isinstance(out, tuple) or len(out) < least:
                return None, None
            return out, _the_loss(fn, args, out)
    except Exception:  # noqa: BLE001 - the check itself reports what the loss does
        return None, None


def _dict_read(fn: Callable[..., Any], args: list[Any]) -> Items | None:
    """A loss of a dict of parameters returning the loss and a dict of their gradients
    (``dW1`` for ``W1``) in any order, beside scalars (an accuracy): read by what each
    item does, as for arrays."""
    out, loss = _ran(fn, args, 2)
    if out is None:
        return None
    found = [(i, k) for i, o in enumerate(out) if i != loss and (k := _keys_of(o, args[0]))]
    left = [i for i in range(len(out)) if i != loss and i not in [f[0] for f in found]]
    if loss is None or len(found) != 1 or any(
            _float_array(out[i]) or isinstance(out[i], dict) for i in left):
        return None
    ((i, keys),) = found
    renamed = [f"{c} for {k}" for k, c in keys.items() if c != k]
    unread = [c for c in _beside(out[i], args[0]) if _float_array(out[i][c]) or
              _arrays_dict(out[i][c])]
    note = (f"fn returns {len(out)} items, read by what they do: item {loss} is the loss "
            f"(the one float scalar that moves with x0), item {i} the dict of x0's "
            "gradients" + (f" ({', '.join(renamed)})" if renamed else "")
            + (f"; items {left} are not checked (no float argument's gradient)" if left
               else "") + (f"; its {', '.join(map(str, unread))} name no key of x0 (not "
                           "checked)" if unread else ""))
    return Items(_reordered(fn, [loss, i], len(out), keys), [], note)


def items_read(fn: Callable[..., Any], args: list[Any]) -> Items | None:
    """``fn`` reordered when its tuple of three or more items reads as a loss and
    gradients (see the module's text); None otherwise."""
    if _float_dict(args[0]):
        return _dict_read(fn, args)
    if not _float_array(args[0]) or args[0].size < 2:
        return None
    out, loss = _ran(fn, args, 2)
    if out is None:
        return None
    slots = None if loss is None else _slots(args, out, loss)
    if loss is None or slots is None or (len(out) == 2 and 0 in slots) or (
            0 not in slots and not _held(fn, args, out, loss, slots)):
        return None  # (loss, dx): the plain reading; (cost, grad_params): the data held
    more = sorted(slots)[1:] if 0 in slots else sorted(slots)
    left = [i for i in range(len(out)) if i != loss and i not in slots.values()]
    if any(_float_array(out[i]) for i in left):  # an array that may be the gradient of
        return None  # something held constant: no verdict on part of what it returns
    names = "".join(f", item {slots[j]} x{j}'s gradient" for j in more)
    first = f"item {slots[0]} x0's gradient" if 0 in slots else (
        "no item of x0's shape (x0 held constant: its gradient is not returned)")
    note = (f"fn returns {len(out)} items, read by what they do: item {loss} is the loss "
            f"(the one float scalar that moves with x0), {first}{names} (of its shape)"
            + (f"; items {left} are not checked (no float argument's gradient)" if left
               else ""))
    picks = [loss, *([slots[0]] if 0 in slots else []), *(slots[j] for j in more)]
    return Items(_reordered(fn, picks, len(out)), more, note, 0 not in slots)
