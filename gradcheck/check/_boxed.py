"""Inputs handed to a layer inside an object of their own (``Tensor(x)`` holding the
array as ``.data`` beside ``.grad = None`` and ``.requires_grad``): the array is the
input checked, put back in a copy of its object for every call of the forward."""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np

__all__ = ["box_gradient", "box_unread", "boxed_inputs", "reboxed"]

#: Attribute names a box keeps its gradient under, never its data.
_GRAD = re.compile(r"^_?(grad\w*|d|delta|diff)$", re.I)


def boxed_inputs(inputs: tuple[Any, ...]) -> dict[int, str]:
    """The inputs that are objects (no array, dict or sequence) holding exactly one
    array among their own attributes, a float one (a gradient's slot, ``.grad``, and a
    0/1 mask aside), and no other object with attributes of its own: index -> that
    attribute's name."""
    found = {}
    for k, x in enumerate(inputs):
        if isinstance(x, (np.ndarray, np.generic, dict, list, tuple, str, bytes, type)) or \
                not hasattr(x, "__dict__") or callable(x):
            continue
        own = vars(x)
        arrays = [n for n, v in own.items() if isinstance(v, np.ndarray) and not (
            _GRAD.match(n) or _mask(v))]  # (.grad = zeros_like(data), a 0/1 .mask)
        nested = [n for n, v in own.items() if hasattr(v, "__dict__") and not isinstance(
            v, (np.ndarray, type))]
        if len(arrays) == 1 and own[arrays[0]].dtype.kind == "f" and not nested:
            found[k] = arrays[0]
    return found


def reboxed(box: Any, name: str, array: Any) -> Any:
    """A copy of ``box`` holding ``array`` as its attribute ``name``."""
    out = copy.copy(box)
    setattr(out, name, array)
    return out


def box_gradient(box: Any, name: str) -> Any:
    """The gradient a backward that returned none for a boxed input wrote into the box
    the forward was given (``self.inp.grad = ...``): its one array of the data's shape
    under a gradient's name; None when there is none."""
    data = np.asarray(getattr(box, name, None))
    found = [v for n, v in vars(box).items() if n != name and _GRAD.match(n) and isinstance(
        v, np.ndarray) and v.shape == data.shape]
    return found[0] if len(found) == 1 else None


def _mask(v: np.ndarray) -> bool:
    return v.size > 1 and bool(np.all((v == 0) | (v == 1)))


def box_unread(k: int, box: Any, name: str) -> str:
    """Why a boxed input gets no verdict: the backward returned no gradient for it."""
    return (f"x{k} is a {type(box).__name__} whose .{name} is the input, and the backward "
            "returned no gradient for it (nor wrote one into the box it was given): a first "
            "layer's, or one forgotten, or kept where it is not observed; pass wrt= naming "
            "the parameters to hold the input constant")
