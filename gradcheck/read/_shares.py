"""Where a parameter's gradient is read: the change a backward left at a place
(:func:`change`), and the other places it is read from, which must hold the same, or,
as distinct arrays each changed, each use's share (:func:`same_elsewhere`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._discovery import Param, try_path
from ._protocol import ProtocolError

__all__ = ["change", "same_elsewhere"]


def same_elsewhere(p: Param, fresh: Any, grad: Any, befores: dict[str, Any],
                   note: Callable[[str], None]) -> Any:
    """``grad``, when every other place the gradient of ``p`` is read from (a
    composite's ``grads`` list) holds what its own place holds: a backward that rebinds
    ``self.grads[0] = ...`` leaves the composite's list (what its optimizer reads)
    stale. Two or more places that differ but sum to it are shares (an unrolled
    recurrent layer's cells, each with its own step's part of the shared weight's
    gradient). Places that are distinct arrays, each changed by the backward and none
    a copy of another, are each use's share of a parameter held in several places (a
    word2vec's embedding shared by its negative samples): their sum is returned."""
    if grad is None:
        return grad
    g = np.asarray(grad, dtype=np.float64)
    tol = 1e-9 * float(np.max(np.abs(g), initial=1e-300))
    differ = []
    for path in p.also:
        other = change(try_path(fresh, path), befores[path], None)
        if other is None or np.shape(other) != np.shape(grad):
            continue
        o = np.asarray(other, dtype=np.float64)
        if not np.allclose(o, g, rtol=1e-6, atol=tol):
            differ.append((path, o))
    if len(differ) >= 2 and np.allclose(sum(o for _, o in differ), g, rtol=1e-6, atol=tol):
        return grad
    if differ and (total := _shares(p, fresh, g, befores, tol)) is not None:
        note(f"{p.name} is held in several places, each with a gradient of its own, none a "
             "copy of another (each use's share): checked as their sum")
        return total.astype(np.asarray(grad).dtype)
    for path, o in differ[:1]:
        stale = " (unchanged by the backward: stale)" if not np.any(o) else ""
        raise ProtocolError(
            "mismatch", f"gradient mismatch at {path}{stale}: the parameter {p.name} is also "
            f"reached there, but its gradient at {path} differs from the one at {p.grad} "
            f"(max |difference| {float(np.max(np.abs(o - g))):.3e}); a backward that rebinds "
            "a gradient (self.grads[0] = ...) leaves the other references to the old array "
            "stale: write in place (self.grads[0][...] = ...)")
    return grad


def _shares(p: Param, fresh: Any, g: np.ndarray, befores: dict[str, Any], tol: float
            ) -> np.ndarray | None:
    """The sum of the distinct arrays holding ``p``'s gradient (``g`` at its own place),
    when each was changed by the backward and none holds another's numbers; else None
    (a copy of one is a stale or rebound gradient, not a share)."""
    own = try_path(fresh, p.grad) if isinstance(p.grad, str) else None
    seen, parts = [own], [g]
    for path in p.also:
        obj = try_path(fresh, path)
        if any(obj is o for o in seen):
            continue
        part = change(obj, befores[path], None)
        if part is None or np.shape(part) != g.shape or not np.any(part):
            return None
        seen.append(obj)
        parts.append(np.asarray(part, dtype=np.float64))
    if len(parts) < 2 or any(np.allclose(a, b, rtol=1e-6, atol=tol) for i, a in enumerate(
            parts) for b in parts[i + 1:]):
        return None
    return np.sum(parts, axis=0)


def change(after: Any, before: np.ndarray | None, scale: Any) -> Any:
    """The gradient a backward left: the change it made, in the gradient's own dtype."""
    if after is None:
        return None
    raw = np.asarray(after)
    g = np.asarray(after, dtype=np.float64) - before if before is not None and np.shape(
        before) == raw.shape else raw.copy()  # (a [] placeholder rebound: no change read)
    if scale is not None:
        g = g * scale
    return g.astype(raw.dtype, copy=False) if raw.dtype.kind == "f" else g
