"""The precision a backward computes in, observed: a float64 backward that rounds to
float32 somewhere inside (a pooling layer's ``dx`` built in a float32 buffer, within a
float64 model) returns gradients that are linear in the output gradient only to
float32's rounding. Given ``-3 * dy`` instead of ``dy`` (a scale that is no power of
two, so that rounding shows), such a gradient differs from ``-3`` times the first by a
relative 1e-8 to 1e-6, where float64 arithmetic leaves 1e-15, while a zero output
gradient gives zeros (a term that does not scale with it, weight decay folded into
``dW``, is no rounding): its gradient is then compared at float32's tolerance, with a
note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["SCALE", "narrowed"]

#: The factor of the third backward call's output gradient.
SCALE = -3.0

_LOW, _HIGH = 3e-9, 1e-5  # a float32 rounding's relative size, and well above it


def narrowed(grads: list[Any], third: list[Any], names: Any, computed: dict[int, str],
             notes: list[str], at_zero: Callable[[], list[Any]]) -> None:
    """Mark in ``computed`` as float32 each float64 gradient of ``grads`` that ``third``
    (the gradients for ``SCALE`` times the output gradient) reproduces only to float32's
    rounding, when ``at_zero()`` (the gradients for a zero output gradient) are zeros: a
    backward affine in it (``dW + 1e-6 * W``, ``(dy + 1e-6) * mask``) is no rounding."""
    found = []
    for i, (g, t) in enumerate(zip(grads, third, strict=False)):
        if g is None or t is None or computed.get(i) != "float64":
            continue
        try:
            t = np.asarray(t, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        scale = float(np.max(np.abs(SCALE * g), initial=0.0))
        if t.shape != g.shape or not scale or not np.all(np.isfinite(t)):
            continue
        if _LOW < float(np.max(np.abs(t - SCALE * g))) / scale < _HIGH:
            found.append(i)
    zero = at_zero() if found else []
    found = [i for i in found if zero[i] is None or not np.any(np.asarray(zero[i]))]
    computed.update(dict.fromkeys(found, "float32"))
    if found:
        which = ", ".join(names[i] or "x0" for i in found)
        notes.append(f"the backward's gradients of {which} are linear in the output gradient "
                     "only to float32's rounding (it computes in float32 somewhere): compared "
                     "at float32's tolerance")
