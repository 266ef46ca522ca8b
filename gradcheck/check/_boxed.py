"""Inputs handed to a layer inside an object of their own (``Tensor(x)`` holding the
array as ``.data`` beside ``.grad = None`` and ``.requires_grad``): the array is the
input checked, put back in a copy of its object for every call of the forward."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

__all__ = ["boxed_inputs", "reboxed"]


def boxed_inputs(inputs: tuple[Any, ...]) -> dict[int, str]:
    """The inputs that are objects (no array, dict or sequence) holding exactly one
    array among their own attributes, a float one, and no other object with attributes
    of its own: index -> that attribute's name."""
    found = {}
    for k, x in enumerate(inputs):
        if isinstance(x, (np.ndarray, np.generic, dict, list, tuple, str, bytes, type)) or \
                not hasattr(x, "__dict__") or callable(x):
            continue
        own = vars(x)
        arrays = [n for n, v in own.items() if isinstance(v, np.ndarray)]
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
