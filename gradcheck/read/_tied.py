"""An array given to a layer more than once (``layer(x, x, x)``: a self-attention's
queries, keys and values; or an equal copy of one, not all one value): its places move
together, it is checked at its first, and the gradients the backward gives its places
are added up (one array returned for all of them, ``dq + dk + dv``, is that sum)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._discovery import is_float_array, multiple_of
from ._layer_call import Protocol

__all__ = ["collinear", "tie", "untie"]


def tie(proto: Protocol, inputs: Sequence[Any]) -> None:
    """``proto.tied`` (place -> its first place) of the float arrays given again, left
    out of ``proto.wanted``, with a note; nothing when ``wrt=`` was given."""
    if proto.wrt_given:
        return
    first = {k: next((j for j in range(k) if _same(inputs[j], x)), None) if is_float_array(
        x) else None for k, x in enumerate(inputs)}
    proto.tied = {k: j for k, j in first.items() if j is not None}
    proto.wanted = [k for k in proto.wanted if k not in proto.tied]
    for j in sorted(set(proto.tied.values())):
        same = ", ".join(f"x{k}" for k, i in proto.tied.items() if i == j)
        proto.note(f"{same}: the same array as x{j}, given again: moved with it, checked "
                   "there, their gradients added up")


def _same(a: Any, b: np.ndarray) -> bool:
    """The same array, or an equal copy of one holding several values (two arrays of
    zeros, an initial ``h`` and ``c``, are no one tensor given twice)."""
    return a is b or (is_float_array(a) and a.shape == b.shape and a.dtype == b.dtype and
                      np.unique(b).size > 1 and np.array_equal(a, b))


def untie(proto: Protocol, ret: Any, xs: Sequence[Any] = ()) -> None:
    """The ties undone when the backward returned one gradient per place (an array or
    None each; the places before constants given last, a mask, count): each place is
    then checked on its own (a swap of two gradients of one array given twice would pass
    as their sum; a place held constant, a stop-gradient copy, would fail)."""
    items = list(ret) if isinstance(ret, (tuple, list)) else []
    if len(items) == proto.n_inputs + 1 and isinstance(items[-1], (dict, list)):
        items = items[:-1]  # (dx_a, dx_b, {'Wa': ...}): the parameters' part after them
    elif len(items) == 2 and isinstance(items[0], (list, tuple)) and isinstance(
            items[1], (dict, list, tuple)):
        items = list(items[0])  # ([dx_a, dx_b], {'Wa': ...})
    lead = next((k for k in range(len(xs)) if not any(
        is_float_array(x) and np.asarray(x).dtype.kind == "f" for x in xs[k:])), len(xs))
    if not proto.tied or not items or len(items) not in (proto.n_inputs, lead) or not all(
            r is None or isinstance(r, np.ndarray) for r in items) or (
                len(items) < proto.n_inputs and any(r is None for r in items)):  # (dq, None, dv)
        return  # beside a mask: no place left out (a forgotten dk is no stop-gradient)
    proto.wanted = sorted({*proto.wanted, *proto.tied})
    proto.notes = [t for t in proto.notes if ": the same array as x" not in t]
    proto.tied = {}


def collinear(a: np.ndarray, b: np.ndarray, scaled: bool) -> bool:
    """Whether ``a`` is ``b`` (with ``scaled``, a loss's, a multiple of it: its stored
    ``self.dy`` beside the ``self.dy / N`` it returns is the same gradient, no other
    input's; a layer's ``dh`` may be a multiple of its ``dx`` and still be ``h``'s)."""
    if np.shape(a) != np.shape(b) or not np.any(b):
        return False
    return multiple_of(a, b, 1e-5) if scaled else bool(np.array_equal(a, b))
