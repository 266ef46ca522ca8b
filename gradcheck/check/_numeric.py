"""Finite differences that know their own error, and the tolerance built from it.

For a cotangent ``dy`` drawn once, the runner takes differences of
``phi(x) = sum(f(x) * dy)`` along one element or one direction of an input, with the
outputs flattened to one float64 vector, so that outputs an element does not touch
cancel exactly; the rounding noise is estimated from the outputs that did change.
:meth:`Runner.compare` decides one element: central differences first, then Richardson
extrapolation at shrinking steps and one-sided differences (kinks).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._options import DEFAULT_RTOL, NOISE_ULPS, SAFETY, Options

__all__ = ["F64", "Runner", "Stencil", "eps_of", "generator", "resolve_method"]

F64 = NDArray[np.float64]


def generator(seed: int) -> np.random.Generator:
    """The checker's own stream for ``seed``.

    Salted so that it never repeats a user's ``default_rng(seed)`` draw of the inputs
    (with equal streams, ``dy`` would equal ``x`` and hide a transposed ``x.T @ dy``).
    """
    return np.random.default_rng([int(seed), 0x67726164])


def eps_of(dtype: np.dtype[Any]) -> float:
    return float(np.finfo(dtype).eps)


@dataclass
class Stencil:
    """Central difference along one element or direction at one step size."""

    d: float  # central difference of phi, per unit of the normalising step
    noise: float  # estimated rounding noise of d
    dplus: float  # one-sided (forward) difference
    dminus: float  # one-sided (backward) difference
    analytic: float  # g . (delta+ - delta-) / (2 h) for the deltas actually applied


class Runner:
    """Finite differences of ``phi = sum(evaluate() * dy)`` over working arrays.

    ``arrays`` are the arrays the evaluation reads; they are perturbed in place and
    restored bit for bit in ``finally`` blocks. With ``swap=True`` the evaluation
    reads them from the list ``arrays`` itself, and directions replace its entries
    instead of copying into them (no copy of a large input per evaluation).
    """

    def __init__(
        self,
        arrays: list[np.ndarray],
        names: list[str],
        evaluate: Callable[[], NDArray[Any]],
        dy: F64,
        grads: list[F64 | None],
        y0: NDArray[Any],
        opts: Options,
        rng: np.random.Generator,
        *,
        swap: bool = False,
    ) -> None:
        self.arrays = arrays
        self.computed: dict[int, str] = {}  # leaf -> dtype its gradient was computed in
        self.arith: dict[int, str] = {}  # leaf -> narrower dtype the output was computed in
        self.rounded: dict[int, float] = {}  # leaf -> scale of its float32 rounding's noise
        self.swap = swap
        self.names = names
        self.evaluate = evaluate
        self.dy = dy
        self.absdy = np.abs(dy)
        self.grads = grads
        self.y0 = np.asarray(y0, dtype=np.float64)
        self.y_rms = float(np.sqrt(np.mean(self.y0 * self.y0))) if self.y0.size else 0.0
        self.opts = opts
        self.rng = rng
        self.evaluations = 0
        self.nonfinite: list[str] = []
        #: shapes of the floating outputs whose concatenation ``dy`` and ``y0`` are
        self.out_shapes: list[tuple[int, ...]] = [tuple(np.shape(y0))]
        self._w_all: float | None = None
        self._bufs: tuple[F64, F64] | None = None  # scratch for the output differences
        #: ``vjp(dy_flat)``: the backward's gradients (one per array, None where absent)
        #: for another cotangent; lets a direction leave outputs at kinks out of ``phi``
        #: (:mod:`gradcheck.check._kinks`). None where the outputs are one scalar (a loss).
        self.vjp: Callable[[F64], list[F64 | None]] | None = None
        #: set once a direction met outputs at kinks: later directions leave them out
        #: from the start
        self.kinky = False
        #: elements kept in the last sparser direction that met no kink (0: none yet)
        self.sparse_from = 0
        self._dy_full: bool | None = None  # dy has no zero (see _finite)

    # -- low level -------------------------------------------------------------------
    def _run(self) -> F64:
        self.evaluations += 1
        y = np.asarray(self.evaluate())
        return np.asarray(y, dtype=np.float64)

    def _run_at(self, values: dict[int, np.ndarray]) -> F64:
        """Evaluate with input ``i`` set to ``values[i]``; restored afterwards.

        With ``swap`` the list entries are replaced (the evaluation reads the arrays
        from this list), else the arrays are overwritten in place and restored bit for
        bit from copies.
        """
        originals = {i: self.arrays[i] for i in values}
        saved = {} if self.swap else {i: a.copy() for i, a in originals.items()}
        try:
            for i, x in values.items():
                if self.swap:
                    self.arrays[i] = x
                else:
                    np.copyto(self.arrays[i], x)
            return self._run()
        finally:
            for i, a in originals.items():
                if self.swap:
                    self.arrays[i] = a
                else:
                    np.copyto(a, saved[i])

    def _eps_out(self, i: int) -> float:
        return self.eps(i)

    def eps(self, i: int) -> float:
        """The machine epsilon of the forward's arithmetic for input ``i``: its dtype's, or
        that of a narrower dtype the output was computed in (``arith``)."""
        own = eps_of(self.arrays[i].dtype)
        narrow = self.arith.get(i)
        if i in self.rounded:  # rounded to float32 on its way in: float32's rounding of the
            return eps_of(np.dtype(np.float32)) * self.rounded[i]  # part it moves, not of y
        return max(own, eps_of(np.dtype(narrow))) if narrow else own

    def _diffs(self, yp: F64, ym: F64, eps: float) -> tuple[float, float, float, float]:
        """Return sum((yp-ym)dy), sum((yp-y0)dy), sum((y0-ym)dy) and their noise."""
        if self._bufs is None or self._bufs[0].shape != self.y0.shape:
            self._bufs = (np.empty_like(self.y0), np.empty_like(self.y0))
        up = np.subtract(yp, self.y0, out=self._bufs[0]).reshape(-1)
        um = np.subtract(self.y0, ym, out=self._bufs[1]).reshape(-1)
        dyf = self.dy.reshape(-1)
        dp = float(np.dot(up, dyf))
        dm = float(np.dot(um, dyf))
        n_out = up.size
        if np.count_nonzero(up) == n_out and np.count_nonzero(um) == n_out:
            changed = None  # every output moved (the common case of a direction)
        else:
            changed = (up != 0) | (um != 0)
        # Rounding errors of the changed outputs, weighted by the random signed dy,
        # add in quadrature (coherent errors too, since dy is random). An output is
        # assumed to carry the rounding of intermediates of the layer's typical size
        # (the RMS of its outputs) even when it is itself small: a small output is
        # often a cancellation of large terms (GELU's tail, softmax, LayerNorm).
        if changed is None:
            # |yp| + |ym| is 2 |y0| to first order in the step: precomputed once.
            noise = NOISE_ULPS * eps * self._all_changed_norm()
        elif changed.any():
            mag = np.abs(yp.reshape(-1)[changed]) + np.abs(ym.reshape(-1)[changed])
            w = np.maximum(mag, self.y_rms) * self.absdy.reshape(-1)[changed]
            noise = NOISE_ULPS * eps * float(np.sqrt(np.dot(w, w)))
        else:
            # Nothing moved: the derivative is below the resolution of the outputs.
            w = np.abs(self.y0.reshape(-1)) * self.absdy.reshape(-1)
            noise = eps * float(np.sqrt(np.dot(w, w)))
        return dp + dm, dp, dm, noise

    def _finite(self, yp: F64, ym: F64, dp: float, dm: float) -> bool:
        """Are both outputs finite? When ``dy`` has no zero, finite sums
        ``(yp - y0) . dy`` and ``(y0 - ym) . dy`` say so without a pass over the outputs
        (a NaN or Inf output makes its sum NaN or Inf); otherwise, or when a sum is not
        finite (an overflow of finite values), every output is looked at."""
        if self._dy_full is None:
            self._dy_full = bool(np.all(self.dy != 0))
        if self._dy_full and math.isfinite(dp) and math.isfinite(dm):
            return True
        return bool(np.all(np.isfinite(yp)) and np.all(np.isfinite(ym)))

    def _all_changed_norm(self) -> float:
        """``|max(2 |y0|, rms(y0)) * |dy||``: the noise weight when every output moved."""
        if self._w_all is None:
            w = np.abs(self.y0).reshape(-1)
            w *= 2.0
            np.maximum(w, self.y_rms, out=w)
            w *= self.absdy.reshape(-1)
            self._w_all = float(np.sqrt(np.dot(w, w)))
        return self._w_all

    def run_pair_at(self, i: int, idx: Any, xp: Any, xm: Any) -> tuple[F64, F64]:
        """Evaluate with the flat elements ``idx`` of input ``i`` set to ``xp``, then to
        ``xm``; restored bit for bit afterwards."""
        flat = self.arrays[i].reshape(-1)  # a view: arrays are kept contiguous
        x0 = flat[idx].copy()
        try:
            flat[idx] = xp
            yp = self._run()
            flat[idx] = xm
            ym = self._run()
        finally:
            flat[idx] = x0
        return yp, ym

    def element(self, i: int, j: int, h: float) -> Stencil:
        """Central and one-sided differences along element ``j`` of input ``i``."""
        arr = self.arrays[i]
        flat = arr.reshape(-1)  # a view: arrays are kept contiguous
        x0 = flat[j].copy()
        xp = (x0 + arr.dtype.type(h)).astype(arr.dtype)
        xm = (x0 - arr.dtype.type(h)).astype(arr.dtype)
        yp, ym = self.run_pair_at(i, j, xp, xm)
        up = float(xp) - float(x0)
        um = float(x0) - float(xm)
        span = up + um
        g = self.grads[i]
        a = float(g.reshape(-1)[j]) if g is not None else 0.0
        dpm, dp, dm, noise = self._diffs(yp, ym, self._eps_out(i))
        if not self._finite(yp, ym, dp, dm):
            self.nonfinite.append(f"{self.names[i]}[{j}]")
        return Stencil(
            d=dpm / span,
            noise=noise / span,
            dplus=dp / up if up else 0.0,
            dminus=dm / um if um else 0.0,
            analytic=a,
        )

    def direction(self, i: int, v: F64, h: float) -> Stencil:
        """Central and one-sided differences along direction ``v`` of input ``i``."""
        return self.joint({i: v}, h)

    def joint(self, parts: dict[int, NDArray[np.floating[Any]]], h: float) -> Stencil:
        """Differences along one direction spanning several inputs at once.

        ``parts`` maps an input to its part of the direction (its shape); every listed
        input moves by ``h * parts[i]`` together. The analytic value is the sum over
        the inputs of the gradient times the displacement actually applied (after
        rounding to each input's dtype).
        """
        yp, ym, moved = self.joint_outputs(parts, h)
        analytic = 0.0
        for i, (xp, xm) in moved.items():
            g = self.grads[i]
            if g is not None:
                span_i = np.subtract(xp, xm, dtype=np.float64,
                                     out=xm if xm.dtype == np.float64 else None)
                analytic += float(np.dot(g.reshape(-1), span_i.reshape(-1)))
        eps = max(self._eps_out(i) for i in parts)
        dpm, dp, dm, noise = self._diffs(yp, ym, eps)
        if not self._finite(yp, ym, dp, dm):
            names = "+".join(self.names[i] for i in parts)
            self.nonfinite.append(f"{names} (direction)")
        span = 2.0 * h
        return Stencil(d=dpm / span, noise=noise / span, dplus=dp / h, dminus=dm / h,
                       analytic=analytic / span)

    def joint_outputs(self, parts: dict[int, NDArray[np.floating[Any]]], h: float
                      ) -> tuple[F64, F64, dict[int, tuple[np.ndarray, np.ndarray]]]:
        """The outputs at ``x + h v`` and ``x - h v`` for a direction ``v`` over several
        inputs (``parts``), and the perturbed inputs ``{i: (xp, xm)}`` actually used."""
        moved: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for i, v in parts.items():
            arr = self.arrays[i]
            step = np.asarray(np.multiply(v, h, dtype=np.float64))  # 0-d stays an array
            if arr.dtype == np.float64:
                moved[i] = (arr + step, np.subtract(arr, step, out=step))
            else:
                x64 = arr.astype(np.float64)
                moved[i] = ((x64 + step).astype(arr.dtype), (x64 - step).astype(arr.dtype))
        yp = self._run_at({i: xp for i, (xp, _xm) in moved.items()})
        ym = self._run_at({i: xm for i, (_xp, xm) in moved.items()})
        return yp, ym, moved

    # -- step sizes ------------------------------------------------------------------
    def step(self, i: int, method: str, magnitude: float) -> float:
        """Step from the dtype and the magnitude of the element (or of the input)."""
        eps = eps_of(np.dtype(np.float32)) if i in self.rounded else self.eps(i)
        power = 1.0 / 5.0 if method == "richardson" else 1.0 / 3.0
        return float(eps**power * max(1.0, magnitude))

    # -- one comparison ----------------------------------------------------------------
    def _refine(
        self, i: int, probe: Callable[[float], Stencil], h: float, s1: Stencil, s2: Stencil,
        a: float,
    ) -> tuple[tuple[float, float, float, float, float, bool], float]:
        """Richardson at h and h/2 from steps h, h/2, h/4; the error of the second.

        With ``s(h) = f' + c2 h^2 + c4 h^4``, ``R(h) = (4 s(h/2) - s(h)) / 3`` leaves
        ``-c4 h^4 / 4``, so ``R(h/2)`` is off by ``|R(h) - R(h/2)| / 15``.
        """
        s3 = probe(h / 4)
        r1 = (4.0 * s2.d - s1.d) / 3.0
        r2 = (4.0 * s3.d - s2.d) / 3.0
        err = abs(r1 - r2) / 15.0 + 3.0 * max(s2.noise, s3.noise)
        atol, rtol, tol = self.tolerance(i, err, r2)
        return (a, r2, abs(a - r2), atol, rtol, False), tol

    def rtol_of(self, i: int) -> float:
        """The relative tolerance for input ``i`` (the user's, else its dtype's)."""
        if self.opts.rtol is not None:
            return self.opts.rtol
        own = DEFAULT_RTOL.get(self.arrays[i].dtype.name, 1e-5)
        computed = self.computed.get(i, "")
        if computed == "float16" and i not in self.arith:  # a wider output: the gradient
            return max(own, 2 * eps_of(np.dtype(np.float16)))  # was only rounded to float16
        # a gradient computed in a narrower dtype (float32 buffers for a float64 input)
        # gets the tolerance of the dtype that computed it
        return max(own, DEFAULT_RTOL.get(computed, own))

    def tolerance(self, i: int, err: float, numeric: float) -> tuple[float, float, float]:
        """Return ``(atol, rtol, atol + rtol*|numeric|)`` for one element."""
        rtol = self.rtol_of(i)
        atol = self.opts.atol if self.opts.atol is not None else SAFETY * err
        if self.opts.atol is None and self.computed.get(i) == "float16" and i not in self.arith:
            atol = max(atol, float(np.finfo(np.float16).smallest_subnormal))  # its spacing
        return atol, rtol, atol + rtol * abs(numeric)

    def compare(
        self,
        i: int,
        probe: Callable[[float], Stencil],
        magnitude: float,
        method: str,
        *,
        screen: bool = False,
    ) -> tuple[float, float, float, float, float, bool]:
        """Compare one element or direction: ``(analytic, numeric, error, atol, rtol,
        is_kink)``. With ``screen`` a failure of the first comparison is returned as it
        is, without the closer look (smaller steps, kinks) a failure otherwise gets."""
        h = self.step(i, "central" if method == "central" else "richardson", magnitude)
        s1 = probe(h)
        a = s1.analytic
        if method == "central":
            atol, rtol, tol = self.tolerance(i, s1.noise, s1.d)
            if abs(a - s1.d) <= tol or screen:
                return a, s1.d, abs(a - s1.d), atol, rtol, False
            # A failure: look again more carefully before calling it a mismatch.
        first: tuple[float, float, float, float, float, bool] | None = None
        # Richardson extrapolation at h, then at h/4 and h/16: kinks near x spoil the
        # larger stencils only, while a wrong gradient fails at every step.
        for shrink in (1.0, 0.25, 0.0625):
            hh = h * shrink
            if shrink != 1.0:
                s1 = probe(hh)
            s2 = probe(hh / 2)
            n = (4.0 * s2.d - s1.d) / 3.0
            err = abs(s2.d - s1.d) / 3.0 + 3.0 * max(s1.noise, s2.noise)
            atol, rtol, tol = self.tolerance(i, err, n)
            error = abs(a - n)
            out = (a, n, error, atol, rtol, False)
            if first is None:
                if screen or (error <= tol and (error <= err or self.opts.atol is not None)):
                    return out
                if error <= tol:
                    # Inside the tolerance but beyond the error estimate itself: the
                    # two-step estimate (the error of the cruder step) is loose; a third
                    # step gives the error of the extrapolation, 15x tighter.
                    out, tol = self._refine(i, probe, hh, s1, s2, a)
                    if out[2] <= tol:
                        return out
                first = out
            elif error <= tol and abs(n - first[1]) > first[3] + first[4] * abs(first[1]):
                # Passes at a smaller step, and the numerical derivative itself moved by
                # more than the first step's own tolerance on the way: that stencil was
                # spoilt (a kink or a short length scale near x). A wrong gradient at a
                # smooth point gives the same numerical value at every step and stays a
                # mismatch.
                return out
            if _one_sided_at_kink(s1, s2, a, tol):
                return a, n, error, atol, rtol, True
            if 8.0 * err > abs(n) + abs(a):
                break  # the noise has taken over: smaller steps cannot say more
        if first is None:  # pragma: no cover - the loop always runs once
            raise RuntimeError("internal error: no comparison made")
        return first


def _one_sided_at_kink(s1: Stencil, s2: Stencil, a: float, tol: float) -> bool:
    """Whether the stencils straddle a kink (for a smooth function the one-sided gap
    shrinks linearly with the step) and ``a`` is a valid one-sided derivative there."""
    gap1 = s1.dplus - s1.dminus
    gap2 = s2.dplus - s2.dminus
    dev = abs(gap1 - 2.0 * gap2)
    noise_os = 4.0 * (s1.noise + s2.noise)
    if not (dev > 0.25 * max(abs(gap1), abs(gap2)) and dev > noise_os):
        return False
    sides = (s1.dplus, s1.dminus, s2.dplus, s2.dminus)
    slack = tol + noise_os
    return min(sides) - slack <= a <= max(sides) + slack


def resolve_method(method: str, dtype: np.dtype[Any]) -> str:
    """``auto`` is ``central`` for float64 and ``richardson`` for narrower floats."""
    if method != "auto":
        return method
    return "central" if np.dtype(dtype).itemsize >= 8 else "richardson"
