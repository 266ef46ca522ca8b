"""Per-sample gradients: a backward that stores, for a parameter of two or more axes,
one gradient per sample, ``(N, *W.shape)`` with ``N`` the batch (an einsum or a batched
``@`` of ``dout`` and the input, which the update then sums). The gradient is their sum
over the batch axis, read so with a note. A parameter of one axis is left out: ``db =
dout`` of shape ``(N, n)`` for a bias ``(n,)`` is the classic sum forgotten, and stays
the ``shape-mismatch`` it is.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from ._discovery import walk
from ._observe import last_name, positional_names
from ._protocol import clone

__all__ = ["per_sample", "per_sample_note", "summed_per_sample"]


def _batch(xs: list[Any]) -> int | None:
    """The first input's length along its first axis (None for no array input)."""
    first = xs[0] if xs else None
    return first.shape[0] if isinstance(first, np.ndarray) and first.ndim >= 1 else None


def per_sample(g: Any, shape: tuple[int, ...], xs: list[Any]) -> bool:
    """Whether ``g`` is one gradient per sample for an array of ``shape``."""
    n = _batch(xs)
    return (isinstance(g, np.ndarray) and g.dtype.kind == "f" and len(shape) >= 2 and n is
            not None and n > 1 and g.shape == (n, *shape))


def per_sample_note(name: str, g: np.ndarray) -> str:
    return (f"the gradient of {name} is stored per sample, shape {g.shape}: checked as "
            "its sum over the batch axis (the update sums it)")


def summed_per_sample(cands: dict[str, Any], arrays: dict[str, Any], xs: list[Any],
                      after: Any, own: tuple[str, str]) -> dict[str, Any]:
    """``cands`` (stored arrays) with those that are one gradient per sample for one of
    ``arrays`` (by shape) summed over the batch axis, for matching gradients to arrays;
    not one a method of the layer's own applies as it is (``update()`` doing ``W = W -
    lr * dW``, which makes ``W`` a stack too): there the stack is no gradient, and its
    shape stays the ``shape-mismatch`` it is. ``after`` is the layer after a forward and
    a backward, ``own`` the names of those two methods."""
    shapes = {np.shape(a) for a in arrays.values() if isinstance(a, np.ndarray)}
    return {k: v.sum(axis=0) if any(per_sample(v, s, xs) for s in shapes) and not
            _applied_as_is(after, k, own) else v for k, v in cands.items()}


def _applied_as_is(after: Any, path: str, own: tuple[str, str]) -> bool:
    """Whether a public method of the layer taking no argument whose code names the
    stored array at ``path`` changes the shape of an array the layer holds."""
    name = last_name(path)
    for attr in dir(type(after)):
        fn = inspect.getattr_static(type(after), attr, None)
        if attr.startswith("_") or attr in own or not isinstance(fn, types.FunctionType) or \
                name not in fn.__code__.co_names or positional_names(
                    getattr(after, attr), required=True) != []:
            continue
        obj = clone(after)
        was = {p: v.shape for p, v in walk(obj) if isinstance(v, np.ndarray)}
        try:
            with np.errstate(all="ignore"):
                getattr(obj, attr)()
        except Exception:  # noqa: BLE001, S112 - no evidence either way
            continue
        if any(isinstance(v, np.ndarray) and p in was and v.shape != was[p]
               for p, v in walk(obj)):
            return True
    return False
