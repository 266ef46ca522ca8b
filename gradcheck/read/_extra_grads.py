"""Gradients a function's backward returns in layouts of its own, read for ``check_vjp``:
the first inputs' in order and the rest in one dict by name (``dX, {'dW': dW, 'db':
db}``), and more gradients than inputs, the first of the inputs' shapes in order
(``dx, dk, db`` for a convolution ``f(x, k)`` without a bias).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._flat import mask
from ._observe import positional_names

__all__ = ["leading_fit", "trailing_dict"]


def trailing_dict(grads: Any, fwd: Any, inputs: list[Any]) -> dict[str, Any] | None:
    """``(dX, {'dW': dW, 'db': db})`` for ``fwd(X, W, b)`` as one dict named ``d`` + each
    input's name (the items before the dict for the first inputs, in order); None when
    the last item is no dict of string keys, a key repeats an item's name, or a float
    array input has no gradient (a forgotten ``db`` is no constant)."""
    n, names = len(inputs), positional_names(fwd)
    if not isinstance(grads, (list, tuple)) or not grads or not isinstance(grads[-1], dict) \
            or not all(isinstance(k, str) for k in grads[-1]) or names is None or \
            len(names) != n or not len(grads) - 1 < n:
        return None
    head = {f"d{names[k]}": g for k, g in enumerate(grads[:-1])}
    out = head | grads[-1]
    return None if set(head) & set(grads[-1]) or any(
        f"d{name}" not in out for name, x in zip(names, inputs, strict=True)
        if isinstance(x, np.ndarray) and x.dtype.kind == "f" and not mask(x)) else out


def leading_fit(grads: Any, inputs: list[Any], floating: list[int]) -> list[int] | None:
    """The float inputs, when the backward returned more gradients than them and its
    first ones are arrays of their shapes, in order; None otherwise."""
    if not isinstance(grads, (list, tuple)) or not floating or len(grads) <= len(floating):
        return None
    return floating if all(isinstance(g, np.ndarray) and g.shape == np.shape(inputs[k])
                           for g, k in zip(grads, floating, strict=False)) else None
