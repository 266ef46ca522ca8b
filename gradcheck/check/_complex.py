"""Complex-step differentiation: one evaluation per element, error at rounding level.

Used only after it has been verified, on a random direction, to agree with Richardson
finite differences: a forward that calls ``np.abs``, ``np.var`` or a comparison breaks
the complex step silently, and is then checked with finite differences instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._modes import InputChecker
from ._numeric import F64, Runner, eps_of
from ._options import NOISE_ULPS, Options
from ._result import InputResult

__all__ = ["complex_checks", "complex_ok"]


Call = Callable[[list[Any]], np.ndarray]


def complex_ok(
    call: Call,
    xs: list[np.ndarray],
    i: int,
    dy: F64,
    runner: Runner,
) -> str:
    """Verify complex-step differentiation on input ``i``; return '' or why not.

    ``call(leaves)`` runs the forward on the differentiable leaves and returns its
    outputs flattened into one vector.
    """
    arr = xs[i]
    v = runner.rng.standard_normal(arr.shape)
    ctype = np.complex128 if arr.dtype == np.float64 else np.complex64
    h = 1e-20 if arr.dtype == np.float64 else 1e-10
    args: list[Any] = list(xs)
    args[i] = arr.astype(ctype) + np.multiply(v, 1j * h).astype(ctype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = np.asarray(call(args))
    except Exception as exc:
        return f"forward does not accept complex input ({type(exc).__name__}: {exc})"
    runner.evaluations += 1
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


def complex_checks(
    call: Call,
    xs: list[np.ndarray],
    runner: Runner,
    checked: list[int],
    opts: Options,
    mode: str,
) -> list[InputResult]:
    """Complex-step checks: one evaluation per element, error at rounding level."""
    results = []
    for i in checked:
        arr = xs[i]
        ctype = np.complex128 if arr.dtype == np.float64 else np.complex64
        h = 1e-20 if arr.dtype == np.float64 else 1e-10
        eps = eps_of(arr.dtype)
        ic = InputChecker(runner, i, "complex")
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
                y = np.asarray(call(args))
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


