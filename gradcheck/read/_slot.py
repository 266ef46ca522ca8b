"""Darknet's backward: the output gradient read from an array the forward left zero on
the layer (``self.delta``), the input gradient written or added into a buffer the
backward is given (``backward(inpt, delta=None)``, ``backward(delta)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._discovery import get_path, is_float_array
from ._observe import default_of, float_state, positional_names, stored
from ._protocol import clone

__all__ = ["SLOT", "slot_style", "through_slot"]

#: The style of a backward that reads its output gradient from an array the forward left
#: zero on the layer, and adds the input gradient into a buffer it is given (darknet):
#: ``"slot:" + the array's path``.
SLOT = "slot:"


def through_slot(method: Any, path: str, order: Sequence[int | str | None], dy: Any,
                 xs: list[Any]) -> np.ndarray:
    """``dy`` written into the array at ``path`` of the method's object (every alias sees
    it), the backward called with the inputs and a zero buffer of the input's shape, the
    buffer returned: the input's gradient (zero if the backward added nothing to it)."""
    np.copyto(get_path(method.__self__, path), np.asarray(dy), casting="unsafe")
    x = xs[0]
    buf = np.zeros(np.shape(x), dtype=x.dtype if is_float_array(x) else np.float64)
    method(*[xs[k] for k in order if isinstance(k, int)], buf)
    return buf


def slot_style(method: Any, forward: Any, n: int, before: dict[str, tuple[int, np.ndarray]],
               after: Any, out: Any, kept: tuple[Any, ...]) -> tuple[str, list[int | None], str]:
    """``(SLOT + path, order, note)`` when the backward reads its output gradient from an
    array the forward left on the layer: its required arguments are the forward's one
    input (by name), one more optional argument defaults to None (the buffer the input
    gradient is added into), and the forward created exactly one all-zero array of the
    output's shape. Else ``("", [], "")``."""
    req, every = positional_names(method, required=True), positional_names(method)
    f_names = (positional_names(forward) or [])[:n]
    if n == 1 and every is not None and req is not None and every[:1] != f_names and (
            len(req) == 1 or (not req and every and default_of(method, every[0]) is None)):
        return _buffer_alone(method, before, after, out, kept)
    if n != 1 or not req or req != f_names or not every or len(every) <= len(req):
        return "", [], ""
    extra = every[len(req)]
    if default_of(method, extra) is not None or not isinstance(out, np.ndarray):
        return "", [], ""
    zeros = [p for p, v in stored(before, after, kept, copies=False).items()
             if v.shape == out.shape and v.dtype.kind == "f" and not v.any()]
    if len(zeros) != 1:
        return "", [], ""
    what = f"{type(after).__name__}"
    return SLOT + zeros[0], [0], (
        f"{what}'s backward reads the output gradient from {zeros[0]}, which its forward "
        f"left zero, and adds the input gradient into its argument {extra!r}: called so")


def _buffer_alone(method: Any, before: dict[str, tuple[int, np.ndarray]], after: Any,
                  out: Any, kept: tuple[Any, ...]) -> tuple[str, list[int | None], str]:
    """Darknet's ``backward(delta)``: the output gradient in the one all-zero array of the
    output's shape the forward created (``self.delta``), the argument a buffer the input
    gradient is written into. Taken when, so called on copies, the backward returns
    None and fills the buffer, twice as much for twice the output gradient."""
    zeros = [p for p, v in stored(before, after, kept, copies=False).items()
             if isinstance(out, np.ndarray) and v.shape == out.shape and v.dtype.kind == "f"
             and not v.any()] if isinstance(out, np.ndarray) else []
    x = next((k for k in kept if is_float_array(k)), None)
    if len(zeros) != 1 or x is None:
        return "", [], ""
    seen = []
    for scale in (1.0, 2.0):
        layer = clone(after)
        np.copyto(get_path(layer, zeros[0]), np.linspace(0.5, 1.5, out.size).reshape(
            out.shape) * scale, casting="unsafe")
        buf = np.zeros(x.shape)
        try:
            ret = getattr(layer, method.__name__)(buf)
        except Exception:  # noqa: BLE001 - not this reading
            return "", [], ""
        if ret is not None or not buf.any():
            return "", [], ""
        seen.append(buf)
    if not np.allclose(seen[1], 2 * seen[0], rtol=1e-9, atol=1e-12):
        return "", [], ""
    layer = clone(after)  # it writes or adds into its argument, never reads it: given a
    given = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)  # filled buffer and a zero
    buf = given.copy()  # slot, the buffer is left as it was or zero and nothing it
    state = float_state(layer)  # stores is other than zero (a backward reading its
    try:  # argument, dout += carry, scales it or computes gradients from it)
        getattr(layer, method.__name__)(buf)
    except Exception:  # noqa: BLE001 - not this reading
        return "", [], ""
    made = stored(state, layer, (buf,), copies=False)
    if not (np.array_equal(buf, given) or not buf.any()) or any(v.any() for v in made.values()):
        return "", [], ""
    return SLOT + zeros[0], [], (
        f"{type(after).__name__}'s backward reads the output gradient from {zeros[0]}, "
        "which its forward left zero, and writes the input gradient into its argument: "
        "called so")
