"""Recognise common patterns in a wrong gradient and say them in words."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["diagnose"]

_FACTORS: tuple[tuple[float, str], ...] = (
    (2.0, "2"),
    (0.5, "1/2"),
    (-1.0, "-1 (sign flipped)"),
    (-2.0, "-2"),
)


def _close(a: NDArray[np.float64], b: NDArray[np.float64], scale: float, rel: float) -> bool:
    return bool(np.all(np.abs(a - b) <= rel * scale))


def diagnose(
    analytic: NDArray[np.float64],
    numeric: NDArray[np.float64],
    failed: NDArray[np.bool_],
    shape: tuple[int, ...],
) -> str:
    """Describe the pattern of a gradient error, or return ``""``.

    Parameters
    ----------
    analytic, numeric : ndarray, shape (N,)
        Values at the checked elements, flattened in the order of ``shape``.
    failed : ndarray of bool, shape (N,)
        Which elements are outside their tolerance.
    shape : tuple of int
        Shape of the input when all of its elements were checked (then ``N`` equals its
        size and structural hints such as "transposed" become possible); otherwise ``()``.

    Returns
    -------
    str
        A one-line hint: sign flip, constant factor, transposed, zero / missing,
        offset, or errors confined to a few elements / one column.
    """
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    f = np.asarray(failed, dtype=bool)
    if a.size == 0 or not f.any():
        return ""
    scale = float(np.max(np.abs(n))) or float(np.max(np.abs(a))) or 1.0
    nf = int(f.sum())
    if np.all(np.abs(a[f]) <= 1e-12 * max(scale, 1e-300)) and np.any(n[f] != 0):
        where = "everywhere" if nf == a.size else f"at {nf} of {a.size} checked elements"
        extra = ""
        if shape and len(shape) == 2 and a.size == shape[0] * shape[1] and nf < a.size:
            cols = np.unique(np.nonzero(f.reshape(shape))[1])
            rows = np.unique(np.nonzero(f.reshape(shape))[0])
            if cols.size == 1:
                extra = f" (column {int(cols[0])})"
            elif rows.size == 1:
                extra = f" (row {int(rows[0])})"
        return f"gradient is zero / missing {where}{extra}: a branch may be dropped"
    if nf == a.size and a.size > 1:
        ratio = float(np.dot(a, n) / max(np.dot(n, n), 1e-300))
        if _close(a, ratio * n, scale * max(abs(ratio), 1.0), 1e-3 * max(1e-3, abs(ratio - 1))):
            for value, label in _FACTORS:
                if abs(ratio - value) <= 1e-3 * abs(value):
                    return f"off by a constant factor of {label} everywhere"
            inv = 1.0 / ratio if ratio != 0 else 0.0
            if inv > 1 and abs(inv - round(inv)) <= 1e-3 * inv:
                return (
                    f"off by a constant factor of 1/{round(inv)} everywhere "
                    "(a missing or extra 1/N normalisation?)"
                )
            if ratio > 1 and abs(ratio - round(ratio)) <= 1e-3 * ratio:
                return f"off by a constant factor of {round(ratio)} everywhere (a missing 1/N?)"
            sq = ratio * ratio
            if abs(sq - round(sq)) <= 1e-3 * sq and round(sq) > 1:
                return f"off by a constant factor of sqrt({round(sq)}) everywhere (a scale?)"
            if abs(1 / sq - round(1 / sq)) <= 1e-3 / sq and round(1 / sq) > 1:
                return f"off by a constant factor of 1/sqrt({round(1 / sq)}) (a scale?)"
            return f"off by a constant factor of {ratio:.6g} everywhere"
        offset = float(np.median(a - n))
        if abs(offset) > 0 and np.all(np.abs(a - offset - n) <= 0.01 * abs(offset)):
            return f"off by a constant offset of {offset:.4g}"
    if shape and len(shape) == 2 and shape[0] == shape[1] and a.size == shape[0] * shape[1]:
        at = a.reshape(shape).T.ravel()
        if _close(at, n, scale, 1e-3):
            return "matches the transposed gradient: a missing or extra transpose"
    if nf <= max(3, a.size // 100):
        flip = np.all(np.abs(a[f] + n[f]) <= 1e-3 * np.maximum(np.abs(n[f]), 1e-300))
        if flip:
            return f"sign flipped at {nf} element(s), correct elsewhere"
        return f"wrong at {nf} of {a.size} checked elements, correct elsewhere"
    if shape and len(shape) == 2 and a.size == shape[0] * shape[1]:
        cols = np.unique(np.nonzero(f.reshape(shape))[1])
        if cols.size == 1:
            return f"errors confined to column {int(cols[0])}"
    return ""
