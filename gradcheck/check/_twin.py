"""float32 models judged against a float64 twin, with a tolerance from float32 rounding.

Finite differences of a float32 loss resolve a relative error of about 1e-1 in a
small tensor. A float64 *twin* (same parameters, same code, float64 arithmetic) is
checked against finite differences in float64 instead, and the float32 gradients are
then compared with the twin's, tensor by tensor. The tolerance is measured, not
assumed: the float32 gradients are computed a second time at parameters moved by one
rounding unit (a random sign per element), and the change is the size of float32's
rounding in each tensor's gradient; a tensor fails when it differs from the twin by
more than :data:`~gradcheck.check._options.SAFETY` times that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import F64
from ._options import SAFETY
from ._result import ElementReport, InputResult

__all__ = ["compare_tensor", "nudge_by_one_ulp", "with_values_of"]

_ROWS = 10


def with_values_of(twin: Any, model: Any) -> Any:
    """``twin`` with ``model``'s parameter values copied into its own arrays (cast).

    Raises
    ------
    TypeError
        If the twin lacks a parameter of the model or holds it in another shape.
    """
    table = getattr(twin, "params", None)
    if not isinstance(table, dict):
        raise TypeError(f"twin must have a 'params' dict; {type(twin).__name__} has none")
    for name, value in model.params.items():
        mine = table.get(name)
        if not isinstance(mine, np.ndarray) or mine.shape != np.shape(value):
            raise TypeError(f"twin.params[{name!r}] is missing or not shaped "
                            f"{np.shape(value)}")
        np.copyto(mine, value)
    return twin


def nudge_by_one_ulp(arrays: list[np.ndarray], rng: np.random.Generator) -> None:
    """Move every element by one rounding unit of its dtype, up or down at random."""
    for a in arrays:
        eps = a.dtype.type(np.finfo(a.dtype).eps)
        sign = rng.integers(0, 2, a.shape).astype(a.dtype) * a.dtype.type(2) - a.dtype.type(1)
        a *= a.dtype.type(1) + eps * sign


def compare_tensor(name: str, x: np.ndarray, g_low: F64, g_twin: F64, g_nudged: F64
                   ) -> InputResult:
    """One tensor: its low-precision gradient against the twin's.

    ``g_nudged`` is the low-precision gradient at parameters one rounding unit away;
    ``|g_nudged - g_low|`` (in norm) measures the rounding of ``g_low``.
    """
    diff = g_low - g_twin
    err = float(np.linalg.norm(diff))
    noise = float(np.linalg.norm(g_nudged - g_low))
    ref = float(np.linalg.norm(g_twin))
    tol = SAFETY * noise
    res = InputResult(name=name, shape=tuple(x.shape), dtype=x.dtype.name, mode="twin",
                      checked=int(x.size), max_abs_error=float(np.max(np.abs(diff)))
                      if diff.size else 0.0, atol=tol, rtol=0.0,
                      gradient_norm=float(np.linalg.norm(g_low)))
    res.max_rel_error = err / ref if ref > 0 else (0.0 if err == 0 else float("inf"))
    res.detectable_rel_error = tol / ref if ref > 0 else None
    res.message = (f"|g_{x.dtype.name} - g_float64| = {err:.3e} (relative "
                   f"{res.max_rel_error:.1e}); {x.dtype.name} rounding {noise:.3e}, "
                   f"tolerance {tol:.3e}")
    if not err <= tol:
        res.status = "mismatch"
        per = tol / np.sqrt(max(x.size, 1))
        flat = np.abs(diff).reshape(-1)
        for j in np.argsort(-flat, kind="stable")[:_ROWS]:
            index = tuple(int(c) for c in np.unravel_index(int(j), x.shape))
            res.worst.append(ElementReport(name, index, float(g_low.reshape(-1)[j]),
                                           float(g_twin.reshape(-1)[j]),
                                           float(flat[j]), float(per), "element"))
    return res
