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

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..read._conventions import zero_one

__all__ = ["Items", "items_read"]


class Items(NamedTuple):
    """The loss function reordered to return ``(loss, d_first, *d_more)``, the further
    arguments whose gradients it returns, and the note saying how it was read."""

    fn: Callable[..., Any]
    more: list[int]
    note: str


def _copies(args: list[Any]) -> list[Any]:
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


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
    x = np.asarray(args[0], dtype=np.float64)
    u = np.random.default_rng(0).standard_normal(x.shape)
    step = 1e-3 * (1.0 + float(np.sqrt(np.mean(x ** 2))))
    moved = fn(*_copies([(x + step * u).astype(args[0].dtype), *args[1:]]))
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
    if 0 not in slots or len(set(slots.values())) != len(slots):
        return None
    return slots


def _reordered(fn: Callable[..., Any], picks: list[int], n: int) -> Callable[..., Any]:
    def reordered(*a: Any) -> Any:
        got = fn(*a)
        if not isinstance(got, tuple) or len(got) != n:
            return got
        return tuple(got[i] for i in picks)
    return reordered


def items_read(fn: Callable[..., Any], args: list[Any]) -> Items | None:
    """``fn`` reordered when its tuple of three or more items reads as a loss and
    gradients (see the module's text); None otherwise."""
    if not _float_array(args[0]) or args[0].size < 2:
        return None
    try:
        with np.errstate(all="ignore"):
            out = fn(*_copies(args))
            if not isinstance(out, tuple) or len(out) < 3:
                return None
            loss = _the_loss(fn, args, out)
    except Exception:  # noqa: BLE001 - the check itself reports what the loss does
        return None
    slots = None if loss is None else _slots(args, out, loss)
    if loss is None or slots is None:
        return None
    more = sorted(slots)[1:]
    left = [i for i in range(len(out)) if i != loss and i not in slots.values()]
    if any(_float_array(out[i]) for i in left):  # an array that may be the gradient of
        return None  # something held constant: no verdict on part of what it returns
    names = "".join(f", item {slots[j]} x{j}'s gradient" for j in more)
    note = (f"fn returns {len(out)} items, read by what they do: item {loss} is the loss "
            f"(the one float scalar that moves with x0), item {slots[0]} x0's gradient"
            f"{names} (of its shape)"
            + (f"; items {left} are not checked (no float argument's gradient)" if left
               else ""))
    picks = [loss, slots[0], *(slots[j] for j in more)]
    return Items(_reordered(fn, picks, len(out)), more, note)
