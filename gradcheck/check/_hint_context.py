"""What a hint is read from: :class:`HintContext`, one input's analytic and numerical
gradients with what surrounds them (the input, the other inputs, ``dy``), and the
closeness test every pattern of :mod:`gradcheck.check._hints` uses."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = ["F64", "HintContext"]

F64 = NDArray[np.float64]


@dataclass
class HintContext:
    """What the checker knows about one input when it has checked every element.

    Attributes
    ----------
    analytic, numeric : ndarray, shape of the input
    failed : ndarray of bool, shape of the input
    x : ndarray
        The input (float64).
    others : list of (name, ndarray)
        The other inputs (integer ones included).
    dy : list of ndarray
        The cotangent of each floating output, shaped.
    y : list of ndarray
        The outputs, shaped.
    dtype : str
        The input's dtype (sets the precision of the analytic side).
    """

    analytic: F64
    numeric: F64
    failed: NDArray[np.bool_]
    x: F64
    others: list[tuple[str, np.ndarray]] = field(default_factory=list)
    dy: list[F64] = field(default_factory=list)
    y: list[F64] = field(default_factory=list)
    dtype: str = "float64"

    @property
    def error(self) -> F64:
        return self.analytic - self.numeric

    @property
    def scale(self) -> float:
        return float(np.max(np.abs(self.numeric))) or float(np.max(np.abs(self.analytic))) or 1.0

    @property
    def a_tol(self) -> float:
        """How closely the analytic side can match an exact pattern."""
        return (1e-4 if self.dtype != "float64" else 1e-9) * self.scale

    @property
    def n_tol(self) -> float:
        """How closely the numerical side can match an exact pattern."""
        return (3e-3 if self.dtype != "float64" else 1e-5) * self.scale

    def explains(self, residual: F64) -> bool:
        """Whether a pattern leaves, at every element, at most 2% of the error there
        unexplained (or less than the numerical side's precision)."""
        bound = 0.02 * np.abs(self.error) + self.n_tol * 1e-2
        return bool(np.all(np.abs(residual) <= bound))


def _near(u: F64, v: F64, tol: float) -> bool:
    return u.shape == v.shape and bool(np.all(np.abs(u - v) <= tol))
