"""The per-input modes: every element, a sample, or random directions with localisation.

:class:`InputChecker` runs one mode on one input and builds its
:class:`~gradcheck.InputResult`: the comparisons of :class:`~gradcheck.check._numeric.Runner`,
the kinks skipped, the aggregate slope test that catches a constant scaling below the
per-element noise, the probability that a directional check missed a small error, and
the hint. :mod:`gradcheck.check._dispatch` runs the chosen mode on each input.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ._hints import HintContext, diagnose
from ._kinks import direction_compare
from ._numeric import F64, Runner, Stencil, resolve_method
from ._options import SAFETY, Options
from ._result import ElementReport, InputResult
from ._separable import GroupStencils, find_layout, group_stencils

__all__ = ["InputChecker", "inconclusive", "method_label", "miss_figures", "overall",
           "resolve_mode"]

_LEAF = 16
_Z_SLOPE = 8.0
_MAX_WORST = 10
_REL_TARGET = 1e-4


def _worst_first(rows: list[ElementReport]) -> list[ElementReport]:
    def key(r: ElementReport) -> tuple[int, float]:
        ratio = r.error / r.tolerance if r.tolerance > 0 else (math.inf if r.error else 0)
        rank = (1 if r.kind == "screened" else 0) if r.failed else 2  # confirmed first
        return (rank, -ratio)

    return sorted(rows, key=key)[:_MAX_WORST]


class InputChecker:
    """Runs the chosen mode on one input and builds its :class:`InputResult`."""

    def __init__(self, runner: Runner, i: int, method: str) -> None:
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
        #: elements recorded in bulk: (indices, analytic, numeric, error, tolerance)
        self.passed_bulk: list[tuple[NDArray[np.intp], F64, F64, F64, F64]] = []

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

    def check_full(self) -> None:
        """Every element; a group at a time where the forward keeps elements apart."""
        arr = self.r.arrays[self.i]
        steps = self._steps()
        layout = None
        if self.method in ("central", "richardson"):
            layout = find_layout(self.r, self.i, steps)
        if layout is None:
            self.check_elements(np.arange(arr.size))
            return
        self.res.message = (f"separable along input axes {[a for a, _b in layout.pairs]}: "
                            f"{layout.groups.shape[0]} group(s) of "
                            f"{layout.groups.shape[1]} elements moved together")
        scales = (1.0,) if self.method == "central" else (1.0, 0.5)
        for group in layout.groups:
            sts = [group_stencils(self.r, self.i, layout, group, steps[group] * sc)
                   for sc in scales]
            passed = self._first_stage(group, sts)
            cached: dict[int, dict[float, Stencil]] = {}
            for k in np.flatnonzero(~passed):
                j = int(group[k])
                cached[j] = {float(steps[j] * sc): st.stencil(int(k))
                             for sc, st in zip(scales, sts, strict=True) if st.valid[k]}
            self.check_elements(group[~passed], cached)

    def _first_stage(self, group: NDArray[np.intp], sts: list[GroupStencils]
                     ) -> NDArray[np.bool_]:
        """The first decision of :meth:`Runner.compare`, for a whole group at once.

        Elements that pass it are recorded; the others return False and go through
        the per-element comparison (with these stencils cached).
        """
        valid = np.logical_and.reduce([st.valid for st in sts])
        a = sts[0].analytic
        if len(sts) == 1:
            n, err = sts[0].d, sts[0].noise
        else:
            n = (4.0 * sts[1].d - sts[0].d) / 3.0
            err = np.abs(sts[1].d - sts[0].d) / 3.0 + 3.0 * np.maximum(sts[0].noise,
                                                                       sts[1].noise)
        rtol = self.r.rtol_of(self.i)
        user_atol = self.r.opts.atol
        atol = SAFETY * err if user_atol is None else np.full(n.shape, user_atol)
        tol = atol + rtol * np.abs(n)
        error = np.abs(a - n)
        ok = valid & (error <= tol)
        if len(sts) > 1 and self.r.opts.atol is None:
            ok &= error <= err
        k = np.flatnonzero(ok)
        if k.size:
            self._record_passed(group[k], a[k], n[k], error[k], atol[k], tol[k], rtol)
        return ok

    def _record_passed(self, idx: NDArray[np.intp], a: F64, n: F64, error: F64, atol: F64,
                       tol: F64, rtol: float) -> None:
        """Record elements that passed, in bulk (rows kept for the worst few only)."""
        res = self.res
        res.checked += idx.size
        res.atol = max(res.atol, float(np.max(atol)))
        res.rtol = rtol
        res.max_abs_error = max(res.max_abs_error, float(np.max(error)))
        denom = np.maximum(np.abs(n), np.abs(a))
        rel = np.divide(error, denom, out=np.zeros_like(error), where=denom > 0)
        res.max_rel_error = max(res.max_rel_error, float(np.max(rel)))
        self.passed_bulk.append((idx, a, n, error, tol))
        self.a_vals.extend(a.tolist())
        self.n_vals.extend(n.tolist())
        self.failed.extend([False] * idx.size)
        self.element_ids.extend(idx.tolist())
        errs = atol / SAFETY if self.r.opts.atol is None else atol
        self.errs.extend(np.maximum(errs, 1e-300).tolist())

    def _steps(self) -> F64:
        """The first step of every element, as :meth:`Runner.step` computes it."""
        arr = self.r.arrays[self.i]
        eps = self.r.eps(self.i)
        power = 1.0 / 3.0 if self.method == "central" else 1.0 / 5.0
        mags = np.abs(arr.reshape(-1).astype(np.float64))
        return np.asarray(eps**power * np.maximum(1.0, mags), dtype=np.float64)

    def check_elements(self, idx: NDArray[np.intp],
                       cached: dict[int, dict[float, Stencil]] | None = None,
                       confirm: int | None = None) -> int:
        """Check the given flat indices; return how many failed.

        ``cached`` holds stencils already taken (by a group, per element and step);
        any other step is evaluated for the element alone. Once ``confirm`` failures
        have been confirmed (re-examined at smaller steps), the remaining elements get
        the first comparison only: a failure there is recorded as ``"screened"``.
        """
        arr = self.r.arrays[self.i]
        flat = arr.reshape(-1)
        bad = 0
        for jj in idx:
            j = int(jj)
            mag = abs(float(flat[j]))
            probe = functools.partial(self.r.element, self.i, j)
            if cached and j in cached:
                probe = functools.partial(_from_cache, cached[j], probe)
            screen = confirm is not None and bad >= confirm
            out = self.r.compare(self.i, probe, mag, self.method, screen=screen)
            index = tuple(int(k) for k in np.unravel_index(j, arr.shape)) if arr.ndim else ()
            ok = self._record(index, out, "screened" if screen else "element")
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
        ok, out, _scale = self._direction(v)
        return ok, out

    def _direction(self, v: F64) -> tuple[bool, tuple[float, ...], float]:
        """Compare along ``v``; also return the RMS entry of the direction compared
        (per unit step: sparser than ``v`` where kinks forced it)."""
        arr = self.r.arrays[self.i]
        mag = float(np.max(np.abs(arr))) if arr.size else 0.0
        vmax = float(np.max(np.abs(v))) or 1.0
        got = direction_compare(self.r, self.i, self.method, {self.i: v / vmax}, mag)
        self.res.kink_outputs = max(self.res.kink_outputs, got.kink_outputs)
        self.res.kinks += got.met_kinks
        if got.kept and not self.res.message:
            self.res.message = got.note(arr.size)
        used = got.parts[self.i]
        return got.ok, got.out, float(np.sqrt(np.mean(used * used))) if used.size else 0.0

    def directional(self, k: int) -> bool:
        """k random signed-Gaussian directions; returns whether all passed.

        A direction that meets a kink (and cannot leave it out) is skipped and another
        drawn, up to ``2 k`` in all.
        """
        arr = self.r.arrays[self.i]
        all_ok = True
        g = self.r.grads[self.i]
        gnorm = float(np.linalg.norm(g)) if g is not None else 0.0
        tols: list[float] = []
        scales: list[float] = []
        for _ in range(2 * k):
            if len(tols) >= k:
                break
            ok, out, scale = self._direction(self.r.rng.standard_normal(arr.shape))
            self._record((), out, "direction")
            all_ok &= ok
            a, n, error, atol, rtol, kink = out
            if kink:
                continue
            tols.append(atol + rtol * abs(n))
            scales.append(scale)
        self.res.miss_probability, self.res.detectable_rel_error = miss_figures(
            gnorm, tols, scales)
        return all_ok

    def directional_and_localise(self, opts: Options) -> None:
        """Directional mode, then localisation of the wrong elements if it failed."""
        if not self.directional(opts.directions) and opts.localise:
            self.localise()

    def localise(self) -> None:
        """After a directional failure: find the wrong elements."""
        arr = self.r.arrays[self.i]
        self.res.localised = True
        if arr.size <= 4096:
            # Every element, for the hints; a wrong tensor is usually wrong everywhere,
            # and the closer look at every failure would cost a dozen evaluations each.
            self.check_elements(np.arange(arr.size), confirm=_MAX_WORST)
            screened = sum(1 for r in self.rows if r.kind == "screened" and r.failed)
            if screened:
                self.res.message = (f"{screened} element(s) failed the first comparison "
                                    f"only (not re-examined after {_MAX_WORST} confirmed "
                                    "failures)")
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
        n_vals, errs = np.asarray(self.n_vals), np.asarray(self.errs)
        if float(np.mean((n_vals / errs) ** 2)) < _Z_SLOPE**2:
            # The numerical gradient is at the level of its own noise (a parameter that
            # truly gets no gradient): it says nothing about a slope, and with an
            # analytic gradient of zero the residuals would vanish and fake a tiny
            # standard error.
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
            word = "large" if slope > 1 else "small"
            self.res.hint = (
                f"too {word} by a relative {abs(slope - 1):.1e} everywhere (slope "
                f"{slope:.7g} ± {se:.1e}, below the per-element noise): a constant scaling "
                "of the whole gradient"
            )
            self.res.message = (
                f"aggregate test: slope of analytic vs numeric is {slope:.7g} at two step "
                f"sizes, expected 1 within {_Z_SLOPE * se + rtol:.2e}"
            )

    def _bulk_rows(self) -> list[ElementReport]:
        """Rows for the worst of the elements recorded in bulk (all of them passed)."""
        if not self.passed_bulk:
            return []
        idx, a, n, error, tol = (np.concatenate(c) for c in zip(*self.passed_bulk,
                                                                   strict=True))
        ratio = np.divide(error, tol, out=np.zeros_like(error), where=tol > 0)
        shape = self.r.arrays[self.i].shape
        rows = []
        for k in np.argsort(-ratio, kind="stable")[:_MAX_WORST]:
            index = tuple(int(c) for c in np.unravel_index(int(idx[k]), shape))
            rows.append(ElementReport(self.res.name, index, float(a[k]), float(n[k]),
                                      float(error[k]), float(tol[k]), "element"))
        return rows

    def finish(self, mode: str) -> InputResult:
        res = self.res
        res.mode = mode
        res.worst = _worst_first(self.rows + self._bulk_rows())
        n_failed = sum(1 for r in self.rows if r.failed)
        if n_failed:
            res.status = "mismatch"
        elif mode in ("full", "sampled"):
            self.consistency()
        if res.status == "ok":
            inconclusive(res, mode)
        if self.a_vals and any(self.failed):
            res.hint = diagnose(self._hint_context(mode))
        g = self.r.grads[self.i]
        res.gradient_norm = float(np.linalg.norm(g)) if g is not None else None
        return res


    def _hint_context(self, mode: str) -> HintContext:
        """What the hints see: whole arrays when every element was checked."""
        res, r = self.res, self.r
        order = np.argsort(self.element_ids)
        a = np.asarray(self.a_vals)[order]
        n = np.asarray(self.n_vals)[order]
        f = np.asarray(self.failed)[order]
        x = np.asarray(r.arrays[self.i], dtype=np.float64)
        complete = len(self.a_vals) == x.size and (mode == "full" or res.localised)
        if not complete:  # a sample: only the patterns of a flat vector
            idx = np.asarray(self.element_ids)[order]
            return HintContext(a, n, f, x.reshape(-1)[idx], dtype=res.dtype)
        others = [(name, np.asarray(arr)) for k, (name, arr) in
                  enumerate(zip(r.names, r.arrays, strict=True))
                  if k != self.i and isinstance(arr, np.ndarray)]
        dys, ys, start = [], [], 0
        dy_flat, y_flat = np.ravel(r.dy), np.ravel(r.y0)
        for shape in r.out_shapes:
            size = int(np.prod(shape))
            dys.append(dy_flat[start:start + size].reshape(shape))
            ys.append(y_flat[start:start + size].reshape(shape))
            start += size
        return HintContext(a.reshape(x.shape), n.reshape(x.shape), f.reshape(x.shape), x,
                           others, dys, ys, res.dtype)


def inconclusive(res: InputResult, mode: str) -> None:
    """Status ``inconclusive`` for an input of which nothing was compared although
    something was tried (every element or direction sat at a kink)."""
    if res.checked or not res.kinks:
        return
    res.status = "inconclusive"
    what = "element(s)" if mode in ("full", "sampled") else "direction(s)"
    where = (f"; {res.kink_outputs} output(s) at kinks" if res.kink_outputs else "")
    todo = ("check at another point, away from the kinks" if mode == "full" else
            "rerun with another seed or at another point, or with mode='full' (every "
            "element alone, kinks skipped one by one)")
    res.message = (f"nothing compared: all {res.kinks} {what} sat at a kink{where}; "
                   f"{todo}")


def _from_cache(cache: dict[float, Stencil], probe: Callable[[float], Stencil],
                h: float) -> Stencil:
    hit = cache.get(h)
    return hit if hit is not None else probe(h)


def miss_figures(gnorm: float, tols: list[float], scales: list[float]
                 ) -> tuple[float | None, float | None]:
    """Miss probability at a relative error of 1e-4, and the error caught at 0.99.

    A direction ``u`` (per unit step) with RMS entry ``s`` sees an isotropic error ``e``
    of norm ``1e-4 |g|`` as ``e.u ~ N(0, (1e-4 |g| s)^2)``; it misses it while
    ``|e.u|`` is within the tolerance. ``tols`` and ``scales`` are per direction.
    """
    if not tols:
        return None, None
    log_miss = 0.0
    for tol, s in zip(tols, scales, strict=True):
        sigma = _REL_TARGET * gnorm * s
        p = math.erf(tol / (sigma * math.sqrt(2))) if sigma > 0 else 1.0
        log_miss += math.log(max(p, 1e-300))
    if gnorm <= 0 or not np.mean(scales) > 0:
        return math.exp(log_miss), None
    from scipy.special import erfinv

    p_dir = 0.01 ** (1.0 / len(tols))
    detectable = max(tols) / (gnorm * float(np.mean(scales)) * math.sqrt(2)
                              * float(erfinv(p_dir)))
    return math.exp(log_miss), float(detectable)


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


def resolve_mode(opts: Options, sizes: list[int]) -> str:
    if opts.mode != "auto":
        return opts.mode
    return "full" if 2 * sum(sizes) <= opts.budget else "directional"


def method_label(method: str, arrays: list[np.ndarray]) -> str:
    used = {resolve_method(method, a.dtype) for a in arrays}
    if not used:
        return resolve_method(method, np.dtype(np.float64))
    return used.pop() if len(used) == 1 else "mixed"


def overall(
    results: list[InputResult], nonfinite: list[str]
) -> tuple[str, str]:
    """The status and message of a whole check from its per-input results."""
    if nonfinite:
        seen = list(dict.fromkeys(nonfinite))  # each place once, in the order met
        return "non-finite", (
            "a perturbed forward produced NaN/Inf at " + ", ".join(seen[:5])
            + (f" and {len(seen) - 5} more" if len(seen) > 5 else "")
        )
    bad = [r for r in results if not r.passed]
    wrong = [r for r in bad if r.status != "inconclusive"]
    if wrong:
        names = ", ".join(f"{r.name} ({r.status})" for r in wrong)
        return "mismatch", f"gradient mismatch in {names}"
    n = sum(r.checked for r in results)
    k = sum(r.kinks for r in results)
    left = max((r.kink_outputs for r in results), default=0)
    skipped = f", {k} kink(s) skipped" + (
        f" ({left} output(s) at kinks left out of a direction)" if left else "")
    if bad:
        names = ", ".join(r.name for r in bad)
        return "inconclusive", f"{names}: {bad[0].message}"
    if not any(r.compared for r in results if r.differentiated):
        return "inconclusive", ("nothing was compared: no input to differentiate"
                                if not any(r.differentiated for r in results) else
                                f"nothing was compared{skipped}")
    return "ok", f"{n} element(s)/direction(s) checked{skipped}, all within tolerance"
