"""A stateless layer whose forward returns nothing and stores several outputs, and whose
backward takes the forward's arguments again, by the same names, then one gradient for
each of those outputs named after it: ``forward(x, prev_s, U, W, V)`` storing ``self.s``
and ``self.mulv``, ``backward(x, prev_s, U, W, V, diff_s, dmulv)`` returning ``(dprev_s,
dU, dW, dV)``. The arguments after the forward's name the outputs (a gradient affix
less: ``diff_s`` is ``s``'s, ``dmulv`` is ``mulv``'s), each exactly one array the forward
stored. The gradients it returns are, one per argument in order, the arguments'; fewer,
they are placed by the names its code returns (``dprev_s`` for ``prev_s``), and an
argument none is returned for is a constant, noted, when it is no float array or holds
0s and 1s only (a one-hot word); a float input given none is no reading (a gradient
forgotten looks the same). The check is then
the one of the function pair the layer is, every call on a copy.

Only a layer holding no float array is read so: with weights of its own, their
gradients would go unread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..read._discovery import is_float_array, walk
from ..read._flat import returned_names
from ..read._observe import grad_stem, method_pair, positional_names
from ..read._placing import zero_one
from ..read._protocol import clone

__all__ = ["stored_outputs"]

Pair = tuple[Callable[..., Any], Callable[..., Any], list[int], list[str], str]


def stored_outputs(layer: Any, inputs: tuple[Any, ...], forward: str | None,
                   backward: str | None) -> Pair | None:
    """``(fwd, bwd, wrt, names, note)`` of the reading above; None when it is not
    observed."""
    try:
        f_name, b_name, _ = method_pair(layer, forward, backward, inputs)
    except Exception:  # noqa: BLE001 - no pair of methods: no reading
        return None
    f_names = positional_names(getattr(layer, f_name), required=True)
    b_names = positional_names(getattr(layer, b_name), required=True)
    if not f_names or not b_names or len(f_names) != len(inputs) or len(b_names) <= len(
            f_names) or b_names[:len(f_names)] != f_names or any(
            is_float_array(v) for _, v in walk(layer)):
        return None
    obj = clone(layer)
    try:
        with np.errstate(all="ignore"):
            ret = getattr(obj, f_name)(*clone(inputs))
    except Exception:  # noqa: BLE001 - the plain reading's error stands
        return None
    stored = {k: v for k, v in vars(obj).items() if is_float_array(v)} if hasattr(
        obj, "__dict__") else {}
    outs = [_named(e, stored) for e in b_names[len(f_names):]]
    if ret is not None or None in outs or len(set(outs)) != len(outs):
        return None
    placed = _placed(obj, b_name, f_names, inputs, [stored[o] for o in outs if o])
    if placed is None or any(k not in placed and not _label(x) for k, x in enumerate(inputs)):
        return None  # (a float input given no gradient may be one forgotten: no reading)
    names = [o for o in outs if o]
    const = [f_names[k] for k in range(len(inputs)) if k not in placed]
    return (*_pair(layer, f_name, b_name, names, placed, len(inputs)), f_names,
            f"{type(layer).__name__}.{f_name} returns nothing and stores {', '.join(names)}: "
            f"its outputs, whose gradients {b_name} takes after the forward's arguments ("
            f"{', '.join(b_names[len(f_names):])})" + (
                f"; it returns no gradient for {', '.join(const)}: constant" if const else ""))


def _label(x: Any) -> bool:
    """An input that needs no gradient: not a float array, or one of 0s and 1s (a
    one-hot word)."""
    return not is_float_array(x) or zero_one(x)


def _named(arg: str, stored: dict[str, Any]) -> str | None:
    """The one stored array ``arg`` names as its gradient (``diff_s``: ``s``)."""
    stem = grad_stem(arg)
    fits = [k for k in stored if k.lstrip("_").lower() == stem] if stem != arg.lower() else []
    return fits[0] if len(fits) == 1 else None


def _placed(obj: Any, b_name: str, f_names: list[str], inputs: tuple[Any, ...],
            outs: list[np.ndarray]) -> list[int] | None:
    """The argument each gradient the backward returns (given ones) belongs to."""
    try:
        with np.errstate(all="ignore"):
            got = getattr(clone(obj), b_name)(*clone(inputs), *[np.ones_like(o) for o in outs])
    except Exception:  # noqa: BLE001 - no reading
        return None
    if not isinstance(got, (tuple, list)) or not got:
        return None
    if len(got) == len(inputs):
        order = list(range(len(inputs)))
    else:
        said = returned_names(getattr(obj, b_name), len(got)) or []
        order = [next((k for k, f in enumerate(f_names) if f.lower() == grad_stem(s)), -1)
                 for s in said]
        if len(order) != len(got) or -1 in order or len(set(order)) != len(order):
            return None
    fits = all(np.shape(g) == np.shape(inputs[k]) for g, k in zip(got, order, strict=True))
    return order if fits else None


def _pair(layer: Any, f_name: str, b_name: str, outs: list[str], order: list[int],
          n: int) -> tuple[Callable[..., Any], Callable[..., Any], list[int]]:
    def fwd(*xs: Any) -> Any:
        obj = clone(layer)
        getattr(obj, f_name)(*xs)
        return tuple(np.array(getattr(obj, o), copy=True) for o in outs), (obj, xs)

    def bwd(dy: Any, cache: Any) -> Any:
        obj, xs = cache
        got = getattr(obj, b_name)(*clone(xs), *dy)
        grads: list[Any] = [None] * n
        for g, k in zip(got, order, strict=True):
            grads[k] = g
        return tuple(grads)

    return fwd, bwd, sorted(order)
