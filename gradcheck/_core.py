"""The gradient checker: finite differences that know their own error.

Notation
--------
For a layer ``y, cache = fwd(*inputs)`` and a cotangent ``dy`` drawn once from a seeded
signed Gaussian, the checker compares the backward's vector-Jacobian product
``g_i = bwd(dy, cache)[i]`` with finite differences of the scalar

    phi(x) = sum(fwd(x)[0] * dy)

along an element ``e_j`` (modes ``full`` and ``sampled``) or a random direction ``v``
(mode ``directional``). Differences are taken of the outputs themselves, in float64
(``sum((y+ - y-) * dy)``), so outputs that an element does not touch cancel exactly; the
rounding noise is estimated from the outputs that did change.

An element passes when ``|a - n| <= atol + rtol * |n|``, with ``atol`` derived from the
estimated error of the numerical derivative ``n`` (rounding noise plus, for Richardson
extrapolation, the difference between two step sizes) and ``rtol`` from the dtype.
Elements that fail a first, central-difference pass are evaluated again with Richardson
extrapolation and one-sided differences: a stencil that straddles a non-differentiable
point is reported as a kink (and skipped) only if the analytic value lies between the
one-sided derivatives, so a wrong gradient at a kink is still caught.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._hints import diagnose
from ._result import CheckResult, ElementReport, GradientMismatch, InputResult, _listeners

__all__ = ["assert_vjp", "check_grad", "check_vjp"]

MODES = ("auto", "full", "sampled", "directional")
METHODS = ("auto", "central", "richardson", "complex")

#: Default relative tolerance by dtype.  float64 catches a relative error of 1e-6.
DEFAULT_RTOL: dict[str, float] = {"float64": 1e-7, "float32": 2e-5, "float16": 1e-2}
#: Multiplier on the estimated error of the numerical derivative that gives ``atol``.
SAFETY = 8.0
#: Rounding error assumed per changed output, in units of eps times its magnitude.
NOISE_ULPS = 2.0
_LEAF = 16
_Z_SLOPE = 8.0
_MAX_WORST = 10
_REL_TARGET = 1e-4

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class _Options:
    seed: int
    mode: str
    method: str
    atol: float | None
    rtol: float | None
    directions: int
    samples: int
    budget: int
    localise: bool


def _validate_options(
    *,
    seed: Any,
    mode: Any,
    method: Any,
    atol: Any,
    rtol: Any,
    directions: Any,
    samples: Any,
    budget: Any,
    localise: Any,
) -> _Options:
    """Check every keyword option up front and say exactly what is wrong."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    for label, value in (("atol", atol), ("rtol", rtol)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
                raise TypeError(f"{label} must be a float or None, got {type(value).__name__}")
            if not math.isfinite(float(value)) or float(value) < 0:
                raise ValueError(f"{label} must be finite and >= 0, got {value!r}")
    for label, value, low in (
        ("directions", directions, 1),
        ("samples", samples, 1),
        ("budget", budget, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{label} must be an integer >= {low}, got {value!r}")
    if not isinstance(localise, bool):
        raise TypeError(f"localise must be True or False, got {localise!r}")
    return _Options(
        seed=int(seed),
        mode=str(mode),
        method=str(method),
        atol=None if atol is None else float(atol),
        rtol=None if rtol is None else float(rtol),
        directions=int(directions),
        samples=int(samples),
        budget=int(budget),
        localise=localise,
    )


class _ProtocolError(Exception):
    """A forward or backward broke the protocol; carries the status to report."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _snapshot(obj: Any, depth: int = 0) -> Any:
    """Copy every ndarray reachable in ``obj`` (tuples, lists, dicts, dataclasses)."""
    if depth > 6:
        return None
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, (list, tuple)):
        return [_snapshot(o, depth + 1) for o in obj]
    if isinstance(obj, dict):
        return {k: _snapshot(v, depth + 1) for k, v in obj.items()}
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _snapshot(getattr(obj, f.name), depth + 1) for f in fields(obj)}
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether ``b`` (current) still equals snapshot ``a`` bit for bit (NaNs equal)."""
    if a is None:
        return True
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.shape != b.shape:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, list):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if isinstance(b, dict):
            return all(k in b and _same(v, b[k]) for k, v in a.items())
        return all(_same(v, getattr(b, k, None)) for k, v in a.items())
    return True


def _generator(seed: int) -> np.random.Generator:
    """The checker's own stream for ``seed``.

    Salted so that it never repeats a user's ``default_rng(seed)`` draw of the inputs
    (with equal streams, ``dy`` would equal ``x`` and hide a transposed ``x.T @ dy``).
    """
    return np.random.default_rng([int(seed), 0x67726164])


def _eps(dtype: np.dtype[Any]) -> float:
    return float(np.finfo(dtype).eps)


@dataclass
class _Stencil:
    """Central difference along one element or direction at one step size."""

    d: float  # central difference of phi, per unit of the normalising step
    noise: float  # estimated rounding noise of d
    dplus: float  # one-sided (forward) difference
    dminus: float  # one-sided (backward) difference
    analytic: float  # g . (delta+ - delta-) / (2 h) for the deltas actually applied


class _Runner:
    """Finite differences of ``phi = sum(evaluate() * dy)`` over working arrays.

    ``arrays`` are the arrays the evaluation reads; they are perturbed in place and
    restored bit for bit in ``finally`` blocks.
    """

    def __init__(
        self,
        arrays: list[np.ndarray],
        names: list[str],
        evaluate: Callable[[], NDArray[Any]],
        dy: F64,
        grads: list[F64 | None],
        y0: NDArray[Any],
        opts: _Options,
        rng: np.random.Generator,
    ) -> None:
        self.arrays = arrays
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

    # -- low level -------------------------------------------------------------------
    def _run(self) -> F64:
        self.evaluations += 1
        y = np.asarray(self.evaluate())
        return np.asarray(y, dtype=np.float64)

    def _eps_out(self, i: int) -> float:
        return _eps(self.arrays[i].dtype)

    def _diffs(self, yp: F64, ym: F64, eps: float) -> tuple[float, float, float, float]:
        """Return sum((yp-ym)dy), sum((yp-y0)dy), sum((y0-ym)dy) and their noise."""
        dpm = float(np.sum((yp - ym) * self.dy))
        dp = float(np.sum((yp - self.y0) * self.dy))
        dm = float(np.sum((self.y0 - ym) * self.dy))
        changed = (yp != self.y0) | (ym != self.y0)
        # Rounding errors of the changed outputs, weighted by the random signed dy,
        # add in quadrature (coherent errors too, since dy is random). An output is
        # assumed to carry the rounding of intermediates of the layer's typical size
        # (the RMS of its outputs) even when it is itself small: a small output is
        # often a cancellation of large terms (GELU's tail, softmax, LayerNorm).
        mag = np.maximum(np.abs(yp[changed]) + np.abs(ym[changed]), self.y_rms)
        w = mag * self.absdy[changed]
        noise = NOISE_ULPS * eps * float(np.sqrt(np.sum(w * w)))
        if not changed.any():
            # Nothing moved: the derivative is below the resolution of the outputs.
            w = np.abs(self.y0) * self.absdy
            noise = eps * float(np.sqrt(np.sum(w * w)))
        return dpm, dp, dm, noise

    def element(self, i: int, j: int, h: float) -> _Stencil:
        """Central and one-sided differences along element ``j`` of input ``i``."""
        arr = self.arrays[i]
        flat = arr.reshape(-1)  # a view: arrays are kept contiguous
        x0 = flat[j].copy()
        xp = (x0 + arr.dtype.type(h)).astype(arr.dtype)
        xm = (x0 - arr.dtype.type(h)).astype(arr.dtype)
        try:
            flat[j] = xp
            yp = self._run()
            flat[j] = xm
            ym = self._run()
        finally:
            flat[j] = x0
        up = float(xp) - float(x0)
        um = float(x0) - float(xm)
        span = up + um
        g = self.grads[i]
        a = float(g.reshape(-1)[j]) if g is not None else 0.0
        dpm, dp, dm, noise = self._diffs(yp, ym, self._eps_out(i))
        if not (np.all(np.isfinite(yp)) and np.all(np.isfinite(ym))):
            self.nonfinite.append(f"{self.names[i]}[{j}]")
        return _Stencil(
            d=dpm / span,
            noise=noise / span,
            dplus=dp / up if up else 0.0,
            dminus=dm / um if um else 0.0,
            analytic=a,
        )

    def direction(self, i: int, v: F64, h: float) -> _Stencil:
        """Central and one-sided differences along direction ``v`` of input ``i``."""
        arr = self.arrays[i]
        x0 = arr.copy()
        x64 = x0.astype(np.float64)
        xp = (x64 + h * v).astype(arr.dtype)
        xm = (x64 - h * v).astype(arr.dtype)
        try:
            np.copyto(arr, xp)
            yp = self._run()
            np.copyto(arr, xm)
            ym = self._run()
        finally:
            np.copyto(arr, x0)
        up = xp.astype(np.float64) - x64
        um = x64 - xm.astype(np.float64)
        g = self.grads[i]
        ga = g if g is not None else np.zeros(arr.shape)
        dpm, dp, dm, noise = self._diffs(yp, ym, self._eps_out(i))
        if not (np.all(np.isfinite(yp)) and np.all(np.isfinite(ym))):
            self.nonfinite.append(f"{self.names[i]} (direction)")
        span = 2.0 * h
        return _Stencil(
            d=dpm / span,
            noise=noise / span,
            dplus=dp / h,
            dminus=dm / h,
            analytic=float(np.sum(ga * (up + um))) / span,
        )

    # -- step sizes ------------------------------------------------------------------
    def step(self, i: int, method: str, magnitude: float) -> float:
        """Step from the dtype and the magnitude of the element (or of the input)."""
        eps = _eps(self.arrays[i].dtype)
        power = 1.0 / 5.0 if method == "richardson" else 1.0 / 3.0
        return float(eps**power * max(1.0, magnitude))

    # -- one comparison ----------------------------------------------------------------
    def tolerance(self, i: int, err: float, numeric: float) -> tuple[float, float, float]:
        """Return ``(atol, rtol, atol + rtol*|numeric|)`` for one element."""
        rtol = self.opts.rtol
        if rtol is None:
            rtol = DEFAULT_RTOL.get(self.arrays[i].dtype.name, 1e-5)
        atol = self.opts.atol if self.opts.atol is not None else SAFETY * err
        return atol, rtol, atol + rtol * abs(numeric)

    def compare(
        self,
        i: int,
        probe: Callable[[float], _Stencil],
        magnitude: float,
        method: str,
    ) -> tuple[float, float, float, float, float, bool]:
        """Compare one element or direction.

        Returns ``(analytic, numeric, error, atol, rtol, is_kink)``; the caller decides
        pass/fail from ``error <= atol + rtol*|numeric|``.
        """
        h = self.step(i, "central" if method == "central" else "richardson", magnitude)
        s1 = probe(h)
        a = s1.analytic
        if method == "central":
            atol, rtol, tol = self.tolerance(i, s1.noise, s1.d)
            if abs(a - s1.d) <= tol:
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
                first = out
                if error <= tol:
                    return out
            elif error <= tol and abs(n - first[1]) > first[3] + first[4] * abs(first[1]):
                # Passes at a smaller step, and the numerical derivative itself moved by
                # more than the first step's own tolerance on the way: that stencil was
                # spoilt (a kink or a short length scale near x). A wrong gradient at a
                # smooth point gives the same numerical value at every step and stays a
                # mismatch.
                return out
            # Kink test: for a smooth function the one-sided gap shrinks linearly with h.
            gap1 = s1.dplus - s1.dminus
            gap2 = s2.dplus - s2.dminus
            dev = abs(gap1 - 2.0 * gap2)
            noise_os = 4.0 * (s1.noise + s2.noise)
            big = max(abs(gap1), abs(gap2))
            if dev > 0.25 * big and dev > noise_os:
                sides = (s1.dplus, s1.dminus, s2.dplus, s2.dminus)
                lo, hi = min(sides), max(sides)
                slack = tol + noise_os
                if lo - slack <= a <= hi + slack:
                    return a, n, error, atol, rtol, True
            if 8.0 * err > abs(n) + abs(a):
                break  # the noise has taken over: smaller steps cannot say more
        if first is None:  # pragma: no cover - the loop always runs once
            raise RuntimeError("internal error: no comparison made")
        return first


def _as_input_array(x: Any, k: int) -> np.ndarray:
    """Own a C-contiguous, writable copy of input ``k``."""
    try:
        arr = np.array(x, copy=True, order="C")
    except Exception as exc:  # pragma: no cover - numpy raises many types here
        raise TypeError(f"inputs[{k}] cannot be converted to an array: {exc}") from exc
    if arr.dtype == object:
        raise TypeError(f"inputs[{k}] has dtype object; expected a numeric array")
    if arr.dtype.kind == "c":
        raise TypeError(f"inputs[{k}] is complex ({arr.dtype}); only real inputs are checked")
    return arr


def _split_forward(out: Any) -> tuple[np.ndarray, Any]:
    if not isinstance(out, tuple) or len(out) != 2:
        got = type(out).__name__
        if isinstance(out, tuple):
            got = f"a tuple of {len(out)}"
        raise _ProtocolError(
            "bad-protocol", f"forward must return (y, cache); it returned {got}"
        )
    y = np.asarray(out[0])
    if y.dtype.kind not in "fiub":
        raise _ProtocolError(
            "bad-protocol", f"forward output must be a real array or scalar, got dtype {y.dtype}"
        )
    return y, out[1]


def _worst_first(rows: list[ElementReport]) -> list[ElementReport]:
    def key(r: ElementReport) -> tuple[int, float]:
        ratio = r.error / r.tolerance if r.tolerance > 0 else (math.inf if r.error else 0)
        return (0 if r.failed else 1, -ratio)

    return sorted(rows, key=key)[:_MAX_WORST]


class _InputChecker:
    """Runs the chosen mode on one input and builds its :class:`InputResult`."""

    def __init__(self, runner: _Runner, i: int, method: str) -> None:
        self.r = runner
        self.i = i
        self.method = method
        arr = runner.arrays[i]
        self.res = InputResult(
            name=runner.names[i], shape=tuple(arr.shape), dtype=arr.dtype.name
        )
        self.rows: list[ElementReport] = []
        self.a_vals: list[float] = []
        self.n_vals: list[float] = []
        self.failed: list[bool] = []
        self.element_ids: list[int] = []
        self.errs: list[float] = []

    def _record(self, index: tuple[int, ...], out: tuple[float, ...], kind: str) -> bool:
        a, n, error, atol, rtol, kink = out
        tol = atol + rtol * abs(n)
        row = ElementReport(
            input=self.res.name,
            index=index,
            analytic=a,
            numeric=n,
            error=error,
            tolerance=tol,
            kind="kink" if kink else kind,
        )
        self.rows.append(row)
        if kink:
            self.res.kinks += 1
            return True
        self.res.checked += 1
        self.res.atol = max(self.res.atol, atol)
        self.res.rtol = rtol
        self.res.max_abs_error = max(self.res.max_abs_error, error)
        denom = max(abs(n), abs(a))
        rel = error / denom if denom > 0 else 0.0
        self.res.max_rel_error = max(self.res.max_rel_error, rel)
        return not row.failed

    def check_elements(self, idx: NDArray[np.intp]) -> int:
        """Check the given flat indices; return how many failed."""
        arr = self.r.arrays[self.i]
        flat = arr.reshape(-1)
        bad = 0
        for jj in idx:
            j = int(jj)
            mag = abs(float(flat[j]))
            out = self.r.compare(
                self.i, functools.partial(self.r.element, self.i, j), mag, self.method
            )
            index = tuple(int(k) for k in np.unravel_index(j, arr.shape)) if arr.ndim else ()
            ok = self._record(index, out, "element")
            if not out[5]:
                self.a_vals.append(out[0])
                self.n_vals.append(out[1])
                self.failed.append(not ok)
                self.element_ids.append(j)
                self.errs.append(max(out[3] / SAFETY, 1e-300) if self.r.opts.atol is None
                                 else max(out[3], 1e-300))
            bad += 0 if ok else 1
        return bad

    def _direction_check(self, v: F64) -> tuple[bool, tuple[float, ...]]:
        arr = self.r.arrays[self.i]
        mag = float(np.max(np.abs(arr))) if arr.size else 0.0
        vmax = float(np.max(np.abs(v))) or 1.0
        vn = v / vmax
        out = self.r.compare(
            self.i, lambda h: self.r.direction(self.i, vn, h), mag, self.method
        )
        a, n, error, atol, rtol, kink = out
        ok = kink or error <= atol + rtol * abs(n)
        return ok, out

    def directional(self, k: int) -> bool:
        """k random signed-Gaussian directions; returns whether all passed."""
        arr = self.r.arrays[self.i]
        all_ok = True
        log_miss = 0.0
        g = self.r.grads[self.i]
        gnorm = float(np.linalg.norm(g)) if g is not None else 0.0
        tols: list[float] = []
        scales: list[float] = []
        for _ in range(k):
            v = self.r.rng.standard_normal(arr.shape)
            vmax = float(np.max(np.abs(v))) or 1.0
            ok, out = self._direction_check(v)
            self._record((), out, "direction")
            all_ok &= ok
            a, n, error, atol, rtol, _k = out
            # An isotropic error e with |e| = 1e-4 |g| gives e.u ~ N(0, (1e-4 |g| s)^2)
            # for u = v / max|v|; the direction misses it while |e.u| <= tolerance.
            s = float(np.sqrt(np.mean((v / vmax) ** 2)))
            sigma = _REL_TARGET * gnorm * s
            tol = atol + rtol * abs(n)
            tols.append(tol)
            scales.append(s)
            p = math.erf(tol / (sigma * math.sqrt(2))) if sigma > 0 else 1.0
            log_miss += math.log(max(p, 1e-300))
        self.res.miss_probability = math.exp(log_miss)
        # The relative error (isotropic) caught with probability 0.99 by k directions.
        if gnorm > 0 and tols:
            from scipy.special import erfinv

            p_dir = 0.01 ** (1.0 / k)
            s_mean = float(np.mean(scales))
            self.res.detectable_rel_error = float(
                max(tols) / (gnorm * s_mean * math.sqrt(2) * float(erfinv(p_dir)))
            )
        return all_ok

    def directional_and_localise(self, opts: _Options) -> None:
        """Directional mode, then localisation of the wrong elements if it failed."""
        if not self.directional(opts.directions) and opts.localise:
            self.localise()

    def localise(self) -> None:
        """After a directional failure: find the wrong elements."""
        arr = self.r.arrays[self.i]
        self.res.localised = True
        if arr.size <= 4096:
            self.check_elements(np.arange(arr.size))
            return
        found = 0

        def bisect(idx: NDArray[np.intp]) -> None:
            nonlocal found
            if found >= _MAX_WORST:
                return
            if idx.size <= _LEAF:
                found += self.check_elements(idx)
                return
            for half in (idx[: idx.size // 2], idx[idx.size // 2 :]):
                v = np.zeros(arr.size)
                v[half] = self.r.rng.standard_normal(half.size)
                ok, _out = self._direction_check(v.reshape(arr.shape))
                if not ok:
                    bisect(half)

        bisect(np.arange(arr.size))

    def consistency(self) -> None:
        """Aggregate test over all checked elements: is ``a = s * n`` with ``s = 1``?

        A gradient scaled by a constant close to 1 (a relative 1e-4, say) hides inside
        the per-element noise in float32; over many elements the weighted least-squares
        slope has a standard error far below that noise. The slope must be within
        ``8 * se + rtol`` of 1 (``rtol`` absorbs the systematic truncation bias), and
        the same at two step sizes.
        """
        if len(self.a_vals) < 16 or any(self.failed):
            return
        a = np.asarray(self.a_vals)
        slope, se = _slope(a, np.asarray(self.n_vals), np.asarray(self.errs))
        rtol = self.res.rtol

        def off(s: float, e: float) -> bool:
            return abs(s - 1.0) > _Z_SLOPE * e + rtol

        if not off(slope, se):
            return
        # Before calling it a scaling, look again with Richardson extrapolation at two
        # step sizes. Central differences carry an O(h^2) bias, and kinks inside the
        # stencils (ReLU crossings a parameter moves) bias the slope too; both change
        # with the step. A real constant factor gives the same slope at every step.
        levels = []
        for shrink in (1.0, 0.25):
            n_r, e_r = [], []
            for j in self.element_ids:
                mag = abs(float(self.r.arrays[self.i].reshape(-1)[j]))
                h = self.r.step(self.i, "richardson", mag) * shrink
                s1 = self.r.element(self.i, j, h)
                s2 = self.r.element(self.i, j, h / 2)
                n_r.append((4.0 * s2.d - s1.d) / 3.0)
                e_r.append(abs(s2.d - s1.d) / 3.0 + 3.0 * max(s1.noise, s2.noise))
            levels.append(_slope(a, np.asarray(n_r), np.maximum(np.asarray(e_r), 1e-300)))
        (s1_, e1_), (s2_, e2_) = levels
        steady = abs(s1_ - s2_) <= _Z_SLOPE * math.hypot(e1_, e2_) + rtol
        if off(s1_, e1_) and off(s2_, e2_) and steady:
            slope, se = (s1_, e1_) if e1_ <= e2_ else (s2_, e2_)
            self.res.status = "mismatch"
            self.res.hint = (
                f"every element is off by the same factor {slope:.7g} (±{se:.1e}), "
                "below the per-element noise: a constant scaling of the gradient"
            )
            self.res.message = (
                f"aggregate test: slope of analytic vs numeric is {slope:.7g} at two step "
                f"sizes, expected 1 within {_Z_SLOPE * se + rtol:.2e}"
            )

    def finish(self, mode: str) -> InputResult:
        res = self.res
        res.mode = mode
        res.worst = _worst_first(self.rows)
        n_failed = sum(1 for r in self.rows if r.failed)
        if n_failed:
            res.status = "mismatch"
        elif mode in ("full", "sampled"):
            self.consistency()
        if self.a_vals and any(self.failed):
            full = mode == "full" or (res.localised and len(self.a_vals) == int(np.prod(res.shape)))
            order = np.argsort(self.element_ids)
            res.hint = diagnose(
                np.asarray(self.a_vals)[order],
                np.asarray(self.n_vals)[order],
                np.asarray(self.failed)[order],
                res.shape if full else (),
            )
        g = self.r.grads[self.i]
        res.gradient_norm = float(np.linalg.norm(g)) if g is not None else None
        return res


def _slope(a: F64, n: F64, err: F64) -> tuple[float, float]:
    """Weighted least-squares slope of ``a`` on ``n`` and its standard error."""
    w = 1.0 / np.maximum(err, 1e-300) ** 2
    w /= w.max()
    snn = float(np.sum(w * n * n))
    if snn <= 0 or n.size < 3:
        return 1.0, math.inf
    slope = float(np.sum(w * a * n)) / snn
    # The error model sets the relative weights only; the scatter of the residuals
    # sets the size of the standard error (the model is a conservative bound).
    resid = a - slope * n
    sigma2 = float(np.sum(w * resid * resid)) / (n.size - 1)
    return slope, math.sqrt(sigma2 / snn)


def _resolve_mode(opts: _Options, sizes: list[int]) -> str:
    if opts.mode != "auto":
        return opts.mode
    return "full" if 2 * sum(sizes) <= opts.budget else "directional"


def resolve_method(method: str, dtype: np.dtype[Any]) -> str:
    """``auto`` is ``central`` for float64 and ``richardson`` for narrower floats."""
    if method != "auto":
        return method
    return "central" if np.dtype(dtype).itemsize >= 8 else "richardson"


def _method_label(method: str, arrays: list[np.ndarray]) -> str:
    used = {resolve_method(method, a.dtype) for a in arrays}
    if not used:
        return resolve_method(method, np.dtype(np.float64))
    return used.pop() if len(used) == 1 else "mixed"


def run_checks(
    runner: _Runner,
    checked: list[int],
    opts: _Options,
    *,
    mode_for: Callable[[int], str],
    method: str,
) -> list[InputResult]:
    """Run the per-input checks chosen by ``mode_for`` and return their results."""
    results: list[InputResult] = []
    for i in checked:
        arr = runner.arrays[i]
        mode = mode_for(i)
        ic = _InputChecker(runner, i, resolve_method(method, arr.dtype))
        if arr.size == 0:
            results.append(ic.finish(mode))
            continue
        if mode == "full":
            ic.check_elements(np.arange(arr.size))
        elif mode == "sampled":
            m = min(opts.samples, arr.size)
            idx = np.sort(runner.rng.choice(arr.size, size=m, replace=False))
            ic.check_elements(idx)
            ic.res.miss_probability = 1.0 - m / arr.size
        else:
            ic.directional_and_localise(opts)
        results.append(ic.finish(mode))
    return results


def _overall(
    results: list[InputResult], nonfinite: list[str]
) -> tuple[str, str]:
    if nonfinite:
        return "non-finite", (
            "a perturbed forward produced NaN/Inf at " + ", ".join(nonfinite[:5])
        )
    bad = [r for r in results if not r.passed]
    if not bad:
        n = sum(r.checked for r in results)
        k = sum(r.kinks for r in results)
        return "ok", (
            f"{n} element(s)/direction(s) checked, {k} kink(s) skipped, all within tolerance"
        )
    names = ", ".join(f"{r.name} ({r.status})" for r in bad)
    return "mismatch", f"gradient mismatch in {names}"


def _complex_ok(
    fwd: Callable[..., Any],
    xs: list[np.ndarray],
    i: int,
    dy: F64,
    runner: _Runner,
) -> str:
    """Verify complex-step differentiation on input ``i``; return '' or why not."""
    arr = xs[i]
    v = runner.rng.standard_normal(arr.shape)
    ctype = np.complex128 if arr.dtype == np.float64 else np.complex64
    h = 1e-20 if arr.dtype == np.float64 else 1e-10
    args: list[Any] = list(xs)
    args[i] = arr.astype(ctype) + np.multiply(v, 1j * h).astype(ctype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = fwd(*args)
    except Exception as exc:
        return f"forward does not accept complex input ({type(exc).__name__}: {exc})"
    runner.evaluations += 1
    y = np.asarray(out[0] if isinstance(out, tuple) else out)
    if y.dtype.kind != "c":
        return "forward returned a real output for complex input (imaginary part lost)"
    cs = float(np.sum(y.imag.astype(np.float64) * dy)) / h
    # Compare with an extrapolated finite difference along the same direction.
    r_method = runner.compare(
        i, lambda hh: runner.direction(i, v, hh), float(np.max(np.abs(arr))), "richardson"
    )
    _a, n, _e, atol, rtol, _k = r_method
    if not abs(cs - n) <= atol + rtol * abs(n):
        return (
            f"complex-step derivative {cs:.6g} disagrees with finite differences {n:.6g} "
            "(a call such as np.abs, np.var or a comparison breaks it)"
        )
    return ""


def check_vjp(
    fwd: Callable[..., Any],
    bwd: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    seed: int = 0,
    mode: str = "auto",
    method: str = "auto",
    atol: float | None = None,
    rtol: float | None = None,
    directions: int = 4,
    samples: int = 64,
    budget: int = 20_000,
    localise: bool = True,
    name: str = "",
) -> CheckResult:
    """Check a hand-written backward against finite differences of its forward.

    Parameters
    ----------
    fwd : callable
        ``y, cache = fwd(*inputs)``; ``y`` a real scalar or array of any shape.
    bwd : callable
        ``grads = bwd(dy, cache)``: a sequence with one gradient per input, each of the
        input's shape, or ``None`` for integer or constant inputs.
    inputs : sequence of array_like
        The arguments of ``fwd``. They are copied; the caller's arrays are never touched.
    seed : int, optional
        Seeds the ``numpy.random.Generator`` for the cotangent ``dy``, the directions
        and the samples. Printed in every failure message.
    mode : {"auto", "full", "sampled", "directional"}
        ``full``: every element; ``sampled``: ``samples`` random elements per input;
        ``directional``: ``directions`` random directions per input (cost independent
        of the size); ``auto``: ``full`` while ``2 * total elements <= budget``.
    method : {"auto", "central", "richardson", "complex"}
        ``central`` (2 evaluations per element, failures re-examined with Richardson
        extrapolation and kink detection), ``richardson`` (4 per element), ``auto``
        (the default: ``central`` for float64 inputs, ``richardson`` for float32 and
        float16, where rounding noise needs the larger step), or
        ``complex`` (complex step, used only after it has been verified to agree with
        finite differences; otherwise falls back to ``central`` with a note).
    atol, rtol : float, optional
        Override the tolerance ``|a - n| <= atol + rtol * |n|``. By default ``atol``
        is derived from the estimated error of each numerical derivative and ``rtol``
        from the dtype (:data:`DEFAULT_RTOL`).
    directions, samples, budget : int
        See ``mode``.
    localise : bool
        After a directional failure, find the wrong elements (elementwise up to 4096
        elements, by bisection above).
    name : str
        A label for reports.

    Returns
    -------
    CheckResult
        ``passed``, ``status`` (see :data:`gradcheck.STATUSES`), per-input errors and
        tolerances, the worst elements, evaluations spent and the seed.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments (not for a wrong gradient: that is a status).
    """
    # Floating-point warnings inside the user's functions become a "non-finite"
    # status with the place named, not an exception half-way through a check.
    with np.errstate(all="ignore"):
        res = _check_vjp(
            fwd, bwd, inputs, seed=seed, mode=mode, method=method, atol=atol, rtol=rtol,
            directions=directions, samples=samples, budget=budget, localise=localise,
            name=name,
        )
    _record_for_plugin(res)
    return res


def _check_vjp(
    fwd: Callable[..., Any],
    bwd: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    seed: int,
    mode: str,
    method: str,
    atol: float | None,
    rtol: float | None,
    directions: int,
    samples: int,
    budget: int,
    localise: bool,
    name: str,
) -> CheckResult:
    opts = _validate_options(
        seed=seed, mode=mode, method=method, atol=atol, rtol=rtol, directions=directions,
        samples=samples, budget=budget, localise=localise,
    )
    if not callable(fwd):
        raise TypeError(f"fwd must be callable, got {type(fwd).__name__}")
    if not callable(bwd):
        raise TypeError(f"bwd must be callable, got {type(bwd).__name__}")
    if isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence) or isinstance(
        inputs, str
    ):
        raise TypeError(
            "inputs must be a list or tuple of arrays (one per argument of fwd), "
            f"got {type(inputs).__name__}; wrap a single array as [x]"
        )
    xs = [_as_input_array(x, k) for k, x in enumerate(inputs)]
    names = [f"x{k}" for k in range(len(xs))]
    saved = [x.copy() for x in xs]
    rng = _generator(opts.seed)
    notes: list[str] = []
    backward_calls = 0

    def fail(status: str, message: str, evaluations: int) -> CheckResult:
        return CheckResult(
            passed=False, status=status, message=message, inputs=[], method=opts.method,
            mode=opts.mode, evaluations=evaluations, backward_calls=backward_calls,
            seed=opts.seed, notes=notes, name=name,
        )

    try:
        y0, cache = _split_forward(fwd(*xs))
        for k, x in enumerate(xs):
            if not _same(saved[k], x):
                raise _ProtocolError("mutation", f"forward modified its input {names[k]}")
        if not np.all(np.isfinite(y0)):
            bad = int(np.size(y0) - np.count_nonzero(np.isfinite(y0)))
            raise _ProtocolError(
                "non-finite", f"forward output has {bad} non-finite value(s) at the inputs"
            )
        y_again, _ = _split_forward(fwd(*xs))
        if y_again.shape != y0.shape or not np.array_equal(y_again, y0):
            raise _ProtocolError(
                "nondeterministic", "forward gave different outputs for the same inputs"
            )
        out_dtype = y0.dtype if y0.dtype.kind == "f" else np.dtype(np.float64)
        dy = rng.standard_normal(y0.shape).astype(out_dtype)
        dy_arg = dy.copy()
        cache_snap = _snapshot(cache)
        grads_raw = bwd(dy_arg, cache)
        backward_calls += 1
        if not _same(dy, dy_arg):
            raise _ProtocolError("mutation", "backward modified dy (the output gradient)")
        if not _same(cache_snap, cache):
            raise _ProtocolError("mutation", "backward modified the cache")
        for k, x in enumerate(xs):
            if not _same(saved[k], x):
                raise _ProtocolError("mutation", f"backward modified input {names[k]}")
        if isinstance(grads_raw, np.ndarray) or not isinstance(grads_raw, (list, tuple)):
            raise _ProtocolError(
                "bad-protocol",
                "backward must return a list or tuple of gradients, one per input; "
                f"got {type(grads_raw).__name__}",
            )
        if len(grads_raw) != len(xs):
            raise _ProtocolError(
                "shape-mismatch",
                f"backward returned {len(grads_raw)} gradient(s) for {len(xs)} input(s)",
            )
        grads: list[F64 | None] = []
        for k, (g, x) in enumerate(zip(grads_raw, xs, strict=True)):
            if g is None:
                grads.append(None)
                continue
            ga = np.asarray(g)
            if ga.shape != x.shape:
                raise _ProtocolError(
                    "shape-mismatch",
                    f"gradient of {names[k]} has shape {ga.shape}, expected {x.shape}",
                )
            if ga.dtype.kind not in "fiub":
                raise _ProtocolError(
                    "bad-protocol", f"gradient of {names[k]} has dtype {ga.dtype}"
                )
            if not np.all(np.isfinite(ga)):
                raise _ProtocolError(
                    "non-finite", f"gradient of {names[k]} contains NaN/Inf"
                )
            if x.dtype.kind == "f" and ga.dtype.kind == "f" and ga.dtype != x.dtype:
                notes.append(f"gradient of {names[k]} is {ga.dtype}, input is {x.dtype}")
            grads.append(ga.astype(np.float64))
        grads_again = bwd(dy.copy(), cache)
        backward_calls += 1
        if isinstance(grads_again, (list, tuple)) and len(grads_again) == len(grads):
            for k, (g1, g2) in enumerate(zip(grads_raw, grads_again, strict=True)):
                if (g1 is None) != (g2 is None) or (
                    g1 is not None and not np.array_equal(np.asarray(g1), np.asarray(g2))
                ):
                    raise _ProtocolError(
                        "nondeterministic",
                        f"backward gave different gradients for {names[k]} on the same call",
                    )
    except _ProtocolError as exc:
        return fail(exc.status, exc.message, 2)

    def evaluate() -> NDArray[Any]:
        return np.asarray(fwd(*xs)[0])

    runner = _Runner(xs, names, evaluate, dy.astype(np.float64), grads, y0, opts, rng)
    runner.evaluations = 2
    checked: list[int] = []
    pre_results: dict[int, InputResult] = {}
    for k, x in enumerate(xs):
        if x.dtype.kind != "f":
            pre_results[k] = InputResult(
                name=names[k], shape=x.shape, dtype=x.dtype.name, status="skipped",
                mode="none", message="integer input: not differentiable, not checked",
            )
            if grads[k] is not None:
                notes.append(f"gradient returned for integer input {names[k]} was ignored")
        else:
            checked.append(k)
    method_used = opts.method
    if opts.method == "complex":
        why = ""
        for k in checked:
            why = _complex_ok(fwd, xs, k, runner.dy, runner)
            if why:
                break
        if why:
            notes.append(f"complex step rejected, used central differences: {why}")
            method_used = "central"
    sizes = [xs[k].size for k in checked]
    mode_used = _resolve_mode(opts, sizes)
    constant_results: dict[int, InputResult] = {}
    for k in list(checked):
        if grads[k] is None:
            # Declared constant: verify cheaply that the output really does not depend on it.
            ic = _InputChecker(runner, k, "central")
            ok = ic.directional(2)
            res = ic.finish("directional")
            if ok:
                res.status = "constant"
                res.message = "no gradient returned; the output does not depend on it"
            else:
                res.status = "mismatch"
                res.hint = "backward returned None but the output depends on this input"
            constant_results[k] = res
            checked.remove(k)
    if method_used == "complex":
        results_list = _complex_checks(fwd, xs, runner, checked, opts, mode_used)
    else:
        results_list = run_checks(
            runner, checked, opts, mode_for=lambda _i: mode_used, method=method_used
        )
        method_used = _method_label(method_used, [xs[k] for k in checked])
    by_index = dict(zip(checked, results_list, strict=True))
    by_index.update(pre_results)
    by_index.update(constant_results)
    results = [by_index[k] for k in range(len(xs))]
    for k, x in enumerate(xs):
        if not _same(saved[k], x):  # pragma: no cover - guarded by try/finally
            notes.append(f"input {names[k]} was not restored exactly")
    status, message = _overall(results, runner.nonfinite)
    return CheckResult(
        passed=status == "ok",
        status=status,
        message=message,
        inputs=results,
        method=method_used,
        mode=mode_used,
        evaluations=runner.evaluations,
        backward_calls=backward_calls,
        seed=opts.seed,
        notes=notes,
        name=name,
    )


def _complex_checks(
    fwd: Callable[..., Any],
    xs: list[np.ndarray],
    runner: _Runner,
    checked: list[int],
    opts: _Options,
    mode: str,
) -> list[InputResult]:
    """Complex-step checks: one evaluation per element, error at rounding level."""
    results = []
    for i in checked:
        arr = xs[i]
        ctype = np.complex128 if arr.dtype == np.float64 else np.complex64
        h = 1e-20 if arr.dtype == np.float64 else 1e-10
        eps = _eps(arr.dtype)
        ic = _InputChecker(runner, i, "complex")
        g = runner.grads[i]
        gflat = g.reshape(-1) if g is not None else np.zeros(arr.size)
        args: list[Any] = list(xs)
        if mode == "full":
            idx = np.arange(arr.size)
        elif mode == "sampled":
            m = min(opts.samples, arr.size)
            idx = np.sort(runner.rng.choice(arr.size, size=m, replace=False))
        else:
            idx = np.zeros(0, dtype=np.intp)
        work = arr.astype(ctype)
        flat = work.reshape(-1)
        for jj in idx:
            j = int(jj)
            flat[j] = arr.reshape(-1)[j] + 1j * h
            args[i] = work
            try:
                y = np.asarray(fwd(*args)[0])
            finally:
                flat[j] = arr.reshape(-1)[j]
            runner.evaluations += 1
            n = float(np.sum(y.imag.astype(np.float64) * runner.dy)) / h
            noise = NOISE_ULPS * eps * float(np.sum(np.abs(y.imag) * runner.absdy)) / h
            a = float(gflat[j])
            atol, rtol, _tol = runner.tolerance(i, noise, n)
            index = tuple(int(k) for k in np.unravel_index(j, arr.shape)) if arr.ndim else ()
            ok = ic._record(index, (a, n, abs(a - n), atol, rtol, False), "element")
            ic.a_vals.append(a)
            ic.n_vals.append(n)
            ic.failed.append(not ok)
            ic.element_ids.append(j)
            ic.errs.append(max(noise, 1e-300))
        if mode == "directional":
            ic.directional_and_localise(opts)
        results.append(ic.finish(mode))
    return results


def assert_vjp(
    fwd: Callable[..., Any],
    bwd: Callable[..., Any],
    inputs: Sequence[Any],
    **options: Any,
) -> CheckResult:
    """Like :func:`check_vjp`, but raise :class:`GradientMismatch` unless it passed.

    Returns
    -------
    CheckResult
        The passing result, for callers that want its figures.

    Raises
    ------
    GradientMismatch
        A subclass of ``AssertionError`` whose message is the result's report.
    """
    __tracebackhide__ = True
    res = check_vjp(fwd, bwd, inputs, **options)
    if not res.passed:
        raise GradientMismatch(res)
    return res


def check_grad(
    f: Callable[[np.ndarray], Any],
    grad: Callable[[np.ndarray], Any],
    x: Any,
    *,
    seed: int = 0,
    **options: Any,
) -> CheckResult:
    """Check the gradient of a scalar function.

    Parameters
    ----------
    f : callable
        ``f(x) -> float``.
    grad : callable
        ``grad(x) -> ndarray`` of the shape of ``x``.
    x : array_like
        The point.
    seed : int
    **options
        As for :func:`check_vjp`.

    Returns
    -------
    CheckResult
    """

    def fwd(x_: np.ndarray) -> tuple[Any, np.ndarray]:
        y = np.asarray(f(x_))
        if y.ndim != 0 and y.size != 1:
            raise ValueError(f"check_grad: f must return a scalar, got shape {y.shape}")
        return y.reshape(()), x_

    def bwd(dy: np.ndarray, x_: np.ndarray) -> tuple[np.ndarray]:
        return (np.asarray(grad(x_.copy())) * dy,)

    return check_vjp(fwd, bwd, [x], seed=seed, **options)


def _record_for_plugin(res: CheckResult) -> None:
    """Hand a result to the innermost active pytest session (if any)."""
    if _listeners:
        _listeners[-1](res)
