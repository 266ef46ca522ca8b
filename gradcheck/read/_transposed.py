"""A gradient stored transposed that the layer's own update applies transposed.

``self.dW = x.T @ dZ`` for ``W`` of shape ``(out, in)`` stores ``W.T``'s gradient, a
``shape-mismatch`` as it stands. When a method of the layer taking the step size (or
nothing), called with 1.0 on a copy right after a forward and a backward, moves ``W`` by
exactly ``-dW.T`` (``self.W -= lr * self.dW.T``; its one argument named as a step size),
the layer itself reads it so: the gradient of ``W`` is ``dW.T``, with a note. No such
method: the ``shape-mismatch`` stands.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
from typing import Any

import numpy as np

from ._discovery import Param, get_path, is_float_array, try_path
from ._observe import grad_of, positional_names
from ._protocol import clone

__all__ = ["STEP_SIZE", "applied_transposed"]


class _Transposed:
    """``layer -> the array at path, transposed`` (a Param's gradient)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, layer: Any) -> Any:
        g = get_path(layer, self.path)
        return None if g is None else np.asarray(g).T


#: The one argument of a step method: a step size (called with 1.0; never a path, a flag).
#: An argument named as a step size (``backward(d, lr)``, ``update_weights(deltas, eta)``).
STEP_SIZE = re.compile(r"^(lr|lrate|learning_?rate|eta|alpha|step_?size)$", re.I)
#: A step method's name (an update, not a save or a plot).
_STEP_NAME = re.compile(r"^(update|step|apply|optimi[sz]e|descend|learn)", re.I)


def _steps(layer: Any, skip: set[str]) -> list[str]:
    """Public methods but ``skip`` named as a step, taking one argument named as a step
    size (looked up without running properties)."""
    out = []
    for name in dir(type(layer)):
        if name.startswith("_") or name in skip or not _STEP_NAME.match(name) or not \
                callable(inspect.getattr_static(type(layer), name, None)):
            continue
        wants = positional_names(getattr(layer, name), required=True) or []
        if len(wants) == 1 and STEP_SIZE.match(wants[0]):
            out.append(name)
    return out


def _moves_by(after: Any, name: str, pairs: dict[str, str]) -> bool:
    """Whether ``name(1.0)`` on a copy of ``after`` moves each array by minus its
    gradient transposed (its printing kept off the user's output)."""
    moved = clone(after)
    before = {p: np.array(get_path(moved, p), copy=True) for p in pairs}
    try:
        with np.errstate(all="ignore"), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            getattr(moved, name)(1.0)
        now = {p: try_path(moved, p) for p in pairs}
        return all(is_float_array(now[p]) and now[p].shape == before[p].shape and np.allclose(
            before[p] - now[p], np.asarray(get_path(after, g)).T, rtol=1e-9, atol=1e-12)
            for p, g in pairs.items())
    except Exception:  # noqa: BLE001 - it raised, or left no such array: not a step method
        return False


def applied_transposed(layer: Any, after: Any, left: list[str], cands: dict[str, Any],
                       skip: set[str]) -> tuple[list[Param], str]:
    """Params for the arrays of ``left`` (2-d, not square) whose gradient is stored under
    its name transposed in ``cands`` and that one step method of ``after`` (the layer
    after a forward and a backward) moves by exactly minus it transposed, and a note."""
    pairs = {}
    for path in left:
        a = try_path(layer, path)
        if is_float_array(a) and a.ndim == 2 and a.shape[0] != a.shape[1] and (
                named := grad_of(path, a.shape[::-1], cands)) is not None:
            pairs[path] = named
    if not pairs:
        return [], ""
    for name in _steps(after, skip):
        if _moves_by(after, name, pairs):
            note = (f"{name}() moves {', '.join(pairs)} by minus "
                    f"{', '.join(f'{g}.T' for g in pairs.values())}: the gradients stored "
                    "transposed, read as the layer's own update reads them")
            return [Param(p, p, _Transposed(g)) for p, g in pairs.items()], note
    return [], ""
